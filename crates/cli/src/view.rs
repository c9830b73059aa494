//! `nettrail view`: the HTML report of a trace (`nettrail_export::report`
//! writes it), written to a file and, on request, opened in the browser.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use nettrail_export::facts::Facts;
use nettrail_export::report::{Stage, write_report};

use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Where to write the report; by default in the current folder, named
    /// after the trace (`…/trace.etl` → `./trace.html`); its path is printed.
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Open the report in the default browser once written.
    #[arg(long)]
    open: bool,
    #[command(flatten)]
    symbols: crate::symbols::SymbolArgs,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
}

impl Args {
    /// The report of a trace next to it (a trace just recorded, where the user
    /// chose), opened in the browser when `open` (what `nettrail stop --view` does).
    pub fn for_trace(trace: &Path, open: bool) -> Args {
        Args {
            trace: trace.to_path_buf(),
            output: Some(trace.with_extension("html")),
            open,
            symbols: crate::symbols::SymbolArgs::default(),
            manifest: Vec::new(),
        }
    }
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let path = &args.trace;
    // Not next to the trace: traces are often in read-only or shared folders.
    let output = args.output.clone().unwrap_or_else(|| {
        let stem = path.file_stem().map_or_else(|| "trace".into(), |s| s.to_os_string());
        PathBuf::from(stem).with_extension("html")
    });
    let file = crate::open(path)?;
    let analysed = crate::tables::analyse(path, &file, &args.manifest, quiet)?;
    // The facts of `nettrail info`, and every process's stacks and modules from the same pass.
    let facts = Facts::of(path, &analysed.trace, &analysed.schemas);
    let pdbs = crate::symbols::Pdbs::new(&args.symbols);
    let title = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let cannot = || format!("{}: cannot write", output.display());
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(&output).with_context(cannot)?);
    let mut stacks = crate::progress::Progress::new("stacks", 1_000_000, quiet);
    let mut events = crate::progress::Progress::new("events", 1_000_000, quiet);
    let written = write_report(&mut out, &title, &analysed, &facts, &pdbs, &mut |stage, done| match stage {
        Stage::Stacks => stacks.update((done * 1e6) as u64),
        Stage::Events => events.update((done * 1e6) as u64),
    })
    .with_context(cannot)?;
    stacks.finish();
    events.finish();
    if written.without_stack > 0 {
        say!("{} of {} requests have no stack in the trace", written.without_stack, written.requests);
    }
    pdbs.summary();
    println!("{}", std::path::absolute(&output).unwrap_or(output.clone()).display());
    // The report is written either way: a browser that cannot be started is a warning.
    if args.open
        && let Err(e) = open_in_browser(&output)
    {
        say!("{e:#}");
    }
    // The analysis met the same damage as the count: reported once.
    Ok(crate::tables::outcome(&analysed, path))
}

/// Opens a file in the default browser (the desktop's handler for .html).
fn open_in_browser(path: &Path) -> anyhow::Result<()> {
    let mut command = if cfg!(windows) {
        let mut c = std::process::Command::new("cmd");
        c.args(["/c", "start", ""]);
        c
    } else if cfg!(target_os = "macos") {
        std::process::Command::new("open")
    } else {
        std::process::Command::new("xdg-open")
    };
    let status = command.arg(path).status();
    match status {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => anyhow::bail!("{command:?} ended with {s}; the report is at {}", path.display()),
        Err(e) => anyhow::bail!("cannot run {command:?}: {e}; the report is at {}", path.display()),
    }
}
