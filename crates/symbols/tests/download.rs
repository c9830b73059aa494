//! Fetching from a symbol server, against a tiny server on the loopback
//! address (only built with the `download` feature).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use nettrail_symbols::{Guid, PdbId, PdbState, RejectReason, SymbolPath, Symbolizer};

/// Serves `files` (URL path → bytes) on 127.0.0.1 for at most `max_requests`
/// requests or 30 seconds, and records every requested path.
fn serve(files: Vec<(String, Vec<u8>)>, max_requests: usize) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    listener.set_nonblocking(true).expect("nonblocking");
    let base = format!("http://{}/symbols", listener.local_addr().expect("address"));
    let requested = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&requested);
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut served = 0;
        while served < max_requests && Instant::now() < deadline {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            served += 1;
            stream.set_nonblocking(false).expect("blocking");
            let mut reader = BufReader::new(stream.try_clone().expect("clone"));
            let mut request_line = String::new();
            reader.read_line(&mut request_line).expect("request line");
            let mut header = String::new();
            while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                header.clear();
            }
            let path = request_line.split(' ').nth(1).unwrap_or_default().to_owned();
            log.lock().expect("log").push(path.clone());
            let mut stream = stream;
            match files.iter().find(|(p, _)| *p == path) {
                Some((_, body)) => {
                    let head =
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
                    let _ = stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body));
                }
                None => {
                    let _ =
                        stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
                }
            }
        }
    });
    (base, requested)
}

fn fixture_url_path() -> String {
    format!("/symbols/{PDB_NAME}/{STORE_KEY}/{PDB_NAME}")
}

#[test]
fn missing_pdb_is_downloaded_into_the_cache_layout_once() {
    let cache = scratch("download-cache");
    let (base, requested) = serve(vec![(fixture_url_path(), std::fs::read(pdb_path()).expect("pdb"))], 4);
    let path = SymbolPath::parse(&format!("srv*{}*{base}", cache.display()));

    let mut symbolizer = Symbolizer::new(path.clone()).with_downloads(true);
    let frames = symbolizer.resolve(&fixture_id(), BUILD_REQUEST.0).expect("downloaded and resolved");
    assert_eq!(&*frames[0].function, "build_request");
    let stored = cache.join(PDB_NAME).join(STORE_KEY).join(PDB_NAME);
    assert_eq!(symbolizer.locate(&fixture_id()).found.as_deref(), Some(stored.as_path()));
    assert_eq!(std::fs::read(&stored).expect("stored"), std::fs::read(pdb_path()).expect("pdb"));

    // The next run finds it in the cache without asking the server.
    let mut again = Symbolizer::new(path).with_downloads(true);
    assert!(again.resolve(&fixture_id(), BUILD_REQUEST.0).is_some());
    assert_eq!(*requested.lock().expect("log"), [fixture_url_path()]);
}

#[test]
fn downloads_stay_off_unless_enabled() {
    let cache = scratch("download-off");
    let (base, requested) = serve(vec![(fixture_url_path(), std::fs::read(pdb_path()).expect("pdb"))], 1);
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&format!("srv*{}*{base}", cache.display())));
    assert_eq!(symbolizer.resolve(&fixture_id(), BUILD_REQUEST.0), None);
    let report = symbolizer.locate(&fixture_id());
    assert_eq!(report.state(), PdbState::Missing);
    assert!(report.searched.last().is_some_and(|s| s.ends_with("(downloads not enabled)")), "{:?}", report.searched);
    std::thread::sleep(Duration::from_millis(50));
    assert!(requested.lock().expect("log").is_empty());
}

#[test]
fn not_found_on_the_server_is_reported() {
    let cache = scratch("download-404");
    let (base, _requested) = serve(Vec::new(), 1);
    let mut symbolizer =
        Symbolizer::new(SymbolPath::parse(&format!("srv*{}*{base}", cache.display()))).with_downloads(true);
    assert_eq!(symbolizer.resolve(&fixture_id(), BUILD_REQUEST.0), None);
    let report = symbolizer.locate(&fixture_id());
    assert_eq!(report.state(), PdbState::Unreadable);
    assert!(report.rejected[0].to_string().contains("404"), "{}", report.rejected[0]);
    assert!(!cache.join(PDB_NAME).join(STORE_KEY).join(PDB_NAME).exists());
}

#[test]
fn a_served_file_of_another_build_is_rejected_and_not_kept() {
    let cache = scratch("download-wrong");
    let wanted = PdbId::new(PDB_NAME, Guid::from_le_bytes(GUID_BYTES), 2);
    let url_path = format!("/symbols/{PDB_NAME}/{}/{PDB_NAME}", wanted.store_key());
    let (base, _requested) = serve(vec![(url_path, std::fs::read(pdb_path()).expect("pdb"))], 1);
    let mut symbolizer =
        Symbolizer::new(SymbolPath::parse(&format!("srv*{}*{base}", cache.display()))).with_downloads(true);
    assert_eq!(symbolizer.resolve(&wanted, BUILD_REQUEST.0), None);
    let report = symbolizer.locate(&wanted);
    assert_eq!(report.state(), PdbState::Mismatched);
    assert!(matches!(report.rejected[0].reason, RejectReason::Mismatch { age: 1, .. }));
    assert!(!cache.join(PDB_NAME).join(wanted.store_key()).join(PDB_NAME).exists());
}

#[test]
fn without_a_local_store_the_default_cache_receives_the_file() {
    let cache = scratch("download-default");
    let (base, _requested) = serve(vec![(fixture_url_path(), std::fs::read(pdb_path()).expect("pdb"))], 1);
    let mut symbolizer =
        Symbolizer::new(SymbolPath::parse(&format!("srv*{base}"))).with_default_cache(&cache).with_downloads(true);
    assert!(symbolizer.resolve(&fixture_id(), BUILD_REQUEST.0).is_some());
    assert!(cache.join(PDB_NAME).join(STORE_KEY).join(PDB_NAME).is_file());
}

#[test]
fn a_cache_entry_receives_downloads_of_the_server_entries_after_it() {
    let cache = scratch("download-cache-entry");
    let (base, _requested) = serve(vec![(fixture_url_path(), std::fs::read(pdb_path()).expect("pdb"))], 1);
    let text = format!("cache*{};srv*{base}", cache.display());
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&text)).with_downloads(true);
    assert!(symbolizer.resolve(&fixture_id(), BUILD_REQUEST.0).is_some());
    assert!(cache.join(PDB_NAME).join(STORE_KEY).join(PDB_NAME).is_file());
}
