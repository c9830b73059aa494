//! XPRESS "plain LZ77" (MS-XCA §2.3–2.4, `COMPRESSION_FORMAT_XPRESS`), the
//! codec of compressed ETL buffers.
//!
//! The stream is groups of up to 32 tokens, each group led by a 32-bit flag
//! word read from its most significant bit: 0 = one literal byte, 1 = a match
//! (a 16-bit token: 13 bits offset − 1, 3 bits length − 3, with longer lengths
//! continued in a shared half-byte, then a byte, then 16 or 32 bits). A set
//! flag with no input left ends the stream.

/// The stream is damaged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecompressError {
    pub reason: &'static str,
    /// Offset in the compressed input where decoding stopped.
    pub at: usize,
}

mod fast;

/// Spare capacity [`decompress_into`] needs past `limit` bytes of output (it
/// writes whole words past the end before setting the length): a caller that
/// reserves `limit + SLACK` gets no reallocation (a vector grown by doubling
/// would otherwise hold twice the bytes it keeps).
pub const SLACK: usize = fast::SLACK;

/// Where a decoder is in a stream: what the fast loop hands on to the
/// simple one when it nears either end.
#[derive(Clone, Copy, Debug)]
struct State {
    /// Next input byte.
    pos: usize,
    /// The current flag word; its low `flag_count` bits are still unread.
    flags: u32,
    flag_count: u32,
    /// Where a shared length half-byte was read, its high half still unused.
    half_byte_at: Option<usize>,
}

impl State {
    /// A stream's start.
    const START: State = State { pos: 0, flags: 0, flag_count: 0, half_byte_at: None };
}

/// Decompresses `input`, appending at most `limit` bytes to `out`. Stops
/// without error when the stream ends or `limit` bytes have been produced.
/// On error, `out` keeps everything decoded before the damage.
///
/// Most of the stream is decoded by a fast loop that works in whole words:
/// a run of literals is one copy, a match one or a few 8- or 16-byte copies,
/// the input's bound is checked once per flag word and the output's once per
/// match. It stops where a token could reach past either end (the last 164
/// bytes of input, or 32 bytes before the output the limit allows);
/// [`decompress_simple`] does the rest, byte-exact at the ends.
pub fn decompress_into(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    let base = out.len();
    // The fast loop fills a window as large as the limit (a buffer's known
    // size) up to the largest buffer ETW writes; the simple loop finishes
    // the stream, and goes on past the window for an open-ended limit.
    let window = limit.min(crate::buffer::MAX_BUFFER_SIZE as usize);
    let state = fast::fast_loop(input, out, window)?;
    continue_simple(input, limit, out, base, state)
}

/// The farthest back a match reaches: 13 bits of offset, plus one.
const MAX_OFFSET: usize = 1 << 13;

/// Decompresses `input` into `out`, at most `out.len()` bytes, never writing
/// past it: for a caller that knows the size (a buffer's header says it) and
/// has its place ready, so nothing is decoded into a vector and copied again.
/// Returns the bytes produced, also on damage (those before it); the bytes
/// of `out` after them are unspecified (the fast loop's wide copies).
///
/// The fast loop stops [`SLACK`] bytes before the end of `out`; the simple
/// loop finishes in `history`, which is given the last bytes a match can
/// reach, and what it adds is copied after them.
pub fn decompress_to_slice(
    input: &[u8],
    out: &mut [u8],
    history: &mut Vec<u8>,
) -> (usize, Result<(), DecompressError>) {
    let (produced, state) = match out.len().checked_sub(SLACK) {
        Some(window) => match fast::fast_loop_slice(input, out, window) {
            (produced, Ok(state)) => (produced, state),
            (produced, Err(e)) => return (produced, Err(e)),
        },
        None => (0, State::START),
    };
    // Every byte before these is out of a match's reach; when fewer were
    // produced, they are all the output, so the simple loop's check of a
    // match's offset against its output is the same check.
    let reach = produced.min(MAX_OFFSET);
    history.clear();
    history.extend_from_slice(&out[produced - reach..produced]);
    let result = continue_simple(input, reach + (out.len() - produced), history, 0, state);
    let tail = &history[reach..];
    out[produced..produced + tail.len()].copy_from_slice(tail);
    (produced + tail.len(), result)
}

/// The fast loop's own semantics, one token at a time, appending to `out`
/// with every read checked: for the ends of a stream, and the reference the
/// fast loop is checked against (tests, the fuzz target, the benchmark).
pub fn decompress_simple(input: &[u8], limit: usize, out: &mut Vec<u8>) -> Result<(), DecompressError> {
    let base = out.len();
    continue_simple(input, limit, out, base, State::START)
}

fn continue_simple(
    input: &[u8],
    limit: usize,
    out: &mut Vec<u8>,
    base: usize,
    state: State,
) -> Result<(), DecompressError> {
    let end = base.saturating_add(limit);
    let State { mut pos, mut flags, mut flag_count, mut half_byte_at } = state;
    let err = |reason, at| Err(DecompressError { reason, at });

    while out.len() < end {
        if flag_count == 0 {
            let Some(word) = crate::bytes::u32_at(input, pos) else {
                // No further flag word: a well-formed stream has ended.
                return if pos >= input.len() { Ok(()) } else { err("truncated flag word", pos) };
            };
            flags = word;
            flag_count = 32;
            pos += 4;
        }
        flag_count -= 1;
        if flags & (1 << flag_count) == 0 {
            let Some(&byte) = input.get(pos) else {
                return Ok(());
            };
            out.push(byte);
            pos += 1;
            continue;
        }
        if pos == input.len() {
            return Ok(());
        }
        let token_at = pos;
        let Some(token) = crate::bytes::u16_at(input, pos) else {
            return err("truncated match token", pos);
        };
        pos += 2;
        let offset = usize::from(token >> 3) + 1;
        let mut length = usize::from(token & 7);
        if length == 7 {
            length = match half_byte_at.take() {
                Some(at) => usize::from(input.get(at).copied().unwrap_or(0) >> 4),
                None => {
                    let Some(&b) = input.get(pos) else {
                        return err("truncated match length", pos);
                    };
                    half_byte_at = Some(pos);
                    pos += 1;
                    usize::from(b & 15)
                }
            };
            if length == 15 {
                let Some(&b) = input.get(pos) else {
                    return err("truncated match length", pos);
                };
                pos += 1;
                length = usize::from(b);
                if length == 255 {
                    let Some(w) = crate::bytes::u16_at(input, pos) else {
                        return err("truncated match length", pos);
                    };
                    pos += 2;
                    length = usize::from(w);
                    if length == 0 {
                        let Some(d) = crate::bytes::u32_at(input, pos) else {
                            return err("truncated match length", pos);
                        };
                        pos += 4;
                        length = d as usize;
                    }
                    if length < 15 + 7 {
                        return err("match length below its encoding's minimum", token_at);
                    }
                    length -= 15 + 7;
                }
                length += 15;
            }
            length += 7;
        }
        length += 3;
        let produced = out.len() - base;
        if offset > produced {
            return err("match refers to bytes before the start of the buffer", token_at);
        }
        let length = length.min(end - out.len());
        let start = out.len() - offset;
        if offset >= length {
            out.extend_from_within(start..start + length);
        } else {
            // Overlapping copy: the match repeats its own output.
            for i in 0..length {
                let b = out[start + i];
                out.push(b);
            }
        }
    }
    Ok(())
}

/// Compresses `input` (greedy matching over a hash of 3-byte prefixes). Used by
/// the writer to produce compressed buffers as Windows' relogger does.
pub fn compress(input: &[u8]) -> Vec<u8> {
    const HASH_BITS: u32 = 14;
    let mut table = vec![usize::MAX; 1 << HASH_BITS];
    let hash = |p: &[u8]| -> usize {
        let v = u32::from(p[0]) | u32::from(p[1]) << 8 | u32::from(p[2]) << 16;
        (v.wrapping_mul(0x9E37_79B1) >> (32 - HASH_BITS)) as usize
    };

    let mut out = Vec::with_capacity(input.len() / 2 + 8);
    let mut flag_pos = 0usize;
    out.extend_from_slice(&[0; 4]);
    let mut flags = 0u32;
    let mut flag_count = 0u32;
    let mut half_byte_at: Option<usize> = None;
    let mut i = 0usize;

    let push_flag = |out: &mut Vec<u8>, flags: &mut u32, flag_count: &mut u32, flag_pos: &mut usize, bit: u32| {
        *flags = (*flags << 1) | bit;
        *flag_count += 1;
        if *flag_count == 32 {
            out[*flag_pos..*flag_pos + 4].copy_from_slice(&flags.to_le_bytes());
            *flag_pos = out.len();
            out.extend_from_slice(&[0; 4]);
            *flags = 0;
            *flag_count = 0;
        }
    };

    while i < input.len() {
        let mut best_len = 0;
        let mut best_off = 0;
        if i + 3 <= input.len() {
            let h = hash(&input[i..]);
            let candidate = table[h];
            table[h] = i;
            if candidate != usize::MAX && i - candidate <= MAX_OFFSET {
                let max = input.len() - i;
                let mut n = 0;
                while n < max && input[candidate + n] == input[i + n] {
                    n += 1;
                }
                if n >= 3 {
                    best_len = n;
                    best_off = i - candidate;
                }
            }
        }
        if best_len == 0 {
            out.push(input[i]);
            push_flag(&mut out, &mut flags, &mut flag_count, &mut flag_pos, 0);
            i += 1;
            continue;
        }
        let token_offset = ((best_off - 1) as u16) << 3;
        let mut length = best_len - 3;
        if length < 7 {
            out.extend_from_slice(&(token_offset | length as u16).to_le_bytes());
        } else {
            out.extend_from_slice(&(token_offset | 7).to_le_bytes());
            length -= 7;
            let nibble = length.min(15) as u8;
            match half_byte_at.take() {
                Some(at) => out[at] |= nibble << 4,
                None => {
                    half_byte_at = Some(out.len());
                    out.push(nibble);
                }
            }
            if length >= 15 {
                length -= 15;
                if length < 255 {
                    out.push(length as u8);
                } else {
                    out.push(255);
                    let total = length + 15 + 7;
                    if total <= 0xFFFF {
                        out.extend_from_slice(&(total as u16).to_le_bytes());
                    } else {
                        out.extend_from_slice(&0u16.to_le_bytes());
                        out.extend_from_slice(&(total as u32).to_le_bytes());
                    }
                }
            }
        }
        push_flag(&mut out, &mut flags, &mut flag_count, &mut flag_pos, 1);
        // Index the skipped positions so later matches can find them.
        for j in i + 1..(i + best_len).min(input.len().saturating_sub(2)) {
            table[hash(&input[j..])] = j;
        }
        i += best_len;
    }
    // Unused flag bits are ones: a set flag with no input left ends the stream.
    let free = 32 - flag_count;
    let last = if free == 32 { u32::MAX } else { (flags << free) | ((1u32 << free) - 1) };
    out[flag_pos..flag_pos + 4].copy_from_slice(&last.to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(data: &[u8]) {
        let packed = compress(data);
        let mut out = Vec::new();
        decompress_into(&packed, data.len(), &mut out).unwrap();
        assert_eq!(out, data);
        // With a limit beyond the data, the stream's own end stops decoding.
        let mut out = Vec::new();
        decompress_into(&packed, usize::MAX, &mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn round_trips_every_length_encoding() {
        round_trip(b"");
        round_trip(b"a");
        round_trip(b"abcabcabcabcabcabc");
        // Lengths that use the half byte, the extra byte, the u16 and the u32 forms.
        for run in [10, 9 + 7, 30, 300, 70_000, 200_000] {
            let mut v = b"xyz".to_vec();
            v.extend(std::iter::repeat_n(b'q', run));
            v.extend_from_slice(b"tail");
            round_trip(&v);
        }
        // Pseudo-random bytes with repeats, more than 32 tokens per flag word.
        let mut state = 0x1234_5678u32;
        let data: Vec<u8> = (0..50_000)
            .map(|i| {
                state = state.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                if i % 7 < 3 { (state >> 24) as u8 } else { b"ETW"[i % 3] }
            })
            .collect();
        round_trip(&data);
    }

    /// Both decoders on one stream and limit: the same bytes, the same error;
    /// and decoding into a slice of `limit` bytes (when that is a size to
    /// allocate) gives them too.
    fn same_as_simple(stream: &[u8], limit: usize) {
        let (mut fast, mut simple) = (b"head".to_vec(), b"head".to_vec());
        let a = decompress_into(stream, limit, &mut fast);
        let b = decompress_simple(stream, limit, &mut simple);
        assert_eq!(a, b, "limit {limit}");
        assert!(fast == simple, "limit {limit}: outputs differ");
        if limit <= 1 << 20 {
            let mut slice = vec![0xA5; limit];
            let (produced, c) = decompress_to_slice(stream, &mut slice, &mut Vec::new());
            assert_eq!(c, b, "limit {limit}, into a slice");
            assert!(slice[..produced] == simple[4..], "limit {limit}: the slice holds other bytes");
        }
    }

    #[test]
    fn the_fast_loop_decodes_as_the_simple_one() {
        // Damaged streams: random bytes, and valid streams with bytes changed.
        let mut rng = nettrail_testkit::Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..400 {
            let len = rng.below(3000) as usize;
            let mut stream = rng.bytes(len);
            if round % 2 == 0 {
                let data: Vec<u8> = (0..len * 3)
                    .map(|i| if rng.below(4) == 0 { rng.below(256) as u8 } else { (i % 7) as u8 })
                    .collect();
                stream = compress(&data);
                for _ in 0..rng.below(3) {
                    if !stream.is_empty() {
                        let at = rng.below(stream.len() as u64) as usize;
                        stream[at] = rng.below(256) as u8;
                    }
                }
            }
            for limit in [0, 1, 31, 32, 33, 100, 256, len, len * 3, usize::MAX] {
                same_as_simple(&stream, limit);
            }
        }
    }

    #[test]
    fn the_fast_loop_decodes_the_corpus_compressed_buffers_as_the_simple_one() {
        let mut buffers = 0;
        for name in [
            "perfview__net.4.5.2.x86.etl",
            "demikernel__PktMon.etl",
            "perfview__SelfDescribingSingleEvent.etl",
            "perfview__smallEtlFile.etl",
        ] {
            let data = std::fs::read(nettrail_testkit::corpus_file(name)).unwrap();
            for buffer in crate::buffer::BufferWalk::new(&data).map_while(Result::ok) {
                if !buffer.header.is_compressed() {
                    continue;
                }
                let stream = &buffer.raw[crate::buffer::BUFFER_HEADER_SIZE..];
                let expected = buffer.header.filled as usize - crate::buffer::BUFFER_HEADER_SIZE;
                for limit in [expected, expected / 2, 256, usize::MAX] {
                    same_as_simple(stream, limit);
                }
                // Cut short, as a truncated file leaves it.
                same_as_simple(&stream[..stream.len() / 2], expected);
                buffers += 1;
            }
        }
        assert!(buffers >= 280, "{buffers} compressed buffers");
    }

    #[test]
    fn known_stream_from_the_spec_shape() {
        // Flags 0x3FFFFFFF read MSB first: two literals, then the end marker.
        let stream = [0xFF, 0xFF, 0xFF, 0x3F, b'h', b'i'];
        let mut out = Vec::new();
        decompress_into(&stream, 100, &mut out).unwrap();
        assert_eq!(out, b"hi");
    }

    #[test]
    fn damage_is_reported_with_the_good_prefix() {
        // A literal then a match reaching 5 bytes back from 1 byte of output.
        let stream = [0xFF, 0xFF, 0xFF, 0x7F, b'a', 0x20, 0x00];
        let mut out = Vec::new();
        let e = decompress_into(&stream, 100, &mut out).unwrap_err();
        assert_eq!(out, b"a");
        assert_eq!(e.at, 5);
        // Truncated inside a flag word.
        let mut out = Vec::new();
        assert!(decompress_into(&[0, 0], 100, &mut out).is_err());
    }
}
