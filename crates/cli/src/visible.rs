//! Human-readable output that a trace cannot turn into terminal commands:
//! every control character in it is shown as an escape, except the line
//! feeds that end its lines ([`nettrail_decode::safe_text`] has the rules).

use std::io::{self, Write};

pub use nettrail_decode::safe_text::Visible;
use nettrail_decode::safe_text::push_visible;

/// Prints `nettrail: MESSAGE` on stderr with the message's control characters escaped.
pub fn message(text: &str) {
    let mut line = String::from("nettrail: ");
    push_visible(&mut line, text);
    line.push('\n');
    let _ = io::stderr().lock().write_all(line.as_bytes());
}
