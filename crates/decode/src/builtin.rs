//! The built-in layouts: network providers (`schemas/providers/`) and classic
//! kernel event classes (`schemas/kernel/`).
//!
//! Decoding parses a provider's file when a trace first needs that provider
//! ([`BuiltIn::of`]): all of them take 1.8 MB of text and ~18 ms to parse,
//! more than `nettrail info` takes on a small trace, which needs a few.
//! [`BuiltIn::get`] parses every file (listing them, tests).

use std::sync::{Arc, OnceLock};

use nettrail_etl::Guid;

use crate::fasthash::FastMap;
use crate::layouts::{self, Builds, LayoutError};
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
    /// The versions of each manifest event (any build), ascending.
    versions: FastMap<(Guid, u16), Vec<u8>>,
}

/// The files of each provider or event class, found from their first
/// statement without parsing them, and each one's layouts once parsed.
struct Index {
    files: FastMap<Guid, usize>,
    /// The files of each entry of `files` (a provider's layouts may span files).
    groups: Vec<Vec<(&'static str, &'static str)>>,
    parsed: Vec<OnceLock<BuiltIn>>,
}

impl Index {
    fn get() -> &'static Index {
        static INDEX: OnceLock<Index> = OnceLock::new();
        INDEX.get_or_init(|| {
            let mut files: FastMap<Guid, usize> = FastMap::default();
            let mut groups: Vec<Vec<(&str, &str)>> = Vec::new();
            for &(path, text) in LAYOUT_FILES {
                // A file that names no provider still gets parsed (by `get`), to report its error.
                let Some(guid) = declared_guid(text) else { continue };
                let group = *files.entry(guid).or_insert_with(|| {
                    groups.push(Vec::new());
                    groups.len() - 1
                });
                groups[group].push((path, text));
            }
            let parsed = groups.iter().map(|_| OnceLock::new()).collect();
            Index { files, groups, parsed }
        })
    }
}

/// The GUID of a layout file's `provider` or `kernel` statement (its first).
fn declared_guid(text: &str) -> Option<Guid> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#'))?;
    let mut words = line.split_whitespace();
    matches!(words.next(), Some("provider" | "kernel")).then_some(())?;
    words.nth(1)?.parse().ok()
}

impl BuiltIn {
    /// Every built-in layout, parsed on first use.
    pub fn get() -> &'static BuiltIn {
        static BUILT_IN: OnceLock<BuiltIn> = OnceLock::new();
        BUILT_IN.get_or_init(|| BuiltIn::from_files(LAYOUT_FILES))
    }

    /// The built-in layouts of one provider or kernel event class, parsed
    /// when first asked for; `None` when none is built in.
    pub fn of(guid: &Guid) -> Option<&'static BuiltIn> {
        let index = Index::get();
        let &group = index.files.get(guid)?;
        Some(index.parsed[group].get_or_init(|| BuiltIn::from_files(&index.groups[group])))
    }

    /// Whether layouts of this provider or event class are built in (without parsing them).
    pub fn knows(guid: &Guid) -> bool {
        Index::get().files.contains_key(guid)
    }

    /// The versions of a manifest event built in for a trace of `build`
    /// (none: any build), ascending.
    pub fn versions(&self, provider: Guid, id: u16, build: Option<u32>) -> impl Iterator<Item = u8> + '_ {
        let known = self.versions.get(&(provider, id)).map_or(&[][..], Vec::as_slice);
        known
            .iter()
            .copied()
            .filter(move |&version| self.layout(&SchemaKey::Manifest { provider, id, version }, build).is_some())
    }

    /// The layout of `key` for a trace of `build`, or with no build known
    /// the newest build's.
    pub fn layout(&self, key: &SchemaKey, build: Option<u32>) -> Option<&Arc<EventSchema>> {
        match build {
            Some(build) => self.for_build(key, build),
            None => self.events.get(key),
        }
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
        for key in all.events.keys() {
            if let SchemaKey::Manifest { provider, id, version } = *key {
                all.versions.entry((provider, id)).or_default().push(version);
            }
        }
        for versions in all.versions.values_mut() {
            versions.sort_unstable();
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
    use crate::schema::{EventSchema, ProviderInfo};

    #[test]
    fn every_built_in_file_parses() {
        let b = super::BuiltIn::get();
        assert!(b.errors.is_empty(), "{:?}", b.errors);
        assert!(!super::LAYOUT_FILES.is_empty());
    }

    #[test]
    fn a_provider_parsed_alone_has_what_all_files_parsed_together_have() {
        let all = super::BuiltIn::get();
        for (guid, provider) in &all.providers {
            assert!(super::BuiltIn::knows(guid));
            let one = super::BuiltIn::of(guid).unwrap();
            let names = |p: &ProviderInfo| {
                let mut channels: Vec<_> = p.channels.iter().collect();
                let mut levels: Vec<_> = p.levels.iter().collect();
                channels.sort();
                levels.sort();
                format!("{} {} {:?} {channels:?} {levels:?}", p.guid, p.name, p.keywords)
            };
            assert_eq!(names(&one.providers[guid]), names(provider));
            let keys = |b: &super::BuiltIn| {
                let mut k: Vec<String> = b
                    .events
                    .keys()
                    .chain(b.by_build.keys())
                    .filter(|k| k.guid() == *guid)
                    .map(|k| format!("{k:?}"))
                    .collect();
                k.sort();
                k.dedup();
                k
            };
            assert_eq!(keys(one), keys(all), "{}", provider.name);
            for (key, schema) in one.events.iter().filter(|(k, _)| k.guid() == *guid) {
                let shown = |s: &EventSchema| {
                    format!("{:?} {:?} {:?} {:?} {:?}", s.name, s.task, s.opcode, s.message, s.fields)
                };
                assert_eq!(shown(&all.events[key]), shown(schema));
            }
        }
        assert!(super::BuiltIn::of(&nettrail_etl::Guid::default()).is_none());
    }
}
