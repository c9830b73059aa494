//! The network model on damaged traces: seed with synthesized scenarios
//! (`cargo xtask synth NAME fuzz/corpus/network/NAME.etl`); mutations give
//! events with odd fields, lost starts, reused keys and broken payloads;
//! every request's stacks are stitched (hand-off chains, cycles).
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_decode::Schemas;
use nettrail_etl::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::parse(data) else { return };
    let mut schemas = Schemas::new();
    let _ = schemas.learn(&trace);
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |_| {});
    let report = analysis.network.report();
    let code = nettrail_stacks::scan(&trace, &schemas, &|_| true);
    for row in &report.requests {
        if let Some(end) = row.end {
            let _ = nettrail_net::report::duration(row.start, Some(end));
        }
        if let Some(stitched) = analysis.network.stitch(&row.started_by, &code, &nettrail_stacks::NoSymbols) {
            let _ = (stitched.first(), stitched.middle(), stitched.full());
        }
    }
});
