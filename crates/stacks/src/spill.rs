//! What a scan holds until its join, in bounded memory.
//!
//! The join needs the parts of one event's stack side by side, but a user
//! part can be logged long after its kernel part, in another CPU's buffer;
//! module loads are counted per module in time order, and a trace's rundown
//! repeats them. So all of it is held until the scan ends: in memory that
//! grows with the trace (46 M stack parts and tens of millions of module
//! marks in a 10 GB trace). Here each buffer's items come sorted (its scan
//! sorts them); a run's worth of them is merged into an unnamed temporary
//! file, and the join reads the runs and the batches not yet written back
//! merged in order. Memory stays at one run whatever the trace's length; a
//! trace whose items fit one run never touches the disk.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::collections::binary_heap::PeekMut;
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
    /// Items not yet in a run: each batch taken, sorted, in file order. Kept
    /// apart and merged when read, not gathered into one list and sorted
    /// again: that list and the sort's scratch would be fresh memory, which
    /// costs more than the merge on a trace of a few megabytes.
    pending: Vec<Vec<T>>,
    pending_items: usize,
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

/// Sorts items taken in file order by key, stably (items of one key keep
/// their file order); quick when they are sorted already.
pub(crate) fn sort<T: Spill>(items: &mut [T]) {
    if !items.is_sorted_by_key(T::key) {
        items.sort_by_key(T::key);
    }
}

/// A merge's heap of each source's next key and the source's index (the
/// earlier source first on a tie, which keeps file order) after the source
/// on top gave its item: its `next` key takes its place, or it leaves.
fn move_on<K: Ord>(heads: &mut BinaryHeap<Reverse<(K, usize)>>, next: Option<K>) {
    let Some(mut head) = heads.peek_mut() else { return };
    match next {
        Some(key) => head.0.0 = key,
        None => drop(PeekMut::pop(head)),
    }
}

/// Writes the items of sorted `batches` merged in key order (ties in batch order).
fn write_run<T: Spill>(batches: &[Vec<T>]) -> std::io::Result<File> {
    let mut out = BufWriter::with_capacity(1 << 16, tempfile::tempfile()?);
    let mut bytes = Vec::new();
    let mut next = vec![0; batches.len()];
    let mut heads: BinaryHeap<_> =
        batches.iter().enumerate().filter_map(|(i, b)| Some(Reverse((b.first()?.key(), i)))).collect();
    while let Some(&Reverse((_, i))) = heads.peek() {
        bytes.clear();
        batches[i][next[i]].encode(&mut bytes);
        out.write_all(&bytes)?;
        next[i] += 1;
        move_on(&mut heads, batches[i].get(next[i]).map(T::key));
    }
    let mut file = out.into_inner().map_err(std::io::IntoInnerError::into_error)?;
    file.rewind()?;
    Ok(file)
}

impl<T: Spill> SortedRuns<T> {
    pub(crate) fn new(run_items: usize) -> SortedRuns<T> {
        SortedRuns { pending: Vec::new(), pending_items: 0, runs: Vec::new(), run_items: run_items.max(1) }
    }

    /// Takes items that follow those taken before in file order (sorted
    /// here unless they come sorted: a scan sorts its own on its thread).
    pub(crate) fn add(&mut self, items: &mut Vec<T>) {
        if items.is_empty() {
            return;
        }
        if self.pending_items > 0 && self.pending_items + items.len() > self.run_items {
            self.end_run();
        }
        let mut batch = std::mem::take(items);
        sort(&mut batch);
        self.pending_items += batch.len();
        self.pending.push(batch);
    }

    /// Writes the pending batches, merged, to a temporary file (kept in
    /// memory, merged into one list, if no file could be written).
    fn end_run(&mut self) {
        let mut batches = std::mem::take(&mut self.pending);
        let items = std::mem::take(&mut self.pending_items);
        match write_run(&batches) {
            Ok(file) => self.runs.push(Run::File { file, items }),
            Err(_) => {
                let mut run: Vec<T> = batches.iter_mut().flat_map(std::mem::take).collect();
                sort(&mut run);
                self.runs.push(Run::Memory(run));
            }
        }
    }

    /// Every item, sorted by key (equal keys in file order).
    pub(crate) fn into_sorted(self) -> Sorted<T> {
        let files = self.runs.into_iter().map(Source::new);
        let batches = self.pending.into_iter().map(|b| Source::Memory(b.into_iter()));
        Sorted::merged(files.chain(batches).collect())
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
    /// Runs and batches merged: the heap holds each one's next key and its
    /// index (the earlier first on a tie, which keeps file order).
    Merged {
        sources: Vec<Source<T>>,
        heads: BinaryHeap<Reverse<(T::Key, usize)>>,
        next: Vec<Option<T>>,
    },
}

impl<T: Spill> Sorted<T> {
    /// The items of `sources` (each sorted) merged by key, ties in source order.
    fn merged(mut sources: Vec<Source<T>>) -> Sorted<T> {
        match sources.as_mut_slice() {
            [] => return Sorted::Memory(Vec::new().into_iter()),
            [Source::Memory(items)] => return Sorted::Memory(std::mem::take(items)),
            _ => {}
        }
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
                let &Reverse((_, i)) = heads.peek()?;
                let item = next[i].take();
                next[i] = sources[i].next();
                move_on(heads, next[i].as_ref().map(T::key));
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
    fn a_load_mark_survives_its_file_form() {
        use crate::modules::LoadMark;
        let mut identified = LoadMark::load(1, 2, u64::MAX, 3);
        identified.pdb = true;
        for mark in [identified, LoadMark::load(u64::MAX, 0, 0, u32::MAX), LoadMark::unload(4, 5, 6)] {
            let mut bytes = Vec::new();
            mark.encode(&mut bytes);
            let back = LoadMark::decode(&mut &bytes[..]).unwrap();
            assert_eq!(back, mark);
            assert_eq!(back.size(), mark.size());
        }
        assert_eq!(LoadMark::unload(4, 5, 6).size(), None);
        assert_eq!(LoadMark::load(1, 2, 0, 3).size(), Some(0), "a load of size 0 is no unload");
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
