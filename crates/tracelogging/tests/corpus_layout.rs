//! The encoder against TraceLogging events that Windows wrote (the shared
//! corpus), so that the encoder and nettrail's decoder cannot share a
//! mistake: traits and metadata blobs re-encoded from their names and field
//! types must be byte-identical to the real ones, and name-hashed provider
//! GUIDs must be the real ones.

use std::collections::BTreeMap;

use nettrail_etl::extended::{ExtType, provider_traits_name};
use nettrail_etl::{Guid, Trace, TraceFile};
use nettrail_testkit::corpus_file;
use nettrail_tracelogging::{
    FieldValue, InType, MetadataBuilder, OutType, provider_guid, provider_traits, provider_traits_in_group,
};

/// The corpus traces with TraceLogging events (see crates/decode/tests/tracelogging.rs).
const TRACES: [&str; 6] = [
    "perfview__primitive-types.etl",
    "etlparser__AMSITrace.etl",
    "etlparser__lxcore_kernel.etl",
    "hw3d__trace.etl",
    "perfview__SelfDescribingSingleEvent.etl",
    "perfview__diaghub.user_paged.1.etl",
];

/// One distinct real event kind: provider, traits blob, metadata blob, first payload.
#[derive(Clone, Debug)]
struct Real {
    trace: &'static str,
    provider: Guid,
    traits: Vec<u8>,
    metadata: Vec<u8>,
    payload: Vec<u8>,
}

fn real_events() -> Vec<Real> {
    let mut out: Vec<Real> = Vec::new();
    for trace_name in TRACES {
        let file = TraceFile::open(corpus_file(trace_name)).unwrap();
        let trace = Trace::parse(file.bytes()).unwrap();
        let mut stream = trace.events();
        while let Some(e) = stream.next() {
            let e = e.unwrap();
            let Some(metadata) = e.extended.find(ExtType::EVENT_SCHEMA_TL) else { continue };
            if out.iter().any(|r| r.metadata == metadata.data) {
                continue;
            }
            let traits = e.extended.find(ExtType::PROV_TRAITS).expect("TraceLogging events carry their traits");
            out.push(Real {
                trace: trace_name,
                provider: e.provider,
                traits: traits.data.to_vec(),
                metadata: metadata.data.to_vec(),
                payload: e.payload.to_vec(),
            });
        }
    }
    out
}

fn find<'a>(events: &'a [Real], trace: &str, event: &str) -> &'a Real {
    let name = format!("{event}\0");
    events
        .iter()
        .find(|r| r.trace == trace && r.metadata[3..].starts_with(name.as_bytes()))
        .unwrap_or_else(|| panic!("{trace} has no event {event}"))
}

fn built(event: &str, fields: &[(&str, InType, OutType)]) -> Vec<u8> {
    let mut m = MetadataBuilder::new(event);
    for (name, in_type, out_type) in fields {
        m.field(name, *in_type, *out_type);
    }
    m.finish().unwrap()
}

#[test]
fn traits_blobs_are_byte_identical() {
    let events = real_events();
    assert_eq!(events.len(), 11);
    let mut providers = BTreeMap::new();
    for r in &events {
        let name = provider_traits_name(&r.traits).unwrap();
        let name_end = 2 + name.len() + 1;
        let mine = if r.traits.len() > name_end {
            // A provider group trait: 19 bytes, type 1, the group's GUID.
            let group = Guid::from_bytes_le(r.traits[name_end + 3..].try_into().unwrap());
            provider_traits_in_group(name, group)
        } else {
            provider_traits(name)
        };
        assert_eq!(mine, r.traits, "{}: {name}", r.trace);
        providers.insert(name.to_string(), r.provider);
    }
    assert_eq!(providers.len(), 6);
    assert_eq!(
        providers.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "AmsiTrace",
            "Atum-Hw3d",
            "Microsoft-Diagnostics-DiagnosticSource",
            "Microsoft.Windows.Subsystem.LxCore",
            "MySource",
            "solar_system"
        ]
    );
}

#[test]
fn name_hashed_provider_guids_are_the_real_ones() {
    let events = real_events();
    let mut hashed = Vec::new();
    for r in &events {
        let name = provider_traits_name(&r.traits).unwrap();
        // A GUID of version 5 is a name hash; the others were chosen by their authors.
        if r.provider.data3 >> 12 == 5 {
            assert_eq!(provider_guid(name), r.provider, "{name}");
            hashed.push(name.to_string());
        } else {
            assert_ne!(provider_guid(name), r.provider, "{name}");
        }
    }
    hashed.dedup();
    assert_eq!(hashed, ["Atum-Hw3d", "MySource", "Microsoft-Diagnostics-DiagnosticSource"]);
}

#[test]
fn metadata_of_a_native_event_with_a_string_and_an_integer_is_byte_identical() {
    let events = real_events();
    // hw3d logs TraceLoggingString + TraceLoggingInt32 with TraceLoggingProvider.h.
    let real = find(&events, "hw3d__trace.etl", "WinMain");
    let mine = built(
        "WinMain",
        &[("lpCmdLine", InType::ANSI_STRING, OutType::DEFAULT), ("nCmdShow", InType::INT32, OutType::DEFAULT)],
    );
    assert_eq!(mine, real.metadata);
    // Its payload: an empty NUL-terminated string, then the i32 10.
    assert_eq!(real.payload, [0, 10, 0, 0, 0]);
    let mut payload = Vec::new();
    FieldValue::from("").encode(&mut payload);
    assert_eq!(payload, real.payload[..1]);
}

#[test]
fn metadata_and_payload_of_every_primitive_type_are_byte_identical() {
    let events = real_events();
    let real = find(&events, "perfview__primitive-types.etl", "PrimitiveTypesTest");
    let bool_field = FieldValue::Bool(false);
    let u64_field = FieldValue::U64(0);
    let mine = built(
        "PrimitiveTypesTest",
        &[
            ("string_type", InType::ANSI_STRING, OutType::DEFAULT),
            // What the layer writes for a bool: TraceLoggingBoolean's UINT8 shown as BOOLEAN.
            ("boolean_type", bool_field.in_type(), bool_field.out_type()),
            ("char_type", InType::UINT8, OutType::STRING),
            ("int16_type", InType::INT16, OutType::DEFAULT),
            ("int32_type", InType::INT32, OutType::DEFAULT),
            ("uint16_type", InType::UINT16, OutType::DEFAULT),
            ("uint32_type", InType::UINT32, OutType::DEFAULT),
            // The producer typed it UINT64 (see crates/decode/tests/tracelogging.rs).
            ("int64_type", u64_field.in_type(), u64_field.out_type()),
            ("uint64_type", u64_field.in_type(), u64_field.out_type()),
            ("guid_type", InType::GUID, OutType::DEFAULT),
            ("file_time_type", InType::FILETIME, OutType::DEFAULT),
            ("system_time_type", InType::SYSTEMTIME, OutType::DEFAULT),
        ],
    );
    assert_eq!(mine, real.metadata);
    // Mercury's payload: "Mercury" NUL, false, 'M', -51, -102, 51, 102, -204 as u64, 204, …
    let mut payload = Vec::new();
    FieldValue::from("Mercury").encode(&mut payload);
    FieldValue::Bool(false).encode(&mut payload);
    assert_eq!(payload, real.payload[..9]);
    let mut payload = Vec::new();
    FieldValue::I64(-204).encode(&mut payload);
    FieldValue::U64(204).encode(&mut payload);
    assert_eq!(payload, real.payload[22..38]);
}

/// A field's name and types.
type FieldTypes = (String, InType, OutType);

/// Reads a metadata blob whose fields are all scalar (no arrays, structs,
/// tags): (event name, fields). `None` for any other.
fn simple_fields(m: &[u8]) -> Option<(String, Vec<FieldTypes>)> {
    let mut pos = 3;
    if m.get(2) != Some(&0) {
        return None;
    }
    let cstr = |pos: &mut usize| {
        let end = *pos + m[*pos..].iter().position(|&b| b == 0)?;
        let s = String::from_utf8(m[*pos..end].to_vec()).ok()?;
        *pos = end + 1;
        Some(s)
    };
    let name = cstr(&mut pos)?;
    let mut fields = Vec::new();
    while pos < m.len() {
        let field = cstr(&mut pos)?;
        let in_meta = m[pos];
        pos += 1;
        if in_meta & 0x60 != 0 || in_meta & 0x1F == 24 {
            return None;
        }
        let mut out = OutType::DEFAULT;
        if in_meta & 0x80 != 0 {
            if m[pos] & 0x80 != 0 {
                return None;
            }
            out = OutType(m[pos]);
            pos += 1;
        }
        fields.push((field, InType(in_meta & 0x1F), out));
    }
    Some((name, fields))
}

#[test]
fn every_scalar_only_event_of_the_corpus_re_encodes_identically() {
    let events = real_events();
    let mut checked = Vec::new();
    for r in &events {
        assert_eq!(usize::from(u16::from_le_bytes([r.metadata[0], r.metadata[1]])), r.metadata.len());
        let Some((name, fields)) = simple_fields(&r.metadata) else { continue };
        let fields: Vec<(&str, InType, OutType)> = fields.iter().map(|(n, i, o)| (n.as_str(), *i, *o)).collect();
        assert_eq!(built(&name, &fields), r.metadata, "{}: {name}", r.trace);
        checked.push(name);
    }
    assert_eq!(checked, ["PrimitiveTypesTest", "WinMain", "Message", "NewDiagnosticListener"]);
}
