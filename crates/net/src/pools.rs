//! Work handed from one thread to another: thread-pool callbacks and timers,
//! WinHTTP's internal work items, threads created for a task. Each item
//! remembers where it was queued (the event whose stack shows who queued it)
//! and what was running on the queuing thread then: following those links
//! from a network request walks back, hand-off by hand-off, to the code that
//! started it.
//!
//! "Running" is tracked per thread as a stack of items (callbacks of
//! different pools nest): a callback from its start to its stop, a timer
//! from its expiration to the end of the expiration batch, a WinHTTP action
//! from its start to its stop, a created thread from its creation until it
//! runs pool work (then it is a pool thread, not a task's own thread).

use nettrail_decode::fasthash::FastMap;
use nettrail_stacks::StackRef;

use crate::event::Head;

pub type ItemId = u32;

/// Who handed the work over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// A Windows thread-pool callback (work, wait or I/O item).
    ThreadPool,
    /// A Windows thread-pool timer.
    Timer,
    /// A work item of WinHTTP's own pool (WinHttp and WebIO ThreadAction events).
    WinHttp,
    /// A thread created for the task.
    Thread,
    /// An Office thread-pool worker or timer.
    OfficeThreadPool,
    /// A callback posted to an Office dispatch queue.
    OfficeDispatchQueue,
    /// A task of Office's idle manager.
    OfficeIdle,
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::ThreadPool => "Windows thread pool",
            PoolKind::Timer => "Windows thread-pool timer",
            PoolKind::WinHttp => "WinHTTP work item",
            PoolKind::Thread => "new thread",
            PoolKind::OfficeThreadPool => "Office thread pool",
            PoolKind::OfficeDispatchQueue => "Office dispatch queue",
            PoolKind::OfficeIdle => "Office idle task",
        }
    }
}

/// Where something began: its event (time, process, thread, stack) and
/// the work item that was running on that thread then.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub raw: u64,
    pub pid: Option<u32>,
    pub tid: Option<u32>,
    pub stack: Option<StackRef>,
    pub link: Option<ItemId>,
}

/// One handed-over piece of work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub kind: PoolKind,
    /// Where it was queued (the thread that queued it, and its stack).
    pub queued: Origin,
    /// The thread that ran it (the first, if several did).
    pub ran_on: Option<u32>,
}

/// Steps back from a request to its origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hop {
    /// The stack of this step's event (the request's own for the first).
    pub origin: Origin,
    /// How the work reached the previous (later) step: the item's kind and
    /// the thread it ran on. `None` for the request's own step.
    pub handed_over: Option<(PoolKind, Option<u32>)>,
}

/// Hops beyond this are a cycle the links did not break (they cannot form
/// one, but a damaged trace is no reason to loop).
const MAX_HOPS: usize = 256;

#[derive(Debug, Default)]
pub struct Pools {
    items: Vec<Item>,
    /// The items running on each thread, innermost last.
    running: FastMap<u32, Vec<ItemId>>,
    /// Callbacks queued and not yet finished, by (pid, pool, task).
    callbacks: FastMap<(u32, u64, u64), ItemId>,
    /// Callback functions ever queued: the starts of others (I/O completions,
    /// queued by nobody) are not work someone handed over.
    queued_functions: FastMap<(u32, u64), ()>,
    timers: FastMap<(u32, u64), ItemId>,
    /// Timers expiring on a thread (until the expiration batch ends).
    expiring: FastMap<u32, Vec<ItemId>>,
    actions: FastMap<(u32, u64), ItemId>,
}

/// A callback's identity in the Windows thread pool's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Callback {
    pub pool: u64,
    pub task: u64,
    pub function: u64,
}

impl Pools {
    pub fn item(&self, id: ItemId) -> Option<&Item> {
        self.items.get(id as usize)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// What runs on a thread now (the innermost item).
    pub fn current(&self, tid: Option<u32>) -> Option<ItemId> {
        self.running.get(&tid?)?.last().copied()
    }

    /// The origin of an event: its place, and what was running there.
    pub fn origin(&self, head: &Head) -> Origin {
        Origin {
            raw: head.raw,
            pid: Head::known(head.pid),
            tid: Head::known(head.tid),
            stack: head.stack.clone(),
            link: self.current(Head::known(head.tid)),
        }
    }

    fn add(&mut self, kind: PoolKind, queued: Origin) -> ItemId {
        let id = self.items.len() as ItemId;
        self.items.push(Item { kind, queued, ran_on: None });
        id
    }

    fn start(&mut self, id: ItemId, tid: u32) {
        let stack = self.running.entry(tid).or_default();
        // A thread that runs pool work was not created for one task.
        if let Some(&base) = stack.first()
            && self.items[base as usize].kind == PoolKind::Thread
            && self.items[id as usize].kind != PoolKind::Thread
        {
            stack.remove(0);
        }
        stack.push(id);
        self.items[id as usize].ran_on.get_or_insert(tid);
    }

    fn stop(&mut self, id: ItemId, tid: u32) {
        if let Some(stack) = self.running.get_mut(&tid)
            && let Some(i) = stack.iter().rposition(|&x| x == id)
        {
            stack.remove(i);
        }
    }

    pub(crate) fn callback_queued(&mut self, head: &Head, pid: u32, c: Callback) {
        let origin = self.origin(head);
        let id = self.add(PoolKind::ThreadPool, origin);
        self.callbacks.insert((pid, c.pool, c.task), id);
        self.queued_functions.insert((pid, c.function), ());
    }

    pub(crate) fn callback_started(&mut self, pid: u32, tid: u32, c: Callback) {
        if !self.queued_functions.contains_key(&(pid, c.function)) {
            return;
        }
        if let Some(&id) = self.callbacks.get(&(pid, c.pool, c.task)) {
            self.start(id, tid);
        }
    }

    pub(crate) fn callback_stopped(&mut self, pid: u32, tid: u32, c: Callback) {
        if let Some(&id) = self.callbacks.get(&(pid, c.pool, c.task)) {
            self.stop(id, tid);
        }
    }

    pub(crate) fn callback_cancelled(&mut self, pid: u32, c: Callback) {
        self.callbacks.remove(&(pid, c.pool, c.task));
    }

    pub(crate) fn timer_set(&mut self, head: &Head, pid: u32, timer: u64) {
        let origin = self.origin(head);
        let id = self.add(PoolKind::Timer, origin);
        self.timers.insert((pid, timer), id);
    }

    /// A timer fires on a thread: its callbacks run there until the
    /// expiration batch ends (and what they queue links to the timer).
    pub(crate) fn timer_expired(&mut self, pid: u32, tid: u32, timer: u64) {
        if let Some(&id) = self.timers.get(&(pid, timer)) {
            self.start(id, tid);
            self.expiring.entry(tid).or_default().push(id);
        }
    }

    pub(crate) fn timers_done(&mut self, tid: u32) {
        for id in self.expiring.remove(&tid).unwrap_or_default() {
            self.stop(id, tid);
        }
    }

    pub(crate) fn timer_cancelled(&mut self, pid: u32, timer: u64) {
        self.timers.remove(&(pid, timer));
    }

    pub(crate) fn action_queued(&mut self, head: &Head, pid: u32, context: u64) {
        // Windows logs a start before its queue now and then: the queue on
        // another thread completes the item already running.
        if let Some(&id) = self.actions.get(&(pid, context))
            && self.items[id as usize].queued.tid.is_none()
        {
            let origin = self.origin(head);
            self.items[id as usize].queued = origin;
            return;
        }
        let origin = self.origin(head);
        let id = self.add(PoolKind::WinHttp, origin);
        self.actions.insert((pid, context), id);
    }

    pub(crate) fn action_started(&mut self, head: &Head, pid: u32, tid: u32, context: u64) {
        let id = match self.actions.get(&(pid, context)) {
            Some(&id) => id,
            None => {
                // Started before its queue was logged (or queued before the trace).
                let queued = Origin { raw: head.raw, pid: Some(pid), tid: None, stack: None, link: None };
                let id = self.add(PoolKind::WinHttp, queued);
                self.actions.insert((pid, context), id);
                id
            }
        };
        self.start(id, tid);
    }

    pub(crate) fn action_stopped(&mut self, pid: u32, tid: u32, context: u64) {
        if let Some(id) = self.actions.remove(&(pid, context)) {
            self.stop(id, tid);
        }
    }

    /// A thread created by another of the same process: the new thread runs
    /// for whoever created it until it turns out to be a pool thread.
    pub(crate) fn thread_created(&mut self, head: &Head, tid: u32) {
        let origin = self.origin(head);
        let id = self.add(PoolKind::Thread, origin);
        self.running.insert(tid, vec![id]);
        self.items[id as usize].ran_on = Some(tid);
    }

    pub(crate) fn thread_ended(&mut self, tid: u32) {
        self.running.remove(&tid);
        self.expiring.remove(&tid);
    }

    /// The hand-offs behind an origin, the origin's own step first.
    pub fn chain(&self, origin: &Origin) -> Vec<Hop> {
        let mut hops = vec![Hop { origin: origin.clone(), handed_over: None }];
        let mut link = origin.link;
        while let Some(id) = link {
            let Some(item) = self.item(id) else { break };
            if hops.len() >= MAX_HOPS {
                break;
            }
            hops.push(Hop { origin: item.queued.clone(), handed_over: Some((item.kind, item.ran_on)) });
            link = item.queued.link;
        }
        hops
    }
}

/// Hand-offs whose bookkeeping lives with their provider (Office's pools).
impl Pools {
    /// Work queued by the event `head`: linked to what ran on its thread then.
    pub(crate) fn queue(&mut self, kind: PoolKind, head: &Head) -> ItemId {
        let origin = self.origin(head);
        self.add(kind, origin)
    }

    /// Work queued where the chain cannot be followed further back.
    pub(crate) fn queue_unlinked(&mut self, kind: PoolKind, head: &Head) -> ItemId {
        let origin = Origin { link: None, ..self.origin(head) };
        self.add(kind, origin)
    }

    pub(crate) fn has_stack(&self, id: ItemId) -> bool {
        self.item(id).is_some_and(|i| i.queued.stack.is_some())
    }

    /// Takes `head` as where an item was queued, if its own event had no stack.
    pub(crate) fn requeue_if_stackless(&mut self, id: ItemId, head: &Head) {
        if !self.has_stack(id) && head.stack.is_some() {
            let origin = self.origin(head);
            self.items[id as usize].queued = origin;
        }
    }

    /// The item runs on `tid` (again, for work that is resubmitted).
    pub(crate) fn run(&mut self, id: ItemId, tid: u32) {
        self.start(id, tid);
    }

    pub(crate) fn finish(&mut self, id: ItemId, tid: u32) {
        self.stop(id, tid);
    }
}
