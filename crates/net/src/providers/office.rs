//! Office's own ways of handing work to other threads (netblame.md §2.10 to
//! §2.12): its thread pool (Microsoft-Office-ThreadPool: worker objects
//! created with the creator's stack, timers submitted with the submitter's,
//! run between WorkerStartExec and WorkerEndExec), its dispatch queues
//! (OfficeDispatchQueue: callbacks posted with the poster's stack, run by a
//! queue's invoke on some thread, one CallbackContextInvoke after another)
//! and its idle manager (Microsoft-Office-Events: tasks queued with a stack,
//! registered on the main thread, executed when the app is idle).
//!
//! Office's manifests are not shipped with nettrail: these events decode from
//! the metadata WPR's merge embeds (or a manifest given with `--manifest`),
//! and are read by field name.

use nettrail_decode::fasthash::FastMap;

use crate::event::{Head, Props};
use crate::pools::Pools;
use crate::pools::{ItemRef, PoolKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Event {
    /// Thread pool: a worker object created (32) or a timer submitted (62).
    WorkerCreated {
        worker: u64,
    },
    TimerSubmitted {
        worker: u64,
    },
    WorkerDestroyed {
        worker: u64,
    },
    WorkerStarted {
        worker: u64,
    },
    WorkerEnded {
        worker: u64,
    },
    /// Dispatch queue: a callback posted to a queue.
    Posted {
        queue: u64,
        callback: u64,
    },
    /// A queue starts running its callbacks on this thread, runs one, ends.
    InvokeStarted {
        queue: u64,
    },
    CallbackInvoked {
        queue: u64,
        callback: u64,
    },
    InvokeEnded,
    /// Idle manager: a task added (its cookie is not logged: Office counts
    /// them per process), registered, executed, deregistered; the end of an
    /// idle period on the thread.
    IdleTaskAdded,
    IdleTaskRegistered {
        id: u32,
        cookie: u64,
    },
    IdleTaskExecuted {
        id: u32,
        cookie: u64,
    },
    IdleTaskDeregistered {
        id: u32,
        cookie: u64,
    },
    IdleEnded,
}

impl Event {
    /// Events whose stack shows who handed the work over.
    pub(crate) fn queues_work(&self) -> bool {
        matches!(
            self,
            Event::WorkerCreated { .. }
                | Event::TimerSubmitted { .. }
                | Event::Posted { .. }
                | Event::IdleTaskAdded
                | Event::IdleTaskRegistered { .. }
        )
    }
}

/// Microsoft-Office-ThreadPool.
pub(crate) fn extract_thread_pool(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    Some(match id {
        32 => Event::WorkerCreated { worker: props.u64("worker")? },
        33 => Event::WorkerDestroyed { worker: props.u64("pointer")? },
        62 => Event::TimerSubmitted { worker: props.u64("pointer")? },
        40 => Event::WorkerStarted { worker: props.u64("worker")? },
        41 => Event::WorkerEnded { worker: props.u64("worker")? },
        _ => return None,
    })
}

/// OfficeDispatchQueue: posts of the concurrent, sequential, UI and
/// limited-concurrent queues, and the invokes of every kind of queue.
pub(crate) fn extract_dispatch_queue(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let queue = || props.u64("queue");
    Some(match id {
        65 | 99 | 104 | 121 | 133 => Event::Posted { queue: queue()?, callback: props.u64("callback")? },
        66 | 101 | 113 | 119 | 130 => Event::InvokeStarted { queue: queue()? },
        56 => Event::CallbackInvoked { queue: queue()?, callback: props.u64("callback")? },
        67 | 102 | 114 | 120 | 131 => Event::InvokeEnded,
        _ => return None,
    })
}

/// IdleUpdateQueued's flag for a task being added.
const CHANGE_ADD_TASK: u32 = 0x1;

/// Microsoft-Office-Events: the idle manager's events.
pub(crate) fn extract_idle_manager(id: u16, props: &Props<'_, '_>) -> Option<Event> {
    let task = || Some((props.u32("dwID")?, props.u64("cookie")?));
    Some(match id {
        50 if props.u32("grfUpdateType")? == CHANGE_ADD_TASK => Event::IdleTaskAdded,
        36 => task().map(|(id, cookie)| Event::IdleTaskRegistered { id, cookie })?,
        44 => task().map(|(id, cookie)| Event::IdleTaskExecuted { id, cookie })?,
        37 => task().map(|(id, cookie)| Event::IdleTaskDeregistered { id, cookie })?,
        40 => Event::IdleEnded,
        _ => return None,
    })
}

/// What Office's pools have open, per process.
#[derive(Debug, Default)]
pub(crate) struct Office {
    workers: FastMap<(u32, u64), ItemRef>,
    /// The latest post of each (process, queue, callback), and whether it ran.
    posts: FastMap<(u32, u64, u64), (ItemRef, bool)>,
    /// Each thread's queues being invoked, innermost last, with the post running.
    invoking: FastMap<u32, Vec<(u64, Option<ItemRef>)>>,
    /// Idle tasks added so far per process (the next one's cookie is one more),
    /// and whether the count is known to have started with the process.
    cookies: FastMap<u32, (u64, bool)>,
    added: FastMap<(u32, u64), ItemRef>,
    idle_tasks: FastMap<(u32, u32, u64), ItemRef>,
    executing: FastMap<u32, ItemRef>,
}

impl Office {
    /// Office's pools, queues and idle tasks: work it hands to `pools`.
    pub(crate) fn apply(&mut self, head: &Head, e: Event, pools: &mut Pools) {
        let (Some(pid), Some(tid)) = (Head::known(head.pid), Head::known(head.tid)) else { return };
        let o = self;
        match e {
            Event::WorkerCreated { worker } => {
                let id = pools.queue(PoolKind::OfficeThreadPool, head);
                o.workers.insert((pid, worker), id);
            }
            Event::TimerSubmitted { worker } => match o.workers.get(&(pid, worker)) {
                // The submit's stack stands in for a creation logged without one.
                Some(id) => pools.requeue_if_stackless(id, head),
                None => {
                    // Created before the trace: the submit is where it began.
                    let id = pools.queue(PoolKind::OfficeThreadPool, head);
                    o.workers.insert((pid, worker), id);
                }
            },
            Event::WorkerDestroyed { worker } => {
                o.workers.remove(&(pid, worker));
            }
            Event::WorkerStarted { worker } => {
                if let Some(id) = o.workers.get(&(pid, worker)) {
                    pools.run(id, tid);
                }
            }
            Event::WorkerEnded { worker } => {
                if let Some(id) = o.workers.get(&(pid, worker)) {
                    pools.finish(id, tid);
                }
            }
            Event::Posted { queue, callback } => {
                let id = pools.queue(PoolKind::OfficeDispatchQueue, head);
                o.posts.insert((pid, queue, callback), (id, false));
            }
            Event::InvokeStarted { queue } => o.invoking.entry(tid).or_default().push((queue, None)),
            Event::CallbackInvoked { queue, callback } => {
                // Queue 0 repeats a thread-pool worker's own run; another
                // queue's invoke nested in this one is that queue's business.
                let Some(top) = o.invoking.get_mut(&tid).and_then(|v| v.last_mut()) else { return };
                if queue == 0 || top.0 != queue {
                    return;
                }
                let Some((id, ran)) = o.posts.get_mut(&(pid, queue, callback)) else { return };
                if *ran {
                    return;
                }
                *ran = true;
                // Nothing marks a callback's end: the next one's start does.
                if let Some(previous) = top.1.replace(id.clone()) {
                    pools.finish(&previous, tid);
                }
                pools.run(id, tid);
            }
            Event::InvokeEnded => {
                if let Some((_, Some(id))) = o.invoking.get_mut(&tid).and_then(|v| v.pop()) {
                    pools.finish(&id, tid);
                }
            }
            Event::IdleTaskAdded => {
                let count = o.cookies.entry(pid).or_default();
                count.0 += 1;
                let id = pools.queue(PoolKind::OfficeIdle, head);
                o.added.insert((pid, count.0), id);
            }
            Event::IdleTaskRegistered { id: task, cookie } => {
                if cookie == 0 {
                    return; // already deregistered
                }
                let count = o.cookies.entry(pid).or_default();
                // Cookie 1 registered: the trace saw the process's first
                // task, so the counted cookies are Office's own.
                count.1 |= cookie == 1;
                let added = if count.1 { o.added.remove(&(pid, cookie)) } else { None };
                let id = match added {
                    Some(id) if pools.has_stack(&id) => id,
                    // Registered on the main thread by its idle loop: its own
                    // stack leads nowhere further back.
                    _ => pools.queue_unlinked(PoolKind::OfficeIdle, head),
                };
                o.idle_tasks.insert((pid, task, cookie), id);
            }
            Event::IdleTaskExecuted { id: task, cookie } => {
                // A task that was re-queued ends when the next one starts.
                if let Some(previous) = o.executing.remove(&tid) {
                    pools.finish(&previous, tid);
                }
                if let Some(id) = o.idle_tasks.get(&(pid, task, cookie)) {
                    pools.run(id, tid);
                    o.executing.insert(tid, id.clone());
                }
            }
            Event::IdleTaskDeregistered { id: task, cookie } => {
                if let Some(id) = o.idle_tasks.remove(&(pid, task, cookie)) {
                    if o.executing.get(&tid) == Some(&id) {
                        o.executing.remove(&tid);
                    }
                    pools.finish(&id, tid);
                }
            }
            Event::IdleEnded => {
                if let Some(id) = o.executing.remove(&tid) {
                    pools.finish(&id, tid);
                }
            }
        }
    }
}
