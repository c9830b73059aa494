//! Microsoft-Quic (MsQuic: Windows 11's msquic.sys and the msquic.dll that
//! apps such as .NET ship) and Microsoft-Windows-WinQuic (the msquic.sys of
//! Windows 10 1903 to 21H1): QUIC connections from creation to close, with
//! their addresses, connection ids, handshake, streams, bytes and the
//! reason they closed.
//!
//! Both providers name a connection by its object's address (`Connection`)
//! in every event, and a stream by its own address; the addresses are
//! reused, so a creation on an address that is still open abandons the
//! record before it. A connection seen only in later events (the trace
//! began after its creation and its rundown was not logged) is rebuilt from
//! its first event.
//!
//! Joins (at gathering): a connection's UDP flow is the one of its process
//! with its local port and remote end whose life overlaps the connection's
//! (exact when both ends were logged); a WinHTTP HTTP/3 connection (WebIO
//! 200 v1 with an `Http3ClientConnectionId`) is the QUIC connection its
//! process created to the same remote end while WebIO connected, on the
//! connecting thread where both say (MsQuic logs no id WebIO logs, so the
//! join is by address, process, thread and time).

use std::collections::BTreeSet;

use nettrail_decode::fasthash::FastMap;

use crate::address::Endpoint;
use crate::event::{Head, Props, Time};
use crate::pools::{Origin, Pools};
use crate::report::{ConnectionRow, Gatherer, Layer, SLACK, overlaps, same_pid};
use crate::transport::{ConnId, Direction, Transport};

pub type QuicId = usize;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// 5120 ConnCreated, 5147 ConnRundown.
    Created { conn: u64, server: bool, rundown: bool },
    /// 5121 ConnDestroyed, 5138 ConnHandleClosed.
    Closed { conn: u64 },
    /// 5132 ConnHandshakeStart.
    HandshakeStart { conn: u64 },
    /// 5122 ConnHandshakeComplete.
    HandshakeComplete { conn: u64 },
    /// 5127 ConnLocalAddrAdded, 5128 ConnRemoteAddrAdded.
    Address { conn: u64, local: bool, endpoint: Endpoint },
    /// 5139 ConnVersionSet.
    Version { conn: u64, version: u32 },
    /// 5135 ConnTransportShutdown, 5136 ConnAppShutdown.
    Shutdown { conn: u64, close: Close },
    /// 5161 ConnShutdownComplete.
    ShutdownComplete { conn: u64 },
    /// 5160 ConnStats (and its V2, V3: 5190, 5194): totals at the end.
    Stats { conn: u64, sent: u64, received: u64 },
    /// 5140/5193 ConnOutFlowStats, 5142 ConnInFlowStats: totals so far.
    Flow { conn: u64, sent: bool, bytes: u64 },
    /// 5148 ConnSourceCidAdded, 5149 ConnDestCidAdded.
    Cid { conn: u64, destination: bool, cid: Vec<u8> },
    /// 6144 StreamCreated, 6147 StreamRundown.
    Stream { conn: u64, id: u64 },
    /// 5156, 5157 ConnError(Status).
    Error { conn: u64, text: String },
}

/// Why a connection closed: who closed it and with what code.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Close {
    /// A transport close (else the application's, HTTP/3's codes for HTTP/3).
    pub transport: bool,
    pub code: u64,
    /// The peer closed it.
    pub remote: bool,
    /// `code` is a QUIC_STATUS (an HRESULT on Windows), not a wire code.
    pub status: bool,
}

impl Event {
    pub(crate) fn is_create(&self) -> bool {
        matches!(self, Event::Created { rundown: false, .. })
    }
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let conn = || props.u64("Connection");
    Some(match id {
        5120 | 5147 => {
            Event::Created { conn: conn()?, server: props.u64("IsServer").unwrap_or(0) != 0, rundown: id == 5147 }
        }
        5121 | 5138 => Event::Closed { conn: conn()? },
        5132 => Event::HandshakeStart { conn: conn()? },
        5122 => Event::HandshakeComplete { conn: conn()? },
        5127 | 5128 => Event::Address { conn: conn()?, local: id == 5127, endpoint: props.sockaddr("Addr")? },
        5139 => Event::Version { conn: conn()?, version: props.u32("Value")? },
        5135 | 5136 => Event::Shutdown {
            conn: conn()?,
            close: Close {
                transport: id == 5135,
                code: props.u64("ErrorCode").unwrap_or(0),
                remote: props.u64("IsRemoteShutdown").unwrap_or(0) != 0,
                status: props.u64("IsQuicStatus").unwrap_or(0) != 0,
            },
        },
        5161 => Event::ShutdownComplete { conn: conn()? },
        5160 | 5190 | 5194 => {
            Event::Stats { conn: conn()?, sent: props.u64("SendTotalBytes")?, received: props.u64("RecvTotalBytes")? }
        }
        5140 | 5193 => Event::Flow { conn: conn()?, sent: true, bytes: props.u64("BytesSent")? },
        5142 => Event::Flow { conn: conn()?, sent: false, bytes: props.u64("BytesReceived")? },
        5148 | 5149 => Event::Cid { conn: conn()?, destination: id == 5149, cid: props.bytes("Cid")?.to_vec() },
        6144 | 6147 => Event::Stream { conn: conn()?, id: props.u64("ID")? },
        5156 | 5157 => Event::Error { conn: conn()?, text: props.text("ErrStr")? },
        _ => return None,
    })
}

/// One QUIC connection.
#[derive(Clone, Debug)]
pub struct QuicConnection {
    pub pid: Option<u32>,
    /// The thread that created it.
    pub tid: Option<u32>,
    /// MsQuic's connection object.
    pub pointer: u64,
    pub server: bool,
    /// It existed when the trace began (rundown), or was rebuilt from a later event.
    pub rundown: bool,
    pub inferred: bool,
    pub created: Time,
    pub handshake_start: Option<Time>,
    pub handshake_done: Option<Time>,
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    pub version: Option<u32>,
    /// The connection ids in use: the peer's (what our packets carry) and ours.
    pub destination_cid: Option<Vec<u8>>,
    pub source_cid: Option<Vec<u8>>,
    /// Stream ids opened or accepted.
    pub streams: FastMap<u64, ()>,
    /// Bytes as MsQuic counts them (QUIC payload with its framing, no UDP/IP headers).
    pub sent: Option<u64>,
    pub received: Option<u64>,
    pub close: Option<Close>,
    pub error: Option<String>,
    pub closed: Option<Time>,
    /// Its address was reused while it was open: its close was lost.
    pub abandoned: bool,
    pub last: Time,
    pub started_by: Option<Origin>,
}

impl QuicConnection {
    fn new(pointer: u64, time: Time) -> QuicConnection {
        QuicConnection {
            pid: None,
            tid: None,
            pointer,
            server: false,
            rundown: false,
            inferred: false,
            created: time,
            handshake_start: None,
            handshake_done: None,
            local: None,
            remote: None,
            version: None,
            destination_cid: None,
            source_cid: None,
            streams: FastMap::default(),
            sent: None,
            received: None,
            close: None,
            error: None,
            closed: None,
            abandoned: false,
            last: time,
            started_by: None,
        }
    }
}

/// Every QUIC connection, by the address MsQuic logs.
#[derive(Debug, Default)]
pub struct Quic {
    pub connections: Vec<QuicConnection>,
    by_pointer: FastMap<u64, QuicId>,
    /// Connections by each remote end they had.
    by_remote: FastMap<Endpoint, Vec<QuicId>>,
    /// Connections no remote end was logged for.
    no_remote: BTreeSet<QuicId>,
}

impl Quic {
    /// The record of a connection address: the open one (or, for the events
    /// that follow a close — Destroyed after HandleClosed, the statistics —
    /// the latest), else one rebuilt from this event (its creation was not
    /// in the trace).
    fn record(&mut self, conn: u64, head: &Head, after_close: bool) -> QuicId {
        if let Some(&id) = self.by_pointer.get(&conn)
            && (after_close || self.connections[id].closed.is_none())
        {
            return id;
        }
        let mut c = QuicConnection::new(conn, head.time);
        c.inferred = true;
        c.pid = Head::known(head.pid).filter(|&p| p != 4);
        self.add(c)
    }

    fn add(&mut self, c: QuicConnection) -> QuicId {
        let id = self.connections.len();
        self.by_pointer.insert(c.pointer, id);
        self.no_remote.insert(id);
        self.connections.push(c);
        id
    }

    /// The connections that may have been to `remote`: those that had it
    /// and those whose remote end is unknown, in the order of the records.
    fn to_remote(&self, remote: &Endpoint) -> Vec<QuicId> {
        let had = self.by_remote.get(remote).map(Vec::as_slice).unwrap_or_default();
        let mut ids: Vec<QuicId> = had.iter().chain(&self.no_remote).copied().collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// Applies one event; origins of new connections come from `pools`.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, pools: &Pools) {
        let t = head.time;
        let pid = Head::known(head.pid);
        if let Event::Created { conn, server, rundown } = e {
            if let Some(&old) = self.by_pointer.get(&conn) {
                let old = &mut self.connections[old];
                if old.closed.is_none() && !(rundown && old.rundown) {
                    old.closed = Some(t);
                    old.abandoned = true;
                }
            }
            let mut c = QuicConnection::new(conn, t);
            c.server = server;
            c.rundown = rundown;
            // A rundown is logged by the recorder; a creation by the caller.
            if !rundown {
                c.pid = pid;
                c.tid = Head::known(head.tid);
                c.started_by = Some(pools.origin(head));
            }
            self.add(c);
            return;
        }
        let conn = match &e {
            Event::Closed { conn }
            | Event::HandshakeStart { conn }
            | Event::HandshakeComplete { conn }
            | Event::Address { conn, .. }
            | Event::Version { conn, .. }
            | Event::Shutdown { conn, .. }
            | Event::ShutdownComplete { conn }
            | Event::Stats { conn, .. }
            | Event::Flow { conn, .. }
            | Event::Cid { conn, .. }
            | Event::Stream { conn, .. }
            | Event::Error { conn, .. } => *conn,
            Event::Created { .. } => return,
        };
        let after_close = matches!(e, Event::Closed { .. } | Event::Stats { .. } | Event::ShutdownComplete { .. });
        let id = self.record(conn, head, after_close);
        let c = &mut self.connections[id];
        c.last = c.last.max(t);
        // A user process's id where the creation gave none (or System's, for msquic.sys workers).
        if c.pid.is_none_or(|p| p == 4) && pid.is_some_and(|p| p != 4) {
            c.pid = pid;
        }
        match e {
            Event::Closed { .. } => {
                c.closed.get_or_insert(t);
            }
            Event::HandshakeStart { .. } => {
                c.handshake_start.get_or_insert(t);
            }
            Event::HandshakeComplete { .. } => {
                c.handshake_done.get_or_insert(t);
            }
            Event::Address { local, endpoint, .. } => {
                let slot = if local { &mut c.local } else { &mut c.remote };
                let changed = *slot != Some(endpoint);
                *slot = Some(endpoint);
                if !local && changed {
                    self.no_remote.remove(&id);
                    let ids = self.by_remote.entry(endpoint).or_default();
                    if ids.last() != Some(&id) {
                        ids.push(id);
                    }
                }
            }
            Event::Version { version, .. } => c.version = Some(version),
            Event::Shutdown { close, .. } => {
                c.close.get_or_insert(close);
            }
            Event::ShutdownComplete { .. } => {}
            Event::Stats { sent, received, .. } => {
                c.sent = Some(c.sent.unwrap_or(0).max(sent));
                c.received = Some(c.received.unwrap_or(0).max(received));
            }
            Event::Flow { sent, bytes, .. } => {
                let slot = if sent { &mut c.sent } else { &mut c.received };
                *slot = Some(slot.unwrap_or(0).max(bytes));
            }
            Event::Cid { destination, cid, .. } => {
                let slot = if destination { &mut c.destination_cid } else { &mut c.source_cid };
                // The latest added is the one in use (the server's replaces the initial random one).
                *slot = Some(cid);
            }
            Event::Stream { id, .. } => {
                c.streams.insert(id, ());
            }
            Event::Error { text, .. } => c.error = Some(text),
            Event::Created { .. } => {}
        }
    }
}

/// What a QUIC connection adds to its `connections` row.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct QuicFacts {
    /// The connection id packets to the peer carry, in hex.
    pub connection_id: Option<String>,
    /// From the handshake's start (or the connection's creation) to its completion.
    pub handshake: Option<f64>,
    /// Streams opened or accepted.
    pub streams: Option<u64>,
    /// Who closed it, how (transport or application) and with which code.
    pub close_reason: Option<String>,
    /// The QUIC version (`1` for RFC 9000, `0x6b3343cf` for version 2).
    pub version: Option<String>,
}

/// Bytes as lower-case hex.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A QUIC transport error code's name (RFC 9000 §20.1).
fn transport_error(code: u64) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "NO_ERROR",
        "INTERNAL_ERROR",
        "CONNECTION_REFUSED",
        "FLOW_CONTROL_ERROR",
        "STREAM_LIMIT_ERROR",
        "STREAM_STATE_ERROR",
        "FINAL_SIZE_ERROR",
        "FRAME_ENCODING_ERROR",
        "TRANSPORT_PARAMETER_ERROR",
        "CONNECTION_ID_LIMIT_ERROR",
        "PROTOCOL_VIOLATION",
        "INVALID_TOKEN",
        "APPLICATION_ERROR",
        "CRYPTO_BUFFER_EXCEEDED",
        "KEY_UPDATE_ERROR",
        "AEAD_LIMIT_REACHED",
        "NO_VIABLE_PATH",
    ];
    match code {
        0..=16 => NAMES.get(code as usize).copied(),
        0x100..=0x1ff => Some("CRYPTO_ERROR"),
        _ => None,
    }
}

/// An HTTP/3 application error code's name (RFC 9114 §8.1).
fn http3_error(code: u64) -> Option<&'static str> {
    const NAMES: [&str; 17] = [
        "H3_NO_ERROR",
        "H3_GENERAL_PROTOCOL_ERROR",
        "H3_INTERNAL_ERROR",
        "H3_STREAM_CREATION_ERROR",
        "H3_CLOSED_CRITICAL_STREAM",
        "H3_FRAME_UNEXPECTED",
        "H3_FRAME_ERROR",
        "H3_EXCESSIVE_LOAD",
        "H3_ID_ERROR",
        "H3_SETTINGS_ERROR",
        "H3_MISSING_SETTINGS",
        "H3_REQUEST_REJECTED",
        "H3_REQUEST_CANCELLED",
        "H3_REQUEST_INCOMPLETE",
        "H3_MESSAGE_ERROR",
        "H3_CONNECT_ERROR",
        "H3_VERSION_FALLBACK",
    ];
    code.checked_sub(0x100).and_then(|i| NAMES.get(usize::try_from(i).ok()?).copied())
}

/// A QUIC_STATUS as Windows' MsQuic defines it (msquic_winuser.h).
fn quic_status(code: u64) -> Option<&'static str> {
    Some(match code {
        0 => "QUIC_STATUS_SUCCESS",
        0x8041_0000 => "QUIC_STATUS_HANDSHAKE_FAILURE",
        0x8041_0001 => "QUIC_STATUS_VER_NEG_ERROR",
        0x8041_0002 => "QUIC_STATUS_USER_CANCELED",
        0x8041_0003 => "QUIC_STATUS_INTERNAL_ERROR",
        0x8041_0004 => "QUIC_STATUS_PROTOCOL_ERROR",
        0x8041_0005 => "QUIC_STATUS_CONNECTION_IDLE",
        0x8041_0006 => "QUIC_STATUS_CONNECTION_TIMEOUT",
        0x8041_0007 => "QUIC_STATUS_ALPN_NEG_FAILURE",
        0x8041_0008 => "QUIC_STATUS_STREAM_LIMIT_REACHED",
        0x8000_4004 => "QUIC_STATUS_ABORTED",
        0x8007_04c9 => "QUIC_STATUS_CONNECTION_REFUSED",
        0x8007_04d0 => "QUIC_STATUS_UNREACHABLE",
        0x8007_2b18 => "QUIC_STATUS_TLS_ERROR",
        _ => return None,
    })
}

/// `application 0x100 (H3_NO_ERROR), closed by the peer`.
pub fn close_reason(c: &Close) -> String {
    let name = if c.status {
        quic_status(c.code)
    } else if c.transport {
        transport_error(c.code)
    } else {
        http3_error(c.code)
    };
    let kind = match (c.status, c.transport) {
        (true, _) => "status",
        (false, true) => "transport",
        (false, false) => "application",
    };
    let who = if c.remote { "the peer" } else { "this side" };
    match name {
        Some(n) => format!("{kind} 0x{:x} ({n}), closed by {who}", c.code),
        None => format!("{kind} 0x{:x}, closed by {who}", c.code),
    }
}

/// A QUIC version as the wire states it.
fn version_text(v: u32) -> String {
    if v == 1 { "1".to_string() } else { format!("0x{v:08x}") }
}

impl QuicConnection {
    pub fn facts(&self) -> QuicFacts {
        let handshake =
            self.handshake_done.map(|done| (done - self.handshake_start.unwrap_or(self.created)).max(0) as f64 / 1e7);
        QuicFacts {
            connection_id: self.destination_cid.as_deref().or(self.source_cid.as_deref()).map(hex),
            handshake,
            streams: Some(self.streams.len() as u64),
            close_reason: self.close.as_ref().map(close_reason).or_else(|| self.error.clone()),
            version: self.version.map(version_text),
        }
    }
}

/// A QUIC connection of any source, as the connections table shows it:
/// MsQuic's, or one of Chromium's QUIC sessions (see `netlog`).
#[derive(Clone, Debug)]
pub(crate) struct QuicRow {
    pub pid: Option<u32>,
    pub thread: Option<u32>,
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    pub server: Option<String>,
    pub origin: &'static str,
    pub state: &'static str,
    pub sent: u64,
    pub received: u64,
    pub start: Time,
    pub end: Option<Time>,
    pub pointer: Option<u64>,
    pub facts: QuicFacts,
    /// The UDP flow that carried it.
    pub flow: Option<ConnId>,
    /// The request layer that used it, where no UDP flow says so.
    pub layer: Option<Layer>,
    pub error: Option<String>,
}

impl Gatherer<'_> {
    /// The UDP flow of a QUIC connection: same process, local port and
    /// remote end, overlapping lives; the latest such.
    pub(crate) fn udp_flow(
        &self,
        pid: Option<u32>,
        local: Option<Endpoint>,
        remote: Option<Endpoint>,
        span: (Time, Time),
    ) -> Option<ConnId> {
        let remote = remote?;
        let port = local.map(|l| l.port).filter(|&p| p != 0);
        let candidates = self.candidates(Transport::Udp, port, Some(remote))?;
        self.latest_fitting(candidates, span.1, |c| {
            c.remote == Some(remote)
                && (pid.is_none_or(|p| p == 4) || same_pid(pid, c.pid.or(c.alt_pid)))
                && (port.is_none() || c.local.map(|l| l.port) == port)
                && overlaps(span, (c.opened, self.end_of(c)))
        })
    }

    /// The datagram sockets of a UDP flow: its process's, bound to its local
    /// port while it lived (empty for a TCP connection).
    pub(crate) fn flow_sockets(&self, flow: ConnId) -> Vec<crate::winsock::SockId> {
        let net = self.net;
        let c = net.connections.get(flow);
        let Some(port) = c.local.map(|l| l.port).filter(|&p| p != 0 && c.transport == Transport::Udp) else {
            return Vec::new();
        };
        let span = (c.opened, self.end_of(c));
        let on_port = self.datagram_sockets.get(&port).map(Vec::as_slice).unwrap_or_default();
        on_port
            .iter()
            .copied()
            .filter(|&id| {
                let k = net.sockets.get(id);
                same_pid(c.pid.or(c.alt_pid), k.pid) && overlaps(span, (k.created, k.closed.unwrap_or(net.trace_end)))
            })
            .collect()
    }

    /// The span a QUIC connection lived.
    fn quic_span(&self, q: &QuicConnection) -> (Time, Time) {
        (q.created, q.closed.unwrap_or(self.net.trace_end).max(q.last))
    }

    /// The QUIC connection of a WinHTTP HTTP/3 socket: created by its
    /// process (or by System, for msquic.sys) to its remote end while WebIO
    /// connected; on its connecting thread first, then the closest in time.
    pub(crate) fn webio_quic(&self, s: &crate::providers::webio::Socket) -> Option<QuicId> {
        s.http3?;
        let until = s.stop.or(s.closed).unwrap_or(self.net.trace_end);
        let mut best: Option<(bool, Time, QuicId)> = None;
        let quic = &self.net.quic;
        let candidates: Vec<QuicId> = match s.remote {
            Some(r) => quic.to_remote(&r),
            None => (0..quic.connections.len()).collect(),
        };
        for id in candidates {
            let q = &quic.connections[id];
            if q.server
                || q.created < s.start.saturating_sub(SLACK)
                || q.created > until.saturating_add(SLACK)
                || !(q.pid.is_none_or(|p| p == 4) || same_pid(s.pid, q.pid))
                || (s.remote.is_some() && q.remote.is_some() && s.remote != q.remote)
            {
                continue;
            }
            let same_thread = s.connect_tid.is_some() && q.tid == s.connect_tid;
            let key = (same_thread, -(q.created - s.start).abs(), id);
            if best.is_none_or(|b| (key.0, key.1) > (b.0, b.1)) {
                best = Some(key);
            }
        }
        best.map(|b| b.2)
    }

    /// The UDP flow under a WinHTTP HTTP/3 socket, through its QUIC connection.
    pub(crate) fn webio_quic_flow(&self, s: &crate::providers::webio::Socket) -> Option<ConnId> {
        let q = &self.net.quic.connections[self.webio_quic(s)?];
        self.udp_flow(q.pid.or(s.pid), q.local, q.remote.or(s.remote), self.quic_span(q))
    }

    /// MsQuic's connections as connection rows' material.
    fn msquic_rows(&self) -> Vec<QuicRow> {
        let net = self.net;
        let webio_users: Vec<QuicId> = net.webio.sockets.iter().filter_map(|s| self.webio_quic(s)).collect();
        net.quic
            .connections
            .iter()
            .enumerate()
            .map(|(id, q)| {
                let span = self.quic_span(q);
                let pid = q.pid;
                let flow = self.udp_flow(pid, q.local, q.remote, span);
                let failed = q.handshake_done.is_none() && q.close.as_ref().is_some_and(|c| c.status && c.code != 0);
                let state = match (q.closed, q.abandoned, failed) {
                    (_, true, _) => "abandoned",
                    (Some(_), _, true) => "failed",
                    (Some(_), _, false) => "closed",
                    (None, _, _) if q.handshake_done.is_none() && !q.rundown => "connecting",
                    (None, _, _) => "open",
                };
                let origin = match (q.rundown, q.inferred, q.server) {
                    (true, _, _) => "rundown",
                    (_, true, _) => "inferred",
                    (_, _, true) => "accept",
                    _ => "connect",
                };
                QuicRow {
                    pid,
                    thread: q.tid,
                    local: q.local,
                    remote: q.remote,
                    server: None,
                    origin,
                    state,
                    sent: q.sent.unwrap_or(0),
                    received: q.received.unwrap_or(0),
                    start: q.created,
                    end: q.closed,
                    pointer: Some(q.pointer),
                    facts: q.facts(),
                    flow,
                    layer: webio_users.contains(&id).then_some(Layer::WinHttp),
                    error: None,
                }
            })
            .collect()
    }

    /// QUIC connections in the connections table: a UDP flow that carried
    /// one becomes its row (protocol QUIC, its facts, its state); one whose
    /// flow the trace does not have gets a row of its own.
    pub(crate) fn quic_connections(&self, rows: &mut Vec<ConnectionRow>) {
        let net = self.net;
        let mut quic = self.msquic_rows();
        quic.extend(self.chromium_quic_rows());
        // The UDP rows, by what a flow's row is built from.
        let mut udp_rows: FastMap<(Time, Option<Endpoint>, Option<Endpoint>), Vec<usize>> = FastMap::default();
        for (i, r) in rows.iter().enumerate().filter(|(_, r)| r.protocol == "UDP") {
            udp_rows.entry((r.start, r.local, r.remote)).or_default().push(i);
        }
        let mut added = Vec::new();
        for q in quic {
            // MsQuic says which side began; a rundown's or an inferred connection's ends tell.
            let direction = match q.origin {
                "accept" => Direction::Inbound,
                "connect" => Direction::Outbound,
                _ => Direction::inferred(Transport::Udp, q.local.as_ref(), q.remote.as_ref()),
            };
            let server =
                q.server.clone().or_else(|| q.remote.and_then(|r| net.dns.name_of(&r.address)).map(|n| n.name.clone()));
            let row = q.flow.and_then(|f| {
                let c = net.connections.get(f);
                let free = udp_rows.get_mut(&(c.opened, c.local, c.remote))?;
                (!free.is_empty()).then(|| free.remove(0))
            });
            match row {
                Some(i) => {
                    let r = &mut rows[i];
                    r.protocol = "QUIC";
                    r.origin = q.origin;
                    r.direction = direction;
                    r.thread = r.thread.or(q.thread);
                    r.server = server.or(r.server.take());
                    r.state = q.state;
                    r.layer = r.layer.or(q.layer);
                    r.quic = Some(q.facts);
                    if r.pid.is_none() {
                        r.pid = q.pid;
                        r.process = self.process(q.pid, q.start);
                    }
                }
                None => {
                    let end = q.end;
                    added.push(ConnectionRow {
                        process: self.process(q.pid, q.start),
                        pid: q.pid,
                        thread: q.thread,
                        protocol: "QUIC",
                        direction,
                        local: q.local,
                        remote: q.remote,
                        server,
                        state: q.state,
                        origin: q.origin,
                        bytes_sent: q.sent,
                        bytes_received: q.received,
                        retransmits: 0,
                        start: q.start,
                        end: Some(end.unwrap_or(net.trace_end)),
                        open_at_end: end.is_none(),
                        layer: q.layer,
                        error: q.error,
                        pointer: q.pointer,
                        quic: Some(q.facts),
                    });
                }
            }
        }
        if !added.is_empty() {
            rows.extend(added);
            rows.sort_by_key(|r| r.start);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn close_reasons_name_their_codes() {
        let c = Close { transport: false, code: 0x100, remote: false, status: false };
        assert_eq!(close_reason(&c), "application 0x100 (H3_NO_ERROR), closed by this side");
        let c = Close { transport: true, code: 0x8041_0005, remote: false, status: true };
        assert_eq!(close_reason(&c), "status 0x80410005 (QUIC_STATUS_CONNECTION_IDLE), closed by this side");
        let c = Close { transport: true, code: 0x2, remote: true, status: false };
        assert_eq!(close_reason(&c), "transport 0x2 (CONNECTION_REFUSED), closed by the peer");
        let c = Close { transport: false, code: 0x7777, remote: true, status: false };
        assert_eq!(close_reason(&c), "application 0x7777, closed by the peer");
        assert_eq!(version_text(1), "1");
        assert_eq!(version_text(0x6b33_43cf), "0x6b3343cf");
    }
}
