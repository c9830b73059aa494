//! The buffer chain walk and each buffer's contents (decompressing when flagged).
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_etl::buffer::BufferWalk;

fuzz_target!(|data: &[u8]| {
    for buffer in BufferWalk::new(data) {
        let Ok(buffer) = buffer else { break };
        assert!(buffer.raw.len() <= data.len());
        assert!(buffer.truncated || buffer.raw.len() == buffer.header.buffer_size as usize);
    }
});
