//! The writer's buffers made those of a relogged (merged) file.

use std::collections::HashMap;

use nettrail_etl::Trace;

use super::{
    BUFFER_CURRENT_OFFSET, BUFFER_FLAGS, BUFFER_LOST, BUFFER_STATE, BUFFER_TIMESTAMP, EVENTS_LOST, FLUSH_MARKER,
    LOGFILE_VERSION_AT, Synth,
};
use crate::error::SynthError;

impl Synth {
    /// Makes the writer's buffer headers those of a relogged (merged) file,
    /// and flags the buffers that lost data.
    pub(super) fn relog_buffers(&self, bytes: &mut [u8], last_event: u64) -> Result<(), SynthError> {
        struct Info {
            offset: usize,
            cpu: u16,
            last: u64,
        }
        let infos: Vec<Info> = {
            let trace = Trace::parse(bytes).map_err(|e| SynthError::Reread(e.to_string()))?;
            trace
                .buffers()
                .iter()
                .map(|b| Info { offset: b.offset as usize, cpu: b.header.processor, last: b.header.timestamp })
                .collect()
        };
        let put = |bytes: &mut [u8], at: usize, value: &[u8]| -> Result<(), SynthError> {
            let slot =
                bytes.get_mut(at..at + value.len()).ok_or_else(|| SynthError::Reread(format!("no byte {at}")))?;
            slot.copy_from_slice(value);
            Ok(())
        };
        let flags_of = |bytes: &[u8], offset: usize| -> u16 {
            bytes.get(offset + BUFFER_FLAGS..offset + BUFFER_FLAGS + 2).map_or(0, |b| u16::from_le_bytes([b[0], b[1]]))
        };
        let Some((header, data)) = infos.split_first() else {
            return Err(SynthError::Reread("no buffers".into()));
        };
        put(bytes, header.offset + BUFFER_CURRENT_OFFSET, &0u32.to_le_bytes())?;
        put(bytes, header.offset + BUFFER_STATE, &u32::from(self.config.compress).wrapping_mul(3).to_le_bytes())?;
        put(bytes, header.offset + BUFFER_FLAGS, &FLUSH_MARKER.to_le_bytes())?;
        if self.config.compress {
            // Log-file format 2.0: what a compressed merge declares.
            put(bytes, header.offset + LOGFILE_VERSION_AT + 2, &[2, 0])?;
        }
        // The merge runs after the session stops: its clock is past the last event.
        let merged = self.config.start_time + (last_event - self.start_timestamp()) as i64 + 15_000_000;
        let mut marks: HashMap<usize, u16> = HashMap::new();
        for loss in &self.losses {
            let on_cpu: Vec<&Info> = data.iter().filter(|b| b.cpu == loss.cpu).collect();
            let chosen = on_cpu.iter().find(|b| b.last >= loss.timestamp).or(on_cpu.last()).copied().or(data.last());
            if let Some(b) = chosen {
                *marks.entry(b.offset).or_default() |= if loss.buffers { BUFFER_LOST } else { EVENTS_LOST };
            }
        }
        for (i, b) in data.iter().enumerate() {
            put(bytes, b.offset + BUFFER_TIMESTAMP, &(merged + 10 * i as i64).to_le_bytes())?;
            let mut flags = flags_of(bytes, b.offset) & !FLUSH_MARKER;
            if i + 1 == data.len() {
                flags |= FLUSH_MARKER;
            }
            flags |= marks.get(&b.offset).copied().unwrap_or(0);
            put(bytes, b.offset + BUFFER_FLAGS, &flags.to_le_bytes())?;
        }
        Ok(())
    }
}
