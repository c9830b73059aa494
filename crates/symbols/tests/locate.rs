//! Finding the fixture PDB through the symbol path, and refusing PDBs of
//! other builds.

mod common;

use common::*;
use nettrail_symbols::{Guid, PdbId, PdbState, RejectReason, SymbolPath, Symbolizer};

/// `build_request`'s first instruction: resolves only if the right PDB was used.
const PROBE: u32 = 0x1100;

fn resolves_probe(symbolizer: &mut Symbolizer, id: &PdbId) -> bool {
    symbolizer.resolve(id, PROBE).is_some_and(|frames| &*frames[0].function == "build_request")
}

#[test]
fn plain_folder_with_the_pdb_directly() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    assert!(resolves_probe(&mut symbolizer, &fixture_id()));
    let report = symbolizer.locate(&fixture_id());
    assert_eq!(report.state(), PdbState::Found);
    assert_eq!(report.found.as_deref(), Some(pdb_path().as_path()));
    assert!(report.rejected.is_empty());
}

#[test]
fn the_build_path_from_the_trace_is_reduced_to_the_file_name() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    let id = PdbId::new(&format!(r"C:\nettrail\fixture\{PDB_NAME}"), Guid::from_le_bytes(GUID_BYTES), AGE);
    assert!(resolves_probe(&mut symbolizer, &id));
}

#[test]
fn plain_folder_in_symbol_server_layout() {
    let dir = scratch("folder-layout");
    let placed = place_pdb(&dir, &format!("{PDB_NAME}/{STORE_KEY}/{PDB_NAME}"));
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&dir.display().to_string()));
    assert!(resolves_probe(&mut symbolizer, &fixture_id()));
    assert_eq!(symbolizer.locate(&fixture_id()).found.as_deref(), Some(placed.as_path()));
}

#[test]
fn cache_tree_through_srv_and_cache_entries() {
    let dir = scratch("cache-tree");
    let placed = place_pdb(&dir, &format!("{PDB_NAME}/{STORE_KEY}/{PDB_NAME}"));
    for text in [
        format!("srv*{}", dir.display()),
        format!("SRV*{}*https://msdl.microsoft.com/download/symbols", dir.display()),
        format!("symsrv*symsrv.dll*{}*https://msdl.microsoft.com/download/symbols", dir.display()),
        format!("cache*{}", dir.display()),
    ] {
        let mut symbolizer = Symbolizer::new(SymbolPath::parse(&text));
        assert!(resolves_probe(&mut symbolizer, &fixture_id()), "{text}");
        let report = symbolizer.locate(&fixture_id());
        assert_eq!(report.found.as_deref(), Some(placed.as_path()), "{text}");
        // Found locally: the server is never even listed as searched.
        assert!(report.searched.iter().all(|s| !s.starts_with("https://")), "{text}: {:?}", report.searched);
    }
}

#[test]
fn default_cache_stands_for_empty_store_elements() {
    let dir = scratch("default-cache");
    place_pdb(&dir, &format!("{PDB_NAME}/{STORE_KEY}/{PDB_NAME}"));
    for text in ["srv*", "srv**https://msdl.microsoft.com/download/symbols", "cache*"] {
        let mut without = Symbolizer::new(SymbolPath::parse(text));
        assert_eq!(without.locate(&fixture_id()).state(), PdbState::Missing, "{text}");
        let mut with = Symbolizer::new(SymbolPath::parse(text)).with_default_cache(&dir);
        assert!(resolves_probe(&mut with, &fixture_id()), "{text}");
    }
}

#[test]
fn two_tier_store_with_index2_marker() {
    let dir = scratch("two-tier");
    std::fs::write(dir.join("index2.txt"), "").expect("marker");
    let placed = place_pdb(&dir, &format!("ne/{PDB_NAME}/{STORE_KEY}/{PDB_NAME}"));
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&format!("srv*{}", dir.display())));
    assert!(resolves_probe(&mut symbolizer, &fixture_id()));
    assert_eq!(symbolizer.locate(&fixture_id()).found.as_deref(), Some(placed.as_path()));
}

#[test]
fn nt_symbol_path_string_searches_entries_in_order() {
    let empty = scratch("order-empty");
    let cache = scratch("order-cache");
    let folder = scratch("order-folder");
    place_pdb(&cache, &format!("{PDB_NAME}/{STORE_KEY}/{PDB_NAME}"));
    place_pdb(&folder, PDB_NAME);
    let text = format!(
        "{};bogus*entry;SRV*{}*https://msdl.microsoft.com/download/symbols;{}",
        empty.display(),
        cache.display(),
        folder.display()
    );
    let path = SymbolPath::parse(&text);
    assert_eq!(path.errors().len(), 1);
    let mut symbolizer = Symbolizer::new(path);
    assert!(resolves_probe(&mut symbolizer, &fixture_id()));
    let report = symbolizer.locate(&fixture_id());
    assert!(report.found.as_deref().is_some_and(|p| p.starts_with(&cache)), "{:?}", report.found);
    let expected_first = [
        empty.join(PDB_NAME),
        empty.join(PDB_NAME).join(STORE_KEY).join(PDB_NAME),
        cache.join(PDB_NAME).join(STORE_KEY).join(PDB_NAME),
    ];
    let expected_first: Vec<String> = expected_first.iter().map(|p| p.display().to_string()).collect();
    assert_eq!(report.searched, expected_first);
}

#[test]
fn wrong_guid_is_rejected_and_reported() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    let mut other = GUID_BYTES;
    other[15] ^= 1;
    let id = PdbId::new(PDB_NAME, Guid::from_le_bytes(other), AGE);
    assert_eq!(symbolizer.resolve(&id, PROBE), None);
    let report = symbolizer.locate(&id);
    assert_eq!(report.state(), PdbState::Mismatched);
    assert_eq!(report.found, None);
    let [rejected] = report.rejected.as_slice() else { panic!("{:?}", report.rejected) };
    assert_eq!(rejected.location, pdb_path().display().to_string());
    let RejectReason::Mismatch { guid, age } = &rejected.reason else { panic!("{rejected}") };
    assert_eq!(guid.to_string(), GUID_TEXT);
    assert_eq!(*age, AGE);
    assert!(rejected.to_string().contains(&format!("other build (GUID {GUID_TEXT}, age 1)")), "{rejected}");
}

#[test]
fn wrong_age_is_rejected() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    let id = PdbId::new(PDB_NAME, Guid::from_le_bytes(GUID_BYTES), AGE + 1);
    assert_eq!(symbolizer.resolve(&id, PROBE), None);
    assert_eq!(symbolizer.locate(&id).state(), PdbState::Mismatched);
}

#[test]
fn misfiled_pdb_in_a_store_is_rejected_and_the_search_goes_on() {
    // A cache folder named for age 2 holding the age-1 PDB, then the right file later on the path.
    let store = scratch("misfiled");
    let folder = scratch("misfiled-good");
    let guid = Guid::from_le_bytes(GUID_BYTES);
    let id_age2 = PdbId::new(PDB_NAME, guid, 2);
    place_pdb(&store, &format!("{PDB_NAME}/{}/{PDB_NAME}", id_age2.store_key()));
    place_pdb(&store, &format!("{PDB_NAME}/{STORE_KEY}/{PDB_NAME}"));
    std::fs::write(folder.join(PDB_NAME), b"not a pdb at all").expect("write decoy");
    let text = format!("srv*{};{}", store.display(), folder.display());

    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&text));
    assert_eq!(symbolizer.locate(&id_age2).state(), PdbState::Mismatched);
    let reasons: Vec<String> = symbolizer.locate(&id_age2).rejected.iter().map(|r| r.to_string()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons[0].contains("other build"), "{reasons:?}");
    assert!(reasons[1].contains("not a readable PDB"), "{reasons:?}");

    // The right identity finds its own folder in the same store.
    assert!(resolves_probe(&mut symbolizer, &fixture_id()));
    let names: Vec<PdbState> = symbolizer.reports().iter().map(|r| r.state()).collect();
    assert_eq!(names.len(), 2);
    assert!(names.contains(&PdbState::Found) && names.contains(&PdbState::Mismatched), "{names:?}");
}

#[test]
fn missing_pdb_reports_where_it_looked() {
    let dir = scratch("missing");
    let cache = scratch("missing-cache");
    let text = format!("{};srv*{}*https://msdl.microsoft.com/download/symbols", dir.display(), cache.display());
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&text));
    let id = PdbId::new("wininet.pdb", Guid::from_le_bytes(GUID_BYTES), 3);
    assert_eq!(symbolizer.resolve(&id, PROBE), None);
    let report = symbolizer.locate(&id);
    assert_eq!(report.state(), PdbState::Missing);
    let key = id.store_key();
    assert_eq!(report.searched.len(), 4, "{:?}", report.searched);
    assert_eq!(report.searched[0], dir.join("wininet.pdb").display().to_string());
    assert_eq!(report.searched[2], cache.join("wininet.pdb").join(&key).join("wininet.pdb").display().to_string());
    assert!(
        report.searched[3]
            .starts_with(&format!("https://msdl.microsoft.com/download/symbols/wininet.pdb/{key}/wininet.pdb (")),
        "{}",
        report.searched[3]
    );
}

#[test]
fn names_that_could_leave_the_folder_are_not_searched() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    for name in ["..", r"C:\x\", ""] {
        let id = PdbId::new(name, Guid::from_le_bytes(GUID_BYTES), AGE);
        let report = symbolizer.locate(&id);
        assert_eq!(report.state(), PdbState::Missing, "{name:?}");
        assert!(report.searched.is_empty(), "{name:?}: {:?}", report.searched);
    }
}

#[test]
fn upper_case_name_from_the_trace_finds_the_lower_case_file() {
    let mut symbolizer = Symbolizer::new(SymbolPath::parse(&data_dir().display().to_string()));
    let id = PdbId::new(&PDB_NAME.to_uppercase(), Guid::from_le_bytes(GUID_BYTES), AGE);
    assert!(resolves_probe(&mut symbolizer, &id));
}
