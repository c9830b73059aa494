//! Decode ETW events without Windows.
//!
//! Windows decodes events with TDH and the manifests installed on the
//! machine that recorded them. nettrail decodes them anywhere, from what the
//! trace carries (TraceLogging metadata, embedded TRACE_EVENT_INFO, EventSource
//! manifests) and what it ships (network provider and kernel layouts in
//! `schemas/`), plus manifests the user supplies. [`Schemas`] finds an event's
//! [`EventSchema`]; [`payload::decode`] turns its payload into [`Value`]s;
//! [`format`](mod@format) shows them as TDH would, or as typed JSON; [`message`] renders
//! the event's message.
//! [`safe_text`] makes the trace's strings safe for terminals and spreadsheets.

pub mod builtin;
mod coverage;
pub mod fasthash;
pub mod format;
pub mod intype;
pub mod layouts;
pub mod message;
mod names;
pub mod payload;
mod registry;
pub mod safe_text;
pub mod schema;
pub mod sources;
pub mod value;

pub use coverage::{Coverage, CoverageCounter, ProviderCoverage};
pub use intype::{InType, OutType};
pub use names::EventNames;
pub use registry::{LookupCache, ManifestFileError, MetadataLearner, MetadataRecord, SchemaSet, Schemas, Undecoded};
pub use schema::{Declared, EventSchema, Field, Len, ProviderInfo, SchemaKey, Source, ValueMap};
pub use value::Value;
