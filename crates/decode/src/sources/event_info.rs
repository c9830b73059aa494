//! TRACE_EVENT_INFO and EVENT_MAP_INFO blobs that xperf, WPR and PerfView
//! embed when they merge a trace (KernelTraceControl MetaData events).

use crate::registry::SchemaSet;

/// Collects embedded metadata; maps are joined to fields at the end.
#[derive(Debug, Default)]
pub struct EmbeddedMetadata {}

impl EmbeddedMetadata {
    pub fn new() -> Self {
        EmbeddedMetadata::default()
    }

    /// MetaData opcode 32 (EventInfo): the payload is one TRACE_EVENT_INFO.
    pub fn add_event_info(&mut self, _payload: &[u8]) -> Result<(), String> {
        Ok(())
    }

    /// MetaData opcode 33 (EventMapInfo): provider GUID, then one EVENT_MAP_INFO.
    pub fn add_event_map_info(&mut self, _payload: &[u8]) -> Result<(), String> {
        Ok(())
    }

    pub fn finish(self) -> SchemaSet {
        SchemaSet::default()
    }
}
