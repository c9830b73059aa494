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
    /// A buffer header's size field is 0 but data follows it (a never-written
    /// buffer is all zeros, and only at the end of a file).
    ZeroBufferSize,
    /// An uncompressed buffer whose size is not the session's, with no buffer after it.
    UnexpectedBufferSize { size: u32, session: u32 },
    /// A damaged buffer header (`cause`) was skipped: reading went on at the
    /// next valid buffer header, or ended when there was none.
    Resynchronized { cause: Box<ErrorKind>, skipped: u64, resumed_at: Option<u64> },
    /// A buffer that is a byte-for-byte copy of an earlier one; it was counted once.
    DuplicateBuffer { sequence: u64, original_offset: u64 },
    /// The header counts more buffers than the file holds: the file was cut
    /// short, or buffers were lost on the way.
    MissingBuffers { written: u32, found: u32, session_end: i64, last_buffer: Option<i64> },
    /// A compressed buffer claims more data than a buffer of the session can
    /// hold; it is not expanded (a decompression bomb, or damage).
    OversizedBuffer { filled: u32, limit: u32 },
    /// The file's first bytes are not an ETL buffer header.
    NotATrace { looks_like: String },
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
    /// The fill that follows a buffer's last record, where a record should
    /// start: the bytes after it, up to the filled offset, are not fill.
    FillBeforeEnd { unread: usize },
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
            ZeroBufferSize => {
                write!(f, "buffer size field is 0 but data follows (a never-written buffer is all zeros)")
            }
            UnexpectedBufferSize { size, session } => write!(
                f,
                "buffer size field is {size:#x}; expected the session's buffer size {session:#x} (no buffer follows at that size)"
            ),
            Resynchronized { cause, skipped, resumed_at } => {
                write!(f, "{cause}; ")?;
                match resumed_at {
                    Some(at) => {
                        write!(f, "skipped {skipped:#x} bytes, reading resumed at the next buffer, offset {at:#x}")
                    }
                    None => write!(f, "no valid buffer follows: the last {skipped:#x} bytes of the file were skipped"),
                }
            }
            DuplicateBuffer { sequence, original_offset } => write!(
                f,
                "buffer is a byte-for-byte copy of the buffer at offset {original_offset:#x} (sequence number {sequence}); its events are counted once"
            ),
            MissingBuffers { written, found, session_end, last_buffer } => {
                write!(f, "the trace header says the session wrote {written} buffers; the file holds {found}")?;
                if *session_end != 0 {
                    write!(f, "; the session ran until {}", crate::FileTime(*session_end))?;
                    if let Some(last) = last_buffer {
                        write!(f, ", the file's last buffer begins at {}", crate::FileTime(*last))?;
                    }
                }
                write!(f, " (truncated file, or buffers lost on the way)")
            }
            OversizedBuffer { filled, limit } => write!(
                f,
                "compressed buffer claims {filled:#x} bytes once expanded; the session's buffers hold at most {limit:#x}: not expanded (damage or a decompression bomb)"
            ),
            NotATrace { looks_like } => write!(f, "not an .etl trace: {looks_like}"),
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
            FillBeforeEnd { unread } => write!(
                f,
                "fill (0xffffffff) where a record should start, followed by {unread:#x} bytes up to the buffer's filled offset that are not fill; expected records up to that offset"
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

impl ErrorKind {
    /// What this kind of damage is, in a few words, to count many of a kind.
    pub fn class(&self) -> &'static str {
        use ErrorKind::*;
        match self {
            FileTooSmall { .. } | NotATrace { .. } => "not a trace",
            BadBufferSize { .. } | ZeroBufferSize | UnexpectedBufferSize { .. } => "damaged buffer headers",
            Resynchronized { cause, .. } => cause.class(),
            BufferTruncated { .. } => "buffers cut short",
            BadFilledOffset { .. } => "impossible filled sizes",
            DuplicateBuffer { .. } => "duplicated buffers",
            MissingBuffers { .. } => "missing buffers",
            OversizedBuffer { .. } => "compressed buffers claiming more than a buffer holds",
            MissingHeaderEvent { .. } | ShortHeaderEvent { .. } => "a damaged trace header",
            UnknownMarker { .. } | BadRecordSize { .. } | FillBeforeEnd { .. } | BadExtendedItem { .. } => {
                "damaged records"
            }
            Decompress { .. } | ShortDecompressedBuffer { .. } => "damaged compressed buffers",
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
        match &self.kind {
            // What the whole file is: no place in it to name.
            ErrorKind::NotATrace { .. } => write!(f, "{}", self.kind),
            kind => write!(f, "at {}: {kind}", self.location),
        }
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
