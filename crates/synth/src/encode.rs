//! Payloads from layouts: every field of the layout in wire order, each from
//! the value given by name or a zero/empty default. The rules mirror what
//! the decoder reads (`nettrail_decode::payload`), so a synthesized payload
//! decodes to the values it was made from:
//!
//! - integers are little-endian and must fit the field (negative values are
//!   written in two's complement); a `Port` field takes the port number and
//!   stores it big-endian, an `IPv4` field takes an address in network order;
//! - pointers and sizes are 4 or 8 bytes, as the event's pointer size says;
//! - `UnicodeString` is UTF-16LE and `AnsiString` 8-bit (UTF-8), both ending
//!   in a NUL unless the layout gives a length (then exactly that many
//!   characters, NUL-padded); counted strings carry their u16 byte count;
//! - binary fields (socket addresses, IPv6) are the given bytes;
//! - a field named by another's `len=@X` or `count=@X` is filled with that
//!   field's length (characters for strings, bytes for binary) or element
//!   count unless given; a given one must agree.
//!
//! A name the layout does not have is an error (unless given with
//! [`Fields::maybe`](crate::Fields::maybe): a field of some versions only), so a typo in a scenario
//! fails where it is written.

use std::fmt;

use nettrail_decode::{Field, InType, Len, OutType};

use crate::value::{Fields, Val};

/// Why a payload could not be made.
#[derive(Clone, Debug, PartialEq)]
pub enum EncodeError {
    /// The layout has no field of this name.
    UnknownField {
        field: String,
        known: Vec<String>,
    },
    DuplicateField(String),
    /// The value cannot be written as the field's type.
    WrongType {
        field: String,
        in_type: InType,
        given: &'static str,
    },
    /// An integer that does not fit the field.
    OutOfRange {
        field: String,
        in_type: InType,
        value: String,
    },
    /// A length, count or fixed size that the value does not agree with.
    Length {
        field: String,
        why: String,
    },
    /// A type the synthesizer does not write (structs).
    Unsupported {
        field: String,
        in_type: InType,
    },
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::UnknownField { field, known } => {
                write!(f, "no field {field:?} in the layout; it has: {}", known.join(", "))
            }
            EncodeError::DuplicateField(field) => write!(f, "field {field:?} is given twice"),
            EncodeError::WrongType { field, in_type, given } => {
                write!(f, "field {field:?} is {in_type:?}; {given} cannot be written as that")
            }
            EncodeError::OutOfRange { field, in_type, value } => {
                write!(f, "field {field:?} is {in_type:?}; {value} does not fit")
            }
            EncodeError::Length { field, why } => write!(f, "field {field:?}: {why}"),
            EncodeError::Unsupported { field, in_type } => write!(f, "field {field:?}: {in_type:?} is not supported"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// More bytes or elements than one record can hold: a count or length
/// beyond it is a mistake, not something to allocate.
const RECORD_LIMIT: usize = 65_535;

/// The TOKEN_USER pointer of a logged SID: a kernel address, as real records
/// have (its value is never read).
const TOKEN_USER_SID_POINTER: u64 = 0xffff_c38a_1e2f_1340;

/// The payload of `layout` with `values`, for an event of `pointer_size` (4 or 8).
pub fn encode(layout: &[Field], values: &Fields, pointer_size: u8) -> Result<Vec<u8>, EncodeError> {
    let mut given: Vec<Option<&Val>> = vec![None; layout.len()];
    for (name, value) in &values.0 {
        let found = layout.iter().position(|f| f.name == *name);
        let value = match (value, found) {
            (Val::IfPresent(_), None) => continue,
            (Val::IfPresent(inner), Some(_)) => inner.as_ref(),
            (other, _) => other,
        };
        let Some(i) = found else {
            return Err(EncodeError::UnknownField {
                field: name.clone(),
                known: layout.iter().map(|f| f.name.clone()).collect(),
            });
        };
        if given[i].replace(value).is_some() {
            return Err(EncodeError::DuplicateField(name.clone()));
        }
    }
    let implied = implied_sizes(layout, &given)?;
    let resolved: Vec<Option<Val>> =
        given.iter().zip(implied).map(|(g, implied)| g.cloned().or(implied.map(Val::U64))).collect();
    let mut out = Vec::with_capacity(64);
    let writer = Writer { pointer_size };
    for (field, value) in layout.iter().zip(&resolved) {
        writer.field(field, value.as_ref(), &resolved, &mut out)?;
    }
    Ok(out)
}

/// Values of the fields that others name as their length or count, measured
/// from those others' values; a given value must agree with the measure.
fn implied_sizes(layout: &[Field], given: &[Option<&Val>]) -> Result<Vec<Option<u64>>, EncodeError> {
    let mut implied: Vec<Option<u64>> = vec![None; layout.len()];
    for (j, field) in layout.iter().enumerate() {
        let mut measures = Vec::new();
        if let Some(Len::Field(i)) = field.count {
            measures.push((i, "count", element_count(given[j])));
        }
        if let Some(Len::Field(i)) = field.length {
            measures.push((i, "length", element_length(field, given[j])?));
        }
        for (i, what, measure) in measures {
            let target = layout.get(i).map_or("?", |f| f.name.as_str());
            if let Some(v) = given.get(i).copied().flatten() {
                let stated = as_u64(v);
                if stated != Some(measure) {
                    return Err(EncodeError::Length {
                        field: field.name.clone(),
                        why: format!("its {what} is {measure} but {target} is given as {v:?}"),
                    });
                }
            }
            match implied.get_mut(i) {
                Some(slot @ None) => *slot = Some(measure),
                Some(Some(other)) if *other != measure => {
                    return Err(EncodeError::Length {
                        field: field.name.clone(),
                        why: format!("{target} would have to be both {other} and {measure}"),
                    });
                }
                _ => {}
            }
        }
    }
    Ok(implied)
}

fn as_u64(v: &Val) -> Option<u64> {
    match *v {
        Val::U64(n) | Val::Ptr(n) => Some(n),
        Val::I64(n) => u64::try_from(n).ok(),
        Val::Bool(b) => Some(u64::from(b)),
        _ => None,
    }
}

fn element_count(value: Option<&Val>) -> u64 {
    match value {
        Some(Val::Array(items)) => items.len() as u64,
        Some(_) => 1,
        None => 0,
    }
}

/// The length a value gives its field: characters of a string, bytes of a
/// binary; every element of an array must have the same.
fn element_length(field: &Field, value: Option<&Val>) -> Result<u64, EncodeError> {
    let one = |v: &Val| -> Result<u64, EncodeError> {
        let n = match (field.in_type, v) {
            (InType::UnicodeString, Val::Str(s)) => s.encode_utf16().count(),
            (InType::AnsiString, Val::Str(s)) => s.len(),
            _ => binary_bytes(field, v)?.len(),
        };
        Ok(n as u64)
    };
    match value {
        None => Ok(0),
        Some(Val::Array(items)) => {
            let lengths: Vec<u64> = items.iter().map(one).collect::<Result<_, _>>()?;
            match lengths.split_first() {
                None => Ok(0),
                Some((first, rest)) if rest.iter().all(|l| l == first) => Ok(*first),
                Some(_) => Err(EncodeError::Length {
                    field: field.name.clone(),
                    why: "array elements of one length field differ in length".into(),
                }),
            }
        }
        Some(v) => one(v),
    }
}

/// The bytes a binary-like value stands for.
fn binary_bytes(field: &Field, v: &Val) -> Result<Vec<u8>, EncodeError> {
    Ok(match v {
        Val::Bytes(b) => b.clone(),
        Val::Ipv4(a) => a.octets().to_vec(),
        Val::Ipv6(a) => a.octets().to_vec(),
        Val::Guid(g) => g.to_bytes_le().to_vec(),
        Val::Str(s) if matches!(field.in_type, InType::UnicodeString | InType::AnsiString) => s.as_bytes().to_vec(),
        other => return Err(wrong(field, other)),
    })
}

fn wrong(field: &Field, v: &Val) -> EncodeError {
    EncodeError::WrongType { field: field.name.clone(), in_type: field.in_type, given: v.kind() }
}

struct Writer {
    pointer_size: u8,
}

impl Writer {
    fn field(
        &self,
        field: &Field,
        value: Option<&Val>,
        all: &[Option<Val>],
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        let length = match field.length {
            Some(Len::Fixed(n)) => Some(n as usize),
            Some(Len::Field(i)) => Some(self.referenced(field, i, all)?),
            Some(Len::Prefixed | Len::Remaining) | None => None,
        };
        let Some(count) = field.count else {
            return self.one(field, value, length, out);
        };
        let items: Vec<Option<&Val>> = match value {
            Some(Val::Array(items)) => items.iter().map(Some).collect(),
            Some(other) => vec![Some(other)],
            None => Vec::new(),
        };
        let wanted = match count {
            Len::Fixed(n) => Some(n as usize),
            Len::Field(i) => Some(self.referenced(field, i, all)?),
            Len::Prefixed | Len::Remaining => None,
        };
        let n = wanted.unwrap_or(items.len());
        if items.len() > n || (value.is_some() && items.len() != n) {
            return Err(EncodeError::Length {
                field: field.name.clone(),
                why: format!("{} elements given for a count of {n}", items.len()),
            });
        }
        if count == Len::Prefixed {
            let n16 = u16::try_from(n).map_err(|_| EncodeError::Length {
                field: field.name.clone(),
                why: format!("{n} elements do not fit a u16 count"),
            })?;
            out.extend_from_slice(&n16.to_le_bytes());
        }
        for k in 0..n {
            self.one(field, items.get(k).copied().flatten(), length, out)?;
        }
        Ok(())
    }

    /// The integer value of the field at `i` (a length or count).
    fn referenced(&self, field: &Field, i: usize, all: &[Option<Val>]) -> Result<usize, EncodeError> {
        match all.get(i) {
            None => Err(EncodeError::Length { field: field.name.clone(), why: format!("refers to missing field {i}") }),
            Some(None) => Ok(0),
            Some(Some(v)) => {
                as_u64(v).and_then(|n| usize::try_from(n).ok()).filter(|&n| n <= RECORD_LIMIT).ok_or_else(|| {
                    EncodeError::Length {
                        field: field.name.clone(),
                        why: format!("its length or count field holds {v:?}, more than a record can hold"),
                    }
                })
            }
        }
    }

    fn one(
        &self,
        field: &Field,
        value: Option<&Val>,
        length: Option<usize>,
        out: &mut Vec<u8>,
    ) -> Result<(), EncodeError> {
        use InType::*;
        let range = |v: String| EncodeError::OutOfRange { field: field.name.clone(), in_type: field.in_type, value: v };
        match field.in_type {
            Null => {}
            Int8 | UInt8 | AnsiChar => out.push(integer(field, value, 1)? as u8),
            Int16 | UInt16 | UnicodeChar => {
                let v = integer(field, value, 2)? as u16;
                // A port is given as a number and stored in network order.
                let bytes = if field.out_type == OutType::Port { v.to_be_bytes() } else { v.to_le_bytes() };
                out.extend_from_slice(&bytes);
            }
            Int32 | UInt32 | HexInt32 => {
                let bytes = match value {
                    Some(Val::Ipv4(a)) if field.out_type == OutType::Ipv4 => a.octets(),
                    _ => (integer(field, value, 4)? as u32).to_le_bytes(),
                };
                out.extend_from_slice(&bytes);
            }
            Int64 | UInt64 | HexInt64 => out.extend_from_slice(&integer(field, value, 8)?.to_le_bytes()),
            Pointer | SizeT => {
                let v = integer(field, value, usize::from(self.pointer_size))?;
                out.extend_from_slice(&v.to_le_bytes()[..usize::from(self.pointer_size)]);
            }
            Boolean => {
                let v = match value {
                    Some(Val::Bool(b)) => u32::from(*b),
                    _ => integer(field, value, 4)? as u32,
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
            Float | Double => {
                let v = match value {
                    None => 0.0,
                    Some(Val::Float(x)) => *x,
                    Some(Val::U64(n)) => *n as f64,
                    Some(Val::I64(n)) => *n as f64,
                    Some(other) => return Err(wrong(field, other)),
                };
                if field.in_type == Float {
                    out.extend_from_slice(&(v as f32).to_le_bytes());
                } else {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            Guid => match value {
                None => out.extend_from_slice(&[0; 16]),
                Some(Val::Guid(g)) => out.extend_from_slice(&g.to_bytes_le()),
                Some(Val::Bytes(b)) if b.len() == 16 => out.extend_from_slice(b),
                Some(other) => return Err(wrong(field, other)),
            },
            FileTime => {
                let v = match value {
                    Some(Val::FileTime(t)) => *t as u64,
                    _ => integer(field, value, 8)?,
                };
                out.extend_from_slice(&v.to_le_bytes());
            }
            SystemTime => match value {
                None => out.extend_from_slice(&[0; 16]),
                Some(Val::SystemTime(t)) => t.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes())),
                Some(other) => return Err(wrong(field, other)),
            },
            UnicodeString => {
                let units: Vec<u16> = text(field, value)?.encode_utf16().collect();
                fixed_or_terminated(field, &units, length, out, |u, o| o.extend_from_slice(&u.to_le_bytes()))?;
            }
            AnsiString => {
                let bytes = text(field, value)?.into_bytes();
                fixed_or_terminated(field, &bytes, length, out, |b, o| o.push(*b))?;
            }
            Binary => {
                let bytes = match value {
                    None => vec![0; length.unwrap_or(if field.out_type == OutType::Ipv6 { 16 } else { 0 })],
                    Some(v) => binary_bytes(field, v)?,
                };
                let expected = length.or((field.out_type == OutType::Ipv6).then_some(16));
                if let Some(n) = expected.filter(|&n| n != bytes.len()) {
                    return Err(EncodeError::Length {
                        field: field.name.clone(),
                        why: format!("{} bytes given for a length of {n}", bytes.len()),
                    });
                }
                out.extend_from_slice(&bytes);
            }
            CountedString | WbemCountedString => {
                let units: Vec<u8> = text(field, value)?.encode_utf16().flat_map(u16::to_le_bytes).collect();
                counted(field, &units, false, out)?;
            }
            ReversedCountedString => {
                let units: Vec<u8> = text(field, value)?.encode_utf16().flat_map(u16::to_le_bytes).collect();
                counted(field, &units, true, out)?;
            }
            CountedAnsiString | WbemCountedAnsiString => counted(field, text(field, value)?.as_bytes(), false, out)?,
            ReversedCountedAnsiString => counted(field, text(field, value)?.as_bytes(), true, out)?,
            CountedBinary => {
                counted(field, &value.map(|v| binary_bytes(field, v)).transpose()?.unwrap_or_default(), false, out)?
            }
            NonNullTerminatedString => {
                out.extend(text(field, value)?.encode_utf16().flat_map(u16::to_le_bytes));
            }
            NonNullTerminatedAnsiString => out.extend_from_slice(text(field, value)?.as_bytes()),
            HexDump => {
                let bytes = value.map(|v| binary_bytes(field, v)).transpose()?.unwrap_or_default();
                let n = u32::try_from(bytes.len()).map_err(|_| range(format!("{} bytes", bytes.len())))?;
                out.extend_from_slice(&n.to_le_bytes());
                out.extend_from_slice(&bytes);
            }
            Sid => out.extend_from_slice(
                &sid_bytes(field, value)?.unwrap_or_else(|| vec![1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ),
            WbemSid => match sid_bytes(field, value)? {
                None => out.extend_from_slice(&[0; 4]),
                Some(sid) => {
                    let p = usize::from(self.pointer_size);
                    out.extend_from_slice(&TOKEN_USER_SID_POINTER.to_le_bytes()[..p]);
                    out.resize(out.len() + p, 0); // attributes and padding
                    out.extend_from_slice(&sid);
                }
            },
            Struct => return Err(EncodeError::Unsupported { field: field.name.clone(), in_type: field.in_type }),
        }
        Ok(())
    }
}

/// An integer value as `bytes` little-endian bytes (in a u64), checked to fit.
/// Signed and unsigned fields alike take any value whose bits fit the width.
fn integer(field: &Field, value: Option<&Val>, bytes: usize) -> Result<u64, EncodeError> {
    let bits = 8 * bytes as u32;
    let unsigned_max = if bits == 64 { u64::MAX } else { (1u64 << bits) - 1 };
    let signed_min = if bits == 64 { i64::MIN } else { -(1i64 << (bits - 1)) };
    let fits = |ok: bool, shown: String| {
        if ok {
            Ok(())
        } else {
            Err(EncodeError::OutOfRange { field: field.name.clone(), in_type: field.in_type, value: shown })
        }
    };
    match value {
        None => Ok(0),
        Some(Val::U64(n) | Val::Ptr(n)) => fits(*n <= unsigned_max, n.to_string()).map(|_| *n),
        Some(Val::I64(n)) => fits(*n >= signed_min && (*n < 0 || *n as u64 <= unsigned_max), n.to_string())
            .map(|_| (*n as u64) & unsigned_max),
        Some(Val::Bool(b)) => Ok(u64::from(*b)),
        Some(Val::Str(s)) if matches!(field.in_type, InType::UnicodeChar | InType::AnsiChar) => {
            let mut units = s.encode_utf16();
            match (units.next(), units.next()) {
                (Some(u), None) => fits(u64::from(u) <= unsigned_max, format!("{s:?}")).map(|_| u64::from(u)),
                _ => Err(EncodeError::Length { field: field.name.clone(), why: format!("{s:?} is not one character") }),
            }
        }
        Some(other) => Err(wrong(field, other)),
    }
}

fn text(field: &Field, value: Option<&Val>) -> Result<String, EncodeError> {
    match value {
        None => Ok(String::new()),
        Some(Val::Str(s)) => Ok(s.clone()),
        Some(other) => Err(wrong(field, other)),
    }
}

/// Exactly `length` units (NUL-padded), or the units and a NUL terminator.
fn fixed_or_terminated<T: Copy + Default + PartialEq>(
    field: &Field,
    units: &[T],
    length: Option<usize>,
    out: &mut Vec<u8>,
    put: impl Fn(&T, &mut Vec<u8>),
) -> Result<(), EncodeError> {
    let nul = T::default();
    match length {
        Some(n) if units.len() > n => Err(EncodeError::Length {
            field: field.name.clone(),
            why: format!("{} characters do not fit a length of {n}", units.len()),
        }),
        Some(n) => {
            units.iter().for_each(|u| put(u, out));
            (units.len()..n).for_each(|_| put(&nul, out));
            Ok(())
        }
        None if units.contains(&nul) => {
            Err(EncodeError::Length { field: field.name.clone(), why: "a NUL inside a NUL-terminated string".into() })
        }
        None => {
            units.iter().chain([&nul]).for_each(|u| put(u, out));
            Ok(())
        }
    }
}

/// A u16 byte count (big-endian for the reversed MOF forms), then the bytes.
fn counted(field: &Field, bytes: &[u8], big_endian: bool, out: &mut Vec<u8>) -> Result<(), EncodeError> {
    let n = u16::try_from(bytes.len()).map_err(|_| EncodeError::Length {
        field: field.name.clone(),
        why: format!("{} bytes do not fit a u16 count", bytes.len()),
    })?;
    out.extend_from_slice(&if big_endian { n.to_be_bytes() } else { n.to_le_bytes() });
    out.extend_from_slice(bytes);
    Ok(())
}

/// A SID from bytes or `S-1-…` text, checked for its length; `None` when
/// absent (or given as no bytes).
fn sid_bytes(field: &Field, value: Option<&Val>) -> Result<Option<Vec<u8>>, EncodeError> {
    let bytes = match value {
        None => return Ok(None),
        Some(Val::Bytes(b)) if b.is_empty() => return Ok(None),
        Some(Val::Bytes(b)) => b.clone(),
        Some(Val::Str(s)) => crate::sockaddr::sid(s)
            .ok_or_else(|| EncodeError::Length { field: field.name.clone(), why: format!("{s:?} is not a SID") })?,
        Some(other) => return Err(wrong(field, other)),
    };
    let expected = bytes.get(1).map(|&n| 8 + 4 * usize::from(n));
    if expected != Some(bytes.len()) {
        return Err(EncodeError::Length {
            field: field.name.clone(),
            why: format!("{} bytes are not a SID (8 + 4 per sub-authority)", bytes.len()),
        });
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields;

    fn f(name: &str, t: InType) -> Field {
        Field::new(name, t)
    }

    #[test]
    fn lengths_are_implied_and_strings_encoded() {
        let mut address = f("Address", InType::Binary);
        address.length = Some(Len::Field(0));
        address.out_type = OutType::SocketAddress;
        let layout = [
            f("AddressLength", InType::UInt32),
            address,
            f("URI", InType::UnicodeString),
            f("Verb", InType::AnsiString),
        ];
        let sa = crate::sockaddr::sockaddr_in([10, 0, 0, 1].into(), 80);
        let p = encode(&layout, &fields![("URI", "/a"), ("Address", sa), ("Verb", "GET")], 8).unwrap();
        let mut want = 16u32.to_le_bytes().to_vec();
        want.extend_from_slice(&sa);
        want.extend_from_slice(&[b'/', 0, b'a', 0, 0, 0]);
        want.extend_from_slice(b"GET\0");
        assert_eq!(p, want);
        // Absent: zero length, no bytes, empty strings.
        assert_eq!(encode(&layout, &fields![], 8).unwrap(), [0, 0, 0, 0, 0, 0, 0]);
        // A given length must agree.
        let e = encode(&layout, &fields![("Address", sa), ("AddressLength", 28u32)], 8).unwrap_err();
        assert!(matches!(e, EncodeError::Length { .. }), "{e}");
    }

    #[test]
    fn typos_types_and_ranges_are_errors() {
        let layout = [f("Port", InType::UInt16), f("Tcb", InType::Pointer)];
        let e = encode(&layout, &fields![("Prot", 1u16)], 8).unwrap_err();
        assert_eq!(e.to_string(), "no field \"Prot\" in the layout; it has: Port, Tcb");
        assert!(matches!(encode(&layout, &fields![("Port", 70_000u32)], 8), Err(EncodeError::OutOfRange { .. })));
        assert!(matches!(encode(&layout, &fields![("Port", "x")], 8), Err(EncodeError::WrongType { .. })));
        assert!(matches!(
            encode(&layout, &fields![("Tcb", Val::Ptr(1 << 40))], 4),
            Err(EncodeError::OutOfRange { .. })
        ));
        assert!(matches!(
            encode(&layout, &fields![("Port", 1u16), ("Port", 2u16)], 8),
            Err(EncodeError::DuplicateField(_))
        ));
        assert_eq!(
            encode(&layout, &fields![("Tcb", Val::Ptr(0x1234_5678))], 4).unwrap(),
            [0, 0, 0x78, 0x56, 0x34, 0x12]
        );
        assert_eq!(encode(&layout, &fields![("Port", -1i32)], 8).unwrap()[..2], [0xFF, 0xFF]);
    }

    #[test]
    fn ports_and_ipv4_fields_in_network_order() {
        let mut port = f("dport", InType::UInt16);
        port.out_type = OutType::Port;
        let mut addr = f("daddr", InType::UInt32);
        addr.out_type = OutType::Ipv4;
        let p = encode(&[addr, port], &fields![("daddr", std::net::Ipv4Addr::new(1, 2, 3, 4)), ("dport", 443u16)], 8)
            .unwrap();
        assert_eq!(p, [1, 2, 3, 4, 0x01, 0xBB]);
    }

    #[test]
    fn arrays_counts_sids_and_fixed_strings() {
        let mut items = f("Items", InType::UInt16);
        items.count = Some(Len::Field(0));
        let mut name = f("Name", InType::UnicodeString);
        name.length = Some(Len::Fixed(3));
        let layout = [f("Count", InType::UInt8), items, name, f("User", InType::WbemSid), f("None", InType::WbemSid)];
        let p = encode(
            &layout,
            &fields![("Items", Val::Array(vec![1u16.into(), 2u16.into()])), ("Name", "ab"), ("User", "S-1-5-18")],
            4,
        )
        .unwrap();
        let mut want = vec![2, 1, 0, 2, 0, b'a', 0, b'b', 0, 0, 0];
        want.extend_from_slice(&(TOKEN_USER_SID_POINTER as u32).to_le_bytes());
        want.extend_from_slice(&[0; 4]);
        want.extend_from_slice(&[1, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0]);
        want.extend_from_slice(&[0; 4]);
        assert_eq!(p, want);
        let e = encode(&layout, &fields![("Name", "abcd")], 8).unwrap_err();
        assert!(e.to_string().contains("do not fit a length of 3"), "{e}");
    }
}
