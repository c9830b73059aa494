//! Development tasks (`cargo xtask …`): the sample trace, synthesized
//! scenarios, benchmark inputs, the benchmark itself and the built-in
//! provider layouts. Nothing here ships in the `nettrail` binary.

mod bench;
mod bench_ab;
mod bench_info;
mod bench_scale;
mod bench_xpress;
mod dist;
mod gen_layouts;
mod hostile;
mod repeat;
mod synth;

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand, Debug)]
enum Task {
    /// Write the sample trace that ships in the repository (the synthesizer's demo scenario).
    Sample {
        #[arg(default_value = "samples/sample.etl")]
        output: PathBuf,
    },
    /// Write a synthesized scenario (`--list` shows them) to OUTPUT
    /// (default `target/scenarios/NAME.etl`).
    Synth {
        #[arg(required_unless_present = "list")]
        name: Option<String>,
        output: Option<PathBuf>,
        /// List the scenarios and what each shows.
        #[arg(long)]
        list: bool,
    },
    /// Write a long trace by repeating a real trace's buffers with shifted timestamps.
    BenchInput {
        /// The trace whose buffers are repeated.
        #[arg(long, default_value = "../shared/corpus/perfview__net.4.5.x86.PerfViewData.etl")]
        from: PathBuf,
        /// Size to reach, in MiB.
        #[arg(long, default_value_t = 1024)]
        mib: u64,
        /// Compress every buffer (XPRESS, as WPR writes traces).
        #[arg(long)]
        compress: bool,
        #[arg(default_value = "target/bench/net-1g.etl")]
        output: PathBuf,
    },
    /// Measure `nettrail` on the benchmark input and against dissect.etl; prints Markdown.
    Bench(bench::Args),
    /// Builds of `nettrail` on one command, run in turns; median wall and CPU time of each.
    BenchAb(bench_ab::Args),
    /// `nettrail info` against dissect.etl's record walk, run in turns; median and ratio per trace.
    BenchInfo(bench_info::Args),
    /// Every command's time, throughput and peak RSS on large inputs, next to the page-cache read speed.
    BenchScale(bench_scale::Args),
    /// XPRESS decompression throughput on the corpus' compressed buffers, against a reference decoder.
    BenchXpress(bench_xpress::Args),
    /// Build the `nettrail` binary to hand out (`target/dist/nettrail`; static on Linux with glibc).
    Dist {
        #[arg(long, default_value = "dist")]
        profile: String,
    },
    /// Seed the `xpress` fuzz target with the corpus' compressed buffers.
    FuzzSeeds {
        #[arg(default_value = "fuzz/corpus/xpress")]
        output: PathBuf,
    },
    /// Write one file per class of hostile input (seeds for the fuzzers, traces to try by hand).
    Hostile {
        #[arg(default_value = "target/hostile")]
        output: PathBuf,
    },
    /// Write the built-in layouts of the network providers and the synthesizer's per-build
    /// manifests from the manifests real Windows builds register (docs/decoding.md).
    GenLayouts {
        /// A clone of github.com/jdu2600/Windows10EtwEvents (read with `git show`).
        #[arg(long)]
        jdu: PathBuf,
        /// A clone of github.com/repnz/etw-providers-docs (read with `git show`).
        #[arg(long)]
        repnz: PathBuf,
        /// A clone of github.com/microsoft/msquic (read with `git show`).
        #[arg(long)]
        msquic: PathBuf,
        /// The reference directory (`manifests/*.man`, `manifests/windows11/`).
        #[arg(long, default_value = "../shared/reference")]
        reference: PathBuf,
        #[arg(long, default_value = "crates/decode/schemas/providers")]
        layouts: PathBuf,
        #[arg(long, default_value = "crates/synth/manifests")]
        synth: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    match Cli::parse().task {
        Task::Sample { output } => {
            let bytes = nettrail_synth::scenarios::sample()?;
            std::fs::write(&output, bytes).with_context(|| output.display().to_string())?;
            eprintln!("wrote {}", output.display());
        }
        Task::Synth { name, output, list } => synth::run(name.as_deref(), output.as_deref(), list)?,
        Task::BenchInput { from, mib, compress, output } => {
            make_bench_input(&from, mib, compress, &output)?;
        }
        Task::Bench(args) => bench::run(&args)?,
        Task::BenchAb(args) => bench_ab::run(&args)?,
        Task::BenchInfo(args) => bench_info::run(&args)?,
        Task::BenchScale(args) => bench_scale::run(&args)?,
        Task::BenchXpress(args) => bench_xpress::run(&args)?,
        Task::Dist { profile } => eprintln!("built {}", dist::build(&profile)?.display()),
        Task::FuzzSeeds { output } => bench_xpress::write_fuzz_seeds(&output)?,
        Task::Hostile { output } => hostile::run(&output)?,
        Task::GenLayouts { jdu, repnz, msquic, reference, layouts, synth } => gen_layouts::run(
            &gen_layouts::Inputs { jdu, repnz, msquic, reference },
            &gen_layouts::Outputs { layouts, synth },
        )?,
    }
    Ok(())
}

pub fn make_bench_input(
    from: &std::path::Path,
    mib: u64,
    compress: bool,
    output: &std::path::Path,
) -> anyhow::Result<()> {
    let source = std::fs::read(from).with_context(|| from.display().to_string())?;
    if let Some(dir) = output.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let file = std::fs::File::create(output).with_context(|| output.display().to_string())?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    let rounds = repeat::repeat(&source, mib << 20, compress, &mut out)?;
    std::io::Write::flush(&mut out)?;
    eprintln!("wrote {} ({rounds} rounds of {})", output.display(), from.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    use nettrail_etl::{Summary, Trace};

    #[test]
    fn the_shipped_sample_is_the_synthesizers_demo() {
        let shipped = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/sample.etl")).unwrap();
        let made = nettrail_synth::scenarios::sample().unwrap();
        assert!(shipped == made, "samples/sample.etl is stale: run `cargo xtask sample`");
        let trace = Trace::parse(&shipped).unwrap();
        let summary = Summary::compute(&trace);
        assert!(summary.errors.is_empty());
        assert!(summary.compressed_buffers > 0, "compressed, as wpr -stop writes it");
        let names: Vec<&str> = summary.providers.iter().filter_map(|p| p.name.as_deref()).collect();
        for provider in ["Microsoft-Windows-TCPIP", "Microsoft-Windows-Winsock-AFD", "Microsoft-Windows-WebIO"] {
            assert!(names.contains(&provider), "{provider} in {names:?}");
        }
    }

    #[test]
    fn repeated_buffers_read_as_one_long_trace() {
        let source = std::fs::read(nettrail_testkit::corpus_file("tx__KernelNetwork.etl")).unwrap();
        let mut out = Vec::new();
        let rounds = super::repeat::repeat(&source, 5 << 20, false, &mut out).unwrap();
        assert_eq!(rounds, 5);
        let trace = Trace::parse(&out).unwrap();
        let summary = Summary::compute(&trace);
        assert!(summary.errors.is_empty());
        assert_eq!(summary.events, 1 + 5 * 8923);
        // Compressed, the same events in fewer bytes.
        let mut packed = Vec::new();
        let rounds = super::repeat::repeat(&source, 2 << 20, true, &mut packed).unwrap();
        let packed_trace = Trace::parse(&packed).unwrap();
        let packed_summary = Summary::compute(&packed_trace);
        assert!(packed_summary.errors.is_empty());
        assert_eq!(packed_summary.compressed_buffers, rounds * 128);
        assert_eq!(packed_summary.events, 1 + rounds * 8923);
        assert!(rounds > 5, "{rounds} rounds of compressed buffers in 2 MiB");
        let mut stream = trace.events();
        let mut last = 0;
        let mut n = 0;
        while let Some(e) = stream.next() {
            let e = e.unwrap();
            assert!(e.timestamp >= last);
            last = e.timestamp;
            n += 1;
        }
        assert_eq!(n, summary.events);
        // The header's end time moved to the end of the last round.
        let source_trace = Trace::parse(&source).unwrap();
        assert!(trace.header().end_time > source_trace.header().end_time + 4 * 40 * 10_000_000);
    }
}
