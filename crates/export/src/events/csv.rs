//! `--format csv`: one rectangular table (RFC 4180) — fixed columns, then
//! the decoded properties as one JSON object (typed values, as in JSON
//! lines) and, for an event without a schema, why. A cell a spreadsheet
//! would run as a formula begins with `'`, and control characters are shown
//! as escapes (`nettrail_decode::safe_text`).

use std::fmt::Write as _;

use nettrail_decode::{Undecoded, format, safe_text};

use super::view::View;

pub const HEADER: &str = "timestamp,provider_name,provider_guid,event_name,task_name,opcode_name,id,version,\
level,keywords,pid,tid,cpu,activity_id,related_activity_id,message,properties,undecoded\r\n";

/// Appends one RFC 4180 field, never a formula or a control character.
fn cell(out: &mut String, s: &str) {
    safe_text::push_csv_field(out, s);
}

pub fn write(out: &mut String, v: &View<'_, '_>) {
    let e = v.event;
    let mut properties = Vec::new();
    if v.schema.is_ok() {
        properties.push(b'{');
        for (i, (field, value)) in v.properties().enumerate() {
            if i > 0 {
                properties.push(b',');
            }
            format::json_string(&mut properties, &field.name);
            properties.push(b':');
            format::json(field, value, e.pointer_size, &mut properties);
        }
        properties.push(b'}');
    }
    let undecoded = match v.schema {
        Err(why) if *why != Undecoded::NotDecoded => why.to_string(),
        _ => String::new(),
    };
    // Times, GUIDs and numbers are written as they are: none begins like a
    // formula or holds a comma, a quote or a control character.
    let _ = write!(out, "{},", nettrail_etl::FileTime(v.filetime));
    cell(out, v.names().provider.as_deref().unwrap_or(""));
    let _ = write!(out, ",{},", e.provider);
    for name in [&v.names().event, &v.names().task, &v.names().opcode] {
        cell(out, name.as_deref().unwrap_or(""));
        out.push(',');
    }
    let _ = write!(out, "{},{},{},0x{:x},", e.id, e.version, e.level, e.keywords);
    for id in [e.process_id, e.thread_id] {
        if let Some(id) = id {
            let _ = write!(out, "{id}");
        }
        out.push(',');
    }
    let _ = write!(out, "{},", e.cpu);
    if !e.activity_id.is_zero() {
        let _ = write!(out, "{}", e.activity_id);
    }
    out.push(',');
    if let Some(related) = e.extended.related_activity_id() {
        let _ = write!(out, "{related}");
    }
    out.push(',');
    cell(out, &v.message().unwrap_or_default());
    out.push(',');
    cell(out, std::str::from_utf8(&properties).unwrap_or_default());
    out.push(',');
    cell(out, &undecoded);
    out.push_str("\r\n");
}
