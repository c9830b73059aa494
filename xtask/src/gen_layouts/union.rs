//! From every build's declarations to one provider's layouts: each
//! (id, version) any build declares, split into variants where builds lay
//! the payload out differently, with the attributes (lengths, counts,
//! out-types, maps) that the richest source states, completed by written
//! rules where no source of that build states them.

use std::collections::{BTreeMap, BTreeSet};

use super::model::{Declaration, Event, Field, Kind, Len, Names, Source, name_key};

/// One build's declaration of an event.
#[derive(Clone, Debug)]
pub struct Sighting<'a> {
    pub source: usize,
    pub event: &'a Event,
}

/// A layout of an (id, version), as some builds declare it.
#[derive(Clone, Debug)]
pub struct Variant {
    /// Builds the variant applies to (inclusive; `None`: open end).
    pub from: Option<u32>,
    pub to: Option<u32>,
    /// The sources that declare it, oldest build first.
    pub sources: Vec<usize>,
    /// The source whose names and attributes the fields take.
    pub primary: usize,
    pub fields: Vec<Field>,
    pub symbol: Option<String>,
    /// The declaration the descriptor names come from (newest).
    pub descriptor: Event,
    pub message: Option<String>,
    pub notes: Vec<String>,
}

/// An event of the union: its variants, oldest first.
#[derive(Clone, Debug)]
pub struct UnionEvent {
    pub id: u16,
    pub version: u8,
    pub variants: Vec<Variant>,
}

/// A provider's union over every source.
#[derive(Clone, Debug)]
pub struct Union {
    pub name: String,
    pub guid: String,
    /// Names by name, for resolving events' references (newest wins).
    pub names: Names,
    /// Names by value, as the layout shows them (newest wins).
    pub shown: Shown,
    pub events: Vec<UnionEvent>,
    /// Sources that declare the provider.
    pub sources: Vec<usize>,
    /// Events a source lists but cannot state, that no other source has: (id, version, source, why).
    pub unreadable: Vec<(u16, u8, usize, String)>,
}

/// (name, message) by value.
#[derive(Clone, Debug, Default)]
pub struct Shown {
    pub tasks: BTreeMap<u16, (String, Option<String>)>,
    /// (task value for task-scoped opcodes, value).
    pub opcodes: BTreeMap<(Option<u16>, u8), (String, Option<String>)>,
    pub keywords: BTreeMap<u64, (String, Option<String>)>,
    pub levels: BTreeMap<u8, (String, Option<String>)>,
    pub channels: BTreeMap<u8, String>,
}

/// How much a source can say: richer kinds win at the same build.
fn richness(kind: Kind) -> u8 {
    match kind {
        Kind::Tsv => 0,
        Kind::Dump => 1,
        Kind::Full => 2,
    }
}

/// A field list as every source can state it: names (without the spaces
/// older manifests have) and in-types, in order. Builds that differ in
/// either get layouts of their own.
fn shape(fields: &[Field]) -> Vec<(String, &str)> {
    fields.iter().map(|f| (name_key(&f.name), f.in_type.as_str())).collect()
}

/// Builds the union of one provider's declarations (`(source, declaration)`).
pub fn union(name: &str, guid: &str, sources: &[Source], decls: &[(usize, Declaration)]) -> anyhow::Result<Union> {
    // Provider-level names: every source that states values, newest last (wins).
    let mut order: Vec<&(usize, Declaration)> = decls.iter().collect();
    order.sort_by_key(|(s, _)| (sources[*s].build, richness(sources[*s].kind)));
    let mut names = Names::default();
    let mut shown = Shown::default();
    for (_, d) in &order {
        let n = &d.names;
        for (name, t) in &n.tasks {
            shown.tasks.insert(t.value, (name.clone(), t.message.clone()));
        }
        for ((task, name), o) in &n.opcodes {
            let scope = task.as_ref().and_then(|t| n.tasks.get(t)).map(|t| t.value);
            shown.opcodes.insert((scope, o.value), (name.clone(), o.message.clone()));
        }
        for (name, k) in &n.keywords {
            shown.keywords.insert(k.value, (name.clone(), k.message.clone()));
        }
        for (name, l) in &n.levels {
            shown.levels.insert(l.value, (name.clone(), l.message.clone()));
        }
        for (value, path) in n.channels.values() {
            shown.channels.insert(*value, path.clone());
        }
        names.tasks.extend(d.names.tasks.clone());
        names.opcodes.extend(d.names.opcodes.clone());
        names.keywords.extend(d.names.keywords.clone());
        names.levels.extend(d.names.levels.clone());
        names.channels.extend(d.names.channels.clone());
        names.maps.extend(d.names.maps.clone());
    }
    // Messages as complete manifests state them: the XML dumps give a
    // task's or opcode's message with its spaces dropped ("Datasent.").
    for (s, d) in &order {
        if sources[*s].kind != Kind::Full {
            continue;
        }
        let n = &d.names;
        let message = |shown: &mut (String, Option<String>), m: &Option<String>| {
            if m.is_some() {
                shown.1 = m.clone();
            }
        };
        for t in n.tasks.values() {
            if let Some(x) = shown.tasks.get_mut(&t.value) {
                message(x, &t.message);
            }
        }
        // The same opcode (name and value) may be declared in a task by one
        // source and for the provider by another.
        // XML dumps name opcodes by their message without spaces, and put
        // them in the task.
        for ((_, name), o) in &n.opcodes {
            let squashed = o.message.as_deref().map(name_key);
            for ((_, value), x) in shown.opcodes.iter_mut() {
                if *value == o.value && (x.0 == *name || Some(&x.0) == squashed.as_ref()) {
                    message(x, &o.message);
                }
            }
        }
        for k in n.keywords.values() {
            if let Some(x) = shown.keywords.get_mut(&k.value) {
                message(x, &k.message);
            }
        }
        for l in n.levels.values() {
            if let Some(x) = shown.levels.get_mut(&l.value) {
                message(x, &l.message);
            }
        }
    }
    let keys: BTreeSet<(u16, u8)> = decls.iter().flat_map(|(_, d)| d.events.keys().copied()).collect();
    let mut events = Vec::new();
    for (id, version) in keys {
        let mut sightings: Vec<Sighting<'_>> = order
            .iter()
            .filter_map(|(s, d)| d.events.get(&(id, version)).map(|event| Sighting { source: *s, event }))
            .collect();
        sightings.sort_by_key(|s| (sources[s.source].build, richness(sources[s.source].kind)));
        let variants =
            variants(&sightings, sources).map_err(|e| anyhow::anyhow!("{name} event {id} v{version}: {e}"))?;
        events.push(UnionEvent { id, version, variants });
    }
    let mut used: Vec<usize> = decls.iter().map(|(s, _)| *s).collect();
    used.sort_by_key(|s| (sources[*s].build, sources[*s].file.clone()));
    used.dedup();
    let mut unreadable = Vec::new();
    for (s, d) in decls {
        for (id, version, why) in &d.unreadable {
            if !events.iter().any(|e: &UnionEvent| e.id == *id && e.version == *version) {
                unreadable.push((*id, *version, *s, why.clone()));
            }
        }
    }
    Ok(Union { name: name.to_string(), guid: guid.to_string(), names, shown, events, sources: used, unreadable })
}

/// Splits an event's sightings into runs of builds with the same shape.
fn variants(sightings: &[Sighting<'_>], sources: &[Source]) -> Result<Vec<Variant>, String> {
    // One shape per build: the richest source of a build speaks for it.
    let mut per_build: BTreeMap<u32, Vec<&Sighting<'_>>> = BTreeMap::new();
    for s in sightings {
        per_build.entry(sources[s.source].build).or_default().push(s);
    }
    let mut runs: Vec<Vec<&Sighting<'_>>> = Vec::new();
    let mut last_shape: Option<Vec<(String, &str)>> = None;
    for (build, group) in &per_build {
        let richest = group.iter().max_by_key(|s| richness(sources[s.source].kind)).copied().ok_or("empty build")?;
        let shape_of = shape(&richest.event.fields);
        for other in group {
            if shape(&other.event.fields) != shape_of {
                return Err(format!(
                    "build {build}: {} and {} disagree",
                    sources[richest.source].file, sources[other.source].file
                ));
            }
        }
        if last_shape.as_ref() == Some(&shape_of) {
            if let Some(run) = runs.last_mut() {
                run.extend(group.iter().copied());
            }
        } else {
            runs.push(group.clone());
            last_shape = Some(shape_of);
        }
    }
    let firsts: Vec<u32> = runs.iter().map(|r| sources[r[0].source].build).collect();
    let count = runs.len();
    let mut out = Vec::new();
    for (i, run) in runs.into_iter().enumerate() {
        let from = (i > 0).then(|| firsts[i]);
        let to = (i + 1 < count).then(|| firsts[i + 1] - 1);
        out.push(variant(&run, sources, from, to));
    }
    Ok(out)
}

/// One run's variant: names from its newest released build (the same but for
/// spaces in older manifests' names), attributes
/// from its richest sources (full manifests, then dumps; newest first).
fn variant(run: &[&Sighting<'_>], sources: &[Source], from: Option<u32>, to: Option<u32>) -> Variant {
    let newest_first: Vec<&Sighting<'_>> = run.iter().rev().copied().collect();
    let named = newest_first.iter().find(|s| !sources[s.source].insider).copied().unwrap_or(newest_first[0]);
    let mut fields = named.event.fields.clone();
    for f in &mut fields {
        f.name = name_key(&f.name);
        f.out_type = None;
        f.length = None;
        f.count = None;
        f.map = None;
        f.notes.clear();
        f.corpus = false;
    }
    // Attributes, per position: the full sources are authoritative (an
    // absent out-type or length there is a fact), dumps state references
    // and maps.
    let mut by_richness: Vec<&Sighting<'_>> = newest_first.clone();
    by_richness.sort_by_key(|s| std::cmp::Reverse(richness(sources[s.source].kind)));
    let full: Vec<&Sighting<'_>> =
        by_richness.iter().copied().filter(|s| sources[s.source].kind == Kind::Full).collect();
    let dumps: Vec<&Sighting<'_>> =
        by_richness.iter().copied().filter(|s| sources[s.source].kind == Kind::Dump).collect();
    let primary = full.first().or(dumps.first()).copied().unwrap_or(named);
    for (i, f) in fields.iter_mut().enumerate() {
        if let Some(s) = full.first() {
            let g = &s.event.fields[i];
            f.out_type = g.out_type.clone();
            f.length = g.length.clone();
            f.count = g.count.clone();
            f.map = g.map.clone();
            // A source that states no maps (WEPExplorer's) says nothing of them: the newest dump's.
            if !sources[s.source].states_maps {
                f.map = dumps.iter().map(|s| &s.event.fields[i]).find_map(|g| g.map.clone());
            }
        } else {
            // Each attribute from the newest dump that states it.
            let first = |has: &dyn Fn(&Field) -> bool| dumps.iter().map(|s| &s.event.fields[i]).find(|g| has(g));
            f.length = first(&|g| g.length.is_some()).and_then(|g| g.length.clone());
            f.count = first(&|g| g.count.is_some()).and_then(|g| g.count.clone());
            f.map = first(&|g| g.map.is_some()).and_then(|g| g.map.clone());
            f.out_type = first(&|g| g.out_type.is_some()).and_then(|g| g.out_type.clone());
        }
        // References name the field by the dump's spelling.
        for len in [&mut f.length, &mut f.count].into_iter().flatten() {
            if let Len::Field(r) = len {
                *r = name_key(r);
            }
        }
    }
    let descriptor_sighting =
        newest_first.iter().find(|s| sources[s.source].kind != Kind::Tsv).copied().unwrap_or(newest_first[0]);
    let message = full
        .iter()
        .find_map(|s| s.event.message.clone())
        .or_else(|| run.iter().rev().find_map(|s| s.event.message.clone()));
    let mut all: Vec<usize> = run.iter().map(|s| s.source).collect();
    all.sort_by_key(|s| (sources[*s].build, richness(sources[*s].kind)));
    all.dedup();
    Variant {
        from,
        to,
        sources: all,
        primary: primary.source,
        fields,
        symbol: named.event.symbol.clone().or_else(|| run.iter().rev().find_map(|s| s.event.symbol.clone())),
        descriptor: descriptor_sighting.event.clone(),
        message,
        notes: Vec::new(),
    }
}

/// Whether a field's attributes are complete: a Binary needs a length.
pub fn needs_length(f: &Field) -> bool {
    f.in_type == "Binary" && f.length.is_none()
}

/// Attributes of fields by (name, in-type), as stated by the sources that
/// state them (not completed), per (id, version): for carrying.
type Stated = BTreeMap<(String, String), Vec<Candidate>>;

/// A field as an event (id, version) states it.
type Candidate = ((u16, u8), Field);

fn stated(u: &Union, sources: &[Source]) -> Stated {
    let mut out: Stated = BTreeMap::new();
    for e in &u.events {
        for v in &e.variants {
            let stated_by_source = sources[v.primary].kind != Kind::Tsv;
            for f in v.fields.iter().filter(|f| stated_by_source || f.corpus) {
                out.entry((f.name.clone(), f.in_type.clone())).or_default().push(((e.id, e.version), f.clone()));
            }
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Attr {
    Length,
    Count,
    Map,
    OutType,
}

impl Attr {
    fn name(self) -> &'static str {
        match self {
            Attr::Length => "length",
            Attr::Count => "count",
            Attr::Map => "map",
            Attr::OutType => "out-type",
        }
    }

    fn stated(self, f: &Field) -> bool {
        match self {
            Attr::Length => f.length.is_some(),
            Attr::Count => f.count.is_some(),
            Attr::Map => f.map.is_some(),
            Attr::OutType => f.out_type.is_some(),
        }
    }

    fn copy(self, from: &Field, to: &mut Field) {
        match self {
            Attr::Length => to.length = from.length.clone(),
            Attr::Count => to.count = from.count.clone(),
            Attr::Map => to.map = from.map.clone(),
            Attr::OutType => to.out_type = from.out_type.clone(),
        }
    }

    fn value(self, f: &Field) -> String {
        match self {
            Attr::Length => format!("{:?}", f.length),
            Attr::Count => format!("{:?}", f.count),
            Attr::Map => format!("{:?}", f.map),
            Attr::OutType => format!("{:?}", f.out_type),
        }
    }
}

/// Completes what a variant's own sources cannot say: a TSV dump states no
/// lengths, counts, maps or out-types; an XML dump no out-types and no fixed
/// lengths. Each attribute is taken, by these rules in order, and noted
/// beside the field:
/// 1. from the same field (name and in-type) of the nearest other version
///    of the same event id, as a manifest or XML dump states it, when the
///    field it refers to is in this event too;
/// 2. from the same field of the provider's other events (the most common
///    value), under the same condition;
/// 3. a Binary `X` right after a `XLength`/`XLen` field takes its length from it;
/// 4. a Binary left without a length in an event that is the IPv6 twin of
///    another (the same fields, names and in-types, except that this one is a
///    UInt32 there: an IPv4 address) is an IPv6 address: 16 bytes, out-type IPv6.
///
/// A Binary still without a length decodes as the rest of the payload (so a
/// later field fails to decode rather than being misread); its note says so.
pub fn complete(u: &mut Union, sources: &[Source]) {
    let known = stated(u, sources);
    let shapes: Vec<Vec<(String, String)>> = u
        .events
        .iter()
        .flat_map(|e| &e.variants)
        .map(|v| v.fields.iter().map(|f| (f.name.clone(), f.in_type.clone())).collect())
        .collect();
    for e in &mut u.events {
        for v in &mut e.variants {
            let kind = sources[v.primary].kind;
            if kind == Kind::Full {
                continue;
            }
            let names: Vec<String> = v.fields.iter().map(|f| f.name.clone()).collect();
            for i in 0..v.fields.len() {
                let wanted: Vec<Attr> = match kind {
                    Kind::Tsv => vec![Attr::Length, Attr::Count, Attr::Map, Attr::OutType],
                    _ if needs_length(&v.fields[i]) => vec![Attr::Length, Attr::OutType],
                    _ => vec![Attr::OutType],
                };
                let key = (v.fields[i].name.clone(), v.fields[i].in_type.clone());
                let candidates = known.get(&key).map(Vec::as_slice).unwrap_or_default();
                let fits = |g: &Field| {
                    [&g.length, &g.count].into_iter().flatten().all(|l| match l {
                        Len::Field(r) => names[..i].contains(r),
                        Len::Fixed(_) => true,
                    })
                };
                for attr in wanted {
                    if attr.stated(&v.fields[i]) {
                        continue;
                    }
                    let usable: Vec<&Candidate> =
                        candidates.iter().filter(|(_, g)| attr.stated(g) && fits(g)).collect();
                    let same_id = usable
                        .iter()
                        .filter(|((id, _), _)| *id == e.id)
                        .min_by_key(|((_, ver), _)| ver.abs_diff(e.version))
                        .copied();
                    let common = || {
                        let mut counts: BTreeMap<String, (usize, &Candidate)> = BTreeMap::new();
                        for item in &usable {
                            counts.entry(attr.value(&item.1)).or_insert((0, item)).0 += 1;
                        }
                        counts.into_values().max_by_key(|(n, _)| *n).map(|(_, item)| item)
                    };
                    let found = same_id
                        .map(|x| {
                            (
                                x,
                                if x.0.1 == e.version {
                                    "this event's layout of other builds"
                                } else {
                                    "another version of this event"
                                },
                            )
                        })
                        .or_else(|| common().map(|x| (x, "another event")));
                    if let Some((((id, ver), g), how)) = found {
                        let f = &mut v.fields[i];
                        attr.copy(g, f);
                        f.notes.push(format!(
                            "{} as in {how} ({id} v{ver}): no source of these builds states it",
                            attr.name()
                        ));
                    }
                }
                let f = &mut v.fields[i];
                if needs_length(f) && i > 0 {
                    let prev = &names[i - 1];
                    if *prev == format!("{}Length", f.name) || *prev == format!("{}Len", f.name) {
                        f.length = Some(Len::Field(prev.clone()));
                        f.notes.push(format!("length from {prev}, the field before it: no source states it"));
                    }
                }
            }
            let own: Vec<(String, String)> = v.fields.iter().map(|f| (f.name.clone(), f.in_type.clone())).collect();
            for i in 0..v.fields.len() {
                if !needs_length(&v.fields[i]) {
                    continue;
                }
                let twin = shapes.iter().any(|other| {
                    other.len() == own.len()
                        && other.iter().zip(&own).enumerate().all(|(j, (a, b))| {
                            if j == i {
                                a.0 == b.0 && a.1 == "UInt32"
                            } else {
                                a == b || (a.0 == b.0 && b.1 == "Binary" && a.1 == "UInt32")
                            }
                        })
                });
                let last = i + 1 == v.fields.len();
                let f = &mut v.fields[i];
                if twin {
                    f.length = Some(Len::Fixed(16));
                    f.out_type = Some("IPv6".to_string());
                    f.notes.push(
                        "16 bytes, IPv6: no source states its length; the IPv6 twin of an event whose field is a UInt32 (IPv4) address"
                            .to_string(),
                    );
                } else if !last {
                    f.notes.push("no source states its length: it takes the rest of the payload, so the fields after it do not decode".to_string());
                } else {
                    f.notes.push("no source states its length: it takes the rest of the payload".to_string());
                }
            }
        }
    }
}
