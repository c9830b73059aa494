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

/// Bytes of records below which `info` reads on this thread alone: a
/// second thread's start (a fresh stack, a hand-off per job) costs more than
/// it wins on so little (figures in docs/performance.md, eighth pass).
const ONE_THREAD_BELOW: u64 = 1 << 20;

pub fn run(args: &Args, quiet: bool) -> anyhow::Result<Outcome> {
    let file = crate::open(&args.trace)?;
    // The count decompresses what it reads into memory its thread reuses:
    // keeping the decompressed buffers was fresh memory, whose first touch
    // cost more than decompressing again (on the project's VM, right after
    // another program freed its memory: 55 → 38 ms on the compressed
    // PerfView trace).
    let trace = crate::parse_keeping(&args.trace, &file, 0)?;
    if trace.holds_less_than(ONE_THREAD_BELOW) {
        // Fails only if the pool already runs, which then serves as it is.
        let _ = rayon::ThreadPoolBuilder::new().num_threads(1).use_current_thread().build_global();
    }
    // The trace's own metadata is learnt while it is counted.
    let mut schemas = crate::schemas::supplied(&args.manifest)?;
    let _ = quiet; // counting runs at memory speed; it needs no progress line
    let (facts, problems) = Facts::counted(&args.trace, &trace, &mut schemas);
    crate::schemas::report_problems(&args.trace, problems);
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

#[cfg(test)]
mod tests {
    use nettrail_etl::{Trace, TraceFile};

    /// The traces either side of the line: tx__KernelNetwork's 129 buffers
    /// hold 1 019 328 bytes of records, diaghub.kernel's 59 hold 3 695 312.
    #[test]
    fn only_a_trace_of_under_a_mebibyte_of_records_is_read_on_one_thread() {
        for (name, small) in [("tx__KernelNetwork.etl", true), ("perfview__diaghub.kernel.1.etl", false)] {
            let file = TraceFile::open(nettrail_testkit::corpus_file(name)).unwrap();
            let trace = Trace::open(&file).unwrap();
            assert_eq!(trace.holds_less_than(super::ONE_THREAD_BELOW), small, "{name}");
        }
        let file = TraceFile::open(nettrail_testkit::corpus_file("tx__KernelNetwork.etl")).unwrap();
        let trace = Trace::open(&file).unwrap();
        assert!(trace.holds_less_than(1_019_329));
        assert!(!trace.holds_less_than(1_019_328));
    }
}
