//! Pointers are as wide as the record: an EVENT_HEADER32 record (a 32-bit
//! process) decodes every `Pointer` field as 4 bytes, whichever source the
//! schema comes from — built-in layouts, `--manifest` files, EventSource
//! manifests sent in the trace, TraceLogging metadata — and the same event
//! of a 64-bit process as 8. (Embedded TRACE_EVENT_INFO: the synthesizer's
//! `pointer_size` test, which writes it.)

use nettrail_decode::{Schemas, Source, Value, format};
use nettrail_etl::extended::ExtType;
use nettrail_etl::write::{Context, Descriptor, EventHeaderRecord, TraceConfig, TraceWriter};
use nettrail_etl::{Guid, Trace};

const TCPIP: Guid = Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a");
const EVENT_SOURCE: Guid = Guid::parse_const("2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5");
const MANIFEST: Guid = Guid::parse_const("6b1e2a8c-0b3d-4c5e-9f10-1a2b3c4d5e6f");
const TRACELOGGING: Guid = Guid::parse_const("f1d0e1c2-3b4a-5968-7a8b-9c0d1e2f3a4b");

/// A manifest of one event: a pointer, then a UInt32.
fn manifest(name: &str, guid: Guid, id: u16) -> String {
    format!(
        "<instrumentationManifest><instrumentation><events><provider name=\"{name}\" guid=\"{{{guid}}}\">\
         <events><event value=\"{id}\" template=\"t\"/></events><templates><template tid=\"t\">\
         <data name=\"Object\" inType=\"win:Pointer\"/><data name=\"Count\" inType=\"win:UInt32\"/>\
         </template></templates></provider></events></instrumentation></instrumentationManifest>"
    )
}

/// A pointer of the record's width, then `count`.
fn pointer_then(pointer_size: u8, pointer: u64, count: u32) -> Vec<u8> {
    let mut p = pointer.to_le_bytes()[..usize::from(pointer_size)].to_vec();
    p.extend_from_slice(&count.to_le_bytes());
    p
}

fn sockaddr(port: u16, ip: [u8; 4]) -> Vec<u8> {
    let mut s = vec![2, 0];
    s.extend_from_slice(&port.to_be_bytes());
    s.extend_from_slice(&ip);
    s.extend_from_slice(&[0; 8]);
    s
}

/// TcpConnectTcbComplete v1 as Windows 10 2004 and later log it.
fn connect_complete(pointer_size: u8) -> Vec<u8> {
    let mut p = Vec::new();
    for addr in [sockaddr(50_413, [192, 168, 1, 23]), sockaddr(443, [93, 184, 216, 34])] {
        p.extend_from_slice(&16u32.to_le_bytes());
        p.extend_from_slice(&addr);
    }
    for v in [0u32, 4820, 1] {
        p.extend_from_slice(&v.to_le_bytes()); // Status, ProcessId, Compartment
    }
    p.extend_from_slice(&0xffff_d20c_4e21_3ae0u64.to_le_bytes()[..usize::from(pointer_size)]);
    p.extend_from_slice(&0x0003_0000_0000_0ab1u64.to_le_bytes()); // ProcessStartKey
    p
}

/// TraceLogging metadata of an event `Work` with a pointer and a UInt32.
fn tracelogging_metadata() -> Vec<u8> {
    let mut m = vec![0, 0, 0];
    m.extend_from_slice(b"Work\0Object\0");
    m.push(16); // pointer
    m.extend_from_slice(b"Count\0");
    m.push(8); // u32
    let n = m.len() as u16;
    m[..2].copy_from_slice(&n.to_le_bytes());
    m
}

fn trace() -> Vec<u8> {
    let config = TraceConfig::default();
    let start = config.start_timestamp;
    let mut w = TraceWriter::new(config);
    let mut at = 0;
    let mut write =
        |provider: Guid, id: u16, version: u8, pointer_size: u8, payload: &[u8], extended: &[(ExtType, &[u8])]| {
            at += 1000;
            let context = Context { timestamp: start + at, cpu: 0, process_id: 4820, thread_id: 4868 };
            let descriptor = Descriptor { id, version, channel: 16, level: 4, opcode: 0, task: 0, keywords: 0 };
            let mut r = EventHeaderRecord::new(context, provider, descriptor, payload);
            r.pointer_size = pointer_size;
            r.extended = extended;
            w.write_event_header(&r).unwrap();
        };
    // EventSource sends its manifest in event 0xFFFE, one chunk here.
    let mut chunk = vec![1, 1, 0, 0x5B, 1, 0, 0, 0];
    chunk.extend_from_slice(manifest("Es", EVENT_SOURCE, 1).as_bytes());
    write(EVENT_SOURCE, 0xFFFE, 0, 8, &chunk, &[]);
    let metadata = tracelogging_metadata();
    for ptr in [4u8, 8] {
        write(EVENT_SOURCE, 1, 0, ptr, &pointer_then(ptr, 0xffff_8000_00c0_ffee, 7), &[]);
        write(MANIFEST, 5, 0, ptr, &pointer_then(ptr, 0xffff_8000_00c0_ffee, 9), &[]);
        write(TCPIP, 1033, 1, ptr, &connect_complete(ptr), &[]);
        let tl = [(ExtType::EVENT_SCHEMA_TL, metadata.as_slice())];
        write(TRACELOGGING, 1, 0, ptr, &pointer_then(ptr, 0xffff_8000_00c0_ffee, 11), &tl);
    }
    w.finish()
}

#[test]
fn every_source_decodes_pointers_at_the_record_width() {
    let bytes = trace();
    let trace = Trace::parse(&bytes).unwrap();
    let mut schemas = Schemas::new();
    schemas.add_manifest(&manifest("Man", MANIFEST, 5)).unwrap();
    assert!(schemas.learn(&trace).is_empty());
    let mut seen = Vec::new();
    let mut stream = trace.events();
    while let Some(event) = stream.next() {
        let r = event.unwrap().record;
        // The header event and EventSource's manifest.
        if !r.kind.is_event_header() || r.id == 0xFFFE {
            continue;
        }
        let mut values = Vec::new();
        let schema = schemas.decode(&r, &mut values).unwrap_or_else(|e| panic!("{} {}: {e}", r.provider, r.id));
        let consumed = nettrail_decode::payload::decode(&schema.fields, r.payload, r.pointer_size, &mut Vec::new());
        assert_eq!(consumed, Ok(r.payload.len()), "{} {}: the whole payload", r.provider, r.id);
        let text = |name: &str| {
            let i = schema
                .fields
                .iter()
                .position(|f| f.name == name)
                .unwrap_or_else(|| panic!("{} {} has no {name}: {:?}", r.provider, r.id, schema.fields));
            let mut s = String::new();
            format::text(&schema.fields[i], &values[i], r.pointer_size, &mut s);
            s
        };
        let (pointer, after) = if r.provider == TCPIP { ("Tcb", "ProcessStartKey") } else { ("Object", "Count") };
        seen.push((schema.source, r.pointer_size, r.payload.len(), text(pointer), text(after)));
        if r.pointer_size == 4 {
            assert!(
                matches!(values[schema.fields.iter().position(|f| f.name == pointer).unwrap()], Value::Unsigned(v) if v <= u64::from(u32::MAX))
            );
        }
    }
    let want = [
        (Source::EventSourceManifest, 4, 8, "0x00C0FFEE", "7"),
        (Source::Manifest, 4, 8, "0x00C0FFEE", "9"),
        (Source::BuiltIn, 4, 64, "0x4E213AE0", "844424930134705"),
        (Source::TraceLogging, 4, 8, "0x00C0FFEE", "11"),
        (Source::EventSourceManifest, 8, 12, "0xFFFF800000C0FFEE", "7"),
        (Source::Manifest, 8, 12, "0xFFFF800000C0FFEE", "9"),
        (Source::BuiltIn, 8, 68, "0xFFFFD20C4E213AE0", "844424930134705"),
        (Source::TraceLogging, 8, 12, "0xFFFF800000C0FFEE", "11"),
    ];
    let got: Vec<(Source, u8, usize, &str, &str)> =
        seen.iter().map(|(s, p, n, a, b)| (*s, *p, *n, a.as_str(), b.as_str())).collect();
    assert_eq!(got, want);
}
