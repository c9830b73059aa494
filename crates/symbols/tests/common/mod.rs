//! Facts about the fixture DLL and PDB in `tests/data`, as `llvm-pdbutil dump
//! -summary -publics -symbols -l -il` and `llvm-readobj --coff-debug-directory`
//! report them for the committed files (see `data/make.sh`).

#![allow(dead_code)] // each test file uses its own part of these facts

use std::path::{Path, PathBuf};

use nettrail_symbols::{Guid, PdbId};

pub const PDB_NAME: &str = "nettrail_fixture.pdb";
/// `{C77D2D78-2FDD-0653-4C4C-44205044422E}` in its on-disk byte order.
pub const GUID_BYTES: [u8; 16] =
    [0x78, 0x2D, 0x7D, 0xC7, 0xDD, 0x2F, 0x53, 0x06, 0x4C, 0x4C, 0x44, 0x20, 0x50, 0x44, 0x42, 0x2E];
pub const GUID_TEXT: &str = "C77D2D78-2FDD-0653-4C4C-44205044422E";
pub const AGE: u32 = 1;
pub const STORE_KEY: &str = "C77D2D782FDD06534C4C44205044422E1";
pub const SOURCE: &str = r"C:\nettrail\fixture\fixture.c";

/// RVAs and code sizes of the procedures (S_GPROC32 `addr` 0001:xxxx plus
/// the `.text` section's RVA 0x1000).
pub const CHECKSUM: (u32, u32) = (0x1000, 0xF6);
pub const BUILD_REQUEST: (u32, u32) = (0x1100, 0x28);
pub const FIXTURE_SEND: (u32, u32) = (0x1130, 0x11);
pub const FIXTURE_ENTRY: (u32, u32) = (0x1150, 0x8);

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

pub fn pdb_path() -> PathBuf {
    data_dir().join(PDB_NAME)
}

pub fn fixture_id() -> PdbId {
    PdbId::new(PDB_NAME, Guid::from_le_bytes(GUID_BYTES), AGE)
}

/// A fresh, empty folder under the target directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("nettrail-symbols").join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("clear scratch folder");
    }
    std::fs::create_dir_all(&dir).expect("create scratch folder");
    dir
}

/// Copies the fixture PDB to `dir/relative`, creating folders on the way.
pub fn place_pdb(dir: &Path, relative: &str) -> PathBuf {
    let target = dir.join(relative);
    std::fs::create_dir_all(target.parent().expect("has a parent")).expect("create folders");
    std::fs::copy(pdb_path(), &target).expect("copy fixture PDB");
    target
}
