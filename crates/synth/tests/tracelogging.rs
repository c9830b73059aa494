//! An app's own TraceLogging events placed in a synthesized trace beside the
//! kernel's network events, read back with nettrail's reader and decoder.

use nettrail_decode::{EventNames, Schemas, Source, format};
use nettrail_etl::{Guid, Trace};
use nettrail_synth::{KernelSpec, Synth, fields};
use nettrail_tracelogging::{EncodedEvent, FieldValue, Provider, level, opcode, provider_guid};

const APP: (u32, u32) = (1200, 1204);
const NAME: &str = "Nettrail-Test-SynthApp";

fn app_events() -> Vec<(f64, EncodedEvent)> {
    let provider = Provider::new(NAME);
    let parent = Guid::parse_const("000004b0-1111-2222-0000-000100000001");
    let activity = Guid::parse_const("000004b0-1111-2222-0000-000200000002");
    let mut start =
        EncodedEvent::new(&provider, "fetch", &[("url", FieldValue::from("http://example.test/feed"))]).unwrap();
    start.descriptor.opcode = opcode::START;
    start.activity_id = Some(activity);
    start.related_activity_id = Some(parent);
    let mut info = EncodedEvent::new(
        &provider,
        "response",
        &[("status", FieldValue::U64(200)), ("gzip", FieldValue::Bool(true)), ("ms", FieldValue::F64(12.5))],
    )
    .unwrap();
    info.activity_id = Some(activity);
    info.descriptor.level = level::VERBOSE;
    let mut stop = EncodedEvent::new(&provider, "fetch", &[]).unwrap();
    stop.descriptor.opcode = opcode::STOP;
    stop.activity_id = Some(activity);
    vec![(2.0, start), (5.0, info), (6.0, stop)]
}

#[test]
fn app_events_decode_beside_the_kernel_events() {
    let mut s = Synth::new();
    s.process(APP.0, 800, "traced_app.exe", "traced_app.exe http://example.test/feed", 8).unwrap();
    s.thread(APP.0, APP.1).unwrap();
    for (at, e) in app_events() {
        s.tracelogging(at, APP, &e).unwrap();
    }
    s.kernel(
        KernelSpec::new("TcpIp", 12)
            .at(3.0)
            .thread(APP.0, APP.1)
            .fields(fields![("daddr", std::net::Ipv4Addr::new(93, 184, 216, 34)), ("dport", 80u16),]),
    )
    .unwrap();
    let bytes = s.finish().unwrap();

    let trace = Trace::parse(&bytes).unwrap();
    let schemas = Schemas::new();
    let mut stream = trace.events();
    let mut seen = Vec::new();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        if e.hook.is_some_and(|h| (h.group, h.opcode) == (6, 12)) {
            seen.push(("TcpIp connect".to_string(), String::new(), 0, Vec::new()));
            continue;
        }
        if e.provider != provider_guid(NAME) {
            continue;
        }
        assert_eq!((e.process_id, e.thread_id), (Some(APP.0), Some(APP.1)));
        assert_eq!(e.activity_id, Guid::parse_const("000004b0-1111-2222-0000-000200000002"));
        let mut values = Vec::new();
        let schema = schemas.decode(&e.record, &mut values).unwrap();
        assert_eq!(schema.source, Source::TraceLogging);
        let names = EventNames::of(&e.record, Some(&schema));
        assert_eq!(names.provider.as_deref(), Some(NAME));
        let fields: Vec<(String, String)> = schema
            .fields
            .iter()
            .zip(&values)
            .map(|(f, v)| {
                let mut text = String::new();
                format::text(f, v, e.pointer_size, &mut text);
                (f.name.clone(), text)
            })
            .collect();
        let related = e.extended.related_activity_id().map(|g| g.to_string()).unwrap_or_default();
        seen.push((format!("{} {}", schema.name.clone().unwrap_or_default(), e.opcode), related, e.level, fields));
    }
    let pairs = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
    assert_eq!(
        seen,
        [
            (
                "fetch 1".to_string(),
                "000004b0-1111-2222-0000-000100000001".to_string(),
                level::INFORMATION,
                pairs(&[("url", "http://example.test/feed")])
            ),
            ("TcpIp connect".to_string(), String::new(), 0, Vec::new()),
            (
                "response 0".to_string(),
                String::new(),
                level::VERBOSE,
                pairs(&[("status", "200"), ("gzip", "true"), ("ms", "12.5")])
            ),
            ("fetch 2".to_string(), String::new(), level::INFORMATION, Vec::new()),
        ]
    );
}

#[test]
fn an_app_event_on_a_thread_of_another_process_is_an_error() {
    let mut s = Synth::new();
    s.process(APP.0, 800, "traced_app.exe", "traced_app.exe", 8).unwrap();
    s.thread(APP.0, APP.1).unwrap();
    let (_, e) = app_events().remove(0);
    assert!(s.tracelogging(1.0, (9999, APP.1), &e).is_err());
    assert!(s.tracelogging(1.0, (4, APP.1), &e).is_err());
}
