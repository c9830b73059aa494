//! Function names in stacks: `--symbols PATH` (repeatable, in the syntax
//! Windows debuggers take) and `_NT_SYMBOL_PATH`, looked up through
//! `nettrail-symbols` for every module whose PDB identity the trace records.

use std::path::PathBuf;
use std::sync::Mutex;

use nettrail_stacks::{Module, Symbols};
use nettrail_symbols::{Frame, Guid, PdbId, PdbState, SymbolPath, Symbolizer};

#[derive(clap::Args, Debug, Clone, Default)]
pub struct SymbolArgs {
    /// Where PDBs are: folders, symbol stores, `srv*CACHE*https://…` (repeatable;
    /// added to _NT_SYMBOL_PATH). A symbol server on the path is asked for what no folder has
    /// when nettrail was built with the `download` feature.
    #[arg(long = "symbols", value_name = "PATH")]
    paths: Vec<String>,
}

/// PDB lookups behind the stack renderer's [`Symbols`]; without a symbol
/// path, frames stay `module+offset`.
#[derive(Debug)]
pub struct Pdbs {
    symbolizer: Option<Mutex<Symbolizer>>,
}

impl Pdbs {
    /// The symbol path of the command line and the environment.
    pub fn new(args: &SymbolArgs) -> Pdbs {
        Pdbs { symbolizer: Self::symbolizer(args).map(Mutex::new) }
    }

    fn symbolizer(args: &SymbolArgs) -> Option<Symbolizer> {
        let mut path = SymbolPath::from_env();
        for p in &args.paths {
            path.append(p);
        }
        for e in path.errors() {
            say!("symbol path entry {:?} ignored: {}", e.entry, e.reason);
        }
        if path.is_empty() {
            return None;
        }
        let mut symbolizer = Symbolizer::new(path);
        if let Some(cache) = default_cache() {
            symbolizer = symbolizer.with_default_cache(cache);
        }
        #[cfg(feature = "download")]
        {
            symbolizer = symbolizer.with_downloads(true);
        }
        quiet_pdb_parser_panics();
        Some(symbolizer)
    }

    /// One line on stderr: how many PDBs were found, and which were not.
    pub fn summary(&self) {
        let Some(symbolizer) = &self.symbolizer else { return };
        let symbolizer = symbolizer.lock().unwrap_or_else(|e| e.into_inner());
        let reports = symbolizer.reports();
        if reports.is_empty() {
            return;
        }
        let named = |state: PdbState| -> Vec<&str> {
            reports.iter().filter(|r| r.state() == state).map(|r| r.id.name()).collect()
        };
        let found = named(PdbState::Found);
        let mut line = format!("nettrail: symbols: {} of {} PDBs found", found.len(), reports.len());
        for (state, what) in [
            (PdbState::Mismatched, "another build's PDB"),
            (PdbState::Unreadable, "unreadable"),
            (PdbState::Missing, "not found"),
        ] {
            let names = named(state);
            if !names.is_empty() {
                let shown: Vec<&str> = names.iter().copied().take(8).collect();
                let more = if names.len() > shown.len() { ", …" } else { "" };
                line.push_str(&format!("; {what}: {}{more}", shown.join(", ")));
            }
        }
        eprintln!("{}", nettrail_decode::safe_text::visible(&line));
    }
}

impl Symbols for Pdbs {
    fn functions(&self, module: &Module, rva: u64) -> Vec<String> {
        let (Some(symbolizer), Some(pdb), Ok(rva)) = (&self.symbolizer, &module.pdb, u32::try_from(rva)) else {
            return Vec::new();
        };
        let g = pdb.guid;
        let id = PdbId::new(&pdb.name, Guid::from_fields(g.data1, g.data2, g.data3, g.data4), pdb.age);
        let frames = symbolizer.lock().unwrap_or_else(|e| e.into_inner()).resolve(&id, rva);
        frames.map_or_else(Vec::new, |frames| frames.iter().map(render).collect())
    }
}

/// `checksum+0x20 (fixture.c:18)`; an inlined function has no offset of its own.
fn render(f: &Frame) -> String {
    let mut s = f.function.to_string();
    match f.offset {
        Some(o) => s.push_str(&format!("+{o:#x}")),
        None => s.push_str(" [inlined]"),
    }
    if let (Some(file), Some(line)) = (&f.file, f.line) {
        let name = file.rsplit(['\\', '/']).next().unwrap_or(file);
        s.push_str(&format!(" ({name}:{line})"));
    }
    s
}

/// Where `srv*` without a folder keeps downloads: the user's cache folder.
fn default_cache() -> Option<PathBuf> {
    let base = if cfg!(windows) {
        std::env::var_os("LOCALAPPDATA").map(PathBuf::from)
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
    };
    Some(base?.join("nettrail").join("symbols"))
}

/// The PDB parser panics on some damaged files; `nettrail-symbols` catches
/// that and reports the file, so the default hook's message is only noise.
fn quiet_pdb_parser_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let in_pdb_parser =
            info.location().is_some_and(|l| l.file().contains("pdb2-") || l.file().contains("pdb-addr2line-"));
        if !in_pdb_parser {
            default(info);
        }
    }));
}
