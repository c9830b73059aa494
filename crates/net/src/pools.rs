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
//!
//! An item lives as long as something can still reach it: a thread running
//! it, a pool's table, or an origin kept by the model (a request's, or a later
//! item's). A long trace creates items without end; those nothing reaches
//! any more are freed, so the tracker's memory follows what is open, not the
//! trace's length.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use nettrail_decode::fasthash::FastMap;
use nettrail_stacks::StackRef;

use crate::event::Head;

/// A handed-over item, shared by everything that links to it, freed with
/// the last link. Two are equal when they are the same item. Shared across
/// threads (not `Rc`): the model is built on a thread of its own and handed
/// back; one thread uses it at a time, so the lock is never contended.
#[derive(Clone)]
pub struct ItemRef(Arc<Mutex<Item>>);

impl ItemRef {
    fn new(item: Item) -> ItemRef {
        ItemRef(Arc::new(Mutex::new(item)))
    }

    /// The item, to read or change (its first thread, a better origin).
    pub fn get(&self) -> MutexGuard<'_, Item> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl PartialEq for ItemRef {
    fn eq(&self, other: &ItemRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ItemRef {}

/// The kind only: the item's own origin links further back, and printing
/// the whole chain would be as long as the chain.
impl std::fmt::Debug for ItemRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ItemRef").field(&self.get().kind).finish()
    }
}

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
    pub link: Option<ItemRef>,
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

/// Freed one by one: dropping the last link to a long chain of items (work
/// that re-queued itself thousands of times) must not recurse once per item.
impl Drop for Item {
    fn drop(&mut self) {
        let mut next = self.queued.link.take();
        while let Some(ItemRef(shared)) = next {
            next = Arc::into_inner(shared)
                .and_then(|item| item.into_inner().unwrap_or_else(PoisonError::into_inner).queued.link.take());
        }
    }
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
    /// The items running on each thread, innermost last.
    running: FastMap<u32, Vec<ItemRef>>,
    /// Callbacks queued and not yet finished, by (pid, pool, task).
    callbacks: FastMap<(u32, u64, u64), ItemRef>,
    /// Callback functions ever queued: the starts of others (I/O completions,
    /// queued by nobody) are not work someone handed over.
    queued_functions: FastMap<(u32, u64), ()>,
    timers: FastMap<(u32, u64), ItemRef>,
    /// Timers expiring on a thread (until the expiration batch ends).
    expiring: FastMap<u32, Vec<ItemRef>>,
    actions: FastMap<(u32, u64), ItemRef>,
}

/// A callback's identity in the Windows thread pool's events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Callback {
    pub pool: u64,
    pub task: u64,
    pub function: u64,
}

impl Pools {
    /// What runs on a thread now (the innermost item).
    pub fn current(&self, tid: Option<u32>) -> Option<ItemRef> {
        self.running.get(&tid?)?.last().cloned()
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

    fn add(kind: PoolKind, queued: Origin) -> ItemRef {
        ItemRef::new(Item { kind, queued, ran_on: None })
    }

    fn start(&mut self, id: &ItemRef, tid: u32) {
        let stack = self.running.entry(tid).or_default();
        let kind = id.get().kind;
        // A thread that runs pool work was not created for one task.
        if let Some(base) = stack.first()
            && base.get().kind == PoolKind::Thread
            && kind != PoolKind::Thread
        {
            stack.remove(0);
        }
        stack.push(id.clone());
        id.get().ran_on.get_or_insert(tid);
    }

    fn stop(&mut self, id: &ItemRef, tid: u32) {
        if let Some(stack) = self.running.get_mut(&tid)
            && let Some(i) = stack.iter().rposition(|x| x == id)
        {
            stack.remove(i);
        }
    }

    pub(crate) fn callback_queued(&mut self, head: &Head, pid: u32, c: Callback) {
        let id = Self::add(PoolKind::ThreadPool, self.origin(head));
        self.callbacks.insert((pid, c.pool, c.task), id);
        self.queued_functions.insert((pid, c.function), ());
    }

    pub(crate) fn callback_started(&mut self, pid: u32, tid: u32, c: Callback) {
        if !self.queued_functions.contains_key(&(pid, c.function)) {
            return;
        }
        if let Some(id) = self.callbacks.get(&(pid, c.pool, c.task)).cloned() {
            self.start(&id, tid);
        }
    }

    pub(crate) fn callback_stopped(&mut self, pid: u32, tid: u32, c: Callback) {
        if let Some(id) = self.callbacks.get(&(pid, c.pool, c.task)).cloned() {
            self.stop(&id, tid);
        }
    }

    pub(crate) fn callback_cancelled(&mut self, pid: u32, c: Callback) {
        self.callbacks.remove(&(pid, c.pool, c.task));
    }

    pub(crate) fn timer_set(&mut self, head: &Head, pid: u32, timer: u64) {
        let id = Self::add(PoolKind::Timer, self.origin(head));
        self.timers.insert((pid, timer), id);
    }

    /// A timer fires on a thread: its callbacks run there until the
    /// expiration batch ends (and what they queue links to the timer).
    pub(crate) fn timer_expired(&mut self, pid: u32, tid: u32, timer: u64) {
        if let Some(id) = self.timers.get(&(pid, timer)).cloned() {
            self.start(&id, tid);
            self.expiring.entry(tid).or_default().push(id);
        }
    }

    pub(crate) fn timers_done(&mut self, tid: u32) {
        for id in self.expiring.remove(&tid).unwrap_or_default() {
            self.stop(&id, tid);
        }
    }

    pub(crate) fn timer_cancelled(&mut self, pid: u32, timer: u64) {
        self.timers.remove(&(pid, timer));
    }

    pub(crate) fn action_queued(&mut self, head: &Head, pid: u32, context: u64) {
        // Windows logs a start before its queue now and then: the queue on
        // another thread completes the item already running.
        if let Some(id) = self.actions.get(&(pid, context))
            && id.get().queued.tid.is_none()
        {
            let origin = self.origin(head);
            id.get().queued = origin;
            return;
        }
        let id = Self::add(PoolKind::WinHttp, self.origin(head));
        self.actions.insert((pid, context), id);
    }

    pub(crate) fn action_started(&mut self, head: &Head, pid: u32, tid: u32, context: u64) {
        let id = match self.actions.get(&(pid, context)) {
            Some(id) => id.clone(),
            None => {
                // Started before its queue was logged (or queued before the trace).
                let queued = Origin { raw: head.raw, pid: Some(pid), tid: None, stack: None, link: None };
                let id = Self::add(PoolKind::WinHttp, queued);
                self.actions.insert((pid, context), id.clone());
                id
            }
        };
        self.start(&id, tid);
    }

    pub(crate) fn action_stopped(&mut self, pid: u32, tid: u32, context: u64) {
        if let Some(id) = self.actions.remove(&(pid, context)) {
            self.stop(&id, tid);
        }
    }

    /// A thread created by another of the same process: the new thread runs
    /// for whoever created it until it turns out to be a pool thread.
    pub(crate) fn thread_created(&mut self, head: &Head, tid: u32) {
        let id = ItemRef::new(Item { kind: PoolKind::Thread, queued: self.origin(head), ran_on: Some(tid) });
        self.running.insert(tid, vec![id]);
    }

    pub(crate) fn thread_ended(&mut self, tid: u32) {
        self.running.remove(&tid);
        self.expiring.remove(&tid);
    }

    /// The hand-offs behind an origin, the origin's own step first.
    pub fn chain(&self, origin: &Origin) -> Vec<Hop> {
        let mut hops = vec![Hop { origin: origin.clone(), handed_over: None }];
        let mut link = origin.link.clone();
        while let Some(id) = link {
            if hops.len() >= MAX_HOPS {
                break;
            }
            let item = id.get();
            hops.push(Hop { origin: item.queued.clone(), handed_over: Some((item.kind, item.ran_on)) });
            link = item.queued.link.clone();
        }
        hops
    }
}

/// Hand-offs whose bookkeeping lives with their provider (Office's pools).
impl Pools {
    /// Work queued by the event `head`: linked to what ran on its thread then.
    pub(crate) fn queue(&mut self, kind: PoolKind, head: &Head) -> ItemRef {
        Self::add(kind, self.origin(head))
    }

    /// Work queued where the chain cannot be followed further back.
    pub(crate) fn queue_unlinked(&mut self, kind: PoolKind, head: &Head) -> ItemRef {
        Self::add(kind, Origin { link: None, ..self.origin(head) })
    }

    pub(crate) fn has_stack(&self, id: &ItemRef) -> bool {
        id.get().queued.stack.is_some()
    }

    /// Takes `head` as where an item was queued, if its own event had no stack.
    pub(crate) fn requeue_if_stackless(&mut self, id: &ItemRef, head: &Head) {
        if !self.has_stack(id) && head.stack.is_some() {
            let origin = self.origin(head);
            id.get().queued = origin;
        }
    }

    /// The item runs on `tid` (again, for work that is resubmitted).
    pub(crate) fn run(&mut self, id: &ItemRef, tid: u32) {
        self.start(id, tid);
    }

    pub(crate) fn finish(&mut self, id: &ItemRef, tid: u32) {
        self.stop(id, tid);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Weak;

    use nettrail_etl::Guid;

    use super::*;

    fn head(raw: u64, tid: u32) -> Head {
        Head {
            time: raw as i64,
            raw,
            pid: Some(4242),
            tid: Some(tid),
            activity: Guid::ZERO,
            related: Guid::ZERO,
            stack: None,
        }
    }

    fn weak(pools: &Pools, tid: u32) -> Weak<Mutex<Item>> {
        Arc::downgrade(&pools.current(Some(tid)).expect("an item runs on the thread").0)
    }

    #[test]
    fn an_item_lives_while_an_origin_reaches_it_and_no_longer() {
        let mut pools = Pools::default();
        // Thread 10 creates thread 11, whose event is kept (a request's origin).
        pools.thread_created(&head(1, 10), 11);
        let created = weak(&pools, 11);
        let kept = pools.origin(&head(2, 11));
        pools.thread_created(&head(3, 10), 12);
        let forgotten = weak(&pools, 12);
        pools.thread_ended(11);
        pools.thread_ended(12);
        assert!(forgotten.upgrade().is_none(), "nothing reaches thread 12's item once it ended");
        assert!(created.upgrade().is_some(), "the kept origin still links to thread 11's item");
        let chain = pools.chain(&kept);
        assert_eq!(chain.len(), 2);
        assert_eq!(chain[1].handed_over, Some((PoolKind::Thread, Some(11))));
        assert_eq!(chain[1].origin.raw, 1);
        drop(chain);
        drop(kept);
        assert!(created.upgrade().is_none(), "freed with the last origin that reached it");
    }

    #[test]
    fn a_chain_of_a_million_hand_offs_is_freed_without_recursing() {
        // Each thread creates the next while it runs its own item: every
        // item links to the one before. Dropped recursively, a chain this
        // long would overflow the test thread's stack.
        let mut pools = Pools::default();
        let n = 1_000_000u32;
        for tid in 1..=n {
            pools.thread_created(&head(u64::from(tid), tid), tid + 1);
            pools.thread_ended(tid);
        }
        let last = weak(&pools, n + 1);
        let origin = pools.origin(&head(u64::from(n) + 1, n + 1));
        assert_eq!(pools.chain(&origin).len(), MAX_HOPS, "followed as far as MAX_HOPS");
        drop(origin);
        pools.thread_ended(n + 1);
        assert!(last.upgrade().is_none());
    }
}
