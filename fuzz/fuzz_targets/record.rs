//! Record framing: every header kind, extended items, WPP options, over
//! arbitrary bytes laid out as a buffer's data region.
#![no_main]
use libfuzzer_sys::fuzz_target;
use nettrail_etl::record::{parse_record, peek_timestamp};

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    let _ = peek_timestamp(data);
    while pos < data.len() {
        match parse_record(&data[pos..], 8) {
            Ok(Some((record, span))) => {
                assert!(span > 0 && span <= data.len() - pos);
                assert!(record.payload.len() <= usize::from(record.size));
                for item in record.extended.iter() {
                    let _ = item.parse();
                }
                let _ = record.extended.related_activity_id();
                pos += span;
            }
            Ok(None) | Err(_) => break,
        }
    }
});
