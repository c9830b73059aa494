//! Chromium's NetLog as its trace events carry it: entries of the `netlog`
//! category (keyword 0x80), named after the NetLog event type
//! (`URL_REQUEST_START_JOB`, `TCP_CONNECT`, `QUIC_SESSION` …), with the
//! source's type (`source_type`) and the entry's parameters as JSON
//! (`params`) (`net/log/trace_net_log_observer.cc`; event types and
//! parameters: `net/log/net_log_event_type_list.h`). The Perfetto exporter
//! puts each source on a track of its own: the low 32 bits of `Id` are the
//! source id (as NetBlame reads them, netblame.md §3.12), which other
//! entries name in their `source_dependency`.
//!
//! Sources are URL requests, HTTP stream jobs, sockets (TCP, UDP), HTTP/2
//! and QUIC sessions and more. A request reaches the socket or session that
//! carried it through the sources that name one another: its own
//! dependencies first (`HTTP_STREAM_REQUEST_BOUND_TO_JOB` names the job that
//! won a race), then any source that names it or that it names, never
//! through another request.
//!
//! Joins to the Windows layers, most certain first:
//! - **endpoint**: a NetLog socket's local and remote addresses
//!   (`TCP_CONNECT`'s `source_address`, `TCP_CONNECT_ATTEMPT`'s `address`;
//!   `UDP_LOCAL_ADDRESS`, `UDP_CONNECT`) are a TCP connection's or UDP flow's
//!   of the same process, alive at the same time: exact;
//! - **thread**: without a local address, the AFD socket the process
//!   created on the thread of a connect attempt while it ran, to the
//!   attempt's address (Chromium's network thread makes its own socket
//!   calls): sure unless the thread opened two sockets to one address at
//!   once;
//! - **host** (URL-bearing events without NetLog, see `chromium`): a TCP
//!   connection of the same process to an address the URL's host resolved
//!   to, on the URL's port, alive during the events: likely (a browser
//!   reuses connections, so the first fetch that opened it is taken).

use nettrail_decode::fasthash::FastMap;
use serde_json::Value as Json;

use crate::address::Endpoint;
use crate::event::{Head, Time};
use crate::pools::{Origin, Pools};
use crate::providers::chromium::{Browser, BrowserRow, Phase, browser_name, is_url};
use crate::providers::quic::{QuicFacts, QuicRow};
use crate::report::{Gatherer, Layer, RequestRow, SLACK, overlaps, push_unique, same_pid, scheme, url_host, url_port};
use crate::services;
use crate::transport::{ConnId, Transport};
use crate::winsock::SockId;

/// The NetLog event types the model reads (`Sources::apply`), each with
/// what it takes from them.
pub const NETLOG_EVENTS: [(&str, &str); 29] = [
    ("REQUEST_ALIVE", "a URL request's lifetime; its begin's stack; net_error"),
    ("URL_REQUEST_START_JOB", "url, method; net_error at its end"),
    ("URL_REQUEST_REDIRECTED", "location: the request's row ends, the next job starts another"),
    ("HTTP_TRANSACTION_SEND_REQUEST_HEADERS", "HTTP/1.x: line"),
    ("HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS", "HTTP/2"),
    ("HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS", "HTTP/3: quic_stream_id"),
    ("HTTP_TRANSACTION_READ_RESPONSE_HEADERS", "headers: the status line"),
    ("HTTP_STREAM_REQUEST_BOUND_TO_JOB", "source_dependency: the job that carries the request"),
    ("SOCKET_POOL_BOUND_TO_SOCKET", "source_dependency: the job's socket"),
    ("SOCKET_ALIVE", "a socket's lifetime; source_dependency"),
    ("SOCKET_IN_USE", "source_dependency: the socket's user"),
    ("TCP_CONNECT", "source_address: the local end"),
    ("TCP_CONNECT_ATTEMPT", "address, local_address, remote_address; the attempt's thread and time"),
    ("SSL_CONNECT", "next_proto (ALPN)"),
    ("SOCKET_BYTES_SENT", "byte_count"),
    ("SOCKET_BYTES_RECEIVED", "byte_count"),
    ("SSL_SOCKET_BYTES_SENT", "byte_count (above TLS)"),
    ("SSL_SOCKET_BYTES_RECEIVED", "byte_count (above TLS)"),
    ("UDP_CONNECT", "address: the remote end"),
    ("UDP_LOCAL_ADDRESS", "address: the local end"),
    ("HTTP2_SESSION", "host; the session's lifetime"),
    ("HTTP2_SESSION_SEND_HEADERS", "stream_id, source_dependency: a request's stream"),
    ("HTTP2_SESSION_SEND_DATA", "stream_id, size"),
    ("HTTP2_SESSION_RECV_DATA", "stream_id, size"),
    ("QUIC_SESSION", "host, port, connection_id; the session's lifetime"),
    ("QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED", "the handshake's end"),
    ("QUIC_SESSION_STREAM_FRAME_SENT", "stream_id, length"),
    ("QUIC_SESSION_STREAM_FRAME_RECEIVED", "stream_id, length"),
    ("QUIC_SESSION_CLOSED", "quic_error, details, from_peer"),
];

/// A NetLog entry's source and parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct NetLog {
    /// The source's id (the low 32 bits of the track).
    pub source: u32,
    /// `URL_REQUEST`, `SOCKET` … (on begins and single entries).
    pub source_type: Option<String>,
    pub params: Json,
}

impl NetLog {
    /// An entry of a track, if its arguments are a NetLog entry's.
    pub(crate) fn parse(track: Option<u64>, args: &[(String, String)]) -> Option<NetLog> {
        let source = track? as u32;
        let arg = |name: &str| args.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str());
        let source_type = arg("source_type").map(str::to_string);
        let params = arg("params").and_then(|p| serde_json::from_str(p).ok()).unwrap_or(Json::Null);
        (source_type.is_some() || params.is_object()).then_some(NetLog { source, source_type, params })
    }

    /// A request's lifetime begins (its stack says who asked for it).
    pub(crate) fn starts_request(&self, name: &str, phase: Phase) -> bool {
        name == "REQUEST_ALIVE" && phase == Phase::Begin
    }
}

/// One URL_REQUEST_START_JOB: a URL fetched (a redirect starts another).
#[derive(Clone, Debug, Default)]
pub struct UrlJob {
    pub url: String,
    pub method: Option<String>,
    pub start: Time,
    pub end: Option<Time>,
    /// The response's status line (`HTTP/1.1 200`).
    pub status: Option<String>,
    /// Where it was redirected to.
    pub redirected: Option<String>,
    /// A net error (negative).
    pub error: Option<i64>,
    /// `HTTP/1.1`, `HTTP/2`, `HTTP/3`: which transaction event sent its headers.
    pub protocol: Option<&'static str>,
    /// The QUIC stream of its request (HTTP/3).
    pub quic_stream: Option<u64>,
}

/// Bytes through a socket at one moment.
#[derive(Clone, Copy, Debug)]
pub struct Transfer {
    pub time: Time,
    pub sent: bool,
    pub bytes: u64,
    /// Counted above TLS (SSL_SOCKET_BYTES_*: the HTTP bytes).
    pub plaintext: bool,
}

/// Bytes of one HTTP/2 or QUIC stream.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stream {
    pub id: u64,
    pub sent: u64,
    pub received: u64,
}

/// A TCP connect attempt: when it began and ended, its thread, its address.
#[derive(Clone, Copy, Debug)]
pub struct Attempt {
    pub begin: Time,
    pub end: Option<Time>,
    pub tid: Option<u32>,
    pub address: Option<Endpoint>,
}

/// One NetLog source.
#[derive(Clone, Debug, Default)]
pub struct Source {
    pub browser: Browser,
    pub pid: Option<u32>,
    pub id: u32,
    pub kind: String,
    pub first: Time,
    pub last: Time,
    /// Its lifetime entry (REQUEST_ALIVE, SOCKET_ALIVE, HTTP2_SESSION, QUIC_SESSION): begin and end.
    pub alive: Option<(Time, Option<Time>)>,
    pub threads: Vec<u32>,
    /// Sources its entries name (`source_dependency`).
    pub depends_on: Vec<u32>,
    depends_index: FastMap<u32, ()>,
    pub jobs: Vec<UrlJob>,
    pub remote: Option<Endpoint>,
    pub local: Option<Endpoint>,
    pub attempts: Vec<Attempt>,
    /// ALPN's choice (`h2`, `http/1.1`).
    pub next_proto: Option<String>,
    pub transfers: Vec<Transfer>,
    /// A session's origin host (and port).
    pub host: Option<String>,
    pub port: Option<u16>,
    pub connection_id: Option<String>,
    pub handshake_done: Option<Time>,
    pub streams: Vec<Stream>,
    /// Where each stream is in `streams`.
    stream_index: FastMap<u64, usize>,
    /// HTTP/2: the stream each request's headers went out on (request source, stream).
    pub stream_of: Vec<(u32, u64)>,
    /// The first stream of each request in `stream_of`.
    stream_of_index: FastMap<u32, u64>,
    pub close: Option<String>,
    pub net_error: Option<i64>,
    pub started_by: Option<Origin>,
}

impl Source {
    fn stream_mut(&mut self, id: u64) -> &mut Stream {
        let next = self.streams.len();
        let at = *self.stream_index.entry(id).or_insert(next);
        if at == next {
            self.streams.push(Stream { id, ..Stream::default() });
        }
        &mut self.streams[at]
    }

    /// A stream by its id.
    pub fn stream(&self, id: u64) -> Option<&Stream> {
        self.stream_index.get(&id).map(|&at| &self.streams[at])
    }

    /// HTTP/2: the stream a request's headers went out on (the first, if several).
    pub fn stream_of_request(&self, request: u32) -> Option<&Stream> {
        self.stream(*self.stream_of_index.get(&request)?)
    }

    fn job(&mut self) -> Option<&mut UrlJob> {
        self.jobs.last_mut()
    }

    pub fn is_request(&self) -> bool {
        self.kind == "URL_REQUEST"
    }
}

fn p_str<'a>(params: &'a Json, key: &str) -> Option<&'a str> {
    params.get(key)?.as_str()
}

fn p_int(params: &Json, key: &str) -> Option<i64> {
    let v = params.get(key)?;
    v.as_i64().or_else(|| v.as_str()?.parse().ok())
}

fn p_endpoint(params: &Json, key: &str) -> Option<Endpoint> {
    Endpoint::parse(p_str(params, key)?)
}

/// The HTTP version of a request line (`GET / HTTP/1.1\r\n`).
fn line_version(line: &str) -> Option<&'static str> {
    let v = line.split_whitespace().nth(2)?;
    Some(match v {
        "HTTP/1.0" => "HTTP/1.0",
        "HTTP/1.1" => "HTTP/1.1",
        _ => return None,
    })
}

/// The protocol ALPN or a session names: `h2` → HTTP/2, `h3` → HTTP/3.
pub(crate) fn alpn(proto: &str) -> Option<&'static str> {
    Some(match proto.to_ascii_lowercase().as_str() {
        "http/1.1" => "HTTP/1.1",
        "http/1.0" => "HTTP/1.0",
        "h2" | "http/2" | "http2" => "HTTP/2",
        p if p == "h3" || p.starts_with("h3-") || p.starts_with("quic") || p == "http/3" => "HTTP/3",
        _ => return None,
    })
}

/// Every NetLog source, by (browser, process, id).
#[derive(Debug, Default)]
pub struct Sources {
    pub list: Vec<Source>,
    by_key: FastMap<(Browser, Option<u32>, u32), usize>,
}

impl Sources {
    pub fn get(&self, browser: Browser, pid: Option<u32>, id: u32) -> Option<&Source> {
        self.by_key.get(&(browser, pid, id)).map(|&i| &self.list[i])
    }

    fn index(&self, s: &Source, id: u32) -> Option<usize> {
        self.by_key.get(&(s.browser, s.pid, id)).copied()
    }

    pub(crate) fn apply(&mut self, head: &Head, browser: Browser, name: &str, phase: Phase, n: NetLog, pools: &Pools) {
        let t = head.time;
        let pid = Head::known(head.pid);
        let key = (browser, pid, n.source);
        let i = match self.by_key.get(&key) {
            Some(&i) => i,
            None => {
                self.list.push(Source { browser, pid, id: n.source, first: t, last: t, ..Source::default() });
                self.by_key.insert(key, self.list.len() - 1);
                self.list.len() - 1
            }
        };
        let s = &mut self.list[i];
        s.last = s.last.max(t);
        if let Some(kind) = n.source_type.filter(|_| s.kind.is_empty()) {
            s.kind = kind;
        }
        if s.threads.len() < MAX_THREADS {
            push_unique(&mut s.threads, Head::known(head.tid));
        }
        let p = &n.params;
        if let Some(dep) = p.get("source_dependency").and_then(|d| d.get("id")).and_then(Json::as_u64) {
            let dep = dep as u32;
            if s.depends_index.insert(dep, ()).is_none() {
                s.depends_on.push(dep);
            }
        }
        let error = p_int(p, "net_error").filter(|&e| e != 0);
        if phase == Phase::End && error.is_some() {
            s.net_error = error;
        }
        let begin = phase == Phase::Begin;
        match (name, phase) {
            ("REQUEST_ALIVE" | "SOCKET_ALIVE" | "HTTP2_SESSION" | "QUIC_SESSION", Phase::Begin) => {
                s.alive = Some((t, None));
                if name == "REQUEST_ALIVE" {
                    s.started_by = Some(pools.origin(head));
                }
                if let Some(host) = p_str(p, "host") {
                    // HTTP2_SESSION's host is `host:port`; QUIC_SESSION's has its port apart.
                    let (h, port) = match host.rsplit_once(':') {
                        Some((h, port)) if port.parse::<u16>().is_ok() => (h, port.parse().ok()),
                        _ => (host, None),
                    };
                    s.host = Some(h.to_string());
                    s.port = p_int(p, "port").and_then(|v| u16::try_from(v).ok()).or(port);
                }
                if let Some(id) = p.get("connection_id") {
                    s.connection_id = id.as_str().map(str::to_string).or_else(|| Some(id.to_string()));
                }
            }
            ("REQUEST_ALIVE" | "SOCKET_ALIVE" | "HTTP2_SESSION" | "QUIC_SESSION", Phase::End) => {
                if let Some((_, end)) = &mut s.alive {
                    end.get_or_insert(t);
                }
                if let Some(job) = s.job() {
                    job.end.get_or_insert(t);
                    job.error = job.error.or(error);
                }
            }
            ("URL_REQUEST_START_JOB", Phase::Begin) => {
                if let Some(url) = p_str(p, "url") {
                    s.jobs.push(UrlJob {
                        url: url.to_string(),
                        method: p_str(p, "method").map(str::to_string),
                        start: t,
                        ..UrlJob::default()
                    });
                }
            }
            ("URL_REQUEST_START_JOB", Phase::End) => {
                if let Some(job) = s.job() {
                    job.error = job.error.or(error);
                }
            }
            ("URL_REQUEST_REDIRECTED", _) => {
                if let Some(job) = s.job() {
                    job.redirected = Some(p_str(p, "location").unwrap_or_default().to_string());
                    job.end = Some(t);
                }
            }
            ("HTTP_TRANSACTION_SEND_REQUEST_HEADERS", _) => {
                let version = p_str(p, "line").and_then(line_version);
                if let Some(job) = s.job() {
                    job.protocol = version.or(Some("HTTP/1.1"));
                }
            }
            ("HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS", _) => {
                if let Some(job) = s.job() {
                    job.protocol = Some("HTTP/2");
                }
            }
            ("HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS", _) => {
                let stream = p_int(p, "quic_stream_id").and_then(|v| u64::try_from(v).ok());
                if let Some(job) = s.job() {
                    job.protocol = Some("HTTP/3");
                    job.quic_stream = stream;
                }
            }
            ("HTTP_TRANSACTION_READ_RESPONSE_HEADERS", _) => {
                let line = p.get("headers").and_then(|h| h.get(0)).and_then(Json::as_str).map(str::to_string);
                if let Some(job) = s.job() {
                    job.status = line;
                }
            }
            ("TCP_CONNECT", Phase::End) => {
                s.local = p_endpoint(p, "source_address").or(s.local);
            }
            ("TCP_CONNECT_ATTEMPT", _) => {
                let tid = Head::known(head.tid);
                if begin {
                    let address = p_endpoint(p, "address");
                    s.attempts.push(Attempt { begin: t, end: None, tid, address });
                    s.remote = address.or(s.remote);
                } else {
                    if let Some(a) = s.attempts.last_mut() {
                        a.end.get_or_insert(t);
                    }
                    s.local = p_endpoint(p, "local_address").or(s.local);
                    s.remote = p_endpoint(p, "remote_address").or(s.remote);
                }
            }
            ("SSL_CONNECT", Phase::End) => {
                s.next_proto = p_str(p, "next_proto").filter(|v| !v.is_empty()).map(str::to_string);
            }
            ("UDP_CONNECT", Phase::Begin) => s.remote = p_endpoint(p, "address").or(s.remote),
            ("UDP_LOCAL_ADDRESS", _) => s.local = p_endpoint(p, "address").or(s.local),
            (
                "SOCKET_BYTES_SENT"
                | "SOCKET_BYTES_RECEIVED"
                | "SSL_SOCKET_BYTES_SENT"
                | "SSL_SOCKET_BYTES_RECEIVED"
                | "UDP_BYTES_SENT"
                | "UDP_BYTES_RECEIVED",
                _,
            ) => {
                if let Some(bytes) = p_int(p, "byte_count").and_then(|v| u64::try_from(v).ok()) {
                    let sent = name.ends_with("SENT");
                    s.transfers.push(Transfer { time: t, sent, bytes, plaintext: name.starts_with("SSL_") });
                }
            }
            ("HTTP2_SESSION_SEND_HEADERS", _) => {
                let stream = p_int(p, "stream_id").and_then(|v| u64::try_from(v).ok());
                let request = p.get("source_dependency").and_then(|d| d.get("id")).and_then(Json::as_u64);
                if let (Some(stream), Some(request)) = (stream, request) {
                    s.stream_of.push((request as u32, stream));
                    s.stream_of_index.entry(request as u32).or_insert(stream);
                    s.stream_mut(stream);
                }
            }
            (
                "HTTP2_SESSION_SEND_DATA"
                | "HTTP2_SESSION_RECV_DATA"
                | "QUIC_SESSION_STREAM_FRAME_SENT"
                | "QUIC_SESSION_STREAM_FRAME_RECEIVED",
                _,
            ) => {
                let stream = p_int(p, "stream_id").and_then(|v| u64::try_from(v).ok());
                let size = p_int(p, "size").or_else(|| p_int(p, "length")).and_then(|v| u64::try_from(v).ok());
                if let (Some(stream), Some(size)) = (stream, size) {
                    let st = s.stream_mut(stream);
                    if name.ends_with("SENT") || name.ends_with("SEND_DATA") {
                        st.sent += size;
                    } else {
                        st.received += size;
                    }
                }
            }
            ("QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED", _) => {
                s.handshake_done.get_or_insert(t);
            }
            ("QUIC_SESSION_CLOSED", _) => {
                let code = p_int(p, "quic_error").unwrap_or(0);
                let who =
                    if p.get("from_peer").and_then(Json::as_bool) == Some(true) { "the peer" } else { "this side" };
                let details = p_str(p, "details").filter(|d| !d.is_empty());
                let name = quic_error(code).map(|n| format!(" ({n})")).unwrap_or_default();
                s.close = Some(match details {
                    Some(d) => format!("quic_error {code}{name}, closed by {who}: {d}"),
                    None => format!("quic_error {code}{name}, closed by {who}"),
                });
            }
            _ => {}
        }
    }
}

/// Names of Chromium's QUIC error codes the connection-close reasons show
/// most (`quic_error_codes.h`).
fn quic_error(code: i64) -> Option<&'static str> {
    Some(match code {
        0 => "QUIC_NO_ERROR",
        1 => "QUIC_INTERNAL_ERROR",
        16 => "QUIC_PEER_GOING_AWAY",
        25 => "QUIC_NETWORK_IDLE_TIMEOUT",
        _ => return None,
    })
}

/// A Chromium net error as text: `-105 (ERR_NAME_NOT_RESOLVED)` (`net_error_list.h`).
pub fn net_error(code: i64) -> String {
    let name = match code {
        -2 => "ERR_FAILED",
        -3 => "ERR_ABORTED",
        -7 => "ERR_TIMED_OUT",
        -20 => "ERR_BLOCKED_BY_CLIENT",
        -21 => "ERR_NETWORK_CHANGED",
        -100 => "ERR_CONNECTION_CLOSED",
        -101 => "ERR_CONNECTION_RESET",
        -102 => "ERR_CONNECTION_REFUSED",
        -103 => "ERR_CONNECTION_ABORTED",
        -104 => "ERR_CONNECTION_FAILED",
        -105 => "ERR_NAME_NOT_RESOLVED",
        -106 => "ERR_INTERNET_DISCONNECTED",
        -107 => "ERR_SSL_PROTOCOL_ERROR",
        -109 => "ERR_ADDRESS_UNREACHABLE",
        -118 => "ERR_CONNECTION_TIMED_OUT",
        -137 => "ERR_NAME_RESOLUTION_FAILED",
        -200 => "ERR_CERT_COMMON_NAME_INVALID",
        -201 => "ERR_CERT_DATE_INVALID",
        -202 => "ERR_CERT_AUTHORITY_INVALID",
        -324 => "ERR_EMPTY_RESPONSE",
        -356 => "ERR_QUIC_PROTOCOL_ERROR",
        _ => return code.to_string(),
    };
    format!("{code} ({name})")
}

/// Sources a request's search visits at most, and neighbours it takes of
/// each (a hostile trace's hub of thousands of dependents must not make the
/// searches quadratic; a good trace's socket is a few sources away, named
/// early).
const MAX_VISITED: usize = 256;

/// Threads a source keeps at most.
const MAX_THREADS: usize = 64;

/// What carried a request: the socket and the session (HTTP/2, QUIC) found.
#[derive(Clone, Copy, Debug, Default)]
struct Carrier {
    socket: Option<usize>,
    session: Option<usize>,
}

/// How a NetLog socket was joined: its TCP connection or UDP flow, its AFD
/// sockets, and how sure.
#[derive(Clone, Debug, Default)]
struct SocketJoin {
    conn: Option<ConnId>,
    sockets: Vec<SockId>,
    how: Option<&'static str>,
}

impl Gatherer<'_> {
    /// The sources each source names and is named by: (index, named by it).
    fn netlog_edges(&self) -> Vec<Vec<(usize, bool)>> {
        let sources = &self.net.chromium.netlog;
        let mut edges = vec![Vec::new(); sources.list.len()];
        for (i, s) in sources.list.iter().enumerate() {
            for &d in &s.depends_on {
                if let Some(j) = sources.index(s, d).filter(|&j| j != i) {
                    edges[i].push((j, true));
                    edges[j].push((i, false));
                }
            }
        }
        edges
    }

    /// The neighbours of each source that are not URL requests (a search for
    /// a request's carrier never goes through another), the first
    /// [`MAX_VISITED`] of them.
    fn netlog_hops(&self, edges: &[Vec<(usize, bool)>]) -> Vec<Vec<usize>> {
        let list = &self.net.chromium.netlog.list;
        edges
            .iter()
            .map(|e| e.iter().map(|&(j, _)| j).filter(|&j| !list[j].is_request()).take(MAX_VISITED).collect())
            .collect()
    }

    /// The socket and session that carried a request: breadth first through
    /// the sources, its own dependencies first, never through another request.
    fn carrier(&self, edges: &[Vec<(usize, bool)>], hops: &[Vec<usize>], request: usize) -> Carrier {
        let list = &self.net.chromium.netlog.list;
        let mut found = Carrier::default();
        // A search of its own per request: a few sources apart, a bounded number of them.
        let mut seen: FastMap<usize, ()> = FastMap::default();
        seen.insert(request, ());
        let own: Vec<usize> = edges[request].iter().filter(|(_, out)| *out).map(|&(j, _)| j).collect();
        let mut level: Vec<usize> = if own.is_empty() { edges[request].iter().map(|&(j, _)| j).collect() } else { own };
        'search: for _ in 0..6 {
            let mut next = Vec::new();
            for &i in &level {
                if seen.len() > MAX_VISITED {
                    break 'search;
                }
                if list[i].is_request() || seen.insert(i, ()).is_some() {
                    continue;
                }
                match list[i].kind.as_str() {
                    "SOCKET" | "UDP_SOCKET" => {
                        found.socket.get_or_insert(i);
                    }
                    "HTTP2_SESSION" | "QUIC_SESSION" => {
                        found.session.get_or_insert(i);
                    }
                    _ => {}
                }
                next.extend(hops[i].iter().copied());
            }
            if found.socket.is_some() || next.is_empty() {
                break;
            }
            level = next;
        }
        found
    }

    /// A NetLog socket's TCP connection or UDP flow, and AFD sockets.
    fn socket_join(&self, s: &Source, by_thread: &FastMap<u32, Vec<SockId>>) -> SocketJoin {
        let net = self.net;
        let span = (s.first, s.alive.and_then(|a| a.1).unwrap_or(s.last).max(s.last));
        if s.kind == "UDP_SOCKET" {
            let conn = self.udp_flow(s.pid, s.local, s.remote, span);
            let sockets = conn.map(|c| self.flow_sockets(c)).unwrap_or_default();
            return SocketJoin { how: conn.map(|_| "endpoint"), conn, sockets };
        }
        if let (Some(local), Some(remote)) = (s.local, s.remote)
            && let Some(candidates) = self.candidates(Transport::Tcp, Some(local.port), Some(remote))
        {
            let conn = self.latest_fitting(candidates, span.1, |c| {
                same_pid(s.pid, c.pid.or(c.alt_pid))
                    && c.remote == Some(remote)
                    && c.local.is_none_or(|l| l.port == local.port)
                    && overlaps(span, (c.opened, self.end_of(c)))
            });
            if let Some(c) = conn {
                let sockets = self.conn_sockets.get(&c).cloned().unwrap_or_default();
                return SocketJoin { conn: Some(c), sockets, how: Some("endpoint") };
            }
        }
        // The AFD socket created on a connect attempt's thread while it ran.
        for &Attempt { begin, end, tid, address } in &s.attempts {
            let window = (begin.saturating_sub(SLACK), end.unwrap_or(span.1).saturating_add(SLACK));
            let Some(tid) = tid else { continue };
            let on_thread = by_thread.get(&tid).map(Vec::as_slice).unwrap_or_default();
            let hit = on_thread.iter().copied().find(|&id| {
                let k = net.sockets.get(id);
                same_pid(s.pid, k.pid)
                    && k.created >= window.0
                    && k.created <= window.1
                    && (address.is_none() || k.remote.is_none() || k.remote == address)
            });
            if let Some(id) = hit {
                return SocketJoin { conn: self.sock_conn[id], sockets: vec![id], how: Some("thread") };
            }
        }
        SocketJoin::default()
    }

    /// Chromium's requests as request rows (NetLog's URL requests; URLs of
    /// events no NetLog request fetched), and the browser table.
    pub(crate) fn chromium_rows(&mut self, out: &mut Vec<RequestRow>) -> Vec<BrowserRow> {
        let net = self.net;
        let list = &net.chromium.netlog.list;
        let edges = self.netlog_edges();
        let hops = self.netlog_hops(&edges);
        // Stream sockets by the thread that created or connected them, oldest first.
        let mut by_thread: FastMap<u32, Vec<SockId>> = FastMap::default();
        for (id, k) in net.sockets.iter().filter(|(_, k)| !k.is_datagram()) {
            for tid in [k.create_tid, k.connect_tid].into_iter().flatten() {
                let on = by_thread.entry(tid).or_default();
                if on.last() != Some(&id) {
                    on.push(id);
                }
            }
        }
        let joins: Vec<Option<SocketJoin>> = list
            .iter()
            .map(|s| matches!(s.kind.as_str(), "SOCKET" | "UDP_SOCKET").then(|| self.socket_join(s, &by_thread)))
            .collect();
        let mut browser = Vec::new();
        for (i, s) in list.iter().enumerate() {
            if !s.is_request() {
                continue;
            }
            let carrier = self.carrier(&edges, &hops, i);
            let socket = carrier.socket.map(|k| &list[k]);
            let session = carrier.session.map(|k| &list[k]);
            let join = carrier.socket.and_then(|k| joins[k].clone()).unwrap_or_default();
            let conn = join.conn;
            for &sock in &join.sockets {
                self.sock_claimed[sock] = true;
            }
            if conn.is_some() {
                self.claim_with_sockets(conn, Layer::Chromium);
            }
            let c = conn.map(|id| net.connections.get(id));
            for job in &s.jobs {
                let end = job.end.or_else(|| s.alive.and_then(|a| a.1));
                let protocol = job
                    .protocol
                    .or_else(|| session.filter(|x| x.kind == "QUIC_SESSION").map(|_| "HTTP/3"))
                    .or_else(|| session.filter(|x| x.kind == "HTTP2_SESSION").map(|_| "HTTP/2"))
                    .or_else(|| socket.and_then(|x| x.next_proto.as_deref()).and_then(alpn));
                let (sent, received) = request_bytes(s, job, protocol, socket, session, end.unwrap_or(s.last));
                let remote = socket.and_then(|x| x.remote).or(c.and_then(|c| c.remote));
                let host = url_host(&job.url);
                let (server, alt_names) = self.names(host, remote.as_ref().map(|e| &e.address));
                let udp = socket.is_some_and(|x| x.kind == "UDP_SOCKET");
                let port = remote.map(|e| e.port).or_else(|| url_port(&job.url));
                let service = match (udp, port) {
                    (true, Some(p)) => services::udp(p),
                    (false, Some(p)) => services::tcp(p),
                    _ => None,
                };
                let mut threads = s.threads.clone();
                push_unique(&mut threads, socket.iter().flat_map(|x| x.threads.iter().copied()));
                let status = match (&job.redirected, &job.status) {
                    (Some(_), _) => Some("redirected".to_string()),
                    (None, status) => status.clone(),
                };
                out.push(RequestRow {
                    process: self.process(s.pid, job.start),
                    pid: s.pid,
                    threads,
                    protocol: protocol.map(str::to_string).or_else(|| scheme(&job.url)),
                    method: job.method.clone(),
                    url: Some(job.url.clone()),
                    server,
                    alt_names,
                    ip: remote.map(|e| e.address),
                    port,
                    service: service.map(str::to_string),
                    network: remote.and_then(|e| e.address.class()),
                    status,
                    state: c.map(|c| c.state()),
                    bytes_sent: sent,
                    bytes_received: received,
                    end: Some(end.unwrap_or(net.trace_end)),
                    open_at_end: end.is_none(),
                    error: job.error.or(s.net_error).map(net_error),
                    local: socket.and_then(|x| x.local).or(c.and_then(|c| c.local)),
                    connection: conn,
                    started_by: self.started_by([s.started_by.as_ref()], conn),
                    ..RequestRow::new(Layer::Chromium, job.start)
                });
                let mut args = vec![format!("source_id={}", s.id)];
                args.extend(job.method.as_ref().map(|m| format!("method={m}")));
                args.extend(protocol.map(|p| format!("protocol={p}")));
                args.extend(job.status.as_ref().map(|v| format!("status={v}")));
                args.extend(job.redirected.as_ref().map(|v| format!("redirected={v}")));
                args.extend(remote.map(|r| format!("remote={r}")));
                browser.push(BrowserRow {
                    browser: browser_name(s.browser),
                    process: self.process(s.pid, job.start),
                    pid: s.pid,
                    thread: s.threads.first().copied(),
                    kind: "netlog",
                    name: s.kind.clone(),
                    url: Some(job.url.clone()),
                    start: job.start,
                    end: Some(end.unwrap_or(net.trace_end)),
                    open_at_end: end.is_none(),
                    args,
                    source: Some(u64::from(s.id)),
                    join: Some(join.how.unwrap_or("none")),
                });
            }
        }
        for (i, s) in list.iter().enumerate() {
            if !matches!(s.kind.as_str(), "SOCKET" | "UDP_SOCKET" | "HTTP2_SESSION" | "QUIC_SESSION") {
                continue;
            }
            let (start, end) = match s.alive {
                Some((b, e)) => (b, e),
                None => (s.first, Some(s.last)),
            };
            let mut args = vec![format!("source_id={}", s.id)];
            args.extend(s.local.map(|l| format!("local={l}")));
            args.extend(s.remote.map(|r| format!("remote={r}")));
            args.extend(s.host.as_ref().map(|h| format!("host={h}")));
            args.extend(s.next_proto.as_ref().map(|p| format!("next_proto={p}")));
            args.extend(s.connection_id.as_ref().map(|c| format!("connection_id={c}")));
            args.extend(s.close.as_ref().map(|c| format!("close={c}")));
            args.extend(s.net_error.map(|e| format!("net_error={}", net_error(e))));
            browser.push(BrowserRow {
                browser: browser_name(s.browser),
                process: self.process(s.pid, start),
                pid: s.pid,
                thread: s.threads.first().copied(),
                kind: "netlog",
                name: s.kind.clone(),
                url: None,
                start,
                end: Some(end.unwrap_or(net.trace_end)),
                open_at_end: end.is_none(),
                args,
                source: Some(u64::from(s.id)),
                join: joins[i].as_ref().map(|j| j.how.unwrap_or("none")),
            });
        }
        let url_joins = self.event_url_rows(out);
        let mut regions = Vec::new();
        self.region_rows(&mut regions);
        for (row, join) in regions.iter_mut().zip(url_joins) {
            row.join = join;
        }
        browser.extend(regions);
        browser.sort_by_key(|r| r.start);
        browser
    }

    /// Rows for the URLs events name that no NetLog request of the same
    /// browser fetched then: one per URL and process, from its first event
    /// to its last (events a second apart or more start another). Returns
    /// each region's join, in the order of the regions.
    fn event_url_rows(&mut self, out: &mut Vec<RequestRow>) -> Vec<Option<&'static str>> {
        let net = self.net;
        let regions = &net.chromium.regions;
        let mut joins = vec![None; regions.len()];
        // (browser, pid, url) → groups of region indexes.
        let mut order: Vec<usize> = (0..regions.len()).filter(|&i| regions[i].url.is_some()).collect();
        order.sort_by_key(|&i| regions[i].start);
        let mut groups: Vec<(usize, Vec<usize>, Time)> = Vec::new();
        // The group still open for each (browser, process, URL).
        let mut open: FastMap<(Browser, Option<u32>, &str), usize> = FastMap::default();
        for i in order {
            let r = &regions[i];
            let Some(url) = r.url.as_deref() else { continue };
            let end = r.end.unwrap_or(net.trace_end).max(r.start);
            let key = (r.browser, r.pid, url);
            match open.get(&key).copied().filter(|&g| r.start <= groups[g].2.saturating_add(10_000_000)) {
                Some(g) => {
                    groups[g].1.push(i);
                    groups[g].2 = groups[g].2.max(end);
                }
                None => {
                    open.insert(key, groups.len());
                    groups.push((i, vec![i], end));
                }
            }
        }
        // When each browser's NetLog requests began, by URL.
        let mut fetches: FastMap<(Browser, &str), Vec<Time>> = FastMap::default();
        for s in &net.chromium.netlog.list {
            for j in &s.jobs {
                fetches.entry((s.browser, j.url.as_str())).or_default().push(j.start);
            }
        }
        for (first, members, last) in groups {
            let r = &regions[first];
            let Some(url) = r.url.clone() else { continue };
            let fetched = fetches.get(&(r.browser, url.as_str())).is_some_and(|starts| {
                starts.iter().any(|&t| t >= r.start.saturating_sub(10_000_000) && t <= last.saturating_add(100_000_000))
            });
            if fetched || !is_url(&url) {
                for m in members {
                    joins[m] = Some("netlog");
                }
                continue;
            }
            let host = url_host(&url);
            let port = url_port(&url);
            let conn = self.host_connection(r.pid, host, port, (r.start, last));
            if conn.is_some() {
                self.claim_with_sockets(conn, Layer::Chromium);
            }
            let c = conn.map(|id| net.connections.get(id));
            let remote = c.and_then(|c| c.remote);
            let (server, alt_names) = self.names(host, remote.as_ref().map(|e| &e.address));
            let mut threads = Vec::new();
            for &m in &members {
                push_unique(&mut threads, regions[m].tid);
            }
            let how = if conn.is_some() { "host" } else { "none" };
            for &m in &members {
                joins[m] = Some(how);
            }
            out.push(RequestRow {
                process: self.process(r.pid, r.start),
                pid: r.pid,
                threads,
                protocol: scheme(&url),
                server,
                alt_names,
                ip: remote.map(|e| e.address),
                port: remote.map(|e| e.port).or(port),
                service: remote.map(|e| e.port).or(port).and_then(services::tcp).map(str::to_string),
                network: remote.and_then(|e| e.address.class()),
                end: Some(last),
                state: c.map(|c| c.state()),
                local: c.and_then(|c| c.local),
                connection: conn,
                started_by: self.started_by([r.started_by.as_ref()], conn),
                url: Some(url),
                ..RequestRow::new(Layer::Chromium, r.start)
            });
        }
        joins
    }

    /// A TCP connection of a process to an address `host` resolved to, on
    /// `port`, alive during `span`, that no layer has claimed: the first
    /// opened in the span, else the latest opened before it.
    fn host_connection(
        &self,
        pid: Option<u32>,
        host: Option<&str>,
        port: Option<u16>,
        span: (Time, Time),
    ) -> Option<ConnId> {
        let net = self.net;
        let (host, port) = (host?, port?);
        let addresses: Vec<_> = net.dns.lookup(host).map(|n| n.addresses.clone()).unwrap_or_default();
        let mut best: Option<(bool, Time, ConnId)> = None;
        // In the order of the records (ties go to the first).
        let mut candidates: Vec<ConnId> = addresses
            .iter()
            .flat_map(|&a| net.connections.by_remote(Transport::Tcp, &Endpoint::new(a, port)).iter().copied())
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        for id in candidates {
            let c = net.connections.get(id);
            if self.claimed[id].is_some()
                || !same_pid(pid, c.pid.or(c.alt_pid))
                || !overlaps(span, (c.opened, self.end_of(c)))
            {
                continue;
            }
            let after = c.opened >= span.0.saturating_sub(SLACK);
            let key = (after, if after { -c.opened } else { c.opened }, id);
            if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
                best = Some(key);
            }
        }
        best.map(|b| b.2)
    }

    /// Chromium's QUIC sessions as QUIC connections: the UDP flow of their
    /// NetLog UDP socket, with the session's host, connection id, handshake,
    /// streams and close.
    pub(crate) fn chromium_quic_rows(&self) -> Vec<QuicRow> {
        let list = &self.net.chromium.netlog.list;
        let edges = self.netlog_edges();
        let mut rows = Vec::new();
        for (i, s) in list.iter().enumerate() {
            if s.kind != "QUIC_SESSION" {
                continue;
            }
            // The session's UDP socket: a source next to it (or to its job).
            let socket = edges[i]
                .iter()
                .flat_map(|&(j, _)| std::iter::once(j).chain(edges[j].iter().take(MAX_VISITED).map(|&(k, _)| k)))
                .find(|&j| list[j].kind == "UDP_SOCKET")
                .map(|j| &list[j]);
            let (start, end) = s.alive.map_or((s.first, Some(s.last)), |(b, e)| (b, e));
            let span = (start, end.unwrap_or(self.net.trace_end));
            let flow = socket.and_then(|u| self.udp_flow(u.pid, u.local, u.remote, span));
            let handshake = s.handshake_done.map(|d| (d - start).max(0) as f64 / 1e7);
            let (sent, received) = s.streams.iter().fold((0, 0), |(a, b), st| (a + st.sent, b + st.received));
            rows.push(QuicRow {
                pid: s.pid,
                thread: s.threads.first().copied(),
                local: socket.and_then(|u| u.local),
                remote: socket.and_then(|u| u.remote),
                server: s.host.clone(),
                origin: "connect",
                state: if end.is_some() { "closed" } else { "open" },
                sent,
                received,
                start,
                end,
                pointer: None,
                facts: QuicFacts {
                    connection_id: s.connection_id.clone(),
                    handshake,
                    streams: Some(s.streams.len() as u64),
                    close_reason: s.close.clone(),
                    version: None,
                },
                flow,
                layer: Some(Layer::Chromium),
                error: s.net_error.map(net_error),
            });
        }
        rows
    }
}

/// A request's bytes: HTTP/1.x, the bytes through its socket while it was
/// the socket's user (above TLS where NetLog counted them there); HTTP/2
/// and HTTP/3, the body bytes of its stream. `None` without a socket.
fn request_bytes(
    request: &Source,
    job: &UrlJob,
    protocol: Option<&str>,
    socket: Option<&Source>,
    session: Option<&Source>,
    end: Time,
) -> (Option<u64>, Option<u64>) {
    let stream = match protocol {
        Some("HTTP/2") => session.and_then(|x| x.stream_of_request(request.id).copied()),
        Some("HTTP/3") => session.and_then(|x| x.stream(job.quic_stream?).copied()),
        _ => None,
    };
    if let Some(st) = stream {
        return (Some(st.sent), Some(st.received));
    }
    let Some(socket) = socket else { return (None, None) };
    let plaintext = socket.transfers.iter().any(|t| t.plaintext);
    let window = (job.start, end);
    let mut bytes = (0, 0);
    for t in socket.transfers.iter().filter(|t| t.plaintext == plaintext && t.time >= window.0 && t.time <= window.1) {
        if t.sent {
            bytes.0 += t.bytes;
        } else {
            bytes.1 += t.bytes;
        }
    }
    (Some(bytes.0), Some(bytes.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_from_alpn_and_request_lines() {
        assert_eq!(alpn("h2"), Some("HTTP/2"));
        assert_eq!(alpn("h3"), Some("HTTP/3"));
        assert_eq!(alpn("http/1.1"), Some("HTTP/1.1"));
        assert_eq!(alpn("spdy/3"), None);
        assert_eq!(line_version("GET /app.js HTTP/1.1\r\n"), Some("HTTP/1.1"));
        assert_eq!(net_error(-105), "-105 (ERR_NAME_NOT_RESOLVED)");
        assert_eq!(net_error(-9999), "-9999");
        let n = NetLog::parse(
            Some(0x7f00_0000_0000_002a),
            &[
                ("source_type".into(), "URL_REQUEST".into()),
                ("params".into(), r#"{"url":"https://a.example/"}"#.into()),
            ],
        )
        .unwrap();
        assert_eq!((n.source, n.source_type.as_deref()), (42, Some("URL_REQUEST")));
        assert_eq!(p_str(&n.params, "url"), Some("https://a.example/"));
        assert!(NetLog::parse(None, &[("source_type".into(), "SOCKET".into())]).is_none());
    }
}
