//! WinHTTP as Microsoft-Windows-WebIO (its engine) and Microsoft-Windows-WinHttp
//! (its thread pool) log it. The application's thread opens the session and
//! the request; WinHttpSendRequest hands the work to a WinHTTP pool thread
//! (ThreadAction Queue/Start, sharing RequestCreate's activity id), which
//! waits for a connection (104), resolves the host (205/206, with the DNS
//! events it triggers) and connects (200, then AFD and TCPIP); I/O completion
//! threads finish the connect (201) and do the sends (213/214) and receives
//! (215/216), logging the request and response headers (100/101).
//!
//! Activity ids: for the request's network events the first 8 bytes are the
//! request handle and bytes 8–11 the low half of the Request object's
//! address (bytes 12–15 are 0: a choice); RequestCreate and the ThreadAction
//! events share another; RequestClose and ConnectionSocketClose share a
//! third. Handles and objects are heap addresses (a choice: WinHTTP's handle
//! values are not documented).

use std::net::SocketAddr;

use nettrail_etl::Guid;

use crate::fields;

use super::{Dial, Failure, Lookup, Machine, TcpConn, Tid, activity, spec, winhttp_error};

const WEBIO: &str = "Microsoft-Windows-WebIO";
const WINHTTP: &str = "Microsoft-Windows-WinHttp";

/// TLS 1.3 adds a record header, a content type byte and a tag to every record.
const TLS_RECORD_OVERHEAD: u32 = 22;
/// Receives complete in pieces of at most this many bytes.
const RECEIVE_CHUNK: u32 = 16_384;
/// EtwQueueActionType of a work item.
const WORK_ITEM: u32 = 2;

/// The threads a WinHTTP request runs on: the application's, a WinHTTP pool
/// worker (send request, resolve, connect) and an I/O completion thread.
#[derive(Clone, Copy, Debug)]
pub struct WebThreads {
    pub app: Tid,
    pub worker: Tid,
    pub io: Tid,
}

/// A WinHttpOpen session.
#[derive(Clone, Debug)]
pub struct WebSession {
    pub session: u64,
    pub handle: u64,
}

/// A WinHttpOpenRequest request.
#[derive(Clone, Debug)]
pub struct WebRequest {
    pub request: u64,
    pub handle: u64,
    /// The activity of its network events (handle, low half of the object).
    pub activity: Guid,
    create_activity: Guid,
    close_activity: Guid,
}

/// A WebIO connection: the object requests wait for, its socket, and the
/// TCP connection under it once connected.
#[derive(Clone, Debug)]
pub struct WebConnection {
    pub connection: u64,
    pub socket_handle: u64,
    pub tcp: Option<TcpConn>,
    /// HTTPS: TLS records around every send and receive on the wire.
    pub tls: bool,
    conn_mgr: u64,
    context: u64,
}

/// One HTTP request and response on a connection: what is sent (head and
/// body) and received (head and body).
#[derive(Clone, Debug)]
pub struct Exchange {
    pub request_head: String,
    pub request_body: u32,
    pub response_head: String,
    pub response_body: u32,
}

impl Exchange {
    /// `method path` to `host`, answered with `status_line` and a body of `length` bytes.
    pub fn new(method: &str, host: &str, path: &str, status_line: &str, length: u32) -> Exchange {
        let request_head = format!(
            "{method} {path} HTTP/1.1\r\nConnection: Keep-Alive\r\nAccept: */*\r\n\
             User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) WinHttp\r\nHost: {host}\r\n\r\n"
        );
        let response_head = format!(
            "{status_line}\r\nContent-Type: application/octet-stream\r\nContent-Length: {length}\r\n\
             Date: Thu, 15 Jan 2026 09:30:01 GMT\r\nServer: ECAcc (nyd/D11E)\r\n\r\n"
        );
        Exchange { request_head, request_body: 0, response_head, response_body: length }
    }

    /// A request body of `bytes` (POST, PUT).
    pub fn body(mut self, bytes: u32) -> Exchange {
        self.request_body = bytes;
        self
    }

    /// What WebIO counts as sent.
    pub fn sent(&self) -> u32 {
        self.request_head.len() as u32 + self.request_body
    }

    /// What WebIO counts as received.
    pub fn received(&self) -> u32 {
        self.response_head.len() as u32 + self.response_body
    }
}

impl Machine {
    fn webio(&mut self, id: u16, at: f64, th: Tid, id_of: Guid, f: crate::Fields) -> Result<(), crate::SynthError> {
        self.user(spec(WEBIO, id, at, th, f).activity(id_of))
    }

    /// WinHttpOpen: SessionCreate (5), with the caller's stack.
    pub fn winhttp_open(&mut self, at: f64, th: Tid) -> Result<WebSession, crate::SynthError> {
        let session = WebSession { session: self.heap(th.0), handle: self.heap(th.0) };
        let f = fields![
            ("ApiObject", session.session),
            ("ApiHandle", session.handle),
            ("Session", session.session),
            ("SessionHandle", session.handle),
            ("Flags", 0x1000_0000u64),
            ("Error", 0u32),
        ];
        let stack = self.user_stack(th.0, "winhttp.dll", 0x1_5a20)?;
        self.user(spec(WEBIO, 5, at, th, f).stack(&stack))?;
        Ok(session)
    }

    /// WinHttpCloseHandle of the session: SessionClose Start (7) and Stop (29).
    pub fn winhttp_close_session(&mut self, at: f64, th: Tid, s: &WebSession) -> Result<f64, crate::SynthError> {
        let close = activity(s.handle ^ 0x5e55_0000, s.session);
        let f = fields![("ApiObject", s.session), ("ApiHandle", s.handle), ("Flags", 0u64), ("Error", 0u32)];
        self.webio(7, at, th, close, f.clone())?;
        self.webio(29, at + 0.05, th, close, f)?;
        Ok(at + 0.05)
    }

    /// WinHttpOpenRequest: RequestCreate (17), with the caller's stack.
    pub fn winhttp_open_request(
        &mut self,
        at: f64,
        th: Tid,
        s: &WebSession,
        method: &str,
        url: &str,
    ) -> Result<WebRequest, crate::SynthError> {
        let (request, handle) = (self.heap(th.0), self.heap(th.0));
        let r = WebRequest {
            request,
            handle,
            activity: activity(handle, request & 0xffff_ffff),
            create_activity: activity(request ^ 0x00c0_ffee, s.session),
            close_activity: activity(handle ^ 0xc105_e000, s.session),
        };
        let f = fields![
            ("Request", request),
            ("RequestHandle", handle),
            ("Session", s.session),
            ("SessionHandle", s.handle),
            ("Method", method),
            ("URI", url),
            ("VersionMajor", 1u16),
            ("VersionMinor", 1u16),
            ("Error", 0u32),
        ];
        let stack = self.user_stack(th.0, "winhttp.dll", 0x1_7c48)?;
        self.user(spec(WEBIO, 17, at, th, f).activity(r.create_activity).stack(&stack))?;
        Ok(r)
    }

    /// WinHttpSendRequest hands the request to a WinHTTP pool thread: the
    /// ThreadAction Queue (with the caller's stack) and Start; returns when
    /// the worker runs. [`Machine::winhttp_work_done`] logs the Stop.
    pub fn winhttp_send_request(
        &mut self,
        at: f64,
        th: Tid,
        worker: Tid,
        r: &WebRequest,
    ) -> Result<f64, crate::SynthError> {
        let f = fields![("Context", r.request + 0x40), ("EtwQueueActionType", WORK_ITEM)];
        let stack = self.user_stack(th.0, "winhttp.dll", 0x2_0b10)?;
        self.user(spec(WINHTTP, 59996, at, th, f.clone()).activity(r.create_activity).stack(&stack))?;
        self.user(spec(WINHTTP, 59998, at + 0.05, worker, f).activity(r.create_activity))?;
        Ok(at + 0.05)
    }

    /// The work item's ThreadAction Stop on the worker.
    pub fn winhttp_work_done(&mut self, at: f64, worker: Tid, r: &WebRequest) -> Result<(), crate::SynthError> {
        let f = fields![("Context", r.request + 0x40), ("EtwQueueActionType", WORK_ITEM)];
        self.user(spec(WINHTTP, 59997, at, worker, f).activity(r.create_activity))
    }

    /// A new WebIO connection object of `pid` (not yet connected).
    pub fn winhttp_connection(&mut self, pid: u32, tls: bool) -> WebConnection {
        WebConnection {
            connection: self.heap(pid),
            socket_handle: self.handle(),
            tcp: None,
            tls,
            conn_mgr: self.heap(pid),
            context: self.heap(pid),
        }
    }

    /// RequestWaitingForConnection Stop (104): the request gets `c`.
    pub fn winhttp_wait_connection(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &WebConnection,
    ) -> Result<(), crate::SynthError> {
        let f = fields![("Request", r.request), ("ConnMgr", c.conn_mgr), ("Connection", c.connection)];
        self.webio(104, at, th, r.activity, f)
    }

    /// ConnectionNameResolutionRequest Start (205), the lookups it makes
    /// (in-process through GetAddrInfoExW, sharing the request's activity:
    /// DNS-Client's per record type, NameResolution's 1004), Stop (206) with every
    /// address as a SOCKADDR_INET (28 bytes each: a choice, the layout gives
    /// only the array's total length) and the chain's last name as canonical.
    pub fn winhttp_resolve(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &WebConnection,
        (host, port): (&str, u16),
        (lookups, dnscache): (&[Lookup<'_>], Tid),
    ) -> Result<f64, crate::SynthError> {
        let f = fields![
            ("DnsQuery", c.connection),
            ("HostName", host),
            ("Timeout", 0u32),
            ("CompletionContext", c.context)
        ];
        self.webio(205, at, th, r.activity, f)?;
        let mut t = at + 0.05;
        let mut addresses = Vec::new();
        let mut canonical = host.to_string();
        for l in lookups {
            t = self.resolve(t, th, r.activity, l, dnscache)? + 0.05;
            addresses.extend_from_slice(l.answer.addresses);
            if let Some(last) = l.answer.cnames.last() {
                canonical = last.to_string();
            }
        }
        self.getaddrinfoex_completed(t, th, r.activity, host, &addresses)?;
        t += 0.02;
        let mut blob = Vec::new();
        for a in &addresses {
            let mut entry = super::sockaddr(SocketAddr::new(*a, port));
            entry.resize(28, 0);
            blob.extend_from_slice(&entry);
        }
        let f = fields![
            ("DnsQuery", c.connection),
            ("FQDN", host),
            ("CanonicalName", canonical),
            ("AddressCount", addresses.len() as u32),
            ("SockAddr", blob),
        ];
        self.webio(206, t, th, r.activity, f)?;
        Ok(t)
    }

    /// ConnectionSocketConnect Start (200): the address as text, `ip:port`
    /// or `[ip]:port`: the manifest's UnicodeString of AddressLength
    /// characters (a choice: the manifest does not say whether the count
    /// includes a NUL; it does not here).
    fn winhttp_connect_start(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &WebConnection,
        (remote, remaining): (SocketAddr, u64),
    ) -> Result<(), crate::SynthError> {
        let text = remote.to_string();
        let f = fields![
            ("Connection", c.connection),
            ("SocketHandle", c.socket_handle),
            ("Address", text),
            ("Context", c.context),
            ("RemainingAddressCount", remaining),
            ("Error", 0u32),
        ];
        self.webio(200, at, th, r.activity, f)
    }

    /// ConnectionSocketConnect Stop (201), or Stop2 (202) ending a series
    /// of attempts; no address (its length is 0).
    fn winhttp_connect_stop(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &WebConnection,
        (error, last_of_several): (u32, bool),
    ) -> Result<(), crate::SynthError> {
        let f = fields![
            ("Connection", c.connection),
            ("SocketHandle", c.socket_handle),
            ("Context", c.context),
            ("RemainingAddressCount", 0u64),
            ("Error", error),
        ];
        self.webio(if last_of_several { 202 } else { 201 }, at, th, r.activity, f)
    }

    /// Connects `c` for `r`: 200 on the worker, the socket's connect there,
    /// 201 (202 when it ends a series of attempts) on the I/O thread.
    pub fn winhttp_connect(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        c: &mut WebConnection,
        (dial, remaining, last_of_several): (&Dial, u64, bool),
    ) -> Result<f64, crate::SynthError> {
        self.winhttp_connect_start(at, threads.worker, r, c, (dial.remote, remaining))?;
        let tcp = self.tcp_connect(at + 0.05, threads.worker, dial)?;
        c.tcp = Some(tcp);
        let done = at + 0.05 + dial.rtt + 0.1;
        self.winhttp_connect_stop(done, threads.io, r, c, (0, last_of_several))?;
        Ok(done)
    }

    /// A connect attempt that fails: 201 with ERROR_WINHTTP_CANNOT_CONNECT on
    /// the I/O thread, then WebIO closes the socket (204 and AFD's close;
    /// TCPIP has no connection left to close).
    pub fn winhttp_connect_failing(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        c: &mut WebConnection,
        (dial, remaining, failure): (&Dial, u64, Failure),
    ) -> Result<f64, crate::SynthError> {
        self.winhttp_connect_start(at, threads.worker, r, c, (dial.remote, remaining))?;
        let (tcp, failed) = self.tcp_connect_failing(at + 0.05, threads.worker, dial, failure)?;
        self.winhttp_connect_stop(failed + 0.1, threads.io, r, c, (winhttp_error::CANNOT_CONNECT, false))?;
        self.winhttp_socket_closed(failed + 0.2, threads.io, r, c)?;
        if let Some(s) = &tcp.socket {
            self.afd_close(failed + 0.22, threads.io, s)?;
        }
        Ok(failed + 0.22)
    }

    /// Bytes on the wire for `bytes` of HTTP.
    fn wire(c: &WebConnection, bytes: u32) -> u32 {
        if c.tls { bytes + TLS_RECORD_OVERHEAD } else { bytes }
    }

    /// The TLS handshake on a new HTTPS connection to `host`, outside
    /// WebIO's send and receive events: SSLInitializeSecurityContext Start
    /// and Stop (700, 703) around each of the client's flights (the
    /// ClientHello, then the Finished after the server's answer).
    pub fn winhttp_handshake(
        &mut self,
        at: f64,
        threads: WebThreads,
        c: &mut WebConnection,
        host: &str,
    ) -> Result<f64, crate::SynthError> {
        let flight = |m: &mut Machine, at: f64, (input, output): (u32, u32)| {
            let f = fields![
                ("Connection", c.connection),
                ("SecurityHandleHigh", c.context + 0x40),
                ("SecurityHandleLow", c.context + 0x48),
                ("CredHandleHigh", c.conn_mgr + 0x20),
                ("CredHandleLow", c.conn_mgr + 0x28),
                ("HostName", host),
                ("InputFlags", 0x0001_c11cu32),
                ("Buffer", c.context + 0x800),
                ("BufferLengthData", input),
                ("BufferLengthRemaining", 0u32),
                ("OutputFlags", 0x0000_011cu32),
                ("DataChunks", c.context + 0x90),
                ("DataChunkBufferLength", output),
            ];
            // SEC_I_CONTINUE_NEEDED, then SEC_E_OK.
            let result = if input == 0 { 0x0009_0312u32 } else { 0 };
            m.webio(700, at, threads.io, Guid::ZERO, f.clone().with("Result", 0u32))?;
            m.webio(703, at + 0.01, threads.io, Guid::ZERO, f.with("Result", result))
        };
        flight(self, at - 0.03, (0, 517))?;
        let mut tcp = c.tcp.take().expect("a connected WebIO connection");
        let end = self.tls_handshake(at, threads.io, &mut tcp, threads.io);
        c.tcp = Some(tcp);
        let end = end?;
        flight(self, end - 0.03, (2_893, 80))?;
        Ok(end)
    }

    /// RequestHeader (100, `head`) then ConnectionSocketSend Start (213), the
    /// socket's send, Stop (214) with the bytes sent (0 on builds that do not
    /// count them), all on `th`.
    pub fn winhttp_send(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &mut WebConnection,
        (head, body): (&str, u32),
        counted: bool,
    ) -> Result<f64, crate::SynthError> {
        let f = fields![("Request", r.request), ("Headers", head)];
        self.webio(100, at, th, r.activity, f)?;
        let bytes = head.len() as u32 + body;
        let io = fields![
            ("Connection", c.connection),
            ("DataChunks", c.context + 0x80),
            ("SocketHandle", c.socket_handle),
            ("Buffer", c.context + 0x400),
            ("Context", c.context + 0x10),
            ("Error", 0u32),
        ]
        // Windows 11's version 1 states the buffer's size.
        .maybe("BufferLength", u64::from(bytes));
        self.webio(213, at + 0.02, th, r.activity, io.clone().with("Information", 0u64))?;
        let mut tcp = c.tcp.take().expect("a connected WebIO connection");
        let sent = self.tcp_send(at + 0.04, th, &mut tcp, Self::wire(c, bytes));
        c.tcp = Some(tcp);
        sent?;
        let information = if counted { u64::from(bytes) } else { 0 };
        self.webio(214, at + 0.08, th, r.activity, io.with("Information", information))?;
        Ok(at + 0.3)
    }

    /// ConnectionSocketReceive Start (215) and TCPIP's receive request on
    /// `post`, the data's arrival, Stop (216) with the bytes on `completion`,
    /// and the response head (101) when this receive brought it.
    pub fn winhttp_receive(
        &mut self,
        at: f64,
        (post, completion): (Tid, Tid),
        r: &WebRequest,
        c: &mut WebConnection,
        (bytes, head): (u32, Option<&str>),
    ) -> Result<f64, crate::SynthError> {
        let io = fields![
            ("Connection", c.connection),
            ("DataChunks", c.context + 0x90),
            ("SocketHandle", c.socket_handle),
            ("Buffer", c.context + 0x8400),
            ("Context", c.context + 0x20),
            ("Error", 0u32),
        ]
        .maybe("BufferLength", u64::from(RECEIVE_CHUNK));
        self.webio(215, at, post, r.activity, io.clone().with("Information", 0u64))?;
        let wire = Self::wire(c, bytes);
        let mut tcp = c.tcp.take().expect("a connected WebIO connection");
        self.tcp_receive_request(at + 0.01, post, &tcp.tcb, RECEIVE_CHUNK + TLS_RECORD_OVERHEAD)?;
        let arrived = self.tcp_receive(at + 2.0, &mut tcp, wire, completion);
        c.tcp = Some(tcp);
        let done = arrived? + 0.05;
        self.webio(216, done, completion, r.activity, io.with("Information", u64::from(bytes)))?;
        if let Some(head) = head {
            let f = fields![("Request", r.request), ("Headers", head)];
            self.webio(101, done + 0.01, completion, r.activity, f)?;
        }
        Ok(done + 0.02)
    }

    /// One exchange on a connected `c`: the request sent from the I/O
    /// thread, the response received in pieces (the first with the head).
    pub fn winhttp_exchange(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        c: &mut WebConnection,
        x: &Exchange,
    ) -> Result<f64, crate::SynthError> {
        let counted = self.webio_send_sizes;
        let mut t = self.winhttp_send(at, threads.io, r, c, (&x.request_head, x.request_body), counted)?;
        let mut left = x.received();
        let mut head = Some(x.response_head.as_str());
        while left > 0 {
            let piece = left.min(RECEIVE_CHUNK);
            t = self.winhttp_receive(t + 0.5, (threads.io, threads.io), r, c, (piece, head.take()))?;
            left -= piece;
        }
        Ok(t)
    }

    /// WinHttpCloseHandle of the request: RequestClose Start (19) and Stop (30).
    pub fn winhttp_close_request(&mut self, at: f64, th: Tid, r: &WebRequest) -> Result<f64, crate::SynthError> {
        let f = fields![("ApiObject", r.request), ("ApiHandle", r.handle), ("Flags", 0u64), ("Error", 0u32)];
        self.webio(19, at, th, r.close_activity, f.clone())?;
        self.webio(30, at + 0.05, th, r.close_activity, f)?;
        Ok(at + 0.05)
    }

    /// ConnectionSocketClose (204), with the closing request's close activity.
    fn winhttp_socket_closed(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &WebConnection,
    ) -> Result<(), crate::SynthError> {
        let f = fields![("Endpoint", c.connection), ("Socket", c.socket_handle), ("Reason", 0u32), ("Result", 0u32)];
        self.webio(204, at, th, r.close_activity, f)
    }

    /// WebIO closes a connected socket: 204, then the socket's close.
    pub fn winhttp_close_socket(
        &mut self,
        at: f64,
        th: Tid,
        r: &WebRequest,
        c: &WebConnection,
    ) -> Result<f64, crate::SynthError> {
        self.winhttp_socket_closed(at, th, r, c)?;
        match &c.tcp {
            Some(tcp) => {
                let tcp = tcp.clone();
                self.tcp_close(at + 0.02, th, &tcp)
            }
            None => Ok(at),
        }
    }

    /// A request already under way when the trace starts, on `tcp`: its
    /// handles and connection exist; none of their creation events is traced.
    pub fn winhttp_in_progress(&mut self, pid: u32, tcp: TcpConn, tls: bool) -> (WebRequest, WebConnection) {
        let (request, handle, session) = (self.heap(pid), self.heap(pid), self.heap(pid));
        let r = WebRequest {
            request,
            handle,
            activity: activity(handle, request & 0xffff_ffff),
            create_activity: activity(request ^ 0x00c0_ffee, session),
            close_activity: activity(handle ^ 0xc105_e000, session),
        };
        let mut c = self.winhttp_connection(pid, tls);
        c.tcp = Some(tcp);
        (r, c)
    }

    /// Another request on the already connected `c` (keep-alive, HTTP/2):
    /// open, hand to the worker, get `c` (104) with no connect, exchange, close.
    pub fn winhttp_fetch_on(
        &mut self,
        at: f64,
        threads: WebThreads,
        s: &WebSession,
        (method, url): (&str, &str),
        c: &mut WebConnection,
        x: &Exchange,
    ) -> Result<(WebRequest, f64), crate::SynthError> {
        let r = self.winhttp_open_request(at, threads.app, s, method, url)?;
        let t = self.winhttp_send_request(at + 0.2, threads.app, threads.worker, &r)?;
        self.winhttp_wait_connection(t + 0.05, threads.worker, &r, c)?;
        self.winhttp_work_done(t + 0.1, threads.worker, &r)?;
        let t = self.winhttp_exchange(t + 0.2, threads, &r, c, x)?;
        let t = self.winhttp_close_request(t + 1.0, threads.app, &r)?;
        Ok((r, t))
    }

    /// A whole GET (or other `x`) on a new connection: open the request on
    /// the app thread, hand it to the worker, wait for a connection, resolve,
    /// connect, handshake for HTTPS, exchange, close the request. The
    /// connection stays open (keep-alive); the caller closes it.
    #[allow(clippy::too_many_arguments)]
    pub fn winhttp_fetch(
        &mut self,
        at: f64,
        threads: WebThreads,
        s: &WebSession,
        (method, url, host): (&str, &str, &str),
        answer: (&[Lookup<'_>], Tid),
        dial: &Dial,
        x: &Exchange,
    ) -> Result<(WebRequest, WebConnection, f64), crate::SynthError> {
        let r = self.winhttp_open_request(at, threads.app, s, method, url)?;
        let t = self.winhttp_send_request(at + 0.2, threads.app, threads.worker, &r)?;
        let mut c = self.winhttp_connection(threads.app.0, url.starts_with("https:"));
        self.winhttp_wait_connection(t + 0.05, threads.worker, &r, &c)?;
        let t = self.winhttp_resolve(t + 0.1, threads.worker, &r, &c, (host, dial.remote.port()), answer)?;
        let t = self.winhttp_connect(t + 0.1, threads, &r, &mut c, (dial, 1, false))?;
        self.winhttp_work_done(t, threads.worker, &r)?;
        let t = if c.tls { self.winhttp_handshake(t + 0.1, threads, &mut c, host)? } else { t };
        let t = self.winhttp_exchange(t + 0.2, threads, &r, &mut c, x)?;
        let t = self.winhttp_close_request(t + 1.0, threads.app, &r)?;
        Ok((r, c, t))
    }
}
