//! The XPRESS (plain LZ77) decompressor: never reads or writes out of bounds,
//! never produces more than asked; and what the compressor packs, it unpacks.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_etl::xpress::{compress, decompress_into};

fuzz_target!(|data: &[u8]| {
    let limit = data.first().map_or(0, |&b| usize::from(b) * 97);
    let mut out = Vec::new();
    let _ = decompress_into(data, limit, &mut out);
    assert!(out.len() <= limit);

    let packed = compress(data);
    let mut round = Vec::new();
    decompress_into(&packed, data.len(), &mut round).expect("own output decodes");
    assert_eq!(round, data);
});
