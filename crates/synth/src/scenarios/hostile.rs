//! A trace whose strings attack whoever reads it: a process name that is a
//! spreadsheet formula and clears the terminal, a URL with terminal escapes,
//! line breaks and a bidirectional override, a host that is a formula. What
//! Windows logs is only the shape; the strings are what an attacker chooses.

use crate::SynthError;
use crate::windows::{Answer, Dial, Exchange, Lookup, WebThreads};

use super::{DNSCACHE, app, ip, machine, sa};

/// The image name of the hostile process.
pub const HOSTILE_IMAGE: &str = "=cmd|' /C calc'!A0\u{1b}[2J.exe";
/// The hostile URL's path (after `https://` and the host).
pub const HOSTILE_PATH: &str = "/\u{1b}]0;owned\u{7}x\r\nforged line\u{202e}gpj.exe\u{9b}31m";
/// The hostile host name.
pub const HOSTILE_HOST: &str = "@SUM(1+1)\u{1b}[31m.example";

/// A WinHTTP GET by `HOSTILE_IMAGE` of `https://HOSTILE_HOST HOSTILE_PATH`.
pub fn hostile_strings() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 6660, HOSTILE_IMAGE, "\u{1b}]0;title\u{7}=HYPERLINK(\"http://x\")")?;
    let th = WebThreads { app: (pid, 6664), worker: (pid, 6708), io: (pid, 6712) };
    let s = m.winhttp_open(100.0, th.app)?;
    let addresses = [ip("93.184.216.34")];
    let lookup = Lookup::answered(HOSTILE_HOST, Answer { cnames: &[], addresses: &addresses }).cached();
    let dial = Dial::new(sa("93.184.216.34:443")).rtt(24.0);
    let x = Exchange::new("GET", HOSTILE_HOST, HOSTILE_PATH, "HTTP/1.1 200 OK\u{1b}[5m", 512);
    let url = format!("https://{HOSTILE_HOST}{HOSTILE_PATH}");
    let (r, c, t) = m.winhttp_fetch(100.5, th, &s, ("GET", &url, HOSTILE_HOST), (&[lookup], DNSCACHE), &dial, &x)?;
    let t = m.winhttp_close_socket(t + 20.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 0.1, th.app, &s)?;
    m.finish()
}
