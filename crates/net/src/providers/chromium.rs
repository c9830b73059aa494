//! Chromium-based browsers — Chrome, Edge, Edge WebView2 and the apps that
//! embed them — as their trace-event ETW providers log them.
//!
//! Chromium exports its `TRACE_EVENT`s to ETW under one GUID per browser
//! (Chrome's `D2D578D9-…`, Edge's per channel; MSO-Scripts'
//! `EdgeChrome.wprp`), keyword bits by category (`netlog` is 0x80;
//! `base/trace_event/trace_event_etw_export_win.cc`), in three shapes over
//! the years, all read here:
//!
//! - the manifest event `ChromeEvent` (id 1: `Name`, `Phase`, three
//!   argument name/value pairs; `chrome_events_win.man`), the first exporter;
//! - TraceLogging events named after the trace event, with `Phase` (`Begin`,
//!   `End`, `Complete`, `Complete End`, `Async Begin`, `Nestable Async
//!   Begin`, `Instant`, …) and the arguments as fields of their own name;
//! - TraceLogging from the Perfetto exporter (`etw_interceptor_win.cc`):
//!   `Phase` is `Begin`, `End` or `Instant`, `Id` names the track, `Timestamp`
//!   and, on `End`, `Duration` (µs), then the arguments.
//!
//! Begin and end events pair into regions, as the reference's "regions of
//! interest" pair them (`MSEdge-*.regions.xml`): `Complete`/`Complete End`
//! and `Begin`/`End` on one thread (or on one track, for the Perfetto
//! exporter), `Async Begin`/`Async End` and their nestable forms by name in
//! the process. A URL-bearing event is found by its arguments: a field whose
//! name says URL (`url`, `Initial URL`, `script_url`…) or whose value is an
//! absolute http(s)/ws(s) URL.
//!
//! NetLog — Chromium's own network log, exported as trace events of the
//! `netlog` category — names requests, sockets and sessions and how they
//! depend on each other: `netlog` turns it into request rows joined to
//! Winsock and TCP/UDP.

use nettrail_decode::Value;
use nettrail_decode::fasthash::FastMap;
use nettrail_etl::{Guid, Record};

use crate::event::{Head, Props, Time};
use crate::pools::{Origin, Pools};
use crate::providers::netlog::{self, NetLog};

/// The browsers' providers: GUID, the name the browser registers (its
/// TraceLogging provider name), and the short name rows show.
pub const BROWSERS: [(Guid, &str, &str); 7] = [
    (Guid::parse_const("d2d578d9-2936-45b6-a09f-30e32715f42d"), "Google.Chrome", "Chrome"),
    (Guid::parse_const("3a5f2396-5c8f-4f1f-9b67-6cca6c990e61"), "Microsoft.MSEdgeStable", "Edge"),
    (Guid::parse_const("bd089baa-4e52-4794-a887-9e96868570d2"), "Microsoft.MSEdgeBeta", "Edge Beta"),
    (Guid::parse_const("d30b5c9f-b58f-4dc9-afaf-134405d72107"), "Microsoft.MSEdgeDev", "Edge Dev"),
    (Guid::parse_const("c56b8664-45c5-4e65-b3c7-a8d6bd3f2e67"), "Microsoft.MSEdgeCanary", "Edge Canary"),
    (Guid::parse_const("e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d"), "Microsoft.MSEdgeWebView", "Edge WebView2"),
    (Guid::parse_const("49c85e08-e8a5-49d6-81ea-7270531ec8af"), "MSEdge_Internal", "Edge Internal"),
];

/// Chromium's `netlog` category's keyword bit.
pub const NETLOG_KEYWORD: u64 = 0x80;

/// A browser: its index in [`BROWSERS`].
pub type Browser = u8;

/// The short name of a browser.
pub fn browser_name(b: Browser) -> &'static str {
    BROWSERS.get(usize::from(b)).map_or("Chromium", |(_, _, n)| n)
}

/// Open regions a thread, track or name keeps at most: past it, the oldest
/// is let go (it stays open, and an end no longer closes it).
const MAX_OPEN: usize = 256;

/// A trace event's phase, as the exporters spell it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Phase {
    Begin,
    End,
    Complete,
    CompleteEnd,
    AsyncBegin,
    AsyncEnd,
    Instant,
}

impl Phase {
    fn parse(text: &str) -> Phase {
        match text {
            "Begin" | "B" => Phase::Begin,
            "End" | "E" => Phase::End,
            "Complete" | "X" => Phase::Complete,
            "Complete End" => Phase::CompleteEnd,
            "Async Begin" | "Nestable Async Begin" | "S" | "b" => Phase::AsyncBegin,
            "Async End" | "Nestable Async End" | "F" | "e" => Phase::AsyncEnd,
            _ => Phase::Instant,
        }
    }
}

/// One trace event of a browser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub browser: Browser,
    pub name: String,
    pub phase: Phase,
    /// The phase as logged (`Nestable Async Instant` …).
    pub phase_text: String,
    /// The Perfetto exporter's track (`Id`).
    pub track: Option<u64>,
    /// The Perfetto exporter's `Duration` of an `End` (µs).
    pub duration: Option<u64>,
    /// The arguments, as text, in logged order.
    pub args: Vec<(String, String)>,
    /// A NetLog entry (category `netlog`, with its `params`).
    pub netlog: Option<NetLog>,
}

impl Event {
    /// Events whose stack says where a request began.
    pub(crate) fn starts_something(&self) -> bool {
        match &self.netlog {
            Some(n) => n.starts_request(&self.name, self.phase),
            None => {
                matches!(self.phase, Phase::Begin | Phase::Complete | Phase::AsyncBegin | Phase::Instant)
                    && find_url(&self.args).is_some()
            }
        }
    }
}

/// The browser a provider GUID belongs to.
pub(crate) fn browser_of(provider: &Guid) -> Option<Browser> {
    BROWSERS.iter().position(|(g, _, _)| g == provider).and_then(|i| u8::try_from(i).ok())
}

/// A value as the text an argument shows.
fn text(v: &Value<'_>) -> Option<String> {
    Some(match v {
        Value::Signed(n) => n.to_string(),
        Value::Unsigned(n) => n.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => return None,
        other => other.as_str()?.trim_end_matches('\0').to_string(),
    })
}

/// Fields the exporters add to every event; the rest are the trace event's arguments.
const FRAMING: [&str; 5] = ["Name", "Phase", "Id", "Timestamp", "Duration"];

/// A browser's event: TraceLogging (`name` from its metadata) or the
/// manifest's `ChromeEvent` (id 1).
pub(crate) fn extract(
    browser: Browser,
    record: &Record<'_>,
    name: Option<&str>,
    props: &Props<'_, '_>,
) -> Option<Event> {
    let tracelogging = record.extended.find(nettrail_etl::extended::ExtType::EVENT_SCHEMA_TL).is_some();
    let phase_text = props.text("Phase").unwrap_or_default();
    let (name, args) = if tracelogging {
        let args = props
            .iter()
            .filter(|(n, _)| !FRAMING.contains(n))
            .filter_map(|(n, v)| Some((n.to_string(), text(v)?)))
            .collect();
        (name?.to_string(), args)
    } else if record.id == 1 {
        // ChromeEvent: Name, Phase, then three (name, value) pairs, empty when unused.
        let mut args = Vec::new();
        for i in 1..=3 {
            if let (Some(n), Some(v)) = (props.text(&format!("ArgName{i}")), props.text(&format!("ArgValue{i}"))) {
                args.push((n, v));
            }
        }
        (props.text("Name")?, args)
    } else {
        return None;
    };
    let phase = Phase::parse(&phase_text);
    let track = props.u64("Id");
    let netlog = (record.keywords & NETLOG_KEYWORD != 0).then(|| NetLog::parse(track, &args)).flatten();
    Some(Event { browser, name, phase, phase_text, track, duration: props.u64("Duration"), args, netlog })
}

/// Whether an argument names a URL.
fn url_named(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.contains("url") || n.contains("uri") || n == "href" || n == "location" || n == "src"
}

/// An absolute URL with a host (`https://…`, `wss://…`), as browsers log them.
pub(crate) fn is_url(value: &str) -> bool {
    let Some((scheme, rest)) = value.split_once("://") else { return false };
    let scheme = scheme.to_ascii_lowercase();
    matches!(scheme.as_str(), "http" | "https" | "ws" | "wss")
        && rest.split(['/', '?', '#']).next().is_some_and(|host| !host.is_empty())
        && !value.chars().any(char::is_whitespace)
}

/// The URL an event's arguments carry: a field named for one whose value is
/// a URL, else any value shaped like one.
pub(crate) fn find_url(args: &[(String, String)]) -> Option<String> {
    let named = args.iter().find(|(n, v)| url_named(n) && is_url(v));
    named.or_else(|| args.iter().find(|(_, v)| is_url(v))).map(|(_, v)| v.clone())
}

/// A region (begin and end paired) or a single event.
#[derive(Clone, Debug)]
pub struct Region {
    pub browser: Browser,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub name: String,
    /// A paired region (else a single event).
    pub paired: bool,
    pub start: Time,
    /// `None` while open (a begin without its end).
    pub end: Option<Time>,
    /// Its begin was before the trace: the start comes from the end's `Duration`.
    pub inferred: bool,
    pub url: Option<String>,
    /// Arguments of its begin and end.
    pub args: Vec<(String, String)>,
    pub started_by: Option<Origin>,
}

/// The browsers' events: regions and single events, and the NetLog.
#[derive(Debug, Default)]
pub struct Chromium {
    pub regions: Vec<Region>,
    pub netlog: netlog::Sources,
    /// Open `Begin`/`Complete` regions per thread, innermost last.
    by_thread: FastMap<(Browser, u32, u32), Vec<usize>>,
    /// Open regions per Perfetto track.
    by_track: FastMap<(Browser, u32, u64), Vec<usize>>,
    /// Open async regions per name in a process.
    by_name: FastMap<(Browser, u32, String), Vec<usize>>,
}

impl Chromium {
    pub(crate) fn apply(&mut self, head: &Head, e: Event, pools: &Pools) {
        if let Some(n) = e.netlog {
            self.netlog.apply(head, e.browser, &e.name, e.phase, n, pools);
            return;
        }
        let t = head.time;
        let pid = Head::known(head.pid);
        let tid = Head::known(head.tid);
        let p = pid.unwrap_or(0);
        let starts = || Some(pools.origin(head));
        let new_region = |paired: bool, end: Option<Time>, args: Vec<(String, String)>| Region {
            browser: e.browser,
            pid,
            tid,
            name: e.name.clone(),
            paired,
            start: t,
            end,
            inferred: false,
            url: find_url(&args),
            args,
            started_by: starts(),
        };
        match e.phase {
            Phase::Begin | Phase::Complete | Phase::AsyncBegin => {
                let id = self.regions.len();
                self.regions.push(new_region(true, None, e.args.clone()));
                let stack = match (e.phase, e.track) {
                    (Phase::AsyncBegin, _) => self.by_name.entry((e.browser, p, e.name.clone())).or_default(),
                    (_, Some(track)) => self.by_track.entry((e.browser, p, track)).or_default(),
                    _ => self.by_thread.entry((e.browser, p, tid.unwrap_or(0))).or_default(),
                };
                // A begin whose end never comes must not make every later end's search longer.
                if stack.len() >= MAX_OPEN {
                    stack.remove(0);
                }
                stack.push(id);
            }
            Phase::End | Phase::CompleteEnd | Phase::AsyncEnd => {
                let stack = match (e.phase, e.track) {
                    (Phase::AsyncEnd, _) => self.by_name.get_mut(&(e.browser, p, e.name.clone())),
                    (_, Some(track)) => self.by_track.get_mut(&(e.browser, p, track)),
                    _ => self.by_thread.get_mut(&(e.browser, p, tid.unwrap_or(0))),
                };
                let regions = &self.regions;
                // The innermost open region of that name (an end may name none: the innermost).
                let found = stack.and_then(|s| {
                    let at = s.iter().rposition(|&r| e.name.is_empty() || regions[r].name == e.name)?;
                    Some(s.remove(at))
                });
                match found {
                    Some(r) => {
                        let region = &mut self.regions[r];
                        region.end = Some(t);
                        region.args.extend(e.args.iter().cloned());
                        if region.url.is_none() {
                            region.url = find_url(&e.args);
                        }
                    }
                    None => {
                        // Its begin was not in the trace: the Perfetto exporter's duration says when it was.
                        let mut region = new_region(true, Some(t), e.args.clone());
                        if let Some(us) = e.duration {
                            region.start = t.saturating_sub(i64::try_from(us.saturating_mul(10)).unwrap_or(0));
                            region.inferred = true;
                        } else {
                            region.paired = false;
                        }
                        region.started_by = None;
                        self.regions.push(region);
                    }
                }
            }
            Phase::Instant => {
                let mut args = e.args.clone();
                if e.phase_text != "Instant" && !e.phase_text.is_empty() {
                    args.insert(0, ("Phase".to_string(), e.phase_text.clone()));
                }
                self.regions.push(new_region(false, Some(t), args));
            }
        }
    }
}

/// One row of the `browser` table: a region, an event, or a NetLog source.
#[derive(Clone, Debug, PartialEq)]
pub struct BrowserRow {
    /// `Chrome`, `Edge`, `Edge WebView2` …
    pub browser: &'static str,
    pub process: Option<String>,
    pub pid: Option<u32>,
    pub thread: Option<u32>,
    /// `region` (a begin and its end), `event` (a single event), `netlog`
    /// (a NetLog source: a URL request, a socket, a session).
    pub kind: &'static str,
    /// The trace event's name; a NetLog source's type (`URL_REQUEST`, `SOCKET`, `QUIC_SESSION` …).
    pub name: String,
    pub url: Option<String>,
    pub start: Time,
    pub end: Option<Time>,
    pub open_at_end: bool,
    /// Arguments (`name=value`); a NetLog source's facts.
    pub args: Vec<String>,
    /// For a NetLog source, its id.
    pub source: Option<u64>,
    /// How a URL request (NetLog's or an event's) was joined to its socket:
    /// `endpoint`, `thread`, `host`, or `none`.
    pub join: Option<&'static str>,
}

impl crate::report::Gatherer<'_> {
    /// The regions and single events of the browsers as browser rows.
    pub(crate) fn region_rows(&self, out: &mut Vec<BrowserRow>) {
        let net = self.net;
        for r in &net.chromium.regions {
            let end = if r.paired { r.end } else { Some(r.start) };
            out.push(BrowserRow {
                browser: browser_name(r.browser),
                process: self.process(r.pid, r.start),
                pid: r.pid,
                thread: r.tid,
                kind: if r.paired { "region" } else { "event" },
                name: r.name.clone(),
                url: r.url.clone(),
                start: r.start,
                end: Some(end.unwrap_or(net.trace_end)),
                open_at_end: end.is_none(),
                args: r.args.iter().map(|(n, v)| format!("{n}={v}")).collect(),
                source: None,
                join: None,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_by_name_and_by_shape() {
        let args = |v: &[(&str, &str)]| v.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect::<Vec<_>>();
        assert_eq!(
            find_url(&args(&[("data", "https://cdn.example.com/a.js"), ("Initial URL", "https://www.example.com/")])),
            Some("https://www.example.com/".to_string())
        );
        assert_eq!(find_url(&args(&[("data", "wss://push.example.com/s")])), Some("wss://push.example.com/s".into()));
        assert_eq!(find_url(&args(&[("url", "about:blank"), ("name", "https://")])), None);
        assert_eq!(find_url(&args(&[("url", "chrome://newtab/")])), None);
        assert!(!is_url("https://a.example/ b"));
        assert_eq!(Phase::parse("Nestable Async End"), Phase::AsyncEnd);
        assert_eq!(Phase::parse("Complete End"), Phase::CompleteEnd);
        assert_eq!(Phase::parse("Phase Create Object"), Phase::Instant);
    }
}
