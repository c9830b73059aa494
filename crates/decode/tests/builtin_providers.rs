//! The built-in layouts of the network providers (`schemas/providers/`)
//! decode real traces with nothing from Windows: every event of the provider,
//! its whole payload, and the values the traces hold.

use std::collections::BTreeMap;

use nettrail_decode::{Schemas, Source, format, payload};
use nettrail_etl::{Guid, Trace, TraceFile};
use nettrail_testkit::corpus_file;

const KERNEL_NETWORK: &str = "7dd42a49-5329-4832-8dfd-43d979153a88";
const HTTP_SERVICE: &str = "dd5ef90a-6398-47a4-ad34-4dcecdef795f";
const DNS_CLIENT: &str = "1c95126e-7eea-49a9-a3fe-a378b03ddb4d";
const PKTMON: &str = "4d4f80d9-c8bd-4d73-bb5b-19c90402c5ac";
const KERNEL_PROCESS: &str = "22fb2cd6-0e7b-422b-a0c7-2fad1fd0e716";

/// One event as text: its id, the names TDH would show, and each field.
struct Decoded {
    id: u16,
    task: Option<String>,
    opcode: Option<String>,
    fields: Vec<(String, String)>,
}

impl Decoded {
    fn get(&self, name: &str) -> &str {
        let found = self.fields.iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v.as_str()).unwrap_or_else(|| panic!("event {} has no field {name}", self.id))
    }

    fn pairs(&self, names: &[&str]) -> Vec<(String, String)> {
        names.iter().map(|n| (n.to_string(), self.get(n).to_string())).collect()
    }
}

fn expect(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect()
}

/// Every event of `provider` in a corpus file, decoded with the built-in
/// layouts only; each must decode and use its whole payload.
fn decode_all(file: &str, provider: &str) -> Vec<Decoded> {
    let data = TraceFile::open(corpus_file(file)).unwrap();
    let trace = Trace::parse(data.bytes()).unwrap();
    let provider: Guid = provider.parse().unwrap();
    let schemas = Schemas::new();
    let mut out = Vec::new();
    let mut stream = trace.events();
    while let Some(e) = stream.next() {
        let e = e.unwrap();
        if e.provider != provider {
            continue;
        }
        let what = format!("{file}: event {} v{}", e.id, e.version);
        let mut values = Vec::new();
        let schema = schemas.decode(&e.record, &mut values).unwrap_or_else(|err| panic!("{what}: {err}"));
        assert_eq!(schema.source, Source::BuiltIn, "{what}");
        let used = payload::decode(&schema.fields, e.payload, e.pointer_size, &mut Vec::new()).unwrap();
        assert_eq!(used, e.payload.len(), "{what} leaves payload bytes over");
        let fields = schema
            .fields
            .iter()
            .zip(&values)
            .map(|(field, value)| {
                let mut text = String::new();
                format::text(field, value, e.pointer_size, &mut text);
                (field.name.clone(), text)
            })
            .collect();
        out.push(Decoded { id: e.id, task: schema.task.clone(), opcode: schema.opcode.clone(), fields });
    }
    out
}

fn counts(events: &[Decoded]) -> BTreeMap<u16, usize> {
    let mut counts = BTreeMap::new();
    for e in events {
        *counts.entry(e.id).or_default() += 1;
    }
    counts
}

fn first(events: &[Decoded], id: u16) -> &Decoded {
    events.iter().find(|e| e.id == id).unwrap_or_else(|| panic!("no event {id}"))
}

#[test]
fn kernel_network_send_and_receive() {
    let events = decode_all("tx__KernelNetwork.etl", KERNEL_NETWORK);
    assert_eq!(events.len(), 8923);
    let by_id = BTreeMap::from([(10, 575), (11, 7968), (26, 26), (27, 134), (29, 2), (42, 8), (43, 149), (59, 61)]);
    assert_eq!(counts(&events), by_id);

    // The first TCP/IPv4 send and receive: an HTTPS connection of process 2716.
    let send = first(&events, 10);
    let names = ["PID", "size", "daddr", "saddr", "dport", "sport", "startime", "endtime", "connid"];
    let want = [
        ("PID", "2716"),
        ("size", "77"),
        ("daddr", "157.56.244.38"),
        ("saddr", "10.121.106.118"),
        ("dport", "443"),
        ("sport", "61739"),
        ("startime", "2961392"),
        ("endtime", "2961393"),
        // Pointer-sized: 8 bytes in this 64-bit trace.
        ("connid", "0x0000000000000000"),
    ];
    assert_eq!(send.pairs(&names), expect(&want));
    assert_eq!(send.task.as_deref(), Some("KERNEL_NETWORK_TASK_TCPIP"));
    assert_eq!(send.opcode.as_deref(), Some("Data sent."));
    let receive = first(&events, 11);
    let names = ["PID", "size", "daddr", "saddr", "dport", "sport"];
    let want = [
        ("PID", "2716"),
        ("size", "4101"),
        ("daddr", "157.56.244.38"),
        ("saddr", "10.121.106.118"),
        ("dport", "443"),
        ("sport", "61740"),
    ];
    assert_eq!(receive.pairs(&names), expect(&want));
    assert_eq!(receive.opcode.as_deref(), Some("Data received."));

    // Bytes over TCP/IPv4, summed over the whole trace.
    let total =
        |id: u16| -> u64 { events.iter().filter(|e| e.id == id).map(|e| e.get("size").parse::<u64>().unwrap()).sum() };
    assert_eq!(total(10), 60_019);
    assert_eq!(total(11), 15_315_588);

    // IPv6: the trace starts inside a remote desktop session (port 3389).
    let v6 = &events[0];
    assert_eq!(v6.id, 27);
    let want = [
        ("PID", "2432"),
        ("size", "37"),
        ("daddr", "2001:4898:0:fff:0:5efe:af6:60d"),
        ("saddr", "2001:4898:0:fff:0:5efe:a79:6a76"),
        ("dport", "24485"),
        ("sport", "3389"),
    ];
    assert_eq!(v6.pairs(&["PID", "size", "daddr", "saddr", "dport", "sport"]), expect(&want));
    let disconnect = first(&events, 29);
    assert_eq!(disconnect.get("daddr"), "2001:4898:a8:6006:6ab5:99ff:feb0:5d4c");
    assert_eq!(disconnect.get("dport"), "49155");
    assert_eq!(disconnect.opcode.as_deref(), Some("Disconnect issued."));

    // UDP: LLMNR queries of process 1008, IPv4 and IPv6.
    let udp = first(&events, 43);
    assert_eq!(
        udp.pairs(&["PID", "size", "daddr", "dport"]),
        expect(&[("PID", "1008"), ("size", "30"), ("daddr", "224.0.0.252"), ("dport", "5355")])
    );
    assert_eq!(udp.task.as_deref(), Some("KERNEL_NETWORK_TASK_UDPIP"));
    let udp6 = first(&events, 59);
    assert_eq!(
        udp6.pairs(&["daddr", "saddr", "dport"]),
        expect(&[("daddr", "ff02::1:3"), ("saddr", "fe80::d2d:5c45:da2f:47a7"), ("dport", "5355")])
    );
}

#[test]
fn http_service_requests() {
    let events = decode_all("tx__HTTP_Server.etl", HTTP_SERVICE);
    assert_eq!(events.len(), 2041);
    let by_id = BTreeMap::from([
        (1, 291),
        (2, 291),
        (3, 291),
        (4, 2),
        (5, 2),
        (8, 289),
        (9, 289),
        (10, 2),
        (12, 289),
        (21, 2),
        (22, 2),
        (51, 291),
    ]);
    assert_eq!(counts(&events), by_id);

    // Event 2 parses a request; its Url ends the payload without a NUL.
    let parse = first(&events, 2);
    assert_eq!(parse.get("Url"), "http://georgis2:80/windir.txt");
    assert_eq!(parse.get("HttpVerb"), "4");
    assert_eq!(parse.task.as_deref(), Some("HTTP Request Trace Task"));
    assert_eq!(parse.opcode.as_deref(), Some("Parse"));
    let mut urls: BTreeMap<&str, usize> = BTreeMap::new();
    for e in events.iter().filter(|e| e.id == 2) {
        *urls.entry(e.get("Url")).or_default() += 1;
    }
    assert_eq!(
        urls,
        BTreeMap::from([("http://georgis2:80/helloworld.htm", 283), ("http://georgis2:80/windir.txt", 8)])
    );

    // The same request delivered to the application's queue, and its response.
    let deliver = first(&events, 3);
    assert_eq!(deliver.get("RequestId"), "0xFF0000008000060D");
    assert_eq!(deliver.get("RequestQueueName"), "DefaultAppPool");
    assert_eq!(deliver.get("Url"), "http://georgis2:80/windir.txt");
    let response = first(&events, 4);
    let want = [("RequestId", "0xFF0000008000060D"), ("StatusCode", "200"), ("Verb", "GET"), ("HeaderLength", "165")];
    assert_eq!(response.pairs(&["RequestId", "StatusCode", "Verb", "HeaderLength"]), expect(&want));

    // Connections arrive over IPv6 (SOCKADDR_IN6, port in host order).
    let connect = first(&events, 21);
    assert_eq!(connect.get("LocalAddr"), "[2001:4898:0:fff:0:5efe:a78:109d]:80");
    assert_eq!(connect.get("RemoteAddr"), "[2001:4898:0:fff:0:5efe:a50:e410]:37837");
    // Value maps from the manifest.
    let logging = first(&events, 51);
    assert_eq!(
        logging.pairs(&["Type", "Group", "Format"]),
        expect(&[("Type", "ResponseLogging"), ("Group", "Site"), ("Format", "W3C")])
    );
}

/// The DNS servers as PerfView's TraceEvent baselines list them
/// (`companions/perfview__net.4.5*.baseline.txt`).
#[test]
fn dns_client_server_lists() {
    let old = decode_all("perfview__net.4.5.x86.PerfViewData.etl", DNS_CLIENT);
    assert_eq!(old.iter().map(|e| e.id).collect::<Vec<_>>(), [1001, 1001, 1001, 1019]);
    let servers: Vec<_> = old[..3].iter().map(|e| e.pairs(&["Interface", "Index", "Address"])).collect();
    let want =
        [("1", "10.222.118.22:0"), ("2", "10.221.228.12:0"), ("3", "10.222.114.67:0")].map(|(index, address)| {
            expect(&[("Interface", "Local Area Connection"), ("Index", index), ("Address", address)])
        });
    assert_eq!(servers, want);
    assert_eq!(old[0].get("TotalServerCount"), "3");
    assert_eq!(old[3].pairs(&["Location", "Context"]), expect(&[("Location", "0"), ("Context", "0")]));

    let new = decode_all("perfview__net.4.5.2.x86.etl", DNS_CLIENT);
    let addresses: Vec<_> =
        new.iter().map(|e| (e.get("Interface"), e.get("AddressLength"), e.get("Address"))).collect();
    let want = [
        ("Ethernet", "28", "[2001:4898::1050:1050]:0"),
        ("Ethernet", "28", "[2001:4898::1050:5050]:0"),
        ("Ethernet", "16", "10.50.10.50:0"),
        ("Ethernet", "16", "10.50.50.50:0"),
    ];
    assert_eq!(addresses, want);
}

#[test]
fn pktmon_components_filter_and_packets() {
    let events = decode_all("demikernel__PktMon.etl", PKTMON);
    assert_eq!(events.len(), 403);
    let by_id = BTreeMap::from([
        (20, 44),
        (30, 111),
        (40, 3),
        (60, 3),
        (65, 5),
        (66, 5),
        (70, 5),
        (75, 18),
        (80, 44),
        (90, 50),
        (100, 1),
        (160, 114),
    ]);
    assert_eq!(counts(&events), by_id);

    // Components and their addresses (events 65 and 66 come from the trace's own metadata).
    let adapter = events.iter().find(|e| e.id == 20 && e.get("Id") == "58").unwrap();
    assert_eq!(
        adapter.pairs(&["Name", "Description"]),
        expect(&[("Name", "NetVsc.sys"), ("Description", "Microsoft Hyper-V Network Adapter #3")])
    );
    let mac = events.iter().find(|e| e.id == 70 && e.get("ComponentId") == "58").unwrap();
    assert_eq!(mac.get("Value"), "0x0022487BB380");
    let v4: Vec<&str> = events.iter().filter(|e| e.id == 65).map(|e| e.get("IpAddress")).collect();
    assert_eq!(v4, ["10.9.1.22", "10.9.0.22", "127.0.0.1", "10.9.0.22", "127.0.0.1"]);
    let v6: Vec<&str> = events.iter().filter(|e| e.id == 66).map(|e| e.get("IpAddress")).collect();
    assert_eq!(
        v6,
        ["fe80::fb0f:5039:c3e9:adf7", "fe80::5c19:f5b3:a4bc:efda", "::1", "fe80::5c19:f5b3:a4bc:efda", "::1"]
    );

    // The capture filter, with the MAC addresses the facts lacked.
    let filter = first(&events, 100);
    let want =
        [("FilterName", "eth3"), ("MacAddress1", "0x0022487BB380"), ("IpAddress1", "0.0.0.0"), ("TCPFlags", "0")];
    assert_eq!(filter.pairs(&["FilterName", "MacAddress1", "IpAddress1", "TCPFlags"]), expect(&want));

    // Captured packets: pings between 10.9.1.14 and 10.9.1.22, 98 bytes each.
    let packets: Vec<&Decoded> = events.iter().filter(|e| e.id == 160).collect();
    assert!(packets.iter().all(|p| p.get("LoggedPayloadSize") == "98" && p.get("OriginalPayloadSize") == "98"));
    let groups: std::collections::BTreeSet<&str> = packets.iter().map(|p| p.get("PktGroupId")).collect();
    assert_eq!(groups.len(), 38);
    let ping = packets[0];
    assert_eq!(
        ping.pairs(&["PktGroupId", "ComponentId", "EdgeId"]),
        expect(&[("PktGroupId", "1071654"), ("ComponentId", "59"), ("EdgeId", "1")])
    );
    // Ethernet to the adapter's MAC; IPv4 source 10.9.1.14, destination 10.9.1.22; ICMP echo request.
    let frame = ping.get("Payload");
    assert!(frame.starts_with("0x0022487BB380"), "{frame}");
    assert_eq!(&frame[2 + 2 * 26..2 + 2 * 34], "0A09010E0A090116");
    assert_eq!(&frame[2 + 2 * 34..2 + 2 * 35], "08");
}

#[test]
fn kernel_process_lifetimes() {
    let events = decode_all("tx__Process.etl", KERNEL_PROCESS);
    assert_eq!(events.len(), 10343);
    let by_id = BTreeMap::from([
        (1, 4),
        (2, 4),
        (3, 287),
        (4, 264),
        (5, 1115),
        (6, 1153),
        (7, 810),
        (8, 5088),
        (9, 838),
        (10, 780),
    ]);
    assert_eq!(counts(&events), by_id);

    // Visual Studio starts and stops within the trace.
    let start = first(&events, 1);
    let want = [
        ("ProcessID", "5864"),
        ("CreateTime", "2010-10-29T19:08:00.7357072Z"),
        ("ParentProcessID", "3324"),
        ("SessionID", "1"),
        (
            "ImageName",
            r"\Device\HarddiskVolume2\Program Files (x86)\Microsoft Visual Studio 10.0\Common7\IDE\devenv.exe",
        ),
    ];
    assert_eq!(start.pairs(&["ProcessID", "CreateTime", "ParentProcessID", "SessionID", "ImageName"]), expect(&want));
    let stop = events.iter().find(|e| e.id == 2 && e.get("ProcessID") == "5864").unwrap();
    let want = [
        ("CreateTime", "2010-10-29T19:08:00.7357072Z"),
        ("ExitTime", "2010-10-29T19:10:10.2359698Z"),
        ("CPUCycleCount", "91835269838"),
        ("ImageName", "devenv.exe"),
    ];
    assert_eq!(stop.pairs(&["CreateTime", "ExitTime", "CPUCycleCount", "ImageName"]), expect(&want));
    // Stop events carry the kernel's 14-character image name.
    let names: Vec<&str> = events.iter().filter(|e| e.id == 2).map(|e| e.get("ImageName")).collect();
    assert_eq!(names, ["SearchProtocol", "SearchFilterHo", "OUTLOOK.EXE", "devenv.exe"]);
}
