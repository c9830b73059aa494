//! Untrusted traces end to end (issue 12): every command on each class of
//! hostile input keeps every good event, says what was wrong with the
//! documented exit code, stays within bounded memory, and writes no control
//! byte to a terminal and no formula to a spreadsheet. (Unix: the tests use
//! devices, pipes and the kernel's accounting of children's memory.)
#![cfg(unix)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nettrail_testkit::hostile::{self, formula_cells, terminal_controls};
use nettrail_testkit::{corpus_file, target_dir};
use serde_json::Value;

fn dir() -> PathBuf {
    let dir = target_dir().join("hostile-tests");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir().join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().expect("run nettrail")
}

fn run_on(args: &[&str], trace: &Path) -> Output {
    let mut all: Vec<&str> = args.to_vec();
    all.push(trace.to_str().unwrap());
    run(&all)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn jsonl(out: &Output) -> Vec<Value> {
    text(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

/// The most memory any command run by these tests has used (their peak
/// resident set, from the kernel's accounting of waited-for children).
#[allow(unsafe_code)]
fn peak_child_rss_bytes() -> u64 {
    // SAFETY: rusage is plain integers and timevals (all zeros is a valid
    // value), and getrusage only writes into the struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage), 0);
        usage
    };
    usage.ru_maxrss as u64 * 1024
}

fn sample() -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../samples/sample.etl")).unwrap()
}

/// Class 1: 1 000 buffers of a few bytes claiming 64 MiB each.
#[test]
fn a_decompression_bomb_is_refused_and_the_good_events_kept() {
    let base = std::fs::read(corpus_file("perfview__SelfDescribingSingleEvent.etl")).unwrap();
    // The header event differs (it counts the added buffers): compare what identifies each event.
    let fields = ["dump", "--format", "text", "--fields", "timecreated,providerguid,eventid,opcode,tid"];
    let good = text(&run_on(&fields, &write("base.etl", &base)).stdout);
    let bomb = write("bomb.etl", &hostile::decompression_bomb(&base, 1000, 64 << 20));
    let out = run_on(&fields, &bomb);
    assert_eq!(out.status.code(), Some(2));
    assert!(good.lines().count() > 5);
    assert!(text(&out.stdout) == good, "every good event, as without the bomb");
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().count(), 11, "{stderr}");
    assert!(stderr.lines().next().unwrap().contains("claims 0x4000048 bytes once expanded"), "{stderr}");
    assert!(
        stderr.ends_with(
            "990 more damaged places: 990 compressed buffers claiming more than a buffer holds \
             (`nettrail info --format json` lists them all)\n"
        ),
        "{stderr}"
    );
    let info: Value = serde_json::from_slice(&run_on(&["info", "--format", "json"], &bomb).stdout).unwrap();
    assert_eq!(info["errors"].as_array().unwrap().len(), 1000);
}

/// Class 2: 40 buffers that each repeat one WebIO record until 16 MiB:
/// 2.8 million events from 52 KB. Memory stays bounded in every command.
#[test]
fn an_amplified_trace_stays_in_bounded_memory() {
    let sample = sample();
    let record = webio_record(&sample);
    let amplified = write("amplified.etl", &hostile::event_amplification(&sample, &record, 40));
    let info: Value = serde_json::from_slice(&run_on(&["info", "--format", "json"], &amplified).stdout).unwrap();
    let repeated = 40 * (((16 << 20) - 0x48) / record.len() as u64);
    let base: Value =
        serde_json::from_slice(&run_on(&["info", "--format", "json"], &write("sample.etl", &sample)).stdout).unwrap();
    assert_eq!(info["events"].as_u64().unwrap(), base["events"].as_u64().unwrap() + repeated);
    // The repeated header event changes no request: the same rows as the sample.
    let rows = jsonl(&run_on(&["requests", "--format", "jsonl"], &amplified));
    let sample_rows = jsonl(&run(&["requests", "--format", "jsonl", dir().join("sample.etl").to_str().unwrap()]));
    assert_eq!(rows.len(), sample_rows.len());
    let parquet = dir().join("amplified-parquet");
    let html = dir().join("amplified.html");
    for args in [
        vec!["requests"],
        vec!["view", "-o", html.to_str().unwrap()],
        vec!["export", "--format", "parquet", "-o", parquet.to_str().unwrap()],
        vec!["export", "--format", "perfetto", "-o", dir().join("amplified.json").to_str().unwrap()],
    ] {
        let out = run_on(&args, &amplified);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", text(&out.stderr));
    }
    let peak = peak_child_rss_bytes();
    assert!(peak < 1 << 30, "a command used {} MB", peak >> 20);
}

fn webio_record(sample: &[u8]) -> Vec<u8> {
    let trace = nettrail_etl::Trace::parse(sample).unwrap();
    let mut scratch = Vec::new();
    for info in trace.buffers() {
        let contents = trace.contents(&info, &mut scratch);
        for (offset, record) in trace.records(&info, &contents).flatten() {
            if record.provider.to_string() == "50b3e73c-9370-461d-bb9f-26f32d68887d" && record.id == 101 {
                return contents.bytes[offset..offset + usize::from(record.size).next_multiple_of(8)].to_vec();
            }
        }
    }
    panic!("the sample has no WebIO 101 record")
}

/// Classes 3, 4, 5: a zero size field mid-file, a buffer copied after
/// itself, a cut between buffers. Each is said (file, offset, what), exit 2.
#[test]
fn lying_buffers_are_said_and_the_rest_is_read() {
    let base = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let buffers = hostile::buffers(&base);
    let events = |path: &Path| text(&run_on(&["dump", "--format", "text", "--fields", "timecreated"], path).stdout);
    let original = events(&write("kernelnetwork.etl", &base));
    let in_buffer_40 = {
        let only: Vec<u8> = [&base[..buffers[1].0], &base[buffers[40].0..buffers[41].0]].concat();
        let mut only = only;
        hostile::set_logfile_u32(&mut only, hostile::logfile::BUFFERS_WRITTEN, 2);
        events(&write("buffer40.etl", &only)).lines().count()
            - events(&write("header-only.etl", &base[..buffers[1].0])).lines().count()
    };
    assert!(in_buffer_40 > 10);

    let zero = write("zero-size.etl", &hostile::zero_buffer_size(&base, 40));
    let out = run_on(&["dump", "--format", "text", "--fields", "timecreated"], &zero);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout).lines().count(), original.lines().count() - in_buffer_40);
    assert_eq!(
        text(&out.stderr),
        format!(
            "nettrail: {}: at offset 0x50000 (buffer 40): buffer size field is 0 but data follows (a never-written \
             buffer is all zeros); skipped 0x2000 bytes, reading resumed at the next buffer, offset 0x52000\n",
            zero.display()
        )
    );
    // The requests after the damage are there: as many rows as the model finds without that buffer.
    let rows = jsonl(&run_on(&["requests", "--format", "jsonl"], &zero));
    assert!(rows.len() > 100, "{}", rows.len());

    let copy = write("duplicated.etl", &hostile::duplicated_buffer(&base, 40));
    let out = run_on(&["dump", "--format", "text", "--fields", "timecreated"], &copy);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), original, "every event once");
    assert!(text(&out.stderr).contains("buffer is a byte-for-byte copy of the buffer at offset 0x50000"));
    let connections = |path: &Path| text(&run_on(&["connections", "--format", "csv"], path).stdout);
    assert_eq!(connections(&copy), connections(&dir().join("kernelnetwork.etl")), "bytes counted once");

    let cut = write("cut.etl", &hostile::cut_before_buffer(&base, 100));
    let out = run_on(&["info"], &cut);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("session wrote 129 buffers; the file holds 100"), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("DAMAGE        at offset 0xc8000 (buffer 100)"));
}

/// Class 6: devices and garbage pipes are refused at once; a trace piped in is read.
#[test]
fn devices_are_refused_and_pipes_read() {
    for device in ["/dev/zero", "/dev/urandom"] {
        let out = run(&["info", device]);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(
            text(&out.stderr),
            format!(
                "nettrail: {device}: cannot open: a character device, not a file: .etl files are read (and pipes, up to 4 GiB)\n"
            )
        );
    }
    let piped = Command::new("sh")
        .arg("-c")
        .arg("cat \"$1\" | \"$0\" info --format json /dev/stdin")
        .arg(env!("CARGO_BIN_EXE_nettrail"))
        .arg(corpus_file("tx__KernelNetwork.etl"))
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", text(&piped.stderr));
    let info: Value = serde_json::from_slice(&piped.stdout).unwrap();
    assert_eq!(info["buffers"], 129);
    let noise = Command::new("sh")
        .arg("-c")
        .arg("head -c 100000000 /dev/urandom | \"$0\" info /dev/stdin")
        .arg(env!("CARGO_BIN_EXE_nettrail"))
        .output()
        .unwrap();
    assert_eq!(noise.status.code(), Some(1));
    assert!(text(&noise.stderr).contains("/dev/stdin: cannot open: not an .etl trace"), "{}", text(&noise.stderr));
}

/// Class 8: impossible header values are shown flagged, never used.
#[test]
fn implausible_header_values_are_flagged() {
    let base = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let path = write("implausible.etl", &hostile::implausible_header(&base));
    let out = run_on(&["info"], &path);
    assert_eq!(out.status.code(), Some(0));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("4294967295 (implausible) CPUs, 64-bit pointers (the header's value is implausible)"),
        "{stdout}"
    );
    assert!(stdout.contains("buffers       129 of 4294967295 (implausible) bytes"), "{stdout}");
    assert!(
        stdout.contains("lost          4294967295 (implausible) events, 4294967295 (implausible) buffers"),
        "{stdout}"
    );
    assert!(
        stdout.contains("note          the trace header's NumberOfProcessors is 4294967295 (0xffffffff)"),
        "{stdout}"
    );
}

/// Class 9: what a file is not, said plainly.
#[test]
fn files_that_are_not_traces_are_named() {
    let csv = write("table.etl", b"Date,Host,Bytes\n2026-01-15,example.com,12\n");
    let out = run_on(&["info"], &csv);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        text(&out.stderr),
        format!("nettrail: {}: not an .etl trace: a text file; it begins \"Date,Host,Bytes\"\n", csv.display())
    );
    let corrupt = run(&["info", corpus_file("histories__ExplorerStartupLog.CORRUPT.etl").to_str().unwrap()]);
    assert!(text(&corrupt.stderr).contains("zero bytes were all replaced by spaces"), "{}", text(&corrupt.stderr));
}

/// Classes 10 and 11: the synthesized trace whose process name, command
/// line, host, URL and status line hold terminal escapes, line breaks,
/// bidirectional overrides and formulas, through every output for people
/// and every CSV; the logger name holds an OSC title sequence.
#[test]
fn hostile_strings_reach_no_terminal_and_no_spreadsheet() {
    let mut bytes = nettrail_synth::scenarios::hostile_strings().unwrap();
    set_logger_name(&mut bytes, "\u{1b}]0;pw\u{7}");
    let trace = write("hostile-strings.etl", &bytes);
    let rows = jsonl(&run_on(&["requests", "--format", "jsonl"], &trace));
    let url = rows.iter().find_map(|r| r["url"].as_str().filter(|u| u.contains("forged"))).expect("the hostile URL");
    assert!(url.contains('\u{1b}') && url.contains("\r\n"), "JSON keeps the value: {url:?}");
    assert!(rows.iter().any(|r| r["process"].as_str().is_some_and(|p| p.contains('\u{1b}'))));

    let human: &[&[&str]] = &[
        &["info"],
        &["requests"],
        &["connections"],
        &["dns"],
        &["http-server"],
        &["stack"],
        &["dump", "--format", "text"],
        &["dump", "--format", "text", "--fields", "message"],
        &["live", "--replay"],
        &["requests", "--format", "jsonl"],
        &["dump", "--format", "jsonl"],
        &["dump", "--format", "xml"],
        &["info", "--format", "json"],
    ];
    for args in human {
        let out = run_on(args, &trace);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let bad = terminal_controls(bytes);
            assert!(bad.is_empty(), "{args:?} {name}: control characters at {bad:?}: {}", text(bytes));
        }
    }
    // One row, one line: the table's rows are the request count plus the heading.
    let table = text(&run_on(&["requests"], &trace).stdout);
    assert_eq!(table.lines().count(), rows.len() + 1, "{table}");
    assert!(table.contains("\\x1b[2J"), "{table}");

    let csv: &[&[&str]] = &[
        &["requests", "--format", "csv"],
        &["connections", "--format", "csv"],
        &["dns", "--format", "csv"],
        &["dump", "--format", "csv"],
        &["export", "--format", "csv", "--table", "requests"],
    ];
    for args in csv {
        let out = run_on(args, &trace);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        let body = text(&out.stdout);
        assert_eq!(formula_cells(&body), Vec::<String>::new(), "{args:?}");
        // RFC 4180 lines end in CRLF; no other control character is written.
        let without_line_ends = body.replace("\r\n", "\n");
        assert!(terminal_controls(without_line_ends.as_bytes()).is_empty(), "{args:?}: {body}");
    }
    let requests_csv = text(&run_on(&["requests", "--format", "csv"], &trace).stdout);
    assert!(requests_csv.contains(",'@SUM(1+1)\\x1b[31m.example,"), "{requests_csv}");
}

/// Overwrites the logger name of a trace's header in place (same UTF-16 length).
fn set_logger_name(bytes: &mut [u8], name: &str) {
    let at = hostile::logfile_payload(bytes) + hostile::logfile::LOGGER_NAME;
    for (i, unit) in name.encode_utf16().enumerate() {
        let p = at + 2 * i;
        assert_ne!(bytes[p..p + 2], [0, 0], "the logger name is shorter than {name:?}");
        bytes[p..p + 2].copy_from_slice(&unit.to_le_bytes());
    }
}

/// Class 12: the exit codes the README documents.
#[test]
fn exit_codes_follow_the_contract() {
    for args in [&["--help"][..], &["--version"], &["info", "--help"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}");
        assert!(!out.stdout.is_empty() && out.stderr.is_empty(), "{args:?}");
    }
    for args in [&[][..], &["info"], &["info", "--bogus", "x.etl"], &["frobnicate"], &["requests", "--sort"]] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", text(&out.stderr));
        assert!(!out.stderr.is_empty() && out.stdout.is_empty(), "{args:?}");
    }
    let missing = run(&["info", "/nonexistent/trace.etl"]);
    assert_eq!(missing.status.code(), Some(1));
    let good = run(&["info", corpus_file("tx__KernelNetwork.etl").to_str().unwrap()]);
    assert_eq!(good.status.code(), Some(0));
    let base = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let damaged = write("cut-for-exit.etl", &hostile::cut_before_buffer(&base, 64));
    assert_eq!(run_on(&["requests"], &damaged).status.code(), Some(2));
}
