//! The columns of each table, in order, with their types and which ones
//! the terminal table shows. Names and types are stable: they are the CSV
//! header, the JSON keys and the Parquet schema, the same for every trace.

use nettrail_etl::Guid;
use nettrail_net::report::{Timings, duration};
use nettrail_net::{ConnectionRow, DnsRow, Report, RequestRow, ServerRow, Stitched};

use crate::cell::Kind::{Bool, Float, Int, IntList, Text, TextList, Timestamp};
use crate::cell::{Cell, Column, column};
use crate::select::Filterable;
use nettrail_net::Direction;

pub use crate::browser::{browser, browser_from};

fn utc(t: i64) -> Cell {
    Cell::Time(t)
}

fn seconds(v: Option<f64>) -> Cell {
    v.map_or(Cell::Null, |v| Cell::Float(v, 6))
}

fn guid(g: Option<Guid>) -> Cell {
    Cell::opt(g.map(|g| g.to_string()))
}

fn list<T: ToString>(v: &[T]) -> Cell {
    Cell::List(v.iter().map(ToString::to_string).collect())
}

fn hex(v: Option<u64>) -> Cell {
    Cell::opt(v.map(|v| format!("0x{v:x}")))
}

/// A request row with its number (its place in the report's order, which
/// `nettrail stack --request` takes) and, when asked for, its stitched stacks.
#[derive(Debug)]
pub struct Request<'r> {
    pub number: usize,
    pub row: &'r RequestRow,
    pub stacks: Option<Stitched>,
}

impl std::ops::Deref for Request<'_> {
    type Target = RequestRow;

    fn deref(&self) -> &RequestRow {
        self.row
    }
}

/// Which stacks of a stitched chain a column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StackView {
    /// The code that began the work.
    First,
    /// The request's own stack.
    Last,
    /// The stacks between, each after the hand-off into it.
    Middle,
    /// All of them.
    Full,
}

/// The stack column of a view: a list of frames.
pub fn stack_column<'r>(view: StackView) -> Column<Request<'r>> {
    let frames = |v: Option<&[String]>| v.map_or(Cell::Null, |f| Cell::List(f.to_vec()));
    match view {
        StackView::First => {
            column("first_stack", TextList, true, move |r: &Request| frames(r.stacks.as_ref().map(|s| s.first())))
        }
        StackView::Last => {
            column("last_stack", TextList, true, move |r: &Request| frames(r.stacks.as_ref().map(|s| s.last())))
        }
        StackView::Middle => column("middle_stacks", TextList, true, move |r: &Request| {
            Cell::opt(r.stacks.as_ref().map(|s| Cell::List(s.middle())))
        }),
        StackView::Full => column("full_stack", TextList, true, move |r: &Request| {
            Cell::opt(r.stacks.as_ref().map(|s| Cell::List(s.full())))
        }),
    }
}

/// A phase of the request's time, in seconds (see [`nettrail_net::report::Phases::timings`]).
fn phase<'r>(name: &'static str, of: fn(&Timings) -> Option<i64>) -> Column<Request<'r>> {
    column(name, Float, false, move |r: &Request| {
        seconds(r.phases.timings(r.start, r.end).as_ref().and_then(of).map(|t| t as f64 / 1e7))
    })
}

/// The columns of `requests` for a report.
pub fn requests<'r>(report: &Report) -> Vec<Column<Request<'r>>> {
    requests_from(report.trace_start)
}

/// The columns of `requests`, with times counted from `t0` (a FILETIME).
pub fn requests_from<'r>(t0: i64) -> Vec<Column<Request<'r>>> {
    vec![
        column("request", Int, true, |r: &Request| Cell::UInt(r.number as u64)),
        column("start_s", Float, true, move |r: &Request| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", Float, true, |r: &Request| seconds(duration(r.start, r.end))),
        column("process", Text, true, |r: &Request| Cell::opt(r.process.clone())),
        column("pid", Int, true, |r: &Request| Cell::opt(r.pid)),
        column("threads", IntList, false, |r: &Request| {
            Cell::Numbers(r.threads.iter().map(|&t| u64::from(t)).collect())
        }),
        column("layer", Text, true, |r: &Request| Cell::text(r.layer.name())),
        column("direction", Text, true, |r: &Request| Cell::text(r.direction.name())),
        column("protocol", Text, false, |r: &Request| Cell::opt(r.protocol.clone())),
        column("method", Text, true, |r: &Request| Cell::opt(r.method.clone())),
        column("server", Text, true, |r: &Request| Cell::opt(r.server.clone())),
        column("alt_names", TextList, false, |r: &Request| list(&r.alt_names)),
        column("ip", Text, true, |r: &Request| Cell::opt(r.ip.map(|a| a.to_string()))),
        column("port", Int, true, |r: &Request| Cell::opt(r.port)),
        column("service", Text, true, |r: &Request| Cell::opt(r.service.clone())),
        column("network", Text, false, |r: &Request| Cell::opt(r.network)),
        column("status", Text, true, |r: &Request| Cell::opt(r.status.clone())),
        column("state", Text, true, |r: &Request| Cell::opt(r.state)),
        column("bytes_sent", Int, true, |r: &Request| Cell::opt(r.bytes_sent)),
        column("bytes_received", Int, true, |r: &Request| Cell::opt(r.bytes_received)),
        column("start_utc", Timestamp, false, |r: &Request| utc(r.start)),
        column("open_at_end", Bool, false, |r: &Request| Cell::Bool(r.open_at_end)),
        column("error", Text, false, |r: &Request| Cell::opt(r.error.clone())),
        column("activity", Text, false, |r: &Request| guid(r.activity)),
        column("activity_events", Int, false, |r: &Request| Cell::opt(r.activity_events)),
        column("local", Text, false, |r: &Request| Cell::opt(r.local.map(|e| e.to_string()))),
        column("app", Text, false, |r: &Request| Cell::opt(r.app.clone())),
        phase("blocked_s", |t| t.blocked),
        phase("dns_s", |t| t.dns),
        phase("connect_s", |t| t.connect),
        phase("tls_s", |t| t.tls),
        phase("send_s", |t| t.send),
        phase("wait_s", |t| t.wait),
        phase("receive_s", |t| t.receive),
        column("redirect_url", Text, false, |r: &Request| Cell::opt(r.redirect_url.clone())),
        column("request_headers", Text, false, |r: &Request| Cell::opt(r.request_headers.clone())),
        column("response_headers", Text, false, |r: &Request| Cell::opt(r.response_headers.clone())),
        column("url", Text, true, |r: &Request| Cell::opt(r.url.clone())),
    ]
}

impl Filterable for Request<'_> {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
    }

    fn direction(&self) -> Option<Direction> {
        Some(self.row.direction)
    }

    fn hosts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.server.iter().chain(&self.alt_names).cloned().collect();
        v.extend(self.ip.map(|a| a.to_string()));
        v
    }

    fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

/// The columns of `connections` for a report.
pub fn connections(report: &Report) -> Vec<Column<ConnectionRow>> {
    connections_from(report.trace_start)
}

/// The columns of `connections`, with times counted from `t0` (a FILETIME).
pub fn connections_from(t0: i64) -> Vec<Column<ConnectionRow>> {
    vec![
        column("start_s", Float, true, move |r: &ConnectionRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", Float, true, |r: &ConnectionRow| seconds(duration(r.start, r.end))),
        column("process", Text, true, |r: &ConnectionRow| Cell::opt(r.process.clone())),
        column("pid", Int, true, |r: &ConnectionRow| Cell::opt(r.pid)),
        column("thread", Int, false, |r: &ConnectionRow| Cell::opt(r.thread)),
        column("protocol", Text, true, |r: &ConnectionRow| Cell::text(r.protocol)),
        column("direction", Text, true, |r: &ConnectionRow| Cell::text(r.direction.name())),
        column("local", Text, true, |r: &ConnectionRow| Cell::opt(r.local.map(|e| e.to_string()))),
        column("remote", Text, true, |r: &ConnectionRow| Cell::opt(r.remote.map(|e| e.to_string()))),
        column("server", Text, true, |r: &ConnectionRow| Cell::opt(r.server.clone())),
        column("state", Text, true, |r: &ConnectionRow| Cell::text(r.state)),
        column("origin", Text, true, |r: &ConnectionRow| Cell::text(r.origin)),
        column("bytes_sent", Int, true, |r: &ConnectionRow| Cell::UInt(r.bytes_sent)),
        column("bytes_received", Int, true, |r: &ConnectionRow| Cell::UInt(r.bytes_received)),
        column("retransmits", Int, true, |r: &ConnectionRow| Cell::UInt(r.retransmits)),
        column("layer", Text, true, |r: &ConnectionRow| Cell::opt(r.layer.map(|l| l.name()))),
        column("start_utc", Timestamp, false, |r: &ConnectionRow| utc(r.start)),
        column("open_at_end", Bool, false, |r: &ConnectionRow| Cell::Bool(r.open_at_end)),
        column("error", Text, false, |r: &ConnectionRow| Cell::opt(r.error.clone())),
        column("pointer", Text, false, |r: &ConnectionRow| hex(r.pointer)),
        // QUIC connections (protocol QUIC).
        column("connection_id", Text, false, |r: &ConnectionRow| {
            Cell::opt(r.quic.as_ref().and_then(|q| q.connection_id.clone()))
        }),
        column("handshake_s", Float, false, |r: &ConnectionRow| seconds(r.quic.as_ref().and_then(|q| q.handshake))),
        column("streams", Int, false, |r: &ConnectionRow| Cell::opt(r.quic.as_ref().and_then(|q| q.streams))),
        column("quic_version", Text, false, |r: &ConnectionRow| {
            Cell::opt(r.quic.as_ref().and_then(|q| q.version.clone()))
        }),
        column("close_reason", Text, false, |r: &ConnectionRow| {
            Cell::opt(r.quic.as_ref().and_then(|q| q.close_reason.clone()))
        }),
    ]
}

impl Filterable for ConnectionRow {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
    }

    fn direction(&self) -> Option<Direction> {
        Some(self.direction)
    }

    fn hosts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.server.iter().cloned().collect();
        v.extend(self.remote.map(|e| e.address.to_string()));
        v
    }

    fn url(&self) -> Option<&str> {
        None
    }
}

/// The columns of `dns` for a report.
pub fn dns(report: &Report) -> Vec<Column<DnsRow>> {
    dns_from(report.trace_start)
}

/// The columns of `dns`, with times counted from `t0` (a FILETIME).
pub fn dns_from(t0: i64) -> Vec<Column<DnsRow>> {
    vec![
        column("start_s", Float, true, move |r: &DnsRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", Float, true, |r: &DnsRow| seconds(duration(r.start, r.end))),
        column("kind", Text, true, |r: &DnsRow| Cell::text(r.kind)),
        column("process", Text, true, |r: &DnsRow| Cell::opt(r.process.clone())),
        column("pid", Int, true, |r: &DnsRow| Cell::opt(r.pid)),
        column("thread", Int, false, |r: &DnsRow| Cell::opt(r.thread)),
        column("name", Text, true, |r: &DnsRow| Cell::text(r.name.clone())),
        column("type", Text, true, |r: &DnsRow| Cell::opt(r.record_type.clone())),
        column("status", Text, true, |r: &DnsRow| Cell::opt(r.status.clone())),
        column("cached", Bool, true, |r: &DnsRow| Cell::Bool(r.cached)),
        column("answers", TextList, true, |r: &DnsRow| list(&r.answers)),
        column("aliases", TextList, true, |r: &DnsRow| list(&r.aliases)),
        column("servers", TextList, false, |r: &DnsRow| list(&r.servers)),
        column("resolvers", TextList, false, |r: &DnsRow| list(&r.resolvers)),
        column("start_utc", Timestamp, false, |r: &DnsRow| utc(r.start)),
        column("activity", Text, false, |r: &DnsRow| guid(r.activity)),
    ]
}

impl Filterable for DnsRow {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
    }

    fn hosts(&self) -> Vec<String> {
        let mut v = vec![self.name.clone()];
        v.extend(self.aliases.iter().cloned());
        v.extend(self.answers.iter().map(ToString::to_string));
        v
    }

    fn url(&self) -> Option<&str> {
        None
    }
}

/// The columns of `http_server` for a report.
pub fn http_server(report: &Report) -> Vec<Column<ServerRow>> {
    http_server_from(report.trace_start)
}

/// The columns of `http_server`, with times counted from `t0` (a FILETIME).
pub fn http_server_from(t0: i64) -> Vec<Column<ServerRow>> {
    vec![
        column("start_s", Float, true, move |r: &ServerRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", Float, true, |r: &ServerRow| seconds(duration(r.start, Some(r.end)))),
        column("request_id", Text, true, |r: &ServerRow| hex(Some(r.request_id))),
        column("connection_id", Text, false, |r: &ServerRow| hex(r.connection_id)),
        column("verb", Text, true, |r: &ServerRow| Cell::opt(r.verb.clone())),
        column("status", Int, true, |r: &ServerRow| Cell::opt(r.status)),
        column("bytes_sent", Int, true, |r: &ServerRow| Cell::opt(r.bytes_sent)),
        column("client", Text, true, |r: &ServerRow| Cell::opt(r.client.map(|e| e.to_string()))),
        column("server", Text, false, |r: &ServerRow| Cell::opt(r.server.map(|e| e.to_string()))),
        column("site", Int, false, |r: &ServerRow| Cell::opt(r.site)),
        column("queue", Text, true, |r: &ServerRow| Cell::opt(r.queue.clone())),
        column("process", Text, false, |r: &ServerRow| Cell::opt(r.process.clone())),
        column("pid", Int, false, |r: &ServerRow| Cell::opt(r.pid)),
        column("start_utc", Timestamp, false, |r: &ServerRow| utc(r.start)),
        column("error", Text, false, |r: &ServerRow| Cell::opt(r.error.clone())),
        column("activity", Text, false, |r: &ServerRow| guid(r.activity)),
        column("activity_events", Int, false, |r: &ServerRow| Cell::opt(r.activity_events)),
        column("url", Text, true, |r: &ServerRow| Cell::opt(r.url.clone())),
    ]
}

impl Filterable for ServerRow {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
    }

    fn hosts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.client.iter().map(|e| e.address.to_string()).collect();
        v.extend(self.url.as_deref().and_then(nettrail_net::report::url_host).map(str::to_string));
        v
    }

    fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}
