//! A whole file: header, buffer index, parallel summary, time-ordered merge,
//! and the batched pass that merges on a thread of its own.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::ops::ControlFlow;

use nettrail_etl::{Batching, Summary, Trace};

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::parse(data) else { return };
    let summary = Summary::compute(&trace);
    let mut stream = trace.events();
    let mut events = 0u64;
    while let Some(item) = stream.next() {
        if let Ok(event) = item {
            events += 1;
            let _ = trace.clock().to_filetime(event.timestamp);
        }
    }
    assert_eq!(events, summary.events);
    // Small batches and chunks: many hand-overs, buffers spanning batches.
    let mut batched = 0u64;
    nettrail_etl::drive(
        &trace,
        Batching { batch: 7, chunk: 3 },
        |chunk| chunk.events().count() as u64,
        |n| {
            batched += n;
            ControlFlow::Continue(())
        },
        |_| {},
    );
    assert_eq!(batched, events);
});
