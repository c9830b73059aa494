//! Socket-level scenarios: Winsock clients and servers, UDP, QUIC, LDAP,
//! unusual address families, services and System, slot reuse, lost events.

use nettrail_etl::Guid;

use crate::sockaddr::{sockaddr_hv, sockaddr_vsock};
use crate::windows::{Answer, DPC, Dial, Exchange, Lookup, Tid, UdpReceive, WebThreads, ldap_scope};
use crate::{Process, SynthError};

use super::{DNSCACHE, app, ip, machine, sa};

/// 12: `poller.exe` makes 300 short connections to 10.1.2.3:8080, 20 ms
/// apart; TCPIP reuses three TCB addresses, AFD two endpoint addresses, and
/// the ports cycle through 50 values. Connection i sends 100 + i bytes and
/// receives 1,000 + 3i.
pub fn port_reuse() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 12100, "poller.exe", "poller.exe --target 10.1.2.3:8080")?;
    let th = (pid, 12104);
    let tcbs = [m.pool(), m.pool(), m.pool()];
    let endpoints = [m.pool(), m.pool()];
    let ports: Vec<u16> = (0..50).map(|_| m.port()).collect();
    for i in 0..300u32 {
        let at = 50.0 + 20.0 * f64::from(i);
        let k = i as usize;
        let dial =
            Dial::new(sa("10.1.2.3:8080")).blocking().rtt(1.0).reusing(tcbs[k % 3], endpoints[k % 2], ports[k % 50]);
        let mut c = m.tcp_connect(at, th, &dial)?;
        let t = m.tcp_send(at + 1.2, th, &mut c, 100 + i)?;
        let t = m.tcp_receive(t + 2.0, &mut c, 1_000 + 3 * i, th)?;
        m.tcp_close(t + 0.5, th, &c)?;
    }
    m.finish()
}

/// 13: `curl.exe` resolves example.org with getaddrinfo (over the network),
/// connects with connect(), does TLS, sends its request (a buffered send
/// AFD logs twice) and reads 5,222 bytes in four receives.
pub fn winsock_client() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 13100, "curl.exe", "curl.exe -s https://example.org/")?;
    let th = (pid, 13104);
    let addresses = [ip("93.184.215.14")];
    let lookup = Lookup::answered("example.org", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(100.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    m.getaddrinfo_completed(t + 0.05, th, Guid::ZERO, "example.org", (0, &addresses))?;
    let dial = Dial::new(sa("93.184.215.14:443")).blocking().rtt(18.0);
    let mut c = m.tcp_connect(t + 0.2, th, &dial)?;
    let t = m.tls_handshake(t + 18.5, th, &mut c, th)?;
    let request = 78 + 22;
    m.tcp_send_posted(t + 0.5, th, &mut c.tcb, request)?;
    let socket = c.socket.clone().expect("a Winsock socket");
    m.afd_send(t + 0.51, th, &socket, request, true)?;
    m.tcp_transmitted(t + 0.7, DPC, &mut c.tcb, request)?;
    let mut t = t + 19.0;
    for piece in [1_400, 1_400, 1_400, 1_022] {
        t = m.tcp_receive(t + 0.5, &mut c, piece, th)?;
    }
    m.tcp_close(t + 1.0, th, &c)?;
    m.finish()
}

/// 14: the Dnscache service's queries to 192.168.1.1:53 (one socket each),
/// W32Time's NTP exchange with time.windows.com (port 123 both ends, the
/// answer logged with swapped addresses), and `peer.exe`'s one socket
/// talking to three peers (3 × 200 and 2 × 150 with the first, 2 × 300 and
/// 500 with the second, that answer's addresses swapped too, 1,000 to the
/// third and nothing back).
pub fn udp() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let mut t = 100.0;
    for (name, answer) in [("a.example.com", 47), ("b.example.com", 79), ("c.example.com", 63)] {
        t = m.dns_over_udp(t, DNSCACHE, name, (31, answer))? + 50.0;
    }
    let w32time = m.process(
        Process::new(1744, 780, "svchost.exe")
            .command_line(r"C:\WINDOWS\system32\svchost.exe -k LocalService -s W32Time")
            .service()
            .user_sid("S-1-5-19"),
    )?;
    let th = (w32time, 1760);
    let addresses = [ip("40.119.6.228")];
    let lookup = Lookup::answered("time.windows.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(500.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    let ntp = m.udp_open(t + 0.5, th, false, Some(123))?;
    let server = sa("40.119.6.228:123");
    m.udp_send(t + 1.0, th, &ntp, server, 48)?;
    let answer = UdpReceive { synchronous: true, swapped: true, ..UdpReceive::default() };
    let t = m.udp_receive(t + 31.0, th, &ntp, server, 48, answer)?;
    m.udp_close(t + 1.0, th, &ntp)?;

    let pid = app(&mut m, 14100, "peer.exe", "peer.exe --mesh")?;
    let th = (pid, 14104);
    let u = m.udp_open(700.0, th, false, None)?;
    let (p1, p2, p3) = (sa("198.51.100.1:5000"), sa("198.51.100.2:5000"), sa("203.0.113.9:6000"));
    let message = UdpReceive { message: true, ..UdpReceive::default() };
    let mut t = 701.0;
    for round in 0..3 {
        t = m.udp_send(t + 5.0, th, &u, p1, 200)?;
        if round < 2 {
            t = m.udp_send(t + 1.0, th, &u, p2, 300)?;
            t = m.udp_receive(t + 20.0, th, &u, p1, 150, message)?;
        }
    }
    let swapped = UdpReceive { swapped: true, ..message };
    t = m.udp_receive(t + 5.0, th, &u, p2, 500, swapped)?;
    m.udp_send(t + 5.0, th, &u, p3, 1_000)?;
    m.finish()
}

/// 15: `msedge.exe` talks QUIC to www.google.com (142.250.74.36:443) on one
/// UDP socket: 10 datagrams out (8,988 bytes), 30 in (39,900 bytes).
pub fn quic() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 15100, "msedge.exe", r#""C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe""#)?;
    let th = (pid, 15180);
    let addresses = [ip("142.250.74.36")];
    let lookup = Lookup::answered("www.google.com", Answer { cnames: &[], addresses: &addresses }).cached();
    let t = m.resolve(100.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    let u = m.udp_open(t + 0.2, th, false, None)?;
    let server = sa("142.250.74.36:443");
    let message = UdpReceive { message: true, ..UdpReceive::default() };
    let sends = [1_250, 1_250, 1_250, 120, 1_250, 33, 1_250, 1_250, 45, 1_290];
    let mut t = t + 1.0;
    for (i, bytes) in sends.into_iter().enumerate() {
        t = m.udp_send(t + 1.0, th, &u, server, bytes)?;
        for _ in 0..3 {
            let bytes = if i % 2 == 0 { 1_350 } else { 1_310 };
            t = m.udp_receive(t + 4.0, th, &u, server, bytes, message)?;
        }
    }
    m.udp_close(t + 100.0, th, &u)?;
    m.finish()
}

/// 17: `powershell.exe` looks up dc01.corp.example.com, connects to its port
/// 389 with connect(), binds (no LDAP-Client event), and runs two searches
/// (LDAP-Client 30, then the request on the socket from the same thread).
pub fn ldap() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 17100, "powershell.exe", "powershell.exe -Command Get-ADUser alice")?;
    let th = (pid, 17104);
    let addresses = [ip("10.0.0.10")];
    let lookup = Lookup::answered("dc01.corp.example.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(100.0, th, Guid::ZERO, &lookup, DNSCACHE)?;
    let mut c = m.tcp_connect(t + 0.2, th, &Dial::new(sa("10.0.0.10:389")).blocking().rtt(1.0))?;
    let t = m.tcp_send(t + 1.5, th, &mut c, 1_800)?;
    let t = m.tcp_receive(t + 3.0, &mut c, 250, th)?;
    let base = "DC=corp,DC=example,DC=com";
    let user = "(&(objectClass=user)(sAMAccountName=alice))";
    m.ldap_search(t + 1.0, th, (base, ldap_scope::SUBTREE, user), &["cn", "mail", "memberOf"])?;
    let t = m.tcp_send(t + 1.05, th, &mut c, 312)?;
    let t = m.tcp_receive(t + 2.0, &mut c, 1_480, th)?;
    let config = "CN=Configuration,DC=corp,DC=example,DC=com";
    m.ldap_search(t + 1.0, th, (config, ldap_scope::ONE_LEVEL, "(objectClass=*)"), &["cn"])?;
    let t = m.tcp_send(t + 1.05, th, &mut c, 180)?;
    let t = m.tcp_receive(t + 2.0, &mut c, 2_900, th)?;
    m.tcp_close(t + 5.0, th, &c)?;
    m.finish()
}

/// 18: `devserver.exe` listens on port 8080 and accepts two clients
/// (TCPIP 1017 and AFD's AcceptEx on the same I/O thread; 400 bytes in,
/// 1,200 out each); Http.sys accepts a connection on port 80 (System's
/// TCB) and serves GET /status (200) and POST /api/report (201) on it to
/// `w3wp.exe`'s DefaultAppPool.
pub fn server() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 18100, "devserver.exe", r#""C:\dev\devserver.exe" --port 8080"#)?;
    let (main, io) = ((pid, 18104), (pid, 18120));
    let local = m.ipv4;
    let listener = m.tcp_listen(10.0, main, sa("0.0.0.0:8080"))?;
    for (i, client) in ["192.168.1.50:53001", "192.168.1.51:61002"].into_iter().enumerate() {
        let at = 100.0 + 200.0 * i as f64;
        let mut c = m.tcp_accepted(at, io, Some(&listener), sa(&format!("{local}:8080")), sa(client))?;
        let t = m.tcp_receive(at + 1.0, &mut c, 400, io)?;
        let t = m.tcp_send(t + 2.0, io, &mut c, 1_200)?;
        m.tcp_close(t + 5.0, io, &c)?;
    }

    let w3wp = m.process(
        Process::new(18400, 780, "w3wp.exe")
            .command_line(r#"c:\windows\system32\inetsrv\w3wp.exe -ap "DefaultAppPool""#)
            .service()
            .user_sid("S-1-5-82-3006700770-424185619-1745488364-794895919-4004696415"),
    )?;
    let (system, worker): (Tid, Tid) = ((4, 2252), (w3wp, 18412));
    let (server, client) = (sa(&format!("{local}:80")), sa("192.168.1.60:50500"));
    let mut tcp = m.tcp_accepted(600.0, system, None, server, client)?;
    let connection = m.httpsys_connection(600.1, server, client)?;
    let requests = [
        (0xff00_0000_8000_060d_u64, "GET", "http://intranet:80/status", 200u16, 350u32, 900u32),
        (0xff00_0000_8000_060e, "POST", "http://intranet:80/api/report", 201, 1_250, 180),
    ];
    let mut t = 601.0;
    for (request_id, verb, url, status, inbound, outbound) in requests {
        t = m.tcp_receive(t, &mut tcp, inbound, DPC)?;
        let r = crate::windows::ServerRequest { verb, url, status, queue: "DefaultAppPool", site: 1 };
        t = m.httpsys_request(
            t + 0.1,
            (system, worker),
            connection,
            (request_id, 0xff00_0000_6000_060c),
            client,
            &r,
            2.0,
        )?;
        t = m.tcp_send(t + 0.1, worker, &mut tcp, outbound)? + 50.0;
    }
    m.tcp_close(t + 100.0, system, &tcp)?;
    m.finish()
}

/// 19: loopback (`client.exe` ↔ `devserver.exe` on 127.0.0.1:8080), a
/// WinHTTP request to a NAS (192.168.1.50, private C), and Winsock
/// connections to 10.20.30.40:443 (private A), 172.16.5.5:22 (private B)
/// and 169.254.10.20:80 (link-local).
pub fn loopback_private() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let client = app(&mut m, 19100, "client.exe", r#""C:\Tools\client.exe""#)?;
    let server = app(&mut m, 19200, "devserver.exe", r#""C:\dev\devserver.exe" --port 8080"#)?;
    let ct = (client, 19104);
    let listener = m.tcp_listen(10.0, (server, 19204), sa("127.0.0.1:8080"))?;
    let mut c = m.tcp_connect(100.0, ct, &Dial::new(sa("127.0.0.1:8080")).blocking().rtt(0.1))?;
    let mut s = m.tcp_accepted(100.2, (server, 19220), Some(&listener), sa("127.0.0.1:8080"), c.tcb.local)?;
    let t = m.tcp_send(101.0, ct, &mut c, 120)?;
    let t = m.tcp_receive(t + 0.1, &mut s, 120, (server, 19220))?;
    let t = m.tcp_send(t + 1.0, (server, 19220), &mut s, 2_000)?;
    let t = m.tcp_receive(t + 0.1, &mut c, 2_000, ct)?;
    m.tcp_close(t + 1.0, ct, &c)?;
    m.tcp_close(t + 1.2, (server, 19220), &s)?;

    let th = WebThreads { app: ct, worker: (client, 19144), io: (client, 19148) };
    let session = m.winhttp_open(200.0, th.app)?;
    let nas = [ip("192.168.1.50")];
    let lookup = Lookup::answered("nas.local", Answer { cnames: &[], addresses: &nas }).cached();
    let dial = Dial::new(sa("192.168.1.50:5000")).rtt(1.0);
    let x = Exchange::new("GET", "nas.local:5000", "/api/status", "HTTP/1.1 200 OK", 540);
    let what = ("GET", "http://nas.local:5000/api/status", "nas.local");
    let (r, web, t) = m.winhttp_fetch(210.0, th, &session, what, (&[lookup], DNSCACHE), &dial, &x)?;
    let t = m.winhttp_close_socket(t + 1.0, th.app, &r, &web)?;
    m.winhttp_close_session(t + 0.5, th.app, &session)?;

    let ssh = app(&mut m, 19300, "ssh.exe", "ssh.exe admin@172.16.5.5")?;
    for (at, th, remote, sent, received) in [
        (400.0, ct, "10.20.30.40:443", 700u32, 4_100u32),
        (500.0, (ssh, 19304), "172.16.5.5:22", 1_500, 2_300),
        (600.0, ct, "169.254.10.20:80", 90, 310),
    ] {
        let mut c = m.tcp_connect(at, th, &Dial::new(sa(remote)).blocking().rtt(1.0))?;
        let t = m.tcp_send(at + 2.0, th, &mut c, sent)?;
        let t = m.tcp_receive(t + 2.0, &mut c, received, th)?;
        m.tcp_close(t + 2.0, th, &c)?;
    }
    m.finish()
}

/// 20: `wslservice.exe` talks to a VM over a Hyper-V socket (AF 34: 64 out,
/// 128 in), `wslhost.exe` over a VSock one (AF 40, CID 3 port 50000: 256
/// out, 1,024 in), `btagent.exe` over Bluetooth RFCOMM (AF 32, a family
/// nettrail does not interpret: 20 out, 40 in). AFD only: TCPIP is not involved.
pub fn hyperv_vsock() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let vm = Guid::parse_const("5f3a8c21-9d4e-4b7a-8e61-2c0d9f7b3a15");
    let service = Guid::parse_const("00000001-facb-11e6-bd58-64006a7986d3");
    let mut bluetooth = vec![32u8, 0];
    bluetooth.extend_from_slice(&0x0000_a4c3_f0e2_1d55u64.to_le_bytes());
    bluetooth.extend_from_slice(&Guid::parse_const("00001101-0000-1000-8000-00805f9b34fb").to_bytes_le());
    bluetooth.extend_from_slice(&4u32.to_le_bytes());
    // (process, image), (family, protocol), peer, (bytes sent, received)
    let sockets = [
        ((20100, "wslservice.exe"), (34, 1), sockaddr_hv(vm, service).to_vec(), (64, 128)),
        ((20200, "wslhost.exe"), (40, 0), sockaddr_vsock(3, 50_000).to_vec(), (256, 1_024)),
        ((20300, "btagent.exe"), (32, 3), bluetooth, (20, 40)),
    ];
    for (i, ((pid, image), (family, protocol), remote, (sent, received))) in sockets.into_iter().enumerate() {
        let pid = app(&mut m, pid, image, image)?;
        let th = (pid, pid + 4);
        let at = 100.0 + 100.0 * i as f64;
        let s = m.afd_create(at, th, (family, 1, protocol), None)?;
        m.afd_connect(at + 0.1, th, &s, &remote, false)?;
        m.afd_send(at + 1.0, th, &s, sent, false)?;
        m.afd_receive(at + 3.0, th, &s, received)?;
        m.afd_close(at + 20.0, th, &s)?;
    }
    m.finish()
}

/// 21: BITS (an svchost) downloads 64 KiB from 13.107.4.50:443: its connect
/// completes on a System thread, data events carry System's and the idle
/// process's ids, AFD's receive completions another process's (explorer);
/// System's SMB client (kernel, no socket) reads from a file server; and
/// System has two idle connections known only from TCPIP's rundown.
pub fn system_services() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let explorer = app(&mut m, 3400, "explorer.exe", r"C:\WINDOWS\Explorer.EXE")?;
    let bits = m.process(
        Process::new(2100, 780, "svchost.exe")
            .command_line(r"C:\WINDOWS\System32\svchost.exe -k netsvcs -p -s BITS")
            .service(),
    )?;
    let local = m.ipv4;
    for (port, remote) in [(49668, "192.168.1.10:445"), (49669, "192.168.1.11:135")] {
        let c = m.tcp_existing(4, sa(&format!("{local}:{port}")), sa(remote));
        m.tcp_rundown(0.5, &c.tcb)?;
    }
    let (system, other): (Tid, Tid) = ((4, 16), (explorer, 3404));
    let th = (bits, 2120);
    let addresses = [ip("13.107.4.50")];
    let lookup = Lookup::answered("download.windowsupdate.com", Answer { cnames: &[], addresses: &addresses });
    let t = m.resolve(100.0, th, Guid::ZERO, &lookup.cached(), DNSCACHE)?;
    let dial = Dial::new(sa("13.107.4.50:443")).completion(system).rtt(14.0);
    let mut c = m.tcp_connect(t + 0.1, th, &dial)?;
    // The connect carries its name resolution context (a choice: which
    // clients do is not documented; BITS resolves through WinHTTP).
    m.tcp_connect_by_name(t + 0.16, th, &c.tcb, "download.windowsupdate.com")?;
    let t = m.tls_handshake(t + 15.0, th, &mut c, other)?;
    let mut t = m.tcp_send(t + 1.0, th, &mut c, 422)?;
    let socket = c.socket.clone().expect("a Winsock socket");
    for i in 0..4 {
        t += 3.0;
        let context = if i % 2 == 0 { system } else { DPC };
        m.tcp_received(t, context, &mut c.tcb, 16_384)?;
        m.afd_receive(t + 0.05, other, &socket, 16_384)?;
    }
    m.tcp_close(t + 10.0, th, &c)?;

    let mut smb = m.tcp_connect(300.0, system, &Dial::new(sa("192.168.1.10:445")).kernel().rtt(1.0))?;
    let t = m.tcp_send(302.0, system, &mut smb, 1_120)?;
    m.tcp_receive(t + 1.0, &mut smb, 65_536 + 124, DPC)?;
    m.finish()
}

/// 25: `client.exe` while events are lost: a connection to 93.184.216.34
/// whose connect fell in lost buffers (only its data and close are traced:
/// 700 out, 5,000 in), a connection whose close was lost (300 out, 1,200
/// in) and whose TCB and AFD endpoint a later connection reuses (200 out,
/// 900 in).
pub fn lost_events() -> Result<Vec<u8>, SynthError> {
    let mut m = machine()?;
    let pid = app(&mut m, 25100, "client.exe", r#""C:\Tools\client.exe" --batch"#)?;
    let th = (pid, 25104);
    let local = m.ipv4;
    m.synth().lose_buffers(40.0, 1, 2)?;
    let mut lost = m.tcp_existing(pid, sa(&format!("{local}:50999")), sa("93.184.216.34:443"));
    let t = m.tcp_send(100.0, th, &mut lost, 700)?;
    let t = m.tcp_receive(t + 20.0, &mut lost, 5_000, th)?;
    m.tcp_close(t + 5.0, th, &lost)?;

    let (tcb, endpoint) = (m.pool(), m.pool());
    let first_port = m.port();
    let dial = Dial::new(sa("198.18.0.7:443")).reusing(tcb, endpoint, first_port);
    let mut unclosed = m.tcp_connect(200.0, th, &dial)?;
    let t = m.tcp_send(215.0, th, &mut unclosed, 300)?;
    m.tcp_receive(t + 15.0, &mut unclosed, 1_200, th)?;
    m.synth().lose_events(300.0, 2, 57)?;

    let second_port = m.port();
    let dial = Dial::new(sa("198.18.0.8:443")).reusing(tcb, endpoint, second_port);
    let mut reuse = m.tcp_connect(400.0, th, &dial)?;
    let t = m.tcp_send(415.0, th, &mut reuse, 200)?;
    let t = m.tcp_receive(t + 15.0, &mut reuse, 900, th)?;
    m.tcp_close(t + 5.0, th, &reuse)?;
    m.finish()
}
