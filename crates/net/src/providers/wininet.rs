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
use crate::dns::{Query, Resolver, parse_results};
use crate::event::{Head, Props, Time};
use crate::model::Network;

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

impl Network {
    pub(crate) fn on_wininet(&mut self, head: &Head, e: Event) {
        let t = head.time;
        let pid = Head::known(head.pid);
        let tid = Head::known(head.tid);
        let key = head.activity_key();
        let current = self.wininet.by_key.get(&(pid, key)).copied();
        let fresh =
            |inferred| Request { pid, activity: head.activity, created: t, last: t, inferred, ..Request::default() };
        match e {
            Event::Created { connect_handle, verb, object } => {
                if let Some(old) = current {
                    self.wininet.requests[old].end(t);
                }
                let mut r = fresh(false);
                r.connect_handle = connect_handle;
                r.method = verb;
                r.object = object;
                r.started_by.push(self.pools.origin(head));
                r.touch(t, tid);
                self.wininet.start(pid, key, r);
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
                self.dns.report(q);
                if let Some(id) = current {
                    let r = &mut self.wininet.requests[id];
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
                    self.wininet.start(pid, key, fresh(true))
                }
                _ => return,
            },
        };
        match e {
            Event::Created { .. } | Event::Dns { .. } => {}
            Event::Server { connect_handle, server, port } => {
                let r = &mut self.wininet.requests[id];
                r.connect_handle = r.connect_handle.or(connect_handle);
                r.server = r.server.take().or(server);
                r.server_port = r.server_port.or(port);
            }
            Event::Started { handle } => {
                let r = &mut self.wininet.requests[id];
                r.request_handle = r.request_handle.or(handle);
                r.touch(t, tid);
            }
            Event::TcpConnection { server, local_port, socket } => {
                let r = &mut self.wininet.requests[id];
                r.local_port = local_port.or(r.local_port);
                r.socket = socket.or(r.socket);
                r.server = r.server.take().or(server);
            }
            Event::SendStart { url } => {
                if self.wininet.requests[id].send_time.is_some() {
                    // The handle sends again: keep-alive reuse, a new request on
                    // the same connection. The old one ended with its last response
                    // or read, not when the handle was used again.
                    let old = &mut self.wininet.requests[id];
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
                    r.started_by.push(self.pools.origin(head));
                    r.touch(t, tid);
                    self.wininet.start(pid, key, r);
                    return;
                }
                let origin = self.pools.origin(head);
                let r = &mut self.wininet.requests[id];
                r.url = url.or(r.url.take());
                r.send_time = Some(t);
                r.started_by.push(origin);
                r.touch(t, tid);
            }
            Event::SendStop { status_line } => {
                let r = &mut self.wininet.requests[id];
                if status_line.is_some() {
                    r.status_line = status_line;
                }
                r.touch(t, tid);
                r.answered = Some(t);
            }
            Event::CacheHit => {
                let r = &mut self.wininet.requests[id];
                r.cache_hit = true;
                r.touch(t, tid);
                r.answered = Some(t);
            }
            Event::Sent { bytes } => {
                let r = &mut self.wininet.requests[id];
                r.sent += bytes;
                r.touch(t, tid);
            }
            Event::Read { request, bytes } => {
                if request != 0 {
                    let r = &mut self.wininet.requests[id];
                    r.received += bytes;
                    r.touch(t, tid);
                    r.answered = Some(t);
                }
            }
            Event::StreamData { bytes } => {
                let r = &mut self.wininet.requests[id];
                r.received += bytes;
                r.touch(t, tid);
                r.answered = Some(t);
            }
            Event::ConnectStart => {
                let r = &mut self.wininet.requests[id];
                r.connect_tid = tid;
                r.connect_time = Some(t);
                r.touch(t, tid);
            }
            Event::ConnectStop { socket, local, remote } => {
                let r = &mut self.wininet.requests[id];
                // Several connects (one per address tried): the last socket wins.
                r.socket = socket.or(r.socket);
                if let Some(remote) = remote.filter(|e| !e.is_empty()) {
                    r.remote = Some(remote);
                }
                if let Some(local) = local.filter(|e| !e.is_empty()) {
                    r.local = Some(local);
                    r.local_port = Some(local.port);
                }
                r.touch(t, tid);
            }
            Event::Redirect { url } => {
                let old = &mut self.wininet.requests[id];
                old.redirected = true;
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
                self.wininet.start(pid, key, r);
            }
            Event::Closed { .. } => {
                let r = &mut self.wininet.requests[id];
                r.end(t);
                r.touch(t, tid);
            }
        }
    }
}
