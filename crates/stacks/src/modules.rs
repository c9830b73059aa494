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

use nettrail_decode::fasthash::{FastMap, FastSet};
use nettrail_etl::Guid;

use crate::spill::{self, Spill};

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
    Loaded { at: u64, pid: u32, base: u64, size: u64, path: String, rundown: bool },
    Unloaded { at: u64, pid: u32, base: u64 },
    Identity { at: u64, base: u64, time_date_stamp: u32 },
    Pdb { at: u64, base: u64, pdb: PdbId },
    MethodLoaded { at: u64, pid: u32, start: u64, size: u64, name: String, rundown: bool },
    MethodUnloaded { at: u64, pid: u32, start: u64 },
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

/// A module load or unload as counting needs it (`nettrail info`): no path,
/// a quarter of a [`Fact`]'s size, so that a trace of many loads sorts fast.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoadMark {
    pub(crate) at: u64,
    pub(crate) base: u64,
    /// `None` for an unload.
    pub(crate) size: Option<u64>,
    pub(crate) pid: u32,
    /// A DbgID_RSDS record of the same buffer names the load's PDB.
    pub(crate) pdb: bool,
}

/// Held in runs by module, then time: time, base, size (`u64::MAX` for an
/// unload), process, whether a PDB is known.
impl Spill for LoadMark {
    type Key = (u32, u64, u64);
    const SIZE: usize = 8 + 8 + 8 + 4 + 1;

    fn key(&self) -> (u32, u64, u64) {
        (self.pid, self.base, self.at)
    }

    fn encode(&self, b: &mut [u8]) {
        b[..8].copy_from_slice(&self.at.to_le_bytes());
        b[8..16].copy_from_slice(&self.base.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.unwrap_or(u64::MAX).to_le_bytes());
        b[24..28].copy_from_slice(&self.pid.to_le_bytes());
        b[28] = u8::from(self.pdb);
    }

    fn decode(b: &[u8]) -> LoadMark {
        let size = spill::u64_at(b, 16);
        LoadMark {
            at: spill::u64_at(b, 0),
            base: spill::u64_at(b, 8),
            size: (size != u64::MAX).then_some(size),
            pid: spill::u32_at(b, 24),
            pdb: b[28] != 0,
        }
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
    /// one), how many of them have a PDB (marked, or in `pdbs`: time and
    /// base of DbgID_RSDS records not met in the load's buffer), and `methods`.
    pub(crate) fn of(marks: impl Iterator<Item = LoadMark>, pdbs: &FastSet<(u64, u64)>, methods: usize) -> Counted {
        let mut counted = Counted { methods, ..Counted::default() };
        // Each (process, base) in time order on its own: its loads and unloads
        // are all that decide whether a load repeats one still open.
        let mut open: Option<(u32, u64, u64)> = None;
        for LoadMark { at, base, size, pid, pdb } in marks {
            let open_size = open.filter(|&(p, b, _)| (p, b) == (pid, base)).map(|(_, _, size)| size);
            match size {
                Some(size) => {
                    if open_size != Some(size) {
                        counted.loads += 1;
                        counted.with_pdbs += usize::from(pdb || pdbs.contains(&(at, base)));
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
    /// Builds the map from the facts of a scan (any order), with what a
    /// counting scan `counted` and did not keep.
    pub(crate) fn build(facts: impl IntoIterator<Item = Fact>, kernel_boundary: u64, counted: Counted) -> Modules {
        let mut m = Modules { kernel_boundary, counted, ..Modules::default() };
        // The merge logs a module's identity with the timestamp of the load
        // or rundown event it describes (its process id is often 0): found
        // by that time, so only the other facts need sorting.
        let mut identities: FastMap<(u64, u64), u32> = FastMap::default();
        let mut pdbs: FastMap<(u64, u64), PdbId> = FastMap::default();
        let mut timeline = Vec::new();
        for f in facts {
            match f {
                Fact::Identity { at, base, time_date_stamp } => {
                    identities.insert((at, base), time_date_stamp);
                }
                Fact::Pdb { at, base, pdb } => {
                    pdbs.insert((at, base), pdb);
                }
                f => timeline.push(f),
            }
        }
        timeline.sort_by_key(Fact::time);
        // Open loads by (pid, base), to close at their unload.
        let mut open: FastMap<(u32, u64), (bool, usize)> = FastMap::default();
        for f in timeline {
            match f {
                Fact::Loaded { at, pid, base, size, path, rundown } => {
                    let kernel = base >= kernel_boundary;
                    let list = if kernel { &mut m.kernel } else { m.processes.entry(pid).or_default() };
                    // The rundown at the end repeats what is loaded: not a new load.
                    if let Some(&(k, i)) = open.get(&(pid, base))
                        && k == kernel
                        && list.items.get(i).is_some_and(|x: &Module| x.size == size && x.unloaded.is_none())
                    {
                        continue;
                    }
                    let pdb = pdbs.get(&(at, base)).cloned();
                    list.items.push(Module {
                        base,
                        size,
                        name: file_name(&path).to_string(),
                        path,
                        time_date_stamp: identities.get(&(at, base)).copied(),
                        pdb,
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
                    let list = m.methods.entry(pid).or_default();
                    list.items.push(Method { start, size, name, loaded: (!rundown).then_some(at), unloaded: None });
                }
                Fact::MethodUnloaded { at, pid, start } => {
                    if let Some(method) = m
                        .methods
                        .get_mut(&pid)
                        .and_then(|l| l.items.iter_mut().rev().find(|x| x.start == start && x.unloaded.is_none()))
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
            self.counted.methods + self.methods.values().map(|r| r.items.len()).sum::<usize>(),
        )
    }

    /// How many modules have a PDB identity (what symbol loading needs).
    pub fn with_pdbs(&self) -> usize {
        let kept = self.kernel.items.iter().chain(self.processes.values().flat_map(|r| r.items.iter()));
        self.counted.with_pdbs + kept.filter(|m| m.pdb.is_some()).count()
    }
}
