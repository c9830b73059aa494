//! The command line behaves like a good Unix tool: one header per CSV,
//! only the flags that can match, help that shows what it parses, output
//! where the user is, empty values last in either sort order, times as
//! people write them, shell completions and a manual page.

use std::path::Path;
use std::process::{Command, Output};

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.etl");

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().unwrap()
}

fn stdout(args: &[&str]) -> String {
    let out = run(args);
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn live_csv_has_one_header() {
    let csv = stdout(&["live", "--replay", SAMPLE, "--format", "csv"]);
    let headers = csv.lines().filter(|l| l.starts_with("request,")).count();
    assert_eq!(headers, 1, "{csv}");
    let rows = stdout(&["requests", SAMPLE, "--format", "csv"]).lines().count();
    assert_eq!(csv.lines().count(), rows);
    let help = stdout(&["live", "--help"]);
    assert!(!help.contains("--columns"), "{help}");
}

#[test]
fn only_tables_with_urls_take_url() {
    for table in ["dns", "connections"] {
        let out = run(&[table, SAMPLE, "--url", "example"]);
        assert_eq!(out.status.code(), Some(1), "{table}");
    }
    for table in ["requests", "http-server"] {
        assert!(run(&[table, SAMPLE, "--url", "example"]).status.success(), "{table}");
    }
}

#[test]
fn dump_help_shows_the_fields_as_they_are_given() {
    let help = stdout(&["dump", "--help"]);
    assert!(help.contains("[default: timestamp,providername,taskname,opcodename,pid,tid,properties]"), "{help}");
}

#[test]
fn empty_values_sort_last_both_ways() {
    for sort in ["bytes_received", "-bytes_received"] {
        let rows = stdout(&["requests", SAMPLE, "--format", "jsonl", "--sort", sort]);
        let values: Vec<serde_json::Value> = rows
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["bytes_received"].clone())
            .collect();
        let first_null = values.iter().position(|v| v.is_null()).unwrap_or(values.len());
        assert!(values[first_null..].iter().all(|v| v.is_null()), "{sort}: {values:?}");
        let numbers: Vec<u64> = values[..first_null].iter().map(|v| v.as_u64().unwrap()).collect();
        let mut sorted = numbers.clone();
        sorted.sort();
        if sort.starts_with('-') {
            sorted.reverse();
        }
        assert_eq!(numbers, sorted, "{sort}");
        assert!(first_null < values.len(), "the sample has rows without a byte count");
    }
}

#[test]
fn view_writes_into_the_current_folder_and_says_where() {
    let dir = nettrail_testkit::target_dir().join("cli-tests").join("view-here");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).args(["view", SAMPLE]).current_dir(&dir).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8(out.stdout).unwrap();
    assert_eq!(Path::new(said.trim()).canonicalize().unwrap(), dir.join("sample.html").canonicalize().unwrap());
    assert!(dir.join("sample.html").is_file());
    assert!(!Path::new(SAMPLE).with_extension("html").exists(), "nothing next to the trace");
}

#[test]
fn times_as_people_write_them() {
    let count = |since: &str| {
        stdout(&["dump", SAMPLE, "--format", "text", "--fields", "eventid", "--since", since]).lines().count()
    };
    let utc = count("2026-01-15T09:30:03Z");
    assert!(utc > 0);
    assert_eq!(count("2026-01-15T10:30:03+01:00"), utc);
    assert_eq!(count("2026-01-15 09:30:03"), utc);
    assert_eq!(count("+3"), utc);
}

#[test]
fn completions_load_in_bash_and_the_manual_renders() {
    let script = stdout(&["completions", "bash"]);
    let file = nettrail_testkit::target_dir().join("cli-tests").join("nettrail.bash");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, script).unwrap();
    let loaded =
        Command::new("bash").arg("-c").arg("source \"$0\" && complete -p nettrail").arg(&file).output().unwrap();
    assert!(loaded.status.success(), "{}", String::from_utf8_lossy(&loaded.stderr));
    assert!(String::from_utf8_lossy(&loaded.stdout).contains("nettrail"));
    for shell in ["zsh", "fish", "powershell"] {
        assert!(stdout(&["completions", shell]).contains("nettrail"), "{shell}");
    }
    let man = stdout(&["man"]);
    assert!(man.contains(".TH nettrail 1") && man.contains("requests"), "{man}");
    let version = stdout(&["--version"]);
    assert!(version.contains("features: +parquet"), "{version}");
}
