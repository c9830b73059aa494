//! `cargo xtask bench-info`: `nettrail info` against dissect.etl walking
//! every record of the same trace, run in turns (theirs, ours, theirs, …) so
//! that both see the same moment of a shared machine; the median of the
//! rounds and the ratio. More than one nettrail binary (`--nettrail`, e.g.
//! a build of the previous commit) are run in the same turns, each right
//! after a dissect.etl run.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rounds (each runs every program once, in turn); the median is reported.
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// nettrail binaries to time (default: this workspace's release build).
    #[arg(long)]
    nettrail: Vec<PathBuf>,
    /// Traces (default: the corpus' compressed PerfView trace and small traces).
    traces: Vec<PathBuf>,
}

/// The compressed PerfView trace, then small traces of thousands of events
/// (where start-up counts), then a 26.5 MB uncompressed one.
const TRACES: &[&str] = &[
    "perfview__net.4.5.2.x86.etl",
    "perfview__diaghub.kernel.1.etl",
    "tx__Process.etl",
    "tx__KernelNetwork.etl",
    "tx__HTTP_Server.etl",
    "demikernel__PktMon.etl",
    "perfview__net.4.5.x86.PerfViewData.etl",
];

/// dissect.etl reading every record (it parses each record's header).
pub const DISSECT_WALK: &str = "
import sys
from dissect.etl.etl import ETL
with open(sys.argv[1], 'rb') as f:
    print(sum(1 for _ in ETL(f)))
";

fn timed(mut command: Command) -> anyhow::Result<Duration> {
    let start = Instant::now();
    let status = command.stdout(Stdio::null()).status().with_context(|| format!("{command:?}"))?;
    let took = start.elapsed();
    if !status.success() {
        bail!("{command:?} failed");
    }
    Ok(took)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let binaries =
        if args.nettrail.is_empty() { vec![crate::bench::nettrail_binary()?] } else { args.nettrail.clone() };
    let python = nettrail_testkit::python_peers().map_err(anyhow::Error::msg)?;
    let traces: Vec<PathBuf> = if args.traces.is_empty() {
        TRACES.iter().map(|t| nettrail_testkit::corpus_file(t)).collect()
    } else {
        args.traces.clone()
    };
    let names: Vec<String> = binaries.iter().map(|b| b.display().to_string()).collect();
    println!(
        "| trace | size | dissect.etl walk | {} | ratio |",
        names.iter().map(|n| format!("`{n} info`")).collect::<Vec<_>>().join(" | ")
    );
    println!("|---|---|---|{}---|", "---|".repeat(binaries.len()));
    for trace in &traces {
        let ours = |binary: &Path| {
            let mut c = Command::new(binary);
            c.args(["info", "--quiet"]).arg(trace).env_remove("_NT_SYMBOL_PATH");
            c
        };
        let theirs = || {
            let mut c = Command::new(&python);
            c.args(["-c", DISSECT_WALK]).arg(trace);
            c
        };
        // One untimed run of each warms the page cache and the interpreter's files.
        timed(theirs())?;
        for b in &binaries {
            timed(ours(b))?;
        }
        let mut dissect = Vec::new();
        let mut nettrail: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
        // Each nettrail run follows a dissect.etl run, as in a side-by-side
        // comparison of one binary: a run right after another nettrail run
        // was up to a third faster (memory the previous program freed costs
        // more to touch first, on a VM: 46 against 26 ms on the compressed
        // PerfView trace), which favoured the second binary.
        for _ in 0..args.rounds {
            for (i, b) in binaries.iter().enumerate() {
                dissect.push(timed(theirs())?);
                nettrail[i].push(timed(ours(b))?);
            }
        }
        let dissect = median(dissect);
        let ours: Vec<Duration> = nettrail.into_iter().map(median).collect();
        let size = std::fs::metadata(trace)?.len();
        println!(
            "| {} | {:.1} MB | {} | {} | {} |",
            trace.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            size as f64 / 1e6,
            ms(dissect),
            ours.iter().map(|d| ms(*d)).collect::<Vec<_>>().join(" | "),
            ours.iter()
                .map(|d| format!("{:.0}×", dissect.as_secs_f64() / d.as_secs_f64()))
                .collect::<Vec<_>>()
                .join(" / ")
        );
    }
    Ok(())
}
