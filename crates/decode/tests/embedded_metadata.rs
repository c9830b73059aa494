//! Events decoded with the TRACE_EVENT_INFO metadata that merged traces embed
//! (KernelTraceControl MetaData events), checked against PerfView's dumps of
//! the same traces, and the metadata blobs of the corpus damaged on purpose.

use std::collections::HashMap;

use nettrail_decode::sources::event_info::EmbeddedMetadata;
use nettrail_decode::{EventSchema, SchemaKey, Schemas, Source, Value, format, payload};
use nettrail_etl::{Guid, Record, Trace, TraceFile};
use nettrail_testkit::{Rng, catalog, corpus_dir, corpus_file};

const METADATA_CLASS: Guid = Guid::parse_const("bbccf6c1-6cd1-48c4-80ff-839482e37671");
const DNS_CLIENT: &str = "1c95126e-7eea-49a9-a3fe-a378b03ddb4d";
const KERNEL_EVENT_TRACING: &str = "b675ec37-bdb6-4648-bc92-f3fdc74d3ca2";
const KERNEL_FILE: &str = "edd08927-9cc4-4e65-b970-c2560fb5c289";
const KERNEL_PROCESS: &str = "22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716";
const IMMERSIVE_SHELL: &str = "315a8872-923e-4ea2-9889-33cd4754bf64";
const CLR: &str = "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4";
const PKTMON: &str = "4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac";

fn guid(s: &str) -> Guid {
    s.parse().unwrap()
}

/// The schemas a trace embeds; learning them must report no problem.
fn learn(trace: &Trace<'_>, name: &str) -> Schemas {
    let mut schemas = Schemas::new();
    let problems = schemas.learn(trace);
    assert!(problems.is_empty(), "{name}: {problems:?}");
    schemas
}

/// One decoded event: its key fields, payload size, bytes consumed and
/// every field as TDH-style text.
#[derive(Debug)]
struct Decoded {
    provider: Guid,
    id: u16,
    payload_len: usize,
    consumed: Option<usize>,
    fields: Vec<(String, String)>,
}

fn decoded_text(schema: &EventSchema, values: &[Value<'_>], pointer_size: u8) -> Vec<(String, String)> {
    let mut fields = Vec::new();
    for (field, value) in schema.fields.iter().zip(values) {
        let mut text = String::new();
        format::text(field, value, pointer_size, &mut text);
        fields.push((field.name.clone(), text));
    }
    fields
}

/// Every event of `trace` whose schema came from embedded metadata, in
/// time order, decoded with `schemas`.
fn embedded_events(trace: &Trace<'_>, schemas: &Schemas) -> Vec<Decoded> {
    let mut all = Vec::new();
    let mut stream = trace.events();
    while let Some(event) = stream.next() {
        let event = event.unwrap();
        let Ok(schema) = schemas.schema_of(&event.record) else { continue };
        if schema.source != Source::EmbeddedEventInfo {
            continue;
        }
        let mut values = Vec::new();
        let consumed = payload::decode(&schema.fields, event.payload, event.pointer_size, &mut values).ok();
        all.push(Decoded {
            provider: event.provider,
            id: event.id,
            payload_len: event.payload.len(),
            consumed,
            fields: decoded_text(&schema, &values, event.pointer_size),
        });
    }
    all
}

fn field<'a>(event: &'a Decoded, name: &str) -> &'a str {
    event.fields.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or_else(|| panic!("no {name}"))
}

#[test]
fn events_each_corpus_trace_decodes_through_embedded_metadata() {
    // (trace, schemas embedded, events decoded, of which payload fully consumed)
    let expected: HashMap<&str, (usize, usize, usize)> = [
        ("perfview__net.4.5.x86.PerfViewData.etl", (6, 95, 95)),
        // CLRStackWalk (DotNETRuntime 82) declares a two-pointer Stack, but
        // the runtime logs FrameCount frames: 5,206 events keep a tail, as
        // they do under TDH, which reads the same declaration.
        ("perfview__net.4.5.2.x86.etl", (61, 39_854, 34_648)),
        // Describes the events of its sibling user_paged.1.etl, not its own.
        ("perfview__diaghub.etl", (17, 0, 0)),
        ("demikernel__PktMon.etl", (12, 403, 403)),
    ]
    .into_iter()
    .collect();
    let mut checked = 0;
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        if entry["events"].as_u64() == Some(0) {
            continue; // the damaged file: nothing to learn from
        }
        let file = TraceFile::open(corpus_file(name)).unwrap();
        let trace = Trace::parse(file.bytes()).unwrap();
        let schemas = learn(&trace, name);
        let events = embedded_events(&trace, &schemas);
        let decoded = events.iter().filter(|e| e.consumed.is_some()).count();
        let consumed = events.iter().filter(|e| e.consumed == Some(e.payload_len)).count();
        let got = (schemas.embedded.events.len(), decoded, consumed);
        assert_eq!(got, expected.get(name).copied().unwrap_or_default(), "{name}");
        assert_eq!(decoded, events.len(), "{name}: every event with an embedded schema decodes");
        let clr_stack_walk = |e: &&Decoded| e.provider == guid(CLR) && e.id == 82;
        assert!(events.iter().filter(|e| e.consumed != Some(e.payload_len)).all(|e| clr_stack_walk(&e)), "{name}");
        checked += 1;
    }
    assert_eq!(checked, 23);
}

/// A PerfView baseline event type compared with ours: fields PerfView
/// renames, and those it adds or derives differently (not compared).
struct Case {
    baseline: &'static str,
    provider: &'static str,
    id: u16,
    renamed: &'static [(&'static str, &'static str)],
    not_compared: &'static [&'static str],
}

const fn case(baseline: &'static str, provider: &'static str, id: u16) -> Case {
    Case { baseline, provider, id, renamed: &[], not_compared: &[] }
}

/// The baseline's events of one type, in order: DataLen and fields.
fn baseline_events(text: &str, event_name: &str) -> Vec<(usize, Vec<(String, String)>)> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| l.starts_with("EVENT ")) {
        let Some((_, rest)) = line.split_once(": ") else { continue };
        let Some((name, fields)) = rest.split_once(" PID=") else { continue };
        if name != event_name {
            continue;
        }
        let mut data_len = None;
        let mut values = Vec::new();
        for part in fields.trim_end().trim_end_matches(';').split("; ") {
            let Some((k, v)) = part.split_once('=') else { continue };
            match k {
                "TID" | "PName" | "ProceNum" => {}
                "DataLen" => data_len = Some(v.replace(',', "").parse().unwrap()),
                _ if values.is_empty() && k.chars().all(|c| c.is_ascii_digit()) => {} // the PID's value
                _ => values.push((k.to_string(), v.to_string())),
            }
        }
        out.push((data_len.unwrap(), values));
    }
    out
}

/// PerfView's dump against our text: values cut to 20 characters and "...",
/// numbers with thousands separators (ours may be hex), dates as
/// yy/mm/dd hh:mm:ss.ff, GUIDs without braces, flags joined with ", ".
fn same(expected: &str, ours: &str) -> bool {
    let ours = ours.trim_start_matches('{').trim_end_matches('}').replace('|', ", ").to_lowercase();
    let (expected, cut) = match expected.strip_suffix("...") {
        Some(e) => (e.to_lowercase(), true),
        None => (expected.to_lowercase(), false),
    };
    let number = |s: &str| match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.replace(',', "").parse::<u64>().ok(),
    };
    if let (false, Some(a), Some(b)) = (cut, number(&expected), number(&ours)) {
        return a == b;
    }
    let date = expected.as_bytes();
    let expected = if date.len() >= 17 && date[2] == b'/' && date[5] == b'/' && date[8] == b' ' {
        format!("20{}-{}-{}t{}", &expected[..2], &expected[3..5], &expected[6..8], &expected[9..])
    } else {
        expected
    };
    if cut { ours.starts_with(&expected) } else { ours == expected }
}

fn compare_with_baseline(trace_name: &str, baseline_name: &str, cases: &[Case]) {
    let text = std::fs::read_to_string(corpus_dir().join("companions").join(baseline_name)).unwrap();
    let file = TraceFile::open(corpus_file(trace_name)).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let schemas = learn(&trace, trace_name);
    let events = embedded_events(&trace, &schemas);
    for case in cases {
        let expected = baseline_events(&text, case.baseline);
        assert!(!expected.is_empty(), "{}: not in the baseline", case.baseline);
        let ours: Vec<&Decoded> = events
            .iter()
            .filter(|e| e.provider == guid(case.provider) && e.id == case.id)
            .take(expected.len())
            .collect();
        assert_eq!(ours.len(), expected.len(), "{}", case.baseline);
        for (n, ((data_len, fields), event)) in expected.iter().zip(ours).enumerate() {
            let at = format!("{} #{n}", case.baseline);
            assert_eq!(event.payload_len, *data_len, "{at}: DataLen");
            assert_eq!(event.consumed, Some(event.payload_len), "{at}: payload consumed");
            for (name, value) in fields {
                if case.not_compared.contains(&name.as_str()) {
                    continue;
                }
                let ours_name = case.renamed.iter().find(|(theirs, _)| theirs == name).map_or(name.as_str(), |r| r.1);
                let Some((_, mine)) = event.fields.iter().find(|(n, _)| n == ours_name) else {
                    panic!("{at}: PerfView has {name}, we do not: {:?}", event.fields)
                };
                assert!(same(value, mine), "{at}: {name} is {value} in PerfView's dump, {mine} here");
            }
        }
    }
}

#[test]
fn dns_client_and_event_tracing_match_perfview_net_4_5() {
    compare_with_baseline(
        "perfview__net.4.5.x86.PerfViewData.etl",
        "perfview__net.4.5.x86.baseline.txt",
        &[
            case("Microsoft-Windows-DNS-Client/EventID(1001)", DNS_CLIENT, 1001),
            case("Microsoft-Windows-DNS-Client/EventID(1019)", DNS_CLIENT, 1019),
            case("Microsoft-Windows-Kernel-EventTracing/ETW_TASK_PROVIDER/ETW_OPCODE_ENABLE", KERNEL_EVENT_TRACING, 14),
            case(
                "Microsoft-Windows-Kernel-EventTracing/ETW_TASK_PROVIDER/ETW_OPCODE_REGISTER",
                KERNEL_EVENT_TRACING,
                8,
            ),
            case(
                "Microsoft-Windows-Kernel-EventTracing/ETW_TASK_PROVIDER/ETW_OPCODE_UNREGISTER",
                KERNEL_EVENT_TRACING,
                9,
            ),
            case("Microsoft-Windows-Kernel-EventTracing/ETW_TASK_SESSION/ETW_OPCODE_STOP", KERNEL_EVENT_TRACING, 11),
        ],
    );
}

#[test]
fn windows_and_clr_events_match_perfview_net_4_5_2() {
    const CREATE_RENAMED: &[(&str, &str)] = &[("IrpPtr", "Irp"), ("FileAttributes", "CreateAttributes")];
    compare_with_baseline(
        "perfview__net.4.5.2.x86.etl",
        "perfview__net.4.5.2.x86.baseline.txt",
        &[
            case("Microsoft-Windows-DNS-Client/DnsServerForInterface", DNS_CLIENT, 1001),
            case("Microsoft-Windows-Kernel-EventTracing/ETW_TASK_PROVIDER/ETW_OPCODE_ENABLE", KERNEL_EVENT_TRACING, 14),
            case(
                "Microsoft-Windows-Kernel-EventTracing/ETW_TASK_PROVIDER/ETW_OPCODE_REGISTER",
                KERNEL_EVENT_TRACING,
                8,
            ),
            // PerfView splits CreateOptions into options and disposition,
            // names ShareAccess bits and shows DOS paths: see
            // kernel_file_create_raw_values_and_clr_struct_arrays.
            Case {
                renamed: CREATE_RENAMED,
                not_compared: &["CreateOptions", "CreateDisposition", "ShareAccess", "FileName"],
                ..case("Microsoft-Windows-Kernel-File/Create", KERNEL_FILE, 12)
            },
            case("Microsoft-Windows-Kernel-Process/ProcessStart/Start", KERNEL_PROCESS, 1),
            case("Microsoft-Windows-Kernel-Process/ProcessStop/Stop", KERNEL_PROCESS, 2),
            case(
                "Microsoft-Windows-Immersive-Shell/ImmersiveShellAppManagerOnShellHookMessage/Start",
                IMMERSIVE_SHELL,
                191,
            ),
            case(
                "Microsoft-Windows-Immersive-Shell/ImmersiveShellAppManagerSetActiveProcess/Stop",
                IMMERSIVE_SHELL,
                148,
            ),
            // PerfView fills fields of later versions with defaults.
            Case {
                not_compared: &["ClientSequenceNumber"],
                ..case("Microsoft-Windows-DotNETRuntime/GC/Start", CLR, 1)
            },
            case("Microsoft-Windows-DotNETRuntime/GC/Triggered", CLR, 35),
            // TotalHeapSize, TotalPromoted and Depth are PerfView's sums;
            // generation 4 came in a later version.
            Case {
                not_compared: &["TotalHeapSize", "TotalPromoted", "Depth", "GenerationSize4", "TotalPromotedSize4"],
                ..case("Microsoft-Windows-DotNETRuntime/GC/HeapStats", CLR, 4)
            },
            Case {
                not_compared: &["ObjectSize"],
                ..case("Microsoft-Windows-DotNETRuntime/GC/AllocationTick", CLR, 10)
            },
            case("Microsoft-Windows-DotNETRuntime/GC/BulkSurvivingObjectRanges", CLR, 21),
            case("Microsoft-Windows-DotNETRuntime/Method/JittingStarted", CLR, 145),
            Case {
                not_compared: &["ReJITID", "OptimizationTier"],
                ..case("Microsoft-Windows-DotNETRuntime/Method/LoadVerbose", CLR, 143)
            },
            // ModuleILFileName is PerfView's, cut from ModuleILPath.
            Case {
                not_compared: &["ModuleILFileName"],
                ..case("Microsoft-Windows-DotNETRuntime/Loader/ModuleLoad", CLR, 152)
            },
            case("Microsoft-Windows-DotNETRuntime/Runtime/Start", CLR, 187),
            Case {
                not_compared: &["LockID", "AssociatedObjectID", "LockOwnerThreadID"],
                ..case("Microsoft-Windows-DotNETRuntime/Contention/Start", CLR, 81)
            },
        ],
    );
}

#[test]
fn kernel_file_create_raw_values_and_clr_struct_arrays() {
    let file = TraceFile::open(corpus_file("perfview__net.4.5.2.x86.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let schemas = learn(&trace, "net.4.5.2");
    let events = embedded_events(&trace, &schemas);
    // PerfView: CreateOptions=2097152; CreateDisposition=OPEN_EXISTING;
    // ShareAccess=ReadWrite, Delete; FileName=C:\Windows\SysWOW64\...
    let create = events.iter().find(|e| e.provider == guid(KERNEL_FILE)).unwrap();
    let options = u64::from_str_radix(field(create, "CreateOptions").trim_start_matches("0x"), 16).unwrap();
    assert_eq!((options & 0xFF_FFFF, options >> 24), (2_097_152, 1));
    assert_eq!(field(create, "ShareAccess"), "0x7");
    assert!(field(create, "FileName").starts_with(r"\Device\HarddiskVolume2\Windows\SysWOW64\"));
    assert_eq!(field(create, "Irp"), "0xFFFFFA83031E6CD8", "a 64-bit pointer, though the blob says 4 bytes");

    // BulkType: a struct array counted by a top-level field, holding an
    // array counted by a member (TDH index 9 is the struct's member 6).
    // PerfView: Count=1; ClrInstanceID=11; TypeID_0=0x0267ed78; TypeName_0=Microsoft.Win32.Safe...
    let bulk = events.iter().find(|e| e.provider == guid(CLR) && e.id == 15).unwrap();
    assert_eq!((field(bulk, "Count"), field(bulk, "ClrInstanceID")), ("1", "11"));
    let values = field(bulk, "Values");
    assert!(values.starts_with("{TypeID: 0x267ED78, "), "{values}");
    assert!(values.contains("Name: Microsoft.Win32.Safe"), "{values}");
    assert!(values.ends_with("TypeParameterCount: 0, TypeParameters: }"), "{values}");
    // BulkSurvivingObjectRanges: Count=27 ranges of a 32-bit pointer and a u64.
    let ranges = events.iter().find(|e| e.provider == guid(CLR) && e.id == 21).unwrap();
    assert_eq!(field(ranges, "Count"), "27");
    assert_eq!(field(ranges, "Values").matches("RangeBase: 0x").count(), 27);
    assert_eq!(ranges.consumed, Some(334));
}

#[test]
fn pktmon_packets_and_components() {
    let file = TraceFile::open(corpus_file("demikernel__PktMon.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let schemas = learn(&trace, "PktMon");
    let events = embedded_events(&trace, &schemas);
    assert!(events.iter().all(|e| e.provider == guid(PKTMON)));
    let count = |id| events.iter().filter(|e| e.id == id).count();
    // The catalog's counts of the three most common PktMon events.
    assert_eq!((count(160), count(30), count(90)), (114, 111, 50));

    let packets: Vec<&Decoded> = events.iter().filter(|e| e.id == 160).collect();
    for p in &packets {
        // The logged bytes are as many as the event says, and each is an
        // Ethernet frame carrying IPv4, IPv6 or ARP.
        let logged: usize = field(p, "LoggedPayloadSize").parse().unwrap();
        let original: usize = field(p, "OriginalPayloadSize").parse().unwrap();
        let frame = field(p, "Payload").trim_start_matches("0x");
        assert_eq!((frame.len() / 2, logged <= original), (logged, true));
        assert_eq!(field(p, "PacketType"), "Ethernet");
        assert!(["0800", "86DD", "0806"].contains(&&frame[24..28]), "EtherType {}", &frame[24..28]);
        assert!(["Rx", "Tx"].contains(&field(p, "DirTag")));
    }
    let first = packets[0];
    assert_eq!(
        (field(first, "PktGroupId"), field(first, "ComponentId"), field(first, "DropReason")),
        ("1071654", "59", "Unspecified")
    );
    // 10.9.1.14 pings 10.9.1.22: the IPv4 header inside the frame.
    assert_eq!(&field(first, "Payload")[2 + 2 * 26..2 + 2 * 34], "0A09010E0A090116");

    // Rundown: components with their names and (value-map) types, addresses.
    let component = events.iter().find(|e| e.id == 20).unwrap();
    assert_eq!(
        (field(component, "Id"), field(component, "Type"), field(component, "Name")),
        ("75", "HTTP Protocol", "http.sys")
    );
    let v4 = events.iter().find(|e| e.id == 65).unwrap();
    assert_eq!((field(v4, "Type"), field(v4, "IpAddress")), ("IP Address", "10.9.1.22"));
    let v6 = events.iter().find(|e| e.id == 66).unwrap();
    assert_eq!(field(v6, "IpAddress"), "fe80::fb0f:5039:c3e9:adf7", "a 16-byte binary of fixed length");
    let ether_types: Vec<&str> = events.iter().filter(|e| e.id == 75).map(|e| field(e, "EtherType")).collect();
    assert!(ether_types.contains(&"IPv4") && ether_types.contains(&"ARP"), "{ether_types:?}");
    let filter = events.iter().find(|e| e.id == 100).unwrap();
    assert_eq!((field(filter, "FilterName"), field(filter, "MacAddress1")), ("eth3", "0x0022487BB380"));

    let schema = schemas.embedded.events.values().next().unwrap();
    assert_eq!(schema.provider.name, "Microsoft-Windows-PktMon");
    assert_eq!(schema.provider.keywords, [(0x2, "Rundown".to_string()), (0x10, "Payload".to_string())]);
}

#[test]
fn diaghub_metadata_decodes_its_sibling_file() {
    // The Diagnostics Hub session split one trace over several files; the
    // merge put the metadata in diaghub.etl and the CLR and TPL events in
    // user_paged.1.etl.
    let meta_file = TraceFile::open(corpus_file("perfview__diaghub.etl")).unwrap();
    let meta = Trace::parse(meta_file.bytes()).unwrap();
    let schemas = learn(&meta, "diaghub");
    let file = TraceFile::open(corpus_file("perfview__diaghub.user_paged.1.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let events = embedded_events(&trace, &schemas);
    assert_eq!(events.len(), 21_775);
    assert!(events.iter().all(|e| e.consumed == Some(e.payload_len)));
    let runtime = events.iter().find(|e| e.id == 187).unwrap();
    assert_eq!((field(runtime, "Sku"), field(runtime, "StartupMode")), ("CoreClr", "HostedClr"));
    assert!(field(runtime, "RuntimeDllPath").ends_with(r"\Microsoft.NETCore.App\3.1.7\coreclr.dll"));
    for map in events.iter().filter(|e| e.id == 190) {
        // ILOffsets and NativeOffsets are counted by CountOfMapEntries.
        let n: usize = field(map, "CountOfMapEntries").parse().unwrap();
        assert_eq!(field(map, "ILOffsets").split(", ").count(), n);
        assert_eq!(field(map, "NativeOffsets").split(", ").count(), n);
    }
    let tpl = guid("2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5");
    assert_eq!(events.iter().filter(|e| e.provider == tpl).count(), 18);
}

/// The MetaData payloads of a trace: (opcode, bytes).
fn metadata_payloads(trace: &Trace<'_>) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    for info in trace.buffers() {
        let contents = trace.contents(&info, &mut scratch);
        for item in trace.records(&info, &contents) {
            let Ok((_, record)) = item else { break };
            if record.kind.is_classic() && record.provider == METADATA_CLASS {
                out.push((record.opcode, record.payload.to_vec()));
            }
        }
    }
    out
}

fn add(m: &mut EmbeddedMetadata, opcode: u8, blob: &[u8]) -> Result<(), String> {
    if opcode == 32 { m.add_event_info(blob) } else { m.add_event_map_info(blob) }
}

#[test]
fn damaged_real_metadata_gives_errors_never_panics() {
    let mut rng = Rng(0x5EED_E7E1);
    let (mut blobs, mut rejected, mut accepted) = (0, 0, 0);
    for name in ["perfview__net.4.5.2.x86.etl", "demikernel__PktMon.etl"] {
        let file = TraceFile::open(corpus_file(name)).unwrap();
        let trace = Trace::parse(file.bytes()).unwrap();
        // A few real payloads of each embedded event, to decode with damaged schemas.
        let schemas = learn(&trace, name);
        let mut samples: HashMap<SchemaKey, Vec<(Vec<u8>, u8)>> = HashMap::new();
        let mut stream = trace.events();
        while let Some(event) = stream.next() {
            let event = event.unwrap();
            let record: &Record<'_> = &event.record;
            let Some(key) = Schemas::key_of(record) else { continue };
            if schemas.embedded.events.contains_key(&key) {
                let list = samples.entry(key).or_default();
                if list.len() < 3 {
                    list.push((record.payload.to_vec(), record.pointer_size));
                }
            }
        }
        for (opcode, blob) in metadata_payloads(&trace) {
            blobs += 1;
            for len in 0..blob.len() {
                let cut = &blob[..len];
                assert!(
                    add(&mut EmbeddedMetadata::new(), opcode, cut).is_err(),
                    "{name}: {len} of {} bytes",
                    blob.len()
                );
            }
            for round in 0..48 {
                let mut bad = blob.clone();
                let flips = if round % 4 == 0 { 8 } else { 1 };
                for _ in 0..flips {
                    let at = rng.below(bad.len() as u64) as usize;
                    bad[at] ^= 1 << rng.below(8);
                }
                let mut m = EmbeddedMetadata::new();
                if add(&mut m, opcode, &bad).is_err() {
                    rejected += 1;
                    continue;
                }
                accepted += 1;
                for (key, schema) in m.finish().events {
                    for (payload, pointer_size) in samples.get(&key).into_iter().flatten() {
                        let _ = payload::decode(&schema.fields, payload, *pointer_size, &mut Vec::new());
                    }
                }
            }
        }
    }
    assert_eq!(blobs, 86 + 21);
    // Most flips land in strings and stay readable; many do not.
    assert!(rejected > 500 && accepted > 2_000, "{rejected} rejected, {accepted} accepted");
}
