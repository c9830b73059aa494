//! Progress on stderr for long work: a percentage line, redrawn at most four
//! times a second, shown only when stderr is a terminal and after half a
//! second (short runs print nothing). stdout stays clean for pipes.

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
        let percent = done.min(self.total) * 100 / self.total;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r{}: {percent:3}%", self.label);
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

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}
