//! Little-endian reads that cannot go out of bounds.
//!
//! Every parser in this crate reads through these helpers (or through a
//! fixed-size array obtained once with `first_chunk`), so a size field that
//! lies turns into `None` and then into an error, never into a panic.

#[inline]
pub(crate) fn u8_at(data: &[u8], offset: usize) -> Option<u8> {
    data.get(offset).copied()
}

#[inline]
pub(crate) fn u16_at(data: &[u8], offset: usize) -> Option<u16> {
    array_at::<2>(data, offset).map(u16::from_le_bytes)
}

#[inline]
pub(crate) fn u32_at(data: &[u8], offset: usize) -> Option<u32> {
    array_at::<4>(data, offset).map(u32::from_le_bytes)
}

#[inline]
pub(crate) fn u64_at(data: &[u8], offset: usize) -> Option<u64> {
    array_at::<8>(data, offset).map(u64::from_le_bytes)
}

#[inline]
pub(crate) fn i64_at(data: &[u8], offset: usize) -> Option<i64> {
    array_at::<8>(data, offset).map(i64::from_le_bytes)
}

/// Reads from a fixed-size header obtained once with `first_chunk`: with a
/// constant offset the compiler checks the bounds at compile time.
#[inline(always)]
pub(crate) fn u16_of<const N: usize>(a: &[u8; N], offset: usize) -> u16 {
    u16::from_le_bytes([a[offset], a[offset + 1]])
}

#[inline(always)]
pub(crate) fn u32_of<const N: usize>(a: &[u8; N], offset: usize) -> u32 {
    u32::from_le_bytes([a[offset], a[offset + 1], a[offset + 2], a[offset + 3]])
}

#[inline(always)]
pub(crate) fn u64_of<const N: usize>(a: &[u8; N], offset: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&a[offset..offset + 8]);
    u64::from_le_bytes(b)
}

#[inline(always)]
pub(crate) fn guid_of<const N: usize>(a: &[u8; N], offset: usize) -> crate::guid::Guid {
    let mut b = [0u8; 16];
    b.copy_from_slice(&a[offset..offset + 16]);
    crate::guid::Guid::from_bytes_le(b)
}

#[inline]
pub(crate) fn array_at<const N: usize>(data: &[u8], offset: usize) -> Option<[u8; N]> {
    data.get(offset..)?.first_chunk::<N>().copied()
}

/// Rounds up to the next multiple of 8 (records and extended items are 8-aligned).
#[inline]
pub(crate) const fn align8(n: usize) -> usize {
    (n.saturating_add(7)) & !7
}

/// A UTF-16LE string stored in the trace, kept as raw bytes until asked for.
#[derive(Clone, Copy, PartialEq, Eq, Default)]
pub struct Utf16<'a>(pub &'a [u8]);

impl<'a> Utf16<'a> {
    /// Reads a NUL-terminated UTF-16LE string starting at `offset`; returns it
    /// (without the terminator) and the offset just past the terminator. An
    /// unterminated string runs to the end of `data` (what TDH does).
    pub fn read_terminated(data: &'a [u8], offset: usize) -> Option<(Utf16<'a>, usize)> {
        let rest = data.get(offset..)?;
        let mut i = 0usize;
        while let Some(pair) = rest.get(i..i.saturating_add(2)) {
            if pair == [0, 0] {
                return Some((Utf16(rest.get(..i)?), offset.saturating_add(i).saturating_add(2)));
            }
            i = i.saturating_add(2);
        }
        let even = rest.len() & !1;
        Some((Utf16(rest.get(..even)?), data.len()))
    }

    /// The string with invalid UTF-16 replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        let units = self.0.chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
        char::decode_utf16(units).map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.len() < 2
    }
}

impl std::fmt::Debug for Utf16<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.to_string_lossy(), f)
    }
}

impl std::fmt::Display for Utf16<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_string_lossy())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_refuse_to_leave_the_slice() {
        let d = [1u8, 2, 3, 4, 5];
        assert_eq!(u32_at(&d, 1), Some(0x0504_0302));
        assert_eq!(u32_at(&d, 2), None);
        assert_eq!(u64_at(&d, usize::MAX), None);
    }

    #[test]
    fn utf16_terminated_and_unterminated() {
        let d = [b'h', 0, b'i', 0, 0, 0, b'x', 0];
        let (s, next) = Utf16::read_terminated(&d, 0).unwrap();
        assert_eq!(s.to_string_lossy(), "hi");
        assert_eq!(next, 6);
        let (s, next) = Utf16::read_terminated(&d, 6).unwrap();
        assert_eq!(s.to_string_lossy(), "x");
        assert_eq!(next, 8);
        // An odd trailing byte is dropped, never read past.
        let (s, _) = Utf16::read_terminated(&[b'a', 0, b'b'], 0).unwrap();
        assert_eq!(s.to_string_lossy(), "a");
        assert_eq!(align8(0), 0);
        assert_eq!(align8(9), 16);
    }
}
