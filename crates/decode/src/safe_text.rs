//! Text from a trace, made safe for where it is shown. Every string in a
//! trace is written by whoever made the trace: a process name or URL can
//! hold terminal escape sequences (clear the screen, set the window title),
//! line breaks that forge output lines, bidirectional overrides that reorder
//! what is read, or a spreadsheet formula.
//!
//! - [`visible`] / [`push_visible`]: for terminals and line-based text
//!   (tables, text dumps, `info`, messages). Control characters (C0, DEL,
//!   C1), the bidirectional controls and the line and paragraph separators
//!   become escapes (`\x1b`, `\n`, `\u{202e}`), so one row is one line and
//!   nothing a trace says is acted on by the terminal.
//! - [`push_csv_field`]: a CSV field (RFC 4180). Control characters are
//!   escaped as above (one physical line per row), a field a spreadsheet
//!   would read as a formula (beginning with `=`, `+`, `-`, `@`, a tab or a
//!   carriage return, and not a number) gets a leading `'`, as OWASP
//!   recommends, and fields holding a comma or a quote are quoted.
//! - JSON strings escape the same characters as `\uXXXX`
//!   ([`crate::format::json_string`]): the value is unchanged, the bytes are safe.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::io;

/// Whether a terminal or a reader could act on `c` rather than show it.
pub fn needs_escape(c: char) -> bool {
    c.is_control() // C0, DEL, C1
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' // ALM, LRM, RLM
                | '\u{202a}'..='\u{202e}' // embeddings and overrides
                | '\u{2066}'..='\u{2069}' // isolates
                | '\u{2028}' | '\u{2029}' // line and paragraph separators
        )
}

/// Appends `s` with every [`needs_escape`] character written as an escape.
pub fn push_visible(out: &mut String, s: &str) {
    push_escaped(out, s, false);
}

/// Appends `s` as [`push_visible`] does, with quotes doubled if `quotes`.
fn push_escaped(out: &mut String, mut s: &str, quotes: bool) {
    while let Some((i, c)) = next_special(s, quotes) {
        out.push_str(&s[..i]);
        match c {
            '"' => out.push_str("\"\""),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x80 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
        s = &s[i + c.len_utf8()..];
    }
    out.push_str(s);
}

/// The first character of `s` that [`needs_escape`] (or a quote, if
/// `quotes`), and where it is. Plain ASCII is passed over 8 bytes at a time,
/// and of the other characters only those with the lead byte of an escaped
/// one ([`lead_of_escaped`]) are decoded.
fn next_special(s: &str, quotes: bool) -> Option<(usize, char)> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8)
            && !may_need_escape(u64::from_le_bytes(word.try_into().unwrap_or_default()), b'"', b'"')
        {
            i += 8;
            continue;
        }
        match bytes[i] {
            b'"' if quotes => return Some((i, '"')),
            b @ (0..=0x1F | 0x7F) => return Some((i, char::from(b))),
            b if lead_of_escaped(b) => {
                // A lead byte: `i` is on a character's boundary.
                let c = s.get(i..).and_then(|t| t.chars().next())?;
                if needs_escape(c) {
                    return Some((i, c));
                }
                i += c.len_utf8();
            }
            _ => i += 1,
        }
    }
    None
}

/// Whether `b` is the lead byte of some multi-byte character that
/// [`needs_escape`]: C1 controls (0xC2), ALM (0xD8), the bidirectional
/// controls and the separators (0xE2). Text without these, controls and
/// DEL holds nothing to escape.
#[inline(always)]
pub fn lead_of_escaped(b: u8) -> bool {
    matches!(b, 0xC2 | 0xD8 | 0xE2)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// The high bit of each byte of `w` that is `b`, and maybe of bytes after
/// one (a borrow); none when no byte is `b`.
fn bytes_equal(w: u64, b: u8) -> u64 {
    let x = w ^ (ONES * u64::from(b));
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// Whether any of the 8 bytes of `w` may need escaping: a control
/// character, DEL, `a`, `b`, or any byte of a multi-byte character.
pub(crate) fn may_need_escape(w: u64, a: u8, b: u8) -> bool {
    let below_space = w.wrapping_sub(ONES * 0x20) & !w & HIGHS;
    below_space | bytes_equal(w, a) | bytes_equal(w, b) | bytes_equal(w, 0x7F) | (w & HIGHS) != 0
}

/// `s` with every [`needs_escape`] character written as an escape.
pub fn visible(s: &str) -> Cow<'_, str> {
    if next_special(s, false).is_some() {
        let mut out = String::with_capacity(s.len() + 8);
        push_visible(&mut out, s);
        Cow::Owned(out)
    } else {
        Cow::Borrowed(s)
    }
}

/// JSON text (from any serializer) with the characters JSON allows raw but
/// a terminal acts on written as `\uXXXX`. They can only occur inside
/// strings, so the document's values are unchanged.
pub fn json_safe(json: &str) -> Cow<'_, str> {
    if !json.chars().any(needs_escape) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        // Raw C0 controls cannot be in valid JSON text but as whitespace.
        if needs_escape(c) && !matches!(c, '\n' | '\r' | '\t') {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A writer for text meant for people (tables, `info`, stacks, live lines):
/// whatever was formatted into it, each line reaches the terminal with its
/// control characters escaped. Lines are passed on whole.
#[derive(Debug)]
pub struct Visible<W: io::Write> {
    inner: W,
    pending: Vec<u8>,
    line: String,
}

impl<W: io::Write> Visible<W> {
    pub fn new(inner: W) -> Self {
        Visible { inner, pending: Vec::new(), line: String::new() }
    }

    fn write_lines(&mut self, upto: usize) -> io::Result<()> {
        self.line.clear();
        let text = String::from_utf8_lossy(&self.pending[..upto]);
        for (i, part) in text.split('\n').enumerate() {
            if i > 0 {
                self.line.push('\n');
            }
            push_visible(&mut self.line, part);
        }
        self.pending.drain(..upto);
        self.inner.write_all(self.line.as_bytes())
    }
}

impl<W: io::Write> io::Write for Visible<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.pending.extend_from_slice(buf);
        if let Some(end) = self.pending.iter().rposition(|&b| b == b'\n') {
            self.write_lines(end + 1)?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.pending.is_empty() {
            self.write_lines(self.pending.len())?;
        }
        self.inner.flush()
    }
}

impl<W: io::Write> Drop for Visible<W> {
    fn drop(&mut self) {
        let _ = io::Write::flush(self);
    }
}

/// Whether a spreadsheet would evaluate `s` as a formula: it begins with
/// `=`, `+`, `-`, `@`, a tab or a carriage return and is not a number.
pub fn is_formula(s: &str) -> bool {
    s.starts_with(['=', '+', '-', '@', '\t', '\r']) && s.parse::<f64>().is_err()
}

/// Whether `b` holds a comma or a quote, looked for 8 bytes at a time.
fn has_comma_or_quote(b: &[u8]) -> bool {
    let mut words = b.chunks_exact(8);
    let found = words.by_ref().any(|w| {
        let w = u64::from_le_bytes(w.try_into().unwrap_or_default());
        bytes_equal(w, b',') | bytes_equal(w, b'"') != 0
    });
    found || words.remainder().iter().any(|&c| c == b',' || c == b'"')
}

/// Appends one CSV field: escaped as [`push_visible`], a formula made text
/// with a leading `'`, quoted when it holds a comma or a quote.
pub fn push_csv_field(out: &mut String, s: &str) {
    let guard = if is_formula(s) { "'" } else { "" };
    // Escapes add no comma and no quote: whether to quote is the text's.
    let quoted = has_comma_or_quote(s.as_bytes());
    if quoted {
        out.push('"');
    }
    out.push_str(guard);
    push_escaped(out, s, quoted);
    if quoted {
        out.push('"');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_become_escapes() {
        assert_eq!(visible("plain é 名"), "plain é 名");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(visible("a\u{1b}[2Jb"), "a\\x1b[2Jb");
        assert_eq!(visible("\u{1b}]0;t\u{7}"), "\\x1b]0;t\\x07");
        assert_eq!(visible("x\r\ny\tz\u{7f}"), "x\\r\\ny\\tz\\x7f");
        assert_eq!(visible("c1\u{9b}31m"), "c1\\u{9b}31m");
        assert_eq!(visible("abc\u{202e}fdp.exe"), "abc\\u{202e}fdp.exe");
        assert_eq!(visible("\u{0}"), "\\x00");
    }

    #[test]
    fn csv_fields_are_never_formulas_or_broken_lines() {
        let field = |s: &str| {
            let mut out = String::new();
            push_csv_field(&mut out, s);
            out
        };
        assert_eq!(field("=cmd|' /C calc'!A0"), "'=cmd|' /C calc'!A0");
        assert_eq!(field("+1+1"), "'+1+1");
        assert_eq!(field("@SUM(A1)"), "'@SUM(A1)");
        assert_eq!(field("-x"), "'-x");
        assert_eq!(field("\tx"), "'\\tx");
        assert_eq!(field("\rx"), "'\\rx");
        assert_eq!(field("-5"), "-5");
        assert_eq!(field("+3.25"), "+3.25");
        assert_eq!(field("=a,b"), "\"'=a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("two\nlines"), "two\\nlines");
        assert_eq!(field(""), "");
    }

    /// Escapes found past whole words of plain text, at every offset: the
    /// word-at-a-time search against one character at a time.
    #[test]
    fn escapes_are_found_wherever_they_sit() {
        let one_at_a_time = |s: &str, quotes: bool| {
            let mut out = String::new();
            for c in s.chars() {
                match c {
                    '"' if quotes => out.push_str("\"\""),
                    '\t' => out.push_str("\\t"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    c if needs_escape(c) && (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
                    c if needs_escape(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                    c => out.push(c),
                }
            }
            out
        };
        let specials =
            ['\u{0}', '\t', '\u{1b}', '\u{7f}', '\u{9b}', '\u{61c}', '\u{202e}', '\u{2029}', '\u{2069}', '"', ','];
        // Characters sharing a lead byte with escaped ones, and others, that stay.
        let plain = ['a', 'é', '\u{a0}', '\u{600}', '\u{2030}', '名', '😀'];
        for special in specials {
            for fill in plain {
                for at in 0..20 {
                    let s: String =
                        std::iter::repeat_n(fill, at).chain([special]).chain(std::iter::repeat_n('b', 9)).collect();
                    assert_eq!(visible(&s), one_at_a_time(&s, false), "{s:?}");
                    let mut field = String::new();
                    push_csv_field(&mut field, &s);
                    let quoted = s.contains([',', '"']);
                    let guard = if is_formula(&s) { "'" } else { "" };
                    let expected = format!("{guard}{}", one_at_a_time(&s, quoted));
                    let expected = if quoted { format!("\"{expected}\"") } else { expected };
                    assert_eq!(field, expected, "{s:?}");
                }
            }
        }
    }

    #[test]
    fn serialized_json_is_made_safe_without_changing_values() {
        let value = serde_json::json!({"name": "a\u{1b}b\u{9b}c\u{202e}d\u{7f}"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json_safe(&text);
        assert!(!safe.chars().any(|c| needs_escape(c) && c != '\n'), "{safe}");
        assert_eq!(serde_json::from_str::<serde_json::Value>(&safe).unwrap(), value);
    }

    #[test]
    fn json_keeps_the_value_and_escapes_the_bytes() {
        let s = "u\u{1b}[2J\u{7f}\u{9b}\u{202e}é名\u{2029}";
        let mut out = Vec::new();
        crate::format::json_string(&mut out, s);
        let text = String::from_utf8(out.clone()).unwrap();
        assert_eq!(text, "\"u\\u001b[2J\\u007f\\u009b\\u202eé名\\u2029\"");
        assert_eq!(serde_json::from_str::<String>(&text).unwrap(), s);
    }
    #[test]
    fn lines_stay_lines_and_controls_show() {
        use std::io::Write;
        let mut out = Vec::new();
        {
            let mut v = Visible::new(&mut out);
            writeln!(v, "a\u{1b}[2Jb").unwrap();
            write!(v, "c\rd").unwrap();
            writeln!(v, "e").unwrap();
            write!(v, "tail\u{9b}").unwrap();
        }
        assert_eq!(String::from_utf8(out).unwrap(), "a\\x1b[2Jb\nc\\rde\ntail\\u{9b}");
    }
}
