//! Microsoft-Windows-DNS-Client: queries from start (3006) to completion
//! (3008), answers from the cache (3018), the servers each query went to
//! (3009, 3010, 3011), and the DNS servers of each interface (1001).

use nettrail_decode::fasthash::FastMap;

use crate::address::Endpoint;
use crate::dns::{Dns, Query, Resolver, SAME_LOOKUP, Server, parse_results};
use crate::event::{Head, Props, Time};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Start { name: String, record_type: Option<u16> },
    Complete { name: String, record_type: Option<u16>, status: Option<u32>, results: Option<String>, cached: bool },
    SentTo { name: String, server: String },
    ServerForInterface { interface: String, index: u32, address: Endpoint },
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let name = || props.text("QueryName");
    let record_type = || props.u32("QueryType").map(|t| t as u16);
    Some(match id {
        3006 => Event::Start { name: name()?, record_type: record_type() },
        3008 | 3018 => Event::Complete {
            name: name()?,
            record_type: record_type(),
            status: props.u32("QueryStatus").or_else(|| props.u32("Status")),
            results: props.text("QueryResults"),
            cached: id == 3018,
        },
        3009 => Event::SentTo { name: name()?, server: props.text("DNSServerAddress")? },
        3010 | 3011 => Event::SentTo { name: name()?, server: props.text("DnsServerIpAddress")? },
        1001 => Event::ServerForInterface {
            interface: props.text("Interface").unwrap_or_default(),
            index: props.u32("Index").unwrap_or(0),
            address: props.sockaddr("Address")?,
        },
        _ => return None,
    })
}

/// A query by process, lowercase name and record type.
type QueryKey = (Option<u32>, String, Option<u16>);

/// An answer from the DNS service's cache (3018), logged in the service
/// while the asking process waits for its 3008.
#[derive(Clone, Debug)]
pub(crate) struct CacheHit {
    time: Time,
    pid: Option<u32>,
    tid: Option<u32>,
    name: String,
    record_type: Option<u16>,
    status: Option<u32>,
    results: Option<String>,
}

impl CacheHit {
    fn query(&self) -> Query {
        let mut q = Query::new(Resolver::DnsClient, self.name.clone(), self.time);
        q.end = Some(self.time);
        q.pid = self.pid;
        q.tid = self.tid;
        q.record_type = self.record_type;
        q.status = self.status;
        q.cached = true;
        if let Some(results) = &self.results {
            (q.answers, q.aliases) = parse_results(results);
        }
        q
    }
}

/// Queries in flight. The asking process logs a query's start (3006) and
/// completion (3008); the DNS service logs its cache lookup (3018) and the
/// servers it asks (3009–3011), in its own process: those are joined to the
/// asking process's query by name and time.
#[derive(Debug, Default)]
pub(crate) struct State {
    started: FastMap<QueryKey, (Time, Vec<String>)>,
    cache_hits: FastMap<(String, Option<u16>), CacheHit>,
    /// Servers asked for each lowercase name, and when.
    servers_for: FastMap<String, Vec<(Time, String)>>,
    /// When each lowercase name's last query completed: a wire query sent
    /// before that belongs to the earlier lookup, not to the next one.
    completed: FastMap<String, Time>,
}

impl State {
    /// Cache answers no asking process claimed: lookups of their own.
    pub(crate) fn unclaimed_cache_hits(&self) -> impl Iterator<Item = Query> + '_ {
        self.cache_hits.values().map(CacheHit::query)
    }
}

impl State {
    /// The DNS Client service's lookups, cache hits and servers, reported to `dns`.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, dns: &mut Dns) {
        let pid = Head::known(head.pid);
        let t = head.time;
        match e {
            Event::Start { name, record_type } => {
                self.started.insert((pid, name.to_ascii_lowercase(), record_type), (t, Vec::new()));
            }
            Event::SentTo { name, server } => {
                let server = server.trim_end_matches(';').to_string();
                let lower = name.to_ascii_lowercase();
                let asked = self.servers_for.entry(lower).or_default();
                asked.retain(|(at, _)| t - at < SAME_LOOKUP);
                if !asked.iter().any(|(_, s)| *s == server) {
                    asked.push((t, server));
                }
            }
            Event::Complete { name, record_type, status, results, cached: true } => {
                // A cache miss is not an answer: the network query follows.
                if status.is_some_and(|s| s != 0) || results.is_none() {
                    return;
                }
                let hit = CacheHit { time: t, pid, tid: Head::known(head.tid), name, record_type, status, results };
                let q = hit.query();
                dns.learn(&q.name, q.aliases.first().map(String::as_str), &q.answers);
                if let Some(old) = self.cache_hits.insert((hit.name.to_ascii_lowercase(), record_type), hit) {
                    dns.report(old.query());
                }
            }
            Event::Complete { name, record_type, status, results, cached: false } => {
                let lower = name.to_ascii_lowercase();
                let started = self.started.remove(&(pid, lower.clone(), record_type));
                let begun = started.as_ref().map(|(at, _)| *at);
                let (mut start, mut servers) = started.unwrap_or((t, Vec::new()));
                let window = start.min(t - SAME_LOOKUP);
                let recent = move |at: Time| at >= window && at <= t;
                let key = (lower.clone(), record_type);
                let hit = self.cache_hits.get(&key).filter(|h| recent(h.time)).map(|h| h.time);
                // Without its start event (3006), a lookup began at its
                // first event in the service: the cache lookup or the wire
                // query sent for this name since its last completion.
                if begun.is_none() {
                    let since = self.completed.get(&lower).copied().unwrap_or(Time::MIN);
                    let sent = self.servers_for.get(&lower).into_iter().flatten().map(|(at, _)| *at);
                    let first = sent.filter(|&at| at > since && recent(at)).chain(hit).min();
                    start = first.map_or(start, |at| at.min(start));
                }
                self.completed.insert(lower.clone(), t);
                let mut q = Query::new(Resolver::DnsClient, name, start);
                q.end = Some(t);
                q.pid = pid;
                q.tid = Head::known(head.tid);
                q.record_type = record_type;
                q.status = status;
                q.activity = head.activity;
                if let Some(results) = results {
                    (q.answers, q.aliases) = parse_results(&results);
                }
                if hit.is_some() {
                    self.cache_hits.remove(&key);
                    q.cached = true;
                }
                for (at, server) in self.servers_for.get(&lower).into_iter().flatten() {
                    if recent(*at) && !servers.contains(server) {
                        servers.push(server.clone());
                    }
                }
                q.servers = servers;
                dns.report(q);
            }
            Event::ServerForInterface { interface, index, address } => {
                dns.add_server(Server { time: t, interface, index, address });
            }
        }
    }
}
