//! Microsoft-Windows-DNS-Client: queries from start (3006) to completion
//! (3008), answers from the cache (3018), the servers each query went to
//! (3009, 3010, 3011), and the DNS servers of each interface (1001).

use nettrail_decode::fasthash::FastMap;

use crate::address::Endpoint;
use crate::dns::{Query, Resolver, Server, parse_results};
use crate::event::{Head, Props, Time};
use crate::model::Network;

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

/// Queries started and not yet complete: when, and the servers asked so far.
#[derive(Debug, Default)]
pub(crate) struct State {
    started: FastMap<QueryKey, (Time, Vec<String>)>,
}

impl Network {
    pub(crate) fn on_dns_client(&mut self, head: &Head, e: Event) {
        let pid = Head::known(head.pid);
        match e {
            Event::Start { name, record_type } => {
                self.dns_client.started.insert((pid, name.to_ascii_lowercase(), record_type), (head.time, Vec::new()));
            }
            Event::SentTo { name, server } => {
                let server = server.trim_end_matches(';').to_string();
                let pending = self
                    .dns_client
                    .started
                    .iter_mut()
                    .filter(|((p, n, _), _)| *p == pid && n.eq_ignore_ascii_case(&name))
                    .max_by_key(|(_, (t, _))| *t);
                if let Some((_, (_, servers))) = pending {
                    if !servers.contains(&server) {
                        servers.push(server);
                    }
                } else if let Some(q) = self.dns.latest_query_mut(pid, &name)
                    && !q.servers.contains(&server)
                {
                    q.servers.push(server);
                }
            }
            Event::Complete { name, record_type, status, results, cached } => {
                // A cache miss is not an answer: the network query follows.
                if cached && (status.is_some_and(|s| s != 0) || results.is_none()) {
                    return;
                }
                let started = self.dns_client.started.remove(&(pid, name.to_ascii_lowercase(), record_type));
                let (start, servers) = started.unwrap_or((head.time, Vec::new()));
                let mut q = Query::new(Resolver::DnsClient, name, start);
                q.end = Some(head.time);
                q.pid = pid;
                q.tid = Head::known(head.tid);
                q.record_type = record_type;
                q.status = status;
                q.cached = cached;
                q.servers = servers;
                q.activity = head.activity;
                if let Some(results) = results {
                    (q.answers, q.aliases) = parse_results(&results);
                }
                self.dns.report(q);
            }
            Event::ServerForInterface { interface, index, address } => {
                self.dns.add_server(Server { time: head.time, interface, index, address });
            }
        }
    }
}
