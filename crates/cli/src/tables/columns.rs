//! The columns of each table, in order, and which ones the terminal table
//! shows. Names are stable: they are the CSV header and the JSON keys.

use nettrail_etl::{FileTime, Guid};
use nettrail_net::report::duration;
use nettrail_net::{ConnectionRow, DnsRow, Report, RequestRow, ServerRow, Stitched};

use super::render::{Cell, Column, column};
use super::{Filterable, StackView};

fn utc(t: i64) -> Cell {
    let mut buf = [0u8; 28];
    let n = FileTime(t).encode(&mut buf);
    Cell::Text(String::from_utf8_lossy(&buf[..n]).into_owned())
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

/// A request row with its number (its place in start order, which
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

/// The stack columns, by the view `--stacks` names.
pub fn stack_column<'r>(view: StackView) -> Column<Request<'r>> {
    let frames = |v: Option<&[String]>| v.map_or(Cell::Null, |f| Cell::List(f.to_vec()));
    match view {
        StackView::First => {
            column("first_stack", true, move |r: &Request| frames(r.stacks.as_ref().map(|s| s.first())))
        }
        StackView::Last => column("last_stack", true, move |r: &Request| frames(r.stacks.as_ref().map(|s| s.last()))),
        StackView::Middle => column("middle_stacks", true, move |r: &Request| {
            Cell::opt(r.stacks.as_ref().map(|s| Cell::List(s.middle())))
        }),
        StackView::Full => {
            column("full_stack", true, move |r: &Request| Cell::opt(r.stacks.as_ref().map(|s| Cell::List(s.full()))))
        }
    }
}

pub fn requests<'r>(report: &Report) -> Vec<Column<Request<'r>>> {
    let t0 = report.trace_start;
    vec![
        column("request", true, |r: &Request| Cell::UInt(r.number as u64)),
        column("start_s", true, move |r: &Request| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", true, |r: &Request| seconds(duration(r.start, r.end))),
        column("process", true, |r: &Request| Cell::opt(r.process.clone())),
        column("pid", true, |r: &Request| Cell::opt(r.pid)),
        column("threads", false, |r: &Request| Cell::Numbers(r.threads.iter().map(|&t| u64::from(t)).collect())),
        column("layer", true, |r: &Request| Cell::text(r.layer.name())),
        column("protocol", false, |r: &Request| Cell::opt(r.protocol.clone())),
        column("method", true, |r: &Request| Cell::opt(r.method.clone())),
        column("server", true, |r: &Request| Cell::opt(r.server.clone())),
        column("alt_names", false, |r: &Request| list(&r.alt_names)),
        column("ip", true, |r: &Request| Cell::opt(r.ip.map(|a| a.to_string()))),
        column("port", true, |r: &Request| Cell::opt(r.port)),
        column("service", true, |r: &Request| Cell::opt(r.service.clone())),
        column("network", false, |r: &Request| Cell::opt(r.network)),
        column("status", true, |r: &Request| Cell::opt(r.status.clone())),
        column("bytes_sent", true, |r: &Request| Cell::opt(r.bytes_sent)),
        column("bytes_received", true, |r: &Request| Cell::opt(r.bytes_received)),
        column("start_utc", false, |r: &Request| utc(r.start)),
        column("open_at_end", false, |r: &Request| Cell::Bool(r.open_at_end)),
        column("error", false, |r: &Request| Cell::opt(r.error.clone())),
        column("activity", false, |r: &Request| guid(r.activity)),
        column("activity_events", false, |r: &Request| Cell::opt(r.activity_events)),
        column("local", false, |r: &Request| Cell::opt(r.local.map(|e| e.to_string()))),
        column("app", false, |r: &Request| Cell::opt(r.app.clone())),
        column("url", true, |r: &Request| Cell::opt(r.url.clone())),
    ]
}

impl Filterable for Request<'_> {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
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

pub fn connections(report: &Report) -> Vec<Column<ConnectionRow>> {
    let t0 = report.trace_start;
    vec![
        column("start_s", true, move |r: &ConnectionRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", true, |r: &ConnectionRow| seconds(duration(r.start, r.end))),
        column("process", true, |r: &ConnectionRow| Cell::opt(r.process.clone())),
        column("pid", true, |r: &ConnectionRow| Cell::opt(r.pid)),
        column("thread", false, |r: &ConnectionRow| Cell::opt(r.thread)),
        column("protocol", true, |r: &ConnectionRow| Cell::text(r.protocol)),
        column("local", true, |r: &ConnectionRow| Cell::opt(r.local.map(|e| e.to_string()))),
        column("remote", true, |r: &ConnectionRow| Cell::opt(r.remote.map(|e| e.to_string()))),
        column("server", true, |r: &ConnectionRow| Cell::opt(r.server.clone())),
        column("state", true, |r: &ConnectionRow| Cell::text(r.state)),
        column("origin", true, |r: &ConnectionRow| Cell::text(r.origin)),
        column("bytes_sent", true, |r: &ConnectionRow| Cell::UInt(r.bytes_sent)),
        column("bytes_received", true, |r: &ConnectionRow| Cell::UInt(r.bytes_received)),
        column("retransmits", true, |r: &ConnectionRow| Cell::UInt(r.retransmits)),
        column("layer", true, |r: &ConnectionRow| Cell::opt(r.layer.map(|l| l.name()))),
        column("start_utc", false, |r: &ConnectionRow| utc(r.start)),
        column("open_at_end", false, |r: &ConnectionRow| Cell::Bool(r.open_at_end)),
        column("error", false, |r: &ConnectionRow| Cell::opt(r.error.clone())),
        column("pointer", false, |r: &ConnectionRow| hex(r.pointer)),
    ]
}

impl Filterable for ConnectionRow {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
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

pub fn dns(report: &Report) -> Vec<Column<DnsRow>> {
    let t0 = report.trace_start;
    vec![
        column("start_s", true, move |r: &DnsRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", true, |r: &DnsRow| seconds(duration(r.start, r.end))),
        column("kind", true, |r: &DnsRow| Cell::text(r.kind)),
        column("process", true, |r: &DnsRow| Cell::opt(r.process.clone())),
        column("pid", true, |r: &DnsRow| Cell::opt(r.pid)),
        column("thread", false, |r: &DnsRow| Cell::opt(r.thread)),
        column("name", true, |r: &DnsRow| Cell::text(r.name.clone())),
        column("type", true, |r: &DnsRow| Cell::opt(r.record_type.clone())),
        column("status", true, |r: &DnsRow| Cell::opt(r.status.clone())),
        column("cached", true, |r: &DnsRow| Cell::Bool(r.cached)),
        column("answers", true, |r: &DnsRow| list(&r.answers)),
        column("aliases", true, |r: &DnsRow| list(&r.aliases)),
        column("servers", false, |r: &DnsRow| list(&r.servers)),
        column("resolvers", false, |r: &DnsRow| list(&r.resolvers)),
        column("start_utc", false, |r: &DnsRow| utc(r.start)),
        column("activity", false, |r: &DnsRow| guid(r.activity)),
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

pub fn http_server(report: &Report) -> Vec<Column<ServerRow>> {
    let t0 = report.trace_start;
    vec![
        column("start_s", true, move |r: &ServerRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", true, |r: &ServerRow| seconds(duration(r.start, Some(r.end)))),
        column("request_id", true, |r: &ServerRow| hex(Some(r.request_id))),
        column("connection_id", false, |r: &ServerRow| hex(r.connection_id)),
        column("verb", true, |r: &ServerRow| Cell::opt(r.verb.clone())),
        column("status", true, |r: &ServerRow| Cell::opt(r.status)),
        column("bytes_sent", true, |r: &ServerRow| Cell::opt(r.bytes_sent)),
        column("client", true, |r: &ServerRow| Cell::opt(r.client.map(|e| e.to_string()))),
        column("server", false, |r: &ServerRow| Cell::opt(r.server.map(|e| e.to_string()))),
        column("site", false, |r: &ServerRow| Cell::opt(r.site)),
        column("queue", true, |r: &ServerRow| Cell::opt(r.queue.clone())),
        column("process", false, |r: &ServerRow| Cell::opt(r.process.clone())),
        column("pid", false, |r: &ServerRow| Cell::opt(r.pid)),
        column("start_utc", false, |r: &ServerRow| utc(r.start)),
        column("error", false, |r: &ServerRow| Cell::opt(r.error.clone())),
        column("activity", false, |r: &ServerRow| guid(r.activity)),
        column("activity_events", false, |r: &ServerRow| Cell::opt(r.activity_events)),
        column("url", true, |r: &ServerRow| Cell::opt(r.url.clone())),
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
