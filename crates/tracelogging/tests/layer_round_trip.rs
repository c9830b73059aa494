//! A small traced program, its events collected, written into a real .etl
//! file and read back by nettrail's own reader and decoder: names, fields,
//! values, opcodes, levels, activities, provider name and GUID.

use nettrail_decode::{EventNames, Schemas, Source, format};
use nettrail_etl::Guid;
use nettrail_etl::Trace;
use nettrail_etl::extended::ExtType;
use nettrail_etl::record::event_header_flags;
use nettrail_etl::write::{Context, EventHeaderRecord, TraceConfig, TraceWriter};
use nettrail_tracelogging::{
    CollectingSink, EncodedEvent, EtwLayer, KEYWORD, Provider, TRACELOGGING_CHANNEL, level, opcode, provider_guid,
};
use tracing::Dispatch;
use tracing_subscriber::layer::SubscriberExt;

const PROVIDER: &str = "Nettrail-Test-TracedApp";

#[derive(Debug)]
#[allow(dead_code)]
struct Peer {
    host: &'static str,
    port: u16,
}

/// Runs the program; returns its events.
fn traced_program() -> Vec<EncodedEvent> {
    let sink = CollectingSink::new();
    let layer = EtwLayer::with_sink(Provider::new(PROVIDER), sink.clone());
    let dispatch = Dispatch::new(tracing_subscriber::registry().with(layer));
    tracing::dispatcher::with_default(&dispatch, || {
        let feed = tracing::info_span!(
            "sync_feed",
            feed = "news",
            retries = -3i64,
            limit = 10u64,
            ratio = 0.25,
            fresh = true,
            peer = ?Peer { host: "example.test", port: 80 },
            key = &b"\x01\xfe"[..],
        );
        let _feed = feed.enter();
        {
            let fetch = tracing::debug_span!("fetch", url = "http://example.test/feed", status = tracing::field::Empty);
            let _fetch = fetch.enter();
            tracing::warn!(attempt = 1u64, gzip = false, "server busy");
            fetch.record("status", 200u64);
        }
        tracing::error!(code = -1i64);
        // Another thread: its span names its parent explicitly.
        let dispatch = dispatch.clone();
        let parent = feed.clone();
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                tracing::trace_span!(parent: &parent, "worker").in_scope(|| tracing::info!(items = 2u64, "parsed"));
            })
        })
        .join()
        .unwrap();
    });
    sink.take()
}

/// (name, opcode, level) of each event.
fn shape(events: &[EncodedEvent]) -> Vec<(&str, u8, u8)> {
    events.iter().map(|e| (e.name.as_str(), e.descriptor.opcode, e.descriptor.level)).collect()
}

#[test]
fn spans_and_events_become_start_stop_and_info_events() {
    let events = traced_program();
    let unnamed = events[4].name.clone();
    assert!(unnamed.starts_with("event ") && unnamed.contains("layer_round_trip.rs"), "{unnamed}");
    assert_eq!(
        shape(&events),
        [
            ("sync_feed", opcode::START, level::INFORMATION),
            ("fetch", opcode::START, level::VERBOSE),
            ("server busy", opcode::INFO, level::WARNING),
            ("fetch", opcode::STOP, level::VERBOSE),
            (unnamed.as_str(), opcode::INFO, level::ERROR),
            ("worker", opcode::START, level::VERBOSE),
            ("parsed", opcode::INFO, level::INFORMATION),
            ("worker", opcode::STOP, level::VERBOSE),
            ("sync_feed", opcode::STOP, level::INFORMATION),
        ]
    );
    let guid = provider_guid(PROVIDER);
    for e in &events {
        assert_eq!(e.provider, guid);
        assert_eq!(e.provider_traits, nettrail_tracelogging::provider_traits(PROVIDER));
        let d = e.descriptor;
        assert_eq!((d.id, d.version, d.channel, d.task, d.keywords), (0, 0, TRACELOGGING_CHANNEL, 0, KEYWORD));
    }
    // Activities: each span has one; Start and Stop share it; the Start names
    // its parent's; events carry the activity of the span they are in.
    let feed = events[0].activity_id.unwrap();
    let fetch = events[1].activity_id.unwrap();
    let worker = events[5].activity_id.unwrap();
    assert!(feed != fetch && fetch != worker && feed != worker);
    let activities: Vec<_> = events.iter().map(|e| (e.activity_id, e.related_activity_id)).collect();
    assert_eq!(
        activities,
        [
            (Some(feed), None),
            (Some(fetch), Some(feed)),
            (Some(fetch), None),
            (Some(fetch), None),
            (Some(feed), None),
            (Some(worker), Some(feed)),
            (Some(worker), None),
            (Some(worker), None),
            (Some(feed), None),
        ]
    );
    // The worker ran on a thread of its own.
    let main = events[0].thread;
    assert!(events[5..8].iter().all(|e| e.thread != main));
    assert!(events[..5].iter().chain(&events[8..]).all(|e| e.thread == main));
}

/// The events as ETW would log them: one record each, process 4242, a
/// thread per writing thread, 1 ms apart.
fn write_trace(events: &[EncodedEvent]) -> Vec<u8> {
    let config = TraceConfig::default();
    let start = config.start_timestamp;
    let mut writer = TraceWriter::new(config);
    for (i, e) in events.iter().enumerate() {
        let items = e.extended_items();
        let extended: Vec<(ExtType, &[u8])> = items.iter().map(|(t, d)| (*t, d.as_slice())).collect();
        let context = Context {
            timestamp: start + 10_000 * (i as u64 + 1),
            cpu: 0,
            process_id: 4242,
            thread_id: 5000 + e.thread as u32,
        };
        let mut record = EventHeaderRecord::new(context, e.provider, e.descriptor, &e.payload);
        record.activity_id = e.activity_id.unwrap_or(Guid::ZERO);
        record.extended = &extended;
        writer.write_event_header(&record).unwrap();
    }
    writer.finish()
}

struct Decoded {
    provider: String,
    provider_guid: Guid,
    name: String,
    opcode: u8,
    opcode_name: String,
    level: u8,
    level_name: String,
    thread: u32,
    activity: Guid,
    related: Option<Guid>,
    fields: Vec<(String, String)>,
}

fn read_trace(bytes: &[u8]) -> Vec<Decoded> {
    let trace = Trace::parse(bytes).unwrap();
    let schemas = Schemas::new();
    let mut stream = trace.events();
    let mut out = Vec::new();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        if !e.kind.is_event_header() {
            continue;
        }
        assert_ne!(e.flags & event_header_flags::EXTENDED_INFO, 0);
        let mut values = Vec::new();
        let schema = schemas.decode(&e.record, &mut values).unwrap();
        assert_eq!(schema.source, Source::TraceLogging);
        let names = EventNames::of(&e.record, Some(&schema));
        let fields = schema
            .fields
            .iter()
            .zip(&values)
            .map(|(f, v)| {
                let mut s = String::new();
                format::text(f, v, e.pointer_size, &mut s);
                (f.name.clone(), s)
            })
            .collect();
        out.push(Decoded {
            provider: names.provider.unwrap_or_default().into_owned(),
            provider_guid: e.provider,
            name: names.event.unwrap_or_default().into_owned(),
            opcode: e.opcode,
            opcode_name: names.opcode.unwrap_or_default().into_owned(),
            level: e.level,
            level_name: names.level.unwrap_or_default().into_owned(),
            thread: e.thread_id.unwrap(),
            activity: e.activity_id,
            related: e.extended.related_activity_id(),
            fields,
        });
    }
    out
}

fn pairs(fields: &[(&str, &str)]) -> Vec<(String, String)> {
    fields.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

#[test]
fn the_events_decode_from_a_real_etl_file() {
    let events = traced_program();
    let decoded = read_trace(&write_trace(&events));
    assert_eq!(decoded.len(), events.len());
    for (d, e) in decoded.iter().zip(&events) {
        assert_eq!(d.provider, PROVIDER);
        assert_eq!(d.provider_guid, provider_guid(PROVIDER));
        assert_eq!(d.name, e.name);
        assert_eq!((d.opcode, d.level), (e.descriptor.opcode, e.descriptor.level));
        assert_eq!(d.activity, e.activity_id.unwrap_or(Guid::ZERO));
        assert_eq!(d.related, e.related_activity_id);
        assert_eq!(d.thread, 5000 + e.thread as u32);
    }
    let names: Vec<(&str, &str, &str)> =
        decoded.iter().map(|d| (d.name.as_str(), d.opcode_name.as_str(), d.level_name.as_str())).collect();
    assert_eq!(
        names[..4],
        [
            ("sync_feed", "Start", "Information"),
            ("fetch", "Start", "Verbose"),
            ("server busy", "Info", "Warning"),
            ("fetch", "Stop", "Verbose")
        ]
    );
    assert_eq!((names[4].1, names[4].2), ("Info", "Error"));
    assert_eq!(
        decoded[0].fields,
        pairs(&[
            ("feed", "news"),
            ("retries", "-3"),
            ("limit", "10"),
            ("ratio", "0.25"),
            ("fresh", "true"),
            ("peer", "Peer { host: \"example.test\", port: 80 }"),
            ("key", "0x01FE"),
        ])
    );
    assert_eq!(decoded[1].fields, pairs(&[("url", "http://example.test/feed")]));
    assert_eq!(decoded[2].fields, pairs(&[("attempt", "1"), ("gzip", "false")]));
    // The value recorded while the span was entered comes with its Stop.
    assert_eq!(decoded[3].fields, pairs(&[("status", "200")]));
    assert_eq!(decoded[4].fields, pairs(&[("code", "-1")]));
    assert_eq!(decoded[6].fields, pairs(&[("items", "2")]));
    assert!(decoded[8].fields.is_empty());
}
