//! Name resolution: what DNS-Client and Winsock-NameResolution log for a
//! lookup. The caller's process (dnsapi.dll, ws2_32.dll) logs the query's
//! completion (DNS-Client 3008, getaddrinfo's 1001) on its own thread with
//! its activity id (WinINet's and WebIO's lookups share theirs); the DNS
//! Client service (Dnscache, in an svchost) looks in its cache (3018) and
//! asks the server over UDP port 53 (3009, then the datagrams).
//!
//! Result lists are written as Windows formats them: `type: 5 <name>;` for
//! each CNAME of the chain, then the addresses, IPv4 ones as IPv4-mapped
//! IPv6 (`::ffff:93.184.216.34;`), each followed by a `;`.

use std::net::{IpAddr, SocketAddr};

use nettrail_etl::Guid;

use crate::fields;
use crate::value::Val;

use super::{Machine, Tid, UdpReceive, spec};

const DNS_CLIENT: &str = "Microsoft-Windows-DNS-Client";
const NAME_RESOLUTION: &str = "Microsoft-Windows-Winsock-NameResolution";

/// Query options of a plain getaddrinfo lookup: a choice (the layouts give
/// only the field's width).
const QUERY_OPTIONS: u64 = 0x0000_4000_0000_6000;

/// One query's answer: the CNAME chain, then the addresses.
#[derive(Clone, Copy, Debug)]
pub struct Answer<'a> {
    pub cnames: &'a [&'a str],
    pub addresses: &'a [IpAddr],
}

/// A lookup of `name` of record type `record` (1 = A, 28 = AAAA) by a process.
#[derive(Clone, Copy, Debug)]
pub struct Lookup<'a> {
    pub name: &'a str,
    pub record: u32,
    /// 0, or a DNS error (9003 DNS_ERROR_RCODE_NAME_ERROR).
    pub status: u32,
    pub answer: Answer<'a>,
    /// Answered by the Dnscache service from its cache.
    pub cached: bool,
}

impl<'a> Lookup<'a> {
    /// A successful lookup: an AAAA query when the first address is IPv6, else A.
    pub fn answered(name: &'a str, answer: Answer<'a>) -> Lookup<'a> {
        let record = if answer.addresses.first().is_some_and(|a| a.is_ipv6()) { 28 } else { 1 };
        Lookup { name, record, status: 0, answer, cached: false }
    }

    /// The same, answered from the Dnscache service's cache.
    pub fn cached(mut self) -> Lookup<'a> {
        self.cached = true;
        self
    }

    /// A lookup of type `record` that failed with a DNS error.
    pub fn failed(name: &'a str, record: u32, status: u32) -> Lookup<'a> {
        Lookup { name, record, status, answer: Answer { cnames: &[], addresses: &[] }, cached: false }
    }
}

/// `type: 5 a.example.net;::ffff:93.184.216.34;2606:2800::1;`
pub fn results_text(answer: &Answer<'_>) -> String {
    let mut out = String::new();
    for c in answer.cnames {
        out.push_str(&format!("type: 5 {c};"));
    }
    for a in answer.addresses {
        match a {
            IpAddr::V4(v4) => out.push_str(&format!("::ffff:{v4};")),
            IpAddr::V6(v6) => out.push_str(&format!("{v6};")),
        }
    }
    out
}

/// The service's query object (Windows 11's `QueryBlob`): a heap address
/// of the Dnscache service, one per name.
fn query_blob(name: &str) -> Val {
    let hash = name.bytes().fold(0u64, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
    Val::Ptr(0x0000_0243_5e10_0000 | (hash & 0x000f_fff0))
}

impl Machine {
    /// DNSQueryExComplete (3008), in the caller.
    pub fn dns_query_completed(
        &mut self,
        at: f64,
        th: Tid,
        activity: Guid,
        lookup: &Lookup<'_>,
    ) -> Result<(), crate::SynthError> {
        let f = fields![
            ("QueryName", lookup.name),
            ("QueryType", lookup.record),
            ("QueryOptions", QUERY_OPTIONS),
            ("QueryStatus", lookup.status),
            ("QueryResults", results_text(&lookup.answer)),
        ];
        self.user(spec(DNS_CLIENT, 3008, at, th, f).activity(activity))
    }

    /// The cache lookup (3018) in the Dnscache service. Only hits are
    /// written: whether Windows logs misses here too is not known (a choice).
    pub fn dns_cache_hit(&mut self, at: f64, dnscache: Tid, lookup: &Lookup<'_>) -> Result<(), crate::SynthError> {
        let f = fields![
            ("QueryName", lookup.name),
            ("QueryType", lookup.record),
            ("QueryOptions", QUERY_OPTIONS),
            ("Status", 0u32),
            ("QueryResults", results_text(&lookup.answer)),
        ];
        let f = self.dns_client_fields(f, dnscache).maybe("QueryBlob", query_blob(lookup.name));
        self.user(spec(DNS_CLIENT, 3018, at, dnscache, f))
    }

    /// The network query (3009) the Dnscache service sends to `server`.
    pub fn dns_network_query(
        &mut self,
        at: f64,
        dnscache: Tid,
        name: &str,
        server: IpAddr,
    ) -> Result<(), crate::SynthError> {
        let f = fields![
            ("QueryName", name),
            ("IsParallelNetworkQuery", 0u32),
            ("NetworkIndex", 0u32),
            ("InterfaceCount", 1u32),
            ("AdapterName", "Ethernet"),
            ("LocalAddress", format!("{};", self.ipv4)),
            ("DNSServerAddress", server.to_string()),
        ];
        let f =
            self.dns_client_fields(f, dnscache).maybe("QueryBlob", query_blob(name)).maybe("ParentBlob", Val::Ptr(0));
        self.user(spec(DNS_CLIENT, 3009, at, dnscache, f))
    }

    /// The DNS servers of an interface (1001, one event per server), as the
    /// Dnscache service logs them when it reads the configuration.
    pub fn dns_interface_servers(
        &mut self,
        at: f64,
        dnscache: Tid,
        interface: &str,
        servers: &[IpAddr],
    ) -> Result<(), crate::SynthError> {
        for (i, server) in servers.iter().enumerate() {
            let f = fields![
                ("Interface", interface),
                ("TotalServerCount", servers.len() as u32),
                ("Index", i as u32),
                ("DynamicAddress", 1u8),
                ("Address", super::sockaddr(SocketAddr::new(*server, 0))),
            ];
            self.user(spec(DNS_CLIENT, 1001, at, dnscache, f))?;
        }
        Ok(())
    }

    /// getaddrinfo's completion (Winsock-NameResolution 1001), in the caller:
    /// the addresses `;`-separated (a choice: the form of `Result` is not
    /// documented; this is the DNS-Client list without CNAMEs).
    pub fn getaddrinfo_completed(
        &mut self,
        at: f64,
        th: Tid,
        activity: Guid,
        name: &str,
        (status, addresses): (u32, &[IpAddr]),
    ) -> Result<(), crate::SynthError> {
        self.name_resolution(1001, (at, th, activity), name, (status, addresses))
    }

    /// GetAddrInfoExW's completion (1004), as WinHTTP resolves.
    pub fn getaddrinfoex_completed(
        &mut self,
        at: f64,
        th: Tid,
        activity: Guid,
        name: &str,
        addresses: &[IpAddr],
    ) -> Result<(), crate::SynthError> {
        self.name_resolution(1004, (at, th, activity), name, (0, addresses))
    }

    fn name_resolution(
        &mut self,
        id: u16,
        (at, th, activity): (f64, Tid, Guid),
        name: &str,
        (status, addresses): (u32, &[IpAddr]),
    ) -> Result<(), crate::SynthError> {
        let result: String = addresses.iter().map(|a| format!("{a};")).collect();
        let f = fields![("NodeName", name), ("Status", status), ("Result", result)];
        self.user(spec(NAME_RESOLUTION, id, at, th, f).activity(activity))
    }

    /// The Dnscache service asks the LAN's server over UDP: 3009, then a
    /// socket of its own sends the query and receives the answer.
    pub fn dns_over_udp(
        &mut self,
        at: f64,
        dnscache: Tid,
        name: &str,
        (query, response): (u32, u32),
    ) -> Result<f64, crate::SynthError> {
        let server = IpAddr::V4(self.dns_server);
        self.dns_network_query(at, dnscache, name, server)?;
        let u = self.udp_open(at + 0.05, dnscache, false, None)?;
        let to = SocketAddr::new(server, 53);
        self.udp_send(at + 0.1, dnscache, &u, to, query)?;
        self.udp_receive(at + 8.1, dnscache, &u, to, response, UdpReceive::default())?;
        self.udp_close(at + 8.3, dnscache, &u)
    }

    /// The client process Windows 11's versions of the service's events name
    /// (`ClientPID`): the one [`Machine::resolve`] resolves for, else the
    /// service itself.
    fn dns_client_fields(&self, f: crate::Fields, dnscache: Tid) -> crate::Fields {
        f.maybe("ClientPID", self.dns_client.unwrap_or(dnscache.0))
    }

    /// A process resolves `lookup`: from the Dnscache service's cache, or over
    /// the network (query and answer sizes as on the wire), then the caller's
    /// completion. Returns when the caller has the answer.
    pub fn resolve(
        &mut self,
        at: f64,
        th: Tid,
        activity: Guid,
        lookup: &Lookup<'_>,
        dnscache: Tid,
    ) -> Result<f64, crate::SynthError> {
        self.dns_client = Some(th.0);
        let done = if lookup.cached {
            self.dns_cache_hit(at + 0.1, dnscache, lookup)?;
            at + 0.3
        } else {
            let query = 17 + lookup.name.len() as u32 + 1;
            let response = query + 16 * (lookup.answer.cnames.len() + lookup.answer.addresses.len()) as u32 + 12;
            self.dns_over_udp(at + 0.1, dnscache, lookup.name, (query, response))? + 0.2
        };
        self.dns_client = None;
        self.dns_query_completed(done, th, activity, lookup)?;
        Ok(done)
    }
}
