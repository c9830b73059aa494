//! Microsoft-Windows-WebIO, the core of WinHTTP: sessions, requests, the
//! connections they wait for, the sockets a connection tries (one per
//! address), and the bytes each request sent and received over each socket.
//!
//! Object model: session → request → connection → socket → TCP connection. A
//! connection and its socket serve several requests in turn (keep-alive) or
//! at once (HTTP/2), so a request's use of a socket is its own record
//! ([`Use`]): one row per request and socket, with that request's bytes.
//!
//! Joins: a request learns its connection from RequestWaitingForConnection;
//! socket events name the connection; send/receive events carry the request
//! handle in the first 8 bytes of their activity id. Older Windows log 0 for
//! send sizes: then the bytes TCPIP saw posted on the same thread between the
//! send's start and stop count instead.

use nettrail_decode::Value;
use nettrail_decode::fasthash::FastMap;

use nettrail_etl::Guid;

use crate::address::Endpoint;
use crate::dns::{Dns, Query, Resolver};
use crate::event::{Head, Props, Time};
use crate::pools::Pools;
use crate::report::{
    Gatherer, Layer, MAX_HEADERS, Phases, RequestRow, SLACK, push_unique, same_pid, scheme, url_host, url_port,
};
use crate::transport::{ConnId, Transport};
use crate::{errors, services};

pub type ReqId = usize;
pub type SockId = usize;
pub type UseId = usize;

#[derive(Clone, Debug, Default)]
pub struct Session {
    pub pid: Option<u32>,
    pub object: u64,
    pub handle: u64,
    pub created: Time,
    pub closed: Option<Time>,
    pub started_by: Option<crate::pools::Origin>,
}

#[derive(Clone, Debug, Default)]
pub struct Request {
    pub pid: Option<u32>,
    pub object: u64,
    pub handle: u64,
    pub session: Option<u64>,
    pub activity: Guid,
    pub created: Time,
    pub threads: Vec<u32>,
    pub method: Option<String>,
    pub url: Option<String>,
    /// The first line of the last response header that starts with "HTTP"
    /// (so a proxy's "200 Connection established" gives way to the real response).
    pub status_line: Option<String>,
    /// The request went through a proxy tunnel (CONNECT).
    pub tunnel: bool,
    /// The last request and response header blocks (100, 101), capped.
    pub request_headers: Option<String>,
    pub response_headers: Option<String>,
    /// The last non-zero error of its connects, sends and receives.
    pub error: Option<u32>,
    pub connection: Option<u64>,
    pub uses: Vec<UseId>,
    pub closed: Option<Time>,
    pub last: Time,
    /// Rebuilt from a later event: its creation was not in the trace.
    pub inferred: bool,
    pub started_by: Option<crate::pools::Origin>,
}

impl Request {
    fn touch(&mut self, time: Time, tid: Option<u32>) {
        self.last = self.last.max(time);
        if let Some(tid) = tid
            && !self.threads.contains(&tid)
        {
            self.threads.push(tid);
        }
    }
}

/// One socket a connection opened (one per address tried).
#[derive(Clone, Debug, Default)]
pub struct Socket {
    pub pid: Option<u32>,
    pub connection: u64,
    pub handle: u64,
    pub remote: Option<Endpoint>,
    pub connect_tid: Option<u32>,
    pub start: Time,
    pub stop: Option<Time>,
    pub error: Option<u32>,
    pub closed: Option<Time>,
    /// The TCB TCPIP logged on the thread of one of its sends or receives
    /// (how a socket connected before the trace finds its TCP connection).
    pub tcb: Option<u64>,
    /// An HTTP/3 connection's id (WebIO 200 v1, Windows 11): a QUIC connection, not a TCP one.
    pub http3: Option<u64>,
}

/// A request's use of a socket.
#[derive(Clone, Debug, Default)]
pub struct Use {
    pub request: ReqId,
    pub socket: SockId,
    /// The socket was opened for an earlier request (keep-alive, HTTP/2).
    pub shared: bool,
    pub sent: u64,
    pub received: u64,
    /// TCPIP's posted bytes during this use's sends (for old Windows).
    pub posted: u64,
    /// The last error of its sends and receives.
    pub error: Option<u32>,
    pub first: Time,
    pub last: Time,
    /// Its request's sending: the first send's start to the last send's
    /// stop before the response began.
    pub send: Option<(Time, Time)>,
    /// The response's first bytes (the first receive that brought any).
    pub first_data: Option<Time>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    SessionCreate {
        session: u64,
        handle: u64,
    },
    SessionClose {
        session: u64,
    },
    RequestCreate {
        request: u64,
        handle: u64,
        session: Option<u64>,
        method: Option<String>,
        url: Option<String>,
    },
    RequestClose {
        request: u64,
        handle: u64,
    },
    /// 100 (sent) / 101 (received) headers, as logged.
    Header {
        request: u64,
        received: bool,
        text: Option<String>,
    },
    WaitingForConnection {
        request: u64,
        connection: u64,
    },
    NameStart {
        query: u64,
        host: String,
    },
    NameStop {
        query: u64,
        name: Option<String>,
        canonical: Option<String>,
        addresses: Vec<Endpoint>,
    },
    ConnectStart {
        connection: u64,
        socket: u64,
        remote: Option<Endpoint>,
        error: Option<u32>,
        http3: Option<u64>,
    },
    ConnectStop {
        connection: u64,
        socket: u64,
        error: Option<u32>,
    },
    SocketClose {
        connection: u64,
        socket: u64,
    },
    /// 700 / 703 SSLInitializeSecurityContext start and stop: a step of the
    /// connection's TLS handshake.
    Handshake {
        connection: u64,
    },
    Transfer {
        connection: u64,
        sent: bool,
        stop: bool,
        bytes: u64,
        error: Option<u32>,
    },
}

/// WebIO logs the address being connected to as text ("ip:port", UTF-16 or
/// 8-bit) in a binary field; some builds log a SOCKADDR.
/// The address of a connect: text (`ip:port`, `[ip]:port`), UTF-16 as the
/// manifests declare it; 8-bit text or a SOCKADDR where a source gives bytes.
fn address_field(props: &Props<'_, '_>) -> Option<Endpoint> {
    if let Some(Value::Binary(bytes)) = props.get("Address") {
        let utf16 = bytes.len() >= 4 && bytes.iter().skip(1).step_by(2).all(|&b| b == 0);
        let text = if utf16 {
            nettrail_decode::value::utf16_lossy(bytes)
        } else {
            nettrail_decode::value::ansi_lossy(bytes).into_owned()
        };
        return Endpoint::parse(text.trim_end_matches('\0')).or_else(|| Endpoint::from_sockaddr(bytes));
    }
    Endpoint::parse(&props.text("Address")?)
}

/// Header bytes kept for all requests together, at most.
const HEADER_BUDGET: usize = 64 * 1024 * 1024;

/// The first line of an HTTP header block.
fn first_line(text: &str) -> Option<String> {
    let line = text.lines().next()?.trim_end_matches(['\r', '\0']).trim();
    (!line.is_empty()).then(|| line.to_string())
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let u = |name| props.u64(name);
    let error = || props.u32("Error").filter(|&e| e != 0);
    Some(match id {
        5 => Event::SessionCreate { session: u("Session")?, handle: u("SessionHandle").unwrap_or(0) },
        7 => Event::SessionClose { session: u("ApiObject")? },
        17 => Event::RequestCreate {
            request: u("Request")?,
            handle: u("RequestHandle").unwrap_or(0),
            session: u("Session"),
            method: props.text("Method"),
            url: props.text("URI"),
        },
        30 => Event::RequestClose { request: u("ApiObject")?, handle: u("ApiHandle").unwrap_or(0) },
        100 | 101 => Event::Header {
            request: u("Request")?,
            received: id == 101,
            text: props.text("Headers").map(|mut h| {
                h.truncate(h.floor_char_boundary(MAX_HEADERS));
                h
            }),
        },
        700 | 703 => Event::Handshake { connection: u("Connection")? },
        104 => Event::WaitingForConnection { request: u("Request")?, connection: u("Connection")? },
        205 => Event::NameStart { query: u("DnsQuery")?, host: props.text("HostName")? },
        206 => {
            let count = props.u64("AddressCount").unwrap_or(0) as usize;
            let bytes = props.bytes("SockAddr").unwrap_or_default();
            let addresses = match bytes.len().checked_div(count) {
                Some(size) if size > 0 => bytes.chunks_exact(size).filter_map(Endpoint::from_sockaddr).collect(),
                _ => Vec::new(),
            };
            Event::NameStop {
                query: u("DnsQuery")?,
                name: props.text("FQDN"),
                canonical: props.text("CanonicalName"),
                addresses,
            }
        }
        200 => Event::ConnectStart {
            connection: u("Connection")?,
            socket: u("SocketHandle").unwrap_or(0),
            remote: address_field(props),
            error: error(),
            http3: u("Http3ClientConnectionId").filter(|&c| c != 0),
        },
        201 | 202 => {
            Event::ConnectStop { connection: u("Connection")?, socket: u("SocketHandle").unwrap_or(0), error: error() }
        }
        204 => Event::SocketClose { connection: u("Endpoint")?, socket: u("Socket").unwrap_or(0) },
        213..=216 => Event::Transfer {
            connection: u("Connection")?,
            sent: id <= 214,
            stop: id == 214 || id == 216,
            bytes: u("Information").unwrap_or(0),
            error: error(),
        },
        _ => return None,
    })
}

#[derive(Debug, Default)]
pub struct WebIo {
    pub sessions: Vec<Session>,
    pub requests: Vec<Request>,
    pub sockets: Vec<Socket>,
    pub uses: Vec<Use>,
    /// A send size other than 0 was seen: sizes are real on this Windows.
    pub send_sizes_logged: bool,
    by_request: FastMap<(Option<u32>, u64), ReqId>,
    by_handle: FastMap<(Option<u32>, u64), ReqId>,
    /// The latest request that waited for each connection.
    by_connection: FastMap<(Option<u32>, u64), ReqId>,
    /// The socket each connection uses: the latest that connected (or, while
    /// none has, the latest tried).
    socket_of: FastMap<(Option<u32>, u64), SockId>,
    /// Every socket each connection tried, in order.
    tried: FastMap<(Option<u32>, u64), Vec<SockId>>,
    names: FastMap<(Option<u32>, u64), (Time, String)>,
    /// Each connection's TLS handshake: its first and last step.
    pub handshakes: FastMap<(Option<u32>, u64), (Time, Time)>,
    /// Header bytes kept so far: past [`HEADER_BUDGET`] no more are.
    header_bytes: usize,
    /// Sends in flight per thread: the use whose posted bytes TCPIP reports.
    sending: FastMap<u32, UseId>,
    /// Sends and receives in flight per thread: the socket whose TCB TCPIP names.
    transferring: FastMap<u32, SockId>,
}

impl WebIo {
    fn use_of(&mut self, request: ReqId, socket: SockId, time: Time) -> UseId {
        if let Some(&u) = self.requests[request].uses.iter().find(|&&u| self.uses[u].socket == socket) {
            return u;
        }
        let shared = self.uses.iter().rev().take(64).any(|u| u.socket == socket && u.request != request);
        let id = self.uses.len();
        self.uses.push(Use { request, socket, shared, first: time, last: time, ..Use::default() });
        self.requests[request].uses.push(id);
        id
    }

    fn new_request(&mut self, r: Request) -> ReqId {
        let id = self.requests.len();
        self.by_request.insert((r.pid, r.object), id);
        if r.handle != 0 {
            self.by_handle.insert((r.pid, r.handle), id);
        }
        self.requests.push(r);
        id
    }
}

impl WebIo {
    /// WebIO's sessions, requests, name lookups and sockets (WinHTTP's
    /// engine); origins come from `pools`, lookups go to `dns`.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, pools: &Pools, dns: &mut Dns) {
        let t = head.time;
        let pid = Head::known(head.pid);
        let tid = Head::known(head.tid);
        let w = &mut *self;
        match e {
            Event::SessionCreate { session, handle } => {
                let origin = Some(pools.origin(head));
                self.sessions.push(Session {
                    pid,
                    object: session,
                    handle,
                    created: t,
                    closed: None,
                    started_by: origin,
                });
            }
            Event::SessionClose { session } => {
                if let Some(s) = w.sessions.iter_mut().rev().find(|s| s.pid == pid && s.object == session) {
                    s.closed.get_or_insert(t);
                }
            }
            Event::RequestCreate { request, handle, session, method, url } => {
                let origin = Some(pools.origin(head));
                let w = &mut *self;
                let mut r = Request {
                    started_by: origin,
                    pid,
                    object: request,
                    handle,
                    session,
                    activity: head.activity,
                    created: t,
                    method,
                    url,
                    last: t,
                    ..Request::default()
                };
                r.touch(t, tid);
                w.new_request(r);
            }
            Event::RequestClose { request, handle } => {
                let id = w.by_request.get(&(pid, request)).or_else(|| w.by_handle.get(&(pid, handle)));
                if let Some(&id) = id {
                    let r = &mut w.requests[id];
                    r.closed.get_or_insert(t);
                    r.touch(t, tid);
                }
            }
            Event::Header { request, received, text } => {
                let Some(&id) = w.by_request.get(&(pid, request)) else { return };
                let r = &mut w.requests[id];
                r.touch(t, tid);
                let line = text.as_deref().and_then(first_line);
                match (received, line) {
                    (true, Some(line)) if line.starts_with("HTTP") => r.status_line = Some(line),
                    (false, Some(line)) if line.starts_with("CONNECT ") => r.tunnel = true,
                    _ => {}
                }
                // The last block of each side is the request's (a proxy's
                // CONNECT and its answer come first); within the budget.
                if let Some(text) = text.filter(|t| w.header_bytes + t.len() <= HEADER_BUDGET) {
                    w.header_bytes += text.len();
                    let kept = if received { &mut r.response_headers } else { &mut r.request_headers };
                    *kept = Some(text);
                }
            }
            Event::Handshake { connection } => {
                let span = w.handshakes.entry((pid, connection)).or_insert((t, t));
                span.1 = span.1.max(t);
            }
            Event::WaitingForConnection { request, connection } => {
                let Some(&id) = w.by_request.get(&(pid, request)) else { return };
                w.requests[id].connection = Some(connection);
                w.requests[id].touch(t, tid);
                w.by_connection.insert((pid, connection), id);
                // A live socket on this connection: the request shares it.
                if let Some(&s) = w.socket_of.get(&(pid, connection))
                    && w.sockets[s].closed.is_none()
                    && w.sockets[s].error.is_none()
                {
                    w.use_of(id, s, t);
                }
            }
            Event::NameStart { query, host } => {
                w.names.insert((pid, query), (t, host));
            }
            Event::NameStop { query, name, canonical, addresses } => {
                let started = w.names.remove(&(pid, query));
                let Some(name) = name.or_else(|| started.as_ref().map(|(_, h)| h.clone())) else { return };
                let mut q = Query::new(Resolver::WinHttp, name, started.map_or(t, |(s, _)| s));
                q.end = Some(t);
                q.pid = pid;
                q.tid = tid;
                q.status = Some(0);
                q.activity = head.activity;
                q.answers = addresses.iter().map(|e| e.address).collect();
                q.aliases = canonical.into_iter().filter(|c| !c.eq_ignore_ascii_case(&q.name)).collect();
                dns.report(q);
            }
            Event::ConnectStart { connection, socket, remote, error, http3 } => {
                let request = self.request_for(head, connection);
                let w = &mut *self;
                let s = w.sockets.len();
                w.sockets.push(Socket {
                    pid,
                    connection,
                    handle: socket,
                    remote,
                    connect_tid: tid,
                    start: t,
                    error,
                    http3,
                    ..Socket::default()
                });
                w.tried.entry((pid, connection)).or_default().push(s);
                // Until one connects, the latest tried stands for the connection.
                let current = w.socket_of.get(&(pid, connection)).copied();
                if current.is_none_or(|c| w.sockets[c].stop.is_none() || w.sockets[c].error.is_some()) {
                    w.socket_of.insert((pid, connection), s);
                }
                w.use_of(request, s, t);
                let r = &mut w.requests[request];
                r.touch(t, tid);
                r.error = error.or(r.error);
            }
            Event::ConnectStop { connection, socket, error } => {
                // Attempts run in parallel (happy eyeballs): the socket handle
                // says which one stopped.
                let tried = w.tried.get(&(pid, connection)).map(Vec::as_slice).unwrap_or_default();
                let s = tried
                    .iter()
                    .rev()
                    .copied()
                    .find(|&s| socket != 0 && w.sockets[s].handle == socket)
                    .or_else(|| tried.iter().rev().copied().find(|&s| w.sockets[s].stop.is_none()));
                if let Some(s) = s {
                    let sock = &mut w.sockets[s];
                    sock.stop.get_or_insert(t);
                    sock.error = error.or(sock.error);
                    if error.is_none() {
                        w.socket_of.insert((pid, connection), s);
                    }
                }
                if let (Some(error), Some(&r)) = (error, w.by_connection.get(&(pid, connection))) {
                    w.requests[r].error = Some(error);
                }
            }
            Event::SocketClose { connection, socket } => {
                let tried = w.tried.get(&(pid, connection)).map(Vec::as_slice).unwrap_or_default();
                let s = tried
                    .iter()
                    .rev()
                    .copied()
                    .find(|&s| socket != 0 && w.sockets[s].handle == socket)
                    .or_else(|| w.socket_of.get(&(pid, connection)).copied());
                if let Some(s) = s {
                    w.sockets[s].closed.get_or_insert(t);
                }
            }
            Event::Transfer { connection, sent, stop, bytes, error } => {
                let request = self.request_for(head, connection);
                let w = &mut *self;
                let socket = match w.socket_of.get(&(pid, connection)) {
                    Some(&s) => s,
                    None => {
                        // The socket connected before the trace: rebuild it.
                        let s = w.sockets.len();
                        w.sockets.push(Socket { pid, connection, start: t, ..Socket::default() });
                        w.socket_of.insert((pid, connection), s);
                        w.tried.entry((pid, connection)).or_default().push(s);
                        s
                    }
                };
                let u = w.use_of(request, socket, t);
                w.uses[u].last = t;
                w.uses[u].error = error.or(w.uses[u].error);
                w.requests[request].touch(t, tid);
                if let Some(tid) = tid {
                    if stop {
                        w.transferring.remove(&tid);
                    } else {
                        w.transferring.insert(tid, socket);
                    }
                }
                let before_response = w.uses[u].first_data.is_none();
                match (sent, stop) {
                    (true, false) => {
                        if before_response {
                            let span = w.uses[u].send.get_or_insert((t, t));
                            span.1 = span.1.max(t);
                        }
                        if let Some(tid) = tid {
                            w.sending.insert(tid, u);
                        }
                    }
                    (true, true) => {
                        if before_response {
                            let span = w.uses[u].send.get_or_insert((t, t));
                            span.1 = span.1.max(t);
                        }
                        w.uses[u].sent += bytes;
                        w.send_sizes_logged |= bytes != 0;
                        if let Some(tid) = tid {
                            w.sending.remove(&tid);
                        }
                    }
                    (false, true) => {
                        // Data after the socket closed is not this request's.
                        if w.sockets[socket].closed.is_none_or(|c| c >= t) {
                            w.uses[u].received += bytes;
                            if bytes > 0 {
                                w.uses[u].first_data.get_or_insert(t);
                            }
                        }
                    }
                    (false, false) => {}
                }
            }
        }
    }

    /// The request a connection or transfer event belongs to: by the request
    /// handle in its activity id, else the latest request that waited for the
    /// connection, else one rebuilt (its creation was not in the trace).
    fn request_for(&mut self, head: &Head, connection: u64) -> ReqId {
        let pid = Head::known(head.pid);
        let w = &mut *self;
        let by_activity = w.by_handle.get(&(pid, head.activity_key())).copied();
        let by_connection = w.by_connection.get(&(pid, connection)).copied();
        // The activity's request must be the one waiting on this connection when both are known.
        let id = match (by_activity, by_connection) {
            (Some(a), _) if w.requests[a].connection.is_none_or(|c| c == connection) => Some(a),
            (_, Some(c)) => Some(c),
            (a, None) => a,
        };
        if let Some(id) = id {
            return id;
        }
        // The activity id holds the request handle (bytes 0–7) and the low
        // half of the Request pointer (bytes 8–11); the high half is the
        // Connection's, as both live in one heap.
        let low = u32::from_le_bytes(head.activity.to_bytes_le()[8..12].try_into().unwrap_or_default());
        let object = (connection & 0xFFFF_FFFF_0000_0000) | u64::from(low);
        let r = Request {
            pid,
            object,
            handle: head.activity_key(),
            activity: head.activity,
            created: head.time,
            connection: Some(connection),
            last: head.time,
            inferred: true,
            ..Request::default()
        };
        let id = w.new_request(r);
        w.by_connection.insert((pid, connection), id);
        id
    }

    /// TCPIP's send-posted event on a thread in the middle of a WebIO send.
    pub(crate) fn send_posted(&mut self, head: &Head, bytes: u64) {
        if let Some(tid) = Head::known(head.tid)
            && let Some(&u) = self.sending.get(&tid)
        {
            self.uses[u].posted += bytes;
        }
    }

    /// TCPIP named a TCB on a thread in the middle of a WebIO send or
    /// receive: that socket's TCP connection.
    pub(crate) fn tcb_named(&mut self, head: &Head, tcb: u64) {
        if let Some(tid) = Head::known(head.tid)
            && let Some(&s) = self.transferring.get(&tid)
        {
            self.sockets[s].tcb.get_or_insert(tcb);
        }
    }
}

/// WinHTTP (WebIO) requests as request rows.
impl<'n> Gatherer<'n> {
    pub(crate) fn webio_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        let w = &net.webio;
        let socket_conns: Vec<Option<ConnId>> = w.sockets.iter().map(|s| self.webio_connection(s)).collect();
        for r in &w.requests {
            let uses: Vec<Option<&Use>> =
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
                // A socket opened for this request: its lookup, connect and handshake are this row's.
                let opened = socket.filter(|_| u.is_some_and(|u| !u.shared));
                let connect = opened.and_then(|s| Some((s.start, s.stop?))).or_else(|| self.connect_span(conn, start));
                let phases = Phases {
                    dns: opened.and_then(|s| self.lookup_span(r.pid, host, r.created, s.start)),
                    connect,
                    tls: opened.and_then(|s| w.handshakes.get(&(s.pid, s.connection)).copied()),
                    send: u.and_then(|u| u.send),
                    first_byte: u.and_then(|u| u.first_data),
                };
                out.push(RequestRow {
                    process: self.process(r.pid, r.created),
                    pid: r.pid,
                    threads,
                    protocol: url.as_deref().and_then(scheme),
                    method: r.method.clone(),
                    server,
                    alt_names,
                    ip: remote.map(|e| e.address),
                    port: remote.map(|e| e.port).or_else(|| url.as_deref().and_then(url_port)),
                    service: remote.and_then(|e| services::tcp(e.port)).map(str::to_string),
                    network: remote.and_then(|e| e.address.class()),
                    status,
                    state: c.map(|c| c.state()),
                    bytes_sent: Some(sent.unwrap_or(0)),
                    bytes_received: Some(u.map_or(0, |u| u.received)),
                    end: Some(end.unwrap_or(net.trace_end)),
                    open_at_end: end.is_none(),
                    error: error.map(errors::winhttp),
                    activity: (!r.activity.is_zero()).then_some(r.activity),
                    local: c.and_then(|c| c.local),
                    connection: conn,
                    started_by: self.started_by(
                        [r.started_by.as_ref(), self.webio_session(r).and_then(|s| s.started_by.as_ref())],
                        conn,
                    ),
                    url,
                    phases,
                    request_headers: r.request_headers.clone(),
                    redirect_url: r
                        .response_headers
                        .as_deref()
                        .filter(|h| crate::http::status(h).is_some_and(|s| (300..400).contains(&s)))
                        .and_then(|h| crate::http::field(h, "Location"))
                        .map(str::to_string),
                    response_headers: r.response_headers.clone(),
                    ..RequestRow::new(Layer::WinHttp, start)
                });
            }
        }
    }

    /// The WinHTTP session a request was opened in.
    pub(crate) fn webio_session(&self, r: &Request) -> Option<&'n Session> {
        let session = r.session?;
        self.net.webio.sessions.iter().rev().find(|s| s.pid == r.pid && s.object == session && s.created <= r.created)
    }

    /// A WebIO socket's TCP connection: to its remote end, from its process,
    /// opened while it connected (on its connecting thread where known).
    pub(crate) fn webio_connection(&self, s: &Socket) -> Option<ConnId> {
        if s.http3.is_some() {
            return self.webio_quic_flow(s);
        }
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
}
