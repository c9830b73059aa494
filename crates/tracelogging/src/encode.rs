//! The TraceLogging encoding: the provider traits blob, the event metadata
//! blob and the payload, laid out as Windows' `TraceLoggingProvider.h`
//! lays them out. Pure functions: what ETW receives on Windows and what the
//! tests read back anywhere.
//!
//! ```text
//! provider traits: u16 size (including itself) · name (UTF-8, NUL) · [traits]
//!   trait: u16 size (including its 3-byte header) · u8 type · data
//!   (type 1: provider group GUID)
//! event metadata:  u16 size (including itself) · tags (one byte 0: none)
//!   · event name (UTF-8, NUL) · per field: name (UTF-8, NUL)
//!   · in-type byte (0x80: an out-type byte follows) · [out-type byte]
//! payload: the field values one after another, no padding, little-endian
//! ```

use std::fmt;

use nettrail_etl::Guid;

/// A TraceLogging in-type: how a value is stored (5 bits; TDH's numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InType(pub u8);

impl InType {
    /// UTF-16, NUL-terminated.
    pub const UNICODE_STRING: InType = InType(1);
    /// 8-bit characters, NUL-terminated (UTF-8 with out-type [`OutType::UTF8`]).
    pub const ANSI_STRING: InType = InType(2);
    pub const INT8: InType = InType(3);
    pub const UINT8: InType = InType(4);
    pub const INT16: InType = InType(5);
    pub const UINT16: InType = InType(6);
    pub const INT32: InType = InType(7);
    pub const UINT32: InType = InType(8);
    pub const INT64: InType = InType(9);
    pub const UINT64: InType = InType(10);
    pub const FLOAT: InType = InType(11);
    pub const DOUBLE: InType = InType(12);
    /// Win32 `BOOL`: 4 bytes.
    pub const BOOL32: InType = InType(13);
    /// u16 byte count, then the bytes.
    pub const BINARY: InType = InType(14);
    pub const GUID: InType = InType(15);
    pub const FILETIME: InType = InType(17);
    pub const SYSTEMTIME: InType = InType(18);
    pub const SID: InType = InType(19);
    pub const HEXINT32: InType = InType(20);
    pub const HEXINT64: InType = InType(21);
    /// u16 byte count, then UTF-16.
    pub const COUNTED_STRING: InType = InType(22);
    /// u16 byte count, then 8-bit characters.
    pub const COUNTED_ANSI_STRING: InType = InType(23);
}

/// A TraceLogging out-type: how a value is shown (7 bits; TraceLogging's
/// numbering, which differs from TDH's below 33).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct OutType(pub u8);

impl OutType {
    /// The in-type's default: no out-type byte is written.
    pub const DEFAULT: OutType = OutType(0);
    pub const NO_PRINT: OutType = OutType(1);
    /// A UINT8 shown as a character.
    pub const STRING: OutType = OutType(2);
    /// A UINT8 shown as true/false.
    pub const BOOLEAN: OutType = OutType(3);
    pub const HEX: OutType = OutType(4);
    pub const PID: OutType = OutType(5);
    pub const TID: OutType = OutType(6);
    /// A UINT16 in network byte order.
    pub const PORT: OutType = OutType(7);
    pub const IPV4: OutType = OutType(8);
    pub const IPV6: OutType = OutType(9);
    pub const SOCKET_ADDRESS: OutType = OutType(10);
    pub const XML: OutType = OutType(11);
    pub const JSON: OutType = OutType(12);
    pub const WIN32_ERROR: OutType = OutType(13);
    pub const NTSTATUS: OutType = OutType(14);
    pub const HRESULT: OutType = OutType(15);
    pub const FILETIME: OutType = OutType(16);
    pub const SIGNED: OutType = OutType(17);
    pub const UNSIGNED: OutType = OutType(18);
    /// 8-bit strings in UTF-8.
    pub const UTF8: OutType = OutType(35);
}

/// Values longer than this many bytes (strings, byte strings) are cut: an
/// ETW event holds at most 64 KiB in all.
pub const MAX_VALUE_BYTES: usize = 16 * 1024;

/// The metadata blob would exceed its u16 size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodeError {
    /// The size the blob would have had.
    pub size: usize,
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TraceLogging metadata of {} bytes exceeds the 65535 a blob can declare", self.size)
    }
}

impl std::error::Error for EncodeError {}

/// Appends a name or string with NUL bytes replaced (a NUL would end it early).
fn push_nul_terminated(out: &mut Vec<u8>, s: &str) {
    if s.as_bytes().contains(&0) {
        out.extend_from_slice(s.replace('\0', "\u{FFFD}").as_bytes());
    } else {
        out.extend_from_slice(s.as_bytes());
    }
    out.push(0);
}

/// Writes the u16 size at the start of a blob.
fn finish_blob(mut blob: Vec<u8>) -> Result<Vec<u8>, EncodeError> {
    let size = u16::try_from(blob.len()).map_err(|_| EncodeError { size: blob.len() })?;
    blob[..2].copy_from_slice(&size.to_le_bytes());
    Ok(blob)
}

/// The provider traits blob: the provider's name and no other trait.
///
/// ```
/// assert_eq!(nettrail_tracelogging::provider_traits("App"), b"\x06\x00App\0");
/// ```
pub fn provider_traits(name: &str) -> Vec<u8> {
    let mut blob = vec![0, 0];
    push_nul_terminated(&mut blob, truncate(name, 1024));
    finish_blob(blob).unwrap_or_default()
}

/// The provider traits blob of a provider in a provider group (trait type
/// 1: the group's GUID), as providers that share enablement declare.
pub fn provider_traits_in_group(name: &str, group: Guid) -> Vec<u8> {
    let mut blob = provider_traits(name);
    blob.extend_from_slice(&19u16.to_le_bytes());
    blob.push(1);
    blob.extend_from_slice(&group.to_bytes_le());
    finish_blob(blob).unwrap_or_default()
}

/// Builds an event metadata blob field by field.
///
/// ```
/// use nettrail_tracelogging::{InType, MetadataBuilder, OutType};
/// let mut m = MetadataBuilder::new("Connect");
/// m.field("Port", InType::UINT16, OutType::PORT);
/// assert_eq!(m.finish().unwrap(), b"\x12\x00\x00Connect\0Port\0\x86\x07");
/// ```
#[derive(Clone, Debug)]
pub struct MetadataBuilder {
    blob: Vec<u8>,
}

impl MetadataBuilder {
    /// The size placeholder, one tag byte (0: no tags) and the event's name.
    pub fn new(event_name: &str) -> MetadataBuilder {
        let mut blob = Vec::with_capacity(64);
        blob.extend_from_slice(&[0, 0, 0]);
        push_nul_terminated(&mut blob, event_name);
        MetadataBuilder { blob }
    }

    /// A scalar field: its name, the in-type, and the out-type when it is
    /// not the default (then the in-type byte carries the chain bit 0x80).
    pub fn field(&mut self, name: &str, in_type: InType, out_type: OutType) -> &mut Self {
        push_nul_terminated(&mut self.blob, name);
        let in_meta = in_type.0 & 0x1F;
        if out_type == OutType::DEFAULT {
            self.blob.push(in_meta);
        } else {
            self.blob.push(in_meta | 0x80);
            self.blob.push(out_type.0 & 0x7F);
        }
        self
    }

    /// The blob, its size written in front.
    pub fn finish(self) -> Result<Vec<u8>, EncodeError> {
        finish_blob(self.blob)
    }
}

/// A field value of the kinds a `tracing` span or event carries.
#[derive(Clone, Debug, PartialEq)]
pub enum FieldValue {
    /// UTF-8 text (also `Debug`- and `Display`-formatted values and errors):
    /// in-type ANSISTRING with out-type UTF8, NUL-terminated, as
    /// `TraceLoggingUtf8String` writes it. NULs inside become U+FFFD; text
    /// past [`MAX_VALUE_BYTES`] is cut.
    Str(String),
    /// INT64.
    I64(i64),
    /// UINT64.
    U64(u64),
    /// DOUBLE.
    F64(f64),
    /// UINT8 with out-type BOOLEAN, as `TraceLoggingBoolean` writes a C++ `bool`.
    Bool(bool),
    /// BINARY: u16 byte count, then the bytes (cut at [`MAX_VALUE_BYTES`]).
    Bytes(Vec<u8>),
}

impl FieldValue {
    pub fn in_type(&self) -> InType {
        match self {
            FieldValue::Str(_) => InType::ANSI_STRING,
            FieldValue::I64(_) => InType::INT64,
            FieldValue::U64(_) => InType::UINT64,
            FieldValue::F64(_) => InType::DOUBLE,
            FieldValue::Bool(_) => InType::UINT8,
            FieldValue::Bytes(_) => InType::BINARY,
        }
    }

    pub fn out_type(&self) -> OutType {
        match self {
            FieldValue::Str(_) => OutType::UTF8,
            FieldValue::Bool(_) => OutType::BOOLEAN,
            _ => OutType::DEFAULT,
        }
    }

    /// Appends the value's payload bytes.
    pub fn encode(&self, payload: &mut Vec<u8>) {
        match self {
            FieldValue::Str(s) => push_nul_terminated(payload, truncate(s, MAX_VALUE_BYTES)),
            FieldValue::I64(v) => payload.extend_from_slice(&v.to_le_bytes()),
            FieldValue::U64(v) => payload.extend_from_slice(&v.to_le_bytes()),
            FieldValue::F64(v) => payload.extend_from_slice(&v.to_le_bytes()),
            FieldValue::Bool(v) => payload.push(u8::from(*v)),
            FieldValue::Bytes(b) => {
                let b = &b[..b.len().min(MAX_VALUE_BYTES)];
                payload.extend_from_slice(&(b.len() as u16).to_le_bytes());
                payload.extend_from_slice(b);
            }
        }
    }
}

impl From<&str> for FieldValue {
    fn from(v: &str) -> Self {
        FieldValue::Str(v.to_string())
    }
}

impl From<String> for FieldValue {
    fn from(v: String) -> Self {
        FieldValue::Str(v)
    }
}

impl From<i64> for FieldValue {
    fn from(v: i64) -> Self {
        FieldValue::I64(v)
    }
}

impl From<u64> for FieldValue {
    fn from(v: u64) -> Self {
        FieldValue::U64(v)
    }
}

impl From<f64> for FieldValue {
    fn from(v: f64) -> Self {
        FieldValue::F64(v)
    }
}

impl From<bool> for FieldValue {
    fn from(v: bool) -> Self {
        FieldValue::Bool(v)
    }
}

impl From<Vec<u8>> for FieldValue {
    fn from(v: Vec<u8>) -> Self {
        FieldValue::Bytes(v)
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
}

/// The metadata blob and the payload of an event with these fields.
pub fn encode_event(name: &str, fields: &[(&str, FieldValue)]) -> Result<(Vec<u8>, Vec<u8>), EncodeError> {
    let mut metadata = MetadataBuilder::new(name);
    let mut payload = Vec::with_capacity(16 * fields.len());
    for (field, value) in fields {
        metadata.field(field, value.in_type(), value.out_type());
        value.encode(&mut payload);
    }
    Ok((metadata.finish()?, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_laid_out_as_tracelogging_does() {
        let fields = [
            ("s", FieldValue::from("hé")),
            ("i", FieldValue::I64(-2)),
            ("u", FieldValue::U64(3)),
            ("f", FieldValue::F64(0.5)),
            ("b", FieldValue::Bool(true)),
            ("x", FieldValue::Bytes(vec![0xAB, 0xCD])),
        ];
        let (m, p) = encode_event("E", &fields).unwrap();
        let mut want = vec![0, 0, 0, b'E', 0];
        want.extend_from_slice(b"s\0\x82\x23i\0\x09u\0\x0Af\0\x0Cb\0\x84\x03x\0\x0E");
        want[0] = want.len() as u8;
        assert_eq!(m, want);
        let mut want = "hé\0".as_bytes().to_vec();
        want.extend_from_slice(&(-2i64).to_le_bytes());
        want.extend_from_slice(&3u64.to_le_bytes());
        want.extend_from_slice(&0.5f64.to_le_bytes());
        want.extend_from_slice(&[1, 2, 0, 0xAB, 0xCD]);
        assert_eq!(p, want);
    }

    #[test]
    fn nuls_are_replaced_and_long_values_cut_on_a_character() {
        let mut p = Vec::new();
        FieldValue::from("a\0b").encode(&mut p);
        assert_eq!(p, "a\u{FFFD}b\0".as_bytes());
        let long = "é".repeat(MAX_VALUE_BYTES);
        let mut p = Vec::new();
        FieldValue::Str(long).encode(&mut p);
        assert_eq!(p.len(), MAX_VALUE_BYTES + 1);
        assert!(std::str::from_utf8(&p[..p.len() - 1]).is_ok());
        let (m, _) = encode_event("a\0b", &[]).unwrap();
        assert_eq!(&m[3..], "a\u{FFFD}b\0".as_bytes());
    }

    #[test]
    fn oversized_metadata_is_an_error() {
        let name = "n".repeat(70_000);
        assert_eq!(encode_event(&name, &[]), Err(EncodeError { size: 70_004 }));
    }

    #[test]
    fn traits_with_a_group() {
        let group = Guid::parse_const("4f50731a-89cf-4782-b3e0-dce8c90476ba");
        let t = provider_traits_in_group("P", group);
        assert_eq!(&t[..7], &[23, 0, b'P', 0, 19, 0, 1]);
        assert_eq!(&t[7..], &group.to_bytes_le());
    }
}
