//! The sample trace that ships in `samples/`: a short browsing session seen by
//! Microsoft-Windows-Kernel-Network, written with nettrail's ETL writer.
//! Payloads follow the provider's manifest layouts (reference/schemas) with
//! what real traces show beyond the manifest (tx__KernelNetwork.etl): `connid`
//! is pointer-sized, and receives are logged outside the process (header PID
//! and TID 0; the payload's PID is the truth). One process resolves a name
//! over UDP, opens two TCP connections, sends and receives, and disconnects;
//! a second process talks to a local service.

use nettrail_etl::Guid;
use nettrail_etl::write::{Context, Descriptor, EventHeaderRecord, TraceConfig, TraceWriter};

const KERNEL_NETWORK: Guid = Guid::parse_const("7dd42a49-5329-4832-8dfd-43d979153a88");
const KEYWORD_IPV4: u64 = 0x10;
/// The provider's Analytic channel (16) and the keyword bit ETW sets for it.
const CHANNEL_ANALYTIC: u8 = 16;
const KEYWORD_ANALYTIC_CHANNEL: u64 = 0x8000_0000_0000_0000;
const TASK_TCPIP: u16 = 10;
const TASK_UDPIP: u16 = 11;

/// IPv4 address in the payload's network byte order.
fn ipv4(a: [u8; 4]) -> u32 {
    u32::from_le_bytes(a)
}

/// TCP/UDP port as the payload stores it (big-endian).
fn port(p: u16) -> u16 {
    u16::from_le_bytes(p.to_be_bytes())
}

struct Flow {
    pid: u32,
    tid: u32,
    cpu: u16,
    daddr: [u8; 4],
    saddr: [u8; 4],
    dport: u16,
    sport: u16,
    connid: u64,
}

struct Session {
    writer: TraceWriter,
    /// Raw QPC ticks at the session start; events are placed relative to it.
    start: u64,
}

impl Session {
    /// Writes one event at `at_ms` after the session start. Sends and connects
    /// run on the process's thread; receives arrive in the kernel (header 0).
    fn emit(&mut self, at_ms: u64, flow: &Flow, id: u16, task: u16, payload: &[u8]) {
        let in_process = !matches!(id, 11 | 43);
        let context = Context {
            timestamp: self.start + at_ms * 10_000,
            cpu: flow.cpu,
            process_id: if in_process { flow.pid } else { 0 },
            thread_id: if in_process { flow.tid } else { 0 },
        };
        let descriptor = Descriptor {
            id,
            version: 0,
            channel: CHANNEL_ANALYTIC,
            level: 4,
            opcode: id as u8,
            task,
            keywords: KEYWORD_IPV4 | KEYWORD_ANALYTIC_CHANNEL,
        };
        let record = EventHeaderRecord::new(context, KERNEL_NETWORK, descriptor, payload);
        self.writer.write_event_header(&record).expect("sample events fit in a buffer");
    }

    /// The first six fields every Kernel-Network IPv4 event starts with.
    fn head(flow: &Flow, size: u32) -> Vec<u8> {
        let mut p = Vec::with_capacity(48);
        p.extend_from_slice(&flow.pid.to_le_bytes());
        p.extend_from_slice(&size.to_le_bytes());
        p.extend_from_slice(&ipv4(flow.daddr).to_le_bytes());
        p.extend_from_slice(&ipv4(flow.saddr).to_le_bytes());
        p.extend_from_slice(&port(flow.dport).to_le_bytes());
        p.extend_from_slice(&port(flow.sport).to_le_bytes());
        p
    }

    /// KNetEvt_ConnectIPV4 (12): …, mss, sackopt, tsopt, wsopt, rcvwin, rcvwinscale, sndwinscale, seqnum, connid.
    fn connect(&mut self, at_ms: u64, f: &Flow) {
        let mut p = Self::head(f, 0);
        for v in [1460u16, 1, 0, 1] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend_from_slice(&65_535u32.to_le_bytes());
        p.extend_from_slice(&8u16.to_le_bytes());
        p.extend_from_slice(&8u16.to_le_bytes());
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(&f.connid.to_le_bytes());
        self.emit(at_ms, f, 12, TASK_TCPIP, &p);
    }

    /// KNetEvt_SendIPV4 (10): …, startime, endtime, seqnum, connid.
    fn send(&mut self, at_ms: u64, f: &Flow, size: u32) {
        let mut p = Self::head(f, size);
        let t = (at_ms * 10) as u32;
        for v in [t, t + 1, 0] {
            p.extend_from_slice(&v.to_le_bytes());
        }
        p.extend_from_slice(&f.connid.to_le_bytes());
        self.emit(at_ms, f, 10, TASK_TCPIP, &p);
    }

    /// KNetEvt_RecvIPV4 (11) and KNetEvt_DisconnectIPV4 (13): …, seqnum, connid.
    fn tcp_event(&mut self, at_ms: u64, f: &Flow, id: u16, size: u32) {
        let mut p = Self::head(f, size);
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(&f.connid.to_le_bytes());
        self.emit(at_ms, f, id, TASK_TCPIP, &p);
    }

    /// KNetEvt_UdpSendIPV4 (42) / KNetEvt_UdpRecvIPV4 (43): …, seqnum, connid.
    fn udp(&mut self, at_ms: u64, f: &Flow, id: u16, size: u32) {
        let mut p = Self::head(f, size);
        p.extend_from_slice(&0u32.to_le_bytes());
        p.extend_from_slice(&f.connid.to_le_bytes());
        self.emit(at_ms, f, id, TASK_UDPIP, &p);
    }
}

/// The bytes of `samples/sample.etl`.
pub fn sample_trace() -> Vec<u8> {
    let config = TraceConfig {
        logger_name: "nettrail-sample".into(),
        log_file_name: r"C:\traces\sample.etl".into(),
        number_of_processors: 2,
        buffer_size: 8192,
        ..TraceConfig::default()
    };
    let start = config.start_timestamp;
    let mut s = Session { writer: TraceWriter::new(config), start };
    let browser = |daddr, dport, sport, connid| Flow {
        pid: 4242,
        tid: 5120,
        cpu: 0,
        daddr,
        saddr: [192, 168, 1, 20],
        dport,
        sport,
        connid,
    };
    let dns = browser([192, 168, 1, 1], 53, 55_001, 0xffff_b08a_2e88_1c30);
    let web = browser([93, 184, 216, 34], 443, 50_110, 0xffff_b08a_2f10_4010);
    let api = Flow { tid: 5124, cpu: 1, ..browser([140, 82, 112, 3], 443, 50_111, 0xffff_b08a_2f20_9a70) };
    let local = Flow {
        pid: 1900,
        tid: 2004,
        cpu: 1,
        daddr: [127, 0, 0, 1],
        saddr: [127, 0, 0, 1],
        dport: 5357,
        sport: 50_200,
        connid: 0xffff_b08a_3a00_0b50,
    };

    s.udp(5, &dns, 42, 41);
    s.udp(19, &dns, 43, 97);
    s.connect(21, &web);
    s.send(45, &web, 517);
    s.tcp_event(71, &web, 11, 4_096);
    s.tcp_event(72, &web, 11, 1_430);
    s.send(80, &web, 1_220);
    s.connect(98, &api);
    for i in 0..6 {
        s.tcp_event(140 + i * 3, &web, 11, 16_384);
    }
    s.send(160, &api, 742);
    s.tcp_event(205, &api, 11, 2_210);
    s.connect(300, &local);
    s.send(301, &local, 128);
    s.tcp_event(302, &local, 11, 512);
    s.tcp_event(310, &local, 13, 0);
    s.tcp_event(950, &api, 13, 0);
    s.tcp_event(1_200, &web, 13, 0);
    s.writer.finish()
}
