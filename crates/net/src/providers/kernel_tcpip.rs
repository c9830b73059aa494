//! The kernel's own network events: the classic TcpIp and UdpIp groups of
//! the NT kernel logger and their manifest twin Microsoft-Windows-Kernel-
//! Network. Same opcodes, same fields (`PID`, `size`, `daddr`, `saddr`,
//! `dport`, `sport`); no pointers to tell connections apart, so records are
//! keyed by 5-tuple.
//!
//! Facts (checked on the corpus): the payload `PID` names the process; the
//! header's is often 0 (receives run in the kernel). For TCP, `saddr:sport`
//! is the local end and `daddr:dport` the remote in both directions; for UDP
//! the fields follow the datagram, so on a receive `daddr:dport` is local.
//! TCPCopy events repeat bytes already counted by receives: not counted.

use crate::address::{Address, Endpoint};
use crate::event::{Head, Props};
use crate::transport::{Connection, Connections, Ending, Origin, Transport};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Send,
    Receive,
    Connect,
    Accept,
    Disconnect,
    Retransmit,
    Reconnect,
    /// Data TCP copied on the caller's behalf (already counted as received).
    Copy,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    transport: Transport,
    op: Op,
    pid: Option<u32>,
    size: u64,
    local: Endpoint,
    remote: Endpoint,
}

/// TCP opcodes (IPv4; IPv6 ones are 16 higher). Kernel-Network uses the same
/// numbers as event ids for TCP.
fn tcp_op(opcode: u8) -> Option<Op> {
    Some(match opcode {
        10 | 26 => Op::Send,
        11 | 27 => Op::Receive,
        12 | 28 => Op::Connect,
        13 | 29 => Op::Disconnect,
        14 | 30 => Op::Retransmit,
        15 | 31 => Op::Accept,
        16 | 32 => Op::Reconnect,
        18 | 34 => Op::Copy,
        _ => return None,
    })
}

fn endpoint(props: &Props<'_, '_>, addr: &str, port: &str) -> Option<Endpoint> {
    let port = (props.u64(port)? as u16).swap_bytes();
    let address = match props.get(addr)? {
        nettrail_decode::Value::Binary(b) => Address::from_v6(<[u8; 16]>::try_from(*b).ok()?),
        v => Address::V4((v.as_u64()? as u32).to_le_bytes()),
    };
    Some(Endpoint::new(address, port))
}

/// A classic TcpIp/UdpIp event (by opcode) or a Kernel-Network one (by id).
pub(crate) fn extract(transport_hint: Option<Transport>, code: u16, props: &Props<'_, '_>) -> Option<Event> {
    let (transport, op) = match transport_hint {
        Some(Transport::Tcp) => (Transport::Tcp, tcp_op(code as u8)?),
        Some(Transport::Udp) => (
            Transport::Udp,
            match code {
                10 | 26 => Op::Send,
                11 | 27 => Op::Receive,
                _ => return None,
            },
        ),
        // Kernel-Network: TCP ids as the classic opcodes, UDP 42/43 (IPv4) and 58/59 (IPv6).
        None => match code {
            42 | 58 => (Transport::Udp, Op::Send),
            43 | 59 => (Transport::Udp, Op::Receive),
            _ => (Transport::Tcp, tcp_op(u8::try_from(code).ok()?)?),
        },
    };
    let pid = props.u32("PID").or_else(|| props.u32("context"));
    let size = props.u64("size").unwrap_or(0);
    let source = endpoint(props, "saddr", "sport")?;
    let destination = endpoint(props, "daddr", "dport")?;
    let (local, remote) = match (transport, op) {
        (Transport::Udp, Op::Receive) => (destination, source),
        _ => (source, destination),
    };
    Some(Event { transport, op, pid, size, local, remote })
}

impl Connections {
    /// Kernel-Network's TCP and UDP transfers, connects and disconnects.
    pub(crate) fn apply_kernel_net(&mut self, head: &Head, e: Event) {
        let t = head.time;
        let existing = self.by_flow(e.transport, e.local, e.remote);
        let id = match (e.op, existing) {
            (Op::Copy, _) => return,
            (Op::Connect | Op::Accept, Some(id)) if self.get(id).is_open() => {
                let c = self.get(id);
                if c.connected.is_some() && c.pointer.is_none() {
                    // A second connect on an open 5-tuple: the previous close was lost.
                    self.get_mut(id).close(t, Ending::Abandoned);
                    self.new_kernel_connection(&e, t)
                } else {
                    id
                }
            }
            (Op::Connect | Op::Accept, _) => self.new_kernel_connection(&e, t),
            // Data after a close still belongs to the last connection of the
            // 5-tuple (it can trail the disconnect); only a flow never seen is inferred.
            (_, Some(id)) => id,
            (_, None) => {
                let mut c = Connection::new(e.transport, Origin::Inferred, t);
                c.local = Some(e.local);
                c.remote = Some(e.remote);
                self.add(c)
            }
        };
        let c = self.get_mut(id);
        c.set_pid(e.pid, true);
        c.touch(t);
        match e.op {
            Op::Send => c.kernel.sent += e.size,
            Op::Receive => c.kernel.received += e.size,
            Op::Connect | Op::Accept => {
                c.connected.get_or_insert(t);
                c.tid = c.tid.or(Head::known(head.tid));
            }
            Op::Disconnect => c.close(t, Ending::Closed),
            Op::Retransmit => c.retransmits += 1,
            Op::Reconnect | Op::Copy => {}
        }
    }

    fn new_kernel_connection(&mut self, e: &Event, t: crate::event::Time) -> usize {
        let origin = if e.op == Op::Accept { Origin::Accept } else { Origin::Connect };
        let mut c = Connection::new(e.transport, origin, t);
        c.local = Some(e.local);
        c.remote = Some(e.remote);
        self.add(c)
    }
}
