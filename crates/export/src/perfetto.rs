//! Chrome Trace Event JSON of a trace's network activity, for
//! ui.perfetto.dev and chrome://tracing: a track per process and thread
//! (named), a slice per request on the thread that made it, flow arrows
//! along the thread-pool and other hand-offs that led to it (from the
//! stitched stacks), a bytes-per-second counter per process, and an instant
//! per DNS answer.
//!
//! Times are microseconds from the trace's start; the document's `metadata`
//! gives the start's absolute time (UTC). Events are written as they are
//! made: memory holds the process and thread names, not the document.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};

use nettrail_net::{Report, RequestRow, Stitched};
use serde_json::{Value, json};

/// Writes `{"traceEvents": […]}`. `stacks` holds the stitched stacks of
/// `report.requests`, row for row, when there are any; `to_filetime` turns
/// a raw timestamp (the stacks' times) into FILETIME.
pub fn write_perfetto(
    report: &Report,
    stacks: Option<&[Stitched]>,
    to_filetime: &dyn Fn(u64) -> i64,
    out: &mut impl Write,
) -> io::Result<()> {
    let t0 = report.trace_start;
    let us = |t: i64| (t - t0) as f64 / 10.0;
    let mut events = Events::start(out)?;
    let mut processes: BTreeMap<u32, Option<&str>> = BTreeMap::new();
    let mut threads: BTreeSet<(u32, u32)> = BTreeSet::new();

    for (i, r) in report.requests.iter().enumerate() {
        let pid = r.pid.unwrap_or(0);
        let tid = r.threads.first().copied().unwrap_or(0);
        note(&mut processes, pid, r.process.as_deref());
        threads.insert((pid, tid));
        let duration = r.end.map_or(0.0, |end| (end - r.start).max(0) as f64 / 10.0);
        events.push(&json!({
            "ph": "X", "name": slice_name(r), "cat": r.layer.name(),
            "pid": pid, "tid": tid, "ts": us(r.start), "dur": duration,
            "args": {
                "request": i + 1, "url": r.url, "server": r.server,
                "ip": r.ip.map(|a| a.to_string()), "port": r.port, "status": r.status,
                "bytes_sent": r.bytes_sent, "bytes_received": r.bytes_received,
                "error": r.error, "app": r.app,
            },
        }))?;
        let Some(chain) = stacks.and_then(|s| s.get(i)).filter(|s| s.stacks.len() > 1) else { continue };
        // A short slice where each step of the chain ran, and an arrow from
        // each step to the next (the last step is the request's own event).
        for (k, pair) in chain.stacks.windows(2).enumerate() {
            let (from, to) = (&pair[0], &pair[1]);
            let from_thread = (from.pid.unwrap_or(pid), from.thread.unwrap_or(0));
            let to_thread = (to.pid.unwrap_or(pid), to.thread.unwrap_or(0));
            threads.insert(from_thread);
            threads.insert(to_thread);
            let kind = from.handed_over.map_or("hand-off", |(kind, _)| kind.name());
            let id = format!("{}.{k}", i + 1);
            let at_from = us(to_filetime(from.raw));
            let at_to = us(to_filetime(to.raw));
            events.push(&json!({
                "ph": "X", "name": format!("queued: {kind}"), "cat": "hand-off",
                "pid": from_thread.0, "tid": from_thread.1, "ts": at_from, "dur": 1.0,
                "args": { "request": i + 1 },
            }))?;
            events.push(&json!({
                "ph": "s", "name": kind, "cat": "hand-off", "id": id,
                "pid": from_thread.0, "tid": from_thread.1, "ts": at_from,
            }))?;
            events.push(&json!({
                "ph": "X", "name": format!("ran: {kind}"), "cat": "hand-off",
                "pid": to_thread.0, "tid": to_thread.1, "ts": at_to, "dur": 1.0,
                "args": { "request": i + 1 },
            }))?;
            events.push(&json!({
                "ph": "f", "bp": "e", "name": kind, "cat": "hand-off", "id": id,
                "pid": to_thread.0, "tid": to_thread.1, "ts": at_to,
            }))?;
        }
    }

    // Lookups with their answers (not the interfaces' server lists).
    for d in report.dns.iter().filter(|d| d.kind != "server") {
        let pid = d.pid.unwrap_or(0);
        let tid = d.thread.unwrap_or(0);
        note(&mut processes, pid, d.process.as_deref());
        threads.insert((pid, tid));
        let answers: Vec<String> = d.answers.iter().map(ToString::to_string).collect();
        events.push(&json!({
            "ph": "i", "s": "t", "name": format!("DNS {}", d.name), "cat": "dns",
            "pid": pid, "tid": tid, "ts": us(d.end.unwrap_or(d.start)),
            "args": { "answers": answers, "aliases": d.aliases, "status": d.status, "cached": d.cached },
        }))?;
    }

    for (pid, at_us, sent, received) in bytes_per_second(report) {
        events.push(&json!({
            "ph": "C", "name": "bytes/s", "pid": pid, "tid": 0,
            "ts": at_us as f64,
            "args": { "sent": sent, "received": received },
        }))?;
    }

    for (&pid, name) in &processes {
        let name = match name {
            Some(n) => format!("{n} ({pid})"),
            None => format!("process {pid}"),
        };
        events.push(
            &json!({ "ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0, "args": { "name": name } }),
        )?;
    }
    for &(pid, tid) in &threads {
        events.push(&json!({
            "ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
            "args": { "name": format!("thread {tid}") },
        }))?;
    }
    let start = nettrail_etl::FileTime(t0).to_string();
    let unix_us = (t0 - nettrail_etl::clock::FILETIME_UNIX_EPOCH).div_euclid(10);
    let metadata = json!({ "trace_start_utc": start, "trace_start_unix_us": unix_us, "source": "nettrail" });
    events.finish(&metadata)
}

/// The `traceEvents` array, written an event at a time.
struct Events<'w, W: Write> {
    out: &'w mut W,
    first: bool,
}

impl<'w, W: Write> Events<'w, W> {
    fn start(out: &'w mut W) -> io::Result<Self> {
        out.write_all(b"{\"traceEvents\":[")?;
        Ok(Events { out, first: true })
    }

    fn push(&mut self, event: &Value) -> io::Result<()> {
        if !self.first {
            self.out.write_all(b",\n")?;
        }
        self.first = false;
        serde_json::to_writer(&mut *self.out, event)?;
        Ok(())
    }

    fn finish(self, metadata: &Value) -> io::Result<()> {
        self.out.write_all(b"],\"displayTimeUnit\":\"ms\",\"metadata\":")?;
        serde_json::to_writer(&mut *self.out, metadata)?;
        self.out.write_all(b"}\n")
    }
}

fn note<'a>(processes: &mut BTreeMap<u32, Option<&'a str>>, pid: u32, name: Option<&'a str>) {
    let slot = processes.entry(pid).or_default();
    if slot.is_none() {
        *slot = name;
    }
}

fn slice_name(r: &RequestRow) -> String {
    match (&r.method, &r.url) {
        (Some(m), Some(u)) => format!("{m} {u}"),
        (None, Some(u)) => u.clone(),
        _ => {
            let peer = match (r.ip, r.port) {
                (Some(ip), Some(port)) => format!(" {}", nettrail_net::address::Endpoint { address: ip, port }),
                (Some(ip), None) => format!(" {ip}"),
                _ => String::new(),
            };
            format!("{}{peer}", r.layer.name())
        }
    }
}

/// Most counter samples per process: a long (or damaged, far-flung) trace
/// gets wider buckets rather than millions of samples.
const MAX_BUCKETS: i64 = 10_000;

/// (pid, bucket start in µs from the trace's start, bytes/s sent, bytes/s
/// received): each row's bytes spread evenly over its duration (all in its
/// first bucket when it has none), in buckets of one second or wider (at
/// most [`MAX_BUCKETS`] over the trace). Rows are each connection's highest
/// layer, so no byte is counted twice.
fn bytes_per_second(report: &Report) -> Vec<(u32, i64, u64, u64)> {
    let span = (report.trace_end - report.trace_start).max(0);
    let width = (span / MAX_BUCKETS + 1).max(10_000_000);
    let per_second = 1e7 / width as f64;
    let mut buckets: BTreeMap<(u32, i64), (f64, f64)> = BTreeMap::new();
    for r in &report.requests {
        let (sent, received) = (r.bytes_sent.unwrap_or(0) as f64, r.bytes_received.unwrap_or(0) as f64);
        if sent == 0.0 && received == 0.0 {
            continue;
        }
        let pid = r.pid.unwrap_or(0);
        let start = (r.start - report.trace_start).clamp(0, span);
        let end = r.end.map_or(start, |e| (e - report.trace_start).clamp(0, span)).max(start);
        let duration = (end - start) as f64;
        // The bucket holding the last instant (an end on a boundary is the previous bucket's).
        let last = if end > start { (end - 1) / width } else { start / width };
        for b in start / width..=last {
            let share = if duration == 0.0 {
                1.0
            } else {
                let (lo, hi) = ((b * width).max(start), ((b + 1) * width).min(end));
                (hi - lo).max(0) as f64 / duration
            };
            let slot = buckets.entry((pid, b)).or_default();
            slot.0 += sent * share;
            slot.1 += received * share;
        }
    }
    // A counter holds its value until the next sample: quiet buckets, and
    // the bucket after the last, are zeros.
    let mut range: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    for &(pid, b) in buckets.keys() {
        let r = range.entry(pid).or_insert((b, b));
        r.1 = r.1.max(b);
    }
    for (pid, (first, last)) in range {
        for b in first..=last + 1 {
            buckets.entry((pid, b)).or_default();
        }
    }
    buckets
        .into_iter()
        .map(|((pid, b), (a, c))| {
            (pid, b * width / 10, (a * per_second).round() as u64, (c * per_second).round() as u64)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrail_net::Layer;

    fn row(start: i64, end: Option<i64>, received: u64) -> RequestRow {
        RequestRow {
            process: Some("app.exe".into()),
            pid: Some(7),
            threads: vec![8],
            bytes_received: Some(received),
            end,
            ..RequestRow::new(Layer::Tcp, start)
        }
    }

    #[test]
    fn counters_spread_bytes_per_second() {
        // 3 000 bytes over 1.5 s from 0.5 s: 1 000 in second 0, 2 000 in second 1.
        let report = Report {
            trace_start: 0,
            trace_end: 30_000_000,
            requests: vec![row(5_000_000, Some(20_000_000), 3_000)],
            ..Report::default()
        };
        assert_eq!(bytes_per_second(&report), [(7, 0, 0, 1_000), (7, 1_000_000, 0, 2_000), (7, 2_000_000, 0, 0)]);
    }

    #[test]
    fn a_far_flung_end_widens_buckets_instead_of_exploding() {
        // A damaged trace: a row ending 100 years after it began.
        let century = 100 * 365 * 86_400 * 10_000_000_i64;
        let report = Report {
            trace_start: 0,
            trace_end: century,
            requests: vec![row(0, Some(century), 1 << 40)],
            ..Report::default()
        };
        let samples = bytes_per_second(&report);
        assert!(samples.len() <= MAX_BUCKETS as usize + 2, "{} samples", samples.len());
        // Still bytes per second: the row's rate, 2^40 bytes over the century.
        let rate = (1u64 << 40) as f64 / (century as f64 / 1e7);
        assert!(
            samples.iter().take(samples.len() - 1).all(|s| (s.3 as f64 - rate).abs() <= 1.0),
            "{:?}",
            &samples[..3]
        );
    }
}
