//! `nettrail dump`: every event in time order, decoded, as JSON lines,
//! Windows event XML, CSV or text lines (`nettrail_export::events` formats
//! them, on every core); damage is reported after every good event.

use std::io::Write;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use nettrail_decode::Schemas;
use nettrail_etl::{Batching, Guid};
use nettrail_export::events::{Filter, Format, Formatter, Options, TextField, TimeBound, first_events};

use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Fields of `--format text`, comma-separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "timestamp,providername,taskname,opcodename,pid,tid,properties"
    )]
    fields: Vec<TextField>,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
    /// Only events of this provider: a GUID or a name, `Microsoft-Windows-` optional (repeatable).
    #[arg(long, value_name = "NAME|GUID")]
    provider: Vec<String>,
    /// Only events with this event id (repeatable).
    #[arg(long)]
    id: Vec<u16>,
    /// Only events of this process id, as the event header gives it (repeatable).
    #[arg(long)]
    pid: Vec<u32>,
    /// Only events at or after this time: RFC 3339 (2012-06-19T20:34:00Z,
    /// 2012-06-19T22:34:00+02:00), `2012-06-19 20:34:00` (UTC), or seconds
    /// from the start (+12.5).
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

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let trace = crate::parse(&args.trace, &file)?;
    let schemas =
        if args.raw { Schemas::new() } else { crate::schemas::for_trace(&args.trace, &trace, &args.manifest)? };
    let clock = *trace.clock();
    // Stacks need a pass of their own (they are joined to events by time and
    // thread, their frames resolved through the modules loaded then).
    let code = (!args.raw && args.format == Format::Jsonl).then(|| nettrail_stacks::scan(&trace, &schemas, &|_| true));
    let filter = Filter::new(
        &args.provider,
        &args.id,
        &args.pid,
        args.since,
        args.until,
        args.activity,
        trace.header().start_time,
    );
    let options = Options { format: args.format, fields: args.fields.clone(), raw: args.raw, filter };
    let pdbs = crate::symbols::Pdbs::new(&args.symbols);
    let formatter = Formatter::new(&schemas, &clock, &options, code.as_ref().map(|c| (c, &pdbs)));
    // Chunks are larger than this buffer, so they go to stdout without a copy.
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    out.write_all(args.format.header().as_bytes())?;
    // Progress is measured in time: how far the merge clock has come.
    let first = trace.header_timestamp();
    let last = trace.last_buffer_start().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("dumping", last.saturating_sub(first), quiet);
    let mut remaining = args.limit.unwrap_or(u64::MAX);
    let mut events = 0u64;
    let mut written = Ok(());
    // A chunk's text is sized by the bytes an event took in the chunks
    // before (a JSON line is 100 bytes to kilobytes): grown from a guess,
    // it was copied over and over as it doubled.
    let bytes_per_event = AtomicUsize::new(256);
    // Texts written go back for the chunks of the next batch: a fresh one
    // for each chunk was fresh memory, as the allocator handed the texts
    // freed on this thread back to the system (a page fault for every 4 KiB
    // of output). As many are kept as one batch has chunks.
    let batching = Batching::default();
    let keep = batching.batch.div_ceil(batching.chunk);
    let spare = Mutex::new(Vec::<Vec<u8>>::with_capacity(keep));
    let spares = || spare.lock().unwrap_or_else(PoisonError::into_inner);
    let driven = nettrail_etl::drive(
        &trace,
        batching,
        |chunk| {
            let events = chunk.len();
            let mut text = spares().pop().unwrap_or_default();
            text.clear();
            text.reserve(events * (bytes_per_event.load(Ordering::Relaxed) + 64));
            let count = formatter.chunk(chunk, &mut text);
            if let Some(per_event) = text.len().checked_div(events) {
                bytes_per_event.store(per_event, Ordering::Relaxed);
            }
            (count, text)
        },
        |(count, text)| {
            events += count.min(remaining);
            let result = if count >= remaining {
                let cut = first_events(&text, remaining, args.format.event_end());
                remaining = 0;
                out.write_all(cut)
            } else {
                remaining -= count;
                out.write_all(&text)
            };
            if let Err(e) = result {
                written = Err(e);
                return ControlFlow::Break(());
            }
            let mut spares = spares();
            if spares.len() < keep {
                spares.push(text);
            }
            if remaining == 0 { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        },
        |ts| progress.update(ts.saturating_sub(first)),
    );
    progress.finish();
    written?;
    out.write_all(args.format.footer().as_bytes())?;
    out.flush()?;
    pdbs.summary();
    if events == 0 && !args.provider.is_empty() {
        explain_no_provider(&args.provider, &trace);
    }
    crate::report_reordered(&args.trace, driven.reordered);
    crate::report_damage(&args.trace, &driven.damage);
    Ok(if driven.damage.is_empty() { Outcome::Complete } else { Outcome::Damaged })
}

/// `--provider` matched nothing: say which providers the trace has.
fn explain_no_provider(wanted: &[String], trace: &nettrail_etl::Trace<'_>) {
    let summary = nettrail_etl::Summary::compute(trace);
    let have: Vec<String> = summary
        .providers
        .iter()
        .map(|p| format!("{} ({})", p.name.as_deref().unwrap_or(&p.guid.to_string()), p.events))
        .collect();
    let names = summary.providers.iter().filter_map(|p| p.name.as_deref()).collect::<Vec<_>>();
    let missing: Vec<&str> = wanted
        .iter()
        .filter(|w| !names.iter().any(|n| n.eq_ignore_ascii_case(w)))
        .filter(|w| !summary.providers.iter().any(|p| w.parse::<Guid>().is_ok_and(|g| g == p.guid)))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        say!("no events of {}; the trace's providers are: {}", missing.join(", "), have.join(", "));
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[derive(clap::Parser)]
    struct Dump {
        #[command(flatten)]
        args: super::Args,
    }

    #[test]
    fn the_default_fields_are_the_libraries() {
        let dump = Dump::try_parse_from(["dump", "trace.etl"]).unwrap();
        assert_eq!(dump.args.fields, nettrail_export::events::DEFAULT_FIELDS);
        let chosen = Dump::try_parse_from(["dump", "trace.etl", "--fields", "eventid,pid"]).unwrap();
        assert_eq!(chosen.args.fields, [super::TextField::Eventid, super::TextField::Pid]);
    }
}
