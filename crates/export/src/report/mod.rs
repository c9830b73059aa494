//! The HTML report: one self-contained file with a trace's report — the
//! trace's facts, a timeline of the requests, the request, connection, DNS,
//! Http.sys and browser tables (every column of the table commands), and per request
//! its stitched stacks and the events of its activity.
//!
//! The page needs nothing from the network: its script and style are
//! inlined, and the data is one JSON document in a
//! `<script type="application/json">` element, with `<`, `>`, `&` and the
//! JavaScript line separators escaped so that no string of the trace can end
//! that element. The page's script builds every element with
//! `textContent`, never parsing trace text as HTML.

use std::io::{self, Write};

use nettrail_decode::fasthash::FastMap;
use nettrail_decode::{EventNames, Schemas, Value as Decoded};
use nettrail_etl::{Batching, Chunk, Guid, Trace};
use nettrail_net::{Report, Stitched};
use nettrail_stacks::Symbols;
use nettrail_tables::{Analysed, Cell, Column, Filters, Request, columns};
use serde_json::{Value, json};

use crate::facts::Facts;

/// The page, its style and its script, inlined into every report.
const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Events of one activity the report lists, at most (the page says how many
/// there were).
pub const EVENT_LIMIT: usize = 200;

/// What the report is building, for progress lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Stitching each request's stacks (0 to 1 of the requests).
    Stacks,
    /// Reading the events of the requests' activities (0 to 1 of the trace).
    Events,
}

/// What a report holds, for the message that follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub requests: usize,
    /// Requests the trace has no stack for.
    pub without_stack: usize,
}

/// Writes the report of an analysed trace: its facts (from [`Facts::of`],
/// whose stacks and modules the requests' stacks are stitched from), its
/// tables, the stacks and each request's events. `title` names the trace.
pub fn write_report(
    out: &mut impl Write,
    title: &str,
    analysed: &Analysed<'_>,
    facts: &Facts,
    symbols: &impl Symbols,
    progress: &mut dyn FnMut(Stage, f64),
) -> io::Result<Written> {
    let report: Report = analysed.report();
    let mut document = facts.document.clone();
    document["requests"] = json!(report.requests.len());
    document["connections"] = json!(report.connections.len());
    document["dns_lookups"] = json!(report.dns.len());
    document["http_server_requests"] = json!(report.http_server.len());
    document["browser_rows"] = json!(report.browser.len());

    let mut rows = nettrail_tables::requests(&report, &Filters::default());
    let net = &analysed.analysis.network;
    let total = rows.len().max(1) as f64;
    for (i, r) in rows.iter_mut().enumerate() {
        r.stacks = net.stitch(&r.started_by, &facts.code, symbols);
        progress(Stage::Stacks, i as f64 / total);
    }
    let activities = activity_events(&analysed.trace, &analysed.schemas, &report, &mut |f| progress(Stage::Events, f));
    let mut data = Vec::with_capacity(1 << 20);
    write_data(&mut data, &document, &report, &rows, &activities);
    write_page(out, title, &data)?;
    Ok(Written { requests: rows.len(), without_stack: rows.iter().filter(|r| r.stacks.is_none()).count() })
}

/// The data document: facts, tables (column names, then rows of typed
/// cells), the stacks (each distinct list of frames once) and the events of
/// each request's activity.
fn write_data(
    out: &mut Vec<u8>,
    facts: &Value,
    report: &Report,
    rows: &[Request<'_>],
    activities: &FastMap<Guid, Events>,
) {
    out.extend_from_slice(b"{\"facts\":");
    serde_json::to_writer(&mut *out, facts).unwrap_or_default();
    out.extend_from_slice(b",\"event_limit\":");
    crate::json::uint(out, EVENT_LIMIT);
    out.extend_from_slice(b",\"tables\":{\"requests\":");
    table(out, &columns::requests(report), rows);
    out.extend_from_slice(b",\"connections\":");
    table(out, &columns::connections(report), &report.connections);
    out.extend_from_slice(b",\"dns\":");
    table(out, &columns::dns(report), &report.dns);
    out.extend_from_slice(b",\"http_server\":");
    table(out, &columns::http_server(report), &report.http_server);
    out.extend_from_slice(b",\"browser\":");
    table(out, &columns::browser(report), &report.browser);

    // Stacks repeat (every request of a loop starts from the same code):
    // each list of frames is stored once and named by its place.
    let mut stacks: Vec<Vec<String>> = Vec::new();
    let mut known: FastMap<Vec<String>, usize> = FastMap::default();
    let mut intern = |frames: Vec<String>| -> usize {
        *known.entry(frames).or_insert_with_key(|f| {
            stacks.push(f.clone());
            stacks.len() - 1
        })
    };
    // Per request (in row order): its stacks, or null.
    out.extend_from_slice(b"},\"request_stacks\":[");
    for (i, r) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        match &r.stacks {
            Some(s) => {
                let first = intern(s.first().to_vec());
                let last = intern(s.last().to_vec());
                let full = intern(s.full());
                out.extend_from_slice(b"{\"first\":");
                crate::json::uint(out, first);
                out.extend_from_slice(b",\"last\":");
                crate::json::uint(out, last);
                out.extend_from_slice(b",\"full\":");
                crate::json::uint(out, full);
                out.extend_from_slice(b",\"chain\":");
                crate::json::uint(out, s.stacks.len());
                out.extend_from_slice(b",\"threads\":");
                chain_threads(out, s);
                out.push(b'}');
            }
            None => out.extend_from_slice(b"null"),
        }
    }
    out.extend_from_slice(b"],\"stacks\":[");
    for (i, frames) in stacks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::string_array(out, frames);
    }
    out.extend_from_slice(b"],\"activities\":{");
    for (i, (id, events)) in activities.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::string(out, &id.to_string());
        out.extend_from_slice(b":{\"total\":");
        crate::json::uint(out, events.total);
        out.extend_from_slice(b",\"events\":");
        serde_json::to_writer(&mut *out, &events.listed).unwrap_or_default();
        out.push(b'}');
    }
    out.extend_from_slice(b"}}");
}

/// The threads of a chain's stacks, oldest first (null where unknown).
fn chain_threads(out: &mut Vec<u8>, s: &Stitched) {
    out.push(b'[');
    for (i, c) in s.stacks.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        crate::json::opt_uint(out, c.thread);
    }
    out.push(b']');
}

/// `{"columns":[{"name":…,"main":…,"decimals":…}…],"rows":[[cell…]…]}`:
/// every column of the table command, `main` for those its terminal table
/// shows, `decimals` for numbers shown with a fixed number of decimals.
fn table<R, K: std::borrow::Borrow<R>>(out: &mut Vec<u8>, columns: &[Column<R>], rows: &[K]) {
    out.extend_from_slice(b"{\"columns\":[");
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        crate::json::string(out, c.name);
        out.extend_from_slice(if c.main { b",\"main\":true" } else { b",\"main\":false" });
        let decimals = rows.iter().find_map(|r| match (c.get)(r.borrow()) {
            Cell::Float(_, d) => Some(d),
            _ => None,
        });
        if let Some(d) = decimals {
            out.extend_from_slice(b",\"decimals\":");
            crate::json::uint(out, d);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"],\"rows\":[");
    for (i, row) in rows.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.push(b'[');
        for (j, c) in columns.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            let cell: Cell = (c.get)(row.borrow());
            cell.json(out);
        }
        out.push(b']');
    }
    out.extend_from_slice(b"]}");
}

/// The events of one activity, in time order: the first [`EVENT_LIMIT`],
/// and how many there were.
#[derive(Debug, Default)]
struct Events {
    listed: Vec<Value>,
    total: u64,
}

/// The events of every request's activity: those whose activity id or
/// related activity id is the request's, as `nettrail dump --activity`
/// selects them. One more pass over the trace, only when a request has an
/// activity; `progress` is told how far it has come, from 0 to 1.
fn activity_events(
    trace: &Trace<'_>,
    schemas: &Schemas,
    report: &Report,
    progress: &mut dyn FnMut(f64),
) -> FastMap<Guid, Events> {
    let mut wanted: FastMap<Guid, Events> =
        report.requests.iter().filter_map(|r| r.activity).map(|a| (a, Events::default())).collect();
    if wanted.is_empty() {
        return wanted;
    }
    let clock = *trace.clock();
    let first = trace.header_timestamp();
    let last = trace.last_buffer_start().unwrap_or(first);
    let span = last.saturating_sub(first).max(1) as f64;
    let ids: FastMap<Guid, ()> = wanted.keys().map(|g| (*g, ())).collect();
    nettrail_etl::drive(
        trace,
        Batching::default(),
        |chunk| chunk_events(chunk, schemas, &clock, report.trace_start, &ids),
        |found| {
            for (id, event) in found {
                if let Some(events) = wanted.get_mut(&id) {
                    events.total += 1;
                    if events.listed.len() < EVENT_LIMIT {
                        events.listed.push(event);
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        },
        |ts| progress(ts.saturating_sub(first) as f64 / span),
    );
    wanted
}

/// The wanted activities' events of one chunk, decoded: (activity, event).
fn chunk_events(
    chunk: Chunk<'_, '_>,
    schemas: &Schemas,
    clock: &nettrail_etl::Clock,
    trace_start: i64,
    wanted: &FastMap<Guid, ()>,
) -> Vec<(Guid, Value)> {
    let mut found = Vec::new();
    let mut values: Vec<Decoded<'_>> = Vec::new();
    let mut cache = nettrail_decode::LookupCache::default();
    for event in chunk.events() {
        let related = event.extended.related_activity_id();
        let mut ids: [Option<Guid>; 2] = [Some(event.activity_id), related];
        for id in &mut ids {
            if id.is_some_and(|g| g.is_zero() || !wanted.contains_key(&g)) {
                *id = None;
            }
        }
        if ids[1] == ids[0] {
            ids[1] = None;
        }
        if ids.iter().all(Option::is_none) {
            continue;
        }
        let decoded = schemas.decode_cached(&mut cache, &event.record, &mut values);
        if decoded.is_err() {
            values.clear();
        }
        let schema = decoded.as_ref().ok().copied();
        let names = EventNames::of(&event.record, schema);
        // As `dump --format text` names it: the event (or its task), then the opcode.
        let parts: Vec<&str> =
            [names.event.as_deref().or(names.task.as_deref()), names.opcode.as_deref()].into_iter().flatten().collect();
        let name = if parts.is_empty() { format!("event {}", event.id) } else { parts.join(" ") };
        let mut text = String::new();
        if let Some(schema) = schema {
            if let Some(template) = schema.message.as_deref() {
                nettrail_decode::message::render(template, &schema.fields, &values, event.pointer_size, &mut text);
            }
            let mut properties = String::new();
            for (field, value) in schema.fields.iter().zip(&values) {
                if !properties.is_empty() {
                    properties.push(' ');
                }
                properties.push_str(&field.name);
                properties.push('=');
                nettrail_decode::format::text(field, value, event.pointer_size, &mut properties);
            }
            if text.trim().is_empty() {
                text = properties;
            } else if !properties.is_empty() {
                text = format!("{} — {properties}", text.trim());
            }
        } else if let Err(why) = &decoded {
            text = format!("undecoded: {why}");
        }
        let seconds = (clock.to_filetime(event.timestamp) - trace_start) as f64 / 1e7;
        let value = json!({
            "t": (seconds * 1e6).round() / 1e6,
            "provider": names.provider.as_deref().map_or_else(|| event.provider.to_string(), str::to_string),
            "event": name,
            "id": event.id,
            "pid": event.process_id,
            "tid": event.thread_id,
            "activity": (!event.activity_id.is_zero()).then(|| event.activity_id.to_string()),
            "related": related.map(|g| g.to_string()),
            "text": text,
        });
        for id in ids.into_iter().flatten() {
            found.push((id, value.clone()));
        }
    }
    found
}

/// Writes the page: the template with the style, the script and the data
/// (escaped for a script element) inlined.
fn write_page(out: &mut impl Write, title: &str, data: &[u8]) -> io::Result<()> {
    let mut rest = TEMPLATE;
    let mut text = Vec::new();
    while let Some(at) = rest.find("{{") {
        out.write_all(&rest.as_bytes()[..at])?;
        let after = &rest[at + 2..];
        let end = after.find("}}").unwrap_or(after.len());
        text.clear();
        match &after[..end] {
            "STYLE" => text.extend_from_slice(STYLE.as_bytes()),
            "SCRIPT" => text.extend_from_slice(SCRIPT.as_bytes()),
            "TITLE" => html_text(&mut text, title),
            "DATA" => {
                // In slices, so the escaped copy never holds all the data;
                // each ends before a character, never inside one (U+2028).
                let mut from = 0;
                while from < data.len() {
                    let mut to = (from + (1 << 20)).min(data.len());
                    while to < data.len() && data[to] & 0xC0 == 0x80 {
                        to += 1;
                    }
                    text.clear();
                    script_json(&mut text, &data[from..to]);
                    out.write_all(&text)?;
                    from = to;
                }
                text.clear();
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("report.html: unknown placeholder {other:?}"),
                ));
            }
        }
        out.write_all(&text)?;
        rest = after.get(end + 2..).unwrap_or_default();
    }
    out.write_all(rest.as_bytes())?;
    out.flush()
}

/// JSON text made safe inside a script element: `<`, `>` and `&` as
/// `\u003c` and so on (they only occur inside strings, where the escape means
/// the same character), and U+2028/2029, which older JavaScript parsers
/// took for line ends.
fn script_json(out: &mut Vec<u8>, json: &[u8]) {
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        match b {
            b'<' => out.extend_from_slice(b"\\u003c"),
            b'>' => out.extend_from_slice(b"\\u003e"),
            b'&' => out.extend_from_slice(b"\\u0026"),
            0xE2 if json.get(i + 1) == Some(&0x80) && matches!(json.get(i + 2), Some(0xA8 | 0xA9)) => {
                out.extend_from_slice(if json[i + 2] == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                i += 2;
            }
            _ => out.push(b),
        }
        i += 1;
    }
}

/// Text inside an HTML element.
fn html_text(out: &mut Vec<u8>, s: &str) {
    for c in s.chars() {
        match c {
            '<' => out.extend_from_slice(b"&lt;"),
            '>' => out.extend_from_slice(b"&gt;"),
            '&' => out.extend_from_slice(b"&amp;"),
            '"' => out.extend_from_slice(b"&quot;"),
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn script_json_cannot_end_the_element() {
        let mut out = Vec::new();
        let text = "\"</script><b>&\u{2028}\u{2029}é\"";
        script_json(&mut out, text.as_bytes());
        let escaped = String::from_utf8(out).unwrap();
        assert_eq!(escaped, r#""\u003c/script\u003e\u003cb\u003e\u0026\u2028\u2029é""#);
        let back: String = serde_json::from_str(&escaped).unwrap();
        assert_eq!(back, "</script><b>&\u{2028}\u{2029}é");
    }

    #[test]
    fn data_written_in_slices_keeps_every_escape() {
        // A line separator across the first slice's end.
        let data = format!("{{\"s\":\"{}\u{2028}<\"}}", "a".repeat((1 << 20) - 7));
        assert!(data.len() > 1 << 20 && data.as_bytes()[1 << 20] & 0xC0 == 0x80);
        let mut page = Vec::new();
        write_page(&mut page, "t<>", data.as_bytes()).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("\\u2028\\u003c") && !page.contains('\u{2028}'));
        assert!(page.contains("<title>t&lt;&gt; — nettrail</title>"));
    }

    #[test]
    fn the_template_has_every_placeholder() {
        for p in ["{{STYLE}}", "{{SCRIPT}}", "{{DATA}}", "{{TITLE}}"] {
            assert!(TEMPLATE.contains(p), "report.html lacks {p}");
        }
        assert!(!SCRIPT.contains("</script") && !STYLE.contains("</style"));
        assert!(!SCRIPT.contains("innerHTML"), "the page builds its elements with textContent");
    }
}
