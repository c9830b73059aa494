//! Which call stack belongs to which event.
//!
//! Two storage forms exist. Classic kernel stack walks are records of their
//! own (group StackWalk) that name their event by raw timestamp and thread:
//! `Stack` (opcode 32) holds frames; with the stack cache (Windows 8 on),
//! `StackKeyKernel`/`StackKeyUser` (37/38) hold keys whose frames arrive in
//! `KeyDelete`/`KeyRundown` (35/36), often much later. A kernel part and a
//! user part with the same timestamp and thread are one stack, kernel frames
//! first (innermost first throughout). Manifest and TraceLogging events carry
//! their stack in an extended data item instead (frames, or a cache key).
//!
//! Layouts (facts, etl-format.md §3.3): Stack = EventTimeStamp u64,
//! StackProcess u32, StackThread u32, then pointer-sized frames; the key
//! events = the same three fields then a pointer-sized key; KeyDelete /
//! KeyRundown = the key, then the frames. They are read here straight from
//! the payload: there can be millions.

use std::borrow::Cow;
use std::io::Read;

use nettrail_decode::fasthash::{FastMap, FastSet};
use nettrail_etl::extended::{ExtType, ExtendedData};
use nettrail_etl::{Guid, Record};

use crate::spill::{Spill, read_u8, read_u32, read_u64};

/// The StackWalk event class.
pub const STACK_WALK: Guid = Guid::parse_const("def2fe46-7bd6-4b80-bd94-f57fe20d0ce3");

const STACK: u8 = 32;
const KEY_DELETE: u8 = 35;
const KEY_RUNDOWN: u8 = 36;
const KEY_KERNEL: u8 = 37;
const KEY_USER: u8 = 38;

/// Where kernel addresses start for a kernel of this pointer size.
pub fn kernel_boundary(pointer_size: u8) -> u64 {
    if pointer_size == 4 { 0x8000_0000 } else { 0xFFFF_8000_0000_0000 }
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

fn pointer_at(b: &[u8], at: usize, size: u8) -> Option<u64> {
    if size == 4 { u32_at(b, at).map(u64::from) } else { u64_at(b, at) }
}

fn frames(b: &[u8], size: u8) -> impl Iterator<Item = u64> + '_ {
    b.chunks_exact(usize::from(size)).map(move |c| {
        if size == 4 {
            u64::from(u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        } else {
            u64::from_le_bytes(c.try_into().unwrap_or_default())
        }
    })
}

/// A StackWalk record's part of one event's stack, as one buffer's scan finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Part {
    /// The event's raw timestamp, thread and process.
    pub(crate) at: u64,
    pub(crate) tid: u32,
    pub(crate) pid: u32,
    pub(crate) holds: Holds,
}

/// What a [`Part`] holds of its stack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holds {
    /// Frames: their range in the scan's frame arena.
    Frames(u32, u32),
    /// A cache key for the kernel or user part of the stack.
    Key { key: u64, user: bool },
}

impl Part {
    /// The event it belongs to, which orders parts for the join.
    pub(crate) fn event(&self) -> (u64, u32) {
        (self.at, self.tid)
    }
}

/// Held in runs by the event: time, thread, process, what it holds (0
/// frames, 1 kernel key, 2 user key), then its frames' range or key.
impl Spill for Part {
    type Key = (u64, u32);

    fn key(&self) -> (u64, u32) {
        self.event()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.at.to_le_bytes());
        out.extend_from_slice(&self.tid.to_le_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        let (kind, value) = match self.holds {
            Holds::Frames(a, b) => (0, u64::from(a) | u64::from(b) << 32),
            Holds::Key { key, user } => (1 + u8::from(user), key),
        };
        out.push(kind);
        out.extend_from_slice(&value.to_le_bytes());
    }

    fn decode(input: &mut impl Read) -> std::io::Result<Part> {
        let (at, tid, pid) = (read_u64(input)?, read_u32(input)?, read_u32(input)?);
        let (kind, value) = (read_u8(input)?, read_u64(input)?);
        let holds = match kind {
            0 => Holds::Frames(value as u32, (value >> 32) as u32),
            kind => Holds::Key { key: value, user: kind == 2 },
        };
        Ok(Part { at, tid, pid, holds })
    }
}

/// A cache key's frames, logged when the cache drops the key (which it then
/// reuses) or at rundown: a key names the frames of its next definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Definition {
    pub(crate) at: u64,
    pub(crate) key: u64,
    /// Their range in the scan's frame arena.
    pub(crate) frames: (u32, u32),
}

/// What a StackWalk record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StackRecord {
    Part(Part),
    Definition(Definition),
}

/// Reads a StackWalk record, its frames into `arena`; `None` for other
/// records or damaged ones (which then have no stack).
pub(crate) fn read_part(record: &Record<'_>, arena: &mut Vec<u64>) -> Option<StackRecord> {
    if record.provider != STACK_WALK {
        return None;
    }
    let (p, size) = (record.payload, record.pointer_size);
    // The range in `arena`, which holds one record's frames at a time (a
    // record is at most 64 KB: u32 ranges).
    let mut take = |b: &[u8]| {
        let start = arena.len() as u32;
        arena.extend(frames(b, size));
        (start, arena.len() as u32)
    };
    match record.opcode {
        STACK => {
            let (at, pid, tid) = (u64_at(p, 0)?, u32_at(p, 8)?, u32_at(p, 12)?);
            let (a, b) = take(p.get(16..)?);
            Some(StackRecord::Part(Part { at, tid, pid, holds: Holds::Frames(a, b) }))
        }
        KEY_KERNEL | KEY_USER => Some(StackRecord::Part(Part {
            at: u64_at(p, 0)?,
            pid: u32_at(p, 8)?,
            tid: u32_at(p, 12)?,
            holds: Holds::Key { key: pointer_at(p, 16, size)?, user: record.opcode == KEY_USER },
        })),
        KEY_DELETE | KEY_RUNDOWN => {
            let key = pointer_at(p, 0, size)?;
            let frames = take(p.get(usize::from(size)..)?);
            Some(StackRecord::Definition(Definition { at: record.timestamp, key, frames }))
        }
        _ => None,
    }
}

pub type StackId = u32;

/// Every stack of a trace, joined to its event.
#[derive(Debug, Default)]
pub struct Stacks {
    /// Frames of all stacks, each stack contiguous, innermost first.
    frames: Vec<u64>,
    /// Each stack's range in `frames`, and the process it was walked in.
    ranges: Vec<(u32, u32)>,
    pids: Vec<u32>,
    /// (raw timestamp, thread, stack) of every event with a stack, in time
    /// order: events are looked up in time order too, so a cursor walks
    /// this list instead of hashing (most events have no stack).
    pub(crate) events: Vec<(u64, u32, StackId)>,
    /// How many events have a stack (`events` is left empty when only counted).
    joined: usize,
    /// When only counted: each distinct stack's fingerprint (its frames are
    /// not stored).
    fingerprints: FastSet<(u64, u64)>,
    /// Each stack-cache key's definitions over time (time, range in `frames`).
    keys: FastMap<u64, Vec<(u64, u32, u32)>>,
    /// Identical stacks are stored once.
    dedup: FastMap<u64, Vec<StackId>>,
    kernel_boundary: u64,
}

/// One event's stack: kernel frames (if any) then user frames, innermost
/// first, and the process whose addresses they are (a StackWalk record names
/// it where the event's header does not).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stack<'s> {
    /// Borrowed when the stack is a stored one.
    pub frames: Cow<'s, [u64]>,
    pub pid: Option<u32>,
    /// The stored stack it is (a StackWalk stack): equal ids, equal frames.
    pub id: Option<StackId>,
    /// The (raw timestamp, thread) its StackWalk records named.
    pub walked: Option<(u64, u32)>,
}

impl Stacks {
    /// Joins the parts found by the scan, given sorted by event (parts of
    /// one event in file order), into stacks. Without `keep_events` only
    /// how many distinct stacks and events with one there are is kept
    /// ([`Stacks::counts`]: neither frames nor events are looked up).
    pub(crate) fn join(
        parts: impl Iterator<Item = Part>,
        definitions: &[Definition],
        arena: &[u64],
        pointer_size: u8,
        keep_events: bool,
    ) -> Stacks {
        let mut s = Stacks { kernel_boundary: kernel_boundary(pointer_size), ..Stacks::default() };
        // Key definitions first: they come after the events that use them.
        // Kept, their frames are copied (a stack's later lookups need them);
        // counted, they are read where the scan left them.
        for d in definitions {
            let (start, end) = if keep_events {
                let start = s.frames.len() as u32;
                s.frames.extend_from_slice(arena.get(d.frames.0 as usize..d.frames.1 as usize).unwrap_or_default());
                (start, s.frames.len() as u32)
            } else {
                d.frames
            };
            s.keys.entry(d.key).or_default().push((d.at, start, end));
        }
        for definitions in s.keys.values_mut() {
            definitions.sort_unstable();
        }
        // The kernel and user parts of each (timestamp, thread), next to each other.
        let boundary = s.kernel_boundary;
        // Reused for every event (allocating two per event was most of the join's time).
        let (mut kernel, mut user) = (Vec::new(), Vec::new());
        let mut parts = parts.peekable();
        while let Some(first) = parts.next() {
            kernel.clear();
            user.clear();
            let mut next = Some(first);
            while let Some(part) = next {
                let frames: &[u64] = match part.holds {
                    Holds::Frames(a, b) => arena.get(a as usize..b as usize).unwrap_or_default(),
                    Holds::Key { key, .. } => {
                        let store = if keep_events { &s.frames[..] } else { arena };
                        key_frames_in(&s.keys, store, key, first.at).unwrap_or_default()
                    }
                };
                split_kernel_user(frames, boundary, &mut kernel, &mut user);
                next = parts.next_if(|p| p.event() == first.event());
            }
            if kernel.is_empty() && user.is_empty() {
                continue;
            }
            kernel.extend_from_slice(&user);
            s.joined += 1;
            if keep_events {
                let id = s.store(first.pid, &kernel);
                // In time order already: the parts came sorted.
                s.events.push((first.at, first.tid, id));
            } else {
                // Two independent 64-bit hashes: no two of a trace's stacks
                // share both but by a chance of about n² in 2^129.
                s.fingerprints.insert((hash_stack(first.pid, &kernel), fingerprint(first.pid, &kernel)));
            }
        }
        s
    }

    fn store(&mut self, pid: u32, frames: &[u64]) -> StackId {
        let hash = hash_stack(pid, frames);
        if let Some(ids) = self.dedup.get(&hash) {
            for &id in ids {
                let (a, b) = self.ranges[id as usize];
                if self.pids[id as usize] == pid && self.frames[a as usize..b as usize] == *frames {
                    return id;
                }
            }
        }
        let start = self.frames.len() as u32;
        self.frames.extend_from_slice(frames);
        let id = self.ranges.len() as StackId;
        self.ranges.push((start, self.frames.len() as u32));
        self.pids.push(pid);
        self.dedup.entry(hash).or_default().push(id);
        id
    }

    /// The process a stack was walked in.
    pub fn pid(&self, id: StackId) -> Option<u32> {
        self.pids.get(id as usize).copied()
    }

    /// The frames of a stack.
    pub fn frames(&self, id: StackId) -> &[u64] {
        let (a, b) = self.ranges.get(id as usize).copied().unwrap_or((0, 0));
        self.frames.get(a as usize..b as usize).unwrap_or_default()
    }

    /// A lookup position for events that come in time order.
    pub fn cursor(&self) -> StackCursor<'_> {
        StackCursor { stacks: self, at: 0 }
    }

    /// The stack of the event logged at `timestamp` on `thread` (`None`: a
    /// header without a thread, matched by time alone when one stack has it).
    pub fn of_event(&self, timestamp: u64, thread: Option<u32>) -> Option<StackId> {
        self.cursor().of_event(timestamp, thread)
    }

    /// A record's stack: its own extended data item (frames, or a key of the
    /// stack cache), else a StackWalk record joined to it.
    pub fn of_record(&self, record: &Record<'_>) -> Option<Stack<'_>> {
        self.cursor().of_record(record)
    }

    /// How many distinct stacks, and how many events have one.
    pub fn counts(&self) -> (usize, usize) {
        (self.ranges.len().max(self.fingerprints.len()), self.joined)
    }

    /// The frames a stack-cache key named at raw time `at`: its first
    /// definition logged then or later (the cache logs a key's frames when it
    /// drops the key, after the events that used it).
    fn key_frames(&self, key: u64, at: u64) -> Option<&[u64]> {
        key_frames_in(&self.keys, &self.frames, key, at)
    }

    pub fn kernel_boundary(&self) -> u64 {
        self.kernel_boundary
    }
}

/// Appends a part's kernel frames to `kernel` and its user frames to
/// `user`. A walk lists its kernel frames, then its user frames: that split
/// is found and copied whole; frames in another order go one by one.
fn split_kernel_user(frames: &[u64], boundary: u64, kernel: &mut Vec<u64>, user: &mut Vec<u64>) {
    let split = frames.iter().position(|&f| f < boundary).unwrap_or(frames.len());
    let (top, rest) = frames.split_at(split);
    if rest.iter().all(|&f| f < boundary) {
        kernel.extend_from_slice(top);
        user.extend_from_slice(rest);
    } else {
        for &f in frames {
            if f >= boundary { kernel.push(f) } else { user.push(f) }
        }
    }
}

/// The frames a stack-cache key named at raw time `at`, in `store`: its first
/// definition logged then or later (the cache logs a key's frames when it
/// drops the key, after the events that used it).
fn key_frames_in<'f>(
    keys: &FastMap<u64, Vec<(u64, u32, u32)>>,
    store: &'f [u64],
    key: u64,
    at: u64,
) -> Option<&'f [u64]> {
    let definitions = keys.get(&key)?;
    let i = definitions.partition_point(|d| d.0 < at);
    let &(_, a, b) = definitions.get(i).or(definitions.last())?;
    store.get(a as usize..b as usize)
}

/// A second hash of a stack, independent of [`hash_stack`] (other constants,
/// frames folded in one lane): with it, a stack's fingerprint.
fn fingerprint(pid: u32, frames: &[u64]) -> u64 {
    const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = 0x2545_F491_4F6C_DD1Du64 ^ (u64::from(pid) << 32) ^ frames.len() as u64;
    for &f in frames {
        h = (h.rotate_left(23) ^ f).wrapping_mul(MULTIPLIER);
    }
    h ^ (h >> 31)
}

/// A stack's hash for finding its copies: four lanes over the frames, so
/// the multiplications do not wait on each other (a stack has tens of
/// frames, and a trace tens of thousands of stacks).
fn hash_stack(pid: u32, frames: &[u64]) -> u64 {
    const PRIME: u64 = 0x0100_0000_01b3;
    let mut lanes = [0xcbf2_9ce4_8422_2325u64 ^ u64::from(pid), 1, 2, 3];
    let mut chunks = frames.chunks_exact(4);
    for chunk in &mut chunks {
        for (lane, &f) in lanes.iter_mut().zip(chunk) {
            *lane = (*lane ^ f).wrapping_mul(PRIME);
        }
    }
    for (lane, &f) in lanes.iter_mut().zip(chunks.remainder()) {
        *lane = (*lane ^ f).wrapping_mul(PRIME);
    }
    let length = frames.len() as u64;
    lanes.iter().fold(length, |h, &lane| (h ^ lane).wrapping_mul(PRIME).rotate_left(29))
}

/// Where an event's stack is, noted while the event is at hand and resolved
/// after the scan: frames in the event's own extended data, a key of the
/// stack cache (defined later in the trace), or a StackWalk record that
/// names the event by time and thread.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StackRef {
    Inline(std::sync::Arc<[u64]>),
    Key { key: u64, at: u64 },
    Walked { at: u64, thread: Option<u32> },
}

impl StackRef {
    /// The reference for a record (`thread`: its thread, from the header or payload).
    pub fn of_record(record: &Record<'_>, thread: Option<u32>) -> StackRef {
        let mut frames = Vec::new();
        for item in record.extended.iter() {
            match item.parse() {
                ExtendedData::StackTrace64 { frames: f, .. } => frames.extend(self::frames(f, 8)),
                ExtendedData::StackTrace32 { frames: f, .. } => frames.extend(self::frames(f, 4)),
                ExtendedData::StackKey { key, .. } => return StackRef::Key { key, at: record.timestamp },
                _ => {}
            }
        }
        if frames.is_empty() {
            StackRef::Walked { at: record.timestamp, thread }
        } else {
            StackRef::Inline(frames.into())
        }
    }
}

impl Stacks {
    /// The frames a reference names, if the trace has them.
    pub fn resolve(&self, r: &StackRef) -> Option<Vec<u64>> {
        match r {
            StackRef::Inline(frames) => Some(frames.to_vec()),
            StackRef::Key { key, at } => self.key_frames(*key, *at).map(<[u64]>::to_vec),
            StackRef::Walked { at, thread } => self.of_event(*at, *thread).map(|id| self.frames(id).to_vec()),
        }
    }
}

/// Looks up the stacks of events taken in time order (a chunk of the
/// merged stream): a binary search for the first, then steps forward.
#[derive(Debug)]
pub struct StackCursor<'s> {
    stacks: &'s Stacks,
    at: usize,
}

impl<'s> StackCursor<'s> {
    /// See [`Stacks::of_event`].
    pub fn of_event(&mut self, timestamp: u64, thread: Option<u32>) -> Option<StackId> {
        self.find(timestamp, thread).map(|e| e.2)
    }

    fn find(&mut self, timestamp: u64, thread: Option<u32>) -> Option<(u64, u32, StackId)> {
        let events = &self.stacks.events;
        // `at` is the first stack at or after the last time asked. Forward
        // in small steps; backward or far ahead, search.
        let behind = self.at.checked_sub(1).and_then(|i| events.get(i)).is_some_and(|e| e.0 >= timestamp);
        if behind || events.get(self.at + 16).is_some_and(|e| e.0 < timestamp) {
            self.at = events.partition_point(|e| e.0 < timestamp);
        }
        while events.get(self.at).is_some_and(|e| e.0 < timestamp) {
            self.at += 1;
        }
        let same = events[self.at.min(events.len())..].iter().take_while(|e| e.0 == timestamp);
        match thread {
            Some(tid) => same.clone().find(|e| e.1 == tid).copied(),
            None => {
                let mut same = same;
                let first = *same.next()?;
                same.next().is_none().then_some(first)
            }
        }
    }

    /// See [`Stacks::of_record`].
    pub fn of_record(&mut self, record: &Record<'_>) -> Option<Stack<'s>> {
        self.of_record_on(record, record.thread_id)
    }

    /// A record's stack, for a record whose thread is known from elsewhere
    /// (kernel PERFINFO records name it in their payload, not their header:
    /// a sampled profile's `ThreadId`).
    pub fn of_record_on(&mut self, record: &Record<'_>, thread: Option<u32>) -> Option<Stack<'s>> {
        let stacks = self.stacks;
        if record.provider == STACK_WALK {
            return None;
        }
        let mut frames = Vec::new();
        for item in record.extended.iter() {
            match item.parse() {
                ExtendedData::StackTrace64 { frames: f, .. } => frames.extend(self::frames(f, 8)),
                ExtendedData::StackTrace32 { frames: f, .. } => frames.extend(self::frames(f, 4)),
                ExtendedData::StackKey { key, .. }
                    if matches!(item.ext_type, ExtType::STACK_KEY32 | ExtType::STACK_KEY64) =>
                {
                    frames.extend_from_slice(stacks.key_frames(key, record.timestamp).unwrap_or_default());
                }
                _ => {}
            }
        }
        if !frames.is_empty() {
            return Some(Stack { frames: Cow::Owned(frames), pid: record.process_id, id: None, walked: None });
        }
        let (at, tid, id) = self.find(record.timestamp, thread)?;
        Some(Stack {
            frames: Cow::Borrowed(stacks.frames(id)),
            pid: stacks.pid(id),
            id: Some(id),
            walked: Some((at, tid)),
        })
    }
}
