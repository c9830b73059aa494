//! `nettrail export`: a trace's data in the formats other tools open: the
//! packets of NDIS-PacketCapture and PktMon as pcapng (Wireshark), the HTTP
//! requests as HAR (DevTools, Fiddler), the activity as Chrome Trace Event
//! JSON (Perfetto), any table as CSV or JSON lines, and every table of one
//! or many traces as one Parquet dataset (`nettrail_export` writes them all).
//!
//! Binary formats go to a file (`-o`), never to a terminal; messages and
//! progress go to stderr.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::ValueEnum;

use crate::Outcome;

#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The .etl file (for --format parquet: any number of files and folders of them).
    #[arg(required = true, value_name = "TRACE")]
    traces: Vec<PathBuf>,
    #[arg(skip)]
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum)]
    format: Format,
    /// Where to write (required for binary formats; `-` is stdout, refused when it is a terminal).
    #[arg(long, short, value_name = "PATH")]
    output: Option<PathBuf>,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
    /// The table for csv and jsonl.
    #[arg(long, value_enum, default_value_t = TableName::Requests)]
    table: TableName,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum TableName {
    Requests,
    Connections,
    Dns,
    HttpServer,
    Browser,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// The packets of Microsoft-Windows-NDIS-PacketCapture and Microsoft-Windows-PktMon
    /// events, for Wireshark and tshark (as etl2pcapng and `pktmon etl2pcap` write them).
    Pcapng,
    /// HAR 1.2 of the HTTP requests (WinINet, WinHTTP, URLMon), with process,
    /// threads and stacks in `_`-prefixed fields, for Chrome DevTools and Fiddler.
    Har,
    /// Chrome Trace Event JSON for ui.perfetto.dev and chrome://tracing: a slice per
    /// request on its thread, flow arrows for hand-offs, bytes/s counters, DNS answers.
    Perfetto,
    /// A table (--table) as CSV.
    Csv,
    /// A table (--table) as JSON lines.
    Jsonl,
    /// Every table (requests, connections, dns, http_server, browser) and every event of
    /// one or many traces as one Hive-partitioned Parquet dataset in the folder
    /// -o names (`table=requests/trace=NAME/part-0.parquet`), for DuckDB, Spark or pandas.
    Parquet,
}

impl Format {
    fn is_binary(self) -> bool {
        match self {
            Format::Pcapng | Format::Parquet => true,
            Format::Har | Format::Perfetto | Format::Csv | Format::Jsonl => false,
        }
    }
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    if args.format == Format::Parquet {
        return parquet(args, quiet);
    }
    let [trace] = args.traces.as_slice() else {
        anyhow::bail!("--format {:?} exports one trace; only --format parquet takes several", args.format);
    };
    let args = &Args { trace: trace.clone(), traces: Vec::new(), ..args.clone() };
    match args.format {
        Format::Pcapng => pcapng(args, quiet),
        Format::Har | Format::Perfetto => model(args, quiet),
        Format::Csv | Format::Jsonl => table(args, quiet),
        Format::Parquet => parquet(args, quiet),
    }
}

#[cfg(feature = "parquet")]
fn parquet(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let Some(dir) = args.output.as_ref().filter(|p| p.as_os_str() != "-") else {
        anyhow::bail!("--format parquet writes a dataset of files: name its folder with -o DIR");
    };
    let traces = trace_files(&args.traces)?;
    let mut dataset = nettrail_export::dataset::Dataset::create(dir)
        .with_context(|| format!("{}: cannot create the folder", dir.display()))?;
    let (mut written, mut damaged, mut unreadable) = (0, 0, 0);
    for (i, path) in traces.iter().enumerate() {
        let name = dataset.name_for(path);
        let added = (|| -> anyhow::Result<nettrail_export::dataset::Added> {
            let file = crate::open(path)?;
            let analysed = crate::tables::analyse(path, &file, &args.manifest, quiet)?;
            let first = analysed.trace.header_timestamp();
            let mut progress = crate::progress::Progress::new("events", 1 << 20, quiet);
            let last = analysed.trace.last_buffer_start().unwrap_or(first);
            let span = last.saturating_sub(first).max(1);
            let added = dataset.add(&name, &analysed, &mut |t| {
                progress.update(t.saturating_sub(first).saturating_mul(1 << 20) / span)
            })?;
            progress.finish();
            crate::report_reordered(path, analysed.analysis.reordered);
            Ok(added)
        })();
        match added {
            Ok(added) => {
                written += 1;
                crate::report_damage(path, &added.damage);
                damaged += usize::from(!added.damage.is_empty());
                if !quiet {
                    let [requests, connections, dns, server, browser] = added.rows;
                    say!(
                        "[{}/{}] {}: trace={} {requests} requests, {connections} connections, {dns} DNS lookups, \
                         {server} Http.sys requests, {browser} browser rows, {} events",
                        i + 1,
                        traces.len(),
                        path.display(),
                        added.name,
                        added.events
                    );
                }
            }
            Err(e) => {
                unreadable += 1;
                say!("{e:#}");
            }
        }
    }
    if !quiet {
        say!("wrote {written} of {} traces to the dataset {}", traces.len(), dir.display());
    }
    Ok(match (written, damaged + unreadable) {
        (0, _) => anyhow::bail!("no trace could be read"),
        (_, 0) => Outcome::Complete,
        _ => Outcome::Damaged,
    })
}

/// The trace files named: files as given, folders' `*.etl` files in name order.
#[cfg(feature = "parquet")]
fn trace_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            let mut found: Vec<PathBuf> = std::fs::read_dir(path)
                .with_context(|| format!("{}: cannot read the folder", path.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x.eq_ignore_ascii_case("etl")))
                .collect();
            found.sort();
            if found.is_empty() {
                say!("{}: no .etl file in this folder", path.display());
            }
            files.extend(found);
        } else {
            files.push(path.clone());
        }
    }
    Ok(files)
}

#[cfg(not(feature = "parquet"))]
fn parquet(_: &Args, _: bool) -> anyhow::Result<Outcome> {
    anyhow::bail!("this nettrail was built without the `parquet` feature")
}

/// Where text formats go: the file named by `-o`, else stdout.
fn text_output(args: &Args) -> anyhow::Result<Box<dyn Write>> {
    Ok(match args.output.as_ref().filter(|p| p.as_os_str() != "-") {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
            Box::new(std::io::BufWriter::with_capacity(256 << 10, file))
        }
        None => Box::new(std::io::BufWriter::with_capacity(256 << 10, std::io::stdout().lock())),
    })
}

/// HAR and Perfetto: the network model with its stitched stacks.
fn model(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    refuse_overwrite(args)?;
    let file = crate::open(&args.trace)?;
    let analysed = crate::tables::analyse(&args.trace, &file, &args.manifest, quiet)?;
    let report = analysed.report();
    let mut rows = nettrail_tables::requests(&report, &nettrail_tables::Filters::default());
    let pdbs = crate::symbols::Pdbs::new(&args.symbols);
    analysed.stitch(&mut rows, &pdbs);
    crate::stack::say_without_stacks(&rows);
    pdbs.summary();
    let stacks: Vec<nettrail_net::Stitched> = rows.into_iter().map(|r| r.stacks.unwrap_or_default()).collect();
    let mut out = text_output(args)?;
    match args.format {
        Format::Har => nettrail_export::write_har(&report, Some(&stacks), &mut out)?,
        _ => {
            let clock = analysed.trace.clock();
            nettrail_export::write_perfetto(&report, Some(&stacks), &|raw| clock.to_filetime(raw), &mut out)?
        }
    }
    out.flush()?;
    Ok(crate::tables::outcome(&analysed, &args.trace))
}

/// CSV and JSON lines of a table: what the table commands write.
fn table(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    use crate::tables::{self, Table};
    refuse_overwrite(args)?;
    let format = if args.format == Format::Csv { tables::Format::Csv } else { tables::Format::Jsonl };
    let table = tables::Args::for_export(&args.trace, format, &args.manifest);
    let mut out = text_output(args)?;
    let outcome = match args.table {
        TableName::Requests => tables::run_requests_to(&tables::RequestArgs::from_table(table), quiet, &mut out)?,
        TableName::Connections => tables::run_to(Table::Connections, &table, None, quiet, &mut out)?,
        TableName::Dns => tables::run_to(Table::Dns, &table, None, quiet, &mut out)?,
        TableName::HttpServer => tables::run_http_server_to(&table.with_urls(), quiet, &mut out)?,
        TableName::Browser => tables::run_browser_to(&table.with_urls(), quiet, &mut out)?,
    };
    out.flush()?;
    Ok(outcome)
}

/// Writing over the trace would cut the file out from under its mapping.
fn refuse_overwrite(args: &Args) -> anyhow::Result<()> {
    if let Some(output) = args.output.as_ref().filter(|p| p.as_os_str() != "-")
        && let (Ok(a), Ok(b)) = (std::fs::canonicalize(output), std::fs::canonicalize(&args.trace))
        && a == b
    {
        anyhow::bail!("{}: the output would overwrite the trace", output.display());
    }
    Ok(())
}

fn pcapng(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let to_stdout = args.output.as_ref().is_some_and(|p| p.as_os_str() == "-");
    if args.format.is_binary() {
        match &args.output {
            None => anyhow::bail!("--format pcapng writes a binary file: give it with -o PATH"),
            Some(_) if to_stdout && std::io::stdout().is_terminal() => {
                anyhow::bail!("refusing to write pcapng to a terminal: redirect stdout or give -o PATH")
            }
            _ => {}
        }
    }
    refuse_overwrite(args)?;
    let file = crate::open(&args.trace)?;
    let trace = crate::parse(&args.trace, &file)?;
    let schemas = crate::schemas::for_trace(&args.trace, &trace, &args.manifest)?;

    let first = trace.header_timestamp();
    let last = trace.last_buffer_start().unwrap_or(first);
    let mut progress = crate::progress::Progress::new("exporting", last.saturating_sub(first), quiet);
    let mut on_progress = |t: u64| progress.update(t.saturating_sub(first));

    let summary = match (&args.output, to_stdout) {
        (Some(_), true) | (None, _) => {
            let mut out = std::io::BufWriter::with_capacity(256 << 10, std::io::stdout().lock());
            let summary = nettrail_export::write_pcapng(&trace, &schemas, &mut out, &mut on_progress)?;
            out.flush()?;
            summary
        }
        (Some(path), false) => {
            let created = std::fs::File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
            let mut out = std::io::BufWriter::with_capacity(256 << 10, created);
            let summary = nettrail_export::write_pcapng(&trace, &schemas, &mut out, &mut on_progress)
                .with_context(|| format!("{}: cannot write", path.display()))?;
            out.into_inner()
                .map_err(|e| e.into_error())
                .and_then(|f| f.sync_all())
                .with_context(|| format!("{}: cannot write", path.display()))?;
            summary
        }
    };
    progress.finish();

    for (provider, id, why, count) in &summary.undecoded {
        say!("{}: {count} {provider} event(s) {id} skipped: {why}", args.trace.display());
    }
    if !quiet {
        let target = match &args.output {
            Some(p) if !to_stdout => p.display().to_string(),
            _ => String::from("stdout"),
        };
        say!("wrote {} packet(s) on {} interface(s) to {target}", summary.packets, summary.interfaces.len());
        if summary.packets == 0 {
            say!(
                "{}: no packet events (Microsoft-Windows-NDIS-PacketCapture 1001/1003, Microsoft-Windows-PktMon 160/170)",
                args.trace.display()
            );
        }
    }
    crate::report_damage(&args.trace, &summary.damage);
    Ok(if summary.damage.is_empty() { Outcome::Complete } else { Outcome::Damaged })
}
