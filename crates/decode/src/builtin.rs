//! The built-in layouts: network providers (`schemas/providers/`) and classic
//! kernel event classes (`schemas/kernel/`).
//!
//! Decoding reads a provider's files when a trace first needs that provider
//! ([`BuiltIn::of`]), and of those only the events it looks up: all of them
//! take 1.8 MB of text and ~18 ms to parse, more than `nettrail info` takes
//! on a small trace, which needs a few events of a few providers.
//! [`BuiltIn::get`] parses every file (listing them, tests).

use std::sync::{Arc, OnceLock};

use nettrail_etl::Guid;

use crate::fasthash::FastMap;
use crate::layouts::{self, Builds, LayoutError, Outline};
use crate::schema::{EventSchema, ProviderInfo, SchemaKey, Source};

include!(concat!(env!("OUT_DIR"), "/layout_files.rs"));

/// Every built-in schema, by key, and the providers by GUID.
#[derive(Debug, Default)]
pub struct BuiltIn {
    /// For keys whose layout differs between Windows builds, the newest
    /// build's (what a trace of unknown build decodes with).
    pub events: FastMap<SchemaKey, Arc<EventSchema>>,
    /// Keys whose layout differs between Windows builds: each layout with its builds.
    pub by_build: FastMap<SchemaKey, Vec<(Builds, Arc<EventSchema>)>>,
    pub providers: FastMap<Guid, Arc<ProviderInfo>>,
    /// Where each layout came from (`builds …: file`), by key and builds.
    pub origins: FastMap<(SchemaKey, Option<Builds>), String>,
    /// Files that did not parse (a test keeps this empty).
    pub errors: Vec<(String, LayoutError)>,
}

/// The files of each provider or event class, found by the GUID each
/// declares, and each group's layouts once outlined.
struct Index {
    files: FastMap<Guid, usize>,
    /// The files of each entry of `files` (a provider's layouts may span files).
    groups: Vec<Vec<(&'static str, &'static str)>>,
    outlined: Vec<OnceLock<ProviderLayouts>>,
}

impl Index {
    fn get() -> &'static Index {
        static INDEX: OnceLock<Index> = OnceLock::new();
        INDEX.get_or_init(|| {
            let mut files: FastMap<Guid, usize> = FastMap::default();
            let mut groups: Vec<Vec<(&str, &str)>> = Vec::new();
            for (&(path, text), guid) in LAYOUT_FILES.iter().zip(DECLARED_GUIDS) {
                // A file that names no provider still gets parsed (by `get`), to report its error.
                let Ok(guid) = guid.parse::<Guid>() else { continue };
                let group = *files.entry(guid).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[group].push((path, text));
            }
            let outlined = groups.iter().map(|_| OnceLock::new()).collect();
            Index { files, groups, outlined }
        })
    }
}

/// One provider's (or kernel event class's) built-in layouts, read as they
/// are needed: its files are outlined when a trace first has the provider,
/// and an event's fields are parsed when the event is first looked up.
/// Answers as [`BuiltIn`] does for the same files.
pub struct ProviderLayouts {
    provider: Option<Arc<ProviderInfo>>,
    outlines: Vec<Outline<'static>>,
    /// The statements declaring each key: layouts for every build first,
    /// then those for some builds by ascending builds (as
    /// [`BuiltIn::for_build`] looks them up).
    keys: FastMap<SchemaKey, Vec<Declaration>>,
    /// The versions of each manifest event, ascending.
    versions: FastMap<(Guid, u16), Vec<u8>>,
    /// Each outline's events' layouts, parsed on first use.
    parsed: Vec<Vec<OnceLock<Vec<Arc<EventSchema>>>>>,
}

/// Where a key's layout is declared: the file, its event statement, the
/// key's place among the statement's keys.
#[derive(Clone, Copy, Debug)]
struct Declaration {
    builds: Option<Builds>,
    file: usize,
    event: usize,
    position: usize,
}

impl ProviderLayouts {
    /// Outlines the files; a file that does not parse is left out (a test
    /// parses every built-in file).
    fn outline(files: &[(&'static str, &'static str)]) -> ProviderLayouts {
        let outlines: Vec<Outline<'static>> = files
            .iter()
            .filter_map(|&(path, text)| {
                let source = if path.starts_with("kernel") { Source::Kernel } else { Source::BuiltIn };
                Outline::parse(text, source).ok()
            })
            .collect();
        let mut keys: FastMap<SchemaKey, Vec<Declaration>> = FastMap::default();
        for (file, outline) in outlines.iter().enumerate() {
            for event in 0..outline.event_count() {
                let (declared, builds) = outline.event_keys(event);
                for (position, key) in declared.enumerate() {
                    keys.entry(key).or_default().push(Declaration { builds, file, event, position });
                }
            }
        }
        let mut versions: FastMap<(Guid, u16), Vec<u8>> = FastMap::default();
        for (key, declarations) in &mut keys {
            declarations.sort_by_key(|d| d.builds.map(|b| (b.from, b.to.is_none())));
            if let SchemaKey::Manifest { provider, id, version } = *key {
                versions.entry((provider, id)).or_default().push(version);
            }
        }
        for v in versions.values_mut() {
            v.sort_unstable();
        }
        let parsed = outlines.iter().map(|o| (0..o.event_count()).map(|_| OnceLock::new()).collect()).collect();
        let provider = outlines.last().map(|o| o.provider().clone());
        ProviderLayouts { provider, outlines, keys, versions, parsed }
    }

    /// The provider's names.
    pub fn provider(&self) -> Option<&Arc<ProviderInfo>> {
        self.provider.as_ref()
    }

    /// Which statement holds the layout of `key` for a trace of `build`
    /// (none: the newest build's).
    fn declaration(&self, key: &SchemaKey, build: Option<u32>) -> Option<&Declaration> {
        let declared = self.keys.get(key)?;
        match build {
            Some(build) if declared.iter().any(|d| d.builds.is_some()) => {
                declared.iter().find(|d| d.builds.is_some_and(|b| b.contains(build)))
            }
            _ => declared.last(),
        }
    }

    /// The layout of `key` for a trace of `build` (as [`BuiltIn::for_build`]
    /// finds it), or with no build known the newest build's (as
    /// [`BuiltIn::events`] holds it).
    pub fn layout(&self, key: &SchemaKey, build: Option<u32>) -> Option<&Arc<EventSchema>> {
        let d = self.declaration(key, build)?;
        let layouts = self.parsed.get(d.file)?.get(d.event)?;
        layouts.get_or_init(|| self.outlines[d.file].layouts(d.event).unwrap_or_default()).get(d.position)
    }

    /// The versions of a manifest event built in for a trace of `build`
    /// (none: any build), ascending.
    pub fn versions(&self, provider: Guid, id: u16, build: Option<u32>) -> impl Iterator<Item = u8> + '_ {
        let known = self.versions.get(&(provider, id)).map_or(&[][..], Vec::as_slice);
        known
            .iter()
            .copied()
            .filter(move |&version| self.declaration(&SchemaKey::Manifest { provider, id, version }, build).is_some())
    }
}

impl std::fmt::Debug for ProviderLayouts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderLayouts").field("outlines", &self.outlines).finish()
    }
}

impl BuiltIn {
    /// Every built-in layout, parsed on first use.
    pub fn get() -> &'static BuiltIn {
        static BUILT_IN: OnceLock<BuiltIn> = OnceLock::new();
        BUILT_IN.get_or_init(|| BuiltIn::from_files(LAYOUT_FILES))
    }

    /// The built-in layouts of one provider or kernel event class, read
    /// as they are needed; `None` when none is built in.
    pub fn of(guid: &Guid) -> Option<&'static ProviderLayouts> {
        let index = Index::get();
        let &group = index.files.get(guid)?;
        Some(index.outlined[group].get_or_init(|| ProviderLayouts::outline(&index.groups[group])))
    }

    /// Whether layouts of this provider or event class are built in (without parsing them).
    pub fn knows(guid: &Guid) -> bool {
        Index::get().files.contains_key(guid)
    }

    /// Layout files given as (path, text): files under
    /// `kernel/` describe kernel event classes, the others providers.
    pub fn from_files(files: &[(&str, &str)]) -> BuiltIn {
        let mut all = BuiltIn::default();
        for (path, text) in files {
            let source = if path.starts_with("kernel") { Source::Kernel } else { Source::BuiltIn };
            match layouts::parse(text, source) {
                Ok(file) => {
                    all.providers.insert(file.provider.guid, file.provider.clone());
                    all.events.extend(file.events);
                    all.origins.extend(file.origins.into_iter().map(|(k, b, o)| ((k, b), o)));
                    for (key, builds, schema) in file.by_build {
                        all.by_build.entry(key).or_default().push((builds, schema));
                    }
                }
                Err(e) => all.errors.push(((*path).to_string(), e)),
            }
        }
        for (key, layouts) in &mut all.by_build {
            layouts.sort_by_key(|(b, _)| (b.from, b.to.is_none()));
            if let Some((_, newest)) = layouts.last() {
                all.events.insert(*key, newest.clone());
            }
        }
        all
    }

    /// The layout of `key` for a trace of Windows `build`: the one for its
    /// builds where layouts differ, else the only one.
    pub fn for_build(&self, key: &SchemaKey, build: u32) -> Option<&Arc<EventSchema>> {
        match self.by_build.get(key) {
            Some(layouts) => layouts.iter().find(|(b, _)| b.contains(build)).map(|(_, s)| s),
            None => self.events.get(key),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::fasthash::FastMap;
    use crate::schema::{EventSchema, ProviderInfo, SchemaKey};
    use nettrail_etl::Guid;

    #[test]
    fn every_built_in_file_parses() {
        let b = super::BuiltIn::get();
        assert!(b.errors.is_empty(), "{:?}", b.errors);
        assert!(!super::LAYOUT_FILES.is_empty());
    }

    #[test]
    fn a_provider_read_lazily_has_what_all_files_parsed_together_have() {
        let all = super::BuiltIn::get();
        let shown = |s: Option<&std::sync::Arc<EventSchema>>| {
            s.map(|s| format!("{:?} {:?} {:?} {:?} {:?} {:?}", s.name, s.task, s.opcode, s.message, s.fields, s.source))
        };
        // Every build a layout's range starts or ends at, either side of it, and none.
        let mut builds: Vec<Option<u32>> = vec![None];
        for layouts in all.by_build.values() {
            for (b, _) in layouts {
                for edge in [b.from, b.to].into_iter().flatten() {
                    builds.extend([Some(edge.saturating_sub(1)), Some(edge), Some(edge + 1)]);
                }
            }
        }
        builds.sort();
        builds.dedup();
        // What the whole-file parse says: a key's layout for a build, and
        // the versions of each event that have one.
        let whole = |key: &SchemaKey, build: Option<u32>| match build {
            Some(build) => all.for_build(key, build),
            None => all.events.get(key),
        };
        let mut versions: FastMap<(Guid, u16), Vec<u8>> = FastMap::default();
        for key in all.events.keys() {
            if let SchemaKey::Manifest { provider, id, version } = *key {
                versions.entry((provider, id)).or_default().push(version);
            }
        }
        versions.values_mut().for_each(|v| v.sort_unstable());
        let mut compared = 0;
        for (guid, provider) in &all.providers {
            assert!(super::BuiltIn::knows(guid));
            let lazy = super::BuiltIn::of(guid).unwrap();
            let names = |p: &ProviderInfo| {
                let mut channels: Vec<_> = p.channels.iter().collect();
                let mut levels: Vec<_> = p.levels.iter().collect();
                channels.sort();
                levels.sort();
                format!("{} {} {:?} {channels:?} {levels:?}", p.guid, p.name, p.keywords)
            };
            assert_eq!(names(lazy.provider().unwrap()), names(provider));
            let keys = all.events.keys().chain(all.by_build.keys()).filter(|k| k.guid() == *guid);
            for key in keys {
                for &build in &builds {
                    assert_eq!(shown(lazy.layout(key, build)), shown(whole(key, build)), "{key:?} {build:?}");
                    if let SchemaKey::Manifest { provider, id, .. } = *key {
                        let lazy: Vec<u8> = lazy.versions(provider, id, build).collect();
                        let expected: Vec<u8> = versions[&(provider, id)]
                            .iter()
                            .copied()
                            .filter(|&version| whole(&SchemaKey::Manifest { provider, id, version }, build).is_some())
                            .collect();
                        assert_eq!(lazy, expected, "{key:?} {build:?}");
                    }
                    compared += 1;
                }
            }
        }
        assert!(compared > 10_000, "{compared} comparisons");
        assert!(super::BuiltIn::of(&nettrail_etl::Guid::default()).is_none());
    }
}
