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
}
