//! The facts of a trace — the session, its clock and time span, providers
//! with event counts and what decodes, record kinds, stacks and modules,
//! lost and damaged data, notes — as one JSON document (`nettrail info
//! --format json`, the report's facts, `Trace.info()` in Python) and as the
//! text `nettrail info` prints.

use std::io::Write;

use nettrail_decode::{Coverage, CoverageCounter, LookupCache, Schemas};
use nettrail_etl::{BufferSummary, FileTime, Note, Releaser, Summary, Trace};
use nettrail_stacks::{BufferScan, Code, CodeJoin, FrameTable};
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
    /// and the stacks and modules. `path` names the file in the document.
    pub fn of(path: &std::path::Path, trace: &Trace<'_>, schemas: &Schemas) -> Facts {
        Facts::gather(path, trace, schemas, true)
    }

    /// [`Facts::of`] for the document alone (`nettrail info`): modules and
    /// methods are counted without reading their paths and names, which the
    /// document does not show (a third of the work on a PerfView trace's
    /// CLR method events).
    pub fn counted(path: &std::path::Path, trace: &Trace<'_>, schemas: &Schemas) -> Facts {
        Facts::gather(path, trace, schemas, false)
    }

    fn gather(path: &std::path::Path, trace: &Trace<'_>, schemas: &Schemas, names: bool) -> Facts {
        let (summary, coverage, code) = count(trace, schemas, names);
        let mut document = report(path, trace, &summary, &coverage, schemas);
        add_code(&mut document, &summary, &code);
        Facts { document, summary, code }
    }

    /// Damage met, in file order.
    pub fn damage(&self) -> &[nettrail_etl::Error] {
        &self.summary.errors
    }
}

/// The summary, what decodes, and the stacks and modules, from one parallel
/// pass over the buffers: reading the records is most of the cost, so they
/// are read once for all three.
fn count(trace: &Trace<'_>, schemas: &Schemas, names: bool) -> (Summary, Coverage, Code) {
    let every_process = |_| true;
    let shared = FrameTable::default();
    // Buffers are read a run at a time, its pages handed back in one step
    // after it ([`Trace::buffer_runs`]); each buffer's scan goes to the join
    // in file order (which holds stack parts in bounded memory), not folded
    // into its neighbours': each fold copied the scans into fresh memory.
    // Each run's summary and coverage, folded together at the end.
    let (mut summaries, mut counters) = (Vec::new(), Vec::new());
    let mut join = if names { CodeJoin::new() } else { CodeJoin::counting() };
    let mut releaser = Releaser::new(trace);
    for run in trace.buffer_runs(Trace::RUN_BYTES) {
        let buffers: Vec<(BufferSummary, CoverageCounter, BufferScan<'_>)> = run
            .par_iter()
            .map_init(
                || (Vec::new(), LookupCache::default()),
                |(scratch, cache), info| {
                    let mut summary = BufferSummary::new(&info);
                    let mut coverage = CoverageCounter::default();
                    let mut scan = if names {
                        BufferScan::new(&every_process, &shared)
                    } else {
                        BufferScan::counting(&every_process, &shared)
                    };
                    let mut values = Vec::new();
                    let contents = trace.contents(&info, scratch);
                    for item in trace.records(&info, &contents) {
                        // Borrowed where the iterator left it: a record is
                        // 224 bytes, and moving it out was a tenth of this loop.
                        let record = match &item {
                            Ok((_, record)) => record,
                            Err(e) => {
                                summary.damaged(e.clone());
                                break;
                            }
                        };
                        summary.add(record);
                        // Only the stacks scan needs the values, of a few kinds of
                        // record; counting needs the fields before their names.
                        let decoded = if names && BufferScan::needs_decoding(record) {
                            schemas.decode_cached(cache, record, &mut values)
                        } else {
                            schemas.check_cached(cache, record, &mut values)
                        };
                        coverage.count(record.provider, decoded.as_ref().map(|schema| schema.source));
                        let read = match decoded {
                            Ok(schema) if names => Some(schema),
                            Ok(schema) => scan.decode_counted(schema, record, &mut values).then_some(schema),
                            Err(_) => None,
                        };
                        scan.add(record, read.map(|schema| (schema, &values[..])));
                    }
                    if let Some(e) = contents.error {
                        summary.damaged(e);
                    }
                    scan.done();
                    (summary, coverage, scan)
                },
            )
            .collect();
        // The run's summaries and coverage folded into one each (one per
        // buffer of a 10 GB trace held ~200 MB).
        let mut folded: Option<(BufferSummary, CoverageCounter)> = None;
        for (summary, counter, scan) in buffers {
            folded = Some(match folded {
                Some((s, c)) => (s.merge(summary), c.merge(counter)),
                None => (summary, counter),
            });
            join.add(scan);
        }
        if let Some((summary, counter)) = folded {
            summaries.push(summary);
            counters.push(counter);
        }
        releaser.done_all(run);
    }
    let (code, (summary, coverage)) = rayon::join(
        || join.finish(&shared, trace.pointer_size()),
        || (Summary::from_buffers(trace, summaries), Coverage::from_counters(counters)),
    );
    (summary, coverage, code)
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
