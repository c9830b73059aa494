//! The Windows thread pool (ntdll's TPP) as the kernel logger's ThreadPool
//! class logs it: a callback queued on one thread (with that thread's stack
//! walked), taken off the queue and run on a pool thread; a timer set (with
//! the setter's stack) and expiring on a pool thread, inside an expiration
//! batch. The records have SYSTEM headers with the thread's ids; pointers
//! are the process's (the pool, task and callback addresses).

use crate::{KernelSpec, SynthError, fields};

use super::{Machine, Tid};
use crate::value::Val;

/// A work item of a process's default pool: `TpPostWork`'s arguments.
#[derive(Clone, Copy, Debug)]
pub struct PoolWork {
    pub pool: u64,
    pub task: u64,
    /// The callback's code address.
    pub function: u64,
    pub context: u64,
}

/// A thread-pool timer: `SetThreadpoolTimer`'s object and its queue.
#[derive(Clone, Copy, Debug)]
pub struct PoolTimer {
    pub timer: u64,
    pub sub_queue: u64,
    /// Milliseconds between expirations (0: once).
    pub period: i32,
}

impl Machine {
    /// A new work item of `pid`'s pool whose callback is at `function`.
    pub fn tp_work(&mut self, pid: u32, function: u64) -> PoolWork {
        PoolWork { pool: self.heap(pid), task: self.heap(pid), function, context: self.heap(pid) }
    }

    /// A new timer of `pid`'s pool.
    pub fn tp_timer(&mut self, pid: u32, period: i32) -> PoolTimer {
        PoolTimer { timer: self.heap(pid), sub_queue: self.heap(pid), period }
    }

    fn tp_event(
        &mut self,
        at: f64,
        th: Tid,
        opcode: u8,
        f: crate::Fields,
        stack: Option<&[u64]>,
    ) -> Result<(), SynthError> {
        let mut spec = KernelSpec::new("ThreadPool", opcode).at(at).thread(th.0, th.1).fields(f);
        if let Some(frames) = stack {
            spec = spec.stack(frames);
        }
        self.synth.kernel(spec)?;
        Ok(())
    }

    fn work_fields(w: &PoolWork) -> crate::Fields {
        fields![
            ("PoolId", Val::Ptr(w.pool)),
            ("TaskId", Val::Ptr(w.task)),
            ("CallbackFunction", Val::Ptr(w.function)),
            ("CallbackContext", Val::Ptr(w.context)),
            ("SubProcessTag", Val::Ptr(0)),
        ]
    }

    /// `TpPostWork` on `th`: CallbackEnqueue with the poster's stack.
    pub fn tp_post(&mut self, at: f64, th: Tid, w: &PoolWork, stack: &[u64]) -> Result<(), SynthError> {
        self.tp_event(at, th, 32, Self::work_fields(w), Some(stack))
    }

    /// A pool thread takes the item (CallbackDequeue) and runs it
    /// (CallbackStart); returns when the callback begins.
    pub fn tp_run(&mut self, at: f64, worker: Tid, w: &PoolWork) -> Result<f64, SynthError> {
        self.tp_event(at, worker, 33, Self::work_fields(w), None)?;
        self.tp_event(at + 0.01, worker, 34, Self::work_fields(w), None)?;
        Ok(at + 0.01)
    }

    /// The callback returns (CallbackStop).
    pub fn tp_done(&mut self, at: f64, worker: Tid, w: &PoolWork) -> Result<(), SynthError> {
        self.tp_event(at, worker, 35, Self::work_fields(w), None)
    }

    /// `SetThreadpoolTimer` on `th`: TimerSet with the setter's stack.
    pub fn tp_set_timer(&mut self, at: f64, th: Tid, t: &PoolTimer, stack: &[u64]) -> Result<(), SynthError> {
        let f = fields![
            ("DueTime", -10_000i64 * 100),
            ("SubQueue", Val::Ptr(t.sub_queue)),
            ("Timer", Val::Ptr(t.timer)),
            ("Period", t.period),
        ];
        self.tp_event(at, th, 42, f, Some(stack))
    }

    /// The timer expires on a pool thread: TimerExpireBegin, then its
    /// TimerExpiration; its callback runs until [`Machine::tp_timers_done`].
    pub fn tp_timer_fires(&mut self, at: f64, worker: Tid, t: &PoolTimer) -> Result<f64, SynthError> {
        self.tp_event(at, worker, 46, fields![("SubQueue", Val::Ptr(t.sub_queue))], None)?;
        let f = fields![
            ("DueTime", 0i64),
            ("SubQueue", Val::Ptr(t.sub_queue)),
            ("Timer", Val::Ptr(t.timer)),
            ("Period", t.period),
        ];
        self.tp_event(at + 0.01, worker, 48, f, None)?;
        Ok(at + 0.01)
    }

    /// The expiration batch ends (TimerExpireEnd).
    pub fn tp_timers_done(&mut self, at: f64, worker: Tid, t: &PoolTimer) -> Result<(), SynthError> {
        self.tp_event(at, worker, 47, fields![("SubQueue", Val::Ptr(t.sub_queue))], None)
    }
}
