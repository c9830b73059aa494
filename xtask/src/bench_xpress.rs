//! `cargo xtask bench-xpress`: XPRESS decompression throughput on the
//! corpus' real compressed buffers, one core, in bytes of output per second:
//! nettrail's decoder, its simple token-at-a-time loop (the reference the
//! fast loop is checked against), and the `rust-lzxpress` crate (an
//! independent decoder, here only). Each round times every decoder once,
//! in turn; the median of the rounds is reported.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nettrail_etl::buffer::{BUFFER_HEADER_SIZE, BufferWalk};
use nettrail_etl::xpress;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Timed rounds per trace (each round runs every decoder once).
    #[arg(long, default_value_t = 7)]
    rounds: usize,
    /// Bytes of output each timing decompresses at least (whole passes over the trace's buffers).
    #[arg(long, default_value_t = 200 << 20)]
    bytes: usize,
    /// Time only the decoder of this name (for a profiler).
    #[arg(long)]
    only: Option<String>,
    /// Only the traces whose file name contains this.
    #[arg(long)]
    trace: Option<String>,
}

/// The compressed traces of the corpus, and the sample.
const TRACES: &[&str] = &[
    "perfview__net.4.5.2.x86.etl",
    "demikernel__PktMon.etl",
    "perfview__SelfDescribingSingleEvent.etl",
    "perfview__smallEtlFile.etl",
];

/// One compressed buffer: its stream and the bytes it expands to.
struct Stream {
    data: Vec<u8>,
    expanded: usize,
}

fn streams(path: &Path) -> anyhow::Result<Vec<Stream>> {
    let bytes = std::fs::read(path).with_context(|| path.display().to_string())?;
    let mut out = Vec::new();
    for buffer in BufferWalk::new(&bytes).map_while(Result::ok) {
        if buffer.header.is_compressed() && !buffer.truncated {
            let expanded = (buffer.header.filled as usize).saturating_sub(BUFFER_HEADER_SIZE);
            out.push(Stream { data: buffer.raw[BUFFER_HEADER_SIZE..].to_vec(), expanded });
        }
    }
    Ok(out)
}

type Decoder = fn(&Stream, &mut Vec<u8>) -> usize;

fn fast(s: &Stream, out: &mut Vec<u8>) -> usize {
    out.clear();
    let _ = xpress::decompress_into(&s.data, s.expanded, out);
    out.len()
}

fn simple(s: &Stream, out: &mut Vec<u8>) -> usize {
    out.clear();
    let _ = xpress::decompress_simple(&s.data, s.expanded, out);
    out.len()
}

/// rust-lzxpress decodes to the end of the input (it has no output limit).
fn lzxpress(s: &Stream, _: &mut Vec<u8>) -> usize {
    lzxpress::data::decompress(&s.data).map_or(0, |v| v.len().min(s.expanded))
}

/// Time of `passes` passes of `decode` over every stream.
fn time(streams: &[Stream], passes: usize, decode: Decoder, out: &mut Vec<u8>) -> Duration {
    let start = Instant::now();
    let mut produced = 0usize;
    for _ in 0..passes {
        for s in streams {
            produced += decode(s, out);
        }
    }
    std::hint::black_box(produced);
    start.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// Writes the fuzz target `xpress`'s seeds: every compressed buffer of the
/// corpus as its input (two bytes of limit, in units of 4, then the stream).
pub fn write_fuzz_seeds(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)?;
    let corpus = nettrail_testkit::corpus_dir();
    let mut n = 0;
    for trace in TRACES {
        for s in streams(&corpus.join(trace))? {
            let limit = u16::try_from(s.expanded.div_ceil(4)).unwrap_or(u16::MAX);
            let mut seed = limit.to_le_bytes().to_vec();
            seed.extend_from_slice(&s.data);
            std::fs::write(dir.join(format!("{trace}.{n}")), seed)?;
            n += 1;
        }
    }
    eprintln!("wrote {n} seeds to {}", dir.display());
    Ok(())
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let corpus = nettrail_testkit::corpus_dir();
    let mut paths: Vec<PathBuf> = TRACES.iter().map(|t| corpus.join(t)).collect();
    paths.push(PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../samples/sample.etl")));
    let decoders: [(&str, Decoder); 3] =
        [("nettrail", fast), ("nettrail simple loop", simple), ("rust-lzxpress 0.7.1", lzxpress)];
    println!("| trace | buffers | output | {} |", decoders.map(|(n, _)| n).join(" | "));
    println!("|---|---|---|{}", "---|".repeat(decoders.len()));
    for path in paths {
        if args.trace.as_ref().is_some_and(|t| !path.to_string_lossy().contains(t.as_str())) {
            continue;
        }
        let streams = streams(&path)?;
        let expanded: usize = streams.iter().map(|s| s.expanded).sum();
        if expanded == 0 {
            bail!("{}: no compressed buffers", path.display());
        }
        // Every decoder must produce the buffers' bytes (the reference on the prefix it decodes).
        let mut out = Vec::new();
        for s in &streams {
            let mut reference = Vec::new();
            xpress::decompress_simple(&s.data, s.expanded, &mut reference).ok();
            fast(s, &mut out);
            if out != reference {
                bail!("{}: the fast loop differs from the simple one", path.display());
            }
            if let Ok(theirs) = lzxpress::data::decompress(&s.data)
                && theirs.get(..reference.len()) != Some(&reference[..])
            {
                bail!("{}: rust-lzxpress decodes other bytes", path.display());
            }
        }
        let passes = args.bytes.div_ceil(expanded).max(1);
        let mut times: Vec<Vec<Duration>> = vec![Vec::new(); decoders.len()];
        if args.only.is_none() {
            time(&streams, 1, fast, &mut out); // warm the caches
        }
        for _ in 0..args.rounds {
            for (i, (name, decode)) in decoders.iter().enumerate() {
                if args.only.as_ref().is_some_and(|only| name != only) {
                    times[i].push(Duration::MAX);
                    continue;
                }
                times[i].push(time(&streams, passes, *decode, &mut out));
            }
        }
        let cells: Vec<String> = times
            .into_iter()
            .map(|t| format!("{:.0} MB/s", (expanded * passes) as f64 / 1e6 / median(t).as_secs_f64()))
            .collect();
        println!(
            "| {} | {} | {:.1} MB | {} |",
            path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            streams.len(),
            expanded as f64 / 1e6,
            cells.join(" | ")
        );
    }
    Ok(())
}
