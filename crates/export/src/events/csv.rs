//! `--format csv`: fixed columns, then one `name=value` cell per property
//! (the number of properties differs between events, as in `tracerpt`'s CSV).
//! Quoting follows RFC 4180; a cell a spreadsheet would run as a formula
//! begins with `'`, and control characters are shown as escapes
//! (`nettrail_decode::safe_text`).

use nettrail_decode::{Undecoded, format, safe_text};

use super::view::View;

pub const HEADER: &str = "timestamp,provider_name,provider_guid,event_name,task_name,opcode_name,id,version,\
level,keywords,pid,tid,cpu,activity_id,related_activity_id,message,properties\r\n";

/// Appends one RFC 4180 field, never a formula or a control character.
fn cell(out: &mut String, s: &str) {
    safe_text::push_csv_field(out, s);
}

pub fn write(out: &mut String, v: &View<'_, '_>) {
    let e = v.event;
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
    ];
    for (i, c) in cells.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        cell(out, c);
    }
    let mut text = String::new();
    for (field, value) in v.properties() {
        text.clear();
        text.push_str(&field.name);
        text.push('=');
        format::text(field, value, e.pointer_size, &mut text);
        out.push(',');
        cell(out, &text);
    }
    if let Err(why) = v.schema
        && *why != Undecoded::NotDecoded
    {
        out.push(',');
        cell(out, &format!("undecoded={why}"));
    }
    out.push_str("\r\n");
}
