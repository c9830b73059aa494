//! `cargo xtask hostile DIR`: one file per class of hostile input (issue 12),
//! built from the corpus, the sample and the synthesizer with the builders of
//! `nettrail_testkit::hostile` — to seed the fuzzers (`fuzz/corpus/trace`)
//! and to try nettrail by hand.

use std::path::Path;

use anyhow::Context;
use nettrail_etl::Trace;
use nettrail_testkit::corpus_file;
use nettrail_testkit::hostile;

pub fn run(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    let read = |name: &str| std::fs::read(corpus_file(name)).with_context(|| name.to_string());
    let compressed = read("perfview__SelfDescribingSingleEvent.etl")?;
    let plain = read("tx__KernelNetwork.etl")?;
    let sample = std::fs::read("samples/sample.etl").context("samples/sample.etl")?;
    let record = network_record(&sample)?;
    let mut hostile_strings = nettrail_synth::scenarios::hostile_strings()?;
    set_logger_name(&mut hostile_strings, "\u{1b}]0;pw\u{7}");
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("bomb-100.etl", hostile::decompression_bomb(&compressed, 100, 64 << 20)),
        ("bomb-1000.etl", hostile::decompression_bomb(&compressed, 1000, 64 << 20)),
        ("amplified.etl", hostile::event_amplification(&sample, &record, 40)),
        ("zero-size-middle.etl", hostile::zero_buffer_size(&plain, 40)),
        ("duplicated-buffer.etl", hostile::duplicated_buffer(&plain, 40)),
        ("cut-between-buffers.etl", hostile::cut_before_buffer(&plain, 100)),
        ("implausible-header.etl", hostile::implausible_header(&plain)),
        ("hostile-strings.etl", hostile_strings),
        ("text.etl", b"Date,Host,Bytes\n2026-01-15,example.com,12\n".to_vec()),
        ("zeros.etl", vec![0; 64 << 10]),
    ];
    for (name, bytes) in files {
        let path = dir.join(name);
        std::fs::write(&path, &bytes).with_context(|| path.display().to_string())?;
        eprintln!("{:>10} bytes  {}", bytes.len(), path.display());
    }
    Ok(())
}

/// The bytes of one network record of the sample (a WebIO event of a few
/// hundred bytes): the record the amplified trace repeats.
fn network_record(sample: &[u8]) -> anyhow::Result<Vec<u8>> {
    const WEBIO: &str = "50b3e73c-9370-461d-bb9f-26f32d68887d";
    let trace = Trace::parse(sample)?;
    let mut scratch = Vec::new();
    let mut best: Option<Vec<u8>> = None;
    for info in trace.buffers() {
        let contents = trace.contents(&info, &mut scratch);
        for (offset, record) in trace.records(&info, &contents).flatten() {
            let size = usize::from(record.size).next_multiple_of(8);
            if record.provider.to_string() == WEBIO && size <= 512 && best.as_ref().is_none_or(|b| b.len() < size) {
                best = Some(contents.bytes[offset..offset + size].to_vec());
            }
        }
    }
    best.context("the sample has no WebIO record")
}

/// Overwrites the logger name of a trace's header (in place: same length in UTF-16).
fn set_logger_name(bytes: &mut [u8], name: &str) {
    let at = hostile::logfile_payload(bytes) + hostile::logfile::LOGGER_NAME;
    for (i, unit) in name.encode_utf16().enumerate() {
        let p = at + 2 * i;
        if bytes[p..p + 2] == [0, 0] {
            break;
        }
        bytes[p..p + 2].copy_from_slice(&unit.to_le_bytes());
    }
}
