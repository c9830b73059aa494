//! Asking the CPU for a buffer's bytes before a walk reaches them.
//!
//! A walk along a buffer's records reads each record's header and steps to
//! the next by its size: the next address is known only once the header is
//! read, so every header whose line is not cached yet stalls the walk for a
//! memory round trip (on a trace read for the first time, most of them).
//! Asking for the lines ahead of the walk overlaps those round trips.

/// How far ahead of the record being read its lines are asked for.
const AHEAD: usize = 1024;
const LINE: usize = 64;

/// Lines of `bytes` asked for so far, up to [`AHEAD`] past a position.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Ahead {
    until: usize,
}

impl Ahead {
    pub(crate) fn starting_at(pos: usize) -> Ahead {
        Ahead { until: pos }
    }

    /// Asks for the lines of `bytes` up to [`AHEAD`] bytes past `pos` not
    /// asked for yet (none behind `pos`: a long record is stepped over).
    #[inline]
    pub(crate) fn past(&mut self, bytes: &[u8], pos: usize) {
        let until = (pos + AHEAD).min(bytes.len());
        self.until = self.until.max(pos);
        while self.until < until {
            line(bytes[self.until..].as_ptr());
            self.until += LINE;
        }
    }
}

#[inline(always)]
fn line(at: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint: it reads nothing the program sees and
    // cannot fault, whatever the address (here always inside `bytes`).
    #[allow(unsafe_code)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_asked_for_once_up_to_the_distance_and_never_behind_or_past_the_end() {
        let bytes = vec![0u8; 8 * AHEAD];
        let mut ahead = Ahead::starting_at(72);
        ahead.past(&bytes, 72);
        assert_eq!(ahead.until, 72 + AHEAD, "one line at a time up to the distance");
        ahead.past(&bytes, 100);
        assert_eq!(ahead.until, 72 + AHEAD + 64, "the lines asked for already are not asked again");
        // A record of 4 KiB stepped over: its lines behind the walk are skipped.
        ahead.past(&bytes, 5000);
        assert_eq!(ahead.until, 5000 + AHEAD);
        ahead.past(&bytes, bytes.len() - 10);
        assert_eq!(ahead.until, bytes.len() + 54, "stops at the last line of the buffer");
    }
}
