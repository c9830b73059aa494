//! `--format xml`: the Windows event schema, as `tracerpt` writes it — one
//! `<Event>` per event inside an `<Events>` document, with `<System>`,
//! `<EventData>` and `<RenderingInfo>`.

use std::fmt::Write as _;

use nettrail_decode::{Value, format};
use nettrail_etl::record::CpuTime;

use super::view::View;

pub const HEADER: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Events>\n";
pub const FOOTER: &str = "</Events>\n";

/// Appends `s` escaped for XML text and attribute values. Characters XML
/// 1.0 cannot hold (C0 controls, U+FFFE/U+FFFF) are shown as `\x1b`-style
/// escapes; those it holds but a terminal acts on (tab, line breaks, DEL,
/// C1 and bidirectional controls) as character references.
fn escape(out: &mut String, s: &str) {
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        // Only these bytes begin a character to escape: markup, C0 and DEL,
        // the lead bytes of the terminal's escaped characters, and U+FFFE/F's (0xEF).
        let may_escape = matches!(b, b'<' | b'>' | b'&' | b'"' | b'\'' | 0..=0x1F | 0x7F | 0xEF)
            || nettrail_decode::safe_text::lead_of_escaped(b);
        if !may_escape || i < start {
            continue;
        }
        let Some(c) = s.get(i..).and_then(|t| t.chars().next()) else { continue };
        if escape_char(out, &s[start..i], c) {
            start = i + c.len_utf8();
        }
    }
    out.push_str(&s[start..]);
}

/// Writes `before` and then `c` escaped, if `c` needs it (else nothing, and `false`).
fn escape_char(out: &mut String, before: &str, c: char) -> bool {
    let escaped = match c {
        '<' => "&lt;",
        '>' => "&gt;",
        '&' => "&amp;",
        '"' => "&quot;",
        '\'' => "&apos;",
        _ => "",
    };
    let unfit = (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') || c == '\u{FFFE}' || c == '\u{FFFF}';
    if escaped.is_empty() && !unfit && !nettrail_decode::safe_text::needs_escape(c) {
        return false;
    }
    out.push_str(before);
    if !escaped.is_empty() {
        out.push_str(escaped);
    } else if unfit && (c as u32) < 0x20 {
        let _ = write!(out, "\\x{:02x}", c as u32);
    } else if unfit {
        let _ = write!(out, "\\u{{{:x}}}", c as u32);
    } else {
        let _ = write!(out, "&#x{:x};", c as u32);
    }
    true
}

fn element(out: &mut String, name: &str, value: &str) {
    let _ = write!(out, "  <{name}>");
    escape(out, value);
    let _ = writeln!(out, "</{name}>");
}

fn data(out: &mut String, indent: &str, field: &nettrail_decode::Field, value: &Value<'_>, pointer_size: u8) {
    match value {
        Value::Array(items) => {
            for item in items {
                data(out, indent, field, item, pointer_size);
            }
        }
        Value::Struct(members) => {
            let _ = write!(out, "{indent}<ComplexData Name=\"");
            escape(out, &field.name);
            out.push_str("\">\n");
            let inner = format!("{indent}  ");
            for (m, v) in field.members.iter().zip(members) {
                data(out, &inner, m, v, pointer_size);
            }
            let _ = writeln!(out, "{indent}</ComplexData>");
        }
        _ => {
            let _ = write!(out, "{indent}<Data Name=\"");
            escape(out, &field.name);
            out.push_str("\">");
            let mut text = String::new();
            format::text(field, value, pointer_size, &mut text);
            escape(out, &text);
            out.push_str("</Data>\n");
        }
    }
}

pub fn write(out: &mut String, v: &View<'_, '_>) {
    let e = v.event;
    out.push_str("<Event xmlns=\"http://schemas.microsoft.com/win/2004/08/events/event\">\n <System>\n  <Provider");
    if let Some(name) = &v.names().provider {
        out.push_str(" Name=\"");
        escape(out, name);
        out.push('"');
    }
    let _ = writeln!(out, " Guid=\"{{{}}}\" />", e.provider);
    let _ = writeln!(out, "  <EventID>{}</EventID>", e.id);
    let _ = writeln!(out, "  <Version>{}</Version>", e.version);
    let _ = writeln!(out, "  <Level>{}</Level>", e.level);
    let _ = writeln!(out, "  <Task>{}</Task>", e.task);
    let _ = writeln!(out, "  <Opcode>{}</Opcode>", e.opcode);
    let _ = writeln!(out, "  <Keywords>0x{:X}</Keywords>", e.keywords);
    let ft = nettrail_etl::FileTime(v.filetime).to_string();
    // Windows writes nanoseconds; the clock has 100 ns resolution.
    let _ = writeln!(out, "  <TimeCreated SystemTime=\"{}00Z\" />", ft.trim_end_matches('Z'));
    out.push_str("  <Correlation");
    if !e.activity_id.is_zero() {
        let _ = write!(out, " ActivityID=\"{}\"", format::braced_guid(&e.activity_id));
    }
    if let Some(related) = e.extended.related_activity_id() {
        let _ = write!(out, " RelatedActivityID=\"{}\"", format::braced_guid(&related));
    }
    out.push_str(" />\n  <Execution");
    if let Some(pid) = e.process_id {
        let _ = write!(out, " ProcessID=\"{pid}\"");
    }
    if let Some(tid) = e.thread_id {
        let _ = write!(out, " ThreadID=\"{tid}\"");
    }
    let _ = write!(out, " ProcessorID=\"{}\"", e.cpu);
    match e.cpu_time {
        CpuTime::KernelUser { kernel, user } => {
            let _ = write!(out, " KernelTime=\"{kernel}\" UserTime=\"{user}\"");
        }
        CpuTime::Processor(t) => {
            let _ = write!(out, " ProcessorTime=\"{t}\"");
        }
        CpuTime::None => {}
    }
    out.push_str(" />\n");
    element(out, "Channel", v.names().channel.as_deref().unwrap_or(""));
    out.push_str("  <Computer />\n </System>\n");
    match v.schema {
        Ok(_) => {
            out.push_str(" <EventData>\n");
            for (field, value) in v.properties() {
                data(out, "  ", field, value, e.pointer_size);
            }
            out.push_str(" </EventData>\n");
        }
        Err(_) => {
            // What TDH cannot decode, tracerpt shows as the payload's bytes.
            out.push_str(" <BinaryEventData>");
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            for b in e.payload {
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 15)]));
            }
            out.push_str("</BinaryEventData>\n");
        }
    }
    out.push_str(" <RenderingInfo Culture=\"en-US\">\n");
    let rendering = [
        ("Level", v.names().level.as_deref()),
        ("Opcode", v.names().opcode.as_deref()),
        ("Task", v.names().task.as_deref()),
    ];
    for (name, value) in rendering {
        element(out, name, value.unwrap_or(""));
    }
    out.push_str("  <Keywords>\n");
    for k in &v.names().keywords {
        out.push_str("   <Keyword>");
        escape(out, k);
        out.push_str("</Keyword>\n");
    }
    out.push_str("  </Keywords>\n");
    element(out, "Message", &v.message().unwrap_or_default());
    element(out, "Channel", v.names().channel.as_deref().unwrap_or(""));
    element(out, "Provider", v.names().provider.as_deref().unwrap_or(""));
    out.push_str(" </RenderingInfo>\n</Event>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What [`escape`] writes, a character at a time.
    fn one_at_a_time(s: &str) -> String {
        let mut out = String::new();
        for c in s.chars() {
            match c {
                '<' => out.push_str("&lt;"),
                '>' => out.push_str("&gt;"),
                '&' => out.push_str("&amp;"),
                '"' => out.push_str("&quot;"),
                '\'' => out.push_str("&apos;"),
                '\t' | '\n' | '\r' => out.push_str(&format!("&#x{:x};", c as u32)),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\x{:02x}", c as u32)),
                '\u{FFFE}' | '\u{FFFF}' => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c if nettrail_decode::safe_text::needs_escape(c) => out.push_str(&format!("&#x{:x};", c as u32)),
                c => out.push(c),
            }
        }
        out
    }

    #[test]
    fn escapes_are_found_wherever_they_sit() {
        let specials =
            ['<', '&', '\'', '\t', '\n', '\u{1}', '\u{7f}', '\u{85}', '\u{61c}', '\u{202e}', '\u{fffe}', '\u{ffff}'];
        let plain = ['a', 'é', '\u{a0}', '\u{600}', '\u{2030}', '\u{fffd}', '名', '😀'];
        for special in specials {
            for fill in plain {
                for at in 0..12 {
                    let s: String =
                        std::iter::repeat_n(fill, at).chain([special]).chain(std::iter::repeat_n('b', 3)).collect();
                    let mut out = String::new();
                    escape(&mut out, &s);
                    assert_eq!(out, one_at_a_time(&s), "{s:?}");
                }
            }
        }
        let mut out = String::new();
        escape(&mut out, "a<b>\u{1b}[2J\u{202e}\u{ffff}");
        assert_eq!(out, "a&lt;b&gt;\\x1b[2J&#x202e;\\u{ffff}");
    }
}
