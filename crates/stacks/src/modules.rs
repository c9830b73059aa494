//! Which code an address was, at a time, in a process: the modules each
//! process had loaded (kernel Image events: rundown at the trace's start and
//! end, loads and unloads), their identities from the merge
//! (KernelTraceControl ImageID: the file's own name and timestamp; DbgID_RSDS:
//! its PDB's name, GUID and age, the symbol server's key), and the CLR's
//! compiled methods (method load and rundown events), which live outside any
//! module.
//!
//! Kernel modules are logged for process 0 (or System); their addresses are
//! the same in every process.

use std::io::Read;

use nettrail_decode::fasthash::{FastMap, FastSet};
use nettrail_etl::Guid;

use crate::spill::{Spill, read_string, read_u8, read_u32, read_u64, write_str};

/// A PDB's identity: what the symbol server files it under.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PdbId {
    /// As the image names it (often a full build path).
    pub name: String,
    pub guid: Guid,
    pub age: u32,
}

/// One load of a module in a process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Module {
    pub base: u64,
    pub size: u64,
    /// The file name (`ntdll.dll`), from the kernel's path.
    pub name: String,
    /// The kernel's path (`\Device\HarddiskVolume2\Windows\System32\ntdll.dll`).
    pub path: String,
    pub time_date_stamp: Option<u32>,
    pub pdb: Option<PdbId>,
    /// Raw timestamps of the load (`None`: loaded before the trace) and unload.
    pub loaded: Option<u64>,
    pub unloaded: Option<u64>,
}

/// A compiled managed method.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Method {
    pub start: u64,
    pub size: u64,
    /// `Namespace.Type.Method`.
    pub name: String,
    pub loaded: Option<u64>,
    pub unloaded: Option<u64>,
}

/// What a scan learns of one module or method, in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Fact {
    /// With the identities logged next to it ([`Identities::attach`]).
    Loaded {
        at: u64,
        pid: u32,
        base: u64,
        size: u64,
        path: String,
        rundown: bool,
        time_date_stamp: Option<u32>,
        pdb: Option<PdbId>,
    },
    Unloaded {
        at: u64,
        pid: u32,
        base: u64,
    },
    Identity {
        at: u64,
        base: u64,
        time_date_stamp: u32,
    },
    Pdb {
        at: u64,
        base: u64,
        pdb: PdbId,
    },
    MethodLoaded {
        at: u64,
        pid: u32,
        start: u64,
        size: u64,
        name: String,
        rundown: bool,
    },
    MethodUnloaded {
        at: u64,
        pid: u32,
        start: u64,
    },
}

impl Fact {
    pub(crate) fn time(&self) -> u64 {
        match self {
            Fact::Loaded { at, .. }
            | Fact::Unloaded { at, .. }
            | Fact::MethodLoaded { at, .. }
            | Fact::MethodUnloaded { at, .. }
            | Fact::Identity { at, .. }
            | Fact::Pdb { at, .. } => *at,
        }
    }
}

/// Held in runs by time: a kind byte, then the fields in order (strings as
/// a length and UTF-8, options as a flag byte and the value).
impl Spill for Fact {
    type Key = u64;

    fn key(&self) -> u64 {
        self.time()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let u64s =
            |out: &mut Vec<u8>, values: &[u64]| values.iter().for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        let pdb_id = |out: &mut Vec<u8>, pdb: &PdbId| {
            write_str(out, &pdb.name);
            out.extend_from_slice(&pdb.guid.to_bytes_le());
            out.extend_from_slice(&pdb.age.to_le_bytes());
        };
        match self {
            Fact::Loaded { at, pid, base, size, path, rundown, time_date_stamp, pdb } => {
                out.push(0);
                u64s(out, &[*at, u64::from(*pid), *base, *size]);
                write_str(out, path);
                out.push(u8::from(*rundown));
                out.push(u8::from(time_date_stamp.is_some()));
                out.extend_from_slice(&time_date_stamp.unwrap_or(0).to_le_bytes());
                out.push(u8::from(pdb.is_some()));
                if let Some(pdb) = pdb {
                    pdb_id(out, pdb);
                }
            }
            Fact::Unloaded { at, pid, base } => {
                out.push(1);
                u64s(out, &[*at, u64::from(*pid), *base]);
            }
            Fact::Identity { at, base, time_date_stamp } => {
                out.push(2);
                u64s(out, &[*at, *base, u64::from(*time_date_stamp)]);
            }
            Fact::Pdb { at, base, pdb } => {
                out.push(3);
                u64s(out, &[*at, *base]);
                pdb_id(out, pdb);
            }
            Fact::MethodLoaded { at, pid, start, size, name, rundown } => {
                out.push(4);
                u64s(out, &[*at, u64::from(*pid), *start, *size]);
                write_str(out, name);
                out.push(u8::from(*rundown));
            }
            Fact::MethodUnloaded { at, pid, start } => {
                out.push(5);
                u64s(out, &[*at, u64::from(*pid), *start]);
            }
        }
    }

    fn decode(input: &mut impl Read) -> std::io::Result<Fact> {
        fn pdb_id(input: &mut impl Read) -> std::io::Result<PdbId> {
            let name = read_string(input)?;
            let mut guid = [0; 16];
            input.read_exact(&mut guid)?;
            Ok(PdbId { name, guid: Guid::from_bytes_le(guid), age: read_u32(input)? })
        }
        let kind = read_u8(input)?;
        let at = read_u64(input)?;
        Ok(match kind {
            0 => {
                let (pid, base, size) = (read_u64(input)? as u32, read_u64(input)?, read_u64(input)?);
                let (path, rundown) = (read_string(input)?, read_u8(input)? != 0);
                let (has_stamp, stamp) = (read_u8(input)? != 0, read_u32(input)?);
                let pdb = if read_u8(input)? != 0 { Some(pdb_id(input)?) } else { None };
                Fact::Loaded { at, pid, base, size, path, rundown, time_date_stamp: has_stamp.then_some(stamp), pdb }
            }
            1 => Fact::Unloaded { at, pid: read_u64(input)? as u32, base: read_u64(input)? },
            2 => Fact::Identity { at, base: read_u64(input)?, time_date_stamp: read_u64(input)? as u32 },
            3 => Fact::Pdb { at, base: read_u64(input)?, pdb: pdb_id(input)? },
            4 => {
                let (pid, start, size) = (read_u64(input)? as u32, read_u64(input)?, read_u64(input)?);
                let (name, rundown) = (read_string(input)?, read_u8(input)? != 0);
                Fact::MethodLoaded { at, pid, start, size, name, rundown }
            }
            5 => Fact::MethodUnloaded { at, pid: read_u64(input)? as u32, start: read_u64(input)? },
            _ => return Err(std::io::ErrorKind::InvalidData.into()),
        })
    }
}

/// A module load or unload as counting needs it (`nettrail info`): no path,
/// a fifth of a [`Fact`]'s size, so that a trace of many loads sorts fast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LoadMark {
    pub(crate) at: u64,
    pub(crate) base: u64,
    /// The module's size (0 for an unload).
    size: u64,
    pub(crate) pid: u32,
    unload: bool,
    /// A DbgID_RSDS record of the same buffer names the load's PDB.
    pub(crate) pdb: bool,
}

impl LoadMark {
    pub(crate) fn load(at: u64, base: u64, size: u64, pid: u32) -> LoadMark {
        LoadMark { at, base, size, pid, unload: false, pdb: false }
    }

    pub(crate) fn unload(at: u64, base: u64, pid: u32) -> LoadMark {
        LoadMark { at, base, size: 0, pid, unload: true, pdb: false }
    }

    /// The loaded module's size; `None` for an unload.
    pub(crate) fn size(&self) -> Option<u64> {
        (!self.unload).then_some(self.size)
    }
}

/// Held in runs by module, then time: time, base, size, process, whether
/// an unload, whether a PDB is known.
impl Spill for LoadMark {
    type Key = (u32, u64, u64);

    fn key(&self) -> (u32, u64, u64) {
        (self.pid, self.base, self.at)
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.at.to_le_bytes());
        out.extend_from_slice(&self.base.to_le_bytes());
        out.extend_from_slice(&self.size.to_le_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        out.push(u8::from(self.unload) | u8::from(self.pdb) << 1);
    }

    fn decode(input: &mut impl Read) -> std::io::Result<LoadMark> {
        let (at, base, size) = (read_u64(input)?, read_u64(input)?, read_u64(input)?);
        let (pid, flags) = (read_u32(input)?, read_u8(input)?);
        Ok(LoadMark { at, base, size, pid, unload: flags & 1 != 0, pdb: flags & 2 != 0 })
    }
}

/// Loads, PDB identities and methods counted without keeping them.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    loads: usize,
    with_pdbs: usize,
    methods: usize,
}

impl Counted {
    /// The loads among `marks` (sorted by process, base and time; records
    /// of one time in file order) that [`Modules::build`] would keep (a load
    /// repeating one still open, as the closing rundown does, is not a new
    /// one), how many of them have a PDB (marked, or among the `identities`
    /// not met in the load's buffer), and `methods`.
    pub(crate) fn of(marks: impl Iterator<Item = LoadMark>, identities: &Identities, methods: usize) -> Counted {
        let mut counted = Counted { methods, ..Counted::default() };
        // Each (process, base) in time order on its own: its loads and unloads
        // are all that decide whether a load repeats one still open.
        let mut open: Option<(u32, u64, u64)> = None;
        for mark in marks {
            let LoadMark { at, base, pid, pdb, .. } = mark;
            let open_size = open.filter(|&(p, b, _)| (p, b) == (pid, base)).map(|(_, _, size)| size);
            match mark.size() {
                Some(size) => {
                    if open_size != Some(size) {
                        counted.loads += 1;
                        counted.with_pdbs += usize::from(pdb || identities.pdbs.contains_key(&(at, base)));
                    }
                    open = Some((pid, base, size));
                }
                None => open = None,
            }
        }
        counted
    }
}

/// The file name of a kernel path.
fn file_name(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

/// Entries of one process sorted by start address, with their lifetimes.
#[derive(Debug)]
struct Ranges<T> {
    items: Vec<T>,
}

impl<T> Default for Ranges<T> {
    fn default() -> Self {
        Ranges { items: Vec::new() }
    }
}

trait Span {
    fn start(&self) -> u64;
    fn len(&self) -> u64;
    fn alive(&self, at: u64) -> bool;
}

impl Span for Module {
    fn start(&self) -> u64 {
        self.base
    }
    fn len(&self) -> u64 {
        self.size
    }
    fn alive(&self, at: u64) -> bool {
        self.loaded.is_none_or(|l| l <= at) && self.unloaded.is_none_or(|u| u > at)
    }
}

impl Span for Method {
    fn start(&self) -> u64 {
        self.start
    }
    fn len(&self) -> u64 {
        self.size
    }
    fn alive(&self, at: u64) -> bool {
        self.loaded.is_none_or(|l| l <= at) && self.unloaded.is_none_or(|u| u > at)
    }
}

impl<T: Span> Ranges<T> {
    fn sort(&mut self) {
        self.items.sort_by_key(|m| m.start());
    }

    /// The entry holding `address` at `at`: one alive then, else the last
    /// one that held it (a rundown may miss a load's exact time).
    fn find(&self, address: u64, at: u64) -> Option<&T> {
        let end = self.items.partition_point(|m| m.start() <= address);
        // Reloads at one base sit together; a few steps back cover them.
        let holding = || self.items[..end].iter().rev().take(64).filter(|m| address - m.start() < m.len().max(1));
        holding().find(|m| m.alive(at)).or_else(|| holding().next())
    }
}

/// Module identities (ImageID's file stamp, DbgID_RSDS's PDB) by the time
/// and base of the load they describe: a scan's, until they are put on
/// their load ([`Identities::attach`]), then those not met next to it.
#[derive(Debug, Default)]
pub(crate) struct Identities {
    pub(crate) stamps: FastMap<(u64, u64), u32>,
    pub(crate) pdbs: FastMap<(u64, u64), PdbId>,
}

impl Identities {
    /// Takes an identity fact (the last one logged for a load wins); gives back any other fact.
    pub(crate) fn take(&mut self, fact: Fact) -> Option<Fact> {
        match fact {
            Fact::Identity { at, base, time_date_stamp } => {
                self.stamps.insert((at, base), time_date_stamp);
                None
            }
            Fact::Pdb { at, base, pdb } => {
                self.pdbs.insert((at, base), pdb);
                None
            }
            f => Some(f),
        }
    }

    /// Puts the identities on the loads of one buffer's `facts` and `marks`
    /// with their time and base (the merge logs them next to the load), and
    /// keeps only those put on none, for [`Modules::build`] and
    /// [`Counted::of`] to find by time and base.
    pub(crate) fn attach(&mut self, facts: &mut [Fact], marks: &mut [LoadMark]) {
        if self.stamps.is_empty() && self.pdbs.is_empty() {
            return;
        }
        let (mut stamped, mut identified) = (FastSet::default(), FastSet::default());
        for f in facts.iter_mut() {
            if let Fact::Loaded { at, base, time_date_stamp, pdb, .. } = f {
                let load = (*at, *base);
                if let Some(&stamp) = self.stamps.get(&load) {
                    *time_date_stamp = Some(stamp);
                    stamped.insert(load);
                }
                if let Some(id) = self.pdbs.get(&load) {
                    *pdb = Some(id.clone());
                    identified.insert(load);
                }
            }
        }
        for mark in marks.iter_mut().filter(|m| !m.unload) {
            if self.pdbs.contains_key(&(mark.at, mark.base)) {
                mark.pdb = true;
                identified.insert((mark.at, mark.base));
            }
        }
        self.stamps.retain(|load, _| !stamped.contains(load));
        self.pdbs.retain(|load, _| !identified.contains(load));
    }

    /// Adds those of the buffers that follow (theirs win, as logged later).
    pub(crate) fn extend(&mut self, later: Identities) {
        self.stamps.extend(later.stamps);
        self.pdbs.extend(later.pdbs);
    }
}

/// Modules and methods of every process.
#[derive(Debug, Default)]
pub struct Modules {
    processes: FastMap<u32, Ranges<Module>>,
    kernel: Ranges<Module>,
    methods: FastMap<u32, Ranges<Method>>,
    /// What a counting scan counted without keeping.
    counted: Counted,
    kernel_boundary: u64,
}

impl Modules {
    /// Adds `n` method loads to those a counting scan counted.
    pub(crate) fn add_counted_methods(&mut self, n: usize) {
        self.counted.methods += n;
    }

    /// Builds the map from the facts of a scan, given in time order (equal
    /// times in file order), with the identities not attached to their load
    /// ([`Identities::attach`]) by time and base, and what a counting scan
    /// `counted` and did not keep.
    pub(crate) fn build(
        timeline: impl Iterator<Item = Fact>,
        identities: &Identities,
        kernel_boundary: u64,
        counted: Counted,
    ) -> Modules {
        let mut m = Modules { kernel_boundary, counted, ..Modules::default() };
        // Open loads by (pid, base), to close at their unload; open methods by (pid, start).
        let mut open: FastMap<(u32, u64), (bool, usize)> = FastMap::default();
        let mut open_methods: FastMap<(u32, u64), usize> = FastMap::default();
        for f in timeline {
            match f {
                Fact::Loaded { at, pid, base, size, path, rundown, time_date_stamp, pdb } => {
                    let kernel = base >= kernel_boundary;
                    let list = if kernel { &mut m.kernel } else { m.processes.entry(pid).or_default() };
                    // The rundown at the end repeats what is loaded: not a new load.
                    if let Some(&(k, i)) = open.get(&(pid, base))
                        && k == kernel
                        && list.items.get(i).is_some_and(|x: &Module| x.size == size && x.unloaded.is_none())
                    {
                        continue;
                    }
                    list.items.push(Module {
                        base,
                        size,
                        name: file_name(&path).to_string(),
                        path,
                        time_date_stamp: time_date_stamp.or_else(|| identities.stamps.get(&(at, base)).copied()),
                        pdb: pdb.or_else(|| identities.pdbs.get(&(at, base)).cloned()),
                        loaded: (!rundown).then_some(at),
                        unloaded: None,
                    });
                    open.insert((pid, base), (kernel, list.items.len() - 1));
                }
                Fact::Unloaded { at, pid, base } => {
                    if let Some((kernel, i)) = open.remove(&(pid, base)) {
                        let list = if kernel { Some(&mut m.kernel) } else { m.processes.get_mut(&pid) };
                        if let Some(module) = list.and_then(|l| l.items.get_mut(i)) {
                            module.unloaded = Some(at);
                        }
                    }
                }
                Fact::MethodLoaded { at, pid, start, size, name, rundown } => {
                    m.counted.methods += 1;
                    let list = m.methods.entry(pid).or_default();
                    // A rundown repeats the methods still compiled: not a new one.
                    if rundown
                        && let Some(&i) = open_methods.get(&(pid, start))
                        && list.items.get(i).is_some_and(|x: &Method| x.size == size && x.name == name)
                    {
                        continue;
                    }
                    list.items.push(Method { start, size, name, loaded: (!rundown).then_some(at), unloaded: None });
                    open_methods.insert((pid, start), list.items.len() - 1);
                }
                Fact::MethodUnloaded { at, pid, start } => {
                    if let Some(i) = open_methods.remove(&(pid, start))
                        && let Some(method) = m.methods.get_mut(&pid).and_then(|l| l.items.get_mut(i))
                    {
                        method.unloaded = Some(at);
                    }
                }
                Fact::Identity { .. } | Fact::Pdb { .. } => {}
            }
        }
        m.kernel.sort();
        m.processes.values_mut().for_each(Ranges::sort);
        m.methods.values_mut().for_each(Ranges::sort);
        m
    }

    /// The module an address of process `pid` was in at raw time `at`.
    /// Images mapped system-wide (the WOW64 ntdll) are logged for System or
    /// process 0 only: they answer for every process.
    pub fn module(&self, pid: u32, address: u64, at: u64) -> Option<&Module> {
        if address >= self.kernel_boundary {
            return self.kernel.find(address, at);
        }
        [pid, 4, 0].iter().find_map(|p| self.processes.get(p)?.find(address, at))
    }

    /// The managed method an address of process `pid` was in at `at`.
    pub fn method(&self, pid: u32, address: u64, at: u64) -> Option<&Method> {
        self.methods.get(&pid)?.find(address, at)
    }

    /// How many modules (kernel and processes') and methods are known.
    pub fn counts(&self) -> (usize, usize) {
        let modules = self.kernel.items.len() + self.processes.values().map(|r| r.items.len()).sum::<usize>();
        (
            self.counted.loads + modules,
            // Every load and rundown of a method, as a counting scan counts them.
            self.counted.methods,
        )
    }

    /// How many modules have a PDB identity (what symbol loading needs).
    pub fn with_pdbs(&self) -> usize {
        let kept = self.kernel.items.iter().chain(self.processes.values().flat_map(|r| r.items.iter()));
        self.counted.with_pdbs + kept.filter(|m| m.pdb.is_some()).count()
    }
}
