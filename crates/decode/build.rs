//! Lists the built-in event-layout files (`schemas/**/*.events`) for
//! `include_str!`, so adding a provider is adding a file.

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

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect(&root, &mut files);
    let mut code = String::from(
        "/// (path under schemas/, text) of every built-in layout file.\npub const LAYOUT_FILES: &[(&str, &str)] = &[\n",
    );
    for f in &files {
        let relative = f.strip_prefix(&*root.to_string_lossy()).unwrap_or(f).trim_start_matches('/');
        println!("cargo::rerun-if-changed={f}");
        code.push_str(&format!("    ({relative:?}, include_str!({f:?})),\n"));
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("layout_files.rs");
    std::fs::write(out, code).expect("write layout_files.rs");
}
