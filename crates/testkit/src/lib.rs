//! Test support shared by the crates' test suites: where the corpus of real
//! traces is, what its catalog says, and a deterministic random generator.
//!
//! The corpus lives beside the repository (`../shared/corpus`); it is data
//! from other projects and is never copied in. A missing corpus fails the
//! tests that need it: it is not a reason to skip them.

pub mod hostile;

use std::path::PathBuf;

use serde_json::Value;

/// The corpus directory. Panics with the expected path when it is missing.
pub fn corpus_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    assert!(
        dir.join("catalog.json").is_file(),
        "the shared corpus is missing: expected {} (see README.md)",
        dir.display()
    );
    dir
}

/// A corpus file by name.
pub fn corpus_file(name: &str) -> PathBuf {
    let path = corpus_dir().join(name);
    assert!(path.is_file(), "corpus file missing: {}", path.display());
    path
}

/// Every `.etl` file of the corpus, sorted by name.
pub fn corpus_traces() -> Vec<PathBuf> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("the corpus directory is readable")
        .map(|entry| entry.expect("a corpus directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "etl"))
        .collect();
    traces.sort();
    traces
}

/// The catalog's entries, one per corpus file.
pub fn catalog() -> Vec<Value> {
    let path = corpus_dir().join("catalog.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    v["files"].as_array().cloned().unwrap_or_default()
}

/// The catalog entry of one file.
pub fn catalog_entry(name: &str) -> Value {
    catalog().into_iter().find(|e| e["file"] == name).unwrap_or_else(|| panic!("{name} is not in the catalog"))
}

/// FILETIME (100 ns since 1601, UTC) of a time such as `2016-05-26T20:17:22.478932Z`.
pub fn parse_utc(s: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap_or_else(|e| panic!("bad time {s}: {e}"));
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    let frac = s.get(20..s.len() - 1).unwrap_or("");
    let frac_100ns = format!("{frac:0<7}")[..7].parse::<i64>().unwrap_or(0);
    const FILETIME_UNIX_EPOCH: i64 = 116_444_736_000_000_000;
    secs * 10_000_000 + frac_100ns + FILETIME_UNIX_EPOCH
}

/// A small deterministic generator (xorshift64), so failures reproduce.
#[derive(Debug, Clone)]
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A value in `0..n` (`n` > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// The workspace's `target` directory (for files tests make).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

/// The independent readers nettrail's output is checked against, pinned.
pub const PYTHON_PEERS: &[&str] = &["dissect.etl==3.14", "etl-parser==1.0.1"];

/// A Python interpreter with the peer readers installed, in a virtual
/// environment under `target/peers` that is made on first use (from PyPI).
pub fn python_peers() -> Result<PathBuf, String> {
    static PYTHON: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PYTHON.get_or_init(make_python_peers).clone()
}

fn make_python_peers() -> Result<PathBuf, String> {
    python_venv("peers", PYTHON_PEERS, "import dissect.etl, etl")
}

/// DuckDB, pinned: what the Parquet export is queried with.
pub const PYTHON_DUCKDB: &[&str] = &["duckdb==1.5.6"];

/// A Python interpreter with DuckDB, in `target/duckdb`, made on first use.
pub fn python_duckdb() -> Result<PathBuf, String> {
    static PYTHON: std::sync::OnceLock<Result<PathBuf, String>> = std::sync::OnceLock::new();
    PYTHON.get_or_init(|| python_venv("duckdb", PYTHON_DUCKDB, "import duckdb")).clone()
}

/// The test tools of the Python package, pinned: the package's own
/// dependency (pyarrow) and what its tests run (pytest, pandas, DuckDB,
/// Dask's distributed scheduler).
pub const PYTHON_PACKAGE_TOOLS: &[&str] =
    &["pyarrow==26.0.1", "pytest==9.2.0", "pandas==3.1.1", "duckdb==1.5.6", "dask[distributed]==2026.8.0"];

/// A Python interpreter in `target/python-venv` with the package's test
/// tools (the package itself is installed by its test, which rebuilds it).
pub fn python_for_package() -> Result<PathBuf, String> {
    python_venv("python-venv", PYTHON_PACKAGE_TOOLS, "import pyarrow, pytest, pandas, duckdb, distributed")
}

/// A virtual environment under `target/NAME` with `packages` from PyPI,
/// ready when `check` runs.
fn python_venv(name: &str, packages: &[&str], check: &str) -> Result<PathBuf, String> {
    use std::process::Command;
    let venv = target_dir().join(name);
    let python = venv.join("bin").join("python3");
    let ready = |python: &PathBuf| Command::new(python).args(["-c", check]).output().is_ok_and(|o| o.status.success());
    if ready(&python) {
        return Ok(python);
    }
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("{cmd:?} failed:\n{}", String::from_utf8_lossy(&out.stderr)))
        }
    };
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(&python).args(["-m", "pip", "install", "--quiet"]).args(packages))?;
    if ready(&python) { Ok(python) } else { Err(format!("{} cannot run {check:?}", python.display())) }
}

/// What the peer readers find in one trace file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeerCounts {
    /// dissect.etl's records, the header event included.
    pub dissect_records: u64,
    /// etl-parser's records by header family: system, perfinfo, EVENT_HEADER,
    /// classic trace header. It keeps the header event apart and reads
    /// nothing of compressed buffers.
    pub etl_parser: [u64; 4],
}

/// Both peers' record counts of each file (one Python run for all).
const PEER_COUNTS: &str = "
import sys
from dissect.etl.etl import ETL
from etl.etl import build_from_stream
for path in sys.argv[1:]:
    with open(path, 'rb') as f:
        records = sum(1 for _ in ETL(f))
    counts = {'system': 0, 'perfinfo': 0, 'event': 0, 'trace': 0}
    class Observer:
        def on_system_trace(self, e): counts['system'] += 1
        def on_perfinfo_trace(self, e): counts['perfinfo'] += 1
        def on_event_record(self, e): counts['event'] += 1
        def on_trace_record(self, e): counts['trace'] += 1
        def on_win_trace(self, e): pass
    with open(path, 'rb') as f:
        build_from_stream(f.read()).parse(Observer())
    print(records, counts['system'], counts['perfinfo'], counts['event'], counts['trace'])
";

/// Runs both peer readers on each file; panics when they cannot run (the
/// peers are part of the tests, not optional).
pub fn peer_counts(files: &[PathBuf]) -> Vec<PeerCounts> {
    let python = python_peers().unwrap_or_else(|e| panic!("the Python peer readers are needed: {e}"));
    let out = std::process::Command::new(python).args(["-c", PEER_COUNTS]).args(files).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let counts: Vec<PeerCounts> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let n: Vec<u64> = line.split(' ').map(|v| v.parse().unwrap()).collect();
            PeerCounts { dissect_records: n[0], etl_parser: [n[1], n[2], n[3], n[4]] }
        })
        .collect();
    assert_eq!(counts.len(), files.len(), "one line per file");
    counts
}

/// A command from a Debian package the tests need (tshark, chromium): found
/// on PATH, else installed with apt-get (as root, waiting for apt's lock so
/// that test binaries running at once take turns). Panics with what to do
/// when neither works: such a test fails, it does not skip.
pub fn debian_tool(command: &str, package: &str) -> PathBuf {
    use std::process::Command;
    let find = || {
        std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(command)).find(|c| c.is_file()))
    };
    if let Some(found) = find() {
        return found;
    }
    let status = Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", package])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .output();
    match (status, find()) {
        (_, Some(found)) => found,
        (Ok(out), None) => panic!(
            "{command} is needed and `apt-get install {package}` did not provide it:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ),
        (Err(e), None) => panic!("{command} is needed: install the Debian package {package} ({e})"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_catalog_times() {
        // 1970-01-01T00:00:01.5Z
        assert_eq!(super::parse_utc("1970-01-01T00:00:01.5Z"), 116_444_736_015_000_000);
        assert_eq!(super::parse_utc("2016-05-26T20:17:22.478932Z"), 131_087_674_424_789_320);
    }
}
