//! Microsoft-Windows-TCPIP: what tcpip.sys logs for a TCP connection (its
//! TCB) and a UDP endpoint. Only a connect request (1002), DNS-named
//! connects (1382) and sends posted by the caller (1159, 1156) run on the
//! caller's thread; completions, transfers and receives run wherever the
//! packet or timer was handled, usually DPC context; rundown (1300) is
//! logged by the recorder's thread while the session starts.

use std::net::SocketAddr;

use crate::fields;
use crate::value::Val;

use super::{DPC, Machine, Tid, sockaddr, spec, status};

const PROVIDER: &str = "Microsoft-Windows-TCPIP";

/// TCP_CONNECTION_STATE values.
const SYN_SENT: u32 = 2;
const ESTABLISHED: u32 = 4;
/// The default compartment.
const COMPARTMENT: u32 = 1;

/// A TCP connection's control block, as TCPIP logs it.
#[derive(Clone, Debug)]
pub struct Tcb {
    pub pointer: u64,
    /// The owning process, as TCPIP's payloads give it.
    pub pid: u32,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    snd_nxt: u32,
    rcv_nxt: u32,
}

impl Tcb {
    pub fn new(pointer: u64, pid: u32, local: SocketAddr, remote: SocketAddr) -> Tcb {
        // Initial sequence numbers are random; these are derived from the pointer.
        let isn = (pointer as u32).rotate_left(13) ^ 0x5bd1_e995;
        Tcb { pointer, pid, local, remote, snd_nxt: isn, rcv_nxt: isn.rotate_left(7) }
    }

    fn addresses(&self) -> crate::Fields {
        fields![("LocalAddress", sockaddr(self.local)), ("RemoteAddress", sockaddr(self.remote))]
    }

    /// Fields of the connection-state events (1017, 1031, 1033, 1034, 1038, 1044, 1045).
    fn state(&self, status: u32) -> crate::Fields {
        self.addresses()
            .with("Status", status)
            .with("ProcessId", self.pid)
            .with("Compartment", COMPARTMENT)
            .with("Tcb", Val::Ptr(self.pointer))
            .maybe("ProcessStartKey", process_start_key(self.pid))
    }
}

/// The ProcessStartKey that versions 1 and later of TCPIP's connection
/// events carry (Windows 10 2004 on): the boot's number in the top 16 bits,
/// the process's sequence number below. Boot 3, and a sequence number
/// derived from the process id, are choices.
pub(crate) fn process_start_key(pid: u32) -> u64 {
    (3 << 48) | (u64::from(pid) / 4 + 0x120)
}

impl Tcb {
    fn rundown_fields(&self) -> crate::Fields {
        self.addresses()
            .with("Tcb", Val::Ptr(self.pointer))
            .with("State", ESTABLISHED)
            .with("Pid", self.pid)
            .maybe("ProcessStartKey", process_start_key(self.pid))
            .maybe("SendTrackerEnabled", 0u32)
    }
}

impl Machine {
    fn tcpip(&mut self, id: u16, at: f64, th: Tid, fields: crate::Fields) -> Result<(), crate::SynthError> {
        self.kernel_mode(spec(PROVIDER, id, at, th, fields))
    }

    /// TcpRequestConnect (1002): on the thread that called connect.
    pub fn tcp_request_connect(&mut self, at: f64, th: Tid, tcb: &Tcb) -> Result<(), crate::SynthError> {
        let f = tcb.addresses().with("Tcb", Val::Ptr(tcb.pointer)).with("NewState", SYN_SENT).with("RexmitCount", 0u32);
        self.tcpip(1002, at, th, f)
    }

    /// TcpConnectTcbComplete (1033): the SYN-ACK's DPC.
    pub fn tcp_connect_complete(&mut self, at: f64, th: Tid, tcb: &Tcb) -> Result<(), crate::SynthError> {
        self.tcpip(1033, at, th, tcb.state(0))
    }

    /// TcpConnectTcbFailure (1034) with the reason (refused: a RST came back).
    pub fn tcp_connect_failed(&mut self, at: f64, th: Tid, tcb: &Tcb, why: u32) -> Result<(), crate::SynthError> {
        self.tcpip(1034, at, th, tcb.state(why))
    }

    /// TcpConnectTcbTimeout (1045): the SYN retransmissions ran out.
    pub fn tcp_connect_timeout(&mut self, at: f64, th: Tid, tcb: &Tcb) -> Result<(), crate::SynthError> {
        self.tcpip(1045, at, th, tcb.state(status::IO_TIMEOUT))
    }

    /// TcpAcceptListenerComplete (1017): on the thread that completed the accept.
    pub fn tcp_accept_complete(&mut self, at: f64, th: Tid, tcb: &Tcb) -> Result<(), crate::SynthError> {
        self.tcpip(1017, at, th, tcb.state(0))
    }

    /// TcpSendPosted (1159): the sender's thread hands `bytes` to TCP.
    pub fn tcp_send_posted(&mut self, at: f64, th: Tid, tcb: &mut Tcb, bytes: u32) -> Result<(), crate::SynthError> {
        let f = fields![
            ("Tcb", Val::Ptr(tcb.pointer)),
            ("Injected", ""), // a choice: the manifest says only that this is text
            ("NumBytes", bytes),
            ("SndNxt", tcb.snd_nxt),
        ];
        self.tcpip(1159, at, th, f)
    }

    /// TcpDataTransferSend (1332): segments leave; logged from the ACK or timer
    /// DPC, in the build's newest version (1 in Windows 10, 3 in Windows 11
    /// 22H2, which adds the pacing and congestion state).
    pub fn tcp_transmitted(&mut self, at: f64, th: Tid, tcb: &mut Tcb, bytes: u32) -> Result<(), crate::SynthError> {
        let f = fields![
            ("Tcb", Val::Ptr(tcb.pointer)),
            ("Cwnd", 14_600u32),
            ("SndWnd", 262_144u32),
            ("BytesSent", bytes),
            ("SeqNo", tcb.snd_nxt),
            ("SRtt", 12u32),
            ("RttVar", 4u32),
            ("RTO", 300u32),
            ("RcvWnd", 131_072u32),
        ]
        .maybe("TcpState", ESTABLISHED)
        .maybe("SndUna", tcb.snd_nxt)
        .maybe("SndMax", tcb.snd_nxt.wrapping_add(bytes));
        tcb.snd_nxt = tcb.snd_nxt.wrapping_add(bytes);
        self.tcpip(1332, at, th, f)
    }

    /// TcpDataTransferReceive (1074): a segment arrived (DPC).
    pub fn tcp_received(&mut self, at: f64, th: Tid, tcb: &mut Tcb, bytes: u32) -> Result<(), crate::SynthError> {
        let f = fields![("Tcb", Val::Ptr(tcb.pointer)), ("NumBytes", bytes), ("SeqNo", tcb.rcv_nxt)];
        tcb.rcv_nxt = tcb.rcv_nxt.wrapping_add(bytes);
        self.tcpip(1074, at, th, f)
    }

    /// TcpReceiveRequest (1156): the reader posts a buffer of `buffer` bytes.
    pub fn tcp_receive_request(&mut self, at: f64, th: Tid, tcb: &Tcb, buffer: u32) -> Result<(), crate::SynthError> {
        let request = tcb.pointer ^ 0x0000_0000_0321_0000;
        let f = fields![
            ("Tcb", Val::Ptr(tcb.pointer)),
            ("Delivery", Val::Ptr(tcb.pointer + 0x1d0)),
            ("Request", Val::Ptr(request)),
            ("NumBytes", Val::Ptr(u64::from(buffer))),
            ("RequestFlags", 0u32),
            ("Length", Val::Ptr(u64::from(buffer))),
            ("RequestStatus", 0x0000_0103u32), // STATUS_PENDING
            ("IsUrgentDelivery", 0u32),
            ("FullySatisfiedORDelayedPush", 0u32),
            ("RcvNxt", tcb.rcv_nxt),
        ];
        self.tcpip(1156, at, th, f)
    }

    /// TcpCloseTcbRequest (1038): the owner closes; logged in its thread.
    pub fn tcp_close_request(&mut self, at: f64, th: Tid, tcb: &Tcb) -> Result<(), crate::SynthError> {
        self.tcpip(1038, at, th, tcb.state(0))
    }

    /// TcpShutdownTcb (1044): the FIN exchange ends (DPC).
    pub fn tcp_shutdown(&mut self, at: f64, tcb: &Tcb) -> Result<(), crate::SynthError> {
        self.tcpip(1044, at, DPC, tcb.state(0))
    }

    /// TcpConnectionRundown (1300): a connection that exists when the session
    /// starts, logged by the recorder (its ids in the header), the owner in `Pid`.
    pub fn tcp_rundown(&mut self, at: f64, tcb: &Tcb) -> Result<(), crate::SynthError> {
        let recorder = self.synth.config().controller;
        self.tcpip(1300, at, recorder, tcb.rundown_fields())
    }

    /// InspectConnectWithNameResContext (1382): a connect by name (WinHTTP's
    /// WSAConnectByName path) names the host; on the caller's thread.
    pub fn tcp_connect_by_name(&mut self, at: f64, th: Tid, tcb: &Tcb, name: &str) -> Result<(), crate::SynthError> {
        let f = tcb
            .addresses()
            .with("Tcb", Val::Ptr(tcb.pointer))
            .with("NameResContext", tcb.pointer ^ 0x77)
            .with("DnsName", name);
        self.tcpip(1382, at, th, f.with("Status", 0u32))
    }

    /// UdpEndpointSendMessages (1169): on the sender's thread, right after AFD's send.
    pub fn udp_endpoint_send(
        &mut self,
        at: f64,
        th: Tid,
        endpoint: (u64, u32),
        local: SocketAddr,
        remote: SocketAddr,
        bytes: u32,
    ) -> Result<(), crate::SynthError> {
        self.udp_messages(1169, at, th, endpoint, (local, remote), bytes)
    }

    /// UdpEndpointReceiveMessages (1170): a datagram is delivered (DPC). The
    /// two address fields are logged as given: Windows sometimes swaps them.
    pub fn udp_endpoint_receive(
        &mut self,
        at: f64,
        th: Tid,
        endpoint: (u64, u32),
        addresses: (SocketAddr, SocketAddr),
        bytes: u32,
    ) -> Result<(), crate::SynthError> {
        self.udp_messages(1170, at, th, endpoint, addresses, bytes)
    }

    /// The send (1169) and receive (1170) events share their layout.
    fn udp_messages(
        &mut self,
        id: u16,
        at: f64,
        th: Tid,
        (endpoint, pid): (u64, u32),
        (local, remote): (SocketAddr, SocketAddr),
        bytes: u32,
    ) -> Result<(), crate::SynthError> {
        let f = fields![
            ("Endpoint", Val::Ptr(endpoint)),
            ("NumMessages", 1u32),
            ("NumBytes", bytes),
            ("LocalSockAddr", sockaddr(local)),
            ("RemoteSockAddr", sockaddr(remote)),
            ("Pid", pid),
        ];
        self.tcpip(id, at, th, f)
    }

    /// UdpCloseEndpointBound (1397): the socket's close, on the closing thread.
    pub fn udp_endpoint_close(
        &mut self,
        at: f64,
        th: Tid,
        endpoint: u64,
        local: SocketAddr,
    ) -> Result<(), crate::SynthError> {
        let f = fields![("LocalAddress", sockaddr(local)), ("Status", 0u32), ("Endpoint", Val::Ptr(endpoint))];
        self.tcpip(1397, at, th, f)
    }
}
