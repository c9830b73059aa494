//! Every real trace of the shared corpus through the time-ordered merge: each
//! record exactly once, never going back in time, no damage reported.
//! (`nettrail info` is checked against the catalog's facts in the CLI's tests.)

use std::collections::BTreeMap;

use nettrail_etl::{HeaderKind, Summary, Trace, TraceFile};
use nettrail_testkit::{catalog, corpus_file};

#[test]
fn merged_stream_holds_every_record_in_time_order() {
    let mut checked = 0;
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        let expected = entry["events"].as_u64().unwrap();
        if expected == 0 {
            continue; // the damaged file: see bad_input.rs
        }
        let file = TraceFile::open(corpus_file(name)).unwrap();
        let trace = Trace::parse(file.bytes()).unwrap();
        let summary = Summary::compute(&trace);
        assert_eq!(summary.events, expected, "{name}: records counted by buffer");

        let mut stream = trace.events();
        let (mut count, mut last) = (0u64, 0u64);
        let mut kinds: BTreeMap<HeaderKind, u64> = BTreeMap::new();
        let mut seen = std::collections::HashSet::new();
        while let Some(event) = stream.next() {
            let e = event.unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(e.timestamp >= last, "{name}: event {count} goes back in time");
            assert!(seen.insert((e.buffer_index, e.offset_in_buffer)), "{name}: a record came twice");
            // The location points at the record itself: its size and marker.
            if let Some(at) = e.location().file_offset() {
                let marker = &file.bytes()[at as usize..at as usize + 4];
                assert!(marker[3] == 0xC0 || marker[3] == 0x90, "{name}: {} is not a record", e.location());
            }
            last = e.timestamp;
            count += 1;
            *kinds.entry(e.kind).or_default() += 1;
        }
        assert_eq!(count, expected, "{name}: records in the merged stream");
        assert_eq!(kinds, summary.record_kinds, "{name}: record kinds");
        // The first event of the merge is the header event that anchors the clock.
        assert_eq!(trace.clock().to_filetime(trace.header_timestamp()), trace.header().start_time, "{name}");
        checked += 1;
    }
    assert_eq!(checked, 23);
}

#[test]
fn batches_resolve_to_the_same_events_as_next() {
    let file = TraceFile::open(corpus_file("perfview__net.4.5.2.x86.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let mut one_by_one = Vec::new();
    let mut stream = trace.events();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        one_by_one.push((e.timestamp, e.buffer_index, e.offset_in_buffer, e.provider));
    }
    let mut batched = Vec::new();
    let mut stream = trace.events();
    // Earlier batches are resolved after later ones were taken: a batch
    // holds its buffers after the stream has finished with them.
    let mut batches = Vec::new();
    loop {
        let batch = stream.next_batch(1000);
        if batch.is_empty() {
            break;
        }
        batches.push(batch);
    }
    // (buffer, the span of positions of the batch that finished it)
    let mut finished = Vec::new();
    for batch in &batches {
        let start = batched.len();
        assert!(batch.damage().is_empty(), "{:?}", batch.damage());
        for r in batch.events() {
            let e = batch.event(*r).unwrap();
            batched.push((e.timestamp, e.buffer_index, e.offset_in_buffer, e.provider));
        }
        finished.extend(batch.finished().iter().map(|b| (b.index, start..batched.len())));
    }
    assert_eq!(one_by_one.len(), 168_298);
    assert_eq!(one_by_one, batched);
    // Every buffer holding events is finished once, by the batch holding its last event.
    let last_events: BTreeMap<u32, usize> =
        batched.iter().enumerate().map(|(i, &(_, buffer, _, _))| (buffer, i)).collect();
    assert_eq!(finished.len(), last_events.len());
    for (buffer, span) in finished {
        assert!(span.contains(&last_events[&buffer]), "buffer {buffer}");
    }
}

#[test]
fn batches_carry_the_damage_next_meets_in_stream_order() {
    // A real trace damaged twice: records overwritten in a middle buffer,
    // and the file cut inside its last buffer.
    let mut bytes = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let buffers: Vec<_> = Trace::parse(&bytes).unwrap().buffers().iter().collect();
    let middle = buffers[buffers.len() / 2].offset as usize + 0x200;
    bytes[middle..middle + 64].fill(0xFF);
    bytes.truncate(buffers.last().unwrap().offset as usize + 0x300);
    let trace = Trace::parse(&bytes).unwrap();
    let (mut events, mut errors) = (Vec::new(), Vec::new());
    let mut stream = trace.events();
    while let Some(item) = stream.next() {
        match item {
            Ok(e) => events.push((e.timestamp, e.buffer_index, e.offset_in_buffer)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    assert!(!errors.is_empty() && events.len() > 1000, "{} errors, {} events", errors.len(), events.len());
    let (mut batched, mut damage) = (Vec::new(), Vec::new());
    let mut stream = trace.events();
    let mut reused = None;
    loop {
        let batch = stream.next_batch(257);
        if batch.is_empty() {
            break;
        }
        // Each batch fills the list of events the one before was done with.
        if let Some(list) = reused {
            assert_eq!(batch.events().as_ptr(), list);
        }
        damage.extend(batch.damage().iter().map(|e| e.to_string()));
        for r in batch.events() {
            let e = batch.event(*r).unwrap();
            batched.push((e.timestamp, e.buffer_index, e.offset_in_buffer));
        }
        let list = batch.into_events();
        reused = Some(list.as_ptr());
        stream.reuse(list);
    }
    assert_eq!(damage, errors);
    assert_eq!(batched, events);
}

type Fact = Result<(usize, u64, nettrail_etl::Guid, u16, usize), String>;

/// What a way of reading a buffer's records yields, record by record.
fn facts<'a>(
    mut read: impl FnMut() -> Option<nettrail_etl::error::Result<(usize, nettrail_etl::Record<'a>)>>,
) -> Vec<Fact> {
    let mut found = Vec::new();
    while let Some(item) = read() {
        let fact = item.map(|(at, r)| (at, r.timestamp, r.provider, r.id, r.payload.len()));
        found.push(fact.map_err(|e| e.to_string()));
    }
    found
}

#[test]
fn stepping_over_records_yields_the_others_as_reading_them_all_does() {
    use nettrail_etl::record::event_header_flags::EXTENDED_INFO;
    // A search for events of ids divisible by 3 steps over the others
    // (framed from their headers) unless they carry extended data items.
    let wanted = |_: &nettrail_etl::Guid, id: u16| id.is_multiple_of(3);
    let (mut stepped, mut searched_past) = (0, 0);
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        let file = TraceFile::open(corpus_file(name)).unwrap();
        let Ok(trace) = Trace::parse(file.bytes()) else { continue };
        let mut scratch = Vec::new();
        for info in trace.buffers() {
            let contents = trace.contents(&info, &mut scratch);
            // What each way of reading yields: every record but the kernel
            // ones; those the search wants; those and the kernel ones.
            let (mut all, mut all_searched, mut all_searched_kernel) = (Vec::new(), Vec::new(), Vec::new());
            for item in trace.records(&info, &contents) {
                let fact = item.as_ref().map(|(at, r)| (*at, r.timestamp, r.provider, r.id, r.payload.len()));
                match item {
                    Ok((at, r)) if r.kind.is_kernel() => {
                        stepped += usize::from(at > 0);
                        all_searched_kernel.push(fact.map_err(|e| e.to_string()));
                        continue;
                    }
                    Ok((_, r))
                        if r.kind.is_event_header() && !wanted(&r.provider, r.id) && r.flags & EXTENDED_INFO == 0 =>
                    {
                        searched_past += 1;
                        all.push(fact.map_err(|e| e.to_string()));
                        continue;
                    }
                    _ => {}
                }
                let fact = fact.map_err(|e| e.to_string());
                all.push(fact.clone());
                all_searched.push(fact.clone());
                all_searched_kernel.push(fact);
            }
            let mut records = trace.records(&info, &contents);
            assert_eq!(facts(|| records.next_not_kernel()), all, "{name}: buffer {}", info.index);
            let mut records = trace.records(&info, &contents);
            assert_eq!(facts(|| records.next_searched(false, wanted)), all_searched, "{name}: {}", info.index);
            let mut records = trace.records(&info, &contents);
            let searched_kernel = facts(|| records.next_searched(true, wanted));
            assert_eq!(searched_kernel, all_searched_kernel, "{name}: buffer {}", info.index);
        }
    }
    assert!(stepped > 100_000, "the corpus' kernel records: {stepped}");
    assert!(searched_past > 50_000, "the corpus' unwanted EVENT_HEADER records: {searched_past}");
}

#[test]
fn buffer_runs_hold_every_buffer_once_in_file_order() {
    let file = TraceFile::open(corpus_file("perfview__net.4.5.2.x86.etl")).unwrap();
    let trace = Trace::parse(file.bytes()).unwrap();
    let bytes = 256 << 10;
    let runs: Vec<_> = trace.buffer_runs(bytes).collect();
    assert!(runs.len() > 10, "{} runs", runs.len());
    let indices: Vec<u32> = runs.iter().flat_map(|r| r.iter().map(|b| b.index)).collect();
    let all: Vec<u32> = trace.buffers().iter().map(|b| b.index).collect();
    assert_eq!(indices, all);
    // As many buffers a run as `bytes` holds at the session's buffer size
    // (64 KiB in this trace), so no run holds more than `bytes` of records.
    assert_eq!(trace.session().buffer_size, 64 << 10);
    for run in &runs[..runs.len() - 1] {
        assert_eq!(run.len(), 4);
    }
    for run in &runs {
        assert!(run.iter().map(|b| b.header.filled as usize).sum::<usize>() <= bytes);
    }
    // A run is at least one buffer, whatever `bytes` is.
    assert_eq!(trace.buffer_runs(1).count(), all.len());
}

/// The buffer index keeps 16 bytes a buffer and reads the rest again from
/// the file: what it hands out must be what the walk along the buffers found
/// (offset, header, bytes present, truncation), for every corpus file, one
/// cut in the middle of a buffer, and one with a buffer written twice (which
/// the index leaves out).
#[test]
fn the_index_gives_each_buffer_as_the_walk_found_it() {
    use nettrail_etl::buffer::BufferWalk;
    use nettrail_testkit::hostile;
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    for path in nettrail_testkit::corpus_traces() {
        files.push((path.display().to_string(), std::fs::read(&path).unwrap()));
    }
    let base = std::fs::read(corpus_file("tx__HTTP_Server.etl")).unwrap();
    let mut cut = base.clone();
    cut.truncate(base.len() - 5000);
    files.push(("cut".into(), cut));
    files.push(("duplicated".into(), hostile::duplicated_buffer(&base, 3)));
    let mut checked = 0;
    for (name, bytes) in &files {
        let Ok(trace) = Trace::parse(bytes) else { continue };
        let mut walk = BufferWalk::new(bytes);
        let mut found = BTreeMap::new();
        if let Some(Ok(first)) = walk.next() {
            walk.set_session(trace.session());
            for b in std::iter::once(first).chain(walk.filter_map(Result::ok)) {
                found.entry(b.offset).or_insert((b.header, b.raw.len(), b.truncated));
            }
        }
        let buffers = trace.buffers();
        assert_eq!(buffers.iter().len(), buffers.len());
        for (position, info) in buffers.iter().enumerate() {
            assert_eq!(info.index as usize, position, "{name}");
            assert_eq!(buffers.get(position), Some(info), "{name}");
            assert_eq!(found.get(&info.offset), Some(&(info.header, info.stored_len, info.truncated)), "{name}");
            checked += 1;
        }
        assert_eq!(buffers.get(buffers.len()), None);
        if name == "duplicated" {
            assert_eq!(buffers.len() + 1, found.len(), "the copy is left out of the index");
        } else if name == "cut" {
            assert!(buffers.get(buffers.len() - 1).unwrap().truncated);
        }
    }
    assert!(checked > 1_000, "{checked} buffers");
}
