//! How much of a trace decodes: per provider, events decoded (by schema
//! source) and not decoded (by reason). One parallel pass over buffers.

use std::collections::{BTreeMap, HashMap};

use nettrail_etl::{Guid, Trace};
use rayon::prelude::*;

use crate::registry::Schemas;
use crate::schema::Source;

/// Decoding results of one provider's events.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProviderCoverage {
    pub decoded: BTreeMap<Source, u64>,
    pub undecoded: BTreeMap<&'static str, u64>,
}

/// Decoding results of a whole trace, by provider GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Coverage {
    pub providers: HashMap<Guid, ProviderCoverage>,
}

impl Coverage {
    pub fn compute(trace: &Trace<'_>, schemas: &Schemas) -> Coverage {
        trace
            .buffers()
            .par_iter()
            .map_init(Vec::new, |scratch, info| {
                let mut c = Coverage::default();
                let mut values = Vec::new();
                let contents = trace.contents(info, scratch);
                for item in trace.records(info, &contents) {
                    let Ok((_, record)) = item else { break };
                    let entry = c.providers.entry(record.provider).or_default();
                    match schemas.decode(&record, &mut values) {
                        Ok(schema) => *entry.decoded.entry(schema.source).or_default() += 1,
                        Err(why) => *entry.undecoded.entry(why.reason()).or_default() += 1,
                    }
                }
                c
            })
            .reduce(Coverage::default, Coverage::merge)
    }

    fn merge(mut self, other: Coverage) -> Coverage {
        for (guid, theirs) in other.providers {
            let mine = self.providers.entry(guid).or_default();
            for (k, n) in theirs.decoded {
                *mine.decoded.entry(k).or_default() += n;
            }
            for (k, n) in theirs.undecoded {
                *mine.undecoded.entry(k).or_default() += n;
            }
        }
        self
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
