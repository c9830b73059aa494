//! The schema sources of one run: `--manifest` files, then what the trace
//! itself carries (embedded metadata, EventSource manifests).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use nettrail_decode::Schemas;
use nettrail_etl::Trace;

/// Loads `--manifest` files (a folder: every `*.man` and `*.xml` in it) and
/// learns from the trace; problems with in-trace metadata are reported on
/// stderr, not fatal.
pub fn for_trace(path: &Path, trace: &Trace<'_>, manifests: &[PathBuf]) -> anyhow::Result<Schemas> {
    let mut schemas = Schemas::new();
    for manifest in manifests {
        let files: Vec<PathBuf> = if manifest.is_dir() {
            let mut v: Vec<PathBuf> = std::fs::read_dir(manifest)
                .with_context(|| format!("{}: cannot read the folder", manifest.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "man" || x == "xml"))
                .collect();
            v.sort();
            v
        } else {
            vec![manifest.clone()]
        };
        for file in files {
            let bytes = std::fs::read(&file).with_context(|| format!("{}: cannot read", file.display()))?;
            let text = String::from_utf8_lossy(&bytes);
            let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
            schemas.add_manifest(text).map_err(|e| anyhow::anyhow!("{}: {e}", file.display()))?;
        }
    }
    for problem in schemas.learn(trace) {
        say!("{}: in-trace metadata: {problem}", path.display());
    }
    Ok(schemas)
}
