//! Other machines than the default Windows 10 22H2 desktop's 64-bit apps:
//! 32-bit (WOW64) processes, whose user-mode providers log EVENT_HEADER32
//! records with 4-byte pointers (each beside a 64-bit twin that must give
//! the same tables), and a Windows 11 22H2 desktop, whose providers log
//! their newer event versions.

use nettrail_etl::Guid;

use crate::windows::{Answer, Dial, Exchange, Lookup, Machine, WebThreads};
use crate::{Process, SynthConfig, SynthError};

use super::handoffs::{BUILD_REQUEST_RET, FIXTURE_SEND_RET, TP_POST_WORK, app_stack, fixture_address, map_fixture};
use super::{DNSCACHE, ip, machine, machine_with, sa};

/// A user's process started before the trace, 32- or 64-bit.
fn app_of(m: &mut Machine, pid: u32, image: &str, command_line: &str, pointer_size: u8) -> Result<u32, SynthError> {
    m.process(Process::new(pid, 6412, image).command_line(command_line).pointer_size(pointer_size))
}

/// Word of `pointer_size` fetching through WinINet: see [`office_wininet_32`].
fn office_wininet(pointer_size: u8) -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let office = r#""C:\Program Files (x86)\Microsoft Office\root\Office16\WINWORD.EXE" /n"#;
    let word = app_of(&mut m, 9400, "WINWORD.EXE", office, pointer_size)?;
    map_fixture(&mut m, word)?;
    let (ui, pool, worker) = ((word, 9404), (word, 9436), (word, 9452));
    let work = m.tp_work(word, fixture_address(&m, word, 0x1130)?);
    let stack = app_stack(&m, word, TP_POST_WORK, &[BUILD_REQUEST_RET, FIXTURE_SEND_RET])?;
    m.tp_post(120.0, ui, &work, &stack)?;
    m.tp_run(120.4, pool, &work)?;
    let connect = m.wininet_handle();
    let server = ("templates.office.example", 443);
    let r = m.wininet_open_request(121.0, pool, connect, ("GET", "/list?lang=en-US"), server)?;
    m.wininet_send_request(121.3, pool, &r, "https://templates.office.example/list?lang=en-US")?;
    m.tp_done(121.6, pool, &work)?;
    let addresses = [ip("52.109.8.19")];
    let lookup = Lookup::answered("templates.office.example", Answer { cnames: &[], addresses: &addresses });
    let t = m.wininet_resolve(121.8, worker, &r, &[lookup], Some(DNSCACHE))?;
    let (mut tcp, t) = m.wininet_connect(t + 0.1, worker, &r, &Dial::new(sa("52.109.8.19:443")).rtt(28.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r, &mut tcp, (540, 0))?;
    let mut t = m.wininet_send_done(t + 29.0, worker, &r, Some(&mut tcp), ("HTTP/1.1 200 OK", 430))?;
    for bytes in [16_384, 3_311] {
        t = m.wininet_read(t + 1.0, pool, &r, Some(&mut tcp), bytes)?;
    }
    m.wininet_close(t + 1.0, pool, &r)?;
    m.finish()
}

/// 32-bit Word (as most Office installations are) fetches a
/// template list through WinINet: its UI thread posts a thread-pool work
/// item (from the fixture DLL's code); the item, on a pool thread, opens and
/// sends `GET https://templates.office.example/list?lang=en-US`; WinINet's
/// worker resolves the name through the DNS Client service, connects,
/// sends 540 bytes and gets `200 OK` (430 bytes of head); the pool thread
/// reads 16,384 + 3,311 bytes and closes the handle.
pub fn office_wininet_32() -> Result<Vec<u8>, SynthError> {
    office_wininet(4)
}

/// The same as a 64-bit process: the twin the 32-bit trace must match.
pub fn office_wininet_64() -> Result<Vec<u8>, SynthError> {
    office_wininet(8)
}

/// `syncagent.exe` of `pointer_size`: see [`winhttp_32`].
fn winhttp_app(pointer_size: u8) -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let agent = r#""C:\Program Files (x86)\Sync\syncagent.exe" --once"#;
    let pid = app_of(&mut m, 8800, "syncagent.exe", agent, pointer_size)?;
    let th = WebThreads { app: (pid, 8804), worker: (pid, 8848), io: (pid, 8852) };
    let s = m.winhttp_open(200.0, th.app)?;
    let addresses = [ip("20.42.65.92")];
    let lookup = Lookup::answered("sync.example.net", Answer { cnames: &[], addresses: &addresses });
    let dial = Dial::new(sa("20.42.65.92:443")).rtt(35.0);
    let get = Exchange::new("GET", "sync.example.net", "/v2/manifest", "HTTP/1.1 200 OK", 4_200);
    let what = ("GET", "https://sync.example.net/v2/manifest", "sync.example.net");
    let (r, mut c, t) = m.winhttp_fetch(200.5, th, &s, what, (&[lookup], DNSCACHE), &dial, &get)?;
    let post = Exchange::new("POST", "sync.example.net", "/v2/report", "HTTP/1.1 204 No Content", 0).body(1_500);
    let (_, t) = m.winhttp_fetch_on(t + 3.0, th, &s, ("POST", "https://sync.example.net/v2/report"), &mut c, &post)?;
    let t = m.winhttp_close_socket(t + 10.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 0.1, th.app, &s)?;
    m.finish()
}

/// `syncagent.exe`, a 32-bit WinHTTP app, GETs
/// `https://sync.example.net/v2/manifest` (4,200-byte body) and, on the same
/// keep-alive connection, POSTs 1,500 bytes to `/v2/report` (`204 No
/// Content`); the name is looked up over the network.
pub fn winhttp_32() -> Result<Vec<u8>, SynthError> {
    winhttp_app(4)
}

/// Its 64-bit twin.
pub fn winhttp_64() -> Result<Vec<u8>, SynthError> {
    winhttp_app(8)
}

/// A Windows 11 22H2 desktop (build 22621), whose providers log the event
/// versions that build declares (TCPIP's connection events v1 with the
/// process start key, its rundown v2, its sends v3; DNS-Client's queries
/// v2 with the client's process id; WebIO's connects and transfers v1):
/// - a connection of `Teams.exe` that exists when the trace starts (rundown);
/// - a browser-like WinHTTP client loading a page and a script over one
///   connection, the name looked up over the network (a CNAME);
/// - `git.exe` cloning over plain Winsock, its name from the DNS cache.
pub fn windows11_desktop() -> Result<Vec<u8>, SynthError> {
    let mut m = machine_with(SynthConfig { build: 22621, ..SynthConfig::default() })?;
    m.dns_interface_servers(2.0, DNSCACHE, "Wi-Fi", &[ip("192.168.1.1")])?;

    let teams = super::app(&mut m, 3300, "Teams.exe", r#""C:\Users\alice\AppData\Local\Teams\Teams.exe""#)?;
    let local = m.ipv4;
    let existing = m.tcp_existing(teams, sa(&format!("{local}:51620")), sa("52.113.194.132:443"));
    m.tcp_rundown(0.5, &existing.tcb)?;

    let browser = super::app(&mut m, 6100, "msedge.exe", r#""C:\Program Files (x86)\Microsoft\Edge\msedge.exe""#)?;
    let th = WebThreads { app: (browser, 6104), worker: (browser, 6148), io: (browser, 6152) };
    let session = m.winhttp_open(300.0, th.app)?;
    let cnames = ["www.contoso.com.edgekey.net"];
    let addresses = [ip("23.46.201.90")];
    let lookup = Lookup::answered("www.contoso.com", Answer { cnames: &cnames, addresses: &addresses });
    let dial = Dial::new(sa("23.46.201.90:443")).rtt(18.0);
    let page = Exchange::new("GET", "www.contoso.com", "/", "HTTP/1.1 200 OK", 31_870);
    let what = ("GET", "https://www.contoso.com/", "www.contoso.com");
    let (r, mut c, t) = m.winhttp_fetch(300.5, th, &session, what, (&[lookup], DNSCACHE), &dial, &page)?;
    let script = Exchange::new("GET", "www.contoso.com", "/main.js", "HTTP/1.1 200 OK", 48_002);
    let (_, t) =
        m.winhttp_fetch_on(t + 4.0, th, &session, ("GET", "https://www.contoso.com/main.js"), &mut c, &script)?;
    let t = m.winhttp_close_socket(t + 500.0, th.app, &r, &c)?;
    m.winhttp_close_session(t + 0.1, th.app, &session)?;

    let git = super::app(&mut m, 7300, "git.exe", "git.exe clone https://git.example.com/team/repo.git")?;
    let th = (git, 7304);
    let addresses = [ip("140.82.121.3")];
    let lookup = Lookup::answered("git.example.com", Answer { cnames: &[], addresses: &addresses }).cached();
    let t = m.resolve(1_500.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, th, Guid::ZERO, "git.example.com", (0, &addresses))?;
    let mut conn = m.tcp_connect(t + 0.2, th, &Dial::new(sa("140.82.121.3:443")).blocking().rtt(25.0))?;
    let t = m.tcp_send(t + 26.0, th, &mut conn, 690)?;
    let mut t = m.tcp_receive(t + 25.0, &mut conn, 4_380, th)?;
    for _ in 0..3 {
        t = m.tcp_receive(t + 2.0, &mut conn, 65_536, th)?;
    }
    m.tcp_close(t + 1.0, th, &conn)?;
    m.finish()
}
