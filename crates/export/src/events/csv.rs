//! `--format csv`: one rectangular table (RFC 4180) — fixed columns, then
//! the decoded properties as one JSON object (typed values, as in JSON
//! lines) and, for an event without a schema, why. A cell a spreadsheet
//! would run as a formula begins with `'`, and control characters are shown
//! as escapes (`nettrail_decode::safe_text`).

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
    let cells = [
        nettrail_etl::FileTime(v.filetime).to_string(),
        v.names.provider.as_deref().unwrap_or("").to_string(),
        e.provider.to_string(),
        v.names.event.as_deref().unwrap_or("").to_string(),
        v.names.task.as_deref().unwrap_or("").to_string(),
        v.names.opcode.as_deref().unwrap_or("").to_string(),
        e.id.to_string(),
        e.version.to_string(),
        e.level.to_string(),
        format!("0x{:x}", e.keywords),
        e.process_id.map(|p| p.to_string()).unwrap_or_default(),
        e.thread_id.map(|t| t.to_string()).unwrap_or_default(),
        e.cpu.to_string(),
        if e.activity_id.is_zero() { String::new() } else { e.activity_id.to_string() },
        e.extended.related_activity_id().map(|g| g.to_string()).unwrap_or_default(),
        v.message().unwrap_or_default(),
        String::from_utf8(properties).unwrap_or_default(),
        undecoded,
    ];
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        cell(out, c);
    }
    out.push_str("\r\n");
}
