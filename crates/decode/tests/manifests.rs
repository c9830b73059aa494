//! Instrumentation manifests and in-trace EventSource manifests as schema
//! sources: the reference manifests parse into what they say, and real
//! traces decode with them (HTTP.sys with its manifest; PerfView's traces
//! with the EventSource manifests they carry, checked against PerfView's
//! own output).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use nettrail_decode::sources::manifest::{self, ManifestError};
use nettrail_decode::{EventSchema, InType, Len, OutType, SchemaKey, Schemas, Source, Value, payload};
use nettrail_etl::{Guid, Trace, TraceFile};
use nettrail_testkit::{corpus_dir, corpus_file};

fn reference(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/manifests").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn parsed(name: &str) -> Vec<nettrail_decode::layouts::LayoutFile> {
    manifest::parse(&reference(name), Source::Manifest).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn event(file: &nettrail_decode::layouts::LayoutFile, id: u16, version: u8) -> Arc<EventSchema> {
    let key = SchemaKey::Manifest { provider: file.provider.guid, id, version };
    file.events
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, e)| e.clone())
        .unwrap_or_else(|| panic!("no event {id} v{version}"))
}

#[test]
fn http_server_manifest() {
    let files = parsed("HTTP_Server.man");
    assert_eq!(files.len(), 1);
    let http = &files[0];
    assert_eq!(http.provider.name, "Microsoft-Windows-HttpService");
    assert_eq!(http.provider.guid, Guid::parse_const("dd5ef90a-6398-47a4-ad34-4dcecdef795f"));
    assert_eq!(http.events.len(), 85);
    assert_eq!(http.provider.channel_name(16), Some("Microsoft-Windows-HttpService/Trace"));
    assert_eq!(
        http.provider.keyword_names(0x102).collect::<Vec<_>>(),
        [
            "Flagged on all HTTP events dealing with request processing",
            "Flagged on all HTTP events triggered on a request queue"
        ]
    );

    let recv = event(http, 1, 0);
    assert_eq!(recv.task.as_deref(), Some("HTTP Request Trace Task"));
    assert_eq!(recv.opcode.as_deref(), Some("RecvReq"));
    assert_eq!(
        recv.message.as_deref(),
        Some("Request received (request ID %1) on connection (connection ID %2) from remote address %4.")
    );
    let fields: Vec<(&str, InType, OutType, Option<Len>)> =
        recv.fields.iter().map(|f| (f.name.as_str(), f.in_type, f.out_type, f.length)).collect();
    assert_eq!(
        fields,
        [
            ("RequestId", InType::UInt64, OutType::HexInt64, None),
            ("ConnectionId", InType::UInt64, OutType::HexInt64, None),
            ("RemoteAddrLength", InType::UInt32, OutType::UnsignedInt, None),
            ("RemoteAddr", InType::Binary, OutType::SocketAddress, Some(Len::Field(2))),
        ]
    );
    // A value map: the log format of event 35's template.
    let maps: Vec<_> = http.events.iter().flat_map(|(_, e)| e.fields.iter()).filter_map(|f| f.map.clone()).collect();
    let format = maps.iter().find(|m| m.name == "HTTP_TEMPLATE_LOGGING_LogFormat_ValueMap").unwrap();
    assert_eq!((format.bitmap, format.lookup(2).as_deref(), format.lookup(4)), (false, Some("NCSA"), None));
}

#[test]
fn component_manifest_with_33_providers() {
    let files = parsed("SystemEvents.man");
    assert_eq!(files.len(), 33, "the counters section's provider is not an event provider");
    let by_name = |name: &str| files.iter().find(|f| f.provider.name == name).unwrap();

    let net = by_name("Microsoft-Windows-Kernel-Network");
    assert_eq!(net.events.len(), 22);
    assert_eq!(net.provider.channel_name(16), Some("Microsoft-Windows-Kernel-Network/Analytic"));
    assert_eq!(
        net.provider.keyword_names(0x30).collect::<Vec<_>>(),
        ["KERNEL_NETWORK_KEYWORD_IPV4", "KERNEL_NETWORK_KEYWORD_IPV6"]
    );
    let send = event(net, 10, 0);
    assert_eq!(send.name.as_deref(), Some("KNetEvt_SendIPV4"));
    assert_eq!(send.task.as_deref(), Some("KERNEL_NETWORK_TASK_TCPIP"), "a task without a message shows its name");
    assert_eq!(send.opcode.as_deref(), Some("Data sent."), "opcode 10's message");
    assert_eq!(send.message.as_deref(), Some("TCPv4: %2 bytes transmitted from %4:%6 to %3:%5."));
    assert_eq!((send.fields[2].name.as_str(), send.fields[2].out_type), ("daddr", OutType::Ipv4));
    // The IPv6 addresses: 16 bytes of win:Binary shown as IPv6.
    let send6 = event(net, 26, 0);
    assert_eq!(
        (send6.fields[2].in_type, send6.fields[2].out_type, send6.fields[2].length),
        (InType::Binary, OutType::Ipv6, Some(Len::Fixed(16)))
    );

    // An imported standard channel keeps its number.
    assert_eq!(by_name("Microsoft-Windows-Kernel-General").provider.channel_name(8), Some("System"));

    // Nested structs: the WDI action-status template.
    let wdi = by_name("Microsoft-Windows-Kernel-WDI");
    let with_struct =
        wdi.events.iter().map(|(_, e)| e).find(|e| e.fields.iter().any(|f| f.name == "SemActions")).unwrap();
    let names: Vec<&str> = with_struct.fields.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names[..5], ["ProviderID", "EventID", "DroppedEventCount", "ActionCount", "SemActions"]);
    let actions = &with_struct.fields[4];
    assert_eq!((actions.in_type, actions.count), (InType::Struct, Some(Len::Field(3))));
    let reserved = actions.members.iter().find(|m| m.name == "Reserved").unwrap();
    assert_eq!((reserved.in_type, reserved.count), (InType::UInt8, Some(Len::Fixed(7))));

    // The one bit map of the reference manifests.
    let process = by_name("Microsoft-Windows-Kernel-Process");
    let flags = process.events.iter().flat_map(|(_, e)| e.fields.iter()).find_map(|f| f.map.clone()).unwrap();
    assert_eq!(
        (flags.name.as_str(), flags.bitmap, flags.lookup(1).as_deref()),
        ("ProcessFlags", true, Some("PackageId"))
    );
}

#[test]
fn ie_and_tcpip_manifests() {
    let ie = parsed("IE_Client.man");
    let names: Vec<(&str, usize)> = ie.iter().map(|f| (f.provider.name.as_str(), f.events.len())).collect();
    assert_eq!(names, [("Microsoft-IE", 119), ("Microsoft-Windows-WinINet", 117)]);

    let tcp = parsed("tcp.man");
    assert_eq!((tcp[0].provider.name.as_str(), tcp[0].events.len()), ("Microsoft-Windows-TCPIP", 211));
    let state = tcp[0]
        .events
        .iter()
        .flat_map(|(_, e)| e.fields.iter())
        .find_map(|f| f.map.clone().filter(|m| m.name == "TCP_CONNECTION_STATE_ValueMap"))
        .unwrap();
    assert!(!state.bitmap);
    assert_eq!(state.entries.len(), 11);
    assert_eq!(state.lookup(0).as_deref(), Some("ClosedState"));
    assert_eq!(state.lookup(4).as_deref(), Some("EstablishedState"));
    assert_eq!(state.lookup(11), None);
}

#[test]
fn http_server_trace_decodes_with_its_manifest() {
    let mut schemas = Schemas::new();
    assert_eq!(schemas.add_manifest(&reference("HTTP_Server.man")).unwrap(), 85);
    let http = Guid::parse_const("dd5ef90a-6398-47a4-ad34-4dcecdef795f");
    let file = TraceFile::open(corpus_file("tx__HTTP_Server.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let mut stream = trace.events();
    let (mut decoded, mut parsed_requests) = (0, 0);
    let mut urls: BTreeMap<String, usize> = BTreeMap::new();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        if e.provider != http {
            continue;
        }
        let mut values = Vec::new();
        let schema = schemas.schema_of(&e.record).unwrap_or_else(|err| panic!("event {}: {err}", e.id));
        assert_eq!(schema.source, Source::Manifest);
        let used = payload::decode(&schema.fields, e.payload, e.pointer_size, &mut values)
            .unwrap_or_else(|err| panic!("event {}: {err}", e.id));
        assert_eq!(used, e.payload.len(), "event {} v{}: payload left over", e.id, e.version);
        decoded += 1;
        if e.id == 2 {
            // "Parsed request (request pointer %1, method %2) with URI %3."
            assert_eq!(schema.opcode.as_deref(), Some("Parse"));
            assert_eq!(schema.fields[2].name, "Url");
            assert_eq!(values[1], Value::Unsigned(4), "HttpVerb 4 is GET");
            *urls.entry(values[2].as_str().unwrap().into_owned()).or_default() += 1;
            parsed_requests += 1;
        }
    }
    assert_eq!(decoded, 2041);
    assert!(parsed_requests > 0);
    assert_eq!(urls.keys().collect::<Vec<_>>(), ["http://georgis2:80/helloworld.htm", "http://georgis2:80/windir.txt"]);
    assert_eq!(urls.values().sum::<usize>(), parsed_requests);
}

/// An event as PerfView's baseline lists it:
/// `EVENT t: Name PID=..; TID=..; PName=..; ProceNum=..; DataLen=..; field=value; …`.
struct Line {
    name: String,
    pid: i64,
    tid: i64,
    data_len: usize,
    fields: Vec<(String, String)>,
}

/// The baseline's events and counts of the providers named by `prefixes`,
/// ManifestData aside (PerfView decodes its envelope; nettrail does not).
fn baseline(trace: &str, prefixes: &[String]) -> (Vec<Line>, BTreeMap<String, usize>) {
    let path = corpus_dir().join("companions").join(format!("{trace}.baseline.txt"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut events = Vec::new();
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let ours = |name: &str| prefixes.iter().any(|p| name.starts_with(p)) && !name.ends_with("/ManifestData");
        if let Some((name, count)) = line.strip_prefix("COUNT ").and_then(|l| l.rsplit_once(':')) {
            if ours(name) {
                counts.insert(name.to_string(), count.parse().unwrap());
            }
            continue;
        }
        let Some((_, rest)) = line.strip_prefix("EVENT ").and_then(|l| l.split_once(": ")) else { continue };
        let (name, rest) = rest.split_once(' ').unwrap();
        if !ours(name) {
            continue;
        }
        let pairs: Vec<(String, String)> = rest
            .split("; ")
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_end_matches(';').to_string()))
            .collect();
        let get = |k: &str| pairs.iter().find(|(n, _)| n == k).map(|(_, v)| v.replace(',', "")).unwrap();
        events.push(Line {
            name: name.to_string(),
            pid: get("PID").parse().unwrap(),
            tid: get("TID").parse().unwrap(),
            data_len: get("DataLen").parse().unwrap(),
            fields: pairs.into_iter().skip(5).collect(),
        });
    }
    (events, counts)
}

/// A decoded value as PerfView's baseline shows it (integers grouped by
/// thousands, or hex where it used hex; maps by name; strings and GUIDs
/// cut to 20 characters).
fn shown_like_baseline(field: &nettrail_decode::Field, value: &Value<'_>, hex: bool) -> String {
    let group = |digits: String| {
        let (sign, digits) = digits.strip_prefix('-').map_or(("", digits.as_str()), |d| ("-", d));
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        format!("{sign}{out}")
    };
    let text = match (value, &field.map) {
        (v, Some(map)) => v.as_u64().and_then(|n| map.lookup(n)).unwrap_or_else(|| v.as_u64().unwrap().to_string()),
        (Value::Unsigned(n), None) if hex => format!("0x{n:08x}"),
        (Value::Unsigned(n), None) => group(n.to_string()),
        (Value::Signed(n), None) => group(n.to_string()),
        (Value::Bool(b), None) => if *b { "True" } else { "False" }.to_string(),
        (Value::Guid(g), None) => g.to_string(),
        (v, None) => v.as_str().map(|s| s.into_owned()).unwrap_or_else(|| format!("{v:?}")),
    };
    if text.chars().count() > 20 { format!("{}...", text.chars().take(20).collect::<String>()) } else { text }
}

/// Learns the EventSource manifests a PerfView trace carries and checks
/// every event of those providers against PerfView's baseline.
fn eventsource_trace_matches_baseline(trace_file: &str, baseline_name: &str, providers: &[(&str, &str)]) {
    let file = TraceFile::open(corpus_file(trace_file)).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let mut schemas = Schemas::new();
    let problems = schemas.learn(&trace);
    assert!(!problems.iter().any(|p| p.contains("EventSource")), "{problems:?}");
    for (name, guid) in providers {
        let info = schemas.event_source.providers.get(&Guid::parse_const(guid)).unwrap();
        assert_eq!(info.name, *name);
    }
    let guids: Vec<Guid> = providers.iter().map(|(_, g)| Guid::parse_const(g)).collect();

    // Every event of those providers, rendered as the baseline names it.
    let mut ours: Vec<Line> = Vec::new();
    let mut stream = trace.events();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        if !guids.contains(&e.provider) || e.id == 0xFFFE {
            continue;
        }
        let schema = schemas.schema_of(&e.record).unwrap_or_else(|err| panic!("{} event {}: {err}", e.provider, e.id));
        assert_eq!(schema.source, Source::EventSourceManifest);
        let mut values = Vec::new();
        let used = payload::decode(&schema.fields, e.payload, e.pointer_size, &mut values).unwrap();
        if schema.task.as_deref() == Some("ClrEnableParameters") {
            // PerfView logs (UInt64 keywords, UInt32 level) through EventSource's
            // WriteEvent(id, long, long): the level arrives widened to 8 bytes.
            assert_eq!((used, e.payload.len(), &e.payload[12..]), (12, 16, &[0u8; 4][..]));
        } else {
            assert_eq!(used, e.payload.len(), "{} event {}: payload left over", e.provider, e.id);
        }
        let mut name = format!("{}/{}", schema.provider.name, schema.task.as_deref().unwrap());
        if let Some(opcode) = &schema.opcode {
            name = format!("{name}/{opcode}");
        }
        // Each field both ways PerfView shows integers: grouped decimal, and hex.
        let mut fields = Vec::new();
        for (f, v) in schema.fields.iter().zip(&values) {
            fields.push((f.name.clone(), shown_like_baseline(f, v, false)));
            fields.push((format!("{}#hex", f.name), shown_like_baseline(f, v, true)));
        }
        let pid = e.process_id.map_or(-1, i64::from);
        let tid = e.thread_id.map_or(-1, i64::from);
        ours.push(Line { name, pid, tid, data_len: e.payload.len(), fields });
    }

    let prefixes: Vec<String> = providers.iter().map(|(n, _)| format!("{n}/")).collect();
    let (expected, counts) = baseline(baseline_name, &prefixes);
    for (name, count) in &counts {
        assert_eq!(ours.iter().filter(|o| o.name == *name).count(), *count, "{baseline_name}: how many {name}");
    }
    assert!(counts.len() >= 10, "{baseline_name}: only {} event names counted", counts.len());
    assert_eq!(ours.len(), counts.values().sum::<usize>(), "{baseline_name}: events the baseline does not count");

    let mut lines = 0;
    for want in &expected {
        let same_fields = |o: &Line| {
            want.fields.iter().all(|(k, v)| {
                let key = if v.starts_with("0x") { format!("{k}#hex") } else { k.clone() };
                o.fields.iter().any(|(n, shown)| *n == key && shown == v)
            })
        };
        let found = ours.iter().any(|o| {
            o.name == want.name
                && o.pid == want.pid
                && o.tid == want.tid
                && o.data_len == want.data_len
                && same_fields(o)
        });
        assert!(found, "{baseline_name}: no decoded event matches {} {:?}", want.name, want.fields);
        lines += 1;
    }
    assert!(lines >= 20, "{baseline_name}: only {lines} baseline lines compared");
}

#[test]
fn eventsource_manifests_in_net_4_5_2_trace() {
    eventsource_trace_matches_baseline(
        "perfview__net.4.5.2.x86.etl",
        "perfview__net.4.5.2.x86",
        &[
            ("PerfView", "a8a71ac1-040f-54a2-07ca-00a89b5ab761"),
            ("System.Threading.Tasks.TplEventSource", "2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5"),
            ("System.Diagnostics.Eventing.FrameworkEventSource", "8e9f5090-2d75-4d03-8a81-e5afbf85daf1"),
        ],
    );
}

#[test]
fn eventsource_manifests_in_net_4_5_trace() {
    eventsource_trace_matches_baseline(
        "perfview__net.4.5.x86.PerfViewData.etl",
        "perfview__net.4.5.x86",
        &[
            ("PerfView", "a8a71ac1-040f-54a2-07ca-00a89b5ab761"),
            ("System.Diagnostics.Eventing.FrameworkEventSource", "8e9f5090-2d75-4d03-8a81-e5afbf85daf1"),
        ],
    );
}

#[test]
fn a_known_eventsource_event_in_detail() {
    let file = TraceFile::open(corpus_file("perfview__net.4.5.2.x86.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let mut schemas = Schemas::new();
    schemas.learn(&trace);
    let perfview = Guid::parse_const("a8a71ac1-040f-54a2-07ca-00a89b5ab761");
    let mut stream = trace.events();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        if e.provider != perfview || e.id != 14 {
            continue;
        }
        // PerfView/ProviderEnableParameters: providerName=DotNet; providerGuid=319dc449-ada5-50f7-4…;
        // level=Verbose; keywords=0xffffffffffffffff; stacks=1; values=
        let mut values = Vec::new();
        let schema = schemas.decode(&e.record, &mut values).unwrap();
        assert_eq!(schema.task.as_deref(), Some("ProviderEnableParameters"));
        assert_eq!(values[0].as_str().unwrap(), "DotNet");
        assert_eq!(values[1], Value::Guid(Guid::parse_const("319dc449-ada5-50f7-428e-957db6791668")));
        assert_eq!(
            schema.fields[2].map.as_ref().unwrap().lookup(values[2].as_u64().unwrap()).as_deref(),
            Some("Verbose")
        );
        assert_eq!(values[3], Value::Unsigned(u64::MAX));
        assert_eq!(values[4], Value::Signed(1));
        assert_eq!(values[5].as_str().unwrap(), "");
        return;
    }
    panic!("no ProviderEnableParameters event");
}

#[test]
fn malformed_manifests_are_errors() {
    let http = reference("HTTP_Server.man");
    for cut in [0, 1, 100, http.len() / 2, http.len() - 30] {
        let e: ManifestError = manifest::parse(&http[..cut], Source::Manifest).unwrap_err();
        assert!(!e.to_string().is_empty());
    }
    let e = manifest::parse(&http.replacen("length=\"AddressLength\"", "length=\"NoSuchField\"", 1), Source::Manifest)
        .unwrap_err();
    assert_eq!(e.line, Some(340));
    assert!(e.message.contains("<data name=\"Address\">") && e.message.contains("NoSuchField"), "{e}");
}
