//! A request's call stacks stitched across threads: its own stack (Last),
//! the stacks that queued the work it ran in, hand-off by hand-off, back to
//! the oldest one found (First), the ones between (Middle), and all of them
//! with each hand-off named (Full).
//!
//! A work item that re-queues itself leaves the same stack many times in a
//! row; such a repeated cycle is kept once and the next title says how many
//! stacks were left out.

use nettrail_stacks::{Code, Frames, Symbols};

use crate::model::Network;
use crate::pools::{Hop, Origin};

/// One stack of a stitched chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainStack {
    /// Frames, innermost first (empty: the trace has no stack for it).
    pub frames: Vec<String>,
    pub pid: Option<u32>,
    /// The thread the stack was taken on.
    pub thread: Option<u32>,
    /// When its event was logged (raw session clock): where a timeline
    /// draws the hand-off from.
    pub raw: u64,
    /// How the work left this stack for the next (newer) one: the kind of
    /// hand-off and the thread that ran it. `None` for the request's own.
    pub handed_over: Option<(crate::pools::PoolKind, Option<u32>)>,
    /// Stacks of a repeated cycle left out after this one.
    pub omitted: usize,
}

/// The chain of one request, oldest stack first.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Stitched {
    pub stacks: Vec<ChainStack>,
}

impl Stitched {
    /// The oldest stack: the code that first started the work.
    pub fn first(&self) -> &[String] {
        self.stacks.first().map_or(&[], |s| &s.frames)
    }

    /// The request's own stack.
    pub fn last(&self) -> &[String] {
        self.stacks.last().map_or(&[], |s| &s.frames)
    }

    /// The hand-off into stack `i` (from stack `i - 1`), as a title line.
    pub fn title(&self, i: usize) -> Option<String> {
        let from = self.stacks.get(i.checked_sub(1)?)?;
        let (kind, ran_on) = from.handed_over?;
        let queued = from.thread.map_or("?".to_string(), |t| t.to_string());
        let ran = ran_on.map_or("?".to_string(), |t| t.to_string());
        let omitted = match from.omitted {
            0 => String::new(),
            n => format!(", {n} repeated stack(s) omitted"),
        };
        Some(format!("[{}: queued on thread {queued}, ran on thread {ran}{omitted}]", kind.name()))
    }

    /// The stacks between First and Last, each after the title of the
    /// hand-off into it, then the title of the hand-off into Last: every
    /// hand-off of the chain is named. Empty when nothing is between.
    pub fn middle(&self) -> Vec<String> {
        let n = self.stacks.len();
        if n < 3 {
            return Vec::new();
        }
        let mut out: Vec<String> = (1..n - 1).flat_map(|i| self.titled(i)).collect();
        out.extend(self.title(n - 1));
        out
    }

    /// Every stack, each after the title of the hand-off into it.
    pub fn full(&self) -> Vec<String> {
        (0..self.stacks.len()).flat_map(|i| self.titled(i)).collect()
    }

    fn titled(&self, i: usize) -> Vec<String> {
        let mut out: Vec<String> = self.title(i).into_iter().collect();
        match self.stacks.get(i) {
            Some(s) if s.frames.is_empty() => out.push("[missing stack]".to_string()),
            Some(s) => out.extend(s.frames.iter().cloned()),
            None => {}
        }
        out
    }
}

/// Removes the longest run of a repeated cycle (`a b c d e f d e f d e f g`
/// → `a b c d e f g`), then does the same on both sides; the element before
/// the removed run counts what went.
fn collapse<T: PartialEq>(items: &mut Vec<(T, usize)>) {
    let n = items.len();
    let mut best: Option<(usize, usize, usize)> = None; // (start, period, removed)
    for start in 0..n {
        for period in 1..=(n - start) / 2 {
            let mut repeats = 1;
            while start + (repeats + 1) * period <= n
                && (0..period).all(|k| items[start + k].0 == items[start + repeats * period + k].0)
            {
                repeats += 1;
            }
            let removed = (repeats - 1) * period;
            if removed > 0 && best.is_none_or(|b| removed > b.2) {
                best = Some((start, period, removed));
            }
        }
    }
    let Some((start, period, removed)) = best else { return };
    let tail: Vec<(T, usize)> = items.drain(start + period + removed..).collect();
    items.truncate(start + period);
    if let Some(last) = items.last_mut() {
        last.1 += removed;
    }
    let mut left: Vec<(T, usize)> = items.drain(..start).collect();
    collapse(&mut left);
    let mut right = tail;
    collapse(&mut right);
    left.append(items);
    left.extend(right);
    *items = left;
}

/// One step of a chain: its frames (`None`: no stack in the trace) and hop.
/// Steps are the same when their frames are: that is what a cycle repeats.
struct Step<'h> {
    frames: Option<Vec<u64>>,
    hop: &'h Hop,
}

impl PartialEq for Step<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.frames == other.frames
    }
}

impl Network {
    /// The stitched stacks of something started by one of `started_by`
    /// (candidates in order of preference: the first whose chain has a
    /// stack is used). `None` when no stack of the chain is in the trace.
    pub fn stitch(&self, started_by: &[Origin], code: &Code, symbols: &impl Symbols) -> Option<Stitched> {
        let frames = Frames { modules: &code.modules, symbols };
        for origin in started_by {
            let hops: Vec<Hop> = self.pools.chain(origin);
            // Oldest first.
            let mut steps: Vec<(Step, usize)> = hops
                .iter()
                .rev()
                .map(|hop| (Step { frames: hop.origin.stack.as_ref().and_then(|r| code.stacks.resolve(r)), hop }, 0))
                .collect();
            if steps.iter().all(|(s, _)| s.frames.is_none()) {
                continue;
            }
            // The request's own stack is never collapsed away.
            let own = steps.pop();
            collapse(&mut steps);
            steps.extend(own);
            let stacks = steps
                .into_iter()
                .map(|(step, omitted)| {
                    let origin = &step.hop.origin;
                    let pid = origin.pid.unwrap_or(0);
                    ChainStack {
                        frames: step.frames.map(|f| frames.stack(pid, &f, origin.raw)).unwrap_or_default(),
                        pid: origin.pid,
                        thread: origin.tid,
                        raw: origin.raw,
                        handed_over: step.hop.handed_over,
                        omitted,
                    }
                })
                .collect();
            return Some(Stitched { stacks });
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::collapse;

    fn run(s: &str) -> String {
        let mut items: Vec<(char, usize)> = s.chars().map(|c| (c, 0)).collect();
        collapse(&mut items);
        items.iter().map(|(c, n)| if *n > 0 { format!("{c}{n}") } else { c.to_string() }).collect()
    }

    #[test]
    fn cycles_collapse_with_their_counts() {
        assert_eq!(run("abcdefdefdefg"), "abcdef6g");
        assert_eq!(run("aaaab"), "a3b");
        assert_eq!(run("abc"), "abc");
        // Repeats on both sides of the longest run collapse too.
        assert_eq!(run("xyxyzqrqrqrqr"), "xy2zqr6");
    }
}
