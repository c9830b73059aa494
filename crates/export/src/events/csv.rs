//! `--format csv`: one rectangular table (RFC 4180) — fixed columns, then
//! the decoded properties as one JSON object (typed values, as in JSON
//! lines) and, for an event without a schema, why. A cell a spreadsheet
//! would run as a formula begins with `'`, and control characters are shown
//! as escapes (`nettrail_decode::safe_text`).

use std::fmt::Write as _;

use nettrail_decode::format::push_number;
use nettrail_decode::{Undecoded, safe_text};
use nettrail_etl::UtcText;

use super::jsonl::PropertyKeys;
use super::kinds::Kinds;
use super::view::View;

pub const HEADER: &str = "timestamp,provider_name,provider_guid,event_name,task_name,opcode_name,id,version,\
level,keywords,pid,tid,cpu,activity_id,related_activity_id,message,properties,undecoded\r\n";

/// Appends one RFC 4180 field, never a formula or a control character.
fn cell(out: &mut String, s: &str) {
    safe_text::push_csv_field(out, s);
}

/// What one pass of a chunk keeps between its rows.
#[derive(Default)]
pub struct Rows {
    utc: UtcText,
    kinds: Kinds<Kind>,
    properties: Vec<u8>,
}

/// The cells an event kind's rows share, from the provider's name to the
/// keywords, and its property keys.
struct Kind {
    cells: String,
    keys: PropertyKeys,
}

impl Kind {
    fn new(v: &View<'_, '_>) -> Kind {
        let e = v.event;
        let names = v.names();
        let mut cells = String::new();
        cell(&mut cells, names.provider.as_deref().unwrap_or(""));
        // Times, GUIDs and numbers are written as they are: none begins like
        // a formula or holds a comma, a quote or a control character.
        let _ = write!(cells, ",{},", e.provider);
        for name in [&names.event, &names.task, &names.opcode] {
            cell(&mut cells, name.as_deref().unwrap_or(""));
            cells.push(',');
        }
        let _ = write!(cells, "{},{},{},0x{:x},", e.id, e.version, e.level, e.keywords);
        Kind { cells, keys: PropertyKeys::new(v) }
    }
}

fn guid(out: &mut String, g: &nettrail_etl::Guid) {
    let mut text = [0u8; 36];
    g.encode_lower(&mut text);
    out.push_str(std::str::from_utf8(&text).unwrap_or_default());
}

pub fn write(out: &mut String, v: &View<'_, '_>, rows: &mut Rows) {
    let e = v.event;
    rows.utc.push(nettrail_etl::FileTime(v.filetime), out);
    out.push(',');
    let kind = rows.kinds.of(v, Kind::new);
    out.push_str(&kind.cells);
    for id in [e.process_id, e.thread_id] {
        if let Some(id) = id {
            push_number(out, id);
        }
        out.push(',');
    }
    push_number(out, e.cpu);
    out.push(',');
    if !e.activity_id.is_zero() {
        guid(out, &e.activity_id);
    }
    out.push(',');
    if let Some(related) = e.extended.related_activity_id() {
        guid(out, &related);
    }
    out.push(',');
    cell(out, &v.message().unwrap_or_default());
    out.push(',');
    rows.properties.clear();
    if v.schema.is_ok() {
        kind.keys.write(&mut rows.properties, v);
    }
    cell(out, std::str::from_utf8(&rows.properties).unwrap_or_default());
    out.push(',');
    match v.schema {
        Err(why) if *why != Undecoded::NotDecoded => cell(out, &why.text()),
        _ => {}
    }
    out.push_str("\r\n");
}
