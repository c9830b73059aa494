//! The WPR profile nettrail writes: well-formed, with the providers,
//! keywords, levels, filters, stacks, buffers and logging modes intended —
//! and letting in every event (and stack) that the synthesized scenarios
//! say Windows logs for the network activity the analysis reads.

use nettrail_capture::provider::Stacks;
use nettrail_capture::{Options, Scenario, Target, parse_provider, wprp};
use nettrail_etl::extended::ExtType;
use nettrail_etl::{Guid, Trace};

fn profile(options: &Options) -> String {
    wprp::write(&Scenario::network(options))
}

/// The `<EventProvider>` declared for a GUID.
fn declared<'a>(doc: &'a roxmltree::Document<'a>, guid: &str) -> roxmltree::Node<'a, 'a> {
    doc.descendants()
        .find(|n| n.has_tag_name("EventProvider") && n.attribute("Name") == Some(guid))
        .unwrap_or_else(|| panic!("no provider {guid}"))
}

fn ids(node: roxmltree::Node<'_, '_>, element: &str) -> Vec<u16> {
    node.children()
        .filter(|n| n.has_tag_name(element))
        .flat_map(|f| f.children().filter(|n| n.has_tag_name("EventId")))
        .map(|n| n.attribute("Value").unwrap().parse().unwrap())
        .collect()
}

fn keyword(node: roxmltree::Node<'_, '_>, element: &str) -> Option<String> {
    let e = node.children().find(|n| n.has_tag_name(element))?;
    e.children().find(|n| n.has_tag_name("Keyword")).and_then(|k| k.attribute("Value")).map(str::to_string)
}

#[test]
fn network_profile_is_well_formed_with_the_intended_providers() {
    let xml = profile(&Options::default());
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "WindowsPerformanceRecorder");

    // Buffers: 32 × 1 MB for the kernel, 64 × 1 MB for the providers.
    let buffers = |element: &str| {
        let c = root.descendants().find(|n| n.has_tag_name(element)).unwrap();
        let value = |name: &str| c.children().find(|n| n.has_tag_name(name)).unwrap().attribute("Value").unwrap();
        (value("BufferSize").to_string(), value("Buffers").to_string())
    };
    assert_eq!(buffers("SystemCollector"), ("1024".into(), "32".into()));
    assert_eq!(buffers("EventCollector"), ("1024".into(), "64".into()));

    // The kernel: processes, threads, images, a stack on thread creation.
    let system = root.descendants().find(|n| n.has_tag_name("SystemProvider")).unwrap();
    let values = |parent: roxmltree::Node<'_, '_>, tag: &str| -> Vec<String> {
        parent
            .descendants()
            .filter(|n| n.has_tag_name(tag))
            .map(|n| n.attribute("Value").unwrap().to_string())
            .collect()
    };
    assert_eq!(values(system, "Keyword"), ["ProcessThread", "Loader"]);
    assert_eq!(values(system, "Stack"), ["ThreadCreate"]);

    // TCPIP: level 4, non-paged, its connection rundown at start, 19 events.
    let tcpip = declared(&doc, "2f07e2ee-15db-40f1-90ef-9d7ba282188a");
    assert_eq!(tcpip.attribute("Level"), Some("4"));
    assert_eq!(tcpip.attribute("NonPagedMemory"), Some("true"));
    assert_eq!(tcpip.attribute("Stack"), None);
    assert_eq!(keyword(tcpip, "CaptureStateOnStart").as_deref(), Some("0x1300000080"));
    let tcpip_events = ids(tcpip, "EventFilters");
    assert_eq!(tcpip_events.len(), 19);
    assert!(tcpip_events.contains(&1300) && tcpip_events.contains(&1002));

    // AFD: keyword 0x4, a stack only on AfdCreate.
    let afd = declared(&doc, "e53c6823-7bb8-44bb-90dc-3f86090d48a6");
    assert_eq!(keyword(afd, "Keywords").as_deref(), Some("0x4"));
    assert_eq!(afd.attribute("Stack"), Some("true"));
    assert_eq!(ids(afd, "StackFilters"), [1000]);

    // WinINet 0x87, stacks on request creation and send; WebIO level 5 for ThreadAction.
    let wininet = declared(&doc, "43d1a55c-76d6-4f7e-995c-64c711e5cafe");
    assert_eq!(keyword(wininet, "Keywords").as_deref(), Some("0x87"));
    assert_eq!(ids(wininet, "StackFilters"), [104, 1007]);
    let webio = declared(&doc, "50b3e73c-9370-461d-bb9f-26f32d68887d");
    assert_eq!(webio.attribute("Level"), Some("5"));
    assert_eq!(ids(webio, "StackFilters"), [5, 17, 59996]);
    assert_eq!(ids(declared(&doc, "7d44233d-3055-4b9c-ba64-0d47ca40a232"), "StackFilters"), [59996]);

    // The thread pool: stacks where work is queued and timers set (custom hook 0x1C2A).
    let pool = declared(&doc, "c861d0e2-a2c1-4d36-9f9c-970bab943a12");
    assert_eq!(values(pool, "Stack"), ["ThreadPoolCallbackEnqueue"]);
    assert_eq!(values(pool, "CustomStack"), ["0x1C2A"]);

    // QUIC (msquic.sys and msquic.dll; Windows 10's WinQuic): its connection events (connection ids
    // at level 5), a stack on creation.
    for guid in ["ff15e657-4f26-570e-88ab-0796b258d11c", "2bcfefe5-5026-536b-1686-b249cb49cae3"] {
        let quic = declared(&doc, guid);
        assert_eq!(quic.attribute("Level"), Some("5"));
        let events = ids(quic, "EventFilters");
        assert!(events.contains(&5120) && events.contains(&5160) && events.contains(&6144), "{events:?}");
        assert_eq!(ids(quic, "StackFilters"), [5120]);
    }
    // No browser without --browser.
    assert!(!xml.contains("d2d578d9"), "no Chrome provider by default");

    // The layers the issue names, all present.
    for guid in [
        "55404e71-4db9-4deb-a5f5-8f86e46dde56", // Winsock-NameResolution
        "1c95126e-7eea-49a9-a3fe-a378b03ddb4d", // DNS-Client
        "245f975d-909d-49ed-b8f9-9a75691d6b6b", // URLMon
        "099614a5-5dd7-4788-8bc9-e29f43db28fc", // LDAP-Client
        "7dd42a49-5329-4832-8dfd-43d979153a88", // Kernel-Network
        "dd5ef90a-6398-47a4-ad34-4dcecdef795f", // HttpService
    ] {
        declared(&doc, guid);
    }

    // Every declared provider is in the profile, and the profile exists in
    // both logging modes, Memory based on File.
    let declared_ids: Vec<&str> =
        doc.descendants().filter(|n| n.has_tag_name("EventProvider")).map(|n| n.attribute("Id").unwrap()).collect();
    let used: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("EventProviderId"))
        .map(|n| n.attribute("Value").unwrap())
        .collect();
    assert_eq!(declared_ids, used);
    let profiles: Vec<(&str, &str, Option<&str>)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("Profile"))
        .map(|n| (n.attribute("Name").unwrap(), n.attribute("LoggingMode").unwrap(), n.attribute("Base")))
        .collect();
    assert_eq!(profiles, [("nettrail", "File", None), ("nettrail", "Memory", Some("nettrail.Verbose.File"))]);
    // Module identities for symbols, metadata for decoding elsewhere.
    assert_eq!(values(root, "CustomEvent")[..4], ["ImageId", "BuildInfo", "VolumeMapping", "EventMetadata"]);
}

#[test]
fn options_change_the_profile() {
    let plain = Scenario::network(&Options::default());
    assert!(plain.has_stacks());

    let bare = Scenario::network(&Options { no_stacks: true, ..Options::default() });
    assert!(!bare.has_stacks());
    let xml = wprp::write(&bare);
    assert!(!xml.contains("Stack"), "--no-stacks leaves no stack element or attribute");

    let runtimes = Scenario::network(&Options { clr: true, js: true, ..Options::default() });
    let xml = wprp::write(&runtimes);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let clr = declared(&doc, "e13c0d23-ccbc-4e12-931b-d9cc2eee27e4");
    assert_eq!((clr.attribute("Level"), keyword(clr, "Keywords").as_deref()), (Some("5"), Some("0x20098")));
    let rundown = declared(&doc, "a669021c-c450-4609-a035-5af59af4df18");
    assert_eq!(keyword(rundown, "CaptureStateOnSave").as_deref(), Some("0x20118"));
    let js = declared(&doc, "57277741-3638-4a4b-bdba-0ac6e45da56c");
    assert_eq!(keyword(js, "CaptureStateOnStart").as_deref(), Some("0x2"));
    assert_eq!(keyword(js, "CaptureStateOnSave").as_deref(), Some("0x4"));
    assert!(!wprp::write(&plain).contains("e13c0d23"), "no CLR without --clr");

    // --browser: Chrome's, Edge's channels' and WebView2's providers, every event with its stack,
    // the categories from NetLog (0x80) to WebView2's (0x1000_0000_0000); JavaScript's rundown too.
    let xml = wprp::write(&Scenario::network(&Options { browser: true, ..Options::default() }));
    let doc = roxmltree::Document::parse(&xml).unwrap();
    for guid in [
        "d2d578d9-2936-45b6-a09f-30e32715f42d",
        "3a5f2396-5c8f-4f1f-9b67-6cca6c990e61",
        "bd089baa-4e52-4794-a887-9e96868570d2",
        "d30b5c9f-b58f-4dc9-afaf-134405d72107",
        "c56b8664-45c5-4e65-b3c7-a8d6bd3f2e67",
        "e16ec3d2-bb0f-4e8f-bdb8-de0bea82dc3d",
    ] {
        let b = declared(&doc, guid);
        assert_eq!((b.attribute("Level"), b.attribute("Stack")), (Some("5"), Some("true")), "{guid}");
        assert_eq!(keyword(b, "Keywords").as_deref(), Some("0x1c000005c485"), "{guid}");
    }
    declared(&doc, "57277741-3638-4a4b-bdba-0ac6e45da56c");
    // The logging mode is chosen on wpr's command line, not in the profile.
    assert_eq!(wprp::write(&Scenario::network(&Options { circular: true, ..Options::default() })), wprp::write(&plain));
}

#[test]
fn user_providers_by_guid_hash_name_and_registered_name() {
    let app = parse_provider("*MyCompany-MyApp:0x1:5:stack").unwrap();
    // The EventSource/TraceLogging name hash.
    assert_eq!(app.target, Target::Guid(nettrail_tracelogging::provider_guid("MyCompany-MyApp")));
    assert_eq!((app.keywords, app.level, &app.stacks), (Some(1), Some(5), &Stacks::All));

    let by_guid = parse_provider("{7D44233D-3055-4B9C-BA64-0D47CA40A232}::verbose").unwrap();
    assert_eq!(by_guid.target, Target::Guid(Guid::parse_const("7d44233d-3055-4b9c-ba64-0d47ca40a232")));
    assert_eq!((by_guid.label.as_str(), by_guid.keywords, by_guid.level), ("Microsoft-Windows-WinHttp", None, Some(5)));

    let known = parse_provider("microsoft-windows-tcpip:0x80").unwrap();
    assert_eq!(known.target, Target::Guid(Guid::parse_const("2f07e2ee-15db-40f1-90ef-9d7ba282188a")));
    let registered = parse_provider("Contoso-Widgets-Sync:0x10:4").unwrap();
    assert_eq!(registered.target, Target::Registered("Contoso-Widgets-Sync".into()));

    for bad in ["", ":0x1", "App:zz", "App:1:loud", "App:1:4:stack:more"] {
        assert!(parse_provider(bad).is_err(), "{bad:?} accepted");
    }
    let err = parse_provider("App:zz").unwrap_err().to_string();
    assert!(err.contains("keywords \"zz\""), "{err}");

    // In the profile: the hashed GUID, its level and keywords, stacks on.
    let xml = wprp::write(&Scenario::network(&Options { extra: vec![app], ..Options::default() }));
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let guid = nettrail_tracelogging::provider_guid("MyCompany-MyApp").to_string();
    let node = declared(&doc, &guid);
    assert_eq!((node.attribute("Level"), node.attribute("Stack")), (Some("5"), Some("true")));
    assert_eq!(node.attribute("Id"), Some("EP_MyCompany-MyApp"));
}

/// Recording with this profile (with `--browser`) keeps everything the
/// analysis reads: every event the scenarios log for a provider passes that
/// provider's event filter, level and keywords, and every event that carries
/// a stack there has its stack enabled.
#[test]
fn the_profile_lets_in_what_the_scenarios_log() {
    let scenario = Scenario::network(&Options { browser: true, ..Options::default() });
    let provider = |guid: &Guid| scenario.providers.iter().find(|p| p.target == Target::Guid(*guid));
    let mut checked = 0;
    for (name, _, write) in nettrail_synth::scenarios::ALL {
        let bytes = write().unwrap();
        let trace = Trace::parse(&bytes).unwrap();
        let mut events = trace.events();
        while let Some(event) = events.next() {
            let event = event.unwrap();
            let record = &event.record;
            if !record.kind.is_event_header() {
                continue;
            }
            let Some(p) = provider(&record.provider) else { continue };
            let what = format!("{name}: {} event {}", p.label, record.id);
            assert!(p.events.is_empty() || p.events.contains(&record.id), "{what} is filtered out");
            assert!(
                p.level.is_none_or(|l| record.level <= l),
                "{what} at level {} is above {:?}",
                record.level,
                p.level
            );
            // The top 16 keyword bits name channels; sessions match on the rest.
            let keywords = record.keywords & 0x0000_ffff_ffff_ffff;
            assert!(
                p.keywords.is_none_or(|k| keywords == 0 || keywords & k != 0),
                "{what} keywords {:#x} miss {:?}",
                record.keywords,
                p.keywords
            );
            let has_stack = record.extended.find(ExtType::STACK_TRACE64).is_some()
                || record.extended.find(ExtType::STACK_TRACE32).is_some()
                || record.extended.find(ExtType::STACK_KEY64).is_some();
            if has_stack {
                let enabled = match &p.stacks {
                    Stacks::None => false,
                    Stacks::All | Stacks::Pool { .. } => true,
                    Stacks::Events(ids) => ids.contains(&record.id),
                };
                assert!(enabled, "{what} carries a stack the profile does not ask for");
            }
            checked += 1;
        }
    }
    assert!(checked > 5_000, "only {checked} provider events checked");
}
