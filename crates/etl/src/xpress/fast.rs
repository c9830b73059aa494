//! The XPRESS decoder's fast loop: the one place the reader reads and
//! writes memory without a bounds check per access.
//!
//! Why: a compressed trace is mostly XPRESS (WPR compresses by default), and
//! its tokens are short (a match every 15 output bytes on PerfView's traces,
//! half of them 3 to 7 bytes long); a check on every read and write of every
//! token made the safe loop half as fast (`cargo xtask bench-xpress`).
//!
//! How it stays sound: before each flag word (32 tokens) the loop checks,
//! with ordinary comparisons, that the input has [`INPUT_MARGIN`] bytes left
//! and the output window 32; each match checks that it leaves 32 bytes of the
//! window, and a length in 16 or 32 bits checks the input margin again.
//! Everything the loop touches lies within those margins (each unchecked
//! access below says why). The matches' offsets are checked against the
//! bytes produced, as the simple loop checks them. Near either end
//! the loop stops and the checked simple loop finishes the stream. The fuzz
//! target `xpress` compares the two loops on random and corpus-derived input.
#![allow(unsafe_code)] // the module's purpose: see above

use std::ptr;

use super::{DecompressError, State};

/// Bytes the fast loop may write past the window's end: a run of literals'
/// or a match's 32-byte first copy, or a long match's last 16-byte step.
pub(super) const SLACK: usize = 64;

/// How close to the end of the input the fast loop stops: a flag word (4),
/// its 32 tokens if none takes more than 4 bytes (a literal takes 1, a match
/// 2 + 1 + 1 unless its length needs 16 or 32 bits), and a run of literals
/// read as one 32-byte copy fit before it.
const INPUT_MARGIN: usize = 4 + 32 * 4 + 32;

/// Decodes from the start of `input`, appending to `out`, while far from
/// both ends: the stream may fill `window` bytes. Returns where it stopped,
/// or the damage met; `out` holds the bytes produced either way.
///
/// Each step is a run of literals (possibly empty: one 32-byte copy either
/// way, no branch on the count) and the match after it; the common forms of
/// a match's length (3 bits, or 7 and a half-byte) are read without branches.
pub(super) fn fast_loop(input: &[u8], out: &mut Vec<u8>, window: usize) -> Result<State, DecompressError> {
    // The loop writes into the vector's spare capacity (no need to zero what
    // it overwrites): every byte below the length it sets was written first.
    out.reserve(window.saturating_add(SLACK));
    let base = out.len();
    let src = input.as_ptr();
    // SAFETY: base <= capacity; the spare capacity is at least window + SLACK.
    let dst = unsafe { out.as_mut_ptr().add(base) };
    let result = run(input, src, dst, window);
    let produced = match &result {
        Ok((_, produced)) | Err((_, produced)) => *produced,
    };
    // SAFETY: `run` wrote every byte of dst[..produced] (a literal or match
    // copy covers each byte before the output position moves past it), and
    // produced <= window fits the reserved capacity.
    unsafe { out.set_len(base + produced) };
    result.map(|(state, _)| state).map_err(|(e, _)| e)
}

/// As [`fast_loop`], into `out` from its start: the window and the
/// [`SLACK`] after it lie inside `out` (a caller's place of a known size,
/// such as a buffer's in one mapping). Returns the bytes produced, also on
/// damage (those before it), and where it stopped.
pub(super) fn fast_loop_slice(input: &[u8], out: &mut [u8], window: usize) -> (usize, Result<State, DecompressError>) {
    // The one bound `run` relies on, checked here and not trusted to callers.
    assert!(window.saturating_add(SLACK) <= out.len(), "the window and its slack must fit the slice");
    match run(input, input.as_ptr(), out.as_mut_ptr(), window) {
        Ok((state, produced)) => (produced, Ok(state)),
        Err((e, produced)) => (produced, Err(e)),
    }
}

/// The loop itself, on `src` (`input`'s bytes) and `dst` (`window` + [`SLACK`]
/// writable bytes): where it stopped (or the damage) and the bytes produced.
///
/// The flag word is kept as the unread flag bits at the top of a `u64`, then
/// a set sentinel bit: a run of literals is the count of leading zeros (the
/// sentinel ends it at the word's end), and shifting out the set bit that
/// ends the run leaves zero exactly when that bit was the sentinel. One
/// register, one `bsr`, no count to keep.
fn run(input: &[u8], src: *const u8, dst: *mut u8, window: usize) -> Result<(State, usize), (DecompressError, usize)> {
    let mut pos = 0usize;
    let mut op = 0usize;
    // Where a shared length half-byte was read, its high half still unused,
    // or usize::MAX for none.
    let mut half_byte_at = usize::MAX;
    let stop = |pos, flags: u64, half_byte_at: usize, op| {
        // The sentinel's bit (63 for a spent word: no bits left).
        let sentinel = flags.trailing_zeros().min(63);
        let state = State {
            pos,
            flags: (flags >> sentinel >> 1) as u32,
            flag_count: 63 - sentinel,
            half_byte_at: (half_byte_at != usize::MAX).then_some(half_byte_at),
        };
        Ok((state, op))
    };
    loop {
        // The flag word's margins. `pos <= input.len()` and `op <= window`
        // hold throughout, so neither difference overflows.
        if input.len() - pos < INPUT_MARGIN || window - op < 32 {
            return stop(pos, 0, half_byte_at, op);
        }
        // SAFETY: pos + 4 <= input.len() (the margin).
        let word = u32::from_le(unsafe { ptr::read_unaligned(src.add(pos).cast::<u32>()) });
        let mut flags = u64::from(word) << 32 | 1 << 31;
        pos += 4;
        // The word's tokens. Each token before this one took at most 4 bytes
        // (a longer one checks the margin again), so a token starts before
        // (the word's start) + 4 + 31 * 4, and its run of literals is read
        // as 32 bytes, its match token as at most 4: all within the margin.
        // A run of literals leaves `op <= window`: the word's runs total at
        // most 32 (the margin), and each match leaves 32 bytes of the window
        // (checked below).
        loop {
            // The literals: the clear bits before the next set one (`| 1` tells
            // the compiler the word is not zero; the sentinel is above bit 0).
            let literals = (flags | 1).leading_zeros() as usize;
            // SAFETY: reads pos..pos + 32 <= input.len() (above); writes
            // op..op + 32 <= window + 32, within the reserved window + SLACK;
            // `input` and `out` are distinct borrows, so the ranges do not overlap.
            unsafe { ptr::copy_nonoverlapping(src.add(pos), dst.add(op), 32) };
            pos += literals;
            op += literals;
            let rest = flags << literals << 1;
            if rest == 0 {
                break;
            }
            let token_at = pos;
            // SAFETY (the token, its half-byte and the byte after it): within
            // the 4 bytes from pos (above); `half_byte_at` is an earlier position.
            let token = u16::from_le(unsafe { ptr::read_unaligned(src.add(pos).cast::<u16>()) });
            pos += 2;
            let offset = usize::from(token >> 3) + 1;
            let low = usize::from(token & 7);
            let extended = low == 7;
            // An extended length's half-byte: the high half of the shared byte,
            // or the low half of the next. Read for every token and selected
            // with a mask: a third of the matches are extended, too many to
            // predict.
            let ext_mask = 0usize.wrapping_sub(usize::from(extended));
            let shared = half_byte_at != usize::MAX;
            let nibble_at = if shared { half_byte_at } else { pos };
            // SAFETY: as above.
            let byte = unsafe { *src.add(nibble_at) };
            let nibble = usize::from(byte >> (4 * u8::from(shared)) & 15);
            let mut length = low + 3 + (nibble & ext_mask);
            pos += usize::from(extended & !shared);
            if length == 15 + 7 + 3 {
                // SAFETY: as above.
                length = usize::from(unsafe { *src.add(pos) });
                pos += 1;
                if length == 255 {
                    // 2 or 6 more bytes: the margin again, as if a word
                    // started after them.
                    if input.len() - pos < 6 + INPUT_MARGIN {
                        return stop(token_at, flags << literals, half_byte_at, op);
                    }
                    // SAFETY (both reads): pos + 6 <= input.len() (just checked).
                    length = usize::from(u16::from_le(unsafe { ptr::read_unaligned(src.add(pos).cast::<u16>()) }));
                    pos += 2;
                    if length == 0 {
                        length = u32::from_le(unsafe { ptr::read_unaligned(src.add(pos).cast::<u32>()) }) as usize;
                        pos += 4;
                    }
                    if length < 15 + 7 {
                        let e = DecompressError { reason: "match length below its encoding's minimum", at: token_at };
                        return Err((e, op));
                    }
                    length -= 15 + 7;
                }
                length += 15 + 7 + 3;
            }
            if offset > op {
                let e =
                    DecompressError { reason: "match refers to bytes before the start of the buffer", at: token_at };
                return Err((e, op));
            }
            if length + 32 > window - op {
                // The match nears the limit (or the window's end): the simple
                // loop decodes this token again and stops exactly there.
                return stop(token_at, flags << literals, half_byte_at, op);
            }
            // A token with a half-byte opens a shared byte (its low half) or
            // closes it (its high half).
            let toggled = if shared { usize::MAX } else { nibble_at };
            half_byte_at = toggled & ext_mask | half_byte_at & !ext_mask;
            flags = rest;
            // SAFETY: offset <= op <= window - 32 - length (checked above),
            // dst[..op] is written, and window + SLACK <= out.len(): see each copy.
            unsafe { copy_match(dst, op, offset, length) };
            op += length;
        }
    }
}

/// For each period p below 8: a word with a 1 in bytes 0, p, 2p, … (times
/// the period's bytes: their copies through a word), and 8 % p (how far into
/// the period the next word starts).
const PERIODS: [(u64, u32); 8] = {
    let mut table = [(0, 0); 8];
    let mut period = 1;
    while period < 8 {
        let mut at = 0;
        while at < 8 {
            table[period].0 |= 1 << (8 * at);
            at += period;
        }
        table[period].1 = 8 % period as u32;
        period += 1;
    }
    table
};

/// Copies a match as LZ77 means it (an overlapping match repeats its own
/// output), writing at most 32 bytes past `at` or 15 past the match's end.
///
/// # Safety
/// `dst` points to at least `at + length.max(32) + 15` writable bytes, the
/// `at` bytes before it written, and `1 <= offset <= at`.
unsafe fn copy_match(dst: *mut u8, at: usize, offset: usize, length: usize) {
    let from = at - offset;
    // SAFETY (every access): reads are at from + k < at + k for k below
    // the bytes copied, or (for a period below 16) the 8 bytes before
    // at >= 8; writes at at + k within the bounds stated above.
    unsafe {
        if offset >= 16 {
            // 16-byte steps, each reading only bytes before the ones it
            // writes. Two cover most matches.
            let step16 = |done: usize| {
                let v = ptr::read_unaligned(dst.add(from + done).cast::<[u8; 16]>());
                ptr::write_unaligned(dst.add(at + done).cast::<[u8; 16]>(), v);
            };
            step16(0);
            step16(16);
            let mut done = 32;
            while done < length {
                step16(done);
                done += 16;
            }
        } else if offset >= 8 {
            // A period of 8 to 15, a word at a time from registers (reading
            // back a word just written would wait for the store): each word
            // is the last moved up by offset - 8 bytes, the bytes below from
            // the word before it. The first word and the one before it are
            // the bytes before `at`.
            let up = 8 * (offset as u32 - 8);
            let mut before = u64::from_le(ptr::read_unaligned(dst.add(at - 8).cast::<u64>()));
            let mut word = u64::from_le(ptr::read_unaligned(dst.add(from).cast::<u64>()));
            let mut step = |done: usize| {
                ptr::write_unaligned(dst.add(at + done).cast::<u64>(), word.to_le());
                // `>> 1 >>` for a shift of 64 when offset is 8.
                (before, word) = (word, word << up | before >> 1 >> (63 - up));
            };
            for done in [0, 8, 16, 24] {
                step(done);
            }
            let mut done = 32;
            while done < length {
                step(done);
                done += 8;
            }
        } else if at >= 8 {
            // A period below 8: its bytes, the last `offset` before `at`, are
            // repeated through a word by one product (the copies do not
            // overlap, so nothing carries) and written a word at a time, each
            // word the last turned by the 8 % offset bytes it moves into the period.
            let last = u64::from_le(ptr::read_unaligned(dst.add(at - 8).cast::<u64>()));
            let (repeat, turn) = PERIODS[offset];
            let mut word = (last >> (64 - 8 * offset)).wrapping_mul(repeat);
            let right = 8 * turn;
            let left = 8 * offset as u32 - right;
            let mut step = |done: usize| {
                ptr::write_unaligned(dst.add(at + done).cast::<u64>(), word.to_le());
                word = word >> right | word << left;
            };
            // Four words cover most matches.
            for done in [0, 8, 16, 24] {
                step(done);
            }
            let mut done = 32;
            while done < length {
                step(done);
                done += 8;
            }
        } else {
            // The first bytes of the window: one at a time.
            for k in 0..length {
                *dst.add(at + k) = *dst.add(from + k);
            }
        }
    }
}
