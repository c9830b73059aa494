//! The network scenario: every provider the analysis reads, with the
//! levels, keywords, rundowns, event filters and stacks it needs, and the
//! buffers to hold them. Facts follow MSO-Scripts' `NetworkFull` profile
//! (netblame.md §1.2); the event filters also let in what nettrail reads
//! beyond NetBlame (name-resolution starts, DNS cache and server events,
//! URLMon's whole URL range), and LDAP, Kernel-Network and Http.sys ride
//! along unfiltered.

use crate::provider::{Provider, Stacks, SystemProvider};

/// The session name WPR and the native controller use.
pub const SESSION_NAME: &str = "nettrail";

/// What `nettrail start` was asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// Circular in-memory buffers: only the last minutes survive (`--loop`).
    pub circular: bool,
    /// .NET runtime events and rundown, so managed frames get names (`--clr`).
    pub clr: bool,
    /// JavaScript runtime events and rundown, so script frames get names (`--js`).
    pub js: bool,
    /// The Chromium-based browsers' providers: Chrome, Edge, WebView2 (`--browser`; implies `js`).
    pub browser: bool,
    /// No call stacks at all (`--no-stacks`): smaller traces, no First/Last stacks.
    pub no_stacks: bool,
    /// The user's own providers (`--provider`), e.g. an app tracing itself.
    pub extra: Vec<Provider>,
}

/// A buffer pool: `count` buffers of `size_kb` KiB each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Buffers {
    pub size_kb: u32,
    pub count: u32,
}

impl Buffers {
    pub fn total_mb(self) -> u32 {
        self.size_kb * self.count / 1024
    }
}

/// Everything a recording enables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    pub system: SystemProvider,
    pub system_buffers: Buffers,
    pub providers: Vec<Provider>,
    pub event_buffers: Buffers,
    pub circular: bool,
}

/// Runtime providers whose rundowns name JIT-compiled frames.
pub mod runtimes {
    use super::*;

    /// .NET: loader, JIT, NGEN and stack keywords while tracing; method
    /// and module rundown when the trace is saved.
    pub fn clr() -> Vec<Provider> {
        let mut runtime =
            Provider::guid("DotNETRuntime", "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4").level(5).keywords(0x20098);
        runtime.non_paged = true;
        let mut rundown =
            Provider::guid("DotNETRuntimeRundown", "a669021c-c450-4609-a035-5af59af4df18").level(5).keywords(0);
        rundown.rundown_on_stop = Some(0x20118);
        vec![runtime, rundown]
    }

    /// JScript/Chakra (and V8 when started with ETW stack walking): the
    /// runtime keyword, start and end rundowns.
    pub fn js() -> Vec<Provider> {
        let mut js = Provider::guid("JScript", "57277741-3638-4a4b-bdba-0ac6e45da56c").keywords(0x1);
        js.rundown_on_start = Some(0x2);
        js.rundown_on_stop = Some(0x4);
        vec![js]
    }
}

/// The Chromium-based browsers' trace-event providers (Chrome, Edge's
/// channels, WebView2: MSO-Scripts' `EdgeChrome.wprp`), with the categories
/// whose events name what the network does and why: NetLog (0x80),
/// navigation, loading, Blink's user timing (performance marks), V8,
/// startup, latency, service workers and WebView2's own
/// (`trace_event_etw_export_win.cc` maps one keyword bit to each), every
/// event with its stack, as TraceEdgeChrome records them.
pub fn browser_providers() -> Vec<Provider> {
    /// benchmark, browser, netlog, v8, startup, latency, blink.user_timing,
    /// loading, navigation, ServiceWorker, edge_webview.
    const CATEGORIES: u64 = 0x1
        | 0x4
        | 0x80
        | 0x400
        | 0x4000
        | 0x8000
        | 0x1_0000
        | 0x4_0000
        | 0x400_0000_0000
        | 0x800_0000_0000
        | 0x1000_0000_0000;
    [
        ("Chrome", "d2d578d9-2936-45b6-a09f-30e32715f42d"),
        ("Edge", "3a5f2396-5c8f-4f1f-9b67-6cca6c990e61"),
        ("Edge-Beta", "bd089baa-4e52-4794-a887-9e96868570d2"),
        ("Edge-Dev", "d30b5c9f-b58f-4dc9-afaf-134405d72107"),
        ("Edge-Canary", "c56b8664-45c5-4e65-b3c7-a8d6bd3f2e67"),
        ("Edge-WebView2", "e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d"),
    ]
    .into_iter()
    .map(|(label, guid)| Provider::guid(label, guid).level(5).keywords(CATEGORIES).stacks(Stacks::All))
    .collect()
}

/// MsQuic's events the analysis reads (and the registration and binding
/// events around a connection's start).
const QUIC_EVENTS: &[u16] = &[
    5120, 5121, 5122, 5127, 5128, 5132, 5133, 5135, 5136, 5138, 5139, 5147, 5148, 5149, 5156, 5157, 5160, 5161, 5190,
    5194, 6144, 6147, 7168, 7169,
];

/// The network providers, in the order the profile lists them.
pub fn network_providers() -> Vec<Provider> {
    let mut tcpip = Provider::guid("TCPIP", "2f07e2ee-15db-40f1-90ef-9d7ba282188a").level(4).non_paged().events(&[
        1002, 1017, 1031, 1033, 1034, 1038, 1039, 1043, 1044, 1045, 1074, 1156, 1159, 1169, 1170, 1300, 1332, 1382,
        1397,
    ]);
    // Connections open before the trace: a TcpConnectionRundown (1300) each.
    tcpip.rundown_on_start = Some(0x0000_0013_0000_0080);
    let urlmon_events: Vec<u16> = (801..=808).collect();
    vec![
        tcpip,
        Provider::guid("Winsock-AFD", "e53c6823-7bb8-44bb-90dc-3f86090d48a6")
            .level(4)
            .keywords(0x4)
            .events(&[1000, 1001, 1003, 1004, 1009, 1013, 1015, 1018, 1021, 1027, 1030, 1032])
            .stacks_on(&[1000]),
        Provider::guid("Winsock-NameResolution", "55404e71-4db9-4deb-a5f5-8f86e46dde56").events(&[1000, 1001, 1004]),
        Provider::guid("DNS-Client", "1c95126e-7eea-49a9-a3fe-a378b03ddb4d")
            .events(&[1001, 3006, 3008, 3009, 3010, 3011, 3018]),
        Provider::guid("WinINet", "43d1a55c-76d6-4f7e-995c-64c711e5cafe")
            .level(4)
            .keywords(0x87)
            .events(&[
                101, 102, 103, 104, 105, 108, 200, 301, 304, 305, 307, 1007, 1008, 1017, 1031, 1033, 1037, 1045, 1046,
                1049, 1064,
            ])
            .stacks_on(&[104, 1007]),
        // ThreadAction (WinHTTP's own work items) is logged at level 5.
        Provider::guid("WinHttp", "7d44233d-3055-4b9c-ba64-0d47ca40a232")
            .level(5)
            .events(&[59995, 59996, 59997, 59998])
            .stacks_on(&[59996]),
        Provider::guid("WebIO", "50b3e73c-9370-461d-bb9f-26f32d68887d")
            .level(5)
            .non_paged()
            .events(&[
                5, 6, 7, 8, 17, 18, 19, 20, 29, 30, 100, 101, 104, 200, 201, 202, 203, 204, 205, 206, 211, 212, 213,
                214, 215, 216, 217, 700, 703, 59995, 59996, 59997, 59998,
            ])
            .stacks_on(&[5, 17, 59996]),
        Provider::guid("URLMon", "245f975d-909d-49ed-b8f9-9a75691d6b6b")
            .level(4)
            .events(&urlmon_events)
            .stacks_on(&[805]),
        Provider::guid("LDAP-Client", "099614a5-5dd7-4788-8bc9-e29f43db28fc").level(4).stacks_on(&[30]),
        Provider::guid("Kernel-Network", "7dd42a49-5329-4832-8dfd-43d979153a88").level(4).non_paged(),
        Provider::guid("HttpService", "dd5ef90a-6398-47a4-ad34-4dcecdef795f").level(4).non_paged(),
        // The Windows thread pool: a stack where work is queued and where a timer is set.
        Provider::guid("ThreadPool", "c861d0e2-a2c1-4d36-9f9c-970bab943a12")
            .stacks(Stacks::Pool { keywords: vec!["ThreadPoolCallbackEnqueue"], hooks: vec![0x1C2A] }),
        Provider::guid("Office-ThreadPool", "a019725f-cff1-47e8-8c9e-8fe2635b6388")
            .level(4)
            .keywords(0x1e)
            .stacks_on(&[32, 40, 62]),
        Provider::guid("Office-DispatchQueue", "559a5658-8100-4d84-b756-0a47a476280c")
            .events(&[36, 37, 38, 39, 56, 65, 66, 67, 99, 101, 102, 104, 113, 114, 119, 120, 121, 130, 131, 133])
            .stacks_on(&[65, 99, 104, 121, 133]),
        Provider::guid("Office-Events", "8736922d-e8b2-47eb-8564-23e77e728cf3")
            .level(4)
            .keywords(0x04 | 0x40)
            .events(&[6, 36, 37, 39, 40, 44, 50])
            .stacks_on(&[6, 36, 50]),
        // QUIC: Windows 11's msquic.sys and the msquic.dll apps ship (one
        // GUID), Windows 10's WinQuic: connections, their addresses, ids,
        // handshake, streams, shutdown and statistics.
        // Connection ids are logged at level 5.
        Provider::guid("Microsoft-Quic", "ff15e657-4f26-570e-88ab-0796b258d11c")
            .level(5)
            .non_paged()
            .events(QUIC_EVENTS)
            .stacks_on(&[5120]),
        Provider::guid("WinQuic", "2bcfefe5-5026-536b-1686-b249cb49cae3")
            .level(5)
            .non_paged()
            .events(QUIC_EVENTS)
            .stacks_on(&[5120]),
        // Image loads with their file names, beside the system provider's.
        Provider::guid("ImageLoad", "2cb15d1d-5fc1-11d2-abe1-00a0c911f518").keywords(0x10),
    ]
}

impl Scenario {
    /// The recording `nettrail start` makes with these options.
    pub fn network(options: &Options) -> Scenario {
        let mut providers = network_providers();
        if options.clr {
            providers.extend(runtimes::clr());
        }
        if options.js || options.browser {
            providers.extend(runtimes::js());
        }
        if options.browser {
            providers.extend(browser_providers());
        }
        providers.extend(options.extra.iter().cloned());
        let mut system = SystemProvider { keywords: vec!["ProcessThread", "Loader"], stacks: vec!["ThreadCreate"] };
        if options.no_stacks {
            providers = providers.into_iter().map(Provider::without_stacks).collect();
            system.stacks.clear();
        }
        Scenario {
            system,
            system_buffers: Buffers { size_kb: 1024, count: 32 },
            providers,
            event_buffers: Buffers { size_kb: 1024, count: 64 },
            circular: options.circular,
        }
    }

    /// Whether any provider or the kernel logs stacks.
    pub fn has_stacks(&self) -> bool {
        !self.system.stacks.is_empty() || self.providers.iter().any(|p| p.stacks != Stacks::None)
    }
}
