//! `nettrail requests | connections | dns | http-server | browser`: the flags of the
//! table commands. The tables themselves (columns, filters, sorting,
//! rendering) are `nettrail_tables`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use nettrail_etl::TraceFile;
use nettrail_net::{Direction, Report};
use nettrail_tables::render::{self, Format as RenderFormat};
use nettrail_tables::{Analysed, Column, Filterable, StackView, columns, select};

use crate::Outcome;

/// How rows are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for reading (the main columns; --columns for others).
    #[default]
    Table,
    /// Every column, RFC 4180.
    Csv,
    /// One JSON object per row, every column, typed.
    Jsonl,
}

impl From<Format> for RenderFormat {
    fn from(f: Format) -> RenderFormat {
        match f {
            Format::Table => RenderFormat::Table,
            Format::Csv => RenderFormat::Csv,
            Format::Jsonl => RenderFormat::Jsonl,
        }
    }
}

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

/// The flags of a table whose rows have URLs (requests, Http.sys requests).
#[derive(clap::Args, Debug, Default)]
pub struct UrlArgs {
    #[command(flatten)]
    table: Args,
    /// Only rows whose URL contains URL (case-insensitive).
    #[arg(long)]
    url: Option<String>,
}

impl UrlArgs {
    fn filters(&self) -> nettrail_tables::Filters {
        nettrail_tables::Filters { url: self.url.clone(), ..(&self.table.filters).into() }
    }
}

/// Who began a flow, as `--direction` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DirectionArg {
    /// Begun by this machine (it connected, or sent first).
    Outbound,
    /// Begun by a peer (accepted, or received first; to a local service port).
    Inbound,
    /// A socket waiting for peers.
    Listen,
}

impl From<DirectionArg> for Direction {
    fn from(d: DirectionArg) -> Direction {
        match d {
            DirectionArg::Outbound => Direction::Outbound,
            DirectionArg::Inbound => Direction::Inbound,
            DirectionArg::Listen => Direction::Listen,
        }
    }
}

/// `nettrail connections`: the table's flags and `--direction`.
#[derive(clap::Args, Debug, Default)]
pub struct ConnectionArgs {
    #[command(flatten)]
    table: Args,
    /// Only flows begun this way.
    #[arg(long, value_enum)]
    direction: Option<DirectionArg>,
}

/// `nettrail requests`: the table's flags, and the stacks to add.
#[derive(clap::Args, Debug, Default)]
pub struct RequestArgs {
    #[command(flatten)]
    table: UrlArgs,
    /// Only rows begun this way (the table lists outbound rows first, then inbound, then listening sockets).
    #[arg(long, value_enum)]
    direction: Option<DirectionArg>,
    /// Add the call stacks that started each request, stitched across thread
    /// pools and other hand-offs (comma-separated): `first` (the code that
    /// began the work), `last` (the request's own), `middle` (the stacks
    /// between, each after the hand-off into it), `full` (all of them). Lists
    /// of frames: for --format jsonl or csv; `nettrail stack` prints them to read.
    #[arg(long, value_enum, value_delimiter = ',', value_name = "VIEW")]
    stacks: Vec<StackArg>,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
}

/// Which stacks of a stitched chain a column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum StackArg {
    First,
    Last,
    Middle,
    Full,
}

impl From<StackArg> for StackView {
    fn from(s: StackArg) -> StackView {
        match s {
            StackArg::First => StackView::First,
            StackArg::Last => StackView::Last,
            StackArg::Middle => StackView::Middle,
            StackArg::Full => StackView::Full,
        }
    }
}

impl RequestArgs {
    pub fn from_table(table: Args) -> RequestArgs {
        RequestArgs { table: UrlArgs { table, url: None }, ..RequestArgs::default() }
    }
}

impl Args {
    /// Every row of a table in `format` (what `nettrail export --format csv|jsonl` writes).
    pub fn for_export(trace: &Path, format: Format, manifest: &[PathBuf]) -> Args {
        Args { trace: trace.to_path_buf(), format, manifest: manifest.to_vec(), ..Args::default() }
    }

    /// [`Args::for_export`] of a table with URLs.
    pub fn with_urls(self) -> UrlArgs {
        UrlArgs { table: self, url: None }
    }
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
}

impl From<&Filters> for nettrail_tables::Filters {
    fn from(f: &Filters) -> nettrail_tables::Filters {
        nettrail_tables::Filters { process: f.process.clone(), host: f.host.clone(), ..Default::default() }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Connections,
    Dns,
}

/// Checks the chosen and sort columns, sorts, and writes.
fn emit<R>(out: &mut impl Write, args: &Args, columns: &[Column<R>], mut rows: Vec<&R>) -> anyhow::Result<()> {
    for name in args.columns.iter().flatten() {
        select::find(columns, name)?;
    }
    if let Some(by) = &args.sort {
        select::sort(&mut rows, columns, by)?;
    }
    // A table for a terminal fits its width; piped, it keeps every character.
    let width = (args.format == Format::Table && std::io::stdout().is_terminal())
        .then(|| terminal_size::terminal_size().map(|(w, _)| usize::from(w.0)))
        .flatten();
    render::write_fitted(out, args.format.into(), columns, args.columns.as_deref(), &rows, width)?;
    Ok(())
}

fn kept<'r, R: Filterable>(rows: &'r [R], filters: &nettrail_tables::Filters) -> Vec<&'r R> {
    filters.kept(rows)
}

/// Reads and analyses a trace, with a progress line.
pub fn analyse<'f>(
    path: &Path,
    file: &'f TraceFile,
    manifests: &[PathBuf],
    quiet: bool,
) -> anyhow::Result<Analysed<'f>> {
    let trace = crate::parse(path, file)?;
    let schemas = crate::schemas::for_trace(path, &trace, manifests)?;
    let mut progress = crate::progress::Progress::new("reading", 1_000_000, quiet);
    let analysed = Analysed::new(trace, schemas, &mut |f| progress.update((f * 1e6) as u64));
    progress.finish();
    Ok(analysed)
}

/// What a table command says of the analysis: reordered buffers and damage, and the outcome.
pub fn outcome(analysed: &Analysed<'_>, path: &Path) -> Outcome {
    crate::report_reordered(path, analysed.analysis.reordered);
    crate::report_damage(path, &analysed.analysis.damage);
    if analysed.analysis.damage.is_empty() { Outcome::Complete } else { Outcome::Damaged }
}

pub fn run_requests(args: &RequestArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_requests_to(args, quiet, &mut out)
}

/// `nettrail requests`, written to `out`.
pub fn run_requests_to(args: &RequestArgs, quiet: bool, out: &mut Box<dyn Write + '_>) -> anyhow::Result<Outcome> {
    if !args.stacks.is_empty() && args.table.table.format == Format::Table {
        anyhow::bail!(
            "--stacks adds lists of frames: use it with --format jsonl or csv, or print them with `nettrail stack`"
        );
    }
    let path = &args.table.table.trace;
    let file = crate::open(path)?;
    let analysed = analyse(path, &file, &args.table.table.manifest, quiet)?;
    let report: Report = analysed.report();
    let filters = nettrail_tables::Filters { direction: args.direction.map(Into::into), ..args.table.filters() };
    let mut rows = nettrail_tables::requests(&report, &filters);
    let mut columns = columns::requests(&report);
    if !args.stacks.is_empty() {
        let pdbs = crate::symbols::Pdbs::new(&args.symbols);
        analysed.stitch(&mut rows, &pdbs);
        crate::stack::say_without_stacks(&rows);
        pdbs.summary();
        columns.extend(args.stacks.iter().map(|&v| columns::stack_column(v.into())));
    }
    emit(out, &args.table.table, &columns, rows.iter().collect())?;
    out.flush()?;
    if rows.is_empty() {
        explain_no_requests(&analysed, &report);
    }
    Ok(outcome(&analysed, path))
}

/// Why `requests` printed no row, on stderr: the filters, or a trace whose
/// network events are of another kind (Http.sys, packets).
fn explain_no_requests(analysed: &Analysed<'_>, report: &Report) {
    if !report.requests.is_empty() {
        say!("no request matches the filters (the trace has {})", report.requests.len());
        return;
    }
    let summary = nettrail_etl::Summary::compute(&analysed.trace);
    let packets = summary
        .providers
        .iter()
        .filter(|p| [nettrail_export::packets::NDIS_PACKET_CAPTURE, nettrail_export::packets::PKTMON].contains(&p.guid))
        .map(|p| p.events)
        .sum::<u64>();
    let mut hints = Vec::new();
    if !report.http_server.is_empty() {
        hints.push(format!("{} Http.sys server requests: `nettrail http-server`", report.http_server.len()));
    }
    if !report.connections.is_empty() {
        hints.push(format!("{} connections: `nettrail connections`", report.connections.len()));
    }
    if !report.browser.is_empty() {
        hints.push(format!("{} browser regions and events: `nettrail browser`", report.browser.len()));
    }
    if packets > 0 {
        hints.push(format!(
            "{packets} PktMon or NDIS-PacketCapture events: `nettrail export --format pcapng -o trace.pcapng`"
        ));
    }
    match hints.is_empty() {
        true => say!(
            "no network requests: the trace has no events of the providers nettrail correlates (`nettrail info` lists its providers)"
        ),
        false => say!("no client requests; the trace has {}", hints.join("; ")),
    }
}

pub fn run_connections(args: &ConnectionArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_to(Table::Connections, &args.table, args.direction.map(Into::into), quiet, &mut out)
}

pub fn run_dns(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_to(Table::Dns, args, None, quiet, &mut out)
}

/// A table command, written to `out`.
pub fn run_to(
    table: Table,
    args: &Args,
    direction: Option<Direction>,
    quiet: bool,
    out: &mut Box<dyn Write + '_>,
) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    let analysed = analyse(&args.trace, &file, &args.manifest, quiet)?;
    let report: Report = analysed.report();
    let filters = nettrail_tables::Filters { direction, ..(&args.filters).into() };
    match table {
        Table::Connections => emit(out, args, &columns::connections(&report), kept(&report.connections, &filters))?,
        Table::Dns => emit(out, args, &columns::dns(&report), kept(&report.dns, &filters))?,
    }
    out.flush()?;
    Ok(outcome(&analysed, &args.trace))
}

pub fn run_http_server(args: &UrlArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_http_server_to(args, quiet, &mut out)
}

/// `nettrail http-server`, written to `out`.
pub fn run_http_server_to(args: &UrlArgs, quiet: bool, out: &mut Box<dyn Write + '_>) -> anyhow::Result<Outcome> {
    let path = &args.table.trace;
    let file = crate::open(path)?;
    let analysed = analyse(path, &file, &args.table.manifest, quiet)?;
    let report: Report = analysed.report();
    emit(out, &args.table, &columns::http_server(&report), kept(&report.http_server, &args.filters()))?;
    out.flush()?;
    Ok(outcome(&analysed, path))
}

pub fn run_browser(args: &UrlArgs, quiet: bool) -> anyhow::Result<Outcome> {
    let mut out: Box<dyn Write> = Box::new(std::io::BufWriter::new(std::io::stdout().lock()));
    run_browser_to(args, quiet, &mut out)
}

/// `nettrail browser`, written to `out`.
pub fn run_browser_to(args: &UrlArgs, quiet: bool, out: &mut Box<dyn Write + '_>) -> anyhow::Result<Outcome> {
    let path = &args.table.trace;
    let file = crate::open(path)?;
    let analysed = analyse(path, &file, &args.table.manifest, quiet)?;
    let report: Report = analysed.report();
    let rows = kept(&report.browser, &args.filters());
    emit(out, &args.table, &columns::browser(&report), rows.clone())?;
    out.flush()?;
    if rows.is_empty() {
        match report.browser.len() {
            0 => say!(
                "no browser events: the trace has none of the Chromium providers' (Chrome, Edge, WebView2; \
                 record them with `nettrail start --browser`)"
            ),
            n => say!("no browser row matches the filters (the trace has {n})"),
        }
    }
    Ok(outcome(&analysed, path))
}
