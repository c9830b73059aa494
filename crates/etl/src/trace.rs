//! An opened trace: the header event, the index of buffers, and each
//! buffer's records in file order.

use std::collections::HashMap;

use crate::buffer::{BUFFER_HEADER_SIZE, BufferHeader, BufferWalk, MAX_BUFFER_SIZE, Session};
use crate::clock::Clock;
use crate::error::{Error, ErrorKind, Location, Result};
use crate::file::TraceFile;
use crate::logfile::{LogfileHeader, fixed_size};
use crate::record::{Record, parse_record, peek_timestamp};
use crate::stored::Stored;
use crate::xpress;

/// What the reader knows of one buffer before reading its records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BufferInfo {
    pub index: u32,
    /// File offset of the buffer header.
    pub offset: u64,
    pub header: BufferHeader,
    /// Bytes present in the file (fewer than `header.buffer_size` when truncated).
    pub stored_len: usize,
    pub truncated: bool,
    /// Raw timestamp of the first record; `None` for a buffer without records.
    pub first_timestamp: Option<u64>,
}

impl BufferInfo {
    /// What the walk found; the first record's time is read separately.
    fn new(b: &crate::buffer::Buffer<'_>) -> BufferInfo {
        BufferInfo {
            index: b.index,
            offset: b.offset,
            header: b.header,
            stored_len: b.raw.len(),
            truncated: b.truncated,
            first_timestamp: None,
        }
    }

    pub fn location(&self, offset_in_buffer: usize) -> Location {
        Location {
            buffer_index: self.index,
            buffer_offset: self.offset,
            offset_in_buffer: u32::try_from(offset_in_buffer).unwrap_or(u32::MAX),
            compressed: self.header.is_compressed(),
        }
    }

    /// Bytes of the buffer after its records (0xFF fill or stale data).
    /// A compressed buffer stores none.
    pub fn unused_tail(&self) -> usize {
        if self.header.is_compressed() {
            0
        } else {
            (self.header.buffer_size as usize).saturating_sub(self.header.filled as usize)
        }
    }

    fn error(&self, offset_in_buffer: usize, kind: ErrorKind) -> Error {
        Error { location: self.location(offset_in_buffer), kind }
    }
}

/// A trace's buffers in file order, kept in 16 bytes each (a 10 GB trace
/// has a million buffers; a large index is kept in a mapped temporary
/// file): where each starts in the file and its first record's
/// time. The rest of a [`BufferInfo`] is read again from the buffer's
/// header, in the file, when asked for. A view: runs of buffers
/// ([`Trace::buffer_runs`]) are `Buffers` too.
#[derive(Clone, Copy, Debug)]
pub struct Buffers<'t> {
    data: &'t [u8],
    entries: Entries<'t>,
    /// Index of `entries[0]` among the trace's buffers.
    first: u32,
}

/// The buffers of a [`Buffers`] view, in file order.
#[derive(Clone, Debug)]
pub struct BufferIter<'t> {
    view: Buffers<'t>,
    positions: std::ops::Range<usize>,
}

impl Iterator for BufferIter<'_> {
    type Item = BufferInfo;

    fn next(&mut self) -> Option<BufferInfo> {
        self.positions.next().map(|p| self.view.info(p))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.positions.size_hint()
    }
}

impl DoubleEndedIterator for BufferIter<'_> {
    fn next_back(&mut self) -> Option<BufferInfo> {
        self.positions.next_back().map(|p| self.view.info(p))
    }
}

impl ExactSizeIterator for BufferIter<'_> {}

impl<'t> IntoIterator for Buffers<'t> {
    type Item = BufferInfo;
    type IntoIter = BufferIter<'t>;

    fn into_iter(self) -> BufferIter<'t> {
        self.iter()
    }
}

/// One buffer of the index.
#[derive(Clone, Copy, Debug)]
struct IndexEntry {
    /// File offset of the buffer header; [`IndexEntry::HAS_RECORDS`] set
    /// when it holds records, [`IndexEntry::COMPRESSED`] when it is compressed.
    offset: u64,
    /// The first record's raw timestamp; for a buffer without records, the
    /// previous buffer's (where the merge sorts it, so its errors surface
    /// near the events around it).
    time: u64,
}

impl IndexEntry {
    /// Bytes of an entry as stored: the offset word, then the time, little-endian.
    const SIZE: usize = 16;
    const HAS_RECORDS: u64 = 1 << 63;
    /// Known without reading the header again: looking for the compressed
    /// buffers must not touch every buffer's page (on an uncompressed trace
    /// that mapped the whole file back in).
    const COMPRESSED: u64 = 1 << 62;

    fn new(info: &BufferInfo, previous_time: u64) -> IndexEntry {
        let offset = info.offset | if info.header.is_compressed() { IndexEntry::COMPRESSED } else { 0 };
        match info.first_timestamp {
            Some(time) => IndexEntry { offset: offset | IndexEntry::HAS_RECORDS, time },
            None => IndexEntry { offset, time: previous_time },
        }
    }

    fn offset(&self) -> u64 {
        self.offset & !(IndexEntry::HAS_RECORDS | IndexEntry::COMPRESSED)
    }

    fn is_compressed(&self) -> bool {
        self.offset & IndexEntry::COMPRESSED != 0
    }

    fn first_timestamp(&self) -> Option<u64> {
        (self.offset & IndexEntry::HAS_RECORDS != 0).then_some(self.time)
    }

    fn append_to(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.time.to_le_bytes());
    }
}

/// Index entries as stored ([`IndexEntry::SIZE`] bytes each).
#[derive(Clone, Copy, Debug)]
struct Entries<'t>(&'t [u8]);

impl<'t> Entries<'t> {
    fn len(&self) -> usize {
        self.0.len() / IndexEntry::SIZE
    }

    fn get(&self, position: usize) -> Option<IndexEntry> {
        let at = position.checked_mul(IndexEntry::SIZE)?;
        let word = |i: usize| crate::bytes::u64_at(self.0, at + i);
        Some(IndexEntry { offset: word(0)?, time: word(8)? })
    }

    /// The entry at `position` (< `len`, which every caller checks).
    fn at(&self, position: usize) -> IndexEntry {
        self.get(position).unwrap_or(IndexEntry { offset: 0, time: 0 })
    }

    fn split_at(self, position: usize) -> (Entries<'t>, Entries<'t>) {
        let (a, b) = self.0.split_at((position * IndexEntry::SIZE).min(self.0.len()));
        (Entries(a), Entries(b))
    }
}

impl<'t> Buffers<'t> {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.len() == 0
    }

    /// The buffer at a position of this view.
    pub fn get(&self, position: usize) -> Option<BufferInfo> {
        (position < self.len()).then(|| self.info(position))
    }

    /// The buffer at `position` (< `len`).
    fn info(&self, position: usize) -> BufferInfo {
        let entry = self.entries.at(position);
        let offset = entry.offset();
        let rest = usize::try_from(offset).ok().and_then(|at| self.data.get(at..)).unwrap_or_default();
        // Buffers are indexed only where their header parsed.
        let header = BufferHeader::parse(rest).unwrap_or_default();
        let stored_len = rest.len().min(header.buffer_size as usize);
        BufferInfo {
            index: self.first + position as u32,
            offset,
            header,
            stored_len,
            truncated: stored_len < header.buffer_size as usize,
            first_timestamp: entry.first_timestamp(),
        }
    }

    /// The raw timestamp the merge orders a buffer by: its first record's,
    /// or for a buffer without records the previous buffer's.
    pub(crate) fn sort_time(&self, position: usize) -> Option<u64> {
        self.entries.get(position).map(|e| e.time)
    }

    pub fn iter(&self) -> BufferIter<'t> {
        BufferIter { view: *self, positions: 0..self.len() }
    }

    /// The compressed buffers, in file order (the others' headers are not read).
    fn compressed(&self) -> impl Iterator<Item = BufferInfo> + 't {
        let view = *self;
        (0..self.len()).filter(move |&p| view.entries.at(p).is_compressed()).map(move |p| view.info(p))
    }

    /// The buffers in parallel (rayon), each read from its header as it is taken.
    pub fn par_iter(&self) -> impl rayon::iter::IndexedParallelIterator<Item = BufferInfo> + 't {
        use rayon::prelude::*;
        let view = *self;
        (0..self.len()).into_par_iter().map(move |p| view.info(p))
    }

    /// The buffers in runs of `buffers` consecutive buffers (the last may be shorter).
    fn runs(self, buffers: usize) -> impl Iterator<Item = Buffers<'t>> {
        let mut rest = self;
        std::iter::from_fn(move || {
            let (run, after) = rest.entries.split_at(buffers.max(1));
            let run = Buffers { data: rest.data, entries: run, first: rest.first };
            rest = Buffers { data: rest.data, entries: after, first: rest.first + run.len() as u32 };
            (!run.is_empty()).then_some(run)
        })
    }
}

/// A parsed `.etl` file, borrowing its bytes.
#[derive(Debug)]
pub struct Trace<'data> {
    data: &'data [u8],
    /// The mapped file, when the trace was opened from one: pages of the
    /// buffers read are handed back as reading goes, so resident memory
    /// stays small on large traces.
    file: Option<&'data TraceFile>,
    header: LogfileHeader,
    header_timestamp: u64,
    clock: Clock,
    pointer_size: u8,
    /// What every buffer is checked against (the most a buffer holds).
    session: Session,
    index: Stored,
    /// The latest time a buffer's first record has.
    last_start: Option<u64>,
    /// The size from which tables are kept in temporary files ([`Stored::keep`]).
    mapped_from: usize,
    /// Damage the walk along the buffers found: skipped headers, duplicated
    /// buffers, buffers missing from the file. In file order.
    damage: Vec<Error>,
    notes: Vec<Note>,
    /// The first compressed buffers, decompressed when the trace was opened.
    expanded: Expanded,
}

/// Decompressed buffers kept between the passes of one command (a command
/// reads a trace two or three times: its metadata, the stacks or the
/// counts, the merge): the first compressed buffers of the file, up to
/// [`Trace::KEPT_BYTES`], decompressed in parallel when the trace is
/// opened into one anonymous mapping. One mapping, advised to use huge
/// pages, because first touches of fresh memory cost more than decompressing
/// on virtual machines (~3 µs a 4 KiB page against ~0.5 µs in 2 MiB pages):
/// a buffer per allocation made `info` on a compressed trace spend more in
/// page faults than in the decoder.
struct Expanded {
    bytes: Option<memmap2::Mmap>,
    /// Buffer index, start and length in `bytes`, in buffer order.
    kept: Vec<(u32, usize, usize)>,
    /// The errors that cut kept buffers short, by buffer index.
    errors: Vec<(u32, Error)>,
}

impl Expanded {
    /// Decompresses the first compressed `buffers` of `data` that fit in
    /// `keep` bytes (by the size each claims, within `limit`).
    fn new(data: &[u8], buffers: Buffers<'_>, limit: u32, keep: usize) -> Expanded {
        use rayon::prelude::*;
        let none = Expanded { bytes: None, kept: Vec::new(), errors: Vec::new() };
        if keep == 0 {
            return none;
        }
        let mut total = 0usize;
        let wanted: Vec<(BufferInfo, usize)> = buffers
            .compressed()
            .map(|b| (b, if b.header.filled <= limit { b.header.filled as usize } else { 0 }))
            .take_while(|&(_, size)| {
                total += size;
                total <= keep
            })
            .collect();
        if wanted.is_empty() {
            return none;
        }
        let total: usize = wanted.iter().map(|&(_, size)| size).sum();
        // Huge pages back only the whole, aligned 2 MiB extents of a
        // mapping: the buffers start at one, and the mapping ends past the
        // last one they reach (else up to 4 MiB at the ends faulted in 4 KiB
        // pages: two thirds of `info`'s page faults on a compressed trace).
        // A few small buffers go in 4 KiB pages: a huge page would be 2 MiB
        // to clear for them (~0.2 ms of `info`'s ~2.3 ms on the corpus'
        // traces of one or two compressed buffers).
        let extent = 2 << 20;
        let huge = cfg!(unix) && total >= 2 * extent;
        let length = if huge { total.next_multiple_of(extent) + extent } else { total.max(1) };
        let Ok(mut map) = memmap2::MmapMut::map_anon(length) else { return none };
        #[cfg(unix)]
        if huge {
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        let skip = if huge { map.as_ptr().align_offset(extent).min(length - total) } else { 0 };
        let mut rest: &mut [u8] = &mut map[skip..skip + total];
        let mut slices = Vec::with_capacity(wanted.len());
        for (info, size) in &wanted {
            let (slice, after) = std::mem::take(&mut rest).split_at_mut(*size);
            slices.push((info, slice));
            rest = after;
        }
        let done: Vec<(u32, usize, Option<Error>)> = slices
            .into_par_iter()
            .map_init(Vec::new, |history, (info, slice)| {
                // Decoded in place: never more than the buffer claims.
                let (len, error) = decompress_buffer_to(data, info, limit, slice, history);
                (info.index, len, error)
            })
            .collect();
        let Ok(bytes) = map.make_read_only() else { return none };
        let mut kept = Vec::with_capacity(done.len());
        let mut errors = Vec::new();
        let mut start = skip;
        for ((index, len, error), &(_, size)) in done.into_iter().zip(&wanted) {
            kept.push((index, start, len));
            if let Some(e) = error {
                errors.push((index, e));
            }
            start += size;
        }
        Expanded { bytes: Some(bytes), kept, errors }
    }

    /// A kept buffer's bytes and the error that cut them short.
    fn get(&self, info: &BufferInfo) -> Option<(&[u8], Option<Error>)> {
        let bytes = self.bytes.as_deref()?;
        let i = self.kept.binary_search_by_key(&info.index, |&(index, _, _)| index).ok()?;
        let (_, start, len) = self.kept[i];
        let error =
            self.errors.binary_search_by_key(&info.index, |(index, _)| *index).ok().map(|i| self.errors[i].1.clone());
        Some((bytes.get(start..start + len)?, error))
    }
}

impl std::fmt::Debug for Expanded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expanded").field("kept", &self.kept.len()).finish()
    }
}

/// Something about the file worth saying that is not damage.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Note {
    /// The file holds more buffers than the header counts, or the header
    /// counts none: the session was not stopped cleanly (the header is
    /// finished when the session stops).
    NotClosedCleanly { written: u32, found: u32, end_time: i64 },
    /// Two different buffers carry the same sequence number.
    SequenceReused { sequence: u64, offsets: (u64, u64) },
    /// A trace header field with a value no session has; it is shown, never used to size anything.
    ImplausibleHeaderField { field: &'static str, value: u64, expected: &'static str },
}

impl std::fmt::Display for Note {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Note::NotClosedCleanly { written: 0, end_time: 0, .. } => {
                f.write_str("the session was not stopped cleanly: the header has no end time and no buffer count")
            }
            Note::NotClosedCleanly { written, found, .. } => write!(
                f,
                "the file holds {found} buffers where the header counts {written}: the session was not stopped cleanly"
            ),
            Note::SequenceReused { sequence, offsets: (a, b) } => write!(
                f,
                "the buffers at offsets {a:#x} and {b:#x} differ but carry the same sequence number {sequence}"
            ),
            Note::ImplausibleHeaderField { field, value, expected } => {
                write!(
                    f,
                    "the trace header's {field} is {value} ({value:#x}); expected {expected}: implausible, not used"
                )
            }
        }
    }
}

/// Gathers the file ranges of buffers a reader is done with, and releases
/// them ([`Trace::release`]) in large contiguous steps, the rest when dropped.
#[derive(Debug)]
pub struct Releaser<'t, 'd> {
    trace: &'t Trace<'d>,
    pending: Option<std::ops::Range<usize>>,
    /// The step released last: released again with the next one when they
    /// meet, for the pages of it mapped again meanwhile (a page fault maps
    /// the pages around it, and reading on at a step's end maps some of it:
    /// on a 10 GB trace these strays added up to tens of MB).
    released: Option<std::ops::Range<usize>>,
}

impl<'t, 'd> Releaser<'t, 'd> {
    /// Releases are made in steps of at least this many bytes.
    const STEP: usize = 16 << 20;

    pub fn new(trace: &'t Trace<'d>) -> Self {
        Releaser { trace, pending: None, released: None }
    }

    /// The reader is done with this buffer.
    pub fn done(&mut self, info: &BufferInfo) {
        let start = info.offset as usize;
        self.done_range(start..start + info.header.buffer_size as usize);
    }

    /// The reader is done with these buffers (one header read, the last's:
    /// reading each header again, after the step before was released,
    /// would map some of its pages again).
    pub fn done_all(&mut self, buffers: Buffers<'_>) {
        let (Some(first), Some(last)) = (buffers.get(0), buffers.len().checked_sub(1).and_then(|l| buffers.get(l)))
        else {
            return;
        };
        self.done_range(first.offset as usize..last.offset as usize + last.header.buffer_size as usize);
    }

    fn done_range(&mut self, range: std::ops::Range<usize>) {
        if self.trace.file.is_none() {
            return;
        }
        match &mut self.pending {
            Some(p) if p.end == range.start => p.end = range.end,
            Some(p) if range.end == p.start => p.start = range.start,
            _ => {
                self.flush();
                self.pending = Some(range);
            }
        }
        if self.pending.as_ref().is_some_and(|p| p.len() >= Self::STEP) {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if let Some(p) = self.pending.take() {
            let start = match &self.released {
                Some(last) if last.end == p.start => last.start,
                _ => p.start,
            };
            self.trace.release(start..p.end);
            // The index entries read since the last step (a few pages).
            self.trace.release_index();
            self.released = Some(p);
        }
    }
}

impl Drop for Releaser<'_, '_> {
    fn drop(&mut self) {
        self.flush();
    }
}

/// The bytes of one buffer as records are read from them: the buffer image
/// from its header up to the end of its data, decompressed if need be, and the
/// error that cut it short, if any.
#[derive(Debug)]
pub struct BufferContents<'a> {
    pub bytes: &'a [u8],
    /// Reported after the buffer's readable records.
    pub error: Option<Error>,
}

impl<'data> Trace<'data> {
    /// Reads the header event and indexes every buffer. Fails only when the
    /// file has no readable trace header; damage later in the file is kept in
    /// [`Trace::damage`] and reported after the good buffers.
    pub fn parse(data: &'data [u8]) -> Result<Trace<'data>> {
        Trace::parse_from(data, None, Stored::MAPPED_FROM, Trace::KEPT_BYTES)
    }

    /// The most decompressed bytes [`Trace::open`] keeps between passes.
    pub const KEPT_BYTES: usize = 64 << 20;

    /// [`Trace::parse`] of a file's bytes; buffers read by this trace's
    /// readers (the merge, and [`Trace::contents`] users that hand them to a
    /// [`Releaser`]) give their pages back to the OS.
    pub fn open(file: &'data TraceFile) -> Result<Trace<'data>> {
        Trace::open_keeping(file, Trace::KEPT_BYTES)
    }

    /// [`Trace::open`], keeping at most `kept` bytes of decompressed buffers
    /// between passes (0: each pass decompresses the buffers it reads, into
    /// memory its threads reuse). Kept buffers spare a pass the decoder, and
    /// the merge (one thread) most of all; they cost fresh memory, which on
    /// a virtual machine can cost more to touch than decompressing (`info`,
    /// whose two passes run on every core, keeps none).
    pub fn open_keeping(file: &'data TraceFile, kept: usize) -> Result<Trace<'data>> {
        Trace::parse_from(file.bytes(), Some(file), Stored::MAPPED_FROM, kept)
    }

    /// `mapped_from`: the size from which the index and the merge's order are
    /// kept in temporary files (tests set it to hold both ways to each other).
    fn parse_from(
        data: &'data [u8],
        file: Option<&'data TraceFile>,
        mapped_from: usize,
        kept: usize,
    ) -> Result<Trace<'data>> {
        /// The walk hands back the pages of the headers it read in steps of this size.
        const RELEASE_STEP: usize = 16 << 20;
        let mut walk = BufferWalk::new(data);
        let not_a_trace = |kind: ErrorKind| Error {
            location: Location::default(),
            kind: crate::sniff::looks_like(data).map_or(kind, |looks_like| ErrorKind::NotATrace { looks_like }),
        };
        let too_small =
            || Error { location: Location::default(), kind: ErrorKind::FileTooSmall { len: data.len() as u64 } };
        let first = match walk.next() {
            None => return Err(not_a_trace(too_small().kind)),
            Some(Err(e)) => return Err(not_a_trace(e.kind)),
            Some(Ok(first)) => first,
        };
        let mut first_info = BufferInfo::new(&first);

        // The header event gives the pointer size, so read it with the widest default.
        let mut scratch = Vec::new();
        let contents = buffer_contents(data, &first_info, MAX_BUFFER_SIZE, &mut scratch);
        let mut records = BufferRecords::new(contents.bytes, &first_info, 8);
        let header_record = match records.next() {
            Some(Ok((_, record))) => record,
            Some(Err(e)) => return Err(not_a_trace(e.kind)),
            None => {
                let e = contents.error.unwrap_or_else(|| {
                    first_info.error(
                        BUFFER_HEADER_SIZE,
                        ErrorKind::MissingHeaderEvent { found: "an empty buffer".to_string() },
                    )
                });
                return Err(not_a_trace(e.kind));
            }
        };
        if !header_record.is_trace_header() {
            let e =
                first_info.error(BUFFER_HEADER_SIZE, ErrorKind::MissingHeaderEvent { found: header_record.describe() });
            return Err(Error { kind: not_a_trace(e.kind.clone()).kind, ..e });
        }
        let needed = fixed_size(header_record.pointer_size);
        let header = LogfileHeader::parse(header_record.payload, header_record.pointer_size).ok_or_else(|| {
            first_info
                .error(BUFFER_HEADER_SIZE, ErrorKind::ShortHeaderEvent { payload: header_record.payload.len(), needed })
        })?;
        let header_timestamp = header_record.timestamp;
        first_info.first_timestamp = Some(header_timestamp);
        let pointer_size = if header.pointer_size == 4 { 4 } else { header_record.pointer_size };
        let clock = header.clock(header_timestamp);
        let mut notes: Vec<Note> = header
            .implausible_fields()
            .into_iter()
            .map(|(field, value, expected)| Note::ImplausibleHeaderField { field, value, expected })
            .collect();
        let session = Session::from_buffer_size(header.buffer_size, header.buffers_written).unwrap_or_else(|| {
            infer_session(data, first_info.offset + first_info.stored_len as u64, header.buffers_written)
        });
        walk.set_session(session);

        // The index as stored (`Entries`), and its last entry.
        let mut index = Vec::new();
        let mut last = IndexEntry::new(&first_info, 0);
        last.append_to(&mut index);
        let mut count = 1u32;
        // The latest first-record time of a buffer (where the events end).
        let mut last_start = last.first_timestamp();
        let mut damage = Vec::new();
        // Sequence number → position in the index, to tell copies of a buffer.
        let mut by_sequence = SequenceNumbers::default();
        by_sequence.insert(first_info.header.sequence_number, 0);
        let mut released = 0;
        for buffer in walk {
            let b = match buffer {
                Ok(b) => b,
                Err(e) => {
                    damage.push(e);
                    continue;
                }
            };
            let mut info = BufferInfo::new(&b);
            info.index = count;
            match by_sequence.get(b.header.sequence_number) {
                Some(earlier) => {
                    let original = Buffers { data, entries: Entries(&index), first: 0 }.info(earlier);
                    if raw_buffer(data, &original) == b.raw {
                        let kind = ErrorKind::DuplicateBuffer {
                            sequence: b.header.sequence_number,
                            original_offset: original.offset,
                        };
                        damage.push(info.error(0, kind));
                        continue;
                    }
                    if notes.len() < MAX_NOTES {
                        notes.push(Note::SequenceReused {
                            sequence: b.header.sequence_number,
                            offsets: (original.offset, b.offset),
                        });
                    }
                }
                None => {
                    by_sequence.insert(b.header.sequence_number, count);
                }
            }
            info.first_timestamp = first_record_timestamp(b.raw, &info, &mut scratch);
            let at = info.offset as usize;
            last = IndexEntry::new(&info, last.time);
            last.append_to(&mut index);
            count += 1;
            last_start = last_start.max(last.first_timestamp());
            if let Some(file) = file
                && at - released >= RELEASE_STEP
            {
                file.release(released..at);
                released = at;
            }
        }
        if let Some(file) = file {
            file.release(released..data.len());
        }
        // Buffers in the file: those read, and those whose damaged header was skipped.
        let skipped: u32 = damage
            .iter()
            .map(|e| match e.kind {
                ErrorKind::Resynchronized { skipped, .. } => {
                    u32::try_from(skipped.div_ceil(u64::from(session.buffer_size))).unwrap_or(u32::MAX).max(1)
                }
                _ => 0,
            })
            .sum();
        let found = count.saturating_add(skipped);
        let circular = header.log_file_mode & 0x2 != 0;
        if header.buffers_written > found && !circular {
            let last_buffer = last_start.map(|t| clock.to_filetime(t));
            let location = Location {
                buffer_index: found,
                buffer_offset: data.len() as u64,
                offset_in_buffer: 0,
                compressed: false,
            };
            let kind = ErrorKind::MissingBuffers {
                written: header.buffers_written,
                found,
                session_end: header.end_time,
                last_buffer,
            };
            damage.push(Error { location, kind });
        } else if (header.buffers_written < found && !circular) || header.end_time == 0 {
            notes.push(Note::NotClosedCleanly { written: header.buffers_written, found, end_time: header.end_time });
        }
        drop(by_sequence);
        let index = Stored::keep(index, mapped_from);
        let expanded =
            Expanded::new(data, Buffers { data, entries: Entries(index.bytes()), first: 0 }, session.buffer_size, kept);
        // Finding the compressed buffers read every entry.
        index.release();
        Ok(Trace {
            data,
            file,
            header,
            header_timestamp,
            clock,
            pointer_size,
            session,
            index,
            last_start,
            mapped_from,
            damage,
            notes,
            expanded,
        })
    }

    /// Hands back the pages of the buffer index read so far, when it is kept
    /// in a temporary file (it is read from the file again when needed).
    pub(crate) fn release_index(&self) {
        self.index.release();
    }

    /// Keeps a table that grows with the number of buffers as the index is kept.
    pub(crate) fn keep_table(&self, bytes: Vec<u8>) -> Stored {
        Stored::keep(bytes, self.mapped_from)
    }

    /// Tells the OS these bytes will not be read again soon (only for a
    /// trace opened from a mapped file; the bytes stay readable). Each call
    /// is a system call: gather buffers with [`Releaser`] rather than
    /// releasing them one by one.
    pub fn release(&self, range: std::ops::Range<usize>) {
        if let Some(file) = self.file {
            file.release(range);
        }
    }

    pub fn data(&self) -> &'data [u8] {
        self.data
    }

    pub fn header(&self) -> &LogfileHeader {
        &self.header
    }

    /// Raw timestamp of the (first) header event: the clock's anchor.
    pub fn header_timestamp(&self) -> u64 {
        self.header_timestamp
    }

    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// Pointer size of the session (records may differ: WOW64 providers).
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }

    /// Every buffer, in file order.
    pub fn buffers(&self) -> Buffers<'_> {
        Buffers { data: self.data, entries: Entries(self.index.bytes()), first: 0 }
    }

    /// The latest time a buffer's first record has: where the trace's
    /// events end, to within a buffer (from the index: no buffer is read).
    pub fn last_buffer_start(&self) -> Option<u64> {
        self.last_start
    }

    /// Records read per run by the passes that read the trace in runs
    /// ([`Trace::buffer_runs`]; decompressed bytes, at most).
    pub const RUN_BYTES: usize = 32 << 20;

    /// Every buffer, in file order, in runs of consecutive buffers holding
    /// at most about `bytes` of records: as many buffers as `bytes` has room
    /// for at the session's buffer size (the most a buffer holds, once
    /// decompressed), at least one. A pass that searches a run in parallel
    /// and takes its findings in order before the next holds one run's
    /// findings, not the trace's; one that hands each run's pages back with
    /// one [`Releaser`] after the run gives them back in large steps
    /// (parallel jobs each releasing their own buffers leave released pages
    /// beside the ones still read, and a page fault maps the pages around it
    /// again). Runs are cut by count, not by what the headers say: reading a
    /// header maps its buffer's pages, which the run's readers would then
    /// wait for the caller to do, one buffer at a time.
    pub fn buffer_runs(&self, bytes: usize) -> impl Iterator<Item = Buffers<'_>> {
        self.buffers().runs(bytes / self.session.buffer_size.max(1) as usize)
    }

    /// Damage found along the chain of buffers (skipped headers, copies of
    /// buffers, buffers missing from the file), in file order. The damage
    /// inside buffers is found by reading their records.
    pub fn damage(&self) -> &[Error] {
        &self.damage
    }

    /// What is worth saying about the file that is not damage.
    pub fn notes(&self) -> &[Note] {
        &self.notes
    }

    /// The session every buffer is checked against.
    pub fn session(&self) -> Session {
        self.session
    }

    /// The bytes of a buffer, decompressing into `scratch` if it is
    /// compressed (or keeping them for the next reader, while there is room).
    pub fn contents<'s>(&'s self, info: &BufferInfo, scratch: &'s mut Vec<u8>) -> BufferContents<'s> {
        if !info.header.is_compressed() {
            return uncompressed_contents(self.data, info);
        }
        match self.expanded(info) {
            Some((bytes, error)) => BufferContents { bytes, error },
            None => buffer_contents(self.data, info, self.session.buffer_size, scratch),
        }
    }

    /// A compressed buffer's bytes and the error that cut them short, if
    /// they were kept when the trace was opened (else the reader
    /// decompresses them itself).
    pub(crate) fn expanded(&self, info: &BufferInfo) -> Option<(&[u8], Option<Error>)> {
        self.expanded.get(info)
    }

    /// Whether the buffers hold fewer than `bytes` bytes of records (read
    /// from their headers; a large trace's first few are enough to tell).
    pub fn holds_less_than(&self, bytes: u64) -> bool {
        let mut filled = 0;
        self.buffers().iter().all(|info| {
            filled += u64::from(info.header.filled);
            filled < bytes
        })
    }

    /// The records of a buffer's contents, in file order.
    pub fn records<'a>(&self, info: &BufferInfo, contents: &BufferContents<'a>) -> BufferRecords<'a> {
        BufferRecords::new(contents.bytes, info, self.pointer_size)
    }
}

fn raw_buffer<'d>(data: &'d [u8], info: &BufferInfo) -> &'d [u8] {
    let start = usize::try_from(info.offset).unwrap_or(usize::MAX);
    data.get(start..start.saturating_add(info.stored_len)).unwrap_or_default()
}

/// Which buffer (position in the index) carries each sequence number, to
/// tell a copy of a buffer from a new one. ETW numbers a session's buffers
/// in the order it writes them, so the numbers mostly rise along the file:
/// those are appended to a sorted list (12 bytes a buffer, where a hash map
/// took ~34 at a million buffers); the others go to a map.
#[derive(Default)]
struct SequenceNumbers {
    rising: Vec<u64>,
    positions: Vec<u32>,
    others: HashMap<u64, u32>,
}

impl SequenceNumbers {
    fn get(&self, sequence: u64) -> Option<usize> {
        let found = match self.rising.binary_search(&sequence) {
            Ok(i) => self.positions.get(i).copied(),
            Err(_) => self.others.get(&sequence).copied(),
        };
        found.map(|p| p as usize)
    }

    /// Records a number not seen before.
    fn insert(&mut self, sequence: u64, position: u32) {
        if self.rising.last().is_none_or(|&last| sequence > last) {
            self.rising.push(sequence);
            self.positions.push(position);
        } else {
            self.others.insert(sequence, position);
        }
    }
}

/// Notes kept at most (a file can repeat a sequence number in every buffer).
const MAX_NOTES: usize = 16;

/// The session of a trace whose header gives an impossible buffer size: the
/// size of the first data buffer when it is uncompressed (they all have the
/// session's size), else the largest ETW allows.
fn infer_session(data: &[u8], second_buffer: u64, buffers_written: u32) -> Session {
    let at = usize::try_from(second_buffer).unwrap_or(usize::MAX);
    data.get(at..)
        .and_then(BufferHeader::parse)
        .filter(|h| !h.is_compressed())
        .and_then(|h| Session::from_buffer_size(h.buffer_size, buffers_written))
        .unwrap_or(Session { buffer_size: MAX_BUFFER_SIZE, buffers_written })
}

/// `limit`: the most bytes a buffer of the session holds (a compressed
/// buffer claiming more is not expanded).
fn buffer_contents<'s>(data: &'s [u8], info: &BufferInfo, limit: u32, scratch: &'s mut Vec<u8>) -> BufferContents<'s> {
    if info.header.is_compressed() {
        let error = decompress_buffer(data, info, limit, scratch);
        BufferContents { bytes: scratch, error }
    } else {
        uncompressed_contents(data, info)
    }
}

/// The contents of an uncompressed buffer: a slice of the file.
pub(crate) fn uncompressed_contents<'d>(data: &'d [u8], info: &BufferInfo) -> BufferContents<'d> {
    let raw = raw_buffer(data, info);
    let h = &info.header;
    let filled = h.filled as usize;
    if filled == 0 {
        // Never filled (an empty or marker buffer): no records, no damage.
        return BufferContents { bytes: &[], error: None };
    }
    if filled < BUFFER_HEADER_SIZE || filled > h.buffer_size as usize {
        let error = info.error(0x30, ErrorKind::BadFilledOffset { filled: h.filled, limit: h.buffer_size });
        return BufferContents { bytes: &[], error: Some(error) };
    }
    let end = filled.min(raw.len());
    let error = (filled > raw.len()).then(|| truncation_error(info));
    BufferContents { bytes: raw.get(..end).unwrap_or_default(), error }
}

fn truncation_error(info: &BufferInfo) -> Error {
    info.error(0, ErrorKind::BufferTruncated { size: info.header.buffer_size, remaining: info.stored_len as u64 })
}

/// Decompresses a compressed buffer into `out` (its 0x48-byte header first, so
/// record offsets match an uncompressed buffer's). Returns the error that cut
/// the data short; `out` then holds everything decoded before it.
pub(crate) fn decompress_buffer(data: &[u8], info: &BufferInfo, limit: u32, out: &mut Vec<u8>) -> Option<Error> {
    out.clear();
    let filled = match expanded_size(info, limit) {
        Ok(0) => return None,
        Ok(filled) => filled,
        Err(e) => return Some(e),
    };
    let raw = raw_buffer(data, info);
    // Exactly what the decoder needs (kept buffers then hold no more than their bytes).
    out.reserve(filled + xpress::SLACK);
    out.extend_from_slice(raw.get(..BUFFER_HEADER_SIZE).unwrap_or_default());
    let input = raw.get(BUFFER_HEADER_SIZE..).unwrap_or_default();
    let result = xpress::decompress_into(input, filled - BUFFER_HEADER_SIZE, out);
    decompress_error(info, result, out.len() - BUFFER_HEADER_SIZE)
}

/// As [`decompress_buffer`], into `out`, whose length is the buffer's
/// [`expanded_size`]; returns the bytes written. `history` is the
/// decoder's room for the last bytes of the stream.
fn decompress_buffer_to(
    data: &[u8],
    info: &BufferInfo,
    limit: u32,
    out: &mut [u8],
    history: &mut Vec<u8>,
) -> (usize, Option<Error>) {
    let filled = match expanded_size(info, limit) {
        Ok(filled) if filled == out.len() && filled > 0 => filled,
        Ok(_) => return (0, None),
        Err(e) => return (0, Some(e)),
    };
    let raw = raw_buffer(data, info);
    let header = raw.get(..BUFFER_HEADER_SIZE).unwrap_or_default();
    out[..header.len()].copy_from_slice(header);
    let input = raw.get(BUFFER_HEADER_SIZE..).unwrap_or_default();
    let (got, result) = xpress::decompress_to_slice(input, &mut out[BUFFER_HEADER_SIZE..filled], history);
    (BUFFER_HEADER_SIZE + got, decompress_error(info, result, got))
}

/// The size a compressed buffer expands to (its header's filled offset), or
/// why it is not expanded.
fn expanded_size(info: &BufferInfo, limit: u32) -> Result<usize, Error> {
    let h = &info.header;
    match h.filled as usize {
        0 => Ok(0),
        filled if filled < BUFFER_HEADER_SIZE => {
            Err(info.error(0x30, ErrorKind::BadFilledOffset { filled: h.filled, limit }))
        }
        _ if h.filled > limit => Err(info.error(0x30, ErrorKind::OversizedBuffer { filled: h.filled, limit })),
        filled => Ok(filled),
    }
}

/// What cut a buffer's decompression short, given the decoder's result and
/// the bytes it produced after the header.
fn decompress_error(info: &BufferInfo, result: Result<(), xpress::DecompressError>, got: usize) -> Option<Error> {
    let expected = info.header.filled as usize - BUFFER_HEADER_SIZE;
    match result {
        _ if info.truncated => Some(truncation_error(info)),
        Err(e) => Some(Error {
            // Damage in the compressed stream has a true file offset.
            location: Location {
                buffer_index: info.index,
                buffer_offset: info.offset,
                offset_in_buffer: u32::try_from(BUFFER_HEADER_SIZE + e.at).unwrap_or(u32::MAX),
                compressed: false,
            },
            kind: ErrorKind::Decompress { reason: e.reason, at: e.at },
        }),
        Ok(()) if got < expected => Some(info.error(0, ErrorKind::ShortDecompressedBuffer { got, expected })),
        Ok(()) => None,
    }
}

/// Timestamp of a buffer's first record, read from a short prefix (decompressing
/// only that prefix of a compressed buffer).
fn first_record_timestamp(raw: &[u8], info: &BufferInfo, scratch: &mut Vec<u8>) -> Option<u64> {
    let h = &info.header;
    if (h.filled as usize) <= BUFFER_HEADER_SIZE {
        return None;
    }
    let first = if h.is_compressed() {
        scratch.clear();
        let input = raw.get(BUFFER_HEADER_SIZE..)?;
        let _ = xpress::decompress_into(input, 256, scratch);
        peek_timestamp(scratch)
    } else {
        peek_timestamp(raw.get(BUFFER_HEADER_SIZE..)?)
    };
    // A buffer that opens with a WPP record without its own time sorts first.
    Some(first.unwrap_or(0))
}

/// The records of one buffer in file order, each with its offset in the
/// buffer. Yields at most one error, then stops: without a trustworthy size
/// there is no next record (records carry no sync marker).
#[derive(Debug)]
pub struct BufferRecords<'a> {
    bytes: &'a [u8],
    pos: usize,
    info: BufferInfo,
    pointer_size: u8,
    previous_timestamp: u64,
    done: bool,
    ahead: crate::prefetch::Ahead,
}

impl<'a> BufferRecords<'a> {
    pub fn new(bytes: &'a [u8], info: &BufferInfo, pointer_size: u8) -> Self {
        BufferRecords {
            bytes,
            pos: BUFFER_HEADER_SIZE,
            info: *info,
            pointer_size,
            previous_timestamp: info.first_timestamp.unwrap_or(0),
            done: bytes.len() <= BUFFER_HEADER_SIZE,
            ahead: crate::prefetch::Ahead::starting_at(BUFFER_HEADER_SIZE),
        }
    }
}

impl<'a> BufferRecords<'a> {
    /// The next record that is not a classic kernel record: those are
    /// stepped over by their size, not read (a reader of providers' events,
    /// such as one looking for a trace's metadata, walks a kernel trace
    /// several times faster). Damage is reported as [`Iterator::next`] does.
    pub fn next_not_kernel(&mut self) -> Option<Result<(usize, Record<'a>)>> {
        self.next_searched(false, |_, _| true)
    }

    /// The next record a search reads: the classic kernel records when
    /// `kernel`, and the EVENT_HEADER records whose provider and event id
    /// `wanted` accepts (and those with extended data items). The others are
    /// stepped over by their size, not read: EVENT_HEADER records framed
    /// from their headers, as the merge frames them. Damage is reported as
    /// [`Iterator::next`] does.
    pub fn next_searched(
        &mut self,
        kernel: bool,
        wanted: impl Fn(&crate::Guid, u16) -> bool,
    ) -> Option<Result<(usize, Record<'a>)>> {
        while !self.done {
            self.ahead.past(self.bytes, self.pos);
            let rest = self.bytes.get(self.pos..).unwrap_or_default();
            let (time, span) = match crate::record::kernel_frame(rest) {
                Some(Ok(frame)) if !kernel => frame,
                Some(_) => break,
                None => match crate::record::unwanted_event_header(rest, &wanted) {
                    Some(frame) => frame,
                    None => break,
                },
            };
            self.previous_timestamp = time;
            self.pos += span;
            if self.pos >= self.bytes.len() {
                self.done = true;
            }
        }
        self.next()
    }
}

impl<'a> Iterator for BufferRecords<'a> {
    type Item = Result<(usize, Record<'a>)>;

    // Always inlined: a record is 224 bytes, and a call returned it through
    // memory (a tenth more time on a loop over a buffer's records).
    #[inline(always)]
    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.ahead.past(self.bytes, self.pos);
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let (at, mut record) = match self.step(parse_record(rest, self.pointer_size))? {
            Ok(found) => found,
            Err(e) => return Some(Err(e)),
        };
        record.timestamp = record.own_time().unwrap_or(self.previous_timestamp);
        self.previous_timestamp = record.timestamp;
        Some(Ok((at, record)))
    }
}

impl BufferRecords<'_> {
    /// The next record's offset and raw time, with the damage and the end
    /// [`Iterator::next`] finds, without building the record (the merge's
    /// index of a buffer: most records are framed from their headers).
    pub(crate) fn next_frame(&mut self) -> Option<Result<(usize, u64)>> {
        if self.done {
            return None;
        }
        self.ahead.past(self.bytes, self.pos);
        let rest = self.bytes.get(self.pos..).unwrap_or_default();
        let (at, time) = match self.step(crate::record::frame_record(rest, self.pointer_size))? {
            Ok(found) => found,
            Err(e) => return Some(Err(e)),
        };
        let time = time.unwrap_or(self.previous_timestamp);
        self.previous_timestamp = time;
        Some(Ok((at, time)))
    }

    /// Moves past what a record parser found at the position: the item and
    /// its offset, the damage, or the end.
    #[inline(always)]
    fn step<T>(&mut self, found: std::result::Result<Option<(T, usize)>, ErrorKind>) -> Option<Result<(usize, T)>> {
        match found {
            Ok(Some((item, span))) => {
                let at = self.pos;
                self.pos += span;
                if self.pos >= self.bytes.len() {
                    self.done = true;
                }
                Some(Ok((at, item)))
            }
            Ok(None) => {
                self.done = true;
                // Records run up to the filled offset (to within its 8-byte
                // padding, in every buffer of the corpus): fill met before it
                // hides what follows, unless that is fill too.
                let rest = self.bytes.get(self.pos..).unwrap_or_default();
                (rest.len() >= 8 && rest.iter().any(|&b| b != 0xFF))
                    .then(|| Err(self.info.error(self.pos, ErrorKind::FillBeforeEnd { unread: rest.len() })))
            }
            // The data was cut short (truncated file or damaged compressed
            // stream): the partial record at the end is not an error of its own.
            Err(ErrorKind::BadRecordSize { size, remaining, .. })
                if self.bytes.len() < self.info.header.filled as usize && (size == 0 || size > remaining) =>
            {
                self.done = true;
                None
            }
            Err(kind) => {
                self.done = true;
                Some(Err(self.info.error(self.pos, kind)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SequenceNumbers;

    /// A trace that keeps no decompressed buffers gives every buffer's
    /// contents as one that keeps them (of which the corpus has 280).
    #[test]
    fn buffers_read_the_same_kept_or_not() {
        let mut kept = 0;
        for path in nettrail_testkit::corpus_traces() {
            let Ok(file) = crate::TraceFile::open(&path) else { continue };
            let (Ok(keeping), Ok(not)) = (crate::Trace::open(&file), crate::Trace::open_keeping(&file, 0)) else {
                continue;
            };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            for info in keeping.buffers().iter() {
                kept += usize::from(keeping.expanded(&info).is_some());
                assert!(not.expanded(&info).is_none());
                let (x, y) = (keeping.contents(&info, &mut a), not.contents(&info, &mut b));
                assert_eq!((x.bytes, x.error), (y.bytes, y.error), "{} buffer {}", path.display(), info.index);
            }
        }
        assert!(kept >= 280, "{kept} kept buffers");
    }

    /// The index's compressed bit (which spares reading every header to find
    /// the compressed buffers) says what each buffer's header says.
    #[test]
    fn the_index_knows_the_compressed_buffers() {
        let mut compressed = 0;
        for path in nettrail_testkit::corpus_traces() {
            let Ok(file) = crate::TraceFile::open(&path) else { continue };
            let Ok(trace) = crate::Trace::open(&file) else { continue };
            let buffers = trace.buffers();
            let by_header: Vec<u64> = buffers.iter().filter(|b| b.header.is_compressed()).map(|b| b.offset).collect();
            let by_index: Vec<u64> = buffers.compressed().map(|b| b.offset).collect();
            assert_eq!(by_index, by_header, "{}", path.display());
            compressed += by_index.len();
        }
        // perfview__net.4.5.2 (275), sample-sized and one-buffer traces.
        assert!(compressed >= 280, "{compressed} compressed buffers in the corpus");
    }

    /// Every corpus trace read with its index and the merge's order in
    /// temporary files (as a trace of many buffers is) gives what it gives
    /// with them in memory: the buffers, the damage, every merged event.
    #[test]
    fn tables_in_temporary_files_read_as_in_memory() {
        use crate::stored::Stored;
        let mut events = 0;
        for path in nettrail_testkit::corpus_traces() {
            let file = crate::TraceFile::open(&path).unwrap();
            let open = |mapped_from| {
                crate::Trace::parse_from(file.bytes(), Some(&file), mapped_from, crate::Trace::KEPT_BYTES)
            };
            let (Ok(mapped), Ok(in_memory)) = (open(0), open(usize::MAX)) else { continue };
            #[cfg(unix)]
            assert!(matches!(mapped.index, Stored::Mapped(_)), "{}", path.display());
            assert!(matches!(in_memory.index, Stored::Memory(_)));
            let infos = |t: &crate::Trace<'_>| t.buffers().iter().collect::<Vec<_>>();
            assert_eq!(infos(&mapped), infos(&in_memory), "{}", path.display());
            assert_eq!(mapped.last_buffer_start(), in_memory.last_buffer_start());
            assert_eq!(format!("{:?}", mapped.damage()), format!("{:?}", in_memory.damage()));
            let merged = |t: &crate::Trace<'_>| {
                let mut out = Vec::new();
                let mut stream = t.events();
                while let Some(item) = stream.next() {
                    out.push(match item {
                        Ok(e) => format!("{} {} {} {}", e.timestamp, e.provider, e.opcode, e.payload.len()),
                        Err(e) => e.to_string(),
                    });
                }
                out
            };
            let (a, b) = (merged(&mapped), merged(&in_memory));
            assert!(a == b, "{}: the merge differs", path.display());
            events += a.len();
        }
        assert!(events >= 470_000, "{events} events merged");
    }

    /// Framing a buffer's records for the merge's index finds the offsets,
    /// times, damage and end that reading them finds: on every buffer of the
    /// corpus, and on copies with bytes changed at random.
    #[test]
    fn framing_finds_what_reading_finds() {
        /// Both ways; the records' offsets.
        fn both(bytes: &[u8], info: &crate::BufferInfo, pointer_size: u8) -> Vec<usize> {
            let mut offsets = Vec::new();
            let read: Vec<String> = super::BufferRecords::new(bytes, info, pointer_size)
                .map(|item| match item {
                    Ok((at, record)) => {
                        offsets.push(at);
                        format!("{at} {}", record.timestamp)
                    }
                    Err(e) => e.to_string(),
                })
                .collect();
            let mut framing = super::BufferRecords::new(bytes, info, pointer_size);
            let mut framed = Vec::new();
            while let Some(item) = framing.next_frame() {
                framed.push(match item {
                    Ok((at, time)) => format!("{at} {time}"),
                    Err(e) => e.to_string(),
                });
            }
            assert_eq!(framed, read, "buffer {}", info.index);
            if read.len() > offsets.len() {
                // The damage found: an error item instead of offsets.
                offsets.push(usize::MAX);
            }
            offsets
        }
        let mut rng = nettrail_testkit::Rng(0x5EED_F4A3_0000_0001);
        let (mut records, mut damaged) = (0, 0);
        for path in nettrail_testkit::corpus_traces() {
            let file = crate::TraceFile::open(&path).unwrap();
            let Ok(trace) = crate::Trace::open(&file) else { continue };
            let mut scratch = Vec::new();
            for info in trace.buffers().iter() {
                let contents = trace.contents(&info, &mut scratch);
                let mut offsets = both(contents.bytes, &info, trace.pointer_size());
                offsets.retain(|&at| at != usize::MAX);
                records += offsets.len();
                // Bytes changed in records' headers (sizes, kinds, flags).
                for _ in 0..4.min(offsets.len()) {
                    let mut copy = contents.bytes.to_vec();
                    for _ in 0..1 + rng.below(3) {
                        let start = offsets[rng.below(offsets.len() as u64) as usize];
                        let at = start + rng.below(0x50) as usize;
                        if let Some(byte) = copy.get_mut(at) {
                            *byte = rng.below(256) as u8;
                        }
                    }
                    damaged += usize::from(both(&copy, &info, trace.pointer_size()).contains(&usize::MAX));
                }
            }
        }
        assert!(records >= 470_000 && damaged >= 100, "{records} records, {damaged} damaged copies with an error");
    }

    #[test]
    fn sequence_numbers_out_of_order_are_found_as_rising_ones_are() {
        let mut seen = SequenceNumbers::default();
        for (position, sequence) in [(0, 10), (1, 11), (2, 15), (3, 12), (4, 3), (5, 16)] {
            assert_eq!(seen.get(sequence), None);
            seen.insert(sequence, position);
        }
        let found: Vec<_> = [10, 11, 15, 12, 3, 16, 13, 0].iter().map(|&s| seen.get(s)).collect();
        assert_eq!(found, [Some(0), Some(1), Some(2), Some(3), Some(4), Some(5), None, None]);
        assert_eq!((seen.rising.len(), seen.others.len()), (4, 2));
    }
}
