//! The model fed one record at a time, as a real-time session delivers
//! events (`nettrail live`), instead of from a file's merged buffers.

use nettrail_decode::{LookupCache, Schemas};
use nettrail_etl::Record;

use crate::analyze::{Where, net_event};
use crate::event::Time;
use crate::model::Network;
use crate::providers::kernel_tcpip::Plans;

/// A network model that grows as records arrive.
#[derive(Debug)]
pub struct Live {
    network: Network,
    schemas: Schemas,
    cache: LookupCache,
    plans: Plans,
}

impl Live {
    /// A model whose records carry FILETIME timestamps (a real-time
    /// consumer's default), starting at `start`.
    pub fn new(schemas: Schemas, start: Time) -> Live {
        Live { network: Network::new(start), schemas, cache: LookupCache::default(), plans: Plans::default() }
    }

    /// Applies one record, which must come in time order. Its timestamp is
    /// the FILETIME the consumer received.
    pub fn push(&mut self, record: &Record<'_>) {
        let at = Where {
            time: record.timestamp as Time,
            pid: record.process_id,
            tid: record.thread_id,
            related: record.extended.related_activity_id().unwrap_or_default(),
        };
        // Rows still open end where the trace has reached, by any event (as a file's do).
        self.network.trace_end = self.network.trace_end.max(at.time);
        let mut values = Vec::new();
        if let Some(event) = net_event(record, at, &self.schemas, &mut self.cache, &mut self.plans, &mut values) {
            self.network.apply(event);
        }
    }

    /// The model so far (its `report()` gives the tables).
    pub fn network(&self) -> &Network {
        &self.network
    }
}
