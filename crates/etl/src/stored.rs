//! Tables that grow with the number of buffers (the buffer index, the
//! merge's order), kept off the heap once large: written to an unnamed
//! temporary file and mapped, their pages handed back as passes go on, so a
//! reader's resident memory does not grow with the size of the trace.
//!
//! Why: at 16 bytes a buffer, the index of a 10 GB compressed trace (a
//! million buffers) was 17 MB of every command's peak, and the merge's order
//! 4 MB more; a pass reads them in order, a few pages at a time.

/// Bytes in memory, or in a mapped temporary file.
#[derive(Debug)]
pub(crate) enum Stored {
    Memory(Vec<u8>),
    #[cfg(unix)]
    Mapped(memmap2::Mmap),
}

impl Stored {
    /// Tables smaller than this stay in memory (a trace of under ~65 000
    /// buffers: a few hundred MB compressed, a few GB not).
    pub(crate) const MAPPED_FROM: usize = 1 << 20;

    /// Keeps `bytes`: in a temporary file (TMPDIR) when there are at least
    /// `mapped_from` of them ([`Stored::MAPPED_FROM`] but in tests) and the
    /// file can be written and mapped, else in memory.
    pub(crate) fn keep(bytes: Vec<u8>, mapped_from: usize) -> Stored {
        #[cfg(unix)]
        if bytes.len() >= mapped_from
            && let Some(map) = Stored::map(&bytes)
        {
            return Stored::Mapped(map);
        }
        #[cfg(not(unix))]
        let _ = mapped_from;
        Stored::Memory(bytes)
    }

    #[cfg(unix)]
    fn map(bytes: &[u8]) -> Option<memmap2::Mmap> {
        use std::io::Write;
        // Unnamed (O_TMPFILE on Linux): no other process can open, change or
        // cut it, and it is gone when the map and the handle are.
        let mut file = tempfile::tempfile().ok()?;
        file.write_all(bytes).ok()?;
        // SAFETY: the file is this process's own unnamed temporary file,
        // written in full above and never written, resized or shared after:
        // the mapping's bytes cannot change under the borrows made of it.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&file) }.ok()?;
        (map.len() == bytes.len()).then_some(map)
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Stored::Memory(bytes) => bytes,
            #[cfg(unix)]
            Stored::Mapped(map) => map,
        }
    }

    /// Hands the mapped pages back to the OS (they are read from the file
    /// again when touched); nothing for bytes in memory.
    pub(crate) fn release(&self) {
        #[cfg(unix)]
        if let Stored::Mapped(map) = self {
            // SAFETY: a read-only shared mapping of a file: MADV_DONTNEED only
            // unmaps its pages from this process, and a later read faults them
            // in from the file with the same contents (see `map`), so borrows
            // of the bytes stay valid and see the same values.
            #[allow(unsafe_code)]
            let _ = unsafe { map.unchecked_advise(memmap2::UncheckedAdvice::DontNeed) };
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn large_tables_are_mapped_and_read_back_after_release() {
        let bytes: Vec<u8> = (0..Stored::MAPPED_FROM + 17).map(|i| (i * 7 % 251) as u8).collect();
        let stored = Stored::keep(bytes.clone(), Stored::MAPPED_FROM);
        assert!(matches!(stored, Stored::Mapped(_)), "a table of {} bytes is mapped", bytes.len());
        assert_eq!(stored.bytes(), &bytes[..]);
        stored.release();
        assert_eq!(stored.bytes(), &bytes[..], "the same bytes after the pages went back");
        let small = Stored::keep(vec![1, 2, 3], Stored::MAPPED_FROM);
        assert!(matches!(small, Stored::Memory(_)));
        assert_eq!(small.bytes(), &[1, 2, 3]);
    }
}
