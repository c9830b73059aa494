//! The bytes of a trace file: memory-mapped when it is a regular file, read
//! (with a limit) when it is a pipe.
//!
//! A trace is untrusted input, and so is the kind of file it comes in:
//! `/dev/zero` never ends, a pipe can stream forever, a sparse file can claim
//! more bytes than the machine has. Regular files are mapped (a failed map is
//! reported as such, never turned into a read of the whole file); pipes and
//! sockets are read up to [`MAX_STREAMED`] bytes, and refused at once when
//! their first bytes are not a trace's; devices and directories are refused.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Most bytes read from a pipe or socket (it cannot be mapped).
pub const MAX_STREAMED: u64 = 4 << 30;

/// A trace file's bytes, mapped read-only (or read into memory when the
/// file is a pipe).
#[derive(Debug)]
pub struct TraceFile {
    bytes: Bytes,
    /// Registered with the SIGBUS guard while the map lives.
    #[cfg(unix)]
    _guard: Option<truncation::Registration>,
}

#[derive(Debug)]
enum Bytes {
    Mapped(memmap2::Mmap),
    Read(Vec<u8>),
}

/// The error for a kind of file that is not read (the caller names the file).
fn refuse(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{what}, not a file: .etl files are read (and pipes, up to {} GiB)", MAX_STREAMED >> 30),
    )
}

impl TraceFile {
    pub fn open(path: impl AsRef<Path>) -> io::Result<TraceFile> {
        let path = path.as_ref();
        let file = File::open(path)?;
        let meta = file.metadata()?;
        let kind = meta.file_type();
        if meta.is_dir() {
            return Err(refuse("a directory"));
        }
        if kind.is_file() {
            return TraceFile::map(path, &file, meta.len());
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if kind.is_char_device() {
                return Err(refuse("a character device"));
            }
            if kind.is_block_device() {
                return Err(refuse("a block device"));
            }
        }
        TraceFile::stream(file)
    }

    /// Maps a regular file. An empty file is empty bytes (the reader says it
    /// is too small); a map that fails is an error that says so.
    fn map(path: &Path, file: &File, len: u64) -> io::Result<TraceFile> {
        if len == 0 {
            return Ok(TraceFile::from_bytes(Vec::new()));
        }
        // SAFETY: the map is read-only. Another process truncating or
        // rewriting the file while it is mapped changes the bytes under us;
        // the parsers bounds-check every read, so that gives wrong data, or
        // SIGBUS for pages past a new end, which the truncation guard turns
        // into a message and an exit. No reference outlives the map.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(file) }.map_err(|e| {
            let hint = match e.raw_os_error() {
                Some(12) => " (out of address space: is a memory limit set with `ulimit -v`?)",
                _ => "",
            };
            io::Error::new(e.kind(), format!("cannot map its {len} bytes into memory: {e}{hint}"))
        })?;
        #[cfg(unix)]
        let guard = truncation::Registration::new(&map, path);
        #[cfg(not(unix))]
        let _ = path;
        Ok(TraceFile {
            bytes: Bytes::Mapped(map),
            #[cfg(unix)]
            _guard: Some(guard),
        })
    }

    /// Reads a pipe or socket: its first bytes must look like a trace's
    /// first buffer header, and it may hold at most [`MAX_STREAMED`] bytes.
    fn stream(file: File) -> io::Result<TraceFile> {
        let mut bytes = Vec::new();
        let mut limited = file.take(MAX_STREAMED + 1);
        let head = (&mut limited).take(crate::buffer::BUFFER_HEADER_SIZE as u64 + 8).read_to_end(&mut bytes)?;
        if head > 0 && !crate::sniff::may_begin_a_trace(&bytes) {
            let what =
                crate::sniff::looks_like(&bytes).unwrap_or_else(|| "its first bytes are no buffer header".into());
            return Err(io::Error::new(io::ErrorKind::InvalidData, format!("not an .etl trace: {what}")));
        }
        limited.read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_STREAMED {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a pipe of more than {} GiB: save the trace to a file and open that", MAX_STREAMED >> 30),
            ));
        }
        Ok(TraceFile::from_bytes(bytes))
    }

    fn from_bytes(bytes: Vec<u8>) -> TraceFile {
        TraceFile {
            bytes: Bytes::Read(bytes),
            #[cfg(unix)]
            _guard: None,
        }
    }

    /// A mapped file up to this size keeps its pages: handing them back
    /// costs a TLB flush on every CPU, and each later pass faults them in
    /// again (on a virtual machine, more than reading a small trace), to save
    /// no more than this.
    pub const KEPT_WHOLE: usize = 64 << 20;

    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Read(v) => v,
        }
    }

    /// Lets the OS drop the pages of `range` from this process: a reader
    /// done with a part of a large trace keeps its resident memory small.
    /// The bytes stay readable (they are read from the file again if
    /// touched). Does nothing for a file read into memory, off Unix, or for
    /// a file of at most [`TraceFile::KEPT_WHOLE`] bytes.
    pub fn release(&self, range: std::ops::Range<usize>) {
        #[cfg(unix)]
        if let Bytes::Mapped(m) = &self.bytes
            && m.len() > TraceFile::KEPT_WHOLE
        {
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

/// Makes a file truncated by another process while this one reads it end
/// the program with a message naming the file (exit code 2), instead of
/// SIGBUS killing it without a word. For programs, not libraries: the
/// process exits. Call once, before opening files. Does nothing off Unix
/// (Windows does not let a mapped file be truncated).
pub fn stop_cleanly_if_truncated_while_mapped() {
    #[cfg(unix)]
    truncation::install();
}

#[cfg(unix)]
mod truncation {
    //! SIGBUS on a mapped trace: the file shrank under the map. The handler
    //! only reads atomics, calls `write` and `_exit` (async-signal-safe).

    use std::path::Path;
    use std::sync::Once;
    use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

    /// Maps watched at once (more are read without the guard).
    const SLOTS: usize = 16;

    struct Slot {
        start: AtomicUsize,
        len: AtomicUsize,
        /// The message to print, `message_len` bytes (owned by the Registration).
        message: AtomicPtr<u8>,
        message_len: AtomicUsize,
    }

    #[allow(clippy::declare_interior_mutable_const)]
    const EMPTY: Slot = Slot {
        start: AtomicUsize::new(0),
        len: AtomicUsize::new(0),
        message: AtomicPtr::new(std::ptr::null_mut()),
        message_len: AtomicUsize::new(0),
    };
    static WATCHED: [Slot; SLOTS] = [EMPTY; SLOTS];

    /// A map watched until dropped.
    #[derive(Debug)]
    pub struct Registration {
        slot: Option<usize>,
        message: Box<[u8]>,
    }

    impl Registration {
        pub fn new(map: &[u8], path: &Path) -> Registration {
            let text = format!(
                "nettrail: {}: the file shrank while it was read (another process truncated or rewrote it); \
                 output stops here\n",
                path.display()
            );
            let mut shown = String::new();
            nettrail_safe(&mut shown, &text);
            let mut message = shown.into_bytes().into_boxed_slice();
            let slot = WATCHED
                .iter()
                .position(|s| s.len.compare_exchange(0, usize::MAX, Ordering::AcqRel, Ordering::Acquire).is_ok());
            if let Some(i) = slot {
                let s = &WATCHED[i];
                s.start.store(map.as_ptr() as usize, Ordering::Release);
                s.message.store(message.as_mut_ptr(), Ordering::Release);
                s.message_len.store(message.len(), Ordering::Release);
                s.len.store(map.len(), Ordering::Release);
            }
            Registration { slot, message }
        }
    }

    impl Drop for Registration {
        fn drop(&mut self) {
            if let Some(i) = self.slot {
                let s = &WATCHED[i];
                s.len.store(usize::MAX, Ordering::Release);
                s.message.store(std::ptr::null_mut(), Ordering::Release);
                s.message_len.store(0, Ordering::Release);
                s.start.store(0, Ordering::Release);
                s.len.store(0, Ordering::Release);
            }
            let _ = &self.message;
        }
    }

    /// Control characters of a path shown as escapes (the path is printed to a terminal).
    fn nettrail_safe(out: &mut String, text: &str) {
        for c in text.chars() {
            if c.is_control() && c != '\n' {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
    }

    pub fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            // SAFETY: installs a handler that only touches atomics and calls
            // async-signal-safe functions (write, _exit, sigaction, raise).
            #[allow(unsafe_code)]
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_sigbus as *const () as usize;
                action.sa_flags = libc::SA_SIGINFO;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
            }
        });
    }

    #[allow(unsafe_code)]
    extern "C" fn on_sigbus(signal: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
        // SAFETY: the kernel passes a valid siginfo_t for SA_SIGINFO handlers.
        let address = unsafe { (*info).si_addr() } as usize;
        for s in &WATCHED {
            let (start, len) = (s.start.load(Ordering::Acquire), s.len.load(Ordering::Acquire));
            if len == 0 || len == usize::MAX || address < start || address - start >= len {
                continue;
            }
            let message = s.message.load(Ordering::Acquire);
            let message_len = s.message_len.load(Ordering::Acquire);
            // SAFETY: write(2) and _exit(2) are async-signal-safe; the message
            // lives as long as the registration that stored the pointer.
            unsafe {
                if !message.is_null() {
                    libc::write(2, message as *const libc::c_void, message_len);
                }
                libc::_exit(2);
            }
        }
        // Not a watched map: the default action (terminate with SIGBUS).
        // SAFETY: resetting a handler and re-raising are async-signal-safe.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
    }
}
