//! Which events `dump` prints: by provider, event id, process, time, activity.

use nettrail_etl::{Event, Guid};

/// A point in time given on the command line: an absolute UTC time
/// (`2012-06-19T20:34:00Z`) or seconds from the trace's start (`+12.5`).
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
        parse_utc(s).map(TimeBound::Utc).ok_or_else(|| {
            format!("expected a UTC time like 2012-06-19T20:34:00Z or seconds from the start like +12.5, not {s:?}")
        })
    }
}

/// FILETIME of `YYYY-MM-DDTHH:MM:SS[.fraction]Z`.
fn parse_utc(s: &str) -> Option<i64> {
    let s = s.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let mut d = date.split('-').map(|p| p.parse::<i64>().ok());
    let (y, m, day) = (d.next()??, d.next()??, d.next()??);
    let (hms, frac) = time.split_once('.').unwrap_or((time, ""));
    let mut t = hms.split(':').map(|p| p.parse::<i64>().ok());
    let (hh, mm, ss) = (t.next()??, t.next()??, t.next()??);
    if !(1..=12).contains(&m) || !(1..=31).contains(&day) || hh > 23 || mm > 59 || ss > 60 || frac.len() > 7 {
        return None;
    }
    let frac_100ns = if frac.is_empty() { 0 } else { format!("{frac:0<7}").parse::<i64>().ok()? };
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    Some(secs * 10_000_000 + frac_100ns + nettrail_etl::clock::FILETIME_UNIX_EPOCH)
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

    /// Whether the event passes; `name` is its provider's name, `filetime` its time.
    pub fn accepts(&self, e: &Event<'_>, name: Option<&str>, filetime: i64) -> bool {
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
            || name.is_some_and(|n| self.names.iter().any(|wanted| n.eq_ignore_ascii_case(wanted)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_bounds() {
        assert_eq!("+1.5".parse::<TimeBound>(), Ok(TimeBound::FromStart(1.5)));
        let TimeBound::Utc(ft) = "1970-01-01T00:00:01.25Z".parse::<TimeBound>().unwrap() else { panic!() };
        assert_eq!(ft, nettrail_etl::clock::FILETIME_UNIX_EPOCH + 12_500_000);
        assert!("yesterday".parse::<TimeBound>().is_err());
        assert!("2012-13-01T00:00:00Z".parse::<TimeBound>().is_err());
    }
}
