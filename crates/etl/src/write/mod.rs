//! Writing `.etl` files: the header buffer with its TRACE_LOGFILE_HEADER,
//! per-CPU buffers of 8-aligned records, optional XPRESS compression as the
//! relogger writes it. The base of the scenario synthesizer, and what the
//! round-trip tests and the sample trace are made with.
//!
//! Buffer headers follow what real files hold (see the corpus): data buffers
//! have `SavedOffset = Offset = filled`, `CurrentOffset = BufferSize + filled`,
//! state 3 (flushed), flags PROC_INDEX, 0xFF fill after the last record; the
//! header buffer is type HEADER with flags FLUSH_MARKER | PROC_INDEX. A
//! compressed buffer's size is its header plus the compressed stream, and its
//! `Offset` the uncompressed fill; the header buffer of a compressed file is
//! not compressed and is cut to a multiple of 0x200, as the relogger does.

use std::fmt;

use crate::buffer::{BUFFER_HEADER_SIZE, BufferFlags};
use crate::bytes::align8;
use crate::extended::ExtType;
use crate::guid::Guid;
use crate::record::HeaderKind;
use crate::xpress;

/// Session facts written into the header event.
#[derive(Clone, Debug)]
pub struct TraceConfig {
    pub buffer_size: u32,
    /// Pointer size of the session and of the header event (4 or 8).
    pub pointer_size: u8,
    pub number_of_processors: u32,
    pub os_version: (u8, u8),
    pub build: u32,
    /// FILETIME of the session start, and the raw clock value at that instant.
    pub start_time: i64,
    pub start_timestamp: u64,
    /// QPC ticks per second.
    pub perf_freq: i64,
    pub clock_type: u32,
    pub boot_time: i64,
    pub timer_resolution: u32,
    pub cpu_speed_mhz: u32,
    pub log_file_mode: u32,
    pub logger_name: String,
    pub log_file_name: String,
    /// Losses the session reports in its header.
    pub events_lost: u32,
    pub buffers_lost: u32,
    /// Thread and process that started the session (the header event's).
    pub process_id: u32,
    pub thread_id: u32,
    pub logger_id: u16,
    /// Write data buffers XPRESS-compressed.
    pub compress: bool,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            buffer_size: 64 * 1024,
            pointer_size: 8,
            number_of_processors: 2,
            os_version: (10, 0),
            build: 19045,
            // 2026-01-01T00:00:00Z
            start_time: 134_116_992_000_000_000,
            start_timestamp: 10_000_000 * 3600,
            perf_freq: 10_000_000,
            clock_type: 1,
            boot_time: 134_116_992_000_000_000 - 10_000_000 * 3600,
            timer_resolution: 156_250,
            cpu_speed_mhz: 2800,
            log_file_mode: 0x0000_0001,
            logger_name: "nettrail".to_string(),
            log_file_name: "nettrail.etl".to_string(),
            events_lost: 0,
            buffers_lost: 0,
            process_id: 4,
            thread_id: 8,
            logger_id: 0x20,
            compress: false,
        }
    }
}

/// Where and when a record was logged.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Context {
    /// Raw session-clock timestamp.
    pub timestamp: u64,
    pub cpu: u16,
    pub process_id: u32,
    pub thread_id: u32,
}

/// The EVENT_DESCRIPTOR of a manifest or TraceLogging event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Descriptor {
    pub id: u16,
    pub version: u8,
    pub channel: u8,
    pub level: u8,
    pub opcode: u8,
    pub task: u16,
    pub keywords: u64,
}

/// An EVENT_HEADER record to write.
#[derive(Clone, Copy, Debug)]
pub struct EventHeaderRecord<'a> {
    pub context: Context,
    pub provider: Guid,
    pub descriptor: Descriptor,
    pub activity_id: Guid,
    /// 4 for a 32-bit (WOW64) logger, 8 otherwise.
    pub pointer_size: u8,
    /// Extra EVENT_HEADER flags (e.g. STRING_ONLY); EXTENDED_INFO is set
    /// automatically when `extended` is not empty.
    pub flags: u16,
    pub kernel_time: u32,
    pub user_time: u32,
    pub extended: &'a [(ExtType, &'a [u8])],
    pub payload: &'a [u8],
}

impl<'a> EventHeaderRecord<'a> {
    /// A 64-bit event with no activity, extended data or CPU time.
    pub fn new(context: Context, provider: Guid, descriptor: Descriptor, payload: &'a [u8]) -> Self {
        EventHeaderRecord {
            context,
            provider,
            descriptor,
            activity_id: Guid::ZERO,
            pointer_size: 8,
            flags: 0,
            kernel_time: 0,
            user_time: 0,
            extended: &[],
            payload,
        }
    }
}

/// The header form of a classic kernel record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelHeader {
    /// SYSTEM_TRACE_HEADER: thread, process and CPU times.
    System,
    /// Without CPU times.
    Compact,
    /// PERFINFO_TRACE_HEADER: no thread or process (rundown, TcpIp, stacks).
    Perfinfo,
}

/// A classic kernel record (SYSTEM / COMPACT / PERFINFO) to write.
#[derive(Clone, Copy, Debug)]
pub struct KernelRecord<'a> {
    pub context: Context,
    pub header: KernelHeader,
    pub pointer_size: u8,
    pub group: u8,
    pub opcode: u8,
    pub version: u8,
    pub kernel_time: u32,
    pub user_time: u32,
    pub payload: &'a [u8],
}

/// A classic provider record (EVENT_TRACE_HEADER, or the instance form) to write.
#[derive(Clone, Copy, Debug)]
pub struct ClassicRecord<'a> {
    pub context: Context,
    pub pointer_size: u8,
    /// The MOF event class GUID.
    pub class: Guid,
    pub opcode: u8,
    pub level: u8,
    pub version: u16,
    /// (instance id, parent instance id, parent GUID) for the instance form.
    pub instance: Option<(u32, u32, Guid)>,
    pub payload: &'a [u8],
}

/// A record the writer cannot place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// Larger than 65535 bytes or than a buffer's data area.
    RecordTooLarge { size: usize, limit: usize },
    /// The CPU is not below the session's processor count.
    NoSuchCpu { cpu: u16, cpus: u32 },
    /// Extended data larger than an item can hold.
    ExtendedItemTooLarge { size: usize },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::RecordTooLarge { size, limit } => {
                write!(f, "record of {size} bytes does not fit: the limit is {limit}")
            }
            WriteError::NoSuchCpu { cpu, cpus } => write!(f, "CPU {cpu} does not exist in a {cpus}-CPU session"),
            WriteError::ExtendedItemTooLarge { size } => write!(f, "extended item of {size} bytes is too large"),
        }
    }
}

impl std::error::Error for WriteError {}

struct OpenBuffer {
    bytes: Vec<u8>,
    sequence: u64,
    last_timestamp: u64,
}

/// Builds a trace in memory; [`TraceWriter::finish`] returns the file bytes.
/// Records of one CPU must be written in time order (as ETW logs them).
pub struct TraceWriter {
    config: TraceConfig,
    open: Vec<Option<OpenBuffer>>,
    flushed: Vec<u8>,
    buffers_written: u32,
    next_sequence: u64,
    last_timestamp: u64,
    record: Vec<u8>,
}

impl fmt::Debug for TraceWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TraceWriter").field("buffers_written", &self.buffers_written).finish()
    }
}

impl TraceWriter {
    pub fn new(config: TraceConfig) -> TraceWriter {
        let cpus = config.number_of_processors.max(1) as usize;
        TraceWriter {
            last_timestamp: config.start_timestamp,
            config,
            open: (0..cpus).map(|_| None).collect(),
            flushed: Vec::new(),
            buffers_written: 0,
            next_sequence: 1,
            record: Vec::with_capacity(1024),
        }
    }

    pub fn config(&self) -> &TraceConfig {
        &self.config
    }

    pub fn write_event_header(&mut self, e: &EventHeaderRecord<'_>) -> Result<(), WriteError> {
        let mut r = std::mem::take(&mut self.record);
        let result = fill_event_header(e, &mut r).and_then(|()| self.place(e.context, &mut r, 0));
        self.record = r;
        result
    }

    pub fn write_kernel(&mut self, e: &KernelRecord<'_>) -> Result<(), WriteError> {
        let mut r = std::mem::take(&mut self.record);
        fill_kernel(e, &mut r);
        let result = self.place(e.context, &mut r, 4);
        self.record = r;
        result
    }

    pub fn write_classic(&mut self, e: &ClassicRecord<'_>) -> Result<(), WriteError> {
        let mut r = std::mem::take(&mut self.record);
        fill_classic(e, &mut r);
        let result = self.place(e.context, &mut r, 0);
        self.record = r;
        result
    }

    /// Stores the record's size at `size_at`, pads it to 8 bytes and appends
    /// it to its CPU's buffer, flushing the buffer first when it is full.
    fn place(&mut self, context: Context, record: &mut Vec<u8>, size_at: usize) -> Result<(), WriteError> {
        let capacity = (self.config.buffer_size as usize).saturating_sub(BUFFER_HEADER_SIZE);
        let limit = capacity.min(usize::from(u16::MAX));
        let Ok(size) = u16::try_from(record.len()) else {
            return Err(WriteError::RecordTooLarge { size: record.len(), limit });
        };
        if record.len() > limit {
            return Err(WriteError::RecordTooLarge { size: record.len(), limit });
        }
        let cpus = self.config.number_of_processors;
        let Some(slot) = self.open.get_mut(usize::from(context.cpu)) else {
            return Err(WriteError::NoSuchCpu { cpu: context.cpu, cpus });
        };
        record[size_at..size_at + 2].copy_from_slice(&size.to_le_bytes());
        record.resize(align8(record.len()), 0);
        if slot.as_ref().is_some_and(|b| b.bytes.len() + record.len() > self.config.buffer_size as usize) {
            let full = slot.take();
            if let Some(full) = full {
                self.flush(context.cpu, full);
            }
        }
        let slot = &mut self.open[usize::from(context.cpu)];
        let buffer = slot.get_or_insert_with(|| {
            let sequence = self.next_sequence;
            self.next_sequence += 1;
            OpenBuffer { bytes: vec![0; BUFFER_HEADER_SIZE], sequence, last_timestamp: context.timestamp }
        });
        buffer.bytes.extend_from_slice(record);
        buffer.last_timestamp = context.timestamp;
        self.last_timestamp = self.last_timestamp.max(context.timestamp);
        Ok(())
    }

    fn flush(&mut self, cpu: u16, buffer: OpenBuffer) {
        let bytes = self.finish_buffer(cpu, buffer, false);
        self.flushed.extend_from_slice(&bytes);
        self.buffers_written += 1;
    }

    /// Fills in a buffer's header and fill bytes, compressing if configured.
    fn finish_buffer(&self, cpu: u16, buffer: OpenBuffer, last: bool) -> Vec<u8> {
        let mut b = buffer.bytes;
        let filled = b.len() as u32;
        let size = self.config.buffer_size;
        let mut flags = BufferFlags::PROC_INDEX;
        if last {
            flags |= BufferFlags::FLUSH_MARKER;
        }
        if self.config.compress {
            flags |= BufferFlags::COMPRESSED;
        }
        write_buffer_header(
            &mut b,
            BufferFields {
                buffer_size: size,
                saved_offset: filled,
                current_offset: size.saturating_add(filled),
                timestamp: buffer.last_timestamp,
                sequence: buffer.sequence,
                cpu,
                logger_id: self.config.logger_id,
                filled,
                flags,
                buffer_type: 0,
            },
        );
        if self.config.compress {
            let packed = xpress::compress(&b[BUFFER_HEADER_SIZE..]);
            b.truncate(BUFFER_HEADER_SIZE);
            b.extend_from_slice(&packed);
            let on_disk = b.len() as u32;
            b[0..4].copy_from_slice(&on_disk.to_le_bytes());
        } else {
            b.resize(size as usize, 0xFF);
        }
        b
    }

    /// Flushes every open buffer and returns the file: the header buffer,
    /// then the data buffers in flush order.
    pub fn finish(mut self) -> Vec<u8> {
        // Stopping a session flushes the remaining buffers in time order.
        let mut open: Vec<(u16, OpenBuffer)> =
            self.open.iter_mut().enumerate().filter_map(|(cpu, b)| Some((cpu as u16, b.take()?))).collect();
        open.sort_by_key(|(cpu, b)| (b.last_timestamp, *cpu));
        for (cpu, buffer) in open {
            let bytes = self.finish_buffer(cpu, buffer, true);
            self.flushed.extend_from_slice(&bytes);
            self.buffers_written += 1;
        }
        let mut file = self.header_buffer();
        file.extend_from_slice(&self.flushed);
        file
    }

    fn header_buffer(&self) -> Vec<u8> {
        let c = &self.config;
        let payload = logfile_header_payload(c, self.buffers_written + 1, self.end_time());
        let mut b = vec![0u8; BUFFER_HEADER_SIZE];
        let kind = if c.pointer_size == 4 { HeaderKind::System32 } else { HeaderKind::System64 };
        let size = (0x20 + payload.len()) as u16;
        b.extend_from_slice(&[2, 0, kind.header_type(), 0xC0]);
        b.extend_from_slice(&size.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes()); // hook: EventTrace / Header
        b.extend_from_slice(&c.thread_id.to_le_bytes());
        b.extend_from_slice(&c.process_id.to_le_bytes());
        b.extend_from_slice(&c.start_timestamp.to_le_bytes());
        b.extend_from_slice(&[0; 8]); // kernel and user time
        b.extend_from_slice(&payload);
        b.resize(align8(b.len()), 0);
        let filled = b.len() as u32;
        let size = if c.compress { filled.next_multiple_of(0x200) } else { c.buffer_size };
        write_buffer_header(
            &mut b,
            BufferFields {
                buffer_size: size,
                saved_offset: filled,
                current_offset: filled,
                timestamp: 0,
                sequence: 0,
                cpu: 0,
                logger_id: c.logger_id,
                filled,
                flags: BufferFlags::FLUSH_MARKER | BufferFlags::PROC_INDEX,
                buffer_type: 4,
            },
        );
        b.resize(size as usize, 0xFF);
        b
    }

    /// FILETIME of the last record written.
    fn end_time(&self) -> i64 {
        let c = &self.config;
        crate::clock::Clock::new(
            crate::clock::ClockType::from_reserved_flags(c.clock_type),
            c.start_time,
            c.start_timestamp,
            c.perf_freq,
            c.cpu_speed_mhz,
        )
        .to_filetime(self.last_timestamp)
    }
}

struct BufferFields {
    buffer_size: u32,
    saved_offset: u32,
    current_offset: u32,
    timestamp: u64,
    sequence: u64,
    cpu: u16,
    logger_id: u16,
    filled: u32,
    flags: u16,
    buffer_type: u16,
}

/// One record's bytes as a buffer holds them (size stored, padded to 8):
/// how events that arrive one by one — from a real-time session — become
/// records the reader parses.
pub fn encode_event_header(e: &EventHeaderRecord<'_>, out: &mut Vec<u8>) -> Result<(), WriteError> {
    fill_event_header(e, out)?;
    finish_record(out, 0)
}

/// A kernel record's bytes (see [`encode_event_header`]).
pub fn encode_kernel(e: &KernelRecord<'_>, out: &mut Vec<u8>) -> Result<(), WriteError> {
    fill_kernel(e, out);
    finish_record(out, 4)
}

/// A classic provider record's bytes (see [`encode_event_header`]).
pub fn encode_classic(e: &ClassicRecord<'_>, out: &mut Vec<u8>) -> Result<(), WriteError> {
    fill_classic(e, out);
    finish_record(out, 0)
}

fn finish_record(r: &mut Vec<u8>, size_at: usize) -> Result<(), WriteError> {
    let size = u16::try_from(r.len())
        .map_err(|_| WriteError::RecordTooLarge { size: r.len(), limit: usize::from(u16::MAX) })?;
    r[size_at..size_at + 2].copy_from_slice(&size.to_le_bytes());
    r.resize(align8(r.len()), 0);
    Ok(())
}

/// The record without its size (set where it is placed).
fn fill_event_header(e: &EventHeaderRecord<'_>, r: &mut Vec<u8>) -> Result<(), WriteError> {
    r.clear();
    let mut flags = e.flags & !crate::record::event_header_flags::EXTENDED_INFO;
    if !e.extended.is_empty() {
        flags |= crate::record::event_header_flags::EXTENDED_INFO;
    }
    let kind = if e.pointer_size == 4 { HeaderKind::EventHeader32 } else { HeaderKind::EventHeader64 };
    r.extend_from_slice(&[0, 0, kind.header_type(), 0xC0]);
    r.extend_from_slice(&flags.to_le_bytes());
    r.extend_from_slice(&0u16.to_le_bytes()); // EventProperty
    r.extend_from_slice(&e.context.thread_id.to_le_bytes());
    r.extend_from_slice(&e.context.process_id.to_le_bytes());
    r.extend_from_slice(&e.context.timestamp.to_le_bytes());
    r.extend_from_slice(&e.provider.to_bytes_le());
    let d = &e.descriptor;
    r.extend_from_slice(&d.id.to_le_bytes());
    r.extend_from_slice(&[d.version, d.channel, d.level, d.opcode]);
    r.extend_from_slice(&d.task.to_le_bytes());
    r.extend_from_slice(&d.keywords.to_le_bytes());
    r.extend_from_slice(&e.kernel_time.to_le_bytes());
    r.extend_from_slice(&e.user_time.to_le_bytes());
    r.extend_from_slice(&e.activity_id.to_bytes_le());
    for (i, (ext_type, data)) in e.extended.iter().enumerate() {
        let item_size = align8(8 + data.len());
        let (Ok(item), Ok(len)) = (u16::try_from(item_size), u16::try_from(data.len())) else {
            return Err(WriteError::ExtendedItemTooLarge { size: data.len() });
        };
        let more = u16::from(i + 1 < e.extended.len());
        r.extend_from_slice(&item.to_le_bytes());
        r.extend_from_slice(&ext_type.0.to_le_bytes());
        r.extend_from_slice(&more.to_le_bytes());
        r.extend_from_slice(&len.to_le_bytes());
        r.extend_from_slice(data);
        r.resize(r.len() + item_size - 8 - data.len(), 0);
    }
    r.extend_from_slice(e.payload);
    Ok(())
}

fn fill_kernel(e: &KernelRecord<'_>, r: &mut Vec<u8>) {
    r.clear();
    let kind = match (e.header, e.pointer_size == 4) {
        (KernelHeader::System, true) => HeaderKind::System32,
        (KernelHeader::System, false) => HeaderKind::System64,
        (KernelHeader::Compact, true) => HeaderKind::Compact32,
        (KernelHeader::Compact, false) => HeaderKind::Compact64,
        (KernelHeader::Perfinfo, true) => HeaderKind::Perfinfo32,
        (KernelHeader::Perfinfo, false) => HeaderKind::Perfinfo64,
    };
    r.extend_from_slice(&[e.version, 0, kind.header_type(), 0xC0, 0, 0, e.opcode, e.group]);
    match e.header {
        KernelHeader::Perfinfo => r.extend_from_slice(&e.context.timestamp.to_le_bytes()),
        KernelHeader::System | KernelHeader::Compact => {
            r.extend_from_slice(&e.context.thread_id.to_le_bytes());
            r.extend_from_slice(&e.context.process_id.to_le_bytes());
            r.extend_from_slice(&e.context.timestamp.to_le_bytes());
            if e.header == KernelHeader::System {
                r.extend_from_slice(&e.kernel_time.to_le_bytes());
                r.extend_from_slice(&e.user_time.to_le_bytes());
            }
        }
    }
    r.extend_from_slice(e.payload);
}

fn fill_classic(e: &ClassicRecord<'_>, r: &mut Vec<u8>) {
    r.clear();
    let kind = match (e.instance.is_some(), e.pointer_size == 4) {
        (false, true) => HeaderKind::FullHeader32,
        (false, false) => HeaderKind::FullHeader64,
        (true, true) => HeaderKind::Instance32,
        (true, false) => HeaderKind::Instance64,
    };
    r.extend_from_slice(&[0, 0, kind.header_type(), 0xC0, e.opcode, e.level]);
    r.extend_from_slice(&e.version.to_le_bytes());
    r.extend_from_slice(&e.context.thread_id.to_le_bytes());
    r.extend_from_slice(&e.context.process_id.to_le_bytes());
    r.extend_from_slice(&e.context.timestamp.to_le_bytes());
    r.extend_from_slice(&e.class.to_bytes_le());
    r.extend_from_slice(&[0; 8]); // kernel and user time
    if let Some((instance, parent, parent_guid)) = e.instance {
        r.extend_from_slice(&instance.to_le_bytes());
        r.extend_from_slice(&parent.to_le_bytes());
        r.extend_from_slice(&parent_guid.to_bytes_le());
    }
    r.extend_from_slice(e.payload);
}

fn write_buffer_header(b: &mut [u8], f: BufferFields) {
    let h = &mut b[..BUFFER_HEADER_SIZE];
    h.fill(0);
    h[0x00..0x04].copy_from_slice(&f.buffer_size.to_le_bytes());
    h[0x04..0x08].copy_from_slice(&f.saved_offset.to_le_bytes());
    h[0x08..0x0C].copy_from_slice(&f.current_offset.to_le_bytes());
    h[0x10..0x18].copy_from_slice(&f.timestamp.to_le_bytes());
    h[0x18..0x20].copy_from_slice(&f.sequence.to_le_bytes());
    h[0x28..0x2A].copy_from_slice(&f.cpu.to_le_bytes());
    h[0x2A..0x2C].copy_from_slice(&f.logger_id.to_le_bytes());
    h[0x2C..0x30].copy_from_slice(&3u32.to_le_bytes()); // state: flushed
    h[0x30..0x34].copy_from_slice(&f.filled.to_le_bytes());
    h[0x34..0x36].copy_from_slice(&f.flags.to_le_bytes());
    h[0x36..0x38].copy_from_slice(&f.buffer_type.to_le_bytes());
}

/// TRACE_LOGFILE_HEADER and the two names, laid out for the pointer size.
fn logfile_header_payload(c: &TraceConfig, buffers_written: u32, end_time: i64) -> Vec<u8> {
    let wide = c.pointer_size != 4;
    let mut p = Vec::with_capacity(0x160);
    p.extend_from_slice(&c.buffer_size.to_le_bytes());
    // OS major, minor, then log-file layout version 1.5 (QPC and clock type in the header).
    p.extend_from_slice(&[c.os_version.0, c.os_version.1, 1, 5]);
    p.extend_from_slice(&c.build.to_le_bytes());
    p.extend_from_slice(&c.number_of_processors.to_le_bytes());
    p.extend_from_slice(&end_time.to_le_bytes());
    p.extend_from_slice(&c.timer_resolution.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes()); // MaximumFileSize
    p.extend_from_slice(&c.log_file_mode.to_le_bytes());
    p.extend_from_slice(&buffers_written.to_le_bytes());
    p.extend_from_slice(&1u32.to_le_bytes()); // StartBuffers
    p.extend_from_slice(&u32::from(c.pointer_size).to_le_bytes());
    p.extend_from_slice(&c.events_lost.to_le_bytes());
    p.extend_from_slice(&c.cpu_speed_mhz.to_le_bytes());
    // LoggerName and LogFileName pointers: meaningless on disk.
    p.resize(p.len() + if wide { 16 } else { 8 }, 0);
    // TIME_ZONE_INFORMATION for UTC (172 bytes).
    let tz_start = p.len();
    p.resize(tz_start + 172, 0);
    for (offset, name) in [(4, "Coordinated Universal Time"), (88, "Coordinated Universal Time")] {
        for (i, unit) in name.encode_utf16().enumerate() {
            let at = tz_start + offset + 2 * i;
            p[at..at + 2].copy_from_slice(&unit.to_le_bytes());
        }
    }
    p.resize(p.len() + 4, 0); // alignment before BootTime
    p.extend_from_slice(&c.boot_time.to_le_bytes());
    p.extend_from_slice(&c.perf_freq.to_le_bytes());
    p.extend_from_slice(&c.start_time.to_le_bytes());
    p.extend_from_slice(&c.clock_type.to_le_bytes());
    p.extend_from_slice(&c.buffers_lost.to_le_bytes());
    debug_assert_eq!(p.len(), crate::logfile::fixed_size(c.pointer_size));
    for name in [&c.logger_name, &c.log_file_name] {
        for unit in name.encode_utf16() {
            p.extend_from_slice(&unit.to_le_bytes());
        }
        p.extend_from_slice(&[0, 0]);
    }
    p
}
