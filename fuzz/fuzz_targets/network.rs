//! The network model on damaged traces: seed with synthesized scenarios
//! (`cargo xtask synth NAME fuzz/corpus/network/NAME.etl`); mutations give
//! events with odd fields, lost starts, reused keys and broken payloads;
//! every request's stacks are stitched (hand-off chains, cycles), and
//! `info`'s counting pass counts the stacks and modules the join keeps,
//! the same read once as learning the trace's metadata first.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_decode::Schemas;
use nettrail_etl::Trace;
use nettrail_export::facts::{Facts, Reading};

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::parse(data) else { return };
    let mut schemas = Schemas::new();
    let _ = schemas.learn(&trace);
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |_| {});
    let report = analysis.network.report();
    let code = nettrail_stacks::scan(&trace, &schemas, &|_| true);
    // `info`'s pass counts stacks by fingerprint and modules by their load
    // marks, each buffer's items sorted on its thread and merged: the same
    // counts as the join that keeps them.
    let path = std::path::Path::new("fuzzed.etl");
    let (counted, _) = Facts::counted_reading(path, &trace, &mut Schemas::new(), Reading::TWICE);
    assert_eq!(counted.code.stacks.counts(), code.stacks.counts());
    assert_eq!(counted.code.modules.counts(), code.modules.counts());
    // Read once, counting again what the trace's metadata describes: the
    // same facts as learning first.
    for copies_up_to in [usize::MAX, 0] {
        let reading = Reading { once_below: u64::MAX, copies_up_to };
        let (once, _) = Facts::counted_reading(path, &trace, &mut Schemas::new(), reading);
        assert_eq!(once.document, counted.document);
    }
    for row in &report.requests {
        if let Some(end) = row.end {
            let _ = nettrail_net::report::duration(row.start, Some(end));
        }
        if let Some(stitched) = analysis.network.stitch(&row.started_by, &code, &nettrail_stacks::NoSymbols) {
            let _ = (stitched.first(), stitched.middle(), stitched.full());
        }
    }
});
