//! WinHTTP clients: a plain GET, an async request from a pool thread,
//! keep-alive and HTTP/2 sharing, failures, DNS shapes, multi-address
//! connects, a download already under way, a proxy tunnel, an older build.

use nettrail_etl::Guid;

use crate::windows::{
    Answer, Dial, Exchange, Failure, Lookup, Machine, Tid, WebConnection, WebRequest, WebSession, WebThreads,
};
use crate::{SynthConfig, SynthError};

use super::handoffs::{BUILD_REQUEST_RET, FIXTURE_SEND_RET};
use super::{DNSCACHE, app, ip, machine, machine_with, sa};

fn threads(pid: u32, app: u32) -> WebThreads {
    WebThreads { app: (pid, app), worker: (pid, app + 44), io: (pid, app + 48) }
}

/// 1: `client.exe` GETs `https://www.example.com/index.html` (1,256-byte
/// body) with WinHTTP; the name comes from the DNS cache; the connection is
/// closed with the session.
pub fn winhttp_get() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 5120, "client.exe", r#""C:\Tools\client.exe" https://www.example.com/index.html"#)?;
    let th = threads(pid, 5124);
    let s = m.winhttp_open(100.0, th.app)?;
    let addresses = [ip("93.184.216.34")];
    let lookup = Lookup::answered("www.example.com", Answer { cnames: &[], addresses: &addresses }).cached();
    let dial = Dial::new(sa("93.184.216.34:443")).rtt(24.0);
    let x = Exchange::new("GET", "www.example.com", "/index.html", "HTTP/1.1 200 OK", 1_256);
    let what = ("GET", "https://www.example.com/index.html", "www.example.com");
    let (r, c, t) = m.winhttp_fetch(100.5, th, &s, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let t = m.winhttp_close_socket(t + 20.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 0.1, th.app, &s)?;
    m.finish()
}

/// 2: `asyncapp.exe`'s main thread opens a session and posts a work item
/// to the thread pool (from the fixture DLL's `fixture_send`); the item runs
/// on a pool thread (created during the trace), which opens and sends a
/// POST of 2,048 bytes to `https://api.contoso.com/v1/upload` (201 Created,
/// 64 bytes); WinHTTP's workers connect and exchange. Before the item
/// returns it asks WinHTTP to read the answer: in that read's completion, on
/// WinHTTP's worker, the app GETs `/v1/status` (200 OK, 310 bytes) on the
/// same connection.
pub fn winhttp_async_pool() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 6200, "asyncapp.exe", r#""C:\Program Files\Async\asyncapp.exe""#)?;
    super::handoffs::map_fixture(&mut m, pid)?;
    let main = (pid, 6204);
    let pool = (pid, 6236);
    m.synth().start_thread(40.0, pid, pool.1)?;
    let th = WebThreads { app: pool, worker: (pid, 6240), io: (pid, 6244) };
    let s = m.winhttp_open(20.0, main)?;
    let work = m.tp_work(pid, 0x7ffd_4a20_1130);
    let frames = [BUILD_REQUEST_RET, FIXTURE_SEND_RET];
    let stack = super::handoffs::app_stack(&m, pid, super::handoffs::TP_POST_WORK, &frames)?;
    m.tp_post(44.0, main, &work, &stack)?;
    m.tp_run(44.8, pool, &work)?;
    let addresses = [ip("40.112.72.205")];
    let lookup = Lookup::answered("api.contoso.com", Answer { cnames: &[], addresses: &addresses });
    let dial = Dial::new(sa("40.112.72.205:443")).rtt(31.0);
    let x = Exchange::new("POST", "api.contoso.com", "/v1/upload", "HTTP/1.1 201 Created", 64).body(2_048);
    let what = ("POST", "https://api.contoso.com/v1/upload", "api.contoso.com");
    let (r, mut c, t) = m.winhttp_fetch(45.0, th, &s, what, (&[lookup], DNSCACHE), &dial, &x)?;
    // WinHttpReadData: a work item for WinHTTP's worker, whose completion
    // callback sends the next request.
    let t = m.winhttp_send_request(t + 1.0, pool, th.worker, &r)?;
    m.tp_done(t + 0.5, pool, &work)?;
    let next = WebThreads { app: th.worker, ..th };
    let x = Exchange::new("GET", "api.contoso.com", "/v1/status", "HTTP/1.1 200 OK", 310);
    let (_, t2) = m.winhttp_fetch_on(t + 1.0, next, &s, ("GET", "https://api.contoso.com/v1/status"), &mut c, &x)?;
    m.winhttp_work_done(t2 + 0.5, th.worker, &r)?;
    let t = m.winhttp_close_socket(t2 + 30.0, pool, &r, &c)?;
    m.winhttp_close_session(t + 5.0, main, &s)?;
    m.finish()
}

/// 3: `syncclient.exe` sends three requests over one keep-alive HTTPS
/// connection to api.example.net (GET 5,000 bytes, GET 800, POST 300 → 120)
/// and four over one HTTP/2 connection to h2.example.net (the first alone,
/// then three concurrent streams whose sends and receives interleave).
pub fn winhttp_keepalive_h2() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 7300, "syncclient.exe", r#""C:\Program Files\Sync\syncclient.exe" --background"#)?;
    let th = threads(pid, 7304);
    let s = m.winhttp_open(10.0, th.app)?;

    let v4 = [ip("198.18.7.10")];
    let lookup = Lookup::answered("api.example.net", Answer { cnames: &[], addresses: &v4 }).cached();
    let dial = Dial::new(sa("198.18.7.10:443"));
    let x = Exchange::new("GET", "api.example.net", "/v1/items", "HTTP/1.1 200 OK", 5_000);
    let what = ("GET", "https://api.example.net/v1/items", "api.example.net");
    let (first, mut c, t) = m.winhttp_fetch(20.0, th, &s, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let x = Exchange::new("GET", "api.example.net", "/v1/items/2", "HTTP/1.1 200 OK", 800);
    let (_, t) = m.winhttp_fetch_on(t + 15.0, th, &s, ("GET", "https://api.example.net/v1/items/2"), &mut c, &x)?;
    let x = Exchange::new("POST", "api.example.net", "/v1/items", "HTTP/1.1 201 Created", 120).body(300);
    let (_, t) = m.winhttp_fetch_on(t + 15.0, th, &s, ("POST", "https://api.example.net/v1/items"), &mut c, &x)?;
    m.winhttp_close_socket(t + 40.0, th.io, &first, &c)?;

    let v4 = [ip("198.18.9.20")];
    let lookup = Lookup::answered("h2.example.net", Answer { cnames: &[], addresses: &v4 }).cached();
    let dial = Dial::new(sa("198.18.9.20:443"));
    let x = Exchange::new("GET", "h2.example.net", "/manifest.json", "HTTP/2 200", 2_200);
    let what = ("GET", "https://h2.example.net/manifest.json", "h2.example.net");
    let (_, mut h2, t) = m.winhttp_fetch(400.0, th, &s, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let streams = [("/chunk/1", 30_000u32), ("/chunk/2", 9_000), ("/chunk/3", 17_000)];
    let mut requests: Vec<(WebRequest, Exchange)> = Vec::new();
    let mut t = t + 5.0;
    for (path, length) in streams {
        let url = format!("https://h2.example.net{path}");
        let r = m.winhttp_open_request(t, th.app, &s, "GET", &url)?;
        let started = m.winhttp_send_request(t + 0.2, th.app, th.worker, &r)?;
        m.winhttp_wait_connection(started + 0.05, th.worker, &r, &h2)?;
        m.winhttp_work_done(started + 0.1, th.worker, &r)?;
        requests.push((r, Exchange::new("GET", "h2.example.net", path, "HTTP/2 200", length)));
        t += 1.0;
    }
    for (r, x) in &requests {
        t = m.winhttp_send(t, th.io, r, &mut h2, (&x.request_head, 0), true)?;
    }
    // Responses interleave: every stream's head first, then bodies in 16 KB pieces.
    let mut left: Vec<u32> = requests.iter().map(|(_, x)| x.received()).collect();
    let mut heads: Vec<Option<&str>> = requests.iter().map(|(_, x)| Some(x.response_head.as_str())).collect();
    while left.iter().any(|&l| l > 0) {
        for (i, (r, _)) in requests.iter().enumerate() {
            if left[i] == 0 {
                continue;
            }
            let piece = left[i].min(16_384);
            t = m.winhttp_receive(t + 0.3, (th.io, th.io), r, &mut h2, (piece, heads[i].take()))?;
            left[i] -= piece;
        }
    }
    for (r, _) in &requests {
        t = m.winhttp_close_request(t + 0.5, th.app, r)?;
    }
    let (last, _) = requests.last().expect("three streams");
    let t = m.winhttp_close_socket(t + 30.0, th.io, last, &h2)?;
    m.winhttp_close_session(t + 1.0, th.app, &s)?;
    m.finish()
}

/// A WinHTTP request whose connect fails; returns when the request is closed.
#[allow(clippy::too_many_arguments)]
fn failing_request(
    m: &mut Machine,
    at: f64,
    th: WebThreads,
    s: &WebSession,
    (url, host): (&str, &str),
    dial: &Dial,
    failure: Failure,
) -> Result<f64, SynthError> {
    let r = m.winhttp_open_request(at, th.app, s, "GET", url)?;
    let t = m.winhttp_send_request(at + 0.2, th.app, th.worker, &r)?;
    let mut c = m.winhttp_connection(th.app.0, true);
    m.winhttp_wait_connection(t + 0.05, th.worker, &r, &c)?;
    let addresses = [dial.remote.ip()];
    let lookup = Lookup::answered(host, Answer { cnames: &[], addresses: &addresses }).cached();
    let t = m.winhttp_resolve(t + 0.1, th.worker, &r, &c, (host, dial.remote.port()), (&[lookup], DNSCACHE))?;
    let t = m.winhttp_connect_failing(t + 0.1, th, &r, &mut c, (dial, 1, failure))?;
    m.winhttp_work_done(t + 0.1, th.worker, &r)?;
    m.winhttp_close_request(t + 0.5, th.app, &r)
}

/// 8: `fetcher.exe`'s WinHTTP requests to a refused port (RST after 30 ms:
/// TCPIP 1034, AFD's completion status, WebIO 12029) and to a host that
/// never answers (TCPIP 1045 then 1034 after 21 s); `nc.exe`'s blocking
/// connect() to a refused port.
pub fn connect_failures() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 9100, "fetcher.exe", r#""C:\Tools\fetcher.exe" --health"#)?;
    let th = threads(pid, 9104);
    let s = m.winhttp_open(50.0, th.app)?;
    let refused = Dial::new(sa("198.51.100.7:8443")).rtt(30.0);
    let t = failing_request(
        &mut m,
        100.0,
        th,
        &s,
        ("https://refused.example.com:8443/health", "refused.example.com"),
        &refused,
        Failure::Refused,
    )?;
    let silent = Dial::new(sa("198.51.100.99:443"));
    let what = ("https://unreachable.example.com/", "unreachable.example.com");
    let t = failing_request(&mut m, t + 100.0, th, &s, what, &silent, Failure::Timeout)?;
    m.winhttp_close_session(t + 10.0, th.app, &s)?;

    let nc = app(&mut m, 9200, "nc.exe", "nc.exe 10.0.0.5 22")?;
    let caller: Tid = (nc, 9204);
    let dial = Dial::new(sa("10.0.0.5:22")).blocking().rtt(2.0).completion(caller);
    let (c, t) = m.tcp_connect_failing(500.0, caller, &dial, Failure::Refused)?;
    let socket = c.socket.expect("a Winsock socket");
    m.afd_close(t + 0.5, caller, &socket)?;
    m.finish()
}

/// 9: `mediaplayer.exe` fetches `https://cdn.example.com/video/seg1.ts`: A and
/// AAAA lookups over the network answer a CNAME chain (edgekey, akamaiedge)
/// with two addresses each; WinHTTP connects to the first IPv6 one. Later
/// getaddrinfo finds the name in the Dnscache service's cache, and a lookup
/// of nosuch.example.com fails (9003; getaddrinfo 11001). The Dnscache
/// service logs its interface's DNS servers.
pub fn dns() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    m.dns_interface_servers(5.0, DNSCACHE, "Ethernet", &[ip("192.168.1.1"), ip("2001:db8:4006:812::1")])?;
    let pid = app(&mut m, 9500, "mediaplayer.exe", r#""C:\Program Files\Media\mediaplayer.exe""#)?;
    let th = threads(pid, 9504);
    let s = m.winhttp_open(50.0, th.app)?;
    let cnames = ["cdn.example.com.edgekey.net", "e1234.a.akamaiedge.net"];
    let v4 = [ip("23.45.67.89"), ip("23.45.67.90")];
    let v6 = [ip("2600:1408:c400:1a::17d4:3a20"), ip("2600:1408:c400:1a::17d4:3a21")];
    let a = Lookup::answered("cdn.example.com", Answer { cnames: &cnames, addresses: &v4 });
    let aaaa = Lookup::answered("cdn.example.com", Answer { cnames: &cnames, addresses: &v6 });
    let dial = Dial::new(sa("[2600:1408:c400:1a::17d4:3a20]:443")).rtt(9.0);
    let x = Exchange::new("GET", "cdn.example.com", "/video/seg1.ts", "HTTP/1.1 200 OK", 48_000);
    let what = ("GET", "https://cdn.example.com/video/seg1.ts", "cdn.example.com");
    let (r, c, t) = m.winhttp_fetch(100.0, th, &s, what, (&[a, aaaa], DNSCACHE), &dial, &x)?;
    let t = m.winhttp_close_socket(t + 50.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 1.0, th.app, &s)?;

    let lookups = Guid::parse_const("3f2b7a10-5c1d-4e8a-9b21-7d0c6e4f1a33");
    let t = m.resolve(2_000.0, th.app, lookups, &a.cached(), DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.1, th.app, lookups, "cdn.example.com", (0, &v4))?;
    let failed = Lookup::failed("nosuch.example.com", 1, 9003);
    let t = m.resolve(3_000.0, th.app, lookups, &failed, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.1, th.app, lookups, "nosuch.example.com", (11001, &[]))?;
    m.finish()
}

/// 10: `client.exe` fetches `https://dual.example.net/` (AAAA 2001:db8:1::10
/// and A 203.0.113.10): the IPv6 attempt fails at once (network
/// unreachable, WebIO 12029), the IPv4 one connects (202 ends the series);
/// then `https://v6only.example.net/` over IPv6 alone.
pub fn ipv6_happy_eyeballs() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 10100, "client.exe", r#""C:\Tools\client.exe" --dual"#)?;
    let th = threads(pid, 10104);
    let s = m.winhttp_open(10.0, th.app)?;

    let r = m.winhttp_open_request(20.0, th.app, &s, "GET", "https://dual.example.net/")?;
    let t = m.winhttp_send_request(20.2, th.app, th.worker, &r)?;
    let mut c = m.winhttp_connection(pid, true);
    m.winhttp_wait_connection(t + 0.05, th.worker, &r, &c)?;
    let (v6, v4) = ([ip("2001:db8:1::10")], [ip("203.0.113.10")]);
    let aaaa = Lookup::answered("dual.example.net", Answer { cnames: &[], addresses: &v6 });
    let a = Lookup::answered("dual.example.net", Answer { cnames: &[], addresses: &v4 });
    let t = m.winhttp_resolve(t + 0.1, th.worker, &r, &c, ("dual.example.net", 443), (&[aaaa, a], DNSCACHE))?;
    let failing = Dial::new(sa("[2001:db8:1::10]:443"));
    let t = m.winhttp_connect_failing(t + 0.1, th, &r, &mut c, (&failing, 2, Failure::Unreachable))?;
    // The same connection object tries the next address with a new socket.
    c.socket_handle = m.handle();
    let dial = Dial::new(sa("203.0.113.10:443")).rtt(18.0);
    let t = m.winhttp_connect(t + 0.1, th, &r, &mut c, (&dial, 1, true))?;
    m.winhttp_work_done(t, th.worker, &r)?;
    let t = m.winhttp_handshake(t + 0.1, th, &mut c, "dual.example.net")?;
    let x = Exchange::new("GET", "dual.example.net", "/", "HTTP/1.1 200 OK", 3_100);
    let t = m.winhttp_exchange(t + 0.2, th, &r, &mut c, &x)?;
    let t = m.winhttp_close_request(t + 1.0, th.app, &r)?;
    let t = m.winhttp_close_socket(t + 5.0, th.app, &r, &c)?;

    let only = [ip("2001:db8:2::20")];
    let lookup = Lookup::answered("v6only.example.net", Answer { cnames: &[], addresses: &only });
    let dial = Dial::new(sa("[2001:db8:2::20]:443")).rtt(15.0);
    let x = Exchange::new("GET", "v6only.example.net", "/", "HTTP/1.1 200 OK", 900);
    let what = ("GET", "https://v6only.example.net/", "v6only.example.net");
    let (r, c, t) = m.winhttp_fetch(t + 50.0, th, &s, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let t = m.winhttp_close_socket(t + 5.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 1.0, th.app, &s)?;
    m.finish()
}

/// 11: the trace starts while `downloader.exe` downloads over WinHTTP: the
/// connection is known from TCPIP's rundown only; WebIO's receives (20 ×
/// 16 KB) arrive without any create event; then the request and the socket
/// are closed. The same process has an idle connection, and System an idle
/// SMB connection, both in the rundown only.
pub fn mid_connection() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 11100, "downloader.exe", r#""C:\Tools\downloader.exe" https://dl.example.org/big.iso"#)?;
    let th = threads(pid, 11104);
    let local = m.ipv4;
    let download = m.tcp_existing(pid, sa(&format!("{local}:51234")), sa("151.101.2.132:443"));
    let idle = m.tcp_existing(pid, sa(&format!("{local}:51240")), sa("20.190.160.1:443"));
    let smb = m.tcp_existing(4, sa(&format!("{local}:49670")), sa("192.168.1.10:445"));
    for (i, c) in [&download, &idle, &smb].into_iter().enumerate() {
        m.tcp_rundown(0.5 + 0.01 * i as f64, &c.tcb)?;
    }
    let (r, mut c) = m.winhttp_in_progress(pid, download, true);
    let mut t = 3.0;
    for _ in 0..20 {
        t = m.winhttp_receive(t + 1.0, (th.io, th.io), &r, &mut c, (16_384, None))?;
    }
    let t = m.winhttp_close_request(t + 2.0, th.app, &r)?;
    m.winhttp_close_socket(t + 1.0, th.app, &r, &c)?;
    m.finish()
}

/// 27: `client.exe` fetches `https://origin.example.com/data` through the
/// proxy proxy.corp.example.com:8080 (10.0.0.8): WebIO resolves and
/// connects to the proxy, sends CONNECT, gets "200 Connection established",
/// then TLS and the real request in the tunnel ("200 OK", 4,000 bytes).
pub fn proxy_connect() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 27100, "client.exe", r#""C:\Tools\client.exe" https://origin.example.com/data"#)?;
    let th = threads(pid, 27104);
    let s = m.winhttp_open(10.0, th.app)?;
    let r = m.winhttp_open_request(20.0, th.app, &s, "GET", "https://origin.example.com/data")?;
    let t = m.winhttp_send_request(20.2, th.app, th.worker, &r)?;
    let mut c: WebConnection = m.winhttp_connection(pid, false);
    m.winhttp_wait_connection(t + 0.05, th.worker, &r, &c)?;
    let proxy = [ip("10.0.0.8")];
    let lookup = Lookup::answered("proxy.corp.example.com", Answer { cnames: &[], addresses: &proxy });
    let t = m.winhttp_resolve(t + 0.1, th.worker, &r, &c, ("proxy.corp.example.com", 8080), (&[lookup], DNSCACHE))?;
    let dial = Dial::new(sa("10.0.0.8:8080")).rtt(2.0);
    let t = m.winhttp_connect(t + 0.1, th, &r, &mut c, (&dial, 1, false))?;
    m.winhttp_work_done(t, th.worker, &r)?;
    let connect = "CONNECT origin.example.com:443 HTTP/1.1\r\nHost: origin.example.com:443\r\n\
                   User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) WinHttp\r\n\r\n";
    let t = m.winhttp_send(t + 0.2, th.io, &r, &mut c, (connect, 0), true)?;
    let established = "HTTP/1.1 200 Connection established\r\n\r\n";
    let t = m.winhttp_receive(t + 0.5, (th.io, th.io), &r, &mut c, (established.len() as u32, Some(established)))?;
    c.tls = true;
    let t = m.winhttp_handshake(t + 0.2, th, &mut c, "origin.example.com")?;
    let x = Exchange::new("GET", "origin.example.com", "/data", "HTTP/1.1 200 OK", 4_000);
    let t = m.winhttp_exchange(t + 0.2, th, &r, &mut c, &x)?;
    let t = m.winhttp_close_request(t + 1.0, th.app, &r)?;
    let t = m.winhttp_close_socket(t + 5.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 1.0, th.app, &s)?;
    m.finish()
}

/// 28: Windows 10 1703 (build 15063), whose WebIO sends report 0 bytes:
/// `client.exe` GETs `https://www.example.com/` and POSTs 1,500 bytes on the
/// same connection; the bytes sent are in TCPIP's SendPosted on the I/O
/// thread between WebIO's send start and stop.
pub fn old_webio_send_sizes() -> Result<Vec<u8>, SynthError> {
    let mut m = machine_with(SynthConfig { build: 15063, ..SynthConfig::default() })?;
    m.webio_send_sizes = false;
    let pid = app(&mut m, 28100, "client.exe", r#""C:\Tools\client.exe""#)?;
    let th = threads(pid, 28104);
    let s = m.winhttp_open(10.0, th.app)?;
    let addresses = [ip("93.184.216.34")];
    let lookup = Lookup::answered("www.example.com", Answer { cnames: &[], addresses: &addresses }).cached();
    let dial = Dial::new(sa("93.184.216.34:443")).rtt(22.0);
    let x = Exchange::new("GET", "www.example.com", "/", "HTTP/1.1 200 OK", 1_256);
    let what = ("GET", "https://www.example.com/", "www.example.com");
    let (r, mut c, t) = m.winhttp_fetch(20.0, th, &s, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let x = Exchange::new("POST", "www.example.com", "/form", "HTTP/1.1 200 OK", 310).body(1_500);
    let (_, t) = m.winhttp_fetch_on(t + 20.0, th, &s, ("POST", "https://www.example.com/form"), &mut c, &x)?;
    let t = m.winhttp_close_socket(t + 5.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 1.0, th.app, &s)?;
    m.finish()
}
