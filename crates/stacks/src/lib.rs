//! Call stacks of ETW events, and the code their addresses point into.
//!
//! [`scan`] makes one parallel pass over a trace and returns its [`Code`]:
//! the [`Stacks`] joined to their events (classic StackWalk records and
//! stack-cache keys; extended data items are read from the event itself),
//! and the [`Modules`] each process had loaded over time with their PDB
//! identities, plus the CLR's compiled methods. [`Frames`] renders addresses
//! as `module!function+offset`, `module+offset` or `managed!Method+offset`.
//! A reader that makes its own pass over the records adds them to a
//! [`BufferScan`] per buffer and puts those together with a [`CodeJoin`] instead.
//!
//! ```no_run
//! let file = nettrail_etl::TraceFile::open("trace.etl")?;
//! let trace = nettrail_etl::Trace::open(&file)?;
//! let mut schemas = nettrail_decode::Schemas::new();
//! schemas.learn(&trace);
//! let code = nettrail_stacks::scan(&trace, &schemas, &|_pid| true);
//! let frames = nettrail_stacks::Frames { modules: &code.modules, symbols: &nettrail_stacks::NoSymbols };
//! let mut events = trace.events();
//! while let Some(Ok(event)) = events.next() {
//!     if let (Some(stack), Some(pid)) = (code.stacks.of_record(&event), event.process_id) {
//!         println!("{:?}", frames.stack(pid, &stack.frames, event.timestamp));
//!     }
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod frames;
mod modules;
mod scan;
mod spill;
mod stacks;

pub use frames::{Frames, NoSymbols, Symbols};
pub use modules::{Method, Module, Modules, PdbId};
pub use scan::{BufferScan, Code, CodeJoin, FrameTable, MethodCounts, scan};
pub use stacks::{STACK_WALK, Stack, StackCursor, StackId, StackRef, Stacks, kernel_boundary};
