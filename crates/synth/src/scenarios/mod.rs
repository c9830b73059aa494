//! Network scenarios as Windows would trace them (NetBlame's test scenarios,
//! `netblame.md` §7.2), each a function returning the `.etl` bytes. They are
//! written from what each Windows layer logs ([`crate::windows`]), never
//! from what nettrail's model reads, so tests of the model against them
//! check it against Windows' behaviour.
//!
//! [`ALL`] lists them by name, with what each shows.

use std::net::{IpAddr, SocketAddr};

use crate::windows::{Machine, Tid};
use crate::{Process, SynthConfig, SynthError};

mod app_spans;
mod browsers;
mod handoffs;
mod hostile;
mod http_client;
mod kernel;
mod machines;
mod sample;
mod sockets;
mod wininet;

pub use app_spans::{APP_PROVIDER, app_spans};
pub use browsers::{browser_navigation, chrome_legacy, edge_webview2, winhttp_http3};
pub use handoffs::{
    BUILD_REQUEST_FIRST_RET, BUILD_REQUEST_RET, CHECKSUM_INLINED_MIX, FIXTURE_DLL, FIXTURE_SEND_RET, FIXTURE_SIZE,
    adhoc_thread, fixture_identity, handoff_load, office_pools, timer_request,
};
pub use hostile::{HOSTILE_HOST, HOSTILE_IMAGE, HOSTILE_PATH, hostile_strings};
pub use http_client::{
    connect_failures, dns, ipv6_happy_eyeballs, mid_connection, old_webio_send_sizes, proxy_connect,
    winhttp_async_pool, winhttp_get, winhttp_keepalive_h2,
};
pub use kernel::{kernel_classic, kernel_network, kernel_network_images};
pub use machines::{office_wininet_32, office_wininet_64, windows11_desktop, winhttp_32, winhttp_64};
pub use sample::sample;
pub use sockets::{
    hyperv_vsock, ldap, loopback_private, lost_events, port_reuse, quic, server, system_services, udp, winsock_client,
};
pub use wininet::{wininet_cache_hit, wininet_http2, wininet_keepalive, wininet_redirect, wow64_wininet};

/// A scenario: the trace it writes.
pub type Scenario = fn() -> Result<Vec<u8>, SynthError>;

/// Every scenario: name, what it shows, the function that writes it.
pub const ALL: &[(&str, &str, Scenario)] = &[
    ("winhttp-get", "1: a WinHTTP GET over HTTPS, answered from the DNS cache", winhttp_get),
    ("winhttp-async-pool", "2: an async WinHTTP POST created on a thread-pool thread", winhttp_async_pool),
    (
        "winhttp-keepalive-h2",
        "3: three WinHTTP requests on one keep-alive connection, four on one HTTP/2 connection",
        winhttp_keepalive_h2,
    ),
    ("wininet-redirect", "4: a WinINet GET redirected (301) from HTTP to HTTPS", wininet_redirect),
    ("wininet-keepalive", "5: WinINet keep-alive: a pooled connection reused, a handle sent twice", wininet_keepalive),
    ("wininet-cache-hit", "6: a WinINet GET served from the WinINet cache", wininet_cache_hit),
    ("wininet-http2", "7: two WinINet requests on one HTTP/2 connection (stream data events)", wininet_http2),
    (
        "connect-failures",
        "8: connects refused (RST) and timed out (SYN retransmissions), through WinHTTP and Winsock",
        connect_failures,
    ),
    ("dns", "9: a CNAME chain with several A and AAAA answers, a cache hit, a failed lookup", dns),
    (
        "ipv6-happy-eyeballs",
        "10: a dual-stack host whose IPv6 address fails before IPv4 connects, and an IPv6-only host",
        ipv6_happy_eyeballs,
    ),
    (
        "mid-connection",
        "11: the trace starts during a WinHTTP download (TCPIP rundown, no create events)",
        mid_connection,
    ),
    ("port-reuse", "12: 300 short connections reusing TCBs, AFD endpoints and ports", port_reuse),
    ("winsock-client", "13: a plain Winsock HTTPS client (getaddrinfo, connect, send, recv)", winsock_client),
    ("udp", "14: DNS queries to port 53, NTP, and one UDP socket talking to three peers", udp),
    ("quic", "15: QUIC as UDP/443 from a browser", quic),
    (
        "browser-navigation",
        "15/16: Chrome loads a page and a script over HTTP/2 and fetches over HTTP/3 (QUIC beating TCP), with its NetLog",
        browser_navigation,
    ),
    (
        "edge-webview2",
        "an app hosting Edge WebView2: HTTP/1.1 keep-alive, a refused connection, a name that does not resolve",
        edge_webview2,
    ),
    (
        "winhttp-http3",
        "Windows 11: WinHTTP GET and POST over HTTP/3 on one QUIC connection (MsQuic's events)",
        winhttp_http3,
    ),
    (
        "chrome-legacy",
        "Chrome's older exporters (the manifest's ChromeEvent, TraceLogging's Complete and Nestable Async phases)",
        chrome_legacy,
    ),
    ("ldap", "17: two LDAP searches on one connection to a domain controller", ldap),
    ("server", "18: a local server accepting two connections, and an Http.sys site serving two requests", server),
    ("loopback-private", "19: loopback, private (A, B, C) and link-local destinations", loopback_private),
    ("hyperv-vsock", "20: Hyper-V (AF 34) and VSock (AF 40) sockets, and a Bluetooth one (AF 32)", hyperv_vsock),
    (
        "system-services",
        "21: a service and System whose events carry other processes' ids, and System's idle rundown connections",
        system_services,
    ),
    (
        "office-pools",
        "22: Office idle task → dispatch queue → Office thread pool → WinINet GET; a queue callback re-posting itself",
        office_pools,
    ),
    ("adhoc-thread", "23: a download on a thread its process created for it (CreateThread's stack)", adhoc_thread),
    ("timer-request", "24: a periodic thread-pool timer whose callback connects each time it fires", timer_request),
    (
        "lost-events",
        "25: lost events and buffers: a connection whose connect was lost, one whose close was",
        lost_events,
    ),
    ("wow64-wininet", "26: a 32-bit (WOW64) process doing a WinINet request", wow64_wininet),
    ("proxy-connect", "27: WinHTTP through an explicit proxy (CONNECT tunnel)", proxy_connect),
    (
        "old-webio-send-sizes",
        "28: an older Windows build whose WebIO sends carry no size (TCPIP's posted sends do)",
        old_webio_send_sizes,
    ),
    (
        "office-wininet-32",
        "32-bit (WOW64) Word fetching through WinINet from a thread-pool work item: 4-byte pointers",
        office_wininet_32,
    ),
    ("office-wininet-64", "the 64-bit twin of office-wininet-32: the same tables", office_wininet_64),
    ("winhttp-32", "a 32-bit (WOW64) WinHTTP app: a GET and a POST on one connection", winhttp_32),
    ("winhttp-64", "the 64-bit twin of winhttp-32: the same tables", winhttp_64),
    (
        "windows11-desktop",
        "Windows 11 22H2: a rundown connection, a WinHTTP page load, a Winsock clone, in that build's event versions",
        windows11_desktop,
    ),
    (
        "app-spans",
        "an app's own tracing spans (TraceLogging Start/Stop, nettrail-tracelogging) around its WinHTTP request",
        app_spans,
    ),
    (
        "hostile-strings",
        "a process name, URL and host an attacker chose: terminal escapes, line breaks, bidi overrides, formulas",
        hostile_strings,
    ),
    ("kernel-classic", "classic kernel TcpIp/UdpIp events only, as PerfView traces have them", kernel_classic),
    ("kernel-network", "Microsoft-Windows-Kernel-Network events only", kernel_network),
    (
        "kernel-network-images",
        "Microsoft-Windows-Kernel-Network and image loads, no process events",
        kernel_network_images,
    ),
    (
        "sample",
        "a few seconds of a desktop: a browser-like WinHTTP client, an Office-like WinINet client, \
         a service's DNS and NTP, an LDAP lookup",
        sample,
    ),
];

/// A scenario by name.
pub fn by_name(name: &str) -> Option<Scenario> {
    ALL.iter().find(|(n, _, _)| *n == name).map(|(_, _, f)| *f)
}

/// The DNS Client service's process and thread.
pub const DNSCACHE: Tid = (1372, 1388);

/// A machine running the DNS Client service.
fn machine() -> Result<Machine, SynthError> {
    machine_with(SynthConfig::default())
}

fn machine_with(config: SynthConfig) -> Result<Machine, SynthError> {
    let mut m = Machine::with_config(config);
    m.process(
        Process::new(DNSCACHE.0, 780, "svchost.exe")
            .command_line(r"C:\WINDOWS\system32\svchost.exe -k NetworkService -p -s Dnscache")
            .service()
            .user_sid("S-1-5-20"),
    )?;
    Ok(m)
}

/// A user's process running when the trace starts.
fn app(m: &mut Machine, pid: u32, image: &str, command_line: &str) -> Result<u32, SynthError> {
    m.process(Process::new(pid, 6412, image).command_line(command_line))
}

/// An address written in a scenario (a literal: a typo is a bug here).
fn ip(text: &str) -> IpAddr {
    text.parse().unwrap_or_else(|_| panic!("bad address literal {text}"))
}

fn sa(text: &str) -> SocketAddr {
    text.parse().unwrap_or_else(|_| panic!("bad socket address literal {text}"))
}
