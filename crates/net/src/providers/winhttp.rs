//! WinHTTP's own work items: ThreadAction events that WinHttp and WebIO both
//! log (59996 queue, with the queuing thread's stack; 59998 start and 59997
//! stop on the thread that runs it; 59995 cancel). `EtwQueueActionType`
//! says what the item is: 1 timer, 2 work item, 3 overlapped I/O, 4 wait
//! callback. WinHttp's I/O completions and WebIO's timers repeat what the
//! other provider logs, and are skipped.

use crate::event::{Head, Props};
use crate::pools::Pools;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    Queue,
    Start,
    Stop,
    Cancel,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    step: Step,
    context: u64,
}

impl Event {
    pub(crate) fn is_queue(&self) -> bool {
        self.step == Step::Queue
    }
}

const TIMER: u32 = 1;
const OVERLAPPED_IO: u32 = 3;

/// A ThreadAction event of WinHttp (`from_webio` false) or WebIO.
pub(crate) fn extract(id: u16, props: &Props<'_, '_>, from_webio: bool) -> Option<Event> {
    let step = match id {
        59996 => Step::Queue,
        59998 => Step::Start,
        59997 => Step::Stop,
        59995 => Step::Cancel,
        _ => return None,
    };
    let kind = props.u32("EtwQueueActionType");
    let skipped = if from_webio { TIMER } else { OVERLAPPED_IO };
    if kind == Some(skipped) {
        return None;
    }
    Some(Event { step, context: props.u64("Context")? })
}

impl Pools {
    /// WinHTTP's work items: requests handed to its worker threads.
    pub(crate) fn apply_winhttp_action(&mut self, head: &Head, e: Event) {
        let (Some(pid), Some(tid)) = (Head::known(head.pid), Head::known(head.tid)) else { return };
        let p = self;
        match e.step {
            Step::Queue => p.action_queued(head, pid, e.context),
            Step::Start => p.action_started(head, pid, tid, e.context),
            Step::Stop | Step::Cancel => p.action_stopped(pid, tid, e.context),
        }
    }
}
