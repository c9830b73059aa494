//! Why a scenario could not be written.

use std::fmt;

use nettrail_etl::write::WriteError;

use crate::catalog::CatalogError;
use crate::encode::EncodeError;
use crate::metadata::MetadataError;

/// Why a scenario could not be written.
#[derive(Debug)]
pub enum SynthError {
    Catalog(CatalogError),
    /// A payload could not be encoded; `event` names it.
    Encode {
        event: String,
        error: EncodeError,
    },
    Metadata(MetadataError),
    /// An app's TraceLogging event could not be encoded.
    AppEvent(nettrail_tracelogging::EncodeError),
    Write(WriteError),
    UnknownProcess(u32),
    DuplicateProcess(u32),
    /// A thread id already used (by this or another process).
    DuplicateThread {
        tid: u32,
        pid: u32,
    },
    ThreadOfOtherProcess {
        tid: u32,
        pid: u32,
        owner: u32,
    },
    /// Something happens on a process or thread outside its lifetime.
    NotAlive {
        what: String,
        at_ms: f64,
    },
    BadPointerSize(u8),
    /// A stack names a module the process does not have.
    UnknownModule {
        pid: u32,
        name: String,
    },
    NoSuchCpu {
        cpu: u16,
        cpus: u32,
    },
    /// The written file did not read back (a bug, reported rather than hidden).
    Reread(String),
    Io(std::io::Error),
}

impl fmt::Display for SynthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SynthError::Catalog(e) => e.fmt(f),
            SynthError::Encode { event, error } => write!(f, "{event}: {error}"),
            SynthError::Metadata(e) => e.fmt(f),
            SynthError::AppEvent(e) => write!(f, "app event: {e}"),
            SynthError::Write(e) => e.fmt(f),
            SynthError::UnknownProcess(pid) => write!(f, "process {pid} was not declared"),
            SynthError::DuplicateProcess(pid) => write!(f, "process {pid} is declared twice"),
            SynthError::UnknownModule { pid, name } => write!(f, "process {pid} has no module {name}"),
            SynthError::DuplicateThread { tid, pid } => write!(f, "thread {tid} (process {pid}) is declared twice"),
            SynthError::ThreadOfOtherProcess { tid, pid, owner } => {
                write!(f, "thread {tid} is used in process {pid} but belongs to process {owner}")
            }
            SynthError::NotAlive { what, at_ms } => write!(f, "{what} does not exist at {at_ms} ms"),
            SynthError::BadPointerSize(p) => write!(f, "pointer size {p}: it is 4 or 8"),
            SynthError::NoSuchCpu { cpu, cpus } => write!(f, "CPU {cpu} does not exist in a {cpus}-CPU trace"),
            SynthError::Reread(e) => write!(f, "the synthesized trace does not read back: {e}"),
            SynthError::Io(e) => write!(f, "writing the trace: {e}"),
        }
    }
}

impl std::error::Error for SynthError {}

impl From<CatalogError> for SynthError {
    fn from(e: CatalogError) -> Self {
        SynthError::Catalog(e)
    }
}

impl From<MetadataError> for SynthError {
    fn from(e: MetadataError) -> Self {
        SynthError::Metadata(e)
    }
}

impl From<nettrail_tracelogging::EncodeError> for SynthError {
    fn from(e: nettrail_tracelogging::EncodeError) -> Self {
        SynthError::AppEvent(e)
    }
}

impl From<WriteError> for SynthError {
    fn from(e: WriteError) -> Self {
        SynthError::Write(e)
    }
}
