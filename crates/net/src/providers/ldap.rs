//! Microsoft-Windows-LDAP-Client (Wldap32): directory operations as the
//! client library logs them. Event 30 is a search, with its base, scope,
//! filter, attributes and process; the provider's other events are debug
//! text without a stable form and are not read.
//!
//! An operation is tied to the socket it went out on by adjacency: Wldap32
//! sends the request on the calling thread right after logging it, so the
//! next connect or send of the same process and thread is its socket.

use nettrail_decode::fasthash::FastMap;

use crate::event::{Head, Props, Time};
use crate::pools::Pools;
use crate::report::{Gatherer, Layer, RequestRow, push_unique, socket_local, socket_state};
use crate::winsock::SockId;

#[derive(Clone, Debug, Default)]
pub struct Operation {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Time,
    /// "SEARCH".
    pub kind: &'static str,
    pub base: Option<String>,
    /// 0 base, 1 one level, 2 subtree.
    pub scope: Option<u32>,
    pub filter: Option<String>,
    pub attributes: Option<String>,
    pub socket: Option<SockId>,
    /// Its answer's last bytes: the last receive on its socket before the
    /// socket's next send (the next request) or close.
    pub end: Option<Time>,
    pub started_by: Option<crate::pools::Origin>,
}

impl Operation {
    /// The operation as an LDAP URL (RFC 4516): `ldap://host:port/base?attributes?scope?filter`.
    pub fn url(&self, host: Option<&str>) -> String {
        let scope = match self.scope {
            Some(0) => "base",
            Some(1) => "one",
            Some(2) => "sub",
            _ => "",
        };
        format!(
            "ldap://{}/{}?{}?{}?{}",
            host.unwrap_or(""),
            self.base.as_deref().unwrap_or(""),
            self.attributes.as_deref().unwrap_or(""),
            scope,
            self.filter.as_deref().unwrap_or("")
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pid: Option<u32>,
    base: Option<String>,
    scope: Option<u32>,
    filter: Option<String>,
    attributes: Option<String>,
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    (id == 30).then(|| Event {
        pid: props.u32("ProcessId").filter(|&p| p != 0),
        base: props.text("DistinguishedName"),
        scope: props.u32("ScopeOfSearch"),
        filter: props.text("SearchFilter"),
        attributes: props.text("AttributeList"),
    })
}

/// How long after an operation its socket activity may come.
const ADJACENT: Time = 10_000_000;

#[derive(Debug, Default)]
pub struct Ldap {
    pub operations: Vec<Operation>,
    /// Operations waiting for their socket, by (pid, tid).
    pending: FastMap<(Option<u32>, u32), usize>,
    /// Operations sent and waiting for their answer, by socket.
    awaiting: FastMap<SockId, usize>,
}

impl Ldap {
    /// A search: pending until the socket it goes out on is used on its thread.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, pools: &Pools) {
        let pid = e.pid.or(Head::known(head.pid));
        let tid = Head::known(head.tid);
        let origin = Some(pools.origin(head));
        let l = self;
        let i = l.operations.len();
        l.operations.push(Operation {
            pid,
            tid,
            time: head.time,
            kind: "SEARCH",
            base: e.base,
            scope: e.scope,
            filter: e.filter,
            attributes: e.attributes,
            socket: None,
            end: None,
            started_by: origin,
        });
        if let Some(tid) = tid {
            l.pending.insert((pid, tid), i);
        }
    }

    /// A socket of process `pid` connected or sent on this thread: the
    /// pending operation went out on it.
    /// An operation already answered on this socket is over: the socket's
    /// next send is another request.
    pub(crate) fn socket_used(&mut self, head: &Head, socket: SockId, pid: Option<u32>) {
        if let Some(&i) = self.awaiting.get(&socket)
            && self.operations[i].end.is_some()
        {
            self.awaiting.remove(&socket);
        }
        if self.pending.is_empty() {
            return;
        }
        let Some(tid) = Head::known(head.tid) else { return };
        if let Some(i) = self.pending.remove(&(pid, tid)) {
            let op = &mut self.operations[i];
            if head.time.saturating_sub(op.time) <= ADJACENT {
                op.socket = Some(socket);
                self.awaiting.insert(socket, i);
            }
        }
    }

    /// Bytes arrived on a socket: part of the answer to its operation, if one waits.
    pub(crate) fn socket_received(&mut self, socket: SockId, time: Time) {
        if let Some(&i) = self.awaiting.get(&socket) {
            let op = &mut self.operations[i];
            op.end = Some(op.end.map_or(time, |e| e.max(time)));
        }
    }

    /// A closed socket answers nothing more.
    pub(crate) fn socket_closed(&mut self, socket: SockId) {
        self.awaiting.remove(&socket);
    }
}

/// LDAP operations as request rows.
impl Gatherer<'_> {
    pub(crate) fn ldap_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        for op in &net.ldap.operations {
            let socket = op.socket.map(|s| net.sockets.get(s));
            let remote = socket
                .and_then(|s| s.remote)
                .or_else(|| op.socket.and_then(|s| self.sock_conn[s]).and_then(|c| net.connections.get(c).remote));
            let (server, alt_names) = self.names(None, remote.as_ref().map(|e| &e.address));
            let host = match (server.as_deref(), remote) {
                (Some(name), Some(r)) => Some(format!("{name}:{}", r.port)),
                (None, Some(r)) => Some(r.to_string()),
                (name, None) => name.map(str::to_string),
            };
            let mut threads = Vec::new();
            push_unique(&mut threads, op.tid);
            let connection = op.socket.and_then(|s| self.sock_conn[s]).map(|c| net.connections.get(c));
            // Unanswered: open at the end if its socket was; else no end was seen.
            let (end, open_at_end) = match (op.end, socket) {
                (Some(end), _) => (Some(end), false),
                (None, Some(s)) if s.closed.is_none() => (Some(net.trace_end), true),
                (None, _) => (None, false),
            };
            out.push(RequestRow {
                process: self.process(op.pid, op.time),
                pid: op.pid,
                threads,
                protocol: Some(
                    if remote.is_some_and(|r| matches!(r.port, 636 | 3269)) { "LDAPS" } else { "LDAP" }.to_string(),
                ),
                method: Some(op.kind.to_string()),
                url: Some(op.url(host.as_deref())),
                server,
                alt_names,
                ip: remote.map(|e| e.address),
                port: remote.map(|e| e.port),
                service: Some("LDAP".to_string()),
                network: remote.and_then(|e| e.address.class()),
                state: socket.map(|s| socket_state(s, connection)),
                end,
                open_at_end,
                local: socket.and_then(|s| socket_local(s, connection)),
                connection: op.socket.and_then(|s| self.sock_conn[s]),
                started_by: self.started_by(
                    [op.started_by.as_ref(), socket.and_then(|s| s.started_by.as_ref())],
                    op.socket.and_then(|s| self.sock_conn[s]),
                ),
                ..RequestRow::new(Layer::Ldap, op.time)
            });
        }
    }
}
