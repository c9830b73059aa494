//! The synthesizer writes from manifests of its own, never from the
//! decoder's built-in layouts: every event of every scenario is decoded
//! three ways — nettrail's built-in layouts alone (the trace's embedded
//! metadata left out), the per-build manifest it was written from (what
//! `nettrail dump --manifest` reads), and the TRACE_EVENT_INFO the trace
//! embeds — and the three must give the same properties. 32-bit (WOW64)
//! processes' events are among them, with 4-byte pointers.

use std::collections::BTreeMap;

use nettrail_decode::{Schemas, Source};
use nettrail_etl::{Guid, Trace};
use nettrail_synth::catalog;
use nettrail_synth::scenarios;

/// The providers the synthesizer has manifests of (Microsoft-Quic from
/// Windows 11 on; Chrome's on every build).
const PROVIDERS: [&str; 12] = [
    "Microsoft-Windows-TCPIP",
    "Microsoft-Windows-Winsock-AFD",
    "Microsoft-Windows-Winsock-NameResolution",
    "Microsoft-Windows-DNS-Client",
    "Microsoft-Windows-WinINet",
    "Microsoft-Windows-WebIO",
    "Microsoft-Windows-WinHttp",
    "Microsoft-Windows-HttpService",
    "Microsoft-Windows-LDAP-Client",
    "Microsoft-Windows-Kernel-Network",
    "Microsoft-Quic",
    "Chrome",
];

/// An event's properties by name: in-type and value (how each source shows
/// a pointer may differ — TRACE_EVENT_INFO states an out-type TDH's way —
/// what it holds may not).
fn properties(schemas: &Schemas, r: &nettrail_etl::Record<'_>, want: Source) -> Result<Vec<(String, String)>, String> {
    let mut values = Vec::new();
    let schema = schemas.decode(r, &mut values).map_err(|e| e.to_string())?;
    if schema.source != want {
        return Err(format!("decoded from {:?}, not {want:?}", schema.source));
    }
    let consumed = nettrail_decode::payload::decode(&schema.fields, r.payload, r.pointer_size, &mut Vec::new());
    if consumed != Ok(r.payload.len()) {
        return Err(format!("the layout reads {consumed:?} of {} bytes", r.payload.len()));
    }
    Ok(schema.fields.iter().zip(&values).map(|(f, v)| (f.name.clone(), format!("{:?} {v:?}", f.in_type))).collect())
}

#[test]
fn every_synthesized_event_decodes_alike_from_built_ins_its_manifest_and_its_metadata() {
    let guids: Vec<Guid> = PROVIDERS.iter().map(|p| catalog::provider_guid(p).unwrap()).collect();
    let mut compared: BTreeMap<(&str, u8), usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for (name, _, scenario) in scenarios::ALL {
        let bytes = scenario().unwrap_or_else(|e| panic!("{name}: {e}"));
        let trace = Trace::parse(&bytes).unwrap();
        let build = trace.header().build;
        // Built-in layouts only, for the trace's build.
        let mut built_in = Schemas::new();
        built_in.set_build(Some(build));
        // The manifests the synthesizer wrote from, as `--manifest` loads them.
        let mut manifests = Schemas::new();
        manifests.set_build(Some(build));
        for provider in PROVIDERS {
            if let Some(text) = catalog::manifest_text(build, provider) {
                manifests.add_manifest(text).unwrap_or_else(|e| panic!("{name}: {provider}: {e}"));
            }
        }
        let mut embedded = Schemas::new();
        assert!(embedded.learn(&trace).is_empty(), "{name}");
        let mut stream = trace.events();
        while let Some(event) = stream.next() {
            let r = event.unwrap().record;
            let Some(i) = guids.iter().position(|g| *g == r.provider) else { continue };
            // Chrome's TraceLogging events share its manifest's GUID and describe themselves.
            if r.extended.find(nettrail_etl::extended::ExtType::EVENT_SCHEMA_TL).is_some() {
                continue;
            }
            let what = format!("{name}: {} {} v{} ({}-bit)", PROVIDERS[i], r.id, r.version, 8 * r.pointer_size);
            let ours = properties(&built_in, &r, Source::BuiltIn);
            let theirs = properties(&manifests, &r, Source::Manifest);
            let merged = properties(&embedded, &r, Source::EmbeddedEventInfo);
            match (ours, theirs, merged) {
                (Ok(a), Ok(b), Ok(c)) if a == b && b == c => {
                    *compared.entry((PROVIDERS[i], r.pointer_size)).or_default() += 1
                }
                (a, b, c) => {
                    failures.push(format!("{what}:\n    built-in {a:?}\n    manifest {b:?}\n    embedded {c:?}"))
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} events differ:\n{}",
        failures.len(),
        failures.iter().take(20).cloned().collect::<Vec<_>>().join("\n")
    );
    // Every provider's events, and 32-bit ones of the user-mode providers
    // (kernel-mode providers log 64-bit records in every process); the
    // hostile-strings scenario is one more WinHTTP GET; Chrome's manifest
    // events and MsQuic's (Windows 11) too.
    let want = BTreeMap::from([
        (("Chrome", 8), 2),
        (("Microsoft-Quic", 8), 21),
        (("Microsoft-Windows-DNS-Client", 4), 3),
        (("Microsoft-Windows-DNS-Client", 8), 92),
        (("Microsoft-Windows-HttpService", 8), 15),
        (("Microsoft-Windows-Kernel-Network", 8), 48),
        (("Microsoft-Windows-LDAP-Client", 8), 3),
        (("Microsoft-Windows-TCPIP", 8), 3_024),
        (("Microsoft-Windows-WebIO", 4), 32),
        (("Microsoft-Windows-WebIO", 8), 569),
        (("Microsoft-Windows-WinHttp", 4), 6),
        (("Microsoft-Windows-WinHttp", 8), 96),
        (("Microsoft-Windows-WinINet", 4), 28),
        (("Microsoft-Windows-WinINet", 8), 130),
        (("Microsoft-Windows-Winsock-AFD", 8), 2_568),
        (("Microsoft-Windows-Winsock-NameResolution", 4), 1),
        (("Microsoft-Windows-Winsock-NameResolution", 8), 27),
    ]);
    assert_eq!(compared, want);
}
