//! What Office logs when it hands work to another thread: its thread pool
//! (Microsoft-Office-ThreadPool), its dispatch queues (OfficeDispatchQueue)
//! and its idle manager (Microsoft-Office-Events), with stacks on the events
//! WPR's Office profile asks stacks for (netblame.md §1: 32, 40, 62; the
//! posts; 6, 36, 50). The layouts are the synthesizer's own
//! (`layouts/`), embedded in the trace as metadata.

use crate::value::Val;
use crate::{Fields, SynthError, fields};

use super::{Machine, Tid, spec};

const THREAD_POOL: &str = "Microsoft-Office-ThreadPool";
const DISPATCH_QUEUE: &str = "OfficeDispatchQueue";
const EVENTS: &str = "Microsoft-Office-Events";

/// Kinds of dispatch queue, by the ids of their post, invoke start and end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueKind {
    /// The UI thread's queue (UIQueuePost).
    Ui,
    /// UIQueuePostIdle.
    UiIdle,
    Concurrent,
    Sequential,
    LimitedConcurrent,
}

impl QueueKind {
    fn ids(self) -> (u16, u16, u16) {
        match self {
            QueueKind::Ui => (65, 66, 67),
            QueueKind::UiIdle => (121, 66, 67),
            QueueKind::Concurrent => (99, 101, 102),
            QueueKind::Sequential => (133, 130, 131),
            QueueKind::LimitedConcurrent => (104, 113, 114),
        }
    }
}

/// IdleUpdateQueued's change flag for a task being added.
const ADD_TASK: u32 = 0x1;

impl Machine {
    fn office(
        &mut self,
        provider: &str,
        id: u16,
        at: f64,
        th: Tid,
        f: Fields,
        stack: Option<&[u64]>,
    ) -> Result<(), SynthError> {
        let mut s = spec(provider, id, at, th, f);
        if let Some(frames) = stack {
            s = s.stack(frames);
        }
        self.user(s)
    }

    /// WorkObjectCreate: a worker (workerType 1) for `callback`, with the creator's stack.
    pub fn office_worker_created(
        &mut self,
        at: f64,
        th: Tid,
        worker: u64,
        callback: u64,
        stack: &[u64],
    ) -> Result<(), SynthError> {
        let f = fields![("worker", Val::Ptr(worker)), ("workerType", 1u32), ("callback", Val::Ptr(callback))];
        self.office(THREAD_POOL, 32, at, th, f, Some(stack))
    }

    /// TimerSubmit: the worker runs every `period` ms, with the submitter's stack.
    pub fn office_timer_submitted(
        &mut self,
        at: f64,
        th: Tid,
        worker: u64,
        period: u32,
        stack: &[u64],
    ) -> Result<(), SynthError> {
        let f = fields![("pointer", Val::Ptr(worker)), ("period", period)];
        self.office(THREAD_POOL, 62, at, th, f, Some(stack))
    }

    /// WorkerStartExec (the events' stack is not what stitching needs).
    pub fn office_worker_runs(&mut self, at: f64, th: Tid, worker: u64) -> Result<(), SynthError> {
        self.office(THREAD_POOL, 40, at, th, fields![("worker", Val::Ptr(worker))], None)
    }

    pub fn office_worker_ends(&mut self, at: f64, th: Tid, worker: u64) -> Result<(), SynthError> {
        self.office(THREAD_POOL, 41, at, th, fields![("worker", Val::Ptr(worker))], None)
    }

    pub fn office_worker_destroyed(&mut self, at: f64, th: Tid, worker: u64) -> Result<(), SynthError> {
        self.office(THREAD_POOL, 33, at, th, fields![("pointer", Val::Ptr(worker))], None)
    }

    /// A callback posted to a queue, with the poster's stack.
    pub fn office_post(
        &mut self,
        at: f64,
        th: Tid,
        kind: QueueKind,
        (queue, callback): (u64, u64),
        stack: &[u64],
    ) -> Result<(), SynthError> {
        let f = fields![("queue", Val::Ptr(queue)), ("callback", Val::Ptr(callback))];
        self.office(DISPATCH_QUEUE, kind.ids().0, at, th, f, Some(stack))
    }

    /// The queue's invoke begins on `th`.
    pub fn office_invoke_start(&mut self, at: f64, th: Tid, kind: QueueKind, queue: u64) -> Result<(), SynthError> {
        self.office(DISPATCH_QUEUE, kind.ids().1, at, th, fields![("queue", Val::Ptr(queue))], None)
    }

    /// CallbackContextInvoke: the invoke runs `callback` now.
    pub fn office_callback(&mut self, at: f64, th: Tid, queue: u64, callback: u64) -> Result<(), SynthError> {
        let f = fields![("queue", Val::Ptr(queue)), ("callback", Val::Ptr(callback))];
        self.office(DISPATCH_QUEUE, 56, at, th, f, None)
    }

    pub fn office_invoke_end(&mut self, at: f64, th: Tid, kind: QueueKind, queue: u64) -> Result<(), SynthError> {
        self.office(DISPATCH_QUEUE, kind.ids().2, at, th, fields![("queue", Val::Ptr(queue))], None)
    }

    /// IdleUpdateQueued adding a task (its cookie logged as 0), with the caller's stack.
    pub fn office_idle_task_added(&mut self, at: f64, th: Tid, stack: &[u64]) -> Result<(), SynthError> {
        let f = fields![("cookie", 0u64), ("grfUpdateType", ADD_TASK)];
        self.office(EVENTS, 50, at, th, f, Some(stack))
    }

    /// IdleRegisterTask on the main thread, with its stack.
    pub fn office_idle_registered(
        &mut self,
        at: f64,
        th: Tid,
        id: u32,
        cookie: u64,
        stack: &[u64],
    ) -> Result<(), SynthError> {
        self.office(EVENTS, 36, at, th, fields![("dwID", id), ("cookie", cookie)], Some(stack))
    }

    /// IdleStartExecution then IdleExecuteTask: the task runs.
    pub fn office_idle_executes(&mut self, at: f64, th: Tid, id: u32, cookie: u64) -> Result<f64, SynthError> {
        self.office(EVENTS, 39, at, th, Fields::new(), None)?;
        self.office(EVENTS, 44, at + 0.01, th, fields![("dwID", id), ("cookie", cookie)], None)?;
        Ok(at + 0.01)
    }

    /// IdleEndExecution: the idle period (and the task running) ends.
    pub fn office_idle_ends(&mut self, at: f64, th: Tid) -> Result<(), SynthError> {
        self.office(EVENTS, 40, at, th, Fields::new(), None)
    }

    pub fn office_idle_deregistered(&mut self, at: f64, th: Tid, id: u32, cookie: u64) -> Result<(), SynthError> {
        self.office(EVENTS, 37, at, th, fields![("dwID", id), ("cookie", cookie)], None)
    }
}
