//! How much of a trace decodes: per provider, events decoded (by schema
//! source) and not decoded (by reason). One parallel pass over buffers.

use std::collections::BTreeMap;

use nettrail_etl::{Guid, Trace};
use rayon::prelude::*;

use crate::fasthash::FastMap;
use crate::registry::{Schemas, Undecoded};
use crate::schema::Source;

const SOURCES: [Source; 6] = [
    Source::TraceLogging,
    Source::EmbeddedEventInfo,
    Source::EventSourceManifest,
    Source::Manifest,
    Source::BuiltIn,
    Source::Kernel,
];

const REASONS: [&str; 5] = [
    "no schema for the provider",
    "no schema for the event",
    "payload does not match the schema",
    "WPP message without TMF",
    "bad TraceLogging metadata",
];

/// Decoding results of one provider's events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderCoverage {
    pub decoded: BTreeMap<Source, u64>,
    pub undecoded: BTreeMap<&'static str, u64>,
}

/// Counters of one provider while a buffer is read (arrays, not maps: this
/// runs for every record).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    decoded: [u64; SOURCES.len()],
    undecoded: [u64; REASONS.len()],
}

impl Counts {
    fn add(&mut self, other: &Counts) {
        for (a, b) in self.decoded.iter_mut().zip(other.decoded) {
            *a += b;
        }
        for (a, b) in self.undecoded.iter_mut().zip(other.undecoded) {
            *a += b;
        }
    }
}

fn reason_index(why: &Undecoded) -> usize {
    REASONS.iter().position(|r| *r == why.reason()).unwrap_or(0)
}

/// Decoding results of records counted one by one, by provider.
/// [`Coverage::compute`] keeps one per buffer; a pass that reads the records
/// for more than coverage (`nettrail info`) counts them with its own, so the
/// trace is read once.
#[derive(Debug, Default)]
pub struct CoverageCounter {
    counts: FastMap<Guid, Counts>,
    /// Records of one provider come in runs: a run is counted here, then stored.
    run: Option<(Guid, Counts)>,
}

impl CoverageCounter {
    /// Counts one record of `provider`: the schema source it decoded with, or why it did not.
    pub fn count(&mut self, provider: Guid, decoded: Result<Source, &Undecoded>) {
        let c = match &mut self.run {
            Some((g, c)) if *g == provider => c,
            run => {
                if let Some((g, c)) = run.take() {
                    self.counts.entry(g).or_default().add(&c);
                }
                &mut run.insert((provider, Counts::default())).1
            }
        };
        match decoded {
            Ok(source) => c.decoded[SOURCES.iter().position(|s| *s == source).unwrap_or(0)] += 1,
            Err(why) => c.undecoded[reason_index(why)] += 1,
        }
    }

    /// Forgets what was counted of the providers `forget` names (a count
    /// that reads their events again, with other schemas).
    pub fn forget(&mut self, forget: impl Fn(&Guid) -> bool) {
        if let Some((g, c)) = self.run.take() {
            self.counts.entry(g).or_default().add(&c);
        }
        self.counts.retain(|g, _| !forget(g));
    }

    /// This counter and `other`'s, as one (a pass that folds buffers together).
    pub fn merge(self, other: CoverageCounter) -> CoverageCounter {
        let mut counts = self.into_counts();
        for (g, c) in other.into_counts() {
            counts.entry(g).or_default().add(&c);
        }
        CoverageCounter { counts, run: None }
    }

    fn into_counts(mut self) -> FastMap<Guid, Counts> {
        if let Some((g, c)) = self.run.take() {
            self.counts.entry(g).or_default().add(&c);
        }
        self.counts
    }
}

/// Decoding results of a whole trace, by provider GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub providers: std::collections::HashMap<Guid, ProviderCoverage>,
}

impl Coverage {
    pub fn compute(trace: &Trace<'_>, schemas: &Schemas) -> Coverage {
        let counters: Vec<CoverageCounter> = trace
            .buffers()
            .par_iter()
            .map_init(
                || (Vec::new(), crate::registry::LookupCache::default()),
                |(scratch, cache), info| {
                    let mut counter = CoverageCounter::default();
                    let mut values = Vec::new();
                    let contents = trace.contents(&info, scratch);
                    for item in trace.records(&info, &contents) {
                        let Ok((_, record)) = item else { break };
                        let decoded = schemas.decode_cached(cache, &record, &mut values);
                        counter.count(record.provider, decoded.as_ref().map(|s| s.source));
                    }
                    counter
                },
            )
            .collect();
        Coverage::from_counters(counters)
    }

    /// The coverage of the records the counters counted.
    pub fn from_counters(counters: impl IntoIterator<Item = CoverageCounter>) -> Coverage {
        let mut totals: FastMap<Guid, Counts> = FastMap::default();
        for counter in counters {
            for (g, c) in counter.into_counts() {
                totals.entry(g).or_default().add(&c);
            }
        }
        let providers = totals
            .into_iter()
            .map(|(guid, c)| {
                let decoded = SOURCES.iter().zip(c.decoded).filter(|(_, n)| *n > 0).map(|(s, n)| (*s, n)).collect();
                let undecoded = REASONS.iter().zip(c.undecoded).filter(|(_, n)| *n > 0).map(|(r, n)| (*r, n)).collect();
                (guid, ProviderCoverage { decoded, undecoded })
            })
            .collect();
        Coverage { providers }
    }

    /// Undecoded events of the whole trace, by reason.
    pub fn undecoded(&self) -> BTreeMap<&'static str, u64> {
        let mut out = BTreeMap::new();
        for p in self.providers.values() {
            for (k, n) in &p.undecoded {
                *out.entry(*k).or_default() += n;
            }
        }
        out
    }

    pub fn decoded_events(&self) -> u64 {
        self.providers.values().flat_map(|p| p.decoded.values()).sum()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_reason_is_counted_under_its_own_name() {
        use super::*;
        use crate::payload::DecodeError;
        let all = [
            Undecoded::UnknownProvider,
            Undecoded::UnknownEvent,
            Undecoded::PayloadMismatch(DecodeError { field: "x".into(), offset: 0, reason: "short" }),
            Undecoded::WppMessage,
            Undecoded::BadTraceLoggingMetadata("bad"),
        ];
        for (i, why) in all.iter().enumerate() {
            assert_eq!(reason_index(why), i);
        }
    }
}
