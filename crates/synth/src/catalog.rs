//! What the synthesizer knows of each event: the built-in layout (fields, in
//! wire order) from `nettrail-decode`, and the EVENT_DESCRIPTOR Windows logs
//! it with. Descriptors come from what the layouts state where the facts
//! have them (TCPIP, Kernel-Network, WinINet, HttpService, …), else
//! from per-provider defaults: level 4, the provider's keyword from the
//! NetBlame capture profile, and the first channel (16) with its keyword bit,
//! which is how the real traces' manifest events arrive.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use nettrail_decode::builtin::BuiltIn;
use nettrail_decode::{EventSchema, ProviderInfo, SchemaKey};
use nettrail_etl::Guid;
use nettrail_etl::write::Descriptor;

/// A provider or event the built-in layouts do not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogError {
    UnknownProvider(String),
    UnknownEvent { provider: String, id: u16, version: u8 },
    UnknownKernelClass(String),
    UnknownKernelEvent { class: String, opcode: u8, version: Option<u8> },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::UnknownProvider(p) => write!(f, "no built-in layouts for provider {p:?}"),
            CatalogError::UnknownEvent { provider, id, version } => {
                write!(f, "provider {provider} has no built-in layout for event {id} version {version}")
            }
            CatalogError::UnknownKernelClass(c) => write!(f, "no kernel event class {c:?}"),
            CatalogError::UnknownKernelEvent { class, opcode, version: Some(v) } => {
                write!(f, "kernel class {class} has no layout for opcode {opcode} version {v}")
            }
            CatalogError::UnknownKernelEvent { class, opcode, version: None } => {
                write!(f, "kernel class {class} has no layout for opcode {opcode}")
            }
        }
    }
}

impl std::error::Error for CatalogError {}

/// A manifest event: where it comes from, what it holds, how it is logged.
#[derive(Clone, Debug)]
pub struct EventLayout {
    pub provider: Arc<ProviderInfo>,
    pub id: u16,
    pub version: u8,
    pub schema: Arc<EventSchema>,
    pub descriptor: Descriptor,
}

/// A classic kernel (or KernelTraceControl) event class's layout.
#[derive(Clone, Debug)]
pub struct KernelLayout {
    pub class: Guid,
    /// The hook group; `None` for classes logged as classic FULL_HEADER
    /// records (KernelTraceControl's merge-time metadata).
    pub group: Option<u8>,
    pub opcode: u8,
    pub version: u8,
    pub schema: Arc<EventSchema>,
}

#[derive(Debug, Default)]
struct Tables {
    /// Manifest providers by lowercase name.
    providers: HashMap<String, Guid>,
    /// Kernel classes by lowercase name.
    kernel: HashMap<String, Guid>,
}

/// Layouts of providers whose manifests are not public (Office's), so that
/// nettrail ships none: the synthesizer writes their events with these and
/// embeds them as metadata, which is the only way the reader learns them.
const SYNTH_ONLY: [(&str, &str); 3] = [
    ("Microsoft-Office-ThreadPool.events", include_str!("../layouts/Microsoft-Office-ThreadPool.events")),
    ("OfficeDispatchQueue.events", include_str!("../layouts/OfficeDispatchQueue.events")),
    ("Microsoft-Office-Events.events", include_str!("../layouts/Microsoft-Office-Events.events")),
];

/// The synthesizer's own layouts; a test keeps their `errors` empty.
fn synth_only() -> &'static BuiltIn {
    static SYNTH_ONLY_LAYOUTS: OnceLock<BuiltIn> = OnceLock::new();
    SYNTH_ONLY_LAYOUTS.get_or_init(|| BuiltIn::from_files(&SYNTH_ONLY))
}

/// The layouts that know `provider`: nettrail's built-in ones, else the
/// synthesizer's own.
fn layouts_of(provider: &Guid) -> &'static BuiltIn {
    let built_in = BuiltIn::get();
    if built_in.providers.contains_key(provider) { built_in } else { synth_only() }
}

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t = Tables::default();
        for (key, schema) in BuiltIn::get().events.iter().chain(&synth_only().events) {
            let name = schema.provider.name.to_ascii_lowercase();
            match *key {
                SchemaKey::Manifest { provider, .. } => t.providers.insert(name, provider),
                SchemaKey::Classic { class, .. } => t.kernel.insert(name, class),
            };
        }
        t
    })
}

/// The GUID of a provider given by GUID, by name, or by name without the
/// `Microsoft-Windows-` prefix (`"TCPIP"`, `"Winsock-AFD"`), in any case.
pub fn provider_guid(provider: &str) -> Result<Guid, CatalogError> {
    if let Ok(g) = provider.trim_matches(['{', '}']).parse::<Guid>() {
        return Ok(g);
    }
    let t = tables();
    let lower = provider.to_ascii_lowercase();
    t.providers
        .get(&lower)
        .or_else(|| t.providers.get(&format!("microsoft-windows-{lower}")))
        .copied()
        .ok_or_else(|| CatalogError::UnknownProvider(provider.to_string()))
}

/// The keyword bit Windows' message compiler gives a channel: the first
/// channel a provider declares (16) gets bit 63, the next bit 62, and so on.
pub fn channel_keyword(channel: u8) -> u64 {
    match channel {
        16..=31 => 1 << (63 - u32::from(channel - 16)),
        _ => 0,
    }
}

/// Keywords of events whose layout states none: the keyword the NetBlame
/// capture profile enables the provider with where it names one.
fn default_keywords(provider: &Guid) -> u64 {
    const WINSOCK_AFD: Guid = Guid::parse_const("e53c6823-7bb8-44bb-90dc-3f86090d48a6");
    if *provider == WINSOCK_AFD { 0x4 } else { 0 }
}

/// The layout and descriptor of a manifest event.
pub fn event_layout(provider: &str, id: u16, version: u8) -> Result<EventLayout, CatalogError> {
    let guid = provider_guid(provider)?;
    let built_in = layouts_of(&guid);
    let info = built_in.providers.get(&guid).ok_or_else(|| CatalogError::UnknownProvider(provider.to_string()))?;
    let schema = built_in
        .events
        .get(&SchemaKey::Manifest { provider: guid, id, version })
        .cloned()
        .ok_or_else(|| CatalogError::UnknownEvent { provider: info.name.clone(), id, version })?;
    Ok(EventLayout { provider: info.clone(), id, version, schema, descriptor: descriptor(guid, id, version) })
}

/// The descriptor of a manifest event: the one its layout states, or
/// another version's of the same id, completed with the provider's defaults.
pub fn descriptor(provider: Guid, id: u16, version: u8) -> Descriptor {
    let events = &layouts_of(&provider).events;
    let declared = |v| events.get(&SchemaKey::Manifest { provider, id, version: v }).map(|s| s.declared);
    let own = declared(version).unwrap_or_default();
    let pick = if own.level.is_some() {
        own
    } else {
        (0..=255u8).rev().filter(|v| *v != version).filter_map(declared).find(|d| d.level.is_some()).unwrap_or_default()
    };
    let channel = pick.channel.unwrap_or(16);
    Descriptor {
        id,
        version,
        channel,
        level: pick.level.unwrap_or(4),
        opcode: pick.opcode.unwrap_or(0),
        task: pick.task.unwrap_or(0),
        keywords: pick.keywords.unwrap_or_else(|| default_keywords(&provider)) | channel_keyword(channel),
    }
}

/// A kernel event class by name (`"Process"`, `"TcpIp"`, `"SysConfig"`) or GUID.
pub fn kernel_class(class: &str) -> Result<Guid, CatalogError> {
    if let Ok(g) = class.parse::<Guid>() {
        return Ok(g);
    }
    tables()
        .kernel
        .get(&class.to_ascii_lowercase())
        .copied()
        .ok_or_else(|| CatalogError::UnknownKernelClass(class.to_string()))
}

/// The layout of a kernel event: the given version, or the newest the
/// built-in layouts have (what a Windows 10 kernel logs).
pub fn kernel_layout(class: Guid, opcode: u8, version: Option<u8>) -> Result<KernelLayout, CatalogError> {
    let events = &BuiltIn::get().events;
    let found = match version {
        Some(v) => events.get(&SchemaKey::Classic { class, opcode, version: v }).map(|s| (v, s)),
        None => (0..=255u8)
            .rev()
            .find_map(|v| events.get(&SchemaKey::Classic { class, opcode, version: v }).map(|s| (v, s))),
    };
    let (version, schema) =
        found.ok_or_else(|| CatalogError::UnknownKernelEvent { class: class.to_string(), opcode, version })?;
    let group = nettrail_etl::kernel::GROUPS.iter().find(|(_, _, g)| *g == class).map(|(n, _, _)| *n);
    Ok(KernelLayout { class, group, opcode, version, schema: schema.clone() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_by_name_alias_and_guid() {
        let tcpip = Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a");
        assert_eq!(provider_guid("Microsoft-Windows-TCPIP"), Ok(tcpip));
        assert_eq!(provider_guid("tcpip"), Ok(tcpip));
        assert_eq!(provider_guid("{2f07e2ee-15db-40f1-90ef-9d7ba282188a}"), Ok(tcpip));
        assert!(matches!(provider_guid("Nope"), Err(CatalogError::UnknownProvider(_))));
    }

    #[test]
    fn stated_descriptors_and_defaults() {
        // Kernel-Network states its descriptor; the channel adds bit 63.
        let d = event_layout("Kernel-Network", 10, 0).unwrap().descriptor;
        assert_eq!((d.task, d.opcode, d.level, d.channel, d.keywords), (10, 10, 4, 16, 0x8000_0000_0000_0010));
        // WebIO's layouts state none: level 4, channel 16 and its bit.
        let d = event_layout("WebIO", 17, 0).unwrap().descriptor;
        assert_eq!((d.level, d.channel, d.keywords), (4, 16, 0x8000_0000_0000_0000));
        let d = event_layout("Winsock-AFD", 1000, 0).unwrap().descriptor;
        assert_eq!(d.keywords, 0x8000_0000_0000_0004);
        assert!(matches!(event_layout("TCPIP", 65000, 0), Err(CatalogError::UnknownEvent { .. })));
    }

    #[test]
    fn office_layouts_are_the_synthesizers_own() {
        // Known to the synthesizer by name, never to the reader's built-ins.
        assert!(synth_only().errors.is_empty(), "{:?}", synth_only().errors);
        let guid = provider_guid("Microsoft-Office-ThreadPool").unwrap();
        assert_eq!(guid, Guid::parse_const("a019725f-cff1-47e8-8c9e-8fe2635b6388"));
        assert!(!BuiltIn::get().providers.contains_key(&guid));
        let l = event_layout("Microsoft-Office-ThreadPool", 32, 0).unwrap();
        let names: Vec<&str> = l.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["worker", "workerType", "callback"]);
        assert_eq!(event_layout("OfficeDispatchQueue", 56, 0).unwrap().descriptor.level, 4);
        assert_eq!(event_layout("Microsoft-Office-Events", 40, 0).unwrap().schema.fields.len(), 0);
    }

    #[test]
    fn kernel_layouts_newest_by_default() {
        let process = kernel_class("Process").unwrap();
        let l = kernel_layout(process, 3, None).unwrap();
        assert_eq!((l.group, l.version), (Some(3), 4));
        assert_eq!(kernel_layout(kernel_class("Thread").unwrap(), 3, None).unwrap().version, 3);
        let sysconfig = kernel_layout(kernel_class("SysConfig").unwrap(), 35, None).unwrap();
        assert_eq!(sysconfig.group, None);
    }
}
