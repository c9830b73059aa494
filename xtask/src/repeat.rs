//! A long benchmark trace made of a real trace's buffers: every data buffer is
//! written again and again, each round with its timestamps shifted past the
//! previous round, so the result reads like one long session (same providers,
//! same record mix, time order intact). Compressed source buffers are written
//! decompressed.

use std::io::Write;

use anyhow::{Context, bail};
use nettrail_etl::buffer::{BUFFER_HEADER_SIZE, BufferFlags};
use nettrail_etl::record::timestamp_offset;
use nettrail_etl::{Summary, Trace};

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

fn templates(trace: &Trace<'_>) -> anyhow::Result<Vec<Template>> {
    let logical = trace.header().buffer_size as usize;
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for info in trace.buffers().iter().skip(1) {
        let contents = trace.contents(info, &mut scratch);
        if let Some(e) = contents.error {
            bail!("the source trace is damaged: {e}");
        }
        let mut image = contents.bytes.to_vec();
        image.resize(logical.max(image.len()), 0xFF);
        let mut offsets = vec![0x10]; // the buffer's own flush time
        for record in trace.records(info, &contents) {
            let (at, record) = record?;
            let Some(ts) = timestamp_offset(&contents.bytes[at..]) else { continue };
            offsets.push(at + ts);
            if record.hook.is_some_and(names_an_event_by_time) {
                let payload_at = record.payload.as_ptr() as usize - contents.bytes.as_ptr() as usize;
                offsets.push(payload_at);
            }
        }
        // Written uncompressed: the buffer is its logical size again.
        let flags = u16::from_le_bytes([image[0x34], image[0x35]]) & !BufferFlags::COMPRESSED;
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

/// Writes `source` repeated until at least `target_bytes`; returns the rounds written.
pub fn repeat(source: &[u8], target_bytes: u64, out: &mut impl Write) -> anyhow::Result<u64> {
    let trace = Trace::parse(source).context("reading the source trace")?;
    let summary = Summary::compute(&trace);
    let (Some(first), Some(last)) = (summary.first_timestamp, summary.last_timestamp) else {
        bail!("the source trace has no events");
    };
    // One second of session clock between rounds.
    let gap = u64::try_from(trace.clock().frequency()).unwrap_or(10_000_000);
    let period = last - first + gap;
    let templates = templates(&trace)?;
    let per_round: u64 = templates.iter().map(|t| t.image.len() as u64).sum();
    if per_round == 0 {
        bail!("the source trace has only its header buffer");
    }
    let header = trace.buffers()[0];
    let mut header_image = source[..header.stored_len].to_vec();
    let rounds = target_bytes.saturating_sub(header_image.len() as u64).div_ceil(per_round).max(1);
    // The header's end time moves to the end of the last round.
    let end_time_at = BUFFER_HEADER_SIZE + 0x20 + 0x10;
    let ticks = u128::from(period * (rounds - 1));
    let end_shift = (ticks * 10_000_000 / trace.clock().frequency().max(1) as u128) as u64;
    shift_u64(&mut header_image, end_time_at, end_shift);
    out.write_all(&header_image)?;
    let mut image = Vec::new();
    for round in 0..rounds {
        let by = period * round;
        for t in &templates {
            image.clone_from(&t.image);
            for &at in &t.offsets {
                shift_u64(&mut image, at, by);
            }
            out.write_all(&image)?;
        }
    }
    Ok(rounds)
}
