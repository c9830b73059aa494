//! Progress on stderr for long work: a bar with the percentage and the time
//! so far, redrawn at most four times a second, shown only when stderr is a
//! terminal, without `--quiet`, and after half a second (short runs print
//! nothing). stdout stays clean for pipes.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Progress {
    label: &'static str,
    total: u64,
    enabled: bool,
    started: Instant,
    last_draw: Option<Instant>,
}

impl Progress {
    pub fn new(label: &'static str, total: u64, quiet: bool) -> Progress {
        Progress {
            label,
            total: total.max(1),
            enabled: !quiet && std::io::stderr().is_terminal(),
            started: Instant::now(),
            last_draw: None,
        }
    }

    pub fn update(&mut self, done: u64) {
        if !self.enabled || self.started.elapsed() < Duration::from_millis(500) {
            return;
        }
        if self.last_draw.is_some_and(|t| t.elapsed() < Duration::from_millis(250)) {
            return;
        }
        self.last_draw = Some(Instant::now());
        let line = bar(self.label, done, self.total, self.started.elapsed());
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{line}");
        let _ = err.flush();
    }

    pub fn finish(&mut self) {
        if self.last_draw.take().is_some() {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r{:60}\r", "");
            let _ = err.flush();
        }
    }
}

/// `reading    [##########··········]  50%  1.2 s`.
fn bar(label: &str, done: u64, total: u64, elapsed: Duration) -> String {
    const WIDTH: u64 = 30;
    let done = done.min(total);
    let filled = (done * WIDTH / total.max(1)) as usize;
    let percent = done * 100 / total.max(1);
    format!(
        "{label:<10} [{}{}] {percent:3}%  {:.1} s",
        "#".repeat(filled),
        "·".repeat(WIDTH as usize - filled),
        elapsed.as_secs_f64()
    )
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars() {
        let half = bar("reading", 50, 100, Duration::from_millis(1250));
        assert_eq!(half, format!("reading    [{}{}]  50%  1.2 s", "#".repeat(15), "·".repeat(15)));
        assert!(bar("stitching", 7, 7, Duration::ZERO).contains(&format!("[{}] 100%", "#".repeat(30))));
        assert!(bar("x", 9, 3, Duration::ZERO).contains("100%"), "never past the end");
    }
}
