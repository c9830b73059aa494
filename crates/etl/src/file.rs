//! The bytes of a trace file: memory-mapped when possible.

use std::fs::File;
use std::io::Read;
use std::path::Path;

/// A trace file's bytes, mapped read-only (or read into memory when the
/// file cannot be mapped, e.g. a pipe).
#[derive(Debug)]
pub struct TraceFile {
    bytes: Bytes,
}

#[derive(Debug)]
enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

impl TraceFile {
    pub fn open(path: impl AsRef<Path>) -> std::io::Result<TraceFile> {
        let mut file = File::open(path)?;
        let meta = file.metadata()?;
        if meta.is_file() && meta.len() > 0 {
            // SAFETY: the map is read-only. Another process truncating or
            // rewriting the file while it is mapped could change the bytes
            // under us; the parsers bounds-check every read, so that can give
            // wrong data or SIGBUS, as with any mapped reader, but no unsound
            // reference outlives the map.
            #[allow(unsafe_code)]
            let map = unsafe { memmap2::Mmap::map(&file) };
            if let Ok(map) = map {
                return Ok(TraceFile { bytes: Bytes::Mapped(map) });
            }
        }
        let mut v = Vec::new();
        file.read_to_end(&mut v)?;
        Ok(TraceFile { bytes: Bytes::Read(v) })
    }

    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Read(v) => v,
        }
    }

    /// Lets the OS drop the pages of `range` from this process: a reader
    /// done with a part of a large trace keeps its resident memory small.
    /// The bytes stay readable (they are read from the file again if
    /// touched). Does nothing for a file read into memory, or off Unix.
    pub fn release(&self, range: std::ops::Range<usize>) {
        #[cfg(unix)]
        if let Bytes::Mapped(m) = &self.bytes {
            let end = range.end.min(m.len());
            if range.start < end {
                // SAFETY: the map is a read-only shared mapping of a file.
                // MADV_DONTNEED only unmaps its pages from this process; a
                // later read of any byte of the range faults the page in from
                // the file again, with the same contents. Borrows of the bytes
                // stay valid and see the same values (as long as the file is
                // not rewritten, which `open`'s note covers).
                #[allow(unsafe_code)]
                let _ = unsafe {
                    m.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, range.start, end - range.start)
                };
            }
        }
        #[cfg(not(unix))]
        let _ = range;
    }
}
