//! One opened PDB: its identity, and address look-ups through `pdb-addr2line`.

use std::fmt;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pdb_addr2line::pdb::{self, PDB, SourceSlice, SourceView};
use pdb_addr2line::{Context, ContextPdbData, TypeFormatterFlags};

use crate::id::{Guid, PdbId};
use crate::{Error, Frame};

/// A PDB file opened for reading: its identity is known, its symbol streams
/// are parsed on first use and kept for the following look-ups.
pub struct PdbFile {
    path: PathBuf,
    guid: Guid,
    age: u32,
    symbols: LoadedSymbols,
}

type PdbData = ContextPdbData<'static, 'static, BoundedFile>;
type PdbContext<'a> = Context<'a, 'static>;

// The look-up context borrows the parsed streams; keeping both in one value
// lets the symbolizer cache a PDB without leaking it.
self_cell::self_cell!(
    struct LoadedSymbols {
        owner: PdbData,
        #[not_covariant]
        dependent: PdbContext,
    }
);

/// What the PDB says it is, read before its symbols are parsed.
struct Identity {
    guid: Guid,
    age: u32,
}

impl PdbFile {
    /// Opens `path` and parses what address look-ups need.
    pub fn open(path: &Path) -> Result<Self, Error> {
        let (pdb, identity) = open_identity(path)?;
        Self::load(path, pdb, identity)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The GUID from the PDB info stream.
    pub fn guid(&self) -> Guid {
        self.guid
    }

    /// The age an image records for this PDB: the DBI stream's, or the info
    /// stream's in old PDBs that leave the DBI age zero.
    pub fn age(&self) -> u32 {
        self.age
    }

    /// Whether this is exactly the PDB `id` asks for (GUID and age; the name is
    /// not part of a build's identity).
    pub fn matches(&self, id: &PdbId) -> bool {
        self.guid == id.guid() && self.age == id.age()
    }

    /// The frames at `rva` (address minus module base), innermost inline
    /// frame first and the containing function last; `None` when no symbol
    /// covers the address.
    pub fn resolve(&self, rva: u32) -> Result<Option<Vec<Frame>>, Error> {
        let found = guarded(&self.path, || self.symbols.with_dependent(|_, context| frames_at(context, rva)))?;
        found.map_err(|source| Error::Symbols { path: self.path.clone(), source })
    }

    /// Opens `path` and parses its symbols only if it is the PDB `id` asks for.
    pub(crate) fn open_matching(path: &Path, id: &PdbId) -> Result<Result<Self, (Guid, u32)>, Error> {
        let (pdb, identity) = open_identity(path)?;
        if identity.guid != id.guid() || identity.age != id.age() {
            return Ok(Err((identity.guid, identity.age)));
        }
        Self::load(path, pdb, identity).map(Ok)
    }

    fn load(path: &Path, pdb: PDB<'static, BoundedFile>, identity: Identity) -> Result<Self, Error> {
        let symbols = guarded(path, || {
            let data = PdbData::try_from_pdb(pdb)?;
            LoadedSymbols::try_new(data, |data| data.make_context_with_formatter_flags(name_only()))
        })?
        .map_err(|source| Error::Symbols { path: path.to_owned(), source })?;
        Ok(PdbFile { path: path.to_owned(), guid: identity.guid, age: identity.age, symbols })
    }
}

impl fmt::Debug for PdbFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PdbFile").field("path", &self.path).field("guid", &self.guid).field("age", &self.age).finish()
    }
}

/// Stack views print `module!function`; argument lists would make the same
/// function look different in a private PDB and a public one.
fn name_only() -> TypeFormatterFlags {
    TypeFormatterFlags::default() | TypeFormatterFlags::NO_ARGUMENTS
}

fn open_identity(path: &Path) -> Result<(PDB<'static, BoundedFile>, Identity), Error> {
    let file = File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    let source = BoundedFile::new(file).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    let result = guarded(path, || {
        let mut pdb = PDB::open(source)?;
        let info = pdb.pdb_information()?;
        let dbi_age = pdb.debug_information()?.age();
        Ok::<_, pdb::Error>((pdb, info.guid, dbi_age.unwrap_or(info.age)))
    })?;
    let (pdb, uuid, age) = result.map_err(|source| Error::Pdb { path: path.to_owned(), source })?;
    let (data1, data2, data3, data4) = uuid.as_fields();
    Ok((pdb, Identity { guid: Guid::from_fields(data1, data2, data3, *data4), age }))
}

/// Runs parser code on file contents that may be damaged. The parsers return
/// errors for what they check, but on some damaged files they index out of
/// range or overflow (tests/damaged.rs meets both), which would otherwise
/// take down the whole trace analysis for one bad PDB.
fn guarded<T>(path: &Path, work: impl FnOnce() -> T) -> Result<T, Error> {
    catch_unwind(AssertUnwindSafe(work)).map_err(|_| Error::ParserPanic { path: path.to_owned() })
}

fn frames_at(context: &PdbContext<'_>, rva: u32) -> Result<Option<Vec<Frame>>, pdb_addr2line::Error> {
    let Some(found) = context.find_frames(rva)? else { return Ok(None) };
    // Between functions (alignment padding) the look-up falls back to the
    // public symbol before the address. When that symbol's procedure record
    // gives the function's real length, an address past it is in no function.
    if let Some(end) = context.find_function(found.start_rva)?.and_then(|f| f.end_rva)
        && rva >= end
    {
        return Ok(None);
    }
    Ok(to_frames(rva, found))
}

fn to_frames(rva: u32, found: pdb_addr2line::FunctionFrames<'_>) -> Option<Vec<Frame>> {
    let (outer, inlined) = found.frames.split_last()?;
    // A range with no name is a section contribution without a symbol:
    // naming it after a neighbour would be a guess.
    let function = demangled(outer.function.as_deref()?);
    let mut frames: Vec<Frame> = inlined
        .iter()
        .filter_map(|frame| {
            Some(Frame {
                function: demangled(frame.function.as_deref()?),
                offset: None,
                file: frame.file.as_deref().map(Arc::from),
                line: frame.line,
            })
        })
        .collect();
    frames.push(Frame {
        function,
        offset: Some(rva.wrapping_sub(found.start_rva)),
        file: outer.file.as_deref().map(Arc::from),
        line: outer.line,
    });
    Some(frames)
}

/// Public symbols of C++ functions keep their decorated form (`?Send@Request@@…`);
/// undecorate them to `Request::Send` to match what procedure records give.
fn demangled(name: &str) -> Arc<str> {
    if name.starts_with('?')
        && let Ok(plain) = msvc_demangler::demangle(name, msvc_demangler::DemangleFlags::NAME_ONLY)
    {
        return Arc::from(plain);
    }
    Arc::from(name)
}

/// A PDB file as the parser's byte source. Every requested range is checked
/// against the file's length before a buffer is allocated for it, so a
/// damaged size field yields an error instead of a huge allocation.
#[derive(Debug)]
pub(crate) struct BoundedFile {
    file: File,
    len: u64,
}

impl BoundedFile {
    fn new(file: File) -> io::Result<Self> {
        let len = file.metadata()?.len();
        Ok(BoundedFile { file, len })
    }
}

#[derive(Debug)]
struct OwnedView(Vec<u8>);

impl SourceView<'_> for OwnedView {
    fn as_slice(&self) -> &[u8] {
        &self.0
    }
}

impl<'s> pdb::Source<'s> for BoundedFile {
    fn view(&mut self, slices: &[SourceSlice]) -> io::Result<Box<dyn SourceView<'s> + Send + Sync>> {
        let mut total: u64 = 0;
        for slice in slices {
            let size = slice.size as u64;
            let end = slice.offset.checked_add(size).filter(|end| *end <= self.len);
            total = total.saturating_add(size);
            if end.is_none() || total > self.len {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "stream pages at offset {:#x} (+{:#x} bytes) reach past the end of the {}-byte file",
                        slice.offset, slice.size, self.len
                    ),
                ));
            }
        }
        // `total` is at most the file's length, checked above.
        let total =
            usize::try_from(total).map_err(|_| io::Error::new(io::ErrorKind::OutOfMemory, "stream too large"))?;
        let mut bytes = vec![0u8; total];
        let mut at = 0usize;
        for slice in slices {
            self.file.seek(SeekFrom::Start(slice.offset))?;
            self.file.read_exact(&mut bytes[at..at + slice.size])?;
            at += slice.size;
        }
        Ok(Box::new(OwnedView(bytes)))
    }
}
