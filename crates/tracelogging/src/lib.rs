//! An app that traces itself: a Rust program's `tracing` spans and events
//! as TraceLogging events of the program's own ETW provider.
//!
//! A network trace tells what the kernel did: connections, packets, DNS.
//! It does not tell which step of the program asked for them. With this
//! layer the program's steps go into the same ETW session, stamped by ETW
//! with the same clock and the same thread ids as the kernel's events, so
//! `nettrail` (or WPA, or PerfView) shows "`fetch` started on thread 4312"
//! right before that thread's TCP connect.
//!
//! The events are TraceLogging: each carries its own name and field types
//! (an event metadata blob) and its provider's name (a traits blob), so no
//! manifest has to be installed. The provider's GUID is the hash of its
//! name ([`provider_guid`]), as .NET's EventSource does, so tools can enable
//! it by name.
//!
//! On Windows the layer writes with `EventWriteTransfer` whenever a session
//! has enabled the provider ([`EtwSink`]); otherwise, and on every other
//! system, it costs a check per span and event and writes nothing. The
//! encoding ([`encode_event`], [`MetadataBuilder`], [`provider_traits`]) is
//! plain Rust and runs everywhere; [`CollectingSink`] keeps the events for
//! tests.
//!
//! # Usage
//!
//! ```
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let etw = nettrail_tracelogging::layer("MyCompany-MyApp");
//! println!("ETW provider {} {{{}}}", etw.provider().name(), etw.provider().guid());
//! let subscriber = tracing_subscriber::registry().with(etw);
//! tracing::subscriber::with_default(subscriber, || {
//!     let span = tracing::info_span!("sync_feed", feed = "news");
//!     let _entered = span.enter(); // Start event
//!     tracing::info!(bytes = 512u64, "fetched"); // event "fetched", in sync_feed's activity
//! }); // Stop event
//! ```
//!
//! Then, on Windows, record it beside the network:
//! `nettrail start --provider "*MyCompany-MyApp"` (the `*` asks for the name-hash GUID), run the program, `nettrail stop`.
//! Any session works as well: the provider is `*MyCompany-MyApp` for
//! PerfView, its GUID for `logman`/`tracelog`/WPR, with keyword [`KEYWORD`]
//! (or all keywords) and the level wanted (5 for DEBUG and TRACE).

mod encode;
mod event;
mod guid;
#[cfg(feature = "layer")]
mod layer;
mod sink;
#[cfg(windows)]
mod sys;

pub use encode::{
    EncodeError, FieldValue, InType, MAX_VALUE_BYTES, MetadataBuilder, OutType, encode_event, provider_traits,
    provider_traits_in_group,
};
pub use event::{EncodedEvent, KEYWORD, Provider, TRACELOGGING_CHANNEL, descriptor, level, opcode};
pub use guid::provider_guid;
#[cfg(feature = "layer")]
pub use layer::{EtwLayer, layer, level_of};
pub use sink::{CollectingSink, EtwSink, Sink};
