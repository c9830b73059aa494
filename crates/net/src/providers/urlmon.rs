//! Microsoft-Windows-URLMon: the URLs an URLMon host (Internet Explorer
//! hosts, Office, apps embedding the web browser control) asked for. URLMon
//! fetches through WinINet, so its URLs name WinINet's requests; a URL that
//! WinINet never fetched (served from a cache or by another protocol
//! handler) is a request of its own.

use crate::event::{Head, Props, Time};
use crate::report::{Gatherer, Layer, RequestRow, push_unique, scheme, url_host, url_port};

/// A URL URLMon handled.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UrlRequest {
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub time: Time,
    pub url: String,
    /// The most bytes URLMon reported for it (events 803, 804 and 808 report
    /// progress), if any.
    pub bytes: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    url: String,
    bytes: Option<u64>,
}

pub(crate) fn extract(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    if !(801..=808).contains(&id) {
        return None;
    }
    let url = props.text("URL")?;
    let bytes = matches!(id, 803 | 804 | 808).then(|| props.u64("Bytes")).flatten();
    Some(Event { url, bytes })
}

#[derive(Debug, Default)]
pub struct UrlMon {
    pub urls: Vec<UrlRequest>,
}

impl UrlMon {
    pub(crate) fn apply(&mut self, head: &Head, e: Event) {
        let pid = Head::known(head.pid);
        // One URL is named by several events in a row: one record.
        if let Some(last) = self.urls.iter_mut().rev().take(8).find(|u| u.pid == pid && u.url == e.url) {
            last.bytes = last.bytes.max(e.bytes);
            return;
        }
        self.urls.push(UrlRequest { pid, tid: Head::known(head.tid), time: head.time, url: e.url, bytes: e.bytes });
    }
}

/// URLMon URLs as request rows.
impl Gatherer<'_> {
    /// URLs URLMon handled that no WinINet request of the process fetched.
    pub(crate) fn urlmon_rows(&mut self, out: &mut Vec<RequestRow>) {
        let net = self.net;
        let fetched: std::collections::HashSet<(Option<u32>, String)> =
            net.wininet.requests.iter().filter_map(|r| Some((r.pid, r.url.as_deref()?.to_ascii_lowercase()))).collect();
        for u in &net.urlmon.urls {
            if fetched.contains(&(u.pid, u.url.to_ascii_lowercase())) {
                continue;
            }
            let host = url_host(&u.url);
            let (server, alt_names) = self.names(host, None);
            let mut threads = Vec::new();
            push_unique(&mut threads, u.tid);
            out.push(RequestRow {
                process: self.process(u.pid, u.time),
                pid: u.pid,
                threads,
                protocol: scheme(&u.url),
                url: Some(u.url.clone()),
                server,
                alt_names,
                port: url_port(&u.url),
                bytes_received: u.bytes,
                ..RequestRow::new(Layer::UrlMon, u.time)
            });
        }
    }
}
