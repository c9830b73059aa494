//! Lists the built-in event-layout files (`schemas/**/*.events`) for
//! `include_str!`, so adding a provider is adding a file, with the GUID each
//! file's first statement declares (so that finding a provider's files at run
//! time reads no file).

use std::path::Path;

fn collect(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "events") {
            out.push(path.to_string_lossy().into_owned());
        }
    }
}

/// The GUID of a layout file's `provider` or `kernel` statement (its first), as written.
fn declared_guid(text: &str) -> &str {
    let Some(line) = text.lines().map(str::trim).find(|l| !l.is_empty() && !l.starts_with('#')) else { return "" };
    let mut words = line.split_whitespace();
    match words.next() {
        Some("provider" | "kernel") => words.nth(1).unwrap_or(""),
        _ => "",
    }
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    let mut code = String::from(
        "/// (path under schemas/, text) of every built-in layout file.\npub const LAYOUT_FILES: &[(&str, &str)] = &[\n",
    );
    let mut guids = String::from(
        "/// The GUID each of [`LAYOUT_FILES`] declares in its first statement, as written (empty: none).\n\
         const DECLARED_GUIDS: &[&str] = &[\n",
    );
    for f in &files {
        let relative = f.strip_prefix(&*root.to_string_lossy()).unwrap_or(f).trim_start_matches('/');
        println!("cargo::rerun-if-changed={f}");
        code.push_str(&format!("    ({relative:?}, include_str!({f:?})),\n"));
        let text = std::fs::read_to_string(f).expect("read a layout file");
        guids.push_str(&format!("    {:?},\n", declared_guid(&text)));
    }
    code.push_str("];\n");
    guids.push_str("];\n");
    code.push_str(&guids);
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("layout_files.rs");
    std::fs::write(out, code).expect("write layout_files.rs");
}
