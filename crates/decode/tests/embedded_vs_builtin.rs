//! Where a corpus trace embeds Windows' own TRACE_EVENT_INFO (a WPR or
//! PerfView merge) for a provider nettrail ships layouts for, every such
//! event is decoded twice — with that metadata, and with the built-in layouts
//! for the trace's build — and the two compared field by field: names,
//! in-types, out-types, values. Disagreements are listed; there are none
//! (PktMon 160's `DropLocation` out-type, which no manifest source states,
//! was one: the layouts now take it from this trace).

use std::collections::BTreeMap;

use nettrail_decode::builtin::BuiltIn;
use nettrail_decode::{SchemaKey, Schemas, Source};
use nettrail_etl::Trace;
use nettrail_testkit::{catalog, corpus_file};

/// (trace, provider, id, version) → (events compared, disagreements).
type Compared = BTreeMap<(String, String, u16, u8), (usize, Vec<String>)>;

/// Each field's name, in-type, out-type (its default spelled out) and value.
fn properties(schemas: &Schemas, r: &nettrail_etl::Record<'_>) -> Result<(Source, Vec<(String, String)>), String> {
    let mut values = Vec::new();
    let schema = schemas.decode(r, &mut values).map_err(|e| e.to_string())?;
    let fields = schema.fields.iter().zip(&values).map(|(f, v)| {
        let in_type = f.in_type.name();
        let out_type = f.out_type.name().or_else(|| f.in_type.default_out_type().name()).unwrap_or("");
        (f.name.clone(), format!("{in_type} {out_type} {v:?}"))
    });
    Ok((schema.source, fields.collect()))
}

#[test]
fn built_in_layouts_agree_with_the_metadata_windows_embedded() {
    let built_in_providers = &BuiltIn::get().providers;
    let mut compared = Compared::new();
    for entry in catalog() {
        let name = entry["file"].as_str().unwrap();
        if entry["events"] == 0 {
            continue;
        }
        let bytes = std::fs::read(corpus_file(name)).unwrap();
        let trace = Trace::parse(&bytes).unwrap();
        let mut embedded = Schemas::new();
        embedded.learn(&trace);
        if embedded.embedded.events.is_empty() {
            continue;
        }
        let mut built_in = Schemas::new();
        built_in.set_build(Some(trace.header().build));
        let mut stream = trace.events();
        while let Some(event) = stream.next() {
            let Ok(event) = event else { break };
            let r = event.record;
            let Some(key @ SchemaKey::Manifest { provider, id, version }) = Schemas::key_of(&r) else { continue };
            // The network providers' layouts (the CLR's built-ins are its method events only).
            let Some(info) = built_in_providers.get(&provider).filter(|i| !i.name.contains("DotNETRuntime")) else {
                continue;
            };
            if !embedded.embedded.events.contains_key(&key) {
                continue;
            }
            let entry = compared.entry((name.to_string(), info.name.clone(), id, version)).or_default();
            entry.0 += 1;
            let theirs = properties(&embedded, &r);
            let ours = properties(&built_in, &r);
            let disagreement = match (theirs, ours) {
                (Ok((Source::EmbeddedEventInfo, a)), Ok((Source::BuiltIn, b))) if a == b => None,
                (a, b) => Some(format!("embedded {a:?}, built-in {b:?}")),
            };
            // The first disagreement of each event is enough to show.
            if let Some(d) = disagreement
                && entry.1.is_empty()
            {
                entry.1.push(d);
            }
        }
    }
    let disagreements: Vec<String> = compared
        .iter()
        .flat_map(|((trace, provider, id, version), (_, d))| {
            d.iter().map(move |d| format!("{trace}: {provider} {id} v{version}: {d}"))
        })
        .collect();
    assert!(disagreements.is_empty(), "{}", disagreements.join("\n"));
    // What the corpus holds of it: (trace, provider, id, version) → events.
    let counts: BTreeMap<String, usize> = compared
        .iter()
        .map(|((trace, provider, id, version), (n, _))| (format!("{trace} {provider} {id} v{version}"), *n))
        .collect();
    let want: BTreeMap<String, usize> = [
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 100 v0", 1),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 160 v0", 114),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 20 v0", 44),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 30 v0", 111),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 40 v0", 3),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 60 v0", 3),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 65 v0", 5),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 66 v0", 5),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 70 v0", 5),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 75 v0", 18),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 80 v0", 44),
        ("demikernel__PktMon.etl Microsoft-Windows-PktMon 90 v0", 50),
        ("perfview__net.4.5.2.x86.etl Microsoft-Windows-DNS-Client 1001 v0", 4),
        ("perfview__net.4.5.2.x86.etl Microsoft-Windows-Kernel-Process 1 v1", 1),
        ("perfview__net.4.5.2.x86.etl Microsoft-Windows-Kernel-Process 2 v1", 1),
        ("perfview__net.4.5.x86.PerfViewData.etl Microsoft-Windows-DNS-Client 1001 v0", 3),
        ("perfview__net.4.5.x86.PerfViewData.etl Microsoft-Windows-DNS-Client 1019 v0", 1),
    ]
    .into_iter()
    .map(|(k, n)| (k.to_string(), n))
    .collect();
    assert_eq!(counts, want);
}
