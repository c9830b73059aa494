//! A synthesized trace as WPR's merge writes it: the kernel session's
//! header and rundown, the scenario's events in time order, the merge's
//! metadata (EventInfo before each event kind's first event, system paths,
//! build information), in "Relogger" buffers.
//!
//! Facts this follows (from the corpus' merged and kernel traces):
//! - Header: logger "Relogger", file "[multiple files]", mode
//!   SEQUENTIAL | RELOG (| COMPRESSED), 64 KiB buffers, QPC at 10 MHz; the
//!   header event's thread is the one that started the session.
//! - Rundown at the start: EventTrace EndExtension (0/32) and Extension (0/5)
//!   as PERFINFO v2, then per process a Process DCStart (PERFINFO v4)
//!   followed by its threads' DCStart (SYSTEM v3, header = the thread),
//!   then Image DCStart (kernel images: SYSTEM v3 with the session
//!   starter's header; process images: PERFINFO v3), then RDComplete (0/8).
//!   The end repeats it with DCEnd.
//! - Process Start: SYSTEM v4, header = the creating thread; Process End:
//!   header = the exiting thread; Thread Start: header = the creator;
//!   Thread End: the thread itself; image loads use the Process group's
//!   legacy hook (3/10) v3, unloads Image (20/2) v3.
//! - TcpIp/UdpIp: PERFINFO v2, the process id in the payload.
//! - Merge metadata: an EventInfo (and the EventMapInfo of each map it
//!   uses, once per provider) right before the first event of each
//!   (provider, id, version), with that event's time, process, thread and
//!   CPU, as FULL_HEADER of the event's width; SysConfigEx SystemPaths and
//!   VolumeMapping at the header's time, BuildInfo at the end (process 0).
//! - Relogged buffers: the header buffer is flagged FLUSH_MARKER only
//!   (state 0 when not compressed, as it was never a live buffer); data
//!   buffers carry PROC_INDEX, the last one FLUSH_MARKER too, and their
//!   time stamp is the merge's wall-clock time (FILETIME), not the session
//!   clock; a compressed file's header says log-file format 2.0.

use std::collections::{BTreeMap, HashSet};

use nettrail_etl::Guid;
use nettrail_etl::extended::ExtType;
use nettrail_etl::write::{
    ClassicRecord, Context, Descriptor, EventHeaderRecord, KernelHeader, KernelRecord, TraceConfig, TraceWriter,
};

mod relog;
mod rundown;
mod spec;

pub use spec::{EventSpec, KernelSpec, SynthConfig, Time};

use crate::catalog::{self, CatalogError, EventLayout, KernelLayout};
use crate::encode::{EncodeError, encode};
use crate::error::SynthError;
use crate::fields;
use crate::metadata;
use crate::system::{self, Module, Process, Thread};
use crate::value::{Fields, Val};

/// What a record is, before the writer lays it out.
#[derive(Clone, Debug)]
enum Body {
    Event {
        provider: Guid,
        descriptor: Descriptor,
        activity: Guid,
        pointer_size: u8,
        extended: Vec<(ExtType, Vec<u8>)>,
        payload: Vec<u8>,
        /// For the merge's EventInfo; none for a TraceLogging event, which
        /// describes itself.
        layout: Option<Box<EventLayout>>,
    },
    Kernel {
        header: KernelHeader,
        group: u8,
        opcode: u8,
        version: u8,
        payload: Vec<u8>,
    },
    Classic {
        class: Guid,
        opcode: u8,
        version: u16,
        pointer_size: u8,
        payload: Vec<u8>,
    },
}

/// Order among records of one instant: the start rundown and creations
/// first, then the scenario's events, then ends, then the end rundown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Rank {
    Begin,
    Scenario,
    Finish,
    Rundown,
}

#[derive(Clone, Debug)]
struct Pending {
    timestamp: u64,
    rank: Rank,
    seq: u64,
    cpu: u16,
    pid: u32,
    tid: u32,
    cpu_time: (u32, u32),
    body: Body,
}

/// Buffers that lose data: (CPU, raw time, whole buffers rather than events).
#[derive(Clone, Copy, Debug)]
struct Loss {
    cpu: u16,
    timestamp: u64,
    buffers: bool,
}

/// One process's state in the scenario.
#[derive(Clone, Debug)]
struct ProcessState {
    process: Process,
    modules: Vec<Module>,
}

/// Builds a synthetic trace; [`Synth::finish`] returns the `.etl` bytes.
#[derive(Debug)]
pub struct Synth {
    config: SynthConfig,
    processes: BTreeMap<u32, ProcessState>,
    threads: BTreeMap<u32, Thread>,
    /// The creating thread's stack of threads created with one.
    thread_stacks: BTreeMap<u32, Vec<u64>>,
    records: Vec<Pending>,
    seq: u64,
    losses: Vec<Loss>,
    events_lost: u32,
    buffers_lost: u32,
}

/// QPC ticks per second on Windows 10.
const PERF_FREQ: u64 = 10_000_000;
/// The kernel events' group of the header extension and rundown markers.
const EVENT_TRACE: u8 = 0x00;
const PROCESS: u8 = 0x03;
const THREAD: u8 = 0x05;
const IMAGE: u8 = 0x14;
const STACK_WALK: u8 = 0x18;
/// StackWalk's Stack event, and the version every kernel logs it with.
const STACK: (u8, u8, u8) = (STACK_WALK, 32, 2);
/// Log-file modes of a merged file.
const FILE_MODE_SEQUENTIAL: u32 = 0x1;
const RELOG_MODE: u32 = 0x1_0000;
const COMPRESSED_MODE: u32 = 0x0400_0000;
/// Buffer header offsets and flags (WMI_BUFFER_HEADER).
const BUFFER_CURRENT_OFFSET: usize = 0x08;
const BUFFER_TIMESTAMP: usize = 0x10;
const BUFFER_STATE: usize = 0x2C;
const BUFFER_FLAGS: usize = 0x34;
const FLUSH_MARKER: u16 = 0x1;
const EVENTS_LOST: u16 = 0x2;
const BUFFER_LOST: u16 = 0x4;
/// Where TRACE_LOGFILE_HEADER.Version sits: buffer header, SYSTEM header, 4.
const LOGFILE_VERSION_AT: usize = 0x48 + 0x20 + 4;

impl Default for Synth {
    fn default() -> Self {
        Synth::new()
    }
}

impl Synth {
    /// A 4-CPU Windows 10 22H2 machine; Idle, System and the session's
    /// `wpr.exe` exist already.
    pub fn new() -> Synth {
        Synth::with_config(SynthConfig::default())
    }

    pub fn with_config(config: SynthConfig) -> Synth {
        let mut s = Synth {
            config,
            processes: BTreeMap::new(),
            threads: BTreeMap::new(),
            thread_stacks: BTreeMap::new(),
            records: Vec::new(),
            seq: 0,
            losses: Vec::new(),
            events_lost: 0,
            buffers_lost: 0,
        };
        let system = Process::new(4, 0, "System").service();
        let mut state = ProcessState { process: system, modules: Vec::new() };
        state.process.command_line.clear();
        s.processes.insert(4, state);
        for tid in [8, 12, 16, 20] {
            s.threads.insert(tid, Thread { pid: 4, tid, start: None, end: None, name: String::new() });
        }
        let (pid, tid) = s.config.controller;
        let wpr = Process::new(pid, 6120, "wpr.exe")
            .command_line(r#""C:\WINDOWS\system32\wpr.exe" -start Network.15002.wprp!NetworkFull -filemode"#);
        s.insert_process(wpr, None);
        s.threads.insert(tid, Thread { pid, tid, start: None, end: None, name: String::new() });
        s
    }

    pub fn config(&self) -> &SynthConfig {
        &self.config
    }

    /// Raw session-clock value of a moment.
    pub fn timestamp(&self, at: Time) -> u64 {
        self.start_timestamp() + at.as_ns() / (1_000_000_000 / PERF_FREQ)
    }

    fn start_timestamp(&self) -> u64 {
        ((self.config.start_time - self.config.boot_time).max(0) as u64) / (10_000_000 / PERF_FREQ)
    }

    fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn insert_process(&mut self, mut process: Process, start: Option<u64>) {
        let modules = system::default_modules(&process);
        process.start = start;
        self.processes.insert(process.pid, ProcessState { process, modules });
    }

    fn check_new_process(&self, p: &Process) -> Result<(), SynthError> {
        if self.processes.contains_key(&p.pid) || p.pid == 0 {
            return Err(SynthError::DuplicateProcess(p.pid));
        }
        if p.pointer_size != 4 && p.pointer_size != 8 {
            return Err(SynthError::BadPointerSize(p.pointer_size));
        }
        Ok(())
    }

    /// A process that runs when the trace starts (it appears in the rundown).
    pub fn process(
        &mut self,
        pid: u32,
        parent_pid: u32,
        image: &str,
        command_line: &str,
        pointer_size: u8,
    ) -> Result<&mut Self, SynthError> {
        self.add_process(Process::new(pid, parent_pid, image).command_line(command_line).pointer_size(pointer_size))
    }

    /// A process built with [`Process`]'s setters, running when the trace starts.
    pub fn add_process(&mut self, process: Process) -> Result<&mut Self, SynthError> {
        self.check_new_process(&process)?;
        self.insert_process(process, None);
        Ok(self)
    }

    /// A process created during the trace (a Process Start event, its
    /// modules' loads); its parent's first thread creates it.
    pub fn start_process(&mut self, at: impl Into<Time>, process: Process) -> Result<&mut Self, SynthError> {
        self.check_new_process(&process)?;
        let ts = self.timestamp(at.into());
        self.insert_process(process, Some(ts));
        Ok(self)
    }

    /// The process exits: its threads end, its modules unload, Process End.
    pub fn end_process(&mut self, at: impl Into<Time>, pid: u32, exit_code: i32) -> Result<&mut Self, SynthError> {
        let at = at.into();
        let ts = self.timestamp(at);
        let state = self.processes.get_mut(&pid).ok_or(SynthError::UnknownProcess(pid))?;
        if state.process.end.is_some() || state.process.start.is_some_and(|s| s > ts) {
            return Err(SynthError::NotAlive { what: format!("process {pid}"), at_ms: at.as_ms() });
        }
        state.process.end = Some((ts, exit_code));
        Ok(self)
    }

    /// A thread that runs when the trace starts (or when its process starts).
    pub fn thread(&mut self, pid: u32, tid: u32) -> Result<&mut Self, SynthError> {
        let start = self.processes.get(&pid).ok_or(SynthError::UnknownProcess(pid))?.process.start;
        self.insert_thread(pid, tid, start.map(|s| (s, None)))
    }

    /// A thread created during the trace by the process's first thread.
    pub fn start_thread(&mut self, at: impl Into<Time>, pid: u32, tid: u32) -> Result<&mut Self, SynthError> {
        let at = at.into();
        let ts = self.timestamp(at);
        self.check_alive(pid, None, ts, at)?;
        self.insert_thread(pid, tid, Some((ts, None)))
    }

    /// A thread created during the trace by `creator` (same process), whose
    /// Thread Start carries the creator's stack (`CreateThread`'s caller).
    pub fn create_thread(
        &mut self,
        at: impl Into<Time>,
        creator: (u32, u32),
        tid: u32,
        stack: &[u64],
    ) -> Result<&mut Self, SynthError> {
        let at = at.into();
        let ts = self.timestamp(at);
        self.check_alive(creator.0, Some(creator.1), ts, at)?;
        self.insert_thread(creator.0, tid, Some((ts, Some(creator))))?;
        self.thread_stacks.insert(tid, stack.to_vec());
        Ok(self)
    }

    pub fn end_thread(&mut self, at: impl Into<Time>, pid: u32, tid: u32) -> Result<&mut Self, SynthError> {
        let at = at.into();
        let ts = self.timestamp(at);
        self.check_alive(pid, Some(tid), ts, at)?;
        if let Some(t) = self.threads.get_mut(&tid) {
            t.end = Some(ts);
        }
        Ok(self)
    }

    /// `start`: (time, creator) for a thread created during the trace; the
    /// creator defaults to the process's (or, for its first thread, the parent's) first thread.
    fn insert_thread(
        &mut self,
        pid: u32,
        tid: u32,
        start: Option<(u64, Option<(u32, u32)>)>,
    ) -> Result<&mut Self, SynthError> {
        if let Some(t) = self.threads.get(&tid) {
            return Err(SynthError::DuplicateThread { tid, pid: t.pid });
        }
        let start = match start {
            None => None,
            Some((ts, Some((cp, ct)))) => Some((ts, cp, ct)),
            Some((ts, None)) => {
                let (cp, ct) = self.creator_of(pid);
                Some((ts, cp, ct))
            }
        };
        self.threads.insert(tid, Thread { pid, tid, start, end: None, name: String::new() });
        Ok(self)
    }

    /// Who creates a new thread of `pid`: its first thread, or for the
    /// first thread of a new process, the parent's first thread.
    fn creator_of(&self, pid: u32) -> (u32, u32) {
        if let Some(t) = self.threads.values().find(|t| t.pid == pid) {
            return (pid, t.tid);
        }
        let parent = self.processes.get(&pid).map_or(0, |p| p.process.parent_pid);
        let tid = self.threads.values().find(|t| t.pid == parent).map_or(0, |t| t.tid);
        (parent, tid)
    }

    /// A module mapped in a process when the trace starts (`C:\…` path).
    pub fn module(&mut self, pid: u32, path: &str, base: u64, size: u64) -> Result<&mut Self, SynthError> {
        let state = self.processes.get_mut(&pid).ok_or(SynthError::UnknownProcess(pid))?;
        state.modules.push(Module::new(path, base, size));
        Ok(self)
    }

    /// A module built with [`Module`]'s setters (a PDB identity), mapped in a
    /// process when the trace starts.
    pub fn add_module(&mut self, pid: u32, module: Module) -> Result<&mut Self, SynthError> {
        let state = self.processes.get_mut(&pid).ok_or(SynthError::UnknownProcess(pid))?;
        state.modules.push(Module { load: None, ..module });
        Ok(self)
    }

    /// Where a module of `pid` is mapped, by file name (`ws2_32.dll`, any
    /// case); the empty name is the process's executable.
    pub fn module_base(&self, pid: u32, file_name: &str) -> Option<u64> {
        let modules = &self.processes.get(&pid)?.modules;
        if file_name.is_empty() {
            return modules.first().map(|m| m.base);
        }
        modules.iter().find(|m| m.file_name().eq_ignore_ascii_case(file_name)).map(|m| m.base)
    }

    /// A module loaded during the trace by a thread of the process.
    pub fn load_module(
        &mut self,
        at: impl Into<Time>,
        pid: u32,
        tid: u32,
        path: &str,
        base: u64,
        size: u64,
    ) -> Result<&mut Self, SynthError> {
        let at = at.into();
        let ts = self.timestamp(at);
        self.check_alive(pid, Some(tid), ts, at)?;
        let state = self.processes.get_mut(&pid).ok_or(SynthError::UnknownProcess(pid))?;
        let mut m = Module::new(path, base, size);
        m.load = Some((ts, tid));
        state.modules.push(m);
        Ok(self)
    }

    /// Checks that the process (and thread) exist at `ts`; an unknown thread
    /// of a known process is taken to have existed since the process did.
    fn check_alive(&mut self, pid: u32, tid: Option<u32>, ts: u64, at: Time) -> Result<(), SynthError> {
        if pid == 0 && tid.is_none_or(|t| t == 0) {
            // The idle process: events logged at DPC level arrive with ids 0.
            return Ok(());
        }
        let state = self.processes.get(&pid).ok_or(SynthError::UnknownProcess(pid))?;
        let p = &state.process;
        let gone = |what: String| SynthError::NotAlive { what, at_ms: at.as_ms() };
        if p.start.is_some_and(|s| ts < s) || p.end.is_some_and(|(e, _)| ts > e) {
            return Err(gone(format!("process {pid}")));
        }
        let Some(tid) = tid else { return Ok(()) };
        match self.threads.get(&tid) {
            None => {
                let start = p.start.map(|s| (s, None));
                self.insert_thread(pid, tid, start)?;
            }
            Some(t) if t.pid != pid => return Err(SynthError::ThreadOfOtherProcess { tid, pid, owner: t.pid }),
            Some(t) if t.start.is_some_and(|(s, _, _)| ts < s) || t.end.is_some_and(|e| ts > e) => {
                return Err(gone(format!("thread {tid} of process {pid}")));
            }
            Some(_) => {}
        }
        Ok(())
    }

    fn pointer_size_of(&self, pid: u32) -> u8 {
        self.processes.get(&pid).map_or(8, |p| p.process.pointer_size)
    }

    /// The CPU a thread runs on unless told otherwise.
    fn cpu_of(&self, tid: u32) -> u16 {
        ((tid / 4) % self.config.cpus.max(1)) as u16
    }

    /// CPU ticks charged to a thread by `ts` (kernel, user): grows with time.
    fn cpu_time(&self, tid: u32, ts: u64) -> (u32, u32) {
        let since = match self.threads.get(&tid).and_then(|t| t.start) {
            Some((s, _, _)) => ts.saturating_sub(s),
            None => ts.saturating_sub(self.start_timestamp()) + 600 * PERF_FREQ,
        };
        let ms = since / (PERF_FREQ / 1000);
        (1 + (ms / 90) as u32, (ms / 60) as u32)
    }

    fn check_cpu(&self, cpu: u16) -> Result<u16, SynthError> {
        if u32::from(cpu) < self.config.cpus {
            Ok(cpu)
        } else {
            Err(SynthError::NoSuchCpu { cpu, cpus: self.config.cpus })
        }
    }

    /// A manifest event, in the given version as the trace's build declares
    /// it, logged by thread `(pid, tid)`.
    pub fn event(
        &mut self,
        at: impl Into<Time>,
        (pid, tid): (u32, u32),
        provider: &str,
        id: u16,
        version: u8,
        fields: Fields,
    ) -> Result<&mut Self, SynthError> {
        self.emit(EventSpec::new(provider, id, version).at(at).thread(pid, tid).fields(fields))
    }

    /// A manifest event with everything [`EventSpec`] can say.
    pub fn emit(&mut self, spec: EventSpec) -> Result<&mut Self, SynthError> {
        let layout = catalog::event_layout(self.config.build, &spec.provider, spec.id, spec.version)?;
        let ts = self.timestamp(spec.at);
        self.check_alive(spec.pid, Some(spec.tid), ts, spec.at)?;
        let pointer_size = spec.pointer_size.unwrap_or_else(|| self.pointer_size_of(spec.pid));
        if pointer_size != 4 && pointer_size != 8 {
            return Err(SynthError::BadPointerSize(pointer_size));
        }
        let cpu = self.check_cpu(spec.cpu.unwrap_or_else(|| self.cpu_of(spec.tid)))?;
        let name = format!("{} event {} v{}", layout.provider.name, spec.id, layout.version);
        let payload = encode(&layout.schema.fields, &spec.fields, pointer_size)
            .map_err(|error| SynthError::Encode { event: name, error })?;
        let mut descriptor = layout.descriptor;
        descriptor.level = spec.level.unwrap_or(descriptor.level);
        descriptor.keywords = spec.keywords.unwrap_or(descriptor.keywords);
        let mut extended = Vec::new();
        if let Some(related) = spec.related {
            extended.push((ExtType::RELATED_ACTIVITYID, related.to_bytes_le().to_vec()));
        }
        if let Some(frames) = &spec.stack {
            // MatchId 0: the whole stack is in this item.
            let mut data = 0u64.to_le_bytes().to_vec();
            frames.iter().for_each(|f| data.extend_from_slice(&f.to_le_bytes()));
            extended.push((ExtType::STACK_TRACE64, data));
        }
        let mut layout = layout;
        layout.descriptor = descriptor;
        let body = Body::Event {
            provider: layout.provider.guid,
            descriptor,
            activity: spec.activity,
            pointer_size,
            extended,
            payload,
            layout: Some(Box::new(layout)),
        };
        self.push(ts, Rank::Scenario, cpu, spec.pid, spec.tid, body);
        Ok(self)
    }

    /// An app's TraceLogging event (from `nettrail_tracelogging`: a
    /// `tracing` program's span or event, or one made with
    /// `EncodedEvent::new`) logged by thread `(pid, tid)` at `at`, as ETW
    /// logs it: its descriptor and activity id, and the extended items
    /// related activity id (when it has one), provider traits and event
    /// metadata. The merge embeds nothing for it: it describes itself.
    pub fn tracelogging(
        &mut self,
        at: impl Into<Time>,
        (pid, tid): (u32, u32),
        event: &nettrail_tracelogging::EncodedEvent,
    ) -> Result<&mut Self, SynthError> {
        let at = at.into();
        let ts = self.timestamp(at);
        self.check_alive(pid, Some(tid), ts, at)?;
        let pointer_size = self.pointer_size_of(pid);
        let cpu = self.check_cpu(self.cpu_of(tid))?;
        let body = Body::Event {
            provider: event.provider,
            descriptor: event.descriptor,
            activity: event.activity_id.unwrap_or(Guid::ZERO),
            pointer_size,
            extended: event.extended_items(),
            payload: event.payload.clone(),
            layout: None,
        };
        self.push(ts, Rank::Scenario, cpu, pid, tid, body);
        Ok(self)
    }

    /// A classic kernel event (TcpIp, UdpIp, …) from the kernel layouts.
    pub fn kernel(&mut self, spec: KernelSpec) -> Result<&mut Self, SynthError> {
        let class = catalog::kernel_class(&spec.class)?;
        let layout = kernel_layout(class, spec.opcode, spec.version)?;
        let group = layout.group.ok_or_else(|| CatalogError::UnknownKernelClass(spec.class.clone()))?;
        let ts = self.timestamp(spec.at);
        let (pid, tid) = match spec.thread {
            Some((pid, tid)) => {
                self.check_alive(pid, Some(tid), ts, spec.at)?;
                (pid, tid)
            }
            None => (0, 0),
        };
        let mut fields = spec.fields.clone();
        if spec.thread.is_some() && fields.get("PID").is_none() && layout.schema.fields.iter().any(|f| f.name == "PID")
        {
            fields.0.push(("PID".to_string(), Val::U64(u64::from(pid))));
        }
        let name = format!("kernel {} opcode {} v{}", spec.class, spec.opcode, layout.version);
        let payload =
            encode(&layout.schema.fields, &fields, 8).map_err(|error| SynthError::Encode { event: name, error })?;
        let header = spec.header.unwrap_or(if matches!(group, 0x06 | 0x08) {
            KernelHeader::Perfinfo
        } else {
            KernelHeader::System
        });
        let cpu = self.check_cpu(spec.cpu.unwrap_or_else(|| self.cpu_of(tid)))?;
        let version = spec.version.unwrap_or(layout.version);
        self.push(
            ts,
            Rank::Scenario,
            cpu,
            pid,
            tid,
            Body::Kernel { header, group, opcode: spec.opcode, version, payload },
        );
        if let Some(frames) = &spec.stack {
            self.push_stack_walk((ts, Rank::Scenario, cpu), (pid, tid), frames);
        }
        Ok(self)
    }

    /// A StackWalk Stack record for the event of thread `ids` at `at`: it
    /// names the event by raw timestamp and thread (PERFINFO: no ids of its
    /// own), kernel-width frames innermost first.
    fn push_stack_walk(&mut self, at: (u64, Rank, u16), ids: (u32, u32), frames: &[u64]) {
        let mut payload = Vec::with_capacity(16 + 8 * frames.len());
        payload.extend_from_slice(&at.0.to_le_bytes());
        payload.extend_from_slice(&ids.0.to_le_bytes());
        payload.extend_from_slice(&ids.1.to_le_bytes());
        frames.iter().for_each(|f| payload.extend_from_slice(&f.to_le_bytes()));
        self.push_kernel(at, ids, KernelHeader::Perfinfo, STACK, payload);
    }

    /// KernelTraceControl ImageID Info and DbgID_RSDS for a module with a PDB
    /// identity, at the time of the image event they describe (how the
    /// merge logs them: FULL_HEADER records of process 0).
    fn push_image_identity(&mut self, at: (u64, Rank, u16), m: &Module, pid: u32) -> Result<(), SynthError> {
        let Some(pdb) = &m.pdb else { return Ok(()) };
        let info = kernel_layout(IMAGE_ID_CLASS, 0, Some(2))?;
        let values = fields![
            ("ImageBase", Val::Ptr(m.base)),
            ("ImageSize", Val::Ptr(m.size)),
            ("ProcessId", pid),
            ("TimeDateStamp", pdb.time_date_stamp),
            ("OriginalFileName", m.file_name()),
        ];
        let payload = encode(&info.schema.fields, &values, 8).map_err(|e| encode_error("ImageID", e))?;
        let tid = self.config.controller.1;
        let body = Body::Classic { class: IMAGE_ID_CLASS, opcode: 0, version: 2, pointer_size: 8, payload };
        self.push(at.0, at.1, at.2, 0, tid, body);
        let rsds = kernel_layout(IMAGE_ID_CLASS, 36, Some(2))?;
        let values = fields![
            ("ImageBase", Val::Ptr(m.base)),
            ("ProcessId", pid),
            ("GuidSig", pdb.guid),
            ("Age", pdb.age),
            ("PdbFileName", pdb.pdb_name.as_str()),
        ];
        let payload = encode(&rsds.schema.fields, &values, 8).map_err(|e| encode_error("DbgID_RSDS", e))?;
        let body = Body::Classic { class: IMAGE_ID_CLASS, opcode: 36, version: 2, pointer_size: 8, payload };
        self.push(at.0, at.1, at.2, 0, tid, body);
        Ok(())
    }

    /// The buffer that `cpu` is filling at `at` lost `count` events: its
    /// EVENTS_LOST flag is set and the header counts them.
    pub fn lose_events(&mut self, at: impl Into<Time>, cpu: u16, count: u32) -> Result<&mut Self, SynthError> {
        let cpu = self.check_cpu(cpu)?;
        let timestamp = self.timestamp(at.into());
        self.losses.push(Loss { cpu, timestamp, buffers: false });
        self.events_lost = self.events_lost.saturating_add(count);
        Ok(self)
    }

    /// `count` whole buffers were lost around `at` on `cpu`: the next one
    /// written there is flagged BUFFER_LOST and the header counts them.
    pub fn lose_buffers(&mut self, at: impl Into<Time>, cpu: u16, count: u32) -> Result<&mut Self, SynthError> {
        let cpu = self.check_cpu(cpu)?;
        let timestamp = self.timestamp(at.into());
        self.losses.push(Loss { cpu, timestamp, buffers: true });
        self.buffers_lost = self.buffers_lost.saturating_add(count);
        Ok(self)
    }

    fn push(&mut self, timestamp: u64, rank: Rank, cpu: u16, pid: u32, tid: u32, body: Body) {
        let seq = self.next_seq();
        let cpu_time = self.cpu_time(tid, timestamp);
        self.records.push(Pending { timestamp, rank, seq, cpu, pid, tid, cpu_time, body });
    }

    fn push_kernel(
        &mut self,
        at: (u64, Rank, u16),
        ids: (u32, u32),
        header: KernelHeader,
        (group, opcode, version): (u8, u8, u8),
        payload: Vec<u8>,
    ) {
        if !self.config.process_events && (group == PROCESS || group == THREAD) {
            return;
        }
        let (timestamp, rank, cpu) = at;
        self.push(timestamp, rank, cpu, ids.0, ids.1, Body::Kernel { header, group, opcode, version, payload });
    }

    /// Kernel event version the header extension reports, as logged by the builds seen.
    fn kernel_event_version(&self) -> u32 {
        match self.config.build {
            19041.. => 0x50,
            18362.. => 0x46,
            9200.. => 0x2a,
            _ => 0x1b,
        }
    }

    /// Thread v3 carries the thread's name from this build on (the oldest
    /// Windows 10 build verified to log it).
    fn thread_names(&self) -> bool {
        self.config.build >= 18362
    }

    /// The file: every record in time order, written as WPR's merge does.
    pub fn finish(mut self) -> Result<Vec<u8>, SynthError> {
        let start = self.start_timestamp();
        let merge = self.config.merge_metadata;
        if merge {
            self.push_sysconfig(
                start,
                Rank::Begin,
                33,
                fields![("SystemDirectory", "C:\\WINDOWS\\system32"), ("SystemWindowsDirectory", "C:\\WINDOWS\\"),],
            )?;
            for (nt, dos) in [(system::VOLUME, "C:\\"), ("\\SystemRoot\\", "C:\\WINDOWS\\")] {
                self.push_sysconfig(start, Rank::Begin, 35, fields![("NtPath", nt), ("DosPath", dos)])?;
            }
        }
        let mut clock = start + 200;
        self.rundown(&mut clock, Rank::Begin, false)?;
        self.lifecycle()?;
        let last = self.records.iter().map(|r| r.timestamp).max().unwrap_or(start);
        let mut clock = last.max(clock) + 10 * PERF_FREQ / 1000;
        if self.config.end_rundown {
            self.rundown(&mut clock, Rank::Rundown, true)?;
        }
        if merge {
            let build_lab = build_lab(self.config.build);
            let install = Val::FileTime(self.config.boot_time - 400 * 86_400 * 10_000_000);
            self.push_sysconfig(
                clock + 15,
                Rank::Rundown,
                32,
                fields![("InstallDate", install), ("BuildLab", build_lab), ("ProductName", "Windows 10 Pro"),],
            )?;
        }
        let mut records = std::mem::take(&mut self.records);
        records.sort_by_key(|r| (r.timestamp, r.rank, r.seq));

        let c = &self.config;
        let mut writer = TraceWriter::new(TraceConfig {
            buffer_size: 64 * 1024,
            pointer_size: 8,
            number_of_processors: c.cpus,
            os_version: (10, 0),
            build: c.build,
            start_time: c.start_time,
            start_timestamp: start,
            perf_freq: PERF_FREQ as i64,
            clock_type: 1,
            boot_time: c.boot_time,
            timer_resolution: 156_250,
            cpu_speed_mhz: c.cpu_speed_mhz,
            log_file_mode: FILE_MODE_SEQUENTIAL | RELOG_MODE | if c.compress { COMPRESSED_MODE } else { 0 },
            logger_name: "Relogger".to_string(),
            log_file_name: "[multiple files]".to_string(),
            events_lost: self.events_lost,
            buffers_lost: self.buffers_lost,
            process_id: c.controller.0,
            thread_id: c.controller.1,
            logger_id: 0,
            compress: c.compress,
        });
        let mut described: HashSet<(Guid, u16, u8)> = HashSet::new();
        let mut maps_sent: HashSet<(Guid, String)> = HashSet::new();
        for r in &records {
            let context = Context { timestamp: r.timestamp, cpu: r.cpu, process_id: r.pid, thread_id: r.tid };
            let (kernel_time, user_time) = r.cpu_time;
            match &r.body {
                Body::Event { provider, descriptor, activity, pointer_size, extended, payload, layout } => {
                    if let Some(layout) = layout.as_deref().filter(|_| merge)
                        && described.insert((*provider, descriptor.id, descriptor.version))
                    {
                        let info = metadata::event_info(layout)?;
                        writer.write_classic(&metadata_record(context, *pointer_size, metadata::EVENT_INFO, &info))?;
                        for map in metadata::maps_of(&layout.schema.fields) {
                            if maps_sent.insert((*provider, map.name.clone())) {
                                let blob = metadata::event_map_info(*provider, &map)?;
                                writer.write_classic(&metadata_record(
                                    context,
                                    *pointer_size,
                                    metadata::EVENT_MAP_INFO,
                                    &blob,
                                ))?;
                            }
                        }
                    }
                    let items: Vec<(ExtType, &[u8])> = extended.iter().map(|(t, d)| (*t, d.as_slice())).collect();
                    writer.write_event_header(&EventHeaderRecord {
                        context,
                        provider: *provider,
                        descriptor: *descriptor,
                        activity_id: *activity,
                        pointer_size: *pointer_size,
                        flags: 0,
                        kernel_time,
                        user_time,
                        extended: &items,
                        payload,
                    })?;
                }
                Body::Kernel { header, group, opcode, version, payload } => writer.write_kernel(&KernelRecord {
                    context,
                    header: *header,
                    pointer_size: 8,
                    group: *group,
                    opcode: *opcode,
                    version: *version,
                    kernel_time,
                    user_time,
                    payload,
                })?,
                Body::Classic { class, opcode, version, pointer_size, payload } => {
                    writer.write_classic(&ClassicRecord {
                        context,
                        pointer_size: *pointer_size,
                        class: *class,
                        opcode: *opcode,
                        level: 0,
                        version: *version,
                        instance: None,
                        payload,
                    })?
                }
            }
        }
        let mut bytes = writer.finish();
        self.relog_buffers(&mut bytes, last)?;
        Ok(bytes)
    }

    /// Writes the trace to a file.
    pub fn write_to(self, path: impl AsRef<std::path::Path>) -> Result<(), SynthError> {
        let bytes = self.finish()?;
        std::fs::write(path, bytes).map_err(SynthError::Io)
    }
}

/// The build lab string a build's BuildInfo names (its release branch, as
/// `version.txt` of jdu2600/Windows10EtwEvents gives them).
fn build_lab(build: u32) -> String {
    let branch = match build {
        22000 => "co_release.210604-1628",
        22621..=22631 => "ni_release.220506-1250",
        26100.. => "ge_release.240331-1435",
        _ => "vb_release.191206-1406",
    };
    format!("{build}.1.amd64fre.{branch}")
}

/// A KernelTraceControl MetaData record describing the event at `context`.
fn metadata_record(context: Context, pointer_size: u8, opcode: u8, payload: &[u8]) -> ClassicRecord<'_> {
    ClassicRecord {
        context,
        pointer_size,
        class: metadata::METADATA_CLASS,
        opcode,
        level: 0,
        version: 0,
        instance: None,
        payload,
    }
}

fn encode_error(what: &str, error: EncodeError) -> SynthError {
    SynthError::Encode { event: what.to_string(), error }
}

const EVENT_TRACE_CLASS: Guid = Guid::parse_const("68fdd900-4a3e-11d1-84f4-0000f80464e3");
const PROCESS_CLASS: Guid = Guid::parse_const("3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c");
const THREAD_CLASS: Guid = Guid::parse_const("3d6fa8d1-fe05-11d0-9dda-00c04fd7ba7c");
const IMAGE_CLASS: Guid = Guid::parse_const("2cb15d1d-5fc1-11d2-abe1-00a0c911f518");
const IMAGE_ID_CLASS: Guid = Guid::parse_const("b3e675d7-2554-4f18-830b-2762732560de");
const SYSCONFIG_CLASS: Guid = Guid::parse_const("9b79ee91-b5fd-41c0-a243-4248e266e9d0");

/// The layout of a kernel event: the version asked for or the nearest
/// older one the built-in layouts have (layouts grow at the end).
fn kernel_layout(class: Guid, opcode: u8, version: Option<u8>) -> Result<KernelLayout, SynthError> {
    match version {
        None => Ok(catalog::kernel_layout(class, opcode, None)?),
        Some(v) => (0..=v).rev().find_map(|v| catalog::kernel_layout(class, opcode, Some(v)).ok()).ok_or_else(|| {
            SynthError::Catalog(CatalogError::UnknownKernelEvent { class: class.to_string(), opcode, version: Some(v) })
        }),
    }
}
