//! Addresses in the fixture DLL turned into functions, offsets, inline frames
//! and source lines. Expected values come from the PDB's own records as
//! `llvm-pdbutil` dumps them (see `common`) and the DLL's disassembly.

mod common;

use common::*;
use nettrail_symbols::{Frame, PdbFile, SymbolPath, Symbolizer};

/// Compact form: (function, offset, line); file is checked separately.
fn summary(frames: &[Frame]) -> Vec<(String, Option<u32>, Option<u32>)> {
    frames.iter().map(|f| (f.function.to_string(), f.offset, f.line)).collect()
}

fn resolve(rva: u32) -> Option<Vec<Frame>> {
    let pdb = PdbFile::open(&pdb_path()).expect("fixture PDB opens");
    pdb.resolve(rva).expect("no error on the fixture")
}

fn one(name: &str, offset: u32, line: u32) -> Vec<(String, Option<u32>, Option<u32>)> {
    vec![(name.to_owned(), Some(offset), Some(line))]
}

#[test]
fn function_entry_points_resolve_to_their_names_at_offset_zero() {
    for ((rva, _), name, line) in [
        (CHECKSUM, "checksum", 17),
        (BUILD_REQUEST, "build_request", 22),
        (FIXTURE_SEND, "fixture_send", 29),
        (FIXTURE_ENTRY, "fixture_entry", 37),
    ] {
        let frames = resolve(rva).unwrap_or_else(|| panic!("{name} at {rva:#x}"));
        assert_eq!(summary(&frames), one(name, 0, line), "{rva:#x}");
        assert_eq!(frames[0].file.as_deref(), Some(SOURCE));
        assert!(!frames[0].is_inlined());
    }
}

#[test]
fn last_byte_of_each_function_still_belongs_to_it() {
    for ((start, size), name) in
        [(CHECKSUM, "checksum"), (BUILD_REQUEST, "build_request"), (FIXTURE_ENTRY, "fixture_entry")]
    {
        let frames = resolve(start + size - 1).unwrap_or_else(|| panic!("{name}"));
        let outer = frames.last().expect("at least one frame");
        assert_eq!(&*outer.function, name);
        assert_eq!(outer.offset, Some(size - 1));
    }
}

#[test]
fn return_addresses_of_a_stack_give_offsets_and_call_lines() {
    // fixture_send calls build_request, which calls checksum twice
    // (return addresses from the disassembly: after each `call`).
    assert_eq!(summary(&resolve(0x1139).expect("in fixture_send")), one("fixture_send", 0x9, 30));
    assert_eq!(summary(&resolve(0x110D).expect("after first call")), one("build_request", 0xD, 23));
    assert_eq!(summary(&resolve(0x1119).expect("after second call")), one("build_request", 0x19, 25));
}

#[test]
fn inlined_function_appears_as_inline_frame_innermost_first() {
    // `mix` is inlined into `checksum` at line 18. Its S_INLINESITE binary
    // annotations (llvm-pdbutil: code 0x9 line +2, line +1, code 0x60, code
    // 0x67 line +1, line -2, code 0x9B, line +1, code 0xD0, code 0xD7 line +1,
    // code 0xE0 line -2, end 0xEC) start a range at each code offset with the
    // line in effect then: [0x9,0x60) line 10, [0x60,0x67) 11, [0x67,0x9B) 12,
    // [0x9B,0xD0) 10, [0xD0,0xD7) 11, [0xD7,0xE0) 12, [0xE0,0xEC) 10.
    // (llvm-symbolizer 14 answers 11 at 0x1020 and 10 at 0x106F: it also
    // starts a range on a line-only change, at the old code offset.)
    let ranges = [
        (0x1009, 10),
        (0x1020, 10),
        (0x105F, 10),
        (0x1060, 11),
        (0x1066, 11),
        (0x1067, 12),
        (0x106F, 12),
        (0x109A, 12),
        (0x109B, 10),
        (0x10D0, 11),
        (0x10D7, 12),
        (0x10E0, 10),
        (0x10EB, 10),
    ];
    for (rva, mix_line) in ranges {
        let frames = resolve(rva).unwrap_or_else(|| panic!("{rva:#x}"));
        assert_eq!(
            summary(&frames),
            vec![("mix".to_owned(), None, Some(mix_line)), ("checksum".to_owned(), Some(rva - CHECKSUM.0), Some(18))],
            "{rva:#x}"
        );
        assert!(frames[0].is_inlined());
        assert_eq!(frames[0].file.as_deref(), Some(SOURCE));
        assert_eq!(frames[1].file.as_deref(), Some(SOURCE));
    }
}

#[test]
fn outside_the_inline_range_there_is_no_inline_frame() {
    assert_eq!(summary(&resolve(0x1002).expect("prologue")), one("checksum", 2, 18));
    assert_eq!(summary(&resolve(0x1008).expect("before inline")), one("checksum", 8, 18));
    assert_eq!(summary(&resolve(0x10EC).expect("after inline")), one("checksum", 0xEC, 19));
    assert_eq!(summary(&resolve(0x10F5).expect("ret")), one("checksum", 0xF5, 19));
}

#[test]
fn addresses_outside_any_function_give_none() {
    // Headers, .rdata (0x2000), .data (0x3000), .pdata (0x4000), past the image, far away.
    for rva in [0x0, 0x400, 0xFFF, 0x2000, 0x2065, 0x3000, 0x4000, 0x5000, 0x10_0000, u32::MAX] {
        assert_eq!(resolve(rva), None, "{rva:#x}");
    }
}

#[test]
fn alignment_padding_after_a_function_is_in_no_function() {
    // Procedure records give each function's length; the gaps up to the next
    // 16-byte boundary hold padding no return address can point into.
    for rva in [CHECKSUM.0 + CHECKSUM.1, 0x10FF, BUILD_REQUEST.0 + BUILD_REQUEST.1, 0x1141, 0x114F, 0x1158] {
        assert_eq!(resolve(rva), None, "{rva:#x}");
    }
}

#[test]
fn symbolizer_caches_and_counts() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    let id = fixture_id();
    let first = symbolizer.resolve(&id, 0x1067).expect("resolves");
    let again = symbolizer.resolve(&id, 0x1067).expect("resolves again");
    assert!(std::sync::Arc::ptr_eq(&first, &again), "second look-up comes from the cache");
    assert_eq!(symbolizer.resolve(&id, 0x2000), None);
    assert_eq!(symbolizer.resolve(&id, 0x2000), None);
    assert!(symbolizer.resolve(&id, 0x1139).is_some());
    let report = symbolizer.locate(&id);
    assert_eq!((report.addresses, report.resolved, report.error_count), (3, 2, 0));
}

#[test]
fn same_answers_through_the_symbolizer_and_the_file() {
    let pdb = PdbFile::open(&pdb_path()).expect("opens");
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    for rva in (0x0FF0..0x1170).step_by(3) {
        let direct = pdb.resolve(rva).expect("no error");
        let cached = symbolizer.resolve(&fixture_id(), rva);
        assert_eq!(direct.as_deref(), cached.as_deref(), "{rva:#x}");
    }
}

#[test]
fn a_symbolizer_works_on_another_thread() {
    // The trace analysis symbolizes off the reading thread.
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    assert!(symbolizer.resolve(&fixture_id(), CHECKSUM.0).is_some());
    let frames = std::thread::spawn(move || symbolizer.resolve(&fixture_id(), 0x1139)).join().expect("thread");
    assert_eq!(summary(&frames.expect("resolved")), one("fixture_send", 0x9, 30));
}
