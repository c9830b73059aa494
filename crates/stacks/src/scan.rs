//! One parallel pass over a trace's buffers (order does not matter: what is
//! found is sorted by time afterwards) collecting stack records, module
//! loads and identities, and managed method loads.

use std::sync::{Arc, Mutex};

use nettrail_decode::fasthash::FastMap;
use nettrail_decode::{EventSchema, LookupCache, Schemas, Value};
use nettrail_etl::{Guid, Record, Releaser, Trace};
use rayon::prelude::*;

use crate::modules::{Counted, Fact, Identities, LoadMark, Modules, PdbId};
use crate::spill::{self, RUN_ITEMS, SortedRuns};
use crate::stacks::{Definition, Holds, Part, STACK_WALK, StackRecord, Stacks, kernel_boundary, read_part};

const IMAGE: Guid = Guid::parse_const("2cb15d1d-5fc1-11d2-abe1-00a0c911f518");
const PROCESS: Guid = Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c");
const IMAGE_ID: Guid = Guid::parse_const("b3e675d7-2554-4f18-830b-2762732560de");
const CLR: Guid = Guid::parse_const("e13c0d23-ccbc-4e12-931b-d9cc2eee27e4");
const CLR_RUNDOWN: Guid = Guid::parse_const("a669021c-c450-4609-a035-5af59af4df18");

/// What a trace says about code: stacks and where their addresses point.
#[derive(Debug, Default)]
pub struct Code {
    pub stacks: Stacks,
    pub modules: Modules,
    /// Records the join held in temporary files and could not read back
    /// (0 unless the disk failed): their stacks or module loads are missing.
    pub unread: usize,
}

impl Code {
    /// Adds method loads counted apart from the scans the join took (a
    /// count that read some events again, with other schemas).
    pub fn add_methods(&mut self, methods: MethodCounts) {
        self.modules.add_counted_methods(methods.0.iter().sum());
    }
}

/// What one buffer says about code, record by record, in file order.
/// [`scan`] reads buffers for this alone; a pass that decodes every record
/// anyway (`nettrail info`, counting what decodes) adds them to its own, so
/// the trace is read once. A [`CodeJoin`] puts the buffers together.
pub struct BufferScan<'w> {
    wanted: &'w (dyn Fn(u32) -> bool + Sync),
    parts: Vec<Part>,
    definitions: Vec<Definition>,
    arena: Vec<u64>,
    facts: Vec<Fact>,
    /// Whether modules' paths and methods' names are read, and method loads
    /// and module identities kept (not for counting: then module loads are
    /// kept as marks, PDB identities by time and base, method loads counted).
    names: bool,
    marks: Vec<LoadMark>,
    /// Module identities of the buffer, then those not met next to their load.
    identities: Identities,
    methods_counted: MethodCounts,
    /// Where the fields [`fact`] reads sit, for the last few layouts.
    layouts: Vec<FieldIndex>,
    /// Where the parts' frames are kept, once per distinct list (`arena`
    /// only holds a record's frames while they are read).
    shared: &'w FrameTable,
}

/// The distinct frame lists of a scan's buffers, each kept once: a long
/// trace repeats a few thousand stacks millions of times, and keeping every
/// record's frames made memory grow with the trace (`info`: 1.4 GB on a
/// 1 GB compressed trace). The buffers' parts refer to ranges in it.
#[derive(Debug, Default)]
pub struct FrameTable {
    inner: Mutex<FrameLists>,
}

#[derive(Debug, Default)]
struct FrameLists {
    frames: Vec<u64>,
    /// The ranges of the lists in `frames`, by a hash of their frames.
    by_hash: FastMap<u64, Vec<(u32, u32)>>,
}

impl FrameTable {
    /// The range of `frames` in the table, adding them if they are new.
    fn intern(&self, frames: &[u64]) -> (u32, u32) {
        let hash = frames
            .iter()
            .fold(0xcbf2_9ce4_8422_2325u64 ^ frames.len() as u64, |h, &f| (h ^ f).wrapping_mul(0x0100_0000_01b3));
        let mut lists = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let FrameLists { frames: all, by_hash } = &mut *lists;
        let ranges = by_hash.entry(hash).or_default();
        if let Some(&range) = ranges.iter().find(|(a, b)| all[*a as usize..*b as usize] == *frames) {
            return range;
        }
        // Distinct frames: a trace would need 32 GB of distinct stacks to pass u32.
        let range = (all.len() as u32, (all.len() + frames.len()) as u32);
        all.extend_from_slice(frames);
        ranges.push(range);
        range
    }

    /// Takes the frames out (the table is left empty).
    fn take_frames(&self) -> Vec<u64> {
        let mut lists = self.inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        lists.by_hash = FastMap::default();
        std::mem::take(&mut lists.frames)
    }
}

/// The fields a module or method fact is made of.
#[derive(Clone, Copy)]
enum FactField {
    ProcessId,
    Base,
    ImageBase,
    Size,
    Path,
    TimeDateStamp,
    GuidSig,
    PdbFileName,
    Age,
    MethodStartAddress,
    MethodSize,
    MethodNamespace,
    MethodName,
}

/// The field names each [`FactField`] goes by, in its order.
const NAMES: [&[&str]; 13] = [
    &["ProcessId"],
    &["ImageBase", "BaseAddress"],
    &["ImageBase"],
    &["ImageSize", "ModuleSize"],
    &["FileName", "ImageFileName"],
    &["TimeDateStamp"],
    &["GuidSig"],
    &["PdbFileName"],
    &["Age"],
    &["MethodStartAddress"],
    &["MethodSize"],
    &["MethodNamespace"],
    &["MethodName"],
];

/// Where each [`FactField`] is in one layout's fields (looked up once per layout,
/// not per record: a trace has thousands of module and method records).
struct FieldIndex {
    /// The layout (held, so that no other takes its place while cached).
    schema: Arc<EventSchema>,
    at: [Option<u16>; NAMES.len()],
    /// How many of the layout's first fields hold every field a counting
    /// scan reads (not a module's path or a method's names, which most often
    /// end a layout and take most of its decoding).
    counted_prefix: usize,
}

/// The fields a counting scan reads (a PDB's name only for being there).
const COUNTED: [FactField; 9] = [
    FactField::ProcessId,
    FactField::Base,
    FactField::ImageBase,
    FactField::Size,
    FactField::GuidSig,
    FactField::PdbFileName,
    FactField::Age,
    FactField::MethodStartAddress,
    FactField::MethodSize,
];

impl FieldIndex {
    fn new(schema: &Arc<EventSchema>) -> FieldIndex {
        let at = NAMES.map(|names| {
            schema.fields.iter().position(|f| names.contains(&f.name.as_str())).and_then(|i| u16::try_from(i).ok())
        });
        let counted_prefix = COUNTED.iter().filter_map(|&f| at[f as usize]).map(|i| usize::from(i) + 1).max();
        FieldIndex { schema: schema.clone(), at, counted_prefix: counted_prefix.unwrap_or(0) }
    }
}

impl std::fmt::Debug for BufferScan<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferScan").field("parts", &self.parts.len()).field("facts", &self.facts.len()).finish()
    }
}

impl<'w> BufferScan<'w> {
    /// `wanted(pid)` says whose stacks to keep (see [`scan`]); frames are
    /// kept in `shared`, one table for all the buffers joined together.
    pub fn new(wanted: &'w (dyn Fn(u32) -> bool + Sync), shared: &'w FrameTable) -> Self {
        BufferScan {
            wanted,
            parts: Vec::new(),
            definitions: Vec::new(),
            arena: Vec::new(),
            facts: Vec::new(),
            names: true,
            marks: Vec::new(),
            identities: Identities::default(),
            methods_counted: MethodCounts::default(),
            layouts: Vec::new(),
            shared,
        }
    }

    /// A scan for counting stacks, modules and methods (`nettrail info`):
    /// modules' paths and methods' names are left empty, not read.
    pub fn counting(wanted: &'w (dyn Fn(u32) -> bool + Sync), shared: &'w FrameTable) -> Self {
        BufferScan { names: false, ..BufferScan::new(wanted, shared) }
    }

    fn field_index(&mut self, schema: &Arc<EventSchema>) -> usize {
        if let Some(i) = self.layouts.iter().position(|l| Arc::ptr_eq(&l.schema, schema)) {
            return i;
        }
        if self.layouts.len() >= 8 {
            self.layouts.remove(0);
        }
        self.layouts.push(FieldIndex::new(schema));
        self.layouts.len() - 1
    }

    /// The buffer is scanned: frees what the join does not need (the
    /// scratch frames, the layouts' field positions, spare room: a long
    /// trace has hundreds of thousands of buffers, all kept until the join).
    pub fn done(&mut self) {
        // A load's identities are logged next to it: put on the load, they
        // are not kept apart.
        self.identities.attach(&mut self.facts, &mut self.marks);
        // Sorted here, on the scan's thread, for the join to merge.
        spill::sort(&mut self.parts);
        spill::sort(&mut self.facts);
        spill::sort(&mut self.marks);
        self.arena = Vec::new();
        self.layouts = Vec::new();
        self.parts.shrink_to_fit();
        self.facts.shrink_to_fit();
        self.marks.shrink_to_fit();
    }

    /// Whether [`BufferScan::add`] needs this record decoded: a module or
    /// method record (stack records are read straight from the payload).
    pub fn needs_decoding(record: &Record<'_>) -> bool {
        match record.provider {
            IMAGE | IMAGE_ID => true,
            CLR | CLR_RUNDOWN => BufferScan::reads(&record.provider, record.id),
            PROCESS => record.opcode == 10,
            _ => false,
        }
    }

    /// Whether [`BufferScan::add`] takes anything from events of this
    /// provider and id: a pass can step over the others unread.
    pub fn reads(provider: &Guid, id: u16) -> bool {
        match *provider {
            STACK_WALK | IMAGE | IMAGE_ID | PROCESS => true,
            // Method loads (143; 144 in rundown) and unloads (142, 144).
            CLR => matches!(id, 142..=144),
            CLR_RUNDOWN => matches!(id, 143 | 144),
            _ => false,
        }
    }

    /// For a counting scan, the values [`BufferScan::add`] reads of a record
    /// that decodes with `schema`, decoded into `values` (cleared first):
    /// only the fields before a path or names, and only of the records
    /// counted (module loads and unloads, PDB identities, method loads).
    /// `false` when the scan reads none of this record.
    pub fn decode_counted<'a>(
        &mut self,
        schema: &Arc<EventSchema>,
        record: &Record<'a>,
        values: &mut Vec<Value<'a>>,
    ) -> bool {
        let counted = match record.provider {
            IMAGE_ID => record.opcode == 36,
            CLR => record.id == 143,
            CLR_RUNDOWN => matches!(record.id, 143 | 144),
            _ => Self::needs_decoding(record),
        };
        if !counted {
            return false;
        }
        let index = self.field_index(schema);
        let fields = schema.fields.get(..self.layouts[index].counted_prefix).unwrap_or_default();
        values.clear();
        nettrail_decode::payload::decode(fields, record.payload, record.pointer_size, values).is_ok()
    }

    /// The method loads this counting scan counted.
    pub fn methods_counted(&self) -> MethodCounts {
        self.methods_counted
    }

    /// Takes the record's stack part or module or method fact, if it has one;
    /// `decoded` is its schema and values, if it decoded (needed only where
    /// [`BufferScan::needs_decoding`]).
    pub fn add(&mut self, record: &Record<'_>, decoded: Option<(&Arc<EventSchema>, &[Value<'_>])>) {
        let arena_len = self.arena.len();
        if let Some(read) = read_part(record, &mut self.arena) {
            match read {
                StackRecord::Part(mut part) if (self.wanted)(part.pid) => {
                    if let Holds::Frames(a, b) = part.holds {
                        let (a, b) = self.shared.intern(&self.arena[a as usize..b as usize]);
                        part.holds = Holds::Frames(a, b);
                    }
                    self.parts.push(part);
                }
                StackRecord::Part(_) => {}
                StackRecord::Definition(mut definition) => {
                    let (a, b) = definition.frames;
                    definition.frames = self.shared.intern(&self.arena[a as usize..b as usize]);
                    self.definitions.push(definition);
                }
            }
            self.arena.truncate(arena_len);
            return;
        }
        if Self::needs_decoding(record)
            && let Some((schema, values)) = decoded
        {
            let index = self.field_index(schema);
            match fact(record, &self.layouts[index], values, self.names) {
                Some(f) if self.names => {
                    if let Some(f) = self.identities.take(f) {
                        self.facts.push(f);
                    }
                }
                Some(Fact::Loaded { at, pid, base, size, .. }) => {
                    self.marks.push(LoadMark::load(at, base, size, pid));
                }
                Some(Fact::Unloaded { at, pid, base }) => {
                    self.marks.push(LoadMark::unload(at, base, pid));
                }
                Some(pdb @ Fact::Pdb { .. }) => {
                    self.identities.take(pdb);
                }
                Some(Fact::MethodLoaded { .. }) => {
                    if let Some(slot) = method_slot(&record.provider) {
                        self.methods_counted.0[slot] += 1;
                    }
                }
                // Counting needs neither a method's unload nor a module's file identity.
                Some(Fact::MethodUnloaded { .. } | Fact::Identity { .. }) | None => {}
            }
        }
    }
}

/// Method loads counted (by a counting scan): of the runtime's events and
/// of its rundown's, kept apart so that either can be counted again.
#[derive(Clone, Copy, Debug, Default)]
pub struct MethodCounts([usize; 2]);

impl MethodCounts {
    /// These counts and `other`'s.
    pub fn plus(self, other: MethodCounts) -> MethodCounts {
        MethodCounts([self.0[0] + other.0[0], self.0[1] + other.0[1]])
    }
}

/// Where method loads of `provider`'s events are counted: the runtime's,
/// then its rundown's.
fn method_slot(provider: &Guid) -> Option<usize> {
    match *provider {
        CLR => Some(0),
        CLR_RUNDOWN => Some(1),
        _ => None,
    }
}

/// A module or method fact from a decoded record (with `names` false, its
/// path or name is left empty).
fn fact(record: &Record<'_>, index: &FieldIndex, values: &[Value<'_>], names: bool) -> Option<Fact> {
    let field = |name: FactField| values.get(usize::from(index.at[name as usize]?));
    let u = |name: FactField| field(name).and_then(Value::as_u64);
    let text = |name: FactField| match field(name)? {
        Value::Utf16(_) | Value::Ansi(_) if !names => Some(String::new()),
        v => v.as_str().map(|s| s.trim_end_matches('\0').to_string()),
    };
    let at = record.timestamp;
    let image_load = record.provider == IMAGE || (record.provider == PROCESS && record.opcode == 10);
    if image_load {
        let pid = u(FactField::ProcessId).unwrap_or(0) as u32;
        let base = u(FactField::Base)?;
        return match record.opcode {
            2 => Some(Fact::Unloaded { at, pid, base }),
            10 | 3 | 4 => Some(Fact::Loaded {
                at,
                pid,
                base,
                size: u(FactField::Size)?,
                path: text(FactField::Path).unwrap_or_default(),
                rundown: record.opcode != 10,
                time_date_stamp: None,
                pdb: None,
            }),
            _ => None,
        };
    }
    if record.provider == IMAGE_ID {
        let base = u(FactField::ImageBase)?;
        return match record.opcode {
            0 => Some(Fact::Identity { at, base, time_date_stamp: u(FactField::TimeDateStamp)? as u32 }),
            36 => {
                let guid = match field(FactField::GuidSig)? {
                    Value::Guid(g) => *g,
                    _ => return None,
                };
                let name = text(FactField::PdbFileName)?;
                Some(Fact::Pdb { at, base, pdb: PdbId { name, guid, age: u(FactField::Age)? as u32 } })
            }
            _ => None,
        };
    }
    if record.provider == CLR || record.provider == CLR_RUNDOWN {
        let pid = record.process_id?;
        let start = u(FactField::MethodStartAddress)?;
        let rundown = record.provider == CLR_RUNDOWN;
        return match (rundown, record.id) {
            // Verbose loads and rundown name the method; an unload only ends it.
            (_, 143) | (true, 144) => {
                let namespace = text(FactField::MethodNamespace).unwrap_or_default();
                let method = text(FactField::MethodName).unwrap_or_default();
                let name = if namespace.is_empty() { method } else { format!("{namespace}.{method}") };
                Some(Fact::MethodLoaded { at, pid, start, size: u(FactField::MethodSize)?, name, rundown })
            }
            (false, 142 | 144) => Some(Fact::MethodUnloaded { at, pid, start }),
            _ => None,
        };
    }
    None
}

fn scan_buffer<'w>(
    trace: &Trace<'_>,
    info: &nettrail_etl::BufferInfo,
    schemas: &Schemas,
    wanted: &'w (dyn Fn(u32) -> bool + Sync),
    shared: &'w FrameTable,
    scratch: &mut Vec<u8>,
    cache: &mut LookupCache,
) -> BufferScan<'w> {
    let mut scan = BufferScan::new(wanted, shared);
    let contents = trace.contents(info, scratch);
    let mut values = Vec::new();
    let mut records = trace.records(info, &contents);
    while let Some(Ok((_, record))) = records.next_searched(true, BufferScan::reads) {
        let decoded = if BufferScan::needs_decoding(&record) {
            schemas.decode_cached(cache, &record, &mut values).ok()
        } else {
            None
        };
        scan.add(&record, decoded.map(|schema| (schema, &values[..])));
    }
    scan.done();
    scan
}

/// Scans a trace. `wanted(pid)` says whose stacks to keep (all, for a
/// dump; the processes that made requests, for stitching); modules and
/// methods are kept for every process.
pub fn scan(trace: &Trace<'_>, schemas: &Schemas, wanted: &(dyn Fn(u32) -> bool + Sync)) -> Code {
    scan_with(trace, schemas, wanted, CodeJoin::new())
}

fn scan_with(trace: &Trace<'_>, schemas: &Schemas, wanted: &(dyn Fn(u32) -> bool + Sync), mut join: CodeJoin) -> Code {
    let shared = FrameTable::default();
    // A run at a time, its pages handed back in one step after it ([`Trace::buffer_runs`]).
    let mut releaser = Releaser::new(trace);
    for run in trace.buffer_runs(Trace::RUN_BYTES) {
        let scans: Vec<BufferScan<'_>> = run
            .par_iter()
            .map_init(
                || (Vec::new(), LookupCache::default()),
                |(scratch, cache), info| scan_buffer(trace, &info, schemas, wanted, &shared, scratch, cache),
            )
            .collect();
        for scan in scans {
            join.add(scan);
        }
        releaser.done_all(run);
    }
    join.finish(&shared, trace.pointer_size())
}

/// Puts the [`BufferScan`]s of a trace together into its [`Code`], taking
/// them in file order as the pass reads them. Stack parts are held sorted
/// in runs, each full run in a temporary file: memory does not grow with
/// the number of stacks a trace has.
#[derive(Debug)]
pub struct CodeJoin {
    parts: SortedRuns<Part>,
    /// Key definitions, in file order (one each time the cache drops a key: kept in memory).
    definitions: Vec<Definition>,
    /// Module and method loads and unloads.
    facts: SortedRuns<Fact>,
    /// Module identities not met next to their load.
    identities: Identities,
    marks: SortedRuns<LoadMark>,
    methods_counted: MethodCounts,
    keep_events: bool,
}

impl Default for CodeJoin {
    fn default() -> Self {
        CodeJoin::new()
    }
}

impl CodeJoin {
    /// A join whose stacks look up their events ([`Stacks::of_record`]).
    pub fn new() -> CodeJoin {
        CodeJoin::with_run_items(RUN_ITEMS, true)
    }

    /// A join for counting: stacks and how many events have one, not which
    /// (`nettrail info`: events are not looked up, and not kept).
    pub fn counting() -> CodeJoin {
        CodeJoin::with_run_items(RUN_ITEMS, false)
    }

    fn with_run_items(run_items: usize, keep_events: bool) -> CodeJoin {
        CodeJoin {
            parts: SortedRuns::new(run_items),
            definitions: Vec::new(),
            facts: SortedRuns::new(run_items / 4),
            identities: Identities::default(),
            marks: SortedRuns::new(run_items),
            methods_counted: MethodCounts::default(),
            keep_events,
        }
    }

    /// Takes the scan of the buffers that follow, in file order, those taken before.
    pub fn add(&mut self, mut scan: BufferScan<'_>) {
        self.parts.add(&mut scan.parts);
        self.definitions.append(&mut scan.definitions);
        self.facts.add(&mut scan.facts);
        self.marks.add(&mut scan.marks);
        self.identities.extend(scan.identities);
        self.methods_counted = self.methods_counted.plus(scan.methods_counted);
    }

    /// Forgets the method loads counted of `provider`'s events, to count
    /// them again (none are counted of a provider other than the runtime
    /// and its rundown).
    pub fn forget_methods(&mut self, provider: &Guid) {
        if let Some(slot) = method_slot(provider) {
            self.methods_counted.0[slot] = 0;
        }
    }

    /// The code of every scan taken. `shared` is the table the scans kept
    /// their frames in (emptied here).
    pub fn finish(self, shared: &FrameTable, pointer_size: u8) -> Code {
        let arena = shared.take_frames();
        let CodeJoin { parts, definitions, facts, identities, marks, methods_counted, keep_events } = self;
        // Stacks and modules are independent: build them side by side.
        let ((stacks, unread_parts), (modules, unread_marks)) = rayon::join(
            || {
                let mut sorted = parts.into_sorted();
                let stacks = Stacks::join(&mut sorted, &definitions, &arena, pointer_size, keep_events);
                (stacks, sorted.unread())
            },
            || {
                let mut marks = marks.into_sorted();
                let counted = Counted::of(&mut marks, &identities, methods_counted.0.iter().sum());
                let mut timeline = facts.into_sorted();
                let modules = Modules::build(&mut timeline, &identities, kernel_boundary(pointer_size), counted);
                (modules, marks.unread() + timeline.unread())
            },
        );
        Code { stacks, modules, unread: unread_parts + unread_marks }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrail_etl::TraceFile;

    /// Every event's stack as the join found it: (time, thread, process, frames).
    fn joined(stacks: &Stacks) -> Vec<(u64, u32, Option<u32>, &[u64])> {
        stacks.events.iter().map(|&(at, tid, id)| (at, tid, stacks.pid(id), stacks.frames(id))).collect()
    }

    /// Scans a corpus trace with every buffer's scan counting (as `nettrail info`) or not.
    fn scan_counting(trace: &Trace<'_>, schemas: &Schemas, mut join: CodeJoin) -> Code {
        let (every, shared) = (|_| true, FrameTable::default());
        let (mut cache, mut scratch) = (LookupCache::default(), Vec::new());
        for info in trace.buffers().iter() {
            let mut scan = BufferScan::counting(&every, &shared);
            let contents = trace.contents(&info, &mut scratch);
            let mut values = Vec::new();
            for (_, record) in trace.records(&info, &contents).map_while(Result::ok) {
                let read = match schemas.check_cached(&mut cache, &record, &mut values) {
                    Ok(schema) => scan.decode_counted(schema, &record, &mut values).then_some(schema),
                    Err(_) => None,
                };
                scan.add(&record, read.map(|schema| (schema, &values[..])));
            }
            scan.done();
            join.add(scan);
        }
        join.finish(&shared, trace.pointer_size())
    }

    /// Parts and module marks spilled in runs of 64 (hundreds of temporary
    /// files, an event's kernel and user parts often in different runs)
    /// join to the same stacks and module counts as held in memory, for
    /// classic stack walks (Windows 7) and the stack cache's keys (Windows 8).
    #[test]
    fn items_spilled_in_small_runs_join_as_in_memory() {
        for (name, events, loads, with_pdbs) in [
            ("perfview__net.4.5.x86.PerfViewData.etl", 17_363, 2_800, 2_772),
            ("perfview__net.4.5.2.x86.etl", 9_666, 1_867, 1_840),
        ] {
            let file = TraceFile::open(nettrail_testkit::corpus_file(name)).unwrap();
            let trace = Trace::open(&file).unwrap();
            let mut schemas = Schemas::new();
            schemas.learn(&trace);
            let every = |_| true;
            let in_memory = scan_with(&trace, &schemas, &every, CodeJoin::with_run_items(usize::MAX, true));
            let spilled = scan_with(&trace, &schemas, &every, CodeJoin::with_run_items(64, true));
            assert_eq!(in_memory.stacks.counts().1, events, "{name}");
            assert_eq!(joined(&spilled.stacks), joined(&in_memory.stacks), "{name}");
            assert_eq!(spilled.stacks.counts(), in_memory.stacks.counts(), "{name}");
            assert_eq!(spilled.unread, 0, "{name}");
            // The module and method facts, spilled too, name every frame as held in memory.
            let named = |code: &Code| {
                let frames = crate::Frames { modules: &code.modules, symbols: &crate::NoSymbols };
                joined(&code.stacks)
                    .into_iter()
                    .map(|(at, _, pid, f)| frames.stack(pid.unwrap_or(0), f, at))
                    .collect::<Vec<_>>()
            };
            let names = named(&in_memory);
            assert_eq!(named(&spilled), names, "{name}");
            assert_eq!(spilled.modules.counts(), in_memory.modules.counts(), "{name}");
            assert_eq!(spilled.modules.with_pdbs(), in_memory.modules.with_pdbs(), "{name}");
            let counted = scan_counting(&trace, &schemas, CodeJoin::with_run_items(usize::MAX, false));
            let counted_spilled = scan_counting(&trace, &schemas, CodeJoin::with_run_items(64, false));
            assert_eq!(counted.stacks.counts(), in_memory.stacks.counts(), "{name}");
            assert!(counted.stacks.events.is_empty(), "{name}: counting keeps no events");
            assert_eq!(counted.modules.counts().0, loads, "{name}");
            assert_eq!(counted.modules.with_pdbs(), with_pdbs, "{name}");
            assert_eq!(counted.modules.counts(), in_memory.modules.counts(), "{name}");
            assert_eq!(counted.modules.with_pdbs(), in_memory.modules.with_pdbs(), "{name}");
            assert_eq!(counted_spilled.stacks.counts(), counted.stacks.counts(), "{name}");
            assert_eq!(counted_spilled.modules.counts(), counted.modules.counts(), "{name}");
            assert_eq!(counted_spilled.modules.with_pdbs(), counted.modules.with_pdbs(), "{name}");
        }
    }
}
