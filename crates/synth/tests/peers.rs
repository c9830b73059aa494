//! Independent readers (dissect.etl, etl-parser) read a synthesized trace
//! with the record counts nettrail's reader finds, so the synthesizer and
//! our reader cannot agree on a shared mistake unnoticed.

use nettrail_etl::{Summary, Trace};
use nettrail_synth::{EventSpec, KernelSpec, Process, Synth, SynthConfig, Val, fields, sockaddr};
use nettrail_testkit::{peer_counts, target_dir};

/// A small scenario with every record kind the synthesizer writes: the
/// rundowns, a process and thread started and ended, 64- and 32-bit
/// manifest events with extended items, kernel TcpIp, merge metadata.
fn scenario(compress: bool) -> Vec<u8> {
    let mut s = Synth::with_config(SynthConfig { compress, ..SynthConfig::default() });
    s.process(2000, 600, "browser.exe", "browser.exe --new-window", 8).unwrap();
    s.add_process(Process::new(3000, 600, "legacy.exe").wow64()).unwrap();
    let remote = sockaddr::sockaddr("93.184.216.34:443".parse().unwrap());
    for i in 0..300u32 {
        let at = 1.0 + f64::from(i) * 0.25;
        s.emit(
            EventSpec::new("TCPIP", 1033, 0)
                .at(at)
                .thread(2000, 2004 + 4 * (i % 3))
                .field("RemoteAddress", remote.clone())
                .field("Tcb", Val::Ptr(0xffff_a804_0000_0000 + u64::from(i)))
                .stack(&[0x7ffc_8b01_0203, 0x7ff6_1000_1234]),
        )
        .unwrap();
        s.event(at + 0.1, (3000, 3004), "WinINet", 1007, 0, fields![("AddressName", format!("host{i}.example"))])
            .unwrap();
        s.kernel(KernelSpec::new("TcpIp", 10).at(at + 0.2).thread(2000, 2004).fields(fields![("size", 100 + i)]))
            .unwrap();
    }
    s.start_process(20.0, Process::new(4000, 2000, "child.exe")).unwrap();
    s.event(21.0, (4000, 4004), "DNS-Client", 3008, 0, fields![("QueryName", "example.com")]).unwrap();
    s.end_process(30.0, 4000, 0).unwrap();
    s.finish().unwrap()
}

#[test]
fn python_peers_count_the_records_we_synthesize() {
    let dir = target_dir().join("test-synth-peers");
    std::fs::create_dir_all(&dir).unwrap();
    for compress in [false, true] {
        let bytes = scenario(compress);
        let path = dir.join(format!("scenario-{compress}.etl"));
        std::fs::write(&path, &bytes).unwrap();
        let ours = Summary::compute(&Trace::parse(&bytes).unwrap());
        let count = |names: &[&str]| {
            ours.record_kinds.iter().filter(|(kind, _)| names.contains(&kind.name())).map(|(_, n)| *n).sum::<u64>()
        };
        // 900 scenario events, their metadata, the rundowns, the lifetimes.
        assert!(ours.events > 1000, "{}", ours.events);
        assert_eq!(count(&["EVENT_HEADER64", "EVENT_HEADER32"]), 601);
        let theirs = peer_counts(&[path])[0];
        assert_eq!(theirs.dissect_records, ours.events, "dissect.etl, compress={compress}");
        if !compress {
            // etl-parser cannot decompress; on plain buffers it sees every
            // record (the header event it keeps apart).
            let want = [
                count(&["SYSTEM64"]) - 1,
                count(&["PERFINFO64"]),
                count(&["EVENT_HEADER64", "EVENT_HEADER32"]),
                count(&["FULL_HEADER64", "FULL_HEADER32"]),
            ];
            assert_eq!(theirs.etl_parser, want, "etl-parser");
        }
    }
}
