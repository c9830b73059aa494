//! Microsoft-Windows-TCPIP: TCP connections by their TCB pointer (connect
//! request, proceeding, complete, failure, accept, close, abort, shutdown,
//! rundown of connections that predate the trace), the bytes TCP sent and
//! received, and UDP datagrams by endpoint pointer and peer.
//!
//! Which PIDs to believe: the header PID of a connect request is the caller's
//! (it runs synchronously on the caller's thread); elsewhere the header is
//! whatever thread the stack ran on, so only payload `ProcessId`/`Pid` fields
//! are trusted. Rundown events carry the recorder's PID in the header.

use crate::address::Endpoint;
use crate::dns::Dns;
use crate::event::{Head, Props, Time};
use crate::pools::Pools;
use crate::providers::webio::WebIo;
use crate::report::{Gatherer, Layer, Phases, RequestRow, failure, push_unique, service_of};
use crate::transport::{ConnId, Connection, Connections, Ending, Origin, Transport};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// 1002 TcpRequestConnect, on the caller's thread.
    Request,
    /// 1031 TcpConnectTcbProceeding.
    Proceeding,
    /// 1033 TcpConnectTcbComplete.
    Complete,
    /// 1034 TcpConnectTcbFailure.
    Failure,
    /// 1045 TcpConnectFailedTimeout (connect request timed out).
    Timeout,
    /// 1017 TcpAcceptListenerComplete.
    Accept,
    /// 1300 TcpConnectionRundown.
    Rundown,
    /// 1038 TcpCloseTcbRequest.
    Close,
    /// 1039 TcpAbortTcbRequest.
    Abort,
    /// 1043 TcpDisconnectTcbComplete.
    Disconnected,
    /// 1044 TcpShutdownTcb.
    Shutdown,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Tcb {
        step: Step,
        tcb: u64,
        local: Option<Endpoint>,
        remote: Option<Endpoint>,
        pid: Option<u32>,
        status: Option<u32>,
    },
    /// 1074 DataTransferReceive / 1332 DataTransferSend.
    Data { tcb: u64, sent: bool, bytes: u64 },
    /// 1159 TcpSendPosted: what a caller handed to TCP (on its thread).
    SendPosted { tcb: u64, bytes: u64 },
    /// 1156 TcpReceiveRequest.
    ReceivePosted { tcb: u64 },
    /// 1382: the DNS name a connection was made by.
    Name { tcb: u64, name: String, remote: Option<Endpoint> },
    /// 1169 / 1170 UdpEndpointSend/ReceiveMessages.
    Udp { endpoint: u64, sent: bool, bytes: u64, local: Option<Endpoint>, remote: Option<Endpoint>, pid: Option<u32> },
    /// 1397 UdpCloseEndpointBound.
    UdpClose { endpoint: u64 },
}

impl Event {
    pub(crate) fn is_connect_request(&self) -> bool {
        matches!(self, Event::Tcb { step: Step::Request, .. })
    }
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let tcb = || props.u64("Tcb");
    let tcb_event = |step| {
        Some(Event::Tcb {
            step,
            tcb: tcb()?,
            local: props.sockaddr("LocalAddress"),
            remote: props.sockaddr("RemoteAddress"),
            pid: props.u32("ProcessId").or_else(|| props.u32("Pid")),
            status: props.u32("Status").filter(|&s| s != 0),
        })
    };
    match id {
        1002 => tcb_event(Step::Request),
        1031 => tcb_event(Step::Proceeding),
        1033 => tcb_event(Step::Complete),
        1034 => tcb_event(Step::Failure),
        1045 => tcb_event(Step::Timeout),
        1017 => tcb_event(Step::Accept),
        1300 => tcb_event(Step::Rundown),
        1038 => tcb_event(Step::Close),
        1039 => tcb_event(Step::Abort),
        1043 => tcb_event(Step::Disconnected),
        1044 => tcb_event(Step::Shutdown),
        1074 => Some(Event::Data { tcb: tcb()?, sent: false, bytes: props.u64("NumBytes")? }),
        1332 => Some(Event::Data { tcb: tcb()?, sent: true, bytes: props.u64("BytesSent")? }),
        1159 => Some(Event::SendPosted { tcb: tcb()?, bytes: props.u64("NumBytes")? }),
        1156 => Some(Event::ReceivePosted { tcb: tcb()? }),
        1382 => {
            Some(Event::Name { tcb: tcb()?, name: props.text("DnsName")?, remote: props.sockaddr("RemoteAddress") })
        }
        1169 | 1170 => Some(Event::Udp {
            endpoint: props.u64("Endpoint")?,
            sent: id == 1169,
            bytes: props.u64("NumBytes").unwrap_or(0),
            local: props.sockaddr("LocalSockAddr"),
            remote: props.sockaddr("RemoteSockAddr"),
            pid: props.u32("Pid"),
        }),
        1397 => Some(Event::UdpClose { endpoint: props.u64("Endpoint")? }),
        _ => None,
    }
}

/// Events this soon after a record's close still describe its ending.
const SAME_ENDING: Time = 10_000_000;

impl Connections {
    /// TCPIP's connections (TCBs) and UDP endpoints. A send or receive
    /// posted on a thread in the middle of a WebIO transfer names that
    /// transfer's TCB and bytes to `webio`; a connect names its origin from
    /// `pools`; a connect by name teaches `dns` the name's address.
    pub(crate) fn apply_tcpip(&mut self, head: &Head, e: Event, pools: &Pools, dns: &mut Dns, webio: &mut WebIo) {
        let t = head.time;
        match e {
            Event::Tcb { step, tcb, local, remote, pid, status } => {
                let id = self.tcb_record(step, tcb, t);
                if step == Step::Request {
                    self.get_mut(id).started_by = Some(pools.origin(head));
                }
                let conns = &mut *self;
                conns.learn_addresses(id, local, remote);
                let c = conns.get_mut(id);
                c.touch(t);
                if let Some(s) = status {
                    c.status = Some(s);
                }
                match step {
                    Step::Request => {
                        // Synchronous on the caller's thread: its header is the truth,
                        // unless the caller is the System process working for someone.
                        let pid = Head::known(head.pid);
                        c.set_pid(pid, pid.is_some_and(|p| p > 4));
                        c.tid = Head::known(head.tid);
                    }
                    Step::Accept => {
                        c.set_pid(pid, true);
                        c.tid = c.tid.or(Head::known(head.tid));
                        c.connected.get_or_insert(t);
                    }
                    Step::Complete => {
                        c.set_pid(pid, true);
                        c.connected.get_or_insert(t);
                    }
                    Step::Proceeding | Step::Rundown => c.set_pid(pid, true),
                    Step::Failure => {
                        c.set_pid(pid, true);
                        c.close(t, Ending::Failed);
                    }
                    Step::Timeout => {
                        c.set_pid(pid, true);
                        c.close(t, Ending::TimedOut);
                    }
                    Step::Close | Step::Disconnected => {
                        c.set_pid(pid, true);
                        c.close(t, Ending::Closed);
                    }
                    Step::Abort => {
                        c.set_pid(pid, true);
                        c.close(t, Ending::Aborted);
                    }
                    Step::Shutdown => {
                        c.set_pid(pid, true);
                        c.shutdown.get_or_insert(t);
                    }
                }
            }
            Event::Data { tcb, sent, bytes } => {
                let id = self.tcb_or_inferred(tcb, t);
                let c = self.get_mut(id);
                c.touch(t);
                if sent {
                    c.tcpip.sent += bytes;
                } else {
                    c.tcpip.received += bytes;
                }
            }
            Event::SendPosted { tcb, bytes } => {
                let id = self.tcb_or_inferred(tcb, t);
                let c = self.get_mut(id);
                c.touch(t);
                c.posted += bytes;
                c.alt_pid = c.alt_pid.or(Head::known(head.pid));
                webio.send_posted(head, bytes);
                webio.tcb_named(head, tcb);
            }
            Event::ReceivePosted { tcb } => {
                let id = self.tcb_or_inferred(tcb, t);
                let c = self.get_mut(id);
                c.alt_pid = c.alt_pid.or(Head::known(head.pid));
                webio.tcb_named(head, tcb);
            }
            Event::Name { tcb, name, remote } => {
                if let Some(address) = remote.map(|r| r.address) {
                    dns.learn(&name, None, &[address]);
                }
                if let Some(id) = self.by_pointer(tcb) {
                    self.get_mut(id).dns_name = Some(name);
                }
            }
            Event::Udp { endpoint, sent, bytes, local, remote, pid } => {
                let (local, remote) = self.udp_sides(endpoint, sent, local, remote);
                let id = self.udp_record(endpoint, local, remote, t);
                let c = self.get_mut(id);
                c.set_pid(pid, true);
                c.touch(t);
                if sent {
                    c.tcpip.sent += bytes;
                } else {
                    c.tcpip.received += bytes;
                }
            }
            Event::UdpClose { endpoint } => {
                for i in 0..self.by_udp_endpoint(endpoint).len() {
                    let id = self.by_udp_endpoint(endpoint)[i];
                    self.get_mut(id).close(t, Ending::Closed);
                }
            }
        }
    }

    /// The record a TCB event belongs to: a new one for a connect request or
    /// an accept (abandoning an open record with the same pointer, whose close
    /// was lost), else the open record with the pointer, else a new record
    /// inferred from this event.
    fn tcb_record(&mut self, step: Step, tcb: u64, t: Time) -> ConnId {
        let current = self.by_pointer(tcb);
        let open = current.filter(|&id| self.get(id).is_open());
        let new = |origin| {
            let mut c = Connection::new(Transport::Tcp, origin, t);
            c.pointer = Some(tcb);
            c
        };
        match step {
            Step::Request | Step::Accept => {
                if let Some(id) = open {
                    self.get_mut(id).close(t, Ending::Abandoned);
                }
                let origin = if step == Step::Accept { Origin::Accept } else { Origin::Connect };
                self.add(new(origin))
            }
            Step::Rundown => match open {
                Some(id) => {
                    // Rundown after live events: the connection predates the trace.
                    let c = self.get_mut(id);
                    if c.origin == Origin::Inferred {
                        c.origin = Origin::Rundown;
                    }
                    id
                }
                None => self.add(new(Origin::Rundown)),
            },
            // A shutdown can follow the close.
            Step::Shutdown => current.unwrap_or_else(|| self.add(new(Origin::Inferred))),
            // Steps of an ending (a connect timeout then its failure, a close
            // then its disconnect) belong to the record they ended.
            Step::Failure | Step::Timeout | Step::Close | Step::Abort | Step::Disconnected => open
                .or(current.filter(|&id| self.get(id).closed.is_some_and(|c| t - c < SAME_ENDING)))
                .unwrap_or_else(|| self.add(new(Origin::Inferred))),
            Step::Proceeding | Step::Complete => open.unwrap_or_else(|| self.add(new(Origin::Inferred))),
        }
    }

    fn tcb_or_inferred(&mut self, tcb: u64, t: Time) -> ConnId {
        match self.by_pointer(tcb) {
            Some(id) => id,
            None => {
                let mut c = Connection::new(Transport::Tcp, Origin::Inferred, t);
                c.pointer = Some(tcb);
                self.add(c)
            }
        }
    }

    /// Local and remote ends of a UDP event. Receives sometimes log them
    /// swapped: the endpoint's known local end (from its sends) tells, by
    /// address and port where both ends use one port (NTP: 123 to 123).
    fn udp_sides(
        &self,
        endpoint: u64,
        sent: bool,
        local: Option<Endpoint>,
        remote: Option<Endpoint>,
    ) -> (Option<Endpoint>, Option<Endpoint>) {
        if sent {
            return (local, remote);
        }
        let known = self
            .by_udp_endpoint(endpoint)
            .iter()
            .rev()
            .find_map(|&id| self.get(id).local.filter(|l| !l.address.is_unspecified()))
            .or_else(|| {
                let &id = self.by_udp_endpoint(endpoint).last()?;
                self.get(id).local
            });
        let (Some(known), Some(l), Some(r)) = (known, local, remote) else { return (local, remote) };
        let swapped = if known.address.is_unspecified() || l.port != r.port {
            l.port != known.port && r.port == known.port
        } else {
            r == known && l != known
        };
        if swapped { (remote, local) } else { (local, remote) }
    }

    /// The open UDP record of an endpoint for one peer, adopting the
    /// kernel's record of the same flow, or a new one.
    fn udp_record(&mut self, endpoint: u64, local: Option<Endpoint>, remote: Option<Endpoint>, t: Time) -> ConnId {
        let conns = &*self;
        if let Some(&id) = conns
            .by_udp_endpoint(endpoint)
            .iter()
            .rev()
            .find(|&&id| conns.get(id).is_open() && conns.get(id).remote == remote)
        {
            return id;
        }
        if let (Some(l), Some(r)) = (local, remote)
            && let Some(id) = conns.by_flow(Transport::Udp, l, r)
            && conns.get(id).pointer.is_none()
            && conns.get(id).is_open()
        {
            self.set_pointer(id, endpoint);
            return id;
        }
        let mut c = Connection::new(Transport::Udp, Origin::Inferred, t);
        c.pointer = Some(endpoint);
        c.local = local.filter(|l| !l.is_empty());
        c.remote = remote.filter(|r| !r.is_empty());
        self.add(c)
    }
}

/// TCP connections and UDP flows no higher layer claimed as request rows.
impl Gatherer<'_> {
    pub(crate) fn transport_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        for (id, c) in net.connections.iter() {
            if self.claimed[id].is_some() {
                continue;
            }
            let bytes = c.bytes();
            // Idle connections of the system that merely existed: noise.
            let pid = c.pid.or(c.alt_pid);
            if matches!(c.origin, Origin::Rundown | Origin::Inferred) && pid.is_none_or(|p| p <= 4) && !bytes.any() {
                continue;
            }
            let layer = if c.transport == Transport::Udp { Layer::Udp } else { Layer::Tcp };
            self.claimed[id] = Some(layer);
            let remote = c.remote;
            let (server, alt_names) = self.names(c.dns_name.as_deref(), remote.as_ref().map(|e| &e.address));
            let direction = c.direction();
            let service = service_of(c.transport, direction, c.local, remote);
            let end = c.end();
            let mut threads = Vec::new();
            push_unique(&mut threads, c.tid);
            out.push(RequestRow {
                process: self.process(pid, c.opened),
                pid,
                threads,
                protocol: Some(c.transport.name().to_string()),
                server,
                alt_names,
                ip: remote.map(|e| e.address),
                port: remote.map(|e| e.port),
                service: service.map(str::to_string),
                network: remote.and_then(|e| e.address.class()),
                direction,
                state: Some(c.state()),
                bytes_sent: Some(bytes.sent),
                bytes_received: Some(bytes.received),
                end: Some(end.unwrap_or(net.trace_end)),
                open_at_end: end.is_none(),
                error: failure(c),
                local: c.local,
                connection: Some(id),
                started_by: self.started_by([], Some(id)),
                phases: Phases { connect: self.connect_span(Some(id), c.opened), ..Phases::default() },
                ..RequestRow::new(layer, c.opened)
            });
        }
    }
}
