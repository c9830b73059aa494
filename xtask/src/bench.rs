//! `cargo xtask bench`: throughput of `nettrail info` and `nettrail dump` on
//! the ≥ 1 GB benchmark input, `nettrail requests` (time and peak resident
//! memory) on a 1 GB network-heavy input, and `nettrail` against dissect.etl
//! on a corpus file. Wall-clock time of whole runs, best of several; prints
//! Markdown for docs/performance.md.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// The benchmark input (made with `cargo xtask bench-input` if missing).
    #[arg(long, default_value = "target/bench/net-1g.etl")]
    input: PathBuf,
    /// Runs per measurement; the best is reported.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// The network benchmark input: a network-heavy trace's buffers repeated to 1 GB.
    #[arg(long, default_value = "target/bench/knet-1g.etl")]
    network_input: PathBuf,
    /// The corpus file for the comparison with dissect.etl.
    #[arg(long, default_value = "../shared/corpus/perfview__net.4.5.x86.PerfViewData.etl")]
    compare: PathBuf,
}

use crate::bench_info::DISSECT_WALK;

/// dissect.etl producing what `nettrail dump` prints from each record's header.
const DISSECT_JSONL: &str = "
import json, sys
from dissect.etl.etl import ETL
with open(sys.argv[1], 'rb') as f:
    for r in ETL(f):
        h = r.header
        sys.stdout.write(json.dumps({
            'provider_guid': str(h.provider_id), 'timestamp': str(h.timestamp),
            'pid': getattr(h, 'process_id', None), 'tid': getattr(h, 'thread_id', None),
            'version': h.version, 'size': r.size,
        }) + '\\n')
";

/// The binary the benchmarks time: linked as `cargo xtask dist` links it.
pub fn nettrail_binary() -> anyhow::Result<PathBuf> {
    crate::dist::build("release")
}

/// Best wall time of `runs` runs, stdout discarded.
fn best_of(runs: u32, mut command: impl FnMut() -> Command) -> anyhow::Result<Duration> {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let mut c = command();
        let start = Instant::now();
        let status = c.stdout(Stdio::null()).status().with_context(|| format!("{c:?}"))?;
        let took = start.elapsed();
        if !status.success() {
            bail!("{c:?} failed");
        }
        best = best.min(took);
    }
    Ok(best)
}

/// Best wall time and the largest peak resident set size (VmHWM, read from
/// /proc while the run lasts) of `runs` runs.
fn best_with_peak_rss(runs: u32, mut command: impl FnMut() -> Command) -> anyhow::Result<(Duration, u64)> {
    let (mut best, mut peak) = (Duration::MAX, 0u64);
    for _ in 0..runs {
        let mut c = command();
        let start = Instant::now();
        let mut child = c.stdout(Stdio::null()).spawn().with_context(|| format!("{c:?}"))?;
        let status_file = format!("/proc/{}/status", child.id());
        let status = loop {
            if let Ok(text) = std::fs::read_to_string(&status_file)
                && let Some(kb) = text
                    .lines()
                    .find_map(|l| l.strip_prefix("VmHWM:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
            if let Some(status) = child.try_wait()? {
                break status;
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let took = start.elapsed();
        if !status.success() {
            bail!("{c:?} failed");
        }
        best = best.min(took);
    }
    Ok((best, peak))
}

/// Times each (label, arguments) run of nettrail on `input` (no symbol path
/// from the environment) and prints a table row with its peak RSS.
fn timed_with_peak_rss(nettrail: &Path, runs: u32, input: &Path, jobs: &[(&str, &[&str])]) -> anyhow::Result<()> {
    let size = std::fs::metadata(input)?.len();
    let shown = if size >= 1_000_000_000 {
        format!("{:.2} GB", size as f64 / 1e9)
    } else {
        format!("{:.1} MB", size as f64 / 1e6)
    };
    for (label, argv) in jobs {
        let (took, peak) = best_with_peak_rss(runs, || {
            let mut c = Command::new(nettrail);
            c.args(*argv).arg(input).env_remove("_NT_SYMBOL_PATH");
            c
        })?;
        println!(
            "| {label} | {} ({shown}) | {:.3} s, peak RSS {:.0} MB | {:.0} MB/s |",
            input.display(),
            took.as_secs_f64(),
            peak as f64 / 1e6,
            mb_per_s(size, took)
        );
    }
    Ok(())
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let nettrail = nettrail_binary()?;
    if !args.input.exists() {
        crate::make_bench_input(
            Path::new("../shared/corpus/perfview__net.4.5.x86.PerfViewData.etl"),
            1024,
            false,
            &args.input,
        )?;
    }
    let size = std::fs::metadata(&args.input)?.len();
    // Warm the page cache so runs measure parsing, not the disk.
    best_of(1, || {
        let mut c = Command::new("cat");
        c.arg(&args.input);
        c
    })?;
    println!("| measurement | input | best of {} | throughput |", args.runs);
    println!("|---|---|---|---|");
    for (label, argv) in [
        ("`nettrail info`", vec!["info", "--quiet"]),
        ("`nettrail info --format json`", vec!["info", "--quiet", "--format", "json"]),
        ("`nettrail dump --format jsonl > /dev/null` (decoded)", vec!["dump", "--quiet", "--format", "jsonl"]),
        ("`nettrail dump --raw > /dev/null`", vec!["dump", "--quiet", "--raw"]),
    ] {
        let took = best_of(args.runs, || {
            let mut c = Command::new(&nettrail);
            c.args(&argv).arg(&args.input);
            c
        })?;
        println!(
            "| {label} | {} ({:.2} GB) | {:.3} s | {:.0} MB/s |",
            args.input.display(),
            size as f64 / 1e9,
            took.as_secs_f64(),
            mb_per_s(size, took)
        );
    }

    // The network model on a network-heavy gigabyte.
    if !args.network_input.exists() {
        crate::make_bench_input(Path::new("../shared/corpus/tx__KernelNetwork.etl"), 1024, false, &args.network_input)?;
    }
    let runs = args.runs;
    timed_with_peak_rss(
        &nettrail,
        runs,
        &args.network_input,
        &[
            ("`nettrail requests --format csv > /dev/null`", &["requests", "--quiet", "--format", "csv"]),
            ("`nettrail connections --format csv > /dev/null`", &["connections", "--quiet", "--format", "csv"]),
        ],
    )?;

    // Stitching: a synthesized load where every request comes from a
    // thread-pool work item posted with a stack.
    let stitch_input = args.network_input.with_file_name("handoffs-20k.etl");
    if !stitch_input.exists() {
        eprintln!("writing {} (20 000 requests from thread-pool work items)", stitch_input.display());
        std::fs::write(&stitch_input, nettrail_synth::scenarios::handoff_load(20_000)?)?;
    }
    let symbols = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/symbols/tests/data");
    timed_with_peak_rss(
        &nettrail,
        runs,
        &stitch_input,
        &[
            ("`nettrail requests --format csv > /dev/null`", &["requests", "--quiet", "--format", "csv"]),
            (
                "`nettrail requests --stacks full --format csv > /dev/null`",
                &["requests", "--quiet", "--stacks", "full", "--format", "csv"],
            ),
            (
                "`nettrail requests --stacks full --symbols … --format csv > /dev/null`",
                &["requests", "--quiet", "--stacks", "full", "--format", "csv", "--symbols", symbols],
            ),
        ],
    )?;

    // The views of the same 20 000 requests: the HTML report and the exports.
    let out = std::env::temp_dir().join("nettrail-bench");
    std::fs::create_dir_all(&out)?;
    let path = |name: &str| out.join(name).display().to_string();
    let (html, har, perfetto, parquet) =
        (path("report.html"), path("trace.har"), path("trace.perfetto.json"), path("parquet"));
    timed_with_peak_rss(
        &nettrail,
        runs,
        &stitch_input,
        &[
            ("`nettrail view -o report.html`", &["view", "--quiet", "-o", &html]),
            ("`nettrail export --format har`", &["export", "--quiet", "--format", "har", "-o", &har]),
            ("`nettrail export --format perfetto`", &["export", "--quiet", "--format", "perfetto", "-o", &perfetto]),
            ("`nettrail export --format parquet`", &["export", "--quiet", "--format", "parquet", "-o", &parquet]),
        ],
    )?;

    // The same jobs on a corpus file, by nettrail and by dissect.etl.
    let python = nettrail_testkit::python_peers().map_err(anyhow::Error::msg)?;
    let compare_size = std::fs::metadata(&args.compare)?.len();
    let ours = |argv: &'static [&'static str]| {
        best_of(args.runs.max(10), || {
            let mut c = Command::new(&nettrail);
            c.args(argv).arg(&args.compare);
            c
        })
    };
    let theirs = |script: &'static str| {
        best_of(2, || {
            let mut c = Command::new(&python);
            c.args(["-c", script]).arg(&args.compare);
            c
        })
    };
    let rows = [
        ("`nettrail info` (counts and decodes every event)", ours(&["info", "--quiet"])?),
        ("dissect.etl 3.14: walk every record", theirs(DISSECT_WALK)?),
        ("`nettrail dump --raw` (record fields as JSON lines)", ours(&["dump", "--quiet", "--raw"])?),
        ("dissect.etl 3.14: header fields of every record as JSON lines", theirs(DISSECT_JSONL)?),
        ("`nettrail dump` (decoded, as JSON lines)", ours(&["dump", "--quiet"])?),
    ];
    let name = args.compare.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for (label, took) in &rows {
        println!(
            "| {label} | {name} ({:.1} MB) | {:.3} s | {:.1} MB/s |",
            compare_size as f64 / 1e6,
            took.as_secs_f64(),
            mb_per_s(compare_size, *took)
        );
    }
    println!();
    println!("- counting (`info`) vs dissect's walk: {:.0}× faster", rows[1].1.as_secs_f64() / rows[0].1.as_secs_f64());
    println!(
        "- `dump --raw` vs dissect producing the same fields: {:.0}× faster",
        rows[3].1.as_secs_f64() / rows[2].1.as_secs_f64()
    );
    println!(
        "- decoded `dump` vs dissect producing header fields only: {:.0}× faster",
        rows[3].1.as_secs_f64() / rows[4].1.as_secs_f64()
    );
    Ok(())
}
