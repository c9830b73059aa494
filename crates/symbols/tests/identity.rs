//! Module identities: GUID text forms, PDB names from traces, and the
//! identity read from the fixture PE and PDB.

mod common;

use common::*;
use nettrail_symbols::{Guid, PdbFile, PdbId, pe_identity};

#[test]
fn guid_text_forms() {
    let guid = Guid::from_le_bytes(GUID_BYTES);
    assert_eq!(guid.to_string(), GUID_TEXT);
    assert_eq!(format!("{guid:?}"), format!("{{{GUID_TEXT}}}"));
    assert_eq!(GUID_TEXT.parse::<Guid>(), Ok(guid));
    assert_eq!(format!("{{{}}}", GUID_TEXT.to_lowercase()).parse::<Guid>(), Ok(guid));
    assert_eq!("C77D2D782FDD06534C4C44205044422E".parse::<Guid>(), Ok(guid));
    assert_eq!(Guid::from_fields(0xC77D2D78, 0x2FDD, 0x0653, [0x4C, 0x4C, 0x44, 0x20, 0x50, 0x44, 0x42, 0x2E]), guid);
    assert_eq!(guid.to_le_bytes(), GUID_BYTES);
    for bad in
        ["", "C77D2D78-2FDD-0653-4C4C", "C77D2D78-2FDD-0653-4C4C-44205044422G", "C77D2D782-FDD-0653-4C4C-44205044422E"]
    {
        assert!(bad.parse::<Guid>().is_err(), "{bad:?}");
    }
}

#[test]
fn store_key_is_guid_digits_then_age_in_hex_without_leading_zeros() {
    assert_eq!(fixture_id().store_key(), STORE_KEY);
    let guid = Guid::from_le_bytes(GUID_BYTES);
    assert_eq!(PdbId::new(PDB_NAME, guid, 0x2A).store_key(), "C77D2D782FDD06534C4C44205044422E2A");
    assert_eq!(
        PdbId::new("ntdll.pdb", Guid::from_fields(0x0A0B0C0D, 0x0E0F, 0x0102, [0, 1, 2, 3, 4, 5, 6, 7]), 0x10)
            .store_key(),
        "0A0B0C0D0E0F01020001020304050607".to_owned() + "10"
    );
}

#[test]
fn pdb_name_is_the_file_name_of_what_the_trace_gives() {
    let guid = Guid::from_le_bytes(GUID_BYTES);
    assert_eq!(PdbId::new(r"d:\build\x\ntdll.pdb", guid, 1).name(), "ntdll.pdb");
    assert_eq!(PdbId::new("/home/ci/out/app.pdb", guid, 1).name(), "app.pdb");
    assert_eq!(PdbId::new("wininet.pdb", guid, 1).name(), "wininet.pdb");
    // Windows does not care about case; one trace may mix spellings.
    assert_eq!(PdbId::new("NTDLL.PDB", guid, 1), PdbId::new(r"c:\x\ntdll.pdb", guid, 1));
    assert_ne!(PdbId::new("ntdll.pdb", guid, 1), PdbId::new("ntdll.pdb", guid, 2));
    assert_eq!(fixture_id().to_string(), format!("{PDB_NAME}/{STORE_KEY}"));
}

#[test]
fn pe_identity_of_the_fixture_dll() {
    let bytes = std::fs::read(data_dir().join("nettrail_fixture.dll")).expect("fixture DLL");
    let image = pe_identity(&bytes).expect("a valid PE");
    // From `llvm-readobj --file-headers --coff-debug-directory`.
    assert_eq!(image.time_date_stamp, 0x8D32_3FEE);
    assert_eq!(image.size_of_image, 0x5000);
    assert_eq!(image.image_base, 0x1_8000_0000);
    let debug = image.debug.expect("RSDS record");
    assert_eq!(debug.pdb_path, PDB_NAME);
    assert_eq!(debug.guid.to_string(), GUID_TEXT);
    assert_eq!(debug.age, AGE);
    assert_eq!(debug.pdb_id(), fixture_id());
}

#[test]
fn pe_identity_rejects_what_is_not_a_pe() {
    let bytes = std::fs::read(data_dir().join("nettrail_fixture.dll")).expect("fixture DLL");
    assert!(pe_identity(b"").is_err());
    assert!(pe_identity(b"MZ").is_err());
    assert!(pe_identity(&std::fs::read(pdb_path()).expect("fixture PDB")).is_err());
    for cut in [0x40, 0x80, 0x100, 0x180] {
        assert!(pe_identity(&bytes[..cut]).is_err(), "cut at {cut:#x}");
    }
    // Cut before .rdata, where the debug directory lies: the headers parse but
    // the directory points past the end.
    for cut in [0x400, 0x600, 0x610] {
        let error = pe_identity(&bytes[..cut]).expect_err("debug directory cut off");
        assert!(error.to_string().contains("data dir"), "{cut:#x}: {error}");
    }
}

#[test]
fn the_fixture_pdb_says_who_it_is() {
    let pdb = PdbFile::open(&pdb_path()).expect("fixture PDB opens");
    assert_eq!(pdb.guid().to_string(), GUID_TEXT);
    assert_eq!(pdb.age(), AGE);
    assert!(pdb.matches(&fixture_id()));
    assert!(!pdb.matches(&PdbId::new(PDB_NAME, pdb.guid(), AGE + 1)));
    assert_eq!(pdb.path(), pdb_path());
}
