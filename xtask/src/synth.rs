//! `cargo xtask synth NAME [OUTPUT]`: write one of the synthesizer's
//! scenarios to a file (`--list` names them), to look at it with nettrail or
//! another tool.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use nettrail_synth::scenarios;

pub fn run(name: Option<&str>, output: Option<&Path>, list: bool) -> anyhow::Result<()> {
    if list {
        let width = scenarios::ALL.iter().map(|(n, _, _)| n.len()).max().unwrap_or(0);
        for (name, description, _) in scenarios::ALL {
            println!("{name:width$}  {description}");
        }
        return Ok(());
    }
    let Some(name) = name else { bail!("name a scenario (`cargo xtask synth --list` shows them)") };
    let Some(scenario) = scenarios::by_name(name) else {
        bail!("no scenario {name:?} (`cargo xtask synth --list` shows them)")
    };
    let bytes = scenario().map_err(|e| anyhow::anyhow!("scenario {name}: {e}"))?;
    let output = output.map_or_else(|| PathBuf::from(format!("target/scenarios/{name}.etl")), Path::to_path_buf);
    if let Some(dir) = output.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| dir.display().to_string())?;
    }
    std::fs::write(&output, bytes).with_context(|| output.display().to_string())?;
    eprintln!("wrote {}", output.display());
    Ok(())
}
