//! Names: every DNS lookup the trace shows (DNS-Client, getaddrinfo,
//! WinINet's and WinHTTP's own resolution, TCPIP's connect-by-name), and what
//! they taught about which name an address belongs to.
//!
//! Two things are kept apart: the *queries* (who asked what, when, what came
//! back: the `dns` table), and the *names* of addresses (for the `server` and
//! `alt_names` of every connection). An address's name is that of the
//! earliest lookup that returned it, as the process that connected most
//! likely asked for it first; the DNS server a query was sent to is a
//! property of the query, never a name for the server's address.

use nettrail_decode::fasthash::FastMap;

use nettrail_etl::Guid;

use crate::address::{Address, Endpoint};
use crate::event::Time;

/// A name and what it resolved to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Name {
    pub name: String,
    /// Canonical names (CNAME targets) met on the way.
    pub aliases: Vec<String>,
    pub addresses: Vec<Address>,
}

/// Who resolved the name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    DnsClient,
    GetAddrInfo,
    WinInet,
    WinHttp,
}

impl Resolver {
    pub fn name(self) -> &'static str {
        match self {
            Resolver::DnsClient => "DNS-Client",
            Resolver::GetAddrInfo => "getaddrinfo",
            Resolver::WinInet => "WinINet",
            Resolver::WinHttp => "WinHTTP",
        }
    }
}

/// One lookup.
#[derive(Clone, Debug, PartialEq)]
pub struct Query {
    pub start: Time,
    pub end: Option<Time>,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub name: String,
    /// DNS record type (1 A, 28 AAAA, …) when the source says.
    pub record_type: Option<u16>,
    /// 0 on success; a Win32/DNS error code otherwise.
    pub status: Option<u32>,
    pub answers: Vec<Address>,
    pub aliases: Vec<String>,
    /// Answered from a cache.
    pub cached: bool,
    /// DNS servers the query was sent to.
    pub servers: Vec<String>,
    /// Every source that reported it (one lookup is often seen by several layers).
    pub resolvers: Vec<Resolver>,
    pub activity: Guid,
}

impl Query {
    pub fn new(resolver: Resolver, name: String, start: Time) -> Query {
        Query {
            start,
            end: None,
            pid: None,
            tid: None,
            name,
            record_type: None,
            status: None,
            answers: Vec::new(),
            aliases: Vec::new(),
            cached: false,
            servers: Vec::new(),
            resolvers: vec![resolver],
            activity: Guid::ZERO,
        }
    }
}

/// A DNS server configured on an interface (DNS-Client 1001).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Server {
    pub time: Time,
    pub interface: String,
    pub index: u32,
    pub address: Endpoint,
}

/// Two reports of one lookup by different layers end this close together.
pub const SAME_LOOKUP: Time = 20_000_000;

/// Queries of one process and name kept for merging (A and AAAA, and a few more).
const RECENT: usize = 4;

/// Whether an answer belongs to a lookup of this record type (A: IPv4,
/// AAAA: IPv6; an untyped lookup takes any).
fn answers_type(record_type: Option<u16>, a: &Address) -> bool {
    match record_type {
        Some(1) => matches!(a, Address::V4(_)),
        Some(28) => matches!(a, Address::V6(_)),
        _ => true,
    }
}

#[derive(Debug, Default)]
pub struct Dns {
    names: Vec<Name>,
    by_name: FastMap<String, usize>,
    /// Address → the earliest name that resolved to it.
    by_address: FastMap<Address, usize>,
    queries: Vec<Query>,
    /// (pid, lowercase name) → the latest queries, to merge reports of one lookup.
    recent: FastMap<(Option<u32>, String), Vec<usize>>,
    servers: Vec<Server>,
}

impl Dns {
    /// Records that `name` resolved to `addresses` (and is also known as `alias`).
    pub fn learn(&mut self, name: &str, alias: Option<&str>, addresses: &[Address]) {
        let name = name.trim_end_matches('.');
        if name.is_empty() || Address::parse(name).is_some() {
            return;
        }
        let key = name.to_ascii_lowercase();
        let i = match self.by_name.get(&key) {
            Some(&i) => i,
            None => {
                self.names.push(Name { name: name.to_string(), ..Name::default() });
                self.by_name.insert(key, self.names.len() - 1);
                self.names.len() - 1
            }
        };
        let entry = &mut self.names[i];
        if let Some(alias) = alias.map(|a| a.trim_end_matches('.')).filter(|a| !a.eq_ignore_ascii_case(name))
            && !alias.is_empty()
            && !entry.aliases.iter().any(|a| a.eq_ignore_ascii_case(alias))
        {
            entry.aliases.push(alias.to_string());
        }
        for &a in addresses {
            if !entry.addresses.contains(&a) {
                entry.addresses.push(a);
            }
            self.by_address.entry(a).or_insert(i);
        }
    }

    /// The name an address was resolved from, if any lookup returned it.
    pub fn name_of(&self, address: &Address) -> Option<&Name> {
        self.by_address.get(address).map(|&i| &self.names[i])
    }

    pub fn lookup(&self, name: &str) -> Option<&Name> {
        self.by_name.get(&name.trim_end_matches('.').to_ascii_lowercase()).map(|&i| &self.names[i])
    }

    /// Adds a lookup (and what it taught), or completes the same lookup
    /// another layer already reported. A report without a record type
    /// (getaddrinfo, WinINet, WinHTTP resolve A and AAAA at once) completes
    /// each typed lookup of the moment with the answers of its family.
    pub fn report(&mut self, q: Query) {
        if q.status.is_none_or(|s| s == 0) {
            let alias = q.aliases.first().cloned();
            self.learn(&q.name, alias.as_deref(), &q.answers);
            for pair in q.aliases.windows(2) {
                self.learn(&pair[0], Some(&pair[1]), &[]);
            }
        }
        let key = (q.pid, q.name.trim_end_matches('.').to_ascii_lowercase());
        let at = q.end.unwrap_or(q.start);
        let same: Vec<usize> = self
            .recent
            .get(&key)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&i| {
                let old = &self.queries[i];
                (old.end.unwrap_or(old.start) - at).abs() < SAME_LOOKUP
                    && !q.resolvers.iter().all(|r| old.resolvers.contains(r))
            })
            .collect();
        let typed = |i: &usize| self.queries[*i].record_type.is_some();
        let targets: Vec<usize> = match q.record_type {
            Some(t) => {
                same.iter().copied().find(|&i| self.queries[i].record_type.is_none_or(|o| o == t)).into_iter().collect()
            }
            None if same.iter().any(typed) => same.iter().copied().filter(typed).collect(),
            None => same.first().copied().into_iter().collect(),
        };
        if !targets.is_empty() {
            for i in targets {
                let old = &mut self.queries[i];
                let mut part = q.clone();
                part.answers.retain(|a| answers_type(old.record_type.or(q.record_type), a));
                merge(old, part);
            }
            return;
        }
        let recent = self.recent.entry(key).or_default();
        recent.push(self.queries.len());
        if recent.len() > RECENT {
            recent.remove(0);
        }
        self.queries.push(q);
    }

    pub fn add_server(&mut self, server: Server) {
        if !self.servers.iter().any(|s| s.interface == server.interface && s.address == server.address) {
            self.servers.push(server);
        }
    }

    pub fn queries(&self) -> &[Query] {
        &self.queries
    }

    pub fn servers(&self) -> &[Server] {
        &self.servers
    }

    pub fn names(&self) -> &[Name] {
        &self.names
    }
}

fn merge(old: &mut Query, new: Query) {
    old.start = old.start.min(new.start);
    old.end = match (old.end, new.end) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    old.tid = old.tid.or(new.tid);
    old.record_type = old.record_type.or(new.record_type);
    if old.status.is_none_or(|s| s == 0) {
        old.status = new.status.or(old.status);
    }
    for a in new.answers {
        if !old.answers.contains(&a) {
            old.answers.push(a);
        }
    }
    for a in new.aliases {
        if !old.aliases.contains(&a) {
            old.aliases.push(a);
        }
    }
    old.cached |= new.cached;
    for s in new.servers {
        if !old.servers.contains(&s) {
            old.servers.push(s);
        }
    }
    for r in new.resolvers {
        if !old.resolvers.contains(&r) {
            old.resolvers.push(r);
        }
    }
    if old.activity.is_zero() {
        old.activity = new.activity;
    }
}

/// Parses a result list as DNS-Client, getaddrinfo and WinINet log it:
/// addresses separated by `;` (or `,`), each possibly with a port, brackets,
/// a zone id or an IPv4-mapped form, and CNAME records as `type: 5 name`.
/// Returns the addresses (in order, without repeats) and the aliases.
pub fn parse_results(text: &str) -> (Vec<Address>, Vec<String>) {
    let mut addresses = Vec::new();
    let mut aliases = Vec::new();
    for token in text.split([';', ',']).map(str::trim).filter(|t| !t.is_empty()) {
        if let Some(rest) = token.strip_prefix("type:") {
            // "type: 5 target.example.com": a CNAME record.
            if let Some(name) = rest.split_whitespace().last()
                && name.contains('.')
                && Address::parse(name).is_none()
            {
                let name = name.trim_end_matches('.').to_string();
                if !aliases.contains(&name) {
                    aliases.push(name);
                }
            }
            continue;
        }
        let address = Address::parse(token).or_else(|| Endpoint::parse(token).map(|e| e.address));
        if let Some(a) = address
            && !addresses.contains(&a)
        {
            addresses.push(a);
        }
    }
    (addresses, aliases)
}

/// DNS record types by number.
pub fn record_type_name(t: u16) -> Option<&'static str> {
    Some(match t {
        1 => "A",
        2 => "NS",
        5 => "CNAME",
        6 => "SOA",
        12 => "PTR",
        15 => "MX",
        16 => "TXT",
        28 => "AAAA",
        33 => "SRV",
        64 => "SVCB",
        65 => "HTTPS",
        255 => "ANY",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_lists() {
        let (a, c) = parse_results(
            "type: 5 www.example.com.edgekey.net;93.184.216.34;::ffff:10.0.0.1;[2606:2800::1]:443;fe80::1%3;",
        );
        assert_eq!(
            a,
            vec![
                Address::V4([93, 184, 216, 34]),
                Address::V4([10, 0, 0, 1]),
                Address::parse("2606:2800::1").unwrap(),
                Address::parse("fe80::1").unwrap()
            ]
        );
        assert_eq!(c, vec!["www.example.com.edgekey.net".to_string()]);
    }

    #[test]
    fn names_of_addresses_and_merged_reports() {
        let mut dns = Dns::default();
        let mut q = Query::new(Resolver::DnsClient, "www.example.com".into(), 100);
        q.pid = Some(7);
        q.end = Some(200);
        q.answers = vec![Address::V4([1, 2, 3, 4])];
        q.aliases = vec!["edge.example.net".into()];
        q.status = Some(0);
        dns.report(q);
        let mut again = Query::new(Resolver::GetAddrInfo, "WWW.example.com".into(), 90);
        again.pid = Some(7);
        again.end = Some(210);
        again.answers = vec![Address::V4([1, 2, 3, 4]), Address::V4([1, 2, 3, 5])];
        dns.report(again);
        assert_eq!(dns.queries().len(), 1);
        let q = &dns.queries()[0];
        assert_eq!((q.start, q.end, q.answers.len()), (90, Some(210), 2));
        assert_eq!(q.resolvers, vec![Resolver::DnsClient, Resolver::GetAddrInfo]);
        // A later lookup of another name that returns the same address does not rename it.
        dns.learn("other.example.org", None, &[Address::V4([1, 2, 3, 4])]);
        let n = dns.name_of(&Address::V4([1, 2, 3, 4])).unwrap();
        assert_eq!(n.name, "www.example.com");
        assert_eq!(n.aliases, vec!["edge.example.net".to_string()]);
    }
}
