//! A long benchmark trace made of a real trace's buffers: every data buffer is
//! written again and again, each round with its timestamps shifted past the
//! previous round, so the result reads like one long session (same providers,
//! same record mix, time order intact). Buffers are written uncompressed, or
//! each compressed again after its timestamps moved (`compress`: XPRESS, as
//! WPR writes them).

use std::io::Write;

use anyhow::{Context, bail};
use nettrail_etl::buffer::{BUFFER_HEADER_SIZE, BufferFlags};
use nettrail_etl::record::timestamp_offset;
use nettrail_etl::{Summary, Trace};
use rayon::prelude::*;

/// Where, in one buffer image, timestamps sit that must move with the round.
struct Template {
    image: Vec<u8>,
    offsets: Vec<usize>,
}

/// StackWalk (group 0x18) Stack, StackKeyKernel and StackKeyUser events name
/// the event they belong to by its timestamp, in the payload's first 8 bytes.
fn names_an_event_by_time(hook: nettrail_etl::record::KernelHook) -> bool {
    hook.group == 0x18 && matches!(hook.opcode, 32 | 37 | 38)
}

fn templates(trace: &Trace<'_>, compress: bool) -> anyhow::Result<Vec<Template>> {
    let logical = trace.header().buffer_size as usize;
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for info in trace.buffers().iter().skip(1) {
        let contents = trace.contents(&info, &mut scratch);
        if let Some(e) = contents.error {
            bail!("the source trace is damaged: {e}");
        }
        let mut image = contents.bytes.to_vec();
        if !compress {
            image.resize(logical.max(image.len()), 0xFF);
        }
        let mut offsets = vec![0x10]; // the buffer's own flush time
        for record in trace.records(&info, &contents) {
            let (at, record) = record?;
            let Some(ts) = timestamp_offset(&contents.bytes[at..]) else { continue };
            offsets.push(at + ts);
            if record.hook.is_some_and(names_an_event_by_time) {
                let payload_at = record.payload.as_ptr() as usize - contents.bytes.as_ptr() as usize;
                offsets.push(payload_at);
            }
        }
        // Uncompressed, the buffer is its logical size again; compressed,
        // its size is set once it is packed.
        let flags = u16::from_le_bytes([image[0x34], image[0x35]]) & !BufferFlags::COMPRESSED;
        let flags = if compress { flags | BufferFlags::COMPRESSED } else { flags };
        image[0x34..0x36].copy_from_slice(&flags.to_le_bytes());
        let size = image.len() as u32;
        image[0..4].copy_from_slice(&size.to_le_bytes());
        out.push(Template { image, offsets });
    }
    Ok(out)
}

fn shift_u64(image: &mut [u8], at: usize, by: u64) {
    if let Some(field) = image.get_mut(at..at + 8) {
        let v = u64::from_le_bytes(field.try_into().unwrap_or_default());
        field.copy_from_slice(&v.wrapping_add(by).to_le_bytes());
    }
}

/// One round's buffers: the templates with their timestamps moved `by`,
/// each compressed if the round is.
fn round(templates: &[Template], by: u64, compress: bool) -> Vec<Vec<u8>> {
    templates
        .par_iter()
        .map(|t| {
            let mut image = t.image.clone();
            for &at in &t.offsets {
                shift_u64(&mut image, at, by);
            }
            if compress {
                let packed = nettrail_etl::xpress::compress(&image[BUFFER_HEADER_SIZE..]);
                image.truncate(BUFFER_HEADER_SIZE);
                image.extend_from_slice(&packed);
                let size = image.len() as u32;
                image[0..4].copy_from_slice(&size.to_le_bytes());
            }
            image
        })
        .collect()
}

/// Writes `source` repeated until at least `target_bytes`, every buffer
/// compressed or not; returns the rounds written.
pub fn repeat(source: &[u8], target_bytes: u64, compress: bool, out: &mut impl Write) -> anyhow::Result<u64> {
    let trace = Trace::parse(source).context("reading the source trace")?;
    let summary = Summary::compute(&trace);
    let (Some(first), Some(last)) = (summary.first_timestamp, summary.last_timestamp) else {
        bail!("the source trace has no events");
    };
    // One second of session clock between rounds.
    let gap = u64::try_from(trace.clock().frequency()).unwrap_or(10_000_000);
    let period = last - first + gap;
    let templates = templates(&trace, compress)?;
    let first_round = round(&templates, 0, compress);
    let per_round: u64 = first_round.iter().map(|b| b.len() as u64).sum();
    if per_round == 0 {
        bail!("the source trace has only its header buffer");
    }
    let Some(header) = trace.buffers().get(0) else { bail!("the source trace has no buffer") };
    let mut header_image = source[..header.stored_len].to_vec();
    let rounds = target_bytes.saturating_sub(header_image.len() as u64).div_ceil(per_round).max(1);
    // The header's end time moves to the end of the last round.
    let end_time_at = BUFFER_HEADER_SIZE + 0x20 + 0x10;
    let ticks = u128::from(period * (rounds - 1));
    let end_shift = (ticks * 10_000_000 / trace.clock().frequency().max(1) as u128) as u64;
    shift_u64(&mut header_image, end_time_at, end_shift);
    out.write_all(&header_image)?;
    let mut buffers = first_round;
    for r in 0..rounds {
        if r > 0 {
            buffers = round(&templates, period * r, compress);
        }
        for b in &buffers {
            out.write_all(b)?;
        }
        if compress && r % 64 == 63 {
            eprint!("\rround {} of {rounds}", r + 1);
        }
    }
    Ok(rounds)
}
