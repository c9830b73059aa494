//! Read and write Windows ETW `.etl` trace files, on any OS.
//!
//! An `.etl` file is a chain of buffers (one module: [`buffer`]), each holding
//! 8-aligned event records of several header kinds ([`record`]), some with
//! extended data ([`extended`]), some buffers XPRESS-compressed ([`xpress`]).
//! The first record is the trace header event ([`logfile`]) whose start time
//! anchors the clock ([`clock`]). [`Trace`] indexes the buffers; [`EventStream`]
//! merges every CPU's buffers into one time order ([`merge`]). Everything
//! borrows from the file's bytes; only compressed buffers are copied.
//!
//! ```no_run
//! let file = nettrail_etl::TraceFile::open("trace.etl")?;
//! let trace = nettrail_etl::Trace::parse(file.bytes())?;
//! let mut events = trace.events();
//! while let Some(event) = events.next() {
//!     let event = event?;
//!     println!("{} {} {}", event.timestamp, event.provider, event.payload.len());
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`drive`](mod@drive) is the loop of every decoding pass: events in time
//! order, worked on in parallel chunks, results handed on in order.
//!
//! [`write`](mod@write) builds files: the round-trip tests and the scenario synthesizer
//! stand on it.

pub mod buffer;
mod bytes;
pub mod clock;
pub mod drive;
pub mod error;
pub mod extended;
pub mod file;
mod guid;
pub mod kernel;
pub mod logfile;
pub mod merge;
mod prefetch;
pub mod record;
mod sniff;
mod stored;
mod summary;
mod trace;
pub mod well_known;
pub mod write;
pub mod xpress;

pub use bytes::Utf16;
pub use clock::{Clock, ClockType, FileTime, UtcText};
pub use drive::{Batching, Chunk, Driven, drive};
pub use error::{Error, ErrorKind, Location};
pub use file::TraceFile;
pub use guid::{Guid, ParseGuidError};
pub use logfile::LogfileHeader;
pub use merge::{Batch, Event, EventRef, EventStream};
pub use record::{HeaderKind, Record};
pub use summary::{BufferSummary, ProviderSummary, Summary};
pub use trace::{BufferContents, BufferInfo, BufferIter, BufferRecords, Buffers, Note, Releaser, Trace};
