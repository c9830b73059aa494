//! The provider GUID of a name, as EventSource and TraceLogging tools
//! derive it, and the activity ids of spans.

#[cfg(feature = "layer")]
use std::hash::{BuildHasher, RandomState};
#[cfg(feature = "layer")]
use std::sync::atomic::{AtomicU32, Ordering};

use nettrail_etl::Guid;

/// The namespace EventSource hashes provider names in
/// (482C2DB2-C390-47C8-87F8-1A15BFC130FB, as bytes in text order).
const NAMESPACE: [u8; 16] =
    [0x48, 0x2C, 0x2D, 0xB2, 0xC3, 0x90, 0x47, 0xC8, 0x87, 0xF8, 0x1A, 0x15, 0xBF, 0xC1, 0x30, 0xFB];

/// The provider GUID that .NET's `EventSource`, PerfView's `*Name` syntax,
/// `tracelog -guid #Name`, WPR profiles and TraceLogging's `tlgguid`
/// derive from a provider name.
///
/// SHA-1 over the namespace bytes and the upper-cased name in UTF-16
/// big-endian; the first 16 bytes of the hash, with the version nibble set
/// to 5, read as a GUID in Windows byte order. Upper-casing is per UTF-16
/// unit, as .NET's `ToUpperInvariant` does (a character whose upper case is
/// more than one character is kept).
///
/// An EventSource or TraceLogging provider may declare a GUID of its own
/// instead (its version nibble is then usually not 5): this function gives
/// the GUID of the name, not necessarily the provider's.
///
/// ```
/// use nettrail_tracelogging::provider_guid;
/// assert_eq!(
///     provider_guid("Microsoft-AspNetCore-Hosting").to_string(),
///     "9e620d2a-55d4-5ade-deb7-c26046d245a8"
/// );
/// ```
pub fn provider_guid(name: &str) -> Guid {
    let mut input = Vec::with_capacity(NAMESPACE.len() + 2 * name.len());
    input.extend_from_slice(&NAMESPACE);
    let upper = name.chars().map(|c| {
        let mut u = c.to_uppercase();
        match (u.next(), u.next()) {
            (Some(one), None) => one,
            _ => c,
        }
    });
    let mut units = [0u16; 2];
    for c in upper {
        for unit in c.encode_utf16(&mut units) {
            input.extend_from_slice(&unit.to_be_bytes());
        }
    }
    let hash = sha1(&input);
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hash[..16]);
    bytes[7] = (bytes[7] & 0x0F) | 0x50;
    Guid::from_bytes_le(bytes)
}

/// SHA-1 (FIPS 180-4) of a message held in memory.
fn sha1(message: &[u8]) -> [u8; 20] {
    let mut h: [u32; 5] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0];
    let bit_len = (message.len() as u64).wrapping_mul(8);
    let mut padded = message.to_vec();
    padded.push(0x80);
    while padded.len() % 64 != 56 {
        padded.push(0);
    }
    padded.extend_from_slice(&bit_len.to_be_bytes());
    let mut w = [0u32; 80];
    for block in padded.chunks_exact(64) {
        for (t, word) in block.chunks_exact(4).enumerate() {
            w[t] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
        }
        for t in 16..80 {
            w[t] = (w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16]).rotate_left(1);
        }
        let [mut a, mut b, mut c, mut d, mut e] = h;
        for (t, &wt) in w.iter().enumerate() {
            let (f, k) = match t {
                0..=19 => ((b & c) | (!b & d), 0x5A82_7999),
                20..=39 => (b ^ c ^ d, 0x6ED9_EBA1),
                40..=59 => ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC),
                _ => (b ^ c ^ d, 0xCA62_C1D6),
            };
            let temp = a.rotate_left(5).wrapping_add(f).wrapping_add(e).wrapping_add(k).wrapping_add(wt);
            e = d;
            d = c;
            c = b.rotate_left(30);
            b = a;
            a = temp;
        }
        for (state, v) in h.iter_mut().zip([a, b, c, d, e]) {
            *state = state.wrapping_add(v);
        }
    }
    let mut out = [0u8; 20];
    for (chunk, v) in out.chunks_exact_mut(4).zip(h) {
        chunk.copy_from_slice(&v.to_be_bytes());
    }
    out
}

/// Activity ids for spans: unique within the process, and unlikely to
/// collide with another process's (process id and 32 random bits).
///
/// Layout: Data1 = process id, Data2–Data3 = random per process,
/// Data4 = a per-process counter (big-endian u32) then the span's id (low
/// 32 bits, big-endian). Span ids alone are not enough: the registry reuses
/// them once a span closes.
#[cfg(feature = "layer")]
#[derive(Debug)]
pub(crate) struct ActivityIds {
    process: u32,
    random: u32,
    counter: AtomicU32,
}

#[cfg(feature = "layer")]
impl ActivityIds {
    pub(crate) fn new() -> ActivityIds {
        let random = RandomState::new().hash_one(std::time::SystemTime::now());
        ActivityIds {
            process: std::process::id(),
            random: (random ^ (random >> 32)) as u32,
            counter: AtomicU32::new(0),
        }
    }

    pub(crate) fn next(&self, span_id: u64) -> Guid {
        let n = self.counter.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        let mut data4 = [0u8; 8];
        data4[..4].copy_from_slice(&n.to_be_bytes());
        data4[4..].copy_from_slice(&(span_id as u32).to_be_bytes());
        Guid { data1: self.process, data2: (self.random >> 16) as u16, data3: self.random as u16, data4 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn sha1_matches_the_standard_vectors() {
        assert_eq!(hex(&sha1(b"")), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
        assert_eq!(hex(&sha1(b"abc")), "a9993e364706816aba3e25717850c26c9cd0d89d");
        // Two blocks: the padding does not fit after 56 bytes.
        assert_eq!(
            hex(&sha1(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "84983e441c3bd26ebaae4aa1f95129e5e54670f1"
        );
        assert_eq!(hex(&sha1(&[b'a'; 1_000_000])), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    }

    #[test]
    fn names_hash_case_insensitively() {
        assert_eq!(provider_guid("myapp"), provider_guid("MyApp"));
        assert_ne!(provider_guid("MyApp"), provider_guid("MyApp2"));
        assert_eq!(provider_guid("MyApp").data3 >> 12, 5);
    }

    #[cfg(feature = "layer")]
    #[test]
    fn activity_ids_are_unique_even_for_a_reused_span_id() {
        let ids = ActivityIds::new();
        let (a, b) = (ids.next(1), ids.next(1));
        assert_ne!(a, b);
        assert_eq!(a.data1, std::process::id());
        assert_eq!(&a.data4[4..], &[0, 0, 0, 1]);
    }
}
