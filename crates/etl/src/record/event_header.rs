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
use crate::bytes::{u8_at, u16_at, u32_at, u64_at};
use crate::error::ErrorKind;
use crate::extended::ExtendedItems;
use crate::guid::Guid;

const HEADER_LEN: usize = 0x50;

pub(super) fn parse(data: &[u8], kind: HeaderKind) -> Result<Record<'_>, ErrorKind> {
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: HEADER_LEN, remaining: data.len() };
    let h = data.get(..HEADER_LEN).ok_or_else(short)?;
    let size = checked_size(u16_at(h, 0).ok_or_else(short)?, HEADER_LEN, data)?;
    let record = data.get(..size).ok_or_else(short)?;

    let mut r = Record::empty(kind, size as u16, kind.pointer_size().unwrap_or(8));
    r.flags = u16_at(h, 0x04).ok_or_else(short)?;
    r.event_property = u16_at(h, 0x06).ok_or_else(short)?;
    r.thread_id = u32_at(h, 0x08);
    r.process_id = u32_at(h, 0x0C);
    r.timestamp = u64_at(h, 0x10).ok_or_else(short)?;
    r.provider = Guid::read(h, 0x18).ok_or_else(short)?;
    r.id = u16_at(h, 0x28).ok_or_else(short)?;
    r.version = u8_at(h, 0x2A).ok_or_else(short)?;
    r.channel = u8_at(h, 0x2B).ok_or_else(short)?;
    r.level = u8_at(h, 0x2C).ok_or_else(short)?;
    r.opcode = u8_at(h, 0x2D).ok_or_else(short)?;
    r.task = u16_at(h, 0x2E).ok_or_else(short)?;
    r.keywords = u64_at(h, 0x30).ok_or_else(short)?;
    r.cpu_time = if r.flags & (flags::PRIVATE_SESSION | flags::NO_CPUTIME) != 0 {
        CpuTime::Processor(u64_at(h, 0x38).ok_or_else(short)?)
    } else {
        CpuTime::KernelUser { kernel: u32_at(h, 0x38).ok_or_else(short)?, user: u32_at(h, 0x3C).ok_or_else(short)? }
    };
    r.activity_id = Guid::read(h, 0x40).ok_or_else(short)?;

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
