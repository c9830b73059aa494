//! The independent Python readers (dissect.etl, etl-parser) read what our
//! writer writes with the same record counts, so the writer and our reader
//! cannot agree on a shared mistake unnoticed.

use nettrail_etl::write::{
    Context, Descriptor, EventHeaderRecord, KernelHeader, KernelRecord, TraceConfig, TraceWriter,
};
use nettrail_etl::{Guid, Summary, Trace};
use nettrail_testkit::{Rng, peer_counts, target_dir};

fn write_trace(compress: bool) -> Vec<u8> {
    let mut writer =
        TraceWriter::new(TraceConfig { compress, buffer_size: 8192, number_of_processors: 3, ..Default::default() });
    let mut rng = Rng(7);
    let mut ts = [TraceConfig::default().start_timestamp; 3];
    for i in 0..2000u32 {
        let cpu = rng.below(3) as u16;
        ts[usize::from(cpu)] += 1 + rng.below(10_000);
        let context =
            Context { timestamp: ts[usize::from(cpu)], cpu, process_id: 100 + i % 7, thread_id: 200 + i % 13 };
        let len = rng.below(200) as usize;
        let payload = rng.bytes(len);
        if i % 3 == 0 {
            let record = KernelRecord {
                context,
                header: if i % 2 == 0 { KernelHeader::Perfinfo } else { KernelHeader::System },
                pointer_size: 8,
                group: 6,
                opcode: 10,
                version: 2,
                kernel_time: 0,
                user_time: 0,
                payload: &payload,
            };
            writer.write_kernel(&record).unwrap();
        } else {
            let provider = Guid::parse_const("7dd42a49-5329-4832-8dfd-43d979153a88");
            let descriptor = Descriptor { id: 10 + (i % 4) as u16, level: 4, ..Default::default() };
            writer.write_event_header(&EventHeaderRecord::new(context, provider, descriptor, &payload)).unwrap();
        }
    }
    writer.finish()
}

#[test]
fn python_peers_count_the_records_we_write() {
    let dir = target_dir().join("test-peers");
    std::fs::create_dir_all(&dir).unwrap();
    for compress in [false, true] {
        let bytes = write_trace(compress);
        let path = dir.join(format!("written-{compress}.etl"));
        std::fs::write(&path, &bytes).unwrap();
        let ours = Summary::compute(&Trace::parse(&bytes).unwrap());
        assert_eq!(ours.events, 2001);
        let theirs = peer_counts(&[path])[0];
        assert_eq!(theirs.dissect_records, ours.events, "dissect.etl, compress={compress}");
        if !compress {
            // etl-parser cannot decompress; on plain buffers it sees every
            // kernel and EVENT_HEADER record (the header event it keeps apart).
            let count =
                |k: &str| ours.record_kinds.iter().filter(|(kind, _)| kind.name() == k).map(|(_, n)| *n).sum::<u64>();
            let want = [count("SYSTEM64") - 1, count("PERFINFO64"), count("EVENT_HEADER64"), 0];
            assert_eq!(theirs.etl_parser, want, "etl-parser");
        }
    }
}
