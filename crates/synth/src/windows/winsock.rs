//! A process's sockets through Winsock, as AFD and TCPIP log them together:
//! a TCP connect is AFD create → bind → connect with TCPIP's connect request
//! on the same thread, the handshake's completion later in DPC context; a
//! send posts on the sender's thread and is transmitted from DPCs; data
//! arrives in DPC context and AFD completes the receive on the thread that
//! picks up the completion. UDP: a send is AFD's send then TCPIP's on the
//! same thread; a receive is TCPIP's delivery then AFD's completion.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use super::{DPC, Machine, Socket, Tcb, Tid, sockaddr, status};

/// IPPROTO and socket type numbers (ws2def.h).
const SOCK_STREAM: u32 = 1;
const SOCK_DGRAM: u32 = 2;
const IPPROTO_TCP: u32 = 6;
const IPPROTO_UDP: u32 = 17;

/// How a TCP connect is made.
#[derive(Clone, Debug)]
pub struct Dial {
    pub remote: SocketAddr,
    /// ConnectEx (bind first, overlapped) rather than connect().
    pub connect_ex: bool,
    /// The SYN-ACK (or RST) comes back this much later (ms).
    pub rtt: f64,
    /// Reuse these addresses instead of fresh ones (slot reuse).
    pub tcb: Option<u64>,
    pub endpoint: Option<u64>,
    pub port: Option<u16>,
    /// Where the connect's completion is logged.
    pub completion: Tid,
    /// A kernel-mode client (SMB, Http.sys): no AFD socket.
    pub kernel: bool,
}

impl Dial {
    /// ConnectEx with a 12 ms round trip, completion in DPC context.
    pub fn new(remote: SocketAddr) -> Dial {
        Dial {
            remote,
            connect_ex: true,
            rtt: 12.0,
            tcb: None,
            endpoint: None,
            port: None,
            completion: DPC,
            kernel: false,
        }
    }

    /// Plain blocking connect().
    pub fn blocking(mut self) -> Dial {
        self.connect_ex = false;
        self
    }

    pub fn rtt(mut self, rtt: f64) -> Dial {
        self.rtt = rtt;
        self
    }

    pub fn reusing(mut self, tcb: u64, endpoint: u64, port: u16) -> Dial {
        (self.tcb, self.endpoint, self.port) = (Some(tcb), Some(endpoint), Some(port));
        self
    }

    pub fn completion(mut self, th: Tid) -> Dial {
        self.completion = th;
        self
    }

    pub fn kernel(mut self) -> Dial {
        self.kernel = true;
        self
    }
}

/// Why a connect fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// A RST answers the SYN.
    Refused,
    /// No route: fails at once.
    Unreachable,
    /// No answer: TCP gives up after its SYN retransmissions (3 + 6 + 12 s).
    Timeout,
}

/// A TCP connection and, for user-mode clients, its socket.
#[derive(Clone, Debug)]
pub struct TcpConn {
    pub socket: Option<Socket>,
    pub tcb: Tcb,
    connect_ex: bool,
}

/// A UDP socket: AFD's endpoint, TCPIP's endpoint, the bound address.
#[derive(Clone, Debug)]
pub struct UdpSock {
    pub socket: Socket,
    pub endpoint: u64,
    pub local: SocketAddr,
}

/// How a datagram is received.
#[derive(Clone, Copy, Debug, Default)]
pub struct UdpReceive {
    /// WSARecvMsg (AFD 1015) rather than recvfrom (1009).
    pub message: bool,
    /// A blocking receive: AFD completes on the caller's thread.
    pub synchronous: bool,
    /// TCPIP logs local and remote swapped (as Windows sometimes does).
    pub swapped: bool,
}

fn unspecified(v6: bool, port: u16) -> SocketAddr {
    let ip = if v6 { IpAddr::V6(Ipv6Addr::UNSPECIFIED) } else { IpAddr::V4(Ipv4Addr::UNSPECIFIED) };
    SocketAddr::new(ip, port)
}

fn family(address: SocketAddr) -> u16 {
    if address.is_ipv6() { crate::sockaddr::family::INET6 } else { crate::sockaddr::family::INET }
}

impl Machine {
    /// socket() → bind → connect: AFD's create, bind and connect and TCPIP's
    /// connect request, all on `th`; nothing completes yet.
    pub fn tcp_open(&mut self, at: f64, th: Tid, dial: &Dial) -> Result<TcpConn, crate::SynthError> {
        let port = match dial.port {
            Some(p) => p,
            None => self.port(),
        };
        let tcb_pointer = match dial.tcb {
            Some(t) => t,
            None => self.pool(),
        };
        let local = SocketAddr::new(self.local_ip(dial.remote.ip()), port);
        let socket = if dial.kernel {
            None
        } else {
            let kind = (family(dial.remote), SOCK_STREAM, IPPROTO_TCP);
            let s = self.afd_create(at, th, kind, dial.endpoint)?;
            self.afd_bind(at + 0.02, th, &s, &sockaddr(unspecified(dial.remote.is_ipv6(), port)))?;
            self.afd_connect(at + 0.04, th, &s, &sockaddr(dial.remote), dial.connect_ex)?;
            Some(s)
        };
        let tcb = Tcb::new(tcb_pointer, th.0, local, dial.remote);
        self.tcp_request_connect(at + 0.05, th, &tcb)?;
        Ok(TcpConn { socket, tcb, connect_ex: dial.connect_ex })
    }

    /// A connect that succeeds: the handshake completes one round trip later.
    pub fn tcp_connect(&mut self, at: f64, th: Tid, dial: &Dial) -> Result<TcpConn, crate::SynthError> {
        let c = self.tcp_open(at, th, dial)?;
        self.tcp_connect_complete(at + dial.rtt, dial.completion, &c.tcb)?;
        Ok(c)
    }

    /// A connect that fails; returns the connection (its socket still open)
    /// and when the failure was reported.
    pub fn tcp_connect_failing(
        &mut self,
        at: f64,
        th: Tid,
        dial: &Dial,
        failure: Failure,
    ) -> Result<(TcpConn, f64), crate::SynthError> {
        let c = self.tcp_open(at, th, dial)?;
        let (end, why) = match failure {
            Failure::Refused => (at + dial.rtt, status::CONNECTION_REFUSED),
            Failure::Unreachable => (at + 0.3, status::NETWORK_UNREACHABLE),
            Failure::Timeout => (at + 21_000.0, status::IO_TIMEOUT),
        };
        if failure == Failure::Timeout {
            self.tcp_connect_timeout(end, DPC, &c.tcb)?;
        }
        self.tcp_connect_failed(end, dial.completion, &c.tcb, why)?;
        if let Some(s) = &c.socket {
            self.afd_connect_failed(end + 0.02, dial.completion, s, &sockaddr(dial.remote), (c.connect_ex, why))?;
        }
        Ok((c, end + 0.02))
    }

    /// The server side of an accepted connection: TCPIP's accept and AFD's
    /// AcceptEx completion on the same thread. Without a listener socket
    /// (Http.sys) only TCPIP logs, for System.
    pub fn tcp_accepted(
        &mut self,
        at: f64,
        th: Tid,
        listener: Option<&Socket>,
        local: SocketAddr,
        remote: SocketAddr,
    ) -> Result<TcpConn, crate::SynthError> {
        let pointer = self.pool();
        let owner = listener.map_or(th.0, |l| l.pid);
        let tcb = Tcb::new(pointer, owner, local, remote);
        self.tcp_accept_complete(at, th, &tcb)?;
        let socket = match listener {
            Some(l) => {
                let accepted = Socket { pid: l.pid, process: l.process, endpoint: self.pool() };
                self.afd_accept(at + 0.01, th, l, &accepted, &sockaddr(remote))?;
                Some(accepted)
            }
            None => None,
        };
        Ok(TcpConn { socket, tcb, connect_ex: false })
    }

    /// A TCP connection of `pid` that exists before the trace: its socket
    /// and TCB, with no events (TCPIP's rundown may log it).
    pub fn tcp_existing(&mut self, pid: u32, local: SocketAddr, remote: SocketAddr) -> TcpConn {
        let socket = Socket { pid, process: self.eprocess(pid), endpoint: self.pool() };
        let tcb = Tcb::new(self.pool(), pid, local, remote);
        TcpConn { socket: Some(socket), tcb, connect_ex: true }
    }

    /// A listening socket (AFD create and bind on `th`).
    pub fn tcp_listen(&mut self, at: f64, th: Tid, local: SocketAddr) -> Result<Socket, crate::SynthError> {
        let s = self.afd_create(at, th, (family(local), SOCK_STREAM, IPPROTO_TCP), None)?;
        self.afd_bind(at + 0.02, th, &s, &sockaddr(local))?;
        Ok(s)
    }

    /// send(): TCPIP posts the bytes and AFD completes on `th`; the segments
    /// leave in DPC context.
    pub fn tcp_send(&mut self, at: f64, th: Tid, c: &mut TcpConn, bytes: u32) -> Result<f64, crate::SynthError> {
        self.tcp_send_posted(at, th, &mut c.tcb, bytes)?;
        if let Some(s) = &c.socket {
            let s = s.clone();
            self.afd_send(at + 0.01, th, &s, bytes, false)?;
        }
        self.tcp_transmitted(at + 0.2, DPC, &mut c.tcb, bytes)?;
        Ok(at + 0.2)
    }

    /// Data arrives (DPC) and AFD completes the receive on `completion`.
    pub fn tcp_receive(
        &mut self,
        at: f64,
        c: &mut TcpConn,
        bytes: u32,
        completion: Tid,
    ) -> Result<f64, crate::SynthError> {
        let mut left = bytes;
        let mut t = at;
        while left > 0 {
            let segment = left.min(16_384);
            self.tcp_received(t, DPC, &mut c.tcb, segment)?;
            left -= segment;
            t += 0.03;
        }
        if let Some(s) = &c.socket {
            let s = s.clone();
            self.afd_receive(t, completion, &s, bytes)?;
        }
        Ok(t)
    }

    /// A TLS 1.3 handshake: ClientHello out, the server's flight in, the
    /// client's Finished out (sizes as seen on the wire).
    pub fn tls_handshake(
        &mut self,
        at: f64,
        th: Tid,
        c: &mut TcpConn,
        completion: Tid,
    ) -> Result<f64, crate::SynthError> {
        let rtt = 12.0;
        self.tcp_send(at, th, c, 517)?;
        let t = self.tcp_receive(at + rtt, c, 2_893, completion)?;
        self.tcp_send(t + 0.5, completion, c, 80)
    }

    /// closesocket(): TCPIP's close request and AFD's close on `th`, the FIN
    /// exchange completing later.
    pub fn tcp_close(&mut self, at: f64, th: Tid, c: &TcpConn) -> Result<f64, crate::SynthError> {
        self.tcp_close_request(at, th, &c.tcb)?;
        if let Some(s) = &c.socket {
            let s = s.clone();
            self.afd_close(at + 0.01, th, &s)?;
        }
        self.tcp_shutdown(at + 0.4, &c.tcb)?;
        Ok(at + 0.4)
    }

    /// `socket(AF_INET or AF_INET6, SOCK_DGRAM)` and bind to a port (an ephemeral one
    /// unless given).
    pub fn udp_open(&mut self, at: f64, th: Tid, v6: bool, port: Option<u16>) -> Result<UdpSock, crate::SynthError> {
        let port = match port {
            Some(p) => p,
            None => self.port(),
        };
        let any = unspecified(v6, port);
        let socket = self.afd_create(at, th, (family(any), SOCK_DGRAM, IPPROTO_UDP), None)?;
        self.afd_bind(at + 0.02, th, &socket, &sockaddr(any))?;
        let ip = if v6 { IpAddr::V6(self.ipv6) } else { IpAddr::V4(self.ipv4) };
        Ok(UdpSock { socket, endpoint: self.pool(), local: SocketAddr::new(ip, port) })
    }

    /// sendto(): AFD's send then TCPIP's, on the sender's thread.
    pub fn udp_send(
        &mut self,
        at: f64,
        th: Tid,
        u: &UdpSock,
        remote: SocketAddr,
        bytes: u32,
    ) -> Result<f64, crate::SynthError> {
        self.afd_send_to(at, th, &u.socket, &sockaddr(remote), bytes)?;
        self.udp_endpoint_send(at + 0.01, th, (u.endpoint, u.socket.pid), u.local, remote, bytes)?;
        Ok(at + 0.01)
    }

    /// A datagram from `remote`: TCPIP delivers it in DPC context (header ids
    /// 0), then AFD completes the receive there, or on `th` for a blocking one.
    pub fn udp_receive(
        &mut self,
        at: f64,
        th: Tid,
        u: &UdpSock,
        remote: SocketAddr,
        bytes: u32,
        how: UdpReceive,
    ) -> Result<f64, crate::SynthError> {
        let ends = if how.swapped { (remote, u.local) } else { (u.local, remote) };
        self.udp_endpoint_receive(at, DPC, (u.endpoint, u.socket.pid), ends, bytes)?;
        let completion = if how.synchronous { th } else { DPC };
        let s = u.socket.clone();
        self.afd_receive_from(at + 0.02, completion, &s, &sockaddr(remote), (bytes, how.message, how.synchronous))?;
        Ok(at + 0.02)
    }

    /// closesocket() of a UDP socket: AFD's close and TCPIP's on `th`.
    pub fn udp_close(&mut self, at: f64, th: Tid, u: &UdpSock) -> Result<f64, crate::SynthError> {
        let s = u.socket.clone();
        self.afd_close(at, th, &s)?;
        self.udp_endpoint_close(at + 0.01, th, u.endpoint, u.local)?;
        Ok(at + 0.01)
    }
}
