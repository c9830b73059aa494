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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferType {
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

/// Largest buffer size ETW can write (its documented maximum is 16 MiB);
/// a header claiming more is damaged, not a big buffer.
pub const MAX_BUFFER_SIZE: u32 = 64 << 20;

/// Walks the chain of buffers from the start of a file: each header's size
/// gives the next buffer's offset. Stops at the end of the file or at a
/// zero-size (preallocated, never written) buffer. When the file ends inside a
/// buffer, yields that partial buffer (`truncated`), so its complete records
/// can still be read, and stops. An impossible size field yields one error and
/// stops: without a trustworthy size there is no way to find the next buffer.
#[derive(Clone, Debug)]
pub struct BufferWalk<'data> {
    data: &'data [u8],
    offset: usize,
    index: u32,
    done: bool,
}

impl<'data> BufferWalk<'data> {
    pub fn new(data: &'data [u8]) -> Self {
        BufferWalk { data, offset: 0, index: 0, done: false }
    }

    /// File offset of the next buffer the walk would read.
    pub fn offset(&self) -> u64 {
        self.offset as u64
    }

    fn fail(&mut self, kind: ErrorKind, compressed: bool) -> Option<Result<Buffer<'data>, Error>> {
        self.done = true;
        let location =
            Location { buffer_index: self.index, buffer_offset: self.offset as u64, offset_in_buffer: 0, compressed };
        Some(Err(Error { location, kind }))
    }
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
        if header.buffer_size == 0 {
            // Preallocated files end in never-written, zeroed buffers.
            self.done = true;
            return None;
        }
        let compressed = header.is_compressed();
        if (header.buffer_size as usize) < BUFFER_HEADER_SIZE || header.buffer_size > MAX_BUFFER_SIZE {
            return self.fail(ErrorKind::BadBufferSize { size: header.buffer_size, remaining }, compressed);
        }
        let size = header.buffer_size as usize;
        let (raw, truncated) = match rest.get(..size) {
            Some(raw) => (raw, false),
            None => (rest, true),
        };
        let buffer = Buffer { index: self.index, offset: self.offset as u64, header, raw, truncated };
        if truncated {
            self.done = true;
        }
        self.offset = self.offset.saturating_add(size);
        self.index = self.index.saturating_add(1);
        Some(Ok(buffer))
    }
}
