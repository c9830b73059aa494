//! Errors that say where: which buffer, which offset, and what was expected.

use std::fmt;

/// A place in an `.etl` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Location {
    /// Index of the buffer, in file order.
    pub buffer_index: u32,
    /// File offset of the buffer's header.
    pub buffer_offset: u64,
    /// Offset from the start of the buffer. For a compressed buffer this counts
    /// bytes of the decompressed buffer, not of the file.
    pub offset_in_buffer: u32,
    /// Whether the buffer is stored compressed.
    pub compressed: bool,
}

impl Location {
    /// The absolute file offset, when the place is not inside compressed data.
    pub fn file_offset(&self) -> Option<u64> {
        (!self.compressed).then(|| self.buffer_offset.saturating_add(u64::from(self.offset_in_buffer)))
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.file_offset() {
            Some(o) => write!(f, "offset {o:#x} (buffer {})", self.buffer_index),
            None => write!(
                f,
                "offset {:#x} of compressed buffer {} (file offset {:#x})",
                self.offset_in_buffer, self.buffer_index, self.buffer_offset
            ),
        }
    }
}

/// What went wrong, with the value found and the value expected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Fewer bytes than one buffer header.
    FileTooSmall { len: u64 },
    /// A buffer header's size field is impossible.
    BadBufferSize { size: u32, remaining: u64 },
    /// The file ends inside a buffer (a truncated file).
    BufferTruncated { size: u32, remaining: u64 },
    /// The filled-bytes field of a buffer header is outside the buffer.
    BadFilledOffset { filled: u32, limit: u32 },
    /// The first record of the file is not the trace header event.
    MissingHeaderEvent { found: String },
    /// The trace header event is too short for a TRACE_LOGFILE_HEADER.
    ShortHeaderEvent { payload: usize, needed: usize },
    /// A record starts with a marker no ETW writer produces.
    UnknownMarker { marker: u32 },
    /// A record's size is smaller than its header or runs past the buffer's data.
    BadRecordSize { size: usize, minimum: usize, remaining: usize },
    /// An extended data item's size is impossible.
    BadExtendedItem { item_size: u16, data_size: u16, remaining: usize },
    /// The XPRESS stream of a compressed buffer is damaged.
    Decompress { reason: &'static str, at: usize },
    /// A compressed buffer decompressed to fewer bytes than its header promised.
    ShortDecompressedBuffer { got: usize, expected: usize },
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ErrorKind::*;
        match self {
            FileTooSmall { len } => {
                write!(f, "file is {len} bytes; expected at least one 72-byte buffer header (is this an .etl file?)")
            }
            BadBufferSize { size, remaining } => write!(
                f,
                "buffer size field is {size:#x}; expected at least 0x48 and at most the {remaining:#x} bytes left in the file"
            ),
            BufferTruncated { size, remaining } => write!(
                f,
                "file ends inside a buffer: its header says {size:#x} bytes, only {remaining:#x} remain (truncated file?)"
            ),
            BadFilledOffset { filled, limit } => {
                write!(f, "buffer filled-bytes field is {filled:#x}; expected between 0x48 and {limit:#x}")
            }
            MissingHeaderEvent { found } => {
                write!(f, "first record is {found}; expected the trace header event (EventTrace/Header, hook 0x0000)")
            }
            ShortHeaderEvent { payload, needed } => write!(
                f,
                "trace header event has {payload} payload bytes; expected at least {needed} for TRACE_LOGFILE_HEADER"
            ),
            UnknownMarker { marker } => write!(
                f,
                "record marker is {marker:#010x}; expected a trace header (0xC0xxxxxx) or a message (0x90xxxxxx)"
            ),
            BadRecordSize { size, minimum, remaining } => write!(
                f,
                "record size is {size:#x}; expected at least {minimum:#x} and at most the {remaining:#x} bytes left in the buffer"
            ),
            BadExtendedItem { item_size, data_size, remaining } => write!(
                f,
                "extended data item of size {item_size:#x} (data {data_size:#x}); expected 8 + data bytes within the {remaining:#x} bytes left in the record"
            ),
            Decompress { reason, at } => {
                write!(f, "compressed buffer is damaged at input byte {at:#x}: {reason}")
            }
            ShortDecompressedBuffer { got, expected } => {
                write!(f, "compressed buffer decompressed to {got:#x} bytes; its header promised {expected:#x}")
            }
        }
    }
}

/// An error reading a trace, located in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub location: Location,
    pub kind: ErrorKind,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at {}: {}", self.location, self.kind)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
