//! `nettrail live`: requests and connections printed as they finish, from a
//! real-time ETW session (Windows) or from a recorded trace replayed as if
//! it were live (`--replay`, any OS). Either way events go through the same
//! path: a record each, into the network model, rows printed once settled.

use std::path::PathBuf;

use nettrail_decode::Schemas;
use nettrail_net::{Direction, Live, RequestRow};

use crate::Outcome;
use nettrail_tables::columns::requests;
use nettrail_tables::{Request, render};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Replay a recorded trace through the live view instead of a real-time session.
    #[arg(long, value_name = "TRACE.etl")]
    replay: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Providers to add to the session, as for `nettrail start`.
    #[arg(long, value_name = "PROVIDER")]
    provider: Vec<String>,
}

/// A row is printed once it ended this long ago (FILETIME units: 2 s), so
/// that the layers above a connection have claimed it.
const SETTLE: i64 = 20_000_000;

/// How `live` prints rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// One line per request, as it settles.
    Table,
    /// Every column, as `requests --format csv` (one header line).
    Csv,
    /// Every column, as `requests --format jsonl`.
    Jsonl,
}

/// Prints each request row once, when it has settled.
struct Printer {
    format: Format,
    printed: std::collections::HashSet<String>,
    start: i64,
    /// The CSV header went out (it is printed once, before the first rows).
    header_printed: bool,
}

impl Printer {
    fn new(format: Format, start: i64) -> Printer {
        Printer { format, printed: Default::default(), start, header_printed: false }
    }

    /// A row's identity across reports (its number changes as rows arrive).
    fn key(r: &RequestRow) -> String {
        format!("{}|{:?}|{}|{:?}|{:?}|{:?}", r.layer.name(), r.pid, r.start, r.url, r.ip, r.port)
    }

    /// Prints the rows that ended at least [`SETTLE`] before `now`, or all
    /// unprinted rows when `all`.
    fn print(&mut self, live: &Live, now: i64, all: bool, out: &mut impl std::io::Write) -> std::io::Result<()> {
        let report = live.network().report();
        let fresh: Vec<Request<'_>> = report
            .requests
            .iter()
            .enumerate()
            .filter(|(_, r)| all || (!r.open_at_end && r.end.is_some_and(|e| e + SETTLE <= now)))
            .filter(|(_, r)| !self.printed.contains(&Self::key(r)))
            .map(|(i, row)| Request { number: i + 1, row, stacks: None })
            .collect();
        for r in &fresh {
            self.printed.insert(Self::key(r.row));
        }
        match self.format {
            Format::Table => {
                for r in &fresh {
                    writeln!(out, "{}", nettrail_decode::safe_text::visible(&self.line(r.row)))?;
                }
            }
            Format::Csv => {
                let columns = requests(&report);
                let shown: Vec<_> = columns.iter().collect();
                let mut line = String::new();
                if !self.header_printed {
                    render::csv_header(&mut line, &shown);
                    self.header_printed = true;
                }
                for r in &fresh {
                    render::csv_row(&mut line, &shown, r);
                }
                out.write_all(line.as_bytes())?;
            }
            Format::Jsonl => {
                let columns = requests(&report);
                let rows: Vec<&Request<'_>> = fresh.iter().collect();
                render::write(out, render::Format::Jsonl, &columns, None, &rows)?;
            }
        }
        out.flush()
    }

    /// `  +1.234s  browser.exe (4820)  WinHTTP GET https://… → 93.184.216.34:443  200 OK  141 B ↑ 24455 B ↓  52.9 ms`;
    /// rows a peer began point `←` from the peer, listening sockets say `listen` and their local end.
    fn line(&self, r: &RequestRow) -> String {
        let at = (r.start - self.start) as f64 / 1e7;
        let who = format!("{} ({})", r.process.as_deref().unwrap_or("-"), r.pid.map_or("-".into(), |p| p.to_string()));
        let what = r.url.clone().or_else(|| r.server.clone()).unwrap_or_default();
        let arrow = match r.direction {
            Direction::Outbound => "→",
            Direction::Inbound => "←",
            Direction::Listen => "listen",
        };
        let peer = match (r.ip, r.port, r.local) {
            (Some(ip), Some(port), _) => format!(" {arrow} {}", nettrail_net::address::Endpoint { address: ip, port }),
            (Some(ip), None, _) => format!(" {arrow} {ip}"),
            (None, _, Some(local)) if r.direction == Direction::Listen => format!(" {arrow} {local}"),
            _ => String::new(),
        };
        let bytes = |b: Option<u64>, arrow: &str| b.map(|b| format!("  {b} B {arrow}")).unwrap_or_default();
        // As the tables say it: open_at_end, or no end logged (an empty duration).
        let took = match (r.end, r.open_at_end) {
            (_, true) => "  open at end".to_string(),
            (None, false) => "  no end logged".to_string(),
            (Some(end), false) => format!("  {:.1} ms", (end - r.start) as f64 / 1e4),
        };
        // The protocol's answer where there is one, else the transport's state.
        let outcome = r.status.as_deref().or(r.state);
        let app = r.app.as_deref().map(|a| format!("  [{a}]")).unwrap_or_default();
        format!(
            "{at:+9.3}s  {who}{app}  {} {}{}{peer}{}{}{}{}{took}",
            r.layer.name(),
            r.method.as_deref().unwrap_or("-"),
            if what.is_empty() { String::new() } else { format!(" {what}") },
            outcome.map(|s| format!("  {s}")).unwrap_or_default(),
            r.error.as_deref().map(|e| format!("  {e}")).unwrap_or_default(),
            bytes(r.bytes_sent, "↑"),
            bytes(r.bytes_received, "↓"),
        )
    }
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    match &args.replay {
        Some(path) => replay(path, args, quiet),
        None => real_time(args, quiet),
    }
}

/// Every event of a recorded trace, as a real-time consumer would receive it.
fn replay(path: &std::path::Path, args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(path)?;
    let trace = crate::parse(path, &file)?;
    let clock = trace.clock();
    let mut schemas = Schemas::new();
    for warning in schemas.learn(&trace) {
        if !quiet {
            say!("{}: {warning}", path.display());
        }
    }
    let start = clock.to_filetime(trace.header_timestamp());
    let mut live = Live::new(schemas, start);
    let mut printer = Printer::new(args.format, start);
    let mut out = std::io::stdout().lock();
    let mut events = trace.events();
    let mut next_print = start;
    let mut outcome = Outcome::Complete;
    let mut damage = Vec::new();
    let mut scratch = Vec::new();
    while let Some(event) = events.next() {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                damage.push(e);
                outcome = Outcome::Damaged;
                continue;
            }
        };
        let now = clock.to_filetime(event.timestamp);
        let delivered = nettrail_capture::live::as_delivered(&event.record, now, &mut scratch);
        if let Some(record) = delivered {
            live.push(&record);
        }
        // Once a second of trace time, as the real-time view does.
        if now >= next_print {
            printer.print(&live, now, false, &mut out)?;
            next_print = now + 10_000_000;
        }
    }
    printer.print(&live, i64::MAX, true, &mut out)?;
    crate::report_damage(path, &damage);
    Ok(outcome)
}

#[cfg(not(windows))]
fn real_time(_: &Args, _: bool) -> anyhow::Result<Outcome> {
    Err(anyhow::anyhow!(
        "live capture needs Windows (a real-time ETW session); here, `nettrail live --replay trace.etl` shows a recorded trace the same way"
    ))
}

#[cfg(windows)]
fn real_time(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    use nettrail_capture::controller;
    use nettrail_capture::{Options, Scenario};
    use std::sync::{Arc, Mutex};

    if !controller::is_elevated() {
        return Err(nettrail_capture::CaptureError::NotElevated.into());
    }
    let extra = args.provider.iter().map(|p| nettrail_capture::parse_provider(p)).collect::<Result<Vec<_>, _>>()?;
    let scenario = Scenario::network(&Options { extra, no_stacks: true, ..Options::default() });
    let name = format!("{}-live", nettrail_capture::SESSION_NAME);
    let config = controller::SessionConfig::real_time(&scenario);
    let mut session = controller::Session::start(&name, &config)?;
    for p in &scenario.providers {
        if let Err(e) = session.enable(p) {
            say!("{}: {e}", p.label);
        }
    }
    controller::stop_on_ctrl_c(&name)?;
    if !quiet {
        say!("live session {name} running; Ctrl-C to stop");
    }
    let now = || {
        let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        nettrail_etl::clock::FILETIME_UNIX_EPOCH + (unix.as_nanos() / 100) as i64
    };
    let start = now();
    let live = Arc::new(Mutex::new(Live::new(Schemas::new(), start)));
    let printer = Arc::new(Mutex::new(Printer::new(args.format, start)));
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ticker = {
        let (live, printer, done) = (live.clone(), printer.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(std::time::Duration::from_secs(1));
                let live = live.lock().unwrap_or_else(|p| p.into_inner());
                let mut printer = printer.lock().unwrap_or_else(|p| p.into_inner());
                let _ = printer.print(&live, now(), false, &mut std::io::stdout().lock());
            }
        })
    };
    let mut scratch = Vec::new();
    let consumed = controller::consume(&name, &mut |event| {
        if nettrail_capture::live::record_bytes(event, &mut scratch).is_ok()
            && let Ok(Some((record, _))) = nettrail_etl::record::parse_record(&scratch, 8)
        {
            live.lock().unwrap_or_else(|p| p.into_inner()).push(&record);
        }
    });
    done.store(true, std::sync::atomic::Ordering::SeqCst);
    let _ = ticker.join();
    let stats = session.stop()?;
    let live = live.lock().unwrap_or_else(|p| p.into_inner());
    printer.lock().unwrap_or_else(|p| p.into_inner()).print(&live, i64::MAX, true, &mut std::io::stdout().lock())?;
    consumed?;
    if !quiet {
        say!("session stopped; {} events lost, {} buffers lost", stats.events_lost, stats.buffers_lost);
    }
    Ok(Outcome::Complete)
}
