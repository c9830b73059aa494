//! GUIDs as Windows stores them: Data1–Data3 little-endian, Data4 as bytes.

use std::fmt;
use std::str::FromStr;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Guid {
    pub data1: u32,
    pub data2: u16,
    pub data3: u16,
    pub data4: [u8; 8],
}

impl Guid {
    pub const ZERO: Guid = Guid { data1: 0, data2: 0, data3: 0, data4: [0; 8] };

    /// From the 16 bytes of a GUID in Windows (mixed-endian) layout.
    pub const fn from_bytes_le(b: [u8; 16]) -> Guid {
        Guid {
            data1: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            data2: u16::from_le_bytes([b[4], b[5]]),
            data3: u16::from_le_bytes([b[6], b[7]]),
            data4: [b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]],
        }
    }

    pub const fn to_bytes_le(&self) -> [u8; 16] {
        let a = self.data1.to_le_bytes();
        let b = self.data2.to_le_bytes();
        let c = self.data3.to_le_bytes();
        let d = self.data4;
        [a[0], a[1], a[2], a[3], b[0], b[1], c[0], c[1], d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7]]
    }

    pub(crate) fn read(data: &[u8], offset: usize) -> Option<Guid> {
        crate::bytes::array_at::<16>(data, offset).map(Guid::from_bytes_le)
    }

    pub const fn is_zero(&self) -> bool {
        self.data1 == 0 && self.data2 == 0 && self.data3 == 0 && u64::from_le_bytes(self.data4) == 0
    }

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` at compile time, for
    /// tables of well-known GUIDs. Panics (at compile time) on a malformed literal.
    pub const fn parse_const(s: &str) -> Guid {
        match Guid::parse_hyphenated(s.as_bytes()) {
            Some(g) => g,
            None => panic!("malformed GUID literal"),
        }
    }

    const fn parse_hyphenated(s: &[u8]) -> Option<Guid> {
        if s.len() != 36 || s[8] != b'-' || s[13] != b'-' || s[18] != b'-' || s[23] != b'-' {
            return None;
        }
        let mut digits = [0u8; 32];
        let (mut i, mut n) = (0, 0);
        while i < 36 {
            if i != 8 && i != 13 && i != 18 && i != 23 {
                digits[n] = match s[i] {
                    c @ b'0'..=b'9' => c - b'0',
                    c @ b'a'..=b'f' => c - b'a' + 10,
                    c @ b'A'..=b'F' => c - b'A' + 10,
                    _ => return None,
                };
                n += 1;
            }
            i += 1;
        }
        let mut bytes = [0u8; 16];
        let mut k = 0;
        while k < 16 {
            bytes[k] = digits[2 * k] << 4 | digits[2 * k + 1];
            k += 1;
        }
        Some(Guid {
            data1: u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]),
            data2: u16::from_be_bytes([bytes[4], bytes[5]]),
            data3: u16::from_be_bytes([bytes[6], bytes[7]]),
            data4: [bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]],
        })
    }

    /// Writes the lowercase hyphenated form into a fixed buffer (no allocation).
    pub fn encode_lower(&self, out: &mut [u8; 36]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut bytes = [0u8; 16];
        bytes[..4].copy_from_slice(&self.data1.to_be_bytes());
        bytes[4..6].copy_from_slice(&self.data2.to_be_bytes());
        bytes[6..8].copy_from_slice(&self.data3.to_be_bytes());
        bytes[8..].copy_from_slice(&self.data4);
        let mut o = 0;
        for (i, b) in bytes.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                out[o] = b'-';
                o += 1;
            }
            out[o] = HEX[usize::from(b >> 4)];
            out[o + 1] = HEX[usize::from(b & 15)];
            o += 2;
        }
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 36];
        self.encode_lower(&mut buf);
        // The buffer holds only ASCII hex digits and hyphens.
        f.write_str(std::str::from_utf8(&buf).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The error of parsing a GUID from text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseGuidError;

impl fmt::Display for ParseGuidError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("expected a GUID like 2f07e2ee-15db-40f1-90ef-9d7ba282188a (braces optional)")
    }
}

impl std::error::Error for ParseGuidError {}

impl FromStr for Guid {
    type Err = ParseGuidError;

    /// Accepts the hyphenated form with or without `{}` braces, any case.
    fn from_str(s: &str) -> Result<Guid, ParseGuidError> {
        let s = s.trim();
        let s = s.strip_prefix('{').and_then(|t| t.strip_suffix('}')).unwrap_or(s);
        Guid::parse_hyphenated(s.as_bytes()).ok_or(ParseGuidError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_byte_order_round_trips() {
        // Kernel-Network's provider id as the bytes appear in an EVENT_HEADER.
        let bytes = [0x49, 0x2a, 0xd4, 0x7d, 0x29, 0x53, 0x32, 0x48, 0x8d, 0xfd, 0x43, 0xd9, 0x79, 0x15, 0x3a, 0x88];
        let g = Guid::from_bytes_le(bytes);
        assert_eq!(g.to_string(), "7dd42a49-5329-4832-8dfd-43d979153a88");
        assert_eq!(g.to_bytes_le(), bytes);
        assert_eq!("{7DD42A49-5329-4832-8DFD-43D979153A88}".parse::<Guid>(), Ok(g));
        assert_eq!(Guid::parse_const("7dd42a49-5329-4832-8dfd-43d979153a88"), g);
        assert!("7dd42a49-5329-4832-8dfd-43d979153a8".parse::<Guid>().is_err());
        assert!("7dd42a49+5329-4832-8dfd-43d979153a88".parse::<Guid>().is_err());
    }
}
