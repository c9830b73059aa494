//! The network model: every layer's table, built by applying events one at a
//! time in time order. Each provider module adds its `on_…` handler; the
//! joins across layers that need the whole picture happen in [`crate::report`].

use nettrail_decode::fasthash::FastMap;
use nettrail_etl::Guid;

use crate::dns::Dns;
use crate::event::{Head, Time};
use crate::pools::Pools;
use crate::processes::Processes;
use crate::providers::{Body, NetEvent, chromium, dns_client, httpsys, ldap, nameres, quic, urlmon, webio, wininet};
use crate::transport::Connections;
use crate::winsock::Sockets;

/// The network events of one activity id.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    pub first: Time,
    pub last: Time,
    pub events: u64,
    /// Activities linked to it by a related activity id, either way round:
    /// providers differ on which side of a transfer names which (Http.sys
    /// names each new request from an event of its connection's activity;
    /// EventWriteTransfer callers name the parent from the child).
    pub related: Vec<Guid>,
}

/// Network events grouped by activity id, with the links related activity
/// ids make between activities, so a request can be followed event by event.
#[derive(Debug, Default)]
pub struct Activities {
    map: FastMap<Guid, Activity>,
}

impl Activities {
    fn record(&mut self, head: &Head) {
        if head.activity.is_zero() {
            return;
        }
        let new = |time| Activity { first: time, last: time, events: 0, related: Vec::new() };
        let a = self.map.entry(head.activity).or_insert_with(|| new(head.time));
        a.events += 1;
        a.last = a.last.max(head.time);
        if !head.related.is_zero() && head.related != head.activity {
            if !a.related.contains(&head.related) {
                a.related.push(head.related);
            }
            // The related activity counts this event as one of its own too.
            let r = self.map.entry(head.related).or_insert_with(|| new(head.time));
            r.events += 1;
            if !r.related.contains(&head.activity) {
                r.related.push(head.activity);
            }
        }
    }

    pub fn get(&self, id: &Guid) -> Option<&Activity> {
        self.map.get(id)
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// Everything the trace says about network activity.
#[derive(Debug, Default)]
pub struct Network {
    pub processes: Processes,
    pub connections: Connections,
    pub sockets: Sockets,
    pub dns: Dns,
    pub wininet: wininet::WinInet,
    pub webio: webio::WebIo,
    pub http_server: httpsys::HttpServer,
    pub ldap: ldap::Ldap,
    pub urlmon: urlmon::UrlMon,
    pub quic: quic::Quic,
    /// Chromium-based browsers: regions, events, NetLog.
    pub chromium: chromium::Chromium,
    /// Work handed between threads, for stack stitching.
    pub pools: Pools,
    pub(crate) office: crate::providers::office::Office,
    pub activities: Activities,
    /// The trace's start (its header) and its last event: objects still
    /// open at the end are closed there.
    pub trace_start: Time,
    pub trace_end: Time,
    /// Events the model used.
    pub events: u64,
    pub(crate) dns_client: dns_client::State,
    pub(crate) nameres: nameres::State,
    /// The app's own spans (TraceLogging Start/Stop), per thread.
    pub(crate) apps: crate::providers::app::Spans,
}

impl Network {
    pub fn new(trace_start: Time) -> Network {
        Network { trace_start, trace_end: trace_start, ..Network::default() }
    }

    pub(crate) fn apply(&mut self, event: NetEvent) {
        let head = event.head;
        self.trace_end = self.trace_end.max(head.time);
        self.activities.record(&head);
        if !matches!(event.body, Body::InActivity) {
            self.events += 1;
        }
        match event.body {
            Body::InActivity => {}
            Body::Process(e) => {
                self.thread_lifetime(&head, &e);
                self.processes.apply(head.time, e);
            }
            Body::KernelNet(e) => self.connections.apply_kernel_net(&head, e),
            Body::Tcpip(e) => self.connections.apply_tcpip(&head, e, &self.pools, &mut self.dns, &mut self.webio),
            Body::Afd(e) => self.sockets.apply_afd(&head, e, &self.pools, &mut self.ldap),
            Body::DnsClient(e) => self.dns_client.apply(&head, e, &mut self.dns),
            Body::NameRes(e) => self.nameres.apply(&head, e, &mut self.dns),
            Body::WinInet(e) => self.wininet.apply(&head, e, &self.pools, &mut self.dns),
            Body::WebIo(e) => self.webio.apply(&head, e, &self.pools, &mut self.dns),
            Body::HttpSys(e) => self.http_server.apply(&head, e),
            Body::Ldap(e) => self.ldap.apply(&head, e, &self.pools),
            Body::UrlMon(e) => self.urlmon.apply(&head, e),
            Body::ThreadPool(e) => self.pools.apply_threadpool(&head, e),
            Body::Action(e) => self.pools.apply_winhttp_action(&head, e),
            Body::Office(e) => self.office.apply(&head, e, &mut self.pools),
            Body::App(e) => self.apps.apply(&head, e),
            Body::Quic(e) => self.quic.apply(&head, e, &self.pools),
            Body::Chromium(e) => self.chromium.apply(&head, *e, &self.pools),
        }
    }

    /// A thread a process created for itself runs on behalf of its creator
    /// (the header of a thread's start is the creating thread's).
    fn thread_lifetime(&mut self, head: &Head, e: &crate::processes::Event) {
        use crate::processes::{Event as P, Lifetime};
        match *e {
            P::Thread { lifetime: Lifetime::Started, pid, tid } if pid > 4 && Head::known(head.pid) == Some(pid) => {
                self.pools.thread_created(head, tid)
            }
            P::Thread { lifetime: Lifetime::Ended, tid, .. } => self.pools.thread_ended(tid),
            _ => {}
        }
    }

    /// The name of the process with this id at `time`, if the trace knows it.
    pub fn process_name(&self, pid: Option<u32>, time: Time) -> Option<&str> {
        self.processes.name(pid?, time)
    }
}
