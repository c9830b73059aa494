//! `--format jsonl`: one JSON object per event — the record's raw fields,
//! its names, its message and its properties as typed values.

use nettrail_decode::format;
use nettrail_etl::UtcText;

use super::kinds::Kinds;
use super::view::View;
use crate::json;

fn opt_str(out: &mut Vec<u8>, key: &[u8], value: Option<&str>) {
    out.extend_from_slice(key);
    match value {
        Some(v) => json::string(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// What one pass of a chunk keeps between its lines.
#[derive(Default)]
pub struct Lines {
    utc: UtcText,
    headers: Kinds<Header>,
}

/// The part of a line from the provider's GUID to the keyword names, and
/// the schema's property names as JSON keys.
struct Header {
    text: Vec<u8>,
    keys: PropertyKeys,
}

impl Header {
    fn new(v: &View<'_, '_>, raw: bool) -> Header {
        let mut text = Vec::new();
        header_text(&mut text, v, raw);
        Header { text, keys: PropertyKeys::new(v) }
    }
}

/// A schema's property names as JSON keys (`"Name":`), made once a kind.
pub(super) struct PropertyKeys {
    /// Each key with the comma before it.
    keys: Vec<u8>,
    /// Where each key ends in `keys`.
    ends: Vec<usize>,
}

impl PropertyKeys {
    pub(super) fn new(v: &View<'_, '_>) -> PropertyKeys {
        let mut keys = Vec::new();
        let mut ends = Vec::new();
        for field in v.schema.map(|s| s.fields.as_slice()).unwrap_or_default() {
            keys.push(b',');
            json::string(&mut keys, &field.name);
            keys.push(b':');
            ends.push(keys.len());
        }
        PropertyKeys { keys, ends }
    }

    /// The key of the `i`-th property, with a comma before all but the first.
    pub(super) fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 1 } else { self.ends[i - 1] };
        &self.keys[start..self.ends[i]]
    }

    /// The event's properties as one JSON object.
    pub(super) fn write(&self, out: &mut Vec<u8>, v: &View<'_, '_>) {
        out.push(b'{');
        for (i, (field, value)) in v.properties().enumerate() {
            out.extend_from_slice(self.key(i));
            format::json(field, value, v.event.pointer_size, out);
        }
        out.push(b'}');
    }
}

fn header_text(out: &mut Vec<u8>, v: &View<'_, '_>, raw: bool) {
    let e = v.event;
    out.extend_from_slice(b",\"provider_guid\":");
    json::guid(out, &e.provider);
    opt_str(out, b",\"provider_name\":", v.names().provider.as_deref());
    if !raw {
        opt_str(out, b",\"event_name\":", v.names().event.as_deref());
    }
    out.extend_from_slice(b",\"kind\":\"");
    out.extend_from_slice(e.kind.name().as_bytes());
    out.extend_from_slice(b"\",\"id\":");
    json::uint(out, e.id);
    out.extend_from_slice(b",\"version\":");
    json::uint(out, e.version);
    out.extend_from_slice(b",\"opcode\":");
    json::uint(out, e.opcode);
    if !raw {
        opt_str(out, b",\"opcode_name\":", v.names().opcode.as_deref());
    }
    out.extend_from_slice(b",\"task\":");
    json::uint(out, e.task);
    if !raw {
        opt_str(out, b",\"task_name\":", v.names().task.as_deref());
    }
    out.extend_from_slice(b",\"level\":");
    json::uint(out, e.level);
    if !raw {
        opt_str(out, b",\"level_name\":", v.names().level.as_deref());
    }
    out.extend_from_slice(b",\"channel\":");
    json::uint(out, e.channel);
    if !raw {
        opt_str(out, b",\"channel_name\":", v.names().channel.as_deref());
    }
    out.extend_from_slice(b",\"keywords\":");
    json::hex(out, e.keywords);
    if !raw {
        out.extend_from_slice(b",\"keyword_names\":[");
        for (i, k) in v.names().keywords.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            json::string(out, k);
        }
        out.push(b']');
    }
}

/// Writes one event; `raw` leaves out everything a schema would add (names,
/// message, properties).
pub fn write(out: &mut Vec<u8>, v: &View<'_, '_>, raw: bool, lines: &mut Lines) {
    let e = v.event;
    out.extend_from_slice(b"{\"timestamp\":");
    json::filetime(out, &mut lines.utc, nettrail_etl::FileTime(v.filetime));
    out.extend_from_slice(b",\"timestamp_raw\":");
    json::uint(out, e.timestamp);
    let header = lines.headers.of(v, |v| Header::new(v, raw));
    out.extend_from_slice(&header.text);
    out.extend_from_slice(b",\"pid\":");
    json::opt_uint(out, e.process_id);
    out.extend_from_slice(b",\"tid\":");
    json::opt_uint(out, e.thread_id);
    out.extend_from_slice(b",\"cpu\":");
    json::uint(out, e.cpu);
    out.extend_from_slice(b",\"activity_id\":");
    json::guid_or_null(out, Some(&e.activity_id));
    out.extend_from_slice(b",\"related_activity_id\":");
    json::guid_or_null(out, e.extended.related_activity_id().as_ref());
    out.extend_from_slice(b",\"extended\":[");
    for (i, item) in e.extended.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'"');
        out.extend_from_slice(item.ext_type.name().as_bytes());
        out.push(b'"');
    }
    out.extend_from_slice(b"],\"payload_len\":");
    json::uint(out, e.payload.len());
    if let Some(stack) = &v.stack {
        out.extend_from_slice(b",\"stack\":");
        out.extend_from_slice(stack.as_bytes());
    }
    match v.schema {
        Ok(schema) => {
            out.extend_from_slice(b",\"schema_source\":\"");
            out.extend_from_slice(schema.source.name().as_bytes());
            out.push(b'"');
            opt_str(out, b",\"message\":", v.message().as_deref());
            out.extend_from_slice(b",\"properties\":");
            header.keys.write(out, v);
        }
        // Raw output carries the record's fields only.
        Err(nettrail_decode::Undecoded::NotDecoded) => {}
        Err(why) => {
            out.extend_from_slice(b",\"undecoded\":");
            json::string(out, &why.text());
        }
    }
    out.extend_from_slice(b"}\n");
}
