//! Events as a real-time consumer receives them (an `EVENT_RECORD`, copied
//! out of the callback into plain data), so that everything after the
//! Windows call — turning the event into a record nettrail decodes, and
//! feeding the network model — runs and is tested on any OS.

use nettrail_etl::Guid;
use nettrail_etl::extended::ExtType;
use nettrail_etl::write::{
    ClassicRecord, Context, Descriptor, EventHeaderRecord, KernelHeader, KernelRecord, WriteError, encode_classic,
    encode_event_header, encode_kernel,
};

/// One event from a real-time session, borrowed for the callback's duration.
#[derive(Debug, Clone, Copy)]
pub struct LiveEvent<'a> {
    /// Provider GUID; for classic kernel events, the event class GUID.
    pub provider: Guid,
    /// `EVENT_DESCRIPTOR`: id, version, channel, level, opcode, task, keywords.
    pub descriptor: Descriptor,
    /// `EVENT_HEADER.TimeStamp`: a FILETIME (100 ns since 1601, UTC) unless
    /// the consumer asked for raw timestamps.
    pub timestamp: i64,
    pub process_id: u32,
    pub thread_id: u32,
    /// `EVENT_HEADER.Flags` (CLASSIC_HEADER, 32_BIT_HEADER, EXTENDED_INFO…).
    pub flags: u16,
    pub event_property: u16,
    pub activity_id: Guid,
    /// `BufferContext.ProcessorIndex`.
    pub processor: u16,
    /// `EVENT_HEADER_EXTENDED_DATA_ITEM`s: (ExtType, data).
    pub extended: &'a [(u16, &'a [u8])],
    pub payload: &'a [u8],
}

/// `EVENT_HEADER` flags the conversion reads.
mod flags {
    pub const EXTENDED_INFO: u16 = 0x0001;
    pub const HEADER_32_BIT: u16 = 0x0020;
    pub const HEADER_64_BIT: u16 = 0x0040;
    pub const CLASSIC_HEADER: u16 = 0x0100;
}

/// The record an ETL buffer would hold for this event (size set, padded),
/// into `out`: kernel events as classic kernel records of their group,
/// other MOF events as classic records, the rest as EVENT_HEADER records
/// with their extended data. `nettrail_etl::record::parse_record` reads it
/// back; its timestamp stays the event's FILETIME.
pub fn record_bytes(e: &LiveEvent<'_>, out: &mut Vec<u8>) -> Result<(), WriteError> {
    let pointer_size = if e.flags & flags::HEADER_32_BIT != 0 { 4 } else { 8 };
    let d = &e.descriptor;
    let context =
        Context { timestamp: e.timestamp as u64, cpu: e.processor, process_id: e.process_id, thread_id: e.thread_id };
    if e.flags & flags::CLASSIC_HEADER != 0 {
        if let Some(&(group, _, _)) = nettrail_etl::kernel::GROUPS.iter().find(|(_, _, g)| *g == e.provider) {
            // Events without a thread (rundowns, network) come with -1.
            let header = if e.thread_id == u32::MAX { KernelHeader::Perfinfo } else { KernelHeader::System };
            let record = KernelRecord {
                context,
                header,
                pointer_size,
                group,
                opcode: d.opcode,
                version: d.version,
                kernel_time: 0,
                user_time: 0,
                payload: e.payload,
            };
            return encode_kernel(&record, out);
        }
        let record = ClassicRecord {
            context,
            pointer_size,
            class: e.provider,
            opcode: d.opcode,
            level: d.level,
            version: u16::from(d.version),
            instance: None,
            payload: e.payload,
        };
        return encode_classic(&record, out);
    }
    let extended: Vec<(ExtType, &[u8])> = e.extended.iter().map(|&(t, data)| (ExtType(t), data)).collect();
    let record = EventHeaderRecord {
        context,
        provider: e.provider,
        descriptor: e.descriptor,
        activity_id: e.activity_id,
        pointer_size,
        flags: e.flags & !flags::EXTENDED_INFO,
        kernel_time: 0,
        user_time: 0,
        extended: &extended,
        payload: e.payload,
    };
    encode_event_header(&record, out)
}

/// A recorded event's extended data items, as a consumer lists them.
pub fn extended_items<'a>(record: &nettrail_etl::Record<'a>) -> Vec<(u16, &'a [u8])> {
    record.extended.iter().map(|i| (i.ext_type.0, i.data)).collect()
}

/// A recorded event as a real-time consumer would receive it at `time`
/// (FILETIME): the header flags Windows sets for its kind, -1 for an
/// absent process or thread, `extended` from [`extended_items`].
pub fn delivered<'a>(record: &nettrail_etl::Record<'a>, time: i64, extended: &'a [(u16, &'a [u8])]) -> LiveEvent<'a> {
    let classic = if record.kind.is_event_header() { record.flags } else { flags::CLASSIC_HEADER };
    let width = if record.pointer_size == 4 { flags::HEADER_32_BIT } else { flags::HEADER_64_BIT };
    LiveEvent {
        provider: record.provider,
        descriptor: Descriptor {
            id: record.id,
            version: record.version,
            channel: record.channel,
            level: record.level,
            opcode: record.opcode,
            task: record.task,
            keywords: record.keywords,
        },
        timestamp: time,
        process_id: record.process_id.unwrap_or(u32::MAX),
        thread_id: record.thread_id.unwrap_or(u32::MAX),
        flags: classic | width,
        event_property: record.event_property,
        activity_id: record.activity_id,
        processor: 0,
        extended,
        payload: record.payload,
    }
}

/// [`delivered`], turned back into a record: `nettrail live --replay` sends
/// a trace file through the same conversion as live events.
pub fn as_delivered<'s>(
    record: &nettrail_etl::Record<'_>,
    time: i64,
    scratch: &'s mut Vec<u8>,
) -> Option<nettrail_etl::Record<'s>> {
    let extended = extended_items(record);
    record_bytes(&delivered(record, time, &extended), scratch).ok()?;
    nettrail_etl::record::parse_record(scratch, record.pointer_size).ok()?.map(|(r, _)| r)
}
