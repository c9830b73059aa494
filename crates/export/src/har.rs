//! HAR 1.2 (HTTP Archive) of a trace's HTTP requests, for Chrome DevTools,
//! Fiddler and the HAR viewers: one entry per WinINet, WinHTTP, URLMon or
//! Chromium row with a URL. The HTTP version is the row's protocol where an
//! event said it (HTTP/2, HTTP/3; Chromium writes HTTP/1.1's status line for
//! every version), else the status line's. What a trace knows beyond HAR (process, threads, layer,
//! bytes at the layer, the stacks that started the request) goes into
//! `_`-prefixed fields, as HAR allows for custom data.
//!
//! ETW logs no header or body contents, so headers, cookies and content are
//! empty; sizes are the layer's byte counts. The phases of a request are not
//! split: its whole duration is `wait` (send and receive 0), said in the
//! timings' comment.

use std::io::{self, Write};

use nettrail_etl::FileTime;
use nettrail_net::{Layer, Report, RequestRow, Stitched};
use serde_json::{Map, Value, json};

/// Writes the HAR document. `stacks`, when given, holds the stitched stacks
/// of `report.requests`, row for row.
pub fn write_har(report: &Report, stacks: Option<&[Stitched]>, out: &mut impl Write) -> io::Result<()> {
    let entries: Vec<Value> = report
        .requests
        .iter()
        .enumerate()
        .filter(|(_, r)| is_http(r))
        .map(|(i, r)| entry(i + 1, r, stacks.and_then(|s| s.get(i))))
        .collect();
    let har = json!({
        "log": {
            "version": "1.2",
            "creator": { "name": "nettrail", "version": env!("CARGO_PKG_VERSION") },
            "pages": [],
            "entries": entries,
        }
    });
    serde_json::to_writer_pretty(&mut *out, &har)?;
    out.write_all(b"\n")
}

/// Rows that are HTTP requests with a URL.
fn is_http(r: &RequestRow) -> bool {
    matches!(r.layer, Layer::WinInet | Layer::WinHttp | Layer::UrlMon | Layer::Chromium)
        && r.url.as_deref().is_some_and(|u| u.starts_with("http://") || u.starts_with("https://"))
}

fn entry(number: usize, r: &RequestRow, stacks: Option<&Stitched>) -> Value {
    let url = r.url.clone().unwrap_or_default();
    let (version, status, text) = status_line(r.status.as_deref());
    let version = r.protocol.clone().filter(|p| p.starts_with("HTTP/")).unwrap_or(version);
    let total_ms = r.end.map_or(0.0, |end| (end - r.start).max(0) as f64 / 1e4);
    let mut e = Map::new();
    e.insert("startedDateTime".into(), Value::String(iso8601(r.start)));
    e.insert("time".into(), json!(total_ms));
    e.insert(
        "request".into(),
        json!({
            "method": r.method.clone().unwrap_or_else(|| "GET".into()),
            "url": url,
            "httpVersion": version,
            "cookies": [],
            "headers": [],
            "queryString": query_string(&url),
            "headersSize": -1,
            "bodySize": -1,
        }),
    );
    e.insert(
        "response".into(),
        json!({
            "status": status,
            "statusText": text,
            "httpVersion": version,
            "cookies": [],
            "headers": [],
            "content": { "size": r.bytes_received.map_or(-1, |b| b as i64), "mimeType": "" },
            "redirectURL": "",
            "headersSize": -1,
            "bodySize": r.bytes_received.map_or(-1, |b| b as i64),
        }),
    );
    e.insert("cache".into(), json!({}));
    e.insert(
        "timings".into(),
        json!({
            "blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
            "send": 0, "wait": total_ms, "receive": 0,
            "comment": "ETW gives the request's start and end; the whole duration is in wait",
        }),
    );
    if let Some(ip) = r.ip {
        e.insert("serverIPAddress".into(), Value::String(ip.to_string()));
    }
    if let Some(local) = r.local {
        // HAR's connection id: the client port (what DevTools shows).
        e.insert("connection".into(), Value::String(local.port.to_string()));
    }
    e.insert("_request".into(), json!(number));
    e.insert("_process".into(), json!(r.process));
    e.insert("_pid".into(), json!(r.pid));
    e.insert("_threads".into(), json!(r.threads));
    e.insert("_layer".into(), json!(r.layer.name()));
    e.insert("_protocol".into(), json!(r.protocol));
    e.insert("_server".into(), json!(r.server));
    e.insert("_bytesSent".into(), json!(r.bytes_sent));
    e.insert("_bytesReceived".into(), json!(r.bytes_received));
    if let Some(error) = &r.error {
        e.insert("_error".into(), json!(error));
        e.insert("comment".into(), json!(error));
    }
    if let Some(app) = &r.app {
        e.insert("_app".into(), json!(app));
    }
    if let Some(s) = stacks.filter(|s| !s.stacks.is_empty()) {
        e.insert("_firstStack".into(), json!(s.first()));
        e.insert("_lastStack".into(), json!(s.last()));
        e.insert("_fullStack".into(), json!(s.full()));
    }
    Value::Object(e)
}

/// `HTTP/1.1 200 OK (from cache)` → ("HTTP/1.1", 200, "OK (from cache)");
/// no status → ("", 0, "") as HAR has it for requests without a response.
fn status_line(status: Option<&str>) -> (String, u16, String) {
    let Some(s) = status else { return (String::new(), 0, String::new()) };
    let mut parts = s.splitn(3, ' ');
    let first = parts.next().unwrap_or_default();
    if !first.starts_with("HTTP/") {
        return (String::new(), 0, s.to_string());
    }
    let code = parts.next().and_then(|c| c.parse().ok()).unwrap_or(0);
    (first.to_string(), code, parts.next().unwrap_or_default().to_string())
}

/// The query's name/value pairs, as they appear (not percent-decoded).
fn query_string(url: &str) -> Vec<Value> {
    let Some((_, query)) = url.split_once('?') else { return Vec::new() };
    let query = query.split('#').next().unwrap_or_default();
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (name, value) = p.split_once('=').unwrap_or((p, ""));
            json!({ "name": name, "value": value })
        })
        .collect()
}

/// `2026-01-01T00:00:00.160Z`: UTC with milliseconds, as browsers write it.
fn iso8601(t: i64) -> String {
    let mut buf = [0u8; 28];
    let n = FileTime(t).encode(&mut buf);
    let full = String::from_utf8_lossy(&buf[..n]).into_owned();
    // The reader's form has 7 fraction digits; HAR tools expect 3.
    match full.split_once('.') {
        Some((seconds, fraction)) => format!("{seconds}.{}Z", &fraction[..3.min(fraction.len())]),
        None => full,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_lines_and_queries() {
        assert_eq!(status_line(Some("HTTP/1.1 200 OK")), ("HTTP/1.1".into(), 200, "OK".into()));
        assert_eq!(
            status_line(Some("HTTP/1.1 200 OK (from cache)")),
            ("HTTP/1.1".into(), 200, "OK (from cache)".into())
        );
        assert_eq!(status_line(Some("redirected")), (String::new(), 0, "redirected".into()));
        assert_eq!(status_line(None), (String::new(), 0, String::new()));
        assert_eq!(
            query_string("https://x/list?lang=en-US&flag#top"),
            [json!({"name": "lang", "value": "en-US"}), json!({"name": "flag", "value": ""})]
        );
        // 2026-01-01T00:00:00.1600000Z
        assert_eq!(iso8601(134_116_992_001_600_000), "2026-01-01T00:00:00.160Z");
    }
}
