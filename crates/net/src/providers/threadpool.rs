//! The Windows thread pool (ntdll's TPP), logged as classic events of the
//! kernel's ThreadPool class: callbacks queued (with the queuing thread's
//! stack), taken off the queue, started and stopped on a pool thread, or
//! cancelled; timers set (with the setter's stack), expiring on a pool
//! thread, and cancelled. Only callbacks whose function was ever queued are
//! followed: the others are I/O completions nobody handed over.

use crate::event::{Head, Props};
use crate::pools::Callback;
use crate::pools::Pools;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    Queued(Callback),
    Started(Callback),
    Stopped(Callback),
    Cancelled(Callback),
    TimerSet {
        timer: u64,
    },
    TimerExpired {
        timer: u64,
    },
    /// The end of a batch of expirations on a thread.
    TimersDone,
    TimerCancelled {
        timer: u64,
    },
}

pub(crate) fn extract(opcode: u8, props: &Props<'_, '_>) -> Option<Event> {
    let callback = || {
        Some(Callback {
            pool: props.u64("PoolId")?,
            task: props.u64("TaskId")?,
            function: props.u64("CallbackFunction")?,
        })
    };
    Some(match opcode {
        32 => Event::Queued(callback()?),
        34 => Event::Started(callback()?),
        35 => Event::Stopped(callback()?),
        36 => Event::Cancelled(callback()?),
        42 => Event::TimerSet { timer: props.u64("Timer")? },
        48 => Event::TimerExpired { timer: props.u64("Timer")? },
        47 => Event::TimersDone,
        43 => Event::TimerCancelled { timer: props.u64("Timer")? },
        _ => return None,
    })
}

impl Pools {
    /// The Windows thread pool's callbacks and timers: work handed between threads.
    pub(crate) fn apply_threadpool(&mut self, head: &Head, e: Event) {
        let (Some(pid), Some(tid)) = (Head::known(head.pid), Head::known(head.tid)) else { return };
        let p = self;
        match e {
            Event::Queued(c) => p.callback_queued(head, pid, c),
            Event::Started(c) => p.callback_started(pid, tid, c),
            Event::Stopped(c) => p.callback_stopped(pid, tid, c),
            Event::Cancelled(c) => p.callback_cancelled(pid, c),
            Event::TimerSet { timer } => p.timer_set(head, pid, timer),
            Event::TimerExpired { timer } => p.timer_expired(pid, tid, timer),
            Event::TimersDone => p.timers_done(tid),
            Event::TimerCancelled { timer } => p.timer_cancelled(pid, timer),
        }
    }
}
