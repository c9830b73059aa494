//! `--format xml`: the Windows event schema, as `tracerpt` writes it — one
//! `<Event>` per event inside an `<Events>` document, with `<System>`,
//! `<EventData>` and `<RenderingInfo>`.

use std::fmt::Write as _;

use nettrail_decode::format::push_number;
use nettrail_decode::{Value, format};
use nettrail_etl::UtcText;
use nettrail_etl::record::CpuTime;

use super::kinds::Kinds;
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
    out.push_str("  <");
    out.push_str(name);
    out.push('>');
    escape(out, value);
    out.push_str("</");
    out.push_str(name);
    out.push_str(">\n");
}

/// What one pass of a chunk keeps between its events.
#[derive(Default)]
pub struct Events {
    utc: UtcText,
    kinds: Kinds<Kind>,
    /// A value's text before it is escaped (reused).
    text: String,
}

/// The parts of an event's XML that every event of its kind shares.
struct Kind {
    /// From `<Event>` to the keywords of `<System>`.
    system: String,
    /// From the channel to the end of `<System>`.
    system_end: String,
    /// From `<RenderingInfo>` to its keywords.
    rendering: String,
    /// From the rendered channel to the end of the event.
    end: String,
    /// `<Data Name="…">` of each top-level property.
    data: Vec<String>,
}

impl Kind {
    fn new(v: &View<'_, '_>) -> Kind {
        let e = v.event;
        let names = v.names();
        let mut system = String::from(
            "<Event xmlns=\"http://schemas.microsoft.com/win/2004/08/events/event\">\n <System>\n  <Provider",
        );
        if let Some(name) = &names.provider {
            system.push_str(" Name=\"");
            escape(&mut system, name);
            system.push('"');
        }
        let _ = writeln!(system, " Guid=\"{{{}}}\" />", e.provider);
        let _ = writeln!(system, "  <EventID>{}</EventID>", e.id);
        let _ = writeln!(system, "  <Version>{}</Version>", e.version);
        let _ = writeln!(system, "  <Level>{}</Level>", e.level);
        let _ = writeln!(system, "  <Task>{}</Task>", e.task);
        let _ = writeln!(system, "  <Opcode>{}</Opcode>", e.opcode);
        let _ = writeln!(system, "  <Keywords>0x{:X}</Keywords>", e.keywords);
        let mut system_end = String::new();
        element(&mut system_end, "Channel", names.channel.as_deref().unwrap_or(""));
        system_end.push_str("  <Computer />\n </System>\n");
        let mut rendering = String::from(" <RenderingInfo Culture=\"en-US\">\n");
        for (name, value) in [("Level", &names.level), ("Opcode", &names.opcode), ("Task", &names.task)] {
            element(&mut rendering, name, value.as_deref().unwrap_or(""));
        }
        rendering.push_str("  <Keywords>\n");
        for k in &names.keywords {
            rendering.push_str("   <Keyword>");
            escape(&mut rendering, k);
            rendering.push_str("</Keyword>\n");
        }
        rendering.push_str("  </Keywords>\n");
        let mut end = String::new();
        element(&mut end, "Channel", names.channel.as_deref().unwrap_or(""));
        element(&mut end, "Provider", names.provider.as_deref().unwrap_or(""));
        end.push_str(" </RenderingInfo>\n</Event>\n");
        let fields = v.schema.map(|s| s.fields.as_slice()).unwrap_or_default();
        let data = fields.iter().map(|f| data_start("  ", f)).collect();
        Kind { system, system_end, rendering, end, data }
    }
}

/// `<Data Name="…">` of a field.
fn data_start(indent: &str, field: &nettrail_decode::Field) -> String {
    let mut start = format!("{indent}<Data Name=\"");
    escape(&mut start, &field.name);
    start.push_str("\">");
    start
}

/// One property as `<Data>` (an array as one for each element; a struct as
/// `<ComplexData>`); `start` is its `<Data Name="…">` when known.
fn data(
    out: &mut String,
    text: &mut String,
    (indent, start): (&str, Option<&str>),
    field: &nettrail_decode::Field,
    value: &Value<'_>,
    pointer_size: u8,
) {
    match value {
        Value::Array(items) => {
            for item in items {
                data(out, text, (indent, start), field, item, pointer_size);
            }
        }
        Value::Struct(members) => {
            let _ = write!(out, "{indent}<ComplexData Name=\"");
            escape(out, &field.name);
            out.push_str("\">\n");
            let inner = format!("{indent}  ");
            for (m, v) in field.members.iter().zip(members) {
                data(out, text, (&inner, None), m, v, pointer_size);
            }
            let _ = writeln!(out, "{indent}</ComplexData>");
        }
        _ => {
            match start {
                Some(start) => out.push_str(start),
                None => out.push_str(&data_start(indent, field)),
            }
            text.clear();
            format::text(field, value, pointer_size, text);
            escape(out, text);
            out.push_str("</Data>\n");
        }
    }
}

pub fn write(out: &mut String, v: &View<'_, '_>, events: &mut Events) {
    let e = v.event;
    let Events { utc, kinds, text } = events;
    let kind = kinds.of(v, Kind::new);
    out.push_str(&kind.system);
    out.push_str("  <TimeCreated SystemTime=\"");
    utc.push(nettrail_etl::FileTime(v.filetime), out);
    // Windows writes nanoseconds; the clock has 100 ns resolution.
    out.pop();
    out.push_str("00Z\" />\n");
    out.push_str("  <Correlation");
    if !e.activity_id.is_zero() {
        let _ = write!(out, " ActivityID=\"{}\"", format::braced_guid(&e.activity_id));
    }
    if let Some(related) = e.extended.related_activity_id() {
        let _ = write!(out, " RelatedActivityID=\"{}\"", format::braced_guid(&related));
    }
    out.push_str(" />\n  <Execution");
    if let Some(pid) = e.process_id {
        out.push_str(" ProcessID=\"");
        push_number(out, pid);
        out.push('"');
    }
    if let Some(tid) = e.thread_id {
        out.push_str(" ThreadID=\"");
        push_number(out, tid);
        out.push('"');
    }
    out.push_str(" ProcessorID=\"");
    push_number(out, e.cpu);
    out.push('"');
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
    out.push_str(&kind.system_end);
    match v.schema {
        Ok(_) => {
            out.push_str(" <EventData>\n");
            for (i, (field, value)) in v.properties().enumerate() {
                let start = kind.data.get(i).map(String::as_str);
                data(out, text, ("  ", start), field, value, e.pointer_size);
            }
            out.push_str(" </EventData>\n");
        }
        Err(_) => {
            // What TDH cannot decode, tracerpt shows as the payload's bytes.
            out.push_str(" <BinaryEventData>");
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            let mut hex = [0u8; 64];
            for bytes in e.payload.chunks(32) {
                for (pair, b) in hex.chunks_exact_mut(2).zip(bytes) {
                    pair.copy_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
                }
                out.push_str(std::str::from_utf8(&hex[..2 * bytes.len()]).unwrap_or_default());
            }
            out.push_str("</BinaryEventData>\n");
        }
    }
    out.push_str(&kind.rendering);
    element(out, "Message", &v.message().unwrap_or_default());
    out.push_str(&kind.end);
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
