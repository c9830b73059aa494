//! Events of the network providers, synthesized from named values (and the
//! manifest of the trace's build) and read back with nettrail's reader and
//! decoder: the same values come out, with the built-in layouts and with
//! nothing but the metadata the trace embeds.

use std::net::{Ipv4Addr, SocketAddr};

use nettrail_decode::{OutType, SchemaKey, Schemas, Source, Value, format, payload};
use nettrail_etl::{Guid, HeaderKind, Trace};
use nettrail_synth::metadata::tdh_out_type;
use nettrail_synth::{EventSpec, Fields, KernelSpec, Process, Synth, Val, catalog, fields, sockaddr};

mod common;

const APP: (u32, u32) = (4242, 4246);
const LEGACY: (u32, u32) = (3100, 3104);
const SERVER: (u32, u32) = (4, 2252);

fn sa(text: &str) -> Vec<u8> {
    sockaddr::sockaddr(text.parse::<SocketAddr>().unwrap())
}

/// One event to write, with the text each given field must decode to.
struct Case {
    provider: &'static str,
    id: u16,
    thread: (u32, u32),
    fields: Fields,
    expect: &'static [(&'static str, &'static str)],
}

fn cases() -> Vec<Case> {
    let tcb = Val::Ptr(0xffff_a804_9abc_0010);
    vec![
        Case {
            provider: "TCPIP",
            id: 1002,
            thread: APP,
            fields: fields![
                ("Tcb", tcb.clone()),
                ("LocalAddress", sa("10.0.0.5:50123")),
                ("RemoteAddress", sa("[2606:2800:220:1:248:1893:25c8:1946]:443")),
                ("NewState", 2u32),
                ("RexmitCount", 1u32),
            ],
            expect: &[
                ("Tcb", "0xFFFFA8049ABC0010"),
                ("LocalAddressLength", "16"),
                ("LocalAddress", "10.0.0.5:50123"),
                ("RemoteAddressLength", "28"),
                ("RemoteAddress", "[2606:2800:220:1:248:1893:25c8:1946]:443"),
                ("NewState", "SynSentState"),
                ("RexmitCount", "1"),
            ],
        },
        Case {
            provider: "TCPIP",
            id: 1033,
            thread: APP,
            fields: fields![
                ("LocalAddress", sa("10.0.0.5:50123")),
                ("RemoteAddress", sa("93.184.216.34:443")),
                ("Status", 0xC000_0236u32),
                ("ProcessId", APP.0),
                ("Compartment", 1u32),
                ("Tcb", tcb.clone()),
            ],
            expect: &[
                ("RemoteAddress", "93.184.216.34:443"),
                ("Status", "0xC0000236"),
                ("ProcessId", "4242"),
                ("Tcb", "0xFFFFA8049ABC0010"),
            ],
        },
        Case {
            provider: "TCPIP",
            id: 1300,
            thread: (4, 8),
            fields: fields![
                ("Tcb", tcb),
                ("LocalAddress", sa("10.0.0.5:50200")),
                ("RemoteAddress", sa("140.82.112.3:443")),
                ("State", 4u32),
                ("Pid", APP.0),
            ],
            expect: &[("LocalAddress", "10.0.0.5:50200"), ("State", "EstablishedState"), ("Pid", "4242")],
        },
        Case {
            provider: "Microsoft-Windows-TCPIP",
            id: 1169,
            thread: APP,
            fields: fields![
                ("Endpoint", Val::Ptr(0xffff_a804_0bad_f000)),
                ("NumMessages", 1u32),
                ("NumBytes", 41u32),
                ("LocalSockAddr", sa("[fe80::1%12]:61000")),
                ("RemoteSockAddr", sa("[fe80::2%12]:53")),
                ("Pid", APP.0),
            ],
            expect: &[("NumBytes", "41"), ("RemoteSockAddrLength", "28"), ("RemoteSockAddr", "[fe80::2]:53")],
        },
        Case {
            provider: "Winsock-AFD",
            id: 1000,
            thread: APP,
            fields: fields![
                ("EnterExit", 0u32),
                ("Location", 3u32),
                ("Process", Val::Ptr(0xffff_a804_1234_0080)),
                ("Endpoint", Val::Ptr(0xffff_a804_5678_1010)),
                ("AddressFamily", 23u32),
                ("SocketType", 1u32),
                ("Protocol", 6u32),
                ("ProcessId", u64::from(APP.0)),
                ("Status", 0u32),
            ],
            // ProcessId is a Pointer in the manifests.
            expect: &[("AddressFamily", "23"), ("ProcessId", "0x0000000000001092"), ("Endpoint", "0xFFFFA80456781010")],
        },
        Case {
            provider: "Winsock-AFD",
            id: 1018,
            thread: APP,
            fields: fields![
                ("Endpoint", Val::Ptr(0xffff_a804_5678_1010)),
                ("BufferLength", 517u32),
                ("Address", sa("93.184.216.34:443")),
            ],
            expect: &[("BufferLength", "517"), ("AddressLen", "16"), ("Address", "0x020001BB5DB8D8220000000000000000")],
        },
        Case {
            provider: "WebIO",
            id: 17,
            thread: APP,
            fields: fields![
                ("Request", 0x0000_01d2_3456_7890u64),
                ("Method", "GET"),
                ("URI", "https://example.com/ünïcode?q=1"),
                ("VersionMajor", 1u16),
                ("VersionMinor", 1u16),
            ],
            expect: &[
                ("Method", "GET"),
                ("URI", "https://example.com/ünïcode?q=1"),
                ("VersionMinor", "1"),
                ("Error", "0"),
            ],
        },
        Case {
            provider: "WebIO",
            id: 200,
            thread: APP,
            fields: fields![
                ("Connection", 0x0000_01d2_0000_1000u64),
                ("SocketHandle", 0x2c4u64),
                ("Address", "[2606:2800:220:1:248:1893:25c8:1946]:443"),
                ("RemainingAddressCount", 1u64),
            ],
            // The manifest's Address is UTF-16 text of AddressLength characters.
            expect: &[
                ("SocketHandle", "0x2C4"),
                ("AddressLength", "40"),
                ("Address", "[2606:2800:220:1:248:1893:25c8:1946]:443"),
                ("RemainingAddressCount", "1"),
            ],
        },
        Case {
            provider: "WinINet",
            id: 104,
            thread: LEGACY,
            fields: fields![
                ("ConnectionHandle", Val::Ptr(0x00cc_0004)),
                ("ParentHandle", Val::Ptr(0x00cc_0008)),
                ("Verb", "POST"),
                ("ObjectName", "/upload"),
                ("Version", "HTTP/1.1"),
                ("AcceptTypes", "*/*"),
                ("Flags", 0x8440_0000u32),
            ],
            expect: &[
                ("ConnectionHandle", "0x00CC0004"),
                ("_VerbLength", "4"),
                ("Verb", "POST"),
                ("ObjectName", "/upload"),
                ("_ReferrerLength", "0"),
                ("AcceptTypes", "*/*"),
                ("Flags", "0x84400000"),
            ],
        },
        Case {
            provider: "WinINet",
            id: 1007,
            thread: APP,
            fields: fields![("Request", Val::Ptr(0x0000_01d2_0000_2000)), ("AddressName", "example.com")],
            expect: &[("AddressName", "example.com")],
        },
        Case {
            provider: "DNS-Client",
            id: 3008,
            thread: (1800, 1804),
            fields: fields![
                ("QueryName", "example.com"),
                ("QueryType", 28u32),
                ("QueryOptions", 0x4000_0000_6000u64),
                ("QueryStatus", 0u32),
                ("QueryResults", "2606:2800:220:1:248:1893:25c8:1946;"),
            ],
            expect: &[
                ("QueryName", "example.com"),
                ("QueryType", "28"),
                ("QueryResults", "2606:2800:220:1:248:1893:25c8:1946;"),
            ],
        },
        Case {
            provider: "Kernel-Network",
            id: 10,
            thread: APP,
            fields: fields![
                ("PID", APP.0),
                ("size", 517u32),
                ("daddr", Ipv4Addr::new(93, 184, 216, 34)),
                ("saddr", Ipv4Addr::new(10, 0, 0, 5)),
                ("dport", 443u16),
                ("sport", 50123u16),
                ("connid", Val::Ptr(0xffff_a804_9abc_0010)),
            ],
            expect: &[
                ("daddr", "93.184.216.34"),
                ("saddr", "10.0.0.5"),
                ("dport", "443"),
                ("sport", "50123"),
                ("size", "517"),
            ],
        },
        Case {
            provider: "Kernel-Network",
            id: 11,
            thread: APP,
            fields: fields![
                ("PID", APP.0),
                ("size", 1460u32),
                ("daddr", Ipv4Addr::new(10, 0, 0, 5)),
                ("saddr", Ipv4Addr::new(93, 184, 216, 34)),
                ("dport", 50123u16),
                ("sport", 443u16),
                ("seqnum", 7u32),
            ],
            expect: &[("daddr", "10.0.0.5"), ("sport", "443"), ("seqnum", "7")],
        },
        Case {
            provider: "HttpService",
            id: 1,
            thread: SERVER,
            fields: fields![
                ("RequestId", 0xff00_0000_8000_060du64),
                ("ConnectionId", 0xff00_0000_6000_060cu64),
                ("RemoteAddr", sa("[2001:db8::7]:37838")),
            ],
            expect: &[
                ("RequestId", "0xFF0000008000060D"),
                ("RemoteAddrLength", "28"),
                ("RemoteAddr", "[2001:db8::7]:37838"),
            ],
        },
        Case {
            provider: "HttpService",
            id: 2,
            thread: SERVER,
            fields: fields![
                ("RequestObj", Val::Ptr(0xffff_fa80_01a9_b680)),
                ("HttpVerb", 4u32),
                ("Url", "http://localhost:80/api/items?id=3"),
            ],
            expect: &[("HttpVerb", "4"), ("Url", "http://localhost:80/api/items?id=3")],
        },
    ]
}

const ACTIVITY: Guid = Guid::parse_const("00000100-0000-0003-193d-42fb30bbcb01");
const RELATED: Guid = Guid::parse_const("00000100-0000-0000-643d-42fb30bbcb01");
const FRAMES: [u64; 3] = [0xffff_f801_6c21_2345, 0x7ffc_8b01_0203, 0x7ff6_1000_1234];

/// Every case at 1 ms intervals from 2 ms, the first with an activity, a
/// related activity and a stack; a TcpIp kernel event last.
fn scenario(cases: &[Case]) -> Vec<u8> {
    let mut s = Synth::new();
    s.process(APP.0, 900, "app.exe", r#""C:\Program Files\App\app.exe" --sync"#, 8).unwrap();
    s.add_process(Process::new(LEGACY.0, 900, "legacy.exe").wow64()).unwrap();
    s.add_process(
        Process::new(1800, 700, "svchost.exe").command_line("svchost.exe -k NetworkService -p -s Dnscache").service(),
    )
    .unwrap();
    for (i, c) in cases.iter().enumerate() {
        let mut spec = EventSpec::new(c.provider, c.id, 0)
            .at(2.0 + i as f64)
            .thread(c.thread.0, c.thread.1)
            .fields(c.fields.clone());
        if i == 0 {
            spec = spec.activity(ACTIVITY).related_activity(RELATED).stack(&FRAMES);
        }
        s.emit(spec).unwrap();
    }
    s.kernel(KernelSpec::new("TcpIp", 11).at(40.0).thread(APP.0, APP.1).fields(fields![
        ("size", 1460u32),
        ("daddr", Ipv4Addr::new(10, 0, 0, 5)),
        ("saddr", Ipv4Addr::new(93, 184, 216, 34)),
        ("dport", 50123u16),
        ("sport", 443u16),
    ]))
    .unwrap();
    s.finish().unwrap()
}

fn text_of(field: &nettrail_decode::Field, value: &Value<'_>, pointer_size: u8) -> String {
    let mut out = String::new();
    format::text(field, value, pointer_size, &mut out);
    out
}

/// The manifest events of a trace (not the merge's metadata) in time order.
fn manifest_events(images: &common::Images) -> Vec<nettrail_etl::Record<'_>> {
    common::records(images).into_iter().filter(|r| r.kind.is_event_header()).collect()
}

#[test]
fn every_value_decodes_back_with_the_built_in_layouts() {
    let cases = cases();
    let bytes = scenario(&cases);
    let trace = Trace::parse(&bytes).unwrap();
    let schemas = Schemas::new();
    let images = common::Images::read(&bytes);
    let events = manifest_events(&images);
    assert_eq!(events.len(), cases.len());
    for (c, record) in cases.iter().zip(&events) {
        let layout = catalog::event_layout(19045, c.provider, c.id, Some(0)).unwrap();
        let what = format!("{} {}", c.provider, c.id);
        assert_eq!((record.provider, record.id, record.version), (layout.provider.guid, c.id, 0), "{what}");
        let d = layout.descriptor;
        assert_eq!(
            (record.level, record.keywords, record.channel, record.opcode, record.task),
            (d.level, d.keywords, d.channel, d.opcode, d.task),
            "{what}"
        );
        assert_eq!((record.process_id, record.thread_id), (Some(c.thread.0), Some(c.thread.1)), "{what}");
        let wow64 = c.thread == LEGACY;
        assert_eq!(record.kind, if wow64 { HeaderKind::EventHeader32 } else { HeaderKind::EventHeader64 }, "{what}");
        let mut values = Vec::new();
        let schema = schemas.decode(record, &mut values).unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(schema.source, Source::BuiltIn);
        // The payload is exactly the layout's fields.
        assert_eq!(
            payload::decode(&schema.fields, record.payload, record.pointer_size, &mut Vec::new()),
            Ok(record.payload.len())
        );
        for (name, want) in c.expect {
            let i = schema.fields.iter().position(|f| f.name == *name).unwrap_or_else(|| panic!("{what}: {name}"));
            assert_eq!(text_of(&schema.fields[i], &values[i], record.pointer_size), *want, "{what} field {name}");
        }
    }
    // Activity, related activity and stack of the first event.
    let first = &events[0];
    assert_eq!(first.activity_id, ACTIVITY);
    assert_eq!(first.extended.related_activity_id(), Some(RELATED));
    let stack = first.extended.find(nettrail_etl::extended::ExtType::STACK_TRACE64).unwrap();
    let mut want = 0u64.to_le_bytes().to_vec();
    FRAMES.iter().for_each(|f| want.extend_from_slice(&f.to_le_bytes()));
    assert_eq!(stack.data, want.as_slice());
    // Times: 2 ms after the start for the first, 1 ms apart.
    let clock = trace.clock();
    let t0 = trace.header().start_time;
    assert_eq!(clock.to_filetime(events[0].timestamp) - t0, 20_000);
    assert_eq!(clock.to_filetime(events[5].timestamp) - t0, 70_000);
}

#[test]
fn the_embedded_metadata_alone_decodes_every_event() {
    let cases = cases();
    let bytes = scenario(&cases);
    let trace = Trace::parse(&bytes).unwrap();
    let mut schemas = Schemas::new();
    let problems = schemas.learn(&trace);
    assert!(problems.is_empty(), "{problems:?}");
    // One EventInfo per (provider, id, version) used.
    assert_eq!(schemas.embedded.events.len(), cases.len());
    let images = common::Images::read(&bytes);
    for record in manifest_events(&images) {
        let key = SchemaKey::Manifest { provider: record.provider, id: record.id, version: record.version };
        let embedded = schemas.embedded.events.get(&key).unwrap_or_else(|| panic!("no EventInfo for {key:?}"));
        let built_in = &catalog::event_layout(19045, &record.provider.to_string(), record.id, Some(record.version))
            .unwrap()
            .schema;
        let what = format!("{} {}", built_in.provider.name, record.id);
        // The decoder prefers what the trace embeds.
        assert_eq!(schemas.schema_of(&record).unwrap().source, Source::EmbeddedEventInfo, "{what}");
        assert_eq!(embedded.provider.name, built_in.provider.name, "{what}");
        assert_eq!(embedded.message, built_in.message, "{what}");
        assert_eq!(embedded.task, built_in.task.clone().filter(|_| record.task != 0), "{what}");
        assert_eq!(embedded.name, built_in.name, "{what}");
        assert_eq!(embedded.fields.len(), built_in.fields.len(), "{what}");
        for (e, b) in embedded.fields.iter().zip(&built_in.fields) {
            assert_eq!((&e.name, e.in_type, e.length, e.count), (&b.name, b.in_type, b.length, b.count), "{what}");
            let out = if b.out_type == OutType::Default {
                OutType::from_tdh(tdh_out_type(b.out_type, b.in_type))
            } else {
                b.out_type
            };
            assert_eq!(e.out_type, out, "{what} {}", e.name);
            assert_eq!(
                e.map.as_ref().map(|m| (&m.name, &m.entries)),
                b.map.as_ref().map(|m| (&m.name, &m.entries)),
                "{what}"
            );
        }
        let (mut from_embedded, mut from_built_in) = (Vec::new(), Vec::new());
        payload::decode(&embedded.fields, record.payload, record.pointer_size, &mut from_embedded).unwrap();
        payload::decode(&built_in.fields, record.payload, record.pointer_size, &mut from_built_in).unwrap();
        assert_eq!(from_embedded, from_built_in, "{what}");
    }
    // Keyword and channel names travel too.
    let tcpip = catalog::provider_guid("TCPIP").unwrap();
    let provider = &schemas.embedded.providers[&tcpip];
    assert_eq!(provider.channel_name(16), Some("Microsoft-Windows-TCPIP/Diagnostic"));
    assert!(provider.keywords.contains(&(0x4, "ut:TcpipTcb".to_string())), "{:?}", provider.keywords);
}

#[test]
fn payload_typos_fail_where_the_scenario_writes_them() {
    let mut s = Synth::new();
    s.process(APP.0, 900, "app.exe", "app.exe", 8).unwrap();
    let e = s.event(1.0, APP, "TCPIP", 1033, 0, fields![("RemoteAdress", sa("1.2.3.4:5"))]).unwrap_err();
    assert!(e.to_string().contains("no field \"RemoteAdress\""), "{e}");
    let e = s.event(1.0, (999, 1), "TCPIP", 1033, 0, fields![]).unwrap_err();
    assert_eq!(e.to_string(), "process 999 was not declared");
    let e = s.event(1.0, APP, "TCPIP", 9999, 0, fields![]).unwrap_err();
    assert!(e.to_string().contains("has no event 9999 version 0"), "{e}");
    s.end_process(5.0, APP.0, 0).unwrap();
    let e = s.event(6.0, APP, "TCPIP", 1033, 0, fields![]).unwrap_err();
    assert!(e.to_string().contains("does not exist at 6 ms"), "{e}");
}
