//! `nettrail live`'s pipeline without Windows: the events of synthesized
//! traces, handed over as a real-time consumer receives them (header
//! fields, FILETIME timestamps, extended data, payload), become records
//! again and build the same network model as reading the file does.

use std::collections::BTreeSet;

use nettrail_capture::live::{delivered, extended_items, record_bytes};
use nettrail_decode::Schemas;
use nettrail_etl::Trace;
use nettrail_etl::record::{HeaderKind, parse_record};

fn live_requests(bytes: &[u8]) -> (Vec<nettrail_net::RequestRow>, BTreeSet<String>) {
    let trace = Trace::parse(bytes).unwrap();
    let mut schemas = Schemas::new();
    schemas.learn(&trace);
    live_requests_with(&trace, schemas)
}

/// The trace's events delivered one by one as a real-time consumer gets
/// them, decoded with `schemas`.
fn live_requests_with(trace: &Trace<'_>, schemas: Schemas) -> (Vec<nettrail_net::RequestRow>, BTreeSet<String>) {
    let clock = trace.clock();
    let start = clock.to_filetime(trace.header_timestamp());
    let mut live = nettrail_net::Live::new(schemas, start);
    let mut events = trace.events();
    let mut scratch = Vec::new();
    let mut kinds = BTreeSet::new();
    while let Some(event) = events.next() {
        let event = event.unwrap();
        let r = &event.record;
        let extended = extended_items(r);
        let event = delivered(r, clock.to_filetime(r.timestamp), &extended);
        record_bytes(&event, &mut scratch).unwrap();
        let (record, used) = parse_record(&scratch, 8).unwrap().expect("a record");
        assert_eq!(used, scratch.len());
        assert_eq!((record.id, record.opcode, record.payload), (r.id, r.opcode, r.payload));
        kinds.insert(format!("{:?}", record.kind));
        live.push(&record);
    }
    (live.network().report().requests, kinds)
}

fn file_requests(bytes: &[u8]) -> Vec<nettrail_net::RequestRow> {
    let trace = Trace::parse(bytes).unwrap();
    let mut schemas = Schemas::new();
    schemas.learn(&trace);
    nettrail_net::analyze(&trace, &schemas, &mut |_| {}).network.report().requests
}

#[test]
fn live_events_build_the_same_requests_as_the_file() {
    let mut all_kinds = BTreeSet::new();
    for name in ["sample", "winhttp-keepalive-h2", "wininet-redirect", "dns", "kernel-classic", "server"] {
        let bytes = nettrail_synth::scenarios::by_name(name).unwrap()().unwrap();
        let expected = file_requests(&bytes);
        let (live, kinds) = live_requests(&bytes);
        assert!(!expected.is_empty(), "{name}");
        assert_eq!(live.len(), expected.len(), "{name}: row count");
        for (l, f) in live.iter().zip(&expected) {
            assert_eq!(
                (
                    &l.process,
                    l.pid,
                    l.layer,
                    &l.url,
                    &l.server,
                    l.ip,
                    l.port,
                    l.bytes_sent,
                    l.bytes_received,
                    l.start,
                    l.end
                ),
                (
                    &f.process,
                    f.pid,
                    f.layer,
                    &f.url,
                    &f.server,
                    f.ip,
                    f.port,
                    f.bytes_sent,
                    f.bytes_received,
                    f.start,
                    f.end
                ),
                "{name}"
            );
        }
        all_kinds.extend(kinds);
    }
    // Provider, classic kernel (with and without a thread) and MOF records all went through.
    let expected: BTreeSet<String> =
        [HeaderKind::EventHeader64, HeaderKind::System64, HeaderKind::Perfinfo64, HeaderKind::FullHeader64]
            .iter()
            .map(|k| format!("{k:?}"))
            .collect();
    assert_eq!(all_kinds, expected);
}

/// A 32-bit process's events arrive with the 32_BIT_HEADER flag; they
/// become EVENT_HEADER32 records whose pointers the built-in layouts alone
/// (a real-time session has no merged metadata) decode as 4 bytes, and the
/// same requests come out as from the file.
#[test]
fn a_32_bit_process_live_decodes_with_the_built_in_layouts_alone() {
    for name in ["winhttp-32", "office-wininet-32"] {
        let bytes = nettrail_synth::scenarios::by_name(name).unwrap()().unwrap();
        let trace = Trace::parse(&bytes).unwrap();
        let mut built_in = Schemas::new();
        built_in.set_build(Some(trace.header().build));
        let (live, kinds) = live_requests_with(&trace, built_in);
        assert!(kinds.contains(&format!("{:?}", HeaderKind::EventHeader32)), "{name}: {kinds:?}");
        let expected = file_requests(&bytes);
        let row = |r: &nettrail_net::RequestRow| {
            (r.pid, r.layer, r.url.clone(), r.ip, r.status.clone(), r.bytes_sent, r.bytes_received, r.start, r.end)
        };
        assert_eq!(live.iter().map(row).collect::<Vec<_>>(), expected.iter().map(row).collect::<Vec<_>>(), "{name}");
        let http: Vec<_> = live.iter().filter(|r| r.url.is_some()).collect();
        assert_eq!(http.len(), if name == "winhttp-32" { 2 } else { 1 }, "{name}");
    }
}
