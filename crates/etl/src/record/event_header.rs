//! EVENT_HEADER records (0x50 bytes): manifest, TraceLogging and EventSource
//! events — every modern provider.
//!
//! ```text
//! 0x00 u16 size  0x02 u8 header type (0x12/0x13)  0x03 u8 0xC0
//! 0x04 u16 flags 0x06 u16 event property
//! 0x08 u32 thread id  0x0C u32 process id  0x10 u64 timestamp
//! 0x18 GUID provider id
//! 0x28 EVENT_DESCRIPTOR: u16 id, u8 version, u8 channel, u8 level, u8 opcode, u16 task, u64 keyword
//! 0x38 u32 kernel time + u32 user time, or u64 processor time
//! 0x40 GUID activity id
//! 0x50 extended data items (if flags & EXTENDED_INFO), then user data
//! ```
//! The pointer width comes from the header type: on disk the flag bits for
//! 32/64-bit headers are not set (consumers synthesize them).

use super::{CpuTime, HeaderKind, Record, checked_size, event_header_flags as flags};
use crate::bytes::{guid_of, u16_of, u32_of, u64_of};
use crate::error::ErrorKind;
use crate::extended::ExtendedItems;

const HEADER_LEN: usize = 0x50;

/// The time and size of a record without extended data items, checked as
/// [`parse`] checks them; `None` for one with items (their walk can fail:
/// [`parse`] reads them).
pub(super) fn frame(data: &[u8]) -> Result<Option<(u64, usize)>, ErrorKind> {
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: HEADER_LEN, remaining: data.len() };
    let h: &[u8; HEADER_LEN] = data.first_chunk().ok_or_else(short)?;
    if u16_of(h, 0x04) & flags::EXTENDED_INFO != 0 {
        return Ok(None);
    }
    let size = checked_size(u16_of(h, 0), HEADER_LEN, data)?;
    Ok(Some((u64_of(h, 0x10), size)))
}

#[inline]
pub(super) fn parse(data: &[u8], kind: HeaderKind) -> Result<Record<'_>, ErrorKind> {
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: HEADER_LEN, remaining: data.len() };
    let h: &[u8; HEADER_LEN] = data.first_chunk().ok_or_else(short)?;
    let size = checked_size(u16_of(h, 0), HEADER_LEN, data)?;
    let record = data.get(..size).ok_or_else(short)?;

    let mut r = Record::empty(kind, size as u16, kind.pointer_size().unwrap_or(8));
    r.flags = u16_of(h, 0x04);
    r.event_property = u16_of(h, 0x06);
    r.thread_id = Some(u32_of(h, 0x08));
    r.process_id = Some(u32_of(h, 0x0C));
    r.timestamp = u64_of(h, 0x10);
    r.provider = guid_of(h, 0x18);
    r.id = u16_of(h, 0x28);
    r.version = h[0x2A];
    r.channel = h[0x2B];
    r.level = h[0x2C];
    r.opcode = h[0x2D];
    r.task = u16_of(h, 0x2E);
    r.keywords = u64_of(h, 0x30);
    r.cpu_time = if r.flags & (flags::PRIVATE_SESSION | flags::NO_CPUTIME) != 0 {
        CpuTime::Processor(u64_of(h, 0x38))
    } else {
        CpuTime::KernelUser { kernel: u32_of(h, 0x38), user: u32_of(h, 0x3C) }
    };
    r.activity_id = guid_of(h, 0x40);

    let body = record.get(HEADER_LEN..).unwrap_or_default();
    if r.flags & flags::EXTENDED_INFO != 0 {
        let (items, rest) = ExtendedItems::split(body)?;
        r.extended = items;
        r.payload = rest;
    } else {
        r.payload = body;
    }
    Ok(r)
}
