//! An app's own steps: TraceLogging Start/Stop events (opcodes 1 and 2) of
//! a provider the model does not otherwise read — what a program using
//! `nettrail-tracelogging` logs for each `tracing` span. Per thread they
//! nest; a request is shown with the span its thread was in when it began.

use nettrail_decode::fasthash::FastMap;
use nettrail_etl::Record;
use nettrail_etl::extended::ExtType;

use crate::event::{Head, Time};

/// A span's edge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event {
    pub name: String,
    pub start: bool,
}

/// Whether a record of an unknown provider is an app's span edge.
pub(crate) fn is_span_edge(record: &Record<'_>) -> bool {
    matches!(record.opcode, 1 | 2) && record.extended.find(ExtType::EVENT_SCHEMA_TL).is_some()
}

pub(crate) fn extract(record: &Record<'_>, name: Option<&str>) -> Option<Event> {
    Some(Event { name: name?.to_string(), start: record.opcode == 1 })
}

/// A closed (or, at the trace's end, still open) span.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Span {
    /// Outermost first: `sync_feed › fetch`.
    path: String,
    start: Time,
    end: Time,
}

/// Spans per (process, thread).
#[derive(Debug, Default)]
pub struct Spans {
    open: FastMap<(u32, u32), Vec<(String, Span)>>,
    closed: FastMap<(u32, u32), Vec<Span>>,
}

impl Spans {
    pub(crate) fn apply(&mut self, head: &Head, e: Event) {
        let (Some(pid), Some(tid)) = (Head::known(head.pid), head.tid) else { return };
        let open = self.open.entry((pid, tid)).or_default();
        if e.start {
            let path = match open.last() {
                Some((_, parent)) => format!("{} › {}", parent.path, e.name),
                None => e.name.clone(),
            };
            open.push((e.name, Span { path, start: head.time, end: Time::MAX }));
        } else if let Some(i) = open.iter().rposition(|(name, _)| *name == e.name) {
            // Spans left open inside this one end with it.
            for (_, mut span) in open.drain(i..).rev() {
                span.end = head.time;
                self.closed.entry((pid, tid)).or_default().push(span);
            }
        }
    }

    /// The innermost span of a thread that covers `t`.
    pub(crate) fn at(&self, (pid, tid): (u32, u32), t: Time) -> Option<String> {
        let covers = |s: &&Span| s.start <= t && t < s.end;
        let closed = self.closed.get(&(pid, tid)).into_iter().flatten();
        let open = self.open.get(&(pid, tid)).into_iter().flatten().map(|(_, s)| s);
        closed.chain(open).filter(covers).max_by_key(|s| s.start).map(|s| s.path.clone())
    }
}
