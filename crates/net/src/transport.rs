//! The transport layer: TCP connections and UDP flows, whichever provider
//! reported them (classic kernel TcpIp/UdpIp, Microsoft-Windows-Kernel-
//! Network, Microsoft-Windows-TCPIP). A record lives from its first sign
//! (connect, accept, rundown, or first data when the start was missed) to its
//! close; keys (TCB pointers, 5-tuples) are reused over time, so every lookup
//! finds the most recent record with the key.

use nettrail_decode::fasthash::FastMap;

use crate::address::{Address, Endpoint};
use crate::event::Time;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Transport {
    Tcp,
    Udp,
}

impl Transport {
    pub fn name(self) -> &'static str {
        match self {
            Transport::Tcp => "TCP",
            Transport::Udp => "UDP",
        }
    }
}

/// How a record began.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// This side connected.
    Connect,
    /// This side accepted (a server).
    Accept,
    /// It existed when the trace began (TCPIP rundown).
    Rundown,
    /// Its start was not seen (before the trace, or lost): it began with its first event.
    Inferred,
}

impl Origin {
    pub fn name(self) -> &'static str {
        match self {
            Origin::Connect => "connect",
            Origin::Accept => "accept",
            Origin::Rundown => "rundown",
            Origin::Inferred => "inferred",
        }
    }
}

/// Who began a flow: this machine (outbound), a peer (inbound), or nobody
/// yet (a socket waiting for peers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Direction {
    Outbound,
    Inbound,
    Listen,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Outbound => "outbound",
            Direction::Inbound => "inbound",
            Direction::Listen => "listen",
        }
    }

    /// The direction of a flow whose start was not seen, from its ends: a
    /// flow to a multicast or broadcast local address, or from a peer's
    /// ephemeral port to a well-known local port, was begun by the peer.
    pub fn inferred(transport: Transport, local: Option<&Endpoint>, remote: Option<&Endpoint>) -> Direction {
        let Some(local) = local else { return Direction::Outbound };
        if local.address.is_group() {
            return Direction::Inbound;
        }
        let Some(remote) = remote else { return Direction::Outbound };
        let known = |port: u16| match transport {
            Transport::Tcp => crate::services::tcp(port).is_some(),
            Transport::Udp => crate::services::udp(port).is_some(),
        };
        if known(local.port) && !known(remote.port) && remote.port >= 1024 {
            Direction::Inbound
        } else {
            Direction::Outbound
        }
    }
}

/// How a record ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ending {
    Closed,
    /// The connect attempt failed (refused, unreachable); its status says why.
    Failed,
    /// The connect attempt timed out.
    TimedOut,
    /// Reset (abortive close).
    Aborted,
    /// Its key was reused while it was open: its close was lost.
    Abandoned,
}

/// NTSTATUS codes that name how a connect ended.
const STATUS_IO_TIMEOUT: u32 = 0xC000_00B5;
const STATUS_CONNECTION_REFUSED: u32 = 0xC000_0236;
const STATUS_CONNECTION_RESET: u32 = 0xC000_020D;
const STATUS_CONNECTION_ABORTED: u32 = 0xC000_0241;

/// The transport's state of a connection or socket, in the words every
/// table uses: `connecting`, `open` (TCP), `active` (UDP, not closed),
/// `closed`, `reset`, `refused`, `timed out`, `failed` (other connect
/// failures: the error column says which), `abandoned` (its close was lost).
pub fn state_name(transport: Transport, ending: Option<Ending>, status: Option<u32>, connected: bool) -> &'static str {
    match ending {
        Some(Ending::Closed) => "closed",
        Some(Ending::TimedOut) => "timed out",
        Some(Ending::Aborted) => "reset",
        Some(Ending::Abandoned) => "abandoned",
        Some(Ending::Failed) => failure_state(status).unwrap_or("failed"),
        None if transport == Transport::Udp => "active",
        None if !connected => "connecting",
        None => "open",
    }
}

/// The state a failure status names, where it names one.
pub fn failure_state(status: Option<u32>) -> Option<&'static str> {
    match status? {
        STATUS_IO_TIMEOUT => Some("timed out"),
        STATUS_CONNECTION_REFUSED => Some("refused"),
        STATUS_CONNECTION_RESET | STATUS_CONNECTION_ABORTED => Some("reset"),
        _ => None,
    }
}

/// Bytes in each direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bytes {
    pub sent: u64,
    pub received: u64,
}

impl Bytes {
    pub fn any(&self) -> bool {
        self.sent != 0 || self.received != 0
    }
}

pub type ConnId = usize;

#[derive(Clone, Debug)]
pub struct Connection {
    pub transport: Transport,
    pub origin: Origin,
    pub pid: Option<u32>,
    /// The pid came from a payload or a synchronous caller's header.
    pub pid_sure: bool,
    /// The thread that connected or accepted.
    pub tid: Option<u32>,
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    /// TCPIP's TCB or UDP endpoint pointer.
    pub pointer: Option<u64>,
    pub opened: Time,
    pub connected: Option<Time>,
    pub shutdown: Option<Time>,
    pub closed: Option<Time>,
    pub ending: Option<Ending>,
    /// The last event that touched it.
    pub last: Time,
    /// The last non-zero status (NTSTATUS) or failure code.
    pub status: Option<u32>,
    /// Bytes as the kernel's TcpIp/UdpIp or Kernel-Network events count them.
    pub kernel: Bytes,
    /// Bytes as Microsoft-Windows-TCPIP counts them.
    pub tcpip: Bytes,
    /// TCPIP's send-posted bytes (what callers handed to TCP).
    pub posted: u64,
    pub retransmits: u64,
    /// The DNS name TCPIP connected by (its name-resolution context).
    pub dns_name: Option<String>,
    /// The first header PID seen on data events: the best guess when no payload names the process.
    pub alt_pid: Option<u32>,
    /// The connect request on the caller's thread.
    pub started_by: Option<crate::pools::Origin>,
}

impl Connection {
    pub fn new(transport: Transport, origin: Origin, time: Time) -> Connection {
        Connection {
            transport,
            origin,
            pid: None,
            pid_sure: false,
            tid: None,
            local: None,
            remote: None,
            pointer: None,
            opened: time,
            connected: None,
            shutdown: None,
            closed: None,
            ending: None,
            last: time,
            status: None,
            kernel: Bytes::default(),
            tcpip: Bytes::default(),
            posted: 0,
            retransmits: 0,
            dns_name: None,
            alt_pid: None,
            started_by: None,
        }
    }

    /// The byte counts to show: TCPIP's where it counted any, else the kernel's.
    /// (The two count the same payload; adding them would double it.)
    pub fn bytes(&self) -> Bytes {
        if self.tcpip.any() { self.tcpip } else { self.kernel }
    }

    pub fn is_open(&self) -> bool {
        self.closed.is_none()
    }

    /// Who began it: seen connecting or accepting, else inferred from its ends.
    pub fn direction(&self) -> Direction {
        match self.origin {
            Origin::Connect => Direction::Outbound,
            Origin::Accept => Direction::Inbound,
            Origin::Rundown | Origin::Inferred => {
                Direction::inferred(self.transport, self.local.as_ref(), self.remote.as_ref())
            }
        }
    }

    /// Its state, as [`state_name`] words it.
    pub fn state(&self) -> &'static str {
        let connected = self.connected.is_some() || self.origin != Origin::Connect;
        state_name(self.transport, self.ending, self.status, connected)
    }

    /// Sets the process from a payload or a synchronous caller (`sure`), or
    /// from a header that may lie (kept only until something sure comes).
    /// System (4) never replaces a user process.
    pub fn set_pid(&mut self, pid: Option<u32>, sure: bool) {
        let Some(pid) = pid.filter(|&p| p != 0 && p != u32::MAX) else { return };
        let replace = match self.pid {
            None => true,
            Some(current) => sure && pid != 4 && (!self.pid_sure || current == 4),
        };
        if replace {
            self.pid = Some(pid);
        }
        self.pid_sure |= sure && self.pid == Some(pid);
    }

    pub fn close(&mut self, time: Time, ending: Ending) {
        if self.closed.is_none() {
            self.closed = Some(time);
            self.ending = Some(ending);
        }
        self.touch(time);
    }

    pub fn touch(&mut self, time: Time) {
        self.last = self.last.max(time);
    }

    /// When it ended: its close, or for a UDP flow that was never closed its
    /// last datagram; `None` when it was open at the end of the trace.
    pub fn end(&self) -> Option<Time> {
        let close = match (self.closed, self.shutdown) {
            (Some(c), Some(s)) => Some(c.max(s)),
            (c, _) => c,
        };
        close.or((self.transport == Transport::Udp).then_some(self.last))
    }
}

/// A 5-tuple (with the transport).
pub type Flow = (Transport, Endpoint, Endpoint);

/// The key of a flow. A UDP socket is its local port: datagrams to its
/// unicast address and to a multicast group it joined are one conversation.
pub fn flow(transport: Transport, local: Endpoint, remote: Endpoint) -> Flow {
    match transport {
        Transport::Tcp => (transport, local, remote),
        Transport::Udp => (transport, Endpoint::new(Address::Other { family: 0 }, local.port), remote),
    }
}

/// Every transport record, with indexes by each key the providers use.
#[derive(Debug, Default)]
pub struct Connections {
    list: Vec<Connection>,
    by_pointer: FastMap<u64, ConnId>,
    by_flow: FastMap<Flow, ConnId>,
    /// UDP records of a TCPIP endpoint pointer, one per peer.
    by_udp_endpoint: FastMap<u64, Vec<ConnId>>,
    by_local_port: FastMap<(Transport, u16), Vec<ConnId>>,
    by_remote: FastMap<(Transport, Endpoint), Vec<ConnId>>,
}

impl Connections {
    pub fn get(&self, id: ConnId) -> &Connection {
        &self.list[id]
    }

    pub fn get_mut(&mut self, id: ConnId) -> &mut Connection {
        &mut self.list[id]
    }

    pub fn iter(&self) -> impl Iterator<Item = (ConnId, &Connection)> {
        self.list.iter().enumerate()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Adds a record and indexes it by the keys it has.
    pub fn add(&mut self, c: Connection) -> ConnId {
        let id = self.list.len();
        let (pointer, transport) = (c.pointer, c.transport);
        self.list.push(c);
        self.index_addresses(id, true, true);
        if let Some(p) = pointer {
            match transport {
                Transport::Tcp => {
                    self.by_pointer.insert(p, id);
                }
                Transport::Udp => self.by_udp_endpoint.entry(p).or_default().push(id),
            }
        }
        id
    }

    /// Gives a record found by its 5-tuple the pointer TCPIP knows it by.
    pub fn set_pointer(&mut self, id: ConnId, pointer: u64) {
        let c = &mut self.list[id];
        c.pointer = Some(pointer);
        match c.transport {
            Transport::Tcp => {
                self.by_pointer.insert(pointer, id);
            }
            Transport::Udp => self.by_udp_endpoint.entry(pointer).or_default().push(id),
        }
    }

    /// Indexes a record's addresses: the local end, the remote end, or both.
    fn index_addresses(&mut self, id: ConnId, local: bool, remote: bool) {
        let c = &self.list[id];
        let (t, opened) = (c.transport, c.opened);
        if let (Some(l), Some(r)) = (c.local, c.remote) {
            self.by_flow.insert(flow(t, l, r), id);
        }
        // Lists stay in order of opening (records can learn addresses late).
        let list = &self.list;
        let insert = |ids: &mut Vec<ConnId>| {
            let at = ids.partition_point(|&i| list[i].opened <= opened);
            ids.insert(at, id);
        };
        if let (true, Some(l)) = (local, c.local) {
            insert(self.by_local_port.entry((t, l.port)).or_default());
        }
        if let (true, Some(r)) = (remote, c.remote) {
            insert(self.by_remote.entry((t, r)).or_default());
        }
    }

    /// Sets addresses a record did not have yet, and indexes them.
    pub fn learn_addresses(&mut self, id: ConnId, local: Option<Endpoint>, remote: Option<Endpoint>) {
        let c = &mut self.list[id];
        let mut local_changed = false;
        let mut remote_changed = false;
        if c.local.is_none()
            && let Some(l) = local.filter(|l| !l.is_empty())
        {
            c.local = Some(l);
            local_changed = true;
        }
        if c.remote.is_none()
            && let Some(r) = remote.filter(|r| !r.is_empty())
        {
            c.remote = Some(r);
            remote_changed = true;
        }
        if local_changed || remote_changed {
            self.index_addresses(id, local_changed, remote_changed);
        }
    }

    /// The most recent TCP record with this TCB pointer.
    pub fn by_pointer(&self, pointer: u64) -> Option<ConnId> {
        self.by_pointer.get(&pointer).copied()
    }

    /// The most recent record of a flow (see [`flow`]).
    pub fn by_flow(&self, transport: Transport, local: Endpoint, remote: Endpoint) -> Option<ConnId> {
        self.by_flow.get(&flow(transport, local, remote)).copied()
    }

    /// The UDP records of a TCPIP endpoint pointer.
    pub fn by_udp_endpoint(&self, pointer: u64) -> &[ConnId] {
        self.by_udp_endpoint.get(&pointer).map_or(&[], Vec::as_slice)
    }

    /// Records that used this local port, oldest first.
    pub fn by_local_port(&self, transport: Transport, port: u16) -> &[ConnId] {
        self.by_local_port.get(&(transport, port)).map_or(&[], Vec::as_slice)
    }

    /// Records to this remote endpoint, oldest first.
    pub fn by_remote(&self, transport: Transport, remote: &Endpoint) -> &[ConnId] {
        self.by_remote.get(&(transport, *remote)).map_or(&[], Vec::as_slice)
    }
}
