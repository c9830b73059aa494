//! Walks a payload with a schema's fields: every TDH in-type, lengths and
//! counts taken from earlier fields, structs, arrays. Every read is bounds
//! checked; a count read from the payload never sizes an allocation beyond
//! what the payload can hold.

use std::fmt;

use nettrail_etl::Guid;

use crate::intype::{InType, OutType};
use crate::schema::{Field, Len};
use crate::value::Value;

/// Why a payload does not fit its schema.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DecodeError {
    pub field: String,
    /// Offset in the payload where the field starts.
    pub offset: usize,
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field {} at payload offset {}: {}", self.field, self.offset, self.reason)
    }
}

impl std::error::Error for DecodeError {}

struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    pointer_size: u8,
}

impl<'a> Cursor<'a> {
    fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or_default()
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.data.get(self.pos..self.pos.checked_add(n)?)?;
        self.pos += n;
        Some(bytes)
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).and_then(|b| b.try_into().ok())
    }

    fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    /// A NUL-terminated run of `unit`-byte characters (1 or 2); the terminator is
    /// consumed but not returned. Without a terminator, the rest of the payload.
    fn terminated(&mut self, unit: usize) -> &'a [u8] {
        let rest = self.rest();
        // Kernel image paths and CLR method names make these the hottest
        // search of a decode: compared a unit at a time, not a byte at a time.
        let end = if unit == 1 { rest.iter().position(|&b| b == 0) } else { utf16_nul(rest) };
        match end {
            Some(end) => {
                self.pos += end + unit;
                rest.get(..end).unwrap_or_default()
            }
            None => {
                let whole = rest.len() - rest.len() % unit;
                self.pos += rest.len();
                rest.get(..whole).unwrap_or_default()
            }
        }
    }
}

/// The offset of the first NUL UTF-16 unit, four units at a time: a lane
/// `x` is zero exactly where `(x - 1) & !x` has its top bit set, and the
/// lowest such lane is always a true zero (a borrow only reaches lanes above it).
pub(crate) fn utf16_nul(bytes: &[u8]) -> Option<usize> {
    const ONES: u64 = 0x0001_0001_0001_0001;
    const TOPS: u64 = 0x8000_8000_8000_8000;
    let mut words = bytes.chunks_exact(8);
    for (i, word) in (&mut words).enumerate() {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default());
        let zeros = x.wrapping_sub(ONES) & !x & TOPS;
        if zeros != 0 {
            return Some(i * 8 + (zeros.trailing_zeros() as usize / 16) * 2);
        }
    }
    let tail = bytes.len() - words.remainder().len();
    words.remainder().chunks_exact(2).position(|c| c == [0, 0]).map(|i| tail + i * 2)
}

/// Trailing NULs of a fixed-length string are padding.
fn trim_nuls(bytes: &[u8], unit: usize) -> &[u8] {
    let mut end = bytes.len() - bytes.len() % unit;
    while end >= unit && bytes.get(end - unit..end).is_some_and(|c| c.iter().all(|&b| b == 0)) {
        end -= unit;
    }
    bytes.get(..end).unwrap_or_default()
}

/// Decodes `fields` from the start of `data`, appending one value per field
/// to `out`; returns the bytes consumed.
pub fn decode<'a>(
    fields: &[Field],
    data: &'a [u8],
    pointer_size: u8,
    out: &mut Vec<Value<'a>>,
) -> Result<usize, DecodeError> {
    let mut cursor = Cursor { data, pos: 0, pointer_size };
    decode_level(fields, &mut cursor, out)?;
    Ok(cursor.pos)
}

/// Whether `data` decodes with `fields`, told without making values where
/// every field has a fixed size or is a NUL-terminated string (a kernel
/// image path, a CLR method name: the common variable layouts). `None`
/// where a length, a count or a kind of field needs [`decode`] to say.
pub fn decodes(fields: &[Field], data: &[u8], pointer_size: u8) -> Option<bool> {
    SizeCheck::of(fields, pointer_size).map(|check| check.decodes(data))
}

/// [`decodes`] worked out once for a layout: its runs of fixed-size fields
/// as byte counts, its terminated strings as searches, the integers later
/// counts refer to as values to keep.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SizeCheck(Vec<SizeStep>);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SizeStep {
    Bytes(usize),
    /// A string of units of this size, up to its NUL.
    Terminated(usize),
    /// An unsigned integer of this size a later count refers to, kept in a register.
    Keep {
        register: usize,
        size: usize,
    },
    /// As many elements of `size` bytes as the register says.
    Counted {
        register: usize,
        size: usize,
    },
    /// Elements of `size` bytes to the end of the payload.
    Repeated(usize),
    /// The rest of the payload (binary without a length).
    Rest,
}

impl SizeCheck {
    /// Registers a check keeps (layouts with more counts are decoded).
    const REGISTERS: usize = 4;

    /// `None` where a field's length, count or kind needs [`decode`].
    pub fn of(fields: &[Field], pointer_size: u8) -> Option<SizeCheck> {
        let mut registers: Vec<usize> = Vec::new();
        let mut steps: Vec<SizeStep> = Vec::new();
        for (at, field) in fields.iter().enumerate() {
            let referenced = fields[at + 1..].iter().any(|later| later.count == Some(Len::Field(at)));
            let unit = match field.in_type {
                InType::UnicodeString => 2,
                InType::AnsiString => 1,
                _ => 0,
            };
            let step = if referenced {
                let size = match field.in_type {
                    // A boolean's value is 0 or 1, not its byte.
                    InType::UInt8 if field.out_type != OutType::Boolean => 1,
                    InType::UInt16 => 2,
                    InType::UInt32 | InType::HexInt32 => 4,
                    InType::UInt64 | InType::HexInt64 => 8,
                    _ => return None,
                };
                if field.count.is_some() || field.length.is_some() || registers.len() == SizeCheck::REGISTERS {
                    return None;
                }
                registers.push(at);
                SizeStep::Keep { register: registers.len() - 1, size }
            } else if unit != 0 && field.length.is_none() && field.count.is_none() {
                SizeStep::Terminated(unit)
            } else if field.in_type == InType::Binary
                && field.length.is_none()
                && field.count.is_none()
                && field.out_type != OutType::Ipv6
            {
                SizeStep::Rest
            } else {
                match field.count {
                    Some(Len::Field(i)) => {
                        let register = registers.iter().position(|&r| r == i)?;
                        let size = element_size(field, pointer_size).filter(|&n| n > 0)?;
                        SizeStep::Counted { register, size }
                    }
                    Some(Len::Remaining) => SizeStep::Repeated(element_size(field, pointer_size).filter(|&n| n > 0)?),
                    _ => SizeStep::Bytes(fixed_size(std::slice::from_ref(field), pointer_size)?),
                }
            };
            match (steps.last_mut(), step) {
                (Some(SizeStep::Bytes(run)), SizeStep::Bytes(more)) => *run += more,
                _ => steps.push(step),
            }
        }
        // What ends the layout and cannot fail (a path at the end of an image
        // load) need not be walked.
        while matches!(steps.last(), Some(SizeStep::Terminated(_) | SizeStep::Rest)) {
            steps.pop();
        }
        Some(SizeCheck(steps))
    }

    /// Whether `data` decodes with the layout, as [`decode`] would say.
    pub fn decodes(&self, data: &[u8]) -> bool {
        let mut c = Cursor { data, pos: 0, pointer_size: 8 };
        let mut registers = [0u64; SizeCheck::REGISTERS];
        for &step in &self.0 {
            let taken = match step {
                SizeStep::Bytes(n) => c.take(n).is_some(),
                SizeStep::Terminated(unit) => {
                    c.terminated(unit);
                    true
                }
                SizeStep::Keep { register, size } => match c.take(size) {
                    Some(bytes) => {
                        let mut word = [0u8; 8];
                        word[..size].copy_from_slice(bytes);
                        registers[register] = u64::from_le_bytes(word);
                        true
                    }
                    None => false,
                },
                SizeStep::Counted { register, size } => {
                    let bytes = usize::try_from(registers[register]).ok().and_then(|n| n.checked_mul(size));
                    bytes.is_some_and(|n| c.take(n).is_some())
                }
                SizeStep::Repeated(size) => {
                    let whole = c.rest().len().is_multiple_of(size);
                    c.pos = data.len();
                    whole
                }
                SizeStep::Rest => {
                    c.pos = data.len();
                    true
                }
            };
            if !taken {
                return false;
            }
        }
        true
    }
}

/// A layout whose top-level fields each take a fixed number of bytes
/// (numbers, pointers, GUIDs, times, binary of a fixed length): decoded by
/// offsets after one length check for the whole payload, as [`decode`]
/// decodes it (most events of the network providers are laid out so).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlatLayout {
    fields: Vec<(InType, OutType, usize)>,
    size: usize,
}

/// Where one field of a [`FlatLayout`] lies, and whether it reads as an
/// unsigned integer or as bytes: for readers that want a few fields of
/// every event and would rather not decode the rest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlatField {
    pub offset: u32,
    pub size: u32,
    pub reads_as: ReadsAs,
}

/// The value a [`FlatField`] decodes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadsAs {
    /// [`Value::Unsigned`].
    Unsigned,
    /// [`Value::Binary`].
    Binary,
    /// Any other value.
    Other,
}

impl FlatField {
    /// The field's [`Value::Unsigned`] in a payload its layout fits.
    #[inline]
    pub fn unsigned(self, data: &[u8]) -> Option<u64> {
        if self.reads_as != ReadsAs::Unsigned {
            return None;
        }
        Some(read_unsigned(self.bytes(data)?))
    }

    /// The field's [`Value::Binary`] in a payload its layout fits.
    #[inline]
    pub fn binary(self, data: &[u8]) -> Option<&[u8]> {
        if self.reads_as != ReadsAs::Binary {
            return None;
        }
        self.bytes(data)
    }

    #[inline(always)]
    fn bytes(self, data: &[u8]) -> Option<&[u8]> {
        let offset = self.offset as usize;
        data.get(offset..offset + self.size as usize)
    }
}

impl FlatLayout {
    /// `None` where a field's size depends on the payload, or is an array or a struct.
    pub fn of(fields: &[Field], pointer_size: u8) -> Option<FlatLayout> {
        let mut flat = Vec::with_capacity(fields.len());
        for field in fields {
            let fixed_binary = field.in_type == InType::Binary;
            if field.count.is_some() || !(fixed_binary || scalar_size(field.in_type, pointer_size).is_some()) {
                return None;
            }
            flat.push((field.in_type, field.out_type, element_size(field, pointer_size)?));
        }
        let size = flat.iter().map(|&(_, _, n)| n).sum();
        Some(FlatLayout { fields: flat, size })
    }

    /// Whether a payload holds every field: its values are then what
    /// [`FlatLayout::decode`] gives and what each [`FlatField`] reads.
    pub fn fits(&self, data: &[u8]) -> bool {
        data.len() >= self.size
    }

    /// Where field `i` lies (`None` past the last field, or past 4 GB).
    pub fn field(&self, i: usize) -> Option<FlatField> {
        let offset = u32::try_from(self.fields.get(..i)?.iter().map(|&(_, _, n)| n).sum::<usize>()).ok()?;
        let &(in_type, out_type, size) = self.fields.get(i)?;
        let size = u32::try_from(size).ok()?;
        let reads_as = match (in_type, out_type) {
            (InType::Binary, _) => ReadsAs::Binary,
            (InType::UInt8, OutType::Boolean) => ReadsAs::Other,
            (
                InType::UInt8
                | InType::UInt16
                | InType::UInt32
                | InType::UInt64
                | InType::HexInt32
                | InType::HexInt64
                | InType::Pointer
                | InType::SizeT
                | InType::AnsiChar
                | InType::UnicodeChar,
                _,
            ) => ReadsAs::Unsigned,
            _ => ReadsAs::Other,
        };
        Some(FlatField { offset, size, reads_as })
    }

    /// The payload's values, appended to `out`, and the bytes they took;
    /// `None` for a payload shorter than the layout ([`decode`] says where
    /// it ends).
    pub fn decode<'a>(&self, data: &'a [u8], out: &mut Vec<Value<'a>>) -> Option<usize> {
        let mut rest = data.get(..self.size)?;
        out.reserve(self.fields.len());
        let base = out.len();
        for &(in_type, out_type, size) in &self.fields {
            // The sizes add up to the layout's: this cannot fail.
            let Some((bytes, after)) = rest.split_at_checked(size) else {
                out.truncate(base);
                return None;
            };
            rest = after;
            out.push(if in_type == InType::Binary { Value::Binary(bytes) } else { scalar(in_type, out_type, bytes) });
        }
        Some(self.size)
    }
}

/// The bytes of a value of `in_type` that does not depend on the payload
/// or the field's length (numbers, pointers, GUIDs, times): a pointer of
/// any width but 4 is read as 8 bytes wide.
fn scalar_size(in_type: InType, pointer_size: u8) -> Option<usize> {
    in_type.fixed_size(if pointer_size == 4 { 4 } else { 8 })
}

/// A little-endian unsigned number of 1, 2, 4 or 8 bytes; of a longer run
/// of bytes, the first 8; of any other length, 0.
#[inline(always)]
fn read_unsigned(bytes: &[u8]) -> u64 {
    // Read at its own width (a copy of a variable length into a word stalls the load after it).
    match *bytes {
        [b] => u64::from(b),
        [a, b] => u64::from(u16::from_le_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_le_bytes([a, b, c, d])),
        _ => bytes.first_chunk().map_or(0, |word| u64::from_le_bytes(*word)),
    }
}

/// The value of a [`scalar_size`] in-type from its bytes (as many as that says).
fn scalar<'a>(in_type: InType, out_type: OutType, bytes: &[u8]) -> Value<'a> {
    let unsigned = read_unsigned(bytes);
    match in_type {
        InType::Null => Value::Null,
        InType::Int8 => Value::Signed(i64::from(unsigned as u8 as i8)),
        InType::UInt8 if out_type == OutType::Boolean => Value::Bool(unsigned != 0),
        InType::Int16 => Value::Signed(i64::from(unsigned as u16 as i16)),
        InType::Int32 => Value::Signed(i64::from(unsigned as u32 as i32)),
        InType::Int64 => Value::Signed(unsigned as i64),
        InType::Float => Value::Float(f64::from(f32::from_bits(unsigned as u32))),
        InType::Double => Value::Float(f64::from_bits(unsigned)),
        InType::Boolean => Value::Bool(unsigned != 0),
        InType::FileTime => Value::FileTime(unsigned as i64),
        InType::Guid => Value::Guid(Guid::from_bytes_le(bytes.try_into().unwrap_or_default())),
        InType::SystemTime => {
            let mut t = [0u16; 8];
            for (v, pair) in t.iter_mut().zip(bytes.chunks_exact(2)) {
                *v = u16::from_le_bytes([pair[0], pair[1]]);
            }
            Value::SystemTime(t)
        }
        // Unsigned integers, characters, pointers.
        _ => Value::Unsigned(unsigned),
    }
}

/// The bytes `fields` take when that does not depend on the payload (every
/// field of a fixed size, arrays of a fixed count): then a payload decodes if
/// and only if it holds that many bytes, and [`decode`] need not walk it to
/// say so. `None` for layouts with strings, lengths or counts read from the
/// payload, SIDs.
pub fn fixed_size(fields: &[Field], pointer_size: u8) -> Option<usize> {
    let mut total = 0usize;
    for field in fields {
        let one = element_size(field, pointer_size)?;
        let count = match field.count {
            None => 1,
            // An array of elements that take no bytes does not decode.
            Some(Len::Fixed(n)) if one > 0 || n == 0 => n as usize,
            Some(_) => return None,
        };
        total = total.checked_add(one.checked_mul(count)?)?;
    }
    Some(total)
}

/// The bytes one element of `field` takes, when that does not depend on the payload.
fn element_size(field: &Field, pointer_size: u8) -> Option<usize> {
    let one = match field.in_type {
        InType::UnicodeString => match field.length {
            Some(Len::Fixed(chars)) => 2 * chars as usize,
            _ => return None,
        },
        InType::AnsiString => match field.length {
            Some(Len::Fixed(n)) => n as usize,
            _ => return None,
        },
        InType::Binary => match field.length {
            Some(Len::Fixed(n)) => n as usize,
            None if field.out_type == OutType::Ipv6 => 16,
            _ => return None,
        },
        InType::Struct => fixed_size(&field.members, pointer_size)?,
        in_type => scalar_size(in_type, pointer_size)?,
    };
    // A length that does not apply to the in-type (numbers) is read from
    // the payload only for strings and binary, handled above.
    if !matches!(field.in_type, InType::UnicodeString | InType::AnsiString | InType::Binary)
        && !matches!(field.length, None | Some(Len::Fixed(_)))
    {
        return None;
    }
    Some(one)
}

fn decode_level<'a>(fields: &[Field], c: &mut Cursor<'a>, out: &mut Vec<Value<'a>>) -> Result<(), DecodeError> {
    let base = out.len();
    for field in fields {
        let start = c.pos;
        let err = |reason| DecodeError { field: field.name.clone(), offset: start, reason };
        let referenced = |len: Len, out: &[Value<'a>], c: &mut Cursor<'a>| -> Result<u64, DecodeError> {
            match len {
                Len::Fixed(n) => Ok(u64::from(n)),
                Len::Field(i) => out
                    .get(base + i)
                    .and_then(Value::as_u64)
                    .ok_or_else(|| err("its length or count field is not an earlier integer")),
                Len::Prefixed => c.u16().map(u64::from).ok_or_else(|| err("payload ends before the element count")),
                Len::Remaining => Ok(u64::MAX),
            }
        };
        let value = match field.count {
            None => decode_one(field, c, out, base).map_err(err)?,
            Some(count) => {
                let n = referenced(count, out, c)?;
                let mut items = Vec::with_capacity(usize::try_from(n).unwrap_or(0).min(c.rest().len()));
                for _ in 0..n {
                    if count == Len::Remaining && c.rest().is_empty() {
                        break;
                    }
                    let before = c.pos;
                    items.push(decode_one(field, c, out, base).map_err(err)?);
                    if c.pos == before {
                        // Elements that take no bytes would repeat as often
                        // as the count says (forever, for "to the end").
                        return Err(err("array elements take no bytes"));
                    }
                }
                Value::Array(items)
            }
        };
        out.push(value);
    }
    Ok(())
}

fn length_of(field: &Field, c: &mut Cursor<'_>, out: &[Value<'_>], base: usize) -> Result<Option<usize>, &'static str> {
    Ok(match field.length {
        None => None,
        Some(Len::Fixed(n)) => Some(n as usize),
        Some(Len::Field(i)) => {
            let v = out.get(base + i).and_then(Value::as_u64).ok_or("its length field is not an earlier integer")?;
            Some(usize::try_from(v).map_err(|_| "length does not fit")?)
        }
        Some(Len::Prefixed) => Some(usize::from(c.u16().ok_or("payload ends before the length")?)),
        Some(Len::Remaining) => Some(c.rest().len()),
    })
}

fn decode_one<'a>(
    field: &Field,
    c: &mut Cursor<'a>,
    out: &[Value<'a>],
    base: usize,
) -> Result<Value<'a>, &'static str> {
    const SHORT: &str = "payload ends inside the field";
    let length = length_of(field, c, out, base)?;
    let take = |c: &mut Cursor<'a>, n: usize| c.take(n).ok_or(SHORT);
    Ok(match field.in_type {
        InType::UnicodeString => match length {
            Some(chars) => Value::Utf16(trim_nuls(take(c, chars.checked_mul(2).ok_or(SHORT)?)?, 2)),
            None => Value::Utf16(c.terminated(2)),
        },
        InType::AnsiString => match length {
            Some(n) => Value::Ansi(trim_nuls(take(c, n)?, 1)),
            None => Value::Ansi(c.terminated(1)),
        },
        InType::Binary => {
            let n = length.unwrap_or(if field.out_type == OutType::Ipv6 { 16 } else { c.rest().len() });
            Value::Binary(take(c, n)?)
        }
        InType::CountedString | InType::WbemCountedString => {
            let n = usize::from(c.u16().ok_or(SHORT)?);
            Value::Utf16(take(c, n)?)
        }
        InType::CountedAnsiString | InType::WbemCountedAnsiString => {
            let n = usize::from(c.u16().ok_or(SHORT)?);
            Value::Ansi(take(c, n)?)
        }
        InType::ReversedCountedString => {
            let n = usize::from(u16::from_be_bytes(c.array().ok_or(SHORT)?));
            Value::Utf16(take(c, n)?)
        }
        InType::ReversedCountedAnsiString => {
            let n = usize::from(u16::from_be_bytes(c.array().ok_or(SHORT)?));
            Value::Ansi(take(c, n)?)
        }
        InType::CountedBinary => {
            let n = usize::from(c.u16().ok_or(SHORT)?);
            Value::Binary(take(c, n)?)
        }
        InType::NonNullTerminatedString => {
            let rest = c.rest();
            c.pos += rest.len();
            Value::Utf16(rest.get(..rest.len() & !1).unwrap_or_default())
        }
        InType::NonNullTerminatedAnsiString => {
            let rest = c.rest();
            c.pos += rest.len();
            Value::Ansi(rest)
        }
        InType::HexDump => {
            let n = c.u32().ok_or(SHORT)? as usize;
            Value::Binary(take(c, n)?)
        }
        InType::Sid => Value::Sid(take_sid(c)?),
        InType::WbemSid => {
            let first = c.rest().get(..4).ok_or(SHORT)?;
            if first == [0, 0, 0, 0] {
                c.pos += 4;
                Value::Null
            } else {
                // TOKEN_USER: a SID pointer and attributes, pointer-aligned.
                take(c, 2 * usize::from(c.pointer_size))?;
                Value::Sid(take_sid(c)?)
            }
        }
        InType::Struct => {
            let mut members = Vec::with_capacity(field.members.len());
            decode_level(&field.members, c, &mut members).map_err(|e| e.reason)?;
            Value::Struct(members)
        }
        // Numbers, pointers, GUIDs, times: every other in-type has a size.
        in_type => {
            let size = scalar_size(in_type, c.pointer_size).ok_or("an in-type without a size")?;
            scalar(in_type, field.out_type, take(c, size)?)
        }
    })
}

fn take_sid<'a>(c: &mut Cursor<'a>) -> Result<&'a [u8], &'static str> {
    let count = *c.rest().get(1).ok_or("payload ends inside the SID")?;
    c.take(8 + 4 * usize::from(count)).ok_or("payload ends inside the SID")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str, t: InType) -> Field {
        Field::new(name, t)
    }

    #[test]
    fn flat_layouts_decode_as_the_field_walk_does() {
        use InType::*;
        // Every TDH in-type of a fixed size, and binary (of a fixed length).
        let types: Vec<InType> =
            (0..=u16::MAX).filter_map(InType::from_tdh).filter(|&t| t.fixed_size(8).is_some() || t == Binary).collect();
        assert_eq!(types.len(), 22);
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut flat_decoded, mut short) = (0, 0);
        for _ in 0..3000 {
            let fields: Vec<Field> = (0..1 + next() % 8)
                .map(|i| {
                    let mut field = f(&format!("F{i}"), types[next() as usize % types.len()]);
                    match (field.in_type, next() % 4) {
                        (Binary, 0) => field.out_type = OutType::Ipv6,
                        (Binary, _) => field.length = Some(Len::Fixed((next() % 20) as u32)),
                        (UInt8, 0) => field.out_type = OutType::Boolean,
                        _ => {}
                    }
                    field
                })
                .collect();
            let pointer_size = if next() % 2 == 0 { 4 } else { 8 };
            let layout = FlatLayout::of(&fields, pointer_size).expect("every field has a fixed size");
            let size = fixed_size(&fields, pointer_size).unwrap();
            for len in [0, size / 2, size.saturating_sub(1), size, size + 5] {
                let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
                let (mut by_walk, mut by_offsets) = (Vec::new(), vec![Value::Null]);
                let walked = decode(&fields, &data, pointer_size, &mut by_walk);
                match layout.decode(&data, &mut by_offsets) {
                    Some(taken) => {
                        flat_decoded += 1;
                        assert!(layout.fits(&data));
                        // A field read where it lies is the field decoded, when it reads as said.
                        for (i, value) in by_walk.iter().enumerate() {
                            let field = layout.field(i).unwrap();
                            match (field.reads_as, value) {
                                (ReadsAs::Unsigned, Value::Unsigned(v)) => assert_eq!(field.unsigned(&data), Some(*v)),
                                (ReadsAs::Binary, Value::Binary(b)) => assert_eq!(field.binary(&data), Some(*b)),
                                (ReadsAs::Other, v) => {
                                    assert!(!matches!(v, Value::Unsigned(_) | Value::Binary(_)), "{:?}", fields[i]);
                                    assert_eq!((field.unsigned(&data), field.binary(&data)), (None, None));
                                }
                                (reads_as, v) => panic!("{:?} reads as {reads_as:?} but decodes to {v:?}", fields[i]),
                            }
                        }
                        assert_eq!(walked, Ok(taken));
                        // Compared as text: a float may be NaN.
                        assert_eq!(format!("{:?}", &by_offsets[1..]), format!("{by_walk:?}"), "{fields:?}");
                    }
                    None => {
                        short += 1;
                        assert!(walked.is_err() && len < size && !layout.fits(&data), "{fields:?} {len}");
                        assert_eq!(by_offsets, [Value::Null], "nothing appended");
                    }
                }
            }
        }
        assert!(flat_decoded > 6000 && short > 6000, "{flat_decoded} {short}");
        // Arrays, structs, lengths read from the payload and strings are not flat.
        let mut counted = f("N", UInt32);
        counted.count = Some(Len::Fixed(2));
        assert_eq!(FlatLayout::of(&[counted], 8), None);
        assert_eq!(FlatLayout::of(&[f("S", UnicodeString)], 8), None);
        assert_eq!(FlatLayout::of(&[f("B", Binary)], 8), None);
    }

    #[test]
    fn utf16_terminator_found_as_a_unit_by_unit_search_finds_it() {
        // Lanes that trip word-at-a-time searches: 0x0001 (borrows to 0),
        // 0x8000 and 0x0100 (a zero byte in a non-zero unit), at every
        // position of every length up to three words plus an odd byte.
        let units: [u16; 5] = [0x0000, 0x0001, 0x8000, 0x0100, 0x0041];
        for len in 0..=13usize {
            for seed in 0..5usize.pow(len.min(6) as u32) {
                let mut bytes = Vec::new();
                let mut s = seed;
                for _ in 0..len / 2 {
                    bytes.extend_from_slice(&units[s % 5].to_le_bytes());
                    s /= 5;
                }
                if len % 2 == 1 {
                    bytes.push(0);
                }
                let naive = bytes.chunks_exact(2).position(|c| c == [0, 0]).map(|i| i * 2);
                assert_eq!(utf16_nul(&bytes), naive, "{bytes:?}");
            }
        }
        // Past the first words: one of those units at every place of up to
        // five words and an odd byte.
        for len in 14..=41usize {
            for at in 0..len / 2 {
                for unit in units {
                    let mut bytes: Vec<u8> =
                        (0..len / 2).flat_map(|i| if i == at { unit } else { 0x0041 }.to_le_bytes()).collect();
                    if len % 2 == 1 {
                        bytes.push(0);
                    }
                    let naive = bytes.chunks_exact(2).position(|c| c == [0, 0]).map(|i| i * 2);
                    assert_eq!(utf16_nul(&bytes), naive, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn lengths_and_counts_from_earlier_fields() {
        let mut payload = Vec::new();
        payload.extend_from_slice(&3u32.to_le_bytes()); // count
        payload.extend_from_slice(&[1, 0, 2, 0, 3, 0]); // three u16
        payload.extend_from_slice(&2u16.to_le_bytes()); // length in chars
        payload.extend_from_slice(&[b'h', 0, b'i', 0]);
        payload.extend_from_slice(&[b'z', 0, 0, 0]); // NUL-terminated UTF-16
        payload.extend_from_slice(b"ansi\0");
        let mut items = f("Items", InType::UInt16);
        items.count = Some(Len::Field(0));
        let mut name = f("Name", InType::UnicodeString);
        name.length = Some(Len::Field(2));
        let fields = [
            f("Count", InType::UInt32),
            items,
            f("NameLength", InType::UInt16),
            name,
            f("Tail", InType::UnicodeString),
            f("A", InType::AnsiString),
        ];
        let mut out = Vec::new();
        let used = decode(&fields, &payload, 8, &mut out).unwrap();
        assert_eq!(used, payload.len());
        assert_eq!(out[1], Value::Array(vec![Value::Unsigned(1), Value::Unsigned(2), Value::Unsigned(3)]));
        assert_eq!(out[3].as_str().unwrap(), "hi");
        assert_eq!(out[4].as_str().unwrap(), "z");
        assert_eq!(out[5].as_str().unwrap(), "ansi");
    }

    #[test]
    fn a_fixed_layout_decodes_exactly_when_the_payload_holds_its_size() {
        let mut name = f("Name", InType::UnicodeString);
        name.length = Some(Len::Fixed(3));
        let mut pair = f("Pair", InType::Struct);
        pair.members = vec![f("A", InType::UInt16), f("B", InType::Pointer)];
        pair.count = Some(Len::Fixed(2));
        let fields = [f("P", InType::Pointer), f("G", InType::Guid), name, pair, f("T", InType::FileTime)];
        for pointer_size in [4u8, 8] {
            let size = fixed_size(&fields, pointer_size).unwrap();
            assert_eq!(size, usize::from(pointer_size) + 16 + 6 + 2 * (2 + usize::from(pointer_size)) + 8);
            for len in [0, 1, size - 1, size, size + 1, size + 9] {
                let mut out = Vec::new();
                assert_eq!(decode(&fields, &vec![7; len], pointer_size, &mut out).is_ok(), len >= size, "{len}");
            }
        }
        // Sizes read from the payload: not fixed.
        let mut counted = f("Items", InType::UInt32);
        counted.count = Some(Len::Field(0));
        assert_eq!(fixed_size(&[f("N", InType::UInt32), counted], 8), None);
        assert_eq!(fixed_size(&[f("S", InType::UnicodeString)], 8), None);
        assert_eq!(fixed_size(&[f("B", InType::Binary)], 8), None);
        assert_eq!(fixed_size(&[f("S", InType::Sid)], 8), None);
    }

    #[test]
    fn a_layout_of_fixed_fields_and_terminated_strings_is_checked_as_decode_checks_it() {
        let mut guid_pair = f("Pair", InType::Guid);
        guid_pair.count = Some(Len::Fixed(2));
        let fields = [
            f("Base", InType::Pointer),
            f("Path", InType::UnicodeString),
            f("Size", InType::UInt32),
            f("Name", InType::AnsiString),
            guid_pair,
        ];
        let mut payload = vec![1u8; 8];
        payload.extend("C:\\a.dll".encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
        payload.extend([2, 0, 0, 0]);
        payload.extend(b"name\0");
        payload.extend([3; 32]);
        for pointer_size in [4u8, 8] {
            for len in 0..=payload.len() {
                let mut out = Vec::new();
                let decoded = decode(&fields, &payload[..len], pointer_size, &mut out).is_ok();
                assert_eq!(decodes(&fields, &payload[..len], pointer_size), Some(decoded), "{pointer_size} {len}");
            }
        }
        // Counts read from the payload, elements to the end, binary to the end.
        let mut counted = f("Items", InType::UInt32);
        counted.count = Some(Len::Field(1));
        let mut stack = f("Stack", InType::Pointer);
        stack.count = Some(Len::Remaining);
        let fields = [f("Name", InType::UnicodeString), f("N", InType::UInt16), counted, stack];
        let mut payload = vec![b'a', 0, 0, 0, 2, 0];
        payload.extend([9; 8 + 16]);
        let variants = [payload.clone(), [&payload[..4], &[200, 0]].concat(), [&payload[..4], &[0, 0]].concat()];
        for payload in &variants {
            for pointer_size in [4u8, 8] {
                for len in 0..=payload.len() {
                    let mut out = Vec::new();
                    let decoded = decode(&fields, &payload[..len], pointer_size, &mut out).is_ok();
                    assert_eq!(decodes(&fields, &payload[..len], pointer_size), Some(decoded), "{pointer_size} {len}");
                }
            }
        }
        let blob = [f("Magic", InType::UInt8), f("Data", InType::Binary)];
        assert_eq!(decodes(&blob, &[], 8), Some(false));
        assert_eq!(decodes(&blob, &[1, 2, 3], 8), Some(true));
        // A length read from the payload, a count of a later field: only decoding can say.
        let mut sized = f("Address", InType::Binary);
        sized.length = Some(Len::Field(0));
        assert_eq!(decodes(&[f("N", InType::UInt32), sized], &[0; 8], 8), None);
        let mut ahead = f("Items", InType::UInt32);
        ahead.count = Some(Len::Field(1));
        assert_eq!(decodes(&[ahead, f("N", InType::UInt32)], &[0; 8], 8), None);
    }

    #[test]
    fn size_checks_of_random_layouts_agree_with_decoding_random_payloads() {
        // A small deterministic generator: layouts of every in-type, with
        // fixed, referenced, prefixed and remaining lengths and counts,
        // against payloads of small values (counts that fit) and zeros.
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move |n: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % n
        };
        let types = [
            InType::Null,
            InType::UnicodeString,
            InType::AnsiString,
            InType::UInt8,
            InType::Int16,
            InType::UInt16,
            InType::UInt32,
            InType::UInt64,
            InType::Boolean,
            InType::Binary,
            InType::Guid,
            InType::Pointer,
            InType::Sid,
            InType::CountedString,
            InType::Struct,
        ];
        let (mut walked, mut agreed) = (0, 0);
        for _ in 0..20_000 {
            let mut fields = Vec::new();
            for at in 0..1 + next(5) as usize {
                let mut field = f("F", types[next(types.len() as u64) as usize]);
                if field.in_type == InType::Struct {
                    field.members = vec![f("A", InType::UInt16), f("B", InType::UInt8)];
                }
                let mut len = || match next(10) {
                    0 => Some(Len::Fixed(next(4) as u32)),
                    1 if at > 0 => Some(Len::Field(next(at as u64) as usize)),
                    2 => Some(Len::Prefixed),
                    3 => Some(Len::Remaining),
                    _ => None,
                };
                field.length = len();
                field.count = len();
                if next(8) == 0 {
                    field.out_type = OutType::Boolean;
                }
                fields.push(field);
            }
            let payload: Vec<u8> = (0..next(40)).map(|_| if next(3) == 0 { 0 } else { next(4) as u8 }).collect();
            for pointer_size in [4u8, 8] {
                let mut out = Vec::new();
                let decoded = decode(&fields, &payload, pointer_size, &mut out).is_ok();
                if let Some(verdict) = decodes(&fields, &payload, pointer_size) {
                    walked += 1;
                    agreed += usize::from(verdict == decoded);
                    assert_eq!(verdict, decoded, "{fields:?} {payload:?} {pointer_size}");
                }
            }
        }
        assert!(walked > 5_000, "layouts a size check took: {walked}");
        assert_eq!(agreed, walked);
    }

    #[test]
    fn an_array_of_elements_that_take_no_bytes_is_an_error_not_a_hang() {
        // A hostile trace's own event info can lay out such an array, its
        // count read from the payload or running to the payload's end.
        for count in [Len::Remaining, Len::Field(0), Len::Fixed(3)] {
            let mut nothing = f("Nothing", InType::Null);
            nothing.count = Some(count);
            let fields = [f("N", InType::UInt64), nothing];
            let mut out = Vec::new();
            let e = decode(&fields, &[0xFF; 16], 8, &mut out).unwrap_err();
            assert_eq!((e.field.as_str(), e.reason), ("Nothing", "array elements take no bytes"), "{count:?}");
        }
    }

    #[test]
    fn huge_counts_and_short_payloads_are_errors_not_allocations() {
        let mut items = f("Items", InType::UInt64);
        items.count = Some(Len::Field(0));
        let fields = [f("Count", InType::UInt32), items];
        let payload = u32::MAX.to_le_bytes();
        let mut out = Vec::new();
        let e = decode(&fields, &payload, 8, &mut out).unwrap_err();
        assert_eq!((e.field.as_str(), e.offset), ("Items", 4));
        let mut out = Vec::new();
        assert!(decode(&[f("X", InType::Guid)], &[0; 15], 8, &mut out).is_err());
    }

    #[test]
    fn every_other_in_type() {
        let mut p = Vec::new();
        p.extend_from_slice(&[0xFE]); // Int8
        p.extend_from_slice(&(-2i16).to_le_bytes()); // Int16
        p.extend_from_slice(&1.5f32.to_le_bytes()); // Float
        p.extend_from_slice(&2.25f64.to_le_bytes()); // Double
        p.extend_from_slice(&1u32.to_le_bytes()); // Boolean (4 bytes)
        p.extend_from_slice(&0xABCDu32.to_le_bytes()); // HexInt32
        p.extend_from_slice(&4u16.to_le_bytes()); // CountedString: byte count
        p.extend_from_slice(&[b'o', 0, b'k', 0]);
        p.extend_from_slice(&2u16.to_le_bytes()); // CountedAnsiString
        p.extend_from_slice(b"hi");
        p.extend_from_slice(&4u16.to_be_bytes()); // ReversedCountedString: big-endian count
        p.extend_from_slice(&[b'b', 0, b'e', 0]);
        p.extend_from_slice(&3u16.to_le_bytes()); // CountedBinary
        p.extend_from_slice(&[1, 2, 3]);
        p.extend_from_slice(&2u32.to_le_bytes()); // HexDump: u32 length
        p.extend_from_slice(&[9, 8]);
        p.extend_from_slice(&[b'Z', 0]); // UnicodeChar
        p.push(b'y'); // AnsiChar
        p.extend_from_slice(&7u64.to_le_bytes()); // SizeT (8)
        p.extend_from_slice(&[b't', 0, b'a', 0, b'i', 0, b'l', 0]); // NonNullTerminatedString
        let types = [
            InType::Int8,
            InType::Int16,
            InType::Float,
            InType::Double,
            InType::Boolean,
            InType::HexInt32,
            InType::CountedString,
            InType::CountedAnsiString,
            InType::ReversedCountedString,
            InType::CountedBinary,
            InType::HexDump,
            InType::UnicodeChar,
            InType::AnsiChar,
            InType::SizeT,
            InType::NonNullTerminatedString,
        ];
        let fields: Vec<Field> = types.iter().enumerate().map(|(i, t)| f(&format!("f{i}"), *t)).collect();
        let mut out = Vec::new();
        assert_eq!(decode(&fields, &p, 8, &mut out).unwrap(), p.len());
        assert_eq!(out[0], Value::Signed(-2));
        assert_eq!(out[1], Value::Signed(-2));
        assert_eq!(out[2], Value::Float(1.5));
        assert_eq!(out[3], Value::Float(2.25));
        assert_eq!(out[4], Value::Bool(true));
        assert_eq!(out[5], Value::Unsigned(0xABCD));
        assert_eq!(out[6].as_str().unwrap(), "ok");
        assert_eq!(out[7].as_str().unwrap(), "hi");
        assert_eq!(out[8].as_str().unwrap(), "be");
        assert_eq!(out[9], Value::Binary(&[1, 2, 3]));
        assert_eq!(out[10], Value::Binary(&[9, 8]));
        assert_eq!(out[11], Value::Unsigned(u64::from(b'Z')));
        assert_eq!(out[12], Value::Unsigned(u64::from(b'y')));
        assert_eq!(out[13], Value::Unsigned(7));
        assert_eq!(out[14].as_str().unwrap(), "tail");
        // Fixed-length strings drop their NUL padding.
        let mut padded = f("Name", InType::UnicodeString);
        padded.length = Some(Len::Fixed(4));
        let mut out = Vec::new();
        decode(&[padded], &[b'a', 0, b'b', 0, 0, 0, 0, 0], 8, &mut out).unwrap();
        assert_eq!(out[0].as_str().unwrap(), "ab");
    }

    #[test]
    fn pointers_sids_and_wbem_sids() {
        let sid = [1u8, 1, 0, 0, 0, 0, 0, 5, 18, 0, 0, 0];
        let mut payload = 0x1122_3344u32.to_le_bytes().to_vec();
        payload.extend_from_slice(&sid);
        payload.extend_from_slice(&[0, 0, 0, 0]); // WbemSid absent
        payload.extend_from_slice(&[9; 8]); // WbemSid: TOKEN_USER (2 × 4 bytes)
        payload.extend_from_slice(&sid);
        let fields = [f("P", InType::Pointer), f("S", InType::Sid), f("W0", InType::WbemSid), f("W1", InType::WbemSid)];
        let mut out = Vec::new();
        assert_eq!(decode(&fields, &payload, 4, &mut out).unwrap(), payload.len());
        assert_eq!(out[0], Value::Unsigned(0x1122_3344));
        assert_eq!(out[1], Value::Sid(&sid));
        assert_eq!(out[2], Value::Null);
        assert_eq!(out[3], Value::Sid(&sid));
    }
}
