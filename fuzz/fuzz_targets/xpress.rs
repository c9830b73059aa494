//! The XPRESS (plain LZ77) decompressor: the fast loop (the reader's one
//! module with unchecked memory access) decodes exactly as the simple,
//! checked loop — the same bytes, the same error at the same offset — on any
//! stream and any limit, into a vector or into a slice of the limit's size;
//! never produces more than asked; and what the compressor packs, it unpacks.
//!
//! Input: two bytes of limit (little-endian, times 4), then the stream. Seed
//! it with the corpus' compressed buffers (`cargo xtask fuzz-seeds`).
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_etl::xpress::{compress, decompress_into, decompress_simple, decompress_to_slice};

fuzz_target!(|data: &[u8]| {
    let (limit, stream) = match data {
        [a, b, rest @ ..] => (usize::from(u16::from_le_bytes([*a, *b])) * 4, rest),
        _ => (0, data),
    };
    let (mut fast, mut simple) = (b"kept".to_vec(), b"kept".to_vec());
    let a = decompress_into(stream, limit, &mut fast);
    let b = decompress_simple(stream, limit, &mut simple);
    assert_eq!(a, b);
    assert!(fast == simple, "the fast loop decoded other bytes");
    assert!(fast.len() <= limit + 4);

    let mut slice = vec![0xA5; limit];
    let (produced, c) = decompress_to_slice(stream, &mut slice, &mut Vec::new());
    assert_eq!(c, b);
    assert!(slice[..produced] == simple[4..], "the slice decoder decoded other bytes");

    let packed = compress(stream);
    let mut round = Vec::new();
    decompress_into(&packed, stream.len(), &mut round).expect("own output decodes");
    assert_eq!(round, stream);
});
