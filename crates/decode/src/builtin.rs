//! The built-in layouts: network providers (`schemas/providers/`) and classic
//! kernel event classes (`schemas/kernel/`), parsed once on first use.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use nettrail_etl::Guid;

use crate::layouts::{self, Builds, LayoutError};
use crate::schema::{EventSchema, ProviderInfo, SchemaKey, Source};

include!(concat!(env!("OUT_DIR"), "/layout_files.rs"));

/// Every built-in schema, by key, and the providers by GUID.
#[derive(Debug, Default)]
pub struct BuiltIn {
    /// For keys whose layout differs between Windows builds, the newest
    /// build's (what a trace of unknown build decodes with).
    pub events: HashMap<SchemaKey, Arc<EventSchema>>,
    /// Keys whose layout differs between Windows builds: each layout with its builds.
    pub by_build: HashMap<SchemaKey, Vec<(Builds, Arc<EventSchema>)>>,
    pub providers: HashMap<Guid, Arc<ProviderInfo>>,
    /// Where each layout came from (`builds …: file`), by key and builds.
    pub origins: HashMap<(SchemaKey, Option<Builds>), String>,
    /// Files that did not parse (a test keeps this empty).
    pub errors: Vec<(String, LayoutError)>,
}

impl BuiltIn {
    pub fn get() -> &'static BuiltIn {
        static BUILT_IN: OnceLock<BuiltIn> = OnceLock::new();
        BUILT_IN.get_or_init(|| BuiltIn::from_files(LAYOUT_FILES))
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
    #[test]
    fn every_built_in_file_parses() {
        let b = super::BuiltIn::get();
        assert!(b.errors.is_empty(), "{:?}", b.errors);
        assert!(!super::LAYOUT_FILES.is_empty());
    }
}
