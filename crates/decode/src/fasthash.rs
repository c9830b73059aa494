//! A fast hasher for the small keys of tables built from trace records
//! (schema keys here; pointers, addresses and ids in the network model): the
//! multiply-rotate scheme rustc uses internally (FxHash). Keys come from
//! trace records, but a collision costs only a slower lookup, never a wrong
//! answer.

use std::hash::{BuildHasherDefault, Hasher};

#[derive(Default, Clone, Copy, Debug)]
pub struct FastHasher(u64);

const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(SEED);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        }
        for &b in chunks.remainder() {
            self.add(u64::from(b));
        }
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// The multiply leaves a key's low bits depending on its low bits alone,
    /// and hash tables pick buckets by the low bits: aligned addresses (module
    /// bases are 64 KiB-aligned) would crowd a few buckets. Rotating brings
    /// the well-mixed high bits down.
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

pub type FastMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FastHasher>>;

pub type FastSet<K> = std::collections::HashSet<K, BuildHasherDefault<FastHasher>>;
