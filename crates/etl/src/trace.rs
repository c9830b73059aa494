//! An opened trace: the header event, the index of buffers, and each
//! buffer's records in file order.

use crate::buffer::{BUFFER_HEADER_SIZE, BufferHeader, BufferWalk, MAX_BUFFER_SIZE};
use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Location, Result};
use crate::file::TraceFile;
use crate::logfile::{LogfileHeader, fixed_size};
use crate::record::{Record, parse_record, peek_timestamp};
use crate::xpress;

/// What the reader knows of one buffer before reading its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferInfo {
    pub index: u32,
    /// File offset of the buffer header.
    pub offset: u64,
    pub header: BufferHeader,
    /// Bytes present in the file (fewer than `header.buffer_size` when truncated).
    pub stored_len: usize,
    pub truncated: bool,
    /// Raw timestamp of the first record; `None` for a buffer without records.
    pub first_timestamp: Option<u64>,
}

impl BufferInfo {
    /// What the walk found; the first record's time is read separately.
    fn new(b: &crate::buffer::Buffer<'_>) -> BufferInfo {
        BufferInfo {
            index: b.index,
            offset: b.offset,
            header: b.header,
            stored_len: b.raw.len(),
            truncated: b.truncated,
            first_timestamp: None,
        }
    }

    pub fn location(&self, offset_in_buffer: usize) -> Location {
        Location {
            buffer_index: self.index,
            buffer_offset: self.offset,
            offset_in_buffer: u32::try_from(offset_in_buffer).unwrap_or(u32::MAX),
            compressed: self.header.is_compressed(),
        }
    }

    /// Bytes of the buffer after its records (0xFF fill or stale data).
    /// A compressed buffer stores none.
    pub fn unused_tail(&self) -> usize {
        if self.header.is_compressed() {
            0
        } else {
            (self.header.buffer_size as usize).saturating_sub(self.header.filled as usize)
        }
    }

    fn error(&self, offset_in_buffer: usize, kind: ErrorKind) -> Error {
        Error { location: self.location(offset_in_buffer), kind }
    }
}

/// A parsed `.etl` file, borrowing its bytes.
#[derive(Debug)]
pub struct Trace<'data> {
    data: &'data [u8],
    /// The mapped file, when the trace was opened from one: pages of the
    /// buffers read are handed back as reading goes, so resident memory
    /// stays small on large traces.
    file: Option<&'data TraceFile>,
    header: LogfileHeader,
    header_timestamp: u64,
    clock: Clock,
    pointer_size: u8,
    buffers: Vec<BufferInfo>,
    walk_error: Option<Error>,
}

/// Gathers the file ranges of buffers a reader is done with, and releases
/// them ([`Trace::release`]) in large contiguous steps, the rest when dropped.
#[derive(Debug)]
pub struct Releaser<'t, 'd> {
    trace: &'t Trace<'d>,
    pending: Option<std::ops::Range<usize>>,
}

impl<'t, 'd> Releaser<'t, 'd> {
    /// Releases are made in steps of at least this many bytes.
    const STEP: usize = 16 << 20;

    pub fn new(trace: &'t Trace<'d>) -> Self {
        Releaser { trace, pending: None }
    }

    /// The reader is done with this buffer.
    pub fn done(&mut self, info: &BufferInfo) {
        if self.trace.file.is_none() {
            return;
        }
        let start = info.offset as usize;
        let range = start..start + info.header.buffer_size as usize;
        match &mut self.pending {
            Some(p) if p.end == range.start => p.end = range.end,
            Some(p) if range.end == p.start => p.start = range.start,
            _ => {
                self.flush();
                self.pending = Some(range);
            }
        }
        if self.pending.as_ref().is_some_and(|p| p.len() >= Self::STEP) {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            self.trace.release(p);
        }
    }
}

impl Drop for Releaser<'_, '_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The bytes of one buffer as records are read from them: the buffer image
/// from its header up to the end of its data, decompressed if need be, and the
/// error that cut it short, if any.
#[derive(Debug)]
pub struct BufferContents<'a> {
    pub bytes: &'a [u8],
    /// Reported after the buffer's readable records.
    pub error: Option<Error>,
}

impl<'data> Trace<'data> {
    /// Reads the header event and indexes every buffer. Fails only when the
    /// file has no readable trace header; damage later in the file is kept in
    /// [`Trace::walk_error`] and reported after the good buffers before it.
    pub fn parse(data: &'data [u8]) -> Result<Trace<'data>> {
        Trace::parse_from(data, None)
    }

    /// [`Trace::parse`] of a file's bytes; buffers read by this trace's
    /// readers (the merge, and [`Trace::contents`] users that hand them to a
    /// [`Releaser`]) give their pages back to the OS.
    pub fn open(file: &'data TraceFile) -> Result<Trace<'data>> {
        Trace::parse_from(file.bytes(), Some(file))
    }

    fn parse_from(data: &'data [u8], file: Option<&'data TraceFile>) -> Result<Trace<'data>> {
        /// The walk hands back the pages of the headers it read in steps of this size.
        const RELEASE_STEP: usize = 64 << 20;
        let mut walk = BufferWalk::new(data);
        let too_small =
            || Error { location: Location::default(), kind: ErrorKind::FileTooSmall { len: data.len() as u64 } };
        let first = walk.next().ok_or_else(too_small)??;
        let mut first_info = BufferInfo::new(&first);

        // The header event gives the pointer size, so read it with the widest default.
        let mut scratch = Vec::new();
        let contents = buffer_contents(data, &first_info, &mut scratch);
        let mut records = BufferRecords::new(contents.bytes, &first_info, 8);
        let header_record = match records.next() {
            Some(Ok((_, record))) => record,
            Some(Err(e)) => return Err(e),
            None => {
                return Err(contents.error.unwrap_or_else(|| {
                    first_info.error(
                        BUFFER_HEADER_SIZE,
                        ErrorKind::MissingHeaderEvent { found: "an empty buffer".to_string() },
                    )
                }));
            }
        };
        if !header_record.is_trace_header() {
            return Err(
                first_info.error(BUFFER_HEADER_SIZE, ErrorKind::MissingHeaderEvent { found: header_record.describe() })
            );
        }
        let needed = fixed_size(header_record.pointer_size);
        let header = LogfileHeader::parse(header_record.payload, header_record.pointer_size).ok_or_else(|| {
            first_info
                .error(BUFFER_HEADER_SIZE, ErrorKind::ShortHeaderEvent { payload: header_record.payload.len(), needed })
        })?;
        let header_timestamp = header_record.timestamp;
        first_info.first_timestamp = Some(header_timestamp);
        let pointer_size = if header.pointer_size == 4 { 4 } else { header_record.pointer_size };
        let clock = header.clock(header_timestamp);

        let mut buffers = vec![first_info];
        let mut walk_error = None;
        let mut released = 0;
        for buffer in walk {
            match buffer {
                Ok(b) => {
                    let mut info = BufferInfo::new(&b);
                    info.first_timestamp = first_record_timestamp(b.raw, &info, &mut scratch);
                    let at = info.offset as usize;
                    buffers.push(info);
                    if let Some(file) = file
                        && at - released >= RELEASE_STEP
                    {
                        file.release(released..at);
                        released = at;
                    }
                }
                Err(e) => walk_error = Some(e),
            }
        }
        if let Some(file) = file {
            file.release(released..data.len());
        }
        Ok(Trace { data, file, header, header_timestamp, clock, pointer_size, buffers, walk_error })
    }

    /// Tells the OS these bytes will not be read again soon (only for a
    /// trace opened from a mapped file; the bytes stay readable). Each call
    /// is a system call: gather buffers with [`Releaser`] rather than
    /// releasing them one by one.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Some(file) = self.file {
            file.release(range);
        }
    }

    pub fn data(&self) -> &'data [u8] {
        self.data
    }

    pub fn header(&self) -> &LogfileHeader {
        &self.header
    }

    /// Raw timestamp of the (first) header event: the clock's anchor.
    pub fn header_timestamp(&self) -> u64 {
        self.header_timestamp
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Pointer size of the session (records may differ: WOW64 providers).
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }

    /// Every buffer, in file order.
    pub fn buffers(&self) -> &[BufferInfo] {
        &self.buffers
    }

    /// The error that stopped the walk along the buffer chain, if any.
    pub fn walk_error(&self) -> Option<&Error> {
        self.walk_error.as_ref()
    }

    /// The bytes of a buffer, decompressing into `scratch` if it is compressed.
    pub fn contents<'s>(&'s self, info: &BufferInfo, scratch: &'s mut Vec<u8>) -> BufferContents<'s> {
        buffer_contents(self.data, info, scratch)
    }

    /// The records of a buffer's contents, in file order.
    pub fn records<'a>(&self, info: &BufferInfo, contents: &BufferContents<'a>) -> BufferRecords<'a> {
        BufferRecords::new(contents.bytes, info, self.pointer_size)
    }
}

fn raw_buffer<'d>(data: &'d [u8], info: &BufferInfo) -> &'d [u8] {
    let start = usize::try_from(info.offset).unwrap_or(usize::MAX);
    data.get(start..start.saturating_add(info.stored_len)).unwrap_or_default()
}

fn buffer_contents<'s>(data: &'s [u8], info: &BufferInfo, scratch: &'s mut Vec<u8>) -> BufferContents<'s> {
    if info.header.is_compressed() {
        let error = decompress_buffer(data, info, scratch);
        BufferContents { bytes: scratch, error }
    } else {
        uncompressed_contents(data, info)
    }
}

/// The contents of an uncompressed buffer: a slice of the file.
pub(crate) fn uncompressed_contents<'d>(data: &'d [u8], info: &BufferInfo) -> BufferContents<'d> {
    let raw = raw_buffer(data, info);
    let h = &info.header;
    let filled = h.filled as usize;
    if filled == 0 {
        // Never filled (an empty or marker buffer): no records, no damage.
        return BufferContents { bytes: &[], error: None };
    }
    if filled < BUFFER_HEADER_SIZE || filled > h.buffer_size as usize {
        let error = info.error(0x30, ErrorKind::BadFilledOffset { filled: h.filled, limit: h.buffer_size });
        return BufferContents { bytes: &[], error: Some(error) };
    }
    let end = filled.min(raw.len());
    let error = (filled > raw.len()).then(|| truncation_error(info));
    BufferContents { bytes: raw.get(..end).unwrap_or_default(), error }
}

fn truncation_error(info: &BufferInfo) -> Error {
    info.error(0, ErrorKind::BufferTruncated { size: info.header.buffer_size, remaining: info.stored_len as u64 })
}

/// Decompresses a compressed buffer into `out` (its 0x48-byte header first, so
/// record offsets match an uncompressed buffer's). Returns the error that cut
/// the data short; `out` then holds everything decoded before it.
pub(crate) fn decompress_buffer(data: &[u8], info: &BufferInfo, out: &mut Vec<u8>) -> Option<Error> {
    let raw = raw_buffer(data, info);
    let h = &info.header;
    let filled = h.filled as usize;
    out.clear();
    if filled == 0 {
        return None;
    }
    if filled < BUFFER_HEADER_SIZE || h.filled > MAX_BUFFER_SIZE {
        return Some(info.error(0x30, ErrorKind::BadFilledOffset { filled: h.filled, limit: MAX_BUFFER_SIZE }));
    }
    out.extend_from_slice(raw.get(..BUFFER_HEADER_SIZE).unwrap_or_default());
    let input = raw.get(BUFFER_HEADER_SIZE..).unwrap_or_default();
    let expected = filled - BUFFER_HEADER_SIZE;
    let result = xpress::decompress_into(input, expected, out);
    let got = out.len() - BUFFER_HEADER_SIZE;
    match result {
        _ if info.truncated => Some(truncation_error(info)),
        Err(e) => Some(Error {
            // Damage in the compressed stream has a true file offset.
            location: Location {
                buffer_index: info.index,
                buffer_offset: info.offset,
                offset_in_buffer: u32::try_from(BUFFER_HEADER_SIZE + e.at).unwrap_or(u32::MAX),
                compressed: false,
            },
            kind: ErrorKind::Decompress { reason: e.reason, at: e.at },
        }),
        Ok(()) if got < expected => Some(info.error(0, ErrorKind::ShortDecompressedBuffer { got, expected })),
        Ok(()) => None,
    }
}

/// Timestamp of a buffer's first record, read from a short prefix (decompressing
/// only that prefix of a compressed buffer).
fn first_record_timestamp(raw: &[u8], info: &BufferInfo, scratch: &mut Vec<u8>) -> Option<u64> {
    let h = &info.header;
    if (h.filled as usize) <= BUFFER_HEADER_SIZE {
        return None;
    }
    let first = if h.is_compressed() {
        scratch.clear();
        let input = raw.get(BUFFER_HEADER_SIZE..)?;
        let _ = xpress::decompress_into(input, 256, scratch);
        peek_timestamp(scratch)
    } else {
        peek_timestamp(raw.get(BUFFER_HEADER_SIZE..)?)
    };
    // A buffer that opens with a WPP record without its own time sorts first.
    Some(first.unwrap_or(0))
}

/// The records of one buffer in file order, each with its offset in the
/// buffer. Yields at most one error, then stops: without a trustworthy size
/// there is no next record (records carry no sync marker).
#[derive(Debug)]
pub struct BufferRecords<'a> {
    bytes: &'a [u8],
    pos: usize,
    info: BufferInfo,
    pointer_size: u8,
    previous_timestamp: u64,
    done: bool,
}

impl<'a> BufferRecords<'a> {
    pub fn new(bytes: &'a [u8], info: &BufferInfo, pointer_size: u8) -> Self {
        BufferRecords {
            bytes,
            pos: BUFFER_HEADER_SIZE,
            info: *info,
            pointer_size,
            previous_timestamp: info.first_timestamp.unwrap_or(0),
            done: bytes.len() <= BUFFER_HEADER_SIZE,
        }
    }
}

impl<'a> Iterator for BufferRecords<'a> {
    type Item = Result<(usize, Record<'a>)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        match parse_record(rest, self.pointer_size) {
            Ok(Some((mut record, span))) => {
                let at = self.pos;
                self.pos += span;
                if self.pos >= self.bytes.len() {
                    self.done = true;
                }
                if record.message.is_some_and(|m| !m.has_timestamp) {
                    record.timestamp = self.previous_timestamp;
                }
                self.previous_timestamp = record.timestamp;
                Some(Ok((at, record)))
            }
            Ok(None) => {
                self.done = true;
                None
            }
            // The data was cut short (truncated file or damaged compressed
            // stream): the partial record at the end is not an error of its own.
            Err(ErrorKind::BadRecordSize { size, remaining, .. })
                if self.bytes.len() < self.info.header.filled as usize && (size == 0 || size > remaining) =>
            {
                self.done = true;
                None
            }
            Err(kind) => {
                self.done = true;
                Some(Err(self.info.error(self.pos, kind)))
            }
        }
    }
}
