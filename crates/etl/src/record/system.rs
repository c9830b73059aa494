//! SYSTEM_TRACE_HEADER (0x20 bytes), its COMPACT form (0x18) and
//! PERFINFO_TRACE_HEADER (0x10): the classic kernel records.
//!
//! ```text
//! 0x00 u16 version word: low byte event version, 0x8000 PEBS index follows,
//!          0x0700 number of PMC counters that follow
//! 0x02 u8  header type        0x03 u8 0xC0
//! 0x04 u16 size               0x06 u16 hook id = group << 8 | opcode
//! SYSTEM/COMPACT: 0x08 u32 thread id, 0x0C u32 process id, 0x10 u64 timestamp
//! SYSTEM only:    0x18 u32 kernel time, 0x1C u32 user time
//! PERFINFO:       0x08 u64 timestamp (no thread or process id)
//! ```

use super::{CpuTime, HeaderKind, KernelHook, Record, checked_size};
use crate::bytes::{u16_of, u32_of, u64_of};
use crate::error::ErrorKind;
use crate::kernel;

/// The header's length, where the counters after it end, and the record's size (checked).
fn sizes(data: &[u8], kind: HeaderKind) -> Result<(usize, usize, usize), ErrorKind> {
    let header_len = match kind {
        HeaderKind::System32 | HeaderKind::System64 => 0x20,
        HeaderKind::Compact32 | HeaderKind::Compact64 => 0x18,
        _ => 0x10,
    };
    // Every kernel header has at least the 0x10 bytes of the PERFINFO form.
    // (Errors are made only when needed: an error has a destructor, and
    // one made and dropped for every record showed in profiles.)
    let Some(h) = data.first_chunk::<0x10>() else {
        return Err(ErrorKind::BadRecordSize { size: 0, minimum: header_len, remaining: data.len() });
    };
    let version_word = u16_of(h, 0);
    let pebs = if version_word & 0x8000 != 0 { 8 } else { 0 };
    let pmc = usize::from((version_word >> 8) & 0x7) * 8;
    let counters_end = header_len + pebs + pmc;
    Ok((header_len, counters_end, checked_size(u16_of(h, 4), counters_end, data)?))
}

/// The raw time and size of the kernel record at the start of `data`, as
/// [`parse`] checks and reads them.
pub(super) fn frame(data: &[u8], kind: HeaderKind) -> Result<(u64, usize), ErrorKind> {
    let (_, _, size) = sizes(data, kind)?;
    // The size check covers the header, and so the time in it.
    Ok((crate::bytes::u64_at(data, kind.time_offset()).unwrap_or(0), size))
}

#[inline]
pub(super) fn parse(data: &[u8], kind: HeaderKind) -> Result<Record<'_>, ErrorKind> {
    let (header_len, counters_end, size) = sizes(data, kind)?;
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: header_len, remaining: data.len() };
    let h: &[u8; 0x10] = data.first_chunk().ok_or_else(short)?;
    let version_word = u16_of(h, 0);
    let hook_id = u16_of(h, 6);

    let hook = KernelHook { group: (hook_id >> 8) as u8, opcode: hook_id as u8 };
    let mut r = Record::empty(kind, size as u16, kind.pointer_size().unwrap_or(8));
    r.hook = Some(hook);
    r.provider = kernel::provider_of(hook).unwrap_or_default();
    r.version = version_word as u8;
    r.opcode = hook.opcode;
    match header_len {
        0x10 => r.timestamp = u64_of(h, 8),
        _ => {
            // The size check above guarantees the 0x18 or 0x20 header bytes.
            let h: &[u8; 0x18] = data.first_chunk().ok_or_else(short)?;
            r.thread_id = Some(u32_of(h, 8));
            r.process_id = Some(u32_of(h, 0x0C));
            r.timestamp = u64_of(h, 0x10);
            if let Some(h) = data.first_chunk::<0x20>().filter(|_| header_len == 0x20) {
                r.cpu_time = CpuTime::KernelUser { kernel: u32_of(h, 0x18), user: u32_of(h, 0x1C) };
            }
        }
    }
    r.performance_counters = data.get(header_len..counters_end).unwrap_or_default();
    r.payload = data.get(counters_end..size).unwrap_or_default();
    Ok(r)
}
