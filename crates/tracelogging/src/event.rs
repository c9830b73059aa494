//! A provider and the events it writes, fully encoded.

use std::time::SystemTime;

use nettrail_etl::Guid;
use nettrail_etl::extended::ExtType;
use nettrail_etl::write::Descriptor;

use crate::encode::{EncodeError, FieldValue, encode_event, provider_traits};
use crate::guid::provider_guid;

/// The keyword every event of this crate carries: a session that enables
/// the provider with a keyword mask including bit 0 (or with no mask, which
/// ETW reads as "all") receives them.
pub const KEYWORD: u64 = 1;

/// The channel `TraceLoggingProvider.h` gives its events (11: TraceLogging),
/// which tells decoders the event describes itself.
pub const TRACELOGGING_CHANNEL: u8 = 11;

/// Standard levels (winmeta.xml).
pub mod level {
    pub const CRITICAL: u8 = 1;
    pub const ERROR: u8 = 2;
    pub const WARNING: u8 = 3;
    pub const INFORMATION: u8 = 4;
    pub const VERBOSE: u8 = 5;
}

/// Standard opcodes (winmeta.xml).
pub mod opcode {
    pub const INFO: u8 = 0;
    /// `win:Start`: an activity begins (a span is entered).
    pub const START: u8 = 1;
    /// `win:Stop`: an activity ends (a span is exited).
    pub const STOP: u8 = 2;
}

/// A TraceLogging provider: its name, GUID and traits blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    name: String,
    guid: Guid,
    traits: Vec<u8>,
}

impl Provider {
    /// A provider whose GUID is the name's hash ([`provider_guid`]), so
    /// that tools can enable it by name.
    pub fn new(name: &str) -> Provider {
        Provider::with_guid(name, provider_guid(name))
    }

    /// A provider with a GUID of its own choosing.
    pub fn with_guid(name: &str, guid: Guid) -> Provider {
        Provider { name: name.to_string(), guid, traits: provider_traits(name) }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// The provider traits blob every event carries.
    pub fn traits(&self) -> &[u8] {
        &self.traits
    }
}

/// One event as ETW receives it: descriptor, activity ids and the three
/// blobs (provider traits, event metadata, payload).
#[derive(Clone, Debug, PartialEq)]
pub struct EncodedEvent {
    pub provider: Guid,
    /// The event's name (also inside `metadata`).
    pub name: String,
    /// Id, version and task 0, channel 11; level, opcode and keywords as
    /// the layer chose them.
    pub descriptor: Descriptor,
    /// The span's activity (Start, Stop and events inside a span).
    pub activity_id: Option<Guid>,
    /// The parent span's activity (on a Start).
    pub related_activity_id: Option<Guid>,
    pub provider_traits: Vec<u8>,
    pub metadata: Vec<u8>,
    pub payload: Vec<u8>,
    /// A number for the thread that wrote the event, unique in the process
    /// (1 for the first thread that wrote one, and so on). Not the OS thread
    /// id: on Windows, ETW stamps that in the event itself.
    pub thread: u64,
    /// When the event was written.
    pub time: SystemTime,
}

impl EncodedEvent {
    /// An event of `provider` with these fields: level Information, opcode
    /// Info, keyword [`KEYWORD`], no activity; change the descriptor and the
    /// activity ids as needed. The way to make app events for synthesized
    /// traces without `tracing`.
    pub fn new(provider: &Provider, name: &str, fields: &[(&str, FieldValue)]) -> Result<EncodedEvent, EncodeError> {
        let (metadata, payload) = encode_event(name, fields)?;
        Ok(EncodedEvent {
            provider: provider.guid(),
            name: name.to_string(),
            descriptor: descriptor(level::INFORMATION, opcode::INFO),
            activity_id: None,
            related_activity_id: None,
            provider_traits: provider.traits().to_vec(),
            metadata,
            payload,
            thread: crate::sink::thread_number(),
            time: SystemTime::now(),
        })
    }

    /// The extended data items of the event's ETL record, in the order ETW
    /// writes them: related activity id (when there is one), provider
    /// traits, event metadata.
    pub fn extended_items(&self) -> Vec<(ExtType, Vec<u8>)> {
        let mut items = Vec::with_capacity(3);
        if let Some(related) = self.related_activity_id {
            items.push((ExtType::RELATED_ACTIVITYID, related.to_bytes_le().to_vec()));
        }
        items.push((ExtType::PROV_TRAITS, self.provider_traits.clone()));
        items.push((ExtType::EVENT_SCHEMA_TL, self.metadata.clone()));
        items
    }
}

/// The descriptor of a TraceLogging event of this crate.
pub fn descriptor(level: u8, opcode: u8) -> Descriptor {
    Descriptor { id: 0, version: 0, channel: TRACELOGGING_CHANNEL, level, opcode, task: 0, keywords: KEYWORD }
}
