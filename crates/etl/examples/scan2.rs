use nettrail_etl::Guid;
use nettrail_etl::write::*;
fn main() {
    for compress in [false, true] {
        let mut w = TraceWriter::new(TraceConfig { compress, buffer_size: 8192, ..Default::default() });
        for i in 0..500u64 {
            let ctx =
                Context { timestamp: 36_000_000_000 + i * 1000, cpu: (i % 2) as u16, process_id: 10, thread_id: 20 };
            w.write_event_header(&EventHeaderRecord::new(
                ctx,
                Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a"),
                Descriptor { id: 1033, ..Default::default() },
                &[1u8; 40],
            ))
            .unwrap();
            w.write_kernel(&KernelRecord {
                context: ctx,
                header: KernelHeader::Perfinfo,
                pointer_size: 8,
                group: 6,
                opcode: 10,
                version: 2,
                kernel_time: 0,
                user_time: 0,
                payload: &[2u8; 40],
            })
            .unwrap();
        }
        std::fs::write(format!("/tmp/w{}.etl", compress as u8), w.finish()).unwrap();
    }
}
