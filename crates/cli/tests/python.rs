//! The Python package (`python/`): installed from source with pip into a
//! virtual environment under `target/` (maturin builds the native module
//! with this checkout's crates), then its pytest suite runs against this
//! build of the `nettrail` binary: tables, facts, events and stacks equal
//! the binary's, errors carry file, offset and reason, the GIL is released,
//! and a Dask cluster's answer over many traces equals DuckDB's over the
//! exported dataset.

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_package_passes_its_tests() {
    let python = nettrail_testkit::python_for_package().unwrap_or_else(|e| panic!("Python test tools (PyPI): {e}"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let target = nettrail_testkit::target_dir();
    let install = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--force-reinstall", "--no-deps"])
        .arg(root.join("python"))
        // The native module's build is kept between runs (incremental).
        .env("CARGO_TARGET_DIR", target.join("python-build"))
        .output()
        .unwrap();
    assert!(install.status.success(), "pip install ./python:\n{}", String::from_utf8_lossy(&install.stderr));
    // A browser's trace for the browser table's tests (no corpus trace has one).
    let browser = target.join("python-tests").join("browser-navigation.etl");
    std::fs::create_dir_all(browser.parent().unwrap()).unwrap();
    std::fs::write(&browser, nettrail_synth::scenarios::browser_navigation().unwrap()).unwrap();
    let tests = Command::new(&python)
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:logging"])
        .arg(root.join("python").join("tests"))
        .env("NETTRAIL_BIN", env!("CARGO_BIN_EXE_nettrail"))
        .env("NETTRAIL_BROWSER_TRACE", &browser)
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&tests.stdout);
    assert!(tests.status.success(), "pytest:\n{out}\n{}", String::from_utf8_lossy(&tests.stderr));
    assert!(out.contains(" passed"), "{out}");
}
