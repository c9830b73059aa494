//! The kernel's own view of TCP and UDP: the classic TcpIp and UdpIp events
//! of the NT kernel logger (as PerfView's traces have them: PERFINFO headers
//! without ids, the owner in the payload's `PID`) and their manifest twin,
//! Microsoft-Windows-Kernel-Network (header ids 0 in DPC context). TCP events
//! name the remote end `daddr`/`dport` and the local one `saddr`/`sport`
//! whatever the direction; a received datagram's `saddr` is its sender (as
//! the corpus' receives show). Sequence numbers and connection ids are 0, as
//! in the corpus.

use std::net::{IpAddr, SocketAddr};

use crate::value::Val;
use crate::{Fields, KernelSpec, fields};

use super::{Machine, Tid, spec};

/// What happened to the connection or flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelOp {
    Send,
    Recv,
    Connect,
    Disconnect,
    Retransmit,
    Accept,
    /// Received bytes copied to the user (TCPCopy): the same bytes again.
    Copy,
}

/// A TCP connection or UDP flow as the kernel events describe it.
#[derive(Clone, Copy, Debug)]
pub struct Flow {
    pub pid: u32,
    pub local: SocketAddr,
    pub remote: SocketAddr,
    pub udp: bool,
}

impl Flow {
    /// The TCP opcode (and Kernel-Network id) of `op` for IPv4; IPv6 adds 16.
    fn opcode(&self, op: KernelOp) -> u8 {
        let v4 = match op {
            KernelOp::Send => 10,
            KernelOp::Recv => 11,
            KernelOp::Connect => 12,
            KernelOp::Disconnect => 13,
            KernelOp::Retransmit => 14,
            KernelOp::Accept => 15,
            KernelOp::Copy => 18,
        };
        if self.remote.is_ipv6() { v4 + 16 } else { v4 }
    }

    fn fields(&self, op: KernelOp, size: u32) -> Fields {
        let address = |a: IpAddr| match a {
            IpAddr::V4(v4) => Val::Ipv4(v4),
            IpAddr::V6(v6) => Val::Ipv6(v6),
        };
        // A received datagram is logged as it travelled: `s` is its sender.
        let (d, s) =
            if self.udp && op == KernelOp::Recv { (self.local, self.remote) } else { (self.remote, self.local) };
        let mut f = fields![
            ("PID", self.pid),
            ("size", size),
            ("daddr", address(d.ip())),
            ("saddr", address(s.ip())),
            ("dport", d.port()),
            ("sport", s.port()),
            ("seqnum", 0u32),
            ("connid", Val::Ptr(0)),
        ];
        if op == KernelOp::Send && !self.udp {
            f = f.with("startime", 1_584u32).with("endtime", 1_584u32);
        }
        if matches!(op, KernelOp::Connect | KernelOp::Accept) {
            f = f.with("mss", 1_460u16).with("sackopt", 1u16).with("tsopt", 0u16).with("wsopt", 1u16);
            f = f.with("rcvwin", 65_700u32).with("rcvwinscale", 8u16).with("sndwinscale", 8u16);
        }
        f
    }
}

impl Machine {
    /// A classic TcpIp or UdpIp event; `th` is the context it runs in (the
    /// PERFINFO header does not carry its ids).
    pub fn kernel_tcpip(
        &mut self,
        at: f64,
        th: Tid,
        flow: &Flow,
        op: KernelOp,
        size: u32,
    ) -> Result<(), crate::SynthError> {
        let class = if flow.udp { "UdpIp" } else { "TcpIp" };
        let mut f = flow.fields(op, size);
        if matches!(op, KernelOp::Connect | KernelOp::Accept) {
            // The MOF types these two as signed.
            f.0.retain(|(n, _)| n != "rcvwinscale" && n != "sndwinscale");
            f = f.with("rcvwinscale", 8i16).with("sndwinscale", 8i16);
        }
        self.synth.kernel(KernelSpec::new(class, flow.opcode(op)).at(at).thread(th.0, th.1).fields(f))?;
        Ok(())
    }

    /// The same as Microsoft-Windows-Kernel-Network logs it (UDP: 42/43 for
    /// IPv4, 58/59 for IPv6).
    pub fn kernel_network(
        &mut self,
        at: f64,
        th: Tid,
        flow: &Flow,
        op: KernelOp,
        size: u32,
    ) -> Result<(), crate::SynthError> {
        let id = match (flow.udp, op) {
            (true, KernelOp::Send) => 42,
            (true, _) => 43,
            (false, _) => flow.opcode(op),
        };
        let id = if flow.udp && flow.remote.is_ipv6() { id + 16 } else { id };
        self.kernel_mode(spec("Microsoft-Windows-Kernel-Network", u16::from(id), at, th, flow.fields(op, size)))
    }
}
