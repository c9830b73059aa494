//! The per-trace symbol cache: finds each module's PDB once, keeps it open,
//! and remembers every address it has resolved.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::id::{Guid, PdbId};
use crate::locate::{Candidate, candidates};
use crate::pdb_file::PdbFile;
use crate::symbol_path::SymbolPath;
use crate::{Error, Frame};

/// Resolves module-relative addresses for many modules, finding each PDB on
/// the symbol path the first time the module is asked about.
///
/// Look-ups are cached per module and per address, so resolving the same
/// return addresses across millions of stack samples costs a hash look-up.
pub struct Symbolizer {
    search: Search,
    modules: HashMap<PdbId, Module>,
}

/// Where and how to look for PDBs; kept apart from the cache it fills.
#[derive(Debug)]
struct Search {
    path: SymbolPath,
    default_cache: Option<PathBuf>,
    #[cfg(feature = "download")]
    downloads: bool,
}

impl Symbolizer {
    pub fn new(path: SymbolPath) -> Self {
        Symbolizer {
            search: Search {
                path,
                default_cache: None,
                #[cfg(feature = "download")]
                downloads: false,
            },
            modules: HashMap::new(),
        }
    }

    /// The folder that stands for the symbol path's unnamed stores (`srv*`,
    /// `srv**url`, `cache*`). Without one those stores are skipped.
    pub fn with_default_cache(mut self, dir: impl Into<PathBuf>) -> Self {
        self.search.default_cache = Some(dir.into());
        self
    }

    /// Lets the symbolizer fetch PDBs that no local folder has from the
    /// symbol servers on the path. Off unless asked for: a trace from a
    /// customer should not make the analysis machine reach out by itself.
    #[cfg(feature = "download")]
    pub fn with_downloads(mut self, allow: bool) -> Self {
        self.search.downloads = allow;
        self
    }

    /// The frames at `rva` in the module whose PDB is `id`: innermost inline
    /// frame first, the containing function last. `None` when the PDB cannot
    /// be found or has no symbol covering the address.
    pub fn resolve(&mut self, id: &PdbId, rva: u32) -> Option<Arc<[Frame]>> {
        if let Some(module) = self.modules.get_mut(id) {
            return module.resolve(rva);
        }
        let search = &self.search;
        self.modules.entry(id.clone()).or_insert_with(|| search.find(id)).resolve(rva)
    }

    /// Finds the PDB for `id` now (if not done yet) and tells how that went.
    pub fn locate(&mut self, id: &PdbId) -> &PdbReport {
        let search = &self.search;
        &self.modules.entry(id.clone()).or_insert_with(|| search.find(id)).report
    }

    /// What happened for every module asked about so far, by PDB name.
    pub fn reports(&self) -> Vec<&PdbReport> {
        let mut reports: Vec<&PdbReport> = self.modules.values().map(|m| &m.report).collect();
        reports.sort_by(|a, b| {
            (a.id.name().to_ascii_lowercase(), a.id.store_key())
                .cmp(&(b.id.name().to_ascii_lowercase(), b.id.store_key()))
        });
        reports
    }
}

impl Search {
    /// Tries every local candidate before any download, so a PDB that is on
    /// disk anywhere on the path never costs a network round trip.
    fn find(&self, id: &PdbId) -> Module {
        let mut report = PdbReport::new(id.clone());
        let all = candidates(&self.path, id, self.default_cache.as_deref());
        for candidate in &all {
            if let Candidate::File(file) = candidate {
                report.searched.push(file.display().to_string());
                if file.is_file()
                    && let Some(pdb) = report.try_open(file)
                {
                    return Module::new(report, Some(pdb));
                }
            }
        }
        for candidate in &all {
            if let Candidate::Download { url, into } = candidate
                && let Some(pdb) = self.try_download(&mut report, url, into.as_deref())
            {
                return Module::new(report, Some(pdb));
            }
        }
        Module::new(report, None)
    }

    #[cfg(feature = "download")]
    fn try_download(&self, report: &mut PdbReport, url: &str, into: Option<&Path>) -> Option<PdbFile> {
        let into = match (self.downloads, into) {
            (false, _) => {
                report.searched.push(format!("{url} (downloads not enabled)"));
                return None;
            }
            (true, None) => {
                report.searched.push(format!("{url} (no cache folder to download into)"));
                return None;
            }
            (true, Some(into)) => into,
        };
        report.searched.push(url.to_owned());
        match crate::download::fetch(url, into) {
            Ok(()) => {
                let pdb = report.try_open(into);
                if pdb.is_none() {
                    // A server that answers with another build's file must not
                    // leave it where the next search would find it again.
                    let _ = std::fs::remove_file(into);
                }
                pdb
            }
            Err(error) => {
                report
                    .rejected
                    .push(Rejected { location: url.to_owned(), reason: RejectReason::Unreadable(Arc::new(error)) });
                None
            }
        }
    }

    #[cfg(not(feature = "download"))]
    fn try_download(&self, report: &mut PdbReport, url: &str, _into: Option<&Path>) -> Option<PdbFile> {
        report.searched.push(format!("{url} (built without the `download` feature)"));
        None
    }
}

impl fmt::Debug for Symbolizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Symbolizer").field("search", &self.search).field("modules", &self.modules.len()).finish()
    }
}

/// At most this many resolve errors are kept per PDB; the count goes on.
const KEPT_ERRORS: usize = 8;

struct Module {
    pdb: Option<PdbFile>,
    report: PdbReport,
    addresses: HashMap<u32, Option<Arc<[Frame]>>>,
}

impl Module {
    fn new(report: PdbReport, pdb: Option<PdbFile>) -> Self {
        let mut report = report;
        report.found = pdb.as_ref().map(|p| p.path().to_path_buf());
        Module { pdb, report, addresses: HashMap::new() }
    }

    fn resolve(&mut self, rva: u32) -> Option<Arc<[Frame]>> {
        if let Some(known) = self.addresses.get(&rva) {
            return known.clone();
        }
        let pdb = self.pdb.as_ref()?;
        let frames = match pdb.resolve(rva) {
            Ok(frames) => frames.map(Arc::from),
            Err(error) => {
                // A parser that panicked may have left its caches half
                // written: stop using this PDB rather than trust it.
                if matches!(error, Error::ParserPanic { .. }) {
                    self.pdb = None;
                }
                self.report.error_count += 1;
                if self.report.errors.len() < KEPT_ERRORS {
                    self.report.errors.push(format!("address {rva:#x}: {error}"));
                }
                None
            }
        };
        self.report.addresses += 1;
        if frames.is_some() {
            self.report.resolved += 1;
        }
        self.addresses.insert(rva, frames.clone());
        frames
    }
}

/// How the search for one module's PDB went, and how its look-ups went.
#[derive(Debug, Clone)]
pub struct PdbReport {
    pub id: PdbId,
    /// The file whose GUID and age matched, if any.
    pub found: Option<PathBuf>,
    /// Files (or downloads) that were there but not used, with the reason.
    pub rejected: Vec<Rejected>,
    /// Every place looked at, in order.
    pub searched: Vec<String>,
    /// Distinct addresses looked up in this module.
    pub addresses: u64,
    /// How many of those a symbol covered.
    pub resolved: u64,
    /// How many look-ups failed on damaged symbol data.
    pub error_count: u64,
    /// The first few of those failures.
    pub errors: Vec<String>,
}

impl PdbReport {
    fn new(id: PdbId) -> Self {
        PdbReport {
            id,
            found: None,
            rejected: Vec::new(),
            searched: Vec::new(),
            addresses: 0,
            resolved: 0,
            error_count: 0,
            errors: Vec::new(),
        }
    }

    /// The one-word outcome, for tables and summaries.
    pub fn state(&self) -> PdbState {
        if self.found.is_some() {
            PdbState::Found
        } else if self.rejected.iter().any(|r| matches!(r.reason, RejectReason::Mismatch { .. })) {
            PdbState::Mismatched
        } else if !self.rejected.is_empty() {
            PdbState::Unreadable
        } else {
            PdbState::Missing
        }
    }

    /// Opens `file` if it is the PDB this report is about; records why not.
    fn try_open(&mut self, file: &Path) -> Option<PdbFile> {
        let location = file.display().to_string();
        match PdbFile::open_matching(file, &self.id) {
            Ok(Ok(pdb)) => Some(pdb),
            Ok(Err((guid, age))) => {
                self.rejected.push(Rejected { location, reason: RejectReason::Mismatch { guid, age } });
                None
            }
            Err(error) => {
                self.rejected.push(Rejected { location, reason: RejectReason::Unreadable(Arc::new(error)) });
                None
            }
        }
    }
}

/// The outcome of a PDB search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PdbState {
    /// A PDB with the right GUID and age is in use.
    Found,
    /// Files of that name exist, but from other builds.
    Mismatched,
    /// Files of that name exist but could not be read.
    Unreadable,
    /// No file of that name anywhere on the path.
    Missing,
}

/// A candidate that was there but not used.
#[derive(Debug, Clone)]
pub struct Rejected {
    /// The file path or URL.
    pub location: String,
    pub reason: RejectReason,
}

#[derive(Debug, Clone)]
pub enum RejectReason {
    /// A PDB of another build: what it says its GUID and age are.
    Mismatch { guid: Guid, age: u32 },
    /// Damaged, truncated, not a PDB, or the download failed.
    Unreadable(Arc<Error>),
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reason {
            RejectReason::Mismatch { guid, age } => {
                write!(f, "{}: other build (GUID {guid}, age {age})", self.location)
            }
            RejectReason::Unreadable(error) => write!(f, "{}: {error}", self.location),
        }
    }
}
