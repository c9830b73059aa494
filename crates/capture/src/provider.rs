//! What a session enables: user-mode providers (GUID or registered name,
//! level, keywords, rundown keywords, event and stack filters) and the
//! kernel's system provider (flags and the events that carry stacks).

use std::fmt;

use nettrail_etl::Guid;

/// A provider as WPR and `EnableTraceEx2` take it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provider {
    /// A short label, unique in a profile (the `.wprp` element's Id).
    pub label: String,
    pub target: Target,
    /// TRACE_LEVEL_*; `None` enables every level (WPR's default, 0xFF).
    pub level: Option<u8>,
    /// Match-any keywords; `None` enables every keyword.
    pub keywords: Option<u64>,
    /// Keywords enabled briefly at start so the provider logs its state
    /// (TCPIP's connection rundown, a runtime's loaded methods).
    pub rundown_on_start: Option<u64>,
    /// The same, when the trace is saved (stopped).
    pub rundown_on_stop: Option<u64>,
    /// Only these event ids are logged; empty logs every event.
    pub events: Vec<u16>,
    pub stacks: Stacks,
    /// Kernel-mode providers write into non-paged buffers.
    pub non_paged: bool,
}

/// Who a provider is: a GUID, or a name that the recorder resolves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Guid(Guid),
    /// A name registered on the machine (a manifest's provider name).
    Registered(String),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Guid(g) => write!(f, "{g}"),
            Target::Registered(name) => f.write_str(name),
        }
    }
}

/// Which of a provider's events carry a call stack.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Stacks {
    #[default]
    None,
    All,
    /// Only these event ids.
    Events(Vec<u16>),
    /// The Windows thread pool's own stack switches: the named stack
    /// keywords plus custom classic hooks (`0x1C2A` = ThreadPoolSetTimer).
    Pool {
        keywords: Vec<&'static str>,
        hooks: Vec<u16>,
    },
}

impl Provider {
    /// A provider with every level and keyword and no filters.
    pub fn new(label: &str, target: Target) -> Provider {
        Provider {
            label: label.to_string(),
            target,
            level: None,
            keywords: None,
            rundown_on_start: None,
            rundown_on_stop: None,
            events: Vec::new(),
            stacks: Stacks::None,
            non_paged: false,
        }
    }

    pub fn guid(label: &str, guid: &str) -> Provider {
        Provider::new(label, Target::Guid(Guid::parse_const(guid)))
    }

    pub fn level(mut self, level: u8) -> Self {
        self.level = Some(level);
        self
    }

    pub fn keywords(mut self, keywords: u64) -> Self {
        self.keywords = Some(keywords);
        self
    }

    pub fn events(mut self, ids: &[u16]) -> Self {
        self.events = ids.to_vec();
        self
    }

    pub fn stacks(mut self, stacks: Stacks) -> Self {
        self.stacks = stacks;
        self
    }

    pub fn stacks_on(self, ids: &[u16]) -> Self {
        self.stacks(Stacks::Events(ids.to_vec()))
    }

    pub fn non_paged(mut self) -> Self {
        self.non_paged = true;
        self
    }

    /// The same provider without call stacks (`--no-stacks`).
    pub fn without_stacks(mut self) -> Self {
        self.stacks = Stacks::None;
        self
    }
}

/// The kernel's system provider: process, thread and image events (the
/// stitching's threads and the stacks' module maps), with a stack on the
/// creation of every thread (which code started it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemProvider {
    /// WPR keyword names (`ProcessThread`, `Loader`).
    pub keywords: Vec<&'static str>,
    /// WPR stack names (`ThreadCreate`).
    pub stacks: Vec<&'static str>,
}

impl SystemProvider {
    /// `EVENT_TRACE_FLAG_*` bits for the keywords (a classic kernel session's EnableFlags).
    pub fn enable_flags(&self) -> u32 {
        self.keywords.iter().map(|k| system_keyword_flags(k)).fold(0, |a, b| a | b)
    }
}

/// `EVENT_TRACE_FLAG_*` of a WPR system keyword this crate uses.
pub fn system_keyword_flags(keyword: &str) -> u32 {
    const PROCESS: u32 = 0x0000_0001;
    const THREAD: u32 = 0x0000_0002;
    const IMAGE_LOAD: u32 = 0x0000_0004;
    match keyword {
        "ProcessThread" => PROCESS | THREAD,
        "Loader" => IMAGE_LOAD,
        _ => 0,
    }
}

/// The classic event (class GUID, opcode) a WPR system stack name stands for.
pub fn system_stack_event(stack: &str) -> Option<(Guid, u8)> {
    match stack {
        // Thread class, Start.
        "ThreadCreate" => Some((Guid::parse_const("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c"), 1)),
        _ => None,
    }
}
