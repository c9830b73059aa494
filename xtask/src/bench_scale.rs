//! `cargo xtask bench-scale INPUT…`: every command's time, throughput and
//! peak resident memory on large inputs (the 1 GB and 10 GB benchmark
//! traces), next to the ceiling: how fast the machine reads the same file
//! from the page cache. A run whose resident memory passes `--rss-cap-mb`
//! is stopped and reported as such (a 10 GB trace must not take the
//! machine's memory).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Runs per measurement; the median is reported.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Stop a run whose resident memory passes this many MB.
    #[arg(long, default_value_t = 8000)]
    rss_cap_mb: u64,
    /// Skip `export --format parquet` (its dataset is ~1.6× the input: mind the disk).
    #[arg(long)]
    no_parquet: bool,
    /// The traces (made with `cargo xtask bench-input`).
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
}

/// What one run took: wall time, peak RSS (VmHWM) in bytes, and whether it was stopped at the cap.
struct Run {
    took: Duration,
    peak: u64,
    capped: bool,
}

fn status_kb(text: &str, field: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
}

fn run_once(mut c: Command, cap: u64) -> anyhow::Result<Run> {
    let start = Instant::now();
    let mut child = c.stdout(Stdio::null()).spawn().with_context(|| format!("{c:?}"))?;
    let status_file = format!("/proc/{}/status", child.id());
    let (mut peak, mut capped) = (0u64, false);
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            peak = peak.max(status_kb(&text, "VmHWM:").unwrap_or(0) * 1024);
            if status_kb(&text, "VmRSS:").unwrap_or(0) * 1024 > cap && !capped {
                child.kill()?;
                capped = true;
            }
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    if !status.success() && !capped {
        anyhow::bail!("{c:?} failed");
    }
    Ok(Run { took: start.elapsed(), peak, capped })
}

/// Seconds to read the file from the page cache (the second of two reads).
fn page_cache_read(path: &Path) -> anyhow::Result<Duration> {
    let mut buffer = vec![0u8; 1 << 20];
    let mut took = Duration::ZERO;
    for _ in 0..2 {
        let start = Instant::now();
        let mut f = std::fs::File::open(path)?;
        while f.read(&mut buffer)? > 0 {}
        took = start.elapsed();
    }
    Ok(took)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let nettrail = crate::bench::nettrail_binary()?;
    let out = std::env::temp_dir().join("nettrail-bench-scale");
    let parquet = out.join("dataset").display().to_string();
    let mut jobs: Vec<(&str, Vec<&str>)> = vec![
        ("`info`", vec!["info", "--quiet"]),
        ("`requests --format csv`", vec!["requests", "--quiet", "--format", "csv"]),
        ("`dump --format jsonl`", vec!["dump", "--quiet", "--format", "jsonl"]),
        ("`dump --raw`", vec!["dump", "--quiet", "--raw"]),
    ];
    if !args.no_parquet {
        jobs.push(("`export --format parquet`", vec!["export", "--quiet", "--format", "parquet", "-o", &parquet]));
    }
    println!("| input | command | median of {} | throughput | peak RSS |", args.runs);
    println!("|---|---|---|---|---|");
    for input in &args.inputs {
        let size = std::fs::metadata(input).with_context(|| input.display().to_string())?.len();
        let name = input.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let shown = format!("{name} ({:.2} GB)", size as f64 / 1e9);
        let ceiling = page_cache_read(input)?;
        println!(
            "| {shown} | reading the file (page cache) | {:.3} s | {:.0} MB/s | - |",
            ceiling.as_secs_f64(),
            size as f64 / 1e6 / ceiling.as_secs_f64()
        );
        for (label, argv) in &jobs {
            let mut runs = Vec::new();
            for _ in 0..args.runs {
                let _ = std::fs::remove_dir_all(&out);
                let mut c = Command::new(&nettrail);
                c.args(argv).arg(input).env_remove("_NT_SYMBOL_PATH");
                let run = run_once(c, args.rss_cap_mb * 1_000_000)?;
                let capped = run.capped;
                runs.push(run);
                if capped {
                    break;
                }
            }
            let _ = std::fs::remove_dir_all(&out);
            let peak = runs.iter().map(|r| r.peak).max().unwrap_or(0);
            if runs.iter().any(|r| r.capped) {
                let took = runs.iter().map(|r| r.took).max().unwrap_or_default();
                println!(
                    "| {shown} | {label} | stopped after {:.1} s | - | past the {} MB cap |",
                    took.as_secs_f64(),
                    args.rss_cap_mb
                );
                continue;
            }
            runs.sort_by_key(|r| r.took);
            let took = runs[runs.len() / 2].took;
            println!(
                "| {shown} | {label} | {:.3} s | {:.0} MB/s | {:.0} MB |",
                took.as_secs_f64(),
                size as f64 / 1e6 / took.as_secs_f64(),
                peak as f64 / 1e6
            );
        }
    }
    Ok(())
}
