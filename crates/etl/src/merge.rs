//! Every buffer's records merged into one stable time order.
//!
//! Buffers are per CPU; each holds its records in time order, but file order
//! (flush order) interleaves CPUs, so a later buffer can hold earlier events.
//! The merge sorts buffers by their first record's timestamp and runs a k-way
//! heap merge, opening a buffer only when the merge clock reaches it: memory
//! stays proportional to the buffers in flight, not to the trace. Buffers are
//! loaded (decompressed and indexed) in parallel batches ahead of the merge.
//! Ties keep buffer order, then record order: the merge is stable.

use std::cmp::Reverse;
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, VecDeque};
use std::ops::Deref;
use std::sync::Arc;

use rayon::prelude::*;

use crate::error::{Error, Location};
use crate::record::{Record, parse_record};
use crate::stored::Stored;
use crate::trace::{BufferInfo, BufferRecords, Buffers, Releaser, Trace, decompress_buffer, uncompressed_contents};

/// A record with where it was found.
#[derive(Clone, Copy, Debug)]
pub struct Event<'a> {
    pub record: Record<'a>,
    /// The CPU whose buffer held the record.
    pub cpu: u16,
    pub buffer_index: u32,
    /// File offset of the buffer.
    pub buffer_offset: u64,
    /// Offset of the record in its buffer (in the decompressed image when the
    /// buffer is compressed).
    pub offset_in_buffer: u32,
    pub compressed: bool,
    /// The buffer header's EVENTS_LOST / BUFFER_LOST flags.
    pub buffer_flags: u16,
}

impl<'a> Deref for Event<'a> {
    type Target = Record<'a>;

    fn deref(&self) -> &Record<'a> {
        &self.record
    }
}

impl Event<'_> {
    pub fn location(&self) -> Location {
        Location {
            buffer_index: self.buffer_index,
            buffer_offset: self.buffer_offset,
            offset_in_buffer: self.offset_in_buffer,
            compressed: self.compressed,
        }
    }
}

/// An event of a [`Batch`], resolved to an [`Event`] with [`Batch::event`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventRef {
    /// The event's buffer among the batch's.
    buffer: u32,
    offset: u32,
    /// Raw timestamp (the previous record's for a WPP record without one).
    pub timestamp: u64,
}

/// Consecutive events of the merged stream and the buffers holding them:
/// a batch owns its share of the buffers, so it can be worked on while the
/// stream merges the next one.
#[derive(Debug)]
pub struct Batch<'t> {
    events: Vec<EventRef>,
    /// Damage met while merging the batch, in stream order (kept apart: an
    /// error is four times an event's size, and batches hold tens of
    /// thousands of events).
    damage: Vec<Error>,
    buffers: Vec<Arc<BufferView<'t>>>,
    /// Buffers whose last event is in this batch.
    finished: Vec<BufferInfo>,
    pointer_size: u8,
}

impl Batch<'_> {
    /// The batch's events, in time order.
    pub fn events(&self) -> &[EventRef] {
        &self.events
    }

    /// The damage met while merging the batch, in stream order.
    pub fn damage(&self) -> &[Error] {
        &self.damage
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.damage.is_empty()
    }

    /// The list of events, for [`EventStream::reuse`] once the batch is
    /// worked on (its buffers are let go here).
    pub fn into_events(self) -> Vec<EventRef> {
        self.events
    }

    /// The buffers whose last event is in this batch: a reader handing a
    /// file's pages back ([`Releaser`]) does so once it has worked on the batch.
    pub fn finished(&self) -> &[BufferInfo] {
        &self.finished
    }

    /// The event an item of this batch refers to.
    pub fn event(&self, r: EventRef) -> Option<Event<'_>> {
        self.buffers.get(r.buffer as usize)?.event(r.offset, r.timestamp, self.pointer_size)
    }
}

#[derive(Debug)]
enum BufferBytes<'t> {
    /// A slice of the file, or of a buffer the trace keeps decompressed.
    Borrowed(&'t [u8]),
    Decompressed(Vec<u8>),
}

impl BufferBytes<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            BufferBytes::Borrowed(b) => b,
            BufferBytes::Decompressed(v) => v,
        }
    }
}

/// A loaded buffer's bytes, shared by the merge and the batches holding
/// its events.
#[derive(Debug)]
struct BufferView<'t> {
    info: BufferInfo,
    bytes: BufferBytes<'t>,
}

impl BufferView<'_> {
    fn event(&self, offset: u32, timestamp: u64, pointer_size: u8) -> Option<Event<'_>> {
        let bytes = self.bytes.bytes().get(offset as usize..)?;
        let Ok(Some((mut record, _))) = parse_record(bytes, pointer_size) else {
            return None;
        };
        record.timestamp = timestamp;
        Some(Event {
            record,
            cpu: self.info.header.processor,
            buffer_index: self.info.index,
            buffer_offset: self.info.offset,
            offset_in_buffer: offset,
            compressed: self.info.header.is_compressed(),
            buffer_flags: self.info.header.flags.0,
        })
    }
}

/// A buffer the merge has loaded: its bytes, its records' (timestamp,
/// offset) in time order, and the errors to report after its last record.
struct LoadedBuffer<'t> {
    view: Arc<BufferView<'t>>,
    index: Vec<(u64, u32)>,
    next: usize,
    errors: Vec<Error>,
    /// The last batch that took an event of this buffer, and the buffer's
    /// place among that batch's.
    in_batch: Option<(u64, u32)>,
}

impl LoadedBuffer<'_> {
    fn info(&self) -> &BufferInfo {
        &self.view.info
    }
}

/// A position in the merged stream: a record of a loaded buffer.
struct Placed {
    position: u32,
    offset: u32,
    timestamp: u64,
}

fn load<'t>(trace: &'t Trace<'_>, info: &BufferInfo) -> LoadedBuffer<'t> {
    let (bytes, contents_error) = if !info.header.is_compressed() {
        let contents = uncompressed_contents(trace.data(), info);
        (BufferBytes::Borrowed(contents.bytes), contents.error)
    } else if let Some((bytes, error)) = trace.expanded(info) {
        (BufferBytes::Borrowed(bytes), error)
    } else {
        let mut out = Vec::new();
        let error = decompress_buffer(trace.data(), info, trace.session().buffer_size, &mut out);
        (BufferBytes::Decompressed(out), error)
    };
    let mut index = Vec::new();
    let mut errors = Vec::new();
    let mut records = BufferRecords::new(bytes.bytes(), info, trace.pointer_size());
    while let Some(item) = records.next_frame() {
        match item {
            Ok((offset, timestamp)) => index.push((timestamp, offset as u32)),
            Err(e) => errors.push(e),
        }
    }
    errors.extend(contents_error);
    if index.windows(2).any(|w| w[1].0 < w[0].0) {
        // Not expected of one CPU's buffer; a stable sort keeps ties in file order.
        index.sort_by_key(|&(ts, _)| ts);
    }
    LoadedBuffer { view: Arc::new(BufferView { info: *info, bytes }), index, next: 0, errors, in_batch: None }
}

/// How many buffers are opened between two hand-backs of the order's pages.
const ORDER_RELEASE_EVERY: usize = 4096;

/// Most buffers loaded ahead in one parallel batch, and the most their
/// records can take once decompressed (at the session's buffer size).
const BATCH_BUFFERS: usize = 64;
const BATCH_BYTES: usize = 32 << 20;

/// Most bytes of buffers open at once. A real trace has about one buffer per
/// CPU open (their times overlap); a hostile one can make every buffer's
/// times overlap, which would keep the whole trace decompressed. Past this,
/// the merge finishes the open buffers before opening more: the later
/// buffers' earlier events then come after (see [`EventStream::reordered`]).
const OPEN_BYTES: usize = 256 << 20;

/// The merged, time-ordered records of a trace.
///
/// A lending stream: each [`EventStream::next`] borrows the stream, because
/// records point into buffers the stream decompressed. For parallel work on
/// many events at once, take a [`Batch`] with [`EventStream::next_batch`]:
/// it holds its buffers, so the stream can go on while it is worked on.
pub struct EventStream<'t, 'd> {
    trace: &'t Trace<'d>,
    buffers: Buffers<'t>,
    /// Buffer indices by (first timestamp, file order): 4 bytes a buffer,
    /// little-endian (in a temporary file when large, [`Stored`]).
    order: Stored,
    next_open: usize,
    /// (timestamp of the buffer's next record, position in `order`).
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Loaded buffers by position in `order`, from position `slots_from`
    /// (earlier ones are done) to the last loaded: a window of the order
    /// about as long as the buffers open at once, not a slot per buffer of
    /// the file. Boxed: an empty slot costs a pointer.
    slots: VecDeque<Option<Box<LoadedBuffer<'t>>>>,
    slots_from: usize,
    /// Buffers whose last record was handed out; freed on the next advance.
    retired: Vec<u32>,
    /// Pages of finished buffers go back to the OS (for a trace opened from a file).
    releaser: Releaser<'t, 'd>,
    pending_errors: VecDeque<Error>,
    /// Bytes of the buffers open in the heap.
    open_bytes: usize,
    /// Timestamp of the latest event handed out.
    last_timestamp: u64,
    /// Buffers opened late because [`OPEN_BYTES`] were open.
    reordered: u64,
    /// Damage along the chain of buffers, reported after every event.
    walk_damage: VecDeque<Error>,
    /// Batches handed out.
    batches: u64,
    /// A batch's list of events handed back ([`EventStream::reuse`]).
    spare_events: Vec<EventRef>,
    /// Whether buffers are loaded on the thread pool ([`EventStream::loading_alone`]).
    parallel_loads: bool,
}

impl std::fmt::Debug for EventStream<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").field("buffers", &self.order_len()).field("next_open", &self.next_open).finish()
    }
}

impl<'t, 'd> EventStream<'t, 'd> {
    pub fn new(trace: &'t Trace<'d>) -> Self {
        // A buffer without records sorts where its predecessor in the file
        // does (`sort_time`), so its errors surface near the events around it.
        let buffers = trace.buffers();
        let mut order: Vec<u32> = (0..buffers.len() as u32).collect();
        order.sort_unstable_by_key(|&i| (buffers.sort_time(i as usize), i));
        let order = trace.keep_table(order.iter().flat_map(|i| i.to_le_bytes()).collect());
        // The sort read every index entry.
        trace.release_index();
        EventStream {
            trace,
            buffers,
            order,
            next_open: 0,
            heap: BinaryHeap::new(),
            slots: VecDeque::new(),
            slots_from: 0,
            retired: Vec::new(),
            releaser: Releaser::new(trace),
            pending_errors: VecDeque::new(),
            open_bytes: 0,
            last_timestamp: 0,
            reordered: 0,
            walk_damage: trace.damage().iter().cloned().collect(),
            batches: 0,
            spare_events: Vec::new(),
            parallel_loads: true,
        }
    }

    /// The stream for a thread of its own beside a pool busy with its
    /// batches: it loads buffers itself, as loads queued on the pool would
    /// wait for the batch before to be done, and the merge with them.
    pub(crate) fn loading_alone(mut self) -> Self {
        self.parallel_loads = false;
        self
    }

    /// The buffer index at a position of the order.
    fn order_at(&self, position: usize) -> Option<u32> {
        crate::bytes::u32_at(self.order.bytes(), position.checked_mul(4)?)
    }

    fn order_len(&self) -> usize {
        self.order.bytes().len() / 4
    }

    fn slot(&self, position: usize) -> Option<&LoadedBuffer<'t>> {
        self.slots.get(position.checked_sub(self.slots_from)?)?.as_deref()
    }

    fn is_loaded(&self, position: usize) -> bool {
        self.slot(position).is_some()
    }

    fn put(&mut self, position: usize, buffer: LoadedBuffer<'t>) {
        let Some(at) = position.checked_sub(self.slots_from) else { return };
        if self.slots.len() <= at {
            self.slots.resize_with(at + 1, || None);
        }
        self.slots[at] = Some(Box::new(buffer));
    }

    /// Empties a slot, and drops the slots before the first still loaded
    /// among those opened.
    fn take(&mut self, position: usize) -> Option<Box<LoadedBuffer<'t>>> {
        let taken = self.slots.get_mut(position.checked_sub(self.slots_from)?)?.take();
        while self.slots_from < self.next_open && self.slots.front().is_some_and(Option::is_none) {
            self.slots.pop_front();
            self.slots_from += 1;
        }
        taken
    }

    /// Loads the buffer at `position` and the next ones in parallel. The
    /// workers read the headers too: reading one maps its buffer's pages.
    fn prefetch(&mut self, position: usize) {
        let most = (BATCH_BYTES / self.trace.session().buffer_size.max(1) as usize).clamp(1, BATCH_BUFFERS);
        let wanted: Vec<(usize, u32)> = (position..self.order_len())
            .filter(|&p| !self.is_loaded(p))
            .take(most)
            .filter_map(|p| Some((p, self.order_at(p)?)))
            .collect();
        let (trace, buffers) = (self.trace, self.buffers);
        let load_at = |&(p, i): &(usize, u32)| Some((p, load(trace, &buffers.get(i as usize)?)));
        let loaded: Vec<(usize, LoadedBuffer<'t>)> = if self.parallel_loads && wanted.len() > 1 {
            wanted.par_iter().filter_map(load_at).collect()
        } else {
            wanted.iter().filter_map(load_at).collect()
        };
        for (p, buffer) in loaded {
            self.put(p, buffer);
        }
    }

    /// Opens the next buffer in order: its first record joins the heap.
    fn open_next(&mut self) {
        let position = self.next_open;
        self.next_open += 1;
        // The order's pages read so far go back now and then (one call
        // for many buffers: the order is read along, a page at a time).
        if position % ORDER_RELEASE_EVERY == ORDER_RELEASE_EVERY - 1 {
            self.order.release();
        }
        if !self.is_loaded(position) {
            self.prefetch(position);
        }
        let Some(buffer) = slot_mut(&mut self.slots, self.slots_from, position) else {
            return;
        };
        match buffer.index.first() {
            Some(&(ts, _)) => {
                if ts < self.last_timestamp {
                    self.reordered += 1;
                }
                self.open_bytes += buffer.info().header.filled as usize;
                self.heap.push(Reverse((ts, position as u32)));
            }
            None => {
                self.pending_errors.extend(buffer.errors.drain(..));
                self.releaser.done(buffer.info());
                self.take(position);
            }
        }
    }

    /// Frees the buffers finished by earlier calls. Events resolved before
    /// this call must not be used after it (the borrow checker enforces it).
    fn release(&mut self) {
        for info in self.take_retired() {
            self.releaser.done(&info);
        }
    }

    /// Frees the buffers whose last event was handed out, and says which.
    fn take_retired(&mut self) -> Vec<BufferInfo> {
        let mut finished = Vec::new();
        for position in std::mem::take(&mut self.retired) {
            if let Some(buffer) = self.take(position as usize) {
                self.open_bytes = self.open_bytes.saturating_sub(buffer.info().header.filled as usize);
                finished.push(*buffer.info());
            }
        }
        finished
    }

    /// How many buffers were opened after events later than their first,
    /// because too many buffers overlapped in time (a trace built to exhaust
    /// memory): their earlier events came out of time order. 0 for real traces.
    pub fn reordered(&self) -> u64 {
        self.reordered
    }

    /// The next position in time order, or an error to report in its place.
    fn advance(&mut self) -> Option<Result<Placed, Error>> {
        loop {
            if let Some(error) = self.pending_errors.pop_front() {
                return Some(Err(error));
            }
            // Open every buffer whose first record is not later than the
            // earliest record of the open ones.
            while let Some(first) = self.order_at(self.next_open).and_then(|i| self.buffers.sort_time(i as usize)) {
                if self.heap.peek().is_some_and(|Reverse((ts, _))| first > *ts) {
                    break;
                }
                if self.open_bytes >= OPEN_BYTES && !self.heap.is_empty() {
                    break;
                }
                self.open_next();
                if !self.pending_errors.is_empty() {
                    break;
                }
            }
            if !self.pending_errors.is_empty() {
                continue;
            }
            let Some(mut top) = self.heap.peek_mut() else {
                return self.walk_damage.pop_front().map(Err);
            };
            let Reverse((_, position)) = *top;
            let Some(buffer) = slot_mut(&mut self.slots, self.slots_from, position as usize) else {
                PeekMut::pop(top);
                continue;
            };
            let Some(&(timestamp, offset)) = buffer.index.get(buffer.next) else {
                PeekMut::pop(top);
                continue;
            };
            buffer.next += 1;
            match buffer.index.get(buffer.next) {
                // The buffer's next record takes its place: one sift, not a pop and a push.
                Some(&(ts, _)) => *top = Reverse((ts, position)),
                None => {
                    PeekMut::pop(top);
                    self.pending_errors.extend(buffer.errors.drain(..));
                    self.retired.push(position);
                }
            }
            self.last_timestamp = self.last_timestamp.max(timestamp);
            return Some(Ok(Placed { position, offset, timestamp }));
        }
    }

    /// The next event in time order, or an error in its place (reported after
    /// every good event before it; reading goes on with the other buffers).
    #[allow(clippy::should_implement_trait)] // a lending stream cannot be an Iterator
    pub fn next(&mut self) -> Option<Result<Event<'_>, Error>> {
        self.release();
        match self.advance()? {
            // Resolving cannot fail: the position was indexed by parsing this record.
            Ok(placed) => {
                let view = &self.slot(placed.position as usize)?.view;
                view.event(placed.offset, placed.timestamp, self.trace.pointer_size()).map(Ok)
            }
            Err(e) => Some(Err(e)),
        }
    }

    /// Takes back a batch's list of events ([`Batch::into_events`]) to hold
    /// the next batch's. A list is up to a megabyte: allocated afresh for
    /// every batch and freed on another thread, such lists left glibc's
    /// arenas fragmented, and a pass's peak memory grew with the trace.
    pub fn reuse(&mut self, mut events: Vec<EventRef>) {
        events.clear();
        self.spare_events = events;
    }

    /// Up to `max` next events and the damage met on the way; empty at the end.
    pub fn next_batch(&mut self, max: usize) -> Batch<'t> {
        self.release();
        self.batches += 1;
        let mut events = std::mem::take(&mut self.spare_events);
        events.reserve(max.min(1 << 16));
        let mut batch = Batch {
            events,
            damage: Vec::new(),
            buffers: Vec::new(),
            finished: Vec::new(),
            pointer_size: self.trace.pointer_size(),
        };
        for _ in 0..max {
            match self.advance() {
                Some(Ok(placed)) => {
                    let Some(loaded) = slot_mut(&mut self.slots, self.slots_from, placed.position as usize) else {
                        continue;
                    };
                    let buffer = match loaded.in_batch {
                        Some((batch_no, buffer)) if batch_no == self.batches => buffer,
                        _ => {
                            let buffer = batch.buffers.len() as u32;
                            batch.buffers.push(Arc::clone(&loaded.view));
                            loaded.in_batch = Some((self.batches, buffer));
                            buffer
                        }
                    };
                    batch.events.push(EventRef { buffer, offset: placed.offset, timestamp: placed.timestamp });
                }
                Some(Err(e)) => batch.damage.push(e),
                None => break,
            }
        }
        // The batch holds what it needs of them; their pages go back when
        // it is worked on (released now, they would be mapped again).
        batch.finished = self.take_retired();
        batch
    }
}

/// The loaded buffer at `position` of a window of slots starting at `from`
/// (a function of the fields it uses, so the rest of the stream stays free).
fn slot_mut<'s, 't>(
    slots: &'s mut VecDeque<Option<Box<LoadedBuffer<'t>>>>,
    from: usize,
    position: usize,
) -> Option<&'s mut LoadedBuffer<'t>> {
    slots.get_mut(position.checked_sub(from)?)?.as_deref_mut()
}

impl<'d> Trace<'d> {
    /// All records of the trace in time order.
    pub fn events(&self) -> EventStream<'_, 'd> {
        EventStream::new(self)
    }
}
