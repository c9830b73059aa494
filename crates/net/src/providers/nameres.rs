//! Microsoft-Windows-Winsock-NameResolution: getaddrinfo calls, from start
//! (1000) to their result list (1001 GetAddrInfoW, 1004 GetAddrInfoExW).
//! Calls for a name that is already an address resolve nothing.

use nettrail_decode::fasthash::FastMap;

use crate::address::Address;
use crate::dns::Dns;
use crate::dns::{Query, Resolver, parse_results};
use crate::event::{Head, Props, Time};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Start { name: String },
    Stop { name: String, status: Option<u32>, result: Option<String> },
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let name = props.text("NodeName")?;
    if Address::parse(&name).is_some() {
        return None;
    }
    Some(match id {
        1000 => Event::Start { name },
        1001 | 1004 => Event::Stop { name, status: props.u32("Status"), result: props.text("Result") },
        _ => return None,
    })
}

/// Calls started, by (pid, tid, lowercase name).
#[derive(Debug, Default)]
pub(crate) struct State {
    started: FastMap<(Option<u32>, Option<u32>, String), Time>,
}

impl State {
    /// getaddrinfo's calls: each a lookup reported to `dns`.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, dns: &mut Dns) {
        let (pid, tid) = (Head::known(head.pid), Head::known(head.tid));
        match e {
            Event::Start { name } => {
                self.started.insert((pid, tid, name.to_ascii_lowercase()), head.time);
            }
            Event::Stop { name, status, result } => {
                let start = self.started.remove(&(pid, tid, name.to_ascii_lowercase())).unwrap_or(head.time);
                let mut q = Query::new(Resolver::GetAddrInfo, name, start);
                q.end = Some(head.time);
                q.pid = pid;
                q.tid = tid;
                q.status = status;
                q.activity = head.activity;
                if let Some(result) = result {
                    (q.answers, q.aliases) = parse_results(&result);
                }
                dns.report(q);
            }
        }
    }
}
