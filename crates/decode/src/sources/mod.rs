//! The places a schema can come from, besides the built-in layout files.

pub mod event_info;
pub mod eventsource;
pub mod manifest;
pub mod tracelogging;
