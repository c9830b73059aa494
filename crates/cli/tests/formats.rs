//! `nettrail dump` formats and filters, end to end on real traces.

use std::process::Command;

use nettrail_testkit::{catalog, corpus_file};
use serde_json::Value;

fn nettrail(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().expect("run nettrail")
}

fn dump(path: &str, args: &[&str]) -> String {
    let mut all = vec!["dump", path];
    all.extend_from_slice(args);
    let out = nettrail(&all);
    assert!(out.status.success(), "{all:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn jsonl(path: &str, args: &[&str]) -> Vec<Value> {
    let mut all = vec!["--format", "jsonl"];
    all.extend_from_slice(args);
    dump(path, &all).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

#[test]
fn xml_of_every_corpus_trace_is_well_formed_windows_event_xml() {
    for entry in catalog() {
        if entry["events"] == 0 {
            continue;
        }
        let path = corpus_file(entry["file"].as_str().unwrap());
        let text = dump(path.to_str().unwrap(), &["--format", "xml"]);
        let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let events: Vec<_> = doc.root_element().children().filter(|n| n.has_tag_name("Event")).collect();
        assert_eq!(events.len() as u64, entry["events"].as_u64().unwrap(), "{}", path.display());
        for event in events.iter().take(500) {
            assert_eq!(event.tag_name().namespace(), Some("http://schemas.microsoft.com/win/2004/08/events/event"));
            let system = event.children().find(|n| n.has_tag_name("System")).expect("System");
            for child in
                ["Provider", "EventID", "Version", "Level", "Task", "Opcode", "Keywords", "TimeCreated", "Execution"]
            {
                assert!(system.children().any(|n| n.has_tag_name(child)), "{}: no System/{child}", path.display());
            }
            let rendering = event.children().find(|n| n.has_tag_name("RenderingInfo")).expect("RenderingInfo");
            assert_eq!(rendering.attribute("Culture"), Some("en-US"));
            for child in ["Level", "Opcode", "Keywords", "Task", "Message", "Channel", "Provider"] {
                assert!(
                    rendering.children().any(|n| n.has_tag_name(child)),
                    "{}: no RenderingInfo/{child}",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn xml_escapes_what_the_trace_says() {
    // AMSI scripts hold quotes and angle-free but quote-heavy text, and CR/LF.
    let path = corpus_file("etlparser__AMSITrace.etl");
    let text = dump(path.to_str().unwrap(), &["--format", "xml", "--provider", "AmsiTrace", "--limit", "1"]);
    assert!(text.contains("&quot;powershell.exe -nop -w 1 -enc RwBlAHQALQBBAGwAaQBhAHMA&quot;"), "{text}");
    let doc = roxmltree::Document::parse(&text).unwrap();
    let script = doc.descendants().find(|n| n.attribute("Name") == Some("Script")).unwrap();
    assert!(script.text().unwrap().starts_with("IWshShell3.Run(\"powershell.exe"));
}

#[test]
fn csv_is_rectangular_rfc_4180_with_properties_as_json() {
    let path = corpus_file("etlparser__AMSITrace.etl");
    let text = dump(path.to_str().unwrap(), &["--format", "csv"]);
    // Python's csv module is the independent reader here.
    let script = "import csv,sys,json\nrows=list(csv.reader(open(sys.argv[1],newline='')))\nprint(json.dumps(rows))";
    let dir = nettrail_testkit::target_dir().join("test-formats");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("amsi.csv");
    std::fs::write(&file, &text).unwrap();
    let out = Command::new("python3").args(["-c", script]).arg(&file).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows: Vec<Vec<String>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), 1 + 21);
    assert_eq!(rows[0][..3], ["timestamp", "provider_name", "provider_guid"]);
    assert_eq!(rows[0][16..], ["properties", "undecoded"]);
    // Rectangular: every row has the header's columns.
    assert!(rows.iter().all(|r| r.len() == 18), "{:?}", rows.iter().map(Vec::len).collect::<Vec<_>>());
    let amsi: Vec<&Vec<String>> = rows.iter().filter(|r| r[1] == "AmsiTrace").collect();
    assert_eq!(amsi.len(), 19);
    assert_eq!(amsi[0][3], "AmsiScript");
    // The properties as one JSON object, typed as in JSON lines; CR/LF shown as escapes.
    let properties: serde_json::Value = serde_json::from_str(&amsi[0][16]).unwrap();
    assert_eq!(properties["Engine"], "VBScript");
    assert!(properties["Script"].as_str().unwrap().starts_with("IWshShell3.Run(\"powershell.exe -nop"), "{properties}");
    assert_eq!(amsi[0][17], "");
}

#[test]
fn text_lines_with_chosen_fields() {
    let path = corpus_file("perfview__primitive-types.etl");
    let text = dump(
        path.to_str().unwrap(),
        &["--format", "text", "--fields", "timecreated,eventname,properties", "--provider", "solar_system"],
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    let first: Vec<&str> = lines[0].splitn(3, ',').collect();
    assert!(first[0].parse::<i64>().unwrap() > 132_750_000_000_000_000, "FILETIME {}", first[0]);
    assert_eq!(first[1], "PrimitiveTypesTest");
    assert!(first[2].starts_with("string_type Mercury boolean_type false char_type M int16_type -51"), "{}", first[2]);
}

#[test]
fn jsonl_has_names_message_and_typed_properties() {
    let path = corpus_file("perfview__primitive-types.etl");
    let events = jsonl(path.to_str().unwrap(), &["--provider", "d3dd3dd4-aac2-4e2a-8dd4-a8fb61b77615"]);
    assert_eq!(events.len(), 5);
    let e = &events[0];
    assert_eq!(e["event_name"], "PrimitiveTypesTest");
    assert_eq!(e["level_name"], "Verbose");
    assert_eq!(e["schema_source"], "tracelogging");
    let p = &e["properties"];
    assert_eq!(p["string_type"], "Mercury");
    assert_eq!(p["boolean_type"], false);
    assert_eq!(p["int16_type"], -51);
    assert_eq!(p["uint32_type"], 102);
    assert_eq!(p["guid_type"], "0ad614c4-0ef4-4225-8013-f44f37cb0397");
    assert_eq!(p["file_time_type"], "2021-09-09T14:59:35.7990000Z");
    // Events without a schema say why.
    let all = jsonl(path.to_str().unwrap(), &[]);
    let header = all.iter().find(|e| e["provider_name"] == "Windows Kernel/EventTrace").unwrap();
    assert!(header.get("undecoded").is_some() || header.get("properties").is_some());
}

#[test]
fn filters_by_id_time_and_activity() {
    let path = corpus_file("perfview__net.4.5.2.x86.etl");
    let path = path.to_str().unwrap();
    let all = jsonl(path, &[]);
    assert_eq!(all.len(), 168_298);
    // --id
    let by_id = jsonl(path, &["--id", "1001", "--provider", "Microsoft-Windows-DNS-Client"]);
    let expected =
        all.iter().filter(|e| e["id"] == 1001 && e["provider_name"] == "Microsoft-Windows-DNS-Client").count();
    assert_eq!(by_id.len(), expected);
    // --since/--until: a window in seconds from the start, and the same in UTC.
    let window = jsonl(path, &["--since", "+5", "--until", "+5.5"]);
    let t0 = &window.first().unwrap()["timestamp"];
    let t1 = &window.last().unwrap()["timestamp"];
    let utc = jsonl(path, &["--since", t0.as_str().unwrap(), "--until", t1.as_str().unwrap()]);
    assert!(window.len() > 100, "{} events in half a second", window.len());
    assert_eq!(utc.len(), window.len());
    // --activity: every event carrying one activity id, in order.
    let with_activity = all.iter().find(|e| !e["activity_id"].is_null()).expect("an event with an activity");
    let id = with_activity["activity_id"].as_str().unwrap();
    let activity = jsonl(path, &["--activity", id]);
    let expected = all.iter().filter(|e| e["activity_id"] == id || e["related_activity_id"] == id).count();
    assert!(expected >= 1);
    assert_eq!(activity.len(), expected);
}

#[test]
fn kernel_network_renders_as_twapi_text_lines() {
    let path = corpus_file("tx__KernelNetwork.etl");
    let text = dump(
        path.to_str().unwrap(),
        &[
            "--format",
            "text",
            "--fields",
            "timecreated,taskname,opcodename,properties",
            "--provider",
            "Microsoft-Windows-Kernel-Network",
        ],
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 8923);
    // The first IPv4 send: FILETIME, task, opcode message, then name-value pairs
    // with addresses dotted and ports in host order.
    let send = lines.iter().find(|l| l.contains(",Data sent.,PID 2716 ")).expect("a send of PID 2716");
    let parts: Vec<&str> = send.splitn(4, ',').collect();
    assert!(parts[0].parse::<i64>().unwrap() > 129_846_116_000_000_000);
    assert_eq!(parts[1], "KERNEL_NETWORK_TASK_TCPIP");
    assert_eq!(parts[2], "Data sent.");
    assert!(
        parts[3]
            .starts_with("PID 2716 size 77 daddr 157.56.244.38 saddr 10.121.106.118 dport 443 sport 61739 startime "),
        "{}",
        parts[3]
    );
    assert!(lines.iter().any(|l| l.contains(",KERNEL_NETWORK_TASK_UDPIP,")));
    assert!(lines.iter().all(|l| !l.contains("undecoded")));
}

#[test]
fn http_server_renders_as_event_xml_with_urls_and_messages() {
    let path = corpus_file("tx__HTTP_Server.etl");
    let text = dump(path.to_str().unwrap(), &["--format", "xml", "--provider", "Microsoft-Windows-HttpService"]);
    let doc = roxmltree::Document::parse(&text).unwrap();
    let events: Vec<_> = doc.root_element().children().filter(|n| n.has_tag_name("Event")).collect();
    assert_eq!(events.len(), 2041);
    let urls: Vec<&str> =
        doc.descendants().filter(|n| n.attribute("Name") == Some("Url")).filter_map(|n| n.text()).collect();
    assert_eq!(urls.len(), 582);
    assert!(urls.contains(&"http://georgis2:80/helloworld.htm") && urls.contains(&"http://georgis2:80/windir.txt"));
    let messages: Vec<&str> =
        doc.descendants().filter(|n| n.has_tag_name("Message")).filter_map(|n| n.text()).collect();
    let parsed: Vec<&&str> = messages.iter().filter(|m| m.starts_with("Parsed request (request pointer 0x")).collect();
    assert!(!parsed.is_empty());
    assert!(parsed.iter().all(|m| m.contains(", method 4) with URI http://georgis2:80/")), "{:?}", parsed[0]);
    // Every event has its provider's name and a rendered task in RenderingInfo.
    for e in &events {
        let provider = e.descendants().find(|n| n.has_tag_name("Provider") && n.attribute("Name").is_some()).unwrap();
        assert_eq!(provider.attribute("Guid"), Some("{dd5ef90a-6398-47a4-ad34-4dcecdef795f}"));
    }
}

#[test]
fn a_supplied_manifest_takes_priority_over_the_built_ins() {
    let path = corpus_file("tx__HTTP_Server.etl");
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/reference/manifests");
    let args = ["--provider", "Microsoft-Windows-HttpService", "--id", "2", "--limit", "1"];
    let built_in = jsonl(path.to_str().unwrap(), &args);
    assert_eq!(built_in[0]["schema_source"], "builtin");
    let mut with = args.to_vec();
    with.extend(["--manifest", manifest.to_str().unwrap()]);
    let supplied = jsonl(path.to_str().unwrap(), &with);
    assert_eq!(supplied[0]["schema_source"], "manifest");
    // Both describe the same event the same way.
    assert_eq!(supplied[0]["properties"], built_in[0]["properties"]);
    assert_eq!(supplied[0]["properties"]["Url"], "http://georgis2:80/windir.txt");
    assert_eq!(supplied[0]["message"], built_in[0]["message"]);
    // A manifest that is not XML is an error naming the file.
    let bad = nettrail(&["dump", path.to_str().unwrap(), "--manifest", path.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("tx__HTTP_Server.etl"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}

#[test]
fn raw_dump_has_the_record_fields_only() {
    let path = corpus_file("tx__KernelNetwork.etl");
    let raw = jsonl(path.to_str().unwrap(), &["--raw", "--limit", "50"]);
    let decoded = jsonl(path.to_str().unwrap(), &["--limit", "50"]);
    assert_eq!(raw.len(), 50);
    let keys: Vec<&str> = raw[1].as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "timestamp",
            "timestamp_raw",
            "provider_guid",
            "provider_name",
            "kind",
            "id",
            "version",
            "opcode",
            "task",
            "level",
            "channel",
            "keywords",
            "pid",
            "tid",
            "cpu",
            "activity_id",
            "related_activity_id",
            "extended",
            "payload_len"
        ]
    );
    // The same events, the same record fields.
    for (r, d) in raw.iter().zip(&decoded) {
        for key in &keys {
            assert_eq!(r[*key], d[*key], "{key}");
        }
        assert!(d.get("properties").is_some() && r.get("properties").is_none());
    }
}

/// JSON lines render the fields an event kind shares once a chunk. Events
/// alike in everything but the provider's name in their traits (no schema,
/// so the name is the traits') must still each show their own name, as the
/// CSV does.
#[test]
fn events_alike_but_for_their_traits_keep_their_own_provider_names() {
    use nettrail_etl::extended::ExtType;
    use nettrail_etl::write::{Context, EventHeaderRecord, TraceConfig, TraceWriter};
    use nettrail_tracelogging::{descriptor, level, opcode, provider_traits};

    const GUID: &str = "9f0c4e3d-5b1a-4c2e-8d7f-6a5b4c3d2e1f";
    let config = TraceConfig::default();
    let start = config.start_timestamp;
    let mut writer = TraceWriter::new(config);
    let names = ["Contoso-Alpha", "Contoso-Beta", "Contoso-Beta", "Contoso-Alpha"];
    for (i, name) in names.iter().enumerate() {
        let traits = provider_traits(name);
        let extended = [(ExtType::PROV_TRAITS, traits.as_slice())];
        let context = Context { timestamp: start + 10_000 * (i as u64 + 1), cpu: 0, process_id: 42, thread_id: 43 };
        let payload = 443u16.to_be_bytes();
        let guid = nettrail_etl::Guid::parse_const(GUID);
        let mut record = EventHeaderRecord::new(context, guid, descriptor(level::INFORMATION, opcode::INFO), &payload);
        record.extended = &extended;
        writer.write_event_header(&record).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("nettrail-formats-traits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("traits.etl");
    std::fs::write(&path, writer.finish()).unwrap();
    let path = path.to_str().unwrap();

    let lines = dump(path, &["--format", "jsonl", "--provider", GUID]);
    let shown: Vec<String> = lines
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| format!("{} {}", e["provider_name"], e["undecoded"]))
        .collect();
    let expected: Vec<String> = names.iter().map(|n| format!("\"{n}\" \"no schema for the provider\"")).collect();
    assert_eq!(shown, expected);
    let csv = dump(path, &["--format", "csv", "--provider", GUID]);
    let in_csv: Vec<&str> = csv.lines().skip(1).map(|l| l.split(',').nth(1).unwrap()).collect();
    assert_eq!(in_csv, names);
    std::fs::remove_dir_all(&dir).ok();
}
