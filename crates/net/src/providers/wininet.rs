//! Microsoft-Windows-WinINet: HTTP requests of WinINet clients (Office,
//! Explorer, Edge legacy, many apps), from handle creation to close.
//!
//! A request is keyed by the first 8 bytes of its events' activity id, which
//! WinINet derives from the request handle, with the process id; the DNS
//! events WinINet triggers share it. One request row per send: a second
//! SendRequest on the same handle is keep-alive reuse and starts a new row; a
//! redirect ends the row and the follow-up gets one of its own.

use nettrail_decode::fasthash::FastMap;

use nettrail_etl::Guid;

use crate::address::{Address, Endpoint};
use crate::dns::{Dns, Query, Resolver, parse_results};
use crate::event::{Head, Props, Time};
use crate::pools::Pools;
use crate::report::{Gatherer, Layer, Phases, RequestRow, overlaps, push_unique, same_pid, scheme, url_host};
use crate::services;
use crate::transport::{ConnId, Connection, Transport};

pub type ReqId = usize;

#[derive(Clone, Debug, Default)]
pub struct Request {
    pub pid: Option<u32>,
    pub activity: Guid,
    pub created: Time,
    /// Threads that worked on it: the creator first.
    pub threads: Vec<u32>,
    pub connect_handle: Option<u64>,
    pub request_handle: Option<u64>,
    pub method: Option<String>,
    pub url: Option<String>,
    /// The path given to HttpOpenRequest (the URL before it is sent).
    pub object: Option<String>,
    pub server: Option<String>,
    pub server_port: Option<u16>,
    pub status_line: Option<String>,
    pub cache_hit: bool,
    /// The request that redirected to this one.
    pub redirect_of: Option<ReqId>,
    pub redirected: bool,
    pub sent: u64,
    pub received: u64,
    pub remote: Option<Endpoint>,
    pub local: Option<Endpoint>,
    pub local_port: Option<u16>,
    pub socket: Option<u64>,
    pub connect_tid: Option<u32>,
    pub connect_time: Option<Time>,
    /// Addresses the request's own DNS lookup returned.
    pub dns_name: Option<String>,
    pub dns_addresses: Vec<Address>,
    pub send_time: Option<Time>,
    /// Its connect's stop (1046), the last of its attempts.
    pub connect_stop: Option<Time>,
    /// Its last headers or body sent (1031, 1033).
    pub sent_at: Option<Time>,
    /// SendRequest's stop (1008): the response's headers have come.
    pub headers_at: Option<Time>,
    /// Where it was redirected to (1049).
    pub redirect_to: Option<String>,
    /// The last event of the request.
    pub last: Time,
    /// Its last response event (status, data read, cache hit): where a request
    /// whose handle is sent again ended.
    pub answered: Option<Time>,
    /// When it was closed, replaced by a reuse of its handle, or redirected.
    pub ended: Option<Time>,
    /// Rebuilt from a later event: its creation was not in the trace.
    pub inferred: bool,
    /// Its creation (104) and its send (1007): their threads' stacks.
    pub started_by: Vec<crate::pools::Origin>,
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

    fn end(&mut self, time: Time) {
        self.ended.get_or_insert(time);
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// 104 request handle created (HttpOpenRequest).
    Created { connect_handle: Option<u64>, verb: Option<String>, object: Option<String> },
    /// 108 the request's server.
    Server { connect_handle: Option<u64>, server: Option<String>, port: Option<u16> },
    /// 200 HTTP_REQUEST start: the API call.
    Started { handle: Option<u64> },
    /// 301 TCP connection established.
    TcpConnection { server: Option<String>, local_port: Option<u16>, socket: Option<u64> },
    /// 305 / 307 DNS query done (307: from WinINet's cache).
    Dns { host: String, addresses: Option<String>, cached: bool },
    /// 1007 SendRequest start.
    SendStart { url: Option<String> },
    /// 1008 SendRequest stop.
    SendStop { status_line: Option<String> },
    /// 1017 served from the cache before the network.
    CacheHit,
    /// 1031 / 1033 request headers and body sent.
    Sent { bytes: u64 },
    /// 1037 data read (request 0: an HTTP/2 stream, counted by 1064).
    Read { request: u64, bytes: u64 },
    /// 1064 HTTP/2 stream data indicated.
    StreamData { bytes: u64 },
    /// 1045 connect start.
    ConnectStart,
    /// 1046 connect stop.
    ConnectStop { socket: Option<u64>, local: Option<Endpoint>, remote: Option<Endpoint> },
    /// 1049 redirect.
    Redirect { url: Option<String> },
    /// 105 handle closed.
    Closed { handle: Option<u64> },
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let nonzero = |name| props.u64(name).filter(|&v| v != 0);
    Some(match id {
        104 => Event::Created {
            connect_handle: nonzero("ConnectionHandle"),
            verb: props.text("Verb"),
            object: props.text("ObjectName"),
        },
        108 => Event::Server {
            connect_handle: nonzero("ConnectionHandle"),
            server: props.text("ServerName"),
            port: props.u32("ServerPort").map(|p| p as u16).filter(|&p| p != 0),
        },
        200 => Event::Started { handle: nonzero("HINTERNET") },
        301 => Event::TcpConnection {
            server: props.text("ServerName"),
            local_port: props.u32("LocalPort").map(|p| p as u16).filter(|&p| p != 0),
            socket: nonzero("SocketHandle"),
        },
        305 | 307 => {
            Event::Dns { host: props.text("HostName")?, addresses: props.text("AddressList"), cached: id == 307 }
        }
        1007 => Event::SendStart { url: props.text("AddressName") },
        1008 => Event::SendStop { status_line: props.text("StatusLine") },
        1017 => Event::CacheHit,
        1031 | 1033 => Event::Sent { bytes: props.u64("Size")? },
        1037 => Event::Read { request: props.u64("Request").unwrap_or(0), bytes: props.u64("Size")? },
        1064 => Event::StreamData { bytes: props.u64("Size")? },
        1045 => Event::ConnectStart,
        1046 => Event::ConnectStop {
            socket: nonzero("Socket"),
            local: props.sockaddr("LocalAddress"),
            remote: props.sockaddr("RemoteAddress"),
        },
        1049 => Event::Redirect { url: props.text("AddressName") },
        105 => Event::Closed { handle: nonzero("HINTERNET") },
        _ => return None,
    })
}

#[derive(Debug, Default)]
pub struct WinInet {
    pub requests: Vec<Request>,
    /// The current request of each (pid, activity key).
    by_key: FastMap<(Option<u32>, u64), ReqId>,
}

impl WinInet {
    fn start(&mut self, pid: Option<u32>, key: u64, request: Request) -> ReqId {
        let id = self.requests.len();
        self.requests.push(request);
        self.by_key.insert((pid, key), id);
        id
    }
}

impl WinInet {
    /// WinINet's requests (handles, DNS, connects, sends and receives); each
    /// request's origin comes from `pools`, its lookups go to `dns`.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, pools: &Pools, dns: &mut Dns) {
        let t = head.time;
        let pid = Head::known(head.pid);
        let tid = Head::known(head.tid);
        let key = head.activity_key();
        let current = self.by_key.get(&(pid, key)).copied();
        let fresh =
            |inferred| Request { pid, activity: head.activity, created: t, last: t, inferred, ..Request::default() };
        match e {
            Event::Created { connect_handle, verb, object } => {
                if let Some(old) = current {
                    self.requests[old].end(t);
                }
                let mut r = fresh(false);
                r.connect_handle = connect_handle;
                r.method = verb;
                r.object = object;
                r.started_by.push(pools.origin(head));
                r.touch(t, tid);
                self.start(pid, key, r);
                return;
            }
            Event::Dns { host, addresses, cached } => {
                let mut q = Query::new(Resolver::WinInet, host.clone(), t);
                q.end = Some(t);
                q.pid = pid;
                q.tid = tid;
                q.cached = cached;
                q.status = Some(0);
                q.activity = head.activity;
                if let Some(list) = addresses {
                    (q.answers, q.aliases) = parse_results(&list);
                }
                let answers = q.answers.clone();
                dns.report(q);
                if let Some(id) = current {
                    let r = &mut self.requests[id];
                    r.dns_name = Some(host);
                    r.dns_addresses = answers;
                }
                return;
            }
            _ => {}
        }
        // Everything else belongs to the current request; a connect or send
        // of one never created in the trace rebuilds it.
        let id = match current {
            Some(id) => id,
            None => match e {
                Event::ConnectStart | Event::SendStart { .. } | Event::ConnectStop { .. } => {
                    self.start(pid, key, fresh(true))
                }
                _ => return,
            },
        };
        match e {
            Event::Created { .. } | Event::Dns { .. } => {}
            Event::Server { connect_handle, server, port } => {
                let r = &mut self.requests[id];
                r.connect_handle = r.connect_handle.or(connect_handle);
                r.server = r.server.take().or(server);
                r.server_port = r.server_port.or(port);
            }
            Event::Started { handle } => {
                let r = &mut self.requests[id];
                r.request_handle = r.request_handle.or(handle);
                r.touch(t, tid);
            }
            Event::TcpConnection { server, local_port, socket } => {
                let r = &mut self.requests[id];
                r.local_port = local_port.or(r.local_port);
                r.socket = socket.or(r.socket);
                r.server = r.server.take().or(server);
            }
            Event::SendStart { url } => {
                if self.requests[id].send_time.is_some() {
                    // The handle sends again: keep-alive reuse, a new request on
                    // the same connection. The old one ended with its last response
                    // or read, not when the handle was used again.
                    let old = &mut self.requests[id];
                    let answered = old.answered.unwrap_or(old.last);
                    old.end(answered);
                    let mut r = fresh(false);
                    r.connect_handle = old.connect_handle;
                    r.request_handle = old.request_handle;
                    r.method = old.method.clone();
                    r.server = old.server.clone();
                    r.server_port = old.server_port;
                    r.remote = old.remote;
                    r.local = old.local;
                    r.local_port = old.local_port;
                    r.socket = old.socket;
                    r.dns_name = old.dns_name.clone();
                    r.dns_addresses = old.dns_addresses.clone();
                    r.url = url;
                    r.send_time = Some(t);
                    r.started_by.push(pools.origin(head));
                    r.touch(t, tid);
                    self.start(pid, key, r);
                    return;
                }
                let origin = pools.origin(head);
                let r = &mut self.requests[id];
                r.url = url.or(r.url.take());
                r.send_time = Some(t);
                r.started_by.push(origin);
                r.touch(t, tid);
            }
            Event::SendStop { status_line } => {
                let r = &mut self.requests[id];
                if status_line.is_some() {
                    r.status_line = status_line;
                }
                r.touch(t, tid);
                r.answered = Some(t);
                r.headers_at.get_or_insert(t);
            }
            Event::CacheHit => {
                let r = &mut self.requests[id];
                r.cache_hit = true;
                r.touch(t, tid);
                r.answered = Some(t);
            }
            Event::Sent { bytes } => {
                let r = &mut self.requests[id];
                r.sent += bytes;
                r.sent_at = Some(t);
                r.touch(t, tid);
            }
            Event::Read { request, bytes } => {
                if request != 0 {
                    let r = &mut self.requests[id];
                    r.received += bytes;
                    r.touch(t, tid);
                    r.answered = Some(t);
                }
            }
            Event::StreamData { bytes } => {
                let r = &mut self.requests[id];
                r.received += bytes;
                r.touch(t, tid);
                r.answered = Some(t);
            }
            Event::ConnectStart => {
                let r = &mut self.requests[id];
                r.connect_tid = tid;
                r.connect_time = Some(t);
                r.touch(t, tid);
            }
            Event::ConnectStop { socket, local, remote } => {
                let r = &mut self.requests[id];
                // Several connects (one per address tried): the last socket wins.
                r.socket = socket.or(r.socket);
                if let Some(remote) = remote.filter(|e| !e.is_empty()) {
                    r.remote = Some(remote);
                }
                if let Some(local) = local.filter(|e| !e.is_empty()) {
                    r.local = Some(local);
                    r.local_port = Some(local.port);
                }
                r.connect_stop = Some(t);
                r.touch(t, tid);
            }
            Event::Redirect { url } => {
                let old = &mut self.requests[id];
                old.redirected = true;
                old.redirect_to = url.clone();
                old.end(t);
                let mut r = fresh(false);
                r.connect_handle = old.connect_handle;
                r.request_handle = old.request_handle;
                // 307 and 308 keep the method; the other redirects continue with GET.
                let keeps_method = old.status_line.as_deref().is_some_and(|s| s.contains(" 307") || s.contains(" 308"));
                r.method = old.method.clone().map(|m| if keeps_method || m == "HEAD" { m } else { "GET".to_string() });
                r.url = url;
                r.redirect_of = Some(id);
                r.started_by = old.started_by.clone();
                r.send_time = Some(t);
                r.touch(t, tid);
                self.start(pid, key, r);
            }
            Event::Closed { .. } => {
                let r = &mut self.requests[id];
                r.end(t);
                r.touch(t, tid);
            }
        }
    }
}

/// WinINet requests as request rows.
impl Gatherer<'_> {
    pub(crate) fn wininet_rows(&mut self, out: &mut Vec<RequestRow>) {
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
            let connect = match (r.connect_time, r.connect_stop) {
                (Some(a), Some(b)) if b >= a => Some((a, b)),
                _ => self.connect_span(conn, r.created),
            };
            let phases = Phases {
                dns: self.lookup_span(r.pid, host, r.created, connect.map_or(r.send_time.unwrap_or(r.last), |c| c.0)),
                connect,
                tls: None,
                send: r.send_time.map(|s| (s, r.sent_at.unwrap_or(s).max(s))),
                first_byte: r.headers_at,
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
                port: remote.map(|e| e.port).or(r.server_port),
                service: remote.and_then(|e| services::tcp(e.port)).map(str::to_string),
                network: remote.and_then(|e| e.address.class()),
                status,
                state: c.map(|c| c.state()),
                bytes_sent: Some(r.sent),
                bytes_received: Some(r.received),
                end: Some(ended.unwrap_or(net.trace_end)),
                open_at_end: ended.is_none(),
                activity: (!r.activity.is_zero()).then_some(r.activity),
                local: r.local.or(c.and_then(|c| c.local)),
                connection: conn,
                started_by: self.started_by(r.started_by.iter().map(Some), conn),
                url,
                redirect_url: r.redirect_to.clone(),
                phases,
                ..RequestRow::new(Layer::WinInet, r.created)
            });
        }
    }

    /// A WinINet request's TCP connection: by local port and remote end.
    pub(crate) fn wininet_connection(&self, r: &Request) -> Option<ConnId> {
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
}
