//! The columns of `browser`: the browsers' regions (a begin and its end),
//! single events and NetLog sources, each with its process, thread, name,
//! URL and times.

use nettrail_net::report::{duration, url_host};
use nettrail_net::{BrowserRow, Report};

use crate::cell::Kind::{Bool, Float, Int, Text, TextList, Timestamp};
use crate::cell::{Cell, Column, column};
use crate::select::Filterable;

/// The columns of `browser` for a report.
pub fn browser(report: &Report) -> Vec<Column<BrowserRow>> {
    browser_from(report.trace_start)
}

/// The columns of `browser`, with times counted from `t0` (a FILETIME).
pub fn browser_from(t0: i64) -> Vec<Column<BrowserRow>> {
    vec![
        column("start_s", Float, true, move |r: &BrowserRow| Cell::Float((r.start - t0) as f64 / 1e7, 6)),
        column("duration_s", Float, true, |r: &BrowserRow| {
            duration(r.start, r.end).map_or(Cell::Null, |v| Cell::Float(v, 6))
        }),
        column("browser", Text, true, |r: &BrowserRow| Cell::text(r.browser)),
        column("process", Text, true, |r: &BrowserRow| Cell::opt(r.process.clone())),
        column("pid", Int, true, |r: &BrowserRow| Cell::opt(r.pid)),
        column("thread", Int, true, |r: &BrowserRow| Cell::opt(r.thread)),
        column("kind", Text, true, |r: &BrowserRow| Cell::text(r.kind)),
        column("name", Text, true, |r: &BrowserRow| Cell::text(r.name.clone())),
        column("join", Text, false, |r: &BrowserRow| Cell::opt(r.join)),
        column("source", Int, false, |r: &BrowserRow| Cell::opt(r.source)),
        column("start_utc", Timestamp, false, |r: &BrowserRow| Cell::Time(r.start)),
        column("open_at_end", Bool, false, |r: &BrowserRow| Cell::Bool(r.open_at_end)),
        column("args", TextList, false, |r: &BrowserRow| Cell::List(r.args.clone())),
        column("url", Text, true, |r: &BrowserRow| Cell::opt(r.url.clone())),
    ]
}

impl Filterable for BrowserRow {
    fn process(&self) -> (Option<&str>, Option<u32>) {
        (self.process.as_deref(), self.pid)
    }

    fn hosts(&self) -> Vec<String> {
        self.url.as_deref().and_then(url_host).map(str::to_string).into_iter().collect()
    }

    fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}
