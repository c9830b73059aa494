//! What the synthesizer knows of each event: the layout (fields, in wire
//! order) and EVENT_DESCRIPTOR that one Windows build's manifest declares,
//! from the synthesizer's own per-build manifests (`manifests/<build>/`,
//! written by `cargo xtask gen-layouts` from the manifests real builds
//! register), never from the decoder's built-in layouts, so that the two
//! can disagree. A build writes from the newest build at or below it that
//! has manifests (Windows 10 22H2, 19045, writes from 21H1's, 19043: one
//! code base); an event is logged in the newest version its build declares
//! unless a scenario names one. Descriptors are what the manifest states,
//! completed with per-provider defaults: level 4, the provider's keyword
//! from the NetBlame capture profile, and the first channel (16) with its
//! keyword bit, which is how the real traces' manifest events arrive.
//!
//! Providers whose manifests are not public (Office's) have layouts of the
//! synthesizer's own (`layouts/`), embedded as metadata in every trace.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use nettrail_decode::builtin::BuiltIn;
use nettrail_decode::sources::manifest;
use nettrail_decode::{EventSchema, ProviderInfo, SchemaKey, Source};
use nettrail_etl::Guid;
use nettrail_etl::write::Descriptor;

include!(concat!(env!("OUT_DIR"), "/manifest_files.rs"));

/// A provider or event a build's manifests do not have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CatalogError {
    UnknownProvider(String),
    UnknownEvent {
        provider: String,
        id: u16,
        version: Option<u8>,
        build: u32,
    },
    UnknownKernelClass(String),
    UnknownKernelEvent {
        class: String,
        opcode: u8,
        version: Option<u8>,
    },
    /// A manifest of the synthesizer's own does not read.
    BadManifest {
        build: u32,
        provider: String,
        why: String,
    },
}

impl fmt::Display for CatalogError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogError::UnknownProvider(p) => write!(f, "no manifest or layouts for provider {p:?}"),
            CatalogError::UnknownEvent { provider, id, version: Some(v), build } => {
                write!(f, "build {build}'s manifest of {provider} has no event {id} version {v}")
            }
            CatalogError::UnknownEvent { provider, id, version: None, build } => {
                write!(f, "build {build}'s manifest of {provider} has no event {id}")
            }
            CatalogError::UnknownKernelClass(c) => write!(f, "no kernel event class {c:?}"),
            CatalogError::UnknownKernelEvent { class, opcode, version: Some(v) } => {
                write!(f, "kernel class {class} has no layout for opcode {opcode} version {v}")
            }
            CatalogError::UnknownKernelEvent { class, opcode, version: None } => {
                write!(f, "kernel class {class} has no layout for opcode {opcode}")
            }
            CatalogError::BadManifest { build, provider, why } => {
                write!(f, "manifests/{build}/{provider}.man does not read: {why}")
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

/// The builds the synthesizer has manifests of, ascending.
pub fn manifest_builds() -> Vec<u32> {
    let mut builds: Vec<u32> = MANIFEST_FILES.iter().map(|(b, _, _)| *b).collect();
    builds.dedup();
    builds
}

/// The build whose manifests a trace claiming `build` is written from: the
/// newest at or below it, else the oldest there is.
pub fn facts_build(build: u32) -> u32 {
    let builds = manifest_builds();
    builds.iter().rev().find(|b| **b <= build).or(builds.first()).copied().unwrap_or(build)
}

/// The text of the manifest a build's events of `provider` are written from
/// (for `nettrail dump --manifest` and the tests that decode with it).
pub fn manifest_text(build: u32, provider: &str) -> Option<&'static str> {
    let guid = provider_guid(provider).ok()?;
    let facts = facts_build(build);
    MANIFEST_FILES.iter().find(|(b, p, _)| *b == facts && provider_guid(p).ok() == Some(guid)).map(|(_, _, t)| *t)
}

/// One build's manifests, parsed.
#[derive(Debug, Default)]
struct Facts {
    events: HashMap<SchemaKey, Arc<EventSchema>>,
    providers: HashMap<Guid, Arc<ProviderInfo>>,
    /// The newest version of each event id.
    latest: HashMap<(Guid, u16), u8>,
}

fn facts(build: u32) -> Result<&'static Facts, CatalogError> {
    static FACTS: OnceLock<HashMap<u32, Result<Facts, CatalogError>>> = OnceLock::new();
    let all = FACTS.get_or_init(|| {
        let mut all: HashMap<u32, Result<Facts, CatalogError>> = HashMap::new();
        for &(b, provider, text) in MANIFEST_FILES {
            let entry = all.entry(b).or_insert_with(|| Ok(Facts::default()));
            let Ok(facts) = entry else { continue };
            match manifest::parse(text, Source::Manifest) {
                Ok(files) => {
                    for file in files {
                        facts.providers.insert(file.provider.guid, file.provider.clone());
                        for (key, schema) in file.events {
                            if let SchemaKey::Manifest { provider, id, version } = key {
                                let latest = facts.latest.entry((provider, id)).or_insert(version);
                                *latest = (*latest).max(version);
                            }
                            facts.events.insert(key, schema);
                        }
                    }
                }
                Err(e) => {
                    *entry =
                        Err(CatalogError::BadManifest { build: b, provider: provider.to_string(), why: e.to_string() })
                }
            }
        }
        all
    });
    match all.get(&facts_build(build)) {
        Some(Ok(f)) => Ok(f),
        Some(Err(e)) => Err(e.clone()),
        None => Err(CatalogError::UnknownProvider(format!("(no manifests for build {build})"))),
    }
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

fn tables() -> &'static Tables {
    static TABLES: OnceLock<Tables> = OnceLock::new();
    TABLES.get_or_init(|| {
        let mut t = Tables::default();
        for &(_, _, text) in MANIFEST_FILES {
            for file in manifest::parse(text, Source::Manifest).into_iter().flatten() {
                t.providers.insert(file.provider.name.to_ascii_lowercase(), file.provider.guid);
            }
        }
        for (key, schema) in BuiltIn::get().events.iter().chain(&synth_only().events) {
            let name = schema.provider.name.to_ascii_lowercase();
            match *key {
                SchemaKey::Manifest { provider, .. } if synth_only().providers.contains_key(&provider) => {
                    t.providers.insert(name, provider);
                }
                SchemaKey::Classic { class, .. } => {
                    t.kernel.insert(name, class);
                }
                SchemaKey::Manifest { .. } => {}
            }
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

/// Keywords of events whose manifest states none: the keyword the NetBlame
/// capture profile enables the provider with where it names one.
fn default_keywords(provider: &Guid) -> u64 {
    const WINSOCK_AFD: Guid = Guid::parse_const("e53c6823-7bb8-44bb-90dc-3f86090d48a6");
    if *provider == WINSOCK_AFD { 0x4 } else { 0 }
}

/// The layout and descriptor of a manifest event as Windows `build` logs
/// it: `version`, or the newest version the build declares.
pub fn event_layout(build: u32, provider: &str, id: u16, version: Option<u8>) -> Result<EventLayout, CatalogError> {
    let guid = provider_guid(provider)?;
    if let Some(info) = synth_only().providers.get(&guid) {
        let version = version.unwrap_or(0);
        let schema =
            synth_only().events.get(&SchemaKey::Manifest { provider: guid, id, version }).cloned().ok_or_else(
                || CatalogError::UnknownEvent { provider: info.name.clone(), id, version: Some(version), build },
            )?;
        let descriptor = descriptor(guid, id, version, schema.declared);
        return Ok(EventLayout { provider: info.clone(), id, version, schema, descriptor });
    }
    let facts = facts(build)?;
    let info = facts.providers.get(&guid).ok_or_else(|| CatalogError::UnknownProvider(provider.to_string()))?;
    let unknown = || CatalogError::UnknownEvent { provider: info.name.clone(), id, version, build: facts_build(build) };
    let version = match version {
        Some(v) => v,
        None => *facts.latest.get(&(guid, id)).ok_or_else(unknown)?,
    };
    let schema = facts.events.get(&SchemaKey::Manifest { provider: guid, id, version }).cloned().ok_or_else(unknown)?;
    let descriptor = descriptor(guid, id, version, schema.declared);
    Ok(EventLayout { provider: info.clone(), id, version, schema, descriptor })
}

/// The descriptor an event is logged with: what its manifest states,
/// completed with the provider's defaults.
fn descriptor(provider: Guid, id: u16, version: u8, declared: nettrail_decode::Declared) -> Descriptor {
    let channel = declared.channel.unwrap_or(16);
    Descriptor {
        id,
        version,
        channel,
        level: declared.level.unwrap_or(4),
        opcode: declared.opcode.unwrap_or(0),
        task: declared.task.unwrap_or(0),
        keywords: declared.keywords.unwrap_or_else(|| default_keywords(&provider)) | channel_keyword(channel),
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
/// built-in layouts have (what a Windows 10 kernel logs). Classic kernel
/// events have no manifest: their layouts are the MOF classes nettrail ships.
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

    const WIN10: u32 = 19045;

    #[test]
    fn providers_by_name_alias_and_guid() {
        let tcpip = Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a");
        assert_eq!(provider_guid("Microsoft-Windows-TCPIP"), Ok(tcpip));
        assert_eq!(provider_guid("tcpip"), Ok(tcpip));
        assert_eq!(provider_guid("{2f07e2ee-15db-40f1-90ef-9d7ba282188a}"), Ok(tcpip));
        assert!(matches!(provider_guid("Nope"), Err(CatalogError::UnknownProvider(_))));
    }

    #[test]
    fn every_manifest_reads_and_builds_map_to_the_nearest() {
        assert_eq!(manifest_builds(), [15063, 19043, 22621]);
        for build in manifest_builds() {
            assert!(facts(build).is_ok(), "{:?}", facts(build).err());
        }
        assert_eq!((facts_build(19045), facts_build(22631), facts_build(10586)), (19043, 22621, 15063));
        assert!(manifest_text(19045, "TCPIP").unwrap().contains("Windows 10 21H1 (19043)"));
    }

    #[test]
    fn events_take_their_builds_newest_version() {
        // TcpConnectTcbComplete gained ProcessStartKey (v1) in 2004; 1703 logs v0.
        let v = |build| event_layout(build, "TCPIP", 1033, None).unwrap();
        assert_eq!((v(15063).version, v(WIN10).version, v(22621).version), (0, 1, 1));
        assert_eq!(v(WIN10).schema.fields.last().map(|f| f.name.as_str()), Some("ProcessStartKey"));
        // DNS-Client 3009 is v0 in Windows 10 and v2 in Windows 11 22H2.
        assert_eq!(event_layout(22621, "DNS-Client", 3009, None).unwrap().version, 2);
        assert_eq!(event_layout(WIN10, "DNS-Client", 3009, None).unwrap().version, 0);
        assert!(matches!(
            event_layout(WIN10, "TCPIP", 1033, Some(9)),
            Err(CatalogError::UnknownEvent { build: 19043, .. })
        ));
    }

    #[test]
    fn stated_descriptors_and_defaults() {
        // Kernel-Network states its descriptor; the channel adds bit 63.
        let d = event_layout(WIN10, "Kernel-Network", 10, None).unwrap().descriptor;
        assert_eq!((d.task, d.opcode, d.level, d.channel, d.keywords), (10, 10, 4, 16, 0x8000_0000_0000_0010));
        // WebIO's RequestCreate: task and opcode from the manifest, no channel: 16 and its bit.
        let d = event_layout(WIN10, "WebIO", 17, None).unwrap().descriptor;
        assert_eq!((d.level, d.channel, d.keywords >> 63), (4, 16, 1));
        assert!(matches!(event_layout(WIN10, "TCPIP", 65000, None), Err(CatalogError::UnknownEvent { .. })));
    }

    #[test]
    fn office_layouts_are_the_synthesizers_own() {
        // Known to the synthesizer by name, never to the reader's built-ins.
        assert!(synth_only().errors.is_empty(), "{:?}", synth_only().errors);
        let guid = provider_guid("Microsoft-Office-ThreadPool").unwrap();
        assert_eq!(guid, Guid::parse_const("a019725f-cff1-47e8-8c9e-8fe2635b6388"));
        assert!(!BuiltIn::get().providers.contains_key(&guid));
        let l = event_layout(WIN10, "Microsoft-Office-ThreadPool", 32, Some(0)).unwrap();
        let names: Vec<&str> = l.schema.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["worker", "workerType", "callback"]);
        assert_eq!(event_layout(WIN10, "OfficeDispatchQueue", 56, None).unwrap().descriptor.level, 4);
        assert_eq!(event_layout(WIN10, "Microsoft-Office-Events", 40, None).unwrap().schema.fields.len(), 0);
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
