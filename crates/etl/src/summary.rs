//! What `nettrail info` reports: counts by provider and record kind, lost
//! data, compression, time span — gathered in one parallel pass over buffers
//! (file order is enough for counting), or record by record in a caller's
//! own pass ([`BufferSummary`]).

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::Error;
use crate::extended::{ExtType, provider_traits_name};
use crate::guid::Guid;
use crate::record::{HeaderKind, Record};
use crate::trace::{BufferInfo, Trace};
use crate::well_known;

/// Event counts of one provider (or kernel group, or classic event class).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProviderSummary {
    pub guid: Guid,
    /// From the trace (TraceLogging provider traits) or the built-in table.
    pub name: Option<String>,
    pub events: u64,
    /// Record kinds this provider's events used.
    pub kinds: Vec<HeaderKind>,
    pub tracelogging: bool,
}

/// Facts about the records of a whole trace.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Every record, the header event included.
    pub events: u64,
    pub record_kinds: BTreeMap<HeaderKind, u64>,
    /// By descending event count, then GUID.
    pub providers: Vec<ProviderSummary>,
    pub buffers: u64,
    pub compressed_buffers: u64,
    /// Buffers flagged EVENTS_LOST / BUFFER_LOST by the session.
    pub buffers_flagged_events_lost: u64,
    pub buffers_flagged_buffer_lost: u64,
    /// Raw timestamps of the earliest and latest record.
    pub first_timestamp: Option<u64>,
    pub last_timestamp: Option<u64>,
    pub tracelogging_events: u64,
    /// Extended data items by type.
    pub extended_items: BTreeMap<ExtType, u64>,
    /// Bytes of stored (compressed) and logical buffers.
    pub stored_bytes: u64,
    pub logical_bytes: u64,
    /// Bytes after the records of uncompressed buffers (fill).
    pub unused_bytes: u64,
    /// Damage found, in file order; the counts cover every record before it.
    pub errors: Vec<Error>,
}

#[derive(Debug, Default)]
struct ProviderCounts {
    events: u64,
    kinds: u16,
    tracelogging: bool,
    name: Option<String>,
}

impl ProviderCounts {
    fn add(&mut self, other: ProviderCounts) {
        self.events += other.events;
        self.kinds |= other.kinds;
        self.tracelogging |= other.tracelogging;
        if self.name.is_none() {
            self.name = other.name;
        }
    }
}

#[derive(Debug, Default)]
struct Partial {
    summary: Summary,
    providers: HashMap<Guid, ProviderCounts>,
}

impl Partial {
    fn merge(mut self, other: Partial) -> Partial {
        let (a, b) = (&mut self.summary, other.summary);
        a.events += b.events;
        for (k, n) in b.record_kinds {
            *a.record_kinds.entry(k).or_default() += n;
        }
        a.buffers += b.buffers;
        a.compressed_buffers += b.compressed_buffers;
        a.buffers_flagged_events_lost += b.buffers_flagged_events_lost;
        a.buffers_flagged_buffer_lost += b.buffers_flagged_buffer_lost;
        a.first_timestamp = min_opt(a.first_timestamp, b.first_timestamp);
        a.last_timestamp = a.last_timestamp.max(b.last_timestamp);
        a.tracelogging_events += b.tracelogging_events;
        for (k, n) in b.extended_items {
            *a.extended_items.entry(k).or_default() += n;
        }
        a.stored_bytes += b.stored_bytes;
        a.logical_bytes += b.logical_bytes;
        a.unused_bytes += b.unused_bytes;
        a.errors.extend(b.errors);
        for (guid, counts) in other.providers {
            self.providers.entry(guid).or_default().add(counts);
        }
        self
    }
}

fn min_opt(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, None) => x,
        (None, y) => y,
    }
}

fn kind_bit(kind: HeaderKind) -> u16 {
    let position = HeaderKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
    1 << position
}

/// The summary of one buffer, record by record. [`Summary::compute`] reads
/// buffers for this alone; a pass that reads the records for more (`nettrail
/// info`) adds them to its own, so the trace is read once, and gives them to
/// [`Summary::from_buffers`].
#[derive(Debug)]
pub struct BufferSummary {
    partial: Partial,
    kinds: [u64; HeaderKind::ALL.len()],
    /// The providers of the latest records, counted here and moved to the
    /// map when pushed out: a buffer's records come from a few providers,
    /// so most find theirs in this short list without hashing a GUID.
    recent: Vec<(Guid, ProviderCounts)>,
}

/// How many providers [`BufferSummary`] counts outside its map.
const RECENT_PROVIDERS: usize = 8;

impl BufferSummary {
    pub fn new(info: &BufferInfo) -> BufferSummary {
        let mut partial = Partial::default();
        let s = &mut partial.summary;
        s.buffers = 1;
        s.compressed_buffers = u64::from(info.header.is_compressed());
        s.buffers_flagged_events_lost = u64::from(info.header.flags.contains(crate::buffer::BufferFlags::EVENTS_LOST));
        s.buffers_flagged_buffer_lost = u64::from(info.header.flags.contains(crate::buffer::BufferFlags::BUFFER_LOST));
        s.stored_bytes = info.stored_len as u64;
        s.logical_bytes = u64::from(info.header.filled);
        s.unused_bytes = info.unused_tail() as u64;
        BufferSummary { partial, kinds: [0; HeaderKind::ALL.len()], recent: Vec::with_capacity(RECENT_PROVIDERS) }
    }

    /// The counts of a provider's records in this buffer.
    fn provider(&mut self, guid: Guid) -> &mut ProviderCounts {
        let i = match self.recent.iter().position(|(g, _)| *g == guid) {
            Some(i) => i,
            None => {
                if self.recent.len() == RECENT_PROVIDERS {
                    let (g, counts) = self.recent.swap_remove(0);
                    self.partial.providers.entry(g).or_default().add(counts);
                }
                self.recent.push((guid, ProviderCounts::default()));
                self.recent.len() - 1
            }
        };
        &mut self.recent[i].1
    }

    /// Counts a record of the buffer (in file order).
    pub fn add(&mut self, record: &Record<'_>) {
        let s = &mut self.partial.summary;
        s.events += 1;
        let k = HeaderKind::ALL.iter().position(|k| *k == record.kind).unwrap_or(0);
        self.kinds[k] += 1;
        s.first_timestamp = min_opt(s.first_timestamp, Some(record.timestamp));
        s.last_timestamp = s.last_timestamp.max(Some(record.timestamp));
        let mut tracelogging = false;
        if !record.extended.is_empty() {
            for item in record.extended.iter() {
                *s.extended_items.entry(item.ext_type).or_default() += 1;
                tracelogging |= item.ext_type == ExtType::EVENT_SCHEMA_TL;
            }
        }
        s.tracelogging_events += u64::from(tracelogging);
        let counts = self.provider(record.provider);
        counts.events += 1;
        counts.kinds |= kind_bit(record.kind);
        if tracelogging {
            counts.tracelogging = true;
            if counts.name.is_none() {
                counts.name = record
                    .extended
                    .find(ExtType::PROV_TRAITS)
                    .and_then(|t| provider_traits_name(t.data))
                    .map(str::to_owned);
            }
        }
    }

    /// Damage that ended the buffer's records (after the records before it).
    pub fn damaged(&mut self, error: Error) {
        self.partial.summary.errors.push(error);
    }

    /// The summary of this buffer's records and `other`'s, following them
    /// (a pass that folds buffers together, in file order).
    pub fn merge(self, other: BufferSummary) -> BufferSummary {
        let partial = self.into_partial().merge(other.into_partial());
        BufferSummary { partial, kinds: [0; HeaderKind::ALL.len()], recent: Vec::new() }
    }

    fn into_partial(mut self) -> Partial {
        for (guid, counts) in self.recent {
            self.partial.providers.entry(guid).or_default().add(counts);
        }
        for (k, n) in HeaderKind::ALL.iter().zip(self.kinds) {
            if n > 0 {
                self.partial.summary.record_kinds.insert(*k, n);
            }
        }
        self.partial
    }
}

fn summarize_buffer(trace: &Trace<'_>, info: &BufferInfo, scratch: &mut Vec<u8>) -> BufferSummary {
    let mut summary = BufferSummary::new(info);
    let contents = trace.contents(info, scratch);
    for item in trace.records(info, &contents) {
        match item {
            Ok((_, record)) => summary.add(&record),
            Err(e) => {
                summary.damaged(e);
                break;
            }
        }
    }
    if let Some(e) = contents.error {
        summary.damaged(e);
    }
    summary
}

impl Summary {
    /// Counts every record of every buffer, in parallel across buffers.
    pub fn compute(trace: &Trace<'_>) -> Summary {
        let partial = trace
            .buffers()
            .par_iter()
            .map_init(Vec::new, |scratch, info| summarize_buffer(trace, &info, scratch).into_partial())
            .reduce(Partial::default, Partial::merge);
        Summary::finish(partial, trace)
    }

    /// The summary of a trace from the summaries of its buffers, in file order.
    pub fn from_buffers(trace: &Trace<'_>, buffers: impl IntoIterator<Item = BufferSummary>) -> Summary {
        let partial = buffers.into_iter().map(BufferSummary::into_partial).fold(Partial::default(), Partial::merge);
        Summary::finish(partial, trace)
    }

    fn finish(partial: Partial, trace: &Trace<'_>) -> Summary {
        let mut summary = partial.summary;
        summary.errors.sort_by_key(|e| (e.location.buffer_index, e.location.offset_in_buffer));
        summary.errors.extend(trace.damage().iter().cloned());
        let mut providers: Vec<ProviderSummary> = partial
            .providers
            .into_iter()
            .map(|(guid, c)| ProviderSummary {
                guid,
                name: c.name.or_else(|| well_known::provider_name(&guid).map(str::to_owned)),
                events: c.events,
                kinds: HeaderKind::ALL.iter().copied().filter(|k| c.kinds & kind_bit(*k) != 0).collect(),
                tracelogging: c.tracelogging,
            })
            .collect();
        providers.sort_by(|a, b| b.events.cmp(&a.events).then(a.guid.cmp(&b.guid)));
        summary.providers = providers;
        summary
    }
}
