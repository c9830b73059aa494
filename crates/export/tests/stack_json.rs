//! A stack written straight into JSON (`dump`'s `stack` key) is the JSON
//! array of the texts `Frames::stack` makes of its frames, on every stack
//! of the corpus' PerfView traces.

use nettrail_decode::Schemas;
use nettrail_etl::{Trace, TraceFile};
use nettrail_stacks::{Frames, NoSymbols, scan};
use nettrail_testkit::corpus_file;

#[test]
fn stacks_written_as_json_are_their_frames_texts() {
    for name in ["perfview__net.4.5.x86.PerfViewData.etl", "perfview__net.4.5.2.x86.etl"] {
        let file = TraceFile::open(corpus_file(name)).unwrap();
        let trace = Trace::open(&file).unwrap();
        let mut schemas = Schemas::new();
        schemas.learn(&trace);
        let code = scan(&trace, &schemas, &|_| true);
        let frames = Frames { modules: &code.modules, symbols: &NoSymbols };
        let mut cursor = code.stacks.cursor();
        let (mut stacks, mut texts) = (0, Vec::new());
        let mut events = trace.events();
        while let Some(Ok(e)) = events.next() {
            let Some(stack) = cursor.of_record_on(&e, e.thread_id) else { continue };
            let pid = stack.pid.or(e.process_id).unwrap_or(0);
            let (mut direct, mut by_texts) = (Vec::new(), Vec::new());
            nettrail_export::json::stack(&mut direct, &frames, pid, &stack.frames, e.timestamp);
            let made = frames.stack(pid, &stack.frames, e.timestamp);
            nettrail_export::json::string_array(&mut by_texts, &made);
            assert_eq!(String::from_utf8(direct).unwrap(), String::from_utf8(by_texts).unwrap(), "{name}");
            stacks += 1;
            texts.extend(made);
        }
        assert!(stacks > 9_000, "{name}: {stacks} stacks");
        // All three forms: module and offset, managed method, bare address.
        for form in ["+0x", "managed!", "0x"] {
            assert!(texts.iter().any(|t| t.contains(form) && !(form == "0x" && t.contains('+'))), "{name}: {form}");
        }
    }
}
