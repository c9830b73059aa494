//! QUIC through MsQuic as Microsoft-Quic logs it (Windows 11's manifest,
//! `manifests/22621/Microsoft-Quic.man`), and WinHTTP's HTTP/3 requests
//! over it as WebIO's version 1 events log them.
//!
//! MsQuic runs in the process that uses it: `ConnectionOpen` logs the
//! connection's creation on the caller's thread; its worker thread logs the
//! rest (addresses, connection ids, handshake, streams, shutdown, the
//! statistics at the end), and its UDP socket is a Winsock datagram socket
//! (AFD and TCPIP log its datagrams). Connection and stream ids are
//! MsQuic's heap addresses; the initial destination connection id is random
//! and the server's replaces it once its first packet arrives (RFC 9000
//! §7.2). Byte totals (ConnStats) are the UDP payloads sent and received.
//!
//! WinHTTP over HTTP/3 (Windows 11): WebIO's connect (200/201 v1) carries
//! `Http3ClientConnectionId` (a WinHTTP number: 1 for a process's first
//! HTTP/3 connection, a choice) and no socket handle (0: WebIO has no
//! Winsock socket of its own); a request gets a stream (217
//! Http3ConnectionGetStream, and MsQuic's StreamCreated); its sends and
//! receives (213–216 v1) name the stream; the response head WinHTTP logs
//! starts `HTTP/3 200` (a choice: the manifests do not say how WinHTTP
//! writes an HTTP/3 status line; HTTP/2's starts `HTTP/2`).

use std::net::SocketAddr;

use crate::fields;

use super::{Machine, Tid, UdpReceive, UdpSock, WebConnection, WebRequest, WebSession, WebThreads, sockaddr, spec};

const QUIC: &str = "Microsoft-Quic";
const WEBIO: &str = "Microsoft-Windows-WebIO";

/// QUIC version 1 (RFC 9000).
const VERSION_1: u32 = 1;
/// HTTP/3's graceful close (RFC 9114 §8.1).
pub const H3_NO_ERROR: u64 = 0x100;
/// A QUIC client's first Initial datagram is padded to 1,200 bytes at least.
const INITIAL: u32 = 1_252;

/// One MsQuic client connection and its UDP socket.
#[derive(Clone, Debug)]
pub struct QuicConn {
    pub pointer: u64,
    pub worker: Tid,
    pub udp: UdpSock,
    pub remote: SocketAddr,
    /// UDP payload bytes so far.
    pub sent: u64,
    pub received: u64,
    /// The destination connection id in use (the server's once it answered).
    pub destination_cid: Vec<u8>,
    pub streams: Vec<u64>,
}

/// QUIC_ADDR is a SOCKADDR_INET: 28 bytes whatever the family.
fn quic_addr(address: SocketAddr) -> Vec<u8> {
    let mut bytes = sockaddr(address);
    bytes.resize(28, 0);
    bytes
}

impl Machine {
    fn quic(&mut self, id: u16, at: f64, th: Tid, f: crate::Fields) -> Result<(), crate::SynthError> {
        self.user(spec(QUIC, id, at, th, f))
    }

    /// A UDP datagram of the connection out: AFD's and TCPIP's send on the worker.
    pub fn quic_out(&mut self, at: f64, c: &mut QuicConn, bytes: u32) -> Result<f64, crate::SynthError> {
        let (worker, udp, remote) = (c.worker, c.udp.clone(), c.remote);
        c.sent += u64::from(bytes);
        self.udp_send(at, worker, &udp, remote, bytes)
    }

    /// A UDP datagram of the connection in, received by the worker (WSARecvMsg).
    pub fn quic_in(&mut self, at: f64, c: &mut QuicConn, bytes: u32) -> Result<f64, crate::SynthError> {
        let (worker, udp, remote) = (c.worker, c.udp.clone(), c.remote);
        c.received += u64::from(bytes);
        let how = UdpReceive { message: true, ..UdpReceive::default() };
        self.udp_receive(at, worker, &udp, remote, bytes, how)
    }

    /// ConnectionOpen on `caller` (ConnCreated, Registered), ConnectionStart:
    /// the worker binds a UDP socket (BindingCreated), sets the version,
    /// the addresses and connection ids, starts the handshake (Initial out,
    /// the server's Initial and Handshake in, the client's Handshake out) and
    /// completes it (the server's connection id replaces the initial one).
    pub fn quic_connect(
        &mut self,
        at: f64,
        caller: Tid,
        worker: Tid,
        remote: SocketAddr,
        rtt: f64,
    ) -> Result<(QuicConn, f64), crate::SynthError> {
        let pid = caller.0;
        let pointer = self.heap(pid);
        let registration = self.heap(pid);
        self.quic(5120, at, caller, fields![("Connection", pointer), ("IsServer", 0u32), ("CorrelationId", 7u64)])?;
        self.quic(5133, at + 0.01, caller, fields![("Connection", pointer), ("Registration", registration)])?;
        let udp = self.udp_open(at + 0.05, worker, remote.is_ipv6(), None)?;
        let binding = self.heap(pid);
        let f = fields![
            ("Binding", binding),
            ("Socket", udp.socket.endpoint),
            ("LocalAddr", quic_addr(udp.local)),
            ("RemoteAddr", quic_addr(remote)),
        ];
        self.quic(7168, at + 0.1, worker, f)?;
        self.quic(5139, at + 0.12, worker, fields![("Connection", pointer), ("Value", VERSION_1)])?;
        self.quic(5127, at + 0.13, worker, fields![("Connection", pointer), ("Addr", quic_addr(udp.local))])?;
        self.quic(5128, at + 0.14, worker, fields![("Connection", pointer), ("Addr", quic_addr(remote))])?;
        let source_cid = (pointer ^ 0x5a5a_1234).to_be_bytes().to_vec();
        let initial_cid = (pointer.rotate_left(17) ^ 0xc3d2_e1f0).to_be_bytes().to_vec();
        let f = fields![("Connection", pointer), ("SequenceNumber", 0u64), ("Cid", source_cid)];
        self.quic(5148, at + 0.15, worker, f)?;
        let f = fields![("Connection", pointer), ("SequenceNumber", 0u64), ("Cid", initial_cid)];
        self.quic(5149, at + 0.16, worker, f)?;
        self.quic(5132, at + 0.2, worker, fields![("Connection", pointer)])?;
        let mut c = QuicConn {
            pointer,
            worker,
            udp,
            remote,
            sent: 0,
            received: 0,
            destination_cid: Vec::new(),
            streams: Vec::new(),
        };
        let t = self.quic_out(at + 0.3, &mut c, INITIAL)?;
        let t = self.quic_in(t + rtt, &mut c, 1_252)?;
        let server_cid = (pointer.rotate_right(9) ^ 0x0bad_cafe_f00d).to_be_bytes().to_vec();
        let f = fields![("Connection", pointer), ("SequenceNumber", 0u64), ("Cid", server_cid.clone())];
        self.quic(5149, t + 0.05, worker, f)?;
        let t = self.quic_in(t + 1.0, &mut c, 1_180)?;
        let t = self.quic_out(t + 0.4, &mut c, 92)?;
        self.quic(5122, t + 0.05, worker, fields![("Connection", pointer)])?;
        c.destination_cid = server_cid;
        Ok((c, t + 0.05))
    }

    /// StreamOpen on `th`: StreamCreated with the next client-initiated
    /// bidirectional stream id (0, 4, 8 …).
    pub fn quic_stream(&mut self, at: f64, th: Tid, c: &mut QuicConn) -> Result<u64, crate::SynthError> {
        let id = 4 * c.streams.iter().filter(|s| *s % 4 == 0).count() as u64;
        let stream = self.heap(th.0);
        let f = fields![("Stream", stream), ("Connection", c.pointer), ("ID", id), ("IsLocalOwned", 1u8)];
        self.quic(6144, at, th, f)?;
        c.streams.push(id);
        Ok(id)
    }

    /// HTTP/3's own unidirectional streams (control, QPACK encoder and
    /// decoder; ids 2, 6, 10), opened with the connection.
    pub fn quic_http3_control_streams(&mut self, at: f64, c: &mut QuicConn) -> Result<f64, crate::SynthError> {
        let worker = c.worker;
        for (i, id) in [2u64, 6, 10].into_iter().enumerate() {
            let stream = self.heap(worker.0);
            let f = fields![("Stream", stream), ("Connection", c.pointer), ("ID", id), ("IsLocalOwned", 1u8)];
            self.quic(6144, at + 0.01 * i as f64, worker, f)?;
            c.streams.push(id);
        }
        self.quic_out(at + 0.05, c, 61)
    }

    /// ConnectionShutdown with an application code on `caller`
    /// (AppShutdown), the CONNECTION_CLOSE out, ShutdownComplete and the
    /// statistics on the worker, then ConnectionClose (HandleClosed,
    /// Destroyed) and the binding's and socket's end.
    pub fn quic_close(&mut self, at: f64, caller: Tid, c: &mut QuicConn, code: u64) -> Result<f64, crate::SynthError> {
        let worker = c.worker;
        let f = fields![("Connection", c.pointer), ("ErrorCode", code), ("IsRemoteShutdown", 0u8)];
        self.quic(5136, at, caller, f)?;
        let t = self.quic_out(at + 0.1, c, 48)?;
        self.quic(5161, t + 0.1, worker, fields![("Connection", c.pointer), ("Value", 0u8)])?;
        let f = fields![
            ("Connection", c.pointer),
            ("SmoothedRtt", 21_000u32),
            ("CongestionCount", 0u32),
            ("PersistentCongestionCount", 0u32),
            ("SendTotalBytes", c.sent),
            ("RecvTotalBytes", c.received),
        ];
        self.quic(5160, t + 0.12, worker, f)?;
        self.quic(5138, t + 0.2, caller, fields![("Connection", c.pointer)])?;
        self.quic(5121, t + 0.25, worker, fields![("Connection", c.pointer)])?;
        let udp = c.udp.clone();
        self.udp_close(t + 0.3, worker, &udp)
    }
}

/// A WinHTTP connection over HTTP/3: WebIO's connection and its QUIC one.
#[derive(Clone, Debug)]
pub struct Http3Connection {
    pub web: WebConnection,
    pub quic: QuicConn,
    pub id: u64,
}

impl Machine {
    /// WebIO's connect of an HTTP/3 connection (200 v1 on the worker, the
    /// QUIC handshake, 201 v1 on the I/O thread).
    fn winhttp_h3_connect(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        web: WebConnection,
        (remote, rtt): (SocketAddr, f64),
    ) -> Result<(Http3Connection, f64), crate::SynthError> {
        let id = 1;
        let f = fields![
            ("Connection", web.connection),
            ("SocketHandle", 0u64),
            ("Address", remote.to_string()),
            ("Context", web.connection + 0x30),
            ("RemainingAddressCount", 1u64),
            ("Error", 0u32),
            ("Http3ClientConnectionId", id),
        ];
        self.user(spec(WEBIO, 200, at + 0.05, threads.worker, f).activity(r.activity))?;
        let (mut quic, t) = self.quic_connect(at + 0.1, threads.worker, threads.worker, remote, rtt)?;
        let t = self.quic_http3_control_streams(t + 0.1, &mut quic)?;
        let f = fields![
            ("Connection", web.connection),
            ("SocketHandle", 0u64),
            ("Error", 0u32),
            ("Http3ClientConnectionId", id),
        ];
        self.user(spec(WEBIO, 201, t + 0.1, threads.io, f).activity(r.activity))?;
        Ok((Http3Connection { web, quic, id }, t + 0.1))
    }

    /// One request on an HTTP/3 connection: a stream (217 and StreamCreated
    /// on the I/O thread), the head out (100, 213/214 v1 with its stream),
    /// the response in (215/216 v1 per datagram's worth, 101 with the head).
    fn winhttp_h3_exchange(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        h: &mut Http3Connection,
        (head, status_head, body): (&str, &str, u32),
    ) -> Result<f64, crate::SynthError> {
        let io = threads.io;
        let conn = h.web.connection;
        let stream = self.quic_stream(at, io, &mut h.quic)?;
        let f = fields![
            ("Connection", h.web.connection),
            ("Http3ClientConnectionId", h.id),
            ("StreamConnection", h.web.connection + 0x100 + stream),
            ("Http3ClientStreamId", stream),
        ];
        self.user(spec(WEBIO, 217, at + 0.01, io, f).activity(r.activity))?;
        self.user(
            spec(WEBIO, 100, at + 0.02, io, fields![("Request", r.request), ("Headers", head)]).activity(r.activity),
        )?;
        let transfer = |bytes: u64, eof: bool| {
            fields![
                ("Connection", conn),
                ("DataChunks", conn + 0x90),
                ("SocketHandle", 0u64),
                ("Buffer", conn + 0x8400),
                ("Context", conn + 0x20),
                ("Error", 0u32),
                ("Http3ClientStreamId", stream),
                ("BufferLength", bytes),
                ("IsEof", eof),
                ("IsHeaderPairs", false),
            ]
        };
        let sent = head.len() as u64;
        self.user(
            spec(WEBIO, 213, at + 0.03, io, transfer(sent, true).with("Information", 0u64)).activity(r.activity),
        )?;
        // QPACK compresses the head: the HEADERS frame is about half its text.
        let t = self.quic_out(at + 0.05, &mut h.quic, (head.len() / 2 + 40) as u32)?;
        self.user(spec(WEBIO, 214, t + 0.02, io, transfer(sent, true).with("Information", sent)).activity(r.activity))?;
        let mut left = status_head.len() as u32 + body;
        let mut t = t + 20.0;
        let mut first = true;
        while left > 0 {
            let piece = left.min(16_384);
            self.user(spec(WEBIO, 215, t, io, transfer(16_384, false).with("Information", 0u64)).activity(r.activity))?;
            let mut wire = piece;
            while wire > 0 {
                let d = wire.min(1_350);
                t = self.quic_in(t + 0.3, &mut h.quic, d + 30)?;
                wire -= d;
            }
            left -= piece;
            let f = transfer(16_384, left == 0).with("Information", u64::from(piece));
            self.user(spec(WEBIO, 216, t + 0.05, io, f).activity(r.activity))?;
            if first {
                let f = fields![("Request", r.request), ("Headers", status_head)];
                self.user(spec(WEBIO, 101, t + 0.06, io, f).activity(r.activity))?;
                first = false;
            }
            t += 0.1;
        }
        // ACKs of the response.
        self.quic_out(t + 0.1, &mut h.quic, 44)
    }

    /// A whole GET over HTTP/3 on a new connection, as [`Machine::winhttp_fetch`]
    /// does over TCP: open the request, hand it to the worker, resolve,
    /// connect over QUIC, exchange on a stream, close the request. The
    /// connection stays open; [`Machine::winhttp_h3_close`] closes it.
    #[allow(clippy::too_many_arguments)]
    pub fn winhttp_h3_fetch(
        &mut self,
        at: f64,
        threads: WebThreads,
        s: &WebSession,
        (method, url, host): (&str, &str, &str),
        answer: (&[super::Lookup<'_>], Tid),
        (remote, rtt): (SocketAddr, f64),
        (path, status_line, body): (&str, &str, u32),
    ) -> Result<(WebRequest, Http3Connection, f64), crate::SynthError> {
        let r = self.winhttp_open_request(at, threads.app, s, method, url)?;
        let t = self.winhttp_send_request(at + 0.2, threads.app, threads.worker, &r)?;
        let mut web = self.winhttp_connection(threads.app.0, true);
        web.socket_handle = 0;
        self.winhttp_wait_connection(t + 0.05, threads.worker, &r, &web)?;
        let t = self.winhttp_resolve(t + 0.1, threads.worker, &r, &web, (host, remote.port()), answer)?;
        let (mut h, t) = self.winhttp_h3_connect(t + 0.1, threads, &r, web, (remote, rtt))?;
        self.winhttp_work_done(t, threads.worker, &r)?;
        let t = self.winhttp_h3_request(t + 0.2, threads, &r, &mut h, (method, host, path), (status_line, body))?;
        let t = self.winhttp_close_request(t + 1.0, threads.app, &r)?;
        Ok((r, h, t))
    }

    /// Another request on an open HTTP/3 connection.
    #[allow(clippy::too_many_arguments)]
    pub fn winhttp_h3_fetch_on(
        &mut self,
        at: f64,
        threads: WebThreads,
        s: &WebSession,
        (method, url, host, path): (&str, &str, &str, &str),
        h: &mut Http3Connection,
        (status_line, body): (&str, u32),
    ) -> Result<(WebRequest, f64), crate::SynthError> {
        let r = self.winhttp_open_request(at, threads.app, s, method, url)?;
        let t = self.winhttp_send_request(at + 0.2, threads.app, threads.worker, &r)?;
        self.winhttp_wait_connection(t + 0.05, threads.worker, &r, &h.web)?;
        self.winhttp_work_done(t + 0.1, threads.worker, &r)?;
        let t = self.winhttp_h3_request(t + 0.2, threads, &r, h, (method, host, path), (status_line, body))?;
        let t = self.winhttp_close_request(t + 1.0, threads.app, &r)?;
        Ok((r, t))
    }

    fn winhttp_h3_request(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        h: &mut Http3Connection,
        (method, host, path): (&str, &str, &str),
        (status_line, body): (&str, u32),
    ) -> Result<f64, crate::SynthError> {
        let head = format!(
            ":method: {method}\r\n:scheme: https\r\n:authority: {host}\r\n:path: {path}\r\n\
             accept: */*\r\nuser-agent: WinHttp\r\n\r\n"
        );
        let status_head = format!(
            "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {body}\r\n\
             alt-svc: h3=\":443\"; ma=86400\r\n\r\n"
        );
        self.winhttp_h3_exchange(at, threads, r, h, (&head, &status_head, body))
    }

    /// WinHTTP closes its HTTP/3 connection: 204 v1, then QUIC's shutdown
    /// with HTTP/3's no-error code.
    pub fn winhttp_h3_close(
        &mut self,
        at: f64,
        threads: WebThreads,
        r: &WebRequest,
        h: &mut Http3Connection,
    ) -> Result<f64, crate::SynthError> {
        let f = fields![
            ("Endpoint", h.web.connection),
            ("Socket", 0u64),
            ("Reason", 0u32),
            ("Result", 0u32),
            ("Http3ClientConnectionId", h.id),
            ("Aborted", false),
        ];
        self.user(spec(WEBIO, 204, at, threads.app, f).activity(r.activity))?;
        self.quic_close(at + 0.1, threads.app, &mut h.quic, H3_NO_ERROR)
    }
}
