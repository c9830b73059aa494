//! `nettrail requests | connections | dns | http-server`: the network model's
//! tables, filtered and sorted, as a terminal table, CSV or JSON lines.

mod columns;
mod render;

use std::io::Write;
use std::path::PathBuf;

use nettrail_net::Report;

use self::render::{Column, Format};
use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    /// Only rows of processes whose name contains NAME (case-insensitive), or with this PID.
    #[arg(long, value_name = "NAME|PID")]
    process: Option<String>,
    /// Only rows whose server, other names or IP address contain HOST.
    #[arg(long)]
    host: Option<String>,
    /// Only rows whose URL contains URL.
    #[arg(long)]
    url: Option<String>,
    /// Order rows by this column (a leading `-` for descending); by start time otherwise.
    #[arg(long, value_name = "COLUMN", allow_hyphen_values = true)]
    sort: Option<String>,
    /// The columns to show, comma-separated (every column: see --format jsonl).
    #[arg(long, value_delimiter = ',')]
    columns: Option<Vec<String>>,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Requests,
    Connections,
    Dns,
    HttpServer,
}

/// What the filters look at in a row.
pub trait Filterable {
    fn process(&self) -> (Option<&str>, Option<u32>);
    fn hosts(&self) -> Vec<String>;
    fn url(&self) -> Option<&str>;
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

fn keep<R: Filterable>(row: &R, args: &Args) -> bool {
    if let Some(p) = &args.process {
        let (name, pid) = row.process();
        let hit = match p.parse::<u32>() {
            Ok(want) => pid == Some(want),
            Err(_) => name.is_some_and(|n| contains(n, p)),
        };
        if !hit {
            return false;
        }
    }
    if let Some(h) = &args.host
        && !row.hosts().iter().any(|x| contains(x, h))
    {
        return false;
    }
    if let Some(u) = &args.url
        && !row.url().is_some_and(|x| contains(x, u))
    {
        return false;
    }
    true
}

fn emit<R: Filterable>(out: &mut impl Write, args: &Args, columns: &[Column<R>], rows: &[R]) -> anyhow::Result<()> {
    for name in
        args.columns.iter().flatten().chain(args.sort.as_ref().map(|s| s.trim_start_matches('-').to_string()).as_ref())
    {
        if !columns.iter().any(|c| c.name == name) {
            let known: Vec<&str> = columns.iter().map(|c| c.name).collect();
            anyhow::bail!("no column {name:?}; the columns are {}", known.join(", "));
        }
    }
    let mut kept: Vec<&R> = rows.iter().filter(|r| keep(*r, args)).collect();
    if let Some(sort) = &args.sort {
        let descending = sort.starts_with('-');
        let name = sort.trim_start_matches('-');
        if let Some(col) = columns.iter().find(|c| c.name == name) {
            kept.sort_by(|a, b| {
                let o = (col.get)(a).compare(&(col.get)(b));
                if descending { o.reverse() } else { o }
            });
        }
    }
    render::write(out, args.format, columns, args.columns.as_deref(), &kept)?;
    Ok(())
}

pub fn run(table: Table, args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let trace = crate::parse(&args.trace, &file)?;
    let schemas = crate::schemas::for_trace(&args.trace, &trace, &args.manifest)?;
    let first = trace.header_timestamp();
    let last = trace.buffers().iter().filter_map(|b| b.first_timestamp).max().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("reading", last.saturating_sub(first), quiet);
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |ts| progress.update(ts.saturating_sub(first)));
    progress.finish();
    let report: Report = analysis.network.report();
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match table {
        Table::Requests => emit(&mut out, args, &columns::requests(&report), &report.requests)?,
        Table::Connections => emit(&mut out, args, &columns::connections(&report), &report.connections)?,
        Table::Dns => emit(&mut out, args, &columns::dns(&report), &report.dns)?,
        Table::HttpServer => emit(&mut out, args, &columns::http_server(&report), &report.http_server)?,
    }
    out.flush()?;
    for e in &analysis.damage {
        crate::report_damage(&args.trace, e);
    }
    Ok(if analysis.damage.is_empty() { Outcome::Complete } else { Outcome::Damaged })
}
