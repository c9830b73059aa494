//! The native controller against real ETW: start, enable, consume, stop,
//! list, with an app provider (`nettrail-tracelogging`) writing known
//! events. Wine's ETW is a stub, so these are ignored by default; on a
//! Windows machine, from an administrator terminal:
//!
//! `cargo test -p nettrail-capture --test controller_windows -- --ignored --test-threads 1`
#![cfg(windows)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use nettrail_capture::controller::{
    ConsumerStop, Session, SessionConfig, consume_until, is_elevated, query_named, sessions,
};
use nettrail_capture::{Provider, Target};
use nettrail_etl::{Guid, Trace};
use nettrail_tracelogging::{EncodedEvent, EtwSink, FieldValue, KEYWORD, Sink};

const EVENTS: u64 = 200;

fn app(name: &str) -> (nettrail_tracelogging::Provider, EtwSink) {
    assert!(is_elevated(), "run from an administrator terminal");
    let provider = nettrail_tracelogging::Provider::new(name);
    let sink = EtwSink::register(&provider).expect("EventRegister");
    (provider, sink)
}

fn config(log_file: Option<PathBuf>) -> SessionConfig {
    SessionConfig { log_file, buffer_kb: 64, min_buffers: 4, max_buffers: 32, circular_mb: None, system: None }
}

/// Writes `EVENTS` "Tick" events with i = 0.. once a session listens.
fn write_ticks(provider: &nettrail_tracelogging::Provider, sink: &EtwSink) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sink.enabled(4, KEYWORD) {
        assert!(Instant::now() < deadline, "the provider was never enabled");
        std::thread::sleep(Duration::from_millis(20));
    }
    for i in 0..EVENTS {
        sink.write(EncodedEvent::new(provider, "Tick", &[("i", FieldValue::U64(i))]).unwrap());
    }
}

fn ticks(payloads: &[Vec<u8>]) -> Vec<u64> {
    payloads.iter().map(|p| u64::from_le_bytes(p[..8].try_into().unwrap())).collect()
}

#[test]
#[ignore = "needs Windows and administrator rights (real ETW)"]
fn a_real_time_session_delivers_an_apps_events_to_the_consumer() {
    let (provider, sink) = app("Nettrail-ControllerTest-Live");
    let guid: Guid = provider.guid();
    let name = format!("nettrail-test-live-{}", std::process::id());
    let mut session = Session::start(&name, &config(None)).unwrap();

    // The name is taken: a second start is refused and the first runs on.
    let again = Session::start(&name, &config(None)).unwrap_err();
    assert!(again.already_exists(), "{again}");
    session.enable(&Provider::new("app", Target::Guid(guid)).level(5)).unwrap();
    let listed = sessions().unwrap();
    let ours = listed.iter().find(|s| s.name == name).expect("the session is listed");
    assert!(ours.real_time && !ours.circular && ours.log_file.is_none());

    let stop = ConsumerStop::new();
    let reader = {
        let (name, stop) = (name.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut payloads = Vec::new();
            let mut on_event = |e: &nettrail_capture::LiveEvent<'_>| {
                if e.provider == guid {
                    assert_eq!(e.process_id, std::process::id());
                    // FILETIME of this century.
                    assert!(e.timestamp > 130_000_000_000_000_000, "{}", e.timestamp);
                    payloads.push(e.payload.to_vec());
                }
            };
            let stats = consume_until(&name, &stop, &mut on_event).unwrap();
            (stats, payloads)
        })
    };
    std::thread::sleep(Duration::from_secs(1));
    write_ticks(&provider, &sink);
    std::thread::sleep(Duration::from_secs(2));

    let stats = session.stop().unwrap();
    let (read, payloads) = reader.join().unwrap();
    assert_eq!(stats.events_lost, 0);
    assert_eq!(ticks(&payloads), (0..EVENTS).collect::<Vec<_>>());
    assert!(read.events >= EVENTS && read.buffers > 0, "{read:?}");
    assert!(query_named(&name).unwrap_err().not_running());
}

#[test]
#[ignore = "needs Windows and administrator rights (real ETW)"]
fn a_file_session_writes_an_etl_that_nettrail_reads() {
    let (provider, sink) = app("Nettrail-ControllerTest-File");
    let guid = provider.guid();
    let name = format!("nettrail-test-file-{}", std::process::id());
    let path = std::env::temp_dir().join(format!("{name}.etl"));
    let mut session = Session::start(&name, &config(Some(path.clone()))).unwrap();
    session.enable(&Provider::new("app", Target::Guid(guid)).level(5).keywords(KEYWORD)).unwrap();
    write_ticks(&provider, &sink);
    let stats = session.stop().unwrap();
    assert_eq!(stats.log_file.as_deref(), Some(path.as_path()));
    assert!(stats.buffers_written > 0 && stats.events_lost == 0, "{stats:?}");

    let bytes = std::fs::read(&path).unwrap();
    let trace = Trace::parse(&bytes).unwrap();
    let mut events = trace.events();
    let mut payloads = Vec::new();
    while let Some(event) = events.next() {
        let event = event.unwrap();
        if event.record.provider == guid {
            payloads.push(event.record.payload.to_vec());
        }
    }
    assert_eq!(ticks(&payloads), (0..EVENTS).collect::<Vec<_>>());
    std::fs::remove_file(&path).unwrap();
}

#[test]
#[ignore = "needs Windows and administrator rights (real ETW)"]
fn dropping_a_session_stops_it() {
    let _ = app("Nettrail-ControllerTest-Drop");
    let name = format!("nettrail-test-drop-{}", std::process::id());
    let session = Session::start(&name, &config(None)).unwrap();
    assert!(query_named(&name).is_ok());
    drop(session);
    assert!(query_named(&name).unwrap_err().not_running());
    assert!(Session::stop_named(&name).unwrap_err().not_running());
}
