//! One parallel pass over a trace's buffers (order does not matter: what is
//! found is sorted by time afterwards) collecting stack records, module
//! loads and identities, and managed method loads.

use std::sync::{Arc, Mutex};

use nettrail_decode::fasthash::{FastMap, FastSet};
use nettrail_decode::{EventSchema, LookupCache, Schemas, Value};
use nettrail_etl::{Guid, Record, Releaser, Trace};
use rayon::prelude::*;

use crate::modules::{Counted, Fact, LoadMark, Modules, PdbId};
use crate::stacks::{Part, Stacks, kernel_boundary, read_part};

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
}

/// What one buffer says about code, record by record, in file order.
/// [`scan`] reads buffers for this alone; a pass that decodes every record
/// anyway (`nettrail info`, counting what decodes) adds them to its own, so
/// the trace is read once. [`Code::join`] puts the buffers together.
pub struct BufferScan<'w> {
    wanted: &'w (dyn Fn(u32) -> bool + Sync),
    parts: Vec<Part>,
    arena: Vec<u64>,
    facts: Vec<Fact>,
    /// Whether modules' paths and methods' names are read, and method loads
    /// and module identities kept (not for counting: then module loads are
    /// kept as marks, PDB identities by time and base, method loads counted).
    names: bool,
    marks: Vec<LoadMark>,
    pdbs: FastSet<(u64, u64)>,
    methods_counted: usize,
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
            arena: Vec::new(),
            facts: Vec::new(),
            names: true,
            marks: Vec::new(),
            pdbs: FastSet::default(),
            methods_counted: 0,
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
        self.arena = Vec::new();
        self.layouts = Vec::new();
        self.parts.shrink_to_fit();
        self.facts.shrink_to_fit();
        self.marks.shrink_to_fit();
    }

    /// This scan and `other`'s, which follows it in file order, as one (a
    /// pass that folds buffers together holds one list of parts, not one per buffer).
    pub fn merge(mut self, mut other: BufferScan<'w>) -> BufferScan<'w> {
        self.parts.append(&mut other.parts);
        self.facts.append(&mut other.facts);
        self.marks.append(&mut other.marks);
        self.pdbs.extend(other.pdbs);
        self.methods_counted += other.methods_counted;
        self
    }

    /// Whether [`BufferScan::add`] needs this record decoded: a module or
    /// method record (stack records are read straight from the payload).
    pub fn needs_decoding(record: &Record<'_>) -> bool {
        matches!(record.provider, IMAGE | IMAGE_ID | CLR | CLR_RUNDOWN)
            || (record.provider == PROCESS && record.opcode == 10)
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

    /// Takes the record's stack part or module or method fact, if it has one;
    /// `decoded` is its schema and values, if it decoded (needed only where
    /// [`BufferScan::needs_decoding`]).
    pub fn add(&mut self, record: &Record<'_>, decoded: Option<(&Arc<EventSchema>, &[Value<'_>])>) {
        let arena_len = self.arena.len();
        if let Some(mut part) = read_part(record, &mut self.arena) {
            let keep = match &part {
                Part::Frames { pid, .. } | Part::Key { pid, .. } => (self.wanted)(*pid),
                Part::Definition { .. } => true,
            };
            if keep {
                if let Part::Frames { frames, .. } | Part::Definition { frames, .. } = &mut part {
                    *frames = self.shared.intern(&self.arena[frames.0 as usize..frames.1 as usize]);
                }
                self.parts.push(part);
            }
            self.arena.truncate(arena_len);
            return;
        }
        if Self::needs_decoding(record)
            && let Some((schema, values)) = decoded
        {
            let index = self.field_index(schema);
            match fact(record, &self.layouts[index], values, self.names) {
                Some(f) if self.names => self.facts.push(f),
                Some(Fact::Loaded { at, pid, base, size, .. }) => {
                    self.marks.push(LoadMark { at, base, size: Some(size), pid });
                }
                Some(Fact::Unloaded { at, pid, base }) => self.marks.push(LoadMark { at, base, size: None, pid }),
                Some(Fact::Pdb { at, base, .. }) => {
                    self.pdbs.insert((at, base));
                }
                Some(Fact::MethodLoaded { .. }) => self.methods_counted += 1,
                // Counting needs neither a method's unload nor a module's file identity.
                Some(Fact::MethodUnloaded { .. } | Fact::Identity { .. }) | None => {}
            }
        }
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
    for (_, record) in trace.records(info, &contents).map_while(Result::ok) {
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
    let shared = FrameTable::default();
    let mut buffers: Vec<BufferScan<'_>> = Vec::new();
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
        buffers.extend(scans);
        releaser.done_all(run);
    }
    Code::join(buffers, &shared, trace.pointer_size())
}

impl Code {
    /// The code the scans of a trace's buffers found, given in file order
    /// (parts of one event's stack keep their order).
    /// `shared` is the table the scans kept their frames in (emptied here).
    pub fn join<'w>(buffers: impl IntoIterator<Item = BufferScan<'w>>, shared: &FrameTable, pointer_size: u8) -> Code {
        let arena = shared.take_frames();
        let (mut methods_counted, mut marks, mut pdbs) = (0, Vec::new(), FastSet::default());
        let (stacks, facts): (Vec<_>, Vec<_>) = buffers
            .into_iter()
            .map(|mut b| {
                methods_counted += b.methods_counted;
                marks.append(&mut b.marks);
                pdbs.extend(b.pdbs);
                (b.parts, b.facts)
            })
            .unzip();
        // Stacks and modules are independent: build them side by side.
        let (stacks, modules) = rayon::join(
            || join_stacks(stacks, &arena, pointer_size),
            || {
                let counted = Counted::of(marks, &pdbs, methods_counted);
                Modules::build(facts.into_iter().flatten(), kernel_boundary(pointer_size), counted)
            },
        );
        Code { stacks, modules }
    }
}

/// The stacks of the buffers' parts (in file order), whose frames are in `arena`.
fn join_stacks(buffers: Vec<Vec<Part>>, arena: &[u64], pointer_size: u8) -> Stacks {
    // Appended in place: a pass that folded its buffers gives one list, taken as it is.
    let mut parts = buffers
        .into_iter()
        .reduce(|mut all, mut more| {
            all.append(&mut more);
            all
        })
        .unwrap_or_default();
    let event = |p: &Part| match p {
        Part::Frames { at, tid, .. } | Part::Key { at, tid, .. } => (*at, *tid),
        Part::Definition { .. } => (0, 0),
    };
    // Stable: parts of one event keep their order. The list grew by
    // doubling; given back first, the sort's scratch (half the list) is the
    // only copy on top of it (a parallel sort would take a whole list's).
    parts.shrink_to_fit();
    parts.sort_by_key(event);
    Stacks::join(parts, arena, pointer_size)
}
