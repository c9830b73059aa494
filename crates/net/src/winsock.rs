//! The Winsock layer: sockets as the AFD driver reports them, from create to
//! close, with the local address bound, the peer connected to, bytes through
//! the socket, and for datagram sockets one [`Peer`] per destination.

use nettrail_decode::fasthash::FastMap;

use crate::address::{Endpoint, family};
use crate::event::Time;

pub type SockId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SockOrigin {
    /// AfdCreate was seen.
    Created,
    /// Accepted from a listener (AcceptEx).
    Accepted,
    /// Its create was not seen: rebuilt from a later event.
    Restored,
}

/// Traffic of a datagram socket with one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub remote: Endpoint,
    pub sent: u64,
    pub received: u64,
    pub first: Time,
    pub last: Time,
    /// Threads that sent or received.
    pub threads: Vec<u32>,
    /// The first datagram came from the peer: the peer began the exchange.
    pub began_by_peer: bool,
}

#[derive(Clone, Debug)]
pub struct Socket {
    pub pid: Option<u32>,
    /// AFD's process handle (an EPROCESS address).
    pub process: u64,
    /// AFD's endpoint (reused after close).
    pub endpoint: u64,
    pub origin: SockOrigin,
    pub family: Option<u16>,
    pub socket_type: Option<u32>,
    pub protocol: Option<u32>,
    pub created: Time,
    pub create_tid: Option<u32>,
    pub local: Option<Endpoint>,
    pub remote: Option<Endpoint>,
    pub connected: Option<Time>,
    pub connect_tid: Option<u32>,
    /// Connected with ConnectEx (overlapped), as WinINet, WinHTTP and browsers do.
    pub connect_ex: bool,
    pub closed: Option<Time>,
    pub close_tid: Option<u32>,
    pub sent: u64,
    pub received: u64,
    pub status: Option<u32>,
    pub peers: Vec<Peer>,
    pub last: Time,
    /// Threads that used it (create, connect, send, receive), in first-use order.
    pub threads: Vec<u32>,
    /// Created and closed without an address, a port or a byte: nothing to show.
    pub inert: bool,
    /// Peers' connections were accepted from it: a listening socket.
    pub listening: bool,
    /// Its creation (AfdCreate: the creating thread's stack).
    pub started_by: Option<crate::pools::Origin>,
}

/// Socket types (ws2def.h).
pub fn socket_type_name(t: u32) -> Option<&'static str> {
    Some(match t {
        1 => "STREAM",
        2 => "DGRAM",
        3 => "RAW",
        4 => "RDM",
        5 => "SEQPACKET",
        _ => return None,
    })
}

impl Socket {
    pub fn new(origin: SockOrigin, process: u64, endpoint: u64, time: Time) -> Socket {
        Socket {
            pid: None,
            process,
            endpoint,
            origin,
            family: None,
            socket_type: None,
            protocol: None,
            created: time,
            create_tid: None,
            local: None,
            remote: None,
            connected: None,
            connect_tid: None,
            connect_ex: false,
            closed: None,
            close_tid: None,
            sent: 0,
            received: 0,
            status: None,
            peers: Vec::new(),
            last: time,
            threads: Vec::new(),
            inert: false,
            listening: false,
            started_by: None,
        }
    }

    /// A datagram socket (UDP), by type, protocol or how it was used.
    pub fn is_datagram(&self) -> bool {
        self.socket_type == Some(2) || self.protocol == Some(17) || (!self.peers.is_empty() && self.remote.is_none())
    }

    /// The protocol's name: TCP, UDP, RAW… for IP sockets; the family for
    /// others (HyperV, VSock, Bluetooth, …).
    pub fn ip_protocol(&self) -> &'static str {
        match self.family {
            None | Some(family::INET | family::INET6) => {}
            Some(family::HYPERV) => return "HyperV",
            Some(family::VSOCK) => return "VSock",
            Some(32) => return "Bluetooth",
            Some(26) => return "IrDA",
            Some(1) => return "Unix",
            Some(_) => return "other",
        }
        match (self.protocol, self.socket_type) {
            (Some(6), _) => "TCP",
            (Some(17), _) => "UDP",
            (Some(1), _) => "ICMP",
            (Some(58), _) => "ICMPv6",
            (_, Some(3)) | (Some(255), _) => "RAW",
            (_, Some(2)) => "UDP",
            _ if self.is_datagram() => "UDP",
            _ => "TCP",
        }
    }

    pub fn used_by(&mut self, tid: Option<u32>, time: Time) {
        self.last = self.last.max(time);
        if let Some(tid) = tid
            && !self.threads.contains(&tid)
        {
            self.threads.push(tid);
        }
    }

    /// The peer at `remote`, new if none yet; `sent` says whether this
    /// first datagram went out (else the peer began the exchange).
    pub fn peer_mut(&mut self, remote: Endpoint, time: Time, sent: bool) -> &mut Peer {
        let i = match self.peers.iter().position(|p| p.remote == remote) {
            Some(i) => i,
            None => {
                let began_by_peer = !sent;
                self.peers.push(Peer {
                    remote,
                    sent: 0,
                    received: 0,
                    first: time,
                    last: time,
                    threads: Vec::new(),
                    began_by_peer,
                });
                self.peers.len() - 1
            }
        };
        &mut self.peers[i]
    }
}

#[derive(Debug, Default)]
pub struct Sockets {
    list: Vec<Socket>,
    /// The open socket of each (process handle, endpoint).
    open: FastMap<(u64, u64), SockId>,
    /// AFD's process handles → process id, learned from AfdCreate.
    handle_pid: FastMap<u64, u32>,
}

impl Sockets {
    pub fn get(&self, id: SockId) -> &Socket {
        &self.list[id]
    }

    pub fn get_mut(&mut self, id: SockId) -> &mut Socket {
        &mut self.list[id]
    }

    pub fn iter(&self) -> impl Iterator<Item = (SockId, &Socket)> {
        self.list.iter().enumerate()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn open(&self, process: u64, endpoint: u64) -> Option<SockId> {
        self.open.get(&(process, endpoint)).copied()
    }

    pub fn add(&mut self, s: Socket) -> SockId {
        let id = self.list.len();
        self.open.insert((s.process, s.endpoint), id);
        self.list.push(s);
        id
    }

    /// Closes a socket and forgets its key (the endpoint will be reused).
    pub fn close(&mut self, id: SockId, time: Time, tid: Option<u32>) {
        let s = &mut self.list[id];
        if s.closed.is_none() {
            s.closed = Some(time);
            s.close_tid = tid;
        }
        s.last = s.last.max(time);
        s.inert = s.local.is_none_or(|l| l.port == 0)
            && s.remote.is_none()
            && s.sent == 0
            && s.received == 0
            && s.peers.is_empty();
        let key = (s.process, s.endpoint);
        if self.open.get(&key) == Some(&id) {
            self.open.remove(&key);
        }
    }

    /// Sets the local end (a bind without a port does not undo one with a port).
    pub fn set_local(&mut self, id: SockId, local: Endpoint) {
        let s = &mut self.list[id];
        if s.local.is_some_and(|l| l.port != 0) && local.port == 0 {
            return;
        }
        s.local = Some(local);
    }

    pub fn learn_pid(&mut self, process: u64, pid: u32) {
        self.handle_pid.insert(process, pid);
    }

    pub fn pid_of(&self, process: u64) -> Option<u32> {
        self.handle_pid.get(&process).copied()
    }
}
