//! Event records: the marker that starts each one, the header kinds, and a
//! uniform view over them.
//!
//! A record's first 32-bit word tells its kind: top byte 0xC0 is a trace header
//! whose byte 2 is the header type; 0x90 is a WPP/TraceMessage record;
//! 0xFFFFFFFF is the fill after the last record. Every record is padded to
//! 8 bytes; its size field excludes the padding.

mod event_header;
pub mod message;
mod system;
mod trace_header;

pub use message::MessageInfo;
pub use trace_header::InstanceInfo;

use crate::bytes::{align8, u32_at};
use crate::error::ErrorKind;
use crate::extended::ExtendedItems;
use crate::guid::Guid;

/// The header kinds of NTWMI's `TRACE_HEADER_TYPE_*`, with the pointer width
/// of the payload in the suffix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HeaderKind {
    System32,
    System64,
    Compact32,
    Compact64,
    FullHeader32,
    FullHeader64,
    Instance32,
    Instance64,
    Perfinfo32,
    Perfinfo64,
    EventHeader32,
    EventHeader64,
    /// A WPP / TraceMessage record (marker 0x90…).
    Message,
}

impl HeaderKind {
    pub const ALL: [HeaderKind; 13] = [
        HeaderKind::System32,
        HeaderKind::System64,
        HeaderKind::Compact32,
        HeaderKind::Compact64,
        HeaderKind::FullHeader32,
        HeaderKind::FullHeader64,
        HeaderKind::Instance32,
        HeaderKind::Instance64,
        HeaderKind::Perfinfo32,
        HeaderKind::Perfinfo64,
        HeaderKind::EventHeader32,
        HeaderKind::EventHeader64,
        HeaderKind::Message,
    ];

    /// The header type byte of a 0xC0 marker.
    pub fn from_header_type(t: u8) -> Option<HeaderKind> {
        Some(match t {
            0x01 => HeaderKind::System32,
            0x02 => HeaderKind::System64,
            0x03 => HeaderKind::Compact32,
            0x04 => HeaderKind::Compact64,
            0x0A => HeaderKind::FullHeader32,
            0x0B => HeaderKind::Instance32,
            0x10 => HeaderKind::Perfinfo32,
            0x11 => HeaderKind::Perfinfo64,
            0x12 => HeaderKind::EventHeader32,
            0x13 => HeaderKind::EventHeader64,
            0x14 => HeaderKind::FullHeader64,
            0x15 => HeaderKind::Instance64,
            _ => return None,
        })
    }

    pub fn header_type(self) -> u8 {
        match self {
            HeaderKind::System32 => 0x01,
            HeaderKind::System64 => 0x02,
            HeaderKind::Compact32 => 0x03,
            HeaderKind::Compact64 => 0x04,
            HeaderKind::FullHeader32 => 0x0A,
            HeaderKind::Instance32 => 0x0B,
            HeaderKind::Message => 0x0F,
            HeaderKind::Perfinfo32 => 0x10,
            HeaderKind::Perfinfo64 => 0x11,
            HeaderKind::EventHeader32 => 0x12,
            HeaderKind::EventHeader64 => 0x13,
            HeaderKind::FullHeader64 => 0x14,
            HeaderKind::Instance64 => 0x15,
        }
    }

    /// The name used by `info` and `dump` (NTWMI's, without the prefix).
    pub fn name(self) -> &'static str {
        match self {
            HeaderKind::System32 => "SYSTEM32",
            HeaderKind::System64 => "SYSTEM64",
            HeaderKind::Compact32 => "COMPACT32",
            HeaderKind::Compact64 => "COMPACT64",
            HeaderKind::FullHeader32 => "FULL_HEADER32",
            HeaderKind::FullHeader64 => "FULL_HEADER64",
            HeaderKind::Instance32 => "INSTANCE32",
            HeaderKind::Instance64 => "INSTANCE64",
            HeaderKind::Perfinfo32 => "PERFINFO32",
            HeaderKind::Perfinfo64 => "PERFINFO64",
            HeaderKind::EventHeader32 => "EVENT_HEADER32",
            HeaderKind::EventHeader64 => "EVENT_HEADER64",
            HeaderKind::Message => "MESSAGE",
        }
    }

    /// Pointer width of the payload; `None` for WPP messages (flag-dependent).
    pub fn pointer_size(self) -> Option<u8> {
        match self {
            HeaderKind::System32
            | HeaderKind::Compact32
            | HeaderKind::FullHeader32
            | HeaderKind::Instance32
            | HeaderKind::Perfinfo32
            | HeaderKind::EventHeader32 => Some(4),
            HeaderKind::Message => None,
            _ => Some(8),
        }
    }

    /// Where a header of this kind (a 0xC0 marker) holds its raw time:
    /// PERFINFO right after its first 8 bytes, every other kind at 0x10.
    pub(crate) fn time_offset(self) -> usize {
        match self {
            HeaderKind::Perfinfo32 | HeaderKind::Perfinfo64 => 8,
            _ => 0x10,
        }
    }

    /// Classic kernel headers (SYSTEM, COMPACT, PERFINFO): identity from a hook id.
    pub fn is_kernel(self) -> bool {
        matches!(
            self,
            HeaderKind::System32
                | HeaderKind::System64
                | HeaderKind::Compact32
                | HeaderKind::Compact64
                | HeaderKind::Perfinfo32
                | HeaderKind::Perfinfo64
        )
    }

    /// Classic provider headers (EVENT_TRACE_HEADER and its instance form).
    pub fn is_classic(self) -> bool {
        matches!(
            self,
            HeaderKind::FullHeader32 | HeaderKind::FullHeader64 | HeaderKind::Instance32 | HeaderKind::Instance64
        )
    }

    pub fn is_event_header(self) -> bool {
        matches!(self, HeaderKind::EventHeader32 | HeaderKind::EventHeader64)
    }
}

/// CPU time charged to the logging thread, as the header carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CpuTime {
    #[default]
    None,
    /// Kernel and user ticks (× the header's timer resolution).
    KernelUser { kernel: u32, user: u32 },
    /// Private sessions log one processor-time value instead.
    Processor(u64),
}

/// A kernel record's hook: `(group << 8) | type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct KernelHook {
    pub group: u8,
    pub opcode: u8,
}

impl KernelHook {
    pub fn id(self) -> u16 {
        u16::from(self.group) << 8 | u16::from(self.opcode)
    }
}

/// One event record, borrowed from its buffer. Fields a header kind lacks
/// hold what Windows' consumer API reports for them (zero, or `None` where
/// it would report 0xFFFFFFFF).
#[derive(Clone, Copy, Debug)]
pub struct Record<'a> {
    pub kind: HeaderKind,
    /// Size from the header, without the padding to 8 bytes.
    pub size: u16,
    /// Pointer width of the payload: 4 or 8.
    pub pointer_size: u8,
    /// Raw session-clock timestamp.
    pub timestamp: u64,
    pub thread_id: Option<u32>,
    pub process_id: Option<u32>,
    /// Provider id, kernel group GUID, classic event-class GUID, or (WPP) the
    /// message GUID when present.
    pub provider: Guid,
    pub id: u16,
    pub version: u8,
    pub channel: u8,
    pub level: u8,
    pub opcode: u8,
    pub task: u16,
    pub keywords: u64,
    pub cpu_time: CpuTime,
    pub activity_id: Guid,
    /// EVENT_HEADER `Flags` (0 for other kinds).
    pub flags: u16,
    /// EVENT_HEADER `EventProperty` (0 for other kinds).
    pub event_property: u16,
    /// The hook of a kernel record.
    pub hook: Option<KernelHook>,
    /// INSTANCE headers: instance and parent.
    pub instance: Option<InstanceInfo>,
    /// WPP / TraceMessage records.
    pub message: Option<MessageInfo>,
    /// Extended data items (EVENT_HEADER records).
    pub extended: ExtendedItems<'a>,
    /// PEBS index and PMC counters that follow a kernel header.
    pub performance_counters: &'a [u8],
    /// The event's user data.
    pub payload: &'a [u8],
}

/// EVENT_HEADER `Flags` bits.
pub mod event_header_flags {
    pub const EXTENDED_INFO: u16 = 0x0001;
    pub const PRIVATE_SESSION: u16 = 0x0002;
    pub const STRING_ONLY: u16 = 0x0004;
    pub const TRACE_MESSAGE: u16 = 0x0008;
    pub const NO_CPUTIME: u16 = 0x0010;
    pub const HEADER_32_BIT: u16 = 0x0020;
    pub const HEADER_64_BIT: u16 = 0x0040;
    pub const DECODE_GUID: u16 = 0x0080;
    pub const CLASSIC_HEADER: u16 = 0x0100;
    pub const PROCESSOR_INDEX: u16 = 0x0200;
}

impl<'a> Record<'a> {
    /// The record's own raw time: `None` for a WPP message logged without
    /// one, which takes the previous record's.
    pub fn own_time(&self) -> Option<u64> {
        if self.message.is_some_and(|m| !m.has_timestamp) { None } else { Some(self.timestamp) }
    }

    /// A record with only its kind, size and pointer width set; header parsers fill the rest.
    fn empty(kind: HeaderKind, size: u16, pointer_size: u8) -> Record<'a> {
        Record {
            kind,
            size,
            pointer_size,
            timestamp: 0,
            thread_id: None,
            process_id: None,
            provider: Guid::ZERO,
            id: 0,
            version: 0,
            channel: 0,
            level: 0,
            opcode: 0,
            task: 0,
            keywords: 0,
            cpu_time: CpuTime::None,
            activity_id: Guid::ZERO,
            flags: 0,
            event_property: 0,
            hook: None,
            instance: None,
            message: None,
            extended: ExtendedItems::EMPTY,
            performance_counters: &[],
            payload: &[],
        }
    }

    /// Whether this is a trace header event (EventTrace group, Header opcode),
    /// whose payload is a TRACE_LOGFILE_HEADER.
    pub fn is_trace_header(&self) -> bool {
        self.hook == Some(KernelHook { group: 0, opcode: 0 })
    }

    /// Short description for error messages.
    pub fn describe(&self) -> String {
        match self.hook {
            Some(h) => format!("a {} record with hook {:#06x}", self.kind.name(), h.id()),
            None => format!("a {} record of provider {}", self.kind.name(), self.provider),
        }
    }
}

/// Parses the record at the start of `data` (the rest of the buffer's filled
/// region): the record and the bytes it occupies including padding, or `None`
/// at the fill that follows the last record. `default_pointer_size` applies to
/// WPP records that do not say.
#[inline]
pub fn parse_record(data: &[u8], default_pointer_size: u8) -> Result<Option<(Record<'_>, usize)>, ErrorKind> {
    let Some(marker) = u32_at(data, 0) else {
        // Fewer than 4 bytes cannot start a record; they are padding.
        return Ok(None);
    };
    if marker == 0xFFFF_FFFF {
        return Ok(None);
    }
    let top = (marker >> 24) as u8;
    let record = match top {
        0xC0 => {
            let header_type = (marker >> 16) as u8;
            let Some(kind) = HeaderKind::from_header_type(header_type) else {
                return Err(ErrorKind::UnknownMarker { marker });
            };
            if kind.is_kernel() {
                system::parse(data, kind)?
            } else if kind.is_event_header() {
                event_header::parse(data, kind)?
            } else {
                trace_header::parse(data, kind)?
            }
        }
        0x90 => message::parse(data, default_pointer_size)?,
        _ => return Err(ErrorKind::UnknownMarker { marker }),
    };
    let span = align8(usize::from(record.size)).min(data.len());
    Ok(Some((record, span)))
}

/// The raw time and span of the record at the start of `data`, with the
/// errors [`parse_record`] finds, without building the record: for the
/// merge, which indexes every record of a buffer by time before it reads any.
/// Kernel records and EVENT_HEADER records without extended data (most of a
/// trace) are framed from their headers; every other record is parsed. The
/// time is `None` for a WPP message without one (it takes the previous
/// record's).
pub(crate) fn frame_record(data: &[u8], default_pointer_size: u8) -> Result<Option<(Option<u64>, usize)>, ErrorKind> {
    if let Some(frame) = kernel_frame(data) {
        return frame.map(|(time, span)| Some((Some(time), span)));
    }
    if is_event_header(data)
        && let Some((time, span)) = event_header_frame(data)?
    {
        return Ok(Some((Some(time), span)));
    }
    Ok(parse_record(data, default_pointer_size)?.map(|(record, span)| (record.own_time(), span)))
}

/// Whether the record at the start of `data` has an EVENT_HEADER.
fn is_event_header(data: &[u8]) -> bool {
    let marker = u32_at(data, 0).unwrap_or(0);
    marker >> 24 == 0xC0 && HeaderKind::from_header_type((marker >> 16) as u8).is_some_and(|k| k.is_event_header())
}

/// The raw time and span (with padding) of an EVENT_HEADER record without
/// extended data items ([`event_header::frame`]).
fn event_header_frame(data: &[u8]) -> Result<Option<(u64, usize)>, ErrorKind> {
    Ok(event_header::frame(data)?.map(|(time, size)| (time, align8(size).min(data.len()))))
}

/// The raw time and span (with padding) of the EVENT_HEADER record at the
/// start of `data` when `wanted` refuses its provider and event id, checked
/// as [`parse_record`] checks it; `None` for a wanted one, any other kind of
/// record, one with extended data items, or damage (which a parse reports).
pub(crate) fn unwanted_event_header(data: &[u8], wanted: impl Fn(&Guid, u16) -> bool) -> Option<(u64, usize)> {
    if !is_event_header(data) {
        return None;
    }
    let head: &[u8; 0x2A] = data.first_chunk()?;
    if wanted(&crate::bytes::guid_of(head, 0x18), crate::bytes::u16_of(head, 0x28)) {
        return None;
    }
    event_header_frame(data).ok()?
}

/// The raw time and span (with padding) of the classic kernel record
/// (SYSTEM, COMPACT, PERFINFO) at the start of `data`, checked as
/// [`parse_record`] checks it, without reading the rest; `None` for every
/// other kind of record.
pub(crate) fn kernel_frame(data: &[u8]) -> Option<Result<(u64, usize), ErrorKind>> {
    let marker = u32_at(data, 0)?;
    if marker >> 24 != 0xC0 {
        return None;
    }
    let kind = HeaderKind::from_header_type((marker >> 16) as u8).filter(|k| k.is_kernel())?;
    Some(system::frame(data, kind).map(|(time, size)| (time, align8(size).min(data.len()))))
}

/// Whether `data` begins the way a record does: a known marker and a header
/// whose size fits its kind (the record may run past `data`, a prefix).
pub(crate) fn starts_record(data: &[u8]) -> bool {
    match parse_record(data, 8) {
        Ok(Some(_)) => true,
        Err(ErrorKind::BadRecordSize { size, minimum, remaining }) => size >= minimum && size > remaining,
        _ => false,
    }
}

/// Where the raw timestamp of the record at the start of `data` is, read
/// without checking the rest of the record; `None` if the record has none (a
/// WPP message without the timestamp option) or the marker is not a record's.
pub fn timestamp_offset(data: &[u8]) -> Option<usize> {
    use crate::bytes::u16_at;
    let marker = u32_at(data, 0)?;
    match (marker >> 24) as u8 {
        0xC0 => Some(HeaderKind::from_header_type((marker >> 16) as u8)?.time_offset()),
        0x90 => {
            use message::option_flags as f;
            let opts = u16_at(data, 6)?;
            if opts & (f::TIMESTAMP | f::PERFORMANCE_TIMESTAMP) == 0 {
                return None;
            }
            let mut at = 8;
            if opts & f::SEQUENCE != 0 {
                at += 4;
            }
            if opts & f::GUID != 0 {
                at += 16;
            } else if opts & f::COMPONENT_ID != 0 {
                at += 4;
            }
            Some(at)
        }
        _ => None,
    }
}

/// The raw timestamp of the record at the start of `data` (see [`timestamp_offset`]).
pub fn peek_timestamp(data: &[u8]) -> Option<u64> {
    crate::bytes::u64_at(data, timestamp_offset(data)?)
}

/// Checks a header's size field against the header length and the bytes left.
fn checked_size(size: u16, minimum: usize, data: &[u8]) -> Result<usize, ErrorKind> {
    let size = usize::from(size);
    if size < minimum || size > data.len() {
        return Err(ErrorKind::BadRecordSize { size, minimum, remaining: data.len() });
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_header_skips_pebs_and_pmc_extras() {
        // SYSTEM64, version 3 with a PEBS index and two PMC counters.
        let mut r = vec![3, 0x80 | 0x02, 0x02, 0xC0, 0, 0, 0x0A, 0x06];
        r.extend_from_slice(&7u32.to_le_bytes()); // thread
        r.extend_from_slice(&9u32.to_le_bytes()); // process
        r.extend_from_slice(&1234u64.to_le_bytes());
        r.extend_from_slice(&[0; 8]); // kernel, user time
        r.extend_from_slice(&[0xAA; 8 + 16]); // PEBS index, 2 PMC counters
        r.extend_from_slice(b"payload!");
        let size = r.len() as u16;
        r[4..6].copy_from_slice(&size.to_le_bytes());
        let (record, span) = parse_record(&r, 8).unwrap().unwrap();
        assert_eq!(span, 64);
        assert_eq!((record.version, record.opcode, record.timestamp), (3, 10, 1234));
        assert_eq!((record.thread_id, record.process_id), (Some(7), Some(9)));
        assert_eq!(record.performance_counters.len(), 24);
        assert_eq!(record.payload, b"payload!");
        assert_eq!(record.hook, Some(KernelHook { group: 6, opcode: 10 }));
        // A size that does not cover the extras is refused.
        r[4..6].copy_from_slice(&0x28u16.to_le_bytes());
        assert!(matches!(parse_record(&r, 8), Err(ErrorKind::BadRecordSize { minimum: 0x38, .. })));
    }

    #[test]
    fn wpp_message_framing() {
        use message::option_flags as f;
        let guid = Guid::parse_const("0aadb7a1-5ee1-4b24-8aa3-bd7ab4d2b5f1");
        let opts = f::SEQUENCE | f::GUID | f::TIMESTAMP | f::SYSTEM_INFO | f::POINTER64;
        let mut r = vec![0, 0, 0, 0x90];
        r.extend_from_slice(&17u16.to_le_bytes()); // message number
        r.extend_from_slice(&opts.to_le_bytes());
        r.extend_from_slice(&42u32.to_le_bytes()); // sequence
        r.extend_from_slice(&guid.to_bytes_le());
        r.extend_from_slice(&99u64.to_le_bytes()); // timestamp
        r.extend_from_slice(&5u32.to_le_bytes()); // thread
        r.extend_from_slice(&6u32.to_le_bytes()); // process
        r.extend_from_slice(&[1, 2, 3]);
        let size = r.len() as u16;
        r[0..2].copy_from_slice(&size.to_le_bytes());
        r.resize(64, 0xFF); // padding, then the buffer's fill
        assert_eq!(timestamp_offset(&r), Some(28));
        let (record, span) = parse_record(&r, 4).unwrap().unwrap();
        assert_eq!((record.size, span), (47, 48));
        let m = record.message.unwrap();
        assert_eq!((m.message_number, m.sequence, m.message_guid), (17, Some(42), Some(guid)));
        assert_eq!((record.timestamp, record.thread_id, record.process_id), (99, Some(5), Some(6)));
        assert_eq!((record.pointer_size, record.payload), (8, &[1u8, 2, 3][..]));
        assert_eq!(record.kind, HeaderKind::Message);

        // Component id instead of a GUID, no timestamp, no system info.
        let mut r = vec![0, 0, 0, 0x90, 3, 0];
        r.extend_from_slice(&f::COMPONENT_ID.to_le_bytes());
        r.extend_from_slice(&0x77u32.to_le_bytes());
        r.extend_from_slice(b"args");
        let size = r.len() as u16;
        r[0..2].copy_from_slice(&size.to_le_bytes());
        assert_eq!(timestamp_offset(&r), None);
        let (record, _) = parse_record(&r, 4).unwrap().unwrap();
        let m = record.message.unwrap();
        assert_eq!((m.component_id, m.has_timestamp), (Some(0x77), false));
        assert_eq!((record.thread_id, record.pointer_size, record.payload), (None, 4, &b"args"[..]));
    }

    #[test]
    fn unknown_markers_and_types_are_errors() {
        assert!(matches!(parse_record(&[0, 0, 0x0D, 0xC0, 0, 0, 0, 0], 8), Err(ErrorKind::UnknownMarker { .. })));
        assert!(matches!(parse_record(&[0, 0, 0, 0x42, 0, 0, 0, 0], 8), Err(ErrorKind::UnknownMarker { .. })));
        assert!(matches!(parse_record(&[0xFF; 16], 8), Ok(None)));
        assert!(matches!(parse_record(&[0xFF; 3], 8), Ok(None)));
    }
}
