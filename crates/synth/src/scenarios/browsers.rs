//! Browsers and QUIC: Chrome loading a page over HTTP/2 and fetching over
//! HTTP/3 (with its NetLog), an app hosting Edge WebView2 over HTTP/1.1,
//! WinHTTP's HTTP/3 on Windows 11, and Chrome's older exporters.
//!
//! Chromium's multi-process model: the browser process (navigation), a
//! renderer (Blink: the resources a page asks for, its scripts, its
//! performance marks) and the network service, a utility process whose
//! network thread logs the NetLog and makes the socket calls itself (so AFD
//! and TCPIP log them on that thread). Chromium resolves names with
//! getaddrinfo on a worker thread of the network service, and speaks QUIC
//! over its own Winsock UDP socket (not MsQuic).

use std::net::SocketAddr;

use nettrail_etl::Guid;
use serde_json::{Value, json};

use crate::windows::{
    Answer, Arg, Browser, CHROME, Dial, EDGE_WEBVIEW2, Failure, Lookup, Machine, NetPhase, NetSource, TcpConn, Tid,
    UdpReceive, UdpSock, WebThreads, category,
};
use crate::{SynthConfig, SynthError};

use super::{DNSCACHE, app, ip, machine, machine_with, sa};

/// Chrome's user agent (Chrome 138 on Windows 10).
const CHROME_UA: &str = "user-agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) \
                         Chrome/138.0.0.0 Safari/537.36";

/// One browser's network service: its NetLog, on its network thread.
struct Net {
    b: Browser,
    th: Tid,
}

impl Net {
    fn begin(&self, m: &mut Machine, at: f64, name: &str, s: NetSource, p: Value) -> Result<(), SynthError> {
        m.netlog(at, self.th, &self.b, (name, NetPhase::Begin), s, p)
    }

    fn end(&self, m: &mut Machine, at: f64, name: &str, s: NetSource, p: Value) -> Result<(), SynthError> {
        m.netlog(at, self.th, &self.b, (name, NetPhase::End), s, p)
    }

    fn event(&self, m: &mut Machine, at: f64, name: &str, s: NetSource, p: Value) -> Result<(), SynthError> {
        m.netlog(at, self.th, &self.b, (name, NetPhase::None), s, p)
    }

    /// A URL request's lifetime and job begin.
    fn start_request(
        &self,
        m: &mut Machine,
        at: f64,
        r: NetSource,
        (url, request_type, priority): (&str, &str, &str),
    ) -> Result<(), SynthError> {
        self.begin(m, at, "REQUEST_ALIVE", r, json!({ "priority": priority, "traffic_annotation": 63_171_670 }))?;
        let p = json!({
            "initiator": if request_type == "main frame" { "not an origin".to_string() } else { origin(url) },
            "load_flags": 0,
            "method": "GET",
            "network_isolation_key": format!("{} {}", origin(url), origin(url)),
            "priority": priority,
            "request_type": request_type,
            "site_for_cookies": format!("SiteForCookies: {{site={}; schemefully_same=true}}", origin(url)),
            "traffic_annotation": 63_171_670,
            "url": url,
        });
        self.begin(m, at + 0.05, "URL_REQUEST_START_JOB", r, p)
    }

    /// A TCP socket's connect to `remote` (NetLog and Winsock on the network thread), TLS with ALPN `proto`.
    fn connect(
        &self,
        m: &mut Machine,
        at: f64,
        s: NetSource,
        owner: NetSource,
        (remote, proto): (SocketAddr, &str),
    ) -> Result<(TcpConn, f64), SynthError> {
        self.begin(m, at, "SOCKET_ALIVE", s, json!({ "source_dependency": owner.dependency() }))?;
        self.begin(m, at + 0.01, "TCP_CONNECT", s, json!({ "address_list": [remote.to_string()] }))?;
        self.begin(m, at + 0.02, "TCP_CONNECT_ATTEMPT", s, json!({ "address": remote.to_string() }))?;
        let mut tcp = m.tcp_connect(at + 0.05, self.th, &Dial::new(remote).rtt(14.0))?;
        let local = tcp.tcb.local.to_string();
        let t = at + 14.2;
        let p = json!({ "local_address": local, "remote_address": remote.to_string() });
        self.end(m, t, "TCP_CONNECT_ATTEMPT", s, p)?;
        self.end(m, t + 0.01, "TCP_CONNECT", s, json!({ "source_address": local }))?;
        self.begin(m, t + 0.1, "SSL_CONNECT", s, json!({}))?;
        let t = m.tls_handshake(t + 0.15, self.th, &mut tcp, self.th)?;
        let p = json!({ "cipher_suite": 4865, "is_resumed": false, "next_proto": proto, "version": "TLS 1.3" });
        self.end(m, t + 0.1, "SSL_CONNECT", s, p)?;
        Ok((tcp, t + 0.1))
    }
}

/// `https://host` of a URL.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("https", url));
    format!("{scheme}://{}", rest.split('/').next().unwrap_or_default())
}

/// A response head as NetLog logs it: Chromium's status line (`HTTP/1.1`
/// whatever the protocol: HTTP/2 and HTTP/3 heads are made into one) and
/// the headers.
fn response_headers(status: u16, content_type: &str, length: u32) -> Value {
    json!([format!("HTTP/1.1 {status}"), format!("content-type: {content_type}"), format!("content-length: {length}")])
}

fn h2_request_headers(host: &str, path: &str, accept: &str) -> Value {
    json!([
        ":method: GET",
        format!(":authority: {host}"),
        ":scheme: https",
        format!(":path: {path}"),
        format!("accept: {accept}"),
        CHROME_UA
    ])
}

/// An HTTP/2 request on stream `stream` of session `session` over `tcp`:
/// its headers out, the response's head and DATA frames of `pieces` in.
#[allow(clippy::too_many_arguments)]
fn h2_exchange(
    m: &mut Machine,
    net: &Net,
    at: f64,
    (request, session): (NetSource, NetSource),
    tcp: &mut TcpConn,
    (host, path, accept): (&str, &str, &str),
    stream: u64,
    (content_type, pieces): (&str, &[u32]),
) -> Result<f64, SynthError> {
    let headers = h2_request_headers(host, path, accept);
    net.event(m, at, "HTTP_TRANSACTION_HTTP2_SEND_REQUEST_HEADERS", request, json!({ "headers": headers.clone() }))?;
    let p = json!({
        "exclusive": true, "fin": true, "has_priority": true, "headers": headers, "parent_stream_id": 0,
        "source_dependency": request.dependency(), "stream_id": stream, "weight": 256,
    });
    net.event(m, at + 0.02, "HTTP2_SESSION_SEND_HEADERS", session, p)?;
    let t = m.tcp_send(at + 0.05, net.th, tcp, 96)?;
    let length: u32 = pieces.iter().sum();
    let t = m.tcp_receive(t + 18.0, tcp, 120, net.th)?;
    let p = json!({ "fin": false, "headers": [":status: 200", format!("content-type: {content_type}"), format!("content-length: {length}")], "stream_id": stream });
    net.event(m, t + 0.02, "HTTP2_SESSION_RECV_HEADERS", session, p)?;
    let head = json!({ "headers": response_headers(200, content_type, length) });
    net.event(m, t + 0.05, "HTTP_TRANSACTION_READ_RESPONSE_HEADERS", request, head)?;
    let mut t = t + 0.1;
    for (i, &size) in pieces.iter().enumerate() {
        // DATA frames (9-byte headers) in TLS records.
        t = m.tcp_receive(t + 1.0, tcp, size + 9 + 22, net.th)?;
        let p = json!({ "fin": i + 1 == pieces.len(), "size": size, "stream_id": stream });
        net.event(m, t + 0.01, "HTTP2_SESSION_RECV_DATA", session, p)?;
    }
    Ok(t + 0.05)
}

/// Chrome (browser 9200, network service 9260, renderer 9320) opens
/// <https://www.example.com/>: the page and its script over one HTTP/2
/// connection (TLS with ALPN h2), and the page's fetch() of
/// <https://api.example.com/v1/data> over HTTP/3, where Chrome races QUIC
/// against TCP: QUIC wins, the TCP connection of the losing job stays
/// unused. The favicon comes from the renderer's memory cache (no NetLog
/// request). The QUIC session closes after 30 s idle.
pub fn browser_navigation() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let exe = r#""C:\Program Files\Google\Chrome\Application\chrome.exe""#;
    let browser = app(&mut m, 9200, "chrome.exe", exe)?;
    let network = app(
        &mut m,
        9260,
        "chrome.exe",
        &format!("{exe} --type=utility --utility-sub-type=network.mojom.NetworkService --lang=en-US"),
    )?;
    let renderer = app(&mut m, 9320, "chrome.exe", &format!("{exe} --type=renderer --renderer-client-id=7"))?;
    let (ui, main, resolver) = ((browser, 9204), (renderer, 9324), (network, 9290));
    let net = Net { b: CHROME, th: (network, 9276) };
    let page = "https://www.example.com/";
    let script = "https://www.example.com/app.js";
    let api = "https://api.example.com/v1/data";

    // The navigation, in the browser process.
    let nav = |u: &str| vec![("url", Arg::from(u))];
    m.chromium_slice(
        200.0,
        0.4,
        ui,
        &CHROME,
        category::BROWSER | category::NAVIGATION,
        "NavigationControllerImpl::LoadURLWithParams",
        &nav(page),
    )?;
    let nav_track = 0x6e61_7600_0000_0001;
    let start = [("Initial URL", Arg::from(page))];
    m.chromium_event(
        200.5,
        ui,
        &CHROME,
        category::NAVIGATION,
        ("Navigation StartToCommit", "Begin"),
        nav_track,
        None,
        &start,
    )?;

    // The page: URL request 101 through HTTP stream job 102, socket 103, HTTP/2 session 105.
    let (r1, job1, sock1, h2) = (
        NetSource::new(101, "URL_REQUEST"),
        NetSource::new(102, "HTTP_STREAM_JOB"),
        NetSource::new(103, "SOCKET"),
        NetSource::new(105, "HTTP2_SESSION"),
    );
    net.start_request(&mut m, 201.0, r1, (page, "main frame", "HIGHEST"))?;
    let p = json!({ "expect_spdy": false, "original_url": origin(page), "priority": "HIGHEST", "source_dependency": r1.dependency(), "url": origin(page), "using_quic": false });
    net.begin(&mut m, 201.1, "HTTP_STREAM_JOB", job1, p)?;
    let cnames = ["www.example.com.cdn.example.net"];
    let addresses = [ip("93.184.216.34")];
    let lookup = Lookup::answered("www.example.com", Answer { cnames: &cnames, addresses: &addresses });
    let t = m.resolve(201.2, resolver, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, resolver, Guid::ZERO, "www.example.com", (0, &addresses))?;
    let (mut tcp1, t) = net.connect(&mut m, t + 0.2, sock1, job1, (sa("93.184.216.34:443"), "h2"))?;
    net.event(
        &mut m,
        t + 0.05,
        "SOCKET_POOL_BOUND_TO_SOCKET",
        job1,
        json!({ "source_dependency": sock1.dependency() }),
    )?;
    net.begin(&mut m, t + 0.1, "HTTP2_SESSION", h2, json!({ "host": "www.example.com:443", "proxy": "DIRECT" }))?;
    let p = json!({ "protocol": "h2", "source_dependency": sock1.dependency() });
    net.event(&mut m, t + 0.12, "HTTP2_SESSION_INITIALIZED", h2, p)?;
    net.begin(&mut m, t + 0.13, "SOCKET_IN_USE", sock1, json!({ "source_dependency": h2.dependency() }))?;
    let p = json!({ "source_dependency": h2.dependency() });
    net.event(&mut m, t + 0.15, "HTTP2_SESSION_POOL_IMPORTED_SESSION_FROM_SOCKET", job1, p)?;
    net.end(&mut m, t + 0.16, "HTTP_STREAM_JOB", job1, json!({}))?;
    net.event(
        &mut m,
        t + 0.2,
        "HTTP_STREAM_REQUEST_BOUND_TO_JOB",
        r1,
        json!({ "source_dependency": job1.dependency() }),
    )?;
    let html = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let t = h2_exchange(
        &mut m,
        &net,
        t + 0.3,
        (r1, h2),
        &mut tcp1,
        ("www.example.com", "/", html),
        1,
        ("text/html; charset=UTF-8", &[16_384, 8_071]),
    )?;
    net.end(&mut m, t, "URL_REQUEST_START_JOB", r1, json!({}))?;
    net.end(&mut m, t + 0.5, "REQUEST_ALIVE", r1, json!({}))?;
    m.chromium_event(
        t + 1.0,
        ui,
        &CHROME,
        category::NAVIGATION,
        ("Navigation StartToCommit", "End"),
        nav_track,
        Some(t + 1.0 - 200.5),
        &[],
    )?;

    // The renderer asks for the script; the network service fetches it on the same session (stream 3).
    let t = t + 3.0;
    m.chromium_slice(t, 0.3, main, &CHROME, category::LOADING, "ResourceFetcher::requestResource", &nav(script))?;
    let (r2, job2) = (NetSource::new(110, "URL_REQUEST"), NetSource::new(111, "HTTP_STREAM_JOB"));
    net.start_request(&mut m, t + 1.0, r2, (script, "other", "MEDIUM"))?;
    let p = json!({ "expect_spdy": false, "original_url": origin(script), "priority": "MEDIUM", "source_dependency": r2.dependency(), "url": origin(script), "using_quic": false });
    net.begin(&mut m, t + 1.1, "HTTP_STREAM_JOB", job2, p)?;
    let p = json!({ "source_dependency": h2.dependency() });
    net.event(&mut m, t + 1.15, "HTTP2_SESSION_POOL_FOUND_EXISTING_SESSION", job2, p)?;
    net.end(&mut m, t + 1.2, "HTTP_STREAM_JOB", job2, json!({}))?;
    net.event(
        &mut m,
        t + 1.25,
        "HTTP_STREAM_REQUEST_BOUND_TO_JOB",
        r2,
        json!({ "source_dependency": job2.dependency() }),
    )?;
    let t = h2_exchange(
        &mut m,
        &net,
        t + 1.3,
        (r2, h2),
        &mut tcp1,
        ("www.example.com", "/app.js", "*/*"),
        3,
        ("application/javascript", &[16_384, 16_384, 16_384, 12_393]),
    )?;
    net.end(&mut m, t, "URL_REQUEST_START_JOB", r2, json!({}))?;
    net.end(&mut m, t + 0.3, "REQUEST_ALIVE", r2, json!({}))?;
    m.chromium_slice(t + 2.0, 4.5, main, &CHROME, category::V8, "v8.compile", &[("fileName", Arg::from(script))])?;
    m.chromium_event(
        t + 9.0,
        main,
        &CHROME,
        category::BLINK_USER_TIMING,
        ("domContentLoadedEventEnd", "Instant"),
        0x7100_0000_0000_0000 | 9324,
        None,
        &[("frame", Arg::from("7C1F2A9B3D4E5F60"))],
    )?;
    // From the memory cache: the renderer's event only.
    m.chromium_slice(
        t + 10.0,
        0.2,
        main,
        &CHROME,
        category::LOADING,
        "ResourceFetcher::requestResource",
        &nav("https://www.example.com/favicon.ico"),
    )?;

    // fetch() of the API: QUIC (job 121, session 123, UDP socket 124) races TCP (job 125, socket 126).
    let t = t + 40.0;
    m.chromium_slice(t, 0.3, main, &CHROME, category::LOADING, "ResourceFetcher::requestResource", &nav(api))?;
    let (r3, quic_job, quic, udp, tcp_job, sock2) = (
        NetSource::new(120, "URL_REQUEST"),
        NetSource::new(121, "HTTP_STREAM_JOB"),
        NetSource::new(123, "QUIC_SESSION"),
        NetSource::new(124, "UDP_SOCKET"),
        NetSource::new(125, "HTTP_STREAM_JOB"),
        NetSource::new(126, "SOCKET"),
    );
    net.start_request(&mut m, t + 1.0, r3, (api, "other", "HIGHEST"))?;
    let job = |quic: bool| json!({ "expect_spdy": false, "original_url": origin(api), "priority": "HIGHEST", "source_dependency": r3.dependency(), "url": origin(api), "using_quic": quic });
    net.begin(&mut m, t + 1.1, "HTTP_STREAM_JOB", quic_job, job(true))?;
    net.begin(&mut m, t + 1.12, "HTTP_STREAM_JOB", tcp_job, job(false))?;
    let addresses = [ip("203.0.113.50")];
    let lookup = Lookup::answered("api.example.com", Answer { cnames: &[], addresses: &addresses }).cached();
    let t = m.resolve(t + 1.2, resolver, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, resolver, Guid::ZERO, "api.example.com", (0, &addresses))?;
    let server = sa("203.0.113.50:443");
    let p = json!({
        "connection_id": "8c1e5a2b7f903d46", "host": "api.example.com", "port": 443, "privacy_mode": "disabled",
        "require_confirmation": false, "source_dependency": quic_job.dependency(), "versions": "RFC_V1",
    });
    net.begin(&mut m, t + 0.2, "QUIC_SESSION", quic, p)?;
    net.begin(&mut m, t + 0.25, "SOCKET_ALIVE", udp, json!({ "source_dependency": quic.dependency() }))?;
    net.begin(&mut m, t + 0.26, "UDP_CONNECT", udp, json!({ "address": server.to_string() }))?;
    let u = m.udp_open(t + 0.3, net.th, false, None)?;
    net.end(&mut m, t + 0.4, "UDP_CONNECT", udp, json!({}))?;
    net.event(&mut m, t + 0.41, "UDP_LOCAL_ADDRESS", udp, json!({ "address": u.local.to_string() }))?;
    let mut wire = Wire { net: &net, udp, sock: &u, server, sent: 0, received: 0 };
    wire.send(&mut m, t + 0.5, 1_250)?;
    // Meanwhile the TCP job connects (and loses).
    let (tcp2, t2) = net.connect(&mut m, t + 0.6, sock2, tcp_job, (server, "h2"))?;
    let t = wire.receive(&mut m, t + 16.0, 1_252)?;
    let t = wire.receive(&mut m, t + 0.8, 1_180)?;
    let t = wire.send(&mut m, t + 0.3, 92)?;
    net.event(&mut m, t + 0.2, "QUIC_SESSION_HANDSHAKE_DONE_FRAME_RECEIVED", quic, json!({}))?;
    net.end(&mut m, t + 0.3, "HTTP_STREAM_JOB", quic_job, json!({}))?;
    net.event(
        &mut m,
        t + 0.35,
        "HTTP_STREAM_REQUEST_BOUND_TO_JOB",
        r3,
        json!({ "source_dependency": quic_job.dependency() }),
    )?;
    let headers = json!([
        ":method: GET",
        ":authority: api.example.com",
        ":scheme: https",
        ":path: /v1/data",
        "accept: */*",
        "origin: https://www.example.com",
        CHROME_UA
    ]);
    let p = json!({ "headers": headers, "quic_priority": 1, "quic_stream_id": 0 });
    net.event(&mut m, t + 0.4, "HTTP_TRANSACTION_QUIC_SEND_REQUEST_HEADERS", r3, p)?;
    net.event(
        &mut m,
        t + 0.42,
        "QUIC_SESSION_STREAM_FRAME_SENT",
        quic,
        json!({ "fin": true, "length": 78, "offset": 0, "stream_id": 0 }),
    )?;
    let t = wire.send(&mut m, t + 0.45, 120)?;
    let t = wire.receive(&mut m, t + 15.0, 1_230)?;
    net.event(
        &mut m,
        t + 0.02,
        "QUIC_SESSION_STREAM_FRAME_RECEIVED",
        quic,
        json!({ "fin": false, "length": 1_180, "offset": 0, "stream_id": 0 }),
    )?;
    let head =
        json!({ "headers": [ "HTTP/1.1 200", "content-type: application/json", "alt-svc: h3=\":443\"; ma=86400" ] });
    net.event(&mut m, t + 0.05, "HTTP_TRANSACTION_READ_RESPONSE_HEADERS", r3, head)?;
    let t = wire.receive(&mut m, t + 0.6, 1_350)?;
    let t = wire.receive(&mut m, t + 0.4, 600)?;
    net.event(
        &mut m,
        t + 0.02,
        "QUIC_SESSION_STREAM_FRAME_RECEIVED",
        quic,
        json!({ "fin": true, "length": 1_900, "offset": 1_180, "stream_id": 0 }),
    )?;
    let t = wire.send(&mut m, t + 0.1, 40)?;
    net.end(&mut m, t + 0.2, "URL_REQUEST_START_JOB", r3, json!({}))?;
    net.end(&mut m, t + 0.4, "REQUEST_ALIVE", r3, json!({}))?;
    // The losing TCP job ends after the request is bound: its socket goes to the pool unused.
    net.end(&mut m, t2.max(t) + 0.5, "HTTP_STREAM_JOB", tcp_job, json!({}))?;

    // 30 s without traffic: Chrome closes the QUIC session; the connections close.
    let t = t + 30_000.0;
    let p = json!({ "details": "No recent network activity after 30000ms.", "from_peer": false, "quic_error": 25 });
    net.event(&mut m, t, "QUIC_SESSION_CLOSED", quic, p)?;
    let t = wire.send(&mut m, t + 0.1, 45)?;
    net.end(&mut m, t + 0.1, "QUIC_SESSION", quic, json!({}))?;
    net.end(&mut m, t + 0.2, "SOCKET_ALIVE", udp, json!({}))?;
    m.udp_close(t + 0.3, net.th, &u)?;
    net.end(&mut m, t + 1.0, "HTTP2_SESSION", h2, json!({}))?;
    net.end(&mut m, t + 1.05, "SOCKET_IN_USE", sock1, json!({}))?;
    net.end(&mut m, t + 1.1, "SOCKET_ALIVE", sock1, json!({}))?;
    m.tcp_close(t + 1.2, net.th, &tcp1)?;
    net.end(&mut m, t + 2.0, "SOCKET_ALIVE", sock2, json!({}))?;
    m.tcp_close(t + 2.1, net.th, &tcp2)?;
    m.finish()
}

/// Datagrams of a QUIC session on its UDP socket: Winsock's and NetLog's view.
struct Wire<'a> {
    net: &'a Net,
    udp: NetSource,
    sock: &'a UdpSock,
    server: SocketAddr,
    sent: u64,
    received: u64,
}

impl Wire<'_> {
    fn send(&mut self, m: &mut Machine, at: f64, bytes: u32) -> Result<f64, SynthError> {
        let t = m.udp_send(at, self.net.th, self.sock, self.server, bytes)?;
        self.net.event(m, t + 0.01, "UDP_BYTES_SENT", self.udp, json!({ "byte_count": bytes }))?;
        self.sent += u64::from(bytes);
        Ok(t + 0.01)
    }

    fn receive(&mut self, m: &mut Machine, at: f64, bytes: u32) -> Result<f64, SynthError> {
        let how = UdpReceive::default();
        let t = m.udp_receive(at, self.net.th, self.sock, self.server, bytes, how)?;
        let p = json!({ "address": self.server.to_string(), "byte_count": bytes });
        self.net.event(m, t + 0.01, "UDP_BYTES_RECEIVED", self.udp, p)?;
        self.received += u64::from(bytes);
        Ok(t + 0.01)
    }
}

/// An HTTP/1.1 request on a kept-alive socket: the socket in use by the
/// request's job, the request line and headers out, the response in, the
/// socket released. Bytes above TLS as NetLog's SSL socket counts them.
#[allow(clippy::too_many_arguments)]
fn h1_exchange(
    m: &mut Machine,
    net: &Net,
    at: f64,
    (request, job, socket): (NetSource, NetSource, NetSource),
    tcp: &mut TcpConn,
    (host, path): (&str, &str),
    (content_type, length): (&str, u32),
) -> Result<f64, SynthError> {
    net.begin(m, at, "SOCKET_IN_USE", socket, json!({ "source_dependency": job.dependency() }))?;
    let line = format!("GET {path} HTTP/1.1\r\n");
    let headers = json!([format!("Host: {host}"), "Connection: keep-alive", "Accept: */*", CHROME_UA]);
    let p = json!({ "headers": headers, "line": line });
    net.event(m, at + 0.05, "HTTP_TRANSACTION_SEND_REQUEST_HEADERS", request, p)?;
    let sent = 402;
    net.event(m, at + 0.06, "SSL_SOCKET_BYTES_SENT", socket, json!({ "byte_count": sent }))?;
    let t = m.tcp_send(at + 0.07, net.th, tcp, sent + 22)?;
    let head = 188;
    let mut t = m.tcp_receive(t + 20.0, tcp, head + 22, net.th)?;
    net.event(m, t + 0.01, "SSL_SOCKET_BYTES_RECEIVED", socket, json!({ "byte_count": head }))?;
    let p = json!({ "headers": response_headers(200, content_type, length) });
    net.event(m, t + 0.02, "HTTP_TRANSACTION_READ_RESPONSE_HEADERS", request, p)?;
    let mut left = length;
    while left > 0 {
        let piece = left.min(16_384);
        t = m.tcp_receive(t + 0.5, tcp, piece + 22, net.th)?;
        net.event(m, t + 0.01, "SSL_SOCKET_BYTES_RECEIVED", socket, json!({ "byte_count": piece }))?;
        left -= piece;
    }
    net.end(m, t + 0.1, "SOCKET_IN_USE", socket, json!({}))?;
    Ok(t + 0.1)
}

/// `ContosoMail.exe` hosts Edge WebView2 (msedgewebview2.exe: browser 4480,
/// network service 4520, renderer 4560; provider Microsoft.MSEdgeWebView):
/// the control's creation, a navigation to <https://mail.contoso.com/inbox>,
/// its fetch of /api/messages on the same HTTP/1.1 connection (ALPN
/// http/1.1, keep-alive), a push connection to mail.contoso.com:8443 that
/// the server refuses (RST: ERR_CONNECTION_REFUSED, no local address in
/// NetLog: joined by thread), and a telemetry host that does not resolve
/// (ERR_NAME_NOT_RESOLVED).
pub fn edge_webview2() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let host = app(&mut m, 4400, "ContosoMail.exe", r#""C:\Program Files\Contoso\Mail\ContosoMail.exe""#)?;
    let exe = r#""C:\Program Files (x86)\Microsoft\EdgeWebView\Application\138.0.3351.83\msedgewebview2.exe""#;
    let embedded = "--embedded-browser-webview=1 --webview-exe-name=ContosoMail.exe";
    let browser = app(&mut m, 4480, "msedgewebview2.exe", &format!("{exe} {embedded}"))?;
    let network = app(
        &mut m,
        4520,
        "msedgewebview2.exe",
        &format!("{exe} --type=utility --utility-sub-type=network.mojom.NetworkService {embedded}"),
    )?;
    let renderer = app(&mut m, 4560, "msedgewebview2.exe", &format!("{exe} --type=renderer {embedded}"))?;
    let (app_ui, ui, main, resolver) = ((host, 4404), (browser, 4484), (renderer, 4564), (network, 4530));
    let net = Net { b: EDGE_WEBVIEW2, th: (network, 4524) };
    let b = EDGE_WEBVIEW2;
    let inbox = "https://mail.contoso.com/inbox";
    let messages = "https://mail.contoso.com/api/messages?folder=inbox";

    // The host creates the control and navigates it: WebView2's client DLL
    // in the host logs the API calls under the runtime's provider.
    let wv = category::EDGE_WEBVIEW;
    m.chromium_slice(
        100.0,
        84.0,
        app_ui,
        &b,
        wv,
        "WebView2_CreationTime",
        &[("reason", Arg::from("CreateCoreWebView2Controller"))],
    )?;
    m.chromium_event(
        190.0,
        app_ui,
        &b,
        wv,
        ("WebView2_APICalled", "Instant"),
        0x7100_0000_0000_0000 | 4404,
        None,
        &[("api", Arg::from("Navigate")), ("url", Arg::from(inbox))],
    )?;
    let nav_track = 0x6e61_7600_0000_0002;
    m.chromium_event(
        191.0,
        ui,
        &b,
        category::NAVIGATION,
        ("Navigation StartToCommit", "Begin"),
        nav_track,
        None,
        &[("Initial URL", Arg::from(inbox))],
    )?;

    let (r1, job1, sock1) =
        (NetSource::new(31, "URL_REQUEST"), NetSource::new(32, "HTTP_STREAM_JOB"), NetSource::new(33, "SOCKET"));
    net.start_request(&mut m, 192.0, r1, (inbox, "main frame", "HIGHEST"))?;
    let p = json!({ "original_url": origin(inbox), "priority": "HIGHEST", "source_dependency": r1.dependency(), "url": origin(inbox), "using_quic": false });
    net.begin(&mut m, 192.1, "HTTP_STREAM_JOB", job1, p)?;
    let addresses = [ip("40.97.120.18")];
    let lookup = Lookup::answered("mail.contoso.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(192.2, resolver, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, resolver, Guid::ZERO, "mail.contoso.com", (0, &addresses))?;
    let (mut tcp, t) = net.connect(&mut m, t + 0.2, sock1, job1, (sa("40.97.120.18:443"), "http/1.1"))?;
    net.event(
        &mut m,
        t + 0.05,
        "SOCKET_POOL_BOUND_TO_SOCKET",
        job1,
        json!({ "source_dependency": sock1.dependency() }),
    )?;
    net.end(&mut m, t + 0.06, "HTTP_STREAM_JOB", job1, json!({}))?;
    net.event(
        &mut m,
        t + 0.1,
        "HTTP_STREAM_REQUEST_BOUND_TO_JOB",
        r1,
        json!({ "source_dependency": job1.dependency() }),
    )?;
    let t = h1_exchange(
        &mut m,
        &net,
        t + 0.2,
        (r1, job1, sock1),
        &mut tcp,
        ("mail.contoso.com", "/inbox"),
        ("text/html", 38_210),
    )?;
    net.end(&mut m, t, "URL_REQUEST_START_JOB", r1, json!({}))?;
    net.end(&mut m, t + 0.2, "REQUEST_ALIVE", r1, json!({}))?;
    m.chromium_event(
        t + 1.0,
        ui,
        &b,
        category::NAVIGATION,
        ("Navigation StartToCommit", "End"),
        nav_track,
        Some(t + 1.0 - 191.0),
        &[],
    )?;

    // The page's fetch reuses the socket.
    let t = t + 20.0;
    m.chromium_slice(
        t,
        0.3,
        main,
        &b,
        category::LOADING,
        "ResourceFetcher::requestResource",
        &[("url", Arg::from(messages))],
    )?;
    let (r2, job2) = (NetSource::new(40, "URL_REQUEST"), NetSource::new(41, "HTTP_STREAM_JOB"));
    net.start_request(&mut m, t + 1.0, r2, (messages, "other", "HIGHEST"))?;
    let p = json!({ "original_url": origin(messages), "priority": "HIGHEST", "source_dependency": r2.dependency(), "url": origin(messages), "using_quic": false });
    net.begin(&mut m, t + 1.1, "HTTP_STREAM_JOB", job2, p)?;
    net.event(&mut m, t + 1.15, "SOCKET_POOL_REUSED_AN_EXISTING_SOCKET", job2, json!({ "idle_ms": 21 }))?;
    net.event(
        &mut m,
        t + 1.16,
        "SOCKET_POOL_BOUND_TO_SOCKET",
        job2,
        json!({ "source_dependency": sock1.dependency() }),
    )?;
    net.end(&mut m, t + 1.2, "HTTP_STREAM_JOB", job2, json!({}))?;
    net.event(
        &mut m,
        t + 1.25,
        "HTTP_STREAM_REQUEST_BOUND_TO_JOB",
        r2,
        json!({ "source_dependency": job2.dependency() }),
    )?;
    let t = h1_exchange(
        &mut m,
        &net,
        t + 1.3,
        (r2, job2, sock1),
        &mut tcp,
        ("mail.contoso.com", "/api/messages?folder=inbox"),
        ("application/json", 9_870),
    )?;
    net.end(&mut m, t, "URL_REQUEST_START_JOB", r2, json!({}))?;
    net.end(&mut m, t + 0.2, "REQUEST_ALIVE", r2, json!({}))?;

    // The push channel: port 8443 refuses.
    let t = t + 5.0;
    let push = "https://mail.contoso.com:8443/push/subscribe";
    let (r3, job3, sock3) =
        (NetSource::new(50, "URL_REQUEST"), NetSource::new(51, "HTTP_STREAM_JOB"), NetSource::new(52, "SOCKET"));
    net.start_request(&mut m, t, r3, (push, "other", "LOW"))?;
    let p = json!({ "original_url": origin(push), "priority": "LOW", "source_dependency": r3.dependency(), "url": origin(push), "using_quic": false });
    net.begin(&mut m, t + 0.1, "HTTP_STREAM_JOB", job3, p)?;
    let remote = sa("40.97.120.18:8443");
    net.begin(&mut m, t + 0.2, "SOCKET_ALIVE", sock3, json!({ "source_dependency": job3.dependency() }))?;
    net.begin(&mut m, t + 0.21, "TCP_CONNECT", sock3, json!({ "address_list": [remote.to_string()] }))?;
    net.begin(&mut m, t + 0.22, "TCP_CONNECT_ATTEMPT", sock3, json!({ "address": remote.to_string() }))?;
    let (refused, t) = m.tcp_connect_failing(t + 0.25, net.th, &Dial::new(remote).rtt(13.0), Failure::Refused)?;
    net.end(&mut m, t + 0.1, "TCP_CONNECT_ATTEMPT", sock3, json!({ "net_error": -102, "os_error": 10061 }))?;
    net.end(&mut m, t + 0.11, "TCP_CONNECT", sock3, json!({ "net_error": -102 }))?;
    net.end(&mut m, t + 0.15, "SOCKET_ALIVE", sock3, json!({}))?;
    if let Some(s) = &refused.socket {
        m.afd_close(t + 0.16, net.th, s)?;
    }
    net.end(&mut m, t + 0.2, "HTTP_STREAM_JOB", job3, json!({ "net_error": -102 }))?;
    net.end(&mut m, t + 0.3, "URL_REQUEST_START_JOB", r3, json!({ "net_error": -102 }))?;
    net.end(&mut m, t + 0.4, "REQUEST_ALIVE", r3, json!({ "net_error": -102 }))?;

    // Telemetry to a name that does not exist.
    let t = t + 10.0;
    let ping = "https://telemetry.contoso-cdn.example/v1/ping";
    let r4 = NetSource::new(60, "URL_REQUEST");
    net.start_request(&mut m, t, r4, (ping, "other", "IDLE"))?;
    let lookup = Lookup::failed("telemetry.contoso-cdn.example", 1, 9003);
    let t = m.resolve(t + 0.2, resolver, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, resolver, Guid::ZERO, "telemetry.contoso-cdn.example", (11001, &[]))?;
    net.end(&mut m, t + 0.2, "URL_REQUEST_START_JOB", r4, json!({ "net_error": -105 }))?;
    net.end(&mut m, t + 0.3, "REQUEST_ALIVE", r4, json!({ "net_error": -105 }))?;

    // The host closes; the connection goes with the runtime.
    let t = t + 2_000.0;
    net.end(&mut m, t, "SOCKET_ALIVE", sock1, json!({}))?;
    m.tcp_close(t + 0.1, net.th, &tcp)?;
    m.finish()
}

/// Windows 11 22H2: `ContosoUpdater.exe` asks <https://api.contoso.com> for
/// updates over HTTP/3 with WinHTTP (GET, then a POST on the same QUIC
/// connection) and closes the connection (HTTP/3's no-error code). MsQuic
/// runs in the app (its worker thread, its UDP socket).
pub fn winhttp_http3() -> Result<Vec<u8>, SynthError> {
    let mut m = machine_with(SynthConfig { build: 22621, ..SynthConfig::default() })?;
    let pid =
        app(&mut m, 5200, "ContosoUpdater.exe", r#""C:\Program Files\Contoso\Updater\ContosoUpdater.exe" /check"#)?;
    let th = WebThreads { app: (pid, 5204), worker: (pid, 5248), io: (pid, 5252) };
    let s = m.winhttp_open(50.0, th.app)?;
    let addresses = [ip("20.189.173.10")];
    let lookup = Lookup::answered("api.contoso.com", Answer { cnames: &[], addresses: &addresses });
    let what = ("GET", "https://api.contoso.com/v2/updates?channel=stable", "api.contoso.com");
    let (r, mut h, t) = m.winhttp_h3_fetch(
        50.5,
        th,
        &s,
        what,
        (&[lookup], DNSCACHE),
        (sa("20.189.173.10:443"), 22.0),
        ("/v2/updates?channel=stable", "HTTP/3 200", 3_412),
    )?;
    let post = ("POST", "https://api.contoso.com/v2/telemetry", "api.contoso.com", "/v2/telemetry");
    let (_, t) = m.winhttp_h3_fetch_on(t + 5.0, th, &s, post, &mut h, ("HTTP/3 204", 0))?;
    let t = m.winhttp_h3_close(t + 50.0, th, &r, &mut h)?;
    m.winhttp_close_session(t + 0.1, th.app, &s)?;
    m.finish()
}

/// Chrome before the Perfetto exporter, in one process that still did its
/// own networking (before the network service): the manifest exporter's
/// ChromeEvent for the navigation (`Begin`/`End` with its URL) and the
/// TraceLogging exporter of 2020–2023 (`Complete`/`Complete End` on the
/// main thread, a `Nestable Async Begin`/`End` across threads), while the
/// process's IO thread connects to the URL's host: joined by host.
pub fn chrome_legacy() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let chrome = app(&mut m, 8200, "chrome.exe", r#""C:\Program Files (x86)\Google\Chrome\Application\chrome.exe""#)?;
    let (main, io, other) = ((chrome, 8204), (chrome, 8232), (chrome, 8240));
    let url = "https://news.example.org/today";
    m.chrome_manifest_event(100.0, main, "NavigationControllerImpl::LoadURLWithParams", "Begin", &[("url", url)])?;
    m.chrome_manifest_event(100.6, main, "NavigationControllerImpl::LoadURLWithParams", "End", &[])?;
    let b = CHROME;
    m.chromium_legacy_event(
        101.0,
        main,
        &b,
        category::NAVIGATION,
        "Navigation StartToCommit",
        "Nestable Async Begin",
        &[("Initial URL", url)],
    )?;
    let addresses = [ip("198.51.100.7")];
    let lookup = Lookup::answered("news.example.org", Answer { cnames: &[], addresses: &addresses }).cached();
    let t = m.resolve(101.5, other, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, other, Guid::ZERO, "news.example.org", (0, &addresses))?;
    let mut tcp = m.tcp_connect(t + 0.2, io, &Dial::new(sa("198.51.100.7:443")).rtt(30.0))?;
    let t = m.tls_handshake(t + 30.5, io, &mut tcp, io)?;
    let t = m.tcp_send(t + 0.2, io, &mut tcp, 610)?;
    let mut t = m.tcp_receive(t + 31.0, &mut tcp, 4_096, io)?;
    for _ in 0..3 {
        t = m.tcp_receive(t + 1.0, &mut tcp, 16_406, io)?;
    }
    m.chromium_legacy_event(t + 1.0, main, &b, category::LOADING, "Document::SetURL", "Complete", &[("url", url)])?;
    m.chromium_legacy_event(t + 1.4, main, &b, category::LOADING, "Document::SetURL", "Complete End", &[])?;
    m.chromium_legacy_event(
        t + 2.0,
        other,
        &b,
        category::NAVIGATION,
        "Navigation StartToCommit",
        "Nestable Async End",
        &[],
    )?;
    m.chromium_legacy_event(
        t + 3.0,
        main,
        &b,
        category::BLINK_USER_TIMING,
        "loadEventEnd",
        "Instant",
        &[("frame", "0x2f3c")],
    )?;
    m.tcp_close(t + 5_000.0, io, &tcp)?;
    m.finish()
}
