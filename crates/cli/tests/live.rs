//! `nettrail live --replay`: a recorded trace sent through the live path
//! (each event converted as a real-time consumer receives it) prints the
//! same requests as `nettrail requests` reads from the file.

use std::collections::BTreeSet;
use std::process::Command;

fn run(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn rows(jsonl: &str) -> BTreeSet<String> {
    jsonl
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            // Numbers are places in a table; the live view prints rows as they settle.
            v.as_object_mut().unwrap().remove("request");
            v.to_string()
        })
        .collect()
}

#[test]
fn replay_prints_the_requests_of_the_file() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.etl");
    let live = run(&["live", "--replay", sample, "--format", "jsonl"]);
    let file = run(&["requests", sample, "--format", "jsonl"]);
    assert_eq!(rows(&live), rows(&file));
    assert_eq!(live.lines().count(), 11);

    let lines = run(&["live", "--replay", sample]);
    let word = lines.lines().find(|l| l.contains("WINWORD.EXE")).unwrap();
    assert_eq!(
        word,
        "   +0.900s  WINWORD.EXE (5630)  WinINet GET https://templates.office.example/list?lang=en-US → 52.109.8.19:443  HTTP/1.1 200 OK  512 B ↑  19695 B ↓  88.2 ms"
    );
    // The search ends with its answer on the socket, as every table says.
    let ldap = lines.lines().find(|l| l.contains(" LDAP SEARCH ")).unwrap();
    assert!(ldap.ends_with("→ 10.0.0.10:389  closed  2.3 ms"), "{ldap}");
}

#[cfg(not(windows))]
#[test]
fn real_time_needs_windows() {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).arg("live").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("live capture needs Windows"));
}
