//! What the synthesizer writes, record kind by record kind, against the
//! real traces of the corpus: the same header kinds, versions, hooks and
//! payload layouts (byte for byte where the values can be the same), the
//! same metadata blobs, the same relogged buffers.

use std::collections::HashSet;

use nettrail_decode::{SchemaKey, Schemas, Value, format, payload};
use nettrail_etl::{Guid, HeaderKind, Record, Trace, TraceFile};
use nettrail_synth::metadata::{self, METADATA_CLASS};
use nettrail_synth::{EventLayout, KernelSpec, Process, Synth, SynthConfig, Val, catalog, fields};
use nettrail_testkit::corpus_file;

mod common;
use common::Images;

const PROCESS: Guid = Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c");
const THREAD: Guid = Guid::parse_const("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c");
const IMAGE: Guid = Guid::parse_const("2cb15d1d-5fc1-11d2-abe1-00a0c911f518");

fn corpus(name: &str) -> Vec<u8> {
    TraceFile::open(corpus_file(name)).unwrap().bytes().to_vec()
}

/// A record's hook as (group, opcode).
fn hook(r: &Record<'_>) -> Option<(u8, u8)> {
    r.hook.map(|h| (h.group, h.opcode))
}

/// Decodes a kernel or manifest record with the built-in schemas: (field name, value).
fn decode<'a>(schemas: &Schemas, r: &Record<'a>) -> Vec<(String, Value<'a>)> {
    let mut values = Vec::new();
    let schema = schemas.decode(r, &mut values).unwrap_or_else(|e| panic!("{}: {e}", r.describe()));
    assert_eq!(payload::decode(&schema.fields, r.payload, r.pointer_size, &mut Vec::new()), Ok(r.payload.len()));
    schema.fields.iter().map(|f| f.name.clone()).zip(values).collect()
}

fn get<'v, 'a>(fields: &'v [(String, Value<'a>)], name: &str) -> &'v Value<'a> {
    &fields.iter().find(|(n, _)| n == name).unwrap_or_else(|| panic!("no field {name}")).1
}

fn u(v: &Value<'_>) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("{v:?} is not an integer"))
}

fn s(v: &Value<'_>) -> String {
    v.as_str().unwrap_or_else(|| panic!("{v:?} is not a string")).into_owned()
}

#[test]
fn process_dcstart_is_laid_out_as_windows_10_logs_it() {
    let real_bytes = corpus("perfview__diaghub.kernel.1.etl");
    let real_images = Images::read(&real_bytes);
    let schemas = Schemas::new();
    // A user-mode process of the real rundown: command line, user SID, plain flags.
    let real = common::records(&real_images)
        .into_iter()
        .filter(|r| hook(r) == Some((3, 3)))
        .map(|r| (decode(&schemas, &r), r))
        .find(|(f, _)| {
            u(get(f, "ProcessId")) > 4
                && matches!(u(get(f, "Flags")), 0 | 2)
                && !s(get(f, "CommandLine")).is_empty()
                && s(get(f, "PackageFullName")).is_empty()
                && s(get(f, "ApplicationId")).is_empty()
        })
        .expect("a user process in the rundown");
    let (f, real) = real;
    assert_eq!((real.kind, real.version, real.process_id), (HeaderKind::Perfinfo64, 4, None));
    let sid = match get(&f, "UserSID") {
        Value::Sid(b) => format::sid_text(b),
        other => panic!("{other:?}"),
    };
    let pid = u(get(&f, "ProcessId")) as u32;
    let mut process = Process::new(pid, u(get(&f, "ParentId")) as u32, &s(get(&f, "ImageFileName")))
        .command_line(&s(get(&f, "CommandLine")))
        .session(u(get(&f, "SessionId")) as u32)
        .user_sid(&sid);
    if u(get(&f, "Flags")) == 2 {
        process = process.wow64();
    }
    let mut synth = Synth::new();
    synth.add_process(process).unwrap();
    let bytes = synth.finish().unwrap();
    let images = Images::read(&bytes);
    let ours = common::records(&images)
        .into_iter()
        .find(|r| hook(r) == Some((3, 3)) && r.payload.get(8..12) == Some(&pid.to_le_bytes()[..]))
        .expect("our DCStart");
    assert_eq!((ours.kind, ours.version, ours.process_id, ours.thread_id), (real.kind, real.version, None, None));
    assert_eq!(ours.payload.len(), real.payload.len());
    // Byte for byte but the kernel's addresses: EPROCESS, page directory,
    // and the TOKEN_USER before the SID (pointer, attributes, padding).
    let differ = [0..8, 24..32, 36..52];
    for (i, (a, b)) in ours.payload.iter().zip(real.payload).enumerate() {
        if !differ.iter().any(|r| r.contains(&i)) {
            assert_eq!(a, b, "Process DCStart payload byte {i}");
        }
    }
}

#[test]
fn thread_dcstart_is_laid_out_as_the_kernel_logs_it() {
    // The corpus' thread rundown is Windows 8's (v3 without the name that Windows 10 adds).
    let real_bytes = corpus("perfview__net.4.5.2.x86.etl");
    let real_images = Images::read(&real_bytes);
    let real: Vec<Record<'_>> = common::records(&real_images).into_iter().filter(|r| hook(r) == Some((5, 3))).collect();
    assert!(real.len() > 100);
    for r in &real {
        assert_eq!((r.kind, r.version, r.payload.len()), (HeaderKind::System64, 3, 72));
        // The header names the thread itself.
        assert_eq!(r.process_id.map(u32::to_le_bytes).as_ref().map(|b| &b[..]), r.payload.get(0..4));
        assert_eq!(r.thread_id.map(u32::to_le_bytes).as_ref().map(|b| &b[..]), r.payload.get(4..8));
    }
    let schemas = Schemas::new();
    for (build, name_bytes) in [(9200, 0), (19045, 2)] {
        let mut synth = Synth::with_config(SynthConfig { build, ..SynthConfig::default() });
        synth.process(2000, 600, "a.exe", "a.exe", 8).unwrap().thread(2000, 2004).unwrap();
        let bytes = synth.finish().unwrap();
        let images = Images::read(&bytes);
        let ours: Vec<Record<'_>> = common::records(&images).into_iter().filter(|r| hook(r) == Some((5, 3))).collect();
        let mine = ours.iter().find(|r| r.thread_id == Some(2004)).expect("our thread's DCStart");
        assert_eq!((mine.kind, mine.version, mine.process_id), (HeaderKind::System64, 3, Some(2000)));
        assert_eq!(mine.payload.len(), 72 + name_bytes, "build {build}");
        assert_eq!(&mine.payload[0..8], &[0xD0, 0x07, 0, 0, 0xD4, 0x07, 0, 0]);
        let f = decode(&schemas, mine);
        assert_eq!((u(get(&f, "ProcessId")), u(get(&f, "TThreadId"))), (2000, 2004));
        // As in the real rundown: the idle threads have ids 0, one per CPU.
        let idle = ours.iter().filter(|r| r.thread_id == Some(0) && r.process_id == Some(0)).count();
        assert_eq!(idle, 4);
    }
}

#[test]
fn image_rundown_is_laid_out_as_windows_10_logs_it() {
    let real_bytes = corpus("perfview__diaghub.kernel.1.etl");
    let real_images = Images::read(&real_bytes);
    let schemas = Schemas::new();
    let all = common::records(&real_images);
    let header_pid = all[0].process_id;
    // Kernel images: SYSTEM v3 with the session starter's process in the header.
    let kernel: Vec<&Record<'_>> = all.iter().filter(|r| hook(r) == Some((0x14, 3))).collect();
    assert!(!kernel.is_empty());
    assert!(kernel.iter().all(|r| r.kind == HeaderKind::System64 && r.version == 3 && r.process_id == header_pid));
    // Process images (Windows 10 logged them at the end, as DCEnd): PERFINFO v3.
    let (f, real) = all
        .iter()
        .filter(|r| hook(r) == Some((0x14, 4)) && r.kind == HeaderKind::Perfinfo64)
        .map(|r| (decode(&schemas, r), r))
        .find(|(f, _)| s(get(f, "FileName")).ends_with("\\ntdll.dll") && u(get(f, "ProcessId")) > 4)
        .expect("a process image");
    assert_eq!(real.version, 3);
    let pid = u(get(&f, "ProcessId")) as u32;
    let path = s(get(&f, "FileName"));
    let (base, size) = (u(get(&f, "ImageBase")), u(get(&f, "ImageSize")));

    let mut synth = Synth::new();
    synth.process(pid, 4, "x.exe", "x.exe", 8).unwrap();
    synth.module(pid, &path, base, size).unwrap();
    let bytes = synth.finish().unwrap();
    let images = Images::read(&bytes);
    let ours = common::records(&images);
    let header = &ours[0];
    let kernel_ours: Vec<&Record<'_>> =
        ours.iter().filter(|r| hook(r) == Some((0x14, 3)) && r.payload.get(16..20) == Some(&[0; 4])).collect();
    assert!(!kernel_ours.is_empty());
    assert!(
        kernel_ours
            .iter()
            .all(|r| r.kind == HeaderKind::System64 && r.version == 3 && r.process_id == header.process_id)
    );
    for opcode in [3, 4] {
        let mine = ours
            .iter()
            .filter(|r| hook(r) == Some((0x14, opcode)))
            .find(|r| r.payload.get(0..8) == Some(&base.to_le_bytes()[..]))
            .unwrap_or_else(|| panic!("our image record, opcode {opcode}"));
        assert_eq!((mine.kind, mine.version, mine.payload.len()), (real.kind, real.version, real.payload.len()));
        let g = decode(&schemas, mine);
        for name in ["ImageBase", "ImageSize", "ProcessId", "DefaultBase", "FileName"] {
            assert_eq!(get(&g, name), get(&f, name), "{name}");
        }
    }
}

#[test]
fn tcpip_records_are_byte_for_byte_the_kernels() {
    let real_bytes = corpus("perfview__net.4.5.2.x86.etl");
    let real_images = Images::read(&real_bytes);
    let schemas = Schemas::new();
    let mut seen = HashSet::new();
    for real in common::records(&real_images).into_iter().filter(|r| matches!(hook(r), Some((6 | 8, _)))) {
        let Some((group, opcode)) = hook(&real) else { continue };
        if !seen.insert((group, opcode)) {
            continue;
        }
        let f = decode(&schemas, &real);
        let mut values = nettrail_synth::Fields::new();
        for (name, v) in &f {
            let v = match v {
                // A port field takes the port number; the raw value is in network order.
                Value::Unsigned(n) if name.ends_with("port") => Val::U64(u64::from(format::port_of(*n))),
                Value::Unsigned(n) => Val::U64(*n),
                Value::Signed(n) => Val::I64(*n),
                Value::Binary(b) => Val::Bytes(b.to_vec()),
                other => panic!("{name}: {other:?}"),
            };
            values = values.with(name.clone(), v);
        }
        let class = if group == 6 { "TcpIp" } else { "UdpIp" };
        let mut synth = Synth::new();
        synth.kernel(KernelSpec::new(class, opcode).at(1.0).fields(values)).unwrap();
        let bytes = synth.finish().unwrap();
        let images = Images::read(&bytes);
        let ours = common::records(&images).into_iter().find(|r| hook(r) == Some((group, opcode))).expect("ours");
        assert_eq!((ours.kind, ours.version), (HeaderKind::Perfinfo64, 2), "{class} {opcode}");
        assert_eq!((ours.kind, ours.version), (real.kind, real.version), "{class} {opcode}");
        assert_eq!(ours.payload, real.payload, "{class} {opcode}");
    }
    // Send and receive over IPv4 and IPv6, both protocols.
    for key in [(6, 10), (6, 11), (6, 26), (6, 27), (8, 10), (8, 11), (8, 26), (8, 27)] {
        assert!(seen.contains(&key), "{key:?} not in the corpus trace");
    }
}

/// A TRACE_EVENT_INFO blob's parts, read from the format's facts (not
/// with the decoder under test): the fixed fields, the properties, each
/// string slot's text, the order of the strings and the binary XML.
#[derive(Debug, PartialEq)]
struct Tei {
    fixed: Vec<u8>,
    properties: Vec<u8>,
    strings: Vec<(&'static str, String)>,
    contiguous: bool,
    fragment: Vec<u8>,
    /// Item descriptors without their resource offsets, and item names.
    items: Vec<[u8; 12]>,
    names: Vec<u8>,
}

fn utf16z(b: &[u8], at: usize) -> (String, usize) {
    let units: Vec<u16> =
        b[at..].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]])).take_while(|&c| c != 0).collect();
    (String::from_utf16(&units).unwrap(), at + 2 * units.len() + 2)
}

fn parse_tei(b: &[u8]) -> Tei {
    let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let count = u32_at(100);
    let strings_at = 112 + 24 * count;
    let mut slots: Vec<(usize, &'static str)> = Vec::new();
    for (i, name) in ["provider", "level", "channel", "keywords", "task", "opcode", "message", "provider message"]
        .into_iter()
        .enumerate()
    {
        slots.push((u32_at(52 + 4 * i), name));
    }
    slots.push((u32_at(92), "event name"));
    for p in 0..count {
        slots.push((u32_at(112 + 24 * p + 4), "property"));
        slots.push((u32_at(112 + 24 * p + 12), "map"));
    }
    slots.retain(|(at, _)| *at != 0);
    slots.sort();
    let mut pos = strings_at;
    let mut contiguous = true;
    let mut strings = Vec::new();
    for (at, what) in slots {
        contiguous &= at == pos;
        let (mut text, mut end) = utf16z(b, at);
        if what == "keywords" {
            while end - at > 2 && {
                let (next, e) = utf16z(b, end);
                text.push('|');
                text.push_str(&next);
                end = e;
                !next.is_empty()
            } {}
        }
        // The provider's display message is not in nettrail's layouts.
        if what != "provider message" {
            strings.push((what, text));
        }
        pos = end;
    }
    let (xml_at, xml_len) = (u32_at(84), u32_at(88));
    contiguous &= xml_at == pos && xml_at + xml_len == b.len();
    let xml = &b[xml_at..xml_at + xml_len];
    // The fragment ends at its end-of-fragment token after the root element.
    let root = u32::from_le_bytes(xml[7..11].try_into().unwrap()) as usize;
    let fragment_end = 11 + root + 1;
    let items_at = fragment_end.next_multiple_of(4);
    let items = (0..count)
        .map(|i| {
            let d = &xml[items_at + 20 * i..items_at + 20 * i + 20];
            let mut kept = [0u8; 12];
            kept[..8].copy_from_slice(&d[..8]); // flags, in-type, out-type
            kept[8..].copy_from_slice(&d[12..16]); // count, length
            kept
        })
        .collect();
    Tei {
        fixed: [&b[..52], &b[100..112]].concat(),
        properties: b[112..strings_at].to_vec(),
        strings,
        contiguous,
        fragment: xml[..fragment_end].to_vec(),
        items,
        names: xml[items_at + 20 * count..].to_vec(),
    }
}

/// The first EventInfo (and EventMapInfo) payloads of a trace for a provider's event.
fn real_metadata(images: &Images, provider: Guid, id: u16) -> (Vec<u8>, Vec<Vec<u8>>) {
    let records = images.by_buffer();
    for buffer in &records {
        for (i, r) in buffer.iter().enumerate() {
            let is_info = r.kind.is_classic() && r.provider == METADATA_CLASS && r.opcode == metadata::EVENT_INFO;
            if is_info && r.payload[0..16] == provider.to_bytes_le() && r.payload[32..34] == id.to_le_bytes() {
                let maps = buffer[i + 1..]
                    .iter()
                    .take_while(|m| m.provider == METADATA_CLASS && m.opcode == metadata::EVENT_MAP_INFO)
                    .map(|m| m.payload.to_vec())
                    .collect();
                return (r.payload.to_vec(), maps);
            }
        }
    }
    panic!("no EventInfo for {provider} {id}");
}

#[test]
fn event_info_blobs_are_built_as_the_merge_builds_them() {
    let dns = catalog::provider_guid("DNS-Client").unwrap();
    let tracing = Guid::parse_const("b675ec37-bdb6-4648-bc92-f3fdc74d3ca2");
    for (file, provider, id) in
        [("perfview__net.4.5.2.x86.etl", dns, 1001), ("perfview__net.4.5.x86.PerfViewData.etl", tracing, 14)]
    {
        let bytes = corpus(file);
        let trace = Trace::parse(&bytes).unwrap();
        let mut schemas = Schemas::new();
        assert!(schemas.learn(&trace).is_empty());
        let images = Images::read(&bytes);
        let (real, real_maps) = real_metadata(&images, provider, id);
        // The same event, described from what the decoder learned of it.
        let version = real[34];
        let schema = schemas.embedded.events[&SchemaKey::Manifest { provider, id, version }].clone();
        let d = &real[32..48];
        let descriptor = nettrail_etl::write::Descriptor {
            id,
            version,
            channel: d[3],
            level: d[4],
            opcode: d[5],
            task: u16::from_le_bytes([d[6], d[7]]),
            keywords: u64::from_le_bytes(d[8..16].try_into().unwrap()),
        };
        let layout = EventLayout { provider: schema.provider.clone(), id, version, schema: schema.clone(), descriptor };
        let ours = metadata::event_info(&layout).unwrap();
        let (a, b) = (parse_tei(&ours), parse_tei(&real));
        assert!(b.contiguous && a.contiguous, "{file}: strings and binary XML follow each other");
        assert_eq!(a.fixed, b.fixed, "{file}: fixed part");
        assert_eq!(a.properties, b.properties, "{file}: EVENT_PROPERTY_INFO array");
        assert_eq!(a.strings, b.strings, "{file}: strings");
        assert_eq!(a.fragment, b.fragment, "{file}: binary XML template");
        assert_eq!(a.items, b.items, "{file}: template items");
        assert_eq!(a.names, b.names, "{file}: template item names");
        // Maps: byte for byte.
        let maps = metadata::maps_of(&schema.fields);
        assert_eq!(maps.len(), real_maps.len(), "{file}");
        for (map, real_map) in maps.iter().zip(&real_maps) {
            assert_eq!(&metadata::event_map_info(provider, map).unwrap(), real_map, "{file}: map {}", map.name);
        }
    }
}

/// Checks the merge's placement of EventInfo in a trace: in the buffer of
/// the event it describes, right before it (after its maps), with its
/// time, process and thread, as wide as it; returns how many were checked.
fn check_metadata_placement(images: &Images) -> usize {
    let mut checked = 0;
    for buffer in images.by_buffer() {
        for (i, r) in buffer.iter().enumerate() {
            if !(r.kind.is_classic() && r.provider == METADATA_CLASS && r.opcode == metadata::EVENT_INFO) {
                continue;
            }
            assert_eq!((r.level, r.version, r.id), (0, 0, 0));
            let event = buffer[i + 1..].iter().find(|e| e.provider != METADATA_CLASS).expect("the described event");
            assert!(event.kind.is_event_header());
            assert_eq!(event.provider.to_bytes_le(), r.payload[0..16]);
            assert_eq!(event.id.to_le_bytes(), r.payload[32..34]);
            assert_eq!((event.timestamp, event.process_id, event.thread_id), (r.timestamp, r.process_id, r.thread_id));
            assert_eq!(event.pointer_size, r.pointer_size);
            checked += 1;
        }
    }
    checked
}

#[test]
fn metadata_records_precede_the_first_event_they_describe() {
    let real = corpus("perfview__net.4.5.2.x86.etl");
    assert!(check_metadata_placement(&Images::read(&real)) > 50);

    let mut synth = Synth::new();
    synth.process(2000, 600, "a.exe", "a.exe", 8).unwrap();
    synth.add_process(Process::new(3000, 600, "b.exe").wow64()).unwrap();
    let events = [((2000, 2004), 1002), ((3000, 3004), 1002), ((2000, 2008), 1033), ((2000, 2004), 1002)];
    for (i, (thread, id)) in events.into_iter().enumerate() {
        let values = if id == 1002 { fields![("NewState", 2u32)] } else { fields![] };
        synth.event(1.0 + i as f64, thread, "TCPIP", id, 0, values).unwrap();
    }
    let bytes = synth.finish().unwrap();
    let images = Images::read(&bytes);
    // Two kinds of event: two EventInfo, each before the first of its kind.
    assert_eq!(check_metadata_placement(&images), 2);
    let records = common::records(&images);
    let first = records.iter().position(|r| r.provider == METADATA_CLASS && r.opcode == metadata::EVENT_INFO).unwrap();
    assert_eq!(records[first + 1].opcode, metadata::EVENT_MAP_INFO, "the state map follows the first EventInfo");
    assert_eq!(records[first + 2].id, 1002);
    assert_eq!(
        records.iter().filter(|r| r.provider == METADATA_CLASS && r.opcode == metadata::EVENT_MAP_INFO).count(),
        1
    );
}

#[test]
fn manifest_events_carry_the_descriptors_of_real_ones() {
    for (file, provider) in [("tx__KernelNetwork.etl", "Kernel-Network"), ("tx__HTTP_Server.etl", "HttpService")] {
        let bytes = corpus(file);
        let images = Images::read(&bytes);
        let guid = catalog::provider_guid(provider).unwrap();
        let mut kinds = HashSet::new();
        for r in common::records(&images).into_iter().filter(|r| r.provider == guid) {
            if !kinds.insert((r.id, r.version)) {
                continue;
            }
            // The synthesizer has no Windows 7 manifests: its oldest build stands in.
            let d = catalog::event_layout(7601, provider, r.id, Some(r.version)).unwrap().descriptor;
            assert_eq!(
                (d.channel, d.level, d.opcode, d.task, d.keywords),
                (r.channel, r.level, r.opcode, r.task, r.keywords),
                "{file}: event {} v{}",
                r.id,
                r.version
            );
            // On disk, Flags says only whether extended items follow.
            assert_eq!((r.kind, r.flags & !0x1, r.event_property), (HeaderKind::EventHeader64, 0, 0));
        }
        assert!(kinds.len() >= 6, "{file}: {kinds:?}");
    }
    // Ours: the same header kind, no flags on disk but EXTENDED_INFO, no event property.
    let mut synth = Synth::new();
    synth.process(2000, 600, "a.exe", "a.exe", 8).unwrap();
    synth.event(1.0, (2000, 2004), "Kernel-Network", 11, 0, fields![("size", 5u32)]).unwrap();
    let bytes = synth.finish().unwrap();
    let images = Images::read(&bytes);
    let ours = common::records(&images).into_iter().find(|r| r.kind.is_event_header()).unwrap();
    assert_eq!(
        (ours.kind, ours.flags, ours.event_property, ours.keywords),
        (HeaderKind::EventHeader64, 0, 0, 0x8000_0000_0000_0010)
    );
}

#[test]
fn the_kernel_session_header_events_are_windows_10s() {
    let real_bytes = corpus("perfview__diaghub.kernel.1.etl");
    let bytes = Synth::new().finish().unwrap();
    for (name, bytes) in [("diaghub.kernel.1", &real_bytes), ("synthesized", &bytes)] {
        let images = Images::read(bytes);
        let buffers = images.by_buffer();
        // On the CPU of the rundown, EndExtension and Extension come right before the first process.
        let (b, i) = buffers
            .iter()
            .enumerate()
            .flat_map(|(b, records)| records.iter().enumerate().map(move |(i, r)| (b, i, r)))
            .filter(|(_, _, r)| hook(r) == Some((3, 3)))
            .min_by_key(|(_, _, r)| r.timestamp)
            .map(|(b, i, _)| (b, i))
            .expect("a process rundown");
        assert!(i >= 2, "{name}");
        assert_eq!([hook(&buffers[b][i - 2]), hook(&buffers[b][i - 1])], [Some((0, 32)), Some((0, 5))], "{name}");
        let records = common::records(&images);
        for r in records.iter().filter(|r| matches!(hook(r), Some((0, 5 | 32 | 8)))) {
            assert_eq!((r.kind, r.version), (HeaderKind::Perfinfo64, 2), "{name}");
            let size = if hook(r) == Some((0, 8)) { 0 } else { 36 };
            assert_eq!(r.payload.len(), size, "{name}");
            if size == 36 {
                // KernelEventVersion of Windows 10 2004 and later.
                assert_eq!(r.payload[32..36], 0x50u32.to_le_bytes(), "{name}");
            }
        }
        assert!(records.iter().any(|r| hook(r) == Some((0, 8))), "{name}: RDComplete");
        assert!(records.iter().filter(|r| [PROCESS, THREAD, IMAGE].contains(&r.provider)).count() > 10, "{name}");
    }
}

#[test]
fn header_and_buffers_are_a_relogged_files() {
    // Uncompressed: as diaghub.etl (Windows 10); compressed: as net.4.5.2 (Windows 8).
    for (file, compress) in [("perfview__diaghub.etl", false), ("perfview__net.4.5.2.x86.etl", true)] {
        let real_bytes = corpus(file);
        let mut synth = Synth::with_config(SynthConfig { compress, ..SynthConfig::default() });
        synth.process(2000, 600, "a.exe", "a.exe", 8).unwrap();
        synth.event(1.0, (2000, 2004), "TCPIP", 1033, 0, fields![("ProcessId", 2000u32)]).unwrap();
        synth.lose_events(1.0, 1, 3).unwrap();
        let bytes = synth.finish().unwrap();
        let (real, ours) = (Trace::parse(&real_bytes).unwrap(), Trace::parse(&bytes).unwrap());
        for t in [&real, &ours] {
            let h = t.header();
            assert_eq!((h.logger_name.as_str(), h.log_file_name.as_str()), ("Relogger", "[multiple files]"), "{file}");
            assert_eq!(h.log_file_mode & !0x0400_0000, 0x1_0001, "{file}");
            assert_eq!(h.log_file_mode & 0x0400_0000 != 0, compress, "{file}");
            assert_eq!(h.layout_version, if compress { (2, 0) } else { (1, 5) }, "{file}");
            assert_eq!((h.clock_type, h.perf_freq, h.buffer_size), (1, 10_000_000, 65536), "{file}");
            let buffers: Vec<_> = t.buffers().iter().collect();
            let (first, data) = buffers.split_first().unwrap();
            assert_eq!(first.header.flags.0, 0x1, "{file}: the header buffer is only a flush marker");
            assert_eq!(first.header.state, if compress { 3 } else { 0 }, "{file}");
            let flushes: Vec<usize> = (0..data.len()).filter(|&i| data[i].header.flags.0 & 0x1 != 0).collect();
            assert_eq!(flushes, [data.len() - 1], "{file}: the last buffer marks the flush");
            for b in data {
                let lost = if std::ptr::eq(t, &ours) { 0x2 } else { 0 };
                assert_eq!(b.header.flags.0 & !(0x1 | lost), if compress { 0x60 } else { 0x20 }, "{file}");
                // Buffers carry the merge's wall-clock time, after the session ended.
                assert!(b.header.timestamp as i64 > h_end(t), "{file}");
            }
        }
        assert_eq!(ours.header().events_lost, 3);
        let flagged: Vec<u16> =
            ours.buffers().iter().filter(|b| b.header.flags.0 & 0x2 != 0).map(|b| b.header.processor).collect();
        assert_eq!(flagged, [1]);
    }
}

fn h_end(t: &Trace<'_>) -> i64 {
    t.header().end_time
}

const STACK_WALK: Guid = Guid::parse_const("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3");
const IMAGE_ID: Guid = Guid::parse_const("b3e675d7-2554-4f18-830b-2762732560de");

/// The StackWalk Stack records of a trace, with (EventTimeStamp, StackProcess, StackThread).
fn stack_walks<'a>(records: &[Record<'a>]) -> Vec<(Record<'a>, (u64, u32, u32))> {
    records
        .iter()
        .filter(|r| r.provider == STACK_WALK && r.opcode == 32)
        .map(|r| {
            let p = r.payload;
            let at = u64::from_le_bytes(p[0..8].try_into().unwrap());
            let pid = u32::from_le_bytes(p[8..12].try_into().unwrap());
            let tid = u32::from_le_bytes(p[12..16].try_into().unwrap());
            (*r, (at, pid, tid))
        })
        .collect()
}

#[test]
fn stack_walks_are_laid_out_and_placed_as_the_kernel_logs_them() {
    let real_bytes = corpus("perfview__net.4.5.x86.PerfViewData.etl");
    let real_images = Images::read(&real_bytes);
    let real_all = common::records(&real_images);
    let real = stack_walks(&real_all);
    assert!(real.len() > 100);
    // PERFINFO without ids of their own, version 2, frames pointer-wide after
    // 16 bytes, naming an event of the same thread with the same timestamp.
    let (r0, _) = real[0];
    assert_eq!((r0.kind, r0.version, r0.hook.map(|h| h.group)), (HeaderKind::Perfinfo64, 2, Some(0x18)));
    assert!(real.iter().all(|(r, _)| r.kind == r0.kind && r.version == 2 && (r.payload.len() - 16) % 8 == 0));
    // PERFINFO events (TcpIp, …) carry no thread id to compare.
    let named = |all: &[Record<'_>], (at, _, tid): (u64, u32, u32)| {
        all.iter().any(|e| e.provider != STACK_WALK && e.timestamp == at && e.thread_id.is_none_or(|t| t == tid))
    };
    let found = real.iter().filter(|(_, key)| named(&real_all, *key)).count();
    assert!(found * 10 >= real.len() * 9, "{found} of {} real stacks name an event", real.len());

    let mut synth = Synth::new();
    synth.process(3100, 4, "x.exe", "x.exe", 8).unwrap();
    let frames = [0xffff_f801_6c21_4b70, 0x7ffc_8c09_d2a4, 0x7ff6_1000_1d2e];
    let spec = KernelSpec::new("TcpIp", 12).at(5.0).thread(3100, 3104).stack(&frames);
    synth.kernel(spec.fields(fields![("size", 0u32), ("daddr", std::net::Ipv4Addr::new(10, 0, 0, 1))])).unwrap();
    synth.create_thread(6.0, (3100, 3104), 3140, &frames[1..]).unwrap();
    let bytes = synth.finish().unwrap();
    let images = Images::read(&bytes);
    let all = common::records(&images);
    let ours = stack_walks(&all);
    assert_eq!(ours.len(), 2);
    for (i, (r, key)) in ours.iter().enumerate() {
        assert_eq!((r.kind, r.version, r.hook.map(|h| h.group)), (r0.kind, r0.version, Some(0x18)));
        assert_eq!((key.1, key.2), (3100, 3104));
        assert!(named(&all, *key), "our stack {i} names its event");
        let want: &[u64] = if i == 0 { &frames } else { &frames[1..] };
        let got: Vec<u64> = r.payload[16..].chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect();
        assert_eq!(got, want);
    }
    // The Thread Start it belongs to is logged by the creator.
    let start = all.iter().find(|e| e.provider == THREAD && e.opcode == 1 && e.timestamp == ours[1].1.0).unwrap();
    assert_eq!((start.process_id, start.thread_id), (Some(3100), Some(3104)));
}

#[test]
fn image_identities_are_logged_as_the_merge_logs_them() {
    let real_bytes = corpus("perfview__net.4.5.x86.PerfViewData.etl");
    let real_images = Images::read(&real_bytes);
    let real_all = common::records(&real_images);
    let schemas = Schemas::new();
    // Classic FULL_HEADER v2 records, at the timestamp of an image event of the same base.
    let image_at = |all: &[Record<'_>], at: u64, base: u64| {
        all.iter().any(|e| {
            (e.provider == IMAGE || hook(e) == Some((3, 10)))
                && e.timestamp == at
                && e.payload.get(0..8) == Some(&base.to_le_bytes())
        })
    };
    let (real_info, real_rsds) = (image_ids(&real_all, 0), image_ids(&real_all, 36));
    assert!(!real_info.is_empty() && !real_rsds.is_empty());
    let mut placed = 0;
    for r in real_info.iter().chain(&real_rsds) {
        assert_eq!((r.kind, r.version), (HeaderKind::FullHeader64, 2));
        let base = u(get(&decode(&schemas, r), "ImageBase"));
        placed += usize::from(image_at(&real_all, r.timestamp, base));
    }
    // Each at the time of an image event of its base (a load's or a rundown's).
    assert_eq!(placed, real_info.len() + real_rsds.len());

    let mut synth = Synth::new();
    synth.process(3100, 4, "x.exe", "x.exe", 8).unwrap();
    let identity = nettrail_synth::PdbIdentity {
        time_date_stamp: 0x5f3a_1c22,
        guid: Guid::parse_const("0c1f6a8e-3b5d-4e2f-9a10-66b7c2d4e8f1"),
        age: 3,
        pdb_name: "netapp.pdb".to_string(),
    };
    let module = nettrail_synth::Module::new(r"C:\App\netapp.dll", 0x7ffd_1000_0000, 0x4_2000).pdb(identity.clone());
    synth.add_module(3100, module).unwrap();
    let bytes = synth.finish().unwrap();
    let images = Images::read(&bytes);
    let all = common::records(&images);
    let (info, rsds) = (image_ids(&all, 0), image_ids(&all, 36));
    // Once per image event of the module: the rundowns at both ends.
    assert_eq!((info.len(), rsds.len()), (2, 2));
    for r in info.iter().chain(&rsds) {
        assert_eq!((r.kind, r.version), (real_info[0].kind, real_info[0].version));
        assert!(image_at(&all, r.timestamp, 0x7ffd_1000_0000));
    }
    let f = decode(&schemas, &info[0]);
    assert_eq!((u(get(&f, "ImageSize")), u(get(&f, "ProcessId"))), (0x4_2000, 3100));
    assert_eq!((u(get(&f, "TimeDateStamp")), s(get(&f, "OriginalFileName"))), (0x5f3a_1c22, "netapp.dll".to_string()));
    let f = decode(&schemas, &rsds[0]);
    assert_eq!((u(get(&f, "Age")), s(get(&f, "PdbFileName"))), (3, "netapp.pdb".to_string()));
    assert_eq!(get(&f, "GuidSig"), &Value::Guid(identity.guid));
}

/// The ImageID records of one opcode.
fn image_ids<'a>(all: &[Record<'a>], opcode: u8) -> Vec<Record<'a>> {
    all.iter().filter(|r| r.provider == IMAGE_ID && r.opcode == opcode).copied().collect()
}
