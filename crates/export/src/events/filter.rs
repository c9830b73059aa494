//! Which events `dump` prints: by provider, event id, process, time, activity.

use nettrail_etl::{Event, Guid};

/// A point in time given on the command line: an absolute time — RFC 3339
/// with its offset (`2012-06-19T20:34:00Z`, `2012-06-19T22:34:00+02:00`),
/// or `2012-06-19 20:34:00` taken as UTC — or seconds from the trace's start
/// (`+12.5`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum TimeBound {
    Utc(i64),
    FromStart(f64),
}

impl std::str::FromStr for TimeBound {
    type Err = String;

    fn from_str(s: &str) -> Result<TimeBound, String> {
        if let Some(rel) = s.strip_prefix('+') {
            let secs = rel.trim_end_matches('s').parse::<f64>().map_err(|_| format!("not a number of seconds: {s}"))?;
            return Ok(TimeBound::FromStart(secs));
        }
        let instant = s.parse::<jiff::Timestamp>().ok().or_else(|| {
            let civil = s.parse::<jiff::civil::DateTime>().ok()?;
            jiff::tz::Offset::UTC.to_timestamp(civil).ok()
        });
        let instant = instant.ok_or_else(|| {
            format!(
                "expected a time like 2012-06-19T20:34:00Z, 2012-06-19T22:34:00+02:00 or 2012-06-19 20:34:00 (UTC), \
                 or seconds from the start like +12.5, not {s:?}"
            )
        })?;
        // FILETIME: 100 ns since 1601.
        let ticks = instant.as_nanosecond().div_euclid(100);
        i64::try_from(ticks + i128::from(nettrail_etl::clock::FILETIME_UNIX_EPOCH))
            .map(TimeBound::Utc)
            .map_err(|_| format!("{s:?} is out of range"))
    }
}

/// The filters of one `dump`, ready to test events against.
#[derive(Debug, Default)]
pub struct Filter {
    pub guids: Vec<Guid>,
    pub names: Vec<String>,
    pub ids: Vec<u16>,
    pub pids: Vec<u32>,
    /// FILETIME bounds, inclusive.
    pub since: Option<i64>,
    pub until: Option<i64>,
    pub activity: Option<Guid>,
}

impl Filter {
    pub fn new(
        providers: &[String],
        ids: &[u16],
        pids: &[u32],
        since: Option<TimeBound>,
        until: Option<TimeBound>,
        activity: Option<Guid>,
        trace_start: i64,
    ) -> Filter {
        let absolute = |b: TimeBound| match b {
            TimeBound::Utc(ft) => ft,
            TimeBound::FromStart(secs) => trace_start + (secs * 1e7) as i64,
        };
        let mut f = Filter {
            ids: ids.to_vec(),
            pids: pids.to_vec(),
            since: since.map(absolute),
            until: until.map(absolute),
            activity,
            ..Filter::default()
        };
        for p in providers {
            match p.parse::<Guid>() {
                Ok(g) => f.guids.push(g),
                Err(_) => f.names.push(p.to_ascii_lowercase()),
            }
        }
        f
    }

    /// Whether the event passes; `name` gives its provider's name (asked
    /// for only when providers are chosen by name), `filetime` is its time.
    pub fn accepts<'n>(&self, e: &Event<'_>, name: impl FnOnce() -> Option<&'n str>, filetime: i64) -> bool {
        if !self.pids.is_empty() && !e.process_id.is_some_and(|pid| self.pids.contains(&pid)) {
            return false;
        }
        if !self.ids.is_empty() && !self.ids.contains(&e.id) {
            return false;
        }
        if self.since.is_some_and(|t| filetime < t) || self.until.is_some_and(|t| filetime > t) {
            return false;
        }
        if self.activity.is_some_and(|a| e.activity_id != a && e.extended.related_activity_id() != Some(a)) {
            return false;
        }
        if self.guids.is_empty() && self.names.is_empty() {
            return true;
        }
        self.guids.contains(&e.provider)
            || name().is_some_and(|n| self.names.iter().any(|wanted| names_match(n, wanted)))
    }
}

/// A provider's name as people type it: whole, or without the
/// `Microsoft-Windows-` every Windows provider's name begins with.
fn names_match(name: &str, wanted: &str) -> bool {
    const WINDOWS: &str = "microsoft-windows-";
    name.eq_ignore_ascii_case(wanted)
        || (name.len() > WINDOWS.len()
            && name.is_char_boundary(WINDOWS.len())
            && name[..WINDOWS.len()].eq_ignore_ascii_case(WINDOWS)
            && name[WINDOWS.len()..].eq_ignore_ascii_case(wanted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bounds() {
        assert_eq!("+1.5".parse::<TimeBound>(), Ok(TimeBound::FromStart(1.5)));
        let epoch = nettrail_etl::clock::FILETIME_UNIX_EPOCH;
        for (text, ft) in [
            ("1970-01-01T00:00:01.25Z", epoch + 12_500_000),
            ("1970-01-01T02:00:01.25+02:00", epoch + 12_500_000),
            ("1970-01-01 00:00:01.25", epoch + 12_500_000),
            ("2012-06-19T20:34:00.1234567Z", 129_846_116_401_234_567),
        ] {
            assert_eq!(text.parse::<TimeBound>(), Ok(TimeBound::Utc(ft)), "{text}");
        }
        assert!("yesterday".parse::<TimeBound>().is_err());
        assert!("2012-13-01T00:00:00Z".parse::<TimeBound>().is_err());
    }

    #[test]
    fn provider_names_with_or_without_the_windows_prefix() {
        assert!(names_match("Microsoft-Windows-DNS-Client", "dns-client"));
        assert!(names_match("Microsoft-Windows-DNS-Client", "microsoft-windows-dns-client"));
        assert!(!names_match("Microsoft-Windows-DNS-Client", "client"));
        assert!(!names_match("Windows Kernel/Process", "process"));
    }
}
