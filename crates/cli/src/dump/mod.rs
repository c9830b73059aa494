//! `nettrail dump`: every event in time order, one JSON object per line.
//!
//! Events are taken from the merge in batches and formatted in parallel
//! (each chunk into its own buffer), then written in order.

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use nettrail_etl::extended::{ExtType, provider_traits_name};
use nettrail_etl::{Clock, Error, Event, EventRef, FileTime, Guid, UtcText, well_known};
use rayon::prelude::*;

use crate::{Outcome, json};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Jsonl)]
    format: Format,
    /// Only events of this provider: a GUID or a name (repeatable).
    #[arg(long, value_name = "NAME|GUID")]
    provider: Vec<String>,
    /// Only events of this process id, as the event header gives it (repeatable).
    #[arg(long)]
    pid: Vec<u32>,
    /// Stop after this many events.
    #[arg(long)]
    limit: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// One JSON object per event.
    Jsonl,
}

/// Events taken from the merge at a time, and formatted per parallel task.
const BATCH: usize = 32 * 1024;
const CHUNK: usize = 2048;

#[derive(Debug, Default)]
struct Filter {
    guids: Vec<Guid>,
    names: Vec<String>,
    pids: Vec<u32>,
}

impl Filter {
    fn new(args: &Args) -> Filter {
        let mut f = Filter { pids: args.pid.clone(), ..Filter::default() };
        for p in &args.provider {
            match p.parse::<Guid>() {
                Ok(g) => f.guids.push(g),
                Err(_) => f.names.push(p.to_ascii_lowercase()),
            }
        }
        f
    }

    fn accepts(&self, e: &Event<'_>, name: Option<&str>) -> bool {
        if !self.pids.is_empty() && !e.process_id.is_some_and(|pid| self.pids.contains(&pid)) {
            return false;
        }
        if self.guids.is_empty() && self.names.is_empty() {
            return true;
        }
        self.guids.contains(&e.provider)
            || name.is_some_and(|n| self.names.iter().any(|wanted| n.eq_ignore_ascii_case(wanted)))
    }
}

/// Per-chunk state. Events of one provider come in runs, so the last
/// provider's name and its rendered JSON fields are kept; so is the last
/// second's date text.
#[derive(Default)]
struct Formatter {
    last_provider: Option<(Guid, Option<&'static str>)>,
    /// `"provider_guid":…,"provider_name":…` for (GUID, name).
    provider_fields: Option<(Guid, Option<String>, Vec<u8>)>,
    utc: UtcText,
}

impl Formatter {
    /// The provider's name from the event itself (TraceLogging) or the built-in table.
    fn provider_name<'a>(&mut self, e: &Event<'a>) -> Option<&'a str> {
        if let Some(name) = e.extended.find(ExtType::PROV_TRAITS).and_then(|t| provider_traits_name(t.data)) {
            return Some(name);
        }
        match self.last_provider {
            Some((guid, name)) if guid == e.provider => name,
            _ => {
                let name = well_known::provider_name(&e.provider);
                self.last_provider = Some((e.provider, name));
                name
            }
        }
    }
}

fn write_event(out: &mut Vec<u8>, f: &mut Formatter, e: &Event<'_>, name: Option<&str>, clock: &Clock) {
    out.extend_from_slice(b"{\"timestamp\":");
    json::filetime(out, &mut f.utc, FileTime(clock.to_filetime(e.timestamp)));
    out.extend_from_slice(b",\"timestamp_raw\":");
    json::uint(out, e.timestamp);
    match &f.provider_fields {
        Some((guid, cached, fields)) if *guid == e.provider && cached.as_deref() == name => {
            out.extend_from_slice(fields);
        }
        _ => {
            let mut fields = Vec::with_capacity(100);
            fields.extend_from_slice(b",\"provider_guid\":");
            json::guid(&mut fields, &e.provider);
            fields.extend_from_slice(b",\"provider_name\":");
            match name {
                Some(n) => json::string(&mut fields, n),
                None => fields.extend_from_slice(b"null"),
            }
            out.extend_from_slice(&fields);
            f.provider_fields = Some((e.provider, name.map(str::to_owned), fields));
        }
    }
    out.extend_from_slice(b",\"kind\":\"");
    out.extend_from_slice(e.kind.name().as_bytes());
    out.extend_from_slice(b"\",\"id\":");
    json::uint(out, e.id);
    out.extend_from_slice(b",\"version\":");
    json::uint(out, e.version);
    out.extend_from_slice(b",\"opcode\":");
    json::uint(out, e.opcode);
    out.extend_from_slice(b",\"task\":");
    json::uint(out, e.task);
    out.extend_from_slice(b",\"level\":");
    json::uint(out, e.level);
    out.extend_from_slice(b",\"channel\":");
    json::uint(out, e.channel);
    out.extend_from_slice(b",\"keywords\":");
    json::hex(out, e.keywords);
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
    out.extend_from_slice(b"}\n");
}

/// Formats a chunk of the merged stream into `text` (cleared first); returns
/// the number of events written and the damage met.
fn format_chunk(
    stream: &nettrail_etl::EventStream<'_, '_>,
    items: &[Result<EventRef, Error>],
    filter: &Filter,
    clock: &Clock,
    text: &mut Vec<u8>,
) -> (u64, Vec<Error>) {
    text.clear();
    let mut count = 0;
    let mut damage = Vec::new();
    let mut formatter = Formatter::default();
    for item in items {
        match item {
            Ok(r) => {
                let Some(event) = stream.event(*r) else { continue };
                let name = formatter.provider_name(&event);
                if filter.accepts(&event, name) {
                    write_event(text, &mut formatter, &event, name, clock);
                    count += 1;
                }
            }
            Err(e) => damage.push(e.clone()),
        }
    }
    (count, damage)
}

/// The first `n` lines of `text`.
fn first_lines(text: &[u8], n: u64) -> &[u8] {
    let mut seen = 0;
    for (i, &b) in text.iter().enumerate() {
        if b == b'\n' {
            seen += 1;
            if seen == n {
                return &text[..=i];
            }
        }
    }
    text
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let trace = crate::parse(&args.trace, &file)?;
    let filter = Filter::new(args);
    let clock = *trace.clock();
    // Chunks are larger than this buffer, so they go to stdout without a copy.
    let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stdout().lock());
    // Progress is measured in time: how far the merge clock has come.
    let first = trace.header_timestamp();
    let last = trace.buffers().iter().filter_map(|b| b.first_timestamp).max().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("dumping", last.saturating_sub(first), quiet);
    let mut remaining = args.limit.unwrap_or(u64::MAX);
    // Damage is reported after every good event, so nothing printed after
    // the message is news from before it.
    let mut damage = Vec::new();
    let mut stream = trace.events();
    let mut batch = Vec::with_capacity(BATCH);
    // One text buffer per chunk, reused batch after batch.
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
            .map(|(items, text)| format_chunk(&stream, items, &filter, &clock, text))
            .collect();
        for ((count, errors), text) in results.into_iter().zip(&texts) {
            damage.extend(errors);
            if remaining == 0 {
                continue;
            }
            if count >= remaining {
                out.write_all(first_lines(text, remaining))?;
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
    out.flush()?;
    for e in &damage {
        crate::report_damage(&args.trace, e);
    }
    Ok(if damage.is_empty() { Outcome::Complete } else { Outcome::Damaged })
}
