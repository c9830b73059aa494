//! The README's examples are real: each `$ nettrail …` block in README.md is
//! run against the shipped sample, and its output must be what is shown.

use std::process::Command;

fn readme_examples() -> Vec<(String, String)> {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
    let mut examples = Vec::new();
    let mut lines = readme.lines();
    while let Some(line) = lines.next() {
        if let Some(command) = line.strip_prefix("$ nettrail ") {
            let output: Vec<&str> = lines.by_ref().take_while(|l| *l != "```").collect();
            examples.push((command.to_string(), output.join("\n") + "\n"));
        }
    }
    examples
}

#[test]
fn readme_examples_show_real_output() {
    let examples = readme_examples();
    assert!(examples.len() >= 2, "README examples not found");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for (command, shown) in examples {
        let out = Command::new(env!("CARGO_BIN_EXE_nettrail"))
            .args(command.split_whitespace())
            .current_dir(root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{command}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), shown, "README example `nettrail {command}`");
    }
}
