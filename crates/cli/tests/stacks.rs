//! Stacks end to end: synthesized traces whose apps run code from the
//! fixture DLL that clang and lld-link built (crates/symbols/tests/data),
//! read by `nettrail stack`, `requests --stacks` and `dump`, with and
//! without that DLL's real PDB.

use std::path::{Path, PathBuf};
use std::process::Command;

use nettrail_synth::scenarios::{self, Scenario};
use nettrail_testkit::target_dir;
use serde_json::Value;

const FIXTURE_DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../symbols/tests/data");

/// Writes a scenario's trace under target/ and returns its path.
fn trace(name: &str, scenario: Scenario) -> PathBuf {
    let dir = target_dir().join("stacks-tests");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}.etl"));
    std::fs::write(&path, scenario().unwrap()).unwrap();
    path
}

/// Runs nettrail with no symbol path from the environment: (stdout, stderr).
fn nettrail(args: &[&str], file: &Path) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail"))
        .args(args)
        .arg(file)
        .env_remove("_NT_SYMBOL_PATH")
        .env_remove("_NT_ALT_SYMBOL_PATH")
        .output()
        .expect("run nettrail");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

fn jsonl(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("{v} is not an array"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_scenarios_carry_the_fixture_dlls_real_identity() {
    let dll = std::fs::read(Path::new(FIXTURE_DATA).join("nettrail_fixture.dll")).unwrap();
    let pe = nettrail_symbols::pe_identity(&dll).unwrap();
    let debug = pe.debug.expect("a CodeView record");
    let ours = scenarios::fixture_identity();
    assert_eq!(pe.time_date_stamp, ours.time_date_stamp);
    assert_eq!(u64::from(pe.size_of_image), scenarios::FIXTURE_SIZE);
    assert_eq!(debug.guid.to_string().to_lowercase(), ours.guid.to_string().to_lowercase());
    assert_eq!((debug.age, debug.pdb_path.as_str()), (ours.age, ours.pdb_name.as_str()));
}

#[test]
fn stack_names_the_fixtures_functions_and_lines_with_its_pdb() {
    let file = trace("winhttp-async-pool", scenarios::winhttp_async_pool);
    let (out, err) = nettrail(&["stack", "--request", "3", "--symbols", FIXTURE_DATA], &file);
    let lines: Vec<&str> = out.trim_end().lines().map(str::trim).collect();
    let expected = [
        "request 3: WinHTTP GET https://api.contoso.com/v1/status — asyncapp.exe (6200) at 0.104360 s for 0.004400 s",
        "first: where the work began (thread 6204):",
        "ntdll.dll+0x34c12",
        "nettrail_fixture.dll!build_request+0x19 (fixture.c:25)",
        "nettrail_fixture.dll!fixture_send+0x9 (fixture.c:30)",
        "asyncapp.exe+0x1d2e",
        "[Windows thread pool: queued on thread 6204, ran on thread 6236]",
        "middle (thread 6236):",
        "ntdll.dll+0x9d2a4",
        "winhttp.dll+0x20b14",
        "asyncapp.exe+0x1d2e",
        "[WinHTTP work item: queued on thread 6236, ran on thread 6240]",
        "last: the request's own stack (thread 6240):",
        "ntdll.dll+0x9d2a4",
        "winhttp.dll+0x17c44",
        "asyncapp.exe+0x1d2e",
    ];
    assert_eq!(lines, expected);
    assert!(err.contains("symbols: 1 of 1 PDBs found"), "{err}");
}

#[test]
fn inlined_frames_come_first_and_unresolved_frames_stay_module_offsets() {
    let file = trace("office-pools", scenarios::office_pools);
    let (out, _) =
        nettrail(&["requests", "--stacks", "first,last", "--format", "jsonl", "--symbols", FIXTURE_DATA], &file);
    let rows = jsonl(&out);
    let config = rows.iter().find(|r| r["url"] == "https://config.office.example/config").expect("the WinINet row");
    assert_eq!(
        strings(&config["first_stack"]),
        [
            "WINWORD.EXE+0x41a10",
            "nettrail_fixture.dll!mix [inlined] (fixture.c:12)",
            "nettrail_fixture.dll!checksum+0x67 (fixture.c:18)",
            "nettrail_fixture.dll!fixture_send+0x9 (fixture.c:30)",
            "WINWORD.EXE+0x1d2e",
        ]
    );
    assert_eq!(strings(&config["last_stack"]), ["ntdll.dll+0x9d2a4", "wininet.dll+0x31e74", "WINWORD.EXE+0x1d2e"]);
    // Only the views asked for.
    assert!(config.get("full_stack").is_none() && config.get("middle_stacks").is_none());

    // Without the PDB the same frames are module offsets.
    let (out, err) = nettrail(&["requests", "--stacks", "first", "--format", "jsonl"], &file);
    let rows = jsonl(&out);
    let config = rows.iter().find(|r| r["url"] == "https://config.office.example/config").unwrap();
    assert_eq!(
        strings(&config["first_stack"])[1..4],
        ["nettrail_fixture.dll+0x1067", "nettrail_fixture.dll+0x1139", "WINWORD.EXE+0x1d2e"]
    );
    assert!(!err.contains("PDBs found"), "{err}");
}

#[test]
fn dump_and_info_show_the_stacks_of_synthesized_events() {
    let file = trace("timer-request", scenarios::timer_request);
    let (out, _) =
        nettrail(&["dump", "--format", "jsonl", "--provider", "c861d0e2-a2c1-4d36-9f9c-970bab943a12"], &file);
    let events = jsonl(&out);
    // TimerSet, with the setter's stack from a StackWalk record.
    let set = events.iter().find(|e| e["opcode"] == 42).expect("TimerSet");
    assert_eq!(
        strings(&set["stack"]),
        ["ntdll.dll+0x39a40", "nettrail_fixture.dll+0x110d", "nettrail_fixture.dll+0x1139", "updater.exe+0x1d2e"]
    );
    // The expirations have none (the profile asks none for them).
    assert!(events.iter().filter(|e| e["opcode"] == 48).all(|e| e.get("stack").is_none()));
    let (out, _) = nettrail(&["info"], &file);
    // The timer's StackWalk record, and AFD's two creations in extended data.
    let line = out.lines().find(|l| l.starts_with("stacks")).expect("a stacks line");
    assert_eq!(line, "stacks        3 events (1 joined from StackWalk records, 2 in extended data)");
}
