//! Synthetic `.etl` traces that look like what `wpr -stop` writes after
//! merging its kernel and user sessions on Windows 10 or 11: the kernel
//! rundown, process and thread lifetimes, network providers' events encoded
//! from the manifest of the machine's Windows build (`manifests/<build>/`,
//! the synthesizer's own, never the decoder's layouts), classic kernel
//! TcpIp/UdpIp events, and the TRACE_EVENT_INFO metadata the merge embeds.
//! Scenario scripts describe network activity; this crate makes it byte-exact.
//!
//! Windows network layers that no real trace in the corpus covers can only
//! be tested this way; the tests check the output against the real traces'
//! structure and against independent readers, so the synthesizer and the
//! reader cannot share a mistake unnoticed.
//!
//! ```
//! use nettrail_synth::{EventSpec, KernelSpec, Synth, Val, fields, sockaddr};
//!
//! let mut s = Synth::new();
//! s.process(1200, 800, "curl.exe", "curl.exe https://example.com/", 8)?;
//! s.thread(1200, 1204)?;
//! let remote = sockaddr::sockaddr("93.184.216.34:443".parse()?);
//! s.event(2.0, (1200, 1204), "Winsock-AFD", 1000, 0, fields![
//!     ("EnterExit", 0u32),
//!     ("Location", 1u32),
//!     ("Process", Val::Ptr(0xffff_a804_1234_0080)),
//!     ("Endpoint", Val::Ptr(0xffff_a804_5678_1010)),
//!     ("AddressFamily", 2u32),
//!     ("SocketType", 1u32),
//!     ("Protocol", 6u32),
//! ])?;
//! s.emit(
//!     EventSpec::new("TCPIP", 1033, 0)
//!         .at(3.5)
//!         .thread(1200, 1204)
//!         .field("Tcb", Val::Ptr(0xffff_a804_9abc_0010))
//!         .field("RemoteAddress", remote.clone())
//!         .stack(&[0x7ffc_8c01_2345, 0x7ff6_1000_1234]),
//! )?;
//! s.kernel(KernelSpec::new("TcpIp", 10).at(4.0).thread(1200, 1204).fields(fields![
//!     ("size", 517u32),
//!     ("daddr", std::net::Ipv4Addr::new(93, 184, 216, 34)),
//!     ("dport", 443u16),
//! ]))?;
//! let etl: Vec<u8> = s.finish()?;
//! assert!(nettrail_etl::Trace::parse(&etl).is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! - [`encode`](mod@encode): payloads from layouts and named values ([`Val`], [`fields!`]);
//! - [`catalog`]: each build's manifests: the layouts and descriptors events are logged with;
//! - [`sockaddr`]: SOCKADDR_IN/IN6/HV/VM bytes and SIDs;
//! - [`metadata`]: TRACE_EVENT_INFO and EVENT_MAP_INFO as the merge embeds them;
//! - [`Synth`]: the session, processes, threads, modules, events, losses;
//!   [`Synth::tracelogging`] places an app's own TraceLogging events
//!   (`nettrail_tracelogging::EncodedEvent`) on its threads;
//! - [`windows`]: what each Windows network layer logs for one action, on
//!   the threads and with the header ids Windows uses;
//! - [`scenarios`]: NetBlame's test scenarios as traces, by name.
//!
//! Times are from the trace start: `f64` milliseconds, or [`Time::us`] / [`Time::ns`].
//! The machine is 64-bit; a WOW64 process ([`Process::wow64`]) logs
//! EVENT_HEADER32 records with 4-byte pointers.

pub mod catalog;
pub mod encode;
mod error;
pub mod metadata;
pub mod scenarios;
mod session;
pub mod sockaddr;
mod system;
mod value;
pub mod windows;

pub use catalog::{CatalogError, EventLayout, KernelLayout};
pub use encode::EncodeError;
pub use error::SynthError;
pub use metadata::MetadataError;
pub use nettrail_etl::write::KernelHeader;
pub use session::{EventSpec, KernelSpec, Synth, SynthConfig, Time};
pub use system::{DEFAULT_USER_SID, Module, NETWORK_DLLS, PdbIdentity, Process, SYSTEM_SID};
pub use value::{Fields, Val};
