//! What `nettrail info` reports: counts by provider and record kind, lost
//! data, compression, time span — gathered in one parallel pass over buffers
//! (file order is enough for counting).

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;

use crate::error::Error;
use crate::extended::{ExtType, provider_traits_name};
use crate::guid::Guid;
use crate::record::HeaderKind;
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

#[derive(Default)]
struct ProviderCounts {
    events: u64,
    kinds: u16,
    tracelogging: bool,
    name: Option<String>,
}

#[derive(Default)]
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
            let mine = self.providers.entry(guid).or_default();
            mine.events += counts.events;
            mine.kinds |= counts.kinds;
            mine.tracelogging |= counts.tracelogging;
            if mine.name.is_none() {
                mine.name = counts.name;
            }
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

fn summarize_buffer(trace: &Trace<'_>, info: &BufferInfo, scratch: &mut Vec<u8>) -> Partial {
    let mut p = Partial::default();
    let s = &mut p.summary;
    s.buffers = 1;
    s.compressed_buffers = u64::from(info.header.is_compressed());
    s.buffers_flagged_events_lost = u64::from(info.header.flags.contains(crate::buffer::BufferFlags::EVENTS_LOST));
    s.buffers_flagged_buffer_lost = u64::from(info.header.flags.contains(crate::buffer::BufferFlags::BUFFER_LOST));
    s.stored_bytes = info.stored_len as u64;
    s.logical_bytes = u64::from(info.header.filled);
    s.unused_bytes = info.unused_tail() as u64;

    let contents = trace.contents(info, scratch);
    let mut kinds = [0u64; HeaderKind::ALL.len()];
    for item in trace.records(info, &contents) {
        let record = match item {
            Ok((_, record)) => record,
            Err(e) => {
                s.errors.push(e);
                break;
            }
        };
        s.events += 1;
        let k = HeaderKind::ALL.iter().position(|k| *k == record.kind).unwrap_or(0);
        kinds[k] += 1;
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
        let counts = p.providers.entry(record.provider).or_default();
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
    for (k, n) in HeaderKind::ALL.iter().zip(kinds) {
        if n > 0 {
            s.record_kinds.insert(*k, n);
        }
    }
    s.errors.extend(contents.error);
    p
}

impl Summary {
    /// Counts every record of every buffer, in parallel across buffers.
    pub fn compute(trace: &Trace<'_>) -> Summary {
        let partial = trace
            .buffers()
            .par_iter()
            .map_init(Vec::new, |scratch, info| summarize_buffer(trace, info, scratch))
            .reduce(Partial::default, Partial::merge);
        let mut summary = partial.summary;
        summary.errors.sort_by_key(|e| (e.location.buffer_index, e.location.offset_in_buffer));
        summary.errors.extend(trace.walk_error().cloned());
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
