//! `nettrail`: Windows network tracing with ETW — read, decode and correlate
//! `.etl` traces on any OS. The work lives in the library crates; this crate
//! parses flags, opens files, chooses output formats and shows progress.

/// Prints a message on stderr after `nettrail: `. Messages quote file names
/// and what traces say, so every control character in them is shown as an
/// escape (one message, one line; nothing for the terminal to act on).
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::visible::message(&format!($($arg)*))
    };
}

mod capture;
mod dump;
mod export;
mod info;
mod live;
mod progress;
mod providers;
mod schemas;
mod stack;
mod symbols;
mod tables;
mod view;
mod visible;

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use nettrail_etl::{Trace, TraceFile};

/// `--version`: the version and the features built in.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let feature = |on: bool, name: &str| format!("{}{name}", if on { "+" } else { "-" });
        format!(
            "{}\nfeatures: {} {}\ncapture: {}",
            env!("CARGO_PKG_VERSION"),
            feature(cfg!(feature = "parquet"), "parquet"),
            feature(cfg!(feature = "download"), "download"),
            if cfg!(windows) { "Windows (wpr.exe, native ETW sessions)" } else { "none here (Windows only)" },
        )
    })
}

#[derive(Parser, Debug)]
#[command(name = "nettrail", version, long_version = long_version(), about, long_about = None, max_term_width = 100)]
struct Cli {
    /// Show no progress on stderr (it is also hidden when stderr is not a terminal).
    #[arg(long, short, global = true)]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Describe a trace: session, clock, providers, record kinds, lost data.
    Info(info::Args),
    /// Print every event of a trace in time order, one line each.
    Dump(dump::Args),
    /// Write a trace's data in the formats other tools open.
    Export(export::Args),
    /// Network requests: one row per request or connection, at its highest layer.
    Requests(tables::RequestArgs),
    /// The call stacks that started requests, stitched across thread pools and other hand-offs.
    Stack(stack::Args),
    /// Every TCP connection and UDP flow, with bytes, retransmits and state.
    Connections(tables::ConnectionArgs),
    /// DNS lookups (name, answers, process, time) and the DNS servers of each interface.
    Dns(tables::Args),
    /// Http.sys server requests: one row per request.
    HttpServer(tables::UrlArgs),
    /// Browsers (Chrome, Edge, WebView2): regions, events and NetLog sources, with their URLs.
    Browser(tables::UrlArgs),
    /// Start recording a network trace (Windows, administrator; drives wpr.exe).
    Start(capture::StartArgs),
    /// Stop recording and write the trace.
    Stop(capture::StopArgs),
    /// Show whether a recording runs (and, on Windows, every ETW session).
    Status,
    /// Stop recording and discard the trace.
    Cancel,
    /// Print requests as they finish, from a real-time session (Windows) or a replayed trace.
    Live(live::Args),
    /// Write the WPR profile nettrail records with, for use with wpr.exe and WPA directly.
    Profile(capture::ProfileArgs),
    /// Write a self-contained HTML report: timeline, requests, connections, DNS, stacks.
    View(view::Args),
    /// The providers nettrail decodes without a trace's help, and (with a name) their events' layouts.
    Providers(providers::Args),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) on stdout.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout: `nettrail man | man -l -`.
    Man,
}

/// How a command ended, as an exit code: 0 success, 1 nothing could be read
/// (bad arguments, unreadable file, not a trace), 2 the trace is damaged —
/// everything readable before the damage was printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Complete,
    Damaged,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with success; any usage error is
            // "nothing could be read" (clap's own default would be 2, which
            // here means a damaged trace).
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(1) } else { ExitCode::SUCCESS };
        }
    };
    nettrail_etl::file::stop_cleanly_if_truncated_while_mapped();
    let result = match &cli.command {
        Command::Info(args) => info::run(args, cli.quiet),
        Command::Dump(args) => dump::run(args, cli.quiet),
        Command::Export(args) => export::run(args, cli.quiet),
        Command::Requests(args) => tables::run_requests(args, cli.quiet),
        Command::Stack(args) => stack::run(args, cli.quiet),
        Command::Connections(args) => tables::run_connections(args, cli.quiet),
        Command::Dns(args) => tables::run_dns(args, cli.quiet),
        Command::HttpServer(args) => tables::run_http_server(args, cli.quiet),
        Command::Browser(args) => tables::run_browser(args, cli.quiet),
        Command::Start(args) => capture::start(args),
        Command::Stop(args) => capture::stop(args, cli.quiet),
        Command::Status => capture::status(),
        Command::Cancel => capture::cancel(),
        Command::Profile(args) => capture::profile(args),
        Command::Live(args) => live::run(args, cli.quiet),
        Command::View(args) => view::run(args, cli.quiet),
        Command::Providers(args) => providers::run(args),
        Command::Completions { shell } => completions(*shell),
        Command::Man => man(),
    };
    match result {
        Ok(Outcome::Complete) => ExitCode::SUCCESS,
        Ok(Outcome::Damaged) => ExitCode::from(2),
        Err(e) if is_broken_pipe(&e) => ExitCode::SUCCESS,
        Err(e) => {
            say!("{e:#}");
            ExitCode::from(1)
        }
    }
}

fn completions(shell: clap_complete::Shell) -> anyhow::Result<Outcome> {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "nettrail", &mut std::io::stdout().lock());
    Ok(Outcome::Complete)
}

fn man() -> anyhow::Result<Outcome> {
    use clap::CommandFactory;
    clap_mangen::Man::new(Cli::command()).render(&mut std::io::stdout().lock())?;
    Ok(Outcome::Complete)
}

/// `nettrail dump … | head` closes the pipe early; that is not an error.
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe))
}

/// Opens a trace file (memory-mapped).
fn open(path: &Path) -> anyhow::Result<TraceFile> {
    TraceFile::open(path).with_context(|| format!("{}: cannot open", path.display()))
}

/// Parses a trace's header and buffer index; errors name the file.
fn parse<'a>(path: &Path, file: &'a TraceFile) -> anyhow::Result<Trace<'a>> {
    parse_keeping(path, file, Trace::KEPT_BYTES)
}

/// [`parse`], keeping at most `kept` bytes of decompressed buffers between passes.
fn parse_keeping<'a>(path: &Path, file: &'a TraceFile, kept: usize) -> anyhow::Result<Trace<'a>> {
    Trace::open_keeping(file, kept).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

/// Says when the merge read buffers out of time order (a trace whose
/// buffers all overlap in time, as only a hostile one does).
fn report_reordered(path: &Path, buffers: u64) {
    if buffers > 0 {
        say!(
            "{}: note: {buffers} buffers overlapped in time with more than 256 MiB of others; \
             their events were read after those, out of time order",
            path.display()
        );
    }
}

/// Damage reported one by one; past this, by count.
const DAMAGE_SHOWN: usize = 10;

/// Reports damage found in a trace on stderr, naming the file: the first
/// [`DAMAGE_SHOWN`] in full, then how many more of each kind (a hostile file
/// can hold thousands of the same lie).
fn report_damage(path: &Path, errors: &[nettrail_etl::Error]) {
    for error in errors.iter().take(DAMAGE_SHOWN) {
        say!("{}: {error}", path.display());
    }
    let mut more: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for error in errors.iter().skip(DAMAGE_SHOWN) {
        *more.entry(error.kind.class()).or_default() += 1;
    }
    if !more.is_empty() {
        let counts: Vec<String> = more.iter().map(|(what, n)| format!("{n} {what}")).collect();
        say!(
            "{}: {} more damaged places: {} (`nettrail info --format json` lists them all)",
            path.display(),
            errors.len() - DAMAGE_SHOWN,
            counts.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn flags_are_consistent() {
        use clap::CommandFactory;
        super::Cli::command().debug_assert();
    }
}
