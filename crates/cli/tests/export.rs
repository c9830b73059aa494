//! `nettrail export --format pcapng` end to end, read back by tshark (the
//! Debian `tshark` package: `apt-get install -y tshark`; the tests fail, not
//! skip, without it). Packet counts and each packet's facts are checked
//! against `nettrail dump` of the same trace, not against the exporter.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nettrail_etl::Guid;
use nettrail_etl::write::{Context, Descriptor, EventHeaderRecord, TraceConfig, TraceWriter};
use nettrail_testkit::{corpus_file, parse_utc};
use serde_json::Value;

const PKTMON_TRACE: &str = "demikernel__PktMon.etl";
const NDIS: Guid = Guid::parse_const("2ed6006e-4729-4609-b423-3ee7bcd678ef");
const KERNEL_PROCESS: Guid = Guid::parse_const("22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716");
/// FILETIME of 1970-01-01.
const UNIX_EPOCH_FILETIME: i64 = 116_444_736_000_000_000;

fn nettrail(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().expect("run nettrail")
}

/// A scratch directory for one test.
fn scratch(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("nettrail-export-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs tshark; a missing tshark fails the test with how to install it.
fn tshark(args: &[&str]) -> Output {
    let tshark = nettrail_testkit::debian_tool("tshark", "tshark");
    match Command::new(tshark).args(args).output() {
        Ok(out) => out,
        Err(e) => panic!(
            "these tests read the exported files with tshark, which cannot be run ({e}): install it (Debian: apt-get install -y tshark)"
        ),
    }
}

/// tshark's stderr without its notice about running as root.
fn tshark_complaints(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.contains("Running as user"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// One row per packet, one column per field, as tshark reads `file`; fails
/// on anything tshark says on stderr.
fn tshark_fields(file: &Path, fields: &[&str]) -> Vec<Vec<String>> {
    let mut args = vec!["-r", file.to_str().unwrap(), "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"];
    for f in fields {
        args.extend(["-e", f]);
    }
    let out = tshark(&args);
    assert!(out.status.success(), "tshark failed: {}", String::from_utf8_lossy(&out.stderr));
    let complaints = tshark_complaints(&out);
    assert!(complaints.is_empty(), "tshark on {}: {complaints}", file.display());
    String::from_utf8(out.stdout).unwrap().lines().map(|l| l.split('\t').map(str::to_string).collect()).collect()
}

/// Packets tshark finds malformed (or cut short by a dissector's error).
fn malformed(file: &Path) -> usize {
    let out = tshark(&["-r", file.to_str().unwrap(), "-Y", "_ws.malformed || _ws.expert.severity == error"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(tshark_complaints(&out).is_empty(), "{}", tshark_complaints(&out));
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| !l.trim().is_empty()).count()
}

/// Every event of one provider, as `nettrail dump --format jsonl` gives it.
fn dump(trace: &Path, provider: &str) -> Vec<Value> {
    let out = nettrail(&["dump", trace.to_str().unwrap(), "--format", "jsonl", "--provider", provider]);
    assert!(out.status.code() == Some(0) || out.status.code() == Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect()
}

/// `0x…` hex as bytes.
fn hex_bytes(s: &str) -> Vec<u8> {
    let s = s.trim_start_matches("0x");
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// tshark's `frame.time_epoch` (`seconds.nanoseconds`) in 100 ns units.
fn epoch_100ns(s: &str) -> i64 {
    let (secs, frac) = s.split_once('.').unwrap_or((s, ""));
    let frac = format!("{frac:0<7}");
    secs.parse::<i64>().unwrap() * 10_000_000 + frac[..7].parse::<i64>().unwrap()
}

/// A dump line's timestamp in 100 ns units since 1970.
fn dump_epoch_100ns(event: &Value) -> i64 {
    parse_utc(event["timestamp"].as_str().unwrap()) - UNIX_EPOCH_FILETIME
}

fn export(trace: &Path, out: &Path) -> Output {
    nettrail(&["export", trace.to_str().unwrap(), "--format", "pcapng", "-o", out.to_str().unwrap()])
}

#[test]
fn pktmon_capture_reads_back_in_tshark_packet_for_packet() {
    let dir = scratch("pktmon");
    let trace = corpus_file(PKTMON_TRACE);
    let file = dir.join("pktmon.pcapng");
    let out = export(&trace, &file);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "binary output goes to the file only");

    // The packet events, counted from the dump: 160 (packet) and 170 (drop).
    let events: Vec<Value> =
        dump(&trace, "Microsoft-Windows-PktMon").into_iter().filter(|e| e["id"] == 160 || e["id"] == 170).collect();
    assert_eq!(events.len(), 114, "the catalog counts 114 events 160");

    let fields = [
        "frame.number",
        "frame.time_epoch",
        "frame.len",
        "frame.cap_len",
        "frame.packet_flags_direction",
        "frame.packet_id",
        "frame.interface_name",
        "frame.comment",
        "eth.dst",
        "ip.src",
        "ip.dst",
        "icmp.type",
    ];
    let rows = tshark_fields(&file, &fields);
    assert_eq!(rows.len(), events.len(), "tshark's packets against the dump's packet events");
    assert_eq!(malformed(&file), 0);

    for (row, event) in rows.iter().zip(&events) {
        let p = &event["properties"];
        let payload = hex_bytes(p["Payload"].as_str().unwrap());
        let what = format!("frame {}", row[0]);
        assert_eq!(epoch_100ns(&row[1]), dump_epoch_100ns(event), "{what}: time");
        assert_eq!(row[2], p["OriginalPayloadSize"].to_string(), "{what}: length");
        assert_eq!(row[3], payload.len().to_string(), "{what}: captured length");
        let direction = match p["DirTag"].as_str().unwrap() {
            "Rx" | "In" | "Ingress" => "0x00000001",
            "Tx" | "Out" | "Egress" => "0x00000002",
            other => panic!("{what}: direction {other}"),
        };
        assert_eq!(row[4], direction, "{what}: direction");
        assert_eq!(row[5], p["PktGroupId"].to_string(), "{what}: packet id");
        assert!(row[6].contains(&format!("(component {})", p["ComponentId"])), "{what}: interface {}", row[6]);
        assert!(row[7].starts_with(&format!("PID={} TID={}", event["pid"], event["tid"])), "{what}: {}", row[7]);
        // The frame's addresses, from the event's own bytes.
        let mac = payload[..6].iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":");
        assert_eq!(row[8], mac, "{what}: Ethernet destination");
        let ip = |at: usize| format!("{}.{}.{}.{}", payload[at], payload[at + 1], payload[at + 2], payload[at + 3]);
        assert_eq!((row[9].as_str(), row[10].as_str()), (ip(26).as_str(), ip(30).as_str()), "{what}");
    }

    // The first packet: the ping 10.9.1.14 → 10.9.1.22 the adapter (component 59) received.
    let first = &rows[0];
    assert_eq!(first[9], "10.9.1.14");
    assert_eq!(first[10], "10.9.1.22");
    assert_eq!(first[11], "8", "ICMP echo request");
    assert_eq!(first[8], "00:22:48:7b:b3:80");
    assert_eq!(first[6], "netvsc.sys (component 59)");

    // capinfos agrees on the count and sees the four components as interfaces.
    let info = Command::new(nettrail_testkit::debian_tool("capinfos", "tshark"))
        .args(["-c", "-I", file.to_str().unwrap()])
        .output()
        .expect("capinfos (tshark's package)");
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(text.contains("Number of packets:   114"), "{text}");
    assert!(text.contains("Number of interfaces in file: 4"), "{text}");

    // `-o -` streams the same bytes to a pipe.
    let piped = nettrail(&["export", trace.to_str().unwrap(), "--format", "pcapng", "-o", "-"]);
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(piped.stdout, std::fs::read(&file).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_trace_keeps_the_packets_before_the_damage() {
    let dir = scratch("damaged");
    let full = std::fs::read(corpus_file(PKTMON_TRACE)).unwrap();
    // The packets are in the second buffer; cut inside the third (what
    // pktmon logged when the capture stopped).
    let cut = dir.join("cut.etl");
    std::fs::write(&cut, &full[..20_000]).unwrap();
    let file = dir.join("cut.pcapng");
    let out = export(&cut, &file);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cut.etl: at offset 0x0 of compressed buffer 2 (file offset 0x3296): file ends inside a buffer"),
        "{err}"
    );
    let events = dump(&cut, "Microsoft-Windows-PktMon").into_iter().filter(|e| e["id"] == 160).count();
    assert_eq!(events, 114);
    let rows = tshark_fields(&file, &["frame.number", "frame.interface_name"]);
    assert_eq!(rows.len(), events);
    // The components were also described when the capture started.
    assert_eq!(rows[0][1], "netvsc.sys (component 59)");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn binary_output_needs_a_file() {
    let trace = corpus_file(PKTMON_TRACE);
    let out = nettrail(&["export", trace.to_str().unwrap(), "--format", "pcapng"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("-o PATH"), "{}", String::from_utf8_lossy(&out.stderr));
}

// ---- An NDIS-PacketCapture trace (the corpus has none), written here ----

/// NDIS-PacketCapture keywords (see the exporter's documentation).
const ETHERNET: u64 = 0x1;
const WIRELESS_WAN: u64 = 0x200;
const TRUNCATED: u64 = 0x200_0000;
const START: u64 = 0x4000_0000;
const END: u64 = 0x8000_0000;
const SEND: u64 = 0x1_0000_0000;
const RECEIVE: u64 = 0x2_0000_0000;

fn checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4 packet (header with a valid checksum) around a transport header
/// and `data` bytes; `total` overrides the total length (a cut packet).
fn ipv4(protocol: u8, src: [u8; 4], dst: [u8; 4], transport: &[u8], data: &[u8], total: Option<u16>) -> Vec<u8> {
    let len = total.unwrap_or((20 + transport.len() + data.len()) as u16);
    let mut ip = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, protocol, 0, 0];
    ip[2..4].copy_from_slice(&len.to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&dst);
    let sum = checksum(&ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    ip.extend_from_slice(transport);
    ip.extend_from_slice(data);
    ip
}

fn tcp(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&1000u32.to_be_bytes());
    t[12] = 5 << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&64240u16.to_be_bytes());
    t
}

fn udp(sport: u16, dport: u16, data_len: usize) -> Vec<u8> {
    let mut u = vec![0u8; 8];
    u[0..2].copy_from_slice(&sport.to_be_bytes());
    u[2..4].copy_from_slice(&dport.to_be_bytes());
    u[4..6].copy_from_slice(&((8 + data_len) as u16).to_be_bytes());
    u
}

fn ethernet(ip: &[u8]) -> Vec<u8> {
    let mut f = vec![0x00, 0x15, 0x5d, 0x01, 0x02, 0x03, 0x00, 0x15, 0x5d, 0x0a, 0x0b, 0x0c, 0x08, 0x00];
    f.extend_from_slice(ip);
    f
}

/// Event 1001's payload; `gft` adds the two fields Windows 10 logs after the fragment.
fn fragment(miniport: u32, lower: u32, bytes: &[u8], gft: bool) -> Vec<u8> {
    let mut p = Vec::new();
    p.extend_from_slice(&miniport.to_le_bytes());
    p.extend_from_slice(&lower.to_le_bytes());
    p.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    p.extend_from_slice(bytes);
    if gft {
        p.extend_from_slice(&[0u8; 16]);
    }
    p
}

/// What the NDIS trace holds: the frames as logged, in order.
struct NdisTrace {
    bytes: Vec<u8>,
}

fn ndis_trace() -> NdisTrace {
    let config = TraceConfig::default();
    let t0 = config.start_timestamp;
    let mut w = TraceWriter::new(config);
    let at =
        |ms: u64, pid: u32, tid: u32| Context { timestamp: t0 + ms * 10_000, cpu: 0, process_id: pid, thread_id: tid };
    // Kernel-Process ProcessStart v0: ProcessID, CreateTime, ParentProcessID, SessionID, ImageName.
    let mut start = Vec::new();
    start.extend_from_slice(&1234u32.to_le_bytes());
    start.extend_from_slice(&134_116_992_000_000_000i64.to_le_bytes());
    start.extend_from_slice(&600u32.to_le_bytes());
    start.extend_from_slice(&1u32.to_le_bytes());
    for u in r"\Device\HarddiskVolume3\Program Files\Browser\browser.exe".encode_utf16().chain([0]) {
        start.extend_from_slice(&u.to_le_bytes());
    }
    let process = Descriptor { id: 1, version: 0, channel: 16, level: 4, opcode: 1, task: 1, keywords: 0x10 };
    w.write_event_header(&EventHeaderRecord::new(at(50, 1234, 5678), KERNEL_PROCESS, process, &start)).unwrap();

    let client = [10, 0, 0, 5];
    let server = [93, 184, 216, 34];
    let mut write = |ms: u64, pid: u32, tid: u32, keywords: u64, payload: &[u8]| {
        let d = Descriptor { id: 1001, version: 0, channel: 16, level: 4, opcode: 0, task: 0, keywords };
        w.write_event_header(&EventHeaderRecord::new(at(ms, pid, tid), NDIS, d, payload)).unwrap();
    };
    // 1: SYN sent by the browser.
    let syn = ethernet(&ipv4(6, client, server, &tcp(49152, 443, 0x02), &[], None));
    write(100, 1234, 5678, ETHERNET | START | END | SEND, &fragment(12, 7, &syn, true));
    // 2: SYN-ACK received (in a DPC: the System process).
    let syn_ack = ethernet(&ipv4(6, server, client, &tcp(443, 49152, 0x12), &[], None));
    write(130, 4, 16, ETHERNET | START | END | RECEIVE, &fragment(12, 7, &syn_ack, true));
    // 3: a raw IP datagram on a mobile broadband interface.
    let datagram = ipv4(17, [10, 1, 0, 2], [10, 1, 0, 1], &udp(53000, 53001, 5), b"hello", None);
    write(140, 1234, 5678, WIRELESS_WAN | START | END | SEND, &fragment(20, 20, &datagram, true));
    // 4: a 1514-byte frame cut to 74 bytes by the capture's size limit.
    let cut = ethernet(&ipv4(6, server, client, &tcp(443, 49152, 0x10), &[0xAB; 20], Some(1500)));
    write(150, 4, 16, ETHERNET | START | END | RECEIVE | TRUNCATED, &fragment(12, 7, &cut, true));
    // 5: one frame in two events (before Windows 8.1).
    let data = ethernet(&ipv4(6, client, server, &tcp(49152, 443, 0x18), &[0x5A; 100], None));
    write(160, 1234, 5678, ETHERNET | START | SEND, &fragment(12, 7, &data[..60], true));
    write(160, 1234, 5678, ETHERNET | END | SEND, &fragment(12, 7, &data[60..], true));
    // 6: an event without the fields Windows 10 added after the fragment.
    let ack = ethernet(&ipv4(6, server, client, &tcp(443, 49152, 0x10), &[], None));
    write(170, 4, 16, ETHERNET | START | END | RECEIVE, &fragment(12, 7, &ack, false));
    NdisTrace { bytes: w.finish() }
}

#[test]
fn an_ndis_capture_reads_back_in_tshark() {
    let dir = scratch("ndis");
    let trace_path = dir.join("ndis.etl");
    std::fs::write(&trace_path, ndis_trace().bytes).unwrap();
    let file = dir.join("ndis.pcapng");
    let out = export(&trace_path, &file);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("skipped"), "{err}");

    // Packets counted from the dump: each ends with one event that has the PacketEnd keyword.
    let events: Vec<Value> =
        dump(&trace_path, "Microsoft-Windows-NDIS-PacketCapture").into_iter().filter(|e| e["id"] == 1001).collect();
    assert_eq!(events.len(), 7);
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| {
            u64::from_str_radix(e["keywords"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap() & END != 0
        })
        .collect();

    let fields = [
        "frame.number",
        "frame.time_epoch",
        "frame.len",
        "frame.cap_len",
        "frame.packet_flags_direction",
        "frame.interface_name",
        "frame.comment",
        "ip.src",
        "ip.dst",
        "tcp.srcport",
        "tcp.dstport",
        "udp.dstport",
        "frame.encap_type",
    ];
    let rows = tshark_fields(&file, &fields);
    assert_eq!(rows.len(), ends.len());
    assert_eq!(rows.len(), 6);
    assert_eq!(malformed(&file), 0);
    for (row, end) in rows.iter().zip(&ends) {
        // A packet is stamped with its first event; here both fragments share a time.
        assert_eq!(epoch_100ns(&row[1]), dump_epoch_100ns(end), "frame {}", row[0]);
        assert!(row[6].starts_with(&format!("PID={} TID={}", end["pid"], end["tid"])), "frame {}: {}", row[0], row[6]);
    }
    let column = |i: usize| rows.iter().map(|r| r[i].as_str()).collect::<Vec<_>>();
    assert_eq!(column(2), ["54", "54", "33", "1514", "154", "54"], "lengths on the wire");
    assert_eq!(column(3), ["54", "54", "33", "74", "154", "54"], "captured lengths");
    let (out, inb) = ("0x00000002", "0x00000001");
    assert_eq!(column(4), [out, inb, out, inb, out, inb], "directions (epb_flags)");
    assert_eq!(column(5), ["ndis:12:7", "ndis:12:7", "ndis:20:20", "ndis:12:7", "ndis:12:7", "ndis:12:7"]);
    assert_eq!(column(7), ["10.0.0.5", "93.184.216.34", "10.1.0.2", "93.184.216.34", "10.0.0.5", "93.184.216.34"]);
    assert_eq!(column(9), ["49152", "443", "", "443", "49152", "443"]);
    assert_eq!(column(11), ["", "", "53001", "", "", ""]);
    // Ethernet (1) and raw IP (7 is Wireshark's WTAP_ENCAP_RAW_IP).
    assert_eq!(column(12), ["1", "1", "7", "1", "1", "1"]);
    assert_eq!(rows[0][6], "PID=1234 TID=5678 Process=browser.exe");
    assert_eq!(rows[1][6], "PID=4 TID=16");
    std::fs::remove_dir_all(&dir).unwrap();
}
