//! `nettrail requests | connections | dns | http-server`: the network model's
//! tables, filtered and sorted, as a terminal table, CSV or JSON lines.

pub mod columns;
pub mod render;

use std::io::Write;
use std::path::{Path, PathBuf};

use nettrail_decode::Schemas;
use nettrail_decode::fasthash::FastMap;
use nettrail_etl::{Trace, TraceFile};
use nettrail_net::{Analysis, Report};

use self::render::{Column, Format};
use crate::Outcome;

#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filters: Filters,
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

/// `nettrail requests`: the table's flags, and the stacks to add.
#[derive(clap::Args, Debug, Default)]
pub struct RequestArgs {
    #[command(flatten)]
    table: Args,
    /// Add the call stacks that started each request, stitched across thread
    /// pools and other hand-offs (comma-separated): `first` (the code that
    /// began the work), `last` (the request's own), `middle` (the stacks
    /// between, each after the hand-off into it), `full` (all of them). Lists
    /// of frames: for --format jsonl or csv; `nettrail stack` prints them to read.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "VIEW")]
    stacks: Vec<StackView>,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
}

impl RequestArgs {
    pub fn from_table(table: Args) -> RequestArgs {
        RequestArgs { table, ..RequestArgs::default() }
    }
}

impl Args {
    /// Every row of a table in `format` (what `nettrail export --format csv|jsonl` writes).
    pub fn for_export(trace: &Path, format: Format, manifest: &[PathBuf]) -> Args {
        Args { trace: trace.to_path_buf(), format, manifest: manifest.to_vec(), ..Args::default() }
    }
}

/// Which stacks of a stitched chain a column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum StackView {
    First,
    Last,
    Middle,
    Full,
}

/// Which rows to keep.
#[derive(clap::Args, Debug, Default)]
pub struct Filters {
    /// Only rows of processes whose name contains NAME (case-insensitive), or with this PID.
    #[arg(long, value_name = "NAME|PID")]
    process: Option<String>,
    /// Only rows whose server, other names or IP address contain HOST.
    #[arg(long)]
    host: Option<String>,
    /// Only rows whose URL contains URL.
    #[arg(long)]
    url: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
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

fn keep<R: Filterable>(row: &R, args: &Filters) -> bool {
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

fn kept<'r, R: Filterable>(rows: &'r [R], args: &Args) -> Vec<&'r R> {
    rows.iter().filter(|r| keep(*r, &args.filters)).collect()
}

fn emit<R, K: std::borrow::Borrow<R>>(
    out: &mut impl Write,
    args: &Args,
    columns: &[Column<R>],
    kept: Vec<K>,
) -> anyhow::Result<()> {
    for name in
        args.columns.iter().flatten().chain(args.sort.as_ref().map(|s| s.trim_start_matches('-').to_string()).as_ref())
    {
        if !columns.iter().any(|c| c.name == name) {
            let known: Vec<&str> = columns.iter().map(|c| c.name).collect();
            anyhow::bail!("no column {name:?}; the columns are {}", known.join(", "));
        }
    }
    let mut kept: Vec<&R> = kept.iter().map(|k| k.borrow()).collect();
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

/// A trace read and analysed: what every table command starts from.
pub struct Analysed<'f> {
    pub trace: Trace<'f>,
    pub schemas: Schemas,
    pub analysis: Analysis,
}

pub fn analyse<'f>(
    path: &Path,
    file: &'f TraceFile,
    manifests: &[PathBuf],
    quiet: bool,
) -> anyhow::Result<Analysed<'f>> {
    let trace = crate::parse(path, file)?;
    let schemas = crate::schemas::for_trace(path, &trace, manifests)?;
    let first = trace.header_timestamp();
    let last = trace.buffers().iter().filter_map(|b| b.first_timestamp).max().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("reading", last.saturating_sub(first), quiet);
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |ts| progress.update(ts.saturating_sub(first)));
    progress.finish();
    Ok(Analysed { trace, schemas, analysis })
}

impl Analysed<'_> {
    pub fn outcome(&self, path: &Path) -> Outcome {
        crate::report_reordered(path, self.analysis.reordered);
        crate::report_damage(path, &self.analysis.damage);
        if self.analysis.damage.is_empty() { Outcome::Complete } else { Outcome::Damaged }
    }

    /// Stitches the stacks of `rows`: one more pass over the trace, for the
    /// stacks of the processes involved and every process's modules.
    pub fn stitch(&self, rows: &mut [columns::Request<'_>], pdbs: &crate::symbols::Pdbs) {
        let net = &self.analysis.network;
        let mut pids: FastMap<u32, ()> = FastMap::default();
        for r in rows.iter() {
            for origin in &r.started_by {
                for hop in net.pools.chain(origin) {
                    pids.extend(hop.origin.pid.map(|p| (p, ())));
                }
            }
        }
        if pids.is_empty() {
            return;
        }
        let code = nettrail_stacks::scan(&self.trace, &self.schemas, &|pid| pids.contains_key(&pid));
        for r in rows {
            r.stacks = net.stitch(&r.started_by, &code, pdbs);
        }
    }
}

/// The request rows, numbered in start order, that the filters keep.
pub fn requests<'r>(report: &'r Report, filters: &Filters) -> Vec<columns::Request<'r>> {
    report
        .requests
        .iter()
        .enumerate()
        .map(|(i, row)| columns::Request { number: i + 1, row, stacks: None })
        .filter(|r| keep(r, filters))
        .collect()
}

pub fn run_requests(args: &RequestArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_requests_to(args, quiet, &mut out)
}

/// `nettrail requests`, written to `out`.
pub fn run_requests_to(args: &RequestArgs, quiet: bool, out: &mut Box<dyn Write + '_>) -> anyhow::Result<Outcome> {
    if !args.stacks.is_empty() && args.table.format == Format::Table {
        anyhow::bail!(
            "--stacks adds lists of frames: use it with --format jsonl or csv, or print them with `nettrail stack`"
        );
    }
    let path = &args.table.trace;
    let file = crate::open(path)?;
    let analysed = analyse(path, &file, &args.table.manifest, quiet)?;
    let report: Report = analysed.analysis.network.report();
    let mut rows = requests(&report, &args.table.filters);
    let mut columns = columns::requests(&report);
    if !args.stacks.is_empty() {
        let pdbs = crate::symbols::Pdbs::new(&args.symbols);
        analysed.stitch(&mut rows, &pdbs);
        pdbs.summary();
        columns.extend(args.stacks.iter().map(|&v| columns::stack_column(v)));
    }
    emit(out, &args.table, &columns, rows)?;
    out.flush()?;
    Ok(analysed.outcome(path))
}

pub fn run(table: Table, args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_to(table, args, quiet, &mut out)
}

/// A table command, written to `out`.
pub fn run_to(table: Table, args: &Args, quiet: bool, out: &mut Box<dyn Write + '_>) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let analysed = analyse(&args.trace, &file, &args.manifest, quiet)?;
    let report: Report = analysed.analysis.network.report();
    match table {
        Table::Connections => emit(out, args, &columns::connections(&report), kept(&report.connections, args))?,
        Table::Dns => emit(out, args, &columns::dns(&report), kept(&report.dns, args))?,
        Table::HttpServer => emit(out, args, &columns::http_server(&report), kept(&report.http_server, args))?,
    }
    out.flush()?;
    Ok(analysed.outcome(&args.trace))
}
