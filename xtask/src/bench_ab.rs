//! `cargo xtask bench-ab`: builds of `nettrail` on one command, run in
//! turns (A, B, A, B, …) so that each round sees the same moment of a
//! shared machine; the median wall and CPU time of each. The tables of
//! docs/performance.md that compare a pass' builds are made so.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Rounds (each runs every build once, in turn); the median is reported.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// A build to time (repeat the option: the first is the one compared with).
    #[arg(long, required = true)]
    nettrail: Vec<PathBuf>,
    /// The command, after `--` (its output is discarded).
    #[arg(last = true, required = true)]
    args: Vec<String>,
}

/// CPU time (user and system) of the children this process has waited
/// for: `/proc/self/stat`'s cutime and cstime, in the 10 ms ticks Linux
/// counts them in. `None` where there is no such file.
fn children_cpu() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let tick = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(Duration::from_millis(10 * (tick(13)? + tick(14)?)))
}

/// Wall and CPU time of one run.
fn run_once(binary: &Path, args: &[String]) -> anyhow::Result<(Duration, Option<Duration>)> {
    let cpu_before = children_cpu();
    let start = Instant::now();
    let status = Command::new(binary)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .with_context(|| binary.display().to_string())?;
    let wall = start.elapsed();
    // Exit code 2 is a damaged trace read past its damage: a run like any other.
    if !status.success() && status.code() != Some(2) {
        bail!("{} {args:?} exited with {status}", binary.display());
    }
    let cpu = children_cpu().zip(cpu_before).map(|(after, before)| after.saturating_sub(before));
    Ok((wall, cpu))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    // One untimed run of each warms the page cache.
    for binary in &args.nettrail {
        run_once(binary, &args.args)?;
    }
    let mut times = vec![(Vec::new(), Vec::new()); args.nettrail.len()];
    for round in 0..args.rounds.max(1) {
        for (binary, (walls, cpus)) in args.nettrail.iter().zip(&mut times) {
            let (wall, cpu) = run_once(binary, &args.args)?;
            walls.push(wall);
            cpus.extend(cpu);
        }
        eprint!("\rround {}/{}", round + 1, args.rounds.max(1));
    }
    eprintln!();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1e3);
    println!("`nettrail {}`, {} rounds:\n", args.args.join(" "), args.rounds.max(1));
    println!("| build | wall (median) | wall (min) | CPU (median, 10 ms ticks) |");
    println!("|---|---|---|---|");
    for (binary, (walls, cpus)) in args.nettrail.iter().zip(times) {
        let min = walls.iter().min().copied().unwrap_or_default();
        let cpu = if cpus.is_empty() { "-".to_string() } else { ms(median(cpus)) };
        println!("| {} | {} | {} | {cpu} |", binary.display(), ms(median(walls)), ms(min));
    }
    Ok(())
}
