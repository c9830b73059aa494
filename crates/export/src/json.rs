//! Writing JSON by hand where speed matters (one line per event): no
//! intermediate values, no allocation per field.

use nettrail_etl::{FileTime, Guid, UtcText};
use nettrail_stacks::{Frames, Symbols};

pub fn string(out: &mut Vec<u8>, s: &str) {
    nettrail_decode::format::json_string(out, s);
}

pub fn string_array(out: &mut Vec<u8>, items: &[String]) {
    nettrail_decode::format::json_string_array(out, items);
}

/// A stack's frames (innermost first) as a JSON array of their texts, as
/// [`string_array`] writes [`Frames::stack`]'s.
pub fn stack<S: Symbols>(out: &mut Vec<u8>, frames: &Frames<'_, S>, pid: u32, addresses: &[u64], at: u64) {
    out.push(b'[');
    let mut first = true;
    for &address in addresses {
        frames.texts(pid, address, at, |parts, hex| {
            if !first {
                out.push(b',');
            }
            first = false;
            nettrail_decode::format::json_string_of(out, parts, hex);
        });
    }
    out.push(b']');
}

pub fn uint(out: &mut Vec<u8>, v: impl itoa::Integer) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(v).as_bytes());
}

pub fn guid(out: &mut Vec<u8>, g: &Guid) {
    let mut buf = [0u8; 36];
    g.encode_lower(&mut buf);
    out.push(b'"');
    out.extend_from_slice(&buf);
    out.push(b'"');
}

/// A GUID, or `null` for the all-zero GUID (no activity).
pub fn guid_or_null(out: &mut Vec<u8>, g: Option<&Guid>) {
    match g {
        Some(g) if !g.is_zero() => guid(out, g),
        _ => out.extend_from_slice(b"null"),
    }
}

pub fn filetime(out: &mut Vec<u8>, text: &mut UtcText, ft: FileTime) {
    let mut buf = [0u8; 28];
    let n = text.encode(ft, &mut buf);
    out.push(b'"');
    out.extend_from_slice(&buf[..n]);
    out.push(b'"');
}

pub fn hex(out: &mut Vec<u8>, v: u64) {
    nettrail_decode::format::json_hex(out, v);
}

pub fn opt_uint(out: &mut Vec<u8>, v: Option<u32>) {
    match v {
        Some(v) => uint(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_hex() {
        let mut out = Vec::new();
        string(&mut out, "a\"b\\c\n\u{1}é");
        assert_eq!(String::from_utf8(out.clone()).unwrap(), r#""a\"b\\c\n\u0001é""#);
        let parsed: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(parsed, "a\"b\\c\n\u{1}é");
        out.clear();
        hex(&mut out, 0);
        hex(&mut out, 0x8000_0000_0000_0001);
        assert_eq!(out, b"\"0x0\"\"0x8000000000000001\"");
    }
}
