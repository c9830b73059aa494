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
use crate::bytes::{u16_at, u32_at, u64_at};
use crate::error::ErrorKind;
use crate::kernel;

pub(super) fn parse(data: &[u8], kind: HeaderKind) -> Result<Record<'_>, ErrorKind> {
    let header_len = match kind {
        HeaderKind::System32 | HeaderKind::System64 => 0x20,
        HeaderKind::Compact32 | HeaderKind::Compact64 => 0x18,
        _ => 0x10,
    };
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: header_len, remaining: data.len() };
    let h = data.get(..header_len).ok_or_else(short)?;
    let version_word = u16_at(h, 0).ok_or_else(short)?;
    let size = u16_at(h, 4).ok_or_else(short)?;
    let hook_id = u16_at(h, 6).ok_or_else(short)?;
    let pebs = if version_word & 0x8000 != 0 { 8 } else { 0 };
    let pmc = usize::from((version_word >> 8) & 0x7) * 8;
    let size = checked_size(size, header_len + pebs + pmc, data)?;

    let hook = KernelHook { group: (hook_id >> 8) as u8, opcode: hook_id as u8 };
    let mut r = Record::empty(kind, size as u16, kind.pointer_size().unwrap_or(8));
    r.hook = Some(hook);
    r.provider = kernel::provider_of(hook).unwrap_or_default();
    r.version = version_word as u8;
    r.opcode = hook.opcode;
    match kind {
        HeaderKind::Perfinfo32 | HeaderKind::Perfinfo64 => {
            r.timestamp = u64_at(h, 8).ok_or_else(short)?;
        }
        _ => {
            r.thread_id = u32_at(h, 8);
            r.process_id = u32_at(h, 0x0C);
            r.timestamp = u64_at(h, 0x10).ok_or_else(short)?;
            if header_len == 0x20 {
                r.cpu_time = CpuTime::KernelUser {
                    kernel: u32_at(h, 0x18).ok_or_else(short)?,
                    user: u32_at(h, 0x1C).ok_or_else(short)?,
                };
            }
        }
    }
    let counters_end = header_len + pebs + pmc;
    r.performance_counters = data.get(header_len..counters_end).unwrap_or_default();
    r.payload = data.get(counters_end..size).unwrap_or_default();
    Ok(r)
}
