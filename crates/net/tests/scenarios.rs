//! The network model against Windows' behaviour: one test per synthesized
//! scenario (`nettrail_synth::scenarios`, NetBlame's test scenarios),
//! asserting the rows that docs/network-model.md and netblame.md say a
//! correct tool shows. The expectations come from what the scenario makes
//! Windows log, never from the model's code. Each test gathers every
//! mismatch before failing, so one run lists them all.

use std::fmt::{Debug, Display};

use nettrail_decode::{Coverage, Schemas};
use nettrail_etl::{Guid, Summary, Trace};
use nettrail_net::{ConnectionRow, DnsRow, Layer, Report, RequestRow, ServerRow, Stitched};
use nettrail_stacks::NoSymbols;
use nettrail_synth::catalog::{kernel_class, provider_guid};
use nettrail_synth::scenarios::{self, Scenario};
use nettrail_synth::windows::Exchange;
use nettrail_testkit::{peer_counts, target_dir};

/// A scenario analysed: the tables, each request's stitched stacks (frames
/// as `module+0xrva`, no symbols), and when each manifest event was logged.
struct Run {
    report: Report,
    stitched: Vec<Option<Stitched>>,
    events: Vec<Logged>,
}

struct Logged {
    provider: Guid,
    activity: Guid,
    related: Guid,
    id: u16,
    version: u8,
    pid: Option<u32>,
    pointer_size: u8,
    seconds: f64,
}

fn run(scenario: Scenario) -> Run {
    let bytes = scenario().expect("the scenario writes its trace");
    let trace = Trace::parse(&bytes).expect("the trace parses");
    let mut schemas = Schemas::new();
    assert!(schemas.learn(&trace).is_empty(), "the embedded metadata reads");
    let analysis = nettrail_net::analyze(&trace, &schemas, &mut |_| {});
    assert!(analysis.damage.is_empty(), "{:?}", analysis.damage);
    let start = trace.header_timestamp();
    let mut events = Vec::new();
    let mut stream = trace.events();
    while let Some(event) = stream.next() {
        let r = event.expect("every event reads").record;
        // The session clock counts 100 ns ticks (10 MHz QPC).
        let seconds = r.timestamp.saturating_sub(start) as f64 / 1e7;
        events.push(Logged {
            provider: r.provider,
            activity: r.activity_id,
            related: r.extended.related_activity_id().unwrap_or_default(),
            id: r.id,
            version: r.version,
            pid: r.process_id,
            pointer_size: r.pointer_size,
            seconds,
        });
    }
    let report = analysis.network.report();
    let code = nettrail_stacks::scan(&trace, &schemas, &|_| true);
    let stitched = report.requests.iter().map(|r| analysis.network.stitch(&r.started_by, &code, &NoSymbols)).collect();
    Run { report, stitched, events }
}

impl Run {
    /// When `provider` logged event `id` (in `pid`, if given), in order.
    fn times(&self, provider: &str, id: u16, pid: Option<u32>) -> Vec<f64> {
        let guid = provider_guid(provider).expect("a known provider");
        self.events
            .iter()
            .filter(|e| e.provider == guid && e.id == id && (pid.is_none() || e.pid == pid))
            .map(|e| e.seconds)
            .collect()
    }

    /// The `n`th time (0-based) of an event.
    fn time(&self, provider: &str, id: u16, pid: Option<u32>, n: usize) -> f64 {
        let times = self.times(provider, id, pid);
        *times.get(n).unwrap_or_else(|| panic!("{provider} {id} #{n} not in the trace ({} seen)", times.len()))
    }

    fn requests(&self, pid: u32) -> Vec<&RequestRow> {
        let mut rows: Vec<&RequestRow> = self.report.requests.iter().filter(|r| r.pid == Some(pid)).collect();
        rows.sort_by_key(|r| r.start);
        rows
    }

    fn layer(&self, pid: u32, layer: Layer) -> Vec<&RequestRow> {
        self.requests(pid).into_iter().filter(|r| r.layer == layer).collect()
    }

    fn connections(&self, pid: u32) -> Vec<&ConnectionRow> {
        let mut rows: Vec<&ConnectionRow> = self.report.connections.iter().filter(|r| r.pid == Some(pid)).collect();
        rows.sort_by_key(|r| r.start);
        rows
    }

    fn queries(&self, name: &str) -> Vec<&DnsRow> {
        let mut rows: Vec<&DnsRow> = self.report.dns.iter().filter(|r| r.kind == "query" && r.name == name).collect();
        rows.sort_by_key(|r| r.start);
        rows
    }

    fn seconds(&self, t: i64) -> f64 {
        self.report.seconds(t)
    }

    /// The stitched stacks of one of the report's request rows.
    fn stitched(&self, row: &RequestRow) -> Option<&Stitched> {
        let i = self.report.requests.iter().position(|r| std::ptr::eq(r, row))?;
        self.stitched[i].as_ref()
    }
}

/// One stack of an expected chain: the thread it was taken on, its frames
/// (innermost first), and the title of the hand-off from it to the next.
struct Link {
    thread: u32,
    frames: Vec<String>,
    then: Option<String>,
}

fn link(thread: u32, frames: &[impl AsRef<str>], then: &str) -> Link {
    Link { thread, frames: frames.iter().map(|f| f.as_ref().to_string()).collect(), then: Some(then.to_string()) }
}

/// The request's own stack: the end of a chain.
fn own(thread: u32, frames: &[impl AsRef<str>]) -> Link {
    Link { thread, frames: frames.iter().map(|f| f.as_ref().to_string()).collect(), then: None }
}

/// Mismatches gathered for one scenario.
struct Checks {
    scenario: &'static str,
    failures: Vec<String>,
}

/// Times of rows and events agree to a microsecond.
const TIME_TOLERANCE: f64 = 1e-6;

fn opt<T: Display>(v: &Option<T>) -> String {
    v.as_ref().map_or_else(|| "null".to_string(), |v| v.to_string())
}

fn list<T: Display>(v: &[T]) -> String {
    v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

fn request_columns(r: &RequestRow) -> Vec<(&'static str, String)> {
    vec![
        ("process", opt(&r.process)),
        ("pid", opt(&r.pid)),
        ("first_thread", opt(&r.threads.first())),
        ("threads", list(&r.threads)),
        ("layer", r.layer.name().to_string()),
        ("protocol", opt(&r.protocol)),
        ("method", opt(&r.method)),
        ("url", opt(&r.url)),
        ("server", opt(&r.server)),
        ("alt_names", list(&r.alt_names)),
        ("ip", opt(&r.ip)),
        ("port", opt(&r.port)),
        ("service", opt(&r.service)),
        ("network", opt(&r.network)),
        ("direction", r.direction.name().to_string()),
        ("status", opt(&r.status)),
        ("state", opt(&r.state)),
        ("bytes_sent", opt(&r.bytes_sent)),
        ("bytes_received", opt(&r.bytes_received)),
        ("error", opt(&r.error)),
        ("open_at_end", r.open_at_end.to_string()),
        ("local", opt(&r.local)),
        ("app", opt(&r.app)),
    ]
}

fn connection_columns(r: &ConnectionRow) -> Vec<(&'static str, String)> {
    vec![
        ("process", opt(&r.process)),
        ("pid", opt(&r.pid)),
        ("protocol", r.protocol.to_string()),
        ("local", opt(&r.local)),
        ("remote", opt(&r.remote)),
        ("server", opt(&r.server)),
        ("state", r.state.to_string()),
        ("direction", r.direction.name().to_string()),
        ("origin", r.origin.to_string()),
        ("bytes_sent", r.bytes_sent.to_string()),
        ("bytes_received", r.bytes_received.to_string()),
        ("retransmits", r.retransmits.to_string()),
        ("layer", r.layer.map_or_else(|| "null".to_string(), |l| l.name().to_string())),
        ("open_at_end", r.open_at_end.to_string()),
        ("error", opt(&r.error)),
    ]
}

fn dns_columns(r: &DnsRow) -> Vec<(&'static str, String)> {
    vec![
        ("process", opt(&r.process)),
        ("pid", opt(&r.pid)),
        ("type", opt(&r.record_type)),
        ("status", opt(&r.status)),
        ("cached", r.cached.to_string()),
        ("answers", list(&r.answers)),
        ("aliases", list(&r.aliases)),
        ("servers", list(&r.servers)),
        ("resolvers", list(&r.resolvers)),
    ]
}

fn server_columns(r: &ServerRow) -> Vec<(&'static str, String)> {
    vec![
        ("request_id", format!("{:#x}", r.request_id)),
        ("connection_id", r.connection_id.map_or_else(|| "null".to_string(), |c| format!("{c:#x}"))),
        ("verb", opt(&r.verb)),
        ("url", opt(&r.url)),
        ("status", opt(&r.status)),
        ("bytes_sent", opt(&r.bytes_sent)),
        ("client", opt(&r.client)),
        ("server", opt(&r.server)),
        ("site", opt(&r.site)),
        ("queue", opt(&r.queue)),
        ("process", opt(&r.process)),
        ("pid", opt(&r.pid)),
        ("error", opt(&r.error)),
    ]
}

impl Checks {
    fn new(scenario: &'static str) -> Checks {
        Checks { scenario, failures: Vec::new() }
    }

    fn fail(&mut self, what: impl Display) {
        self.failures.push(what.to_string());
    }

    fn eq<T: PartialEq + Debug>(&mut self, what: impl Display, actual: T, expected: T) {
        if actual != expected {
            self.fail(format_args!("{what}: expected {expected:?}, got {actual:?}"));
        }
    }

    fn that(&mut self, what: impl Display, ok: bool) {
        if !ok {
            self.fail(what);
        }
    }

    fn near(&mut self, what: impl Display, actual: Option<f64>, expected: f64) {
        match actual {
            Some(a) if (a - expected).abs() <= TIME_TOLERANCE => {}
            _ => self.fail(format_args!("{what}: expected {expected:.7} s, got {actual:?}")),
        }
    }

    fn columns(&mut self, label: &str, columns: Vec<(&'static str, String)>, want: &[(&str, &str)]) {
        for (name, expected) in want {
            match columns.iter().find(|(n, _)| n == name) {
                Some((_, actual)) if actual == expected => {}
                Some((_, actual)) => self.fail(format_args!("{label}: {name} expected {expected}, got {actual}")),
                None => panic!("no column {name}"),
            }
        }
    }

    fn request(&mut self, label: &str, r: &RequestRow, want: &[(&str, &str)]) {
        self.columns(label, request_columns(r), want);
    }

    fn connection(&mut self, label: &str, r: &ConnectionRow, want: &[(&str, &str)]) {
        self.columns(label, connection_columns(r), want);
    }

    fn dns(&mut self, label: &str, r: &DnsRow, want: &[(&str, &str)]) {
        self.columns(label, dns_columns(r), want);
    }

    /// A row's start and end, against two moments of the trace.
    fn span(&mut self, run: &Run, label: &str, (start, end): (i64, Option<i64>), (from, to): (f64, f64)) {
        self.near(format_args!("{label}: start"), Some(run.seconds(start)), from);
        self.near(format_args!("{label}: end"), end.map(|e| run.seconds(e)), to);
    }

    /// A request's chain, oldest stack first, and its First, Middle, Last
    /// and Full views.
    fn chain(&mut self, label: &str, stitched: Option<&Stitched>, want: &[Link]) {
        let Some(s) = stitched else {
            self.fail(format_args!("{label}: no stitched stacks"));
            return;
        };
        let threads: Vec<Option<u32>> = s.stacks.iter().map(|x| x.thread).collect();
        self.eq(format_args!("{label}: threads of the chain"), threads, want.iter().map(|l| Some(l.thread)).collect());
        let mut full = Vec::new();
        for (i, l) in want.iter().enumerate() {
            full.extend(l.frames.iter().cloned());
            full.extend(l.then.clone());
            self.eq(format_args!("{label}: title into stack {}", i + 1), s.title(i + 1), l.then.clone());
        }
        if let (Some(first), Some(last)) = (want.first(), want.last()) {
            self.eq(format_args!("{label}: first"), s.first(), &first.frames[..]);
            self.eq(format_args!("{label}: last"), s.last(), &last.frames[..]);
        }
        // Middle: the stacks between First and Last, each after its title,
        // then the title into Last.
        let middle: Vec<String> = match want.len() {
            0..=2 => Vec::new(),
            n => (1..n)
                .flat_map(|i| {
                    let frames = if i < n - 1 { &want[i].frames[..] } else { &[] };
                    want[i - 1].then.iter().chain(frames).cloned()
                })
                .collect(),
        };
        self.eq(format_args!("{label}: middle"), s.middle(), middle);
        self.eq(format_args!("{label}: full"), s.full(), full);
    }

    /// Exactly `n` rows; the rows when so.
    fn count<'r, T: Debug>(&mut self, what: &str, rows: Vec<&'r T>, n: usize) -> Option<Vec<&'r T>> {
        if rows.len() == n {
            Some(rows)
        } else {
            self.fail(format_args!("{what}: expected {n} rows, got {}: {rows:#?}", rows.len()));
            None
        }
    }

    /// Fails with every mismatch (the first 40 when there are more).
    fn done(self) {
        let shown: Vec<&str> = self.failures.iter().take(40).map(String::as_str).collect();
        assert!(
            self.failures.is_empty(),
            "{} expectation(s) of scenario {} not met:\n  - {}",
            self.failures.len(),
            self.scenario,
            shown.join("\n  - ")
        );
    }
}

/// Bytes of a WinHTTP exchange as the scenario defines it.
fn http(x: &Exchange) -> (String, String) {
    (x.sent().to_string(), x.received().to_string())
}

const CANNOT_CONNECT: &str = "12029 (ERROR_WINHTTP_CANNOT_CONNECT)";
const REFUSED: &str = "0xC0000236 (STATUS_CONNECTION_REFUSED)";
const TIMED_OUT: &str = "0xC00000B5 (STATUS_IO_TIMEOUT)";
const UNREACHABLE: &str = "0xC000023C (STATUS_NETWORK_UNREACHABLE)";
const WEBIO: &str = "WebIO";
const WININET: &str = "WinINet";

#[test]
fn s01_winhttp_get() {
    let run = run(scenarios::winhttp_get);
    let mut c = Checks::new("winhttp-get");
    let x = Exchange::new("GET", "www.example.com", "/index.html", "HTTP/1.1 200 OK", 1_256);
    let (sent, received) = http(&x);
    // The lookup came from the DNS cache: no socket of the DNS service, one row in all.
    if let Some(rows) = c.count("requests", run.report.requests.iter().collect(), 1) {
        let r = rows[0];
        c.request(
            "GET",
            r,
            &[
                ("process", "client.exe"),
                ("pid", "5120"),
                ("first_thread", "5124"),
                ("layer", "WinHTTP"),
                // The status line says the version.
                ("protocol", "HTTP/1.1"),
                ("method", "GET"),
                ("url", "https://www.example.com/index.html"),
                ("server", "www.example.com"),
                ("alt_names", ""),
                ("ip", "93.184.216.34"),
                ("port", "443"),
                ("service", "HTTPS"),
                ("network", "null"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", &sent),
                ("bytes_received", &received),
                ("error", "null"),
                ("open_at_end", "false"),
            ],
        );
        // From WinHttpOpenRequest (RequestCreate) to WinHttpCloseHandle (RequestClose_Stop).
        let span = (run.time(WEBIO, 17, Some(5120), 0), run.time(WEBIO, 30, Some(5120), 0));
        c.span(&run, "GET", (r.start, r.end), span);
    }
    if let Some(conns) = c.count("connections", run.connections(5120), 1) {
        // TCP payload: the TLS handshake (517 and 80 out, 2,893 in) and one
        // 22-byte TLS record around each HTTP send and receive.
        c.connection(
            "TCP",
            conns[0],
            &[
                ("remote", "93.184.216.34:443"),
                ("server", "www.example.com"),
                ("state", "closed"),
                ("origin", "connect"),
                ("layer", "WinHTTP"),
                ("bytes_sent", &(517 + 80 + x.sent() + 22).to_string()),
                ("bytes_received", &(2_893 + x.received() + 22).to_string()),
            ],
        );
    }
    // One lookup, answered from the DNS Client service's cache: one row, the
    // process that asked, marked cached.
    if let Some(q) = c.count("lookups of www.example.com", run.queries("www.example.com"), 1) {
        c.dns(
            "lookup",
            q[0],
            &[("process", "client.exe"), ("type", "A"), ("cached", "true"), ("answers", "93.184.216.34")],
        );
    }
    c.done();
}

/// Frames of the scenarios' app code without symbols: the fixture DLL's
/// return addresses (`nettrail_synth::scenarios::FIXTURE_SEND_RET` and co.).
const FIXTURE_SEND: &str = "nettrail_fixture.dll+0x1139";
const BUILD_REQUEST: &str = "nettrail_fixture.dll+0x1119";
const BUILD_REQUEST_FIRST: &str = "nettrail_fixture.dll+0x110d";
const INLINED_MIX: &str = "nettrail_fixture.dll+0x1067";

#[test]
fn s02_winhttp_async_pool() {
    let run = run(scenarios::winhttp_async_pool);
    let mut c = Checks::new("winhttp-async-pool");
    let x = Exchange::new("POST", "api.contoso.com", "/v1/upload", "HTTP/1.1 201 Created", 64).body(2_048);
    let (sent, received) = http(&x);
    let status = Exchange::new("GET", "api.contoso.com", "/v1/status", "HTTP/1.1 200 OK", 310);
    let (status_sent, status_received) = http(&status);
    // The pool work item, posted by the main thread from the fixture's code.
    let posted = ["ntdll.dll+0x34c12", BUILD_REQUEST, FIXTURE_SEND, "asyncapp.exe+0x1d2e"];
    let into_pool = "[Windows thread pool: queued on thread 6204, ran on thread 6236]";
    // WinHttpOpenRequest's stack, and WinHttpReadData's (a WinHTTP work item).
    let open_request = ["ntdll.dll+0x9d2a4", "winhttp.dll+0x17c44", "asyncapp.exe+0x1d2e"];
    let read_data = ["ntdll.dll+0x9d2a4", "winhttp.dll+0x20b14", "asyncapp.exe+0x1d2e"];
    if let Some(rows) = c.count("asyncapp.exe's requests", run.requests(6200), 2) {
        let r = rows[0];
        c.request(
            "POST",
            r,
            &[
                ("process", "asyncapp.exe"),
                ("layer", "WinHTTP"),
                // Created on the pool thread, whatever WinHTTP's workers did after.
                ("first_thread", "6236"),
                ("method", "POST"),
                ("url", "https://api.contoso.com/v1/upload"),
                ("server", "api.contoso.com"),
                ("ip", "40.112.72.205"),
                ("port", "443"),
                ("status", "HTTP/1.1 201 Created"),
                ("bytes_sent", &sent),
                ("bytes_received", &received),
                ("error", "null"),
            ],
        );
        let span = (run.time(WEBIO, 17, Some(6200), 0), run.time(WEBIO, 30, Some(6200), 0));
        c.span(&run, "POST", (r.start, r.end), span);
        // Last on the pool thread, First on the main thread that posted the work.
        c.chain("POST", run.stitched(r), &[link(6204, &posted, into_pool), own(6236, &open_request)]);

        // Opened in the read's completion callback, on WinHTTP's worker.
        let r = rows[1];
        c.request(
            "GET /v1/status",
            r,
            &[
                ("first_thread", "6240"),
                ("method", "GET"),
                ("url", "https://api.contoso.com/v1/status"),
                ("ip", "40.112.72.205"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", &status_sent),
                ("bytes_received", &status_received),
            ],
        );
        let span = (run.time(WEBIO, 17, Some(6200), 1), run.time(WEBIO, 30, Some(6200), 1));
        c.span(&run, "GET /v1/status", (r.start, r.end), span);
        c.chain(
            "GET /v1/status",
            run.stitched(r),
            &[
                link(6204, &posted, into_pool),
                link(6236, &read_data, "[WinHTTP work item: queued on thread 6236, ran on thread 6240]"),
                own(6240, &open_request),
            ],
        );
    }
    // The lookup went to the network: the query row names the server asked.
    if let Some(q) = c.count("lookups of api.contoso.com", run.queries("api.contoso.com"), 1) {
        c.dns("lookup", q[0], &[("process", "asyncapp.exe"), ("cached", "false"), ("servers", "192.168.1.1")]);
    }
    c.done();
}

/// AFD's socket creation from Winsock, in `exe`: the request's own stack.
fn afd_create(exe: &str) -> [String; 5] {
    ["afd.sys+0x14b70", "ntoskrnl.exe+0x421a2e", "ntdll.dll+0x9d2a4", "mswsock.dll+0x2d44", &format!("{exe}+0x1d2e")]
        .map(str::to_string)
}

#[test]
fn s22_office_pools() {
    let run = run(scenarios::office_pools);
    let mut c = Checks::new("office-pools");
    let socket = afd_create("WINWORD.EXE");
    if let Some(rows) = c.count("WINWORD.EXE's requests", run.requests(9200), 2) {
        let r = rows[0];
        c.request(
            "config",
            r,
            &[
                ("layer", "WinINet"),
                ("first_thread", "9250"),
                ("url", "https://config.office.example/config"),
                ("status", "HTTP/1.1 200 OK"),
            ],
        );
        // Idle task (UI thread) → dispatch queue → Office thread pool → WinINet.
        c.chain(
            "config",
            run.stitched(r),
            &[
                link(
                    9204,
                    &["WINWORD.EXE+0x41a10", INLINED_MIX, FIXTURE_SEND, "WINWORD.EXE+0x1d2e"],
                    "[Office idle task: queued on thread 9204, ran on thread 9204]",
                ),
                link(
                    9204,
                    &["WINWORD.EXE+0x53c40", BUILD_REQUEST, "WINWORD.EXE+0x1d2e"],
                    "[Office dispatch queue: queued on thread 9204, ran on thread 9240]",
                ),
                link(
                    9240,
                    &["WINWORD.EXE+0x60e80", BUILD_REQUEST_FIRST, "WINWORD.EXE+0x1d2e"],
                    "[Office thread pool: queued on thread 9240, ran on thread 9250]",
                ),
                own(9250, &["ntdll.dll+0x9d2a4", "wininet.dll+0x31e74", "WINWORD.EXE+0x1d2e"]),
            ],
        );
        // Posted from the UI thread, re-posted three times by itself: the
        // cycle is kept once and the next title counts the two left out.
        let r = rows[1];
        c.request("telemetry", r, &[("layer", "Winsock"), ("first_thread", "9270"), ("ip", "52.113.194.132")]);
        c.chain(
            "telemetry",
            run.stitched(r),
            &[
                link(
                    9204,
                    &["WINWORD.EXE+0x53c40", FIXTURE_SEND, "WINWORD.EXE+0x1d2e"],
                    "[Office dispatch queue: queued on thread 9204, ran on thread 9270]",
                ),
                link(
                    9270,
                    &["WINWORD.EXE+0x53c40", INLINED_MIX, "WINWORD.EXE+0x1d2e"],
                    "[Office dispatch queue: queued on thread 9270, ran on thread 9270, 2 repeated stack(s) omitted]",
                ),
                own(9270, &socket),
            ],
        );
    }
    c.done();
}

#[test]
fn s23_adhoc_thread() {
    let run = run(scenarios::adhoc_thread);
    let mut c = Checks::new("adhoc-thread");
    let socket = afd_create("downloader.exe");
    if let Some(rows) = c.count("downloader.exe's requests", run.requests(7700), 1) {
        let r = rows[0];
        c.request(
            "download",
            r,
            &[("layer", "Winsock"), ("first_thread", "7744"), ("server", "downloads.example.com")],
        );
        // The chain reaches CreateThread's caller on the main thread.
        c.chain(
            "download",
            run.stitched(r),
            &[
                link(
                    7704,
                    &["KernelBase.dll+0x21b85", BUILD_REQUEST, FIXTURE_SEND, "downloader.exe+0x1d2e"],
                    "[new thread: queued on thread 7704, ran on thread 7744]",
                ),
                own(7744, &socket),
            ],
        );
    }
    c.done();
}

#[test]
fn s24_timer_request() {
    let run = run(scenarios::timer_request);
    let mut c = Checks::new("timer-request");
    let socket = afd_create("updater.exe");
    let set_timer = ["ntdll.dll+0x39a40", BUILD_REQUEST_FIRST, FIXTURE_SEND, "updater.exe+0x1d2e"];
    let title = "[Windows thread-pool timer: queued on thread 8104, ran on thread 8140]";
    // Each expiration's connection goes back to the one SetThreadpoolTimer.
    if let Some(rows) = c.count("updater.exe's requests", run.requests(8100), 2) {
        for (i, r) in rows.into_iter().enumerate() {
            let label = format!("expiration {}", i + 1);
            c.request(&label, r, &[("first_thread", "8140"), ("ip", "13.107.4.50"), ("bytes_received", "1200")]);
            c.chain(&label, run.stitched(r), &[link(8104, &set_timer, title), own(8140, &socket)]);
        }
    }
    c.done();
}

#[test]
fn app_spans_beside_requests() {
    let plain = run(scenarios::winhttp_get);
    let run = run(scenarios::app_spans);
    let mut c = Checks::new("app-spans");
    // The span its thread was in when each request began; none after both ended.
    if let Some(rows) = c.count("feedsync.exe's requests", run.requests(7300), 2) {
        let x = Exchange::new("GET", "feeds.example.org", "/news.xml", "HTTP/1.1 200 OK", 48_210);
        let received = http(&x).1;
        let news = [("url", "https://feeds.example.org/news.xml"), ("first_thread", "7304")];
        c.request(
            "news.xml",
            rows[0],
            &[news[0], news[1], ("app", "sync_feed › fetch"), ("bytes_received", &received)],
        );
        c.request("ping", rows[1], &[("url", "https://feeds.example.org/ping"), ("app", "null")]);
    }
    // Other scenarios' requests never get a span.
    c.that("no app without app events", plain.report.requests.iter().all(|r| r.app.is_none()));
    c.done();
}

#[test]
fn s03_winhttp_keepalive_h2() {
    let run = run(scenarios::winhttp_keepalive_h2);
    let mut c = Checks::new("winhttp-keepalive-h2");
    let exchanges = [
        (
            "https://api.example.net/v1/items",
            Exchange::new("GET", "api.example.net", "/v1/items", "HTTP/1.1 200 OK", 5_000),
        ),
        (
            "https://api.example.net/v1/items/2",
            Exchange::new("GET", "api.example.net", "/v1/items/2", "HTTP/1.1 200 OK", 800),
        ),
        (
            "https://api.example.net/v1/items",
            Exchange::new("POST", "api.example.net", "/v1/items", "HTTP/1.1 201 Created", 120).body(300),
        ),
        (
            "https://h2.example.net/manifest.json",
            Exchange::new("GET", "h2.example.net", "/manifest.json", "HTTP/2 200", 2_200),
        ),
        ("https://h2.example.net/chunk/1", Exchange::new("GET", "h2.example.net", "/chunk/1", "HTTP/2 200", 30_000)),
        ("https://h2.example.net/chunk/2", Exchange::new("GET", "h2.example.net", "/chunk/2", "HTTP/2 200", 9_000)),
        ("https://h2.example.net/chunk/3", Exchange::new("GET", "h2.example.net", "/chunk/3", "HTTP/2 200", 17_000)),
    ];
    if let Some(rows) = c.count("syncclient.exe's requests", run.requests(7300), 7) {
        for (i, (r, (url, x))) in rows.iter().zip(&exchanges).enumerate() {
            let (sent, received) = http(x);
            let ip = if i < 3 { "198.18.7.10" } else { "198.18.9.20" };
            let status = x.response_head.lines().next().unwrap_or_default();
            c.request(
                &format!("request {i}"),
                r,
                &[
                    ("layer", "WinHTTP"),
                    ("url", url),
                    ("ip", ip),
                    ("status", status),
                    ("bytes_sent", &sent),
                    ("bytes_received", &received),
                ],
            );
        }
        // Three requests share the keep-alive connection, four the HTTP/2 one.
        c.that(
            "the keep-alive requests share one connection",
            rows[..3].iter().all(|r| r.connection == rows[0].connection),
        );
        c.that(
            "the HTTP/2 requests share one connection",
            rows[3..].iter().all(|r| r.connection == rows[3].connection),
        );
        c.that("the two connections differ", rows[0].connection != rows[3].connection && rows[0].connection.is_some());
    }
    if let Some(conns) = c.count("connections", run.connections(7300), 2) {
        for (conn, requests) in conns.iter().zip([&exchanges[..3], &exchanges[3..]]) {
            c.connection("connection", conn, &[("layer", "WinHTTP"), ("state", "closed")]);
            // TCP payload holds every request's HTTP bytes (and TLS).
            let sent: u64 = requests.iter().map(|(_, x)| u64::from(x.sent())).sum();
            let received: u64 = requests.iter().map(|(_, x)| u64::from(x.received())).sum();
            c.that(
                format_args!("{:?}: TCP bytes cover the requests' ({sent}, {received})", conn.remote),
                conn.bytes_sent > sent && conn.bytes_received > received,
            );
        }
    }
    c.done();
}

#[test]
fn s04_wininet_redirect() {
    let run = run(scenarios::wininet_redirect);
    let mut c = Checks::new("wininet-redirect");
    if let Some(rows) = c.count("officeapp.exe's requests", run.requests(8100), 2) {
        c.request(
            "before the redirect",
            rows[0],
            &[
                ("layer", "WinINet"),
                // Redirected: no status line says the version; the scheme stays.
                ("protocol", "HTTP"),
                ("method", "GET"),
                ("url", "http://example.com/old"),
                ("server", "example.com"),
                ("ip", "93.184.216.34"),
                ("port", "80"),
                ("service", "HTTP"),
                ("status", "redirected"),
                // The 301's body is read by WinINet, not by the application.
                ("bytes_sent", "180"),
                ("bytes_received", "0"),
            ],
        );
        c.request(
            "after the redirect",
            rows[1],
            &[
                ("layer", "WinINet"),
                // The status line says the version.
                ("protocol", "HTTP/1.1"),
                // A 301 continues with GET.
                ("method", "GET"),
                ("url", "https://www.example.com/new"),
                ("server", "www.example.com"),
                ("ip", "93.184.215.14"),
                ("port", "443"),
                ("service", "HTTPS"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", "200"),
                ("bytes_received", "12288"),
            ],
        );
        let redirect = run.time(WININET, 1049, Some(8100), 0);
        c.near(
            "the first request starts with HttpOpenRequest",
            Some(run.seconds(rows[0].start)),
            run.time(WININET, 104, Some(8100), 0),
        );
        c.near("the first request ends at the redirect", rows[0].end.map(|e| run.seconds(e)), redirect);
        c.near("the redirected request starts there", Some(run.seconds(rows[1].start)), redirect);
    }
    if let Some(conns) = c.count("connections", run.connections(8100), 2) {
        c.connection("port 80", conns[0], &[("remote", "93.184.216.34:80"), ("layer", "WinINet"), ("state", "closed")]);
        c.connection(
            "port 443",
            conns[1],
            &[("remote", "93.184.215.14:443"), ("layer", "WinINet"), ("open_at_end", "true")],
        );
    }
    c.done();
}

#[test]
fn s05_wininet_keepalive() {
    let run = run(scenarios::wininet_keepalive);
    let mut c = Checks::new("wininet-keepalive");
    if let Some(rows) = c.count("mailclient.exe's requests", run.requests(8600), 3) {
        let want = [
            ("https://outlook.example.com/mail/inbox", "HTTP/1.1 200 OK", "420", "8000"),
            ("https://outlook.example.com/mail/folders", "HTTP/1.1 200 OK", "380", "2500"),
            ("https://outlook.example.com/mail/folders", "HTTP/1.1 304 Not Modified", "400", "0"),
        ];
        for (i, (r, (url, status, sent, received))) in rows.iter().zip(want).enumerate() {
            // Every request used the one kept-alive connection to the server.
            c.request(
                &format!("request {i}"),
                r,
                &[
                    ("layer", "WinINet"),
                    ("method", "GET"),
                    ("url", url),
                    ("server", "outlook.example.com"),
                    ("ip", "52.97.146.178"),
                    ("port", "443"),
                    ("service", "HTTPS"),
                    ("status", status),
                    ("bytes_sent", sent),
                    ("bytes_received", received),
                ],
            );
        }
        let opened = run.time(WININET, 104, Some(8600), 1);
        let resent = run.time(WININET, 1007, Some(8600), 2);
        c.near("the second handle's first send starts at HttpOpenRequest", Some(run.seconds(rows[1].start)), opened);
        c.near("the second send on that handle starts its own row", Some(run.seconds(rows[2].start)), resent);
        // The first send on the second handle is done when its response has
        // been read (1008, then a read), long before the handle is reused.
        let status = run.time(WININET, 1008, Some(8600), 1);
        let read = run.time(WININET, 1037, Some(8600), 2);
        let end = rows[1].end.map_or(f64::NAN, |e| run.seconds(e));
        c.that(
            format_args!(
                "request 1 ends between its status ({status:.6}) and its last read ({read:.6}), not at {end:.6}"
            ),
            end >= status - TIME_TOLERANCE && end <= read + TIME_TOLERANCE,
        );
    }
    if let Some(conns) = c.count("connections", run.connections(8600), 1) {
        c.connection("connection", conns[0], &[("remote", "52.97.146.178:443"), ("layer", "WinINet")]);
    }
    c.done();
}

#[test]
fn s06_wininet_cache_hit() {
    let run = run(scenarios::wininet_cache_hit);
    let mut c = Checks::new("wininet-cache-hit");
    if let Some(rows) = c.count("officeapp.exe's requests", run.requests(8200), 1) {
        c.request(
            "cache hit",
            rows[0],
            &[
                ("layer", "WinINet"),
                ("method", "GET"),
                ("url", "https://cdn.office.example/img/logo.png"),
                ("server", "cdn.office.example"),
                ("status", "HTTP/1.1 200 OK (from cache)"),
                ("ip", "null"),
                ("bytes_sent", "0"),
                ("bytes_received", "5120"),
            ],
        );
        c.eq("cache hit: connection", rows[0].connection, None);
        let span = (run.time(WININET, 104, Some(8200), 0), run.time(WININET, 105, Some(8200), 0));
        c.span(&run, "cache hit", (rows[0].start, rows[0].end), span);
    }
    c.eq("connections", run.report.connections.len(), 0);
    c.done();
}

#[test]
fn s07_wininet_http2() {
    let run = run(scenarios::wininet_http2);
    let mut c = Checks::new("wininet-http2");
    if let Some(rows) = c.count("officeapp.exe's requests", run.requests(8300), 2) {
        for (r, (url, sent, received)) in rows
            .iter()
            .zip([("https://h2.office.example/a", "150", "5000"), ("https://h2.office.example/b", "120", "7000")])
        {
            // Received bytes are the stream data events' (reads carry Request 0).
            c.request(
                url,
                r,
                &[
                    ("layer", "WinINet"),
                    ("url", url),
                    ("ip", "13.107.6.171"),
                    ("port", "443"),
                    ("status", "HTTP/2.0 200"),
                    ("bytes_sent", sent),
                    ("bytes_received", received),
                ],
            );
        }
        c.that(
            "both streams are on one connection",
            rows[0].connection.is_some() && rows[0].connection == rows[1].connection,
        );
    }
    c.eq("connections", run.connections(8300).len(), 1);
    c.done();
}

#[test]
fn s26_wow64_wininet() {
    let run = run(scenarios::wow64_wininet);
    let mut c = Checks::new("wow64-wininet");
    if let Some(rows) = c.count("legacyapp.exe's requests", run.requests(26100), 1) {
        c.request(
            "32-bit request",
            rows[0],
            &[
                ("process", "legacyapp.exe"),
                ("first_thread", "26104"),
                ("layer", "WinINet"),
                ("method", "GET"),
                ("url", "https://intranet.corp.example.com/api/data"),
                ("server", "intranet.corp.example.com"),
                ("ip", "10.0.0.20"),
                ("port", "443"),
                ("network", "Private Network (A)"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", "300"),
                ("bytes_received", "8192"),
            ],
        );
        let span = (run.time(WININET, 104, Some(26100), 0), run.time(WININET, 105, Some(26100), 0));
        c.span(&run, "32-bit request", (rows[0].start, rows[0].end), span);
    }
    if let Some(conns) = c.count("connections", run.connections(26100), 1) {
        c.connection(
            "connection",
            conns[0],
            &[("remote", "10.0.0.20:443"), ("layer", "WinINet"), ("bytes_sent", "919")],
        );
    }
    if let Some(q) = c.count("lookups", run.queries("intranet.corp.example.com"), 1) {
        c.dns("lookup", q[0], &[("process", "legacyapp.exe"), ("answers", "10.0.0.20")]);
    }
    c.done();
}

#[test]
fn s08_connect_failures() {
    let run = run(scenarios::connect_failures);
    let mut c = Checks::new("connect-failures");
    // WinHTTP claims its sockets: two rows, no Winsock or TCP row besides.
    if let Some(rows) = c.count("fetcher.exe's requests", run.requests(9100), 2) {
        for (i, (r, (url, ip, port, state))) in rows
            .iter()
            .zip([
                ("https://refused.example.com:8443/health", "198.51.100.7", "8443", "refused"),
                ("https://unreachable.example.com/", "198.51.100.99", "443", "timed out"),
            ])
            .enumerate()
        {
            c.request(
                url,
                r,
                &[
                    ("layer", "WinHTTP"),
                    ("method", "GET"),
                    ("url", url),
                    ("ip", ip),
                    ("port", port),
                    ("status", "null"),
                    ("state", state),
                    ("bytes_sent", "0"),
                    ("bytes_received", "0"),
                    ("error", CANNOT_CONNECT),
                ],
            );
            let span = (run.time(WEBIO, 17, Some(9100), i), run.time(WEBIO, 30, Some(9100), i));
            c.span(&run, url, (r.start, r.end), span);
        }
    }
    // The TCP connections failed: a RST after 30 ms, no answer for 21 s.
    if let Some(conns) = c.count("fetcher.exe's connections", run.connections(9100), 2) {
        // TCPIP's failures: the RST first, nc.exe's next, the timeout last.
        let failures = run.times("TCPIP", 1034, None);
        let ends = [failures[0], failures[failures.len() - 1]];
        for (i, (conn, (remote, error, state))) in conns
            .iter()
            .zip([("198.51.100.7:8443", REFUSED, "refused"), ("198.51.100.99:443", TIMED_OUT, "timed out")])
            .enumerate()
        {
            c.connection(remote, conn, &[("remote", remote), ("state", state), ("error", error), ("layer", "WinHTTP")]);
            let from = run.time("TCPIP", 1002, Some(9100), i);
            c.span(&run, remote, (conn.start, conn.end), (from, ends[i]));
        }
    }
    if let Some(rows) = c.count("nc.exe's requests", run.requests(9200), 1) {
        c.request(
            "refused connect()",
            rows[0],
            &[
                ("layer", "Winsock"),
                ("protocol", "TCP"),
                ("ip", "10.0.0.5"),
                ("port", "22"),
                ("service", "SSH"),
                ("network", "Private Network (A)"),
                ("direction", "outbound"),
                ("error", REFUSED),
                ("status", "null"),
                ("state", "refused"),
            ],
        );
    }
    if let Some(conns) = c.count("nc.exe's connections", run.connections(9200), 1) {
        c.connection("refused", conns[0], &[("state", "refused"), ("error", REFUSED), ("layer", "Winsock")]);
    }
    c.done();
}

#[test]
fn s09_dns() {
    let run = run(scenarios::dns);
    let mut c = Checks::new("dns");
    let edge = "cdn.example.com.edgekey.net,e1234.a.akamaiedge.net";
    if let Some(rows) = c.count("mediaplayer.exe's requests", run.requests(9500), 1) {
        let r = rows[0];
        c.request(
            "video",
            r,
            &[
                ("layer", "WinHTTP"),
                ("server", "cdn.example.com"),
                ("ip", "2600:1408:c400:1a::17d4:3a20"),
                ("port", "443"),
                ("status", "HTTP/1.1 200 OK"),
            ],
        );
        c.that(
            format_args!("alt_names hold the canonical name: {:?}", r.alt_names),
            r.alt_names.iter().any(|n| n == "e1234.a.akamaiedge.net"),
        );
    }
    // The DNS service's queries to the LAN's server: port 53, never named
    // after the names queried.
    if let Some(rows) = c.count("the DNS service's sockets", run.requests(1372), 3) {
        for r in rows {
            c.request(
                "query socket",
                r,
                &[("protocol", "UDP"), ("ip", "192.168.1.1"), ("port", "53"), ("service", "DNS"), ("server", "null")],
            );
        }
    }
    let servers: Vec<&DnsRow> = run.report.dns.iter().filter(|r| r.kind == "server").collect();
    if let Some(servers) = c.count("DNS servers", servers, 2) {
        for (row, server) in servers.iter().zip(["192.168.1.1", "2001:db8:4006:812::1"]) {
            c.eq("server row: interface", row.name.as_str(), "Ethernet");
            c.dns("server row", row, &[("answers", server)]);
        }
    }
    let lookups = run.queries("cdn.example.com");
    let before: Vec<&DnsRow> = lookups.iter().copied().filter(|r| run.seconds(r.start) < 1.0).collect();
    let a: Vec<&DnsRow> = before.iter().copied().filter(|r| r.record_type.as_deref() == Some("A")).collect();
    let aaaa: Vec<&DnsRow> = before.iter().copied().filter(|r| r.record_type.as_deref() == Some("AAAA")).collect();
    if let Some(a) = c.count("A lookups of cdn.example.com", a, 1) {
        c.dns(
            "A",
            a[0],
            &[
                ("process", "mediaplayer.exe"),
                ("status", "0"),
                ("cached", "false"),
                ("answers", "23.45.67.89,23.45.67.90"),
                ("aliases", edge),
                ("servers", "192.168.1.1"),
            ],
        );
    }
    if let Some(aaaa) = c.count("AAAA lookups of cdn.example.com", aaaa, 1) {
        c.dns(
            "AAAA",
            aaaa[0],
            &[
                ("process", "mediaplayer.exe"),
                ("answers", "2600:1408:c400:1a::17d4:3a20,2600:1408:c400:1a::17d4:3a21"),
                ("aliases", edge),
                ("servers", "192.168.1.1"),
            ],
        );
    }
    // getaddrinfo at 2 s, answered from the DNS service's cache: one row.
    let later: Vec<&DnsRow> = lookups.iter().copied().filter(|r| run.seconds(r.start) >= 1.0).collect();
    if let Some(hit) = c.count("the cached lookup", later, 1) {
        c.dns(
            "cached",
            hit[0],
            &[
                ("process", "mediaplayer.exe"),
                ("type", "A"),
                ("cached", "true"),
                ("answers", "23.45.67.89,23.45.67.90"),
            ],
        );
        c.that(
            format_args!("both resolvers reported it: {:?}", hit[0].resolvers),
            hit[0].resolvers.contains(&"getaddrinfo"),
        );
        // A cache hit lasts from the service's cache lookup (3018) to the
        // caller's completion (3008): short, but not zero.
        let looked = run.time("Microsoft-Windows-DNS-Client", 3018, None, 0);
        let completions = run.times("Microsoft-Windows-DNS-Client", 3008, Some(9500));
        let done = completions.into_iter().find(|&t| t > looked).expect("a 3008 after the cache lookup");
        c.that(format_args!("cache lookup {looked} before completion {done}"), looked < done);
        let from_getaddrinfo = run.seconds(hit[0].start) < looked;
        c.that(format_args!("cached: starts by the cache lookup {looked}"), run.seconds(hit[0].start) <= looked);
        if !from_getaddrinfo {
            c.near("cached: start", Some(run.seconds(hit[0].start)), looked);
        }
        c.that(
            format_args!("cached: ends at or after {done}"),
            hit[0].end.is_some_and(|e| run.seconds(e) >= done - 1e-7),
        );
    }
    if let Some(failed) = c.count("lookups of nosuch.example.com", run.queries("nosuch.example.com"), 1) {
        c.dns(
            "failed",
            failed[0],
            &[
                ("process", "mediaplayer.exe"),
                ("status", "9003 (DNS_ERROR_RCODE_NAME_ERROR)"),
                ("answers", ""),
                ("servers", "192.168.1.1"),
            ],
        );
    }
    c.done();
}

#[test]
fn s10_ipv6_happy_eyeballs() {
    let run = run(scenarios::ipv6_happy_eyeballs);
    let mut c = Checks::new("ipv6-happy-eyeballs");
    let dual = Exchange::new("GET", "dual.example.net", "/", "HTTP/1.1 200 OK", 3_100);
    let v6 = Exchange::new("GET", "v6only.example.net", "/", "HTTP/1.1 200 OK", 900);
    let (dual_sent, dual_received) = http(&dual);
    let (v6_sent, v6_received) = http(&v6);
    // One row per socket tried: the failed IPv6 attempt, the IPv4 one, then
    // the IPv6-only host.
    if let Some(rows) = c.count("client.exe's requests", run.requests(10100), 3) {
        c.request(
            "IPv6 attempt",
            rows[0],
            &[
                ("layer", "WinHTTP"),
                ("url", "https://dual.example.net/"),
                ("ip", "2001:db8:1::10"),
                ("error", CANNOT_CONNECT),
                ("status", "null"),
                ("bytes_sent", "0"),
                ("bytes_received", "0"),
            ],
        );
        c.request(
            "IPv4 attempt",
            rows[1],
            &[
                ("layer", "WinHTTP"),
                ("url", "https://dual.example.net/"),
                ("ip", "203.0.113.10"),
                ("error", "null"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", &dual_sent),
                ("bytes_received", &dual_received),
            ],
        );
        c.request(
            "IPv6 only",
            rows[2],
            &[
                ("url", "https://v6only.example.net/"),
                ("server", "v6only.example.net"),
                ("ip", "2001:db8:2::20"),
                ("error", "null"),
                ("bytes_sent", &v6_sent),
                ("bytes_received", &v6_received),
            ],
        );
    }
    if let Some(conns) = c.count("connections", run.connections(10100), 3) {
        c.connection(
            "IPv6 attempt",
            conns[0],
            &[("remote", "[2001:db8:1::10]:443"), ("state", "failed"), ("error", UNREACHABLE)],
        );
        c.connection("IPv4", conns[1], &[("remote", "203.0.113.10:443"), ("state", "closed"), ("error", "null")]);
        c.connection("IPv6 only", conns[2], &[("remote", "[2001:db8:2::20]:443"), ("server", "v6only.example.net")]);
    }
    for (name, record, answer) in
        [("dual.example.net", "A", "203.0.113.10"), ("dual.example.net", "AAAA", "2001:db8:1::10")]
    {
        let rows: Vec<&DnsRow> =
            run.queries(name).into_iter().filter(|r| r.record_type.as_deref() == Some(record)).collect();
        if let Some(q) = c.count(&format!("{record} lookups of {name}"), rows, 1) {
            c.dns(record, q[0], &[("answers", answer)]);
        }
    }
    c.done();
}

#[test]
fn s11_mid_connection() {
    let run = run(scenarios::mid_connection);
    let mut c = Checks::new("mid-connection");
    // The download (WinHTTP, rebuilt from its receives) and the idle connection.
    if let Some(rows) = c.count("downloader.exe's requests", run.requests(11100), 2) {
        let download = rows.iter().find(|r| r.layer == Layer::WinHttp).copied();
        let idle = rows.iter().find(|r| r.layer == Layer::Tcp).copied();
        match download {
            Some(r) => {
                c.request(
                    "download",
                    r,
                    &[
                        ("url", "null"),
                        ("ip", "151.101.2.132"),
                        ("port", "443"),
                        ("service", "HTTPS"),
                        ("bytes_sent", "0"),
                        ("bytes_received", &(20 * 16_384).to_string()),
                        ("open_at_end", "false"),
                    ],
                );
                let closed = run.time(WEBIO, 30, Some(11100), 0);
                c.near("download: end at RequestClose", r.end.map(|e| run.seconds(e)), closed);
            }
            None => c.fail("no WinHTTP row for the download"),
        }
        match idle {
            Some(r) => c.request(
                "idle",
                r,
                &[
                    ("ip", "20.190.160.1"),
                    ("status", "null"),
                    ("state", "open"),
                    ("open_at_end", "true"),
                    ("bytes_sent", "0"),
                    ("bytes_received", "0"),
                ],
            ),
            None => c.fail("no TCP row for the idle connection"),
        }
    }
    if let Some(conns) = c.count("downloader.exe's connections", run.connections(11100), 2) {
        c.connection(
            "download's connection",
            conns[0],
            &[
                ("remote", "151.101.2.132:443"),
                ("origin", "rundown"),
                ("layer", "WinHTTP"),
                ("state", "closed"),
                ("bytes_received", &(20 * (16_384 + 22)).to_string()),
            ],
        );
        c.connection(
            "idle",
            conns[1],
            &[("remote", "20.190.160.1:443"), ("origin", "rundown"), ("open_at_end", "true")],
        );
    }
    // System's idle rundown connection: a connection, not a request.
    c.eq("System's requests", run.requests(4).len(), 0);
    if let Some(conns) = c.count("System's connections", run.connections(4), 1) {
        c.connection(
            "System",
            conns[0],
            &[("process", "System"), ("origin", "rundown"), ("remote", "192.168.1.10:445")],
        );
    }
    c.done();
}

#[test]
fn s27_proxy_connect() {
    let run = run(scenarios::proxy_connect);
    let mut c = Checks::new("proxy-connect");
    let connect = "CONNECT origin.example.com:443 HTTP/1.1\r\nHost: origin.example.com:443\r\n\
                   User-Agent: Mozilla/5.0 (Windows NT 10.0; Win64; x64) WinHttp\r\n\r\n";
    let established = "HTTP/1.1 200 Connection established\r\n\r\n";
    let x = Exchange::new("GET", "origin.example.com", "/data", "HTTP/1.1 200 OK", 4_000);
    let sent = (connect.len() as u32 + x.sent()).to_string();
    let received = (established.len() as u32 + x.received()).to_string();
    if let Some(rows) = c.count("client.exe's requests", run.requests(27100), 1) {
        let r = rows[0];
        c.request(
            "through the proxy",
            r,
            &[
                ("layer", "WinHTTP"),
                ("url", "https://origin.example.com/data"),
                ("server", "origin.example.com"),
                ("ip", "10.0.0.8"),
                ("port", "8080"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", &sent),
                ("bytes_received", &received),
            ],
        );
        c.that(
            format_args!("alt_names hold the proxy's name: {:?}", r.alt_names),
            r.alt_names.iter().any(|n| n == "proxy.corp.example.com"),
        );
    }
    c.done();
}

#[test]
fn s28_old_webio_send_sizes() {
    let run = run(scenarios::old_webio_send_sizes);
    let mut c = Checks::new("old-webio-send-sizes");
    let get = Exchange::new("GET", "www.example.com", "/", "HTTP/1.1 200 OK", 1_256);
    let post = Exchange::new("POST", "www.example.com", "/form", "HTTP/1.1 200 OK", 310).body(1_500);
    if let Some(rows) = c.count("client.exe's requests", run.requests(28100), 2) {
        // TCPIP's posted sends between WebIO's send start and stop: the
        // request in one TLS record (22 bytes more); the handshake's sends
        // (outside those windows) are not counted.
        for (r, x) in rows.iter().zip([&get, &post]) {
            let sent = (x.sent() + 22).to_string();
            let received = x.received().to_string();
            c.request("request", r, &[("layer", "WinHTTP"), ("bytes_sent", &sent), ("bytes_received", &received)]);
        }
    }
    c.done();
}

const AFD: &str = "Winsock-AFD";

#[test]
fn s12_port_reuse() {
    let run = run(scenarios::port_reuse);
    let mut c = Checks::new("port-reuse");
    // Reused TCBs, endpoints and ports: each connection keeps its own bytes.
    if let Some(rows) = c.count("poller.exe's requests", run.requests(12100), 300) {
        for (i, r) in rows.iter().enumerate() {
            let (sent, received) = ((100 + i).to_string(), (1_000 + 3 * i).to_string());
            c.request(
                &format!("connection {i}"),
                r,
                &[
                    ("layer", "Winsock"),
                    ("protocol", "TCP"),
                    ("ip", "10.1.2.3"),
                    ("port", "8080"),
                    ("network", "Private Network (A)"),
                    ("bytes_sent", &sent),
                    ("bytes_received", &received),
                    ("error", "null"),
                ],
            );
            let span = (run.time(AFD, 1000, Some(12100), i), run.time(AFD, 1001, Some(12100), i));
            c.span(&run, &format!("connection {i}"), (r.start, r.end), span);
        }
    }
    if let Some(conns) = c.count("poller.exe's connections", run.connections(12100), 300) {
        for (i, conn) in conns.iter().enumerate() {
            let (sent, received) = ((100 + i).to_string(), (1_000 + 3 * i).to_string());
            c.connection(
                &format!("connection {i}"),
                conn,
                &[
                    ("remote", "10.1.2.3:8080"),
                    ("state", "closed"),
                    ("origin", "connect"),
                    ("layer", "Winsock"),
                    ("bytes_sent", &sent),
                    ("bytes_received", &received),
                ],
            );
        }
    }
    c.done();
}

#[test]
fn s13_winsock_client() {
    let run = run(scenarios::winsock_client);
    let mut c = Checks::new("winsock-client");
    // Socket buffers: the handshake (517, 80 out; 2,893 in), the request
    // (100, logged twice by AFD, counted once), four receives (5,222).
    if let Some(rows) = c.count("curl.exe's requests", run.requests(13100), 1) {
        let r = rows[0];
        c.request(
            "curl",
            r,
            &[
                ("process", "curl.exe"),
                ("threads", "13104"),
                ("layer", "Winsock"),
                ("protocol", "TCP"),
                ("method", "null"),
                ("server", "example.org"),
                ("ip", "93.184.215.14"),
                ("port", "443"),
                ("service", "HTTPS"),
                ("bytes_sent", "697"),
                ("bytes_received", "8115"),
                ("status", "null"),
                ("error", "null"),
            ],
        );
        let span = (run.time(AFD, 1000, Some(13100), 0), run.time(AFD, 1001, Some(13100), 0));
        c.span(&run, "curl", (r.start, r.end), span);
    }
    if let Some(conns) = c.count("curl.exe's connections", run.connections(13100), 1) {
        c.connection(
            "TCP",
            conns[0],
            &[
                ("layer", "Winsock"),
                ("state", "closed"),
                ("bytes_sent", "697"),
                ("bytes_received", "8115"),
                ("server", "example.org"),
            ],
        );
    }
    // getaddrinfo and DNS-Client saw one lookup.
    if let Some(q) = c.count("lookups of example.org", run.queries("example.org"), 1) {
        c.dns(
            "lookup",
            q[0],
            &[("process", "curl.exe"), ("answers", "93.184.215.14"), ("resolvers", "DNS-Client,getaddrinfo")],
        );
    }
    c.done();
}

#[test]
fn s14_udp() {
    let run = run(scenarios::udp);
    let mut c = Checks::new("udp");
    // The DNS service: one socket per query (the last one W32Time's lookup).
    if let Some(rows) = c.count("the DNS service's sockets", run.requests(1372), 4) {
        for (r, (sent, received)) in rows.iter().zip([("31", "47"), ("31", "79"), ("31", "63"), ("34", "62")]) {
            c.request(
                "DNS query",
                r,
                &[
                    ("layer", "Winsock"),
                    ("protocol", "UDP"),
                    ("ip", "192.168.1.1"),
                    ("port", "53"),
                    ("service", "DNS"),
                    ("server", "null"),
                    ("bytes_sent", sent),
                    ("bytes_received", received),
                ],
            );
        }
    }
    // NTP: one exchange, whatever way TCPIP logged the answer's addresses.
    if let Some(rows) = c.count("W32Time's requests", run.requests(1744), 1) {
        c.request(
            "NTP",
            rows[0],
            &[
                ("layer", "Winsock"),
                ("protocol", "UDP"),
                ("server", "time.windows.com"),
                ("ip", "40.119.6.228"),
                ("port", "123"),
                ("service", "NTP"),
                ("bytes_sent", "48"),
                ("bytes_received", "48"),
            ],
        );
    }
    if let Some(flows) = c.count("W32Time's flows", run.connections(1744), 1) {
        c.connection(
            "NTP flow",
            flows[0],
            &[
                ("protocol", "UDP"),
                ("local", "192.168.1.23:123"),
                ("remote", "40.119.6.228:123"),
                ("bytes_sent", "48"),
                ("bytes_received", "48"),
            ],
        );
    }
    // One socket, three peers: a row and a flow per peer.
    let peers = [
        ("198.51.100.1", "5000", "600", "300"),
        ("198.51.100.2", "5000", "600", "500"),
        ("203.0.113.9", "6000", "1000", "0"),
    ];
    if let Some(rows) = c.count("peer.exe's requests", run.requests(14100), 3) {
        for (r, (ip, port, sent, received)) in rows.iter().zip(peers) {
            c.request(
                ip,
                r,
                &[
                    ("layer", "Winsock"),
                    ("protocol", "UDP"),
                    ("ip", ip),
                    ("port", port),
                    ("bytes_sent", sent),
                    ("bytes_received", received),
                ],
            );
        }
    }
    if let Some(flows) = c.count("peer.exe's flows", run.connections(14100), 3) {
        for (f, (ip, port, sent, received)) in flows.iter().zip(peers) {
            let remote = format!("{ip}:{port}");
            c.connection(
                ip,
                f,
                &[("remote", &remote), ("state", "active"), ("bytes_sent", sent), ("bytes_received", received)],
            );
        }
    }
    c.eq("rows of the UDP layer", run.report.requests.iter().filter(|r| r.layer == Layer::Udp).count(), 0);
    c.done();
}

#[test]
fn s15_quic() {
    let run = run(scenarios::quic);
    let mut c = Checks::new("quic");
    if let Some(rows) = c.count("msedge.exe's requests", run.requests(15100), 1) {
        c.request(
            "QUIC",
            rows[0],
            &[
                ("layer", "Winsock"),
                ("protocol", "UDP"),
                ("server", "www.google.com"),
                ("ip", "142.250.74.36"),
                ("port", "443"),
                ("service", "QUIC"),
                ("bytes_sent", "8988"),
                ("bytes_received", "39900"),
            ],
        );
    }
    if let Some(flows) = c.count("msedge.exe's flows", run.connections(15100), 1) {
        c.connection(
            "QUIC flow",
            flows[0],
            &[
                ("protocol", "UDP"),
                ("remote", "142.250.74.36:443"),
                ("bytes_sent", "8988"),
                ("bytes_received", "39900"),
            ],
        );
    }
    c.done();
}

#[test]
fn s17_ldap() {
    let run = run(scenarios::ldap);
    let mut c = Checks::new("ldap");
    let searches = [
        "ldap://dc01.corp.example.com:389/DC=corp,DC=example,DC=com?cn,mail,memberOf?sub?(&(objectClass=user)(sAMAccountName=alice))",
        "ldap://dc01.corp.example.com:389/CN=Configuration,DC=corp,DC=example,DC=com?cn?one?(objectClass=*)",
    ];
    if let Some(rows) = c.count("LDAP operations", run.layer(17100, Layer::Ldap), 2) {
        for (r, url) in rows.iter().zip(searches) {
            c.request(
                url,
                r,
                &[
                    ("process", "powershell.exe"),
                    ("first_thread", "17104"),
                    ("protocol", "LDAP"),
                    ("method", "SEARCH"),
                    ("url", url),
                    ("server", "dc01.corp.example.com"),
                    ("ip", "10.0.0.10"),
                    ("port", "389"),
                    ("service", "LDAP"),
                    ("bytes_sent", "null"),
                    ("bytes_received", "null"),
                ],
            );
        }
        for (i, r) in rows.iter().enumerate() {
            c.near("search start", Some(run.seconds(r.start)), run.time("LDAP-Client", 30, Some(17100), i));
        }
    }
    // The socket: a Winsock row with its bytes (the bind's and both searches').
    if let Some(rows) = c.count("LDAP sockets", run.layer(17100, Layer::Winsock), 1) {
        c.request(
            "socket",
            rows[0],
            &[
                ("service", "LDAP"),
                ("ip", "10.0.0.10"),
                ("port", "389"),
                ("bytes_sent", "2292"),
                ("bytes_received", "4630"),
            ],
        );
    }
    c.eq("other rows", run.requests(17100).len(), 3);
    c.done();
}

#[test]
fn s18_server() {
    let run = run(scenarios::server);
    let mut c = Checks::new("server");
    // Accepted connections are inbound, for the local port's service; the
    // listening socket is a row of its own, after them.
    let rows = run.requests(18100);
    let (listening, accepted): (Vec<&RequestRow>, Vec<&RequestRow>) =
        rows.into_iter().partition(|r| r.direction == nettrail_net::Direction::Listen);
    if let Some(listening) = c.count("devserver.exe's listening sockets", listening, 1) {
        c.request(
            "listener",
            listening[0],
            &[
                ("layer", "Winsock"),
                ("direction", "listen"),
                ("local", "0.0.0.0:8080"),
                ("service", "HTTP"),
                ("ip", "null"),
                ("bytes_sent", "null"),
            ],
        );
    }
    if let Some(rows) = c.count("devserver.exe's accepted connections", accepted, 2) {
        for (r, (ip, port)) in rows.iter().zip([("192.168.1.50", "53001"), ("192.168.1.51", "61002")]) {
            c.request(
                ip,
                r,
                &[
                    ("process", "devserver.exe"),
                    ("first_thread", "18120"),
                    ("layer", "Winsock"),
                    ("direction", "inbound"),
                    ("service", "HTTP"),
                    ("local", "192.168.1.23:8080"),
                    ("ip", ip),
                    ("port", port),
                    ("network", "Private Network (C)"),
                    ("bytes_sent", "1200"),
                    ("bytes_received", "400"),
                ],
            );
        }
    }
    if let Some(conns) = c.count("devserver.exe's connections", run.connections(18100), 2) {
        for conn in conns {
            c.connection(
                "accepted",
                conn,
                &[
                    ("origin", "accept"),
                    ("direction", "inbound"),
                    ("local", "192.168.1.23:8080"),
                    ("layer", "Winsock"),
                    ("state", "closed"),
                ],
            );
        }
    }
    // Http.sys: the answering worker process, both requests on one connection.
    let mut served: Vec<&ServerRow> = run.report.http_server.iter().collect();
    served.sort_by_key(|r| r.start);
    if let Some(rows) = c.count("Http.sys requests", served, 2) {
        for (i, (r, (id, verb, url, status))) in rows
            .iter()
            .zip([
                ("0xff0000008000060d", "GET", "http://intranet:80/status", "200"),
                ("0xff0000008000060e", "POST", "http://intranet:80/api/report", "201"),
            ])
            .enumerate()
        {
            c.columns(
                url,
                server_columns(r),
                &[
                    ("request_id", id),
                    ("connection_id", "0xff0000006000060c"),
                    ("verb", verb),
                    ("url", url),
                    ("status", status),
                    ("bytes_sent", "null"),
                    ("client", "192.168.1.60:50500"),
                    ("server", "192.168.1.23:80"),
                    ("site", "1"),
                    ("queue", "DefaultAppPool"),
                    ("process", "w3wp.exe"),
                    ("pid", "18400"),
                    ("error", "null"),
                ],
            );
            // From the request's receipt to the last response event.
            let span = (run.time("HttpService", 1, None, i), run.time("HttpService", 10, None, i));
            c.span(&run, url, (r.start, Some(r.end)), span);
        }
    }
    // Http.sys's own TCP connection belongs to System.
    if let Some(rows) = c.count("System's requests", run.requests(4), 1) {
        c.request(
            "Http.sys connection",
            rows[0],
            &[
                ("process", "System"),
                ("layer", "TCP"),
                ("ip", "192.168.1.60"),
                ("port", "50500"),
                ("bytes_sent", "1080"),
                ("bytes_received", "1600"),
            ],
        );
    }
    c.done();
}

#[test]
fn s19_loopback_private() {
    let run = run(scenarios::loopback_private);
    let mut c = Checks::new("loopback-private");
    let client = run.requests(19100);
    let by_ip =
        |ip: &str| client.iter().copied().filter(|r| r.ip.is_some_and(|a| a.to_string() == ip)).collect::<Vec<_>>();
    for (ip, layer, network) in [
        ("127.0.0.1", "Winsock", "Loopback"),
        ("192.168.1.50", "WinHTTP", "Private Network (C)"),
        ("10.20.30.40", "Winsock", "Private Network (A)"),
        ("169.254.10.20", "Winsock", "Link-Local"),
    ] {
        if let Some(rows) = c.count(&format!("client.exe's rows to {ip}"), by_ip(ip), 1) {
            c.request(ip, rows[0], &[("layer", layer), ("network", network)]);
        }
    }
    c.eq("client.exe's rows", client.len(), 4);
    if let Some(rows) = c.count("devserver.exe's requests", run.requests(19200), 2) {
        let (accepted, listener) =
            if rows[0].direction == nettrail_net::Direction::Inbound { (rows[0], rows[1]) } else { (rows[1], rows[0]) };
        c.request(
            "accepted loopback",
            accepted,
            &[
                ("direction", "inbound"),
                ("ip", "127.0.0.1"),
                ("network", "Loopback"),
                ("bytes_sent", "2000"),
                ("bytes_received", "120"),
            ],
        );
        c.request("listener", listener, &[("direction", "listen"), ("local", "127.0.0.1:8080")]);
    }
    if let Some(rows) = c.count("ssh.exe's requests", run.requests(19300), 1) {
        c.request("ssh", rows[0], &[("ip", "172.16.5.5"), ("network", "Private Network (B)"), ("service", "SSH")]);
    }
    c.done();
}

#[test]
fn s20_hyperv_vsock() {
    let run = run(scenarios::hyperv_vsock);
    let mut c = Checks::new("hyperv-vsock");
    let hv = "hv:5f3a8c21-9d4e-4b7a-8e61-2c0d9f7b3a15/00000001-facb-11e6-bd58-64006a7986d3";
    for (pid, protocol, ip, network, sent, received) in
        [(20100, "HyperV", hv, "Hyper-V", "64", "128"), (20200, "VSock", "vsock:3", "VSock", "256", "1024")]
    {
        if let Some(rows) = c.count(&format!("{protocol} socket"), run.requests(pid), 1) {
            c.request(
                protocol,
                rows[0],
                &[
                    ("layer", "Winsock"),
                    ("protocol", protocol),
                    ("ip", ip),
                    ("network", network),
                    ("bytes_sent", sent),
                    ("bytes_received", received),
                ],
            );
        }
    }
    if let Some(rows) = c.count("VSock port", run.requests(20200), 1) {
        c.request("VSock", rows[0], &[("port", "50000")]);
    }
    // Bluetooth RFCOMM (AF 32): kept by family number, and not called TCP or UDP.
    if let Some(rows) = c.count("Bluetooth socket", run.requests(20300), 1) {
        let r = rows[0];
        c.request(
            "Bluetooth",
            r,
            &[("layer", "Winsock"), ("ip", "af32"), ("bytes_sent", "20"), ("bytes_received", "40")],
        );
        c.that(
            format_args!("Bluetooth: protocol {:?} is not an IP protocol", r.protocol),
            !matches!(r.protocol.as_deref(), Some("TCP" | "UDP")),
        );
    }
    c.eq("connections (TCPIP is not involved)", run.report.connections.len(), 0);
    c.done();
}

#[test]
fn s21_system_services() {
    let run = run(scenarios::system_services);
    let mut c = Checks::new("system-services");
    // BITS: its own process and threads, whatever the headers of the
    // completions and data events say.
    if let Some(rows) = c.count("BITS' requests", run.requests(2100), 1) {
        c.request(
            "BITS",
            rows[0],
            &[
                ("process", "svchost.exe"),
                ("threads", "2120"),
                ("layer", "Winsock"),
                ("server", "download.windowsupdate.com"),
                ("ip", "13.107.4.50"),
                ("port", "443"),
                ("bytes_sent", &(517 + 80 + 422).to_string()),
                ("bytes_received", &(2_893 + 4 * 16_384).to_string()),
            ],
        );
    }
    if let Some(conns) = c.count("BITS' connections", run.connections(2100), 1) {
        c.connection("BITS", conns[0], &[("remote", "13.107.4.50:443"), ("layer", "Winsock"), ("state", "closed")]);
    }
    c.eq("explorer.exe's rows", run.requests(3400).len(), 0);
    // System's SMB client moves bytes: a TCP row. Its idle rundown
    // connections are connections only.
    if let Some(rows) = c.count("System's requests", run.requests(4), 1) {
        let r = rows[0];
        c.request(
            "SMB",
            r,
            &[
                ("process", "System"),
                ("layer", "TCP"),
                ("ip", "192.168.1.10"),
                ("port", "445"),
                ("bytes_sent", "1120"),
                ("bytes_received", "65660"),
                ("open_at_end", "true"),
            ],
        );
        c.that(
            format_args!("SMB: service {:?} names SMB", r.service),
            r.service.as_deref().is_some_and(|s| s.contains("SMB")),
        );
    }
    let rundown: Vec<&ConnectionRow> = run.connections(4).into_iter().filter(|r| r.origin == "rundown").collect();
    if let Some(rundown) = c.count("System's rundown connections", rundown, 2) {
        for conn in rundown {
            c.connection(
                "rundown",
                conn,
                &[("process", "System"), ("layer", "null"), ("bytes_sent", "0"), ("open_at_end", "true")],
            );
        }
    }
    c.done();
}

#[test]
fn s25_lost_events() {
    let run = run(scenarios::lost_events);
    let mut c = Checks::new("lost-events");
    if let Some(rows) = c.count("client.exe's requests", run.requests(25100), 3) {
        c.request(
            "connect lost",
            rows[0],
            &[
                ("layer", "TCP"),
                ("ip", "93.184.216.34"),
                ("port", "443"),
                ("bytes_sent", "700"),
                ("bytes_received", "5000"),
            ],
        );
        c.request(
            "close lost",
            rows[1],
            &[("layer", "Winsock"), ("ip", "198.18.0.7"), ("bytes_sent", "300"), ("bytes_received", "1200")],
        );
        c.request(
            "slot reused",
            rows[2],
            &[("layer", "Winsock"), ("ip", "198.18.0.8"), ("bytes_sent", "200"), ("bytes_received", "900")],
        );
    }
    if let Some(conns) = c.count("client.exe's connections", run.connections(25100), 3) {
        c.connection(
            "connect lost",
            conns[0],
            &[("origin", "inferred"), ("state", "closed"), ("bytes_sent", "700"), ("bytes_received", "5000")],
        );
        c.connection(
            "close lost",
            conns[1],
            &[("origin", "connect"), ("state", "abandoned"), ("bytes_sent", "300"), ("bytes_received", "1200")],
        );
        c.connection(
            "slot reused",
            conns[2],
            &[("origin", "connect"), ("state", "closed"), ("bytes_sent", "200"), ("bytes_received", "900")],
        );
        // The abandoned connection ends where its slot was taken again.
        c.near("close lost: end", conns[1].end.map(|e| run.seconds(e)), run.time("TCPIP", 1002, Some(25100), 1));
    }
    c.done();
}

/// What the kernel-only traces show (both kernel sources alike).
fn kernel_only(run: &Run, c: &mut Checks) {
    if let Some(rows) = c.count("perfclient.exe's requests", run.requests(30100), 1) {
        // Retransmitted bytes and TCPCopy repeats are not sent or received again.
        c.request(
            "IPv4",
            rows[0],
            &[
                ("layer", "TCP"),
                ("ip", "52.96.165.18"),
                ("port", "443"),
                ("direction", "outbound"),
                ("status", "null"),
                ("state", "closed"),
                ("bytes_sent", "1690"),
                ("bytes_received", "5280"),
            ],
        );
        c.span(run, "IPv4", (rows[0].start, rows[0].end), (0.1, 0.5));
    }
    if let Some(conns) = c.count("perfclient.exe's connections", run.connections(30100), 1) {
        c.connection("IPv4", conns[0], &[("origin", "connect"), ("retransmits", "1"), ("state", "closed")]);
    }
    if let Some(rows) = c.count("OneDrive.exe's requests", run.requests(30200), 1) {
        c.request(
            "IPv6",
            rows[0],
            &[("layer", "TCP"), ("ip", "2603:1036:303:3050::2"), ("bytes_sent", "597"), ("bytes_received", "25000")],
        );
    }
    // The DNS service's datagram and its answer are one flow.
    if let Some(rows) = c.count("the DNS service's requests", run.requests(1372), 1) {
        c.request(
            "DNS",
            rows[0],
            &[
                ("layer", "UDP"),
                ("ip", "192.168.1.1"),
                ("port", "53"),
                ("service", "DNS"),
                ("bytes_sent", "40"),
                ("bytes_received", "120"),
            ],
        );
    }
    if let Some(rows) = c.count("System's requests", run.requests(4), 1) {
        c.request(
            "accepted",
            rows[0],
            &[
                ("process", "System"),
                ("direction", "inbound"),
                ("ip", "192.168.1.60"),
                ("port", "60841"),
                ("service", "SMB"),
                ("bytes_sent", "4368"),
                ("bytes_received", "383"),
            ],
        );
    }
    if let Some(conns) = c.count("System's connections", run.connections(4), 1) {
        c.connection(
            "accepted",
            conns[0],
            &[("origin", "accept"), ("direction", "inbound"), ("local", "192.168.1.23:445")],
        );
    }
}

#[test]
fn kernel_classic_only() {
    let run = run(scenarios::kernel_classic);
    let mut c = Checks::new("kernel-classic");
    kernel_only(&run, &mut c);
    c.done();
}

#[test]
fn kernel_network_only() {
    let run = run(scenarios::kernel_network);
    let mut c = Checks::new("kernel-network");
    kernel_only(&run, &mut c);
    c.done();
}

/// Every request's `activity_events` counts the events that name its
/// activity (as their own or as related), as `dump --activity` lists them.
#[test]
fn activity_counts_are_the_events_listed() {
    let mut checked = 0;
    for (name, _, scenario) in scenarios::ALL {
        let run = run(*scenario);
        let mut c = Checks::new(name);
        for r in &run.report.requests {
            let Some(activity) = r.activity else { continue };
            let listed = run.events.iter().filter(|e| e.activity == activity || e.related == activity).count();
            c.eq(format_args!("{:?} {:?}: activity_events", r.layer, r.url), r.activity_events, Some(listed as u64));
            checked += 1;
        }
        c.done();
    }
    assert!(checked > 20, "only {checked} requests with activities");
}

/// Without process events, the kernel's image loads name each process.
#[test]
fn kernel_network_with_image_loads_only() {
    let run = run(scenarios::kernel_network_images);
    let mut c = Checks::new("kernel-network-images");
    let lifetimes = [kernel_class("Process"), kernel_class("Thread")].map(|c| c.expect("a kernel class"));
    c.that("no process or thread events", run.events.iter().all(|e| !lifetimes.contains(&e.provider)));
    kernel_only(&run, &mut c);
    for (pid, image) in [(30100, "perfclient.exe"), (30200, "OneDrive.exe"), (1372, "svchost.exe")] {
        if let Some(rows) = c.count(&format!("{image}'s requests"), run.requests(pid), 1) {
            c.request(image, rows[0], &[("process", image)]);
        }
    }
    c.done();
}

#[test]
fn sample_session() {
    let run = run(scenarios::sample);
    let mut c = Checks::new("sample");
    if let Some(rows) = c.count("browser.exe's requests", run.requests(4820), 3) {
        for (r, path) in rows.iter().zip(["/", "/style.css", "/app.js"]) {
            let url = format!("https://www.example.com{path}");
            c.request(
                &url,
                r,
                &[
                    ("layer", "WinHTTP"),
                    ("url", &url),
                    ("ip", "93.184.216.34"),
                    ("alt_names", "www.example.com.cdn.example.net"),
                ],
            );
        }
    }
    if let Some(rows) = c.count("WINWORD.EXE's requests", run.requests(5630), 1) {
        c.request(
            "template list",
            rows[0],
            &[("layer", "WinINet"), ("status", "HTTP/1.1 200 OK"), ("bytes_received", "19695")],
        );
        // WinINet's own events bound its phases: connect 1045–1046, send
        // 1007 to the last 1031/1033, the response from 1008.
        let p = rows[0].phases;
        let (wininet, word) = ("Microsoft-Windows-WinINet", Some(5630));
        let span = |phase: Option<(i64, i64)>| phase.map(|(a, b)| (run.seconds(a), run.seconds(b)));
        let times = |id| run.times(wininet, id, word);
        c.near("Word: connect start", span(p.connect).map(|s| s.0), run.time(wininet, 1045, word, 0));
        c.near("Word: connect end", span(p.connect).map(|s| s.1), run.time(wininet, 1046, word, 0));
        c.near("Word: send start", span(p.send).map(|s| s.0), run.time(wininet, 1007, word, 0));
        let last_sent = times(1031).into_iter().chain(times(1033)).fold(f64::MIN, f64::max);
        c.near("Word: send end", span(p.send).map(|s| s.1), last_sent);
        c.near("Word: first byte", p.first_byte.map(|t| run.seconds(t)), run.time(wininet, 1008, word, 0));
        c.that("Word: its lookup", p.dns.is_some());
    }
    // WebIO's events bound WinHTTP's: the lookup (205–206), the connect
    // (200) to the handshake's end (703), sending (213–214), the first
    // bytes (216); requests reusing the connection have neither lookup nor connect.
    let browser = run.layer(4820, Layer::WinHttp);
    if browser.len() == 3 {
        let webio = "Microsoft-Windows-WebIO";
        let at = |id, n| run.time(webio, id, Some(4820), n);
        let p = browser[0].phases;
        let span = |phase: Option<(i64, i64)>| phase.map(|(a, b)| (run.seconds(a), run.seconds(b)));
        c.near("first: dns start", span(p.dns).map(|s| s.0), at(205, 0));
        c.near("first: dns end", span(p.dns).map(|s| s.1), at(206, 0));
        c.near("first: connect start", span(p.connect).map(|s| s.0), at(200, 0));
        c.near("first: connect stop", span(p.connect).map(|s| s.1), at(201, 0));
        c.near("first: tls start", span(p.tls).map(|s| s.0), at(700, 0));
        c.near("first: tls end", span(p.tls).map(|s| s.1), at(703, 1));
        c.near("first: send start", span(p.send).map(|s| s.0), at(213, 0));
        c.near("first: send end", span(p.send).map(|s| s.1), at(214, 0));
        c.near("first: first byte", p.first_byte.map(|t| run.seconds(t)), at(216, 0));
        let t = p.timings(browser[0].start, browser[0].end).expect("timings");
        let parts = [t.blocked, t.dns, t.connect, t.send, t.wait, t.receive].iter().flatten().sum::<i64>();
        c.eq("first: the phases add up to the duration", Some(parts), browser[0].end.map(|e| e - browser[0].start));
        for later in &browser[1..] {
            c.eq("keep-alive: no lookup, no connect", (later.phases.dns, later.phases.connect), (None, None));
            c.that("keep-alive: sent and answered", later.phases.send.is_some() && later.phases.first_byte.is_some());
        }
    } else {
        c.fail(format_args!("{} WinHTTP rows of browser.exe", browser.len()));
    }
    if let Some(rows) = c.count("W32Time's requests", run.requests(1744), 1) {
        c.request("NTP", rows[0], &[("service", "NTP"), ("server", "time.windows.com")]);
    }
    // The search ends with the answer's last bytes on its socket; its row
    // and the socket's agree on the socket's ends.
    let winsock = run.layer(7012, Layer::Winsock);
    let ldap = run.layer(7012, Layer::Ldap);
    if let (Some(rows), Some(socket)) = (c.count("LDAP searches", ldap, 1), c.count("LDAP sockets", winsock, 1)) {
        c.request(
            "search",
            rows[0],
            &[
                ("server", "dc01.corp.example.com"),
                ("method", "SEARCH"),
                ("local", "192.168.1.23:50421"),
                ("status", "null"),
                ("state", "closed"),
                ("open_at_end", "false"),
            ],
        );
        c.request("LDAP socket", socket[0], &[("local", "192.168.1.23:50421"), ("state", "closed")]);
        let answered = *run.times("Microsoft-Windows-Winsock-AFD", 1004, Some(7012)).last().expect("receives");
        c.span(&run, "search", (rows[0].start, rows[0].end), (run.time("LDAP-Client", 30, Some(7012), 0), answered));
    }
    // The sample logs no query starts (3006): each lookup starts at the
    // Dnscache service's wire query (3009), before its UDP exchange, and
    // ends at the asking process's completion (3008).
    let sockets = run.connections(1372);
    let asked = [
        ("www.example.com", 4820),
        ("templates.office.example", 5630),
        ("time.windows.com", 1744),
        ("dc01.corp.example.com", 7012),
    ];
    for (n, (name, pid)) in asked.into_iter().enumerate() {
        let Some(q) = c.count(&format!("lookups of {name}"), run.queries(name), 1) else { continue };
        let sent = run.time("Microsoft-Windows-DNS-Client", 3009, None, n);
        let done = run.time("Microsoft-Windows-DNS-Client", 3008, Some(pid), 0);
        if name != "www.example.com" {
            // The browser's own resolver (getaddrinfo) began before the service did.
            c.near(format_args!("{name}: start"), Some(run.seconds(q[0].start)), sent);
        }
        c.that(format_args!("{name}: starts by {sent}"), run.seconds(q[0].start) <= sent);
        c.that(
            format_args!("{name}: ends at or after its 3008 ({done}): {:?}", q[0].end.map(|e| run.seconds(e))),
            q[0].end.is_some_and(|e| run.seconds(e) >= done - 1e-7),
        );
        if let Some(udp) = sockets.get(n) {
            c.that(format_args!("{name}: starts before its UDP exchange"), q[0].start < udp.start);
        }
        if matches!(name, "time.windows.com" | "dc01.corp.example.com") {
            c.near(format_args!("{name}: end"), q[0].end.map(|e| run.seconds(e)), done);
        }
    }
    c.done();
}

/// Every row of every table, and each request's stitched stacks, as text:
/// what a 32-bit process's trace must share with its 64-bit twin's.
fn tables(run: &Run) -> Vec<String> {
    let mut out = Vec::new();
    for (i, r) in run.report.requests.iter().enumerate() {
        out.push(format!("request {:?} {:?} {:?}", request_columns(r), r.start, r.end));
        if let Some(s) = &run.stitched[i] {
            out.push(format!("stacks {:?} {:?}", s.full(), s.stacks.iter().map(|x| x.thread).collect::<Vec<_>>()));
        }
    }
    out.extend(run.report.connections.iter().map(|r| format!("connection {:?} {:?}", connection_columns(r), r.start)));
    out.extend(run.report.dns.iter().map(|r| format!("dns {:?} {} {:?}", dns_columns(r), r.name, r.start)));
    out
}

/// `pid`'s manifest events as (provider, id, pointer size), in order.
fn widths(run: &Run, pid: u32) -> Vec<(Guid, u16, u8)> {
    run.events.iter().filter(|e| e.pid == Some(pid)).map(|e| (e.provider, e.id, e.pointer_size)).collect()
}

/// 32-bit Word's WinINet request (EVENT_HEADER32 records, 4-byte pointers)
/// gives the row, connection, lookup and stacks a 64-bit Word's does.
#[test]
fn wow64_office_wininet_matches_its_64_bit_twin() {
    let twin = run(scenarios::office_wininet_64);
    let run = run(scenarios::office_wininet_32);
    let mut c = Checks::new("office-wininet-32");
    let wininet = provider_guid(WININET).unwrap();
    let word: Vec<u8> = widths(&run, 9400).iter().filter(|(p, _, _)| *p == wininet).map(|(_, _, w)| *w).collect();
    c.eq("WinINet records of the 32-bit Word", (word.len(), word.iter().all(|w| *w == 4)), (14, true));
    let twin_own: Vec<u8> = widths(&twin, 9400).iter().filter(|(p, _, _)| *p == wininet).map(|(_, _, w)| *w).collect();
    c.eq("WinINet records of the 64-bit Word", (twin_own.len(), twin_own.iter().all(|w| *w == 8)), (14, true));
    if let Some(rows) = c.count("Word's requests", run.requests(9400), 1) {
        let r = rows[0];
        c.request(
            "template list",
            r,
            &[
                ("process", "WINWORD.EXE"),
                ("first_thread", "9436"),
                ("layer", "WinINet"),
                ("method", "GET"),
                ("url", "https://templates.office.example/list?lang=en-US"),
                ("server", "templates.office.example"),
                ("ip", "52.109.8.19"),
                ("port", "443"),
                ("status", "HTTP/1.1 200 OK"),
                ("bytes_sent", "540"),
                ("bytes_received", "19695"),
            ],
        );
        let span = (run.time(WININET, 104, Some(9400), 0), run.time(WININET, 105, Some(9400), 0));
        c.span(&run, "template list", (r.start, r.end), span);
        let posted = ["ntdll.dll+0x34c12", BUILD_REQUEST, FIXTURE_SEND, "WINWORD.EXE+0x1d2e"];
        let into_pool = "[Windows thread pool: queued on thread 9404, ran on thread 9436]";
        let open = ["ntdll.dll+0x9d2a4", "wininet.dll+0x31e74", "WINWORD.EXE+0x1d2e"];
        c.chain("template list", run.stitched(r), &[link(9404, &posted, into_pool), own(9436, &open)]);
    }
    if let Some(conns) = c.count("Word's connections", run.connections(9400), 1) {
        c.connection(
            "connection",
            conns[0],
            // WinINet keeps it in its pool after the handle is closed.
            &[("remote", "52.109.8.19:443"), ("layer", "WinINet"), ("state", "open")],
        );
    }
    if let Some(q) = c.count("lookups", run.queries("templates.office.example"), 1) {
        c.dns("lookup", q[0], &[("process", "WINWORD.EXE"), ("answers", "52.109.8.19")]);
    }
    c.eq("the tables of the 32-bit and the 64-bit Word", tables(&run), tables(&twin));
    c.done();
}

/// A 32-bit WinHTTP app (WebIO's records 32-bit, its handles 4-byte
/// pointers) gives the rows a 64-bit one does.
#[test]
fn wow64_winhttp_matches_its_64_bit_twin() {
    let twin = run(scenarios::winhttp_64);
    let run = run(scenarios::winhttp_32);
    let mut c = Checks::new("winhttp-32");
    let webio = provider_guid(WEBIO).unwrap();
    let app: Vec<u8> = widths(&run, 8800).iter().filter(|(p, _, _)| *p == webio).map(|(_, _, w)| *w).collect();
    c.eq("WebIO records of the 32-bit app", (app.len(), app.iter().all(|w| *w == 4)), (32, true));
    let get = Exchange::new("GET", "sync.example.net", "/v2/manifest", "HTTP/1.1 200 OK", 4_200);
    let post = Exchange::new("POST", "sync.example.net", "/v2/report", "HTTP/1.1 204 No Content", 0).body(1_500);
    if let Some(rows) = c.count("syncagent.exe's requests", run.requests(8800), 2) {
        for (r, (x, url, status)) in rows.iter().zip([
            (&get, "https://sync.example.net/v2/manifest", "HTTP/1.1 200 OK"),
            (&post, "https://sync.example.net/v2/report", "HTTP/1.1 204 No Content"),
        ]) {
            let (sent, received) = http(x);
            c.request(
                url,
                r,
                &[
                    ("process", "syncagent.exe"),
                    ("first_thread", "8804"),
                    ("layer", "WinHTTP"),
                    ("url", url),
                    ("ip", "20.42.65.92"),
                    ("status", status),
                    ("bytes_sent", &sent),
                    ("bytes_received", &received),
                ],
            );
            let open = ["ntdll.dll+0x9d2a4", "winhttp.dll+0x17c44", "syncagent.exe+0x1d2e"];
            c.chain(url, run.stitched(r), &[own(8804, &open)]);
        }
        let span = (run.time(WEBIO, 17, Some(8800), 0), run.time(WEBIO, 30, Some(8800), 0));
        c.span(&run, "GET", (rows[0].start, rows[0].end), span);
    }
    if let Some(conns) = c.count("connections", run.connections(8800), 1) {
        c.connection("keep-alive connection", conns[0], &[("remote", "20.42.65.92:443"), ("layer", "WinHTTP")]);
    }
    c.eq("the tables of the 32-bit and the 64-bit app", tables(&run), tables(&twin));
    c.done();
}

/// Windows 11 22H2: the providers log that build's versions (TCPIP 1033 v1,
/// 1300 v2, 1332 v3; DNS-Client 3009 v2; WebIO 200/213/214 v1), which the
/// trace's build picks the layouts of.
#[test]
fn windows11_desktop() {
    let run = run(scenarios::windows11_desktop);
    let mut c = Checks::new("windows11-desktop");
    let version = |provider: &str, id: u16| {
        let g = provider_guid(provider).unwrap();
        let mut v: Vec<u8> = run.events.iter().filter(|e| e.provider == g && e.id == id).map(|e| e.version).collect();
        v.dedup();
        v
    };
    for (provider, id, want) in [
        ("TCPIP", 1033, 1),
        ("TCPIP", 1300, 2),
        ("TCPIP", 1332, 3),
        ("DNS-Client", 3009, 2),
        (WEBIO, 200, 1),
        (WEBIO, 213, 1),
        (WEBIO, 214, 1),
    ] {
        c.eq(format_args!("{provider} {id}'s versions"), version(provider, id), vec![want]);
    }
    let page = Exchange::new("GET", "www.contoso.com", "/", "HTTP/1.1 200 OK", 31_870);
    let script = Exchange::new("GET", "www.contoso.com", "/main.js", "HTTP/1.1 200 OK", 48_002);
    if let Some(rows) = c.count("msedge.exe's requests", run.requests(6100), 2) {
        for (r, (x, url)) in
            rows.iter().zip([(&page, "https://www.contoso.com/"), (&script, "https://www.contoso.com/main.js")])
        {
            let (sent, received) = http(x);
            c.request(
                url,
                r,
                &[
                    ("layer", "WinHTTP"),
                    ("url", url),
                    ("server", "www.contoso.com"),
                    ("alt_names", "www.contoso.com.edgekey.net"),
                    ("ip", "23.46.201.90"),
                    ("status", "HTTP/1.1 200 OK"),
                    ("bytes_sent", &sent),
                    ("bytes_received", &received),
                ],
            );
            let open = ["ntdll.dll+0x9d2a4", "winhttp.dll+0x17c44", "msedge.exe+0x1d2e"];
            c.chain(url, run.stitched(r), &[own(6104, &open)]);
        }
    }
    if let Some(q) = c.count("lookups of www.contoso.com", run.queries("www.contoso.com"), 1) {
        c.dns(
            "lookup",
            q[0],
            &[("process", "msedge.exe"), ("cached", "false"), ("answers", "23.46.201.90"), ("servers", "192.168.1.1")],
        );
    }
    if let Some(rows) = c.count("git.exe's requests", run.requests(7300), 1) {
        c.request(
            "clone",
            rows[0],
            &[
                ("layer", "Winsock"),
                ("server", "git.example.com"),
                ("ip", "140.82.121.3"),
                ("bytes_sent", "690"),
                ("bytes_received", &(4_380 + 3 * 65_536).to_string()),
            ],
        );
    }
    if let Some(conns) = c.count("Teams.exe's connections", run.connections(3300), 1) {
        c.connection(
            "rundown",
            conns[0],
            &[("remote", "52.113.194.132:443"), ("origin", "rundown"), ("state", "open")],
        );
    }
    c.done();
}

/// Every scenario decodes entirely (no event of any provider left
/// undecoded, the network providers' included) and the Python peers read
/// each file with the record counts nettrail's reader finds.
#[test]
fn every_scenario_decodes_and_the_peers_read_it_alike() {
    let dir = target_dir().join("test-net-scenarios");
    std::fs::create_dir_all(&dir).unwrap();
    let mut network: Vec<Guid> =
        ["TCPIP", "Winsock-AFD", "WebIO", "WinINet", "DNS-Client", "HttpService", "Kernel-Network"]
            .map(|p| provider_guid(p).expect("a known provider"))
            .to_vec();
    network.extend(["TcpIp", "UdpIp"].map(|c| kernel_class(c).expect("a kernel class")));
    let mut paths = Vec::new();
    let mut ours = Vec::new();
    for (name, _, scenario) in scenarios::ALL {
        let bytes = scenario().unwrap_or_else(|e| panic!("{name}: {e}"));
        let trace = Trace::parse(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut schemas = Schemas::new();
        assert!(schemas.learn(&trace).is_empty(), "{name}: the embedded metadata reads");
        let coverage = Coverage::compute(&trace, &schemas);
        for (guid, provider) in &coverage.providers {
            assert!(provider.undecoded.is_empty(), "{name}: events of {guid} not decoded: {:?}", provider.undecoded);
        }
        let decoded = |g: &Guid| coverage.providers.get(g).map_or(0, |p| p.decoded.values().sum::<u64>());
        assert!(network.iter().map(decoded).sum::<u64>() > 0, "{name}: no network provider's events");
        let summary = Summary::compute(&trace);
        let count = |names: &[&str]| {
            summary.record_kinds.iter().filter(|(kind, _)| names.contains(&kind.name())).map(|(_, n)| *n).sum::<u64>()
        };
        // etl-parser keeps the header event apart from the system records,
        // and reads nothing of compressed buffers: only dissect.etl counts those.
        let compressed = summary.compressed_buffers > 0;
        let etl_parser = [
            count(&["SYSTEM64"]) - 1,
            count(&["PERFINFO64"]),
            count(&["EVENT_HEADER64", "EVENT_HEADER32"]),
            count(&["FULL_HEADER64", "FULL_HEADER32"]),
        ];
        ours.push((summary.events, (!compressed).then_some(etl_parser)));
        let path = dir.join(format!("{name}.etl"));
        std::fs::write(&path, &bytes).unwrap();
        paths.push(path);
    }
    let theirs = peer_counts(&paths);
    for (((name, _, _), (records, etl_parser)), theirs) in scenarios::ALL.iter().zip(&ours).zip(&theirs) {
        assert_eq!(theirs.dissect_records, *records, "{name}: dissect.etl's record count");
        if let Some(etl_parser) = etl_parser {
            assert_eq!(theirs.etl_parser, *etl_parser, "{name}: etl-parser's records (system, perfinfo, event, trace)");
        }
    }
}

/// The stitching benchmark's load, small: every connection goes back to the
/// main thread's post, on the pool thread that ran it.
#[test]
fn handoff_load_stitches_every_request() {
    let run = run(|| scenarios::handoff_load(40));
    let mut c = Checks::new("handoff-load");
    let socket = afd_create("loadgen.exe");
    let posted = ["ntdll.dll+0x34c12", BUILD_REQUEST, FIXTURE_SEND, "loadgen.exe+0x1d2e"];
    if let Some(rows) = c.count("loadgen.exe's requests", run.requests(6600), 40) {
        for (i, r) in rows.into_iter().enumerate() {
            let pool = 6640 + 4 * (i as u32 % 4);
            let title = format!("[Windows thread pool: queued on thread 6604, ran on thread {pool}]");
            c.chain(&format!("request {}", i + 1), run.stitched(r), &[link(6604, &posted, &title), own(pool, &socket)]);
        }
    }
    c.done();
}
