//! A few seconds of an ordinary desktop, for the README's demo: a browser-like
//! WinHTTP client loading a page and two resources over one connection, an
//! Office-like WinINet client fetching a template list from a thread-pool
//! work item (with the stacks that show who posted it), the time service's
//! lookup and NTP exchange, and an LDAP lookup of a user.

use nettrail_etl::Guid;

use crate::windows::{Answer, Dial, Exchange, Lookup, UdpReceive, WebThreads, ldap_scope};
use crate::{Process, SynthConfig, SynthError};

use super::handoffs::{BUILD_REQUEST_RET, FIXTURE_SEND_RET, TP_POST_WORK, app_stack, map_fixture};
use super::{DNSCACHE, app, ip, machine_with, sa};

/// The demo trace (about 4 seconds), compressed as `wpr -stop` writes it.
pub fn sample() -> Result<Vec<u8>, SynthError> {
    let mut m = machine_with(SynthConfig { compress: true, ..SynthConfig::default() })?;
    m.dns_interface_servers(2.0, DNSCACHE, "Ethernet", &[ip("192.168.1.1")])?;

    // A browser-like client: a page and two resources on one keep-alive connection.
    let browser =
        app(&mut m, 4820, "browser.exe", r#""C:\Program Files\Browser\browser.exe" https://www.example.com/"#)?;
    let th = WebThreads { app: (browser, 4824), worker: (browser, 4868), io: (browser, 4872) };
    let session = m.winhttp_open(150.0, th.app)?;
    let cnames = ["www.example.com.cdn.example.net"];
    let addresses = [ip("93.184.216.34")];
    let lookup = Lookup::answered("www.example.com", Answer { cnames: &cnames, addresses: &addresses });
    let dial = Dial::new(sa("93.184.216.34:443")).rtt(24.0);
    let x = Exchange::new("GET", "www.example.com", "/", "HTTP/1.1 200 OK", 24_310);
    let what = ("GET", "https://www.example.com/", "www.example.com");
    let (page, mut c, t) = m.winhttp_fetch(160.0, th, &session, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let mut t = t;
    for (path, length) in [("/style.css", 8_120), ("/app.js", 61_400)] {
        let x = Exchange::new("GET", "www.example.com", path, "HTTP/1.1 200 OK", length);
        let url = format!("https://www.example.com{path}");
        t = m.winhttp_fetch_on(t + 5.0, th, &session, ("GET", &url), &mut c, &x)?.1;
    }
    let t = m.winhttp_close_socket(t + 2_000.0, th.app, &page, &c)?;
    m.winhttp_close_session(t + 1.0, th.app, &session)?;

    // An Office-like client: its UI thread posts work to the thread pool
    // (from the fixture DLL's code, whose PDB ships with the tests); a pool
    // thread sends the request with WinINet, whose worker does the rest.
    let word = app(&mut m, 5630, "WINWORD.EXE", r#""C:\Program Files\Microsoft Office\root\Office16\WINWORD.EXE""#)?;
    map_fixture(&mut m, word)?;
    let (ui, pool, worker) = ((word, 5634), (word, 5690), (word, 5702));
    let work = m.tp_work(word, 0x7ffd_4a20_1130);
    let stack = app_stack(&m, word, TP_POST_WORK, &[BUILD_REQUEST_RET, FIXTURE_SEND_RET])?;
    m.tp_post(899.0, ui, &work, &stack)?;
    m.tp_run(899.6, pool, &work)?;
    let connect = m.wininet_handle();
    let server = ("templates.office.example", 443);
    let r = m.wininet_open_request(900.0, pool, connect, ("GET", "/list?lang=en-US"), server)?;
    m.wininet_send_request(900.4, pool, &r, "https://templates.office.example/list?lang=en-US")?;
    m.tp_done(900.6, pool, &work)?;
    let addresses = [ip("52.109.8.19")];
    let lookup = Lookup::answered("templates.office.example", Answer { cnames: &[], addresses: &addresses });
    let t = m.wininet_resolve(900.8, worker, &r, &[lookup], Some(DNSCACHE))?;
    let (mut tcp, t) = m.wininet_connect(t + 0.1, worker, &r, &Dial::new(sa("52.109.8.19:443")).rtt(30.0))?;
    let t = m.wininet_send(t + 0.1, worker, &r, &mut tcp, (512, 0))?;
    let mut t = m.wininet_send_done(t + 31.0, worker, &r, Some(&mut tcp), ("HTTP/1.1 200 OK", 420))?;
    for bytes in [8_192, 8_192, 3_311] {
        t = m.wininet_read(t + 1.0, ui, &r, Some(&mut tcp), bytes)?;
    }
    m.wininet_close(t + 1.0, ui, &r)?;

    // The time service: a lookup over the network, then NTP.
    let w32time = m.process(
        Process::new(1744, 780, "svchost.exe")
            .command_line(r"C:\WINDOWS\system32\svchost.exe -k LocalService -s W32Time")
            .service()
            .user_sid("S-1-5-19"),
    )?;
    let th = (w32time, 1760);
    let addresses = [ip("40.119.6.228")];
    let lookup = Lookup::answered("time.windows.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(2_100.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    let ntp = m.udp_open(t + 0.5, th, false, Some(123))?;
    let server = sa("40.119.6.228:123");
    m.udp_send(t + 1.0, th, &ntp, server, 48)?;
    let synchronous = UdpReceive { synchronous: true, ..UdpReceive::default() };
    let t = m.udp_receive(t + 33.0, th, &ntp, server, 48, synchronous)?;
    m.udp_close(t + 1.0, th, &ntp)?;

    // An LDAP lookup of a user against the domain controller.
    let ps = app(&mut m, 7012, "powershell.exe", "powershell.exe -Command Get-ADUser alice")?;
    let th = (ps, 7016);
    let addresses = [ip("10.0.0.10")];
    let lookup = Lookup::answered("dc01.corp.example.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(3_000.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    let mut c = m.tcp_connect(t + 0.2, th, &Dial::new(sa("10.0.0.10:389")).blocking().rtt(1.0))?;
    let t = m.tcp_send(t + 1.5, th, &mut c, 1_800)?;
    let t = m.tcp_receive(t + 3.0, &mut c, 250, th)?;
    let filter = "(&(objectClass=user)(sAMAccountName=alice))";
    m.ldap_search(t + 1.0, th, ("DC=corp,DC=example,DC=com", ldap_scope::SUBTREE, filter), &["cn", "mail"])?;
    let t = m.tcp_send(t + 1.05, th, &mut c, 296)?;
    let t = m.tcp_receive(t + 2.0, &mut c, 1_320, th)?;
    m.tcp_close(t + 900.0, th, &c)?;
    m.finish()
}
