//! `TRACE_LOGFILE_HEADER`: the payload of the trace header event, the first
//! record of every file. It anchors the clock and describes the session.

use crate::bytes::{Utf16, i64_at, u32_at};
use crate::clock::{Clock, ClockType};

/// The session facts in the trace header event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogfileHeader {
    /// The session's buffer size (the uncompressed size for compressed files).
    pub buffer_size: u32,
    /// OS major and minor version, then the log-file layout version.
    pub os_version: (u8, u8),
    pub layout_version: (u8, u8),
    /// Windows build number (e.g. 19041).
    pub build: u32,
    pub number_of_processors: u32,
    /// FILETIME when the session stopped; 0 if it was not stopped cleanly.
    pub end_time: i64,
    /// Tick length for KernelTime/UserTime, in 100 ns.
    pub timer_resolution: u32,
    pub maximum_file_size: u32,
    pub log_file_mode: u32,
    /// Buffers the session wrote (not a count of buffers in the file).
    pub buffers_written: u32,
    pub start_buffers: u32,
    pub pointer_size: u32,
    pub events_lost: u32,
    pub cpu_speed_mhz: u32,
    /// Minutes to add to local time to get UTC, and the zone's names.
    pub time_zone_bias: i32,
    pub time_zone_standard_name: String,
    pub time_zone_daylight_name: String,
    pub boot_time: i64,
    pub perf_freq: i64,
    /// FILETIME of the session start: the time anchor.
    pub start_time: i64,
    /// `ReservedFlags`: the clock the session's timestamps use.
    pub clock_type: u32,
    pub buffers_lost: u32,
    pub logger_name: String,
    pub log_file_name: String,
}

/// Most logical processors Windows supports (a buffer's processor index has 11 bits).
pub const MAX_PROCESSORS: u32 = 2048;

/// Bytes of the fixed part, by pointer size (the two name pointers and the
/// alignment before BootTime make the 64-bit form 8 bytes longer).
pub const fn fixed_size(pointer_size: u8) -> usize {
    if pointer_size == 4 { 0x110 } else { 0x118 }
}

impl LogfileHeader {
    /// Parses the payload of the header event; `pointer_size` is the record's.
    pub fn parse(payload: &[u8], pointer_size: u8) -> Option<LogfileHeader> {
        // The two name pointers (LoggerName, LogFileName) widen the 64-bit
        // form: TimeZone moves from 0x40 to 0x48, and everything after it by 8.
        let wide = if pointer_size == 8 { 8 } else { 0 };
        let tz = 0x40 + wide;
        let after_tz = |off32: usize| off32 + wide;
        let version = u32_at(payload, 0x04)?.to_le_bytes();
        let fixed = fixed_size(pointer_size);
        let (logger_name, next) = Utf16::read_terminated(payload, fixed)?;
        let (log_file_name, _) = Utf16::read_terminated(payload, next).unwrap_or_default();
        let tz_name = |off: usize| {
            let raw = payload.get(tz + off..tz + off + 64).unwrap_or_default();
            Utf16::read_terminated(raw, 0).map(|(s, _)| s.to_string_lossy()).unwrap_or_default()
        };
        Some(LogfileHeader {
            buffer_size: u32_at(payload, 0x00)?,
            os_version: (version[0], version[1]),
            layout_version: (version[2], version[3]),
            build: u32_at(payload, 0x08)?,
            number_of_processors: u32_at(payload, 0x0C)?,
            end_time: i64_at(payload, 0x10)?,
            timer_resolution: u32_at(payload, 0x18)?,
            maximum_file_size: u32_at(payload, 0x1C)?,
            log_file_mode: u32_at(payload, 0x20)?,
            buffers_written: u32_at(payload, 0x24)?,
            start_buffers: u32_at(payload, 0x28)?,
            pointer_size: u32_at(payload, 0x2C)?,
            events_lost: u32_at(payload, 0x30)?,
            cpu_speed_mhz: u32_at(payload, 0x34)?,
            time_zone_bias: u32_at(payload, tz)? as i32,
            time_zone_standard_name: tz_name(4),
            time_zone_daylight_name: tz_name(88),
            boot_time: i64_at(payload, after_tz(0xF0))?,
            perf_freq: i64_at(payload, after_tz(0xF8))?,
            start_time: i64_at(payload, after_tz(0x100))?,
            clock_type: u32_at(payload, after_tz(0x108))?,
            buffers_lost: u32_at(payload, after_tz(0x10C))?,
            logger_name: logger_name.to_string_lossy(),
            log_file_name: log_file_name.to_string_lossy(),
        })
    }

    /// Fields whose values no session has, as (field, value, what was
    /// expected). Readers show them flagged and never size anything by them.
    pub fn implausible_fields(&self) -> Vec<(&'static str, u64, &'static str)> {
        let mut out = Vec::new();
        let mut check = |ok: bool, field, value: u64, expected| {
            if !ok {
                out.push((field, value, expected));
            }
        };
        check(
            (0x48..=16 << 20).contains(&self.buffer_size),
            "BufferSize",
            u64::from(self.buffer_size),
            "0x48 to 16 MiB (the most ETW allows)",
        );
        check(matches!(self.pointer_size, 4 | 8), "PointerSize", u64::from(self.pointer_size), "4 or 8");
        check(
            (1..=MAX_PROCESSORS).contains(&self.number_of_processors),
            "NumberOfProcessors",
            u64::from(self.number_of_processors),
            "1 to 2048 (the processor index of a buffer has 11 bits)",
        );
        check(self.events_lost != u32::MAX, "EventsLost", u64::from(self.events_lost), "a count, not all bits set");
        check(
            self.buffers_lost != u32::MAX && (self.buffers_written == 0 || self.buffers_lost <= self.buffers_written),
            "BuffersLost",
            u64::from(self.buffers_lost),
            "at most the buffers written",
        );
        check(self.perf_freq >= 0, "PerfFreq", self.perf_freq as u64, "a positive frequency");
        check(
            self.end_time == 0 || self.end_time >= self.start_time,
            "EndTime",
            self.end_time as u64,
            "0 or a time after StartTime",
        );
        out
    }

    /// The clock that turns this session's raw timestamps into FILETIME;
    /// `header_timestamp` is the raw timestamp of the header event.
    pub fn clock(&self, header_timestamp: u64) -> Clock {
        Clock::new(
            ClockType::from_reserved_flags(self.clock_type),
            self.start_time,
            header_timestamp,
            self.perf_freq,
            self.cpu_speed_mhz,
        )
    }

    /// Log file mode bit names (EVENT_TRACE_*_MODE), for display.
    pub fn log_file_mode_names(&self) -> Vec<&'static str> {
        const MODES: [(u32, &str); 20] = [
            (0x1, "FILE_MODE_SEQUENTIAL"),
            (0x2, "FILE_MODE_CIRCULAR"),
            (0x4, "FILE_MODE_APPEND"),
            (0x8, "FILE_MODE_NEWFILE"),
            (0x20, "FILE_MODE_PREALLOCATE"),
            (0x40, "NONSTOPPABLE_MODE"),
            (0x80, "SECURE_MODE"),
            (0x100, "REAL_TIME_MODE"),
            (0x400, "BUFFERING_MODE"),
            (0x800, "PRIVATE_LOGGER_MODE"),
            (0x1000, "ADD_HEADER_MODE"),
            (0x2000, "USE_KBYTES_FOR_SIZE"),
            (0x4000, "USE_GLOBAL_SEQUENCE"),
            (0x8000, "USE_LOCAL_SEQUENCE"),
            (0x10000, "RELOG_MODE"),
            (0x20000, "PRIVATE_IN_PROC"),
            (0x0100_0000, "USE_PAGED_MEMORY"),
            (0x0200_0000, "SYSTEM_LOGGER_MODE"),
            (0x0400_0000, "COMPRESSED_MODE"),
            (0x0800_0000, "INDEPENDENT_SESSION_MODE"),
        ];
        MODES.iter().filter(|(bit, _)| self.log_file_mode & bit != 0).map(|(_, n)| *n).collect()
    }
}
