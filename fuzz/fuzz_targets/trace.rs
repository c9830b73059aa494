//! A whole file: header, buffer index, parallel summary, time-ordered merge.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_etl::{Summary, Trace};

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
});
