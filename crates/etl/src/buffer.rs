//! `WMI_BUFFER_HEADER`: the 0x48-byte header of every buffer, and the walk
//! along the chain of buffers that makes up a file.

use crate::bytes::{u16_at, u32_at, u64_at};
use crate::error::{Error, ErrorKind, Location};

/// Size of `WMI_BUFFER_HEADER`; records start right after it.
pub const BUFFER_HEADER_SIZE: usize = 0x48;

/// `BufferFlag` bits (NTWMI `ETW_BUFFER_FLAG_*`).
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferFlags(pub u16);

impl BufferFlags {
    pub const FLUSH_MARKER: u16 = 0x0001;
    pub const EVENTS_LOST: u16 = 0x0002;
    pub const BUFFER_LOST: u16 = 0x0004;
    pub const RTBACKUP_CORRUPT: u16 = 0x0008;
    pub const RTBACKUP: u16 = 0x0010;
    pub const PROC_INDEX: u16 = 0x0020;
    pub const COMPRESSED: u16 = 0x0040;

    const NAMES: [(u16, &'static str); 7] = [
        (Self::FLUSH_MARKER, "flush_marker"),
        (Self::EVENTS_LOST, "events_lost"),
        (Self::BUFFER_LOST, "buffer_lost"),
        (Self::RTBACKUP_CORRUPT, "rtbackup_corrupt"),
        (Self::RTBACKUP, "rtbackup"),
        (Self::PROC_INDEX, "proc_index"),
        (Self::COMPRESSED, "compressed"),
    ];

    pub fn contains(self, bit: u16) -> bool {
        self.0 & bit != 0
    }

    /// Names of the set bits, in bit order.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Self::NAMES.into_iter().filter(move |(bit, _)| self.0 & bit != 0).map(|(_, n)| n)
    }
}

impl std::fmt::Debug for BufferFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#06x} ", self.0)?;
        f.debug_list().entries(self.names()).finish()
    }
}

/// `BufferType` (NTWMI `ETW_BUFFER_TYPE_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BufferType {
    #[default]
    Generic,
    Rundown,
    CtxSwap,
    RefTime,
    Header,
    Batched,
    EmptyMarker,
    DbgInfo,
    Other(u16),
}

impl From<u16> for BufferType {
    fn from(v: u16) -> Self {
        match v {
            0 => BufferType::Generic,
            1 => BufferType::Rundown,
            2 => BufferType::CtxSwap,
            3 => BufferType::RefTime,
            4 => BufferType::Header,
            5 => BufferType::Batched,
            6 => BufferType::EmptyMarker,
            7 => BufferType::DbgInfo,
            other => BufferType::Other(other),
        }
    }
}

/// The fields of `WMI_BUFFER_HEADER` a reader can trust.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BufferHeader {
    /// Bytes of this buffer on disk, header included (variable for compressed buffers).
    pub buffer_size: u32,
    pub saved_offset: u32,
    /// The write cursor; may exceed `buffer_size`. Not the data end.
    pub current_offset: u32,
    /// Flush time, in the session clock.
    pub timestamp: u64,
    pub sequence_number: u64,
    /// The CPU that owned the buffer.
    pub processor: u16,
    pub logger_id: u16,
    pub state: u32,
    /// End of valid data, header included. For compressed buffers: of the
    /// decompressed buffer.
    pub filled: u32,
    pub flags: BufferFlags,
    pub buffer_type: BufferType,
}

impl BufferHeader {
    /// Parses the header at the start of `data`; `None` if fewer than 0x48 bytes.
    pub fn parse(data: &[u8]) -> Option<BufferHeader> {
        let h = data.get(..BUFFER_HEADER_SIZE)?;
        let flags = BufferFlags(u16_at(h, 0x34)?);
        let context = u16_at(h, 0x28)?;
        // Without PROC_INDEX the field is a u8 processor number and a u8 alignment.
        let processor = if flags.contains(BufferFlags::PROC_INDEX) { context & 0x07FF } else { context & 0xFF };
        Some(BufferHeader {
            buffer_size: u32_at(h, 0x00)?,
            saved_offset: u32_at(h, 0x04)?,
            current_offset: u32_at(h, 0x08)?,
            timestamp: u64_at(h, 0x10)?,
            sequence_number: u64_at(h, 0x18)?,
            processor,
            logger_id: u16_at(h, 0x2A)?,
            state: u32_at(h, 0x2C)?,
            filled: u32_at(h, 0x30)?,
            flags,
            buffer_type: BufferType::from(u16_at(h, 0x36)?),
        })
    }

    pub fn is_compressed(&self) -> bool {
        self.flags.contains(BufferFlags::COMPRESSED)
    }
}

/// One buffer as stored in the file.
#[derive(Clone, Copy, Debug)]
pub struct Buffer<'data> {
    /// Position in file order, from 0.
    pub index: u32,
    /// File offset of the header.
    pub offset: u64,
    pub header: BufferHeader,
    /// The whole on-disk buffer, header included (shorter than
    /// `header.buffer_size` when `truncated`).
    pub raw: &'data [u8],
    /// The file ends inside this buffer.
    pub truncated: bool,
}

/// Largest buffer size ETW can write: its documented maximum is 16 MiB. A
/// header claiming more is damaged, not a big buffer.
pub const MAX_BUFFER_SIZE: u32 = 16 << 20;

/// Largest on-disk size of a compressed buffer: XPRESS can grow data that
/// does not compress by one flag word per 32 bytes.
const MAX_STORED_SIZE: u32 = MAX_BUFFER_SIZE + MAX_BUFFER_SIZE / 8 + BUFFER_HEADER_SIZE as u32;

/// What the trace header event says of the session: every later buffer must
/// agree with it. Read from the first buffer, then given to the walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Session {
    /// The session's buffer size: the most data a buffer holds (for a
    /// compressed buffer, once decompressed), and the on-disk size of every
    /// uncompressed buffer after the first.
    pub buffer_size: u32,
    /// Buffers the header says were written (0: it does not say). Once the
    /// walk has found them all, a zero size field is the end of the data:
    /// what follows is preallocated space, not read.
    pub buffers_written: u32,
}

impl Session {
    /// The session described by a header's `BufferSize`, or `None` when the
    /// value is impossible (then only the walk's own limits apply).
    pub fn from_buffer_size(buffer_size: u32, buffers_written: u32) -> Option<Session> {
        (BUFFER_HEADER_SIZE as u32..=MAX_BUFFER_SIZE)
            .contains(&buffer_size)
            .then_some(Session { buffer_size, buffers_written })
    }
}

/// Walks the chain of buffers from the start of a file: each header's size
/// gives the next buffer's offset.
///
/// - A zero size field with nothing but zeros after it ends the walk:
///   preallocated files end in never-written buffers.
/// - When the file ends inside a buffer, yields that partial buffer
///   (`truncated`), so its complete records can still be read, and stops.
/// - A header that no writer produces (a zero size with data after it, a
///   size out of range, an uncompressed buffer of another size than the
///   session's) yields one error and the walk goes on at the next valid
///   buffer header ([`BufferWalk::resynchronize`]), so one damaged header
///   loses one buffer, not the rest of the file.
///
/// Without a [`Session`] (the first buffer, or the fuzz target walking raw
/// bytes) damage ends the walk: there is nothing to check a candidate
/// header against.
#[derive(Clone, Debug)]
pub struct BufferWalk<'data> {
    data: &'data [u8],
    offset: usize,
    index: u32,
    done: bool,
    session: Option<Session>,
    /// Logger ids of the buffers read so far (a file holds one or two).
    loggers: Vec<u16>,
}

impl<'data> BufferWalk<'data> {
    pub fn new(data: &'data [u8]) -> Self {
        BufferWalk { data, offset: 0, index: 0, done: false, session: None, loggers: Vec::new() }
    }

    /// Checks later buffers against the session and resynchronizes after damage.
    pub fn set_session(&mut self, session: Session) {
        self.session = Some(session);
    }

    /// File offset of the next buffer the walk would read.
    pub fn offset(&self) -> u64 {
        self.offset as u64
    }

    fn location(&self, compressed: bool) -> Location {
        Location { buffer_index: self.index, buffer_offset: self.offset as u64, offset_in_buffer: 0, compressed }
    }

    fn fail(&mut self, kind: ErrorKind, compressed: bool) -> Option<Result<Buffer<'data>, Error>> {
        self.done = true;
        Some(Err(Error { location: self.location(compressed), kind }))
    }

    /// Reports a damaged header at the current offset and moves to the next
    /// valid buffer header, or to the end of the file when there is none.
    fn damaged(&mut self, cause: ErrorKind, compressed: bool) -> Option<Result<Buffer<'data>, Error>> {
        let Some(session) = self.session else {
            return self.fail(cause, compressed);
        };
        let location = self.location(compressed);
        let resumed_at = self.resynchronize(session);
        let next = resumed_at.unwrap_or(self.data.len());
        let kind = ErrorKind::Resynchronized {
            cause: Box::new(cause),
            skipped: (next - self.offset) as u64,
            resumed_at: resumed_at.map(|o| o as u64),
        };
        self.offset = next;
        if resumed_at.is_none() {
            self.done = true;
        }
        Some(Err(Error { location, kind }))
    }

    /// The offset of the next plausible buffer header after the damaged one
    /// at the current offset. Uncompressed buffers sit at multiples of the
    /// session's buffer size, so those offsets are tried first; compressed
    /// buffers have any size, so then every offset is tried. Runs of zero
    /// bytes are skipped at memory speed (they cannot start a buffer).
    pub fn resynchronize(&self, session: Session) -> Option<usize> {
        let step = session.buffer_size as usize;
        let mut at = self.offset.checked_add(step)?;
        while at < self.data.len() {
            if self.plausible_at(at, session) {
                return Some(at);
            }
            at = at.checked_add(step)?;
        }
        let mut at = self.offset + 1;
        while at + BUFFER_HEADER_SIZE <= self.data.len() {
            if self.data[at..at + 4] == [0; 4] {
                // The next candidate is where a non-zero byte could be the
                // last byte of a size field.
                let nonzero = self.data[at..].iter().position(|&b| b != 0)?;
                at += nonzero.saturating_sub(3).max(1);
                continue;
            }
            if self.plausible_at(at, session) {
                return Some(at);
            }
            at += 1;
        }
        None
    }

    /// Whether `at` holds a buffer header that this session could have
    /// written, with a record where its data begins: strict, because a
    /// false match would feed garbage to the readers.
    fn plausible_at(&self, at: usize, session: Session) -> bool {
        let Some(rest) = self.data.get(at..) else { return false };
        let Some(h) = BufferHeader::parse(rest) else { return false };
        let compressed = h.is_compressed();
        let size_ok = if compressed {
            (BUFFER_HEADER_SIZE as u32..=MAX_STORED_SIZE).contains(&h.buffer_size)
        } else {
            h.buffer_size == session.buffer_size
        };
        let filled_ok = if compressed {
            h.filled > BUFFER_HEADER_SIZE as u32 && h.filled <= session.buffer_size
        } else {
            h.filled == 0 || (BUFFER_HEADER_SIZE as u32..=h.buffer_size).contains(&h.filled)
        };
        let known_type = !matches!(h.buffer_type, BufferType::Other(_));
        let known_flags = h.flags.0 & !0x7F == 0;
        let logger_ok = self.loggers.is_empty() || self.loggers.contains(&h.logger_id);
        if !(size_ok && filled_ok && known_type && known_flags && logger_ok) {
            return false;
        }
        if h.filled == 0 {
            return true;
        }
        if compressed {
            let mut prefix = Vec::with_capacity(256);
            let stream = rest.get(BUFFER_HEADER_SIZE..h.buffer_size as usize).unwrap_or_default();
            let _ = crate::xpress::decompress_into(stream, 256, &mut prefix);
            crate::record::starts_record(&prefix)
        } else {
            rest.get(BUFFER_HEADER_SIZE..h.filled as usize).is_some_and(crate::record::starts_record)
        }
    }

    fn remember_logger(&mut self, logger_id: u16) {
        if !self.loggers.contains(&logger_id) && self.loggers.len() < 4 {
            self.loggers.push(logger_id);
        }
    }
}

/// Zero bytes checked after the last buffer the header counts, to tell
/// preallocated space from more data.
const ZEROS_CHECKED: usize = 1 << 20;

/// Whether every byte of `data` is zero.
fn all_zero(data: &[u8]) -> bool {
    let (chunks, tail) = data.as_chunks::<64>();
    chunks.iter().all(|c| c.iter().fold(0, |a, b| a | b) == 0) && tail.iter().all(|&b| b == 0)
}

impl<'data> Iterator for BufferWalk<'data> {
    type Item = Result<Buffer<'data>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.data.get(self.offset..).unwrap_or_default();
        if rest.is_empty() {
            self.done = true;
            return None;
        }
        let remaining = rest.len() as u64;
        let Some(header) = BufferHeader::parse(rest) else {
            // ETW writes whole buffers (preallocated space is whole zeroed
            // buffers), so a tail shorter than a header is a buffer cut short.
            let size = u32_at(rest, 0).unwrap_or(0);
            return self.fail(ErrorKind::BufferTruncated { size, remaining }, false);
        };
        let compressed = header.is_compressed();
        if header.buffer_size == 0 {
            // Once every buffer the header counts is found, a zeroed megabyte
            // is enough to tell preallocated space (which can be gigabytes).
            let all_found = self.session.is_some_and(|s| s.buffers_written > 0 && self.index >= s.buffers_written);
            let checked = if all_found { &rest[..rest.len().min(ZEROS_CHECKED)] } else { rest };
            if self.session.is_some() && all_zero(checked) {
                // Preallocated files end in never-written, zeroed buffers.
                self.done = true;
                return None;
            }
            return self.damaged(ErrorKind::ZeroBufferSize, compressed);
        }
        let max = if compressed { MAX_STORED_SIZE } else { MAX_BUFFER_SIZE };
        if (header.buffer_size as usize) < BUFFER_HEADER_SIZE || header.buffer_size > max {
            return self.damaged(ErrorKind::BadBufferSize { size: header.buffer_size, remaining }, compressed);
        }
        let size = header.buffer_size as usize;
        if let Some(session) = self.session
            && !compressed
            && header.buffer_size != session.buffer_size
            && !self.next_is_plausible(self.offset.saturating_add(size), session)
        {
            // Uncompressed buffers after the first all have the session's
            // size; another size is believed only when a buffer follows it.
            let kind = ErrorKind::UnexpectedBufferSize { size: header.buffer_size, session: session.buffer_size };
            return self.damaged(kind, compressed);
        }
        let (raw, truncated) = match rest.get(..size) {
            Some(raw) => (raw, false),
            None if self.session.is_some() && self.resynchronize_before(size).is_some() => {
                // A size that runs past the end of the file, with a valid
                // buffer inside the span: the size field lies.
                return self.damaged(ErrorKind::BadBufferSize { size: header.buffer_size, remaining }, compressed);
            }
            None => (rest, true),
        };
        self.remember_logger(header.logger_id);
        let buffer = Buffer { index: self.index, offset: self.offset as u64, header, raw, truncated };
        if truncated {
            self.done = true;
        }
        self.offset = self.offset.saturating_add(size);
        self.index = self.index.saturating_add(1);
        Some(Ok(buffer))
    }
}

impl BufferWalk<'_> {
    /// Whether a buffer header this session could write is at `at`, or the file ends there.
    fn next_is_plausible(&self, at: usize, session: Session) -> bool {
        at == self.data.len() || self.plausible_at(at, session)
    }

    /// Where the next valid header is when it lies within `span` bytes of the current offset.
    fn resynchronize_before(&self, span: usize) -> Option<usize> {
        let session = self.session?;
        self.resynchronize(session).filter(|&at| at < self.offset.saturating_add(span))
    }
}
