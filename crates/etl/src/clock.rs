//! Raw session timestamps → FILETIME → UTC text.
//!
//! Every timestamp in a file is an absolute value of the session clock. The
//! header event's timestamp and the header's `StartTime` are the same instant
//! in the two clocks, which gives the conversion for every clock type.

use std::fmt;

/// 100 ns intervals between 1601-01-01 (FILETIME epoch) and 1970-01-01.
pub const FILETIME_UNIX_EPOCH: i64 = 116_444_736_000_000_000;

/// The clock a session stamps events with (`TRACE_LOGFILE_HEADER.ReservedFlags`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClockType {
    /// QueryPerformanceCounter ticks (the default since Vista).
    Qpc,
    /// System time: timestamps are FILETIMEs already.
    SystemTime,
    /// CPU cycle counter, scaled by the header's CPU speed.
    CpuCycles,
    /// 0 or an unknown value: read as QPC when a frequency is known.
    Unspecified(u32),
}

impl ClockType {
    pub fn from_reserved_flags(v: u32) -> ClockType {
        match v {
            1 => ClockType::Qpc,
            2 => ClockType::SystemTime,
            3 => ClockType::CpuCycles,
            other => ClockType::Unspecified(other),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ClockType::Qpc => "QPC",
            ClockType::SystemTime => "system time",
            ClockType::CpuCycles => "CPU cycles",
            ClockType::Unspecified(_) => "unspecified (read as QPC)",
        }
    }
}

/// Converts raw timestamps of one session to FILETIME (100 ns since 1601, UTC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Clock {
    pub clock_type: ClockType,
    start_time: i64,
    anchor: u64,
    /// Raw ticks per second; the conversion is `start + (ts − anchor) × 10⁷ / ticks`.
    ticks_per_second: i128,
}

impl Clock {
    pub fn new(clock_type: ClockType, start_time: i64, anchor: u64, perf_freq: i64, cpu_mhz: u32) -> Clock {
        let ticks_per_second = match clock_type {
            ClockType::SystemTime => 10_000_000,
            ClockType::CpuCycles if cpu_mhz > 0 => i128::from(cpu_mhz) * 1_000_000,
            _ if perf_freq > 0 => i128::from(perf_freq),
            // No usable frequency: treat ticks as 100 ns so times stay ordered.
            _ => 10_000_000,
        };
        Clock { clock_type, start_time, anchor, ticks_per_second }
    }

    /// FILETIME of a raw timestamp, exact for the 10 MHz clocks Windows uses,
    /// rounded toward the past otherwise.
    pub fn to_filetime(&self, raw: u64) -> i64 {
        if self.ticks_per_second == 10_000_000 {
            // The usual case: ticks are already 100 ns.
            let delta = raw.wrapping_sub(self.anchor) as i64;
            return self.start_time.saturating_add(delta);
        }
        // QPC-like clocks of up to 4 GHz after the anchor: whole seconds and
        // the rest divided apart in 64 bits, exactly as the 128-bit form.
        if let (Some(delta), Ok(tps)) = (raw.checked_sub(self.anchor), u32::try_from(self.ticks_per_second))
            && tps > 0
        {
            let tps = u64::from(tps);
            let part = ((delta % tps) * 10_000_000 / tps) as i64;
            let ticks = i64::try_from(delta / tps).ok().and_then(|s| s.checked_mul(10_000_000)?.checked_add(part));
            if let Some(ticks) = ticks {
                return self.start_time.saturating_add(ticks);
            }
        }
        let delta = i128::from(raw) - i128::from(self.anchor);
        let ft = i128::from(self.start_time) + (delta * 10_000_000).div_euclid(self.ticks_per_second);
        ft.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    /// Seconds between two raw timestamps.
    pub fn seconds_between(&self, from: u64, to: u64) -> f64 {
        (i128::from(to) - i128::from(from)) as f64 / self.ticks_per_second as f64
    }

    /// Raw ticks per second.
    pub fn frequency(&self) -> i128 {
        self.ticks_per_second
    }
}

/// A FILETIME shown as ISO-8601 UTC with 100 ns precision,
/// e.g. `2016-05-26T20:17:22.4789320Z`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileTime(pub i64);

impl FileTime {
    /// Writes the ISO-8601 form into `out` and returns its length (28 bytes;
    /// years outside 0..=9999 are clamped).
    pub fn encode(self, out: &mut [u8; 28]) -> usize {
        UtcText::default().encode(self, out)
    }
}

/// Formats many FILETIMEs as ISO-8601 UTC, reusing the date and time of day
/// while consecutive times fall in the same second (events mostly do).
#[derive(Clone, Copy, Debug)]
pub struct UtcText {
    second: i64,
    prefix: [u8; 20],
}

impl Default for UtcText {
    fn default() -> Self {
        UtcText { second: i64::MIN, prefix: [0; 20] }
    }
}

impl UtcText {
    /// Writes `2016-05-26T20:17:22.4789320Z` into `out`; returns its length (28).
    pub fn encode(&mut self, ft: FileTime, out: &mut [u8; 28]) -> usize {
        let unix_100ns = ft.0.saturating_sub(FILETIME_UNIX_EPOCH);
        let secs = unix_100ns.div_euclid(10_000_000);
        let mut frac = unix_100ns.rem_euclid(10_000_000) as u32;
        if secs != self.second {
            self.second = secs;
            write_date_and_time(secs, &mut self.prefix);
        }
        out[..20].copy_from_slice(&self.prefix);
        for i in (20..27).rev() {
            out[i] = b'0' + (frac % 10) as u8;
            frac /= 10;
        }
        out[27] = b'Z';
        28
    }

    /// Appends the text [`UtcText::encode`] writes.
    #[inline]
    pub fn push(&mut self, ft: FileTime, out: &mut String) {
        let mut text = [0u8; 28];
        let n = self.encode(ft, &mut text);
        // The digits, dashes, colons and letters are ASCII.
        out.push_str(std::str::from_utf8(&text[..n]).unwrap_or_default());
    }
}

/// `YYYY-MM-DDTHH:MM:SS.` for seconds since the Unix epoch.
fn write_date_and_time(secs: i64, out: &mut [u8; 20]) {
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    let y = y.clamp(0, 9999) as u32;
    let (hh, mm, ss) = (sod / 3600, sod / 60 % 60, sod % 60);
    let mut put = |at: usize, value: u32, width: usize| {
        let mut v = value;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0, y, 4);
    put(5, m, 2);
    put(8, d, 2);
    put(11, hh, 2);
    put(14, mm, 2);
    put(17, ss, 2);
    out[4] = b'-';
    out[7] = b'-';
    out[10] = b'T';
    out[13] = b':';
    out[16] = b':';
    out[19] = b'.';
}

impl fmt::Display for FileTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = [0u8; 28];
        let n = self.encode(&mut buf);
        f.write_str(std::str::from_utf8(buf.get(..n).unwrap_or_default()).map_err(|_| fmt::Error)?)
    }
}

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filetime_text() {
        assert_eq!(FileTime(FILETIME_UNIX_EPOCH).to_string(), "1970-01-01T00:00:00.0000000Z");
        // 2016-05-26T20:17:22.4789320Z, the start of a PerfView sample trace.
        assert_eq!(FileTime(131_087_674_424_789_320).to_string(), "2016-05-26T20:17:22.4789320Z");
        assert_eq!(FileTime(0).to_string(), "1601-01-01T00:00:00.0000000Z");
        // Leap day.
        assert_eq!(
            FileTime(FILETIME_UNIX_EPOCH + 951_782_400 * 10_000_000).to_string(),
            "2000-02-29T00:00:00.0000000Z"
        );
    }

    #[test]
    fn clock_types_convert_from_the_header_anchor() {
        let qpc = Clock::new(ClockType::Qpc, 1_000_000, 500, 10_000_000, 0);
        assert_eq!(qpc.to_filetime(500), 1_000_000);
        assert_eq!(qpc.to_filetime(1500), 1_001_000);
        assert_eq!(qpc.to_filetime(0), 999_500);
        // A 3 MHz QPC: 3 ticks are 1 µs = 10 × 100 ns.
        let slow = Clock::new(ClockType::Qpc, 0, 0, 3_000_000, 0);
        assert_eq!(slow.to_filetime(3), 10);
        let sys = Clock::new(ClockType::SystemTime, 1_000_000, 1_000_000, 0, 0);
        assert_eq!(sys.to_filetime(1_234_567), 1_234_567);
        let cycles = Clock::new(ClockType::CpuCycles, 0, 0, 10_000_000, 2000);
        assert_eq!(cycles.to_filetime(2_000_000_000), 10_000_000);
        assert_eq!(qpc.seconds_between(500, 10_000_500), 1.0);
    }

    #[test]
    fn other_clock_rates_convert_as_the_exact_formula_says() {
        let exact = |c: &Clock, raw: u64| {
            let ft = i128::from(c.start_time)
                + ((i128::from(raw) - i128::from(c.anchor)) * 10_000_000).div_euclid(c.ticks_per_second);
            ft.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
        };
        let anchor = 1_534_534_208;
        for rate in [1, 3, 2_994_853, 3_579_545, 14_318_180, 1_000_000_000, u64::from(u32::MAX), 1 << 40] {
            for start in [0, 131_087_674_424_789_320, i64::MAX - 5, i64::MIN] {
                let c = Clock::new(ClockType::Qpc, start, anchor, rate as i64, 0);
                for raw in [
                    0,
                    anchor - 1,
                    anchor,
                    anchor + 1,
                    anchor + rate - 1,
                    anchor + rate * 977 + 12_345,
                    u64::MAX / 3,
                    u64::MAX,
                ] {
                    assert_eq!(c.to_filetime(raw), exact(&c, raw), "rate {rate}, start {start}, raw {raw}");
                }
            }
        }
    }
}
