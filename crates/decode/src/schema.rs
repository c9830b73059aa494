//! What an event looks like: its provider's names (tasks, opcodes, keywords,
//! levels, channels, maps) and its fields, from whichever source knew it.

use std::collections::HashMap;
use std::sync::Arc;

use nettrail_etl::Guid;

use crate::intype::{InType, OutType};

/// Where a schema came from, in the order the decoder tries them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Source {
    /// TraceLogging metadata carried by the event itself.
    TraceLogging,
    /// TRACE_EVENT_INFO that xperf/WPR/PerfView embedded when merging.
    EmbeddedEventInfo,
    /// An EventSource manifest sent inside the trace.
    EventSourceManifest,
    /// An instrumentation manifest the user supplied (`--manifest`).
    Manifest,
    /// nettrail's built-in schemas of the network providers.
    BuiltIn,
    /// nettrail's built-in classic kernel (MOF) layouts.
    Kernel,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::TraceLogging => "tracelogging",
            Source::EmbeddedEventInfo => "embedded_event_info",
            Source::EventSourceManifest => "eventsource_manifest",
            Source::Manifest => "manifest",
            Source::BuiltIn => "builtin",
            Source::Kernel => "kernel",
        }
    }
}

/// A value map or bit map.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueMap {
    pub name: String,
    /// Bit map: every set bit names itself; value map: the exact value does.
    pub bitmap: bool,
    /// (value, text), sorted by value.
    pub entries: Vec<(u64, String)>,
}

impl ValueMap {
    /// The text for a value: the entry's (value map), the entries of its set
    /// bits joined with `|` (bit map), or `None` when nothing matches.
    pub fn lookup(&self, value: u64) -> Option<String> {
        if !self.bitmap {
            let i = self.entries.binary_search_by_key(&value, |(v, _)| *v).ok()?;
            return self.entries.get(i).map(|(_, t)| t.clone());
        }
        let names: Vec<&str> =
            self.entries.iter().filter(|(bit, _)| *bit != 0 && value & bit == *bit).map(|(_, t)| t.trim()).collect();
        if names.is_empty() {
            self.entries.iter().find(|(v, _)| *v == 0 && value == 0).map(|(_, t)| t.clone())
        } else {
            Some(names.join("|"))
        }
    }
}

/// How long a field is, or how many times it repeats: a constant, or the
/// value of an earlier field at the same level (by index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Len {
    Fixed(u32),
    Field(usize),
    /// TraceLogging variable-count arrays: a u16 count precedes the elements.
    Prefixed,
    /// As many as the rest of the payload holds (stack frames).
    Remaining,
}

/// One field of an event's payload.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub in_type: InType,
    pub out_type: OutType,
    /// Characters for strings, bytes for binary.
    pub length: Option<Len>,
    /// Present for arrays.
    pub count: Option<Len>,
    pub map: Option<Arc<ValueMap>>,
    /// Members of a struct field.
    pub members: Vec<Field>,
}

impl Field {
    pub fn new(name: impl Into<String>, in_type: InType) -> Field {
        Field {
            name: name.into(),
            in_type,
            out_type: OutType::Default,
            length: None,
            count: None,
            map: None,
            members: Vec::new(),
        }
    }
}

/// Names that belong to a provider, shared by its events.
#[derive(Clone, Debug, Default)]
pub struct ProviderInfo {
    pub guid: Guid,
    pub name: String,
    /// Keyword masks and their names.
    pub keywords: Vec<(u64, String)>,
    pub channels: HashMap<u8, String>,
    pub levels: HashMap<u8, String>,
}

impl ProviderInfo {
    /// Names of the keywords set in `keywords` (the provider's own first,
    /// then the standard ones Windows reserves in the top 16 bits).
    pub fn keyword_names(&self, keywords: u64) -> impl Iterator<Item = &str> {
        let own = self
            .keywords
            .iter()
            .filter(move |(mask, _)| *mask != 0 && keywords & mask == *mask)
            .map(|(_, n)| n.as_str());
        let standard = STANDARD_KEYWORDS
            .iter()
            .filter(move |(bit, _)| keywords & bit != 0 && !self.keywords.iter().any(|(m, _)| m == bit))
            .map(|(_, n)| *n);
        own.chain(standard)
    }

    /// A level's name: the provider's own, or the standard one.
    pub fn level_name(&self, level: u8) -> Option<&str> {
        self.levels.get(&level).map(String::as_str).or_else(|| standard_level(level))
    }

    pub fn channel_name(&self, channel: u8) -> Option<&str> {
        self.channels.get(&channel).map(String::as_str).or_else(|| standard_channel(channel))
    }
}

/// The keyword bits Windows reserves (winmeta.xml), as Event Viewer names them.
const STANDARD_KEYWORDS: &[(u64, &str)] = &[
    (0x0001_0000_0000_0000, "Response Time"),
    (0x0004_0000_0000_0000, "WDI Diag"),
    (0x0008_0000_0000_0000, "SQM"),
    (0x0010_0000_0000_0000, "Audit Failure"),
    (0x0020_0000_0000_0000, "Audit Success"),
    (0x0040_0000_0000_0000, "Correlation Hint"),
    (0x0080_0000_0000_0000, "Classic"),
];

/// winmeta.xml's levels, as Event Viewer shows them.
pub fn standard_level(level: u8) -> Option<&'static str> {
    Some(match level {
        0 => "Log Always",
        1 => "Critical",
        2 => "Error",
        3 => "Warning",
        4 => "Information",
        5 => "Verbose",
        _ => return None,
    })
}

/// winmeta.xml's opcodes.
pub fn standard_opcode(opcode: u8) -> Option<&'static str> {
    Some(match opcode {
        0 => "Info",
        1 => "Start",
        2 => "Stop",
        3 => "DC_Start",
        4 => "DC_Stop",
        5 => "Extension",
        6 => "Reply",
        7 => "Resume",
        8 => "Suspend",
        9 => "Send",
        240 => "Receive",
        _ => return None,
    })
}

/// winmeta.xml's channels.
pub fn standard_channel(channel: u8) -> Option<&'static str> {
    Some(match channel {
        8 => "System",
        9 => "Application",
        10 => "Security",
        11 => "TraceLogging",
        12 => "ProviderMetadata",
        _ => return None,
    })
}

/// Everything needed to decode and name one event.
#[derive(Clone, Debug)]
pub struct EventSchema {
    pub provider: Arc<ProviderInfo>,
    pub source: Source,
    /// The event's name (TraceLogging name, manifest symbol, MOF class event).
    pub name: Option<String>,
    /// Display names, as TDH gives them (a message string where the manifest
    /// has one, else the name).
    pub task: Option<String>,
    pub opcode: Option<String>,
    /// Format string with `%1`… inserts.
    pub message: Option<String>,
    pub fields: Vec<Field>,
    /// The descriptor values the schema's source states (built-in layouts
    /// state them where the facts have them): what a writer logs the event with.
    pub declared: Declared,
}

/// EVENT_DESCRIPTOR values a schema source states for an event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Declared {
    pub task: Option<u16>,
    pub opcode: Option<u8>,
    pub level: Option<u8>,
    pub keywords: Option<u64>,
    pub channel: Option<u8>,
}

/// How an event is looked up: manifest-style providers by (provider, id,
/// version); classic and kernel events by (event class, opcode, version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchemaKey {
    Manifest { provider: Guid, id: u16, version: u8 },
    Classic { class: Guid, opcode: u8, version: u8 },
}

impl SchemaKey {
    /// The provider or kernel event class the key belongs to.
    pub fn guid(&self) -> Guid {
        match *self {
            SchemaKey::Manifest { provider, .. } => provider,
            SchemaKey::Classic { class, .. } => class,
        }
    }
}
