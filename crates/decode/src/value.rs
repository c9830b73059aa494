//! Decoded field values, borrowing strings and bytes from the payload.

use std::borrow::Cow;

use nettrail_etl::Guid;

/// One field's value. Strings stay encoded until shown.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    /// An absent optional value (a MOF SID that was not logged).
    Null,
    Signed(i64),
    /// Unsigned integers, pointers and sizes.
    Unsigned(u64),
    Float(f64),
    Bool(bool),
    /// UTF-16LE code units, without the terminator.
    Utf16(&'a [u8]),
    /// 8-bit characters, without the terminator.
    Ansi(&'a [u8]),
    Guid(Guid),
    /// 100 ns since 1601-01-01 UTC.
    FileTime(i64),
    /// year, month, day of week, day, hour, minute, second, milliseconds.
    SystemTime([u16; 8]),
    Sid(&'a [u8]),
    Binary(&'a [u8]),
    Array(Vec<Value<'a>>),
    Struct(Vec<Value<'a>>),
}

impl Value<'_> {
    /// The value as an unsigned integer (integers, booleans; negative values wrap).
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::Unsigned(v) => Some(v),
            Value::Signed(v) => Some(v as u64),
            Value::Bool(b) => Some(u64::from(b)),
            _ => None,
        }
    }

    pub fn as_i64(&self) -> Option<i64> {
        match *self {
            Value::Signed(v) => Some(v),
            Value::Unsigned(v) => i64::try_from(v).ok(),
            _ => None,
        }
    }

    /// The text of a string value.
    pub fn as_str(&self) -> Option<Cow<'_, str>> {
        match self {
            Value::Utf16(b) => Some(Cow::Owned(utf16_lossy(b))),
            Value::Ansi(b) => Some(ansi_lossy(b)),
            _ => None,
        }
    }

    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Binary(b) | Value::Sid(b) => Some(b),
            _ => None,
        }
    }
}

/// UTF-16LE bytes as text, invalid code units replaced.
pub fn utf16_lossy(bytes: &[u8]) -> String {
    // Leading ASCII (most often all of it) is narrowed a unit at a time,
    // not decoded and encoded again character by character.
    let ascii = ascii_units(bytes, |_| true, four_ascii);
    let mut text = String::from_utf8(bytes[..2 * ascii].iter().step_by(2).copied().collect()).unwrap_or_default();
    let rest = bytes[2 * ascii..].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
    text.extend(char::decode_utf16(rest).map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER)));
    text
}

/// How many UTF-16LE units at the start of `bytes` are ASCII characters that
/// `keep` keeps. `keep_four` says the same of four units read as a word,
/// lowest first (it may say no where `keep` would say yes).
pub(crate) fn ascii_units(bytes: &[u8], keep: impl Fn(u8) -> bool, keep_four: impl Fn(u64) -> bool) -> usize {
    let mut words = bytes.chunks_exact(8);
    let whole =
        words.by_ref().take_while(|w| keep_four(u64::from_le_bytes((*w).try_into().unwrap_or_default()))).count();
    let rest = &bytes[8 * whole..];
    4 * whole + rest.chunks_exact(2).take_while(|c| c[1] == 0 && c[0].is_ascii() && keep(c[0])).count()
}

/// Whether four UTF-16LE units read as a word are all ASCII.
pub(crate) fn four_ascii(w: u64) -> bool {
    w & 0xFF80_FF80_FF80_FF80 == 0
}

/// 8-bit text: UTF-8 when valid (it usually is), else read as Windows-1252's
/// Latin-1 subset.
pub fn ansi_lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => Cow::Owned(bytes.iter().map(|&b| char::from(b)).collect()),
    }
}
