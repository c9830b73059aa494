//! Damaged PDBs give errors, never a panic in the caller, and a damaged file
//! on the symbol path does not stop the search or the trace analysis.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Once;
use std::sync::atomic::{AtomicUsize, Ordering};

use common::*;
use nettrail_symbols::{Error, Guid, PdbFile, PdbId, PdbState, RejectReason, SymbolPath, Symbolizer};

/// Byte offset of the GUID in the fixture's PDB info stream (page 16 + 12).
const INFO_GUID_OFFSET: usize = 0x1_000C;
/// Inside the line-number subsection of the fixture's module stream: damage
/// here is only met when an address's lines are looked up.
const LINE_DATA_OFFSET: usize = 0xA3C2;

/// Panics that the PDB parser raised and the library caught.
static PARSER_PANICS: AtomicUsize = AtomicUsize::new(0);

/// Keeps the caught parser panics from flooding the test output while every
/// other panic (a failing assertion) is still printed.
fn quiet_parser_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let in_parser =
                info.location().is_some_and(|l| l.file().contains("pdb2-") || l.file().contains("pdb-addr2line-"));
            if in_parser {
                PARSER_PANICS.fetch_add(1, Ordering::Relaxed);
            } else {
                default(info);
            }
        }));
    });
}

fn damaged_copy(name: &str, edit: impl FnOnce(&mut Vec<u8>)) -> PathBuf {
    let mut bytes = std::fs::read(pdb_path()).expect("fixture PDB");
    edit(&mut bytes);
    let path = scratch(name).join(PDB_NAME);
    std::fs::write(&path, bytes).expect("write damaged copy");
    path
}

fn open_error(path: &Path) -> String {
    match PdbFile::open(path) {
        Ok(pdb) => panic!("{} opened: {pdb:?}", path.display()),
        Err(error) => error.to_string(),
    }
}

#[test]
fn truncated_files_are_refused_with_the_reason() {
    quiet_parser_panics();
    for (cut, expected) in [
        (0, "UnrecognizedFileFormat"),
        (100, "UnrecognizedFileFormat"),
        (4096, "reach past the end of the 4096-byte file"),
        (16384, "reach past the end of the 16384-byte file"),
        (65536, "reach past the end of the 65536-byte file"),
    ] {
        let path = damaged_copy(&format!("truncated-{cut}"), |b| b.truncate(cut));
        let message = open_error(&path);
        assert!(message.contains(expected), "cut at {cut}: {message}");
        assert!(message.starts_with(&path.display().to_string()), "names the file: {message}");
    }
}

#[test]
fn wrong_magic_is_not_a_pdb() {
    let path = damaged_copy("magic", |b| b[0] ^= 0xFF);
    assert!(matches!(PdbFile::open(&path), Err(Error::Pdb { .. })));
}

#[test]
fn flipped_guid_makes_it_another_build() {
    let path = damaged_copy("guid", |b| b[INFO_GUID_OFFSET] ^= 0x01);
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&path.parent().expect("folder").display().to_string()));
    assert_eq!(symbolizer.resolve(&fixture_id(), CHECKSUM.0), None);
    let report = symbolizer.locate(&fixture_id());
    assert_eq!(report.state(), PdbState::Mismatched);
    let RejectReason::Mismatch { guid, .. } = &report.rejected[0].reason else { panic!("{:?}", report.rejected) };
    let mut expected = GUID_BYTES;
    expected[0] ^= 0x01;
    assert_eq!(*guid, Guid::from_le_bytes(expected));
}

#[test]
fn damaged_line_data_fails_the_lookup_not_the_caller() {
    quiet_parser_panics();
    let path = damaged_copy("lines", |b| b[LINE_DATA_OFFSET] ^= 0xFF);
    // The streams needed to open it are intact.
    let pdb = PdbFile::open(&path).expect("opens");
    let error = pdb.resolve(CHECKSUM.0).expect_err("line data is damaged");
    assert!(matches!(error, Error::ParserPanic { .. } | Error::Symbols { .. }), "{error}");

    // Through the symbolizer: counted and reported, and the module stays
    // quietly unresolved instead of stopping the analysis.
    let id = PdbId::new(PDB_NAME, pdb.guid(), pdb.age());
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&path.parent().expect("folder").display().to_string()));
    assert_eq!(symbolizer.resolve(&id, CHECKSUM.0), None);
    assert_eq!(symbolizer.resolve(&id, 0x1067), None);
    let report = symbolizer.locate(&id);
    assert_eq!(report.state(), PdbState::Found);
    assert!(report.error_count >= 1, "{report:?}");
    assert!(report.errors[0].starts_with("address 0x1000: "), "{:?}", report.errors);
}

#[test]
fn a_damaged_copy_earlier_on_the_path_does_not_hide_the_good_one() {
    let bad = damaged_copy("earlier", |b| b.truncate(16384));
    let text = format!("{};{}", bad.parent().expect("folder").display(), data_dir().display());
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&text));
    let frames = symbolizer.resolve(&fixture_id(), BUILD_REQUEST.0).expect("good copy used");
    assert_eq!(&*frames[0].function, "build_request");
    let report = symbolizer.locate(&fixture_id());
    assert_eq!(report.found.as_deref(), Some(pdb_path().as_path()));
    assert!(matches!(report.rejected[0].reason, RejectReason::Unreadable(_)), "{:?}", report.rejected);
}

#[test]
fn flipping_bytes_all_over_the_file_never_panics() {
    quiet_parser_panics();
    let original = std::fs::read(pdb_path()).expect("fixture PDB");
    let path = scratch("sweep").join(PDB_NAME);
    let probes = [0x0u32, 0x1000, 0x1009, 0x1067, 0x10F6, 0x110D, 0x1139, 0x1150, 0x2000, u32::MAX];
    let (mut refused, mut opened, mut lookup_errors, mut resolved) = (0, 0, 0, 0);
    // Every 5th byte of every page, with all bits flipped.
    for offset in (0..original.len()).step_by(5) {
        let mut bytes = original.clone();
        bytes[offset] ^= 0xFF;
        std::fs::write(&path, &bytes).expect("write");
        let Ok(pdb) = PdbFile::open(&path) else {
            refused += 1;
            continue;
        };
        opened += 1;
        for rva in probes {
            match pdb.resolve(rva) {
                Err(_) => lookup_errors += 1,
                Ok(Some(frames)) => {
                    assert!(!frames.is_empty() && frames.iter().all(|f| !f.function.is_empty()), "{offset:#x}");
                    resolved += 1;
                }
                Ok(None) => {}
            }
        }
    }
    eprintln!(
        "sweep: {refused} refused, {opened} opened, {lookup_errors} look-up errors, {resolved} resolved, {} parser panics caught",
        PARSER_PANICS.load(Ordering::Relaxed)
    );
    // Both kinds of damage occur: some copies cannot be opened, some fail later.
    assert!(refused > 0 && opened > 0 && lookup_errors > 0 && resolved > 0);
}
