//! `nettrail dump`: every event in time order, decoded, as JSON lines,
//! Windows event XML, CSV or text lines.
//!
//! Events are taken from the merge in batches; each batch is decoded and
//! formatted in parallel chunks (each into its own reused buffer), then the
//! chunks are written in order. Damage is reported after every good event.

mod csv;
mod filter;
mod jsonl;
mod text;
mod view;
mod xml;

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use nettrail_decode::{EventNames, Schemas, Value};
use nettrail_etl::{Clock, Error, EventRef, EventStream, Guid, UtcText};
use rayon::prelude::*;

use self::filter::{Filter, TimeBound};
use self::text::TextField;
use self::view::View;
use crate::{Outcome, json};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Fields of `--format text`, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = text::DEFAULT_FIELDS.to_vec())]
    fields: Vec<TextField>,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
    /// Only events of this provider: a GUID or a name (repeatable).
    #[arg(long, value_name = "NAME|GUID")]
    provider: Vec<String>,
    /// Only events with this event id (repeatable).
    #[arg(long)]
    id: Vec<u16>,
    /// Only events of this process id, as the event header gives it (repeatable).
    #[arg(long)]
    pid: Vec<u32>,
    /// Only events at or after this time: UTC (2012-06-19T20:34:00Z) or seconds from the start (+12.5).
    #[arg(long, allow_hyphen_values = true)]
    since: Option<TimeBound>,
    /// Only events at or before this time (same forms as --since).
    #[arg(long, allow_hyphen_values = true)]
    until: Option<TimeBound>,
    /// Only the events of one activity: those with this activity id or related activity id.
    #[arg(long, value_name = "GUID")]
    activity: Option<Guid>,
    /// Stop after this many events.
    #[arg(long)]
    limit: Option<u64>,
    /// Do not decode: only each record's own fields (fastest; to look at
    /// events as stored).
    #[arg(long)]
    raw: bool,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// One JSON object per event: raw fields, names, message, typed properties.
    Jsonl,
    /// The Windows event schema, as tracerpt writes it.
    Xml,
    /// Fixed columns, then name=value properties (RFC 4180).
    Csv,
    /// One comma-separated line per event with the --fields chosen.
    Text,
}

/// Events taken from the merge at a time, and decoded per parallel task.
const BATCH: usize = 32 * 1024;
const CHUNK: usize = 2048;

/// What every chunk of one run reads.
struct Run<'r> {
    schemas: &'r Schemas,
    /// Stacks and modules (JSON lines only).
    code: Option<&'r nettrail_stacks::Code>,
    /// Function names for the stacks' frames.
    pdbs: &'r crate::symbols::Pdbs,
    /// Each stored stack's JSON text, made the first time an event needs it.
    stack_texts: Option<&'r [std::sync::OnceLock<String>]>,
    args: &'r Args,
    filter: &'r Filter,
    clock: &'r Clock,
}

/// Decodes and formats one chunk into `text`; returns the events written
/// and the damage met.
fn format_chunk(
    stream: &EventStream<'_, '_>,
    items: &[Result<EventRef, Error>],
    run: &Run<'_>,
    text: &mut Vec<u8>,
) -> (u64, Vec<Error>) {
    let Run { schemas, code, pdbs, stack_texts: code_text, args, filter, clock } = *run;
    text.clear();
    let mut count = 0;
    let mut damage = Vec::new();
    let mut values: Vec<Value<'_>> = Vec::new();
    let mut cache = nettrail_decode::LookupCache::default();
    let mut utc = UtcText::default();
    let mut provider_fields = None;
    let mut line = String::new();
    let mut cursor = code.map(|c| c.stacks.cursor());
    for item in items {
        let r = match item {
            Ok(r) => r,
            Err(e) => {
                damage.push(e.clone());
                continue;
            }
        };
        let Some(event) = stream.event(*r) else { continue };
        let filetime = clock.to_filetime(event.timestamp);
        let decoded = if args.raw {
            values.clear();
            Err(nettrail_decode::Undecoded::NotDecoded)
        } else {
            schemas.decode_cached(&mut cache, &event.record, &mut values)
        };
        if decoded.is_err() {
            values.clear();
        }
        let names = EventNames::of(&event.record, decoded.as_ref().ok().copied());
        if !filter.accepts(&event, names.provider.as_deref(), filetime) {
            continue;
        }
        let stack = code.zip(cursor.as_mut()).and_then(|(c, cursor)| {
            // Kernel records without a thread in their header name it in their payload.
            let thread = event.thread_id.or_else(|| {
                let fields = decoded.as_ref().ok()?.fields.as_slice();
                let i = fields.iter().position(|f| f.name == "ThreadId")?;
                values.get(i)?.as_u64().map(|t| t as u32)
            });
            let stack = cursor.of_record_on(&event.record, thread)?;
            let render = || {
                let frames = nettrail_stacks::Frames { modules: &c.modules, symbols: pdbs };
                let pid = stack.pid.or(event.process_id).unwrap_or(0);
                let mut text = Vec::new();
                json::string_array(&mut text, &frames.stack(pid, &stack.frames, event.timestamp));
                String::from_utf8(text).unwrap_or_default()
            };
            // Stacks repeat: each stored one is rendered once.
            Some(match stack.id.and_then(|id| code_text.and_then(|t| t.get(id as usize))) {
                Some(cell) => std::borrow::Cow::Borrowed(cell.get_or_init(render).as_str()),
                None => std::borrow::Cow::Owned(render()),
            })
        });
        let view =
            View { event: &event, schema: decoded.as_ref().copied(), values: &values, names: &names, filetime, stack };
        match args.format {
            Format::Jsonl => jsonl::write(text, &view, args.raw, &mut utc, &mut provider_fields),
            Format::Xml | Format::Csv | Format::Text => {
                line.clear();
                match args.format {
                    Format::Xml => xml::write(&mut line, &view),
                    Format::Csv => csv::write(&mut line, &view),
                    _ => text::write(&mut line, &view, &args.fields),
                }
                text.extend_from_slice(line.as_bytes());
            }
        }
        count += 1;
    }
    (count, damage)
}

/// The first `n` events of a chunk's text (each ends its last line with `end`).
fn first_events<'t>(text: &'t [u8], n: u64, end: &[u8]) -> &'t [u8] {
    let mut seen = 0;
    let mut at = 0;
    while let Some(i) = text.get(at..).and_then(|rest| rest.windows(end.len()).position(|w| w == end)) {
        at += i + end.len();
        seen += 1;
        if seen == n {
            return &text[..at];
        }
    }
    text
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let trace = crate::parse(&args.trace, &file)?;
    let schemas =
        if args.raw { Schemas::new() } else { crate::schemas::for_trace(&args.trace, &trace, &args.manifest)? };
    let clock = *trace.clock();
    // Stacks need a pass of their own (they are joined to events by time and
    // thread, their frames resolved through the modules loaded then).
    let code = (!args.raw && args.format == Format::Jsonl).then(|| nettrail_stacks::scan(&trace, &schemas, &|_| true));
    // Each stored stack's JSON text, made the first time an event needs it.
    let stack_texts: Option<Vec<std::sync::OnceLock<String>>> =
        code.as_ref().map(|c| (0..c.stacks.counts().0).map(|_| std::sync::OnceLock::new()).collect());
    let filter = Filter::new(
        &args.provider,
        &args.id,
        &args.pid,
        args.since,
        args.until,
        args.activity,
        trace.header().start_time,
    );
    // Chunks are larger than this buffer, so they go to stdout without a copy.
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    match args.format {
        Format::Xml => out.write_all(xml::HEADER.as_bytes())?,
        Format::Csv => out.write_all(csv::HEADER.as_bytes())?,
        _ => {}
    }
    // An event's output ends with this; `--limit` cuts after the n-th.
    let event_end: &[u8] = match args.format {
        Format::Xml => b"</Event>\n",
        Format::Csv => b"\r\n",
        _ => b"\n",
    };
    // Progress is measured in time: how far the merge clock has come.
    let first = trace.header_timestamp();
    let last = trace.buffers().iter().filter_map(|b| b.first_timestamp).max().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("dumping", last.saturating_sub(first), quiet);
    let mut remaining = args.limit.unwrap_or(u64::MAX);
    let mut damage = Vec::new();
    let pdbs = crate::symbols::Pdbs::new(&args.symbols);
    let run = Run {
        schemas: &schemas,
        code: code.as_ref(),
        pdbs: &pdbs,
        stack_texts: stack_texts.as_deref(),
        args,
        filter: &filter,
        clock: &clock,
    };
    let mut stream = trace.events();
    let mut batch = Vec::with_capacity(BATCH);
    let mut texts: Vec<Vec<u8>> = (0..BATCH.div_ceil(CHUNK)).map(|_| Vec::with_capacity(CHUNK * 512)).collect();
    while remaining > 0 {
        batch.clear();
        stream.next_batch(BATCH, &mut batch);
        if batch.is_empty() {
            break;
        }
        let results: Vec<(u64, Vec<Error>)> = batch
            .par_chunks(CHUNK)
            .zip(texts.par_iter_mut())
            .map(|(items, text)| format_chunk(&stream, items, &run, text))
            .collect();
        for ((count, errors), text) in results.into_iter().zip(&texts) {
            damage.extend(errors);
            if remaining == 0 {
                continue;
            }
            if count >= remaining {
                out.write_all(first_events(text, remaining, event_end))?;
                remaining = 0;
            } else {
                out.write_all(text)?;
                remaining -= count;
            }
        }
        if let Some(Ok(r)) = batch.last() {
            progress.update(r.timestamp.saturating_sub(first));
        }
    }
    if args.format == Format::Xml {
        out.write_all(xml::FOOTER.as_bytes())?;
    }
    out.flush()?;
    pdbs.summary();
    crate::report_reordered(&args.trace, stream.reordered());
    crate::report_damage(&args.trace, &damage);
    Ok(if damage.is_empty() { Outcome::Complete } else { Outcome::Damaged })
}
