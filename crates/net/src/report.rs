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
use crate::transport::{ConnId, Connection, Direction, Transport, failure_state};
use crate::winsock::{SockId, Socket};

/// Events of different layers about one operation are this close in time
/// (100 ns units): 10 ms.
pub(crate) const SLACK: Time = 100_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Layer {
    WinInet,
    WinHttp,
    UrlMon,
    Ldap,
    Winsock,
    Tcp,
    Udp,
    /// A Chromium-based browser's request (NetLog, or a URL its events name).
    Chromium,
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
            Layer::Chromium => "Chromium",
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
    /// Who began it (a socket waiting for peers: `listen`).
    pub direction: Direction,
    /// The protocol's answer: an HTTP status line, an LDAP result; `None`
    /// for socket and transport rows, whose protocol the trace cannot read.
    pub status: Option<String>,
    /// The state of the transport under the row (its connection or
    /// socket), in [`transport::state_name`](crate::transport::state_name)'s
    /// words; `None` where no connection or socket is known.
    pub state: Option<&'static str>,
    /// `None` where the layer does not count bytes (never a made-up 0).
    pub bytes_sent: Option<u64>,
    pub bytes_received: Option<u64>,
    pub start: Time,
    /// `None` when no event tells its end (the provider logs none, or it
    /// was lost); the trace's end when it was still open then.
    pub end: Option<Time>,
    /// Still open when the trace ended (`end` is the trace's end).
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
    /// Where its time went, from the events that bound each phase.
    pub phases: Phases,
    /// The request's and the response's header block as logged (WebIO 100
    /// and 101), at most [`MAX_HEADERS`] bytes each.
    pub request_headers: Option<String>,
    pub response_headers: Option<String>,
    /// Where a redirect sent it: WinINet's redirect event, or a 3xx response's `Location`.
    pub redirect_url: Option<String>,
}

/// The longest header block kept (a trace's strings are untrusted: a
/// header event may claim up to 64 KiB, and there may be many).
pub const MAX_HEADERS: usize = 16 * 1024;

/// The phases of a request, each from its first to its last event; `None`
/// where no event of the trace bounds it. `connect` runs from the TCP
/// connect to the end of the TLS handshake (as HAR counts it); `tls` lies
/// within it. `receive` starts at the response's first bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases {
    pub dns: Option<(Time, Time)>,
    pub connect: Option<(Time, Time)>,
    pub tls: Option<(Time, Time)>,
    pub send: Option<(Time, Time)>,
    /// The response's first bytes: wait ends, receive begins.
    pub first_byte: Option<Time>,
}

/// A request's duration split into phases (100 ns units): consecutive,
/// so that blocked + dns + connect + send + wait + receive is the duration
/// (`tls` is part of `connect`). `None` for a phase the trace does not bound;
/// `blocked` is the time before and between the known phases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timings {
    pub blocked: Option<Time>,
    pub dns: Option<Time>,
    pub connect: Option<Time>,
    pub tls: Option<Time>,
    pub send: Option<Time>,
    pub wait: Option<Time>,
    pub receive: Option<Time>,
}

impl Phases {
    pub fn is_empty(&self) -> bool {
        *self == Phases::default()
    }

    /// The phases of a request from `start` to `end`, each clipped to
    /// follow the one before: `None` without an end or without any phase.
    pub fn timings(&self, start: Time, end: Option<Time>) -> Option<Timings> {
        let end = end?;
        if self.is_empty() || end < start {
            return None;
        }
        let mut cursor = start;
        let mut blocked = 0;
        let mut span = |phase: Option<(Time, Time)>, blocked: &mut Time| {
            let (a, b) = phase?;
            let a = a.clamp(cursor, end);
            let b = b.clamp(a, end);
            *blocked += a - cursor;
            cursor = b;
            Some(b - a)
        };
        let dns = span(self.dns, &mut blocked);
        let connect_end = match (self.connect, self.tls) {
            (Some((a, b)), Some((_, t))) => Some((a, b.max(t))),
            (Some(c), None) => Some(c),
            (None, Some(t)) => Some(t),
            (None, None) => None,
        };
        let connect = span(connect_end, &mut blocked);
        let tls = self.tls.zip(connect).map(|((a, b), c)| (b.min(end) - a.max(start)).clamp(0, c));
        let send = span(self.send, &mut blocked);
        let known_start = dns.is_some() || connect.is_some() || send.is_some();
        let (wait, receive) = match (self.first_byte, send) {
            (Some(first), _) => {
                let first = first.clamp(cursor, end);
                (Some(first - cursor), Some(end - first))
            }
            // Sent, and no byte of an answer seen: the rest is waiting.
            (None, Some(_)) => (Some(end - cursor), None),
            // A connection's life after its connect is no phase of a request.
            (None, None) => (None, None),
        };
        Some(Timings { blocked: known_start.then_some(blocked), dns, connect, tls, send, wait, receive })
    }
}

impl RequestRow {
    /// A row of `layer` starting at `start`, everything else unknown (None,
    /// empty, not open at the end): the rows' builders name what they know.
    pub fn new(layer: Layer, start: Time) -> RequestRow {
        RequestRow {
            process: None,
            pid: None,
            threads: Vec::new(),
            layer,
            protocol: None,
            method: None,
            url: None,
            server: None,
            alt_names: Vec::new(),
            ip: None,
            port: None,
            service: None,
            network: None,
            direction: Direction::Outbound,
            status: None,
            state: None,
            bytes_sent: None,
            bytes_received: None,
            start,
            end: None,
            open_at_end: false,
            error: None,
            activity: None,
            activity_events: None,
            local: None,
            connection: None,
            started_by: Vec::new(),
            app: None,
            phases: Phases::default(),
            request_headers: None,
            response_headers: None,
            redirect_url: None,
        }
    }
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
    /// The transport's state (see [`transport::state_name`](crate::transport::state_name)).
    pub state: &'static str,
    pub direction: Direction,
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
    /// TCPIP's TCB or UDP endpoint; MsQuic's connection.
    pub pointer: Option<u64>,
    /// A QUIC connection's facts (`protocol` is then `QUIC`).
    pub quic: Option<crate::providers::quic::QuicFacts>,
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
    /// Browsers' regions, events and NetLog sources.
    pub browser: Vec<crate::providers::chromium::BrowserRow>,
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
pub(crate) fn url_port(url: &str) -> Option<u16> {
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

pub(crate) fn scheme(url: &str) -> Option<String> {
    url.split_once("://").map(|(s, _)| s.to_ascii_uppercase()).filter(|s| !s.is_empty())
}

pub(crate) fn overlaps(a: (Time, Time), b: (Time, Time)) -> bool {
    a.0 <= b.1.saturating_add(SLACK) && b.0 <= a.1.saturating_add(SLACK)
}

pub(crate) fn same_pid(a: Option<u32>, b: Option<u32>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

pub(crate) fn push_unique(v: &mut Vec<u32>, more: impl IntoIterator<Item = u32>) {
    for x in more {
        if !v.contains(&x) {
            v.push(x);
        }
    }
}

/// A (start, end) of raw times.
type Span = (Time, Time);

pub(crate) struct Gatherer<'n> {
    pub(crate) net: &'n Network,
    /// The layer that claimed each transport record.
    pub(crate) claimed: Vec<Option<Layer>>,
    pub(crate) sock_claimed: Vec<bool>,
    /// Each socket's TCP connection (computed once), and the other way round.
    pub(crate) sock_conn: Vec<Option<ConnId>>,
    pub(crate) conn_sockets: FastMap<ConnId, Vec<SockId>>,
    /// Sockets that carried LDAP operations.
    pub(crate) ldap_sockets: Vec<bool>,
    /// Datagram sockets by local port (a UDP flow's sockets).
    pub(crate) datagram_sockets: FastMap<u16, Vec<SockId>>,
    /// Finished DNS lookups by (process, lowercase name): (start, end), by end.
    lookups: FastMap<(Option<u32>, String), Vec<Span>>,
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
            datagram_sockets: FastMap::default(),
            lookups: FastMap::default(),
        };
        for q in net.dns.queries() {
            if let Some(end) = q.end {
                let name = q.name.trim_end_matches('.').to_ascii_lowercase();
                g.lookups.entry((q.pid, name)).or_default().push((q.start, end));
            }
        }
        for spans in g.lookups.values_mut() {
            spans.sort_unstable_by_key(|&(start, end)| (end, start));
        }
        for (id, s) in net.sockets.iter() {
            if let Some(port) = s.local.map(|l| l.port).filter(|&p| p != 0 && s.is_datagram()) {
                g.datagram_sockets.entry(port).or_default().push(id);
            }
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

    pub(crate) fn end_of(&self, c: &Connection) -> Time {
        c.end().unwrap_or(self.net.trace_end)
    }

    /// The most recent connection of `candidates` (oldest first) opened by
    /// `until` that `fits`. Candidates are in time order, so the search starts
    /// at `until` and goes back.
    pub(crate) fn latest_fitting(
        &self,
        candidates: &[ConnId],
        until: Time,
        fits: impl Fn(&Connection) -> bool,
    ) -> Option<ConnId> {
        let conns = &self.net.connections;
        let end = candidates.partition_point(|&id| conns.get(id).opened <= until.saturating_add(SLACK));
        candidates[..end].iter().rev().copied().find(|&id| fits(conns.get(id)))
    }

    /// The shorter of the candidate lists by local port and by remote end.
    pub(crate) fn candidates(
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
    pub(crate) fn socket_connection(&self, s: &Socket) -> Option<ConnId> {
        // A listener has no connection of its own: those it accepted have sockets of theirs.
        if s.is_datagram() || s.listening {
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
    pub(crate) fn peer_connection(&self, s: &Socket, remote: &Endpoint, span: (Time, Time)) -> Option<ConnId> {
        let port = s.local.map(|l| l.port).filter(|&p| p != 0);
        let candidates = self.candidates(Transport::Udp, port, Some(*remote))?;
        self.latest_fitting(candidates, span.1, |c| {
            c.remote.as_ref() == Some(remote)
                && same_pid(s.pid, c.pid)
                && (port.is_none() || c.local.map(|l| l.port) == port)
                && overlaps(span, (c.opened, self.end_of(c)))
        })
    }

    pub(crate) fn claim(&mut self, conn: Option<ConnId>, layer: Layer) {
        if let Some(c) = conn
            && self.claimed[c].is_none()
        {
            self.claimed[c] = Some(layer);
        }
    }

    /// Claims a connection and the sockets joined to it.
    pub(crate) fn claim_with_sockets(&mut self, conn: Option<ConnId>, layer: Layer) {
        self.claim(conn, layer);
        if let Some(sockets) = conn.and_then(|c| self.conn_sockets.get(&c)) {
            for &s in sockets {
                self.sock_claimed[s] = true;
            }
        }
        // A UDP flow's datagram sockets (QUIC under HTTP/3).
        for s in conn.map(|c| self.flow_sockets(c)).unwrap_or_default() {
            self.sock_claimed[s] = true;
        }
    }

    /// Server name and other names: the request's own host first, then what
    /// DNS says of the host and of the address.
    pub(crate) fn names(&self, own: Option<&str>, address: Option<&Address>) -> (Option<String>, Vec<String>) {
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

    /// The lookup of `host` a request waited for: the latest of its process
    /// that ended between the request's start and `until` (its connect).
    pub(crate) fn lookup_span(
        &self,
        pid: Option<u32>,
        host: Option<&str>,
        from: Time,
        until: Time,
    ) -> Option<(Time, Time)> {
        let key = (pid, host?.trim_end_matches('.').to_ascii_lowercase());
        let spans = self.lookups.get(&key)?;
        // The latest to end by `until`, if it ended after `from`.
        let before = spans.partition_point(|&(_, end)| end <= until.saturating_add(SLACK));
        spans[..before].last().copied().filter(|&(_, end)| end >= from.saturating_sub(SLACK))
    }

    /// A connection's connect, when the row opened it (not a reused one).
    pub(crate) fn connect_span(&self, conn: Option<ConnId>, from: Time) -> Option<(Time, Time)> {
        let c = self.net.connections.get(conn?);
        let opened_here = c.origin == crate::transport::Origin::Connect && c.opened >= from.saturating_sub(SLACK);
        opened_here.then_some((c.opened, c.connected?))
    }

    pub(crate) fn process(&self, pid: Option<u32>, time: Time) -> Option<String> {
        self.net.process_name(pid, time).map(str::to_string)
    }

    /// A row's origins, best first: its own, then its connection's.
    pub(crate) fn started_by<'o>(
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
}

/// A socket's local end: its connection's where the socket was bound to
/// any address (0.0.0.0) and TCPIP knows which one it got.
pub(crate) fn socket_local(s: &Socket, conn: Option<&Connection>) -> Option<Endpoint> {
    conn.and_then(|c| c.local).filter(|l| s.local.is_none_or(|sl| sl.port == l.port)).or(s.local)
}

/// A socket's transport state: its connection's where TCPIP saw it (which
/// knows resets and refusals), else what AFD says (its failure status, its close).
pub(crate) fn socket_state(s: &Socket, conn: Option<&Connection>) -> &'static str {
    if let Some(c) = conn {
        return c.state();
    }
    if let Some(state) = s.status.filter(|&st| st >= 0xC000_0000).map(|st| failure_state(Some(st)).unwrap_or("failed"))
    {
        return state;
    }
    match (s.closed, s.is_datagram()) {
        (Some(_), _) => "closed",
        (None, _) if s.listening => "open",
        (None, true) => "active",
        (None, false) if s.connected.is_none() && s.origin != crate::winsock::SockOrigin::Accepted => "connecting",
        (None, false) => "open",
    }
}

/// The service a flow is for: the remote port's, or for a flow a peer began, the local port's.
pub(crate) fn service_of(
    transport: Transport,
    direction: Direction,
    local: Option<Endpoint>,
    remote: Option<Endpoint>,
) -> Option<&'static str> {
    let port = match direction {
        Direction::Outbound => remote?.port,
        Direction::Inbound | Direction::Listen => local?.port,
    };
    match transport {
        Transport::Tcp => crate::services::tcp(port),
        Transport::Udp => crate::services::udp(port),
    }
}

pub(crate) fn failure(c: &Connection) -> Option<String> {
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
        let browser = g.chromium_rows(&mut requests);
        g.urlmon_rows(&mut requests);
        g.ldap_rows(&mut requests);
        g.winsock_rows(&mut requests);
        g.transport_rows(&mut requests);
        // What the machine began first, then what peers began, then listeners; each by time.
        requests.sort_by_key(|r| (r.direction, r.start));
        crate::protocols::label(self, &mut requests);
        for r in &mut requests {
            r.activity_events = r.activity.and_then(|a| self.activities.get(&a)).map(|a| a.events);
            r.app = r.pid.zip(r.threads.first().copied()).and_then(|thread| self.apps.at(thread, r.start));
        }
        let mut connections = self.connection_rows(&g.claimed);
        g.quic_connections(&mut connections);
        Report {
            trace_start: self.trace_start,
            trace_end: self.trace_end,
            requests,
            connections,
            dns: self.dns_rows(),
            http_server: self.http_server.rows(&self.processes, &self.activities),
            browser,
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
                    state: c.state(),
                    direction: c.direction(),
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
                    quic: None,
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
