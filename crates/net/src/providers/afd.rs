//! Microsoft-Windows-Winsock-AFD: sockets from create to close (bind,
//! connect, accept, send and receive, datagrams per peer).
//!
//! Every event names AFD's `Process` handle and `Endpoint`; the header PID is
//! often another process's (completions run anywhere), so the PID comes from
//! a handle → PID map learned at AfdCreate, whose payload and header are the
//! creating process's. Events come in enter/exit pairs (`EnterExit` 0/1):
//! sizes are counted once, from the phase that has them. Two send code paths
//! (`Location` 3073 and 3024: buffered and batched completions) repeat bytes
//! already counted, and are skipped.

use crate::address::Endpoint;
use crate::errors;
use crate::event::{Head, Props};
use crate::pools::Pools;
use crate::providers::ldap::Ldap;
use crate::report::{Gatherer, Layer, Phases, RequestRow, service_of, socket_local, socket_state};
use crate::transport::{Direction, Transport};
use crate::winsock::{SockId, SockOrigin, Socket, Sockets};

/// Send locations whose bytes were already counted by another event.
const DOUBLE_COUNTED_SENDS: [u32; 2] = [3073, 3024];

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 1000 AfdCreate.
    Create { family: Option<u16>, socket_type: Option<u32>, protocol: Option<u32>, pid: Option<u32> },
    /// 1001 AfdClose.
    Close,
    /// 1030 AfdBindWithAddress.
    Bind { address: Option<Endpoint> },
    /// 1018 AfdConnectWithAddress / 1021 AfdConnectExWithAddress.
    Connect { address: Option<Endpoint>, ex: bool },
    /// 1027 AfdAcceptExWithAddress: `Endpoint` is the listener.
    Accept { address: Option<Endpoint>, accepted: u64 },
    /// 1003 AfdSend / 1004 AfdReceive.
    Transfer { sent: bool, bytes: u64 },
    /// 1013 AfdSendMessageWithAddress / 1009, 1015 AfdReceive{From,Message}WithAddress.
    Datagram { sent: bool, bytes: u64, peer: Option<Endpoint> },
    /// 1032 AfdAbort.
    Abort,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    kind: Kind,
    exit: bool,
    location: u32,
    process: u64,
    endpoint: u64,
    status: Option<u32>,
}

impl Event {
    pub(crate) fn is_create(&self) -> bool {
        matches!(self.kind, Kind::Create { .. })
    }
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let exit = props.u64("EnterExit")? != 0;
    let address = || props.sockaddr("Address");
    let bytes = || props.u64("BufferLength").unwrap_or(0);
    let kind = match id {
        1000 => Kind::Create {
            family: props.u32("AddressFamily").map(|f| f as u16),
            socket_type: props.u32("SocketType"),
            protocol: props.u32("Protocol"),
            pid: props.u32("ProcessId").filter(|&p| p != 0),
        },
        1001 => Kind::Close,
        1030 => Kind::Bind { address: address() },
        1018 | 1021 => Kind::Connect { address: address(), ex: id == 1021 },
        1027 => Kind::Accept { address: address(), accepted: props.u64("AcceptEndpoint")? },
        1003 | 1004 => Kind::Transfer { sent: id == 1003, bytes: bytes() },
        1013 | 1009 | 1015 => Kind::Datagram { sent: id == 1013, bytes: bytes(), peer: address() },
        1032 => Kind::Abort,
        _ => return None,
    };
    Some(Event {
        kind,
        exit,
        location: props.u32("Location").unwrap_or(0),
        process: props.u64("Process")?,
        endpoint: props.u64("Endpoint")?,
        status: props.u32("Status").filter(|&s| s != 0),
    })
}

impl Sockets {
    /// Winsock's sockets (AFD): created, bound, connected, sent on, closed;
    /// a socket used on a thread with a pending LDAP search carried it.
    pub(crate) fn apply_afd(&mut self, head: &Head, e: Event, pools: &Pools, ldap: &mut Ldap) {
        let t = head.time;
        let header_pid = Head::known(head.pid);
        // A completion can be logged on a thread of another process: the
        // thread counts for the socket only when the header's process is its own.
        let tid_of = |s: &Socket| Head::known(head.tid).filter(|_| header_pid.is_none() || header_pid == s.pid);
        let tid = Head::known(head.tid);
        if let Kind::Create { family, socket_type, protocol, pid } = e.kind {
            // The create runs in the creating process: payload, else header.
            let pid = pid.or(Head::known(head.pid));
            if let Some(pid) = pid {
                self.learn_pid(e.process, pid);
            }
            let id = match self.open(e.process, e.endpoint) {
                // The exit half of the create pair.
                Some(id) if self.get(id).origin == SockOrigin::Created && self.get(id).created == t => id,
                Some(id) if e.exit && self.get(id).origin == SockOrigin::Created => id,
                Some(old) => {
                    self.close(old, t, None);
                    self.new_socket(SockOrigin::Created, &e, t, pid)
                }
                None => self.new_socket(SockOrigin::Created, &e, t, pid),
            };
            let origin = pools.origin(head);
            let s = self.get_mut(id);
            if s.started_by.is_none() {
                s.started_by = Some(origin);
            }
            s.family = s.family.or(family);
            s.socket_type = s.socket_type.or(socket_type);
            s.protocol = s.protocol.or(protocol);
            s.create_tid = s.create_tid.or(tid);
            s.used_by(tid, t);
            if let Some(status) = e.status {
                s.status = Some(status);
            }
            return;
        }
        let id = match (&e.kind, self.open(e.process, e.endpoint)) {
            (_, Some(id)) => id,
            // A close or abort of a socket never seen: nothing to rebuild.
            (Kind::Close | Kind::Abort, None) => return,
            (_, None) => {
                let pid = self.pid_of(e.process).or(Head::known(head.pid));
                self.new_socket(SockOrigin::Restored, &e, t, pid)
            }
        };
        if let Some(status) = e.status {
            self.get_mut(id).status = Some(status);
        }
        match e.kind {
            Kind::Create { .. } => {}
            Kind::Close => {
                if e.exit || self.get(id).closed.is_none() {
                    let tid = tid_of(self.get(id));
                    self.close(id, t, tid);
                    ldap.socket_closed(id);
                }
            }
            Kind::Bind { address } => {
                if let Some(a) = address {
                    self.set_local(id, a);
                }
                let s = self.get_mut(id);
                s.used_by(tid_of(s), t);
            }
            Kind::Connect { address, ex } => {
                let s = self.get_mut(id);
                if let Some(a) = address.filter(|a| !a.is_empty()) {
                    s.remote = Some(a);
                }
                s.connected.get_or_insert(t);
                let tid = tid_of(s);
                s.connect_tid = s.connect_tid.or(tid);
                s.connect_ex |= ex;
                s.used_by(tid, t);
                ldap.socket_used(head, id, self.get(id).pid);
            }
            Kind::Accept { address, accepted } => {
                self.get_mut(id).listening = true;
                let listener_local = self.get(id).local;
                let accepted_id = match self.open(e.process, accepted) {
                    Some(a) => a,
                    None => {
                        let pid = self.get(id).pid;
                        let mut s = Socket::new(SockOrigin::Accepted, e.process, accepted, t);
                        s.pid = pid;
                        self.add(s)
                    }
                };
                if let Some(local) = listener_local {
                    self.set_local(accepted_id, local);
                }
                let s = self.get_mut(accepted_id);
                s.origin = SockOrigin::Accepted;
                if let Some(a) = address {
                    s.remote = Some(a);
                }
                s.connected.get_or_insert(t);
                s.connect_tid = s.connect_tid.or(tid);
                s.used_by(tid, t);
            }
            Kind::Transfer { sent, bytes } => {
                let s = self.get_mut(id);
                s.used_by(tid_of(s), t);
                if !e.exit || (sent && DOUBLE_COUNTED_SENDS.contains(&e.location)) {
                    return;
                }
                if sent {
                    s.sent += bytes;
                    ldap.socket_used(head, id, self.get(id).pid);
                } else {
                    s.received += bytes;
                    if bytes > 0 {
                        ldap.socket_received(id, t);
                    }
                }
            }
            Kind::Datagram { sent, bytes, peer } => {
                // Sends are counted as they are posted (enter), receives as
                // they complete (exit), where the size is known.
                let counted = if sent { !e.exit } else { e.exit };
                let s = self.get_mut(id);
                let tid = tid_of(s);
                s.used_by(tid, t);
                if let (true, Some(peer)) = (counted, peer) {
                    let p = s.peer_mut(peer, t, sent);
                    p.last = t;
                    if let Some(tid) = tid
                        && !p.threads.contains(&tid)
                    {
                        p.threads.push(tid);
                    }
                    if sent {
                        p.sent += bytes;
                    } else {
                        p.received += bytes;
                    }
                }
                if sent {
                    ldap.socket_used(head, id, self.get(id).pid);
                } else if counted && bytes > 0 {
                    ldap.socket_received(id, t);
                }
            }
            Kind::Abort => {
                let s = self.get_mut(id);
                s.used_by(tid_of(s), t);
            }
        }
    }

    fn new_socket(&mut self, origin: SockOrigin, e: &Event, t: crate::event::Time, pid: Option<u32>) -> SockId {
        let mut s = Socket::new(origin, e.process, e.endpoint, t);
        s.pid = pid;
        self.add(s)
    }
}

/// Winsock sockets as request rows: one per stream socket that had a peer,
/// one per peer of a datagram socket, one per listening socket.
impl Gatherer<'_> {
    pub(crate) fn winsock_rows(&mut self, out: &mut Vec<RequestRow>) {
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
            let error = s.status.filter(|&st| st >= 0xC000_0000).map(errors::ntstatus);
            if s.is_datagram() && !s.peers.is_empty() {
                for p in &s.peers {
                    let conn = self.peer_connection(s, &p.remote, (p.first, p.last));
                    self.claim(conn, Layer::Winsock);
                    let connection = conn.map(|c| net.connections.get(c));
                    let local = socket_local(s, connection);
                    let direction = if p.began_by_peer { Direction::Inbound } else { Direction::Outbound };
                    let (server, alt_names) = self.names(None, Some(&p.remote.address));
                    let service =
                        if ldap { Some("CLDAP") } else { service_of(Transport::Udp, direction, local, Some(p.remote)) };
                    out.push(RequestRow {
                        process: process.clone(),
                        pid: s.pid,
                        threads: p.threads.clone(),
                        protocol: Some(s.ip_protocol().to_string()),
                        server,
                        alt_names,
                        ip: Some(p.remote.address),
                        port: Some(p.remote.port),
                        service: service.map(str::to_string),
                        network: p.remote.address.class(),
                        direction,
                        state: Some(socket_state(s, connection)),
                        bytes_sent: Some(p.sent),
                        bytes_received: Some(p.received),
                        end: Some(p.last),
                        error: error.clone(),
                        local,
                        connection: conn,
                        started_by: self.started_by([s.started_by.as_ref()], conn),
                        ..RequestRow::new(Layer::Winsock, p.first)
                    });
                }
                continue;
            }
            let connection = conn.map(|c| net.connections.get(c));
            let local = socket_local(s, connection);
            let transport = if s.ip_protocol() == "UDP" { Transport::Udp } else { Transport::Tcp };
            let end = Some(s.closed.unwrap_or(net.trace_end));
            let Some(remote) = s.remote else {
                // A socket that never had a peer is a request only when it
                // listened for them; a bind-only socket is nothing to show.
                if s.listening {
                    out.push(RequestRow {
                        process,
                        pid: s.pid,
                        threads: s.threads.clone(),
                        protocol: Some(s.ip_protocol().to_string()),
                        service: service_of(transport, Direction::Listen, local, None).map(str::to_string),
                        direction: Direction::Listen,
                        state: Some(socket_state(s, None)),
                        end,
                        open_at_end: s.closed.is_none(),
                        error,
                        local,
                        started_by: self.started_by([s.started_by.as_ref()], None),
                        ..RequestRow::new(Layer::Winsock, s.created)
                    });
                }
                continue;
            };
            self.claim(conn, Layer::Winsock);
            let direction = match (s.origin, connection) {
                (SockOrigin::Accepted, _) => Direction::Inbound,
                (SockOrigin::Created, _) => Direction::Outbound,
                (SockOrigin::Restored, Some(c)) => c.direction(),
                (SockOrigin::Restored, None) => Direction::inferred(transport, local.as_ref(), Some(&remote)),
            };
            let (server, alt_names) = self.names(None, Some(&remote.address));
            let service = if ldap { Some("LDAP") } else { service_of(transport, direction, local, Some(remote)) };
            out.push(RequestRow {
                process,
                pid: s.pid,
                threads: s.threads.clone(),
                protocol: Some(s.ip_protocol().to_string()),
                server,
                alt_names,
                ip: Some(remote.address),
                port: Some(remote.port),
                service: service.map(str::to_string),
                network: remote.address.class(),
                direction,
                state: Some(socket_state(s, connection)),
                bytes_sent: Some(s.sent),
                bytes_received: Some(s.received),
                end,
                open_at_end: s.closed.is_none(),
                error,
                local,
                connection: conn,
                started_by: self.started_by([s.started_by.as_ref()], conn),
                phases: Phases { connect: self.connect_span(conn, s.created), ..Phases::default() },
                ..RequestRow::new(Layer::Winsock, s.created)
            });
        }
    }
}
