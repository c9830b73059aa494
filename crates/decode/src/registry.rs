//! Finds the schema of an event, trying the sources in order: TraceLogging
//! metadata in the event, metadata embedded in the trace (TRACE_EVENT_INFO),
//! EventSource manifests sent in the trace, manifests the user gave,
//! built-in network provider layouts, built-in kernel layouts. Then decodes
//! the payload with it.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use nettrail_etl::extended::{ExtType, provider_traits_name};
use nettrail_etl::kernel::LEGACY_IMAGE_LOAD;
use nettrail_etl::record::event_header_flags;
use nettrail_etl::{Guid, HeaderKind, Record, well_known};

use crate::builtin::BuiltIn;
use crate::fasthash::FastMap;
use crate::intype::InType;
use crate::payload;
use crate::schema::{EventSchema, Field, ProviderInfo, SchemaKey, Source};
use crate::sources::tracelogging;
use crate::value::Value;

/// Why an event was not decoded.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Undecoded {
    /// No source knows this provider or event class.
    UnknownProvider,
    /// The provider is known, but not this event (id or opcode, and version).
    UnknownEvent,
    /// The payload does not fit the schema.
    PayloadMismatch(payload::DecodeError),
    /// A WPP message: decoding needs the component's TMF format data.
    WppMessage,
    /// The event's TraceLogging metadata cannot be read.
    BadTraceLoggingMetadata(&'static str),
    /// Decoding was not asked for (raw output).
    NotDecoded,
}

impl Undecoded {
    /// A short, stable key for counting (`info` groups by it).
    pub fn reason(&self) -> &'static str {
        match self {
            Undecoded::UnknownProvider => "no schema for the provider",
            Undecoded::UnknownEvent => "no schema for the event",
            Undecoded::PayloadMismatch(_) => "payload does not match the schema",
            Undecoded::WppMessage => "WPP message without TMF",
            Undecoded::BadTraceLoggingMetadata(_) => "bad TraceLogging metadata",
            Undecoded::NotDecoded => "not decoded (raw)",
        }
    }

    /// What [`Display`](fmt::Display) shows, borrowed where there is no detail.
    pub fn text(&self) -> std::borrow::Cow<'static, str> {
        match self {
            Undecoded::PayloadMismatch(_) | Undecoded::BadTraceLoggingMetadata(_) => self.to_string().into(),
            other => other.reason().into(),
        }
    }
}

impl fmt::Display for Undecoded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Undecoded::PayloadMismatch(e) => write!(f, "payload does not match the schema: {e}"),
            Undecoded::BadTraceLoggingMetadata(why) => write!(f, "bad TraceLogging metadata: {why}"),
            other => f.write_str(other.reason()),
        }
    }
}

/// One source's schemas: events by key, providers by GUID.
#[derive(Debug, Default)]
pub struct SchemaSet {
    pub events: HashMap<SchemaKey, Arc<EventSchema>>,
    pub providers: HashMap<Guid, Arc<ProviderInfo>>,
}

impl SchemaSet {
    pub fn insert_file(&mut self, file: crate::layouts::LayoutFile) {
        self.providers.insert(file.provider.guid, file.provider.clone());
        self.events.extend(file.events);
    }
}

/// Every schema source for one trace, and the caches that make lookups cheap.
#[derive(Debug, Default)]
pub struct Schemas {
    /// TRACE_EVENT_INFO blobs embedded in the trace.
    pub embedded: SchemaSet,
    /// EventSource manifests found in the trace.
    pub event_source: SchemaSet,
    /// Manifests the user supplied.
    pub manifests: SchemaSet,
    /// The Windows build the trace was recorded on: where built-in layouts
    /// differ between builds, it picks one (none: the newest build's).
    build: Option<u32>,
    /// TraceLogging schemas by (provider, metadata bytes).
    tracelogging: RwLock<TraceLoggingSchemas>,
    /// Every key the sources know, resolved by source priority: built on the
    /// first lookup, after all sources were added.
    resolved: std::sync::OnceLock<Resolved>,
}

/// TraceLogging schemas, or why their metadata could not be read, by
/// (provider, metadata bytes).
type TraceLoggingSchemas = HashMap<(Guid, Box<[u8]>), Result<Arc<EventSchema>, &'static str>>;

/// The merged view of all sources.
#[derive(Debug, Default)]
struct Resolved {
    events: FastMap<SchemaKey, Arc<EventSchema>>,
    /// Provider or event-class GUIDs some source knows.
    providers: FastMap<Guid, Arc<ProviderInfo>>,
    /// The versions known of each manifest event, ascending.
    versions: FastMap<(Guid, u16), Vec<u8>>,
}

/// Recent schema lookups of one worker, one slot per hash of the key (a
/// trace mixes dozens of kinds of event; a lookup that misses here hashes
/// the key in several tables). Only records whose schema depends on nothing
/// but their key are cached (not TraceLogging events, whose metadata travels
/// with them; not string-only events).
#[derive(Debug, Default)]
pub struct LookupCache {
    entries: [Option<(SchemaKey, Cached)>; 32],
    /// The last lookup that could not be cached.
    uncached: Option<Cached>,
}

/// What looking a schema up gave.
type Lookup = Result<Arc<EventSchema>, Undecoded>;

/// A lookup, and how to check payloads against its layout without decoding
/// them and to decode a flat layout by offsets, for 4- and 8-byte pointers
/// (worked out when first needed).
#[derive(Debug)]
struct Cached {
    lookup: Lookup,
    checks: [std::cell::OnceCell<Option<payload::SizeCheck>>; 2],
    flat: [std::cell::OnceCell<Option<payload::FlatLayout>>; 2],
}

impl Cached {
    fn new(lookup: Lookup) -> Cached {
        Cached { lookup, checks: Default::default(), flat: Default::default() }
    }
}

impl LookupCache {
    const UNCACHED: usize = usize::MAX;

    fn key(record: &Record<'_>) -> Option<SchemaKey> {
        if !record.extended.is_empty() || record.flags & event_header_flags::STRING_ONLY != 0 {
            return None;
        }
        Schemas::key_of(record)
    }

    /// The key's two slots: from a multiplicative hash of its fields. Two,
    /// so that two kinds of event a trace alternates between do not keep
    /// pushing each other out (the runtime's method events and the
    /// kernel's profile samples shared a slot).
    fn slots(key: &SchemaKey) -> [usize; 2] {
        let (guid, event, version) = match *key {
            SchemaKey::Manifest { provider, id, version } => (provider, u64::from(id), version),
            SchemaKey::Classic { class, opcode, version } => (class, 0x1_0000 | u64::from(opcode), version),
        };
        let mixed = u64::from(guid.data1)
            ^ u64::from(guid.data2) << 32
            ^ u64::from(guid.data3) << 48
            ^ u64::from_le_bytes(guid.data4).rotate_left(23)
            ^ event << 8
            ^ u64::from(version);
        let hash = mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        [(hash >> 59) as usize, (hash >> 54) as usize & 31]
    }

    fn position(&self, key: &SchemaKey) -> Option<usize> {
        LookupCache::slots(key).into_iter().find(|&slot| self.entries[slot].as_ref().is_some_and(|(k, _)| k == key))
    }

    /// Stores a lookup in one of its key's slots (an empty one if there is
    /// one); returns the slot.
    fn put(&mut self, key: SchemaKey, value: Lookup) -> usize {
        let [first, second] = LookupCache::slots(&key);
        let slot = if self.entries[first].is_none() { first } else { second };
        self.entries[slot] = Some((key, Cached::new(value)));
        slot
    }

    fn cached(&self, slot: usize) -> Option<&Cached> {
        match slot {
            LookupCache::UNCACHED => self.uncached.as_ref(),
            i => self.entries.get(i).and_then(|e| e.as_ref().map(|(_, v)| v)),
        }
    }

    fn result(&self, slot: usize) -> Result<&Arc<EventSchema>, &Undecoded> {
        match self.cached(slot) {
            Some(cached) => cached.lookup.as_ref(),
            // Every slot handed out was filled first.
            None => Err(&Undecoded::UnknownProvider),
        }
    }

    /// The slot's layout for `pointer_size` as a flat one, if it is. Not
    /// for a lookup that could not be cached: working the layout out for
    /// one record costs more than the field walk it saves.
    fn flat(&self, slot: usize, schema: &EventSchema, pointer_size: u8) -> Option<&payload::FlatLayout> {
        if slot == LookupCache::UNCACHED {
            return None;
        }
        let cached = self.cached(slot)?;
        let flat = &cached.flat[usize::from(pointer_size == 8)];
        flat.get_or_init(|| payload::FlatLayout::of(&schema.fields, pointer_size)).as_ref()
    }

    /// The size check of the slot's layout for `pointer_size`.
    fn size_check(&self, slot: usize, schema: &EventSchema, pointer_size: u8) -> Option<&payload::SizeCheck> {
        let cached = self.cached(slot)?;
        let check = &cached.checks[usize::from(pointer_size == 8)];
        check.get_or_init(|| payload::SizeCheck::of(&schema.fields, pointer_size)).as_ref()
    }
}

/// Whether `newer` lays out every field of `older` the same way, in the same
/// places (names may differ), and perhaps more after them.
fn extends(newer: &[Field], older: &[Field]) -> bool {
    newer.len() >= older.len()
        && newer.iter().zip(older).all(|(n, o)| {
            n.in_type == o.in_type
                && n.length == o.length
                && n.count == o.count
                && extends_exactly(&n.members, &o.members)
        })
}

fn extends_exactly(newer: &[Field], older: &[Field]) -> bool {
    newer.len() == older.len() && extends(newer, older)
}

/// EventSource's ManifestData event (id 0xFFFE): the envelope, then a chunk
/// of the provider's manifest. Every EventSource sends it; no manifest
/// describes it.
fn manifest_data(provider: Arc<ProviderInfo>) -> Arc<EventSchema> {
    let mut fields: Vec<Field> = [
        ("Format", InType::UInt8),
        ("MajorVersion", InType::UInt8),
        ("MinorVersion", InType::UInt8),
        ("Magic", InType::UInt8),
        ("TotalChunks", InType::UInt16),
        ("ChunkNumber", InType::UInt16),
        ("Data", InType::Binary),
    ]
    .into_iter()
    .map(|(name, t)| Field::new(name, t))
    .collect();
    if let Some(data) = fields.last_mut() {
        data.out_type = crate::intype::OutType::Utf8;
    }
    Arc::new(EventSchema {
        provider,
        source: Source::BuiltIn,
        name: Some("ManifestData".into()),
        task: Some("ManifestData".into()),
        opcode: None,
        message: None,
        fields,
        declared: Default::default(),
    })
}

/// An event whose EVENT_HEADER says its payload is one string (EventWriteString).
fn string_only(provider: Arc<ProviderInfo>) -> Arc<EventSchema> {
    Arc::new(EventSchema {
        provider,
        source: Source::BuiltIn,
        name: None,
        task: None,
        opcode: None,
        message: Some("%1".into()),
        fields: vec![Field::new("String", InType::UnicodeString)],
        declared: Default::default(),
    })
}

/// A manifest file that could not be read, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestFileError {
    pub path: std::path::PathBuf,
    pub message: String,
}

impl std::fmt::Display for ManifestFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

impl std::error::Error for ManifestFileError {}

impl Schemas {
    pub fn new() -> Schemas {
        Schemas::default()
    }

    /// The Windows build whose built-in layouts to use where builds differ
    /// ([`Schemas::learn`] takes it from the trace's header).
    pub fn set_build(&mut self, build: Option<u32>) {
        self.invalidate();
        self.build = build.filter(|b| *b != 0);
    }

    pub fn build(&self) -> Option<u32> {
        self.build
    }

    /// Forgets the merged table after a source changed.
    fn invalidate(&mut self) {
        self.resolved.take();
    }

    /// The merged table of the sources other than the built-in layouts:
    /// where they know the same key, the first in priority order wins. The
    /// built-in layouts come last, looked up per provider ([`BuiltIn::of`]:
    /// parsed only for providers a trace has).
    fn resolved(&self) -> &Resolved {
        self.resolved.get_or_init(|| {
            let mut r = Resolved::default();
            // Lowest priority first, so that higher ones overwrite.
            for set in [&self.manifests, &self.event_source, &self.embedded] {
                r.events.extend(set.events.iter().map(|(k, v)| (*k, v.clone())));
                r.providers.extend(set.providers.iter().map(|(k, v)| (*k, v.clone())));
            }
            for key in r.events.keys() {
                if let SchemaKey::Manifest { provider, id, version } = *key {
                    r.versions.entry((provider, id)).or_default().push(version);
                }
            }
            for versions in r.versions.values_mut() {
                versions.sort_unstable();
            }
            r
        })
    }

    /// The built-in layout of a key, for the trace's build.
    fn built_in(&self, key: &SchemaKey) -> Option<Arc<EventSchema>> {
        BuiltIn::of(&key.guid())?.layout(key, self.build).cloned()
    }

    /// The key a record is looked up by; `None` for WPP messages.
    pub fn key_of(record: &Record<'_>) -> Option<SchemaKey> {
        if let Some(hook) = record.hook {
            // The legacy image-load hook is logged in the Process group.
            let (class, opcode) = if hook == LEGACY_IMAGE_LOAD {
                (nettrail_etl::kernel::provider_of(nettrail_etl::record::KernelHook { group: 0x14, opcode: 10 })?, 10)
            } else {
                (record.provider, hook.opcode)
            };
            return Some(SchemaKey::Classic { class, opcode, version: record.version });
        }
        match record.kind {
            HeaderKind::Message => None,
            k if k.is_classic() => {
                Some(SchemaKey::Classic { class: record.provider, opcode: record.opcode, version: record.version })
            }
            _ => Some(SchemaKey::Manifest { provider: record.provider, id: record.id, version: record.version }),
        }
    }

    fn exact(&self, key: &SchemaKey) -> Option<Arc<EventSchema>> {
        self.resolved().events.get(key).cloned().or_else(|| self.built_in(key))
    }

    /// The schema for a key: exact, else, for a version no source knows, the
    /// nearest lower version where that cannot misread:
    /// - a manifest event falls back only when its known versions (two at
    ///   least) each extend the one before (the same fields, appended to), so
    ///   the event's history shows that new versions only append;
    /// - a classic kernel event always falls back (MOF classes grow at the end).
    pub fn lookup(&self, key: &SchemaKey) -> Option<Arc<EventSchema>> {
        if let Some(s) = self.exact(key) {
            return Some(s);
        }
        match *key {
            SchemaKey::Manifest { provider, id, version } => {
                // The versions every source knows of the event.
                let mut versions = self.resolved().versions.get(&(provider, id)).cloned().unwrap_or_default();
                if let Some(built_in) = BuiltIn::of(&provider) {
                    versions.extend(built_in.versions(provider, id, self.build));
                    versions.sort_unstable();
                    versions.dedup();
                }
                let lower = versions.iter().rev().find(|v| **v < version)?;
                let schemas: Vec<Arc<EventSchema>> = versions
                    .iter()
                    .filter_map(|v| self.exact(&SchemaKey::Manifest { provider, id, version: *v }))
                    .collect();
                let appended = schemas.len() >= 2 && schemas.windows(2).all(|w| extends(&w[1].fields, &w[0].fields));
                if !appended {
                    return None;
                }
                self.exact(&SchemaKey::Manifest { provider, id, version: *lower })
            }
            SchemaKey::Classic { class, opcode, version } => {
                // Versions are small numbers: trying each lower one is a few lookups.
                (0..version).rev().find_map(|v| self.exact(&SchemaKey::Classic { class, opcode, version: v }))
            }
        }
    }

    /// The provider's names, from any source.
    pub fn provider(&self, guid: &Guid) -> Option<Arc<ProviderInfo>> {
        self.resolved().providers.get(guid).cloned().or_else(|| BuiltIn::of(guid)?.provider().cloned())
    }

    fn knows_provider(&self, key: &SchemaKey) -> bool {
        let guid = key.guid();
        self.resolved().providers.contains_key(&guid) || BuiltIn::knows(&guid)
    }

    fn tracelogging_schema(&self, record: &Record<'_>, metadata: &[u8]) -> Result<Arc<EventSchema>, Undecoded> {
        let key = (record.provider, Box::<[u8]>::from(metadata));
        if let Some(found) = self.tracelogging.read().ok().and_then(|m| m.get(&key).cloned()) {
            return found.map_err(Undecoded::BadTraceLoggingMetadata);
        }
        let name = record
            .extended
            .find(ExtType::PROV_TRAITS)
            .and_then(|t| provider_traits_name(t.data))
            .map(str::to_string)
            .or_else(|| well_known::provider_name(&record.provider).map(str::to_string))
            .unwrap_or_default();
        let provider = Arc::new(ProviderInfo { guid: record.provider, name, ..ProviderInfo::default() });
        let parsed = tracelogging::parse(provider, metadata).map(Arc::new);
        if let Ok(mut m) = self.tracelogging.write() {
            m.insert(key, parsed.clone());
        }
        parsed.map_err(Undecoded::BadTraceLoggingMetadata)
    }

    /// The schema an event decodes with.
    pub fn schema_of(&self, record: &Record<'_>) -> Result<Arc<EventSchema>, Undecoded> {
        if let Some(meta) = record.extended.find(ExtType::EVENT_SCHEMA_TL) {
            return self.tracelogging_schema(record, meta.data);
        }
        let key = Schemas::key_of(record).ok_or(Undecoded::WppMessage)?;
        let provider = || {
            self.provider(&record.provider).unwrap_or_else(|| {
                Arc::new(ProviderInfo {
                    guid: record.provider,
                    name: well_known::provider_name(&record.provider).unwrap_or_default().to_string(),
                    ..ProviderInfo::default()
                })
            })
        };
        if record.kind.is_event_header() && record.flags & event_header_flags::STRING_ONLY != 0 {
            return Ok(string_only(provider()));
        }
        if record.kind.is_event_header() && record.id == EVENT_SOURCE_MANIFEST && self.lookup(&key).is_none() {
            return Ok(manifest_data(provider()));
        }
        self.lookup(&key)
            .ok_or_else(|| if self.knows_provider(&key) { Undecoded::UnknownEvent } else { Undecoded::UnknownProvider })
    }

    /// Adds a manifest the user supplied (`--manifest`); returns how many
    /// events it describes.
    pub fn add_manifest(&mut self, xml: &str) -> Result<usize, crate::sources::manifest::ManifestError> {
        let files = crate::sources::manifest::parse(xml, Source::Manifest)?;
        self.invalidate();
        let mut events = 0;
        for file in files {
            events += file.events.len();
            self.manifests.insert_file(file);
        }
        Ok(events)
    }

    /// Loads manifest files: each path a manifest, or a folder whose `*.man`
    /// and `*.xml` files are read in name order. The error names the file.
    pub fn add_manifest_files<P: AsRef<std::path::Path>>(&mut self, paths: &[P]) -> Result<usize, ManifestFileError> {
        let mut events = 0;
        for path in paths {
            let path = path.as_ref();
            let error = |message: String| ManifestFileError { path: path.to_path_buf(), message };
            let files: Vec<std::path::PathBuf> = if path.is_dir() {
                let entries = std::fs::read_dir(path).map_err(|e| error(format!("cannot read the folder: {e}")))?;
                let mut v: Vec<_> = entries
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "man" || x == "xml"))
                    .collect();
                v.sort();
                v
            } else {
                vec![path.to_path_buf()]
            };
            for file in files {
                let error = |message: String| ManifestFileError { path: file.clone(), message };
                let bytes = std::fs::read(&file).map_err(|e| error(format!("cannot read: {e}")))?;
                let text = String::from_utf8_lossy(&bytes);
                events += self.add_manifest(&text).map_err(|e| error(e.to_string()))?;
            }
        }
        Ok(events)
    }

    /// Learns the schemas a trace carries outside its events' own metadata:
    /// TRACE_EVENT_INFO that a merge embedded (KernelTraceControl MetaData
    /// events) and EventSource manifests (event 0xFFFE). The buffers are
    /// searched in parallel, a run of them at a time; what a run holds is
    /// read in file order (chunks of one manifest come from one thread, in
    /// order) before the next is searched, so a trace that repeats its
    /// metadata (every rundown) is not held in copies. Returns what could not
    /// be read.
    pub fn learn(&mut self, trace: &nettrail_etl::Trace<'_>) -> Vec<String> {
        use rayon::prelude::*;

        let mut learner = MetadataLearner::default();
        // Released run after run, so the pages go back in large steps (a
        // page fault maps the pages around it again, a step's end included).
        let mut releaser = nettrail_etl::Releaser::new(trace);
        for run in trace.buffer_runs(nettrail_etl::Trace::RUN_BYTES) {
            let found: Vec<Vec<MetadataRecord>> = run
                .par_iter()
                .map_init(Vec::new, |scratch, info| {
                    let contents = trace.contents(&info, scratch);
                    // Metadata is never a classic kernel record, and an
                    // EVENT_HEADER record only as an EventSource manifest
                    // chunk: the others are stepped over.
                    let mut records = trace.records(&info, &contents);
                    let mut found = Vec::new();
                    while let Some(Ok((_, record))) = records.next_searched(false, MetadataRecord::wanted) {
                        found.extend(MetadataRecord::of(&record));
                    }
                    found
                })
                .collect();
            releaser.done_all(run);
            learner.add_all(found.into_iter().flatten());
        }
        learner.finish(self, trace.header().build)
    }

    /// The providers and event classes that the schemas a trace carries
    /// describe (what [`Schemas::learn`] or a [`MetadataLearner`] added),
    /// and whether any of them is a classic event class (a MOF class's
    /// TRACE_EVENT_INFO).
    pub fn learned_providers(&self) -> (crate::fasthash::FastSet<Guid>, bool) {
        let mut classic = false;
        let mut providers = crate::fasthash::FastSet::default();
        for set in [&self.embedded, &self.event_source] {
            for key in set.events.keys() {
                classic |= matches!(key, SchemaKey::Classic { .. });
                providers.insert(key.guid());
            }
            // A provider named without its events changes what is said of
            // its events only if no other source knew it: "no schema for the
            // provider" becomes "for the event".
            let unknown = |guid: &&Guid| !BuiltIn::knows(guid) && !self.manifests.providers.contains_key(guid);
            providers.extend(set.providers.keys().filter(unknown).copied());
        }
        (providers, classic)
    }

    /// Decodes an event's payload into `values` (one per top-level field of
    /// the returned schema). `values` is cleared first.
    pub fn decode<'a>(&self, record: &Record<'a>, values: &mut Vec<Value<'a>>) -> Result<Arc<EventSchema>, Undecoded> {
        self.decode_cached(&mut LookupCache::default(), record, values).cloned()
    }

    /// Whether an event decodes, as [`Schemas::decode_cached`] says it, for
    /// counting (`nettrail info`): where the schema's fields have fixed sizes
    /// or are NUL-terminated strings ([`payload::decodes`]), the payload is
    /// walked without making values; else it is decoded into `values`.
    /// `values` is cleared first.
    pub fn check_cached<'c, 'a>(
        &self,
        cache: &'c mut LookupCache,
        record: &Record<'a>,
        values: &mut Vec<Value<'a>>,
    ) -> Result<&'c Arc<EventSchema>, Undecoded> {
        values.clear();
        let slot = self.lookup_cached(cache, record);
        let cache: &'c LookupCache = cache;
        let schema = cache.result(slot).map_err(Clone::clone)?;
        match cache.size_check(slot, schema, record.pointer_size) {
            Some(check) if check.decodes(record.payload) => Ok(schema),
            // Decoded to say why not, or whether.
            _ => decode_in(cache, slot, record, values),
        }
    }

    /// The slot of `cache` holding the record's schema lookup, looked up if need be.
    fn lookup_cached(&self, cache: &mut LookupCache, record: &Record<'_>) -> usize {
        match LookupCache::key(record) {
            Some(key) => match cache.position(&key) {
                Some(i) => i,
                None => cache.put(key, self.schema_of(record)),
            },
            None => {
                cache.uncached = Some(Cached::new(self.schema_of(record)));
                LookupCache::UNCACHED
            }
        }
    }

    /// [`Schemas::decode`], remembering recent lookups in `cache` (one per
    /// worker): events come in runs of a few kinds, and most lookups repeat.
    /// The schema is lent from the cache, so a hit touches nothing shared.
    pub fn decode_cached<'c, 'a>(
        &self,
        cache: &'c mut LookupCache,
        record: &Record<'a>,
        values: &mut Vec<Value<'a>>,
    ) -> Result<&'c Arc<EventSchema>, Undecoded> {
        values.clear();
        let slot = self.lookup_cached(cache, record);
        decode_in(cache, slot, record, values)
    }

    /// The record's schema from `cache` as [`Schemas::decode_cached`] finds
    /// it, without decoding the payload, and the schema's flat layout for
    /// the record's pointer size if it has one and the payload fits it (the
    /// payload then decodes, and each field can be read where it lies).
    pub fn schema_cached<'c>(
        &self,
        cache: &'c mut LookupCache,
        record: &Record<'_>,
    ) -> Result<(&'c Arc<EventSchema>, Option<&'c payload::FlatLayout>), Undecoded> {
        let slot = self.lookup_cached(cache, record);
        let cache: &'c LookupCache = cache;
        let schema = cache.result(slot).map_err(Clone::clone)?;
        let flat = cache.flat(slot, schema, record.pointer_size).filter(|flat| flat.fits(record.payload));
        Ok((schema, flat))
    }
}

/// The event id of an EventSource's manifest chunks (ManifestData).
const EVENT_SOURCE_MANIFEST: u16 = 0xFFFE;

/// A record that carries schemas for other events: TRACE_EVENT_INFO or
/// EVENT_MAP_INFO that a merge embedded (KernelTraceControl MetaData, a
/// classic event class), or a chunk of an EventSource's manifest (its
/// event 0xFFFE).
#[derive(Debug)]
pub enum MetadataRecord {
    EventInfo(Vec<u8>),
    EventMapInfo(Vec<u8>),
    ManifestChunk(Guid, Vec<u8>),
}

impl MetadataRecord {
    const CLASS: Guid = Guid::parse_const("bbccf6c1-6cd1-48c4-80ff-839482e37671");

    /// The metadata a record carries, if it is one of those.
    pub fn of(record: &Record<'_>) -> Option<MetadataRecord> {
        if record.kind.is_classic() && record.provider == Self::CLASS {
            match record.opcode {
                32 => Some(MetadataRecord::EventInfo(record.payload.to_vec())),
                33 => Some(MetadataRecord::EventMapInfo(record.payload.to_vec())),
                _ => None,
            }
        } else if record.kind.is_event_header() && record.id == EVENT_SOURCE_MANIFEST {
            Some(MetadataRecord::ManifestChunk(record.provider, record.payload.to_vec()))
        } else {
            None
        }
    }

    /// Which EVENT_HEADER records a search for metadata must read
    /// (`BufferRecords::next_searched`; classic ones other than kernel
    /// records are read anyway).
    pub fn wanted(_provider: &Guid, id: u16) -> bool {
        id == EVENT_SOURCE_MANIFEST
    }
}

/// Puts the metadata records of a trace together, in file order (a
/// manifest's chunks follow one another), into the schemas they describe.
#[derive(Debug, Default)]
pub struct MetadataLearner {
    embedded: crate::sources::event_info::EmbeddedMetadata,
    manifests: crate::sources::eventsource::EventSourceManifests,
    problems: Vec<String>,
}

impl MetadataLearner {
    /// Takes the records that follow, in file order, those taken before.
    pub fn add_all(&mut self, found: impl IntoIterator<Item = MetadataRecord>) {
        for item in found {
            let result = match item {
                MetadataRecord::EventInfo(payload) => self.embedded.add_event_info(&payload),
                MetadataRecord::EventMapInfo(payload) => self.embedded.add_event_map_info(&payload),
                MetadataRecord::ManifestChunk(provider, payload) => self.manifests.add_chunk(provider, &payload),
            };
            if let Err(e) = result {
                self.problems.push(e);
            }
        }
    }

    /// Gives `schemas` what the records described, for a trace recorded on
    /// `build`; returns what could not be read.
    pub fn finish(self, schemas: &mut Schemas, build: u32) -> Vec<String> {
        let MetadataLearner { embedded, manifests, mut problems } = self;
        schemas.invalidate();
        schemas.build = Some(build).filter(|b| *b != 0);
        schemas.embedded = embedded.finish();
        let (event_source, errors) = manifests.finish();
        schemas.event_source = event_source;
        problems.extend(errors);
        problems
    }
}

/// The record decoded with the schema in `cache`'s `slot`.
fn decode_in<'c, 'a>(
    cache: &'c LookupCache,
    slot: usize,
    record: &Record<'a>,
    values: &mut Vec<Value<'a>>,
) -> Result<&'c Arc<EventSchema>, Undecoded> {
    let schema = cache.result(slot).map_err(Clone::clone)?;
    let flat = cache.flat(slot, schema, record.pointer_size);
    if flat.and_then(|flat| flat.decode(record.payload, values)).is_none() {
        payload::decode(&schema.fields, record.payload, record.pointer_size, values)
            .map_err(Undecoded::PayloadMismatch)?;
    }
    Ok(schema)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCPIP: Guid = Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a");

    fn manifest(events: &str, templates: &str) -> String {
        format!(
            "<instrumentationManifest><instrumentation><events>\
             <provider name=\"P\" guid=\"{{7dd42a49-5329-4832-8dfd-43d979153a88}}\">\
             <events>{events}</events><templates>{templates}</templates>\
             </provider></events></instrumentation></instrumentationManifest>"
        )
    }

    fn key(id: u16, version: u8) -> SchemaKey {
        SchemaKey::Manifest { provider: Guid::parse_const("7dd42a49-5329-4832-8dfd-43d979153a88"), id, version }
    }

    #[test]
    fn kinds_that_share_a_slot_are_both_kept() {
        // The runtime's method events and the kernel's profile samples,
        // which alternate in the PerfView traces, hash to the same slot.
        let runtime = SchemaKey::Manifest {
            provider: Guid::parse_const("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4"),
            id: 10,
            version: 2,
        };
        let samples = SchemaKey::Classic {
            class: Guid::parse_const("ce1dbfb4-137e-4da6-87b0-3f59aa102cbc"),
            opcode: 46,
            version: 2,
        };
        assert_eq!(LookupCache::slots(&runtime)[0], LookupCache::slots(&samples)[0]);
        let mut cache = LookupCache::default();
        let a = cache.put(runtime, Err(Undecoded::UnknownEvent));
        let b = cache.put(samples, Err(Undecoded::UnknownProvider));
        assert_ne!(a, b);
        assert_eq!((cache.position(&runtime), cache.position(&samples)), (Some(a), Some(b)));
        assert_eq!(cache.result(a).err(), Some(&Undecoded::UnknownEvent));
        assert_eq!(cache.result(b).err(), Some(&Undecoded::UnknownProvider));
        // A third kind of the same slot takes the second's place, not the first's.
        let third = (0..u16::MAX).map(|id| key(id, 0)).find(|k| LookupCache::slots(k) == [a, b]).unwrap();
        assert_eq!(cache.put(third, Err(Undecoded::WppMessage)), b);
        assert_eq!(
            (cache.position(&runtime), cache.position(&samples), cache.position(&third)),
            (Some(a), None, Some(b))
        );
    }

    #[test]
    fn the_trace_build_picks_the_layout_where_builds_differ() {
        // IpRouteCreated (1145 v0) gained a field in Windows 11 24H2 (26100).
        let key = SchemaKey::Manifest { provider: TCPIP, id: 1145, version: 0 };
        let mut schemas = Schemas::new();
        let fields = |s: &Schemas| s.lookup(&key).map(|e| e.fields.len());
        assert_eq!(fields(&schemas), Some(19), "no build: the newest layout");
        schemas.set_build(Some(22621));
        assert_eq!(fields(&schemas), Some(18));
        schemas.set_build(Some(26100));
        assert_eq!(fields(&schemas), Some(19));
        schemas.set_build(Some(7601));
        assert_eq!(fields(&schemas), Some(18));
    }

    #[test]
    fn a_lower_version_stands_in_only_where_versions_append() {
        let t = |tid: &str, types: &[&str]| {
            let data: String =
                types.iter().enumerate().map(|(i, t)| format!("<data name=\"F{i}\" inType=\"win:{t}\"/>")).collect();
            format!("<template tid=\"{tid}\">{data}</template>")
        };
        let mut schemas = Schemas::new();
        let events = "<event value=\"1\" version=\"0\" template=\"a\"/><event value=\"1\" version=\"1\" template=\"b\"/>\
                      <event value=\"2\" version=\"0\" template=\"a\"/><event value=\"2\" version=\"1\" template=\"c\"/>\
                      <event value=\"3\" version=\"0\" template=\"a\"/>";
        let templates = [t("a", &["UInt32"]), t("b", &["UInt32", "Pointer"]), t("c", &["Pointer", "UInt32"])].concat();
        schemas.add_manifest(&manifest(events, &templates)).unwrap();
        // Event 1: v1 appends to v0, so an unknown v2 decodes as v1.
        assert_eq!(schemas.lookup(&key(1, 2)).map(|s| s.fields.len()), Some(2));
        // Event 2: v1 changed v0's first field: no stand-in.
        assert!(schemas.lookup(&key(2, 2)).is_none());
        // Event 3: one version tells nothing about how the next one differs.
        assert!(schemas.lookup(&key(3, 1)).is_none());
        // Classic kernel layouts grow at the end: v5 of Process Start decodes as v4.
        let process = Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c");
        let classic = |version| SchemaKey::Classic { class: process, opcode: 1, version };
        assert_eq!(
            schemas.lookup(&classic(9)).map(|s| s.fields.len()),
            schemas.lookup(&classic(5)).map(|s| s.fields.len())
        );
    }
}
