//! The one loop every decoding pass runs: the trace's events in time order,
//! taken from the merge in batches, each batch cut into chunks worked on in
//! parallel, the chunks' results handed on in order.
//!
//! The merge is sequential; decoding and formatting are not. Passes that
//! need the events in order (the network model, a dump, an export) get them
//! so, while the work per event runs on every core. The merge runs on its
//! own thread one batch ahead, so it is not waited for between batches.

use std::ops::ControlFlow;

use rayon::prelude::*;

use crate::error::Error;
use crate::merge::{Batch, Event, EventRef};
use crate::trace::{Releaser, Trace};

/// Batch and chunk sizes of a pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batching {
    /// Events taken from the merge at a time (the memory a pass holds).
    pub batch: usize,
    /// Events per parallel task.
    pub chunk: usize,
}

impl Default for Batching {
    fn default() -> Self {
        Batching { batch: 32 * 1024, chunk: 2048 }
    }
}

/// Consecutive events of the stream, for one parallel task.
#[derive(Clone, Copy, Debug)]
pub struct Chunk<'s, 't> {
    batch: &'s Batch<'t>,
    events: &'s [EventRef],
}

impl<'s> Chunk<'s, '_> {
    /// The chunk's events in time order (damage is reported by [`drive`]).
    pub fn events(&self) -> impl Iterator<Item = Event<'s>> + '_ {
        self.events.iter().filter_map(|r| self.batch.event(*r))
    }

    /// Events in the chunk.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a pass met: the damage, in stream order, and how many buffers the
/// merge read out of time order ([`crate::EventStream::reordered`]).
#[derive(Debug, Default)]
pub struct Driven {
    pub damage: Vec<Error>,
    pub reordered: u64,
}

/// Runs `work` on every chunk of the trace's events, in parallel, and hands
/// the results to `done` in time order; `done` can stop the pass.
/// `progress` is told the raw timestamp reached after each batch.
pub fn drive<T: Send>(
    trace: &Trace<'_>,
    batching: Batching,
    work: impl Fn(Chunk<'_, '_>) -> T + Sync,
    mut done: impl FnMut(T) -> ControlFlow<()>,
    mut progress: impl FnMut(u64),
) -> Driven {
    let mut driven = Driven::default();
    let chunk = batching.chunk.max(1);
    let max = batching.batch.max(1);
    std::thread::scope(|scope| {
        // No queue: the merge hands over a batch when the last one is done
        // (two batches' buffers held at most).
        let (to_work, batches) = std::sync::mpsc::sync_channel::<Batch<'_>>(0);
        // Lists of events worked on go back to the merge for the next batch.
        let (to_merge, worked) = std::sync::mpsc::channel::<Vec<EventRef>>();
        let merge = scope.spawn(move || {
            let mut stream = trace.events().loading_alone();
            loop {
                if let Ok(events) = worked.try_recv() {
                    stream.reuse(events);
                }
                let batch = stream.next_batch(max);
                if batch.is_empty() || to_work.send(batch).is_err() {
                    break;
                }
            }
            stream.reordered()
        });
        let mut releaser = Releaser::new(trace);
        'batches: for batch in &batches {
            driven.damage.extend_from_slice(batch.damage());
            let events = batch.events();
            let results: Vec<T> =
                events.par_chunks(chunk).map(|events| work(Chunk { batch: &batch, events })).collect();
            for result in results {
                if done(result).is_break() {
                    break 'batches;
                }
            }
            if let Some(last) = events.last() {
                progress(last.timestamp);
            }
            for info in batch.finished() {
                releaser.done(info);
            }
            // The merge may be gone (at the end of the trace).
            let _ = to_merge.send(batch.into_events());
        }
        // A pass stopped early stops the merge at its next hand-over.
        drop(batches);
        driven.reordered = merge.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    });
    driven
}
