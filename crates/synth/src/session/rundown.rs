//! The kernel's view of the scenario's processes: the rundowns at both
//! ends, creations and exits in between, and the merge's system records.

use nettrail_etl::write::KernelHeader;

use super::{
    Body, EVENT_TRACE, EVENT_TRACE_CLASS, IMAGE, IMAGE_CLASS, PROCESS, PROCESS_CLASS, ProcessState, Rank,
    SYSCONFIG_CLASS, Synth, THREAD, THREAD_CLASS, encode_error, kernel_layout,
};
use crate::encode::encode;
use crate::error::SynthError;
use crate::fields;
use crate::system::{self, Process, Thread};
use crate::value::Fields;

impl Synth {
    /// EventTrace Extension/EndExtension: group masks, kernel event version.
    fn extension(&self, masks: bool) -> Result<Vec<u8>, SynthError> {
        let layout = kernel_layout(EVENT_TRACE_CLASS, 5, Some(0))?;
        // PROCESS | THREAD | IMAGE_LOAD | NETWORK_TCPIP, or image loads and network only.
        let groups = if self.config.process_events { 0x0001_0007u32 } else { 0x0001_0004 };
        let mask = if masks { groups } else { 0 };
        let values = fields![("GroupMask1", mask), ("KernelEventVersion", self.kernel_event_version())];
        encode(&layout.schema.fields, &values, 8).map_err(|e| encode_error("EventTrace extension", e))
    }

    /// The rundown of what is alive, on CPU 0 from `clock` on: DCStart of
    /// what exists when the trace starts, or DCEnd of what still runs at its end.
    pub(super) fn rundown(&mut self, clock: &mut u64, rank: Rank, end: bool) -> Result<(), SynthError> {
        let controller = self.config.controller;
        let op = if end { 4 } else { 3 };
        let process_layout = kernel_layout(PROCESS_CLASS, op, None)?;
        let thread_layout = kernel_layout(THREAD_CLASS, op, None)?;
        let image_layout = kernel_layout(IMAGE_CLASS, op, None)?;
        let process_kind = (PROCESS, op, process_layout.version);
        let thread_kind = (THREAD, op, thread_layout.version);
        let image_kind = (IMAGE, op, image_layout.version);
        let at = |clock: &mut u64| {
            *clock += 15;
            (*clock, rank, 0u16)
        };
        let (first, second) = (self.extension(end)?, self.extension(!end)?);
        self.push_kernel(at(clock), (0, 0), KernelHeader::Perfinfo, (EVENT_TRACE, 32, 2), first);
        if !end {
            self.push_kernel(at(clock), (0, 0), KernelHeader::Perfinfo, (EVENT_TRACE, 5, 2), second.clone());
        }
        let alive = |start: bool, ended: bool| if end { !ended } else { !start };

        // The Idle process: one thread per CPU, all with id 0.
        let idle = Process::new(0, 0, "Idle").service();
        let payload =
            system::process_payload(&process_layout.schema.fields, &idle, 0).map_err(|e| encode_error("Idle", e))?;
        self.push_kernel(at(clock), (0, 0), KernelHeader::Perfinfo, process_kind, payload);
        let idle_thread = Thread { pid: 0, tid: 0, start: None, end: None, name: String::new() };
        let payload = system::thread_payload(&thread_layout.schema.fields, &idle_thread, 8, self.thread_names())
            .map_err(|e| encode_error("Idle thread", e))?;
        for _ in 0..self.config.cpus {
            self.push_kernel(at(clock), (0, 0), KernelHeader::System, thread_kind, payload.clone());
        }

        let processes: Vec<ProcessState> = self
            .processes
            .values()
            .filter(|s| alive(s.process.start.is_some(), s.process.end.is_some()))
            .cloned()
            .collect();
        for state in &processes {
            let p = &state.process;
            let payload = system::process_payload(&process_layout.schema.fields, p, system::STILL_ACTIVE)
                .map_err(|e| encode_error(&format!("process {}", p.pid), e))?;
            self.push_kernel(at(clock), (0, 0), KernelHeader::Perfinfo, process_kind, payload);
            let threads: Vec<Thread> = self
                .threads
                .values()
                .filter(|t| t.pid == p.pid && alive(t.start.is_some(), t.end.is_some()))
                .cloned()
                .collect();
            for t in threads {
                let payload =
                    system::thread_payload(&thread_layout.schema.fields, &t, p.pointer_size, self.thread_names())
                        .map_err(|e| encode_error(&format!("thread {}", t.tid), e))?;
                self.push_kernel(at(clock), (t.pid, t.tid), KernelHeader::System, thread_kind, payload);
            }
        }
        for m in system::kernel_modules() {
            let payload =
                system::image_payload(&image_layout.schema.fields, &m, 0).map_err(|e| encode_error(&m.path, e))?;
            self.push_kernel(at(clock), controller, KernelHeader::System, image_kind, payload);
        }
        for state in &processes {
            for m in state.modules.iter().filter(|m| end || m.load.is_none()) {
                let payload = system::image_payload(&image_layout.schema.fields, m, state.process.pid)
                    .map_err(|e| encode_error(&m.path, e))?;
                let when = at(clock);
                self.push_kernel(when, (0, 0), KernelHeader::Perfinfo, image_kind, payload);
                self.push_image_identity(when, m, state.process.pid)?;
            }
        }
        if end {
            self.push_kernel(at(clock), (0, 0), KernelHeader::Perfinfo, (EVENT_TRACE, 5, 2), second);
        }
        self.push_kernel(at(clock), (0, 0), KernelHeader::Perfinfo, (EVENT_TRACE, 8, 2), Vec::new());
        Ok(())
    }

    /// Creations and exits during the trace: Process Start (and the loads of
    /// its modules), Thread Start, module loads, Thread End, module unloads
    /// and Process End.
    pub(super) fn lifecycle(&mut self) -> Result<(), SynthError> {
        let process_start = kernel_layout(PROCESS_CLASS, 1, None)?;
        let process_end = kernel_layout(PROCESS_CLASS, 2, None)?;
        let thread_start = kernel_layout(THREAD_CLASS, 1, None)?;
        let thread_end = kernel_layout(THREAD_CLASS, 2, None)?;
        // Windows 10 logs loads with the Process group's legacy hook (3/10).
        let image_load = kernel_layout(IMAGE_CLASS, 10, None)?;
        let image_unload = kernel_layout(IMAGE_CLASS, 2, None)?;
        let processes: Vec<ProcessState> = self.processes.values().cloned().collect();
        let threads: Vec<Thread> = self.threads.values().cloned().collect();
        let names = self.thread_names();
        for state in &processes {
            let p = &state.process;
            let own: Vec<&Thread> = threads.iter().filter(|t| t.pid == p.pid).collect();
            if let Some(ts) = p.start {
                let creator =
                    own.first().and_then(|t| t.start).map_or_else(|| self.creator_of(p.pid), |(_, cp, ct)| (cp, ct));
                let payload = system::process_payload(&process_start.schema.fields, p, system::STILL_ACTIVE)
                    .map_err(|e| encode_error(&format!("process {}", p.pid), e))?;
                let cpu = self.cpu_of(creator.1);
                self.push_kernel(
                    (ts, Rank::Begin, cpu),
                    creator,
                    KernelHeader::System,
                    (PROCESS, 1, process_start.version),
                    payload,
                );
                let loader = own.first().map_or(creator.1, |t| t.tid);
                for (k, m) in state.modules.iter().filter(|m| m.load.is_none()).enumerate() {
                    let payload = system::image_payload(&image_load.schema.fields, m, p.pid)
                        .map_err(|e| encode_error(&m.path, e))?;
                    let at = (ts + 2 + k as u64, Rank::Begin, self.cpu_of(loader));
                    self.push_kernel(
                        at,
                        (p.pid, loader),
                        KernelHeader::System,
                        (PROCESS, 10, image_load.version),
                        payload,
                    );
                    self.push_image_identity(at, m, p.pid)?;
                }
            }
            for m in &state.modules {
                let Some((ts, tid)) = m.load else { continue };
                let payload =
                    system::image_payload(&image_load.schema.fields, m, p.pid).map_err(|e| encode_error(&m.path, e))?;
                let at = (ts, Rank::Scenario, self.cpu_of(tid));
                self.push_kernel(at, (p.pid, tid), KernelHeader::System, (PROCESS, 10, image_load.version), payload);
                self.push_image_identity(at, m, p.pid)?;
            }
            let Some((ts, code)) = p.end else { continue };
            let exiting = own.first().map_or(0, |t| t.tid);
            let at = (ts, Rank::Finish, self.cpu_of(exiting));
            for t in own.iter().filter(|t| t.end.is_none()) {
                let payload = system::thread_payload(&thread_end.schema.fields, t, p.pointer_size, names)
                    .map_err(|e| encode_error(&format!("thread {}", t.tid), e))?;
                self.push_kernel(
                    (ts, Rank::Finish, self.cpu_of(t.tid)),
                    (p.pid, t.tid),
                    KernelHeader::System,
                    (THREAD, 2, thread_end.version),
                    payload,
                );
            }
            for m in &state.modules {
                let payload = system::image_payload(&image_unload.schema.fields, m, p.pid)
                    .map_err(|e| encode_error(&m.path, e))?;
                self.push_kernel(at, (p.pid, exiting), KernelHeader::System, (IMAGE, 2, image_unload.version), payload);
            }
            let payload = system::process_payload(&process_end.schema.fields, p, code)
                .map_err(|e| encode_error(&format!("process {}", p.pid), e))?;
            self.push_kernel(at, (p.pid, exiting), KernelHeader::System, (PROCESS, 2, process_end.version), payload);
        }
        for t in &threads {
            let pointer_size = self.pointer_size_of(t.pid);
            if let Some((ts, cp, ct)) = t.start {
                let payload = system::thread_payload(&thread_start.schema.fields, t, pointer_size, names)
                    .map_err(|e| encode_error(&format!("thread {}", t.tid), e))?;
                let at = (ts, Rank::Begin, self.cpu_of(ct));
                self.push_kernel(at, (cp, ct), KernelHeader::System, (THREAD, 1, thread_start.version), payload);
                if let Some(frames) = self.thread_stacks.get(&t.tid).cloned() {
                    self.push_stack_walk(at, (cp, ct), &frames);
                }
            }
            if let Some(ts) = t.end {
                let payload = system::thread_payload(&thread_end.schema.fields, t, pointer_size, names)
                    .map_err(|e| encode_error(&format!("thread {}", t.tid), e))?;
                let at = (ts, Rank::Finish, self.cpu_of(t.tid));
                self.push_kernel(at, (t.pid, t.tid), KernelHeader::System, (THREAD, 2, thread_end.version), payload);
            }
        }
        Ok(())
    }

    /// A KernelTraceControl SysConfigEx record, as the merge adds them.
    pub(super) fn push_sysconfig(
        &mut self,
        timestamp: u64,
        rank: Rank,
        opcode: u8,
        values: Fields,
    ) -> Result<(), SynthError> {
        let layout = kernel_layout(SYSCONFIG_CLASS, opcode, None)?;
        let payload = encode(&layout.schema.fields, &values, 8).map_err(|e| encode_error("SysConfigEx", e))?;
        let body = Body::Classic { class: SYSCONFIG_CLASS, opcode, version: 0, pointer_size: 8, payload };
        self.push(timestamp, rank, 0, 0, 0, body);
        Ok(())
    }
}
