//! `cargo xtask dist`: the `nettrail` binary as it is handed out. On Linux
//! with glibc it is linked statically: no shared libraries to load and
//! relocate at start-up, which is a third of `nettrail --version` (1.46 ms
//! dynamic, 1.02 ms static on the project's VM) and a tenth or more of
//! `info` on a small trace (tx__Process.etl: 3.8–4.4 ms dynamic, 3.3–3.5 ms
//! static). Its relative relocations are packed (`DT_RELR`): the start-up
//! code applies them from a bitmap of a few KB instead of 9 400 entries
//! (225 KB) read from the file, which took another ~0.3 ms of a small trace
//! (`--version` 1.55 → 1.29 ms, `info` on demikernel__PktMon.etl 3.62 →
//! 3.07 ms; a non-PIE link, 1.22 and 3.05 ms, would give up the image's
//! address randomisation for ~0.05 ms more). The benchmarks time a binary
//! linked the same way.

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
        // Only the binary's own link: the flags reach no dependency's
        // build (proc-macro crates cannot be linked statically). Packed
        // relocations need binutils 2.38 and glibc 2.36 (Debian 12).
        cargo.args(["--", "-C", "target-feature=+crt-static", "-C", "link-arg=-Wl,-z,pack-relative-relocs"]);
    }
    if !cargo.status()?.success() {
        bail!("building nettrail ({profile}) failed");
    }
    let dir = if profile == "dev" { "debug" } else { profile };
    Ok(nettrail_testkit::target_dir().join(dir).join("nettrail"))
}
