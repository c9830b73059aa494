//! How values are shown: as text the way TDH formats them (for messages,
//! Windows event XML, CSV and text lines), and as typed JSON.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use nettrail_etl::{FileTime, Guid};

use crate::intype::{InType, OutType};
use crate::schema::Field;
use crate::value::{Value, ansi_lossy, ascii_units, utf16_lossy};

/// An IPv4 address stored in network byte order.
pub fn ipv4_of(v: u64) -> Ipv4Addr {
    let b = (v as u32).to_le_bytes();
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

/// A port stored in network byte order, in host order.
pub fn port_of(v: u64) -> u16 {
    u16::from_be_bytes((v as u16).to_le_bytes())
}

/// A SOCKADDR (IPv4 or IPv6) as `a.b.c.d:port` or `[v6]:port`; other
/// families are `None`.
pub fn socket_address(b: &[u8]) -> Option<String> {
    let family = u16::from_le_bytes([*b.first()?, *b.get(1)?]);
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    match family {
        2 => {
            let a: [u8; 4] = b.get(4..8)?.try_into().ok()?;
            Some(format!("{}:{port}", Ipv4Addr::from(a)))
        }
        23 => {
            let a: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            let ip = Ipv6Addr::from(a);
            Some(match ip.to_ipv4_mapped() {
                Some(v4) => format!("{v4}:{port}"),
                None => format!("[{ip}]:{port}"),
            })
        }
        _ => None,
    }
}

/// A SID as `S-1-5-21-…`.
pub fn sid_text(b: &[u8]) -> String {
    let (Some(&revision), Some(&count)) = (b.first(), b.get(1)) else {
        return String::new();
    };
    let authority = b.get(2..8).map_or(0, |a| a.iter().fold(0u64, |acc, &x| acc << 8 | u64::from(x)));
    let mut s = format!("S-{revision}-{authority}");
    for i in 0..usize::from(count) {
        if let Some(sub) = b.get(8 + 4 * i..12 + 4 * i) {
            let _ = write!(s, "-{}", u32::from_le_bytes([sub[0], sub[1], sub[2], sub[3]]));
        }
    }
    s
}

fn systemtime_text(t: &[u16; 8]) -> String {
    format!("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}0000Z", t[0], t[1], t[3], t[4], t[5], t[6], t[7])
}

fn hex_bytes(out: &mut String, b: &[u8], upper: bool) {
    let digits: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    out.reserve(2 + 2 * b.len());
    out.push_str("0x");
    for &byte in b {
        out.push(char::from(digits[usize::from(byte >> 4)]));
        out.push(char::from(digits[usize::from(byte & 15)]));
    }
}

/// The map text of an integer value, where the field has a map that knows it.
fn mapped(field: &Field, value: &Value<'_>) -> Option<String> {
    field.map.as_ref()?.lookup(value.as_u64()?)
}

/// An array of characters (8- or 16-bit units shown as text) is a string,
/// as TDH shows it; trailing NULs are the terminator.
fn char_array(field: &Field, items: &[Value<'_>]) -> Option<String> {
    let text_units = field.out_type == OutType::String
        && matches!(field.in_type, InType::UInt8 | InType::UInt16 | InType::AnsiChar | InType::UnicodeChar);
    if !text_units {
        return None;
    }
    let mut units: Vec<u16> = items.iter().filter_map(Value::as_u64).map(|v| v as u16).collect();
    while units.last() == Some(&0) {
        units.pop();
    }
    Some(if matches!(field.in_type, InType::UInt8 | InType::AnsiChar) {
        units.iter().map(|&u| char::from(u as u8)).collect()
    } else {
        char::decode_utf16(units).map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
    })
}

/// The text of one value, as TDH formats it: maps applied, addresses and
/// ports in host order, GUIDs braced, times as ISO-8601 UTC.
pub fn text(field: &Field, value: &Value<'_>, pointer_size: u8, out: &mut String) {
    if let Some(t) = mapped(field, value) {
        out.push_str(&t);
        return;
    }
    match value {
        Value::Null => {}
        Value::Signed(v) => push_number(out, *v),
        Value::Unsigned(v) => unsigned_text(field, *v, pointer_size, out),
        Value::Float(v) => {
            let _ = write!(out, "{v}");
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Utf16(b) => out.push_str(&utf16_lossy(b)),
        Value::Ansi(b) => out.push_str(&ansi_lossy(b)),
        Value::Guid(g) => {
            let _ = write!(out, "{{{}}}", g.to_string().to_uppercase());
        }
        Value::FileTime(ft) => {
            let _ = write!(out, "{}", FileTime(*ft));
        }
        Value::SystemTime(t) => out.push_str(&systemtime_text(t)),
        Value::Sid(b) => out.push_str(&sid_text(b)),
        Value::Binary(b) => match field.out_type {
            OutType::Ipv6 if b.len() == 16 => {
                let a: [u8; 16] = (*b).try_into().unwrap_or([0; 16]);
                let _ = write!(out, "{}", Ipv6Addr::from(a));
            }
            OutType::SocketAddress => match socket_address(b) {
                Some(s) => out.push_str(&s),
                None => hex_bytes(out, b, true),
            },
            OutType::String | OutType::Utf8 => out.push_str(&ansi_lossy(b)),
            _ => hex_bytes(out, b, true),
        },
        Value::Array(items) => {
            if let Some(s) = char_array(field, items) {
                out.push_str(&s);
                return;
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                text(field, item, pointer_size, out);
            }
        }
        Value::Struct(members) => {
            out.push('{');
            for (i, (m, v)) in field.members.iter().zip(members).enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{}: ", m.name);
                text(m, v, pointer_size, out);
            }
            out.push('}');
        }
    }
}

/// A handle the manifests declare as a plain integer (WebIO's `ApiHandle`,
/// `RequestHandle`, `SocketHandle`, WinINet's `HINTERNET` …): shown as the
/// hex a debugger and the pointers beside it show, not as a decimal.
fn is_handle(field: &Field) -> bool {
    matches!(field.out_type, OutType::Default | OutType::UnsignedInt | OutType::UnsignedLong)
        && matches!(field.in_type, InType::UInt32 | InType::UInt64)
        && (field.name.ends_with("Handle")
            || field.name.ends_with("HandleHigh")
            || field.name.ends_with("HandleLow")
            || field.name == "HINTERNET")
}

fn unsigned_text(field: &Field, v: u64, pointer_size: u8, out: &mut String) {
    let _ = match field.out_type {
        OutType::Ipv4 => write!(out, "{}", ipv4_of(v)),
        OutType::Port => write!(out, "{}", port_of(v)),
        OutType::HexInt8 | OutType::HexInt16 | OutType::HexInt32 | OutType::HexInt64 | OutType::HexBinary => {
            push_upper_hex(out, v, 0)
        }
        OutType::NtStatus | OutType::HResult | OutType::Win32Error | OutType::ErrorCode => push_upper_hex(out, v, 8),
        OutType::Boolean => write!(out, "{}", v != 0),
        OutType::String if field.in_type == InType::UInt8 || field.in_type == InType::AnsiChar => {
            write!(out, "{}", char::from(v as u8))
        }
        OutType::String if field.in_type == InType::UInt16 || field.in_type == InType::UnicodeChar => {
            write!(out, "{}", char::from_u32(v as u32).unwrap_or(char::REPLACEMENT_CHARACTER))
        }
        _ if is_handle(field) => push_upper_hex(out, v, 0),
        _ => match field.in_type {
            InType::Pointer if pointer_size == 4 => push_upper_hex(out, v, 8),
            InType::Pointer => push_upper_hex(out, v, 16),
            InType::HexInt32 | InType::HexInt64 => push_upper_hex(out, v, 0),
            InType::UnicodeChar => write!(out, "{}", char::from_u32(v as u32).unwrap_or(char::REPLACEMENT_CHARACTER)),
            InType::AnsiChar => write!(out, "{}", char::from(v as u8)),
            _ => {
                push_number(out, v);
                Ok(())
            }
        },
    };
}

/// Appends `s` as a JSON string.
pub fn json_string(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    json_escaped(out, s);
    out.push(b'"');
}

/// `v` in hex (`upper` or lower case), zero-padded to `width` digits and
/// no further: the digits are the end of the buffer returned, from the
/// index returned.
fn hex_digits(v: u64, upper: bool, width: usize) -> ([u8; 16], usize) {
    let letter = if upper { b'A' } else { b'a' };
    // The 8 nibbles of `x` spread one to a byte, the lowest in the lowest
    // byte, each turned into its digit at once.
    let digits = |x: u32| {
        const ONES: u64 = 0x0101_0101_0101_0101;
        let mut x = u64::from(x);
        x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
        x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
        x = (x | (x << 4)) & (ONES * 0x0F);
        // 1 in each byte whose nibble is 10 or more (a letter).
        let letters = ((x + ONES * 6) >> 4) & ONES;
        (x + ONES * u64::from(b'0') + letters * u64::from(letter - b'0' - 10)).to_be_bytes()
    };
    let mut text = [0u8; 16];
    text[..8].copy_from_slice(&digits((v >> 32) as u32));
    text[8..].copy_from_slice(&digits(v as u32));
    let unpadded = (v.leading_zeros() as usize / 4).min(15);
    (text, unpadded.min(16 - width.min(16)))
}

/// Appends `0x` and `v`'s hex digits (see [`hex_digits`]).
#[inline]
fn push_hex_digits(out: &mut String, v: u64, upper: bool, width: usize) {
    let (text, from) = hex_digits(v, upper, width);
    out.push_str("0x");
    // Hex digits are ASCII.
    out.push_str(std::str::from_utf8(&text[from..]).unwrap_or_default());
}

/// Appends `v` as `{v:#0w$X}` would without the width counting the `0x`:
/// uppercase hex, zero-padded to `width` digits. (Never fails: a result,
/// like `write!`'s, for the match that picks a value's form.)
fn push_upper_hex(out: &mut String, v: u64, width: usize) -> std::fmt::Result {
    push_hex_digits(out, v, true, width);
    Ok(())
}

/// Appends `v` as a JSON string of lowercase hex: `"0x1f"`.
pub fn json_hex(out: &mut Vec<u8>, v: u64) {
    out.push(b'"');
    extend_hex(out, v);
    out.push(b'"');
}

/// Appends `0x` and `v`'s lowercase hex digits to bytes.
#[inline]
fn extend_hex(out: &mut Vec<u8>, v: u64) {
    let (text, from) = hex_digits(v, false, 0);
    out.extend_from_slice(b"0x");
    out.extend_from_slice(&text[from..]);
}

/// Appends `v` as lowercase hex, as `{v:#x}` formats it: `0x1f`.
pub fn push_hex(out: &mut String, v: u64) {
    push_hex_digits(out, v, false, 0);
}

/// Appends `v` in decimal, as `{v}` formats it.
#[inline]
pub fn push_number(out: &mut String, v: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(v));
}

/// Appends a JSON string of `parts` joined and then, if given, `0x` and
/// `hex`'s lowercase digits (a stack frame, `"ntdll.dll+0x1a2"`), as
/// [`json_string`] writes that text, without making it first.
pub fn json_string_of(out: &mut Vec<u8>, parts: &[&str], hex: Option<u64>) {
    out.push(b'"');
    for part in parts {
        json_escaped(out, part);
    }
    if let Some(v) = hex {
        extend_hex(out, v);
    }
    out.push(b'"');
}

/// Appends `items` as a JSON array of strings.
pub fn json_string_array(out: &mut Vec<u8>, items: &[impl AsRef<str>]) {
    out.push(b'[');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        json_string(out, s.as_ref());
    }
    out.push(b']');
}

/// JSON escaping, plus `\uXXXX` for the characters a terminal acts on
/// ([`crate::safe_text::needs_escape`]) that JSON itself allows raw: DEL,
/// C1 controls, bidirectional controls, line and paragraph separators.
fn json_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len());
    // Plain text (most of it) is skipped 8 bytes at a time; a word that may
    // hold something to escape is looked at a byte at a time.
    let word_at = |i: usize| match bytes.get(i..i + 8) {
        Some(word) => u64::from_le_bytes(word.try_into().unwrap_or_default()),
        // The last bytes, in loads that may overlap bytes already looked
        // at (harmless: the word is only asked whether it may need
        // escaping); a copy of a variable length here called `memcpy` for
        // every short string.
        None => last_word(bytes),
    };
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        if !crate::safe_text::may_need_escape(word_at(i), b'"', b'\\') {
            i += 8;
            continue;
        }
        let end = (i + 8).min(bytes.len());
        while i < end {
            let b = bytes[i];
            let escape: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0..=0x1F | 0x7F => b"",
                // Lead bytes of the multi-byte characters to check.
                b if crate::safe_text::lead_of_escaped(b) => {
                    if let Some(c) = s.get(i..).and_then(|t| t.chars().next())
                        && crate::safe_text::needs_escape(c)
                    {
                        out.extend_from_slice(&bytes[start..i]);
                        let _ = std::io::Write::write_fmt(out, format_args!("\\u{:04x}", c as u32));
                        i += c.len_utf8();
                        start = i;
                    } else {
                        i += 1;
                    }
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            };
            out.extend_from_slice(&bytes[start..i]);
            if escape.is_empty() {
                let _ = std::io::Write::write_fmt(out, format_args!("\\u{b:04x}"));
            } else {
                out.extend_from_slice(escape);
            }
            i += 1;
            start = i;
        }
    }
    out.extend_from_slice(&bytes[start..]);
}

/// A word holding every byte of the last 8 of `bytes` (of all of them when
/// fewer, repeated or padded with spaces, which need no escaping).
#[inline(always)]
fn last_word(bytes: &[u8]) -> u64 {
    let u32_of = |four: &[u8; 4]| u64::from(u32::from_le_bytes(*four));
    if let Some(last) = bytes.last_chunk::<8>() {
        return u64::from_le_bytes(*last);
    }
    match (bytes.first_chunk::<4>(), bytes.last_chunk::<4>()) {
        (Some(first), Some(last)) => u32_of(first) | u32_of(last) << 32,
        _ => match *bytes {
            [] => u64::from_le_bytes([b' '; 8]),
            [a] => u64::from_le_bytes([a, b' ', b' ', b' ', b' ', b' ', b' ', b' ']),
            [a, b] => u64::from_le_bytes([a, b, b' ', b' ', b' ', b' ', b' ', b' ']),
            [a, b, c, ..] => u64::from_le_bytes([a, b, c, b' ', b' ', b' ', b' ', b' ']),
        },
    }
}

fn json_text(out: &mut Vec<u8>, field: &Field, value: &Value<'_>, pointer_size: u8) {
    let mut s = String::new();
    text(field, value, pointer_size, &mut s);
    json_string(out, &s);
}

/// The typed JSON of one value: numbers stay numbers (ports in host order),
/// pointers and hex are `"0x…"` strings, addresses, GUIDs, times and SIDs are
/// strings, mapped values are their map text.
pub fn json(field: &Field, value: &Value<'_>, pointer_size: u8, out: &mut Vec<u8>) {
    if let Some(t) = mapped(field, value) {
        json_string(out, &t);
        return;
    }
    let mut num = itoa::Buffer::new();
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Signed(v) => out.extend_from_slice(num.format(*v).as_bytes()),
        Value::Unsigned(v) => match (field.out_type, field.in_type) {
            (OutType::Ipv4 | OutType::NtStatus | OutType::HResult | OutType::Win32Error | OutType::ErrorCode, _)
            | (OutType::String, _) => json_text(out, field, value, pointer_size),
            (OutType::Port, _) => out.extend_from_slice(num.format(port_of(*v)).as_bytes()),
            (OutType::Boolean, _) => out.extend_from_slice(if *v != 0 { b"true" } else { b"false" }),
            (OutType::HexInt8 | OutType::HexInt16 | OutType::HexInt32 | OutType::HexInt64 | OutType::HexBinary, _)
            | (_, InType::Pointer | InType::HexInt32 | InType::HexInt64) => json_hex(out, *v),
            _ if is_handle(field) => json_hex(out, *v),
            (_, InType::UnicodeChar | InType::AnsiChar) => json_text(out, field, value, pointer_size),
            _ => out.extend_from_slice(num.format(*v).as_bytes()),
        },
        Value::Float(v) if v.is_finite() => {
            let _ = std::io::Write::write_fmt(out, format_args!("{v}"));
        }
        Value::Float(_) => out.extend_from_slice(b"null"),
        Value::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Utf16(b) => {
            out.push(b'"');
            // Printable ASCII is its own JSON (`"` and `\` after a backslash,
            // as in every Windows path): narrowed straight into the output.
            // From the first other unit on, the text is decoded and escaped.
            let mut rest = *b;
            loop {
                let plain = ascii_units(
                    rest,
                    |c| (0x20..0x7F).contains(&c) && c != b'"' && c != b'\\',
                    |w| {
                        // Spaces in the high bytes, known to be 0, leave the low bytes to the test.
                        w & 0xFF00_FF00_FF00_FF00 == 0
                            && !crate::safe_text::may_need_escape(w | 0x2000_2000_2000_2000, b'"', b'\\')
                    },
                );
                out.extend(rest[..2 * plain].iter().step_by(2));
                rest = &rest[2 * plain..];
                match rest {
                    [c @ (b'"' | b'\\'), 0, tail @ ..] => {
                        out.extend_from_slice(&[b'\\', *c]);
                        rest = tail;
                    }
                    [_, _, ..] => {
                        json_escaped(out, &utf16_lossy(rest));
                        break;
                    }
                    // An odd byte at the end is no unit.
                    _ => break,
                }
            }
            out.push(b'"');
        }
        Value::Ansi(b) => json_string(out, &ansi_lossy(b)),
        Value::Guid(g) => {
            let mut buf = [0u8; 36];
            g.encode_lower(&mut buf);
            out.push(b'"');
            out.extend_from_slice(&buf);
            out.push(b'"');
        }
        Value::FileTime(_) | Value::SystemTime(_) | Value::Sid(_) => json_text(out, field, value, pointer_size),
        Value::Binary(b) => match field.out_type {
            OutType::Ipv6 | OutType::SocketAddress | OutType::String | OutType::Utf8 => {
                json_text(out, field, value, pointer_size)
            }
            _ => {
                let mut s = String::with_capacity(2 + 2 * b.len());
                hex_bytes(&mut s, b, false);
                json_string(out, &s);
            }
        },
        Value::Array(items) if char_array(field, items).is_some() => {
            json_string(out, &char_array(field, items).unwrap_or_default());
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json(field, item, pointer_size, out);
            }
            out.push(b']');
        }
        Value::Struct(members) => {
            out.push(b'{');
            for (i, (m, v)) in field.members.iter().zip(members).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(out, &m.name);
                out.push(b':');
                json(m, v, pointer_size, out);
            }
            out.push(b'}');
        }
    }
}

/// A GUID as TDH shows it: `{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}`.
pub fn braced_guid(g: &Guid) -> String {
    format!("{{{}}}", g.to_string().to_uppercase())
}

#[cfg(test)]
mod tests {
    #[test]
    fn parts_joined_are_escaped_as_the_whole_text_is() {
        let parts = ["ntdll.dll", "+", "a\"b\\c\u{7}\u{1b}[31m\u{7f}", "é\u{2028}", ""];
        for n in 0..=parts.len() {
            for hex in [None, Some(0), Some(0x1a2), Some(u64::MAX)] {
                let mut joined: String = parts[..n].concat();
                if let Some(v) = hex {
                    super::push_hex(&mut joined, v);
                }
                let (mut whole, mut of_parts) = (Vec::new(), Vec::new());
                super::json_string(&mut whole, &joined);
                super::json_string_of(&mut of_parts, &parts[..n], hex);
                assert_eq!(String::from_utf8(of_parts).unwrap(), String::from_utf8(whole).unwrap());
            }
        }
    }

    #[test]
    fn hex_has_every_digit_and_no_leading_zeros() {
        let mut values = vec![0, u64::MAX, 0x07f9_cd1b_0000];
        for shift in 0..64 {
            values.extend([1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 0xa5]);
            // Every digit at every place.
            values.extend([0x0123_4567_89ab_cdef_u64.rotate_left(shift), 0xfedc_ba98_7654_3210_u64.rotate_left(shift)]);
        }
        for v in values {
            let mut out = Vec::new();
            super::json_hex(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("\"0x{v:x}\""));
            let mut text = String::from("+");
            super::push_hex(&mut text, v);
            assert_eq!(text, format!("+{v:#x}"));
            for (width, expected) in [(0, format!("0x{v:X}")), (8, format!("0x{v:08X}")), (16, format!("0x{v:016X}"))] {
                let mut text = String::new();
                super::push_upper_hex(&mut text, v, width).unwrap();
                assert_eq!(text, expected);
            }
        }
    }

    #[test]
    fn json_escaping_skips_plain_text_and_escapes_the_rest_wherever_it_is() {
        // The same as one character at a time, whatever the position in an 8-byte word.
        let reference = |s: &str| {
            let mut out = String::new();
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || c == '\u{7f}' => out.push_str(&format!("\\u{:04x}", c as u32)),
                    c if c as u32 >= 0x80 && crate::safe_text::needs_escape(c) => {
                        out.push_str(&format!("\\u{:04x}", c as u32))
                    }
                    c => out.push(c),
                }
            }
            out
        };
        // Every length from none to past two words (the last, partial word
        // is read in its own way), the character at every place.
        for special in ["", "\"", "\\", "\n", "\u{1}", "\u{7f}", "é", "\u{202e}", "\u{85}", "日本"] {
            for len in 0..20 {
                for at in 0..=len {
                    let s = format!("{}{special}{}", "a".repeat(at), "b".repeat(len - at));
                    let mut out = Vec::new();
                    super::json_escaped(&mut out, &s);
                    assert_eq!(String::from_utf8(out).unwrap(), reference(&s), "{s:?}");
                }
            }
        }
    }

    use super::*;

    fn field(t: InType, o: OutType) -> Field {
        let mut f = Field::new("f", t);
        f.out_type = o;
        f
    }

    fn show(f: &Field, v: Value<'_>) -> (String, String) {
        let mut t = String::new();
        text(f, &v, 8, &mut t);
        let mut j = Vec::new();
        json(f, &v, 8, &mut j);
        (t, String::from_utf8(j).unwrap())
    }

    /// UTF-16 text, ASCII narrowed and the rest decoded, as `decode_utf16`
    /// reads it; in JSON, as the escaped string of that text.
    #[test]
    fn utf16_text_wherever_its_ascii_ends() {
        let f = field(InType::UnicodeString, OutType::String);
        let tails: [&[u16]; 10] = [
            &[0x22],
            &[0x5c, 0x41],
            &[0x1b],
            &[0xe9],
            &[0xd83d, 0xde00],
            &[0xd800, 0x41],
            &[0x202e],
            // A path: escapes the fast path writes, then what it cannot.
            &[0x5c, 0x5c, 0x41, 0x5c, 0x22, 0x42, 0xe9, 0x5c, 0x43],
            &[0x5c, 0x22, 0x5c, 0x1b, 0x5c],
            &[0x5c, 0, 0x41],
        ];
        for at in 0..10 {
            for tail in tails {
                let units: Vec<u16> = std::iter::repeat_n(u16::from(b'a'), at).chain(tail.iter().copied()).collect();
                let mut bytes: Vec<u8> = units.iter().flat_map(|u| u.to_le_bytes()).collect();
                let expected: String = char::decode_utf16(units.iter().copied())
                    .map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER))
                    .collect();
                assert_eq!(utf16_lossy(&bytes), expected);
                let mut escaped = Vec::new();
                json_string(&mut escaped, &expected);
                assert_eq!(show(&f, Value::Utf16(&bytes)).1.as_bytes(), escaped, "{units:x?}");
                // An odd byte at the end is no unit.
                bytes.push(0x41);
                assert_eq!(show(&f, Value::Utf16(&bytes)).1.as_bytes(), escaped, "{units:x?} and a byte");
            }
        }
    }

    #[test]
    fn addresses_and_ports_in_host_order() {
        // 74.125.236.80 and port 80 as the payload stores them.
        let ip = u64::from(u32::from_le_bytes([74, 125, 236, 80]));
        assert_eq!(show(&field(InType::UInt32, OutType::Ipv4), Value::Unsigned(ip)).0, "74.125.236.80");
        let port = u64::from(u16::from_le_bytes(80u16.to_be_bytes()));
        assert_eq!(show(&field(InType::UInt16, OutType::Port), Value::Unsigned(port)), ("80".into(), "80".into()));
        let v6 = "2001:4898:e0:81:7cb9:ab:cd5:e6af".parse::<Ipv6Addr>().unwrap().octets();
        assert_eq!(
            show(&field(InType::Binary, OutType::Ipv6), Value::Binary(&v6)).0,
            "2001:4898:e0:81:7cb9:ab:cd5:e6af"
        );
        let mut sa = vec![2, 0, 0x01, 0xBB, 10, 0, 0, 1];
        sa.extend_from_slice(&[0; 8]);
        assert_eq!(show(&field(InType::Binary, OutType::SocketAddress), Value::Binary(&sa)).1, "\"10.0.0.1:443\"");
        let mut sa6 = vec![23, 0, 0x00, 0x50, 0, 0, 0, 0];
        sa6.extend_from_slice(&"::ffff:1.2.3.4".parse::<Ipv6Addr>().unwrap().octets());
        sa6.extend_from_slice(&[0; 4]);
        assert_eq!(show(&field(InType::Binary, OutType::SocketAddress), Value::Binary(&sa6)).0, "1.2.3.4:80");
    }

    #[test]
    fn pointers_guids_sids_and_times() {
        let p = show(&field(InType::Pointer, OutType::Default), Value::Unsigned(0xfffffa830284a040));
        assert_eq!(p, ("0xFFFFFA830284A040".into(), "\"0xfffffa830284a040\"".into()));
        let g = Guid::parse_const("0ad614c4-0ef4-4225-8f23-22d8b8f5b1a0");
        assert_eq!(
            show(&field(InType::Guid, OutType::Default), Value::Guid(g)).0,
            "{0AD614C4-0EF4-4225-8F23-22D8B8F5B1A0}"
        );
        let sid = [1u8, 5, 0, 0, 0, 0, 0, 5, 21, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xe9, 3, 0, 0];
        assert_eq!(sid_text(&sid), "S-1-5-21-1-2-3-1001");
        let st = [2021, 9, 4, 9, 14, 59, 35, 31];
        assert_eq!(
            show(&field(InType::SystemTime, OutType::Default), Value::SystemTime(st)).0,
            "2021-09-09T14:59:35.0310000Z"
        );
    }
}
