//! What a scenario says: when things happen, on which machine, and the
//! events to write with everything their headers carry.

use nettrail_etl::Guid;
use nettrail_etl::write::KernelHeader;

use crate::value::{Fields, Val};

/// A moment of the trace, from its start. `f64` converts as milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time(u64);

impl Time {
    pub const START: Time = Time(0);

    /// Milliseconds; negative or NaN is the start.
    pub fn ms(ms: f64) -> Time {
        Time((ms * 1e6).round().max(0.0) as u64)
    }

    pub fn us(us: u64) -> Time {
        Time(us.saturating_mul(1000))
    }

    pub fn ns(ns: u64) -> Time {
        Time(ns)
    }

    pub fn as_ns(self) -> u64 {
        self.0
    }

    pub fn as_ms(self) -> f64 {
        self.0 as f64 / 1e6
    }
}

impl From<f64> for Time {
    fn from(ms: f64) -> Time {
        Time::ms(ms)
    }
}

/// The machine and session a trace claims to come from.
#[derive(Clone, Debug)]
pub struct SynthConfig {
    pub cpus: u32,
    /// Windows 10 build (19045 = 22H2); decides Thread v3's name field and
    /// the kernel event version the header extension reports.
    pub build: u32,
    /// FILETIME of the session start.
    pub start_time: i64,
    /// FILETIME of the boot; QPC counts from it.
    pub boot_time: i64,
    pub cpu_speed_mhz: u32,
    /// XPRESS-compressed buffers, as `wpr -stop` writes with compression on.
    pub compress: bool,
    /// The process and thread that started the session (`wpr.exe`).
    pub controller: (u32, u32),
    /// Embed what the merge adds: EventInfo/EventMapInfo, system paths, build info.
    pub merge_metadata: bool,
    /// Write the DCEnd rundown at the end.
    pub end_rundown: bool,
    /// Log the kernel's Process and Thread groups (off: a kernel logger
    /// with image loads only, whose processes only their images name).
    pub process_events: bool,
}

impl Default for SynthConfig {
    fn default() -> Self {
        // 2026-01-15T09:30:00Z, booted two hours before.
        let start_time = 134_129_430_000_000_000;
        SynthConfig {
            cpus: 4,
            build: 19045,
            start_time,
            boot_time: start_time - 2 * 3600 * 10_000_000,
            cpu_speed_mhz: 2808,
            compress: false,
            controller: (7412, 7416),
            merge_metadata: true,
            end_rundown: true,
            process_events: true,
        }
    }
}

/// A manifest event to write: provider, id and version, then where and
/// when, its fields, and what else the header carries.
#[derive(Clone, Debug)]
pub struct EventSpec {
    pub(super) provider: String,
    pub(super) id: u16,
    /// `None`: the newest version the trace's build declares.
    pub(super) version: Option<u8>,
    pub(super) at: Time,
    pub(super) pid: u32,
    pub(super) tid: u32,
    pub(super) fields: Fields,
    pub(super) activity: Guid,
    pub(super) related: Option<Guid>,
    pub(super) stack: Option<Vec<u64>>,
    pub(super) cpu: Option<u16>,
    pub(super) pointer_size: Option<u8>,
    pub(super) level: Option<u8>,
    pub(super) keywords: Option<u64>,
}

impl EventSpec {
    /// Event `id` of `provider` in the given version.
    pub fn new(provider: &str, id: u16, version: u8) -> EventSpec {
        EventSpec { version: Some(version), ..EventSpec::latest(provider, id) }
    }

    /// Event `id` of `provider` in the newest version the trace's Windows
    /// build declares: what that build logs.
    pub fn latest(provider: &str, id: u16) -> EventSpec {
        EventSpec {
            provider: provider.to_string(),
            id,
            version: None,
            at: Time::START,
            pid: 0,
            tid: 0,
            fields: Fields::new(),
            activity: Guid::ZERO,
            related: None,
            stack: None,
            cpu: None,
            pointer_size: None,
            level: None,
            keywords: None,
        }
    }

    pub fn at(mut self, at: impl Into<Time>) -> Self {
        self.at = at.into();
        self
    }

    /// The logging process and thread.
    pub fn thread(mut self, pid: u32, tid: u32) -> Self {
        (self.pid, self.tid) = (pid, tid);
        self
    }

    pub fn fields(mut self, fields: Fields) -> Self {
        self.fields.0.extend(fields.0);
        self
    }

    pub fn field(mut self, name: &str, value: impl Into<Val>) -> Self {
        self.fields.0.push((name.to_string(), value.into()));
        self
    }

    pub fn activity(mut self, id: Guid) -> Self {
        self.activity = id;
        self
    }

    /// Adds the RELATED_ACTIVITYID extended item.
    pub fn related_activity(mut self, id: Guid) -> Self {
        self.related = Some(id);
        self
    }

    /// Adds a STACK_TRACE64 extended item: return addresses, innermost first.
    pub fn stack(mut self, frames: &[u64]) -> Self {
        self.stack = Some(frames.to_vec());
        self
    }

    /// The CPU that logs it (default: the thread's).
    pub fn cpu(mut self, cpu: u16) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// Overrides the process's pointer size (4 makes an EVENT_HEADER32 record).
    pub fn pointer_size(mut self, pointer_size: u8) -> Self {
        self.pointer_size = Some(pointer_size);
        self
    }

    pub fn level(mut self, level: u8) -> Self {
        self.level = Some(level);
        self
    }

    pub fn keywords(mut self, keywords: u64) -> Self {
        self.keywords = Some(keywords);
        self
    }
}

/// A classic kernel event to write (TcpIp, UdpIp, …), by class name or
/// GUID and opcode; the newest layout version unless one is given.
#[derive(Clone, Debug)]
pub struct KernelSpec {
    pub(super) class: String,
    pub(super) opcode: u8,
    pub(super) version: Option<u8>,
    pub(super) at: Time,
    pub(super) thread: Option<(u32, u32)>,
    pub(super) fields: Fields,
    pub(super) cpu: Option<u16>,
    pub(super) header: Option<KernelHeader>,
    pub(super) stack: Option<Vec<u64>>,
}

impl KernelSpec {
    pub fn new(class: &str, opcode: u8) -> KernelSpec {
        KernelSpec {
            class: class.to_string(),
            opcode,
            version: None,
            at: Time::START,
            thread: None,
            fields: Fields::new(),
            cpu: None,
            header: None,
            stack: None,
        }
    }

    pub fn version(mut self, version: u8) -> Self {
        self.version = Some(version);
        self
    }

    pub fn at(mut self, at: impl Into<Time>) -> Self {
        self.at = at.into();
        self
    }

    /// The thread the event happens on: its CPU, the header's ids (SYSTEM
    /// form), and the payload's `PID` when the layout has one and it is not given.
    pub fn thread(mut self, pid: u32, tid: u32) -> Self {
        self.thread = Some((pid, tid));
        self
    }

    pub fn fields(mut self, fields: Fields) -> Self {
        self.fields.0.extend(fields.0);
        self
    }

    pub fn field(mut self, name: &str, value: impl Into<Val>) -> Self {
        self.fields.0.push((name.to_string(), value.into()));
        self
    }

    pub fn cpu(mut self, cpu: u16) -> Self {
        self.cpu = Some(cpu);
        self
    }

    /// The header form (default: PERFINFO for TcpIp and UdpIp, else SYSTEM).
    pub fn header(mut self, header: KernelHeader) -> Self {
        self.header = Some(header);
        self
    }

    /// The call stack walked for the event (innermost first), logged as the
    /// kernel logs it: a StackWalk record of its own right after the event.
    pub fn stack(mut self, frames: &[u64]) -> Self {
        self.stack = Some(frames.to_vec());
        self
    }
}
