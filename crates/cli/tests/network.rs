//! The network tables on the real traces of the corpus, checked against
//! totals computed here from `nettrail dump`'s decoded events (the model's
//! code is not involved in the expected values).

use std::collections::BTreeMap;
use std::process::Command;

use nettrail_testkit::corpus_file;
use serde_json::Value;

fn nettrail(args: &[&str]) -> Vec<Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().expect("run nettrail");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn corpus(name: &str) -> String {
    corpus_file(name).to_str().unwrap().to_string()
}

fn endpoint(address: &str, port: u64) -> String {
    if address.contains(':') { format!("[{address}]:{port}") } else { format!("{address}:{port}") }
}

/// (protocol, local, remote) → (pid, sent, received), from the kernel's TCP
/// and UDP events: TCP `saddr:sport` is the local end both ways; UDP
/// fields follow the datagram (on a receive the destination is local), and a
/// UDP flow is a local port with one peer. TCPCopy repeats received bytes.
fn flows_from_events(trace: &str, providers: &[&str]) -> BTreeMap<(String, String, String), (u64, u64, u64)> {
    let mut args = vec!["dump", "--format", "jsonl", trace];
    for p in providers {
        args.extend(["--provider", p]);
    }
    let mut flows = BTreeMap::new();
    for e in nettrail(&args) {
        let p = &e["properties"];
        let Some(size) = p["size"].as_u64() else { continue };
        let udp = e["provider_name"].as_str().unwrap().contains("UdpIp") || e["task"] == 11;
        let id = e["id"].as_u64().unwrap();
        let opcode = e["opcode"].as_u64().unwrap();
        // Kernel-Network gives its events by id, the classic groups by opcode.
        let code = if e["provider_name"] == "Microsoft-Windows-Kernel-Network" { id } else { opcode };
        let (is_send, is_recv) = match (udp, code) {
            (false, 10 | 26) | (true, 10 | 26 | 42 | 58) => (true, false),
            (false, 11 | 27) | (true, 11 | 27 | 43 | 59) => (false, true),
            // Connect, disconnect, retransmit, accept, reconnect: a connection without bytes of its own.
            (false, 12..=16 | 28..=32) => (false, false),
            _ => continue,
        };
        let src = endpoint(p["saddr"].as_str().unwrap(), p["sport"].as_u64().unwrap());
        let dst = endpoint(p["daddr"].as_str().unwrap(), p["dport"].as_u64().unwrap());
        let key = match (udp, is_recv) {
            (false, _) => ("TCP".to_string(), src, dst),
            (true, false) => ("UDP".to_string(), format!("*:{}", p["sport"]), dst),
            (true, true) => ("UDP".to_string(), format!("*:{}", p["dport"]), src),
        };
        let entry = flows.entry(key).or_insert((p["PID"].as_u64().unwrap(), 0, 0));
        if is_send {
            entry.1 += size;
        } else if is_recv {
            entry.2 += size;
        }
    }
    flows
}

/// The connections table, keyed the same way (rows of one flow summed).
fn flows_from_table(trace: &str) -> BTreeMap<(String, String, String), (u64, u64, u64)> {
    let mut flows = BTreeMap::new();
    for r in nettrail(&["connections", "--format", "jsonl", trace]) {
        let protocol = r["protocol"].as_str().unwrap().to_string();
        let local = r["local"].as_str().unwrap().to_string();
        let local = if protocol == "UDP" { format!("*:{}", local.rsplit(':').next().unwrap()) } else { local };
        let key = (protocol, local, r["remote"].as_str().unwrap().to_string());
        let entry = flows.entry(key).or_insert((r["pid"].as_u64().unwrap_or(0), 0, 0));
        entry.1 += r["bytes_sent"].as_u64().unwrap();
        entry.2 += r["bytes_received"].as_u64().unwrap();
    }
    flows
}

#[test]
fn kernel_network_gives_one_connection_per_flow_with_the_bytes_of_its_events() {
    let trace = corpus("tx__KernelNetwork.etl");
    let expected = flows_from_events(&trace, &["Microsoft-Windows-Kernel-Network"]);
    let rows = nettrail(&["connections", "--format", "jsonl", &trace]);
    assert_eq!(expected.len(), 112);
    assert_eq!(rows.len(), expected.len(), "one row per flow");
    assert_eq!(flows_from_table(&trace), expected);
    // The busiest connection: a download over HTTPS.
    let download = rows.iter().find(|r| r["bytes_received"] == 15_315_506).expect("the download");
    assert_eq!(download["pid"], 2716);
    assert_eq!(download["remote"], "157.56.244.38:443");
    assert_eq!(download["local"], "10.121.106.118:61740");
    assert_eq!(download["protocol"], "TCP");
    assert_eq!(download["origin"], "inferred");
    // The trace has no process events: names are unknown, never guessed (System excepted).
    assert!(rows.iter().all(|r| r["process"].is_null() || (r["pid"] == 4 && r["process"] == "System")));
    // Every flow moved bytes: each is a row of `requests` too, at the TCP or UDP layer.
    let requests = nettrail(&["requests", "--format", "jsonl", &trace]);
    assert_eq!(requests.len(), rows.len());
    assert!(requests.iter().all(|r| r["layer"] == r["protocol"]));
    let https = requests.iter().find(|r| r["bytes_received"] == 15_315_506).unwrap();
    assert_eq!((https["service"].as_str(), https["port"].as_u64()), (Some("HTTPS"), Some(443)));
}

#[test]
fn perfview_traces_give_their_connections_with_process_names() {
    for (name, flows, named) in [
        ("perfview__net.4.5.x86.PerfViewData.etl", 39, "wmpnetwk.exe"),
        ("perfview__net.4.5.2.x86.etl", 10, "svchost.exe"),
    ] {
        let trace = corpus(name);
        let expected = flows_from_events(&trace, &["Windows Kernel/TcpIp", "Windows Kernel/UdpIp"]);
        assert_eq!(flows_from_table(&trace), expected, "{name}");
        assert_eq!(expected.len(), flows, "{name}");
        let rows = nettrail(&["connections", "--format", "jsonl", &trace]);
        for r in &rows {
            assert!(r["process"].is_string(), "{name}: a connection without its process: {r}");
        }
        assert!(rows.iter().any(|r| r["process"] == named), "{name}");
    }
    // net.4.5.2: the SMB session of the System process, connected before the trace.
    let rows = nettrail(&["requests", "--format", "jsonl", &corpus("perfview__net.4.5.2.x86.etl")]);
    let smb = rows.iter().find(|r| r["port"] == 445).unwrap();
    assert_eq!(smb["process"], "System");
    assert_eq!(smb["service"], "SMB");
    assert_eq!((smb["bytes_sent"].as_u64(), smb["bytes_received"].as_u64()), (Some(9_864_915), Some(72_431)));
}

#[test]
fn perfview_traces_give_the_dns_servers_they_name() {
    for (name, interface, servers) in [
        (
            "perfview__net.4.5.x86.PerfViewData.etl",
            "Local Area Connection",
            &["10.222.118.22", "10.221.228.12", "10.222.114.67"][..],
        ),
        (
            "perfview__net.4.5.2.x86.etl",
            "Ethernet",
            &["2001:4898::1050:1050", "2001:4898::1050:5050", "10.50.10.50", "10.50.50.50"][..],
        ),
    ] {
        let rows = nettrail(&["dns", "--format", "jsonl", &corpus(name)]);
        let found: Vec<&str> = rows
            .iter()
            .filter(|r| r["kind"] == "server" && r["name"] == interface)
            .map(|r| r["answers"][0].as_str().unwrap())
            .collect();
        assert_eq!(found, servers, "{name}");
    }
}

#[test]
fn http_server_gives_one_row_per_request() {
    let trace = corpus("tx__HTTP_Server.etl");
    // From the events: each request id, its URL (delivery), status (response) and receipt time.
    let mut expected: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut urls = BTreeMap::new();
    for e in nettrail(&["dump", "--format", "jsonl", "--provider", "Microsoft-Windows-HttpService", &trace]) {
        let p = &e["properties"];
        match e["id"].as_u64().unwrap() {
            3 => {
                urls.insert(p["RequestId"].as_str().unwrap().to_string(), p["Url"].as_str().unwrap().to_string());
            }
            4 | 8 => {
                let id = p["RequestId"].as_str().unwrap().to_string();
                expected.insert(id, (String::new(), p["StatusCode"].as_u64().unwrap()));
            }
            _ => {}
        }
    }
    for (id, (url, _)) in expected.iter_mut() {
        *url = urls[id].clone();
    }
    let rows = nettrail(&["http-server", "--format", "jsonl", &trace]);
    assert_eq!(rows.len(), 291);
    assert_eq!(expected.len(), 291);
    for r in &rows {
        let id = r["request_id"].as_str().unwrap();
        let (url, status) = &expected[id];
        assert_eq!(r["url"], url.as_str(), "{id}");
        assert_eq!(r["status"], *status, "{id}");
        assert_eq!(r["verb"], "GET");
        assert_eq!(r["queue"], "DefaultAppPool");
        assert!(r["bytes_sent"].is_null(), "the trace logs no byte counts");
        let d = r["duration_s"].as_f64().unwrap();
        assert!(d > 0.0 && d < 0.1, "{id}: {d}");
        assert_eq!(r["pid"], 4400, "answered by the worker process");
    }
    let count = |u: &str| rows.iter().filter(|r| r["url"] == u).count();
    assert_eq!(count("http://georgis2:80/helloworld.htm"), 283);
    assert_eq!(count("http://georgis2:80/windir.txt"), 8);
    let first = &rows[0];
    assert_eq!(first["client"], "[2001:4898:0:fff:0:5efe:a50:e410]:37838");
    assert_eq!(first["server"], "[2001:4898:0:fff:0:5efe:a78:109d]:80");
    assert_eq!(first["start_utc"], "2011-01-23T22:07:27.2266110Z");
    assert_eq!(first["duration_s"].as_f64(), Some(0.000647));
    // Every event of the request, followed by its activity: receipt, parse, delivery, response.
    let activity = first["activity"].as_str().unwrap();
    let events = nettrail(&["dump", "--format", "jsonl", "--activity", activity, &trace]);
    assert_eq!(first["activity_events"].as_u64(), Some(events.len() as u64));
    let ids: Vec<u64> = events.iter().map(|e| e["id"].as_u64().unwrap()).collect();
    assert_eq!(ids, [1, 2, 3, 4, 10]);
}

#[test]
fn tables_filter_and_sort() {
    let trace = corpus("tx__KernelNetwork.etl");
    let rows = nettrail(&["requests", "--format", "jsonl", "--process", "2716", "--sort", "-bytes_received", &trace]);
    assert!(rows.iter().all(|r| r["pid"] == 2716));
    assert_eq!(rows[0]["bytes_received"], 15_315_506);
    assert!(rows.windows(2).all(|w| w[0]["bytes_received"].as_u64() >= w[1]["bytes_received"].as_u64()));
    let rows = nettrail(&["requests", "--format", "jsonl", "--host", "157.56.244", &trace]);
    assert!(!rows.is_empty() && rows.iter().all(|r| r["ip"] == "157.56.244.38"));
    let out =
        Command::new(env!("CARGO_BIN_EXE_nettrail")).args(["requests", "--sort", "nonsense", &trace]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no column \"nonsense\""));
}

#[test]
fn kernel_network_flows_that_peers_began_are_inbound_for_the_local_service() {
    let trace = corpus("tx__KernelNetwork.etl");
    // The events' own addresses: LLMNR queries arrive at the multicast
    // groups' port 5355, RDP at port 3389, from the peers' ephemeral ports.
    let received_at = |port: u16| {
        flows_from_events(&trace, &["Microsoft-Windows-Kernel-Network"])
            .keys()
            .filter(|(_, local, _)| local.ends_with(&format!(":{port}")))
            .count()
    };
    let (llmnr, rdp) = (received_at(5355), received_at(3389));
    assert!(llmnr > 20 && rdp == 1, "{llmnr} LLMNR flows, {rdp} RDP");
    let connections = nettrail(&["connections", "--format", "jsonl", &trace]);
    let requests = nettrail(&["requests", "--format", "jsonl", &trace]);
    for (port, service, count) in [(5355, "LLMNR", llmnr), (3389, "RDP", rdp)] {
        let at_port = |r: &&Value| r["local"].as_str().is_some_and(|l| l.ends_with(&format!(":{port}")));
        let conns: Vec<&Value> = connections.iter().filter(at_port).collect();
        assert_eq!(conns.len(), count, "{service} connections");
        assert!(conns.iter().all(|c| c["direction"] == "inbound"), "{service}: {conns:?}");
        let rows: Vec<&Value> = requests.iter().filter(at_port).collect();
        assert_eq!(rows.len(), count, "{service} rows");
        for r in rows {
            assert_eq!((r["direction"].as_str(), r["service"].as_str()), (Some("inbound"), Some(service)), "{r}");
            // The peer's end is the row's ip and port: an ephemeral port, not the service's.
            assert!(r["port"].as_u64().is_some_and(|p| p >= 1024 && p != u64::from(port as u16)), "{r}");
            assert!(r["status"].is_null(), "a flow's status is its protocol's answer, unknown here: {r}");
            assert_eq!(r["state"], if r["layer"] == "UDP" { "active" } else { "open" }, "{r}");
        }
    }
    // The HTTPS download this machine began is outbound.
    let https = requests.iter().find(|r| r["bytes_received"] == 15_315_506).unwrap();
    assert_eq!(https["direction"], "outbound");
    // What the machine began comes first; --direction keeps one kind.
    let first_inbound = requests.iter().position(|r| r["direction"] != "outbound").unwrap();
    assert!(requests[first_inbound..].iter().all(|r| r["direction"] != "outbound"));
    let inbound = nettrail(&["requests", "--format", "jsonl", "--direction", "inbound", &trace]);
    assert_eq!(inbound.len(), requests.iter().filter(|r| r["direction"] == "inbound").count());
    assert!(inbound.len() >= llmnr + rdp);
    let outbound = nettrail(&["connections", "--format", "jsonl", "--direction", "outbound", &trace]);
    assert_eq!(outbound.len(), connections.iter().filter(|r| r["direction"] == "outbound").count());
    // Nothing in the trace names its processes, and `info` says so.
    let info = Command::new(env!("CARGO_BIN_EXE_nettrail")).args(["info", &trace]).output().unwrap();
    let text = String::from_utf8(info.stdout).unwrap();
    assert!(text.contains("processes     no names:"), "{text}");
    let info =
        Command::new(env!("CARGO_BIN_EXE_nettrail")).args(["info", "--format", "json", &trace]).output().unwrap();
    let json: Value = serde_json::from_slice(&info.stdout).unwrap();
    assert_eq!(json["process_name_sources"], serde_json::json!([]));
}
