//! Where a PDB may lie: the candidate files a symbol path names for one
//! module, in search order, and which of them a download would fill.

use std::path::{Path, PathBuf};

use crate::id::PdbId;
use crate::symbol_path::{Store, SymbolPath, SymbolPathEntry};

/// One place to look, in search order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Candidate {
    /// A file that may exist on disk.
    File(PathBuf),
    /// A symbol server: fetching `url` would store the file at `into`.
    /// `into` is `None` when no cache is configured for it.
    Download { url: String, into: Option<PathBuf> },
}

/// Lists every candidate for `id`. `default_cache` stands for the empty
/// store elements (`srv**url`, `cache*`); without it they are skipped.
pub(crate) fn candidates(path: &SymbolPath, id: &PdbId, default_cache: Option<&Path>) -> Vec<Candidate> {
    let mut out = Vec::new();
    if !is_plain_file_name(id.name()) {
        return out;
    }
    let local = |store: &Store| -> Option<PathBuf> {
        match store {
            Store::Local(dir) => Some(dir.clone()),
            Store::DefaultCache => default_cache.map(Path::to_path_buf),
            Store::Http(_) => None,
        }
    };
    // The folder that `cache*` named most recently: downloads by server
    // entries without a local store of their own go there.
    let mut cache_in_effect: Option<PathBuf> = None;
    for entry in path.entries() {
        match entry {
            SymbolPathEntry::Folder(dir) => {
                for name in name_spellings(id.name()) {
                    out.push(Candidate::File(dir.join(&name)));
                }
                out.extend(store_files(dir, id).into_iter().map(Candidate::File));
            }
            SymbolPathEntry::Cache(store) => {
                if let Some(dir) = local(store) {
                    out.extend(store_files(&dir, id).into_iter().map(Candidate::File));
                    cache_in_effect = Some(dir);
                }
            }
            SymbolPathEntry::Server(stores) => {
                let mut nearest_local: Option<PathBuf> = None;
                for store in stores {
                    if let Store::Http(base) = store {
                        let into = nearest_local
                            .clone()
                            .or_else(|| cache_in_effect.clone())
                            .or_else(|| default_cache.map(Path::to_path_buf))
                            .map(|dir| dir.join(id.name()).join(id.store_key()).join(id.name()));
                        out.push(Candidate::Download { url: download_url(base, id), into });
                    } else if let Some(dir) = local(store) {
                        out.extend(store_files(&dir, id).into_iter().map(Candidate::File));
                        nearest_local = Some(dir);
                    }
                }
            }
        }
    }
    out.dedup();
    out
}

/// The symbol-server layout inside `store`: `name.pdb/GUIDAGE/name.pdb`, or
/// with an `index2.txt` marker the two-tier form that first files under the
/// name's first two characters.
fn store_files(store: &Path, id: &PdbId) -> Vec<PathBuf> {
    let key = id.store_key();
    let two_tier = store.join("index2.txt").is_file();
    let mut files = Vec::new();
    for name in name_spellings(id.name()) {
        let root = if two_tier {
            let prefix: String = name.chars().take(2).collect();
            store.join(prefix)
        } else {
            store.to_path_buf()
        };
        files.push(root.join(&name).join(&key).join(&name));
    }
    files
}

/// Stores made on Windows are case-blind; on Linux the file may only exist
/// under the lower-case spelling that symbol tools usually write.
fn name_spellings(name: &str) -> Vec<String> {
    let lower = name.to_ascii_lowercase();
    if lower == name { vec![lower] } else { vec![name.to_owned(), lower] }
}

/// Names from traces end up in file paths and URLs: refuse anything that
/// could step out of the folder it is joined to.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

fn download_url(base: &str, id: &PdbId) -> String {
    let name = url_component(id.name());
    format!("{base}/{name}/{}/{name}", id.store_key())
}

/// Percent-encodes all but the characters URLs leave as they are.
fn url_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
