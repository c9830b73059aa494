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
    let trace = crate::parse(&args.trace, &file)?;
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
