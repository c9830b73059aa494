//! One pass over a trace: events come from the merge in batches; each batch
//! is decoded and read in parallel (only the providers the model knows are
//! decoded at all), then applied to the model in time order.

use nettrail_decode::{LookupCache, Schemas, Value};
use std::ops::ControlFlow;

use nettrail_etl::{Batching, Chunk, Clock, Error, Record, Trace};
use nettrail_stacks::StackRef;

use crate::event::{Head, Props};
use crate::model::Network;
use crate::providers::kernel_tcpip::Plans;
use crate::providers::{Body, NetEvent, Source, app, chromium, extract, kernel_transfer, source_of, starts_something};

const BATCH: usize = 64 * 1024;
const CHUNK: usize = 4096;

/// The model of a trace, and the damage met on the way (events after damage
/// in a buffer are lost; everything before it was used).
#[derive(Debug)]
pub struct Analysis {
    pub network: Network,
    pub damage: Vec<Error>,
    /// Buffers read out of time order because too many overlapped (see
    /// `EventStream::reordered`); 0 for real traces.
    pub reordered: u64,
}

fn read_chunk(chunk: Chunk<'_, '_>, schemas: &Schemas, clock: &Clock) -> Vec<NetEvent> {
    let mut out = Vec::new();
    let mut values: Vec<Value<'_>> = Vec::new();
    let mut cache = LookupCache::default();
    let mut plans = Plans::default();
    for event in chunk.events() {
        let at = Where {
            time: clock.to_filetime(event.timestamp),
            pid: event.process_id,
            tid: event.thread_id,
            related: event.extended.related_activity_id().unwrap_or_default(),
        };
        out.extend(net_event(&event.record, at, schemas, &mut cache, &mut plans, &mut values));
    }
    out
}

/// When and on which thread a record happened, as the reader resolved it.
pub(crate) struct Where {
    pub time: crate::event::Time,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub related: nettrail_etl::Guid,
}

/// A record's meaning for the model; `None` for what the model does not read.
pub(crate) fn net_event<'a>(
    record: &Record<'a>,
    at: Where,
    schemas: &Schemas,
    cache: &mut LookupCache,
    plans: &mut Plans,
    values: &mut Vec<Value<'a>>,
) -> Option<NetEvent> {
    let source = source_of(&record.provider);
    let mut read = || {
        if source.is_none() && !app::is_span_edge(record) {
            return None;
        }
        if let Some((transport, code)) = source.and_then(|source| kernel_transfer(source, record))
            && let Ok((schema, Some(layout))) = schemas.schema_cached(cache, record)
            && let Some(event) = plans.extract(transport, code, schema, layout, record)
        {
            return Some(Body::KernelNet(event?));
        }
        let schema = schemas.decode_cached(cache, record, values).ok()?;
        let props = Props::new(&schema.fields, values);
        match source {
            Some(Source::Chromium(browser)) => {
                Some(Body::Chromium(Box::new(chromium::extract(browser, record, schema.name.as_deref(), &props)?)))
            }
            Some(source) => extract(source, record, &props),
            None => Some(Body::App(app::extract(record, schema.name.as_deref())?)),
        }
    };
    let body = match read() {
        Some(body) => body,
        None if !record.activity_id.is_zero() || !at.related.is_zero() => Body::InActivity,
        None => return None,
    };
    let stack = starts_something(&body).then(|| StackRef::of_record(record, at.tid));
    let head = Head {
        time: at.time,
        raw: record.timestamp,
        pid: at.pid,
        tid: at.tid,
        activity: record.activity_id,
        related: at.related,
        stack,
    };
    Some(NetEvent { head, body })
}

/// Chunks the model applies between two [`give_back_freed_memory`] (about
/// four million events: each call unmaps free pages that the next
/// allocations fault in again, 10 % of `requests`' time when every 64).
const TRIM_EVERY: usize = 1024;

/// Hands the pages of freed memory back to the OS. The events a reader
/// thread decodes are freed on the model's thread, into the reader's arena,
/// and glibc's `free` gives pages back only from the top of a heap: on a
/// 10 GB trace `requests`' peak was 130 MB, 122 MB with this (113 MB at
/// 1 GB; docs/performance.md, eighth pass).
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointer; it walks glibc's own arenas,
    // each under its lock (MT-Safe in glibc's manual), and only releases
    // pages of free chunks: no live allocation is touched.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Builds the network model of a trace. `progress` is told the raw
/// timestamp the merge has reached after each batch.
///
/// Reading (merge, decode) and applying overlap: the model is built on its
/// own thread from chunks handed over a short queue, so the sequential
/// merge and the sequential model each get a core.
pub fn analyze(trace: &Trace<'_>, schemas: &Schemas, progress: &mut dyn FnMut(u64)) -> Analysis {
    let clock = trace.clock();
    let mut last_raw = trace.header_timestamp();
    let batching = Batching { batch: BATCH, chunk: CHUNK };
    let (network, driven) = std::thread::scope(|scope| {
        // Two batches' worth of chunks in flight at most.
        let (to_model, chunks) = std::sync::mpsc::sync_channel::<Vec<NetEvent>>(2 * BATCH / CHUNK);
        let start = clock.to_filetime(trace.header_timestamp());
        let model = scope.spawn(move || {
            let mut network = Network::new(start);
            for (n, chunk) in chunks.into_iter().enumerate() {
                for event in chunk {
                    network.apply(event);
                }
                if (n + 1) % TRIM_EVERY == 0 {
                    give_back_freed_memory();
                }
            }
            network
        });
        let driven = nettrail_etl::drive(
            trace,
            batching,
            |chunk| read_chunk(chunk, schemas, clock),
            |events| if to_model.send(events).is_err() { ControlFlow::Break(()) } else { ControlFlow::Continue(()) },
            |raw| {
                last_raw = last_raw.max(raw);
                progress(last_raw);
            },
        );
        drop(to_model);
        // The model thread only applies events; it cannot fail but by a bug.
        (model.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)), driven)
    });
    let mut network = network;
    network.trace_end = network.trace_end.max(clock.to_filetime(last_raw));
    Analysis { network, damage: driven.damage, reordered: driven.reordered }
}
