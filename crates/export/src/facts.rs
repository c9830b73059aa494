//! The facts of a trace — the session, its clock and time span, providers
//! with event counts and what decodes, record kinds, stacks and modules,
//! lost and damaged data, notes — as one JSON document (`nettrail info
//! --format json`, the report's facts, `Trace.info()` in Python) and as the
//! text `nettrail info` prints.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use nettrail_decode::fasthash::FastSet;
use nettrail_decode::{Coverage, CoverageCounter, LookupCache, MetadataLearner, MetadataRecord, Schemas};
use nettrail_etl::buffer::BUFFER_HEADER_SIZE;
use nettrail_etl::{BufferInfo, BufferRecords, BufferSummary, FileTime, Guid, Note, Record, Releaser, Summary, Trace};
use nettrail_stacks::{BufferScan, Code, CodeJoin, FrameTable, MethodCounts};
use rayon::prelude::*;
use serde_json::{Value, json};

/// The facts of a trace: the JSON document, and the stacks and modules
/// counted on the way (the report stitches stacks with them).
#[derive(Debug)]
pub struct Facts {
    pub document: Value,
    pub summary: Summary,
    pub code: Code,
}

impl Facts {
    /// Reads every record once (in parallel) for the counts, what decodes,
    /// and the stacks and modules. `path` names the file in the document;
    /// `schemas` has learnt the trace's own metadata.
    pub fn of(path: &std::path::Path, trace: &Trace<'_>, schemas: &Schemas) -> Facts {
        let (summary, coverage, code) = count(trace, schemas, true);
        Facts::gather(path, trace, schemas, summary, coverage, code)
    }

    /// [`Facts::of`] for the document alone (`nettrail info`), learning the
    /// trace's own metadata (embedded TRACE_EVENT_INFO, EventSource
    /// manifests) into `schemas` on the way; returns what of it could not
    /// be read. Modules and methods are counted without reading their paths
    /// and names, which the document does not show (a third of the work on a
    /// PerfView trace's CLR method events).
    ///
    /// A trace of under 1 GiB of buffers ([`Reading::DEFAULT`]) is read
    /// once: counted with the schemas known before its metadata, while the
    /// metadata is gathered; a compressed buffer's EVENT_HEADER records (the
    /// only ones such metadata describes) are copied instead, up to a
    /// budget, and counted from the copy at the end. Then the other
    /// EVENT_HEADER records of the providers the metadata describes are
    /// counted again, in the buffers that hold them, and their counts
    /// replace the first ones. The search for metadata was a second walk of
    /// every buffer (a second decompression of a compressed one): figures in
    /// docs/performance.md, tenth pass.
    pub fn counted(path: &std::path::Path, trace: &Trace<'_>, schemas: &mut Schemas) -> (Facts, Vec<String>) {
        Facts::counted_reading(path, trace, schemas, Reading::DEFAULT)
    }

    /// [`Facts::counted`], reading the trace as `reading` says.
    pub fn counted_reading(
        path: &std::path::Path,
        trace: &Trace<'_>,
        schemas: &mut Schemas,
        reading: Reading,
    ) -> (Facts, Vec<String>) {
        let (counts, problems) = if reads_once(trace, reading.once_below) {
            count_learning(trace, schemas, reading.copies_up_to)
        } else {
            let problems = schemas.learn(trace);
            (count(trace, schemas, false), problems)
        };
        let (summary, coverage, code) = counts;
        (Facts::gather(path, trace, schemas, summary, coverage, code), problems)
    }

    fn gather(
        path: &std::path::Path,
        trace: &Trace<'_>,
        schemas: &Schemas,
        summary: Summary,
        coverage: Coverage,
        code: Code,
    ) -> Facts {
        let mut document = report(path, trace, &summary, &coverage, schemas);
        add_code(&mut document, &summary, &code);
        Facts { document, summary, code }
    }

    /// Damage met, in file order.
    pub fn damage(&self) -> &[nettrail_etl::Error] {
        &self.summary.errors
    }
}

/// How [`Facts::counted`] reads a trace; the tests and the fuzz target
/// compare the ways.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    /// Bytes of buffers (their number times their size, 64 KiB at least)
    /// below which a trace is read once (0: learnt first, then counted).
    pub once_below: u64,
    /// Bytes of compressed buffers' EVENT_HEADER records copied at most
    /// (the records of the buffers past it are counted as the others are,
    /// and those counted again are decompressed again).
    pub copies_up_to: usize,
}

impl Reading {
    /// Once below 1 GiB of buffers (what is kept of each buffer to count
    /// again, ~100 bytes, stays small), with 64 MiB of copies.
    pub const DEFAULT: Reading = Reading { once_below: 1 << 30, copies_up_to: 64 << 20 };
    /// The metadata learnt first, then every record counted.
    pub const TWICE: Reading = Reading { once_below: 0, copies_up_to: 0 };
}

/// Whether a trace's buffers, counted at 64 KiB at least each, come to
/// fewer than `once_below` bytes. Told from the number of buffers, not their
/// headers: reading every header maps every page of the file (a page fault
/// maps 64 KiB). The floor bounds what the single pass keeps per buffer
/// however small a trace's buffers are, or its header says they are: 16 384
/// buffers below 1 GiB.
fn reads_once(trace: &Trace<'_>, once_below: u64) -> bool {
    let each = u64::from(trace.header().buffer_size).max(64 << 10);
    (trace.buffers().len() as u64).saturating_mul(each) < once_below
}

/// What one pass over the buffers leaves before its results are put together.
struct Pass {
    /// Each run's summary and coverage, folded together at the end.
    summaries: Vec<BufferSummary>,
    counters: Vec<CoverageCounter>,
    join: CodeJoin,
    /// For a pass that learns: the buffers holding EVENT_HEADER records, in
    /// file order, and the trace's metadata.
    revisits: Vec<Revisit>,
    learner: MetadataLearner,
}

/// What a pass that learns the trace's metadata keeps of a buffer that
/// holds EVENT_HEADER records, to count those of some providers again.
struct Revisit {
    info: BufferInfo,
    /// The providers of its EVENT_HEADER records, each once; emptied for
    /// a buffer of more than [`Revisit::PROVIDERS`], which is read again
    /// whatever the metadata describes.
    providers: Vec<Guid>,
    many: bool,
    /// A compressed buffer's EVENT_HEADER records as they lay, after a
    /// buffer header's room: read again without decompressing the buffer.
    copy: Option<Vec<u8>>,
    /// Where the first pass's walk of the buffer ended (at damage, the bad
    /// record): a search reads no further, though it might frame more.
    end: usize,
}

/// What reading one buffer gives [`read`].
struct BufferCount<'s> {
    summary: BufferSummary,
    coverage: CoverageCounter,
    scan: BufferScan<'s>,
    revisit: Option<Revisit>,
    metadata: Vec<MetadataRecord>,
}

/// The summary, what decodes, and the stacks and modules, from one parallel
/// pass over the buffers: reading the records is most of the cost, so they
/// are read once for all three.
fn count(trace: &Trace<'_>, schemas: &Schemas, names: bool) -> (Summary, Coverage, Code) {
    let shared = FrameTable::default();
    let Pass { summaries, counters, join, .. } = read(trace, schemas, &shared, names, None);
    let (code, (summary, coverage)) = rayon::join(
        || join.finish(&shared, trace.pointer_size()),
        || (Summary::from_buffers(trace, summaries), Coverage::from_counters(counters)),
    );
    (summary, coverage, code)
}

/// One pass that counts with the schemas known without the trace's
/// metadata and gathers that metadata, then counts what it set aside
/// (compressed buffers' EVENT_HEADER records, from their copies) and, again,
/// the events of the providers the metadata describes ([`Facts::counted`]).
fn count_learning(
    trace: &Trace<'_>,
    schemas: &mut Schemas,
    copies_up_to: usize,
) -> ((Summary, Coverage, Code), Vec<String>) {
    schemas.set_build(Some(trace.header().build));
    let shared = FrameTable::default();
    let Pass { summaries, mut counters, mut join, revisits, learner } =
        read(trace, schemas, &shared, false, Some(copies_up_to));
    let problems = learner.finish(schemas, trace.header().build);
    let (described, classic) = schemas.learned_providers();
    for provider in &described {
        join.forget_methods(provider);
    }
    let schemas = &*schemas;
    // The stacks and modules are joined while the rest is counted.
    let (mut code, (summary, coverage, methods)) = rayon::join(
        || join.finish(&shared, trace.pointer_size()),
        || {
            let summary = Summary::from_buffers(trace, summaries);
            for counter in &mut counters {
                counter.forget(|guid| described.contains(guid));
            }
            let (again, methods) = recount(trace, schemas, &revisits, &described);
            counters.extend(again);
            (summary, Coverage::from_counters(counters), methods)
        },
    );
    // Only EVENT_HEADER records are counted again: metadata for a classic
    // event class, or for a provider that logs classic records too, has the
    // trace counted again whole (no corpus trace has either).
    let beyond_event_headers =
        summary.providers.iter().any(|p| described.contains(&p.guid) && p.kinds.iter().any(|k| !k.is_event_header()));
    if classic || beyond_event_headers {
        return (count(trace, schemas, false), problems);
    }
    code.add_methods(methods);
    ((summary, coverage, code), problems)
}

/// Buffers counted again between two hand-backs of their pages.
const RECOUNT_RUN: usize = 64;

/// What the first pass of [`count_learning`] left to count: every record of
/// the copies it made, and in the other buffers the EVENT_HEADER records of
/// the `described` providers. What decodes, by buffer, and the method loads.
fn recount(
    trace: &Trace<'_>,
    schemas: &Schemas,
    revisits: &[Revisit],
    described: &FastSet<Guid>,
) -> (Vec<CoverageCounter>, MethodCounts) {
    let wanted: Vec<&Revisit> = revisits
        .iter()
        .filter(|revisit| {
            revisit.copy.is_some() || revisit.many || revisit.providers.iter().any(|guid| described.contains(guid))
        })
        .collect();
    // The buffers read from the file are handed back a few at a time, as
    // the first pass handed its runs back.
    let mut releaser = Releaser::new(trace);
    let (mut counters, mut methods) = (Vec::with_capacity(wanted.len()), MethodCounts::default());
    for some in wanted.chunks(RECOUNT_RUN) {
        let counted = some
            .par_iter()
            .map_init(
                || (Vec::new(), LookupCache::default()),
                |(scratch, cache), revisit| recount_buffer(trace, schemas, revisit, described, scratch, cache),
            )
            .collect::<Vec<_>>();
        for (counter, of_buffer) in counted {
            counters.push(counter);
            methods = methods.plus(of_buffer);
        }
        for revisit in some.iter().filter(|revisit| revisit.copy.is_none()) {
            releaser.done(&revisit.info);
        }
    }
    (counters, methods)
}

/// [`recount`] of one buffer: from its copy, every record; else, from the
/// buffer, the EVENT_HEADER records of the `described` providers.
fn recount_buffer(
    trace: &Trace<'_>,
    schemas: &Schemas,
    revisit: &Revisit,
    described: &FastSet<Guid>,
    scratch: &mut Vec<u8>,
    cache: &mut LookupCache,
) -> (CoverageCounter, MethodCounts) {
    let every_process = |_| true;
    let mut coverage = CoverageCounter::default();
    // Stack parts are read again too, into a table of their own that is
    // dropped: the first pass counted them.
    let frames = FrameTable::default();
    let mut scan = BufferScan::counting(&every_process, &frames);
    let mut values = Vec::new();
    // A copy holds only records set aside, every one counted.
    let copied = revisit.copy.is_some();
    let wanted = |guid: &Guid| copied || described.contains(guid);
    let contents;
    let bytes = match &revisit.copy {
        Some(copy) => &copy[..],
        None => {
            contents = trace.contents(&revisit.info, scratch);
            contents.bytes.get(..revisit.end).unwrap_or(contents.bytes)
        }
    };
    let mut records = BufferRecords::new(bytes, &revisit.info, trace.pointer_size());
    while let Some(Ok((_, record))) = records.next_searched(false, |guid, _| wanted(guid)) {
        if !record.kind.is_event_header() || !wanted(&record.provider) {
            continue;
        }
        count_record(schemas, cache, &record, &mut values, &mut coverage, &mut scan, false);
    }
    (coverage, scan.methods_counted())
}

/// Counts one record: what decodes (the schema's source, or why not), and
/// its stack part or module or method fact. Only the stacks scan needs the
/// values, of a few kinds of record; counting (`names` false) needs the
/// fields before their names. Always inlined: it is the body of the loops
/// over a buffer's records.
#[inline(always)]
fn count_record<'a>(
    schemas: &Schemas,
    cache: &mut LookupCache,
    record: &Record<'a>,
    values: &mut Vec<nettrail_decode::Value<'a>>,
    coverage: &mut CoverageCounter,
    scan: &mut BufferScan<'_>,
    names: bool,
) {
    let decoded = if names && BufferScan::needs_decoding(record) {
        schemas.decode_cached(cache, record, values)
    } else {
        schemas.check_cached(cache, record, values)
    };
    coverage.count(record.provider, decoded.as_ref().map(|schema| schema.source));
    let read = match decoded {
        Ok(schema) if names => Some(schema),
        Ok(schema) => scan.decode_counted(schema, record, values).then_some(schema),
        Err(_) => None,
    };
    scan.add(record, read.map(|schema| (schema, &values[..])));
}

/// Reads every buffer, a run at a time: summaries, what decodes, stacks and
/// modules; for a pass that is `learning` (with room for so many bytes of
/// copies), also the trace's metadata and a
/// [`Revisit`] of each buffer with EVENT_HEADER records.
fn read(trace: &Trace<'_>, schemas: &Schemas, shared: &FrameTable, names: bool, learning: Option<usize>) -> Pass {
    let every_process = |_| true;
    // Buffers are read a run at a time, its pages handed back in one step
    // after it ([`Trace::buffer_runs`]); each buffer's scan goes to the join
    // in file order (which holds stack parts in bounded memory), not folded
    // into its neighbours': each fold copied the scans into fresh memory.
    let mut pass = Pass {
        summaries: Vec::new(),
        counters: Vec::new(),
        join: if names { CodeJoin::new() } else { CodeJoin::counting() },
        revisits: Vec::new(),
        learner: MetadataLearner::default(),
    };
    // What is left of the copies' room.
    let room = AtomicUsize::new(learning.unwrap_or(0));
    let mut releaser = Releaser::new(trace);
    for run in trace.buffer_runs(Trace::RUN_BYTES) {
        let buffers: Vec<BufferCount<'_>> = run
            .par_iter()
            .map_init(
                || (Vec::new(), LookupCache::default()),
                |(scratch, cache), info| {
                    let mut summary = BufferSummary::new(&info);
                    let mut coverage = CoverageCounter::default();
                    let mut scan = if names {
                        BufferScan::new(&every_process, shared)
                    } else {
                        BufferScan::counting(&every_process, shared)
                    };
                    let mut values = Vec::new();
                    let contents = trace.contents(&info, scratch);
                    let mut revisit = learning.map(|_| Revisit {
                        info,
                        providers: Vec::new(),
                        many: false,
                        end: 0,
                        copy: (info.header.is_compressed() && reserve(&room, contents.bytes.len())).then(|| {
                            let mut copy = Vec::with_capacity(contents.bytes.len());
                            copy.extend_from_slice(contents.bytes.get(..BUFFER_HEADER_SIZE).unwrap_or_default());
                            copy
                        }),
                    });
                    let deferred = revisit.as_ref().is_some_and(|revisit| revisit.copy.is_some());
                    let mut metadata = Vec::new();
                    for item in trace.records(&info, &contents) {
                        // Borrowed where the iterator left it: a record is
                        // 224 bytes, and moving it out was a tenth of this loop.
                        let (at, record) = match &item {
                            Ok((at, record)) => (*at, record),
                            Err(e) => {
                                summary.damaged(e.clone());
                                break;
                            }
                        };
                        summary.add(record);
                        if let Some(revisit) = &mut revisit {
                            revisit.see(record, at, contents.bytes, &mut metadata);
                            if deferred && record.kind.is_event_header() {
                                // Counted from the copy, once the trace's metadata is known.
                                scan.add(record, None);
                                continue;
                            }
                        }
                        count_record(schemas, cache, record, &mut values, &mut coverage, &mut scan, names);
                    }
                    if let Some(e) = contents.error {
                        summary.damaged(e);
                    }
                    scan.done();
                    if let Some(copy) = revisit.as_mut().and_then(|revisit| revisit.copy.as_mut()) {
                        // The room reserved and not taken goes back.
                        copy.shrink_to_fit();
                        room.fetch_add(contents.bytes.len() - copy.len(), Ordering::Relaxed);
                    }
                    let revisit = revisit.filter(|revisit| !revisit.providers.is_empty()).map(Revisit::done);
                    BufferCount { summary, coverage, scan, revisit, metadata }
                },
            )
            .collect();
        // The run's summaries and coverage folded into one each (one per
        // buffer of a 10 GB trace held ~200 MB).
        let mut folded: Option<(BufferSummary, CoverageCounter)> = None;
        for BufferCount { summary, coverage, scan, revisit, metadata } in buffers {
            folded = Some(match folded {
                Some((s, c)) => (s.merge(summary), c.merge(coverage)),
                None => (summary, coverage),
            });
            pass.join.add(scan);
            pass.revisits.extend(revisit);
            pass.learner.add_all(metadata);
        }
        if let Some((summary, counter)) = folded {
            pass.summaries.push(summary);
            pass.counters.push(counter);
        }
        releaser.done_all(run);
    }
    pass
}

/// Takes `bytes` of the copies' `room`, if it has that many left.
fn reserve(room: &AtomicUsize, bytes: usize) -> bool {
    room.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(bytes)).is_ok()
}

impl Revisit {
    /// Notes a record (at `at` in the buffer's `bytes`): where it ends, the
    /// metadata it carries, and an EVENT_HEADER record's provider, and a
    /// copy of it if the buffer is compressed. Not inlined: the loop that
    /// reads the records stays small enough for the record walk to be
    /// inlined into it (a tenth more time on diaghub.user_paged when it was
    /// not).
    #[inline(never)]
    fn see(&mut self, record: &Record<'_>, at: usize, bytes: &[u8], metadata: &mut Vec<MetadataRecord>) {
        // The record and its padding, as the walk steps over them.
        let span = (usize::from(record.size) + 7) & !7;
        self.end = at.saturating_add(span).min(bytes.len());
        metadata.extend(MetadataRecord::of(record));
        if !record.kind.is_event_header() {
            return;
        }
        if self.providers.last() != Some(&record.provider) {
            self.providers.push(record.provider);
        }
        if let Some(copy) = &mut self.copy {
            copy.extend_from_slice(bytes.get(at..self.end).unwrap_or_default());
        }
    }

    /// Providers listed of one buffer at most: a hostile trace of a
    /// provider per record would otherwise keep ~800 per 64 KiB buffer.
    const PROVIDERS: usize = 16;

    /// The buffer is read: each provider listed once, or none if many.
    fn done(mut self) -> Revisit {
        self.providers.sort_unstable();
        self.providers.dedup();
        if self.providers.len() > Revisit::PROVIDERS {
            self.providers = Vec::new();
            self.many = true;
        }
        self
    }
}

fn utc(ft: i64) -> String {
    FileTime(ft).to_string()
}

/// The facts, as the JSON document `--format json` prints (the text form is
/// rendered from it, so the two cannot disagree).
fn report(path: &std::path::Path, trace: &Trace<'_>, s: &Summary, coverage: &Coverage, schemas: &Schemas) -> Value {
    let h = trace.header();
    let clock = trace.clock();
    let first = s.first_timestamp.map(|t| clock.to_filetime(t));
    let last = s.last_timestamp.map(|t| clock.to_filetime(t));
    // A session that was not stopped cleanly has no end time: use its last event.
    let end = if h.end_time != 0 { Some(h.end_time) } else { last };
    let providers: Vec<Value> = s
        .providers
        .iter()
        .map(|p| {
            let c = coverage.providers.get(&p.guid).cloned().unwrap_or_default();
            json!({
                "guid": p.guid.to_string(),
                // The trace's own name (TraceLogging), else a manifest's
                // (EventSource manifests in the trace, --manifest), else ours.
                "name": p.name.clone().or_else(|| schemas.provider(&p.guid).map(|i| i.name.clone())),
                "events": p.events,
                "record_kinds": p.kinds.iter().map(|k| k.name()).collect::<Vec<_>>(),
                "tracelogging": p.tracelogging,
                "decoded": c.decoded.values().sum::<u64>(),
                "schema_sources": c.decoded.keys().map(|k| k.name()).collect::<Vec<_>>(),
                "undecoded": c.undecoded,
            })
        })
        .collect();
    let implausible: Vec<&str> = trace
        .notes()
        .iter()
        .filter_map(|n| match n {
            Note::ImplausibleHeaderField { field, .. } => Some(*field),
            _ => None,
        })
        .collect();
    let record_kinds: serde_json::Map<String, Value> =
        s.record_kinds.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect();
    let extended: serde_json::Map<String, Value> =
        s.extended_items.iter().map(|(k, n)| (k.name().to_string(), json!(n))).collect();
    let mut report = json!({
        "file": path.display().to_string(),
        "file_bytes": trace.data().len(),
        "events": s.events,
        "providers": providers,
        "record_kinds": record_kinds,
        "start_utc": utc(h.start_time),
        "end_utc": end.map(utc),
        "first_event_utc": first.map(utc),
        "last_event_utc": last.map(utc),
        "span_seconds": match (s.first_timestamp, s.last_timestamp) {
            (Some(a), Some(b)) => Some(clock.seconds_between(a, b)),
            _ => None,
        },
        "pointer_size": trace.pointer_size(),
        "build": h.build,
        "os_version": format!("{}.{}", h.os_version.0, h.os_version.1),
        "log_file_version": format!("{}.{}", h.layout_version.0, h.layout_version.1),
        "cpus": h.number_of_processors,
        "clock_type": h.clock_type,
        "clock": clock.clock_type.name(),
        "perf_freq": h.perf_freq,
        "timer_resolution_100ns": h.timer_resolution,
        "boot_utc": utc(h.boot_time),
        "time_zone": {
            "bias_minutes": h.time_zone_bias,
            "standard_name": h.time_zone_standard_name,
            "daylight_name": h.time_zone_daylight_name,
        },
        "buffer_size": h.buffer_size,
        "buffers": s.buffers,
        "compressed_buffers": s.compressed_buffers,
        "buffers_written": h.buffers_written,
        "stored_bytes": s.stored_bytes,
        "decompressed_bytes": s.logical_bytes,
        "unused_bytes": s.unused_bytes,
        "events_lost": h.events_lost,
        "buffers_lost": h.buffers_lost,
        "buffers_flagged_events_lost": s.buffers_flagged_events_lost,
        "buffers_flagged_buffer_lost": s.buffers_flagged_buffer_lost,
        "logger_name": h.logger_name,
        "log_file_name": h.log_file_name,
        "log_file_mode": format!("{:#x}", h.log_file_mode),
        "log_file_modes": h.log_file_mode_names(),
        "tracelogging_events": s.tracelogging_events,
        "decoded_events": coverage.decoded_events(),
        "undecoded_events": coverage.undecoded(),
        "extended_items": extended,
        "errors": s.errors.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
    });
    report["notes"] = json!(trace.notes().iter().map(|n| n.to_string()).collect::<Vec<_>>());
    // Where the tables' process names come from; none in a trace with
    // network events leaves them with process ids only.
    let naming: Vec<Value> = s
        .providers
        .iter()
        .filter(|p| nettrail_net::names_processes(&p.guid))
        .map(|p| json!(p.name.clone().or_else(|| schemas.provider(&p.guid).map(|i| i.name.clone()))))
        .collect();
    report["process_name_sources"] = json!(naming);
    report["network_events"] = json!(
        s.providers
            .iter()
            .filter(|p| nettrail_net::reads(&p.guid) && !nettrail_net::names_processes(&p.guid))
            .map(|p| p.events)
            .sum::<u64>()
    );
    report["implausible_header_fields"] = json!(implausible);
    report
}

/// Stacks and modules: how many events have a stack (joined StackWalk
/// records, or an extended data item), and what their addresses can resolve to.
fn add_code(report: &mut Value, s: &Summary, code: &Code) {
    let (distinct, joined) = code.stacks.counts();
    let in_items: u64 = s
        .extended_items
        .iter()
        .filter(|(k, _)| matches!(k.name(), "stack_trace32" | "stack_trace64" | "stack_key32" | "stack_key64"))
        .map(|(_, n)| *n)
        .sum();
    let (modules, methods) = code.modules.counts();
    if code.unread > 0
        && let Some(notes) = report["notes"].as_array_mut()
    {
        notes.push(json!(format!(
            "{} stack or module records could not be read back from a temporary file: they are not counted",
            code.unread
        )));
    }
    report["stacks"] = json!({
        "events": joined as u64 + in_items,
        "from_stack_walk": joined,
        "from_extended_data": in_items,
        "distinct_stack_walks": distinct,
    });
    report["modules"] = json!({
        "loads": modules,
        "with_pdb_identity": code.modules.with_pdbs(),
        "managed_methods": methods,
    });
}

/// The facts as `nettrail info` prints them (write through
/// [`nettrail_decode::safe_text::Visible`] for a terminal).
pub fn write_text(out: &mut impl Write, r: &Value) -> std::io::Result<()> {
    let implausible = |field: &str| {
        r["implausible_header_fields"].as_array().is_some_and(|f| f.iter().any(|v| v.as_str() == Some(field)))
    };
    // A header value no session has is shown flagged, never as a fact.
    let flagged = |field: &str, v: String| if implausible(field) { format!("{v} (implausible)") } else { v };
    let s = |k: &str| match &r[k] {
        Value::String(s) => s.clone(),
        Value::Null => "-".to_string(),
        v => v.to_string(),
    };
    let mb = r["file_bytes"].as_f64().unwrap_or(0.0) / 1e6;
    writeln!(out, "file          {} ({mb:.1} MB)", s("file"))?;
    writeln!(out, "logger        {} → {}", s("logger_name"), s("log_file_name"))?;
    writeln!(
        out,
        "mode          {} {}",
        s("log_file_mode"),
        r["log_file_modes"]
            .as_array()
            .map_or(String::new(), |m| { m.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ") })
    )?;
    writeln!(
        out,
        "windows       {} build {}, {} CPUs, {}-bit pointers{}, log file format {}",
        s("os_version"),
        s("build"),
        flagged("NumberOfProcessors", s("cpus")),
        r["pointer_size"].as_u64().unwrap_or(0) * 8,
        if implausible("PointerSize") { " (the header's value is implausible)" } else { "" },
        s("log_file_version")
    )?;
    writeln!(out, "clock         {} (type {}), {} ticks/s", s("clock"), s("clock_type"), s("perf_freq"))?;
    writeln!(out, "start         {}", s("start_utc"))?;
    writeln!(out, "end           {}", s("end_utc"))?;
    writeln!(
        out,
        "events        {} from {} to {} ({:.3} s)",
        s("events"),
        s("first_event_utc"),
        s("last_event_utc"),
        r["span_seconds"].as_f64().unwrap_or(0.0)
    )?;
    writeln!(
        out,
        "buffers       {} of {} bytes, {} compressed ({} bytes stored, {} filled, {} unused)",
        s("buffers"),
        flagged("BufferSize", s("buffer_size")),
        s("compressed_buffers"),
        s("stored_bytes"),
        s("decompressed_bytes"),
        s("unused_bytes")
    )?;
    writeln!(
        out,
        "lost          {} events, {} buffers (buffers flagged: {} with lost events, {} lost)",
        flagged("EventsLost", s("events_lost")),
        flagged("BuffersLost", s("buffers_lost")),
        s("buffers_flagged_events_lost"),
        s("buffers_flagged_buffer_lost")
    )?;
    let pairs = |v: &Value| -> String {
        v.as_object()
            .map_or(String::new(), |m| m.iter().map(|(k, n)| format!("{k} {n}")).collect::<Vec<_>>().join(", "))
    };
    writeln!(out, "record kinds  {}", pairs(&r["record_kinds"]))?;
    if r["extended_items"].as_object().is_some_and(|m| !m.is_empty()) {
        writeln!(out, "extended      {}", pairs(&r["extended_items"]))?;
    }
    writeln!(out, "tracelogging  {} events", s("tracelogging_events"))?;
    let (st, m) = (&r["stacks"], &r["modules"]);
    if st["events"].as_u64().is_some_and(|n| n > 0) {
        writeln!(
            out,
            "stacks        {} events ({} joined from StackWalk records, {} in extended data)",
            st["events"], st["from_stack_walk"], st["from_extended_data"]
        )?;
    }
    if m["loads"].as_u64().is_some_and(|n| n > 0) {
        writeln!(
            out,
            "modules       {} loads ({} with a PDB identity), {} managed methods",
            m["loads"], m["with_pdb_identity"], m["managed_methods"]
        )?;
    }
    let undecoded = pairs(&r["undecoded_events"]);
    writeln!(
        out,
        "decoded       {} events{}",
        s("decoded_events"),
        if undecoded.is_empty() { String::new() } else { format!("; not decoded: {undecoded}") }
    )?;
    for note in r["notes"].as_array().into_iter().flatten() {
        writeln!(out, "note          {}", note.as_str().unwrap_or_default())?;
    }
    let naming: Vec<&str> =
        r["process_name_sources"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    if r["network_events"].as_u64().is_some_and(|n| n > 0) {
        match naming.is_empty() {
            true => writeln!(
                out,
                "processes     no names: no process, Kernel-Process or image-load events; the tables show process ids only"
            )?,
            false => writeln!(out, "processes     named by {}", naming.join(", "))?,
        }
    }
    for error in r["errors"].as_array().into_iter().flatten() {
        writeln!(out, "DAMAGE        {}", error.as_str().unwrap_or_default())?;
    }
    writeln!(out)?;
    writeln!(out, "{:>9}  {:>9}  {:36}  provider", "events", "decoded", "guid")?;
    for p in r["providers"].as_array().into_iter().flatten() {
        let kinds = p["record_kinds"]
            .as_array()
            .map_or(String::new(), |k| k.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(","));
        writeln!(
            out,
            "{:>9}  {:>9}  {}  {} [{kinds}]",
            p["events"].as_u64().unwrap_or(0),
            p["decoded"].as_u64().unwrap_or(0),
            p["guid"].as_str().unwrap_or_default(),
            p["name"].as_str().unwrap_or("(unknown)")
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use nettrail_decode::Schemas;
    use nettrail_etl::{Trace, TraceFile};

    use super::{Facts, Reading};

    /// Reading a trace once (counting with the schemas known before its
    /// metadata, then counting again what the metadata describes) gives the
    /// facts that learning first and counting after gives, on every corpus
    /// trace: providers the metadata describes (net.4.5.2: ten, among them
    /// the runtime's, whose method loads are counted; diaghub.user_paged:
    /// EventSource manifests), compressed and damaged traces.
    #[test]
    fn one_pass_counts_what_two_passes_count() {
        let mut compared = 0;
        for path in nettrail_testkit::corpus_traces() {
            let Ok(file) = TraceFile::open(&path) else { continue };
            let Ok(trace) = Trace::open(&file) else { continue };
            let (twice, twice_problems) = Facts::counted_reading(&path, &trace, &mut Schemas::new(), Reading::TWICE);
            // Copies of every compressed buffer's records, of some, of none.
            for copies_up_to in [usize::MAX, 200_000, 0] {
                let reading = Reading { once_below: u64::MAX, copies_up_to };
                let (once, once_problems) = Facts::counted_reading(&path, &trace, &mut Schemas::new(), reading);
                assert_eq!(once.document, twice.document, "{} {reading:?}", path.display());
                assert_eq!(once_problems, twice_problems, "{} {reading:?}", path.display());
            }
            compared += 1;
        }
        assert!(compared >= 20, "{compared} traces compared");
    }

    /// The single pass is chosen from the number of buffers, each counted
    /// at 64 KiB at least: tx__KernelNetwork's 129 buffers of 8 KiB count as
    /// 129 × 64 KiB, diaghub.kernel's 59 of 64 KiB as 59 × 64 KiB.
    #[test]
    fn the_single_pass_is_chosen_by_buffers_of_64_kib_at_least() {
        for (name, buffers) in [("tx__KernelNetwork.etl", 129), ("perfview__diaghub.kernel.1.etl", 59)] {
            let file = TraceFile::open(nettrail_testkit::corpus_file(name)).unwrap();
            let trace = Trace::open(&file).unwrap();
            assert!(!super::reads_once(&trace, buffers * 65536), "{name}");
            assert!(super::reads_once(&trace, buffers * 65536 + 1), "{name}");
        }
    }

    /// A buffer lists up to 16 providers (each once, in any order met);
    /// past that it lists none and is read again whatever the metadata
    /// describes.
    #[test]
    fn a_buffer_of_many_providers_is_read_again_whatever_is_described() {
        let file = TraceFile::open(nettrail_testkit::corpus_file("tx__KernelNetwork.etl")).unwrap();
        let trace = Trace::open(&file).unwrap();
        let info = trace.buffers().get(1).unwrap();
        let guid = |n: u128| nettrail_etl::Guid::from_bytes_le(n.to_le_bytes());
        let revisit = |providers: Vec<nettrail_etl::Guid>| {
            super::Revisit { info, providers, many: false, copy: None, end: 0 }.done()
        };
        let few = revisit((0..16).rev().chain(0..16).map(guid).collect());
        assert_eq!((few.providers.len(), few.many), (16, false));
        assert_eq!(few.providers[0], guid(0));
        let many = revisit((0..17).map(guid).collect());
        assert_eq!((many.providers.len(), many.many), (0, true));
    }

    /// What the single pass counts again is what the trace's metadata
    /// describes: on the compressed PerfView trace, the runtime's events,
    /// counted from copies of its buffers' EVENT_HEADER records; stored
    /// decompressed, from the buffers themselves after the first count of
    /// them is forgotten (the method loads among them too).
    #[test]
    fn the_perfview_trace_counts_its_embedded_schemas_compressed_or_not() {
        let path = nettrail_testkit::corpus_file("perfview__net.4.5.2.x86.etl");
        let source = std::fs::read(&path).unwrap();
        let stored = expanded(&source);
        for bytes in [&source, &stored] {
            let trace = Trace::parse(bytes).unwrap();
            let (once, problems) = Facts::counted(&path, &trace, &mut Schemas::new());
            assert!(problems.is_empty(), "{problems:?}");
            assert_eq!(once.document["modules"]["managed_methods"], 14188);
            let runtime = runtime_of(&once.document);
            assert_eq!(runtime["name"], "Microsoft-Windows-DotNETRuntime", "{runtime}");
            assert_eq!(runtime["decoded"], 11608, "{runtime}");
            assert_eq!(runtime["schema_sources"], serde_json::json!(["embedded_event_info"]), "{runtime}");
            let (twice, _) = Facts::counted_reading(&path, &trace, &mut Schemas::new(), Reading::TWICE);
            assert_eq!(once.document, twice.document);
        }
    }

    /// Metadata for a provider that also logs classic records has the trace
    /// counted again whole: the PerfView trace, stored decompressed, with
    /// KernelTraceControl/ImageID's classic records (FULL_HEADER64) put
    /// under the runtime's GUID, which the trace's EventInfo describes. Read
    /// once, only the runtime's EVENT_HEADER records would be counted again,
    /// and its 8 136 classic records would be forgotten.
    #[test]
    fn a_described_provider_with_classic_records_is_counted_again_whole() {
        let path = nettrail_testkit::corpus_file("perfview__net.4.5.2.x86.etl");
        let mut bytes = expanded(&std::fs::read(&path).unwrap());
        let image_id = nettrail_etl::Guid::parse_const("b3e675d7-2554-4f18-830b-2762732560de").to_bytes_le();
        let runtime = nettrail_etl::Guid::parse_const("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4").to_bytes_le();
        let mut moved = 0;
        for at in 0..bytes.len() - 16 {
            if bytes[at..at + 16] == image_id {
                bytes[at..at + 16].copy_from_slice(&runtime);
                moved += 1;
            }
        }
        assert!(moved >= 8136, "{moved}");
        let trace = Trace::parse(&bytes).unwrap();
        let (once, problems) = Facts::counted(&path, &trace, &mut Schemas::new());
        assert!(problems.is_empty(), "{problems:?}");
        let runtime = runtime_of(&once.document);
        assert_eq!(runtime["events"], 11608 + 8136, "{runtime}");
        assert_eq!(runtime["record_kinds"], serde_json::json!(["FULL_HEADER64", "EVENT_HEADER32"]), "{runtime}");
        let (twice, _) = Facts::counted_reading(&path, &trace, &mut Schemas::new(), Reading::TWICE);
        assert_eq!(once.document, twice.document);
    }

    /// The .NET runtime's row among a document's providers.
    fn runtime_of(document: &serde_json::Value) -> &serde_json::Value {
        let providers = document["providers"].as_array().unwrap();
        providers.iter().find(|p| p["guid"] == "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4").unwrap()
    }

    /// `source` with every compressed buffer stored decompressed.
    fn expanded(source: &[u8]) -> Vec<u8> {
        use nettrail_etl::buffer::BufferFlags;
        let trace = Trace::parse(source).unwrap();
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        for info in trace.buffers().iter() {
            if !info.header.is_compressed() {
                out.extend_from_slice(&source[info.offset as usize..][..info.stored_len]);
                continue;
            }
            let mut image = trace.contents(&info, &mut scratch).bytes.to_vec();
            image.resize(trace.header().buffer_size as usize, 0xFF);
            let flags = u16::from_le_bytes([image[0x34], image[0x35]]) & !BufferFlags::COMPRESSED;
            image[0x34..0x36].copy_from_slice(&flags.to_le_bytes());
            let size = image.len() as u32;
            image[0..4].copy_from_slice(&size.to_le_bytes());
            out.extend(image);
        }
        out
    }
}
