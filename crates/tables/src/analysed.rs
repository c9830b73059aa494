//! A trace read and analysed: what every table starts from.

use nettrail_decode::Schemas;
use nettrail_decode::fasthash::FastMap;
use nettrail_etl::Trace;
use nettrail_net::{Analysis, Report};
use nettrail_stacks::Symbols;

use crate::columns::Request;
use crate::select::Filters;

/// The trace, its schemas and its network model.
#[derive(Debug)]
pub struct Analysed<'f> {
    pub trace: Trace<'f>,
    pub schemas: Schemas,
    pub analysis: Analysis,
}

impl<'f> Analysed<'f> {
    /// Builds the network model (one pass over the trace); `progress` is
    /// told how far, from 0 to 1, the pass has come.
    pub fn new(trace: Trace<'f>, schemas: Schemas, progress: &mut dyn FnMut(f64)) -> Analysed<'f> {
        let first = trace.header_timestamp();
        let last = trace.last_buffer_start().unwrap_or(first);
        let span = last.saturating_sub(first).max(1) as f64;
        let analysis =
            nettrail_net::analyze(&trace, &schemas, &mut |ts| progress(ts.saturating_sub(first) as f64 / span));
        Analysed { trace, schemas, analysis }
    }

    pub fn report(&self) -> Report {
        self.analysis.network.report()
    }

    /// Stitches the stacks of `rows`: one more pass over the trace, for the
    /// stacks of the processes involved and every process's modules.
    pub fn stitch(&self, rows: &mut [Request<'_>], symbols: &impl Symbols) {
        let net = &self.analysis.network;
        let mut pids: FastMap<u32, ()> = FastMap::default();
        for r in rows.iter() {
            for origin in &r.started_by {
                for hop in net.pools.chain(origin) {
                    pids.extend(hop.origin.pid.map(|p| (p, ())));
                }
            }
        }
        if pids.is_empty() {
            return;
        }
        let code = nettrail_stacks::scan(&self.trace, &self.schemas, &|pid| pids.contains_key(&pid));
        for r in rows {
            r.stacks = net.stitch(&r.started_by, &code, symbols);
        }
    }
}

/// The request rows that the filters keep, numbered in the report's order
/// (outbound, inbound, listen; each by start): the number `nettrail stack
/// --request` takes.
pub fn requests<'r>(report: &'r Report, filters: &Filters) -> Vec<Request<'r>> {
    report
        .requests
        .iter()
        .enumerate()
        .map(|(i, row)| Request { number: i + 1, row, stacks: None })
        .filter(|r| filters.keeps(r))
        .collect()
}
