//! The generator's rules on small declarations, and (with the two source
//! repositories cloned) the committed files against a fresh generation.

use std::path::Path;

use super::model::{Declaration, Event, Field, Kind, Len, Named, Source};
use super::{fixes, render, sources, union};

fn source(build: u32, kind: Kind, insider: bool) -> Source {
    Source { build, release: "test", insider, kind, states_maps: true, file: format!("test {build}") }
}

fn field(name: &str, in_type: &str) -> Field {
    Field::new(name, in_type)
}

fn event(fields: Vec<Field>) -> Event {
    Event { fields, ..Event::default() }
}

fn decl(events: Vec<((u16, u8), Event)>) -> Declaration {
    Declaration { provider: "P".into(), events: events.into_iter().collect(), ..Declaration::default() }
}

#[test]
fn builds_that_differ_get_layouts_of_their_own() {
    let sources = vec![
        source(7600, Kind::Dump, false),
        source(10586, Kind::Tsv, false),
        source(18990, Kind::Dump, true),
        source(19041, Kind::Tsv, false),
        source(26100, Kind::Tsv, false),
    ];
    let old = || {
        let mut len = field("Addr", "Binary");
        len.length = Some(Len::Field("AddrLength".into()));
        event(vec![field("AddrLength", "UInt32"), len])
    };
    let tsv = |extra: Option<&str>| {
        let mut f = vec![field("AddrLength", "UInt32"), field("Addr", "Binary")];
        if let Some(name) = extra {
            f.push(field(name, "UInt64"));
        }
        event(f)
    };
    let decls = vec![
        (0, decl(vec![((1, 0), old())])),
        (1, decl(vec![((1, 0), tsv(None))])),
        (2, decl(vec![((1, 0), tsv(None)), ((1, 1), { tsv(Some("ProcessSequenceNumber")) })])),
        (3, decl(vec![((1, 0), tsv(None)), ((1, 1), tsv(Some("ProcessStartKey")))])),
        (4, decl(vec![((1, 0), tsv(Some("Appended"))), ((1, 1), tsv(Some("ProcessStartKey")))])),
    ];
    let mut u = union::union("P", "7dd42a49-5329-4832-8dfd-43d979153a88", &sources, &decls).unwrap();
    union::complete(&mut u, &sources);
    let v0 = &u.events[0];
    assert_eq!((v0.id, v0.version, v0.variants.len()), (1, 0, 2));
    let (a, b) = (&v0.variants[0], &v0.variants[1]);
    assert_eq!((a.from, a.to, b.from, b.to), (None, Some(26099), Some(26100), None));
    // The dump states the length; the TSV build takes it from the other builds' layout.
    assert_eq!(a.fields[1].length, Some(Len::Field("AddrLength".into())));
    assert!(a.fields[1].notes.is_empty(), "{:?}", a.fields[1].notes);
    assert_eq!(b.fields[1].length, Some(Len::Field("AddrLength".into())));
    assert!(
        b.fields[1].notes[0].starts_with("length as in this event's layout of other builds"),
        "{:?}",
        b.fields[1].notes
    );
    // v1: the insider build's name is a layout of its own, for its builds only.
    let v1 = &u.events[1];
    let names: Vec<(&str, Option<u32>, Option<u32>)> =
        v1.variants.iter().map(|v| (v.fields[2].name.as_str(), v.from, v.to)).collect();
    assert_eq!(names, [("ProcessSequenceNumber", None, Some(19040)), ("ProcessStartKey", Some(19041), None)]);
    assert_eq!(v1.variants[1].fields[1].length, Some(Len::Field("AddrLength".into())));
}

#[test]
fn ipv6_twins_and_length_fields_complete_binaries() {
    let sources = vec![source(10586, Kind::Tsv, false)];
    let decls = vec![(
        0,
        decl(vec![
            ((2, 0), event(vec![field("Endpoint", "Pointer"), field("Address", "UInt32"), field("Port", "UInt16")])),
            ((3, 0), event(vec![field("Endpoint", "Pointer"), field("Address", "Binary"), field("Port", "UInt16")])),
            ((4, 0), event(vec![field("KeyLen", "UInt32"), field("Key", "Binary"), field("Tail", "UInt32")])),
            ((5, 0), event(vec![field("Blob", "Binary"), field("Tail", "UInt32")])),
        ]),
    )];
    let mut u = union::union("P", "7dd42a49-5329-4832-8dfd-43d979153a88", &sources, &decls).unwrap();
    union::complete(&mut u, &sources);
    let f = |id: u16, i: usize| u.events.iter().find(|e| e.id == id).unwrap().variants[0].fields[i].clone();
    let twin = f(3, 1);
    assert_eq!((twin.length, twin.out_type.as_deref()), (Some(Len::Fixed(16)), Some("IPv6")));
    assert_eq!(f(4, 1).length, Some(Len::Field("KeyLen".into())), "{:?}", f(4, 1));
    let unknown = f(5, 0);
    assert_eq!(unknown.length, None);
    assert!(unknown.notes[0].contains("the fields after it do not decode"));
}

#[test]
fn corpus_facts_confirm_or_correct_and_must_match() {
    let sources = vec![source(7600, Kind::Full, false)];
    let mut connid = field("connid", "UInt32");
    connid.out_type = None;
    let decls = vec![(0, decl(vec![((10, 0), event(vec![field("PID", "UInt32"), connid]))]))];
    let mut u =
        union::union("Microsoft-Windows-Kernel-Network", "7dd42a49-5329-4832-8dfd-43d979153a88", &sources, &decls)
            .unwrap();
    fixes::apply(&mut u).unwrap();
    let f = &u.events[0].variants[0].fields[1];
    assert_eq!(f.in_type, "Pointer");
    assert!(f.corpus && f.notes[0].starts_with("the corpus corrects the manifests' UInt32"), "{:?}", f.notes);
    // A provider whose facts match nothing of the union is an error.
    let decls = vec![(0, decl(vec![((1001, 0), event(vec![field("Other", "UInt32")]))]))];
    let mut u =
        union::union("Microsoft-Windows-DNS-Client", "1c95126e-7eea-49a9-a3fe-a378b03ddb4d", &sources, &decls).unwrap();
    assert!(fixes::apply(&mut u).is_err());
}

#[test]
fn descriptors_resolve_through_the_names_tables() {
    let sources = vec![source(17134, Kind::Dump, false), source(22621, Kind::Tsv, false)];
    let mut dump = decl(vec![]);
    dump.names.tasks.insert("Connect".into(), Named { value: 1017, message: None });
    dump.names.opcodes.insert((Some("Connect".into()), "Connected".into()), Named { value: 12, message: None });
    dump.names.keywords.insert("AFD_KW_STREAM".into(), Named { value: 2, message: None });
    let tsv = Event {
        task: Some("Connect".into()),
        opcode: Some("Connected".into()),
        level: Some("Informational".into()),
        keywords: vec!["AFD_KW_STREAM".into(), "keyword_80000000000".into()],
        ..Event::default()
    };
    let decls = vec![(0, dump), (1, decl(vec![((1017, 0), tsv)]))];
    let u = union::union("P", "7dd42a49-5329-4832-8dfd-43d979153a88", &sources, &decls).unwrap();
    let v = render::values(&u, &u.events[0].variants[0].descriptor);
    assert_eq!(
        (v.task, v.opcode, v.level, v.keywords, v.unresolved.len()),
        (Some(1017), Some(12), Some(4), Some(0x800_0000_0002), 0)
    );
    let stop = Event { opcode: Some("Stop".into()), level: Some("win:Always".into()), ..Event::default() };
    let v = render::values(&u, &stop);
    assert_eq!((v.opcode, v.level), (Some(2), Some(0)));
}

/// With the two repositories cloned (`NETTRAIL_JDU_ETW_EVENTS`,
/// `NETTRAIL_REPNZ_ETW_DOCS`, default `../sources/…`), the committed layouts
/// and manifests are what the generator writes. CI has no network, so this
/// runs on request: `cargo test -p xtask -- --ignored`.
#[test]
#[ignore = "needs clones of jdu2600/Windows10EtwEvents, repnz/etw-providers-docs and microsoft/msquic"]
fn the_committed_files_are_what_the_generator_writes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let inputs = sources::default_inputs(&root.join("../shared/reference"));
    let generated = super::generate(&inputs).unwrap();
    for (dir, files) in
        [("crates/decode/schemas/providers", &generated.layouts), ("crates/synth/manifests", &generated.synth)]
    {
        for (name, text) in files {
            let on_disk = std::fs::read_to_string(root.join(dir).join(name)).unwrap();
            assert!(on_disk == *text, "{dir}/{name} is stale: run `cargo xtask gen-layouts`");
        }
    }
    assert_eq!(generated.layouts.len(), sources::PROVIDERS.len());
}

/// With the two repositories cloned (as above): every event every source
/// declares is known to the built-in layouts for that source's build, with
/// its field names in order and its in-types — a Pointer a Pointer (the one
/// difference: Kernel-Network's corpus-proven `connid`).
#[test]
#[ignore = "needs clones of jdu2600/Windows10EtwEvents, repnz/etw-providers-docs and microsoft/msquic"]
fn the_built_in_layouts_know_every_declared_event_of_every_build() {
    use nettrail_decode::SchemaKey;
    use nettrail_decode::builtin::BuiltIn;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let loaded = sources::load(&sources::default_inputs(&root.join("../shared/reference"))).unwrap();
    let built_in = BuiltIn::get();
    let (mut checked, mut unreadable) = (0, 0);
    let mut failures = Vec::new();
    for (name, guid, _) in sources::PROVIDERS {
        let guid = guid.parse().unwrap();
        for (s, d) in &loaded.providers[*name] {
            let build = loaded.sources[*s].build;
            unreadable += d.unreadable.len();
            for (&(id, version), e) in &d.events {
                let what = format!("{} {name} {id} v{version}", loaded.sources[*s].file);
                let Some(layout) = built_in.for_build(&SchemaKey::Manifest { provider: guid, id, version }, build)
                else {
                    failures.push(format!("{what}: unknown"));
                    continue;
                };
                let theirs: Vec<(String, &str)> =
                    e.fields.iter().map(|f| (super::model::name_key(&f.name), f.in_type.as_str())).collect();
                let ours: Vec<(String, &str)> =
                    layout.fields.iter().map(|f| (f.name.clone(), f.in_type.name())).collect();
                let corrected = |(a, b): (&(String, &str), &(String, &str))| {
                    a == b || (*name == "Microsoft-Windows-Kernel-Network" && a.0 == "connid" && b.1 == "Pointer")
                };
                if theirs.len() != ours.len() || !theirs.iter().zip(&ours).all(corrected) {
                    failures.push(format!("{what}: {theirs:?}, built in {ours:?}"));
                }
                checked += 1;
            }
        }
    }
    assert!(failures.is_empty(), "{} failures:\n{}", failures.len(), failures.join("\n"));
    // Every declaration of the 21 builds' sources (TSV dumps, XML dumps,
    // manifests, WEPExplorer dumps), MsQuic's and Chrome's manifests, and NDIS 10600 v0, which
    // no source states readably (two builds list it).
    assert_eq!((checked, unreadable), (53_108, 2));
}
