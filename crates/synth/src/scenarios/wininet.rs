//! WinINet clients (Office-like): a redirect, keep-alive reuse, a cache hit,
//! HTTP/2 streams, a 32-bit process. The request is opened and read on the
//! UI thread; WinINet's worker resolves, connects and sends.

use crate::windows::{Answer, Dial, Lookup};
use crate::{Process, SynthError};

use super::{DNSCACHE, app, ip, machine, sa};

/// 4: `officeapp.exe` GETs `http://example.com/old`; the server answers 301
/// to `https://www.example.com/new`, which WinINet follows on a new
/// connection (200 OK, read as 3 × 4,096 bytes).
pub fn wininet_redirect() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 8100, "officeapp.exe", r#""C:\Program Files\Office\officeapp.exe" /n"#)?;
    let (ui, worker) = ((pid, 8104), (pid, 8140));
    let connect = m.wininet_handle();
    let mut r = m.wininet_open_request(100.0, ui, connect, ("GET", "/old"), ("example.com", 80))?;
    m.wininet_send_request(100.5, ui, &r, "http://example.com/old")?;
    let old = [ip("93.184.216.34")];
    let lookup = Lookup::answered("example.com", Answer { cnames: &[], addresses: &old });
    let t = m.wininet_resolve(101.0, worker, &r, &[lookup], Some(DNSCACHE))?;
    let (mut plain, t) = m.wininet_connect(t + 0.1, worker, &r, &Dial::new(sa("93.184.216.34:80")).rtt(20.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r, &mut plain, (180, 0))?;
    // The 301 comes back; WinINet reads it itself and follows Location.
    let t = m.tcp_receive(t + 20.0, &mut plain, 250, worker)?;
    m.wininet_redirect(t + 0.1, worker, &r, "https://www.example.com/new")?;
    m.tcp_close(t + 0.2, worker, &plain)?;
    r.server = "www.example.com".to_string();
    r.port = 443;
    let new = [ip("93.184.215.14")];
    let lookup = Lookup::answered("www.example.com", Answer { cnames: &[], addresses: &new }).cached();
    let t = m.wininet_resolve(t + 0.3, worker, &r, &[lookup], Some(DNSCACHE))?;
    let (mut secure, t) = m.wininet_connect(t + 0.1, worker, &r, &Dial::new(sa("93.184.215.14:443")).rtt(20.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r, &mut secure, (200, 0))?;
    let mut t = m.wininet_send_done(t + 20.0, worker, &r, Some(&mut secure), ("HTTP/1.1 200 OK", 310))?;
    for _ in 0..3 {
        t = m.wininet_read(t + 1.0, ui, &r, Some(&mut secure), 4_096)?;
    }
    m.wininet_close(t + 2.0, ui, &r)?;
    m.finish()
}

/// 5: `mailclient.exe` GETs /mail/inbox (a new connection, 420 bytes out,
/// 8,000 read); a second request handle GETs /mail/folders on the pooled
/// connection (socket 0 in 1046; 380 out, 2,500 read) and is sent again on
/// the same handle (400 out, 304 Not Modified).
pub fn wininet_keepalive() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 8600, "mailclient.exe", r#""C:\Program Files\Mail\mailclient.exe""#)?;
    let (ui, worker) = ((pid, 8604), (pid, 8640));
    let connect = m.wininet_handle();
    let server = ("outlook.example.com", 443);
    let r1 = m.wininet_open_request(100.0, ui, connect, ("GET", "/mail/inbox"), server)?;
    m.wininet_send_request(100.5, ui, &r1, "https://outlook.example.com/mail/inbox")?;
    let addresses = [ip("52.97.146.178")];
    let lookup = Lookup::answered("outlook.example.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.wininet_resolve(101.0, worker, &r1, &[lookup], None)?;
    let (mut c, t) = m.wininet_connect(t + 0.1, worker, &r1, &Dial::new(sa("52.97.146.178:443")).rtt(25.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r1, &mut c, (420, 0))?;
    let t = m.wininet_send_done(t + 25.0, worker, &r1, Some(&mut c), ("HTTP/1.1 200 OK", 350))?;
    let t = m.wininet_read(t + 1.0, ui, &r1, Some(&mut c), 4_096)?;
    let t = m.wininet_read(t + 1.0, ui, &r1, Some(&mut c), 3_904)?;
    m.wininet_close(t + 1.0, ui, &r1)?;

    let r2 = m.wininet_open_request(300.0, ui, connect, ("GET", "/mail/folders"), server)?;
    m.wininet_send_request(300.5, ui, &r2, "https://outlook.example.com/mail/folders")?;
    m.wininet_reuse_connection(301.0, worker, &r2)?;
    let t = m.wininet_send(301.1, worker, &r2, &mut c, (380, 0))?;
    let t = m.wininet_send_done(t + 25.0, worker, &r2, Some(&mut c), ("HTTP/1.1 200 OK", 300))?;
    m.wininet_read(t + 1.0, ui, &r2, Some(&mut c), 2_500)?;

    m.wininet_send_request(600.0, ui, &r2, "https://outlook.example.com/mail/folders")?;
    m.wininet_reuse_connection(600.5, worker, &r2)?;
    let t = m.wininet_send(600.6, worker, &r2, &mut c, (400, 0))?;
    let t = m.wininet_send_done(t + 25.0, worker, &r2, Some(&mut c), ("HTTP/1.1 304 Not Modified", 200))?;
    m.wininet_close(t + 1.0, ui, &r2)?;
    m.finish()
}

/// 6: `officeapp.exe` GETs `https://cdn.office.example/img/logo.png` and
/// WinINet answers from its cache (1017): no lookup, no connection; 5,120
/// bytes read.
pub fn wininet_cache_hit() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 8200, "officeapp.exe", r#""C:\Program Files\Office\officeapp.exe""#)?;
    let ui = (pid, 8204);
    let connect = m.wininet_handle();
    let r = m.wininet_open_request(100.0, ui, connect, ("GET", "/img/logo.png"), ("cdn.office.example", 443))?;
    m.wininet_send_request(100.3, ui, &r, "https://cdn.office.example/img/logo.png")?;
    m.wininet_cache_hit(100.6, ui, &r)?;
    let t = m.wininet_send_done(100.9, ui, &r, None, ("HTTP/1.1 200 OK", 0))?;
    let t = m.wininet_read(t + 0.2, ui, &r, None, 4_096)?;
    let t = m.wininet_read(t + 0.2, ui, &r, None, 1_024)?;
    m.wininet_close(t + 0.5, ui, &r)?;
    m.finish()
}

/// 7: `officeapp.exe` GETs /a (stream 1: 3,000 + 2,000 bytes) and /b
/// (stream 3: 7,000 bytes) from `https://h2.office.example` on one HTTP/2
/// connection: the data comes in stream events (1064), reads carry Request 0.
pub fn wininet_http2() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 8300, "officeapp.exe", r#""C:\Program Files\Office\officeapp.exe""#)?;
    let (ui, worker) = ((pid, 8304), (pid, 8340));
    let connect = m.wininet_handle();
    let server = ("h2.office.example", 443);
    let r1 = m.wininet_open_request(100.0, ui, connect, ("GET", "/a"), server)?;
    m.wininet_send_request(100.3, ui, &r1, "https://h2.office.example/a")?;
    let addresses = [ip("13.107.6.171")];
    let lookup = Lookup::answered("h2.office.example", Answer { cnames: &[], addresses: &addresses });
    let t = m.wininet_resolve(100.5, worker, &r1, &[lookup], Some(DNSCACHE))?;
    let (mut c, t) = m.wininet_connect(t + 0.1, worker, &r1, &Dial::new(sa("13.107.6.171:443")).rtt(15.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r1, &mut c, (150, 0))?;
    let t = m.wininet_send_done(t + 15.0, worker, &r1, Some(&mut c), ("HTTP/2.0 200", 90))?;
    let t = m.wininet_stream_data(t + 1.0, worker, &r1, &mut c, (1, 3_000))?;
    let t = m.wininet_stream_data(t + 1.0, worker, &r1, &mut c, (1, 2_000))?;
    m.wininet_close(t + 1.0, ui, &r1)?;

    let r2 = m.wininet_open_request(t + 10.0, ui, connect, ("GET", "/b"), server)?;
    m.wininet_send_request(t + 10.3, ui, &r2, "https://h2.office.example/b")?;
    m.wininet_reuse_connection(t + 10.5, worker, &r2)?;
    let t = m.wininet_send(t + 10.6, worker, &r2, &mut c, (120, 0))?;
    let t = m.wininet_send_done(t + 15.0, worker, &r2, Some(&mut c), ("HTTP/2.0 200", 80))?;
    let t = m.wininet_stream_data(t + 1.0, worker, &r2, &mut c, (3, 7_000))?;
    m.wininet_close(t + 1.0, ui, &r2)?;
    m.finish()
}

/// 26: a 32-bit `legacyapp.exe` (WOW64) GETs
/// `https://intranet.corp.example.com/api/data` with WinINet: its WinINet and
/// DNS-Client events are 32-bit records, AFD's and TCPIP's 64-bit.
pub fn wow64_wininet() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = m.process(
        Process::new(26100, 6412, "legacyapp.exe")
            .command_line(r#""C:\Program Files (x86)\Legacy\legacyapp.exe""#)
            .wow64(),
    )?;
    let (ui, worker) = ((pid, 26104), (pid, 26140));
    let connect = m.wininet_handle();
    let server = ("intranet.corp.example.com", 443);
    let r = m.wininet_open_request(100.0, ui, connect, ("GET", "/api/data"), server)?;
    m.wininet_send_request(100.3, ui, &r, "https://intranet.corp.example.com/api/data")?;
    let addresses = [ip("10.0.0.20")];
    let lookup = Lookup::answered("intranet.corp.example.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.wininet_resolve(100.5, worker, &r, &[lookup], Some(DNSCACHE))?;
    let (mut c, t) = m.wininet_connect(t + 0.1, worker, &r, &Dial::new(sa("10.0.0.20:443")).rtt(3.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r, &mut c, (300, 0))?;
    let mut t = m.wininet_send_done(t + 5.0, worker, &r, Some(&mut c), ("HTTP/1.1 200 OK", 280))?;
    for _ in 0..2 {
        t = m.wininet_read(t + 1.0, ui, &r, Some(&mut c), 4_096)?;
    }
    m.wininet_close(t + 1.0, ui, &r)?;
    m.finish()
}
