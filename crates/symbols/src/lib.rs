//! Function names for addresses in Windows modules, from their PDB files.
//!
//! A trace tells, for every module a process loaded, its base address and
//! which PDB its build wrote (file name, GUID, age). This crate finds that
//! PDB on a symbol path written as Windows debuggers take it, checks that its
//! GUID and age really match (another build's PDB would name the wrong
//! functions), and turns module-relative addresses into function, inline
//! frames and source lines.
//!
//! ```
//! use nettrail_symbols::{Guid, PdbId, SymbolPath, Symbolizer};
//!
//! let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
//! let mut symbolizer = Symbolizer::new(SymbolPath::parse(folder));
//! // As a trace's DbgID_RSDS event or the image's debug directory gives it.
//! let guid: Guid = "C77D2D78-2FDD-0653-4C4C-44205044422E".parse().unwrap();
//! let module = PdbId::new(r"C:\nettrail\fixture\nettrail_fixture.pdb", guid, 1);
//!
//! // Address minus module base: inside `checksum`, where `mix` was inlined.
//! let frames = symbolizer.resolve(&module, 0x1020).expect("symbols for this address");
//! assert_eq!(&*frames[0].function, "mix");
//! assert_eq!(frames[0].offset, None); // inlined: no entry point of its own
//! assert_eq!(&*frames[1].function, "checksum");
//! assert_eq!(frames[1].offset, Some(0x20));
//! assert_eq!(frames[1].line, Some(18));
//! ```

mod id;
mod locate;
mod pdb_file;
mod pe;
mod symbol_path;
mod symbolizer;

#[cfg(feature = "download")]
mod download;

use std::path::PathBuf;
use std::sync::Arc;

pub use id::{Guid, ParseGuidError, PdbId};
pub use pdb_file::PdbFile;
pub use pe::{DebugRecord, ImageIdentity, pe_identity};
pub use symbol_path::{MICROSOFT_SYMBOL_SERVER, Store, SymbolPath, SymbolPathEntry, SymbolPathError};
pub use symbolizer::{PdbReport, PdbState, RejectReason, Rejected, Symbolizer};

/// One frame of a resolved address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    /// The function's name, undecorated, without argument list.
    pub function: Arc<str>,
    /// Bytes from the function's entry to the address. `None` for a function
    /// inlined into its caller: its code has no entry point of its own.
    pub offset: Option<u32>,
    /// The source file, as the compiler recorded it (a Windows path).
    pub file: Option<Arc<str>>,
    /// The source line of the instruction; for a caller of an inlined frame,
    /// the line of the call.
    pub line: Option<u32>,
}

impl Frame {
    /// True for a function that the compiler inlined into the next frame.
    pub fn is_inlined(&self) -> bool {
        self.offset.is_none()
    }
}

/// Why a PDB or image could not be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The file is not a PDB, or its stream structure is damaged.
    #[error("{path}: not a readable PDB: {source}")]
    Pdb { path: PathBuf, source: pdb_addr2line::pdb::Error },
    /// The PDB opened, but its symbol or line records are damaged.
    #[error("{path}: damaged symbol data: {source}")]
    Symbols { path: PathBuf, source: pdb_addr2line::Error },
    /// The PDB parser failed on the file's contents in a way it does not check for.
    #[error("{path}: the PDB parser could not handle this file's contents")]
    ParserPanic { path: PathBuf },
    #[error("not a usable PE image: {0}")]
    BadImage(String),
    #[cfg(feature = "download")]
    #[error("download of {url} failed: {reason}")]
    Download { url: String, reason: String },
}
