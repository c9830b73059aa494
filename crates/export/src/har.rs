//! HAR 1.2 (HTTP Archive) of a trace's HTTP requests, for Chrome DevTools,
//! Fiddler and the HAR viewers: one entry per WinINet, WinHTTP, URLMon or
//! Chromium row with a URL. The HTTP version is the row's protocol where an
//! event said it (HTTP/2, HTTP/3; Chromium writes HTTP/1.1's status line for
//! every version), else the status line's. What a trace knows beyond HAR (process, threads, layer,
//! bytes at the layer, the stacks that started the request) goes into
//! `_`-prefixed fields, as HAR allows for custom data.
//!
//! Headers come from WebIO's header events (100, 101: WinHTTP requests);
//! WinINet logs none. Bodies are never logged: `content` has the size
//! (`Content-Length`, else the bytes received less the headers) and the
//! `Content-Type` (`x-unknown` when absent, as DevTools writes it). Timings
//! are the request's phases (see `nettrail_net::report::Phases`); the
//! stitched stacks are `_initiator`, in the form DevTools reads.

use std::io::{self, Write};

use nettrail_etl::FileTime;
use nettrail_net::{Layer, Report, RequestRow, Stitched, http};
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
    let request_headers = r.request_headers.as_deref();
    let response_headers = r.response_headers.as_deref();
    let headers_size = |block: Option<&str>| block.map_or(-1, |b| http::wire_size(b) as i64);
    // Bytes at the HTTP layer are headers and body together: the body is the rest.
    let body_size = |bytes: Option<u64>, block: Option<&str>| match (bytes, block) {
        (Some(b), Some(h)) => (b as i64 - http::wire_size(h) as i64).max(0),
        (Some(b), None) => b as i64,
        (None, _) => -1,
    };
    let response_body = body_size(r.bytes_received, response_headers);
    let content_length = response_headers.and_then(|h| http::field(h, "Content-Length")?.parse::<i64>().ok());
    let mime = response_headers.and_then(|h| http::field(h, "Content-Type")).unwrap_or("x-unknown");
    let mut e = Map::new();
    e.insert("startedDateTime".into(), Value::String(iso8601(r.start)));
    e.insert("time".into(), json!(total_ms));
    e.insert(
        "request".into(),
        json!({
            // HAR requires a method; an unknown one stays empty rather than a guessed GET.
            "method": r.method.clone().unwrap_or_default(),
            "url": url,
            "httpVersion": version,
            "cookies": [],
            "headers": headers(request_headers),
            "queryString": query_string(&url),
            "headersSize": headers_size(request_headers),
            "bodySize": body_size(r.bytes_sent, request_headers),
        }),
    );
    e.insert(
        "response".into(),
        json!({
            "status": status,
            "statusText": text,
            "httpVersion": version,
            "cookies": [],
            "headers": headers(response_headers),
            "content": { "size": content_length.unwrap_or(response_body.max(0)), "mimeType": mime },
            "redirectURL": r.redirect_url.clone().unwrap_or_default(),
            "headersSize": headers_size(response_headers),
            "bodySize": response_body,
        }),
    );
    e.insert("cache".into(), json!({}));
    e.insert("timings".into(), timings(r, total_ms));
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
        e.insert("_initiator".into(), initiator(s));
        e.insert("_firstStack".into(), json!(s.first()));
        e.insert("_lastStack".into(), json!(s.last()));
        e.insert("_fullStack".into(), json!(s.full()));
    }
    Value::Object(e)
}

/// A header block's fields as HAR's name/value pairs.
fn headers(block: Option<&str>) -> Vec<Value> {
    block.into_iter().flat_map(http::fields).map(|(name, value)| json!({ "name": name, "value": value })).collect()
}

/// HAR timings in milliseconds: the phases the trace bounds (blocked, dns,
/// connect with ssl inside it, send, wait, receive; -1 where it does not),
/// summing to the entry's `time`. Without any phase, the whole time is `wait`.
fn timings(r: &RequestRow, total_ms: f64) -> Value {
    let ms = |t: Option<i64>| t.map_or(-1.0, |t| t as f64 / 1e4);
    match r.phases.timings(r.start, r.end) {
        Some(t) => {
            let known = [t.blocked, t.dns, t.connect, t.send, t.receive].iter().flatten().sum::<i64>();
            // What no event bounds after the known phases is waiting, so that the sum is the time.
            let wait = t.wait.unwrap_or_else(|| r.end.map_or(0, |end| (end - r.start - known).max(0)));
            json!({
                "blocked": ms(t.blocked), "dns": ms(t.dns), "connect": ms(t.connect), "ssl": ms(t.tls),
                "send": ms(t.send.or(Some(0))), "wait": ms(Some(wait)), "receive": ms(t.receive.or(Some(0))),
            })
        }
        None => json!({
            "blocked": -1, "dns": -1, "connect": -1, "ssl": -1,
            "send": 0, "wait": total_ms, "receive": 0,
            "comment": "no event of the trace splits this request into phases: the whole duration is in wait",
        }),
    }
}

/// The stitched stacks as DevTools' initiator: the request's own stack on
/// top, each earlier stack as the async `parent` it was handed over from,
/// described by the hand-off. Frames are `module!function+0x… (file:line)`
/// or `module+0x…`: the function (or the address) is DevTools' function
/// name, the source file (or the module) its URL, the line 0-based.
fn initiator(s: &Stitched) -> Value {
    let frames = |frames: &[String]| -> Vec<Value> { frames.iter().map(|f| call_frame(f)).collect() };
    let mut parent: Option<Value> = None;
    for (i, stack) in s.stacks.iter().enumerate() {
        let mut node = Map::new();
        node.insert("callFrames".into(), Value::Array(frames(&stack.frames)));
        if let Some(p) = parent.take() {
            node.insert("parent".into(), p);
        }
        if let Some(title) = s.title(i + 1) {
            node.insert("description".into(), json!(title));
        }
        parent = Some(Value::Object(node));
    }
    let mut stack = parent.unwrap_or_else(|| json!({ "callFrames": [] }));
    // The top stack is the request's own: its description belongs to no hand-off.
    if let Some(top) = stack.as_object_mut() {
        top.remove("description");
    }
    json!({ "type": "script", "stack": stack })
}

/// One frame as DevTools' `Runtime.CallFrame`.
fn call_frame(frame: &str) -> Value {
    let (place, source) = match frame.rsplit_once(" (") {
        Some((place, source)) if source.ends_with(')') => (place, Some(&source[..source.len() - 1])),
        _ => (frame, None),
    };
    let (module, function) = match place.split_once('!') {
        Some((module, function)) => (module, function),
        None => (place.split('+').next().unwrap_or(place), place),
    };
    let (url, line) = match source.and_then(|s| s.rsplit_once(':')) {
        Some((file, line)) => (file.to_string(), line.parse::<i64>().map_or(-1, |l| l - 1)),
        None => (module.to_string(), -1),
    };
    json!({ "functionName": function, "scriptId": "", "url": url, "lineNumber": line, "columnNumber": -1 })
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
