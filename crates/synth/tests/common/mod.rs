//! Reading back what the tests write or compare with.

#![allow(dead_code)] // each test file uses a part

use nettrail_etl::{BufferInfo, BufferRecords, Record, Trace};

/// A trace's buffers, decompressed, so records can be kept and compared.
pub struct Images {
    pub infos: Vec<BufferInfo>,
    pub data: Vec<Vec<u8>>,
    pub pointer_size: u8,
}

impl Images {
    pub fn read(bytes: &[u8]) -> Images {
        let trace = Trace::parse(bytes).expect("the trace parses");
        let mut scratch = Vec::new();
        let mut data = Vec::new();
        for info in trace.buffers() {
            let contents = trace.contents(&info, &mut scratch);
            assert!(contents.error.is_none(), "{:?}", contents.error);
            data.push(contents.bytes.to_vec());
        }
        Images { infos: trace.buffers().iter().collect(), data, pointer_size: trace.pointer_size() }
    }

    /// Every record with the CPU of its buffer, in file order within each
    /// buffer, then sorted by time (stable).
    pub fn records(&self) -> Vec<(u16, Record<'_>)> {
        let mut out = Vec::new();
        for (info, data) in self.infos.iter().zip(&self.data) {
            for item in BufferRecords::new(data, info, self.pointer_size) {
                out.push((info.header.processor, item.expect("every record reads").1));
            }
        }
        out.sort_by_key(|(_, r)| r.timestamp);
        out
    }

    /// The records of each buffer in file order.
    pub fn by_buffer(&self) -> Vec<Vec<Record<'_>>> {
        self.infos
            .iter()
            .zip(&self.data)
            .map(|(info, data)| {
                BufferRecords::new(data, info, self.pointer_size).map(|r| r.expect("every record reads").1).collect()
            })
            .collect()
    }
}

/// Every record of a trace, in time order.
pub fn records(images: &Images) -> Vec<Record<'_>> {
    images.records().into_iter().map(|(_, r)| r).collect()
}
