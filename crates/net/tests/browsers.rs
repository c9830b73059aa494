//! Browsers and QUIC against what the synthesized scenarios make Windows
//! and the browsers log (`nettrail_synth::scenarios::{browser_navigation,
//! edge_webview2, winhttp_http3, chrome_legacy}`): Chromium's requests with
//! their URLs, joined to the sockets and connections that carried them;
//! regions; QUIC connections instead of anonymous UDP; WinHTTP over HTTP/3.
//! Times come from the trace's own events (NetLog entries found by name
//! and source, MsQuic's by id), byte counts from the scenario's sizes.

use std::fmt::Debug;

use nettrail_decode::Schemas;
use nettrail_etl::Trace;
use nettrail_net::{BrowserRow, ConnectionRow, Layer, Report, RequestRow};
use nettrail_synth::catalog::provider_guid;
use nettrail_synth::scenarios::{self, Scenario};

/// An event of the trace: provider, id, name (TraceLogging's), its fields as text, when.
struct Logged {
    provider: nettrail_etl::Guid,
    id: u16,
    name: Option<String>,
    fields: Vec<(String, String)>,
    seconds: f64,
}

/// A value as text: strings as they are, bytes in hex, numbers as the decoder holds them.
fn text(v: &nettrail_decode::Value<'_>) -> String {
    match (v.as_str(), v.as_bytes()) {
        (Some(s), _) => s.into_owned(),
        (None, Some(b)) => b.iter().map(|x| format!("{x:02x}")).collect(),
        _ => format!("{v:?}"),
    }
}

struct Run {
    report: Report,
    events: Vec<Logged>,
}

fn run(scenario: Scenario) -> Run {
    run_bytes(&scenario().expect("the scenario writes its trace"))
}

fn run_bytes(bytes: &[u8]) -> Run {
    let trace = Trace::parse(bytes).expect("the trace parses");
    let mut schemas = Schemas::new();
    assert!(schemas.learn(&trace).is_empty(), "the embedded metadata reads");
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |_| {});
    assert!(analysis.damage.is_empty(), "{:?}", analysis.damage);
    let start = trace.header_timestamp();
    let mut events = Vec::new();
    let mut stream = trace.events();
    while let Some(event) = stream.next() {
        let r = event.expect("every event reads").record;
        let mut values = Vec::new();
        let (name, fields) = match schemas.decode(&r, &mut values) {
            Ok(schema) => (
                schema.name.clone(),
                schema.fields.iter().zip(&values).map(|(f, v)| (f.name.clone(), text(v))).collect(),
            ),
            Err(_) => (None, Vec::new()),
        };
        let seconds = r.timestamp.saturating_sub(start) as f64 / 1e7;
        events.push(Logged { provider: r.provider, id: r.id, name, fields, seconds });
    }
    Run { report: analysis.network.report(), events }
}

impl Run {
    fn requests(&self, pid: u32) -> Vec<&RequestRow> {
        self.report.requests.iter().filter(|r| r.pid == Some(pid)).collect()
    }

    fn connections(&self, pid: u32) -> Vec<&ConnectionRow> {
        self.report.connections.iter().filter(|r| r.pid == Some(pid)).collect()
    }

    fn browser(&self, kind: &str, name: &str) -> Vec<&BrowserRow> {
        self.report.browser.iter().filter(|r| r.kind == kind && r.name == name).collect()
    }

    fn seconds(&self, t: i64) -> f64 {
        self.report.seconds(t)
    }

    /// When a NetLog entry of `source` named `name` in `phase` was logged.
    fn netlog(&self, name: &str, phase: &str, source: u32) -> f64 {
        let id = (0x5e1c_0000_0000_0000u64 | u64::from(source)).to_string();
        let field = |e: &Logged, n: &str| e.fields.iter().find(|(f, _)| f == n).map(|(_, v)| v.clone());
        self.events
            .iter()
            .find(|e| {
                e.name.as_deref() == Some(name)
                    && field(e, "Phase").as_deref() == Some(phase)
                    && field(e, "Id").is_some_and(|v| v.contains(&id))
            })
            .unwrap_or_else(|| panic!("NetLog {name} {phase} of source {source} not in the trace"))
            .seconds
    }

    /// When `provider` logged event `id`, the `n`th time (0-based).
    fn time(&self, provider: &str, id: u16, n: usize) -> f64 {
        let guid = provider_guid(provider).expect("a known provider");
        let times: Vec<f64> =
            self.events.iter().filter(|e| e.provider == guid && e.id == id).map(|e| e.seconds).collect();
        *times.get(n).unwrap_or_else(|| panic!("{provider} {id} #{n} not in the trace"))
    }

    /// A field of the `n`th event `id` of `provider`, as text.
    fn field(&self, provider: &str, id: u16, n: usize, field: &str) -> String {
        let guid = provider_guid(provider).expect("a known provider");
        let e = self.events.iter().filter(|e| e.provider == guid && e.id == id).nth(n).expect("the event");
        e.fields.iter().find(|(f, _)| f == field).map(|(_, v)| v.clone()).expect("the field")
    }
}

/// Mismatches gathered for one scenario; fails with all of them.
struct Checks {
    scenario: &'static str,
    failures: Vec<String>,
}

impl Checks {
    fn new(scenario: &'static str) -> Checks {
        Checks { scenario, failures: Vec::new() }
    }

    fn eq<T: PartialEq + Debug>(&mut self, what: &str, actual: T, expected: T) {
        if actual != expected {
            self.failures.push(format!("{what}: expected {expected:?}, got {actual:?}"));
        }
    }

    fn near(&mut self, what: &str, actual: f64, expected: f64) {
        if (actual - expected).abs() > 1e-6 {
            self.failures.push(format!("{what}: expected {expected:.7} s, got {actual:.7} s"));
        }
    }

    fn count<'r, T: Debug>(&mut self, what: &str, rows: Vec<&'r T>, n: usize) -> Option<Vec<&'r T>> {
        if rows.len() == n {
            return Some(rows);
        }
        self.failures.push(format!("{what}: expected {n} rows, got {}: {rows:#?}", rows.len()));
        None
    }

    /// A request row's columns, as text.
    fn request(&mut self, label: &str, r: &RequestRow, want: &[(&str, &str)]) {
        let text = |v: Option<String>| v.unwrap_or_else(|| "null".to_string());
        for &(column, expected) in want {
            let actual = match column {
                "layer" => r.layer.name().to_string(),
                "protocol" => text(r.protocol.clone()),
                "method" => text(r.method.clone()),
                "url" => text(r.url.clone()),
                "server" => text(r.server.clone()),
                "alt_names" => r.alt_names.join(","),
                "ip" => text(r.ip.map(|a| a.to_string())),
                "port" => text(r.port.map(|p| p.to_string())),
                "service" => text(r.service.clone()),
                "status" => text(r.status.clone()),
                "bytes_sent" => text(r.bytes_sent.map(|b| b.to_string())),
                "bytes_received" => text(r.bytes_received.map(|b| b.to_string())),
                "error" => text(r.error.clone()),
                "local" => text(r.local.map(|l| l.to_string())),
                "process" => text(r.process.clone()),
                "first_thread" => text(r.threads.first().map(|t| t.to_string())),
                other => panic!("no column {other}"),
            };
            if actual != expected {
                self.failures.push(format!("{label}: {column} expected {expected}, got {actual}"));
            }
        }
    }

    fn connection(&mut self, label: &str, r: &ConnectionRow, want: &[(&str, &str)]) {
        let text = |v: Option<String>| v.unwrap_or_else(|| "null".to_string());
        let q = r.quic.clone().unwrap_or_default();
        for &(column, expected) in want {
            let actual = match column {
                "protocol" => r.protocol.to_string(),
                "local" => text(r.local.map(|l| l.to_string())),
                "remote" => text(r.remote.map(|l| l.to_string())),
                "server" => text(r.server.clone()),
                "state" => r.state.to_string(),
                "origin" => r.origin.to_string(),
                "bytes_sent" => r.bytes_sent.to_string(),
                "bytes_received" => r.bytes_received.to_string(),
                "layer" => text(r.layer.map(|l| l.name().to_string())),
                "error" => text(r.error.clone()),
                "connection_id" => text(q.connection_id.clone()),
                "streams" => text(q.streams.map(|s| s.to_string())),
                "quic_version" => text(q.version.clone()),
                "close_reason" => text(q.close_reason.clone()),
                other => panic!("no column {other}"),
            };
            if actual != expected {
                self.failures.push(format!("{label}: {column} expected {expected}, got {actual}"));
            }
        }
    }

    fn done(self) {
        assert!(
            self.failures.is_empty(),
            "{} expectation(s) of scenario {} not met:\n  - {}",
            self.failures.len(),
            self.scenario,
            self.failures.join("\n  - ")
        );
    }
}

const NETWORK_SERVICE: u32 = 9260;
const RENDERER: u32 = 9320;

#[test]
fn browser_navigation_h2_and_h3() {
    let run = run(scenarios::browser_navigation);
    let mut c = Checks::new("browser-navigation");
    let chromium: Vec<&RequestRow> =
        run.requests(NETWORK_SERVICE).into_iter().filter(|r| r.layer == Layer::Chromium).collect();
    let tcp = run
        .connections(NETWORK_SERVICE)
        .into_iter()
        .find(|r| r.remote.is_some_and(|e| e.port == 443 && e.address.to_string() == "93.184.216.34"));
    let quic = run.connections(NETWORK_SERVICE).into_iter().find(|r| r.protocol == "QUIC");
    if let Some(rows) = c.count("the network service's Chromium requests", chromium, 3) {
        let page = rows[0];
        c.request(
            "the page",
            page,
            &[
                ("process", "chrome.exe"),
                ("first_thread", "9276"),
                ("method", "GET"),
                ("url", "https://www.example.com/"),
                // HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS says the version; NetLog's status line is HTTP/1.1's form.
                ("protocol", "HTTP/2"),
                ("status", "HTTP/1.1 200"),
                ("server", "www.example.com"),
                ("alt_names", "www.example.com.cdn.example.net"),
                ("ip", "93.184.216.34"),
                ("port", "443"),
                ("service", "HTTPS"),
                // The body of stream 1's DATA frames (16,384 + 8,071).
                ("bytes_sent", "0"),
                ("bytes_received", "24455"),
                ("error", "null"),
            ],
        );
        c.near(
            "the page: start (URL_REQUEST_START_JOB)",
            run.seconds(page.start),
            run.netlog("URL_REQUEST_START_JOB", "Begin", 101),
        );
        c.near(
            "the page: end (REQUEST_ALIVE's end)",
            run.seconds(page.end.unwrap_or(0)),
            run.netlog("REQUEST_ALIVE", "End", 101),
        );
        c.eq("the page: its TCP connection's local end", page.local, tcp.and_then(|t| t.local));
        c.request(
            "the script",
            rows[1],
            &[
                ("url", "https://www.example.com/app.js"),
                ("protocol", "HTTP/2"),
                ("bytes_received", "61545"),
                ("status", "HTTP/1.1 200"),
            ],
        );
        c.eq("page and script share the HTTP/2 connection", rows[1].connection, page.connection);
        c.that_some("the page is joined to a TCP connection", page.connection);
        let api = rows[2];
        c.request(
            "the fetch",
            api,
            &[
                ("url", "https://api.example.com/v1/data"),
                ("protocol", "HTTP/3"),
                ("status", "HTTP/1.1 200"),
                ("server", "api.example.com"),
                ("ip", "203.0.113.50"),
                ("port", "443"),
                ("service", "QUIC"),
                // Stream 0's STREAM frames: 78 out, 1,180 + 1,900 in.
                ("bytes_sent", "78"),
                ("bytes_received", "3080"),
            ],
        );
        c.eq("the fetch: the QUIC connection's local end", api.local, quic.and_then(|q| q.local));
    }
    // The renderer's events name three URLs; the NetLog fetched two: the favicon (memory cache) stays a row of its own.
    if let Some(rows) = c.count("the renderer's rows", run.requests(RENDERER), 1) {
        c.request(
            "the favicon",
            rows[0],
            &[
                ("layer", "Chromium"),
                ("url", "https://www.example.com/favicon.ico"),
                ("protocol", "HTTPS"),
                ("ip", "null"),
                ("bytes_received", "null"),
            ],
        );
    }
    // The TCP connection of the job that lost the race: no request's; its TLS handshake only.
    let winsock: Vec<&RequestRow> =
        run.requests(NETWORK_SERVICE).into_iter().filter(|r| r.layer != Layer::Chromium).collect();
    if let Some(rows) = c.count("the network service's other rows", winsock, 1) {
        c.request(
            "the losing job's socket",
            rows[0],
            &[
                ("layer", "Winsock"),
                ("ip", "203.0.113.50"),
                ("port", "443"),
                ("bytes_sent", "597"),
                ("bytes_received", "2893"),
            ],
        );
    }
    if let Some(rows) = c.count("the network service's connections", run.connections(NETWORK_SERVICE), 3) {
        c.connection(
            "HTTP/2",
            rows[0],
            &[("protocol", "TCP"), ("layer", "Chromium"), ("server", "www.example.com"), ("state", "closed")],
        );
        c.connection(
            "QUIC",
            rows[1],
            &[
                ("protocol", "QUIC"),
                ("remote", "203.0.113.50:443"),
                ("server", "api.example.com"),
                ("layer", "Chromium"),
                ("state", "closed"),
                ("connection_id", "8c1e5a2b7f903d46"),
                ("streams", "1"),
                ("close_reason", "quic_error 25 (QUIC_NETWORK_IDLE_TIMEOUT), closed by this side: No recent network activity after 30000ms."),
                // UDP payloads: 1,250 + 92 + 120 + 40 + 45 out; 1,252 + 1,180 + 1,230 + 1,350 + 600 in.
                ("bytes_sent", "1547"),
                ("bytes_received", "5612"),
            ],
        );
        let handshake = run.netlog("QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED", "Instant", 123)
            - run.netlog("QUIC_SESSION", "Begin", 123);
        c.near("QUIC: handshake", rows[1].quic.as_ref().and_then(|q| q.handshake).unwrap_or(-1.0), handshake);
        c.connection(
            "the race's loser",
            rows[2],
            &[("protocol", "TCP"), ("layer", "Winsock"), ("remote", "203.0.113.50:443")],
        );
    }
    // The browser table: regions, single events, NetLog sources.
    if let Some(rows) = c.count("Navigation StartToCommit", run.browser("region", "Navigation StartToCommit"), 1) {
        let r = rows[0];
        c.eq("the navigation's URL", r.url.as_deref(), Some("https://www.example.com/"));
        c.eq("the navigation's process", r.pid, Some(9200));
        let begin = run
            .events
            .iter()
            .find(|e| e.name.as_deref() == Some("Navigation StartToCommit"))
            .map(|e| e.seconds)
            .unwrap_or_default();
        c.near("the navigation's start", run.seconds(r.start), begin);
    }
    c.eq("requested resources", run.browser("region", "ResourceFetcher::requestResource").len(), 3);
    c.eq(
        "their joins",
        run.browser("region", "ResourceFetcher::requestResource").iter().map(|r| r.join).collect::<Vec<_>>(),
        vec![Some("netlog"), Some("none"), Some("netlog")],
    );
    c.eq(
        "the script's compile names its URL",
        run.browser("region", "v8.compile").first().and_then(|r| r.url.clone()),
        Some("https://www.example.com/app.js".to_string()),
    );
    c.eq("a performance mark is an event", run.browser("event", "domContentLoadedEventEnd").len(), 1);
    let url_requests = run.browser("netlog", "URL_REQUEST");
    c.eq(
        "URL requests and their joins",
        url_requests.iter().map(|r| (r.url.clone().unwrap_or_default(), r.join)).collect::<Vec<_>>(),
        vec![
            ("https://www.example.com/".to_string(), Some("endpoint")),
            ("https://www.example.com/app.js".to_string(), Some("endpoint")),
            ("https://api.example.com/v1/data".to_string(), Some("endpoint")),
        ],
    );
    c.eq("NetLog sockets", run.browser("netlog", "SOCKET").len() + run.browser("netlog", "UDP_SOCKET").len(), 3);
    c.eq(
        "sessions",
        (run.browser("netlog", "HTTP2_SESSION").len(), run.browser("netlog", "QUIC_SESSION").len()),
        (1, 1),
    );
    c.done();
}

impl Checks {
    fn that_some<T>(&mut self, what: &str, v: Option<T>) {
        if v.is_none() {
            self.failures.push(what.to_string());
        }
    }
}

#[test]
fn edge_webview2_http1_refused_and_unresolved() {
    let run = run(scenarios::edge_webview2);
    let mut c = Checks::new("edge-webview2");
    let network = 4520;
    if let Some(rows) = c.count("the runtime's network service's requests", run.requests(network), 4) {
        let common = [("layer", "Chromium"), ("process", "msedgewebview2.exe"), ("method", "GET")];
        for r in &rows {
            c.request("every request", r, &common);
        }
        // Above TLS, as NetLog's SSL socket counts: a 402-byte request, a 188-byte head and the body.
        c.request(
            "the inbox",
            rows[0],
            &[
                ("url", "https://mail.contoso.com/inbox"),
                ("protocol", "HTTP/1.1"),
                ("status", "HTTP/1.1 200"),
                ("ip", "40.97.120.18"),
                ("bytes_sent", "402"),
                ("bytes_received", "38398"),
            ],
        );
        c.request(
            "the messages",
            rows[1],
            &[
                ("url", "https://mail.contoso.com/api/messages?folder=inbox"),
                ("protocol", "HTTP/1.1"),
                ("bytes_sent", "402"),
                ("bytes_received", "10058"),
            ],
        );
        c.eq("keep-alive: one connection", rows[1].connection, rows[0].connection);
        c.near("the messages: start", run.seconds(rows[1].start), run.netlog("URL_REQUEST_START_JOB", "Begin", 40));
        c.request(
            "the refused push channel",
            rows[2],
            &[
                ("url", "https://mail.contoso.com:8443/push/subscribe"),
                ("ip", "40.97.120.18"),
                ("port", "8443"),
                ("status", "null"),
                ("error", "-102 (ERR_CONNECTION_REFUSED)"),
            ],
        );
        c.request(
            "the telemetry host",
            rows[3],
            &[
                ("url", "https://telemetry.contoso-cdn.example/v1/ping"),
                ("ip", "null"),
                ("status", "null"),
                ("bytes_received", "null"),
                ("error", "-105 (ERR_NAME_NOT_RESOLVED)"),
            ],
        );
    }
    if let Some(rows) = c.count("the network service's connections", run.connections(network), 2) {
        c.connection(
            "HTTP/1.1",
            rows[0],
            &[("protocol", "TCP"), ("layer", "Chromium"), ("remote", "40.97.120.18:443")],
        );
        c.connection(
            "refused",
            rows[1],
            &[
                ("protocol", "TCP"),
                ("layer", "Chromium"),
                ("state", "refused"),
                ("error", "0xC0000236 (STATUS_CONNECTION_REFUSED)"),
            ],
        );
    }
    let joins: Vec<Option<&str>> = run.browser("netlog", "URL_REQUEST").iter().map(|r| r.join).collect();
    c.eq("URL requests' joins", joins, vec![Some("endpoint"), Some("endpoint"), Some("thread"), Some("none")]);
    if let Some(rows) = c.count("the control's creation", run.browser("region", "WebView2_CreationTime"), 1) {
        c.eq("created in the host", (rows[0].pid, rows[0].browser), (Some(4400), "Edge WebView2"));
        c.near("creation time", nettrail_net::report::duration(rows[0].start, rows[0].end).unwrap_or(0.0), 0.084);
    }
    let api = run.browser("event", "WebView2_APICalled");
    c.eq(
        "the Navigate call names the URL",
        api.first().and_then(|r| r.url.clone()),
        Some("https://mail.contoso.com/inbox".to_string()),
    );
    let failed: Vec<_> = run.report.dns.iter().filter(|d| d.name == "telemetry.contoso-cdn.example").collect();
    c.eq(
        "the failed lookup",
        failed.first().and_then(|d| d.status.clone()),
        Some("9003 (DNS_ERROR_RCODE_NAME_ERROR)".to_string()),
    );
    c.done();
}

#[test]
fn winhttp_http3_over_msquic() {
    let run = run(scenarios::winhttp_http3);
    let mut c = Checks::new("winhttp-http3");
    let quic = run.connections(5200).into_iter().find(|r| r.protocol == "QUIC");
    if let Some(rows) = c.count("the app's rows (no anonymous UDP)", run.requests(5200), 2) {
        // Heads of 130 and 118 bytes out; 98 + 3,412 and 95 + 0 bytes in.
        c.request(
            "GET",
            rows[0],
            &[
                ("layer", "WinHTTP"),
                ("protocol", "HTTP/3"),
                ("status", "HTTP/3 200"),
                ("service", "QUIC"),
                ("ip", "20.189.173.10"),
                ("port", "443"),
                ("bytes_sent", "130"),
                ("bytes_received", "3510"),
            ],
        );
        c.request(
            "POST",
            rows[1],
            &[
                ("layer", "WinHTTP"),
                ("protocol", "HTTP/3"),
                ("method", "POST"),
                ("status", "HTTP/3 204"),
                ("bytes_sent", "118"),
                ("bytes_received", "95"),
            ],
        );
        c.eq("one QUIC connection for both", rows[1].connection, rows[0].connection);
        c.that_some("joined to the UDP flow", rows[0].connection);
        c.eq("the GET's local end is the QUIC connection's", rows[0].local, quic.and_then(|q| q.local));
    }
    if let Some(rows) = c.count("the app's connections", run.connections(5200), 1) {
        c.connection(
            "QUIC",
            rows[0],
            &[
                ("protocol", "QUIC"),
                ("remote", "20.189.173.10:443"),
                ("server", "api.contoso.com"),
                ("layer", "WinHTTP"),
                ("state", "closed"),
                ("origin", "connect"),
                // Two requests' streams and HTTP/3's control and QPACK streams.
                ("streams", "5"),
                ("quic_version", "1"),
                ("close_reason", "application 0x100 (H3_NO_ERROR), closed by this side"),
            ],
        );
        let cid = run.field("Microsoft-Quic", 5149, 1, "Cid").to_ascii_lowercase();
        c.eq(
            "the server's connection id, last added",
            rows[0].quic.as_ref().and_then(|q| q.connection_id.clone()),
            Some(cid.trim_start_matches("0x").to_string()),
        );
        let handshake = run.time("Microsoft-Quic", 5122, 0) - run.time("Microsoft-Quic", 5132, 0);
        c.near("handshake", rows[0].quic.as_ref().and_then(|q| q.handshake).unwrap_or(-1.0), handshake);
        let sent = run.field("Microsoft-Quic", 5160, 0, "SendTotalBytes");
        let received = run.field("Microsoft-Quic", 5160, 0, "RecvTotalBytes");
        c.eq("UDP payloads out, as MsQuic totals them", format!("Unsigned({})", rows[0].bytes_sent), sent);
        c.eq("UDP payloads in", format!("Unsigned({})", rows[0].bytes_received), received);
    }
    c.done();
}

#[test]
fn chrome_legacy_exporters_and_host_join() {
    let run = run(scenarios::chrome_legacy);
    let mut c = Checks::new("chrome-legacy");
    let conn = run.connections(8200).into_iter().next();
    if let Some(rows) = c.count("chrome.exe's rows", run.requests(8200), 1) {
        c.request(
            "the page",
            rows[0],
            &[
                ("layer", "Chromium"),
                ("url", "https://news.example.org/today"),
                ("protocol", "HTTPS"),
                ("server", "news.example.org"),
                ("ip", "198.51.100.7"),
                ("port", "443"),
                ("bytes_received", "null"),
            ],
        );
        c.eq("joined to its process's connection to the host", rows[0].local, conn.and_then(|c| c.local));
    }
    c.eq("the connection is the browser's", conn.and_then(|c| c.layer), Some(Layer::Chromium));
    // The manifest's ChromeEvent Begin/End, TraceLogging's Complete/Complete End, a Nestable Async pair across threads.
    for (name, ms) in [("NavigationControllerImpl::LoadURLWithParams", 0.6), ("Document::SetURL", 0.4)] {
        if let Some(rows) = c.count(name, run.browser("region", name), 1) {
            c.near(name, nettrail_net::report::duration(rows[0].start, rows[0].end).unwrap_or(0.0), ms / 1000.0);
            c.eq("joined by host", rows[0].join, Some("host"));
        }
    }
    if let Some(rows) = c.count("Navigation StartToCommit", run.browser("region", "Navigation StartToCommit"), 1) {
        c.eq("its URL", rows[0].url.as_deref(), Some("https://news.example.org/today"));
        c.eq("begun on the main thread", rows[0].thread, Some(8204));
    }
    c.eq("loadEventEnd is an event", run.browser("event", "loadEventEnd").len(), 1);
    c.done();
}

/// A hostile browser trace: one HTTP/2 session that two thousand URL
/// requests (and their stream jobs) name, and three thousand begins on one
/// thread that never end. Every request still finds its session, socket
/// and stream, and an end still closes the innermost open region of its
/// name; the open regions stay open.
#[test]
fn netlog_hub_and_unclosed_begins() {
    use nettrail_synth::windows::{Arg, CHROME, Machine, NetPhase, NetSource, category};
    use serde_json::json;

    const REQUESTS: u32 = 2000;
    const UNCLOSED: usize = 3000;
    let mut m = Machine::new();
    let pid = m.process(nettrail_synth::Process::new(NETWORK_SERVICE, 6412, "chrome.exe")).unwrap();
    let th = (pid, 9276);
    let log = |m: &mut Machine, at: f64, name: &str, phase: NetPhase, s: NetSource, p: serde_json::Value| {
        m.netlog(at, th, &CHROME, (name, phase), s, p).unwrap()
    };
    let (h2, socket) = (NetSource::new(1, "HTTP2_SESSION"), NetSource::new(2, "SOCKET"));
    log(&mut m, 100.0, "HTTP2_SESSION", NetPhase::Begin, h2, json!({ "host": "hub.example:443" }));
    let p = json!({ "protocol": "h2", "source_dependency": socket.dependency() });
    log(&mut m, 100.1, "HTTP2_SESSION_INITIALIZED", NetPhase::None, h2, p);
    log(&mut m, 100.2, "SOCKET_ALIVE", NetPhase::Begin, socket, json!({ "source_dependency": h2.dependency() }));
    for k in 0..REQUESTS {
        let at = 101.0 + f64::from(k);
        let (r, job) = (NetSource::new(1000 + k, "URL_REQUEST"), NetSource::new(10_000 + k, "HTTP_STREAM_JOB"));
        log(&mut m, at, "REQUEST_ALIVE", NetPhase::Begin, r, json!({}));
        let url = format!("https://hub.example/{k}");
        log(&mut m, at + 0.1, "URL_REQUEST_START_JOB", NetPhase::Begin, r, json!({ "method": "GET", "url": url }));
        log(&mut m, at + 0.2, "HTTP_STREAM_JOB", NetPhase::Begin, job, json!({ "source_dependency": r.dependency() }));
        let p = json!({ "source_dependency": h2.dependency() });
        log(&mut m, at + 0.3, "HTTP2_SESSION_POOL_FOUND_EXISTING_SESSION", NetPhase::None, job, p);
        let p = json!({ "source_dependency": job.dependency() });
        log(&mut m, at + 0.4, "HTTP_STREAM_REQUEST_BOUND_TO_JOB", NetPhase::None, r, p);
        let stream = 2 * u64::from(k) + 1;
        let p = json!({ "source_dependency": r.dependency(), "stream_id": stream });
        log(&mut m, at + 0.5, "HTTP2_SESSION_SEND_HEADERS", NetPhase::None, h2, p);
        let p = json!({ "stream_id": stream, "size": k + 1, "fin": true });
        log(&mut m, at + 0.6, "HTTP2_SESSION_RECV_DATA", NetPhase::None, h2, p);
        log(&mut m, at + 0.7, "URL_REQUEST_START_JOB", NetPhase::End, r, json!({}));
        log(&mut m, at + 0.8, "REQUEST_ALIVE", NetPhase::End, r, json!({}));
    }
    // Begins on one thread's track that never end, then a slice and an end of the loop's name.
    let main = (pid, 9300);
    let track = 0x7100_0000_0000_0000 | u64::from(main.1);
    let at = 101.0 + f64::from(REQUESTS);
    for k in 0..UNCLOSED {
        let at = at + k as f64 * 0.01;
        m.chromium_event(at, main, &CHROME, category::LOADING, ("Loop", "Begin"), track, None, &[]).unwrap();
    }
    let at = at + UNCLOSED as f64 * 0.01 + 1.0;
    let url = [("url", Arg::from("https://hub.example/inner"))];
    m.chromium_slice(at, 0.5, main, &CHROME, category::LOADING, "Inner", &url).unwrap();
    m.chromium_event(at + 1.0, main, &CHROME, category::LOADING, ("Loop", "End"), track, None, &[]).unwrap();
    let bytes = m.finish().unwrap();
    let run = run_bytes(&bytes);

    let mut c = Checks::new("hostile browser trace");
    let inner = Some("https://hub.example/inner");
    let (slice, fetched): (Vec<_>, Vec<_>) =
        run.requests(NETWORK_SERVICE).into_iter().partition(|r| r.url.as_deref() == inner);
    c.eq("the slice's URL, fetched by no request, is a row", slice.len(), 1);
    if let Some(mut rows) = c.count("the requests", fetched, REQUESTS as usize) {
        rows.sort_by_key(|r| r.start);
        for (k, r) in rows.iter().enumerate() {
            let (url, received) = (format!("https://hub.example/{k}"), (k + 1).to_string());
            c.request(
                &format!("request {k}"),
                r,
                &[("layer", "Chromium"), ("url", &url), ("protocol", "HTTP/2"), ("bytes_received", &received)],
            );
        }
    }
    let loops = run.browser("region", "Loop");
    c.eq("every begin is a region", loops.len(), UNCLOSED);
    c.eq("the loop's end closed one", loops.iter().filter(|r| !r.open_at_end).count(), 1);
    let closed = loops.iter().find(|r| !r.open_at_end);
    c.near(
        "the innermost was closed",
        closed.map_or(0.0, |r| run.seconds(r.start)),
        run.seconds(loops.iter().map(|r| r.start).max().unwrap_or(0)),
    );
    if let Some(rows) = c.count("the slice", run.browser("region", "Inner"), 1) {
        c.near("its duration", nettrail_net::report::duration(rows[0].start, rows[0].end).unwrap_or(0.0), 0.0005);
        c.eq("its URL", rows[0].url.as_deref(), inner);
    }
    c.done();
}
