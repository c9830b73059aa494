//! The bytes the controller hands to ETW and reads back, built and parsed
//! as plain data: the `EVENT_TRACE_PROPERTIES` block with the names after
//! it, the logging mode of a session, `EVENT_FILTER_EVENT_ID` filters and
//! the `PROVIDER_ENUMERATION_INFO` list of registered providers.
//!
//! Nothing here calls Windows or names a `windows-sys` type, so the layouts
//! are tested on every OS (`tests/controller_layout.rs` compiles this file
//! on its own); on Windows the controller asserts at compile time that each
//! offset equals the `windows-sys` struct's.

use std::path::PathBuf;

use nettrail_etl::Guid;

/// Offsets in `EVENT_TRACE_PROPERTIES` (a `WNODE_HEADER`, then the session
/// fields). The only pointer-sized member is `LoggerThreadId`.
pub mod props {
    const PTR: usize = size_of::<usize>();

    pub const WNODE_BUFFER_SIZE: usize = 0;
    pub const WNODE_GUID: usize = 24;
    pub const WNODE_CLIENT_CONTEXT: usize = 40;
    pub const WNODE_FLAGS: usize = 44;
    pub const BUFFER_SIZE: usize = 48;
    pub const MINIMUM_BUFFERS: usize = 52;
    pub const MAXIMUM_BUFFERS: usize = 56;
    pub const MAXIMUM_FILE_SIZE: usize = 60;
    pub const LOG_FILE_MODE: usize = 64;
    pub const FLUSH_TIMER: usize = 68;
    pub const ENABLE_FLAGS: usize = 72;
    pub const AGE_LIMIT: usize = 76;
    pub const NUMBER_OF_BUFFERS: usize = 80;
    pub const FREE_BUFFERS: usize = 84;
    pub const EVENTS_LOST: usize = 88;
    pub const BUFFERS_WRITTEN: usize = 92;
    pub const LOG_BUFFERS_LOST: usize = 96;
    pub const REAL_TIME_BUFFERS_LOST: usize = 100;
    pub const LOGGER_THREAD_ID: usize = 104;
    pub const LOG_FILE_NAME_OFFSET: usize = LOGGER_THREAD_ID + PTR;
    pub const LOGGER_NAME_OFFSET: usize = LOG_FILE_NAME_OFFSET + 4;
    /// The struct's size: the `WNODE_HEADER` holds 64-bit members, so it
    /// is padded to 8 bytes (120 on both 32- and 64-bit Windows).
    pub const SIZE: usize = (LOGGER_NAME_OFFSET + 4).next_multiple_of(8);
}

/// `WNODE_FLAG_TRACED_GUID`: the block describes a trace session.
pub const WNODE_FLAG_TRACED_GUID: u32 = 0x0002_0000;
/// `ClientContext` 1: time stamps from the performance counter (QPC).
pub const CLOCK_QPC: u32 = 1;

/// `LogFileMode` bits (`EVENT_TRACE_*`).
pub mod mode {
    pub const FILE_MODE_SEQUENTIAL: u32 = 0x0000_0001;
    pub const FILE_MODE_CIRCULAR: u32 = 0x0000_0002;
    pub const REAL_TIME: u32 = 0x0000_0100;
    pub const BUFFERING: u32 = 0x0000_0400;
    pub const SYSTEM_LOGGER: u32 = 0x0200_0000;
}

/// `EVENT_FILTER_TYPE_EVENT_ID`: only these event ids are logged.
pub const FILTER_EVENT_ID: u32 = 0x8000_0200;
/// `EVENT_FILTER_TYPE_STACKWALK`: only these event ids carry a stack.
pub const FILTER_STACKWALK: u32 = 0x8000_1000;
/// `MAX_EVENT_FILTER_EVENT_ID_COUNT`.
pub const MAX_FILTER_EVENT_IDS: usize = 64;

/// Room for each name after the properties, in UTF-16 units with the NUL:
/// ETW's limit for session and log file names, and what it needs to write
/// the names back on a query or a stop.
pub const NAME_UNITS: usize = 1024;

/// A session or file name as UTF-16, checked against ETW's limits.
pub fn checked_name(what: &str, units: Vec<u16>) -> Result<Vec<u16>, String> {
    if units.is_empty() {
        return Err(format!("the {what} is empty"));
    }
    if units.contains(&0) {
        return Err(format!("the {what} contains a NUL character"));
    }
    if units.len() >= NAME_UNITS {
        return Err(format!("the {what} is {} UTF-16 units long; ETW takes at most {}", units.len(), NAME_UNITS - 1));
    }
    Ok(units)
}

/// `s` as UTF-16, without the terminating NUL.
pub fn wide(s: &str) -> Vec<u16> {
    s.encode_utf16().collect()
}

/// How a session logs, and how big it may grow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Logging {
    pub log_file_mode: u32,
    /// `MaximumFileSize` in MB (0: no limit).
    pub maximum_file_mb: u32,
    pub minimum_buffers: u32,
    pub maximum_buffers: u32,
    /// `FlushTimer` in seconds (0: ETW's default).
    pub flush_timer_s: u32,
}

/// The buffers and sizes a session is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sizing {
    pub buffer_kb: u32,
    pub min_buffers: u32,
    pub max_buffers: u32,
    pub circular_mb: Option<u32>,
}

/// The logging mode of a session:
///
/// - to a file: sequential, or circular with `MaximumFileSize` when a
///   circular size is given;
/// - without a file: real time (buffers flushed every second so a live
///   consumer sees events promptly), or, with a circular size, an
///   in-memory ring (`EVENT_TRACE_BUFFERING_MODE`) of that many MB;
/// - with the system provider: `EVENT_TRACE_SYSTEM_LOGGER_MODE` as well,
///   so the session gets kernel events without being the single
///   "NT Kernel Logger" (Windows 8 and later).
pub fn logging(file: bool, system: bool, sizing: Sizing) -> Result<Logging, String> {
    let Sizing { buffer_kb, min_buffers, max_buffers, circular_mb } = sizing;
    if buffer_kb == 0 {
        return Err("the buffer size is 0 KB".to_string());
    }
    if max_buffers != 0 && min_buffers > max_buffers {
        return Err(format!("min_buffers ({min_buffers}) is above max_buffers ({max_buffers})"));
    }
    if circular_mb == Some(0) {
        return Err("a circular session of 0 MB holds nothing".to_string());
    }
    let mut l = Logging {
        log_file_mode: 0,
        maximum_file_mb: 0,
        minimum_buffers: min_buffers,
        maximum_buffers: max_buffers,
        flush_timer_s: 0,
    };
    match (file, circular_mb) {
        (true, None) => l.log_file_mode = mode::FILE_MODE_SEQUENTIAL,
        (true, Some(mb)) => {
            l.log_file_mode = mode::FILE_MODE_CIRCULAR;
            l.maximum_file_mb = mb;
        }
        (false, None) => {
            l.log_file_mode = mode::REAL_TIME;
            l.flush_timer_s = 1;
        }
        (false, Some(mb)) => {
            // The ring is exactly the buffers: as many as hold `mb`.
            let count = u32::try_from((u64::from(mb) * 1024).div_ceil(u64::from(buffer_kb)))
                .map_err(|_| format!("a ring of {mb} MB is too large"))?;
            l.log_file_mode = mode::BUFFERING;
            l.minimum_buffers = count;
            l.maximum_buffers = count;
        }
    }
    if system {
        l.log_file_mode |= mode::SYSTEM_LOGGER;
    }
    Ok(l)
}

/// What `StartTraceW` reads.
#[derive(Clone, Debug)]
pub struct StartRequest<'a> {
    /// Without the NUL (see [`checked_name`]).
    pub logger_name: &'a [u16],
    /// Without the NUL; `None` for a session without a file.
    pub log_file: Option<&'a [u16]>,
    pub buffer_kb: u32,
    pub logging: Logging,
    /// `EVENT_TRACE_FLAG_*` of the system provider (0 without it).
    pub enable_flags: u32,
}

/// An `EVENT_TRACE_PROPERTIES` block followed by room for the session name
/// and the log file name (`NAME_UNITS` each), with nothing set but the
/// size, the flags and the offsets: what `ControlTraceW` and
/// `QueryAllTracesW` fill in.
pub fn control_properties() -> Vec<u8> {
    let logger_at = props::SIZE;
    let file_at = logger_at + 2 * NAME_UNITS;
    let size = file_at + 2 * NAME_UNITS;
    let mut b = vec![0u8; size];
    put_u32(&mut b, props::WNODE_BUFFER_SIZE, size as u32);
    put_u32(&mut b, props::WNODE_FLAGS, WNODE_FLAG_TRACED_GUID);
    put_u32(&mut b, props::LOGGER_NAME_OFFSET, logger_at as u32);
    put_u32(&mut b, props::LOG_FILE_NAME_OFFSET, file_at as u32);
    b
}

/// The block `StartTraceW` reads: QPC clock, the sizes and mode, the
/// system provider's flags, and the names at their offsets. A session
/// without a file has `LogFileNameOffset` 0, as ETW requires.
pub fn start_properties(r: &StartRequest<'_>) -> Vec<u8> {
    let mut b = control_properties();
    let l = r.logging;
    put_u32(&mut b, props::WNODE_CLIENT_CONTEXT, CLOCK_QPC);
    put_u32(&mut b, props::BUFFER_SIZE, r.buffer_kb);
    put_u32(&mut b, props::MINIMUM_BUFFERS, l.minimum_buffers);
    put_u32(&mut b, props::MAXIMUM_BUFFERS, l.maximum_buffers);
    put_u32(&mut b, props::MAXIMUM_FILE_SIZE, l.maximum_file_mb);
    put_u32(&mut b, props::LOG_FILE_MODE, l.log_file_mode);
    put_u32(&mut b, props::FLUSH_TIMER, l.flush_timer_s);
    put_u32(&mut b, props::ENABLE_FLAGS, r.enable_flags);
    let logger_at = u32_at(&b, props::LOGGER_NAME_OFFSET) as usize;
    put_wide(&mut b, logger_at, r.logger_name);
    match r.log_file {
        Some(file) => {
            let file_at = u32_at(&b, props::LOG_FILE_NAME_OFFSET) as usize;
            put_wide(&mut b, file_at, file);
        }
        None => put_u32(&mut b, props::LOG_FILE_NAME_OFFSET, 0),
    }
    b
}

/// A session as `ControlTraceW` (query) or `QueryAllTracesW` report it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionInfo {
    pub name: String,
    /// `None` for real-time and in-memory sessions.
    pub log_file: Option<PathBuf>,
    pub events_lost: u32,
    pub buffers_written: u32,
    /// `LogBuffersLost` + `RealTimeBuffersLost`.
    pub buffers_lost: u32,
    pub buffer_kb: u32,
    pub number_of_buffers: u32,
    pub free_buffers: u32,
    pub log_file_mode: u32,
    /// Delivers events to real-time consumers.
    pub real_time: bool,
    /// A circular file or an in-memory ring: only the latest events survive.
    pub circular: bool,
}

/// What stopping a session reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub buffers_written: u32,
    pub events_lost: u32,
    /// `LogBuffersLost` + `RealTimeBuffersLost`.
    pub buffers_lost: u32,
    pub log_file: Option<PathBuf>,
    pub number_of_buffers: u32,
    pub free_buffers: u32,
    /// Steps of the stop that failed without stopping it (a provider's
    /// rundown that could not be requested or timed out).
    pub warnings: Vec<String>,
}

/// Reads back a properties block ETW filled in. Names are read at the
/// block's own offsets and stop at the NUL or the end of the block.
pub fn read_session(b: &[u8]) -> SessionInfo {
    let mode = u32_at(b, props::LOG_FILE_MODE);
    SessionInfo {
        name: name_at(b, props::LOGGER_NAME_OFFSET).unwrap_or_default(),
        log_file: name_at(b, props::LOG_FILE_NAME_OFFSET).map(PathBuf::from),
        events_lost: u32_at(b, props::EVENTS_LOST),
        buffers_written: u32_at(b, props::BUFFERS_WRITTEN),
        buffers_lost: u32_at(b, props::LOG_BUFFERS_LOST).saturating_add(u32_at(b, props::REAL_TIME_BUFFERS_LOST)),
        buffer_kb: u32_at(b, props::BUFFER_SIZE),
        number_of_buffers: u32_at(b, props::NUMBER_OF_BUFFERS),
        free_buffers: u32_at(b, props::FREE_BUFFERS),
        log_file_mode: mode,
        real_time: mode & mode::REAL_TIME != 0,
        circular: mode & (mode::FILE_MODE_CIRCULAR | mode::BUFFERING) != 0,
    }
}

/// The statistics of a stopped session, from its properties block.
pub fn read_stats(b: &[u8]) -> Stats {
    let s = read_session(b);
    Stats {
        buffers_written: s.buffers_written,
        events_lost: s.events_lost,
        buffers_lost: s.buffers_lost,
        log_file: s.log_file,
        number_of_buffers: s.number_of_buffers,
        free_buffers: s.free_buffers,
        warnings: Vec::new(),
    }
}

/// An `EVENT_FILTER_EVENT_ID` with `FilterIn` TRUE: BOOLEAN FilterIn, a
/// reserved byte, USHORT Count, then the ids. The same structure serves
/// the event filter and the stack-walk filter.
pub fn event_id_filter(ids: &[u16]) -> Result<Vec<u8>, String> {
    if ids.is_empty() {
        return Err("an event id filter needs at least one id".to_string());
    }
    if ids.len() > MAX_FILTER_EVENT_IDS {
        return Err(format!("{} event ids; an ETW event id filter holds at most {MAX_FILTER_EVENT_IDS}", ids.len()));
    }
    let mut b = Vec::with_capacity(4 + 2 * ids.len());
    b.push(1);
    b.push(0);
    b.extend_from_slice(&(ids.len() as u16).to_le_bytes());
    for id in ids {
        b.extend_from_slice(&id.to_le_bytes());
    }
    Ok(b)
}

/// The filters of one `EnableTraceEx2` call, as (filter type, data): the
/// event ids logged (none: every event) and the event ids that carry a
/// stack (`None`: every event's or none, as the enable property says).
pub fn enable_filters(events: &[u16], stack_events: Option<&[u16]>) -> Result<Vec<(u32, Vec<u8>)>, String> {
    let mut filters = Vec::new();
    if !events.is_empty() {
        filters.push((FILTER_EVENT_ID, event_id_filter(events).map_err(|e| format!("event filter: {e}"))?));
    }
    if let Some(ids) = stack_events {
        filters.push((FILTER_STACKWALK, event_id_filter(ids).map_err(|e| format!("stack filter: {e}"))?));
    }
    Ok(filters)
}

/// The providers in a `PROVIDER_ENUMERATION_INFO` block (`TdhEnumerateProviders`):
/// a count, a reserved word, then `TRACE_PROVIDER_INFO` entries (GUID,
/// schema source, offset of the UTF-16 name from the block's start).
/// Entries or names outside the block are skipped.
pub fn provider_list(b: &[u8]) -> Vec<(Guid, String)> {
    const ENTRY: usize = 24;
    let count = u32_at(b, 0) as usize;
    let entries = b.get(8..).unwrap_or_default();
    entries
        .chunks_exact(ENTRY)
        .take(count)
        .filter_map(|e| {
            let guid = Guid::from_bytes_le(e[..16].try_into().ok()?);
            let at = u32::from_le_bytes(e[20..24].try_into().ok()?) as usize;
            Some((guid, wide_at(b, at)?))
        })
        .collect()
}

/// The GUID of the provider named `name`, compared as Windows compares
/// provider names: ignoring case.
pub fn find_provider(list: &[(Guid, String)], name: &str) -> Option<Guid> {
    let wanted = name.to_lowercase();
    list.iter().find(|(_, n)| n.to_lowercase() == wanted).map(|(g, _)| *g)
}

fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4).map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

fn put_wide(b: &mut [u8], at: usize, units: &[u16]) {
    for (i, u) in units.iter().enumerate() {
        b[at + 2 * i..at + 2 * i + 2].copy_from_slice(&u.to_le_bytes());
    }
}

/// The name at the offset stored in the field at `field`, if the offset
/// is set and the name is not empty.
fn name_at(b: &[u8], field: usize) -> Option<String> {
    match u32_at(b, field) as usize {
        0 => None,
        at => wide_at(b, at).filter(|s| !s.is_empty()),
    }
}

/// A NUL-terminated UTF-16 string at `at` (or up to the end of `b`).
fn wide_at(b: &[u8], at: usize) -> Option<String> {
    let units: Vec<u16> =
        b.get(at..)?.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).take_while(|&u| u != 0).collect();
    Some(String::from_utf16_lossy(&units))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(name: &'a [u16], file: Option<&'a [u16]>, logging: Logging) -> StartRequest<'a> {
        StartRequest { logger_name: name, log_file: file, buffer_kb: 1024, logging, enable_flags: 0 }
    }

    fn sizing(circular_mb: Option<u32>) -> Sizing {
        Sizing { buffer_kb: 1024, min_buffers: 32, max_buffers: 96, circular_mb }
    }

    #[test]
    fn the_properties_struct_ends_with_the_two_name_offsets() {
        if size_of::<usize>() == 8 {
            assert_eq!((props::LOG_FILE_NAME_OFFSET, props::LOGGER_NAME_OFFSET, props::SIZE), (112, 116, 120));
        } else {
            assert_eq!((props::LOG_FILE_NAME_OFFSET, props::LOGGER_NAME_OFFSET, props::SIZE), (108, 112, 120));
        }
    }

    #[test]
    fn a_file_session_carries_both_names_at_their_offsets() {
        let name = wide("nettrail");
        let file = wide(r"C:\traces\net.etl");
        let l = logging(true, true, sizing(None)).unwrap();
        let b = start_properties(&StartRequest { enable_flags: 0x7, ..request(&name, Some(&file), l) });
        assert_eq!(b.len(), props::SIZE + 4 * NAME_UNITS);
        assert_eq!(u32_at(&b, props::WNODE_BUFFER_SIZE) as usize, b.len());
        assert_eq!(u32_at(&b, props::WNODE_FLAGS), 0x0002_0000);
        assert_eq!(u32_at(&b, props::WNODE_CLIENT_CONTEXT), 1);
        assert_eq!(u32_at(&b, props::LOGGER_NAME_OFFSET) as usize, props::SIZE);
        assert_eq!(u32_at(&b, props::LOG_FILE_NAME_OFFSET) as usize, props::SIZE + 2 * NAME_UNITS);
        assert_eq!(u32_at(&b, props::BUFFER_SIZE), 1024);
        assert_eq!(u32_at(&b, props::MINIMUM_BUFFERS), 32);
        assert_eq!(u32_at(&b, props::MAXIMUM_BUFFERS), 96);
        assert_eq!(u32_at(&b, props::LOG_FILE_MODE), 0x0200_0001);
        assert_eq!(u32_at(&b, props::ENABLE_FLAGS), 0x7);
        // The name is NUL-terminated UTF-16 right after the struct.
        assert_eq!(&b[120..122], b"n\0");
        assert_eq!(&b[120 + 16..120 + 18], b"\0\0");
        let info = read_session(&b);
        assert_eq!(info.name, "nettrail");
        assert_eq!(info.log_file, Some(PathBuf::from(r"C:\traces\net.etl")));
        assert!(!info.real_time && !info.circular);
    }

    #[test]
    fn a_real_time_session_has_no_log_file_offset_and_flushes_every_second() {
        let name = wide("nettrail-live");
        let l = logging(false, false, sizing(None)).unwrap();
        let b = start_properties(&request(&name, None, l));
        assert_eq!(u32_at(&b, props::LOG_FILE_NAME_OFFSET), 0);
        assert_eq!(u32_at(&b, props::LOG_FILE_MODE), 0x100);
        assert_eq!(u32_at(&b, props::FLUSH_TIMER), 1);
        let info = read_session(&b);
        assert_eq!((info.name.as_str(), info.log_file, info.real_time), ("nettrail-live", None, true));
    }

    #[test]
    fn circular_sessions_are_a_capped_file_or_an_in_memory_ring() {
        let file = logging(true, false, sizing(Some(256))).unwrap();
        assert_eq!((file.log_file_mode, file.maximum_file_mb), (mode::FILE_MODE_CIRCULAR, 256));
        assert_eq!((file.minimum_buffers, file.maximum_buffers), (32, 96));
        // 100 MB of 64 KB buffers: 1600 buffers, no file, no real time.
        let ring = logging(false, true, Sizing { buffer_kb: 64, ..sizing(Some(100)) }).unwrap();
        assert_eq!(ring.log_file_mode, mode::BUFFERING | mode::SYSTEM_LOGGER);
        assert_eq!((ring.minimum_buffers, ring.maximum_buffers, ring.maximum_file_mb), (1600, 1600, 0));
        // A size that is not a whole number of buffers rounds up.
        let odd = logging(false, false, Sizing { buffer_kb: 3000, ..sizing(Some(10)) }).unwrap();
        assert_eq!(odd.maximum_buffers, 4);
    }

    #[test]
    fn impossible_sizes_are_refused_with_the_reason() {
        assert!(logging(true, false, Sizing { buffer_kb: 0, ..sizing(None) }).unwrap_err().contains("0 KB"));
        assert!(logging(true, false, Sizing { min_buffers: 100, ..sizing(None) }).unwrap_err().contains("above"));
        assert!(logging(false, false, sizing(Some(0))).unwrap_err().contains("0 MB"));
        // max_buffers 0 lets ETW choose.
        assert!(logging(true, false, Sizing { max_buffers: 0, ..sizing(None) }).is_ok());
    }

    #[test]
    fn names_are_checked_against_etw_limits() {
        assert_eq!(checked_name("session name", wide("nettrail")).unwrap().len(), 8);
        assert!(checked_name("session name", Vec::new()).unwrap_err().contains("empty"));
        assert!(checked_name("session name", wide("a\0b")).unwrap_err().contains("NUL"));
        assert!(checked_name("log file name", vec![b'x' as u16; 1023]).is_ok());
        let long = checked_name("log file name", vec![b'x' as u16; 1024]).unwrap_err();
        assert!(long.contains("1024") && long.contains("1023"), "{long}");
        // Outside the BMP a character is two units.
        assert_eq!(wide("a\u{1F600}"), [0x61, 0xD83D, 0xDE00]);
    }

    #[test]
    fn a_control_block_has_room_for_names_etw_writes_back() {
        let mut b = control_properties();
        assert_eq!(read_session(&b), SessionInfo::default());
        // What ETW writes on a stop: counters and the names.
        put_u32(&mut b, props::BUFFERS_WRITTEN, 321);
        put_u32(&mut b, props::EVENTS_LOST, 7);
        put_u32(&mut b, props::LOG_BUFFERS_LOST, 2);
        put_u32(&mut b, props::REAL_TIME_BUFFERS_LOST, 3);
        put_u32(&mut b, props::NUMBER_OF_BUFFERS, 96);
        put_u32(&mut b, props::FREE_BUFFERS, 90);
        put_u32(&mut b, props::LOG_FILE_MODE, mode::FILE_MODE_CIRCULAR | mode::SYSTEM_LOGGER);
        put_wide(&mut b, props::SIZE, &wide("nettrail"));
        put_wide(&mut b, props::SIZE + 2 * NAME_UNITS, &wide(r"D:\t.etl"));
        let s = read_stats(&b);
        assert_eq!((s.buffers_written, s.events_lost, s.buffers_lost), (321, 7, 5));
        assert_eq!((s.number_of_buffers, s.free_buffers), (96, 90));
        assert_eq!(s.log_file, Some(PathBuf::from(r"D:\t.etl")));
        let info = read_session(&b);
        assert!(info.circular && !info.real_time);
        // A name that fills its room to the end of the block still reads.
        let end = b.len();
        put_u32(&mut b, props::LOG_FILE_NAME_OFFSET, (end - 4) as u32);
        put_wide(&mut b, end - 4, &wide("ab"));
        assert_eq!(read_session(&b).log_file, Some(PathBuf::from("ab")));
        // An offset past the block reads as no name.
        put_u32(&mut b, props::LOG_FILE_NAME_OFFSET, end as u32 + 10);
        assert_eq!(read_session(&b).log_file, None);
    }

    #[test]
    fn event_id_filters_are_filter_in_count_then_ids() {
        assert_eq!(event_id_filter(&[1000]).unwrap(), [1, 0, 1, 0, 0xE8, 0x03]);
        let ids: Vec<u16> = vec![5, 17, 59996];
        assert_eq!(event_id_filter(&ids).unwrap(), [1, 0, 3, 0, 5, 0, 17, 0, 0x5C, 0xEA]);
        let max: Vec<u16> = (1..=64).collect();
        assert_eq!(event_id_filter(&max).unwrap().len(), 4 + 128);
        let over: Vec<u16> = (1..=65).collect();
        assert!(event_id_filter(&over).unwrap_err().contains("65 event ids"));
        assert!(event_id_filter(&[]).is_err());
    }

    #[test]
    fn a_provider_gets_an_event_filter_and_a_stack_filter() {
        // WinINet in the network scenario: 2 stacks among 21 events.
        let events = [101, 102, 103, 104, 105, 108, 200, 301, 304, 305, 307, 1007, 1008];
        let f = enable_filters(&events, Some(&[104, 1007])).unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!((f[0].0, f[0].1.len()), (0x8000_0200, 4 + 2 * events.len()));
        assert_eq!((f[1].0, f[1].1.as_slice()), (0x8000_1000, &[1u8, 0, 2, 0, 104, 0, 0xEF, 0x03][..]));
        assert!(enable_filters(&[], None).unwrap().is_empty());
        let too_many: Vec<u16> = (0..70).collect();
        assert!(enable_filters(&[], Some(&too_many)).unwrap_err().starts_with("stack filter"));
    }

    /// A `PROVIDER_ENUMERATION_INFO` block as TDH lays it out.
    fn enumeration(providers: &[(Guid, &str)]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&(providers.len() as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        let mut names_at = 8 + 24 * providers.len();
        let mut names = Vec::new();
        for (guid, name) in providers {
            b.extend_from_slice(&guid.to_bytes_le());
            b.extend_from_slice(&0u32.to_le_bytes());
            b.extend_from_slice(&(names_at as u32).to_le_bytes());
            for u in wide(name).into_iter().chain([0]) {
                names.extend_from_slice(&u.to_le_bytes());
            }
            names_at = 8 + 24 * providers.len() + names.len();
        }
        b.extend_from_slice(&names);
        b
    }

    #[test]
    fn registered_providers_are_found_by_name_ignoring_case() {
        let tcpip = Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a");
        let afd = Guid::parse_const("e53c6823-7bb8-44bb-90dc-3f86090d48a6");
        let b = enumeration(&[(tcpip, "Microsoft-Windows-TCPIP"), (afd, "Microsoft-Windows-Winsock-AFD")]);
        let list = provider_list(&b);
        assert_eq!(
            list,
            [(tcpip, "Microsoft-Windows-TCPIP".to_string()), (afd, "Microsoft-Windows-Winsock-AFD".into())]
        );
        assert_eq!(find_provider(&list, "microsoft-windows-winsock-afd"), Some(afd));
        assert_eq!(find_provider(&list, "MICROSOFT-WINDOWS-TCPIP"), Some(tcpip));
        assert_eq!(find_provider(&list, "Microsoft-Windows-TCPIP6"), None);
        // A name offset past the block's end drops its entry; a count
        // larger than the block stops at the block's end.
        let mut lying = b.clone();
        lying[8 + 20] = 0xFF;
        lying[8 + 21] = 0xFF;
        assert_eq!(provider_list(&lying), [(afd, "Microsoft-Windows-Winsock-AFD".to_string())]);
        lying[0] = 200;
        assert!(provider_list(&lying).len() <= (lying.len() - 8) / 24);
        assert!(provider_list(&[1, 0]).is_empty());
    }
}
