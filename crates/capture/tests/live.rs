//! `nettrail live`'s pipeline without Windows: the events of synthesized
//! traces, handed over as a real-time consumer receives them (header
//! fields, FILETIME timestamps, extended data, payload), become records
//! again and build the same network model as reading the file does.

use std::collections::BTreeSet;

use nettrail_capture::LiveEvent;
use nettrail_capture::live::record_bytes;
use nettrail_decode::Schemas;
use nettrail_etl::record::{HeaderKind, parse_record};
use nettrail_etl::{Record, Trace};

/// The `EVENT_HEADER` flags Windows sets for a record of this kind.
fn header_flags(r: &Record<'_>) -> u16 {
    let classic = if r.kind.is_event_header() { r.flags } else { 0x0100 };
    let width = if r.pointer_size == 4 { 0x0020 } else { 0x0040 };
    classic | width
}

fn live_requests(bytes: &[u8]) -> (Vec<nettrail_net::RequestRow>, BTreeSet<String>) {
    let trace = Trace::parse(bytes).unwrap();
    let clock = trace.clock();
    let mut schemas = Schemas::new();
    schemas.learn(&trace);
    let start = clock.to_filetime(trace.header_timestamp());
    let mut live = nettrail_net::Live::new(schemas, start);
    let mut events = trace.events();
    let mut scratch = Vec::new();
    let mut kinds = BTreeSet::new();
    while let Some(event) = events.next() {
        let event = event.unwrap();
        let r = &event.record;
        let extended: Vec<(u16, &[u8])> = r.extended.iter().map(|i| (i.ext_type.0, i.data)).collect();
        let delivered = LiveEvent {
            provider: event.provider,
            id: r.id,
            version: r.version,
            channel: r.channel,
            level: r.level,
            opcode: r.opcode,
            task: r.task,
            keywords: r.keywords,
            timestamp: clock.to_filetime(r.timestamp),
            process_id: event.process_id.unwrap_or(u32::MAX),
            thread_id: event.thread_id.unwrap_or(u32::MAX),
            flags: header_flags(r),
            event_property: r.event_property,
            activity_id: r.activity_id,
            processor: 0,
            extended: &extended,
            payload: r.payload,
        };
        record_bytes(&delivered, &mut scratch).unwrap();
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
