//! Microsoft-Windows-HttpService (Http.sys), the kernel HTTP server under
//! IIS and every HttpListener: each request from receipt to the response.
//!
//! The kernel logs a request's receipt (1, with its request and connection
//! ids and the client), its parsing (2: verb and URL, by request *pointer*),
//! and its delivery to the application's queue (3: pointer, id, site, queue);
//! the worker process then logs the response (4/8: status, verb; 5/9 last
//! response), and the kernel its sending (10–13, status; 16/17 bytes from the
//! cache; 14/15 errors). Connections (21) carry the local and client
//! addresses, and get their id when their first request arrives (22).

use nettrail_decode::fasthash::FastMap;

use nettrail_etl::Guid;

use crate::address::Endpoint;
use crate::errors;
use crate::event::{Head, Props, Time};
use crate::model::Activities;
#[cfg(test)]
use crate::model::Network;
use crate::processes::Processes;
use crate::report::ServerRow;

#[derive(Clone, Debug, Default)]
pub struct ServerRequest {
    pub request_id: u64,
    pub connection_id: Option<u64>,
    pub verb: Option<String>,
    pub url: Option<String>,
    pub status: Option<u16>,
    /// Bytes Http.sys sent for the response, where the trace says (cache sends).
    pub bytes_sent: Option<u64>,
    pub client: Option<Endpoint>,
    pub server: Option<Endpoint>,
    pub site: Option<u32>,
    pub queue: Option<String>,
    pub received: Time,
    pub last: Time,
    /// The worker process that answered (its response events' process).
    pub worker_pid: Option<u32>,
    pub error: Option<u32>,
    /// The request's own activity (its receipt names it as the related activity).
    pub activity: Guid,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Received { request: u64, connection: u64, client: Option<Endpoint> },
    Parsed { object: u64, verb: Option<u32>, url: Option<String> },
    Delivered { object: u64, request: u64, site: Option<u32>, queue: Option<String>, url: Option<String> },
    Response { request: u64, connection: Option<u64>, status: Option<u16>, verb: Option<String> },
    Sent { request: Option<u64>, object: Option<u64>, bytes: Option<u64>, status: Option<u16>, error: Option<u32> },
    ConnectionCreated { object: u64, local: Option<Endpoint>, remote: Option<Endpoint> },
    ConnectionId { object: u64, connection: u64 },
}

/// HTTP_VERB (http.h).
pub fn verb_name(verb: u32) -> Option<&'static str> {
    Some(match verb {
        3 => "OPTIONS",
        4 => "GET",
        5 => "HEAD",
        6 => "POST",
        7 => "PUT",
        8 => "DELETE",
        9 => "TRACE",
        10 => "CONNECT",
        11 => "TRACK",
        12 => "MOVE",
        13 => "COPY",
        14 => "PROPFIND",
        15 => "PROPPATCH",
        16 => "MKCOL",
        17 => "LOCK",
        18 => "UNLOCK",
        19 => "SEARCH",
        _ => return None,
    })
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let u = |name| props.u64(name);
    let status = |name| props.u64(name).map(|s| s as u16);
    Some(match id {
        1 => Event::Received {
            request: u("RequestId")?,
            connection: u("ConnectionId")?,
            client: props.sockaddr("RemoteAddr"),
        },
        2 => Event::Parsed { object: u("RequestObj")?, verb: props.u32("HttpVerb"), url: props.text("Url") },
        3 => Event::Delivered {
            object: u("RequestObj")?,
            request: u("RequestId")?,
            site: props.u32("SiteId"),
            queue: props.text("RequestQueueName"),
            url: props.text("Url"),
        },
        4 | 8 => Event::Response {
            request: u("RequestId")?,
            connection: u("ConnectionId"),
            status: status("StatusCode"),
            verb: props.text("Verb"),
        },
        5 | 9 => Event::Response { request: u("RequestId")?, connection: None, status: None, verb: None },
        10..=14 => Event::Sent {
            request: u("RequestId"),
            object: None,
            bytes: None,
            status: status("HttpStatus"),
            error: None,
        },
        15 => Event::Sent {
            request: u("RequestId"),
            object: None,
            bytes: None,
            status: None,
            error: props.u32("Status").filter(|&s| s != 0),
        },
        16 | 17 => Event::Sent {
            request: u("RequestId"),
            object: u("RequestObj"),
            bytes: u("BytesSent"),
            status: None,
            error: None,
        },
        21 => Event::ConnectionCreated {
            object: u("ConnectionObj")?,
            local: props.sockaddr("LocalAddr"),
            remote: props.sockaddr("RemoteAddr"),
        },
        22 => Event::ConnectionId { object: u("ConnectionObj")?, connection: u("ConnectionId")? },
        _ => return None,
    })
}

#[derive(Debug, Default)]
pub struct HttpServer {
    pub requests: Vec<ServerRequest>,
    by_id: FastMap<u64, usize>,
    /// Request pointers → the request parsed or delivered with them (pointers are reused).
    by_object: FastMap<u64, usize>,
    /// The request last received on each thread: parsing follows on the same thread.
    received_on: FastMap<u32, usize>,
    connections: FastMap<u64, (Option<Endpoint>, Option<Endpoint>)>,
    connection_ids: FastMap<u64, u64>,
}

impl HttpServer {
    /// The request with this id; one whose receipt the trace missed (it
    /// began before) starts at its first event.
    fn request(&mut self, id: u64, time: Time) -> usize {
        if let Some(&i) = self.by_id.get(&id) {
            return i;
        }
        self.requests.push(ServerRequest { request_id: id, received: time, last: time, ..ServerRequest::default() });
        self.by_id.insert(id, self.requests.len() - 1);
        self.requests.len() - 1
    }
}

impl HttpServer {
    pub(crate) fn apply(&mut self, head: &Head, e: Event) {
        let t = head.time;
        let s = self;
        match e {
            Event::ConnectionCreated { object, local, remote } => {
                s.connections.insert(object, (local, remote));
            }
            Event::ConnectionId { object, connection } => {
                s.connection_ids.insert(connection, object);
            }
            Event::Received { request, connection, client } => {
                let server = s.connection_ids.get(&connection).and_then(|o| s.connections.get(o)).and_then(|c| c.0);
                let i = s.requests.len();
                s.requests.push(ServerRequest {
                    request_id: request,
                    connection_id: Some(connection),
                    client,
                    server,
                    received: t,
                    last: t,
                    activity: head.related,
                    ..ServerRequest::default()
                });
                s.by_id.insert(request, i);
                if let Some(tid) = Head::known(head.tid) {
                    s.received_on.insert(tid, i);
                }
            }
            Event::Parsed { object, verb, url } => {
                let Some(&i) = Head::known(head.tid).and_then(|tid| s.received_on.get(&tid)) else { return };
                s.by_object.insert(object, i);
                let r = &mut s.requests[i];
                r.verb = verb.and_then(verb_name).map(str::to_string).or(r.verb.take());
                r.url = url.or(r.url.take());
                r.last = r.last.max(t);
            }
            Event::Delivered { object, request, site, queue, url } => {
                let i = s.request(request, t);
                s.by_object.insert(object, i);
                let r = &mut s.requests[i];
                r.site = site;
                r.queue = queue;
                r.url = r.url.take().or(url);
                r.last = r.last.max(t);
            }
            Event::Response { request, connection, status, verb } => {
                let i = s.request(request, t);
                let r = &mut s.requests[i];
                r.status = status.or(r.status);
                r.verb = r.verb.take().or(verb);
                r.connection_id = r.connection_id.or(connection);
                r.worker_pid = r.worker_pid.or(Head::known(head.pid));
                r.last = r.last.max(t);
            }
            Event::Sent { request, object, bytes, status, error } => {
                let i = request.and_then(|r| s.by_id.get(&r)).or_else(|| object.and_then(|o| s.by_object.get(&o)));
                let Some(&i) = i else { return };
                let r = &mut s.requests[i];
                r.status = status.or(r.status);
                if let Some(b) = bytes {
                    *r.bytes_sent.get_or_insert(0) += b;
                }
                r.error = error.or(r.error);
                r.last = r.last.max(t);
            }
        }
    }
}

impl HttpServer {
    /// The table of server requests; the worker process's name from
    /// `processes`, the events of each request's activity from `activities`.
    pub(crate) fn rows(&self, processes: &Processes, activities: &Activities) -> Vec<ServerRow> {
        self.requests
            .iter()
            .map(|r| ServerRow {
                request_id: r.request_id,
                connection_id: r.connection_id,
                verb: r.verb.clone(),
                url: r.url.clone(),
                status: r.status,
                bytes_sent: r.bytes_sent,
                client: r.client,
                server: r.server,
                site: r.site,
                queue: r.queue.clone(),
                process: r.worker_pid.and_then(|pid| processes.name(pid, r.received)).map(str::to_string),
                pid: r.worker_pid,
                start: r.received,
                end: r.last,
                error: r.error.map(errors::ntstatus),
                activity: (!r.activity.is_zero()).then_some(r.activity),
                activity_events: activities.get(&r.activity).map(|a| a.events),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(time: Time, pid: u32) -> Head {
        Head {
            time,
            raw: time as u64,
            pid: Some(pid),
            tid: Some(8),
            activity: Guid::ZERO,
            related: Guid::ZERO,
            stack: None,
        }
    }

    #[test]
    fn a_request_received_before_the_trace_starts_at_its_first_event() {
        let mut net = Network::new(0);
        let delivered = Event::Delivered {
            object: 0xfa80,
            request: 0x42,
            site: Some(1),
            queue: Some("DefaultAppPool".into()),
            url: Some("http://server:80/a".into()),
        };
        net.http_server.apply(&head(100, 4), delivered);
        net.http_server.apply(
            &head(150, 4400),
            Event::Response { request: 0x42, connection: Some(7), status: Some(200), verb: Some("GET".into()) },
        );
        let rows = net.report().http_server;
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.request_id, r.start, r.end, r.status, r.pid), (0x42, 100, 150, Some(200), Some(4400)));
        assert_eq!(
            (r.verb.as_deref(), r.url.as_deref(), r.connection_id),
            (Some("GET"), Some("http://server:80/a"), Some(7))
        );
    }
}
