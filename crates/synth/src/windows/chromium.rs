//! Chromium-based browsers' trace events as their ETW exporters write them
//! (Chromium's `base/trace_event/`): TraceLogging events of the browser's
//! provider (`Google.Chrome` D2D578D9-…, Edge's per channel and WebView2's,
//! as MSO-Scripts' `EdgeChrome.wprp` lists them), named after the trace
//! event, level 0, opcode 0, the keyword the event's category maps to
//! (`netlog` 0x80, `loading` 0x40000 …).
//!
//! - The Perfetto exporter (`etw_interceptor_win.cc`, current browsers):
//!   `Phase` (`Begin`, `End`, `Instant`; 8-bit text), then `Timestamp` (µs
//!   since boot) and `Id` (the track) — in the other order when the event
//!   has no arguments — `Duration` (µs) on an `End`, then the arguments
//!   (text as 8-bit strings, integers as INT64/UINT64, booleans as UINT8).
//! - The exporter before it (`trace_event_etw_export_win.cc`): `Phase` with
//!   the trace event's phase in words (`Complete`, `Complete End`, `Nestable
//!   Async Begin` …) and at most two arguments, all 8-bit text.
//! - The first, manifest-based exporter: event 1 of the `Chrome` manifest
//!   (`chrome_events_win.man`; the synthesizer's `manifests/<build>/Chrome.man`).
//!
//! NetLog entries (`net/log/trace_net_log_observer.cc`): a source's track
//! is its own (`Id`'s low 32 bits are the source id here, a choice the
//! reference's reading implies; the high half is the exporter's base); a
//! begin or a single entry carries `source_type` and `params` (the entry's
//! parameters as JSON, with the source's start time), an end `params` only.

use nettrail_etl::Guid;
use nettrail_etl::write::Descriptor;
use nettrail_tracelogging::{EncodedEvent, InType, MetadataBuilder, OutType, TRACELOGGING_CHANNEL, provider_traits};

use super::{Machine, Tid, spec};

/// A browser's provider.
#[derive(Clone, Copy, Debug)]
pub struct Browser {
    pub guid: Guid,
    /// The TraceLogging provider name it registers.
    pub name: &'static str,
}

pub const CHROME: Browser =
    Browser { guid: Guid::parse_const("d2d578d9-2936-45b6-a09f-30e32715f42d"), name: "Google.Chrome" };
pub const EDGE: Browser =
    Browser { guid: Guid::parse_const("3a5f2396-5c8f-4f1f-9b67-6cca6c990e61"), name: "Microsoft.MSEdgeStable" };
pub const EDGE_WEBVIEW2: Browser =
    Browser { guid: Guid::parse_const("e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d"), name: "Microsoft.MSEdgeWebView" };

/// Keyword bits of the categories (`kFilteredEventGroupNames`).
pub mod category {
    pub const BROWSER: u64 = 0x4;
    pub const NETLOG: u64 = 0x80;
    pub const TOPLEVEL: u64 = 0x200;
    pub const V8: u64 = 0x400;
    pub const BLINK_USER_TIMING: u64 = 0x1_0000;
    pub const LOADING: u64 = 0x4_0000;
    pub const NAVIGATION: u64 = 0x400_0000_0000;
    pub const EDGE_WEBVIEW: u64 = 0x1000_0000_0000;
}

/// The high half of NetLog tracks' ids (the exporter's base; a choice).
const NETLOG_TRACK_BASE: u64 = 0x5e1c_0000_0000_0000;

/// A trace event's argument (a debug annotation).
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    Text(String),
    Int(i64),
    UInt(u64),
    Bool(bool),
}

impl From<&str> for Arg {
    fn from(v: &str) -> Self {
        Arg::Text(v.to_string())
    }
}

impl From<String> for Arg {
    fn from(v: String) -> Self {
        Arg::Text(v)
    }
}

impl From<u64> for Arg {
    fn from(v: u64) -> Self {
        Arg::UInt(v)
    }
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl From<bool> for Arg {
    fn from(v: bool) -> Self {
        Arg::Bool(v)
    }
}

/// A TraceLogging event's metadata and payload, field by field.
struct Fields {
    metadata: MetadataBuilder,
    payload: Vec<u8>,
}

impl Fields {
    fn new(name: &str) -> Fields {
        Fields { metadata: MetadataBuilder::new(name), payload: Vec::new() }
    }

    /// `TlmMbcsStringField`: 8-bit text, NUL-terminated, no out-type.
    fn text(&mut self, name: &str, value: &str) {
        self.metadata.field(name, InType::ANSI_STRING, OutType::DEFAULT);
        self.payload.extend_from_slice(value.as_bytes());
        self.payload.push(0);
    }

    fn u64(&mut self, name: &str, value: u64) {
        self.metadata.field(name, InType::UINT64, OutType::DEFAULT);
        self.payload.extend_from_slice(&value.to_le_bytes());
    }

    fn arg(&mut self, name: &str, value: &Arg) {
        match value {
            Arg::Text(s) => self.text(name, s),
            Arg::UInt(v) => self.u64(name, *v),
            Arg::Int(v) => {
                self.metadata.field(name, InType::INT64, OutType::DEFAULT);
                self.payload.extend_from_slice(&v.to_le_bytes());
            }
            Arg::Bool(b) => {
                self.metadata.field(name, InType::UINT8, OutType::BOOLEAN);
                self.payload.push(u8::from(*b));
            }
        }
    }
}

/// A NetLog entry's phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetPhase {
    Begin,
    End,
    None,
}

/// A NetLog source (the network service's): its id and type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetSource {
    pub id: u32,
    pub kind: &'static str,
}

impl NetSource {
    pub fn new(id: u32, kind: &'static str) -> NetSource {
        NetSource { id, kind }
    }

    /// The track the exporter puts it on.
    pub fn track(&self) -> u64 {
        NETLOG_TRACK_BASE | u64::from(self.id)
    }

    /// `{"id": …, "type": …}` as entries naming it write it.
    pub fn dependency(&self) -> serde_json::Value {
        serde_json::json!({ "id": self.id, "type": source_type_number(self.kind) })
    }
}

/// NetLogSourceType's number of a source type (`net_log_source_type_list.h`
/// order; only what the scenarios use).
fn source_type_number(kind: &str) -> u32 {
    match kind {
        "URL_REQUEST" => 1,
        "CONNECT_JOB" => 4,
        "SOCKET" => 5,
        "HTTP2_SESSION" => 6,
        "QUIC_SESSION" => 7,
        "HTTP_STREAM_JOB" => 11,
        "UDP_SOCKET" => 14,
        _ => 0,
    }
}

impl Machine {
    /// Microseconds since boot (`Timestamp`: base::TimeTicks).
    fn ticks_us(&self, at: f64) -> u64 {
        let c = self.synth.config();
        let since_boot_ms = (c.start_time - c.boot_time) as f64 / 1e4 + at;
        (since_boot_ms * 1000.0) as u64
    }

    fn tracelogging_event(
        &mut self,
        at: f64,
        th: Tid,
        b: &Browser,
        keyword: u64,
        f: Fields,
        name: &str,
    ) -> Result<(), crate::SynthError> {
        let metadata = f.metadata.finish()?;
        let event = EncodedEvent {
            provider: b.guid,
            name: name.to_string(),
            descriptor: Descriptor {
                id: 0,
                version: 0,
                channel: TRACELOGGING_CHANNEL,
                level: 0,
                opcode: 0,
                task: 0,
                keywords: keyword,
            },
            activity_id: None,
            related_activity_id: None,
            provider_traits: provider_traits(b.name),
            metadata,
            payload: f.payload,
            thread: 0,
            time: std::time::UNIX_EPOCH,
        };
        self.synth().tracelogging(at, th, &event)?;
        Ok(())
    }

    /// A trace event as the Perfetto exporter writes it: `phase` is
    /// `Begin`, `End` or `Instant`; `duration` (ms) on an `End`.
    #[allow(clippy::too_many_arguments)]
    pub fn chromium_event(
        &mut self,
        at: f64,
        th: Tid,
        b: &Browser,
        keyword: u64,
        (name, phase): (&str, &str),
        track: u64,
        duration: Option<f64>,
        args: &[(&str, Arg)],
    ) -> Result<(), crate::SynthError> {
        let mut f = Fields::new(name);
        f.text("Phase", phase);
        let ticks = self.ticks_us(at);
        if args.is_empty() {
            f.u64("Id", track);
            f.u64("Timestamp", ticks);
        } else {
            f.u64("Timestamp", ticks);
            f.u64("Id", track);
        }
        if let Some(ms) = duration {
            f.u64("Duration", (ms * 1000.0) as u64);
        }
        for (n, v) in args {
            f.arg(n, v);
        }
        self.tracelogging_event(at, th, b, keyword, f, name)
    }

    /// A slice on a thread's track: its `Begin` at `at` and its `End` after `ms`.
    #[allow(clippy::too_many_arguments)]
    pub fn chromium_slice(
        &mut self,
        at: f64,
        ms: f64,
        th: Tid,
        b: &Browser,
        keyword: u64,
        name: &str,
        args: &[(&str, Arg)],
    ) -> Result<f64, crate::SynthError> {
        let track = 0x7100_0000_0000_0000 | u64::from(th.1);
        self.chromium_event(at, th, b, keyword, (name, "Begin"), track, None, args)?;
        self.chromium_event(at + ms, th, b, keyword, (name, "End"), track, Some(ms), &[])?;
        Ok(at + ms)
    }

    /// A NetLog entry of the network service's `source` on `th`.
    pub fn netlog(
        &mut self,
        at: f64,
        th: Tid,
        b: &Browser,
        (name, phase): (&str, NetPhase),
        source: NetSource,
        params: serde_json::Value,
    ) -> Result<(), crate::SynthError> {
        let mut params = match params {
            serde_json::Value::Object(map) => map,
            _ => serde_json::Map::new(),
        };
        // The observer adds the source's start time (ms of NetLog's clock, as text).
        params.insert(
            "source_start_time".into(),
            serde_json::Value::String(format!("{}", (at.max(0.0) as u64) + 7_200_000)),
        );
        let params = serde_json::Value::Object(params).to_string();
        let mut args: Vec<(&str, Arg)> = Vec::new();
        let phase = match phase {
            NetPhase::Begin => {
                args.push(("source_type", source.kind.into()));
                "Begin"
            }
            NetPhase::End => "End",
            NetPhase::None => {
                args.push(("source_type", source.kind.into()));
                "Instant"
            }
        };
        args.push(("params", params.into()));
        let duration = None;
        self.chromium_event(at, th, b, category::NETLOG, (name, phase), source.track(), duration, &args)
    }

    /// A trace event as the exporter before Perfetto's writes it: `Phase`
    /// in words and its arguments as text.
    #[allow(clippy::too_many_arguments)]
    pub fn chromium_legacy_event(
        &mut self,
        at: f64,
        th: Tid,
        b: &Browser,
        keyword: u64,
        name: &str,
        phase: &str,
        args: &[(&str, &str)],
    ) -> Result<(), crate::SynthError> {
        let mut f = Fields::new(name);
        f.text("Phase", phase);
        for (n, v) in args.iter().take(2) {
            f.text(n, v);
        }
        self.tracelogging_event(at, th, b, keyword, f, name)
    }

    /// The manifest exporter's ChromeEvent (id 1): name, phase and up to
    /// three argument pairs (empty when unused).
    pub fn chrome_manifest_event(
        &mut self,
        at: f64,
        th: Tid,
        name: &str,
        phase: &str,
        args: &[(&str, &str)],
    ) -> Result<(), crate::SynthError> {
        let mut f = crate::fields![("Name", name), ("Phase", phase)];
        for i in 0..3 {
            let (n, v) = args.get(i).copied().unwrap_or(("", ""));
            f = f.with(format!("ArgName{}", i + 1), n).with(format!("ArgValue{}", i + 1), v);
        }
        self.user(spec("Chrome", 1, at, th, f))
    }
}
