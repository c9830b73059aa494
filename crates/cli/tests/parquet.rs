//! `nettrail export --format parquet`: the tables queried by DuckDB have
//! the rows of the CSV export, and typed columns that agree with it.
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
    for (table, command) in
        [("requests", "requests"), ("connections", "connections"), ("dns", "dns"), ("http_server", "http-server")]
    {
        let file = dir.join(format!("{table}.parquet"));
        let count = duckdb(&format!("select count(*) from '{}'", file.display()));
        let csv = nettrail(&[command, trace, "--format", "csv"]);
        assert_eq!(count, [csv_rows(&csv).to_string()], "{name}: {table}");
    }
    let events = duckdb(&format!("select count(*) from '{}'", dir.join("events.parquet").display()));
    let dumped = nettrail(&["dump", trace, "--format", "jsonl"]).lines().count();
    assert_eq!(events, [dumped.to_string()], "{name}: events");
}

#[test]
fn the_sample_in_duckdb() {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../samples/sample.etl");
    check(sample, "sample");
    let dir = export(sample, "sample-typed");
    // Typed columns: sums and filters work as numbers and text.
    let word = duckdb(&format!(
        "select process, pid, bytes_received, url from '{}' where layer = 'WinINet'",
        dir.join("requests.parquet").display()
    ));
    assert_eq!(word, ["WINWORD.EXE\t5630\t19695\thttps://templates.office.example/list?lang=en-US"]);
    let types = duckdb(&format!(
        "select column_name, column_type from (describe select pid, bytes_sent, start_s, open_at_end, url from '{}')",
        dir.join("requests.parquet").display()
    ));
    assert_eq!(types, ["pid\tBIGINT", "bytes_sent\tBIGINT", "start_s\tDOUBLE", "open_at_end\tBOOLEAN", "url\tVARCHAR"]);
    let ldap = duckdb(&format!(
        "select count(*) from '{}' where provider = 'Microsoft-Windows-LDAP-Client' and json_extract_string(properties, '$.SearchFilter') like '%alice%'",
        dir.join("events.parquet").display()
    ));
    assert_eq!(ldap, ["1"]);
}

#[test]
fn corpus_network_traces_in_duckdb() {
    for name in ["tx__KernelNetwork.etl", "tx__HTTP_Server.etl"] {
        check(nettrail_testkit::corpus_file(name).to_str().unwrap(), name);
    }
}
