//! `nettrail info` and `nettrail dump` end to end on every real trace of the
//! shared corpus, against the facts independent readers established.

use std::collections::BTreeMap;
use std::process::Command;

use nettrail_testkit::{catalog, corpus_file, parse_utc};
use serde_json::Value;

fn nettrail(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().expect("run nettrail")
}

fn info_json(path: &str) -> Value {
    let out = nettrail(&["info", "--format", "json", path]);
    assert!(out.status.success(), "{path}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn info_json_matches_the_catalog_for_every_corpus_file() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        if entry["events"] == 0 {
            continue; // the damaged file: see below
        }
        let path = corpus_file(name);
        let info = info_json(path.to_str().unwrap());
        let mut check = |what: &str, got: &Value, want: &Value| {
            if got != want {
                failures.push(format!("{name}: {what}: got {got}, want {want}"));
            }
        };
        check("events", &info["events"], &entry["events"]);
        check("pointer_size", &info["pointer_size"], &entry["pointer_size"]);
        check("build", &info["build"], &entry["windows_build"]);
        check("cpus", &info["cpus"], &entry["num_cpus"]);
        check("clock_type", &info["clock_type"], &entry["clock_type"]);
        check("buffers", &info["buffers"], &entry["buffers"]);
        check("compressed_buffers", &info["compressed_buffers"], &entry["compressed_buffers"]);
        check("buffer_size", &info["buffer_size"], &entry["buffer_size"]);
        check("events_lost", &info["events_lost"], &entry["events_lost"]);
        check("buffers_lost", &info["buffers_lost"], &entry["buffers_lost"]);
        check("logger_name", &info["logger_name"], &entry["logger_name"]);
        check("log_file_mode", &info["log_file_mode"], &entry["log_file_mode"]);
        check("record_kinds", &info["record_kinds"], &entry["header_types"]);
        check("errors", &info["errors"], &Value::Array(vec![]));
        // No real trace is suspicious: every rule of untrusted input holds on them.
        check("notes", &info["notes"], &Value::Array(vec![]));
        // The catalog's times went through a float: equal within 1.5 µs.
        for (ours, theirs) in [("start_utc", "start_utc"), ("end_utc", "end_utc")] {
            let a = parse_utc(info[ours].as_str().unwrap());
            let b = parse_utc(entry[theirs].as_str().unwrap());
            if (a - b).abs() > 15 {
                failures.push(format!("{name}: {ours}: got {}, want {}", info[ours], entry[theirs]));
            }
        }
        let providers: BTreeMap<String, u64> = info["providers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["guid"].as_str().unwrap().to_string(), p["events"].as_u64().unwrap()))
            .collect();
        let want: BTreeMap<String, u64> = entry["providers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["guid"].as_str().unwrap().to_string(), p["count"].as_u64().unwrap()))
            .collect();
        if providers != want {
            failures.push(format!("{name}: providers: got {providers:?}, want {want:?}"));
        }
        // Every provider the catalog names from the trace itself, we name too.
        for p in entry["providers"].as_array().unwrap() {
            let guid = p["guid"].as_str().unwrap();
            let ours = info["providers"].as_array().unwrap().iter().find(|q| q["guid"] == guid).unwrap();
            if p["header_kinds"].as_array().unwrap().iter().any(|k| k == "tracelogging") && ours["name"] != p["name"] {
                failures.push(format!("{name}: TraceLogging provider {guid}: name {} vs {}", ours["name"], p["name"]));
            }
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
    assert_eq!(checked, 23);
}

#[test]
fn dump_prints_every_event_in_time_order() {
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        if entry["events"] == 0 {
            continue;
        }
        let path = corpus_file(name);
        let out = nettrail(&["dump", "--format", "jsonl", path.to_str().unwrap()]);
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        let mut count = 0;
        let (mut last_raw, mut last_text) = (0u64, String::new());
        for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let v: Value = serde_json::from_slice(line).unwrap_or_else(|e| panic!("{name}: bad JSON line: {e}"));
            let raw = v["timestamp_raw"].as_u64().unwrap();
            let text = v["timestamp"].as_str().unwrap().to_string();
            assert!(raw >= last_raw && text >= last_text, "{name}: line {count} goes back in time");
            (last_raw, last_text) = (raw, text);
            count += 1;
        }
        assert_eq!(count, entry["events"].as_u64().unwrap(), "{name}");
    }
}

#[test]
fn dump_fields_and_filters() {
    let path = corpus_file("perfview__net.4.5.x86.PerfViewData.etl");
    let path = path.to_str().unwrap();
    // The four DNS-Client events, by name and by GUID.
    let by_name = nettrail(&["dump", path, "--provider", "microsoft-windows-dns-client"]);
    let by_guid = nettrail(&["dump", path, "--provider", "{1C95126E-7EEA-49A9-A3FE-A378B03DDB4D}"]);
    assert_eq!(by_name.stdout, by_guid.stdout);
    let lines: Vec<Value> = by_name
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 4);
    for v in &lines {
        assert_eq!(v["provider_name"], "Microsoft-Windows-DNS-Client");
        assert_eq!(v["kind"], "EVENT_HEADER64");
        for field in [
            "provider_guid",
            "id",
            "version",
            "opcode",
            "task",
            "level",
            "keywords",
            "pid",
            "tid",
            "cpu",
            "timestamp",
            "timestamp_raw",
            "activity_id",
            "related_activity_id",
            "extended",
            "payload_len",
        ] {
            assert!(v.get(field).is_some(), "missing {field}");
        }
    }
    // Kernel TcpIp events have no header process id (PERFINFO): null, not 0xFFFFFFFF.
    let tcp = nettrail(&["dump", path, "--provider", "9a280ac0-c8e0-11d1-84e2-00c04fb998a2", "--limit", "1"]);
    let v: Value = serde_json::from_slice(tcp.stdout.split(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(v["kind"], "PERFINFO64");
    assert_eq!(v["pid"], Value::Null);
    assert_eq!(v["provider_name"], "Windows Kernel/TcpIp");
    // --pid and --limit.
    let pid = lines[0]["pid"].as_u64().unwrap();
    let some = nettrail(&["dump", path, "--pid", &pid.to_string(), "--limit", "7"]);
    let some: Vec<Value> = some
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    assert_eq!(some.len(), 7);
    assert!(some.iter().all(|v| v["pid"] == pid));
}

#[test]
fn damaged_input_exits_with_a_located_message() {
    let path = corpus_file("histories__ExplorerStartupLog.CORRUPT.etl");
    for command in ["info", "dump"] {
        let out = nettrail(&[command, path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        assert!(out.stdout.is_empty());
        let err = String::from_utf8_lossy(&out.stderr);
        // Every 0x00 of this file became 0x20 (CATALOG.md): said as such.
        assert!(
            err.contains("histories__ExplorerStartupLog.CORRUPT.etl: not an .etl trace: it looks like an .etl"),
            "{err}"
        );
        assert!(err.contains("zero bytes were all replaced by spaces (0x20)"), "{err}");
    }
    // A truncated trace: every complete event, then the error, exit code 2.
    let full = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let dir = std::env::temp_dir().join(format!("nettrail-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cut = dir.join("cut.etl");
    // 8 KiB buffers: cut 0x100 bytes into buffer 64.
    std::fs::write(&cut, &full[..0x8_0100]).unwrap();
    let out = nettrail(&["dump", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cut.etl: at offset 0x80000 (buffer 64): file ends inside a buffer"), "{err}");
    let lines = out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).count();
    assert!(lines > 4000, "{lines} events before the damage");
    let info = nettrail(&["info", "--format", "json", cut.to_str().unwrap()]);
    assert_eq!(info.status.code(), Some(2));
    let v: Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(v["events"].as_u64().unwrap() as usize, lines);
    // The partial buffer, then the 64 buffers the header counts that are not in the file.
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2);
    assert!(errors[1].as_str().unwrap().contains("the session wrote 129 buffers; the file holds 65"), "{errors:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `info` reports no undecoded event for any provider that has a schema
/// source (in the trace or built in), except the kernel configuration events
/// whose layouts no public source establishes, and the CLR's, of which only
/// the method events are built in (they name managed stack frames);
/// docs/decoding.md lists both.
#[test]
fn info_shows_no_undecoded_events_where_a_schema_source_exists() {
    const SYSTEM_CONFIG: &str = "01853a65-418f-4f36-aefc-dc0f1d2fd235";
    const SYS_CONFIG_EX: &str = "9b79ee91-b5fd-41c0-a243-4248e266e9d0";
    const CLR: [&str; 2] = ["e13c0d23-ccbc-4e12-931b-d9cc2eee27e4", "a669021c-c450-4609-a035-5af59af4df18"];
    let mut decoded_total = 0;
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        if entry["events"] == 0 {
            continue;
        }
        let info = info_json(corpus_file(name).to_str().unwrap());
        decoded_total += info["decoded_events"].as_u64().unwrap();
        for p in info["providers"].as_array().unwrap() {
            let sources = p["schema_sources"].as_array().unwrap();
            let undecoded = p["undecoded"].as_object().unwrap();
            let guid = p["guid"].as_str().unwrap();
            if sources.is_empty() || undecoded.is_empty() {
                continue;
            }
            let documented = (guid == SYSTEM_CONFIG || guid == SYS_CONFIG_EX || CLR.contains(&guid))
                && undecoded.keys().all(|k| k == "no schema for the event");
            // One provider's string-only event decodes; its others have no schema at all.
            let string_only = name == "pyetw__user.etl" && undecoded.keys().all(|k| k == "no schema for the provider");
            assert!(
                documented || string_only,
                "{name}: {} has schema sources {sources:?} but undecoded {undecoded:?}",
                p["name"]
            );
        }
    }
    // What the corpus decodes today; more sources may raise it, nothing may lower it.
    assert!(decoded_total >= 332_417, "{decoded_total}");
}
