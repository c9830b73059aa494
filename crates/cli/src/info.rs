//! `nettrail info`: what a trace is — the session, its clock and time span,
//! providers with event counts, record kinds, lost and damaged data
//! (`nettrail_export::facts` gathers and renders them).

use std::io::Write;
use std::path::PathBuf;

use clap::ValueEnum;
use nettrail_export::facts::{Facts, write_text};

use crate::Outcome;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The .etl file.
    trace: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// An instrumentation manifest (XML) to decode with, or a folder of them (repeatable).
    #[arg(long, value_name = "FILE|DIR")]
    manifest: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    Text,
    Json,
}

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    // Both passes (the metadata search, the count) run on every core, each
    // decompressing what it reads into memory its thread reuses: keeping
    // the decompressed buffers for the second pass was fresh memory, whose
    // first touch cost more than decompressing again (on the project's VM,
    // right after another program freed its memory: 55 → 38 ms on the
    // compressed PerfView trace).
    let trace = crate::parse_keeping(&args.trace, &file, 0)?;
    let schemas = crate::schemas::for_trace(&args.trace, &trace, &args.manifest)?;
    let _ = quiet; // counting runs at memory speed; it needs no progress line
    let facts = Facts::counted(&args.trace, &trace, &schemas);
    let mut out = std::io::stdout().lock();
    match args.format {
        Format::Json => {
            let text = serde_json::to_string_pretty(&facts.document)?;
            writeln!(out, "{}", nettrail_decode::safe_text::json_safe(&text))?;
        }
        Format::Text => {
            let mut visible = crate::visible::Visible::new(&mut out);
            write_text(&mut visible, &facts.document)?;
            visible.flush()?;
        }
    }
    out.flush()?;
    crate::report_damage(&args.trace, facts.damage());
    Ok(if facts.damage().is_empty() { Outcome::Complete } else { Outcome::Damaged })
}
