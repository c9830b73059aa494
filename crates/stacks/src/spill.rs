//! What a scan holds until its join, in bounded memory.
//!
//! The join needs the parts of one event's stack side by side, but a user
//! part can be logged long after its kernel part, in another CPU's buffer;
//! module loads are counted per module in time order, and a trace's rundown
//! repeats them. So all of it is held until the scan ends: in memory that
//! grows with the trace (46 M stack parts and tens of millions of module
//! marks in a 10 GB trace). Here items are sorted a run at a time; each full
//! run goes to an unnamed temporary file, and the join reads the runs back
//! merged in order. Memory stays at one run whatever the trace's length; a
//! trace whose items fit one run never touches the disk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, Write};

/// An item a [`SortedRuns`] holds: its sort key, and its form in a run's file.
pub(crate) trait Spill: Sized {
    type Key: Ord + Copy;
    fn key(&self) -> Self::Key;
    /// Appends the file form to `out`.
    fn encode(&self, out: &mut Vec<u8>);
    /// Reads back what [`Spill::encode`] wrote.
    fn decode(input: &mut impl Read) -> std::io::Result<Self>;
}

/// Items a run holds by default: 32 to 40 MB of stack parts or module
/// marks, and half that again while the run is sorted (module facts, with
/// their paths, run a quarter of it).
pub(crate) const RUN_ITEMS: usize = 1 << 20;

/// Items in file order, taken as the scan goes, given back sorted by key
/// (equal keys in file order).
#[derive(Debug)]
pub(crate) struct SortedRuns<T> {
    /// Items not yet in a run, in file order.
    pending: Vec<T>,
    runs: Vec<Run<T>>,
    run_items: usize,
}

/// A run of items sorted by key.
#[derive(Debug)]
enum Run<T> {
    File {
        file: File,
        items: usize,
    },
    /// Kept when no temporary file could be written.
    Memory(Vec<T>),
}

fn write_run<T: Spill>(items: &[T]) -> std::io::Result<File> {
    let mut out = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
    let mut bytes = Vec::new();
    for item in items {
        bytes.clear();
        item.encode(&mut bytes);
        out.write_all(&bytes)?;
    }
    let mut file = out.into_inner().map_err(std::io::IntoInnerError::into_error)?;
    file.rewind()?;
    Ok(file)
}

impl<T: Spill> SortedRuns<T> {
    pub(crate) fn new(run_items: usize) -> SortedRuns<T> {
        SortedRuns { pending: Vec::new(), runs: Vec::new(), run_items: run_items.max(1) }
    }

    /// Takes items that follow those taken before in file order.
    pub(crate) fn add(&mut self, items: &mut Vec<T>) {
        if !self.pending.is_empty() && self.pending.len() + items.len() > self.run_items {
            self.end_run();
        }
        if self.pending.is_empty() {
            // Taken whole, not copied: a trace read in one run hands over
            // all its items at once.
            std::mem::swap(&mut self.pending, items);
        } else {
            self.pending.append(items);
        }
    }

    fn end_run(&mut self) {
        let mut run = std::mem::take(&mut self.pending);
        // Stable: items of one key keep their file order.
        run.sort_by_key(T::key);
        match write_run(&run) {
            Ok(file) => {
                self.runs.push(Run::File { file, items: run.len() });
                run.clear();
                self.pending = run;
            }
            Err(_) => self.runs.push(Run::Memory(run)),
        }
    }

    /// Every item, sorted by key (equal keys in file order).
    pub(crate) fn into_sorted(mut self) -> Sorted<T> {
        self.pending.sort_by_key(T::key);
        if self.runs.is_empty() {
            return Sorted::Memory(self.pending.into_iter());
        }
        self.runs.push(Run::Memory(std::mem::take(&mut self.pending)));
        let mut sources: Vec<Source<T>> = self.runs.into_iter().map(Source::new).collect();
        let mut heads = BinaryHeap::with_capacity(sources.len());
        let mut next = Vec::with_capacity(sources.len());
        for (i, source) in sources.iter_mut().enumerate() {
            let item = source.next();
            if let Some(item) = &item {
                heads.push(Reverse((item.key(), i)));
            }
            next.push(item);
        }
        Sorted::Merged { sources, heads, next }
    }
}

/// One run, read back in order.
#[derive(Debug)]
pub(crate) enum Source<T> {
    File { reader: BufReader<File>, left: usize, unread: usize },
    Memory(std::vec::IntoIter<T>),
}

impl<T: Spill> Source<T> {
    fn new(run: Run<T>) -> Source<T> {
        match run {
            Run::File { file, items } => {
                Source::File { reader: BufReader::with_capacity(1 << 16, file), left: items, unread: 0 }
            }
            Run::Memory(items) => Source::Memory(items.into_iter()),
        }
    }

    fn next(&mut self) -> Option<T> {
        match self {
            Source::Memory(items) => items.next(),
            Source::File { reader, left, unread } => {
                if *left == 0 {
                    return None;
                }
                match T::decode(reader) {
                    Ok(item) => {
                        *left -= 1;
                        Some(item)
                    }
                    Err(_) => {
                        *unread += std::mem::take(left);
                        None
                    }
                }
            }
        }
    }
}

/// The items of a [`SortedRuns`], sorted by key.
#[derive(Debug)]
pub(crate) enum Sorted<T: Spill> {
    Memory(std::vec::IntoIter<T>),
    /// Runs merged: the heap holds each run's next key and the run's
    /// index (the earlier run first on a tie, which keeps file order).
    Merged {
        sources: Vec<Source<T>>,
        heads: BinaryHeap<Reverse<(T::Key, usize)>>,
        next: Vec<Option<T>>,
    },
}

impl<T: Spill> Sorted<T> {
    /// Items a temporary file failed to give back (they are then missing from the join).
    pub(crate) fn unread(&self) -> usize {
        match self {
            Sorted::Memory(_) => 0,
            Sorted::Merged { sources, .. } => sources
                .iter()
                .map(|s| match s {
                    Source::File { unread, .. } => *unread,
                    Source::Memory(_) => 0,
                })
                .sum(),
        }
    }
}

impl<T: Spill> Iterator for Sorted<T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        match self {
            Sorted::Memory(items) => items.next(),
            Sorted::Merged { sources, heads, next } => {
                let Reverse((_, i)) = heads.pop()?;
                let item = next[i].take();
                next[i] = sources[i].next();
                if let Some(n) = &next[i] {
                    heads.push(Reverse((n.key(), i)));
                }
                item
            }
        }
    }
}

/// Reads of a spilled item's little-endian fields.
pub(crate) fn read_u64(input: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0; 8];
    input.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

pub(crate) fn read_u32(input: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0; 4];
    input.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

pub(crate) fn read_u8(input: &mut impl Read) -> std::io::Result<u8> {
    let mut b = [0; 1];
    input.read_exact(&mut b)?;
    Ok(b[0])
}

/// A string as a length and its UTF-8 bytes.
pub(crate) fn write_str(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u32).to_le_bytes());
    out.extend_from_slice(s.as_bytes());
}

pub(crate) fn read_string(input: &mut impl Read) -> std::io::Result<String> {
    let len = read_u32(input)? as usize;
    let mut bytes = Vec::new();
    input.take(len as u64).read_to_end(&mut bytes)?;
    if bytes.len() != len {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    String::from_utf8(bytes).map_err(|_| std::io::ErrorKind::InvalidData.into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stacks::{Holds, Part};

    fn part(at: u64, tid: u32, holds: Holds) -> Part {
        Part { at, tid, pid: 7, holds }
    }

    #[test]
    fn runs_merge_back_in_key_order_keeping_file_order_within_a_key() {
        // Parts in file order: event (5, 1)'s kernel part in the first run,
        // its user part two runs later; ties broken by file order.
        let file_order = [
            part(5, 1, Holds::Frames(0, 3)),
            part(9, 2, Holds::Key { key: 0xffff_8000_1234_0000, user: false }),
            part(2, 1, Holds::Frames(3, 4)),
            part(5, 2, Holds::Frames(4, 6)),
            part(9, 2, Holds::Key { key: 0x7ff0_0000, user: true }),
            part(1, 3, Holds::Frames(6, 7)),
            part(5, 1, Holds::Frames(7, 9)),
        ];
        let mut expected = file_order.to_vec();
        expected.sort_by_key(Part::key);
        for run_items in [1, 2, 3, 100] {
            let mut store = SortedRuns::new(run_items);
            for chunk in file_order.chunks(2) {
                store.add(&mut chunk.to_vec());
            }
            let spilled = store.runs.len();
            let sorted = store.into_sorted();
            assert_eq!(sorted.collect::<Vec<_>>(), expected, "runs of {run_items}");
            assert_eq!(spilled > 0, run_items < file_order.len(), "runs of {run_items}");
        }
    }

    #[test]
    fn every_fact_survives_its_file_form() {
        use crate::modules::{Fact, PdbId};
        let pdb = PdbId { name: "C:\\b\\ntdll.pdb".into(), guid: nettrail_etl::Guid::from_bytes_le([7; 16]), age: 3 };
        for fact in [
            Fact::Loaded {
                at: 1,
                pid: 2,
                base: 3,
                size: 4,
                path: "\\Device\\ntdll.dll".into(),
                rundown: true,
                time_date_stamp: Some(5),
                pdb: Some(pdb.clone()),
            },
            Fact::Loaded {
                at: u64::MAX,
                pid: u32::MAX,
                base: 0,
                size: 0,
                path: String::new(),
                rundown: false,
                time_date_stamp: None,
                pdb: None,
            },
            Fact::Unloaded { at: 6, pid: 7, base: 8 },
            Fact::Identity { at: 9, base: 10, time_date_stamp: u32::MAX },
            Fact::Pdb { at: 11, base: 12, pdb },
            Fact::MethodLoaded { at: 13, pid: 14, start: 15, size: 16, name: "N.T.Méthode".into(), rundown: true },
            Fact::MethodUnloaded { at: 17, pid: 18, start: 19 },
        ] {
            let mut bytes = Vec::new();
            fact.encode(&mut bytes);
            let mut input = &bytes[..];
            assert_eq!(Fact::decode(&mut input).unwrap(), fact);
            assert!(input.is_empty(), "{fact:?}: read to its end");
            // Cut short: an error, never a wrong fact.
            assert!(Fact::decode(&mut &bytes[..bytes.len() - 1]).is_err(), "{fact:?}");
        }
    }

    #[test]
    fn a_part_survives_its_file_form() {
        for p in [
            part(u64::MAX, u32::MAX, Holds::Frames(u32::MAX, 0)),
            part(0, 0, Holds::Key { key: u64::MAX, user: true }),
            part(1, 2, Holds::Key { key: 3, user: false }),
        ] {
            let mut bytes = Vec::new();
            p.encode(&mut bytes);
            assert_eq!(Part::decode(&mut &bytes[..]).unwrap(), p);
        }
    }
}
