//! `nettrail view`: one self-contained HTML file with a trace's report — the
//! trace's facts, a timeline of the requests, the request, connection, DNS
//! and Http.sys tables (every column of the table commands), and per request
//! its stitched stacks and the events of its activity.
//!
//! The page needs nothing from the network: its script and style are
//! inlined, and the data is one JSON document in a
//! `<script type="application/json">` element, with `<`, `>`, `&` and the
//! JavaScript line separators escaped so that no string of the trace can end
//! that element. The page's script builds every element with
//! `textContent`, never parsing trace text as HTML.

use std::path::{Path, PathBuf};

use nettrail_decode::fasthash::FastMap;
use nettrail_decode::{EventNames, Schemas, Value as Decoded};
use nettrail_etl::{Error, EventRef, EventStream, Guid, Trace};
use nettrail_net::{Report, Stitched};
use rayon::prelude::*;
use serde_json::{Value, json};

use crate::Outcome;
use crate::tables::render::{Cell, Column};
use crate::tables::{self, Filters, columns};

/// The page, its style and its script, inlined into every report.
const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Events of one activity the report lists, at most (the page says how many
/// there were).
pub const EVENT_LIMIT: usize = 200;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Where to write the report; by default next to the trace, with the
    /// extension `.html` (`trace.etl` → `trace.html`).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Open the report in the default browser once written.
    #[arg(long)]
    open: bool,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
}

impl Args {
    /// The report of a trace, next to it, opened in the browser when `open`
    /// (what `nettrail stop --view` does with the trace it wrote).
    pub fn for_trace(trace: &Path, open: bool) -> Args {
        Args {
            trace: trace.to_path_buf(),
            output: None,
            open,
            symbols: crate::symbols::SymbolArgs::default(),
            manifest: Vec::new(),
        }
    }
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let path = &args.trace;
    let output = args.output.clone().unwrap_or_else(|| path.with_extension("html"));
    let file = crate::open(path)?;
    let analysed = tables::analyse(path, &file, &args.manifest, quiet)?;
    let report: Report = analysed.analysis.network.report();

    // The facts of `nettrail info`, and every process's stacks and modules
    // from the same pass.
    let (summary, coverage, code) = crate::info::count(&analysed.trace, &analysed.schemas);
    let mut facts = crate::info::report(path, &analysed.trace, &summary, &coverage);
    crate::info::add_code(&mut facts, &summary, &code);
    facts["requests"] = json!(report.requests.len());
    facts["connections"] = json!(report.connections.len());
    facts["dns_lookups"] = json!(report.dns.len());
    facts["http_server_requests"] = json!(report.http_server.len());

    let mut rows = tables::requests(&report, &Filters::default());
    let pdbs = crate::symbols::Pdbs::new(&args.symbols);
    let net = &analysed.analysis.network;
    let mut progress = crate::progress::Progress::new("stacks", rows.len() as u64, quiet);
    for (i, r) in rows.iter_mut().enumerate() {
        r.stacks = net.stitch(&r.started_by, &code, &pdbs);
        progress.update(i as u64);
    }
    progress.finish();
    pdbs.summary();

    let activities = activity_events(&analysed.trace, &analysed.schemas, &report, quiet);

    let mut data = Vec::with_capacity(1 << 20);
    write_data(&mut data, &facts, &report, &rows, &activities);
    let title = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    write_page(&output, &title, &data)?;
    println!("{}", output.display());
    // The report is written either way: a browser that cannot be started is a warning.
    if args.open
        && let Err(e) = open_in_browser(&output)
    {
        say!("{e:#}");
    }
    // The analysis met the same damage as the count: reported once.
    Ok(analysed.outcome(path))
}

/// The data document: facts, tables (column names, then rows of typed
/// cells), the stacks (each distinct list of frames once) and the events of
/// each request's activity.
fn write_data(
    out: &mut Vec<u8>,
    facts: &Value,
    report: &Report,
    rows: &[columns::Request<'_>],
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
        out.extend_from_slice(if c.in_table { b",\"main\":true" } else { b",\"main\":false" });
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

/// Events taken from the merge at a time, and decoded per parallel task.
const BATCH: usize = 32 * 1024;
const CHUNK: usize = 2048;

/// The events of every request's activity: those whose activity id or
/// related activity id is the request's, as `nettrail dump --activity`
/// selects them. One more pass over the trace, only when a request has an
/// activity.
fn activity_events(trace: &Trace<'_>, schemas: &Schemas, report: &Report, quiet: bool) -> FastMap<Guid, Events> {
    let mut wanted: FastMap<Guid, Events> =
        report.requests.iter().filter_map(|r| r.activity).map(|a| (a, Events::default())).collect();
    if wanted.is_empty() {
        return wanted;
    }
    let clock = *trace.clock();
    let first = trace.header_timestamp();
    let last = trace.buffers().iter().filter_map(|b| b.first_timestamp).max().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("events", last.saturating_sub(first), quiet);
    let mut stream = trace.events();
    let mut batch = Vec::with_capacity(BATCH);
    loop {
        batch.clear();
        stream.next_batch(BATCH, &mut batch);
        if batch.is_empty() {
            break;
        }
        let found: Vec<Vec<(Guid, Value)>> = batch
            .par_chunks(CHUNK)
            .map(|items| chunk_events(&stream, items, schemas, &clock, report.trace_start, &wanted))
            .collect();
        for (id, event) in found.into_iter().flatten() {
            if let Some(events) = wanted.get_mut(&id) {
                events.total += 1;
                if events.listed.len() < EVENT_LIMIT {
                    events.listed.push(event);
                }
            }
        }
        if let Some(Ok(r)) = batch.last() {
            progress.update(r.timestamp.saturating_sub(first));
        }
    }
    progress.finish();
    wanted
}

/// The wanted activities' events of one chunk, decoded: (activity, event).
fn chunk_events(
    stream: &EventStream<'_, '_>,
    items: &[Result<EventRef, Error>],
    schemas: &Schemas,
    clock: &nettrail_etl::Clock,
    trace_start: i64,
    wanted: &FastMap<Guid, Events>,
) -> Vec<(Guid, Value)> {
    let mut found = Vec::new();
    let mut values: Vec<Decoded<'_>> = Vec::new();
    let mut cache = nettrail_decode::LookupCache::default();
    for r in items.iter().flatten() {
        let Some(event) = stream.event(*r) else { continue };
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
fn write_page(output: &Path, title: &str, data: &[u8]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::io::Write as _;
    let cannot = || format!("{}: cannot write", output.display());
    let file = std::fs::File::create(output).with_context(cannot)?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let mut rest = TEMPLATE;
    let mut text = Vec::new();
    while let Some(at) = rest.find("{{") {
        out.write_all(&rest.as_bytes()[..at]).with_context(cannot)?;
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
                    out.write_all(&text).with_context(cannot)?;
                    from = to;
                }
                text.clear();
            }
            other => anyhow::bail!("report.html: unknown placeholder {other:?}"),
        }
        out.write_all(&text).with_context(cannot)?;
        rest = after.get(end + 2..).unwrap_or_default();
    }
    out.write_all(rest.as_bytes()).with_context(cannot)?;
    out.flush().with_context(cannot)
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

/// Opens a file in the default browser (the desktop's handler for .html).
fn open_in_browser(path: &Path) -> anyhow::Result<()> {
    let mut command = if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/c", "start", ""]);
        c
    } else if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else {
        std::process::Command::new("xdg-open")
    };
    let status = command.arg(path).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => anyhow::bail!("{command:?} ended with {s}; the report is at {}", path.display()),
        Err(e) => anyhow::bail!("cannot run {command:?}: {e}; the report is at {}", path.display()),
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
        let path = std::env::temp_dir().join(format!("nettrail-view-{}.html", std::process::id()));
        write_page(&path, "t<>", data.as_bytes()).unwrap();
        let page = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
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
