//! Lists the per-build manifests (`manifests/<build>/<Provider>.man`) for
//! `include_str!`, so adding a build or provider is adding a file.

use std::path::Path;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("manifests");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    for build in std::fs::read_dir(&root).expect("manifests/").filter_map(Result::ok) {
        let Some(number) = build.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        println!("cargo::rerun-if-changed={}", build.path().display());
        for file in std::fs::read_dir(build.path()).expect("a build folder").filter_map(Result::ok) {
            let path = file.path();
            if path.extension().is_some_and(|e| e == "man") {
                let provider = path.file_stem().and_then(|s| s.to_str()).expect("a file name").to_string();
                files.push((number, provider, path.to_string_lossy().into_owned()));
            }
        }
    }
    files.sort();
    let mut code = String::from(
        "/// (build, provider, text) of every per-build manifest.\npub(crate) const MANIFEST_FILES: &[(u32, &str, &str)] = &[\n",
    );
    for (build, provider, path) in &files {
        println!("cargo::rerun-if-changed={path}");
        code.push_str(&format!("    ({build}, {provider:?}, include_str!({path:?})),\n"));
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("OUT_DIR")).join("manifest_files.rs");
    std::fs::write(out, code).expect("write manifest_files.rs");
}
