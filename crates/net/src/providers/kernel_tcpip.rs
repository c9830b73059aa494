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

use std::sync::Arc;

use nettrail_decode::payload::{FlatField, FlatLayout, ReadsAs};
use nettrail_decode::{EventSchema, Field};
use nettrail_etl::Record;

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

/// How a transfer logs an address: 16 bytes (IPv6, perhaps IPv4-mapped) or
/// a number (IPv4).
enum LoggedAddress<'a> {
    Bytes(&'a [u8]),
    Number(u64),
}

/// An endpoint from its logged address and port (in network order).
fn endpoint_of(address: LoggedAddress<'_>, port: u64) -> Option<Endpoint> {
    let address = match address {
        LoggedAddress::Bytes(b) => Address::from_v6(<[u8; 16]>::try_from(b).ok()?),
        LoggedAddress::Number(v) => Address::V4((v as u32).to_le_bytes()),
    };
    Some(Endpoint::new(address, (port as u16).swap_bytes()))
}

fn endpoint(props: &Props<'_, '_>, addr: &str, port: &str) -> Option<Endpoint> {
    let address = match props.get(addr)? {
        nettrail_decode::Value::Binary(b) => LoggedAddress::Bytes(b),
        v => LoggedAddress::Number(v.as_u64()?),
    };
    endpoint_of(address, props.u64(port)?)
}

/// The transport and what happened, from a classic TcpIp/UdpIp opcode
/// (`transport_hint` says which) or a Kernel-Network id.
fn transport_op(transport_hint: Option<Transport>, code: u16) -> Option<(Transport, Op)> {
    Some(match transport_hint {
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
    })
}

/// The event the fields describe: which end is local depends on the transport and direction.
fn event(
    (transport, op): (Transport, Op),
    pid: Option<u32>,
    size: u64,
    source: Endpoint,
    destination: Endpoint,
) -> Event {
    let (local, remote) = match (transport, op) {
        (Transport::Udp, Op::Receive) => (destination, source),
        _ => (source, destination),
    };
    Event { transport, op, pid, size, local, remote }
}

/// A classic TcpIp/UdpIp event (by opcode) or a Kernel-Network one (by id).
pub(crate) fn extract(transport_hint: Option<Transport>, code: u16, props: &Props<'_, '_>) -> Option<Event> {
    let what = transport_op(transport_hint, code)?;
    let pid = props.u32("PID").or_else(|| props.u32("context"));
    let size = props.u64("size").unwrap_or(0);
    let source = endpoint(props, "saddr", "sport")?;
    let destination = endpoint(props, "daddr", "dport")?;
    Some(event(what, pid, size, source, destination))
}

/// Where a kernel transfer's fields lie in the payloads of one schema
/// (with one pointer size). Most events of a network trace are these, and
/// decoding each payload into values to pick six of them by name was the
/// larger part of reading them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pid: Option<FlatField>,
    size: Option<FlatField>,
    /// Address and port.
    source: (FlatField, FlatField),
    destination: (FlatField, FlatField),
}

impl Plan {
    /// `None` where the fields read in place might not be what [`extract`]
    /// reads from the decoded values: a field it reads of another type, a
    /// port or an address missing.
    fn of(fields: &[Field], layout: &FlatLayout) -> Option<Plan> {
        let field = |name: &str| fields.iter().position(|f| f.name == name).map(|i| layout.field(i));
        // Outer `None`: present but not an unsigned integer.
        let number = |name: &str| match field(name) {
            None => Some(None),
            Some(f) => f.filter(|f| f.reads_as == ReadsAs::Unsigned).map(Some),
        };
        let address = |name: &str| field(name)?.filter(|f| f.reads_as != ReadsAs::Other);
        let pid = match number("PID")? {
            Some(pid) => Some(pid),
            None => number("context")?,
        };
        Some(Plan {
            pid,
            size: number("size")?,
            source: (address("saddr")?, number("sport")??),
            destination: (address("daddr")?, number("dport")??),
        })
    }

    /// [`extract`] of a payload the plan's layout fits.
    fn extract(&self, transport_hint: Option<Transport>, code: u16, data: &[u8]) -> Option<Event> {
        let what = transport_op(transport_hint, code)?;
        let pid = self.pid.and_then(|f| f.unsigned(data)).map(|v| v as u32);
        let size = self.size.and_then(|f| f.unsigned(data)).unwrap_or(0);
        let endpoint = |(address, port): (FlatField, FlatField)| {
            let address = match address.reads_as {
                ReadsAs::Binary => LoggedAddress::Bytes(address.binary(data)?),
                _ => LoggedAddress::Number(address.unsigned(data)?),
            };
            endpoint_of(address, port.unsigned(data)?)
        };
        Some(event(what, pid, size, endpoint(self.source)?, endpoint(self.destination)?))
    }
}

/// The plans of the schemas one reader met: kernel transfers come in a
/// dozen kinds (direction, transport, IP version), each planned once.
#[derive(Debug, Default)]
pub(crate) struct Plans {
    known: Vec<(Arc<EventSchema>, u8, Option<Plan>)>,
    /// The entry the last event used, tried first.
    last: usize,
}

impl Plans {
    /// More kinds than a real trace has; past it the list starts over.
    const MOST: usize = 64;

    /// [`extract`] of a record whose payload `layout` (its schema's, for
    /// its pointer size) fits, reading the fields where they lie; the outer
    /// `None` where the schema's fields cannot be read so.
    pub(crate) fn extract(
        &mut self,
        transport_hint: Option<Transport>,
        code: u16,
        schema: &Arc<EventSchema>,
        layout: &FlatLayout,
        record: &Record<'_>,
    ) -> Option<Option<Event>> {
        let planned =
            |&(ref s, size, _): &(Arc<EventSchema>, u8, _)| Arc::ptr_eq(s, schema) && size == record.pointer_size;
        if !self.known.get(self.last).is_some_and(planned) {
            self.last = match self.known.iter().position(planned) {
                Some(i) => i,
                None => {
                    if self.known.len() == Plans::MOST {
                        self.known.clear();
                    }
                    let plan = Plan::of(&schema.fields, layout);
                    self.known.push((Arc::clone(schema), record.pointer_size, plan));
                    self.known.len() - 1
                }
            };
        }
        let plan = self.known.get(self.last)?.2.as_ref()?;
        Some(plan.extract(transport_hint, code, record.payload))
    }
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

#[cfg(test)]
mod tests {
    use nettrail_decode::{LookupCache, Schemas};
    use nettrail_etl::Trace;

    use super::*;
    use crate::providers::{kernel_transfer, source_of};

    /// Every kernel transfer of a trace read both ways: (events read in
    /// place, events whose schema had no plan).
    fn both_readings(bytes: &[u8]) -> (usize, usize) {
        let trace = Trace::parse(bytes).expect("the trace parses");
        let mut schemas = Schemas::new();
        let _ = schemas.learn(&trace);
        let (mut cache, mut plans) = (LookupCache::default(), Plans::default());
        let (mut in_place, mut unplanned) = (0, 0);
        let mut stream = trace.events();
        while let Some(event) = stream.next() {
            let Ok(event) = event else { continue };
            let record = &event.record;
            let Some((transport, code)) = source_of(&record.provider).and_then(|s| kernel_transfer(s, record)) else {
                continue;
            };
            let mut values = Vec::new();
            let decoded = schemas.decode_cached(&mut cache, record, &mut values).ok().cloned();
            let by_values = decoded.as_ref().and_then(|s| extract(transport, code, &Props::new(&s.fields, &values)));
            match schemas.schema_cached(&mut cache, record) {
                Ok((schema, Some(layout))) => match plans.extract(transport, code, schema, layout, record) {
                    Some(by_place) => {
                        assert_eq!(by_place, by_values, "{record:?}");
                        in_place += 1;
                    }
                    None => unplanned += 1,
                },
                _ => unplanned += 1,
            }
        }
        (in_place, unplanned)
    }

    #[test]
    fn fields_read_in_place_are_the_decoded_fields() {
        let corpus = |name: &str| std::fs::read(nettrail_testkit::corpus_file(name)).expect("the corpus file reads");
        // Kernel-Network (64-bit, IPv4 and IPv6), classic TcpIp/UdpIp of
        // 32-bit PerfView traces, and both as the synthesizer writes them
        // from the real manifests.
        for (name, bytes, at_least) in [
            ("tx__KernelNetwork.etl", corpus("tx__KernelNetwork.etl"), 8_900),
            ("perfview__net.4.5.2.x86.etl", corpus("perfview__net.4.5.2.x86.etl"), 500),
            ("perfview__net.4.5.x86.PerfViewData.etl", corpus("perfview__net.4.5.x86.PerfViewData.etl"), 160),
            ("kernel-network", nettrail_synth::scenarios::kernel_network().expect("the scenario writes"), 1),
            ("kernel-classic", nettrail_synth::scenarios::kernel_classic().expect("the scenario writes"), 1),
        ] {
            let (in_place, unplanned) = both_readings(&bytes);
            assert!(in_place >= at_least, "{name}: {in_place} read in place, {unplanned} not");
        }
    }

    #[test]
    fn a_field_of_another_type_leaves_the_schema_unplanned() {
        let fields = |size_type| {
            [
                Field::new("PID", nettrail_decode::InType::UInt32),
                Field::new("size", size_type),
                Field::new("daddr", nettrail_decode::InType::UInt32),
                Field::new("saddr", nettrail_decode::InType::UInt32),
                Field::new("dport", nettrail_decode::InType::UInt16),
                Field::new("sport", nettrail_decode::InType::UInt16),
            ]
        };
        let plan = |fields: &[Field]| Plan::of(fields, &FlatLayout::of(fields, 8).unwrap());
        assert!(plan(&fields(nettrail_decode::InType::UInt32)).is_some());
        // A signed size decodes as a signed value, which `extract` reads otherwise.
        assert!(plan(&fields(nettrail_decode::InType::Int32)).is_none());
        // Without a port there is nothing to read in place.
        assert!(plan(&fields(nettrail_decode::InType::UInt32)[..5]).is_none());
    }
}
