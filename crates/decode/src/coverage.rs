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
#[derive(Clone, Copy, Default)]
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

/// Decoding results of a whole trace, by provider GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub providers: std::collections::HashMap<Guid, ProviderCoverage>,
}

impl Coverage {
    pub fn compute(trace: &Trace<'_>, schemas: &Schemas) -> Coverage {
        let totals: FastMap<Guid, Counts> = trace
            .buffers()
            .par_iter()
            .map_init(Vec::new, |scratch, info| {
                let mut counts: FastMap<Guid, Counts> = FastMap::default();
                let mut run: Option<(Guid, Counts)> = None;
                let mut values = Vec::new();
                let mut cache = crate::registry::LookupCache::default();
                let contents = trace.contents(info, scratch);
                for item in trace.records(info, &contents) {
                    let Ok((_, record)) = item else { break };
                    // Records of one provider come in runs: count a run, then store it.
                    if run.as_ref().is_none_or(|(g, _)| *g != record.provider) {
                        if let Some((g, c)) = run.take() {
                            counts.entry(g).or_default().add(&c);
                        }
                        run = Some((record.provider, Counts::default()));
                    }
                    let Some((_, c)) = run.as_mut() else { continue };
                    match schemas.decode_cached(&mut cache, &record, &mut values) {
                        Ok(schema) => {
                            let i = SOURCES.iter().position(|s| *s == schema.source).unwrap_or(0);
                            c.decoded[i] += 1;
                        }
                        Err(why) => c.undecoded[reason_index(&why)] += 1,
                    }
                }
                if let Some((g, c)) = run {
                    counts.entry(g).or_default().add(&c);
                }
                counts
            })
            .reduce(FastMap::default, |mut a, b| {
                for (g, c) in b {
                    a.entry(g).or_default().add(&c);
                }
                a
            });
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
