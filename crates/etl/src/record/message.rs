//! MESSAGE_TRACE_HEADER: WPP / TraceMessage records (marker 0x90).
//!
//! ```text
//! 0x00 u16 size  0x02 u8 reserved  0x03 u8 0x90
//! 0x04 u16 message number  0x06 u16 option flags
//! then, each present only if its flag is set, in this order:
//!   u32 sequence (0x01) · GUID message GUID (0x02) or u32 component id (0x04)
//!   · u64 timestamp (0x08 or 0x10) · u32 thread id + u32 process id (0x20)
//! then the packed WPP arguments (decoding them needs the TMF format data).
//! ```
//! Framing only: no trace in the corpus has WPP records, so the layout comes
//! from NTWMI and the TraceMessage documentation.

use super::{HeaderKind, Record, checked_size};
use crate::bytes::{u16_at, u32_at, u64_at};
use crate::error::ErrorKind;
use crate::guid::Guid;

const HEADER_LEN: usize = 8;

pub mod option_flags {
    pub const SEQUENCE: u16 = 0x0001;
    pub const GUID: u16 = 0x0002;
    pub const COMPONENT_ID: u16 = 0x0004;
    pub const TIMESTAMP: u16 = 0x0008;
    pub const PERFORMANCE_TIMESTAMP: u16 = 0x0010;
    pub const SYSTEM_INFO: u16 = 0x0020;
    pub const POINTER32: u16 = 0x0040;
    pub const POINTER64: u16 = 0x0080;
}

/// The WPP-specific fields of a message record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MessageInfo {
    pub message_number: u16,
    pub option_flags: u16,
    pub sequence: Option<u32>,
    pub message_guid: Option<Guid>,
    pub component_id: Option<u32>,
    /// Whether the record carried its own timestamp (otherwise the reader
    /// gives it the previous record's time, keeping buffer order).
    pub has_timestamp: bool,
}

pub(super) fn parse(data: &[u8], default_pointer_size: u8) -> Result<Record<'_>, ErrorKind> {
    use option_flags as f;
    let short = || ErrorKind::BadRecordSize { size: 0, minimum: HEADER_LEN, remaining: data.len() };
    let size = u16_at(data, 0).ok_or_else(short)?;
    let number = u16_at(data, 4).ok_or_else(short)?;
    let opts = u16_at(data, 6).ok_or_else(short)?;

    let mut minimum = HEADER_LEN;
    let sequence_at = opts & f::SEQUENCE != 0;
    if sequence_at {
        minimum += 4;
    }
    let guid_at = opts & f::GUID != 0;
    let component_at = !guid_at && opts & f::COMPONENT_ID != 0;
    minimum += if guid_at {
        16
    } else if component_at {
        4
    } else {
        0
    };
    let has_timestamp = opts & (f::TIMESTAMP | f::PERFORMANCE_TIMESTAMP) != 0;
    if has_timestamp {
        minimum += 8;
    }
    let system_info = opts & f::SYSTEM_INFO != 0;
    if system_info {
        minimum += 8;
    }
    let size = checked_size(size, minimum, data)?;
    let record = data.get(..size).ok_or_else(short)?;

    let pointer_size = if opts & f::POINTER32 != 0 {
        4
    } else if opts & f::POINTER64 != 0 {
        8
    } else {
        default_pointer_size
    };
    let mut r = Record::empty(HeaderKind::Message, size as u16, pointer_size);
    let mut at = HEADER_LEN;
    let mut info = MessageInfo {
        message_number: number,
        option_flags: opts,
        sequence: None,
        message_guid: None,
        component_id: None,
        has_timestamp,
    };
    if sequence_at {
        info.sequence = u32_at(record, at);
        at += 4;
    }
    if guid_at {
        info.message_guid = Guid::read(record, at);
        r.provider = info.message_guid.unwrap_or_default();
        at += 16;
    } else if component_at {
        info.component_id = u32_at(record, at);
        at += 4;
    }
    if has_timestamp {
        r.timestamp = u64_at(record, at).ok_or_else(short)?;
        at += 8;
    }
    if system_info {
        r.thread_id = u32_at(record, at);
        r.process_id = u32_at(record, at + 4);
        at += 8;
    }
    r.id = number;
    r.message = Some(info);
    r.payload = record.get(at..).unwrap_or_default();
    Ok(r)
}
