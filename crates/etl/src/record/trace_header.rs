//! EVENT_TRACE_HEADER (0x30 bytes) and EVENT_INSTANCE_GUID_HEADER (0x48):
//! classic (MOF) provider events, such as the metadata and image-identity
//! events xperf, WPR and PerfView add when they merge a trace.
//!
//! ```text
//! 0x00 u16 size  0x02 u8 header type  0x03 u8 0xC0
//! 0x04 u8 class type (opcode)  0x05 u8 class level  0x06 u16 class version
//! 0x08 u32 thread id  0x0C u32 process id  0x10 u64 timestamp
//! 0x18 GUID event class  0x28 u32 kernel time + u32 user time
//! INSTANCE: 0x30 u32 instance id, 0x34 u32 parent instance id, 0x38 GUID parent
//! ```

use super::{CpuTime, HeaderKind, Record, checked_size};
use crate::bytes::{u8_at, u16_at, u32_at, u64_at};
use crate::error::ErrorKind;
use crate::guid::Guid;

/// The instance fields of an EVENT_INSTANCE_GUID_HEADER.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InstanceInfo {
    pub instance_id: u32,
    pub parent_instance_id: u32,
    pub parent_guid: Guid,
}

pub(super) fn parse(data: &[u8], kind: HeaderKind) -> Result<Record<'_>, ErrorKind> {
    let instance = matches!(kind, HeaderKind::Instance32 | HeaderKind::Instance64);
    let header_len = if instance { 0x48 } else { 0x30 };
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: header_len, remaining: data.len() };
    let h = data.get(..header_len).ok_or_else(short)?;
    let size = checked_size(u16_at(h, 0).ok_or_else(short)?, header_len, data)?;

    let mut r = Record::empty(kind, size as u16, kind.pointer_size().unwrap_or(8));
    r.opcode = u8_at(h, 0x04).ok_or_else(short)?;
    r.level = u8_at(h, 0x05).ok_or_else(short)?;
    // EVENT_DESCRIPTOR.Version is 8 bits; consumers truncate the class version.
    r.version = u16_at(h, 0x06).ok_or_else(short)? as u8;
    r.thread_id = u32_at(h, 0x08);
    r.process_id = u32_at(h, 0x0C);
    r.timestamp = u64_at(h, 0x10).ok_or_else(short)?;
    r.provider = Guid::read(h, 0x18).ok_or_else(short)?;
    r.cpu_time =
        CpuTime::KernelUser { kernel: u32_at(h, 0x28).ok_or_else(short)?, user: u32_at(h, 0x2C).ok_or_else(short)? };
    if instance {
        r.instance = Some(InstanceInfo {
            instance_id: u32_at(h, 0x30).ok_or_else(short)?,
            parent_instance_id: u32_at(h, 0x34).ok_or_else(short)?,
            parent_guid: Guid::read(h, 0x38).ok_or_else(short)?,
        });
    }
    r.payload = data.get(header_len..size).unwrap_or_default();
    Ok(r)
}
