//! Independent readers (dissect.etl, etl-parser) read a synthesized trace
//! with the record counts nettrail's reader finds, so the synthesizer and
//! our reader cannot agree on a shared mistake unnoticed.

use std::process::Command;

use nettrail_etl::{Summary, Trace};
use nettrail_synth::{EventSpec, KernelSpec, Process, Synth, SynthConfig, Val, fields, sockaddr};
use nettrail_testkit::{python_peers, target_dir};

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

fn python(script: &str, file: &std::path::Path) -> String {
    let python = python_peers().unwrap_or_else(|e| panic!("the Python peer readers are needed: {e}"));
    let out = Command::new(python).args(["-c", script]).arg(file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

const DISSECT_COUNT: &str = "
import sys
from dissect.etl.etl import ETL
with open(sys.argv[1], 'rb') as f:
    print(sum(1 for _ in ETL(f)))
";

/// etl-parser reports records by header family through observer callbacks.
const ETL_PARSER_COUNT: &str = "
import sys
from etl.etl import build_from_stream
counts = {'system': 0, 'perfinfo': 0, 'event': 0, 'trace': 0}
class Observer:
    def on_system_trace(self, e): counts['system'] += 1
    def on_perfinfo_trace(self, e): counts['perfinfo'] += 1
    def on_event_record(self, e): counts['event'] += 1
    def on_trace_record(self, e): counts['trace'] += 1
    def on_win_trace(self, e): pass
with open(sys.argv[1], 'rb') as f:
    build_from_stream(f.read()).parse(Observer())
print(counts['system'], counts['perfinfo'], counts['event'], counts['trace'])
";

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
        assert_eq!(python(DISSECT_COUNT, &path), ours.events.to_string(), "dissect.etl, compress={compress}");
        if !compress {
            // etl-parser cannot decompress; on plain buffers it sees every
            // record (the header event it keeps apart).
            let want = format!(
                "{} {} {} {}",
                count(&["SYSTEM64"]) - 1,
                count(&["PERFINFO64"]),
                count(&["EVENT_HEADER64", "EVENT_HEADER32"]),
                count(&["FULL_HEADER64", "FULL_HEADER32"])
            );
            assert_eq!(python(ETL_PARSER_COUNT, &path), want, "etl-parser");
        }
    }
}
