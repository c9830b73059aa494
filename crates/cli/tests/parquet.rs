//! `nettrail export --format parquet`: one Hive-partitioned dataset of one
//! or many traces, queried by DuckDB: the rows of the CSV export, fixed typed
//! schemas (the same on every trace), lists and times as such.
#![cfg(feature = "parquet")]

use std::process::Command;

fn nettrail(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Runs SQL in DuckDB; one line per result row, values tab-separated.
fn duckdb(sql: &str) -> Vec<String> {
    let python = nettrail_testkit::python_duckdb().unwrap_or_else(|e| panic!("DuckDB (PyPI) is needed: {e}"));
    let script = "import duckdb, sys\nfor row in duckdb.sql(sys.argv[1]).fetchall(): print('\\t'.join('' if v is None else str(v) for v in row))";
    let out = Command::new(python).args(["-c", script, sql]).output().unwrap();
    assert!(out.status.success(), "{sql}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(str::to_string).collect()
}

fn export(trace: &str, name: &str) -> std::path::PathBuf {
    let dir = nettrail_testkit::target_dir().join("parquet-tests").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    nettrail(&["export", trace, "--format", "parquet", "-o", dir.to_str().unwrap()]);
    dir
}

/// The glob of one table of a dataset, as DuckDB reads it.
fn table(dir: &std::path::Path, table: &str) -> String {
    format!("read_parquet('{}/table={table}/*/*.parquet', hive_partitioning = true)", dir.display())
}

/// The partition of one trace's table (one file).
fn part(dir: &std::path::Path, table: &str, trace: &str) -> String {
    format!("'{}/table={table}/trace={trace}/part-0.parquet'", dir.display())
}

/// Data rows of a CSV (RFC 4180: quoted fields may hold line breaks).
fn csv_rows(text: &str) -> usize {
    let mut rows = 0;
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '\n' if !quoted => rows += 1,
            _ => {}
        }
    }
    rows - 1
}

fn check(trace: &str, name: &str) {
    let dir = export(trace, name);
    let stem = std::path::Path::new(trace).file_stem().unwrap().to_str().unwrap().to_string();
    for (t, command) in
        [("requests", "requests"), ("connections", "connections"), ("dns", "dns"), ("http_server", "http-server")]
    {
        let count = duckdb(&format!("select count(*) from {}", part(&dir, t, &stem)));
        let csv = nettrail(&[command, trace, "--format", "csv"]);
        assert_eq!(count, [csv_rows(&csv).to_string()], "{name}: {t}");
    }
    let events = duckdb(&format!("select count(*) from {}", part(&dir, "events", &stem)));
    let dumped = nettrail(&["dump", trace, "--format", "jsonl"]).lines().count();
    assert_eq!(events, [dumped.to_string()], "{name}: events");
}

#[test]
fn the_sample_in_duckdb() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.etl");
    check(sample, "sample");
    let dir = export(sample, "sample-typed");
    // Typed columns: sums and filters work as numbers, text, lists and times.
    let word = duckdb(&format!(
        "select trace, process, pid, bytes_received, threads, url, start_utc::varchar from {} where layer = 'WinINet'",
        table(&dir, "requests")
    ));
    // The same values as the JSON lines of `requests`.
    let jsonl = nettrail(&["requests", sample, "--format", "jsonl"]);
    let row: serde_json::Value = jsonl
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["layer"] == "WinINet")
        .unwrap();
    let threads: Vec<String> = row["threads"].as_array().unwrap().iter().map(|t| t.to_string()).collect();
    // DuckDB shows times as `2026-01-15 09:30:00.9+00`; ours are `2026-01-15T09:30:00.9000000Z`.
    let utc =
        row["start_utc"].as_str().unwrap().replace('T', " ").trim_end_matches('Z').trim_end_matches('0').to_string()
            + "+00";
    assert_eq!(
        word,
        [format!(
            "sample\tWINWORD.EXE\t5630\t19695\t[{}]\t{}\t{utc}",
            threads.join(", "),
            row["url"].as_str().unwrap()
        )]
    );
    let ldap = duckdb(&format!(
        "select count(*) from {} where provider = 'Microsoft-Windows-LDAP-Client' and json_extract_string(properties, '$.SearchFilter') like '%alice%'",
        table(&dir, "events")
    ));
    assert_eq!(ldap, ["1"]);
    let answers = duckdb(&format!(
        "select name, answers[1], len(resolvers) from {} where name = 'www.example.com'",
        table(&dir, "dns")
    ));
    assert_eq!(answers, ["www.example.com\t93.184.216.34\t3"]);
}

/// `DESCRIBE` of every table: the same fixed schema for every trace — here
/// the sample (every table has rows) and an Http.sys-only trace (requests,
/// connections and DNS empty) — with times as TIMESTAMP and lists as LIST.
#[test]
fn every_table_has_one_schema_for_every_trace() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.etl");
    let server = nettrail_testkit::corpus_file("tx__HTTP_Server.etl");
    let dir = nettrail_testkit::target_dir().join("parquet-tests").join("schemas");
    let _ = std::fs::remove_dir_all(&dir);
    nettrail(&["export", sample, server.to_str().unwrap(), "--format", "parquet", "-o", dir.to_str().unwrap()]);
    let describe = |t: &str, trace: &str| {
        duckdb(&format!("select column_name, column_type from (describe select * from {})", part(&dir, t, trace)))
    };
    for t in ["requests", "connections", "dns", "http_server", "events"] {
        let a = describe(t, "sample");
        assert_eq!(a, describe(t, "tx__HTTP_Server"), "{t}");
        assert_eq!(a[0], "trace\tVARCHAR", "{t}");
        assert!(a.iter().any(|c| c.ends_with("\tTIMESTAMP WITH TIME ZONE")), "{t}: {a:?}");
    }
    let requests = describe("requests", "sample");
    for column in [
        "start_utc\tTIMESTAMP WITH TIME ZONE",
        "threads\tBIGINT[]",
        "alt_names\tVARCHAR[]",
        "pid\tBIGINT",
        "start_s\tDOUBLE",
        "open_at_end\tBOOLEAN",
    ] {
        assert!(requests.contains(&column.to_string()), "{column}: {requests:?}");
    }
    let dns = describe("dns", "tx__HTTP_Server");
    assert!(dns.contains(&"answers\tVARCHAR[]".to_string()), "{dns:?}");
    // One glob reads both traces' rows, each with its trace.
    let per_trace =
        duckdb(&format!("select trace, count(*) from {} group by trace order by trace", table(&dir, "http_server")));
    let served = nettrail(&["http-server", server.to_str().unwrap(), "--format", "csv"]);
    assert_eq!(per_trace, [format!("tx__HTTP_Server\t{}", csv_rows(&served))]);
}

/// A fleet with a damaged trace and a file that is no trace: both said, the
/// rest written, exit code 2.
#[test]
fn a_fleet_with_damage_writes_what_it_can() {
    let dir = nettrail_testkit::target_dir().join("parquet-tests").join("fleet");
    let _ = std::fs::remove_dir_all(&dir);
    let input = dir.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let base = std::fs::read(nettrail_testkit::corpus_file("tx__KernelNetwork.etl")).unwrap();
    std::fs::write(input.join("a.etl"), &base).unwrap();
    std::fs::write(input.join("b cut.etl"), nettrail_testkit::hostile::cut_before_buffer(&base, 64)).unwrap();
    std::fs::write(input.join("c.etl"), b"not a trace\n").unwrap();
    let out_dir = dir.join("dataset");
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail"))
        .args(["export", input.to_str().unwrap(), "--format", "parquet", "-o", out_dir.to_str().unwrap()])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr
            .contains("b cut.etl: at offset 0x80000 (buffer 64): the trace header says the session wrote 129 buffers"),
        "{stderr}"
    );
    assert!(stderr.contains("c.etl: not an .etl trace"), "{stderr}");
    assert!(stderr.contains("wrote 2 of 3 traces"), "{stderr}");
    let traces = duckdb(&format!("select distinct trace from {} order by trace", table(&out_dir, "connections")));
    assert_eq!(traces, ["a", "b_cut"]);
}

#[test]
fn corpus_network_traces_in_duckdb() {
    for name in ["tx__KernelNetwork.etl", "tx__HTTP_Server.etl"] {
        check(nettrail_testkit::corpus_file(name).to_str().unwrap(), name);
    }
}
