//! The kinds of file a trace can come in (issue 12): devices are refused,
//! pipes are read up to a limit and refused at once when they do not begin
//! like a trace, and a mapped file cut short by another process ends the
//! program with a message rather than a bare SIGBUS. (Unix: devices, pipes,
//! `ulimit` and SIGBUS are what is tested.)
#![cfg(unix)]

use std::io::Write;
use std::process::{Command, Stdio};

use nettrail_etl::{Trace, TraceFile};
use nettrail_testkit::corpus_file;

#[test]
fn devices_are_refused_without_reading() {
    for device in ["/dev/zero", "/dev/urandom", "/dev/null"] {
        let e = TraceFile::open(device).unwrap_err();
        assert_eq!(e.to_string(), "a character device, not a file: .etl files are read (and pipes, up to 4 GiB)");
    }
    let e = TraceFile::open(env!("CARGO_MANIFEST_DIR")).unwrap_err();
    assert!(e.to_string().starts_with("a directory, not a file"), "{e}");
}

/// Runs this test binary's `test` with `NETTRAIL_FILE_TEST_CHILD=what`, feeding `stdin`; returns its exit code and stderr.
fn child(test: &str, what: &str, stdin: Option<&[u8]>) -> (Option<i32>, String) {
    let exe = std::env::current_exe().unwrap();
    let mut c = Command::new(exe)
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env("NETTRAIL_FILE_TEST_CHILD", what)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(bytes) = stdin {
        // The child may stop reading early (a refused pipe): a broken pipe is fine.
        let _ = c.stdin.take().unwrap().write_all(bytes);
    }
    let out = c.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// In a child: open `/dev/stdin` (a pipe) and print what happened.
#[test]
fn pipes_are_read_when_they_begin_like_a_trace() {
    if let Ok(what) = std::env::var("NETTRAIL_FILE_TEST_CHILD") {
        if what != "pipe" {
            return;
        }
        match TraceFile::open("/dev/stdin") {
            Ok(file) => {
                let trace = Trace::parse(file.bytes()).unwrap();
                eprintln!("read {} bytes, {} buffers", file.bytes().len(), trace.buffers().len());
            }
            Err(e) => eprintln!("refused: {e}"),
        }
        return;
    }
    let trace = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let (code, stderr) = child("pipes_are_read_when_they_begin_like_a_trace", "pipe", Some(&trace));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("read 1056768 bytes, 129 buffers"), "{stderr}");
    // 64 MiB of random bytes: refused after the first few, not read to the end.
    let mut rng = nettrail_testkit::Rng(7);
    let noise = rng.bytes(64 << 20);
    let (code, stderr) = child("pipes_are_read_when_they_begin_like_a_trace", "pipe", Some(&noise));
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("refused: not an .etl trace"), "{stderr}");
}

/// In a child: map a copy of a trace, truncate it, read it: the guard ends
/// the child with a message naming the file and exit code 2.
#[test]
fn a_file_truncated_while_mapped_ends_with_a_message() {
    let path = std::env::temp_dir().join(format!("nettrail-truncated-{}.etl", std::process::id()));
    if std::env::var("NETTRAIL_FILE_TEST_CHILD").as_deref() == Ok("truncate") {
        let path = std::env::var("NETTRAIL_TRUNCATED_PATH").unwrap();
        nettrail_etl::file::stop_cleanly_if_truncated_while_mapped();
        let file = TraceFile::open(&path).unwrap();
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(4096).unwrap();
        // Touch every page: past the new end, the pages are gone.
        let sum: u64 = file.bytes().iter().step_by(4096).map(|&b| u64::from(b)).sum();
        eprintln!("read everything ({sum}): the guard did not fire");
        return;
    }
    std::fs::write(&path, std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap()).unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args(["--exact", "a_file_truncated_while_mapped_ends_with_a_message", "--nocapture", "--test-threads", "1"])
        .env("NETTRAIL_FILE_TEST_CHILD", "truncate")
        .env("NETTRAIL_TRUNCATED_PATH", &path)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "nettrail: {}: the file shrank while it was read (another process truncated or rewrote it); output stops here",
            path.display()
        )),
        "{stderr}"
    );
}

/// A 10 GiB sparse file under a 1 GiB address-space limit: the map fails,
/// and the error says so (instead of reading the file into memory).
#[test]
fn a_failed_map_says_why() {
    if std::env::var("NETTRAIL_FILE_TEST_CHILD").as_deref() == Ok("sparse") {
        let path = std::env::var("NETTRAIL_SPARSE_PATH").unwrap();
        match TraceFile::open(&path) {
            Ok(f) => eprintln!("opened {} bytes", f.bytes().len()),
            Err(e) => eprintln!("error: {e}"),
        }
        return;
    }
    let path = std::env::temp_dir().join(format!("nettrail-sparse-{}.etl", std::process::id()));
    std::fs::File::create(&path).unwrap().set_len(10 << 30).unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" --exact a_failed_map_says_why --nocapture --test-threads 1")
        .arg(exe)
        .env("NETTRAIL_FILE_TEST_CHILD", "sparse")
        .env("NETTRAIL_SPARSE_PATH", &path)
        .output()
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(
            "error: cannot map its 10737418240 bytes into memory: Cannot allocate memory (os error 12) \
             (out of address space: is a memory limit set with `ulimit -v`?)"
        ),
        "{stderr}"
    );
}
