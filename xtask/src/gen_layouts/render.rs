//! Writing the union as a layout file, and one build's declarations as the
//! synthesizer's reduced instrumentation manifests.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use anyhow::Context;

use super::model::{Event, Field, Kind, Len, Source};
use super::sources::Loaded;
use super::union::{Union, Variant};

// ---------------------------------------------------------------------------
// Descriptor values.

/// winmeta.xml's levels: name, message, value.
const LEVELS: &[(&str, &str, u8)] = &[
    ("LogAlways", "Log Always", 0),
    ("Critical", "Critical", 1),
    ("Error", "Error", 2),
    ("Warning", "Warning", 3),
    ("Informational", "Information", 4),
    ("Verbose", "Verbose", 5),
];

/// winmeta.xml's opcodes.
const OPCODES: &[(&str, u8)] = &[
    ("Info", 0),
    ("Start", 1),
    ("Stop", 2),
    ("DC_Start", 3),
    ("DC_Stop", 4),
    ("Extension", 5),
    ("Reply", 6),
    ("Resume", 7),
    ("Suspend", 8),
    ("Send", 9),
    ("Receive", 240),
];

/// Letters and digits, lower case: how TSV opcode texts compare.
fn squash(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// An event's EVENT_DESCRIPTOR values, as far as the names resolve.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Values {
    pub task: Option<u16>,
    pub opcode: Option<u8>,
    pub level: Option<u8>,
    pub keywords: Option<u64>,
    pub channel: Option<u8>,
    /// Names that did not resolve.
    pub unresolved: Vec<String>,
}

pub fn values(u: &Union, e: &Event) -> Values {
    let n = &u.names;
    let mut out = Values::default();
    if let Some(t) = &e.task {
        match n.tasks.get(t) {
            Some(task) => out.task = Some(task.value),
            None => out.unresolved.push(format!("task {t}")),
        }
    }
    out.opcode = match &e.opcode {
        None => Some(0),
        Some(o) => {
            let bare = o.strip_prefix("win:").unwrap_or(o);
            let scoped = e.task.clone();
            let found = n
                .opcodes
                .get(&(scoped.clone(), o.clone()))
                .or_else(|| n.opcodes.get(&(None, o.clone())))
                .map(|x| x.value)
                .or_else(|| OPCODES.iter().find(|(name, _)| *name == bare).map(|(_, v)| *v))
                .or_else(|| {
                    // TSV dumps give the opcode's message without spaces.
                    let want = squash(o);
                    let matches = |(task, name): &(Option<String>, String), message: &Option<String>| {
                        (task.is_none() || *task == scoped)
                            && (squash(name) == want || message.as_deref().is_some_and(|m| squash(m) == want))
                    };
                    n.opcodes.iter().find(|(k, v)| matches(k, &v.message)).map(|(_, v)| v.value)
                });
            if found.is_none() {
                out.unresolved.push(format!("opcode {o}"));
            }
            found
        }
    };
    if let Some(l) = &e.level {
        let bare = l.strip_prefix("win:").unwrap_or(l);
        // Some dumps spell LogAlways `win:Always`.
        let bare = if bare == "Always" { "LogAlways" } else { bare };
        let found = LEVELS
            .iter()
            .find(|(name, message, _)| *name == bare || *message == bare)
            .map(|(_, _, v)| *v)
            .or_else(|| n.levels.get(l).map(|x| x.value));
        match found {
            Some(v) => out.level = Some(v),
            None => out.unresolved.push(format!("level {l}")),
        }
    }
    let mut mask = 0u64;
    for k in &e.keywords {
        let found = n
            .keywords
            .get(k)
            .map(|x| x.value)
            .or_else(|| k.strip_prefix("keyword_").and_then(|h| u64::from_str_radix(h, 16).ok()));
        match found {
            Some(m) => mask |= m,
            None => out.unresolved.push(format!("keyword {k}")),
        }
    }
    out.keywords = (mask != 0).then_some(mask);
    if let Some(c) = &e.channel {
        let found = n
            .channels
            .get(c)
            .map(|(v, _)| *v)
            .or_else(|| u.shown.channels.iter().find(|(_, path)| *path == c).map(|(v, _)| *v));
        match found {
            Some(v) => out.channel = Some(v),
            None => out.unresolved.push(format!("channel {c}")),
        }
    }
    out
}

// ---------------------------------------------------------------------------
// The layout language.

/// A word of the layout language: quoted when it has spaces or quotes, or
/// would read as a comment.
pub fn word(s: &str) -> String {
    let plain =
        !s.is_empty() && !s.starts_with('#') && !s.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\');
    if plain { s.to_string() } else { quoted(s) }
}

pub fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => {}
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn field_line(f: &Field) -> String {
    let mut line = format!("{} {}", word(&f.name), f.in_type);
    if let Some(out) = &f.out_type {
        let _ = write!(line, " {out}");
    }
    for (key, len) in [("len", &f.length), ("count", &f.count)] {
        match len {
            Some(Len::Fixed(n)) => {
                let _ = write!(line, " {key}={n}");
            }
            Some(Len::Field(r)) => {
                let _ = write!(line, " {key}=@{}", word(r));
            }
            None => {}
        }
    }
    if let Some(map) = &f.map {
        let _ = write!(line, " map={}", word(map));
    }
    line
}

fn builds_of(v: &Variant, sources: &[Source]) -> String {
    let builds: BTreeSet<u32> = v.sources.iter().map(|s| sources[*s].build).collect();
    builds.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

pub fn layout_file(u: &Union, role: &str, sources: &[Source]) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {} ({role}): nettrail's built-in event layouts.", u.name);
    s.push_str("# Generated by `cargo xtask gen-layouts` (do not edit: regenerate) from the manifests these\n");
    s.push_str("# Windows builds register, as these files state them:\n");
    for i in &u.sources {
        let src = &sources[*i];
        let kind = match src.kind {
            Kind::Tsv => "fields and in-types",
            Kind::Dump => "fields, in-types, length/count references, maps, names with values",
            Kind::Full => "complete templates",
        };
        let _ = writeln!(
            s,
            "#   {} {} ({}): {} [{kind}]",
            src.build,
            src.release,
            if src.insider { "insider" } else { "release" },
            src.file
        );
    }
    s.push_str("# Each event says which builds declare it and the file its layout's attributes come from. Where\n");
    s.push_str("# builds lay one id and version out differently, each layout names its builds (`builds=`).\n");
    s.push_str("# Comments beside fields say what no source of those builds states (completed by the rules in\n");
    s.push_str("# docs/decoding.md) and what the corpus' real traces confirm or correct.\n");
    for (id, version, src, why) in &u.unreadable {
        let _ = writeln!(
            s,
            "# Not here: event {id} v{version}, which {} lists but cannot state ({why}).",
            sources[*src].short()
        );
    }
    let _ = writeln!(s, "provider {} {}", word(&u.name), u.guid);
    for (value, path) in &u.shown.channels {
        let _ = writeln!(s, "channel {value} {}", word(path));
    }
    for (value, (name, message)) in &u.shown.levels {
        let _ = writeln!(s, "level {value} {}", word(message.as_deref().unwrap_or(name)));
    }
    for (mask, (name, message)) in &u.shown.keywords {
        let _ = writeln!(s, "keyword 0x{mask:x} {}", word(message.as_deref().unwrap_or(name)));
    }
    for (value, (name, message)) in &u.shown.tasks {
        let _ = write!(s, "task {value} {}", word(name));
        if let Some(m) = message {
            let _ = write!(s, " {}", quoted(m));
        }
        s.push('\n');
    }
    for ((task, value), (name, message)) in &u.shown.opcodes {
        let _ = match task {
            Some(t) => write!(s, "opcode {t}:{value} {}", word(name)),
            None => write!(s, "opcode {value} {}", word(name)),
        };
        if let Some(m) = message {
            let _ = write!(s, " {}", quoted(m));
        }
        s.push('\n');
    }
    let used: BTreeSet<&str> =
        u.events.iter().flat_map(|e| &e.variants).flat_map(|v| &v.fields).filter_map(|f| f.map.as_deref()).collect();
    for (name, map) in &u.names.maps {
        if !used.contains(name.as_str()) {
            continue;
        }
        let _ = writeln!(s, "map {} {}", word(name), if map.bitmap { "bitmap" } else { "value" });
        for (value, text) in &map.entries {
            let _ = if map.bitmap {
                writeln!(s, "  0x{value:x} {}", quoted(text))
            } else {
                writeln!(s, "  {value} {}", quoted(text))
            };
        }
    }
    for e in &u.events {
        for v in &e.variants {
            s.push('\n');
            let primary = &sources[v.primary];
            let _ = writeln!(s, "# builds {}: {}", builds_of(v, sources), primary.file);
            let d = values(u, &v.descriptor);
            if !d.unresolved.is_empty() {
                let _ = writeln!(s, "# not in any source's tables: {}", d.unresolved.join(", "));
            }
            for note in &v.notes {
                let _ = writeln!(s, "# {note}");
            }
            let _ = write!(s, "event {} v{}", e.id, e.version);
            if v.from.is_some() || v.to.is_some() {
                let _ = write!(
                    s,
                    " builds={}-{}",
                    v.from.map(|b| b.to_string()).unwrap_or_default(),
                    v.to.map(|b| b.to_string()).unwrap_or_default()
                );
            }
            if let Some(symbol) = &v.symbol {
                let _ = write!(s, " name={}", word(symbol));
            }
            for (key, value) in [
                ("task", d.task.map(u64::from)),
                ("opcode", d.opcode.map(u64::from)),
                ("level", d.level.map(u64::from)),
            ] {
                if let Some(x) = value {
                    let _ = write!(s, " {key}={x}");
                }
            }
            if let Some(k) = d.keywords {
                let _ = write!(s, " keywords=0x{k:x}");
            }
            if let Some(c) = d.channel {
                let _ = write!(s, " channel={c}");
            }
            if let Some(m) = &v.message {
                let _ = write!(s, " {}", quoted(m));
            }
            s.push('\n');
            for f in &v.fields {
                for note in &f.notes {
                    let _ = writeln!(s, "  # {note}");
                }
                let _ = writeln!(s, "  {}", field_line(f));
            }
        }
    }
    s
}

// ---------------------------------------------------------------------------
// The synthesizer's manifests.

/// The builds the synthesizer writes from. Windows 10 22H2 (19045) is 2004's
/// code base (19041) with an enablement package; its manifests are taken as
/// 21H1's (19043), the newest of that base the sources have (19041, 19042 and
/// 19043 declare the same events). 1703 (15063) is the older build a scenario claims.
pub const SYNTH_BUILDS: &[u32] = &[15063, 19043, 22621];

/// The providers the synthesizer writes.
pub const SYNTH_PROVIDERS: &[&str] = &[
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

fn xml_attr(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' => out.push_str("&#10;"),
            '\r' => {}
            '\t' => out.push_str("&#9;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn xml_comment(s: &str) -> String {
    s.replace("--", "- -")
}

pub fn synth_manifests(unions: &[Union], loaded: &Loaded) -> anyhow::Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for &build in SYNTH_BUILDS {
        for &provider in SYNTH_PROVIDERS {
            let u = unions.iter().find(|u| u.name == provider).context("synth provider without layouts")?;
            let decls = &loaded.providers[provider];
            let of_build = |b: u32| {
                decls
                    .iter()
                    .filter(move |(s, _)| loaded.sources[*s].build == b)
                    .max_by_key(|(s, _)| loaded.sources[*s].kind as u8)
            };
            let builds: BTreeSet<u32> = decls.iter().map(|(s, _)| loaded.sources[*s].build).collect();
            let own = match of_build(build) {
                Some(own) => own,
                // A provider declared once for every build (Chrome's): that declaration.
                None if builds.len() == 1 && builds.first().is_some_and(|&b| b <= build) => {
                    of_build(*builds.first().unwrap_or(&build)).context("a source")?
                }
                // A provider newer than the build (Microsoft-Quic before Windows 11): none.
                None if builds.first().is_some_and(|&b| b > build) => continue,
                None => anyhow::bail!("no source of build {build} declares {provider}"),
            };
            let text = synth_manifest(u, &loaded.sources, own.0, &own.1)?;
            out.push((format!("{build}/{provider}.man"), text));
        }
    }
    Ok(out)
}

/// One provider as one build declares it: that build's events and field
/// names; the attributes its source cannot state from the layouts (see the
/// comments); values of tasks, opcodes, keywords and levels from the tables.
fn synth_manifest(
    u: &Union,
    sources: &[Source],
    own_source: usize,
    own: &super::model::Declaration,
) -> anyhow::Result<String> {
    let src = &sources[own_source];
    let mut templates: Vec<(String, Vec<Field>)> = Vec::new();
    let mut events = String::new();
    let mut tasks: BTreeMap<u16, (String, BTreeMap<u8, String>)> = BTreeMap::new();
    let mut opcodes: BTreeMap<u8, String> = BTreeMap::new();
    let mut keywords: BTreeMap<u64, String> = BTreeMap::new();
    let mut levels: BTreeMap<u8, String> = BTreeMap::new();
    let mut channels: BTreeMap<u8, String> = BTreeMap::new();
    let mut maps: BTreeSet<String> = BTreeSet::new();
    // Note → the fields it is about.
    let mut notes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (&(id, version), event) in &own.events {
        let ue = u.events.iter().find(|e| e.id == id && e.version == version).context("event not in the union")?;
        let v = ue
            .variants
            .iter()
            .find(|v| v.sources.iter().any(|s| sources[*s].build == src.build))
            .context("no variant of the build")?;
        // The build's own names; everything else from the variant.
        let mut fields = v.fields.clone();
        let renames: Vec<(String, String)> = fields
            .iter()
            .zip(&event.fields)
            .map(|(f, own_f)| (f.name.clone(), super::model::name_key(&own_f.name)))
            .filter(|(a, b)| a != b)
            .collect();
        for f in &mut fields {
            if let Some((_, new)) = renames.iter().find(|(old, _)| *old == f.name) {
                f.name = new.clone();
            }
            for len in [&mut f.length, &mut f.count].into_iter().flatten() {
                if let Len::Field(r) = len
                    && let Some((_, new)) = renames.iter().find(|(old, _)| old == r)
                {
                    *r = new.clone();
                }
            }
        }
        for f in &fields {
            for note in &f.notes {
                notes.entry(note.clone()).or_default().push(format!("{id} v{version} {}", f.name));
            }
            if let Some(m) = &f.map {
                maps.insert(m.clone());
            }
        }
        let tid = match templates.iter().position(|(_, t)| strip(t) == strip(&fields)) {
            Some(i) => templates[i].0.clone(),
            None => {
                let tid = format!("t{}", templates.len() + 1);
                templates.push((tid.clone(), fields.clone()));
                tid
            }
        };
        let d = values(u, event);
        let mut attrs = format!("value=\"{id}\" version=\"{version}\"");
        if let Some(sym) = &event.symbol {
            let _ = write!(attrs, " symbol=\"{}\"", xml_attr(sym));
        }
        if let (Some(t), Some(name)) = (d.task, &event.task) {
            tasks.entry(t).or_insert_with(|| (name.clone(), BTreeMap::new()));
            let _ = write!(attrs, " task=\"{}\"", xml_attr(name));
        }
        match (d.opcode, &event.opcode) {
            (Some(0), None) => {}
            (Some(o), _) => {
                let name = match OPCODES.iter().find(|(_, v)| *v == o) {
                    Some((n, _)) if !u.shown.opcodes.contains_key(&(d.task, o)) => format!("win:{n}"),
                    _ => {
                        let name = u
                            .shown
                            .opcodes
                            .get(&(d.task, o))
                            .or_else(|| u.shown.opcodes.get(&(None, o)))
                            .map_or_else(|| format!("opcode{o}"), |(n, _)| n.clone());
                        match (d.task, u.shown.opcodes.contains_key(&(d.task, o))) {
                            (Some(t), true) => {
                                if let Some(task) = tasks.get_mut(&t) {
                                    task.1.insert(o, name.clone());
                                }
                            }
                            _ => {
                                opcodes.insert(o, name.clone());
                            }
                        }
                        name
                    }
                };
                let _ = write!(attrs, " opcode=\"{}\"", xml_attr(&name));
            }
            (None, _) => {}
        }
        if let Some(l) = d.level {
            let name = match LEVELS.iter().find(|(_, _, v)| *v == l) {
                Some((n, _, _)) => format!("win:{n}"),
                None => {
                    let name = u.shown.levels.get(&l).map_or_else(|| format!("level{l}"), |(n, _)| n.clone());
                    levels.insert(l, name.clone());
                    name
                }
            };
            let _ = write!(attrs, " level=\"{}\"", xml_attr(&name));
        }
        if let Some(k) = d.keywords {
            let mut names = Vec::new();
            for bit in 0..64 {
                let m = 1u64 << bit;
                if k & m != 0 {
                    let name = u.shown.keywords.get(&m).map_or_else(|| format!("keyword_{m:x}"), |(n, _)| n.clone());
                    keywords.insert(m, name.clone());
                    names.push(name);
                }
            }
            let _ = write!(attrs, " keywords=\"{}\"", xml_attr(&names.join(" ")));
        }
        if let Some(c) = d.channel {
            let path = u.shown.channels.get(&c).cloned().unwrap_or_else(|| format!("channel{c}"));
            channels.insert(c, path);
            let _ = write!(attrs, " channel=\"c{c}\"");
        }
        if !fields.is_empty() {
            let _ = write!(attrs, " template=\"{tid}\"");
        }
        if let Some(m) = &v.message {
            let _ = write!(attrs, " message=\"{}\"", xml_attr(m));
        }
        if !d.unresolved.is_empty() {
            let note = format!("not in any source's tables: {}", d.unresolved.join(", "));
            notes.entry(note).or_default().push(format!("{id} v{version}"));
        }
        let _ = writeln!(events, "    <event {attrs}/>");
    }
    // The provider's channels: the build's source may name none, but its
    // events are logged to them (channel 16 is the first declared).
    for (value, path) in &u.shown.channels {
        channels.entry(*value).or_insert_with(|| path.clone());
    }
    let mut s = String::new();
    s.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n");
    let _ = writeln!(
        s,
        "<!-- {} as {} ({}) declares it: its events, versions, field names and in-types from\n     {}.\n     Generated by `cargo xtask gen-layouts` (do not edit: regenerate); the synthesizer writes this build's\n     events from this file, and the manifest option of `nettrail dump` reads it.\n     What this build's source does not state (lengths, counts, out-types, maps, values of names) comes from\n     the sources and rules of nettrail's layouts, field by field:\n{}-->",
        u.name,
        src.release,
        src.build,
        src.file,
        xml_comment(&notes.iter().map(|(note, what)| format!("  {}: {note}\n", what.join(", "))).collect::<String>())
    );
    s.push_str("<instrumentationManifest xmlns=\"http://schemas.microsoft.com/win/2004/08/events\" xmlns:win=\"http://manifests.microsoft.com/win/2004/08/windows/events\" xmlns:xs=\"http://www.w3.org/2001/XMLSchema\">\n");
    s.push_str(" <instrumentation>\n  <events>\n");
    let _ = writeln!(
        s,
        "   <provider name=\"{}\" guid=\"{{{}}}\" symbol=\"{}\">",
        xml_attr(&u.name),
        u.guid,
        xml_attr(&u.name.replace('-', "_"))
    );
    if !channels.is_empty() {
        s.push_str("    <channels>\n");
        for (v, path) in &channels {
            let _ = writeln!(
                s,
                "     <channel chid=\"c{v}\" name=\"{}\" value=\"{v}\" type=\"Analytic\"/>",
                xml_attr(path)
            );
        }
        s.push_str("    </channels>\n");
    }
    if !levels.is_empty() {
        s.push_str("    <levels>\n");
        for (v, name) in &levels {
            let _ = writeln!(s, "     <level name=\"{}\" value=\"{v}\"/>", xml_attr(name));
        }
        s.push_str("    </levels>\n");
    }
    if !tasks.is_empty() {
        s.push_str("    <tasks>\n");
        for (v, (name, scoped)) in &tasks {
            let message = u.shown.tasks.get(v).and_then(|(_, m)| m.clone());
            let message = message.map(|m| format!(" message=\"{}\"", xml_attr(&m))).unwrap_or_default();
            if scoped.is_empty() {
                let _ = writeln!(s, "     <task name=\"{}\" value=\"{v}\"{message}/>", xml_attr(name));
            } else {
                let _ = writeln!(s, "     <task name=\"{}\" value=\"{v}\"{message}>", xml_attr(name));
                s.push_str("      <opcodes>\n");
                for (o, oname) in scoped {
                    let m = u.shown.opcodes.get(&(Some(*v), *o)).and_then(|(_, m)| m.clone());
                    let m = m.map(|m| format!(" message=\"{}\"", xml_attr(&m))).unwrap_or_default();
                    let _ = writeln!(s, "       <opcode name=\"{}\" value=\"{o}\"{m}/>", xml_attr(oname));
                }
                s.push_str("      </opcodes>\n     </task>\n");
            }
        }
        s.push_str("    </tasks>\n");
    }
    if !opcodes.is_empty() {
        s.push_str("    <opcodes>\n");
        for (o, name) in &opcodes {
            let m = u.shown.opcodes.get(&(None, *o)).and_then(|(_, m)| m.clone());
            let m = m.map(|m| format!(" message=\"{}\"", xml_attr(&m))).unwrap_or_default();
            let _ = writeln!(s, "     <opcode name=\"{}\" value=\"{o}\"{m}/>", xml_attr(name));
        }
        s.push_str("    </opcodes>\n");
    }
    if !keywords.is_empty() {
        s.push_str("    <keywords>\n");
        for (m, name) in &keywords {
            let _ = writeln!(s, "     <keyword name=\"{}\" mask=\"0x{m:x}\"/>", xml_attr(name));
        }
        s.push_str("    </keywords>\n");
    }
    if !maps.is_empty() {
        s.push_str("    <maps>\n");
        for name in &maps {
            let map = u.names.maps.get(name).with_context(|| format!("map {name}"))?;
            let tag = if map.bitmap { "bitMap" } else { "valueMap" };
            let _ = writeln!(s, "     <{tag} name=\"{}\">", xml_attr(name));
            for (value, text) in &map.entries {
                let _ = writeln!(s, "      <map value=\"0x{value:x}\" message=\"{}\"/>", xml_attr(text));
            }
            let _ = writeln!(s, "     </{tag}>");
        }
        s.push_str("    </maps>\n");
    }
    s.push_str("    <templates>\n");
    for (tid, fields) in &templates {
        let _ = writeln!(s, "     <template tid=\"{tid}\">");
        for f in fields {
            let _ = write!(s, "      <data name=\"{}\" inType=\"win:{}\"", xml_attr(&f.name), f.in_type);
            if let Some(o) = &f.out_type {
                let prefix = if is_xs(o) { "xs" } else { "win" };
                let _ = write!(s, " outType=\"{prefix}:{o}\"");
            }
            for (key, len) in [("length", &f.length), ("count", &f.count)] {
                match len {
                    Some(Len::Fixed(n)) => {
                        let _ = write!(s, " {key}=\"{n}\"");
                    }
                    Some(Len::Field(r)) => {
                        let _ = write!(s, " {key}=\"{}\"", xml_attr(r));
                    }
                    None => {}
                }
            }
            if let Some(m) = &f.map {
                let _ = write!(s, " map=\"{}\"", xml_attr(m));
            }
            s.push_str("/>\n");
        }
        s.push_str("     </template>\n");
    }
    s.push_str("    </templates>\n    <events>\n");
    s.push_str(&events);
    s.push_str("    </events>\n   </provider>\n  </events>\n </instrumentation>\n</instrumentationManifest>\n");
    Ok(s)
}

/// Field lists compare for template sharing without their notes.
fn strip(fields: &[Field]) -> Vec<Field> {
    fields.iter().map(|f| Field { notes: Vec::new(), ..f.clone() }).collect()
}

/// XML Schema out-types (`xs:`) rather than `win:` ones.
fn is_xs(o: &str) -> bool {
    matches!(
        o,
        "string"
            | "dateTime"
            | "byte"
            | "unsignedByte"
            | "short"
            | "unsignedShort"
            | "int"
            | "unsignedInt"
            | "long"
            | "unsignedLong"
            | "float"
            | "double"
            | "boolean"
            | "GUID"
            | "hexBinary"
    )
}
