//! `cargo xtask dist`: the `nettrail` binary as it is handed out. On Linux
//! with glibc it is linked statically: no shared libraries to load and
//! relocate at start-up, which is a third of `nettrail --version` (1.46 ms
//! dynamic, 1.02 ms static on the project's VM) and a tenth or more of
//! `info` on a small trace (tx__Process.etl: 3.8–4.4 ms dynamic, 3.3–3.5 ms
//! static). The benchmarks time a binary linked the same way.

use std::path::PathBuf;
use std::process::Command;

use anyhow::bail;

/// Builds `nettrail` with `profile` (`dist`, or `release` for the
/// benchmarks: the same linking, line tables kept, minutes faster to build)
/// and returns its path.
pub fn build(profile: &str) -> anyhow::Result<PathBuf> {
    let mut cargo = Command::new("cargo");
    cargo.args(["rustc", "--quiet", "--profile", profile, "-p", "nettrail", "--bin", "nettrail"]);
    if cfg!(all(target_os = "linux", target_env = "gnu")) {
        // Only the binary's own link: the flag reaches no dependency's
        // build (proc-macro crates cannot be linked statically).
        cargo.args(["--", "-C", "target-feature=+crt-static"]);
    }
    if !cargo.status()?.success() {
        bail!("building nettrail ({profile}) failed");
    }
    let dir = if profile == "dev" { "debug" } else { profile };
    Ok(nettrail_testkit::target_dir().join(dir).join("nettrail"))
}
