//! Stacks of the corpus' PerfView traces (classic StackWalk records; the
//! Windows 8 trace through the stack cache's keys), checked against what
//! `nettrail dump` decodes of the stack records themselves.

use std::collections::BTreeSet;

use nettrail_decode::Schemas;
use nettrail_etl::{Trace, TraceFile};
use nettrail_stacks::{Frames, NoSymbols, STACK_WALK, scan};
use nettrail_testkit::corpus_file;

struct Seen {
    /// Events that found a stack.
    with_stack: usize,
    frames: usize,
    /// Frames named after a module or a managed method.
    resolved: usize,
    /// (timestamp, thread) of the stack records: the events they belong to.
    stack_events: BTreeSet<(u64, u32)>,
    /// The stack records' events that events found.
    joined: BTreeSet<(u64, u32)>,
    /// Events with their stack in extended data.
    in_items: usize,
}

fn walk(name: &str) -> Seen {
    let file = TraceFile::open(corpus_file(name)).unwrap();
    let trace = Trace::open(&file).unwrap();
    let mut schemas = Schemas::new();
    schemas.learn(&trace);
    let code = scan(&trace, &schemas, &|_| true);
    let frames = Frames { modules: &code.modules, symbols: &NoSymbols };
    let mut seen = Seen {
        with_stack: 0,
        frames: 0,
        resolved: 0,
        stack_events: BTreeSet::new(),
        joined: BTreeSet::new(),
        in_items: 0,
    };
    let mut events = trace.events();
    while let Some(Ok(e)) = events.next() {
        if e.provider == STACK_WALK {
            // The stack record's own fields, decoded by the kernel layout.
            let mut values = Vec::new();
            let schema = schemas.decode(&e.record, &mut values).unwrap();
            let get = |n: &str| values[schema.fields.iter().position(|f| f.name == n).unwrap()].as_u64().unwrap();
            if matches!(e.opcode, 32 | 37 | 38) {
                seen.stack_events.insert((get("EventTimeStamp"), get("StackThread") as u32));
            }
            continue;
        }
        // A header without a thread: the payload's thread (sampled profiles).
        let mut values = Vec::new();
        let thread = e.thread_id.or_else(|| {
            let schema = schemas.decode(&e.record, &mut values).ok()?;
            let i = schema.fields.iter().position(|f| f.name == "ThreadId")?;
            values.get(i)?.as_u64().map(|t| t as u32)
        });
        let Some(stack) = code.stacks.cursor().of_record_on(&e, thread) else { continue };
        seen.with_stack += 1;
        match stack.walked {
            Some(key) => {
                seen.joined.insert(key);
            }
            None => seen.in_items += 1,
        }
        let pid = stack.pid.or(e.process_id).unwrap_or(0);
        for text in frames.stack(pid, &stack.frames, e.timestamp) {
            seen.frames += 1;
            if !text.starts_with("0x") {
                seen.resolved += 1;
            }
        }
    }
    seen
}

#[test]
fn windows_7_stack_walks_resolve_to_modules() {
    let seen = walk("perfview__net.4.5.x86.PerfViewData.etl");
    // Every event the stack records name found its stack; 93 events carry
    // theirs as extended data. (Events without a thread in their header are
    // matched by time alone, so a few share a stack with an event at the
    // same instant.)
    assert_eq!(seen.stack_events.len(), 17_363);
    assert_eq!(missing_events(&seen), 0);
    assert_eq!(seen.in_items, 93);
    // Kernel, system-wide and process modules, and methods the CLR compiled.
    assert!(seen.resolved * 1000 >= seen.frames * 992, "{} of {} frames resolved", seen.resolved, seen.frames);
}

#[test]
fn windows_8_stack_cache_keys_resolve_to_modules() {
    let seen = walk("perfview__net.4.5.2.x86.etl");
    assert_eq!(seen.stack_events.len(), 9_666);
    assert_eq!(missing_events(&seen), 0);
    assert_eq!(seen.in_items, 1_070);
    assert!(seen.resolved * 1000 >= seen.frames * 985, "{} of {} frames resolved", seen.resolved, seen.frames);
}

/// Stack records whose event is not in the trace (none expected; counted so
/// a failure says how many).
fn missing_events(seen: &Seen) -> usize {
    seen.stack_events.difference(&seen.joined).count()
}

/// One cursor asked in any order — forward event by event, backward, and in
/// long jumps — finds what a fresh search finds for each event.
#[test]
fn a_cursor_finds_what_a_search_finds_in_any_order() {
    let file = TraceFile::open(corpus_file("perfview__net.4.5.x86.PerfViewData.etl")).unwrap();
    let trace = Trace::open(&file).unwrap();
    let mut schemas = Schemas::new();
    schemas.learn(&trace);
    let code = scan(&trace, &schemas, &|_| true);
    let mut asked = Vec::new();
    let mut events = trace.events();
    while let Some(Ok(e)) = events.next() {
        if e.provider != STACK_WALK {
            asked.push((e.timestamp, e.thread_id));
        }
    }
    let searched: Vec<_> = asked.iter().map(|&(at, thread)| code.stacks.of_event(at, thread)).collect();
    assert!(searched.iter().filter(|s| s.is_some()).count() > 17_000);
    let in_order = |order: &mut dyn Iterator<Item = usize>| {
        let mut cursor = code.stacks.cursor();
        for i in order {
            let (at, thread) = asked[i];
            assert_eq!(cursor.of_event(at, thread), searched[i], "event {i} at {at}");
        }
    };
    let n = asked.len();
    in_order(&mut (0..n));
    in_order(&mut (0..n).rev());
    // Strides of a prime through the events: far ahead, then back.
    in_order(&mut (0..n).map(|i| i * 7919 % n));
}
