//! The schema sources of one run: `--manifest` files, then what the trace
//! itself carries (embedded metadata, EventSource manifests).

use std::path::{Path, PathBuf};

use nettrail_decode::Schemas;
use nettrail_etl::Trace;

/// Loads `--manifest` files (a folder: every `*.man` and `*.xml` in it) and
/// learns from the trace; problems with in-trace metadata are reported on
/// stderr, not fatal.
pub fn for_trace(path: &Path, trace: &Trace<'_>, manifests: &[PathBuf]) -> anyhow::Result<Schemas> {
    let mut schemas = supplied(manifests)?;
    report_problems(path, schemas.learn(trace));
    Ok(schemas)
}

/// The schemas of `--manifest` files (a folder: every `*.man` and `*.xml`
/// in it), for a command that learns the trace's own metadata itself.
pub fn supplied(manifests: &[PathBuf]) -> anyhow::Result<Schemas> {
    let mut schemas = Schemas::new();
    schemas.add_manifest_files(manifests)?;
    Ok(schemas)
}

/// Problems with in-trace metadata, reported on stderr (not fatal).
pub fn report_problems(path: &Path, problems: Vec<String>) {
    for problem in problems {
        say!("{}: in-trace metadata: {problem}", path.display());
    }
}
