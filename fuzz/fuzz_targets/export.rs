//! The views of damaged traces: the pcapng, HAR and Trace Event exports and
//! the live path (each event converted as a real-time consumer receives it
//! and fed to the model one by one). Seed with the network corpus and a
//! packet trace: `cp fuzz/corpus/network/* fuzz/corpus/export/`,
//! `cp ../shared/corpus/demikernel__PktMon.etl fuzz/corpus/export/`.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_decode::Schemas;
use nettrail_etl::Trace;

fuzz_target!(|data: &[u8]| {
    let Ok(trace) = Trace::parse(data) else { return };
    let mut schemas = Schemas::new();
    let _ = schemas.learn(&trace);
    let _ = nettrail_export::write_pcapng(&trace, &schemas, &mut std::io::sink(), &mut |_| {});
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |_| {});
    let report = analysis.network.report();
    let code = nettrail_stacks::scan(&trace, &schemas, &|_| true);
    let stacks: Vec<_> = report
        .requests
        .iter()
        .map(|r| analysis.network.stitch(&r.started_by, &code, &nettrail_stacks::NoSymbols).unwrap_or_default())
        .collect();
    let clock = trace.clock();
    let _ = nettrail_export::write_har(&report, Some(&stacks), &mut std::io::sink());
    let _ = nettrail_export::write_perfetto(&report, Some(&stacks), &|raw| clock.to_filetime(raw), &mut std::io::sink());

    let mut live = nettrail_net::Live::new(Schemas::new(), clock.to_filetime(trace.header_timestamp()));
    let mut events = trace.events();
    let mut scratch = Vec::new();
    while let Some(event) = events.next() {
        let Ok(event) = event else { continue };
        let time = clock.to_filetime(event.timestamp);
        if let Some(record) = nettrail_capture::live::as_delivered(&event.record, time, &mut scratch) {
            live.push(&record);
        }
    }
    let _ = live.network().report();
});
