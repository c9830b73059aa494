//! The tables: requests (one row per request or connection, at the highest
//! layer that knows it), connections, DNS lookups and server requests.
//!
//! Gathering joins the layers that the event stream could not join on its
//! own: an HTTP request to its TCP connection (by local port, else remote
//! address, within the request's time and process), a socket to its TCP
//! connection or UDP flows. Each TCP connection and each socket is claimed
//! once, by the highest layer that reaches it (WinINet, WinHTTP, then
//! Winsock, then TCP/UDP), so its bytes are shown once: bytes differ by
//! layer (HTTP payload, socket buffers, TCP payload) and are never summed
//! across layers.

use nettrail_decode::fasthash::FastMap;
use nettrail_etl::Guid;

use crate::address::{Address, Endpoint};
use crate::dns::{Resolver, record_type_name};
use crate::errors;
use crate::event::Time;
use crate::model::Network;
use crate::pools;
use crate::providers::{webio, wininet};
use crate::services;
use crate::transport::{ConnId, Connection, Ending, Origin, Transport};
use crate::winsock::{SockId, Socket};

/// Events of different layers about one operation are this close in time
/// (100 ns units): 10 ms.
const SLACK: Time = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    WinInet,
    WinHttp,
    UrlMon,
    Ldap,
    Winsock,
    Tcp,
    Udp,
}

impl Layer {
    pub fn name(self) -> &'static str {
        match self {
            Layer::WinInet => "WinINet",
            Layer::WinHttp => "WinHTTP",
            Layer::UrlMon => "URLMon",
            Layer::Ldap => "LDAP",
            Layer::Winsock => "Winsock",
            Layer::Tcp => "TCP",
            Layer::Udp => "UDP",
        }
    }
}

/// One request or connection, at its highest layer.
#[derive(Clone, Debug, PartialEq)]
pub struct RequestRow {
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub threads: Vec<u32>,
    pub layer: Layer,
    /// URL scheme for HTTP and LDAP rows; IP protocol for socket rows.
    pub protocol: Option<String>,
    pub method: Option<String>,
    pub url: Option<String>,
    /// The server's DNS name (the request's own host where it names one).
    pub server: Option<String>,
    /// Other names of the server: canonical names, the name its address resolved from.
    pub alt_names: Vec<String>,
    pub ip: Option<Address>,
    pub port: Option<u16>,
    pub service: Option<String>,
    /// The address's class where it has one (Loopback, Private Network …).
    pub network: Option<&'static str>,
    pub status: Option<String>,
    /// `None` where the layer does not count bytes (never a made-up 0).
    pub bytes_sent: Option<u64>,
    pub bytes_received: Option<u64>,
    pub start: Time,
    /// `None` when the end is unknown; the trace's end when it was still open.
    pub end: Option<Time>,
    pub open_at_end: bool,
    pub error: Option<String>,
    pub activity: Option<Guid>,
    /// Events of the activity (with those naming it as related): what `dump --activity` shows.
    pub activity_events: Option<u64>,
    pub local: Option<Endpoint>,
    /// The transport record the row claimed.
    pub connection: Option<ConnId>,
    /// Where the request began, best first (its own creation, then its
    /// session's, its socket's, its connection's): what
    /// [`Network::stitch`](crate::Network::stitch) walks back from.
    pub started_by: Vec<pools::Origin>,
    /// The app's own span its thread was in when the request started
    /// (TraceLogging Start/Stop events of the app's provider), outermost first.
    pub app: Option<String>,
}

/// One TCP connection or UDP flow.
#[derive(Clone, Debug, PartialEq)]
pub struct ConnectionRow {
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub thread: Option<u32>,
    pub protocol: &'static str,
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    pub server: Option<String>,
    pub state: &'static str,
    pub origin: &'static str,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub retransmits: u64,
    pub start: Time,
    pub end: Option<Time>,
    pub open_at_end: bool,
    /// The layer whose request row shows it.
    pub layer: Option<Layer>,
    pub error: Option<String>,
    /// TCPIP's TCB or UDP endpoint.
    pub pointer: Option<u64>,
}

/// A DNS lookup, or (kind "server") a DNS server configured on an interface.
#[derive(Clone, Debug, PartialEq)]
pub struct DnsRow {
    pub kind: &'static str,
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub thread: Option<u32>,
    pub name: String,
    pub record_type: Option<String>,
    pub status: Option<String>,
    pub answers: Vec<Address>,
    pub aliases: Vec<String>,
    pub cached: bool,
    pub servers: Vec<String>,
    pub resolvers: Vec<&'static str>,
    pub start: Time,
    pub end: Option<Time>,
    pub activity: Option<Guid>,
}

/// One Http.sys request.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerRow {
    pub request_id: u64,
    pub connection_id: Option<u64>,
    pub verb: Option<String>,
    pub url: Option<String>,
    pub status: Option<u16>,
    pub bytes_sent: Option<u64>,
    pub client: Option<Endpoint>,
    pub server: Option<Endpoint>,
    pub site: Option<u32>,
    pub queue: Option<String>,
    /// The worker process that answered.
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub start: Time,
    pub end: Time,
    pub error: Option<String>,
    pub activity: Option<Guid>,
    /// Events of the activity (with those naming it as related).
    pub activity_events: Option<u64>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    pub trace_start: Time,
    pub trace_end: Time,
    pub requests: Vec<RequestRow>,
    pub connections: Vec<ConnectionRow>,
    pub dns: Vec<DnsRow>,
    pub http_server: Vec<ServerRow>,
}

impl Report {
    /// Seconds from the trace's start.
    pub fn seconds(&self, t: Time) -> f64 {
        (t - self.trace_start) as f64 / 1e7
    }
}

/// Seconds between two times.
pub fn duration(start: Time, end: Option<Time>) -> Option<f64> {
    end.map(|e| (e - start).max(0) as f64 / 1e7)
}

/// The host of a URL (`https://user@host:8443/path` → `host`).
pub fn url_host(url: &str) -> Option<&str> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = if let Some(v6) = host.strip_prefix('[') { v6.split(']').next()? } else { host.split(':').next()? };
    (!host.is_empty()).then_some(host)
}

/// The port of a URL, explicit or by its scheme.
fn url_port(url: &str) -> Option<u16> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let port = match host_port.rsplit_once(']') {
        Some((_, after)) => after.strip_prefix(':'),
        None => host_port.split_once(':').map(|(_, p)| p),
    };
    match port {
        Some(p) => p.parse().ok(),
        None => match scheme.to_ascii_lowercase().as_str() {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            "ftp" => Some(21),
            "ldap" => Some(389),
            "ldaps" => Some(636),
            _ => None,
        },
    }
}

fn scheme(url: &str) -> Option<String> {
    url.split_once("://").map(|(s, _)| s.to_ascii_uppercase()).filter(|s| !s.is_empty())
}

fn overlaps(a: (Time, Time), b: (Time, Time)) -> bool {
    a.0 <= b.1.saturating_add(SLACK) && b.0 <= a.1.saturating_add(SLACK)
}

fn same_pid(a: Option<u32>, b: Option<u32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

fn push_unique(v: &mut Vec<u32>, more: impl IntoIterator<Item = u32>) {
    for x in more {
        if !v.contains(&x) {
            v.push(x);
        }
    }
}

struct Gatherer<'n> {
    net: &'n Network,
    /// The layer that claimed each transport record.
    claimed: Vec<Option<Layer>>,
    sock_claimed: Vec<bool>,
    /// Each socket's TCP connection (computed once), and the other way round.
    sock_conn: Vec<Option<ConnId>>,
    conn_sockets: FastMap<ConnId, Vec<SockId>>,
    /// Sockets that carried LDAP operations.
    ldap_sockets: Vec<bool>,
}

impl<'n> Gatherer<'n> {
    fn new(net: &'n Network) -> Self {
        let mut g = Gatherer {
            net,
            claimed: vec![None; net.connections.len()],
            sock_claimed: vec![false; net.sockets.len()],
            sock_conn: Vec::with_capacity(net.sockets.len()),
            conn_sockets: FastMap::default(),
            ldap_sockets: vec![false; net.sockets.len()],
        };
        for (id, s) in net.sockets.iter() {
            let c = g.socket_connection(s);
            g.sock_conn.push(c);
            if let Some(c) = c {
                g.conn_sockets.entry(c).or_default().push(id);
            }
        }
        for op in &net.ldap.operations {
            if let Some(s) = op.socket {
                g.ldap_sockets[s] = true;
            }
        }
        g
    }

    fn end_of(&self, c: &Connection) -> Time {
        c.end().unwrap_or(self.net.trace_end)
    }

    /// The most recent connection of `candidates` (oldest first) opened by
    /// `until` that `fits`. Candidates are in time order, so the search starts
    /// at `until` and goes back.
    fn latest_fitting(&self, candidates: &[ConnId], until: Time, fits: impl Fn(&Connection) -> bool) -> Option<ConnId> {
        let conns = &self.net.connections;
        let end = candidates.partition_point(|&id| conns.get(id).opened <= until.saturating_add(SLACK));
        candidates[..end].iter().rev().copied().find(|&id| fits(conns.get(id)))
    }

    /// The shorter of the candidate lists by local port and by remote end.
    fn candidates(
        &self,
        transport: Transport,
        local_port: Option<u16>,
        remote: Option<Endpoint>,
    ) -> Option<&'n [ConnId]> {
        let conns = &self.net.connections;
        let by_port = local_port.filter(|&p| p != 0).map(|p| conns.by_local_port(transport, p));
        let by_remote = remote.filter(|r| r.port != 0).map(|r| conns.by_remote(transport, &r));
        match (by_port, by_remote) {
            (Some(a), Some(b)) => Some(if a.len() <= b.len() { a } else { b }),
            (a, b) => a.or(b),
        }
    }

    /// The TCP connection of a stream socket: same local port and remote end
    /// where known, same process, overlapping lifetimes; the latest such.
    fn socket_connection(&self, s: &Socket) -> Option<ConnId> {
        if s.is_datagram() {
            return None;
        }
        let window = (s.created, s.closed.unwrap_or(self.net.trace_end));
        let local_port = s.local.map(|l| l.port).filter(|&p| p != 0);
        let candidates = self.candidates(Transport::Tcp, local_port, s.remote)?;
        self.latest_fitting(candidates, window.1, |c| {
            same_pid(s.pid, c.pid)
                && (s.remote.is_none() || c.remote.is_none() || s.remote == c.remote)
                && (local_port.is_none() || c.local.is_none_or(|l| Some(l.port) == local_port))
                && overlaps(window, (c.opened, self.end_of(c)))
        })
    }

    /// The UDP flow of a datagram socket's peer.
    fn peer_connection(&self, s: &Socket, remote: &Endpoint, span: (Time, Time)) -> Option<ConnId> {
        let port = s.local.map(|l| l.port).filter(|&p| p != 0);
        let candidates = self.candidates(Transport::Udp, port, Some(*remote))?;
        self.latest_fitting(candidates, span.1, |c| {
            c.remote.as_ref() == Some(remote)
                && same_pid(s.pid, c.pid)
                && (port.is_none() || c.local.map(|l| l.port) == port)
                && overlaps(span, (c.opened, self.end_of(c)))
        })
    }

    fn claim(&mut self, conn: Option<ConnId>, layer: Layer) {
        if let Some(c) = conn
            && self.claimed[c].is_none()
        {
            self.claimed[c] = Some(layer);
        }
    }

    /// Claims a connection and the sockets joined to it.
    fn claim_with_sockets(&mut self, conn: Option<ConnId>, layer: Layer) {
        self.claim(conn, layer);
        if let Some(sockets) = conn.and_then(|c| self.conn_sockets.get(&c)) {
            for &s in sockets {
                self.sock_claimed[s] = true;
            }
        }
    }

    /// Server name and other names: the request's own host first, then what
    /// DNS says of the host and of the address.
    fn names(&self, own: Option<&str>, address: Option<&Address>) -> (Option<String>, Vec<String>) {
        let dns = &self.net.dns;
        let by_address = address.and_then(|a| dns.name_of(a));
        let own = own.filter(|h| Address::parse(h).is_none());
        let server = own.map(str::to_string).or_else(|| by_address.map(|n| n.name.clone()));
        let mut alt: Vec<String> = Vec::new();
        let mut add = |name: &str| {
            if server.as_deref().is_none_or(|s| !s.eq_ignore_ascii_case(name))
                && !alt.iter().any(|a| a.eq_ignore_ascii_case(name))
            {
                alt.push(name.to_string());
            }
        };
        if let Some(n) = own.and_then(|h| dns.lookup(h)) {
            n.aliases.iter().for_each(|a| add(a));
        }
        if let Some(n) = by_address {
            add(&n.name);
            n.aliases.iter().for_each(|a| add(a));
        }
        (server, alt)
    }

    fn process(&self, pid: Option<u32>, time: Time) -> Option<String> {
        self.net.process_name(pid, time).map(str::to_string)
    }

    fn wininet_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        for r in &net.wininet.requests {
            let conn = self.wininet_connection(r);
            self.claim_with_sockets(conn, Layer::WinInet);
            let c = conn.map(|id| net.connections.get(id));
            let remote = r.remote.filter(|e| e.port != 0).or(c.and_then(|c| c.remote)).or_else(|| {
                let address = r.remote.map(|e| e.address).or_else(|| r.dns_addresses.first().copied())?;
                Some(Endpoint::new(address, r.server_port?))
            });
            let url = r.url.clone().or_else(|| {
                let object = r.object.as_deref()?;
                let server = r.server.as_deref()?;
                let scheme = if r.server_port == Some(443) { "https" } else { "http" };
                Some(format!("{scheme}://{server}{object}"))
            });
            let host = r.server.as_deref().or_else(|| url.as_deref().and_then(url_host));
            let (server, alt_names) = self.names(host, remote.as_ref().map(|e| &e.address));
            let status = match (&r.status_line, r.cache_hit) {
                (Some(line), true) => Some(format!("{line} (from cache)")),
                (Some(line), false) => Some(line.clone()),
                (None, true) => Some("from cache".to_string()),
                (None, false) => r.redirected.then(|| "redirected".to_string()),
            };
            let ended = r.ended.or((r.status_line.is_some() || r.cache_hit).then_some(r.last));
            let mut threads = r.threads.clone();
            push_unique(&mut threads, r.connect_tid);
            out.push(RequestRow {
                process: self.process(r.pid, r.created),
                pid: r.pid,
                threads,
                layer: Layer::WinInet,
                protocol: url.as_deref().and_then(scheme),
                method: r.method.clone(),
                server,
                alt_names,
                ip: remote.map(|e| e.address),
                port: remote.map(|e| e.port).or(r.server_port),
                service: remote.and_then(|e| services::tcp(e.port)).map(str::to_string),
                network: remote.and_then(|e| e.address.class()),
                status,
                bytes_sent: Some(r.sent),
                bytes_received: Some(r.received),
                start: r.created,
                end: Some(ended.unwrap_or(net.trace_end)),
                open_at_end: ended.is_none(),
                error: None,
                activity: (!r.activity.is_zero()).then_some(r.activity),
                activity_events: None,
                local: r.local.or(c.and_then(|c| c.local)),
                connection: conn,
                app: None,
                started_by: self.started_by(r.started_by.iter().map(Some), conn),
                url,
            });
        }
    }

    /// A row's origins, best first: its own, then its connection's.
    fn started_by<'o>(
        &self,
        own: impl IntoIterator<Item = Option<&'o pools::Origin>>,
        conn: Option<ConnId>,
    ) -> Vec<pools::Origin>
    where
        'n: 'o,
    {
        let connection = conn.and_then(|c| self.net.connections.get(c).started_by.as_ref());
        own.into_iter().chain([connection]).flatten().cloned().collect()
    }

    /// The WinHTTP session a request was opened in.
    fn webio_session(&self, r: &webio::Request) -> Option<&'n webio::Session> {
        let session = r.session?;
        self.net.webio.sessions.iter().rev().find(|s| s.pid == r.pid && s.object == session && s.created <= r.created)
    }

    /// A WinINet request's TCP connection: by local port and remote end.
    fn wininet_connection(&self, r: &wininet::Request) -> Option<ConnId> {
        if r.cache_hit && r.remote.is_none() && r.local_port.is_none() {
            return None;
        }
        let window = (r.created, r.ended.unwrap_or(r.last).max(r.last));
        let local_port = r.local_port.or(r.local.map(|l| l.port)).filter(|&p| p != 0);
        let fits = |remote: Option<Endpoint>| {
            move |c: &Connection| {
                let remote_ok = match (remote, c.remote) {
                    (Some(a), Some(b)) => a.address == b.address && (a.port == 0 || a.port == b.port),
                    _ => true,
                };
                same_pid(r.pid, c.pid)
                    && remote_ok
                    && (local_port.is_none() || c.local.is_none_or(|l| Some(l.port) == local_port))
                    && overlaps(window, (c.opened, self.end_of(c)))
            }
        };
        let remote =
            r.remote.filter(|e| e.port != 0).or_else(|| Some(Endpoint::new(r.remote?.address, r.server_port?)));
        if local_port.is_some() || remote.is_some() {
            let candidates = self.candidates(Transport::Tcp, local_port, remote)?;
            return self.latest_fitting(candidates, window.1, fits(r.remote.or(remote)));
        }
        // A request on a kept-alive connection names no socket: the
        // connection to an address of its server, open while it ran.
        let port = r.server_port?;
        let named = r.server.as_deref().and_then(|s| self.net.dns.lookup(s)).map(|n| n.addresses.as_slice());
        let addresses = r.dns_addresses.iter().chain(named.into_iter().flatten());
        addresses
            .filter_map(|&a| {
                let remote = Endpoint::new(a, port);
                let candidates = self.candidates(Transport::Tcp, None, Some(remote))?;
                self.latest_fitting(candidates, window.1, fits(Some(remote)))
            })
            .max_by_key(|&id| self.net.connections.get(id).opened)
    }

    /// A WebIO socket's TCP connection: to its remote end, from its process,
    /// opened while it connected (on its connecting thread where known).
    fn webio_connection(&self, s: &webio::Socket) -> Option<ConnId> {
        let conns = &self.net.connections;
        // A socket seen only in its transfers: the TCB TCPIP named on their threads.
        if let Some(id) = s.tcb.and_then(|tcb| conns.by_pointer(tcb)) {
            return Some(id);
        }
        let remote = s.remote?;
        let until = s.closed.or(s.stop).unwrap_or(self.net.trace_end);
        let mut best: Option<(bool, Time, ConnId)> = None;
        // Candidates are in time order: only those opened while it connected.
        let all = conns.by_remote(Transport::Tcp, &remote);
        let from = all.partition_point(|&id| conns.get(id).opened < s.start.saturating_sub(SLACK));
        let to = all.partition_point(|&id| conns.get(id).opened <= until.saturating_add(SLACK));
        for &id in all.get(from..to).unwrap_or_default() {
            let c = conns.get(id);
            if !same_pid(s.pid, c.pid) {
                continue;
            }
            let same_thread = s.connect_tid.is_some() && c.tid == s.connect_tid;
            let key = (same_thread, -(c.opened - s.start).abs(), id);
            if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
                best = Some(key);
            }
        }
        best.map(|b| b.2)
    }

    fn webio_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        let w = &net.webio;
        let socket_conns: Vec<Option<ConnId>> = w.sockets.iter().map(|s| self.webio_connection(s)).collect();
        for r in &w.requests {
            let uses: Vec<Option<&webio::Use>> =
                if r.uses.is_empty() { vec![None] } else { r.uses.iter().map(|&u| Some(&w.uses[u])).collect() };
            let count = uses.len();
            for (i, u) in uses.into_iter().enumerate() {
                let socket = u.map(|u| &w.sockets[u.socket]);
                let conn = u.and_then(|u| socket_conns[u.socket]);
                self.claim_with_sockets(conn, Layer::WinHttp);
                let c = conn.map(|id| net.connections.get(id));
                let remote = socket.and_then(|s| s.remote).or(c.and_then(|c| c.remote));
                let url = r.url.clone();
                let host = url.as_deref().and_then(url_host);
                let (server, alt_names) = self.names(host, remote.as_ref().map(|e| &e.address));
                let last = i + 1 == count;
                let start = if i == 0 {
                    r.created.min(u.map_or(r.created, |u| u.first))
                } else {
                    u.map_or(r.created, |u| u.first)
                };
                let end = if last { r.closed } else { socket.and_then(|s| s.stop.or(s.closed)).or(u.map(|u| u.last)) };
                // Errors and the response belong to the socket that had them.
                let failed = socket.and_then(|s| s.error);
                let error = match u {
                    Some(u) => failed.or(u.error),
                    None => r.error,
                };
                let status = if failed.is_some() { None } else { r.status_line.clone() };
                let mut threads = r.threads.clone();
                push_unique(&mut threads, socket.and_then(|s| s.connect_tid));
                let sent = u.map(|u| if w.send_sizes_logged { u.sent } else { u.sent.max(u.posted) });
                out.push(RequestRow {
                    process: self.process(r.pid, r.created),
                    pid: r.pid,
                    threads,
                    layer: Layer::WinHttp,
                    protocol: url.as_deref().and_then(scheme),
                    method: r.method.clone(),
                    server,
                    alt_names,
                    ip: remote.map(|e| e.address),
                    port: remote.map(|e| e.port).or_else(|| url.as_deref().and_then(url_port)),
                    service: remote.and_then(|e| services::tcp(e.port)).map(str::to_string),
                    network: remote.and_then(|e| e.address.class()),
                    status,
                    bytes_sent: Some(sent.unwrap_or(0)),
                    bytes_received: Some(u.map_or(0, |u| u.received)),
                    start,
                    end: Some(end.unwrap_or(net.trace_end)),
                    open_at_end: end.is_none(),
                    error: error.map(errors::winhttp),
                    activity: (!r.activity.is_zero()).then_some(r.activity),
                    activity_events: None,
                    local: c.and_then(|c| c.local),
                    connection: conn,
                    app: None,
                    started_by: self.started_by(
                        [r.started_by.as_ref(), self.webio_session(r).and_then(|s| s.started_by.as_ref())],
                        conn,
                    ),
                    url,
                });
            }
        }
    }

    /// URLs URLMon handled that no WinINet request of the process fetched.
    fn urlmon_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        let fetched: std::collections::HashSet<(Option<u32>, String)> =
            net.wininet.requests.iter().filter_map(|r| Some((r.pid, r.url.as_deref()?.to_ascii_lowercase()))).collect();
        for u in &net.urlmon.urls {
            if fetched.contains(&(u.pid, u.url.to_ascii_lowercase())) {
                continue;
            }
            let host = url_host(&u.url);
            let (server, alt_names) = self.names(host, None);
            let mut threads = Vec::new();
            push_unique(&mut threads, u.tid);
            out.push(RequestRow {
                process: self.process(u.pid, u.time),
                pid: u.pid,
                threads,
                layer: Layer::UrlMon,
                protocol: scheme(&u.url),
                method: None,
                url: Some(u.url.clone()),
                server,
                alt_names,
                ip: None,
                port: url_port(&u.url),
                service: None,
                network: None,
                status: None,
                bytes_sent: None,
                bytes_received: u.bytes,
                start: u.time,
                end: None,
                open_at_end: false,
                error: None,
                activity: None,
                activity_events: None,
                local: None,
                connection: None,
                app: None,
                started_by: Vec::new(),
            });
        }
    }

    fn ldap_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        for op in &net.ldap.operations {
            let socket = op.socket.map(|s| net.sockets.get(s));
            let remote = socket
                .and_then(|s| s.remote)
                .or_else(|| op.socket.and_then(|s| self.sock_conn[s]).and_then(|c| net.connections.get(c).remote));
            let (server, alt_names) = self.names(None, remote.as_ref().map(|e| &e.address));
            let host = match (server.as_deref(), remote) {
                (Some(name), Some(r)) => Some(format!("{name}:{}", r.port)),
                (None, Some(r)) => Some(r.to_string()),
                (name, None) => name.map(str::to_string),
            };
            let mut threads = Vec::new();
            push_unique(&mut threads, op.tid);
            out.push(RequestRow {
                process: self.process(op.pid, op.time),
                pid: op.pid,
                threads,
                layer: Layer::Ldap,
                protocol: Some(
                    if remote.is_some_and(|r| matches!(r.port, 636 | 3269)) { "LDAPS" } else { "LDAP" }.to_string(),
                ),
                method: Some(op.kind.to_string()),
                url: Some(op.url(host.as_deref())),
                server,
                alt_names,
                ip: remote.map(|e| e.address),
                port: remote.map(|e| e.port),
                service: Some("LDAP".to_string()),
                network: remote.and_then(|e| e.address.class()),
                status: None,
                bytes_sent: None,
                bytes_received: None,
                start: op.time,
                end: None,
                open_at_end: false,
                error: None,
                activity: None,
                activity_events: None,
                local: socket.and_then(|s| s.local),
                connection: op.socket.and_then(|s| self.sock_conn[s]),
                app: None,
                started_by: self.started_by(
                    [op.started_by.as_ref(), socket.and_then(|s| s.started_by.as_ref())],
                    op.socket.and_then(|s| self.sock_conn[s]),
                ),
            });
        }
    }

    fn winsock_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        for (id, s) in net.sockets.iter() {
            if s.inert || self.sock_claimed[id] {
                continue;
            }
            let conn = self.sock_conn[id];
            if conn.is_some_and(|c| self.claimed[c].is_some()) {
                continue;
            }
            let ldap = self.ldap_sockets[id];
            let process = self.process(s.pid, s.created);
            let status = s.status.map(errors::ntstatus);
            let error = s.status.filter(|&st| st >= 0xC000_0000).map(errors::ntstatus);
            if s.is_datagram() && !s.peers.is_empty() {
                for p in &s.peers {
                    let conn = self.peer_connection(s, &p.remote, (p.first, p.last));
                    self.claim(conn, Layer::Winsock);
                    let (server, alt_names) = self.names(None, Some(&p.remote.address));
                    out.push(RequestRow {
                        process: process.clone(),
                        pid: s.pid,
                        threads: p.threads.clone(),
                        layer: Layer::Winsock,
                        protocol: Some(s.ip_protocol().to_string()),
                        method: None,
                        url: None,
                        server,
                        alt_names,
                        ip: Some(p.remote.address),
                        port: Some(p.remote.port),
                        service: if ldap { Some("CLDAP") } else { services::udp(p.remote.port) }.map(str::to_string),
                        network: p.remote.address.class(),
                        status: status.clone(),
                        bytes_sent: Some(p.sent),
                        bytes_received: Some(p.received),
                        start: p.first,
                        end: Some(p.last),
                        open_at_end: false,
                        error: error.clone(),
                        activity: None,
                        activity_events: None,
                        local: conn.and_then(|c| net.connections.get(c).local).or(s.local),
                        connection: conn,
                        app: None,
                        started_by: self.started_by([s.started_by.as_ref()], conn),
                    });
                }
                continue;
            }
            // A socket that never had a peer (a listener, a bind-only socket) is not a request.
            let Some(remote) = s.remote else { continue };
            self.claim(conn, Layer::Winsock);
            let (server, alt_names) = self.names(None, Some(&remote.address));
            let service = if ldap {
                Some("LDAP")
            } else if s.ip_protocol() == "UDP" {
                services::udp(remote.port)
            } else {
                services::tcp(remote.port)
            };
            out.push(RequestRow {
                process,
                pid: s.pid,
                threads: s.threads.clone(),
                layer: Layer::Winsock,
                protocol: Some(s.ip_protocol().to_string()),
                method: None,
                url: None,
                server,
                alt_names,
                ip: Some(remote.address),
                port: Some(remote.port),
                service: service.map(str::to_string),
                network: remote.address.class(),
                status,
                bytes_sent: Some(s.sent),
                bytes_received: Some(s.received),
                start: s.created,
                end: Some(s.closed.unwrap_or(net.trace_end)),
                open_at_end: s.closed.is_none(),
                error,
                activity: None,
                activity_events: None,
                // The connection's local end, where the socket was bound to any address.
                local: conn.and_then(|c| net.connections.get(c).local).or(s.local),
                connection: conn,
                app: None,
                started_by: self.started_by([s.started_by.as_ref()], conn),
            });
        }
    }

    fn transport_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        for (id, c) in net.connections.iter() {
            if self.claimed[id].is_some() {
                continue;
            }
            let bytes = c.bytes();
            // Idle connections of the system that merely existed: noise.
            let pid = c.pid.or(c.alt_pid);
            if matches!(c.origin, Origin::Rundown | Origin::Inferred) && pid.is_none_or(|p| p <= 4) && !bytes.any() {
                continue;
            }
            let layer = if c.transport == Transport::Udp { Layer::Udp } else { Layer::Tcp };
            self.claimed[id] = Some(layer);
            let remote = c.remote;
            let (server, alt_names) = self.names(c.dns_name.as_deref(), remote.as_ref().map(|e| &e.address));
            let service = remote.and_then(|r| match c.transport {
                Transport::Tcp => services::tcp(r.port),
                Transport::Udp => services::udp(r.port),
            });
            let end = c.end();
            let mut threads = Vec::new();
            push_unique(&mut threads, c.tid);
            out.push(RequestRow {
                process: self.process(pid, c.opened),
                pid,
                threads,
                layer,
                protocol: Some(c.transport.name().to_string()),
                method: None,
                url: None,
                server,
                alt_names,
                ip: remote.map(|e| e.address),
                port: remote.map(|e| e.port),
                service: service.map(str::to_string),
                network: remote.and_then(|e| e.address.class()),
                status: Some(state(c).to_string()),
                bytes_sent: Some(bytes.sent),
                bytes_received: Some(bytes.received),
                start: c.opened,
                end: Some(end.unwrap_or(net.trace_end)),
                open_at_end: end.is_none(),
                error: failure(c),
                activity: None,
                activity_events: None,
                local: c.local,
                connection: Some(id),
                app: None,
                started_by: self.started_by([], Some(id)),
            });
        }
    }
}

/// A connection's state, in words.
pub fn state(c: &Connection) -> &'static str {
    match (c.ending, c.origin) {
        (Some(Ending::Closed), _) => "closed",
        (Some(Ending::Failed), _) => "failed",
        (Some(Ending::Aborted), _) => "aborted",
        (Some(Ending::Abandoned), _) => "abandoned",
        (None, _) if c.transport == Transport::Udp => "active",
        (None, Origin::Connect) if c.connected.is_none() => "connecting",
        (None, _) => "open",
    }
}

fn failure(c: &Connection) -> Option<String> {
    let code = c.status.filter(|&s| s >= 0x8000_0000)?;
    Some(errors::ntstatus(code))
}

impl Network {
    /// Gathers every table.
    pub fn report(&self) -> Report {
        let mut g = Gatherer::new(self);
        let mut requests = Vec::new();
        g.wininet_rows(&mut requests);
        g.webio_rows(&mut requests);
        g.urlmon_rows(&mut requests);
        g.ldap_rows(&mut requests);
        g.winsock_rows(&mut requests);
        g.transport_rows(&mut requests);
        requests.sort_by_key(|r| r.start);
        for r in &mut requests {
            r.activity_events = r.activity.and_then(|a| self.activities.get(&a)).map(|a| a.events);
            r.app = r.pid.zip(r.threads.first().copied()).and_then(|thread| self.apps.at(thread, r.start));
        }
        let connections = self.connection_rows(&g.claimed);
        Report {
            trace_start: self.trace_start,
            trace_end: self.trace_end,
            requests,
            connections,
            dns: self.dns_rows(),
            http_server: self.server_rows(),
        }
    }

    fn connection_rows(&self, claimed: &[Option<Layer>]) -> Vec<ConnectionRow> {
        let mut rows: Vec<ConnectionRow> = self
            .connections
            .iter()
            .map(|(id, c)| {
                let pid = c.pid.or(c.alt_pid);
                let server = c
                    .dns_name
                    .clone()
                    .or_else(|| c.remote.and_then(|r| self.dns.name_of(&r.address)).map(|n| n.name.clone()));
                let bytes = c.bytes();
                let end = c.end();
                ConnectionRow {
                    process: self.process_name(pid, c.opened).map(str::to_string),
                    pid,
                    thread: c.tid,
                    protocol: c.transport.name(),
                    local: c.local,
                    remote: c.remote,
                    server,
                    state: state(c),
                    origin: c.origin.name(),
                    bytes_sent: bytes.sent,
                    bytes_received: bytes.received,
                    retransmits: c.retransmits,
                    start: c.opened,
                    end: Some(end.unwrap_or(self.trace_end)),
                    open_at_end: end.is_none(),
                    layer: claimed.get(id).copied().flatten(),
                    error: failure(c),
                    pointer: c.pointer,
                }
            })
            .collect();
        rows.sort_by_key(|r| r.start);
        rows
    }

    fn dns_rows(&self) -> Vec<DnsRow> {
        let unclaimed: Vec<crate::dns::Query> = self.dns_client.unclaimed_cache_hits().collect();
        let mut rows: Vec<DnsRow> = self
            .dns
            .queries()
            .iter()
            .chain(&unclaimed)
            .map(|q| DnsRow {
                kind: "query",
                process: self.process_name(q.pid, q.start).map(str::to_string),
                pid: q.pid,
                thread: q.tid,
                name: q.name.clone(),
                record_type: q.record_type.map(|t| record_type_name(t).map_or_else(|| t.to_string(), str::to_string)),
                status: q.status.map(errors::dns),
                answers: q.answers.clone(),
                aliases: q.aliases.clone(),
                cached: q.cached,
                servers: q.servers.clone(),
                resolvers: q.resolvers.iter().map(|r: &Resolver| r.name()).collect(),
                start: q.start,
                end: q.end,
                activity: (!q.activity.is_zero()).then_some(q.activity),
            })
            .collect();
        rows.extend(self.dns.servers().iter().map(|s| DnsRow {
            kind: "server",
            process: None,
            pid: None,
            thread: None,
            name: s.interface.clone(),
            record_type: None,
            status: None,
            answers: vec![s.address.address],
            aliases: Vec::new(),
            cached: false,
            servers: Vec::new(),
            resolvers: vec![Resolver::DnsClient.name()],
            start: s.time,
            end: None,
            activity: None,
        }));
        rows.sort_by_key(|r| r.start);
        rows
    }

    fn server_rows(&self) -> Vec<ServerRow> {
        self.http_server
            .requests
            .iter()
            .map(|r| ServerRow {
                request_id: r.request_id,
                connection_id: r.connection_id,
                verb: r.verb.clone(),
                url: r.url.clone(),
                status: r.status,
                bytes_sent: r.bytes_sent,
                client: r.client,
                server: r.server,
                site: r.site,
                queue: r.queue.clone(),
                process: self.process_name(r.worker_pid, r.received).map(str::to_string),
                pid: r.worker_pid,
                start: r.received,
                end: r.last,
                error: r.error.map(errors::ntstatus),
                activity: (!r.activity.is_zero()).then_some(r.activity),
                activity_events: self.activities.get(&r.activity).map(|a| a.events),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_parts() {
        assert_eq!(url_host("https://user@www.example.com:8443/a?b"), Some("www.example.com"));
        assert_eq!(url_host("http://[2001:db8::1]:8080/"), Some("2001:db8::1"));
        assert_eq!(url_port("https://www.example.com/x"), Some(443));
        assert_eq!(url_port("http://[2001:db8::1]:8080/"), Some(8080));
        assert_eq!(url_port("http://host:81"), Some(81));
        assert_eq!(scheme("https://x/"), Some("HTTPS".to_string()));
    }

    #[test]
    fn lifetimes_at_the_ends_of_time_overlap_without_overflow() {
        // Damaged traces give times near i64::MAX (the fuzzer's export target found this).
        assert!(overlaps((0, i64::MAX), (i64::MAX - 1, i64::MAX)));
        assert!(overlaps((i64::MAX, i64::MAX), (i64::MAX, i64::MAX)));
        assert!(!overlaps((i64::MIN, i64::MIN + 1), (0, 1)));
    }
}
