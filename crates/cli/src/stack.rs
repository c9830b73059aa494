//! `nettrail stack`: the call stacks that started requests, to read. Each
//! request's chain is printed oldest first: the code that began the work,
//! every hand-off (thread pool, timer, WinHTTP work item, new thread) with
//! the stack that queued it, down to the request's own stack.

use std::io::Write;
use std::path::PathBuf;

use nettrail_net::report::duration;
use nettrail_net::{Report, Stitched};

use crate::Outcome;
use nettrail_tables::Request;

use crate::tables::{self, Filters};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// The request's number: the `request` column of `nettrail requests`
    /// (repeatable). Without it, every request that has a stack.
    #[arg(long, value_name = "N")]
    request: Vec<usize>,
    #[command(flatten)]
    filters: Filters,
    /// Only requests whose URL contains URL (case-insensitive).
    #[arg(long)]
    url: Option<String>,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let analysed = tables::analyse(&args.trace, &file, &args.manifest, quiet)?;
    let report: Report = analysed.report();
    let count = report.requests.len();
    if let Some(&n) = args.request.iter().find(|&&n| n == 0 || n > count) {
        anyhow::bail!("no request {n}: the trace has requests 1 to {count}");
    }
    let filters = nettrail_tables::Filters { url: args.url.clone(), ..(&args.filters).into() };
    let mut rows = nettrail_tables::requests(&report, &filters);
    if !args.request.is_empty() {
        rows.retain(|r| args.request.contains(&r.number));
    }
    let pdbs = crate::symbols::Pdbs::new(&args.symbols);
    analysed.stitch(&mut rows, &pdbs);
    let mut out = crate::visible::Visible::new(std::io::BufWriter::new(std::io::stdout().lock()));
    let mut shown = 0;
    for r in &rows {
        // A blank line between requests.
        if shown > 0 && (r.stacks.is_some() || !args.request.is_empty()) {
            writeln!(out)?;
        }
        match &r.stacks {
            Some(stitched) => write(&mut out, &report, r, stitched)?,
            None if !args.request.is_empty() => {
                heading(&mut out, &report, r)?;
                writeln!(out, "  no stack: the trace has none for this request's events")?;
            }
            None => continue,
        }
        shown += 1;
    }
    out.flush()?;
    say_without_stacks(&rows);
    pdbs.summary();
    Ok(tables::outcome(&analysed, &args.trace))
}

/// The line every command that stitches stacks prints when some requests
/// have none: `N of M requests have no stack in the trace`.
pub fn say_without_stacks(rows: &[Request<'_>]) {
    let without = rows.iter().filter(|r| r.stacks.is_none()).count();
    if without > 0 {
        say!("{without} of {} requests have no stack in the trace", rows.len());
    }
}

/// `request 7: WinHTTP GET https://… — app.exe (1234) at 1.234567 s for 0.120000 s`
fn heading(out: &mut impl Write, report: &Report, r: &Request<'_>) -> std::io::Result<()> {
    // A server name with its port, or the address as an endpoint (`[fe80::1]:443`).
    let what = r.url.clone().or_else(|| match (&r.server, r.ip, r.port?) {
        (Some(name), _, port) => Some(format!("{name}:{port}")),
        (None, Some(ip), port) => Some(nettrail_net::address::Endpoint { address: ip, port }.to_string()),
        (None, None, _) => None,
    });
    let mut line = format!("request {}: {}", r.number, r.layer.name());
    for part in [r.method.as_deref(), what.as_deref()].into_iter().flatten() {
        line.push(' ');
        line.push_str(part);
    }
    let process = match (&r.process, r.pid) {
        (Some(name), Some(pid)) => format!("{name} ({pid})"),
        (None, Some(pid)) => format!("- ({pid})"),
        (Some(name), None) => name.clone(),
        (None, None) => "-".to_string(),
    };
    line.push_str(&format!(" — {process} at {:.6} s", (r.start - report.trace_start) as f64 / 1e7));
    if let Some(d) = duration(r.start, r.end) {
        line.push_str(&format!(" for {d:.6} s"));
    }
    writeln!(out, "{line}")
}

fn write(out: &mut impl Write, report: &Report, r: &Request<'_>, stitched: &Stitched) -> std::io::Result<()> {
    heading(out, report, r)?;
    let n = stitched.stacks.len();
    for (i, s) in stitched.stacks.iter().enumerate() {
        if let Some(title) = stitched.title(i) {
            writeln!(out, "  {title}")?;
        }
        let role = match (i, n) {
            (_, 1) => "the request's own stack",
            (0, _) => "first: where the work began",
            (i, n) if i + 1 == n => "last: the request's own stack",
            _ => "middle",
        };
        let thread = s.thread.map_or("?".to_string(), |t| t.to_string());
        writeln!(out, "  {role} (thread {thread}):")?;
        if s.frames.is_empty() {
            writeln!(out, "      (no stack in the trace)")?;
        }
        for f in &s.frames {
            writeln!(out, "      {f}")?;
        }
    }
    Ok(())
}
