//! `cargo xtask gen-layouts`: nettrail's built-in layouts of the network
//! providers (`crates/decode/schemas/providers/<Provider>.events`) and the
//! synthesizer's per-build manifests (`crates/synth/manifests/<build>/`),
//! written from the manifests real Windows builds register.
//!
//! Sources (facts only: names, ids, types; nothing else is copied):
//! - github.com/jdu2600/Windows10EtwEvents, `manifest/<Provider>.tsv` at one
//!   commit per release ([`sources::JDU`]: Windows 10 1511 (10586) to
//!   Windows 11 26H1 (28000)): every event's fields with their in-types.
//! - github.com/repnz/etw-providers-docs @ d5f68e8acda5da154ab44e405b610dd8c2ba1164,
//!   `Manifests-Win7-7600/`, `Manifests-Win10-10240/`, `Manifests-Win10-17134/`,
//!   `Manifests-Win10-18990/` `<Provider>.xml`: manifests dumped from those
//!   builds, with length and count references, maps and the values of tasks,
//!   opcodes, keywords and levels.
//! - `../shared/reference/manifests/`: Microsoft/Tx's complete Windows 7
//!   manifests (`tcp.man`, `IE_Client.man`, `HTTP_Server.man`,
//!   `SystemEvents.man`) and WEPExplorer dumps of Windows 11
//!   (`windows11/`, from nasbench/EVTX-ETW-Resources): out-types, fixed
//!   lengths, channels and messages.
//!
//! Every (provider, id, version) any build declares is a layout; where
//! builds lay the same id and version out differently the layout splits into
//! variants by build (`builds=` in the layout language). Attributes a
//! build's source cannot state are completed by the rules of
//! [`union::complete`], each noted beside its field; the corpus' real traces
//! settle what the manifests get wrong ([`fixes::TRACE_FIXES`]).
//!
//! Run with the two repositories cloned: `cargo xtask gen-layouts --jdu
//! PATH --repnz PATH` (see docs/decoding.md).

mod fixes;
mod model;
mod read;
mod render;
mod sources;
mod union;

use std::path::{Path, PathBuf};

use anyhow::Context;

pub use sources::Inputs;

/// Where the generated files go.
#[derive(Clone, Debug)]
pub struct Outputs {
    pub layouts: PathBuf,
    pub synth: PathBuf,
}

/// Generates and writes every file; prints what was done on stderr.
pub fn run(inputs: &Inputs, outputs: &Outputs) -> anyhow::Result<()> {
    let generated = generate(inputs)?;
    write_all(&outputs.layouts, &generated.layouts)?;
    write_all(&outputs.synth, &generated.synth)?;
    eprintln!(
        "wrote {} layout files to {} and {} manifests to {}",
        generated.layouts.len(),
        outputs.layouts.display(),
        generated.synth.len(),
        outputs.synth.display()
    );
    for line in &generated.summary {
        eprintln!("{line}");
    }
    Ok(())
}

fn write_all(dir: &Path, files: &[(String, String)]) -> anyhow::Result<()> {
    for (name, text) in files {
        let path = dir.join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).with_context(|| parent.display().to_string())?;
        }
        std::fs::write(&path, text).with_context(|| path.display().to_string())?;
    }
    Ok(())
}

/// Everything the generator writes: (path under the output folder, text).
pub struct Generated {
    pub layouts: Vec<(String, String)>,
    pub synth: Vec<(String, String)>,
    /// Counts worth printing.
    pub summary: Vec<String>,
}

pub fn generate(inputs: &Inputs) -> anyhow::Result<Generated> {
    let loaded = sources::load(inputs)?;
    let mut layouts = Vec::new();
    let mut summary = Vec::new();
    let mut unions = Vec::new();
    for &(name, guid, role) in sources::PROVIDERS {
        let decls = &loaded.providers[name];
        let mut u = union::union(name, guid, &loaded.sources, decls)?;
        fixes::apply(&mut u).with_context(|| name.to_string())?;
        union::complete(&mut u, &loaded.sources);
        let unresolved: Vec<String> = u
            .events
            .iter()
            .flat_map(|e| e.variants.iter().map(move |v| (e, v)))
            .flat_map(|(e, v)| {
                v.fields
                    .iter()
                    .filter(|f| union::needs_length(f))
                    .map(move |f| format!("{} v{} {}", e.id, e.version, f.name))
            })
            .collect();
        let variants: usize = u.events.iter().map(|e| e.variants.len()).sum();
        summary.push(format!(
            "{name}: {} events, {} with build variants ({variants} layouts), {} Binary fields without a length{}",
            u.events.len(),
            u.events.iter().filter(|e| e.variants.len() > 1).count(),
            unresolved.len(),
            if unresolved.is_empty() { String::new() } else { format!(": {}", unresolved.join(", ")) }
        ));
        layouts.push((format!("{name}.events"), render::layout_file(&u, role, &loaded.sources)));
        unions.push(u);
    }
    let synth = render::synth_manifests(&unions, &loaded)?;
    Ok(Generated { layouts, synth, summary })
}

#[cfg(test)]
mod tests;
