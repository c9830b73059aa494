//! `nettrail export --format har | perfetto | csv | jsonl`: HAR validated
//! against the HAR 1.2 schema (npm's har-validator, installed on first use
//! into target/har-node), its entries equal to the HTTP rows of `nettrail
//! requests`; Perfetto's Trace Event JSON well formed (every event has ph,
//! ts, pid, tid; flows pair up), with the sample's thread-pool hand-off as
//! an arrow and bytes/s counters that add up to the rows' bytes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const SAMPLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.etl");

fn nettrail(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// har-validator (HAR 1.2's JSON schema with ajv), installed once.
fn har_validator() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let dir = nettrail_testkit::target_dir().join("har-node");
        if !dir.join("node_modules/har-validator").is_dir() {
            std::fs::create_dir_all(&dir).unwrap();
            let status = Command::new("npm")
                .args(["install", "--silent", "--no-audit", "--no-fund", "har-validator@5.1.5"])
                .current_dir(&dir)
                .status()
                .expect("npm is needed to validate HAR files (install Node.js and npm)");
            assert!(status.success(), "npm install har-validator failed");
        }
        dir
    })
    .clone()
}

fn validate_har(file: &Path) {
    let dir = har_validator();
    let script = "const v = require('har-validator'); const har = JSON.parse(require('fs').readFileSync(process.argv[1]));\
                  v.har(har).then(() => console.log('valid')).catch(e => { console.error(JSON.stringify(e.errors || e)); process.exit(1); });";
    let out = Command::new("node").arg("-e").arg(script).arg(file).current_dir(&dir).output().expect("node");
    assert!(out.status.success(), "{}: not valid HAR 1.2: {}", file.display(), String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "valid");
}

fn export(trace: &str, format: &str, name: &str) -> (PathBuf, Value) {
    let path = nettrail_testkit::target_dir().join("export-tests");
    std::fs::create_dir_all(&path).unwrap();
    let file = path.join(name);
    let printed = nettrail(&["export", trace, "--format", format, "-o", file.to_str().unwrap()]);
    assert!(printed.is_empty(), "stdout stays empty with -o");
    let value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (file, value)
}

#[test]
fn har_of_the_sample_is_valid_and_matches_the_requests() {
    let (file, har) = export(SAMPLE, "har", "sample.har");
    validate_har(&file);
    let rows = jsonl(&nettrail(&["requests", SAMPLE, "--format", "jsonl"]));
    let http: Vec<&Value> = rows
        .iter()
        .filter(|r| ["WinINet", "WinHTTP", "URLMon"].contains(&r["layer"].as_str().unwrap()))
        .filter(|r| r["url"].as_str().is_some_and(|u| u.starts_with("http")))
        .collect();
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), http.len());
    assert_eq!(entries.len(), 4, "three browser requests and Word's");
    for (e, r) in entries.iter().zip(&http) {
        assert_eq!(e["request"]["url"], r["url"]);
        assert_eq!(e["request"]["method"], r["method"]);
        assert_eq!(e["_pid"], r["pid"]);
        assert_eq!(e["_process"], r["process"]);
        assert_eq!(e["_request"], r["request"]);
        assert_eq!(e["serverIPAddress"], r["ip"]);
        let ms = (r["duration_s"].as_f64().unwrap() * 1000.0 * 1000.0).round() / 1000.0;
        assert!((e["time"].as_f64().unwrap() - ms).abs() < 0.001, "{} vs {ms}", e["time"]);
        // The timings add up to the time (ssl lies within connect).
        let t = &e["timings"];
        let sum: f64 = ["blocked", "dns", "connect", "send", "wait", "receive"]
            .iter()
            .map(|k| t[*k].as_f64().unwrap())
            .filter(|&v| v >= 0.0)
            .sum();
        assert!((sum - e["time"].as_f64().unwrap()).abs() < 0.002, "timings {t} sum to {sum}, not {}", e["time"]);
        // Bytes at the HTTP layer are the headers and the body.
        let (head, body) =
            (e["response"]["headersSize"].as_i64().unwrap(), e["response"]["bodySize"].as_i64().unwrap());
        assert_eq!(head.max(0) + body, r["bytes_received"].as_i64().unwrap(), "{e}");
        let kind = e["_initiator"]["type"].as_str();
        assert_eq!(kind, Some("script"), "the stacks as DevTools' initiator");
    }
    // WinHTTP's rows carry the headers WebIO logged (100, 101), their sizes
    // as logged, and the phases its events bound; the first request to the
    // host looked it up, connected and shook hands, the next reused that.
    let events = jsonl(&nettrail(&["dump", SAMPLE, "--format", "jsonl", "--provider", "WebIO", "--pid", "4820"]));
    let at = |id: u64, n: usize| -> f64 {
        let t = events.iter().filter(|e| e["id"] == id).nth(n).unwrap_or_else(|| panic!("WebIO {id} #{n}"));
        t["timestamp_raw"].as_f64().unwrap() / 1e4
    };
    let logged = |id: u64, n: usize| events.iter().filter(|e| e["id"] == id).nth(n).unwrap()["properties"].clone();
    let browser: Vec<&Value> = entries.iter().filter(|e| e["_process"] == "browser.exe").collect();
    for (n, e) in browser.iter().enumerate() {
        let sent = logged(100, n);
        let received = logged(101, n);
        assert_eq!(e["request"]["headersSize"], sent["Length"], "{n}");
        assert_eq!(e["response"]["headersSize"], received["Length"], "{n}");
        let host = e["request"]["headers"].as_array().unwrap().iter().find(|h| h["name"] == "Host").unwrap();
        assert_eq!(host["value"], "www.example.com");
        assert_eq!(e["response"]["content"]["mimeType"], "application/octet-stream");
        let length = received["Headers"].as_str().unwrap().split("Content-Length: ").nth(1).unwrap();
        let length: i64 = length.split('\r').next().unwrap().parse().unwrap();
        assert_eq!(e["response"]["content"]["size"], length);
        assert_eq!(e["response"]["redirectURL"], "");
    }
    let first = &browser[0]["timings"];
    let near = |v: &Value, want: f64| assert!((v.as_f64().unwrap() - want).abs() < 0.001, "{v} vs {want}");
    near(&first["dns"], at(206, 0) - at(205, 0));
    near(&first["ssl"], at(703, 1) - at(700, 0));
    near(&first["connect"], at(703, 1) - at(200, 0));
    near(&first["send"], at(214, 0) - at(213, 0));
    for later in &browser[1..] {
        assert_eq!((later["timings"]["dns"].as_f64(), later["timings"]["connect"].as_f64()), (Some(-1.0), Some(-1.0)));
    }
    let word = entries.iter().find(|e| e["_process"] == "WINWORD.EXE").unwrap();
    assert_eq!(word["response"]["status"], 200);
    // WinINet logs no headers: none are made up, the type is DevTools' unknown.
    assert_eq!(word["request"]["headers"], serde_json::json!([]));
    assert_eq!(word["response"]["content"]["mimeType"], "x-unknown");
    // Its stacks: its own on top, the thread-pool post as the async parent.
    let stack = &word["_initiator"]["stack"];
    assert_eq!(stack["callFrames"][1]["functionName"], "wininet.dll+0x31e74");
    assert!(stack["parent"]["description"].as_str().unwrap().contains("thread pool"), "{stack}");
    assert_eq!(stack["parent"]["callFrames"].as_array().unwrap().last().unwrap()["url"], "WINWORD.EXE");
    assert_eq!(word["request"]["queryString"], serde_json::json!([{ "name": "lang", "value": "en-US" }]));
    // The stitched stacks: First is where the pool work was queued.
    let first: Vec<&str> = word["_firstStack"].as_array().unwrap().iter().map(|f| f.as_str().unwrap()).collect();
    assert_eq!(first.last(), Some(&"WINWORD.EXE+0x1d2e"), "{first:?}");
    assert!(word["_fullStack"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains("thread pool")));
}

#[test]
fn har_of_a_trace_without_http_is_valid_and_empty() {
    let trace = nettrail_testkit::corpus_file("tx__KernelNetwork.etl");
    let (file, har) = export(trace.to_str().unwrap(), "har", "kernelnetwork.har");
    validate_har(&file);
    assert_eq!(har["log"]["entries"].as_array().unwrap().len(), 0);
}

/// Checks the Trace Event JSON rules perfetto relies on; returns the events.
fn well_formed(doc: &Value) -> Vec<Value> {
    let events = doc["traceEvents"].as_array().expect("traceEvents").clone();
    let mut starts = BTreeMap::new();
    let mut finishes = BTreeMap::new();
    for e in &events {
        for key in ["ph", "ts", "pid", "tid"] {
            assert!(e.get(key).is_some(), "{key} missing in {e}");
        }
        assert!(e["ts"].as_f64().unwrap() >= 0.0, "{e}");
        match e["ph"].as_str().unwrap() {
            "X" => assert!(e["dur"].as_f64().unwrap() >= 0.0 && e["name"].is_string(), "{e}"),
            "s" => assert!(starts.insert(e["id"].to_string(), e.clone()).is_none(), "flow id twice: {e}"),
            "f" => assert!(finishes.insert(e["id"].to_string(), e.clone()).is_none(), "flow id twice: {e}"),
            "M" | "C" | "i" => {}
            other => panic!("unexpected phase {other}"),
        }
    }
    assert_eq!(starts.keys().collect::<Vec<_>>(), finishes.keys().collect::<Vec<_>>(), "every flow starts and ends");
    for (id, s) in &starts {
        assert!(finishes[id]["ts"].as_f64() >= s["ts"].as_f64(), "flow {id} goes back in time");
    }
    events
}

#[test]
fn perfetto_of_the_sample() {
    let (_, doc) = export(SAMPLE, "perfetto", "sample.perfetto.json");
    let events = well_formed(&doc);
    // Times count from the trace's start, which the metadata gives absolutely.
    let info: Value = serde_json::from_str(&nettrail(&["info", SAMPLE, "--format", "json"])).unwrap();
    assert_eq!(doc["metadata"]["trace_start_utc"], info["start_utc"]);
    assert_eq!(doc["metadata"]["trace_start_unix_us"], 1_768_469_400_000_000i64);
    let rows = jsonl(&nettrail(&["requests", SAMPLE, "--format", "jsonl"]));
    let slices: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X" && e["cat"] != "hand-off").collect();
    assert_eq!(slices.len(), rows.len());
    let names: BTreeSet<&str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| e["args"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains("WINWORD.EXE (5630)") && names.contains("browser.exe (4820)"), "{names:?}");
    // Word's work item: queued on thread 5634, ran on 5690 — one arrow.
    let flow = events.iter().find(|e| e["ph"] == "s" && e["pid"] == 5630).expect("Word's hand-off");
    assert_eq!(flow["tid"], 5634);
    let end = events.iter().find(|e| e["ph"] == "f" && e["id"] == flow["id"]).unwrap();
    assert_eq!((end["pid"].as_u64(), end["tid"].as_u64()), (Some(5630), Some(5690)));
    // Bytes/s counters add up to the rows' bytes, per process.
    let mut counted: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for c in events.iter().filter(|e| e["ph"] == "C") {
        let slot = counted.entry(c["pid"].as_u64().unwrap()).or_default();
        slot.0 += c["args"]["sent"].as_u64().unwrap();
        slot.1 += c["args"]["received"].as_u64().unwrap();
    }
    let mut expected: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    for r in &rows {
        let slot = expected.entry(r["pid"].as_u64().unwrap_or(0)).or_default();
        slot.0 += r["bytes_sent"].as_u64().unwrap_or(0);
        slot.1 += r["bytes_received"].as_u64().unwrap_or(0);
    }
    expected.retain(|_, v| *v != (0, 0));
    for (pid, (sent, received)) in &expected {
        let (s, r) = counted[pid];
        assert!(s.abs_diff(*sent) <= 2 && r.abs_diff(*received) <= 2, "pid {pid}: {s}/{r} vs {sent}/{received}");
    }
    // A DNS answer as an instant on the thread that asked.
    let dns = events.iter().find(|e| e["ph"] == "i" && e["name"] == "DNS www.example.com").unwrap();
    assert_eq!(dns["args"]["answers"], serde_json::json!(["93.184.216.34"]));
}

#[test]
fn perfetto_of_a_corpus_trace() {
    let trace = nettrail_testkit::corpus_file("tx__KernelNetwork.etl");
    let (_, doc) = export(trace.to_str().unwrap(), "perfetto", "kernelnetwork.perfetto.json");
    let events = well_formed(&doc);
    let rows = jsonl(&nettrail(&["requests", trace.to_str().unwrap(), "--format", "jsonl"]));
    assert!(!rows.is_empty());
    assert_eq!(events.iter().filter(|e| e["ph"] == "X").count(), rows.len());
}

#[test]
fn csv_and_jsonl_of_any_table() {
    for table in ["requests", "connections", "dns", "http-server"] {
        let exported = nettrail(&["export", SAMPLE, "--format", "jsonl", "--table", table]);
        let direct = nettrail(&[table, SAMPLE, "--format", "jsonl"]);
        assert_eq!(exported, direct, "{table}");
        let csv = nettrail(&["export", SAMPLE, "--format", "csv", "--table", table]);
        assert_eq!(csv, nettrail(&[table, SAMPLE, "--format", "csv"]), "{table}");
    }
}

/// A browser's requests (layer Chromium) are HAR entries with the HTTP
/// version their NetLog said (HTTP/2, HTTP/3), their status and bytes.
#[test]
fn har_of_a_browser_has_its_urls_and_versions() {
    let dir = nettrail_testkit::target_dir().join("export-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("browser-navigation.etl");
    std::fs::write(&trace, nettrail_synth::scenarios::browser_navigation().unwrap()).unwrap();
    let trace = trace.to_str().unwrap();
    let (file, har) = export(trace, "har", "browser.har");
    validate_har(&file);
    let rows = jsonl(&nettrail(&["requests", trace, "--format", "jsonl"]));
    let chromium: Vec<&Value> = rows.iter().filter(|r| r["layer"] == "Chromium").collect();
    let entries = har["log"]["entries"].as_array().unwrap();
    assert_eq!(entries.len(), chromium.len());
    let versions: Vec<(&str, &str, i64)> = entries
        .iter()
        .map(|e| {
            let url = e["request"]["url"].as_str().unwrap();
            (url, e["response"]["httpVersion"].as_str().unwrap(), e["response"]["status"].as_i64().unwrap())
        })
        .collect();
    assert_eq!(
        versions,
        [
            ("https://www.example.com/", "HTTP/2", 200),
            ("https://www.example.com/app.js", "HTTP/2", 200),
            // From the renderer's memory cache: no response in the trace.
            ("https://www.example.com/favicon.ico", "", 0),
            ("https://api.example.com/v1/data", "HTTP/3", 200),
        ]
    );
    let api = &entries[3];
    assert_eq!((api["_layer"].as_str(), api["response"]["bodySize"].as_i64()), (Some("Chromium"), Some(3080)));
    assert_eq!(api["serverIPAddress"], "203.0.113.50");
}
