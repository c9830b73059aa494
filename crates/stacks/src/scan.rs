//! One parallel pass over a trace's buffers (order does not matter: what is
//! found is sorted by time afterwards) collecting stack records, module
//! loads and identities, and managed method loads.

use nettrail_decode::{LookupCache, Schemas, Value};
use nettrail_etl::{Guid, Record, Releaser, Trace};
use rayon::prelude::*;

use crate::modules::{Fact, Modules, PdbId};
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

#[derive(Default)]
struct Found {
    parts: Vec<Part>,
    arena: Vec<u64>,
    facts: Vec<Fact>,
}

fn field<'v>(names: &[&str], fields: &[nettrail_decode::Field], values: &'v [Value<'_>]) -> Option<&'v Value<'v>> {
    let i = fields.iter().position(|f| names.contains(&f.name.as_str()))?;
    values.get(i)
}

/// A module or method fact from a decoded record.
fn fact(record: &Record<'_>, fields: &[nettrail_decode::Field], values: &[Value<'_>]) -> Option<Fact> {
    let u = |names: &[&str]| field(names, fields, values).and_then(Value::as_u64);
    let text = |names: &[&str]| {
        field(names, fields, values).and_then(|v| v.as_str()).map(|s| s.trim_end_matches('\0').to_string())
    };
    let at = record.timestamp;
    let image_load = record.provider == IMAGE || (record.provider == PROCESS && record.opcode == 10);
    if image_load {
        let pid = u(&["ProcessId"]).unwrap_or(0) as u32;
        let base = u(&["ImageBase", "BaseAddress"])?;
        return match record.opcode {
            2 => Some(Fact::Unloaded { at, pid, base }),
            10 | 3 | 4 => Some(Fact::Loaded {
                at,
                pid,
                base,
                size: u(&["ImageSize", "ModuleSize"])?,
                path: text(&["FileName", "ImageFileName"]).unwrap_or_default(),
                rundown: record.opcode != 10,
            }),
            _ => None,
        };
    }
    if record.provider == IMAGE_ID {
        let base = u(&["ImageBase"])?;
        return match record.opcode {
            0 => Some(Fact::Identity { at, base, time_date_stamp: u(&["TimeDateStamp"])? as u32 }),
            36 => {
                let guid = match field(&["GuidSig"], fields, values)? {
                    Value::Guid(g) => *g,
                    _ => return None,
                };
                let name = text(&["PdbFileName"])?;
                Some(Fact::Pdb { at, base, pdb: PdbId { name, guid, age: u(&["Age"])? as u32 } })
            }
            _ => None,
        };
    }
    if record.provider == CLR || record.provider == CLR_RUNDOWN {
        let pid = record.process_id?;
        let start = u(&["MethodStartAddress"])?;
        let rundown = record.provider == CLR_RUNDOWN;
        return match (rundown, record.id) {
            // Verbose loads and rundown name the method; an unload only ends it.
            (_, 143) | (true, 144) => {
                let namespace = text(&["MethodNamespace"]).unwrap_or_default();
                let method = text(&["MethodName"]).unwrap_or_default();
                let name = if namespace.is_empty() { method } else { format!("{namespace}.{method}") };
                Some(Fact::MethodLoaded { at, pid, start, size: u(&["MethodSize"])?, name, rundown })
            }
            (false, 142 | 144) => Some(Fact::MethodUnloaded { at, pid, start }),
            _ => None,
        };
    }
    None
}

fn scan_buffer(
    trace: &Trace<'_>,
    info: &nettrail_etl::BufferInfo,
    schemas: &Schemas,
    wanted: &(dyn Fn(u32) -> bool + Sync),
    scratch: &mut Vec<u8>,
    cache: &mut LookupCache,
) -> Found {
    let mut found = Found::default();
    let contents = trace.contents(info, scratch);
    let mut values = Vec::new();
    for (_, record) in trace.records(info, &contents).map_while(Result::ok) {
        let arena_len = found.arena.len();
        if let Some(part) = read_part(&record, &mut found.arena) {
            let keep = match &part {
                Part::Frames { pid, .. } | Part::Key { pid, .. } => wanted(*pid),
                Part::Definition { .. } => true,
            };
            if keep {
                found.parts.push(part);
            } else {
                found.arena.truncate(arena_len);
            }
            continue;
        }
        let interesting = matches!(record.provider, IMAGE | IMAGE_ID | CLR | CLR_RUNDOWN)
            || (record.provider == PROCESS && record.opcode == 10);
        if !interesting {
            continue;
        }
        if let Ok(schema) = schemas.decode_cached(cache, &record, &mut values)
            && let Some(f) = fact(&record, &schema.fields, &values)
        {
            found.facts.push(f);
        }
    }
    found
}

/// Scans a trace. `wanted(pid)` says whose stacks to keep (all, for a
/// dump; the processes that made requests, for stitching); modules and
/// methods are kept for every process.
pub fn scan(trace: &Trace<'_>, schemas: &Schemas, wanted: &(dyn Fn(u32) -> bool + Sync)) -> Code {
    let found: Vec<Found> = trace
        .buffers()
        .par_iter()
        .map_init(
            || (Vec::new(), LookupCache::default(), Releaser::new(trace)),
            |(scratch, cache, releaser), info| {
                let f = scan_buffer(trace, info, schemas, wanted, scratch, cache);
                releaser.done(info);
                f
            },
        )
        .collect();
    let mut arena = Vec::new();
    let mut parts = Vec::new();
    let mut facts = Vec::new();
    for f in found {
        let offset = arena.len();
        arena.extend(f.arena);
        let shift = |(a, b): (usize, usize)| (a + offset, b + offset);
        parts.extend(f.parts.into_iter().map(|p| match p {
            Part::Frames { at, tid, pid, frames } => Part::Frames { at, tid, pid, frames: shift(frames) },
            Part::Definition { at, key, frames } => Part::Definition { at, key, frames: shift(frames) },
            key @ Part::Key { .. } => key,
        }));
        facts.extend(f.facts);
    }
    let event = |p: &Part| match p {
        Part::Frames { at, tid, .. } | Part::Key { at, tid, .. } => (*at, *tid),
        Part::Definition { .. } => (0, 0),
    };
    parts.sort_by_key(event);
    let boundary = kernel_boundary(trace.pointer_size());
    Code { stacks: Stacks::join(parts, &arena, trace.pointer_size()), modules: Modules::build(facts, boundary) }
}
