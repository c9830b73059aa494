//! Every real trace of the shared corpus read against the facts that
//! independent readers established in `catalog.json`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use nettrail_etl::{FileTime, Summary, Trace, TraceFile};
use serde_json::Value;

fn corpus_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    assert!(dir.join("catalog.json").exists(), "the shared corpus is missing: expected {}", dir.display());
    dir
}

fn catalog() -> Vec<Value> {
    let text = std::fs::read_to_string(corpus_dir().join("catalog.json")).unwrap();
    let v: Value = serde_json::from_str(&text).unwrap();
    v["files"].as_array().unwrap().clone()
}

/// FILETIME of a catalog time such as `2016-05-26T20:17:22.478932Z`.
fn parse_utc(s: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    let frac = &s[20..s.len() - 1];
    let frac_100ns = format!("{frac:0<7}")[..7].parse::<i64>().unwrap();
    secs * 10_000_000 + frac_100ns + nettrail_etl::clock::FILETIME_UNIX_EPOCH
}

/// The catalog's times went through a float: they are within a microsecond.
fn same_instant(ours: i64, catalog: &Value) -> String {
    let theirs = parse_utc(catalog.as_str().unwrap());
    if (ours - theirs).abs() <= 15 { "same".into() } else { FileTime(ours).to_string() }
}

#[test]
fn every_corpus_file_matches_the_catalog() {
    let mut failures = Vec::new();
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        let file = TraceFile::open(corpus_dir().join(name)).unwrap();
        let expected_events = entry["events"].as_u64().unwrap();
        let trace = match Trace::parse(file.bytes()) {
            Ok(t) => t,
            Err(e) => {
                if expected_events != 0 {
                    failures.push(format!("{name}: {e}"));
                }
                continue;
            }
        };
        let s = Summary::compute(&trace);
        let h = trace.header();
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                failures.push(format!("{name}: {what}: got {got}, want {want}"));
            }
        };
        check("events", s.events.to_string(), expected_events.to_string());
        check("errors", format!("{:?}", s.errors), "[]".into());
        check("buffers", s.buffers.to_string(), entry["buffers"].to_string());
        check("compressed", s.compressed_buffers.to_string(), entry["compressed_buffers"].to_string());
        check("pointer", h.pointer_size.to_string(), entry["pointer_size"].to_string());
        check("build", h.build.to_string(), entry["windows_build"].to_string());
        check("clock", h.clock_type.to_string(), entry["clock_type"].to_string());
        check("cpus", h.number_of_processors.to_string(), entry["num_cpus"].to_string());
        check("buffer_size", h.buffer_size.to_string(), entry["buffer_size"].to_string());
        check("events_lost", h.events_lost.to_string(), entry["events_lost"].to_string());
        check("buffers_lost", h.buffers_lost.to_string(), entry["buffers_lost"].to_string());
        check("logger", h.logger_name.clone(), entry["logger_name"].as_str().unwrap().to_string());
        check("mode", format!("{:#x}", h.log_file_mode), entry["log_file_mode"].as_str().unwrap().to_string());
        check("start", same_instant(h.start_time, &entry["start_utc"]), "same".into());
        check("end", same_instant(h.end_time, &entry["end_utc"]), "same".into());
        let kinds: BTreeMap<String, u64> = s.record_kinds.iter().map(|(k, n)| (k.name().to_string(), *n)).collect();
        let want_kinds: BTreeMap<String, u64> =
            entry["header_types"].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_u64().unwrap())).collect();
        check("kinds", format!("{kinds:?}"), format!("{want_kinds:?}"));
        let providers: BTreeMap<String, u64> = s.providers.iter().map(|p| (p.guid.to_string(), p.events)).collect();
        let want_providers: BTreeMap<String, u64> = entry["providers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["guid"].as_str().unwrap().to_string(), p["count"].as_u64().unwrap()))
            .collect();
        check("providers", format!("{providers:?}"), format!("{want_providers:?}"));
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}
