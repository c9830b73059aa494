//! Hostile traces (issue 12): files built to make a reader hang, lose data
//! silently or count it twice. Each keeps every good event, reports what
//! was wrong where, and never expands or allocates what a field merely claims.

use nettrail_etl::{ErrorKind, Note, Summary, Trace};
use nettrail_testkit::corpus_file;
use nettrail_testkit::hostile::{self, logfile};

/// Events per buffer (by file offset) of a trace, read record by record.
fn events_by_buffer(bytes: &[u8]) -> Vec<(u64, u64)> {
    let trace = Trace::parse(bytes).unwrap();
    let mut scratch = Vec::new();
    trace
        .buffers()
        .iter()
        .map(|info| {
            let contents = trace.contents(&info, &mut scratch);
            (info.offset, trace.records(&info, &contents).filter(Result::is_ok).count() as u64)
        })
        .collect()
}

/// The merged stream's good events and errors; the parallel summary agrees.
fn read_all(bytes: &[u8]) -> (u64, Vec<nettrail_etl::Error>) {
    let trace = Trace::parse(bytes).unwrap();
    let mut stream = trace.events();
    let (mut events, mut errors) = (0, Vec::new());
    while let Some(item) = stream.next() {
        match item {
            Ok(_) => events += 1,
            Err(e) => errors.push(e),
        }
    }
    let summary = Summary::compute(&trace);
    assert_eq!(summary.events, events);
    assert_eq!(summary.errors.len(), errors.len());
    (events, errors)
}

fn total(counts: &[(u64, u64)]) -> u64 {
    counts.iter().map(|c| c.1).sum()
}

#[test]
fn a_decompression_bomb_is_reported_not_expanded() {
    let base = std::fs::read(corpus_file("perfview__SelfDescribingSingleEvent.etl")).unwrap();
    let good = total(&events_by_buffer(&base));
    // 100 buffers of 15 bytes of stream, each claiming 64 MiB.
    let bomb = hostile::decompression_bomb(&base, 100, 64 << 20);
    assert!(bomb.len() < base.len() + 100 * 100, "{} bytes", bomb.len());
    let (events, errors) = read_all(&bomb);
    assert_eq!(events, good);
    assert_eq!(errors.len(), 100);
    for e in &errors {
        let ErrorKind::OversizedBuffer { filled, limit } = e.kind else { panic!("{e}") };
        assert_eq!((filled, limit), ((64 << 20) + 0x48, 0x10000));
        assert!(e.to_string().contains("not expanded"), "{e}");
    }
}

/// 40 buffers of 16 MiB whose time ranges all overlap: the merge keeps at
/// most 256 MiB of them open and reads the rest after, out of time order,
/// and says how many it so delayed. Every event is still read once.
#[test]
fn buffers_that_all_overlap_in_time_are_read_in_bounded_memory() {
    let base = std::fs::read(corpus_file("perfview__SelfDescribingSingleEvent.etl")).unwrap();
    let good = total(&events_by_buffer(&base));
    // Two SYSTEM64 records (Process group, opcode 1), at raw times 1000 and 2000.
    let record = |time: u64| {
        let mut r = vec![0u8; 0x28];
        r[0..4].copy_from_slice(&[2, 0, 0x02, 0xC0]);
        r[4..6].copy_from_slice(&0x28u16.to_le_bytes());
        r[6..8].copy_from_slice(&0x0301u16.to_le_bytes());
        r[0x10..0x18].copy_from_slice(&time.to_le_bytes());
        r
    };
    let bytes = hostile::overlapping_buffers(&base, &record(1000), &record(2000), 40);
    let trace = Trace::parse(&bytes).unwrap();
    let mut stream = trace.events();
    let mut events = 0u64;
    while let Some(item) = stream.next() {
        item.unwrap();
        events += 1;
    }
    let per_buffer = 1 + ((16 << 20) - 0x48 - 0x28) / 0x28;
    assert_eq!(events, good + 40 * per_buffer);
    // Each buffer holds a few bytes less than 16 MiB: 17 open within 256 MiB;
    // the other 23 open after their first event's time has passed.
    assert_eq!(stream.reordered(), 23);
}

#[test]
fn a_zero_size_field_in_the_middle_skips_that_buffer_only() {
    for (name, victim) in [("tx__KernelNetwork.etl", 40), ("perfview__net.4.5.2.x86.etl", 100)] {
        let base = std::fs::read(corpus_file(name)).unwrap();
        let counts = events_by_buffer(&base);
        let damaged = hostile::zero_buffer_size(&base, victim);
        let (events, errors) = read_all(&damaged);
        assert_eq!(events, total(&counts) - counts[victim].1, "{name}");
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        let e = &errors[0];
        assert_eq!(e.location.buffer_offset, counts[victim].0);
        let ErrorKind::Resynchronized { cause, resumed_at, .. } = &e.kind else { panic!("{e}") };
        assert_eq!(**cause, ErrorKind::ZeroBufferSize);
        assert_eq!(*resumed_at, Some(counts[victim + 1].0), "{name}");
        let text = e.to_string();
        assert!(text.contains("size field is 0") && text.contains("reading resumed"), "{text}");
    }
}

#[test]
fn zeros_at_the_end_are_preallocated_space_not_damage() {
    let mut bytes = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let good = total(&events_by_buffer(&bytes));
    bytes.extend(std::iter::repeat_n(0, 5 * 0x2000));
    let (events, errors) = read_all(&bytes);
    assert_eq!((events, errors.len()), (good, 0));
}

#[test]
fn a_duplicated_buffer_is_counted_once_and_said() {
    for (name, victim) in [("tx__KernelNetwork.etl", 40), ("perfview__net.4.5.2.x86.etl", 100)] {
        let base = std::fs::read(corpus_file(name)).unwrap();
        let counts = events_by_buffer(&base);
        let copy = hostile::duplicated_buffer(&base, victim);
        let (events, errors) = read_all(&copy);
        assert_eq!(events, total(&counts), "{name}");
        assert_eq!(errors.len(), 1, "{name}: {errors:?}");
        let ErrorKind::DuplicateBuffer { original_offset, .. } = errors[0].kind else { panic!("{}", errors[0]) };
        assert_eq!(original_offset, counts[victim].0);
        let size = (counts[victim + 1].0 - counts[victim].0) as usize;
        assert_eq!(errors[0].location.buffer_offset, counts[victim].0 + size as u64);
    }
}

#[test]
fn a_cut_between_buffers_is_a_truncation() {
    let base = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let counts = events_by_buffer(&base);
    let cut = hostile::cut_before_buffer(&base, 100);
    let (events, errors) = read_all(&cut);
    assert_eq!(events, counts[..100].iter().map(|c| c.1).sum::<u64>());
    assert_eq!(errors.len(), 1);
    let ErrorKind::MissingBuffers { written, found, session_end, last_buffer } = errors[0].kind else {
        panic!("{}", errors[0])
    };
    assert_eq!((written, found), (129, 100));
    assert!(last_buffer.unwrap() < session_end);
    assert_eq!(
        errors[0].to_string(),
        format!(
            "at offset {:#x} (buffer 100): the trace header says the session wrote 129 buffers; the file holds 100; \
             the session ran until 2012-06-19T20:34:35.5280372Z, the file's last buffer begins at \
             2012-06-19T20:34:29.2176239Z (truncated file, or buffers lost on the way)",
            cut.len()
        )
    );
}

#[test]
fn more_buffers_than_the_header_counts_is_a_note() {
    let mut bytes = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    hostile::set_logfile_u32(&mut bytes, logfile::BUFFERS_WRITTEN, 100);
    let (_, errors) = read_all(&bytes);
    assert!(errors.is_empty());
    let trace = Trace::parse(&bytes).unwrap();
    assert_eq!(trace.notes(), [Note::NotClosedCleanly { written: 100, found: 129, end_time: trace.header().end_time }]);
    assert_eq!(
        trace.notes()[0].to_string(),
        "the file holds 129 buffers where the header counts 100: the session was not stopped cleanly"
    );
}

#[test]
fn implausible_header_values_are_flagged_and_not_used() {
    let base = std::fs::read(corpus_file("tx__KernelNetwork.etl")).unwrap();
    let good = total(&events_by_buffer(&base));
    let bytes = hostile::implausible_header(&base);
    let trace = Trace::parse(&bytes).unwrap();
    // The session's buffer size comes from the data buffers instead.
    assert_eq!(trace.session().buffer_size, 0x2000);
    assert_eq!(trace.pointer_size(), 8);
    let flagged: Vec<&str> = trace
        .notes()
        .iter()
        .filter_map(|n| match n {
            Note::ImplausibleHeaderField { field, value, .. } => {
                assert_eq!(*value, u64::from(u32::MAX), "{field}");
                Some(*field)
            }
            _ => None,
        })
        .collect();
    assert_eq!(flagged, ["BufferSize", "PointerSize", "NumberOfProcessors", "EventsLost", "BuffersLost"]);
    let (events, errors) = read_all(&bytes);
    assert_eq!((events, errors.len()), (good, 0));
}

#[test]
fn files_that_are_not_traces_are_named() {
    let cases: [(&[u8], &str); 4] = [
        (
            b"Date,Host,Bytes\n2026-01-01,example.com,12\n",
            "not an .etl trace: a text file; it begins \"Date,Host,Bytes\"",
        ),
        (&[0; 0x10000], "not an .etl trace: the file holds only zero bytes"),
        (b"PK\x03\x04\x14\x00\x00\x00\x08\x00 more zip bytes for the header", "not an .etl trace: a ZIP archive"),
        (b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<WindowsPerformanceRecorder>", "an XML or HTML file"),
    ];
    for (bytes, expected) in cases {
        let e = Trace::parse(bytes).unwrap_err();
        assert!(e.to_string().contains(expected), "{e}");
    }
    // A 64 KiB file whose first buffer has a zero size but data after it.
    let mut bytes = vec![0u8; 0x10000];
    bytes[0x100..0x200].fill(0x5A);
    let e = Trace::parse(&bytes).unwrap_err();
    assert_eq!(
        e.to_string(),
        "at offset 0x0 (buffer 0): buffer size field is 0 but data follows (a never-written buffer is all zeros)"
    );
    // A large zeroed file (a preallocated trace never written) is named by its first 64 KiB.
    let e = Trace::parse(&vec![0u8; 0x30_0000]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "not an .etl trace: its first 64 KiB hold only zero bytes (a preallocated trace file nothing was written to?)"
    );
}
