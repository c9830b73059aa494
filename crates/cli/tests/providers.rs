//! `nettrail providers`: the built-in layouts held against every real
//! manifest in `../shared/reference/manifests` (the check, on the
//! manifests this machine has): each (id, version) they declare is known,
//! for the manifest's build, with the same field names in order and the same
//! in-types — a `Pointer` stays a `Pointer`.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::Value;

fn nettrail(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_nettrail")).args(args).output().expect("run nettrail")
}

fn reference(path: &str) -> String {
    let full = format!("{}/../../../shared/reference/manifests/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&full).unwrap_or_else(|e| panic!("{full}: {e} (the reference files are required)"))
}

/// A manifest's event: (provider, id, version) → [(field name, in-type)].
type Declared = BTreeMap<(String, u16, u8), Vec<(String, String)>>;

fn in_type(t: &str) -> String {
    t.strip_prefix("win:").unwrap_or(t).to_string()
}

fn template_fields(template: roxmltree::Node<'_, '_>) -> Vec<(String, String)> {
    template
        .children()
        .filter(|d| d.has_tag_name("data"))
        .map(|d| (d.attribute("name").unwrap().to_string(), in_type(d.attribute("inType").unwrap())))
        .collect()
}

/// An instrumentation manifest (Microsoft/Tx's Windows 7 ones).
fn manifest(text: &str) -> Declared {
    let doc = roxmltree::Document::parse(text.trim_start_matches('\u{feff}')).unwrap();
    let mut out = Declared::new();
    for p in doc.descendants().filter(|n| n.has_tag_name("provider") && n.has_attribute("guid")) {
        let name = p.attribute("name").unwrap().to_string();
        let templates: BTreeMap<&str, Vec<(String, String)>> = p
            .descendants()
            .filter(|t| t.has_tag_name("template"))
            .map(|t| (t.attribute("tid").unwrap(), template_fields(t)))
            .collect();
        for e in p.descendants().filter(|e| e.has_tag_name("event") && e.has_attribute("value")) {
            let number = |t: &str| match t.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                None => t.parse().unwrap(),
            };
            let id = number(e.attribute("value").unwrap()) as u16;
            let version = e.attribute("version").map_or(0, |v| number(v) as u8);
            let fields = e.attribute("template").map(|t| templates[t].clone()).unwrap_or_default();
            out.insert((name.clone(), id, version), fields);
        }
    }
    out
}

/// A WEPExplorer dump (nasbench/EVTX-ETW-Resources' Windows 11 ones).
fn wepexplorer(text: &str) -> Declared {
    let doc = roxmltree::Document::parse(text).unwrap();
    let mut out = Declared::new();
    let child_text = |n: roxmltree::Node<'_, '_>, name: &str| {
        n.children().find(|c| c.has_tag_name(name)).and_then(|c| c.text()).unwrap_or_default().trim().to_string()
    };
    for p in doc.descendants().filter(|n| n.has_tag_name("Provider")) {
        let name = child_text(p, "Name");
        for e in p.descendants().filter(|n| n.has_tag_name("Event")) {
            let id = child_text(e, "Id").parse().unwrap();
            let version = child_text(e, "Version").parse().unwrap();
            let template = child_text(e, "Template");
            let fields = if template.is_empty() {
                Vec::new()
            } else {
                template_fields(roxmltree::Document::parse(&template).unwrap().root_element())
            };
            out.insert((name.clone(), id, version), fields);
        }
    }
    out
}

/// The built-in layouts, as `nettrail providers --format json` lists them:
/// (provider, id, version) → [(from, to, [(name, in_type)])].
type Listed = BTreeMap<(String, u16, u8), Vec<(Option<u64>, Option<u64>, Vec<(String, String)>)>>;

fn listed() -> (Listed, Vec<Value>) {
    let out = nettrail(&["providers", "--format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let json: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut listed = Listed::new();
    for p in &json {
        let name = p["name"].as_str().unwrap().to_string();
        for e in p["events"].as_array().unwrap() {
            let key = (name.clone(), e["id"].as_u64().unwrap() as u16, e["version"].as_u64().unwrap() as u8);
            let fields = e["fields"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| (f["name"].as_str().unwrap().to_string(), f["in_type"].as_str().unwrap().to_string()))
                .collect();
            listed.entry(key).or_default().push((e["from_build"].as_u64(), e["to_build"].as_u64(), fields));
        }
    }
    (listed, json)
}

/// The reference manifests and the build each is of (see docs/decoding.md).
const REFERENCE: &[(&str, u64)] = &[
    ("tcp.man", 7601),
    ("IE_Client.man", 7600),
    ("HTTP_Server.man", 7600),
    ("SystemEvents.man", 7600),
    ("windows11/Microsoft-Windows-HttpLog.xml", 22621),
    ("windows11/Microsoft-Windows-Runtime-Web-Http.xml", 22621),
    ("windows11/Microsoft-Windows-DNS-Client.24H2.xml", 26100),
    ("windows11/Microsoft-Quic.xml", 22621),
];

/// Where nettrail differs from a manifest on purpose: the corpus proves
/// Kernel-Network's `connid` pointer-sized (docs/decoding.md).
fn corrected(provider: &str, field: &str, manifest: &str, ours: &str) -> bool {
    provider == "Microsoft-Windows-Kernel-Network" && field == "connid" && manifest == "UInt32" && ours == "Pointer"
}

#[test]
fn the_built_in_layouts_know_every_event_of_the_real_manifests() {
    let (listed, json) = listed();
    // The providers the network model reads with built-in layouts (the browsers' TraceLogging
    // providers describe themselves; Chrome's manifest event is built in).
    for name in [
        "Microsoft-Windows-TCPIP",
        "Microsoft-Windows-Winsock-AFD",
        "Microsoft-Windows-Winsock-NameResolution",
        "Microsoft-Windows-WinINet",
        "Microsoft-Windows-WebIO",
        "Microsoft-Windows-WinHttp",
        "Microsoft-Windows-DNS-Client",
        "Microsoft-Windows-HttpService",
        "Microsoft-Windows-LDAP-Client",
        "Microsoft-Windows-Kernel-Network",
        "Microsoft-Windows-URLMon",
        "Microsoft-Quic",
        "Microsoft-Windows-WinQuic",
        "Chrome",
    ] {
        assert!(json.iter().any(|p| p["name"] == name), "{name} is not built in");
    }
    let mut checked: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for &(file, build) in REFERENCE {
        let text = reference(file);
        let declared = if file.ends_with(".man") { manifest(&text) } else { wepexplorer(&text) };
        for ((provider, id, version), fields) in &declared {
            // Only the providers nettrail ships layouts for.
            if !json.iter().any(|p| p["name"] == provider.as_str()) {
                continue;
            }
            let what = format!("{file}: {provider} {id} v{version}");
            let Some(layouts) = listed.get(&(provider.clone(), *id, *version)) else {
                failures.push(format!("{what}: unknown"));
                continue;
            };
            let covers = |(from, to, _): &&(Option<u64>, Option<u64>, Vec<(String, String)>)| {
                from.is_none_or(|f| build >= f) && to.is_none_or(|t| build <= t)
            };
            let Some((_, _, ours)) = layouts.iter().find(covers) else {
                failures.push(format!("{what}: no layout for build {build}"));
                continue;
            };
            // Tx's manifests are the sources: 16 of TCPIP's names have spaces
            // that the registered manifests (what TDH reports) do not.
            let names: Vec<String> = fields.iter().map(|(n, _)| n.replace(' ', "")).collect();
            let our_names: Vec<&String> = ours.iter().map(|(n, _)| n).collect();
            if names.iter().collect::<Vec<_>>() != our_names {
                failures.push(format!("{what}: fields {names:?}, nettrail {our_names:?}"));
                continue;
            }
            let entry = checked.entry(file).or_default();
            entry.0 += 1;
            for ((name, theirs), (_, ours)) in fields.iter().zip(ours) {
                if theirs == "Pointer" {
                    entry.1 += 1;
                }
                if theirs != ours {
                    if corrected(provider, name, theirs, ours) {
                        entry.2 += 1;
                    } else {
                        failures.push(format!("{what}: {name} is {theirs}, nettrail {ours}"));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
    // (events checked, Pointer fields among them, corpus corrections) per manifest.
    let want: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::from([
        ("tcp.man", (211, 214, 0)),
        ("IE_Client.man", (117, 84, 0)),
        ("HTTP_Server.man", (85, 45, 0)),
        // Kernel-Network's 22 events and Kernel-Process's 16.
        ("SystemEvents.man", (38, 34, 20)),
        ("windows11/Microsoft-Windows-HttpLog.xml", (1, 0, 0)),
        ("windows11/Microsoft-Windows-Runtime-Web-Http.xml", (48, 30, 0)),
        ("windows11/Microsoft-Windows-DNS-Client.24H2.xml", (146, 26, 0)),
        // Every event msquic.sys registers on Windows 11 22H2.
        ("windows11/Microsoft-Quic.xml", (159, 146, 0)),
    ]);
    assert_eq!(checked, want);
}

#[test]
fn providers_lists_and_describes_by_name_or_guid() {
    let out = nettrail(&["providers"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let tcpip = text.lines().find(|l| l.ends_with(" Microsoft-Windows-TCPIP")).expect("TCPIP listed");
    assert!(tcpip.starts_with("2f07e2ee-15db-40f1-90ef-9d7ba282188a"), "{tcpip}");
    assert_eq!(tcpip.split_whitespace().nth(1), Some("754"), "{tcpip}");

    let by_name = nettrail(&["providers", "tcpip"]);
    let by_guid = nettrail(&["providers", "{2F07E2EE-15DB-40F1-90EF-9D7BA282188A}"]);
    assert!(by_name.status.success() && by_guid.status.success());
    assert_eq!(by_name.stdout, by_guid.stdout);
    let text = String::from_utf8(by_name.stdout).unwrap();
    // Windows 10's insider build 18990 named the last field otherwise: a layout of its own.
    let insider = text.split("\n\n").find(|e| e.starts_with("event 1033 v1 (builds -19040)")).expect("1033 v1");
    assert!(insider.ends_with("    ProcessSequenceNumber UInt64"), "{insider}");
    let v1 = text.split("\n\n").find(|e| e.starts_with("event 1033 v1 (builds 19041-)")).expect("1033 v1");
    let lines: Vec<&str> = v1.lines().collect();
    assert_eq!(lines[0], "event 1033 v1 (builds 19041-) TcpConnectTcbComplete_V1");
    assert!(lines[2].starts_with("  from builds 19041 19042 19043 22000 22621"), "{}", lines[2]);
    assert_eq!(lines[3..].first(), Some(&"    LocalAddressLength UInt32"));
    assert!(lines.contains(&"    LocalAddress Binary SocketAddress length=LocalAddressLength"), "{v1}");
    assert_eq!(lines.last(), Some(&"    ProcessStartKey UInt64"));

    let json = nettrail(&["providers", "Winsock-AFD", "--format", "json"]);
    let json: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json.len(), 1);
    let events = json[0]["events"].as_array().unwrap();
    assert_eq!(events.len(), 96);
    let e3 = events.iter().find(|e| e["id"] == 3).unwrap();
    let fields: Vec<(&str, &str)> = e3["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["name"].as_str().unwrap(), f["in_type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        fields,
        [
            ("Process", "Pointer"),
            ("Endpoint", "Pointer"),
            ("Address", "Binary"),
            ("Port", "UInt16"),
            ("Status", "UInt32")
        ]
    );
    assert_eq!(e3["fields"][2]["length"], "16");
    assert_eq!(e3["fields"][2]["out_type"], "IPv6");

    let unknown = nettrail(&["providers", "Nope"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("no built-in provider \"Nope\""));
}

/// `nettrail dump --manifest` reads the very file the synthesizer wrote an
/// event from, and decodes a 32-bit process's event with it as the
/// built-in layouts do.
#[test]
fn dump_reads_the_synthesizers_manifest() {
    use nettrail_synth::{EventSpec, Process, Synth, SynthConfig, Val, catalog};
    let mut s = Synth::with_config(SynthConfig { merge_metadata: false, ..SynthConfig::default() });
    s.add_process(Process::new(3200, 900, "legacy.exe").wow64()).unwrap();
    let fields = nettrail_synth::fields![
        ("Request", Val::Ptr(0x0064_02a8)),
        ("RequestHandle", 0x00cc_0010u64),
        ("Session", Val::Ptr(0x0064_0550)),
        ("Method", "GET"),
        ("URI", "https://intranet.example/api"),
    ];
    s.emit(EventSpec::latest("WebIO", 17).at(5.0).thread(3200, 3204).fields(fields)).unwrap();
    let dir = nettrail_testkit::target_dir().join("test-providers");
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("webio-32.etl");
    std::fs::write(&trace, s.finish().unwrap()).unwrap();
    let manifest = dir.join("Microsoft-Windows-WebIO.man");
    std::fs::write(&manifest, catalog::manifest_text(19045, "WebIO").unwrap()).unwrap();
    let decoded = |extra: &[&str]| -> Value {
        let mut args =
            vec!["dump", trace.to_str().unwrap(), "--format", "jsonl", "--provider", "Microsoft-Windows-WebIO"];
        args.extend_from_slice(extra);
        let out = nettrail(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let with_manifest = decoded(&["--manifest", manifest.to_str().unwrap()]);
    let built_in = decoded(&[]);
    assert_eq!(with_manifest["schema_source"], "manifest");
    assert_eq!(built_in["schema_source"], "builtin");
    assert_eq!(with_manifest["properties"], built_in["properties"]);
    let p = &built_in["properties"];
    assert_eq!((p["Request"].as_str(), p["Session"].as_str()), (Some("0x6402a8"), Some("0x640550")));
    assert_eq!(p["URI"], "https://intranet.example/api");
    // Two 4-byte pointers, two handles, the method (8-bit), the URI (UTF-16), versions, error.
    assert_eq!(built_in["payload_len"], 4 + 8 + 4 + 8 + 4 + 2 * 29 + 2 * 2 + 4);
}

/// The browsers' TraceLogging providers are listed with what nettrail reads
/// of them (their events describe themselves), beside Chrome's manifest
/// event and MsQuic's, which have layouts.
#[test]
fn providers_lists_the_browsers_and_quic() {
    let out = nettrail(&["providers"]);
    let text = String::from_utf8(out.stdout).unwrap();
    for (guid, name) in [
        ("d2d578d9-2936-45b6-a09f-30e32715f42d", "Google.Chrome (TraceLogging: Chrome)"),
        ("e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d", "Microsoft.MSEdgeWebView (TraceLogging: Edge WebView2)"),
        ("3a5f2396-5c8f-4f1f-9b67-6cca6c990e61", "Microsoft.MSEdgeStable (TraceLogging: Edge)"),
    ] {
        let line = text.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("{name} not listed"));
        assert!(line.starts_with(guid), "{line}");
    }
    let quic = text.lines().find(|l| l.ends_with(" Microsoft-Quic")).expect("Microsoft-Quic listed");
    assert_eq!(quic.split_whitespace().nth(1), Some("187"), "{quic}");
    let json = nettrail(&["providers", "webview2", "--format", "json"]);
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let json: Vec<Value> = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json.len(), 1);
    assert_eq!(json[0]["tracelogging"], true);
    let events = json[0]["events"].as_array().unwrap();
    let start_job = events.iter().find(|e| e["name"] == "URL_REQUEST_START_JOB").expect("a NetLog event");
    assert_eq!(start_job["keywords"], "0x80");
    let fields: Vec<&str> =
        start_job["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(fields, ["Phase", "Timestamp", "Id", "source_type", "params"]);
    // Chrome's GUID: its manifest event (a layout) and its TraceLogging events.
    let chrome = nettrail(&["providers", "{D2D578D9-2936-45B6-A09F-30E32715F42D}", "--format", "json"]);
    let chrome: Vec<Value> = serde_json::from_slice(&chrome.stdout).unwrap();
    let names: Vec<&str> = chrome.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["Chrome", "Google.Chrome"]);
    let event1 = &chrome[0]["events"][0];
    assert_eq!((event1["id"].as_u64(), event1["name"].as_str()), (Some(1), Some("ChromeEvent")));
    let fields: Vec<&str> = event1["fields"].as_array().unwrap().iter().map(|f| f["name"].as_str().unwrap()).collect();
    assert_eq!(fields, ["Name", "Phase", "ArgName1", "ArgValue1", "ArgName2", "ArgValue2", "ArgName3", "ArgValue3"]);
    // MsQuic's connection events, with the socket addresses the model reads.
    let quic = nettrail(&["providers", "microsoft-quic"]);
    let text = String::from_utf8(quic.stdout).unwrap();
    let remote = text.split("\n\n").find(|e| e.starts_with("event 5128 v0")).expect("5128");
    assert!(remote.contains("    Addr Binary SocketAddress length=AddrLength"), "{remote}");
}
