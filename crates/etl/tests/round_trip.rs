//! What the writer writes, the reader reads back identically, in time order.

use nettrail_etl::extended::{ExtType, ExtendedData};
use nettrail_etl::record::CpuTime;
use nettrail_etl::write::{
    ClassicRecord, Context, Descriptor, EventHeaderRecord, KernelHeader, KernelRecord, TraceConfig, TraceWriter,
};
use nettrail_etl::{Guid, HeaderKind, Summary, Trace};
use nettrail_testkit::Rng;

#[derive(Debug, Clone, PartialEq)]
struct Expected {
    kind: HeaderKind,
    timestamp: u64,
    cpu: u16,
    pid: Option<u32>,
    tid: Option<u32>,
    provider: Guid,
    id: u16,
    version: u8,
    opcode: u8,
    level: u8,
    task: u16,
    keywords: u64,
    activity: Guid,
    related: Option<Guid>,
    stack: Option<Vec<u8>>,
    payload: Vec<u8>,
}

fn generate(seed: u64, compress: bool, count: usize) -> (Vec<u8>, Vec<Expected>) {
    let mut rng = Rng(seed);
    let cpus = 4u16;
    let config =
        TraceConfig { number_of_processors: u32::from(cpus), compress, buffer_size: 8192, ..Default::default() };
    let start = config.start_timestamp;
    let mut writer = TraceWriter::new(config);
    let mut clock = vec![start; usize::from(cpus)];
    let mut expected = Vec::new();
    let providers = [
        Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a"),
        Guid::parse_const("1c95126e-7eea-49a9-a3fe-a378b03ddb4d"),
        Guid::parse_const("b3e675d7-2554-4f18-830b-2762732560de"),
    ];
    for i in 0..count {
        let cpu = rng.below(u64::from(cpus)) as u16;
        // Unique timestamps: the expected order is then unambiguous.
        clock[usize::from(cpu)] += 1 + rng.below(5000) * 4;
        let timestamp = clock[usize::from(cpu)] * 4 + u64::from(cpu);
        let context = Context { timestamp, cpu, process_id: 1000 + rng.below(5) as u32, thread_id: 2000 + i as u32 };
        let len = rng.below(300) as usize;
        let payload = rng.bytes(len);
        let provider = providers[rng.below(3) as usize];
        let base = Expected {
            kind: HeaderKind::EventHeader64,
            timestamp,
            cpu,
            pid: Some(context.process_id),
            tid: Some(context.thread_id),
            provider,
            id: 0,
            version: 0,
            opcode: 0,
            level: 0,
            task: 0,
            keywords: 0,
            activity: Guid::ZERO,
            related: None,
            stack: None,
            payload: payload.clone(),
        };
        match rng.below(6) {
            0 | 1 => {
                let pointer_size = if rng.below(4) == 0 { 4 } else { 8 };
                let descriptor = Descriptor {
                    id: rng.below(5000) as u16,
                    version: rng.below(3) as u8,
                    channel: 16,
                    level: 4,
                    opcode: rng.below(10) as u8,
                    task: rng.below(100) as u16,
                    keywords: rng.next_u64(),
                };
                let activity = Guid::from_bytes_le(rng.bytes(16).try_into().unwrap());
                let related = Guid::from_bytes_le(rng.bytes(16).try_into().unwrap());
                let mut stack = 0u64.to_le_bytes().to_vec();
                let frames = 1 + rng.below(20) as usize;
                stack.extend(rng.bytes(8 * frames));
                let related_bytes = related.to_bytes_le();
                let with_ext = rng.below(2) == 0;
                let items: Vec<(ExtType, &[u8])> = if with_ext {
                    vec![(ExtType::RELATED_ACTIVITYID, &related_bytes[..]), (ExtType::STACK_TRACE64, &stack[..])]
                } else {
                    vec![]
                };
                let mut e = EventHeaderRecord::new(context, provider, descriptor, &payload);
                e.pointer_size = pointer_size;
                e.activity_id = activity;
                e.extended = &items;
                writer.write_event_header(&e).unwrap();
                expected.push(Expected {
                    kind: if pointer_size == 4 { HeaderKind::EventHeader32 } else { HeaderKind::EventHeader64 },
                    id: descriptor.id,
                    version: descriptor.version,
                    opcode: descriptor.opcode,
                    level: descriptor.level,
                    task: descriptor.task,
                    keywords: descriptor.keywords,
                    activity,
                    related: with_ext.then_some(related),
                    stack: with_ext.then(|| stack[8..].to_vec()),
                    ..base
                });
            }
            2..=4 => {
                let header =
                    [KernelHeader::System, KernelHeader::Compact, KernelHeader::Perfinfo][rng.below(3) as usize];
                let pointer_size = if rng.below(4) == 0 { 4 } else { 8 };
                let (group, opcode) =
                    [(3u8, 3u8), (5, 1), (6, 10), (8, 11), (0x18, 32), (0x14, 10)][rng.below(6) as usize];
                let version = rng.below(5) as u8;
                writer
                    .write_kernel(&KernelRecord {
                        context,
                        header,
                        pointer_size,
                        group,
                        opcode,
                        version,
                        kernel_time: 1,
                        user_time: 2,
                        payload: &payload,
                    })
                    .unwrap();
                let kind = match (header, pointer_size) {
                    (KernelHeader::System, 4) => HeaderKind::System32,
                    (KernelHeader::System, _) => HeaderKind::System64,
                    (KernelHeader::Compact, 4) => HeaderKind::Compact32,
                    (KernelHeader::Compact, _) => HeaderKind::Compact64,
                    (KernelHeader::Perfinfo, 4) => HeaderKind::Perfinfo32,
                    (KernelHeader::Perfinfo, _) => HeaderKind::Perfinfo64,
                };
                let perfinfo = header == KernelHeader::Perfinfo;
                expected.push(Expected {
                    kind,
                    provider: nettrail_etl::kernel::provider_of(nettrail_etl::record::KernelHook { group, opcode })
                        .unwrap(),
                    version,
                    opcode,
                    pid: (!perfinfo).then_some(context.process_id),
                    tid: (!perfinfo).then_some(context.thread_id),
                    ..base
                });
            }
            _ => {
                let instance = (rng.below(2) == 0).then(|| (7, 9, providers[0]));
                let pointer_size = if rng.below(4) == 0 { 4 } else { 8 };
                let opcode = rng.below(64) as u8;
                writer
                    .write_classic(&ClassicRecord {
                        context,
                        pointer_size,
                        class: provider,
                        opcode,
                        level: 5,
                        version: 2,
                        instance,
                        payload: &payload,
                    })
                    .unwrap();
                let kind = match (instance.is_some(), pointer_size) {
                    (false, 4) => HeaderKind::FullHeader32,
                    (false, _) => HeaderKind::FullHeader64,
                    (true, 4) => HeaderKind::Instance32,
                    (true, _) => HeaderKind::Instance64,
                };
                expected.push(Expected { kind, opcode, level: 5, version: 2, ..base });
            }
        }
    }
    expected.sort_by_key(|e| e.timestamp);
    (writer.finish(), expected)
}

fn read_back(bytes: &[u8]) -> Vec<Expected> {
    let trace = Trace::parse(bytes).unwrap();
    let mut stream = trace.events();
    let mut out = Vec::new();
    while let Some(event) = stream.next() {
        let e = event.unwrap();
        if e.is_trace_header() {
            continue;
        }
        let stack = e.extended.iter().find_map(|i| match i.parse() {
            ExtendedData::StackTrace64 { frames, .. } => Some(frames.to_vec()),
            _ => None,
        });
        if matches!(e.kind, HeaderKind::System64 | HeaderKind::System32) {
            assert_eq!(e.cpu_time, CpuTime::KernelUser { kernel: 1, user: 2 });
        }
        if let Some(instance) = e.instance {
            assert_eq!((instance.instance_id, instance.parent_instance_id), (7, 9));
        }
        out.push(Expected {
            kind: e.kind,
            timestamp: e.timestamp,
            cpu: e.cpu,
            pid: e.process_id,
            tid: e.thread_id,
            provider: e.provider,
            id: e.id,
            version: e.version,
            opcode: e.opcode,
            level: e.level,
            task: e.task,
            keywords: e.keywords,
            activity: e.activity_id,
            related: e.extended.related_activity_id(),
            stack,
            payload: e.payload.to_vec(),
        });
    }
    out
}

#[test]
fn records_come_back_identical_and_in_time_order() {
    for (seed, compress) in [(1, false), (2, true), (3, false), (4, true)] {
        let (bytes, expected) = generate(seed, compress, 3000);
        let got = read_back(&bytes);
        assert_eq!(got.len(), expected.len(), "seed {seed}");
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(g, e, "seed {seed} compress {compress}: event {i}");
        }
        let trace = Trace::parse(&bytes).unwrap();
        let summary = Summary::compute(&trace);
        assert_eq!(summary.events, expected.len() as u64 + 1);
        assert!(summary.errors.is_empty(), "{:?}", summary.errors);
        assert!(summary.buffers > 20, "3000 records must span many 8 KiB buffers");
        if compress {
            assert_eq!(summary.compressed_buffers, summary.buffers - 1);
        }
        let h = trace.header();
        assert_eq!((h.build, h.pointer_size, h.number_of_processors, h.buffer_size), (19045, 8, 4, 8192));
        assert_eq!(h.logger_name, "nettrail");
        assert_eq!(h.start_time, TraceConfig::default().start_time);
        // The header's end time is the last record's.
        assert_eq!(trace.clock().to_filetime(expected.last().unwrap().timestamp), h.end_time);
    }
}

#[test]
fn a_32_bit_session_header_round_trips() {
    let config = TraceConfig { pointer_size: 4, logger_name: "Session32".into(), ..Default::default() };
    let start = config.start_time;
    let writer = TraceWriter::new(config);
    let bytes = writer.finish();
    let trace = Trace::parse(&bytes).unwrap();
    assert_eq!(trace.header().pointer_size, 4);
    assert_eq!(trace.header().logger_name, "Session32");
    assert_eq!(trace.header().start_time, start);
    assert_eq!(trace.pointer_size(), 4);
    let summary = Summary::compute(&trace);
    assert_eq!(summary.record_kinds.get(&HeaderKind::System32), Some(&1));
}

/// Sessions on the system-time and CPU-cycle clocks: raw timestamps come back
/// as the UTC instants they were written for.
#[test]
fn every_clock_type_converts_to_the_written_instants() {
    let start = TraceConfig::default().start_time;
    for (clock_type, ticks_per_100ns, start_timestamp) in
        [(2u32, 1u64, start as u64), (3, 280, 1_000_000_000), (1, 1, 5_000)]
    {
        let config = TraceConfig {
            clock_type,
            start_timestamp,
            cpu_speed_mhz: 2_800, // 2.8 GHz: 280 cycles per 100 ns
            events_lost: 5,
            buffers_lost: 1,
            ..Default::default()
        };
        let mut writer = TraceWriter::new(config);
        let offsets_100ns = [1u64, 10_000_000, 36_000_000_000];
        for (i, offset) in offsets_100ns.iter().enumerate() {
            let context = Context {
                timestamp: start_timestamp + offset * ticks_per_100ns,
                cpu: 0,
                process_id: 1,
                thread_id: i as u32,
            };
            writer
                .write_event_header(&EventHeaderRecord::new(context, Guid::ZERO, Descriptor::default(), b"x"))
                .unwrap();
        }
        let bytes = writer.finish();
        let trace = Trace::parse(&bytes).unwrap();
        assert_eq!(trace.header().clock_type, clock_type);
        assert_eq!((trace.header().events_lost, trace.header().buffers_lost), (5, 1));
        let mut stream = trace.events();
        let mut got = Vec::new();
        while let Some(e) = stream.next() {
            got.push(trace.clock().to_filetime(e.unwrap().timestamp) - start);
        }
        assert_eq!(got, [0, 1, 10_000_000, 36_000_000_000], "clock type {clock_type}");
    }
}
