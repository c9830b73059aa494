//! The symbol path as Windows debuggers take it (`_NT_SYMBOL_PATH`, `.sympath`),
//! so users can hand nettrail the string they already use with WinDbg or WPA.

use std::fmt;
use std::path::PathBuf;

/// Microsoft's public symbol server, which `srv*` with no store named means.
pub const MICROSOFT_SYMBOL_SERVER: &str = "https://msdl.microsoft.com/download/symbols";

/// One place in a symbol-server chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// A local folder in the symbol-server layout (`name.pdb/GUIDAGE/name.pdb`).
    Local(PathBuf),
    /// An empty element (`srv**url`): the default downstream store, which the
    /// [`Symbolizer`](crate::Symbolizer) is told about by its caller.
    DefaultCache,
    /// An HTTP(S) symbol server, without a trailing slash.
    Http(String),
}

/// One `;`-separated element of a symbol path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SymbolPathEntry {
    /// A plain folder: searched for `name.pdb` itself and for the store layout.
    Folder(PathBuf),
    /// `cache*folder`: searched where it stands, and the server entries after
    /// it that name no local store of their own download into it.
    Cache(Store),
    /// `srv*a*b*…` or `symsrv*symsrv.dll*a*b*…`: stores searched left to right;
    /// a file that only a store further right has is copied into the local
    /// stores before it.
    Server(Vec<Store>),
}

/// An element the parser could not use; the rest of the path still counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolPathError {
    /// The element as written.
    pub entry: String,
    pub reason: String,
}

impl fmt::Display for SymbolPathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "symbol path entry `{}`: {}", self.entry, self.reason)
    }
}

impl std::error::Error for SymbolPathError {}

/// A parsed symbol path: the entries in search order, and the elements that
/// were skipped with the reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolPath {
    entries: Vec<SymbolPathEntry>,
    errors: Vec<SymbolPathError>,
}

impl SymbolPath {
    /// Parses one symbol-path string; see [`SymbolPath::append`].
    pub fn parse(text: &str) -> Self {
        let mut path = SymbolPath::default();
        path.append(text);
        path
    }

    /// Adds the entries of `text` after the ones already present. Each
    /// `--symbols` argument and each environment variable is one such text.
    ///
    /// Keywords (`srv`, `symsrv`, `cache`) are matched without regard to case.
    /// Elements that cannot be used are recorded in [`SymbolPath::errors`].
    pub fn append(&mut self, text: &str) {
        for element in text.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            match parse_entry(element) {
                Ok(entry) => self.entries.push(entry),
                Err(reason) => self.errors.push(SymbolPathError { entry: element.to_owned(), reason }),
            }
        }
    }

    /// The path from the environment, in the order debuggers search it:
    /// `_NT_ALT_SYMBOL_PATH` first, then `_NT_SYMBOL_PATH`.
    pub fn from_env() -> Self {
        let mut path = SymbolPath::default();
        for variable in ["_NT_ALT_SYMBOL_PATH", "_NT_SYMBOL_PATH"] {
            if let Some(value) = std::env::var_os(variable) {
                path.append(&value.to_string_lossy());
            }
        }
        path
    }

    /// Appends every entry and error of `other`.
    pub fn extend(&mut self, other: SymbolPath) {
        self.entries.extend(other.entries);
        self.errors.extend(other.errors);
    }

    pub fn entries(&self) -> &[SymbolPathEntry] {
        &self.entries
    }

    pub fn errors(&self) -> &[SymbolPathError] {
        &self.errors
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

fn parse_entry(element: &str) -> Result<SymbolPathEntry, String> {
    let mut parts = element.split('*');
    let first = parts.next().unwrap_or_default();
    let rest: Vec<&str> = parts.map(str::trim).collect();
    if rest.is_empty() {
        if is_url(first) {
            return Err("a symbol server URL must follow `srv*`".to_owned());
        }
        return Ok(SymbolPathEntry::Folder(PathBuf::from(first)));
    }
    let keyword = first.trim();
    if keyword.eq_ignore_ascii_case("srv") {
        server_chain(&rest)
    } else if keyword.eq_ignore_ascii_case("symsrv") {
        match rest.split_first() {
            Some((dll, stores)) if dll.eq_ignore_ascii_case("symsrv.dll") => server_chain(stores),
            Some((dll, _)) if !dll.is_empty() => Err(format!("only symsrv.dll is supported, not `{dll}`")),
            _ => Err("`symsrv*` must name symsrv.dll".to_owned()),
        }
    } else if keyword.eq_ignore_ascii_case("cache") {
        match rest.as_slice() {
            [""] => Ok(SymbolPathEntry::Cache(Store::DefaultCache)),
            [folder] if is_url(folder) => Err("a cache must be a local folder".to_owned()),
            [folder] => Ok(SymbolPathEntry::Cache(Store::Local(PathBuf::from(folder)))),
            _ => Err("`cache*` takes one folder".to_owned()),
        }
    } else {
        Err(format!("unknown keyword `{keyword}` (expected srv, symsrv or cache)"))
    }
}

/// The stores of a `srv*` entry. `srv*` alone is what `.symfix` writes: the
/// default cache in front of Microsoft's server.
fn server_chain(elements: &[&str]) -> Result<SymbolPathEntry, String> {
    if elements.iter().all(|e| e.is_empty()) {
        return match elements.len() {
            0 | 1 => {
                Ok(SymbolPathEntry::Server(vec![Store::DefaultCache, Store::Http(MICROSOFT_SYMBOL_SERVER.to_owned())]))
            }
            _ => Err("a symbol server chain needs at least one store".to_owned()),
        };
    }
    let stores = elements
        .iter()
        .map(|element| {
            if element.is_empty() {
                Store::DefaultCache
            } else if is_url(element) {
                Store::Http(element.trim_end_matches('/').to_owned())
            } else {
                Store::Local(PathBuf::from(element))
            }
        })
        .collect();
    Ok(SymbolPathEntry::Server(stores))
}

fn is_url(text: &str) -> bool {
    let lower = text.trim().to_ascii_lowercase();
    lower.starts_with("http://") || lower.starts_with("https://")
}
