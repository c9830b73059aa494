//! `--format jsonl`: one JSON object per event — the record's raw fields,
//! its names, its message and its properties as typed values.

use std::sync::Arc;

use nettrail_decode::fasthash::FastMap;
use nettrail_decode::{EventSchema, format};
use nettrail_etl::extended::{ExtType, provider_traits_name};
use nettrail_etl::record::KernelHook;
use nettrail_etl::{HeaderKind, UtcText};

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
    headers: FastMap<HeaderKey, Header>,
}

/// The part of a line from the provider's GUID to the keyword names. Every
/// event with the same header fields and schema has the same text, and a
/// chunk holds few kinds of events, so each is rendered once a chunk.
struct Header {
    /// Part of the key: the provider's name in the record's traits
    /// (TraceLogging), which the names may be made from.
    traits: Option<String>,
    /// Held, so that the key's address cannot be another schema's while the
    /// entry lives.
    _schema: Option<Arc<EventSchema>>,
    text: Vec<u8>,
    /// The schema's property names as JSON keys, each with the comma before it.
    keys: Vec<u8>,
    /// Where each key ends in `keys`.
    key_ends: Vec<usize>,
}

impl Header {
    /// The key of the `i`-th property, with a comma before all but the first.
    fn key(&self, i: usize) -> &[u8] {
        let start = if i == 0 { 1 } else { self.key_ends[i - 1] };
        &self.keys[start..self.key_ends[i]]
    }
}

/// The record's fields that [`EventNames::of`](nettrail_decode::EventNames::of)
/// reads or the header's text shows, and the schema (the provider's traits
/// are the rest of the key).
#[derive(Clone, Copy, PartialEq, Eq)]
struct HeaderKey {
    provider: nettrail_etl::Guid,
    keywords: u64,
    schema: *const EventSchema,
    hook: Option<KernelHook>,
    kind: HeaderKind,
    id: u16,
    task: u16,
    version: u8,
    opcode: u8,
    level: u8,
    channel: u8,
}

impl std::hash::Hash for HeaderKey {
    /// What tells a chunk's kinds apart, folded into one word (hashing
    /// every field, one at a time, was most of a lookup's cost).
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let guid = u128::from_le_bytes(self.provider.to_bytes_le());
        let small = u64::from(self.id) | u64::from(self.opcode) << 16 | u64::from(self.version) << 24;
        state.write_u64(guid as u64 ^ (guid >> 64) as u64 ^ self.keywords ^ self.schema as u64 ^ small << 32);
    }
}

impl Lines {
    /// The header of an event's kind, rendered on its first event.
    fn header(&mut self, v: &View<'_, '_>, raw: bool) -> &Header {
        let e = v.event;
        let schema = v.schema.ok();
        let key = HeaderKey {
            provider: e.provider,
            keywords: e.keywords,
            schema: schema.map_or(std::ptr::null(), Arc::as_ptr),
            hook: e.hook,
            kind: e.kind,
            id: e.id,
            task: e.task,
            version: e.version,
            opcode: e.opcode,
            level: e.level,
            channel: e.channel,
        };
        let traits = e.extended.find(ExtType::PROV_TRAITS).and_then(|t| provider_traits_name(t.data));
        let header = self.headers.entry(key).or_insert_with(|| {
            let mut keys = Vec::new();
            let mut key_ends = Vec::new();
            for field in schema.map(|s| s.fields.as_slice()).unwrap_or_default() {
                keys.push(b',');
                json::string(&mut keys, &field.name);
                keys.push(b':');
                key_ends.push(keys.len());
            }
            Header { traits: None, _schema: schema.cloned(), text: Vec::new(), keys, key_ends }
        });
        if header.text.is_empty() || header.traits.as_deref() != traits {
            header.text.clear();
            header_text(&mut header.text, v, raw);
            header.traits = traits.map(str::to_owned);
        }
        header
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
    let header = lines.header(v, raw);
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
            out.extend_from_slice(b",\"properties\":{");
            for (i, (field, value)) in v.properties().enumerate() {
                out.extend_from_slice(header.key(i));
                format::json(field, value, e.pointer_size, out);
            }
            out.push(b'}');
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
