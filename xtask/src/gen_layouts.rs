//! `cargo xtask gen-layouts`: the built-in layouts of the network providers
//! (`crates/decode/schemas/providers/<provider>.events`), written from the
//! project's reference facts so that nobody edits 2,000 layouts by hand.
//!
//! Inputs: `schemas/*.json` (every provider's events and fields) and
//! `manifests/*.man` (provider-level names: channels, levels, keywords, tasks
//! and opcodes with their message strings, and each event's channel). The
//! corpus' real traces contradict the facts in a few places; [`TRACE_FIXES`]
//! applies those corrections, each with its evidence written beside it.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, bail};
use serde_json::Value;

/// Writes one layout file per fact file into `output`.
pub fn run(reference: &Path, output: &Path) -> anyhow::Result<()> {
    let files = generate(reference)?;
    std::fs::create_dir_all(output).with_context(|| output.display().to_string())?;
    for (name, text) in &files {
        let path = output.join(name);
        std::fs::write(&path, text).with_context(|| path.display().to_string())?;
    }
    eprintln!("wrote {} layout files to {}", files.len(), output.display());
    Ok(())
}

/// (file name, text) of every layout file, sorted by name.
pub fn generate(reference: &Path) -> anyhow::Result<Vec<(String, String)>> {
    let manifests = read_manifests(&reference.join("manifests"))?;
    let dir = reference.join("schemas");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    paths.sort();
    let mut files = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
        let json: Value = serde_json::from_str(&text).with_context(|| path.display().to_string())?;
        let mut provider = Provider::from_json(&json).with_context(|| path.display().to_string())?;
        apply_fixes(&mut provider).with_context(|| path.display().to_string())?;
        let names = manifests.get(&provider.guid);
        provider.file = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        files.push((format!("{}.events", provider.name), render(&provider, names)));
    }
    files.sort();
    Ok(files)
}

// ---------------------------------------------------------------------------
// Corrections from real traces.

/// A field as a correction states it.
struct FieldSpec {
    name: &'static str,
    in_type: &'static str,
    out_type: Option<&'static str>,
    len: Option<u64>,
}

enum Change {
    /// The field's in-type is wrong in the facts.
    InType { field: &'static str, in_type: &'static str },
    /// The facts lack the field's out-type.
    OutType { field: &'static str, out_type: &'static str },
    /// The trace settles the field's type: etl-parser's alternatives go.
    Confirmed { field: &'static str },
    /// Fields the facts lost, inserted after `after`.
    Insert { after: &'static str, fields: &'static [FieldSpec] },
    /// An event the facts do not have.
    Add { version: u8, level: u8, keywords: u64, message: &'static str, fields: &'static [FieldSpec] },
    /// A remark beside a field that decodes as it is.
    Remark { field: &'static str },
}

/// A correction the corpus requires, with the evidence for it.
struct TraceFix {
    provider: &'static str,
    /// Event ids it applies to; empty: every event with the field.
    events: &'static [u16],
    change: Change,
    why: &'static str,
}

/// Where the real traces of `../shared/corpus` disagree with the facts or
/// add to them. Embedded metadata means the TRACE_EVENT_INFO that the trace
/// itself carries (KernelTraceControl MetaData events), written by Windows.
const TRACE_FIXES: &[TraceFix] = &[
    TraceFix {
        provider: "Microsoft-Windows-Kernel-Network",
        events: &[],
        change: Change::InType { field: "connid", in_type: "Pointer" },
        why: "Pointer, not the manifest's UInt32: in tx__KernelNetwork.etl (64-bit) connid takes 8 bytes \
              (receive IPv4 32 = 20 + seqnum 4 + connid 8, send IPv4 40, receive IPv6 56, send IPv6 64, \
              UDP IPv4 32, UDP IPv6 56); a Pointer is still 4 bytes, as UInt32, in 32-bit traces",
    },
    TraceFix {
        provider: "Microsoft-Windows-HttpService",
        events: &[2],
        change: Change::Remark { field: "Url" },
        why: "in tx__HTTP_Server.etl the Url has no NUL terminator: it runs to the end of the payload",
    },
    TraceFix {
        provider: "Microsoft-Windows-DNS-Client",
        events: &[1001],
        change: Change::Confirmed { field: "DynamicAddress" },
        why: "confirmed UInt8 (1 byte, not a Boolean) by the embedded metadata of perfview__net.4.5.x86.PerfViewData.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-DNS-Client",
        events: &[1001],
        change: Change::OutType { field: "Address", out_type: "SocketAddress" },
        why: "a SOCKADDR (16 bytes IPv4, 28 bytes IPv6) per the embedded metadata of perfview__net.4.5.x86.PerfViewData.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[70],
        change: Change::Confirmed { field: "Value" },
        why: "confirmed Binary by the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        change: Change::Insert {
            after: "FilterName",
            fields: &[
                FieldSpec { name: "MacAddress1", in_type: "Binary", out_type: None, len: Some(6) },
                FieldSpec { name: "MacAddress2", in_type: "Binary", out_type: None, len: Some(6) },
            ],
        },
        why: "dropped by the etl-parser generator (fixed-length Binary): demikernel__PktMon.etl's payload is 12 bytes \
              longer and its embedded metadata lists both",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        change: Change::OutType { field: "IpAddress1", out_type: "IPv4" },
        why: "out-type IPv4 per the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        change: Change::OutType { field: "IpAddress2", out_type: "IPv4" },
        why: "out-type IPv4 per the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        change: Change::Confirmed { field: "Protocol" },
        why: "confirmed UInt8 (1 byte) by the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[100],
        change: Change::Confirmed { field: "TCPFlags" },
        why: "confirmed UInt8 (1 byte) by the embedded metadata of demikernel__PktMon.etl",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[65],
        change: Change::Add {
            version: 0,
            level: 4,
            keywords: 0x2,
            message: "Property: Component %1, %2 = %3 ",
            fields: &[
                FieldSpec { name: "ComponentId", in_type: "UInt16", out_type: None, len: None },
                FieldSpec { name: "Type", in_type: "UInt16", out_type: None, len: None },
                FieldSpec { name: "IpAddress", in_type: "UInt32", out_type: Some("IPv4"), len: None },
            ],
        },
        why: "not in etl-parser; the layout is the embedded metadata of demikernel__PktMon.etl (5 events of 8 bytes)",
    },
    TraceFix {
        provider: "Microsoft-Windows-PktMon",
        events: &[66],
        change: Change::Add {
            version: 0,
            level: 4,
            keywords: 0x2,
            message: "Property: Component %1, %2 = %3 ",
            fields: &[
                FieldSpec { name: "ComponentId", in_type: "UInt16", out_type: None, len: None },
                FieldSpec { name: "Type", in_type: "UInt16", out_type: None, len: None },
                FieldSpec { name: "IpAddress", in_type: "Binary", out_type: Some("IPv6"), len: Some(16) },
            ],
        },
        why: "not in etl-parser; the layout is the embedded metadata of demikernel__PktMon.etl (5 events of 20 bytes)",
    },
];

fn apply_fixes(provider: &mut Provider) -> anyhow::Result<()> {
    for fix in TRACE_FIXES.iter().filter(|f| f.provider == provider.name) {
        let mut applied = 0;
        if let Change::Add { version, level, keywords, message, fields } = &fix.change {
            for &id in fix.events {
                if provider.events.iter().any(|e| e.id == id && e.version == *version) {
                    bail!("trace fix adds event {id} v{version}, which the facts already have");
                }
                provider.events.push(Event {
                    id,
                    version: *version,
                    note: Some(format!("from the corpus: {}", fix.why)),
                    level: Some(*level),
                    keywords: Some(*keywords),
                    message: Some((*message).to_string()),
                    fields: fields.iter().map(Field::from_spec).collect(),
                    ..Event::default()
                });
                applied += 1;
            }
        }
        for event in &mut provider.events {
            if !fix.events.is_empty() && !fix.events.contains(&event.id) {
                continue;
            }
            let target = match &fix.change {
                Change::InType { field, .. }
                | Change::OutType { field, .. }
                | Change::Confirmed { field }
                | Change::Remark { field }
                | Change::Insert { after: field, .. } => *field,
                Change::Add { .. } => continue,
            };
            let Some(at) = event.fields.iter().position(|f| f.name == target) else { continue };
            applied += 1;
            let note = format!("from the corpus: {}", fix.why);
            let fields = &mut event.fields;
            match &fix.change {
                Change::InType { in_type, .. } => fields[at].in_type = (*in_type).to_string(),
                Change::OutType { out_type, .. } => fields[at].out_type = Some((*out_type).to_string()),
                Change::Confirmed { .. } => fields[at].notes.clear(),
                Change::Remark { .. } | Change::Add { .. } => {}
                Change::Insert { fields: new, .. } => {
                    let new = new.iter().map(|spec| Field { notes: vec![note.clone()], ..Field::from_spec(spec) });
                    fields.splice(at + 1..at + 1, new);
                    continue;
                }
            }
            fields[at].notes.push(note);
        }
        if applied == 0 {
            bail!("trace fix for {} events {:?} matches nothing", fix.provider, fix.events);
        }
    }
    provider.events.sort_by_key(|e| (e.id, e.version));
    Ok(())
}

// ---------------------------------------------------------------------------
// The fact files.

#[derive(Default)]
struct Field {
    name: String,
    in_type: String,
    out_type: Option<String>,
    len: Option<Len>,
    count: Option<Len>,
    map: Option<String>,
    /// What the facts say about this field that matters for decoding.
    notes: Vec<String>,
}

/// A length or count: a constant, or the value of an earlier field.
enum Len {
    Fixed(u64),
    From(String),
}

impl Field {
    fn from_spec(spec: &FieldSpec) -> Field {
        Field {
            name: spec.name.to_string(),
            in_type: spec.in_type.to_string(),
            out_type: spec.out_type.map(str::to_string),
            len: spec.len.map(Len::Fixed),
            ..Field::default()
        }
    }

    fn from_json(v: &Value) -> anyhow::Result<Field> {
        let name = str_of(v, "name")?.to_string();
        let len_or_count = |from: &str, fixed: &str| -> anyhow::Result<Option<Len>> {
            Ok(match (v.get(from).and_then(Value::as_str), v.get(fixed)) {
                (Some(r), _) => Some(Len::From(r.to_string())),
                (None, Some(n)) => Some(Len::Fixed(n.as_u64().with_context(|| format!("{name}: {fixed}"))?)),
                (None, None) => None,
            })
        };
        let mut notes = Vec::new();
        if let Some(alts) = v.get("alt_types").and_then(Value::as_array) {
            let alts: Vec<&str> = alts.iter().filter_map(Value::as_str).collect();
            notes.push(match alts.as_slice() {
                ["Boolean"] => "may be Boolean (4 bytes): etl-parser reads a Boolean as 1 byte".to_string(),
                _ => format!("may be {} (a counted UnicodeString takes 2 bytes per unit)", alts.join(" or ")),
            });
        }
        if let Some(count) = v.get("possible_array_count_from").and_then(Value::as_str) {
            notes.push(format!("may be an array counted by {count}; if so, this and later fields are misplaced"));
        }
        if v.get("possible_struct").and_then(Value::as_bool) == Some(true) {
            notes.push("may stand for a struct (etl-parser writes a placeholder type for one)".to_string());
        }
        if v.get("inferred").and_then(Value::as_bool) == Some(true) {
            notes.push("type inferred from the manifest's field of this name".to_string());
        }
        if let Some(note) = v.get("note").and_then(Value::as_str) {
            notes.push(note.to_string());
        }
        Ok(Field {
            in_type: str_of(v, "type")?.to_string(),
            out_type: v.get("out_type").and_then(Value::as_str).map(str::to_string),
            len: len_or_count("length_from", "fixed_length")?,
            count: len_or_count("count_from", "count")?,
            map: v.get("map").and_then(Value::as_str).map(str::to_string),
            notes,
            name,
        })
    }
}

#[derive(Default)]
struct Event {
    id: u16,
    version: u8,
    /// Where the facts' layout comes from (`None` for events the corpus adds).
    origin: Option<&'static str>,
    note: Option<String>,
    symbol: Option<String>,
    task: Option<u16>,
    opcode: Option<u8>,
    level: Option<u8>,
    keywords: Option<u64>,
    message: Option<String>,
    fields: Vec<Field>,
    /// Other layouts of the same (id, version): (source, fields).
    variants: Vec<(String, Vec<Field>)>,
}

impl Event {
    fn from_json(v: &Value) -> anyhow::Result<Event> {
        let id = int(v, "id")?;
        let fields = |v: &Value| -> anyhow::Result<Vec<Field>> {
            v.get("fields").and_then(Value::as_array).context("fields")?.iter().map(Field::from_json).collect()
        };
        let origin = match str_of(v, "cross_check")? {
            "agrees" => "manifest; etl-parser agrees",
            "etl-parser-omits-fields" => "manifest; etl-parser lacks its fixed-length fields",
            "absent-from-etl-parser" => "manifest only (absent from etl-parser)",
            "differs-from-older-manifest" => "etl-parser (newer build); the older manifest differs",
            "no-manifest-for-this-event" => "etl-parser; the provider's manifest lacks this event",
            "no-manifest" => "etl-parser",
            other => bail!("event {id}: unknown cross_check {other:?}"),
        };
        let mut variants = Vec::new();
        for variant in v.get("variants").and_then(Value::as_array).into_iter().flatten() {
            variants.push((str_of(variant, "source")?.to_string(), fields(variant)?));
        }
        let keywords = match v.get("keywords_mask").and_then(Value::as_str) {
            Some(mask) => Some(hex(mask).with_context(|| format!("event {id}: keywords_mask"))?),
            None => None,
        };
        Ok(Event {
            id,
            version: int(v, "version")?,
            origin: Some(origin),
            note: v.get("note").and_then(Value::as_str).map(str::to_string),
            symbol: v.get("symbol").and_then(Value::as_str).map(str::to_string),
            task: optional_int(v, "task_value")?,
            opcode: optional_int(v, "opcode_value")?,
            level: optional_int(v, "level_value")?,
            keywords,
            message: v.get("message").and_then(Value::as_str).map(str::to_string),
            fields: fields(v).with_context(|| format!("event {id}"))?,
            variants,
        })
    }
}

/// A value map or bit map: (name, bitmap, entries sorted by value).
type ValueMap = (String, bool, Vec<(u64, String)>);

struct Provider {
    /// The fact file's name.
    file: String,
    name: String,
    guid: String,
    role: String,
    /// (repository, path, commit, license).
    sources: Vec<[String; 4]>,
    notes: Vec<String>,
    maps: Vec<ValueMap>,
    events: Vec<Event>,
}

impl Provider {
    fn from_json(v: &Value) -> anyhow::Result<Provider> {
        let mut sources = Vec::new();
        for s in v.get("sources").and_then(Value::as_array).context("sources")? {
            sources.push(["repository", "path", "commit", "license"].map(|k| s[k].as_str().unwrap_or("?").to_string()));
        }
        let mut maps = Vec::new();
        for (name, map) in v.get("maps").and_then(Value::as_object).into_iter().flatten() {
            let bitmap = match str_of(map, "kind")? {
                "valueMap" => false,
                "bitMap" => true,
                other => bail!("map {name}: unknown kind {other:?}"),
            };
            let mut entries = Vec::new();
            for (value, text) in map.get("entries").and_then(Value::as_object).context("map entries")? {
                let value = if value.starts_with("0x") { hex(value) } else { value.parse().ok() };
                entries.push((value.with_context(|| format!("map {name}"))?, text.as_str().unwrap_or("").to_string()));
            }
            entries.sort();
            maps.push((name.clone(), bitmap, entries));
        }
        maps.sort();
        let mut events: Vec<Event> = Vec::new();
        for e in v.get("events").and_then(Value::as_array).context("events")? {
            events.push(Event::from_json(e)?);
        }
        events.sort_by_key(|e| (e.id, e.version));
        Ok(Provider {
            file: String::new(),
            name: str_of(v, "provider")?.to_string(),
            guid: str_of(v, "guid")?.to_ascii_lowercase(),
            role: v.get("role").and_then(Value::as_str).unwrap_or("").to_string(),
            sources,
            notes: v
                .get("notes")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            maps,
            events,
        })
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> anyhow::Result<&'a str> {
    v.get(key).and_then(Value::as_str).with_context(|| format!("missing text {key:?}"))
}

fn int<T: TryFrom<u64>>(v: &Value, key: &str) -> anyhow::Result<T> {
    optional_int(v, key)?.with_context(|| format!("missing number {key:?}"))
}

fn optional_int<T: TryFrom<u64>>(v: &Value, key: &str) -> anyhow::Result<Option<T>> {
    match v.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(n) => {
            let n = n.as_u64().with_context(|| format!("{key:?} is not a number"))?;
            Ok(Some(T::try_from(n).ok().with_context(|| format!("{key:?} = {n} is out of range"))?))
        }
    }
}

fn hex(s: &str) -> Option<u64> {
    u64::from_str_radix(s.strip_prefix("0x")?, 16).ok()
}

// ---------------------------------------------------------------------------
// The manifests: just enough XML to read their provider-level names.

/// A start or end tag: its local name and attributes (entities decoded).
struct Tag {
    name: String,
    attrs: Vec<(String, String)>,
    end: bool,
    empty: bool,
}

impl Tag {
    fn attr(&self, name: &str) -> Option<&str> {
        self.attrs.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// The tags of a document in order. Comments, processing instructions,
/// CDATA and declarations are skipped and text is ignored: manifests keep
/// everything this generator needs in attributes.
fn xml_tags(xml: &str) -> anyhow::Result<Vec<Tag>> {
    const SKIPPED: [(&str, &str); 4] = [("<!--", "-->"), ("<?", "?>"), ("<![CDATA[", "]]>"), ("<!", ">")];
    let mut tags = Vec::new();
    let mut pos = 0;
    while let Some(found) = xml[pos..].find('<') {
        pos += found;
        let rest = &xml[pos..];
        if let Some((open, close)) = SKIPPED.iter().find(|(open, _)| rest.starts_with(open)) {
            let end = rest[open.len()..].find(close).with_context(|| format!("unterminated {open} at byte {pos}"))?;
            pos += open.len() + end + close.len();
            continue;
        }
        let (tag, len) = xml_tag(rest).with_context(|| format!("tag at byte {pos}"))?;
        tags.push(tag);
        pos += len;
    }
    Ok(tags)
}

/// The tag at the start of `s` (which starts with `<`), and its length.
fn xml_tag(s: &str) -> anyhow::Result<(Tag, usize)> {
    let end = s.starts_with("</");
    let mut i = if end { 2 } else { 1 };
    let name_len = s[i..].find(|c: char| c.is_whitespace() || c == '>' || c == '/').context("unterminated tag")?;
    let qualified = &s[i..i + name_len];
    let name = qualified.rsplit(':').next().unwrap_or(qualified).to_string();
    i += name_len;
    let mut attrs = Vec::new();
    loop {
        i += s[i..].len() - s[i..].trim_start().len();
        let rest = &s[i..];
        if rest.starts_with("/>") {
            return Ok((Tag { name, attrs, end, empty: true }, i + 2));
        }
        if rest.starts_with('>') {
            return Ok((Tag { name, attrs, end, empty: false }, i + 1));
        }
        let eq = rest.find('=').with_context(|| format!("<{name}: attribute without a value"))?;
        let key = rest[..eq].trim_end();
        if key.is_empty() || key.contains(|c: char| c.is_whitespace() || c == '>' || c == '<') {
            bail!("<{name}: malformed attribute {key:?}");
        }
        let after = &rest[eq + 1..];
        let value_at = eq + 1 + after.len() - after.trim_start().len();
        let quote = rest[value_at..].chars().next().filter(|c| *c == '"' || *c == '\'');
        let quote = quote.with_context(|| format!("<{name} {key}=: value without quotes"))?;
        let close = rest[value_at + 1..].find(quote).with_context(|| format!("<{name} {key}=: unterminated value"))?;
        let raw = &rest[value_at + 1..value_at + 1 + close];
        attrs.push((key.to_string(), xml_unescape(raw).with_context(|| format!("<{name} {key}="))?));
        i += value_at + 1 + close + 1;
    }
}

/// An attribute value as XML gives it to applications: references replaced,
/// line breaks and tabs normalised to spaces.
fn xml_unescape(raw: &str) -> anyhow::Result<String> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(amp) = rest.find('&') {
        out.extend(rest[..amp].chars().map(|c| if matches!(c, '\t' | '\n' | '\r') { ' ' } else { c }));
        let semi = rest[amp..].find(';').context("unterminated reference")?;
        let entity = &rest[amp + 1..amp + semi];
        let c = match entity {
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = match entity.strip_prefix("#x").or_else(|| entity.strip_prefix("#X")) {
                    Some(h) => u32::from_str_radix(h, 16).ok(),
                    None => entity.strip_prefix('#').and_then(|d| d.parse().ok()),
                };
                code.and_then(char::from_u32).with_context(|| format!("unknown reference &{entity};"))?
            }
        };
        out.push(c);
        rest = &rest[amp + semi + 1..];
    }
    out.extend(rest.chars().map(|c| if matches!(c, '\t' | '\n' | '\r') { ' ' } else { c }));
    Ok(out)
}

/// A name and, where the manifest gives one, its message string (resolved).
#[derive(Clone)]
struct Named {
    name: String,
    message: Option<String>,
}

impl Named {
    /// What TDH shows: the message where there is one.
    fn shown(&self) -> &str {
        self.message.as_deref().unwrap_or(&self.name)
    }
}

/// One provider's names as its manifest declares them.
#[derive(Default)]
struct ManifestNames {
    /// The manifest's file name.
    file: String,
    /// Value, name.
    channels: BTreeMap<u8, String>,
    levels: BTreeMap<u8, Named>,
    keywords: BTreeMap<u64, Named>,
    tasks: BTreeMap<u16, Named>,
    /// (task for task-scoped opcodes, value).
    opcodes: BTreeMap<(Option<u16>, u8), Named>,
    /// (id, version) → channel value.
    event_channels: HashMap<(u16, u8), u8>,
}

/// A provider while its manifest is read: channels and event channels are
/// resolved at its end tag, when every channel is known.
#[derive(Default)]
struct OpenProvider {
    guid: String,
    names: ManifestNames,
    /// (chid, name, value if given), in declaration order.
    channels: Vec<(Option<String>, String, Option<u8>)>,
    /// (id, version, channel reference).
    events: Vec<(u16, u8, String)>,
}

impl OpenProvider {
    /// Channel values: explicit ones, standard imports, and the message
    /// compiler's numbering (the lowest free value from 16) for the rest.
    fn finish(mut self) -> anyhow::Result<(String, ManifestNames)> {
        let mut taken: Vec<u8> = self.channels.iter().filter_map(|c| c.2).collect();
        let mut by_ref = HashMap::new();
        for (chid, name, value) in &self.channels {
            let value = match value {
                Some(v) => *v,
                None => {
                    let v = (16..=u8::MAX).find(|v| !taken.contains(v)).context("too many channels")?;
                    taken.push(v);
                    v
                }
            };
            self.names.channels.insert(value, name.clone());
            by_ref.insert(name.clone(), value);
            if let Some(chid) = chid {
                by_ref.insert(chid.clone(), value);
            }
        }
        for (id, version, channel) in &self.events {
            let value = by_ref.get(channel).with_context(|| format!("event {id}: unknown channel {channel:?}"))?;
            self.names.event_channels.insert((*id, *version), *value);
        }
        Ok((self.guid, self.names))
    }
}

/// Provider names from every manifest in `dir`, by lower-case GUID.
fn read_manifests(dir: &Path) -> anyhow::Result<HashMap<String, ManifestNames>> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| dir.display().to_string())?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "man"))
        .collect();
    paths.sort();
    let mut all = HashMap::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
        let providers =
            read_manifest(text.trim_start_matches('\u{feff}')).with_context(|| path.display().to_string())?;
        let file = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        all.extend(providers.into_iter().map(|(guid, names)| (guid, ManifestNames { file: file.clone(), ..names })));
    }
    Ok(all)
}

fn read_manifest(xml: &str) -> anyhow::Result<Vec<(String, ManifestNames)>> {
    let tags = xml_tags(xml)?;
    let strings: HashMap<&str, &str> = tags
        .iter()
        .filter(|t| t.name == "string" && !t.end)
        .filter_map(|t| Some((t.attr("id")?, t.attr("value")?)))
        .collect();
    let resolve = |message: Option<&str>| -> anyhow::Result<Option<String>> {
        let Some(m) = message else { return Ok(None) };
        match m.strip_prefix("$(string.").and_then(|r| r.strip_suffix(')')) {
            Some(id) => Ok(Some(strings.get(id).with_context(|| format!("no string {id:?}"))?.to_string())),
            None => Ok(Some(m.to_string())),
        }
    };
    let named = |t: &Tag| -> anyhow::Result<Named> {
        Ok(Named {
            name: t.attr("name").with_context(|| format!("<{} without a name", t.name))?.to_string(),
            message: resolve(t.attr("message"))?,
        })
    };
    let number = |t: &Tag, key: &str| -> anyhow::Result<u64> {
        let text = t.attr(key).with_context(|| format!("<{} without {key}", t.name))?;
        let n = if text.starts_with("0x") { hex(text) } else { text.parse().ok() };
        n.with_context(|| format!("<{} {key}={text:?}", t.name))
    };
    let small = |t: &Tag, key: &str| -> anyhow::Result<u8> {
        u8::try_from(number(t, key)?).ok().with_context(|| format!("<{} {key} is out of range", t.name))
    };
    let mut done = Vec::new();
    let mut open: Option<OpenProvider> = None;
    let mut task: Option<u16> = None;
    // Names of the open elements: event providers sit in <events>; the
    // performance counter providers of <counters> are not ETW providers.
    let mut stack: Vec<&str> = Vec::new();
    for t in &tags {
        if t.end {
            stack.pop();
        }
        let in_events = stack.last() == Some(&"events");
        if !t.end && !t.empty {
            stack.push(&t.name);
        }
        if t.name == "provider" && in_events {
            if t.end {
                done.push(open.take().context("</provider> without <provider>")?.finish()?);
            } else {
                let guid = t.attr("guid").context("provider without a guid")?;
                let guid = guid.trim_matches(|c| c == '{' || c == '}').to_ascii_lowercase();
                let provider = OpenProvider { guid, ..OpenProvider::default() };
                if t.empty {
                    done.push(provider.finish()?);
                } else {
                    open = Some(provider);
                }
            }
            continue;
        }
        let Some(p) = open.as_mut() else { continue };
        if t.end {
            if t.name == "task" {
                task = None;
            }
            continue;
        }
        match t.name.as_str() {
            "channel" => {
                let value = t.attr("value").map(|_| small(t, "value")).transpose()?;
                let name = t.attr("name").context("channel without a name")?.to_string();
                p.channels.push((t.attr("chid").map(str::to_string), name, value));
            }
            "importChannel" => {
                let name = t.attr("name").context("importChannel without a name")?;
                let value = match name {
                    "System" => 8,
                    "Application" => 9,
                    "Security" => 10,
                    other => bail!("importChannel of an unknown channel {other:?}"),
                };
                p.channels.push((t.attr("chid").map(str::to_string), name.to_string(), Some(value)));
            }
            "level" => {
                p.names.levels.insert(small(t, "value")?, named(t)?);
            }
            "keyword" => {
                p.names.keywords.insert(number(t, "mask")?, named(t)?);
            }
            "task" => {
                let value = u16::try_from(number(t, "value")?).context("task value out of range")?;
                p.names.tasks.insert(value, named(t)?);
                task = if t.empty { None } else { Some(value) };
            }
            "opcode" => {
                p.names.opcodes.insert((task, small(t, "value")?), named(t)?);
            }
            "event" => {
                let id = u16::try_from(number(t, "value")?).context("event id out of range")?;
                let version = t.attr("version").map(|_| small(t, "version")).transpose()?.unwrap_or(0);
                if let Some(channel) = t.attr("channel") {
                    p.events.push((id, version, channel.to_string()));
                }
            }
            _ => {}
        }
    }
    if open.is_some() {
        bail!("unterminated <provider>");
    }
    Ok(done)
}

// ---------------------------------------------------------------------------
// Writing a layout file.

/// A word of the layout language: quoted when it has spaces or quotes, or
/// would read as a comment.
fn word(s: &str) -> String {
    let plain =
        !s.is_empty() && !s.starts_with('#') && !s.contains(|c: char| c.is_whitespace() || c == '"' || c == '\\');
    if plain { s.to_string() } else { quoted(s) }
}

fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
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
    for (key, len) in [("len", &f.len), ("count", &f.count)] {
        match len {
            Some(Len::Fixed(n)) => {
                let _ = write!(line, " {key}={n}");
            }
            Some(Len::From(r)) => {
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

fn render(p: &Provider, names: Option<&ManifestNames>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# {} ({}): nettrail's built-in event layouts.", p.name, p.role);
    let _ = writeln!(s, "# Generated by `cargo xtask gen-layouts` from ../shared/reference/schemas/{}", p.file);
    if let Some(n) = names {
        let _ = writeln!(s, "# and the provider's names in ../shared/reference/manifests/{}", n.file);
    }
    s.push_str("# (do not edit: regenerate). The facts come from:\n");
    for [repository, path, commit, license] in &p.sources {
        let _ = writeln!(s, "#   {repository} {path} @ {commit} ({license})");
    }
    s.push_str("# Notes of the fact file (README: ../shared/reference/schemas/README.md):\n");
    for note in &p.notes {
        let _ = writeln!(s, "#   {note}");
    }
    // Say where each layout comes from unless they all come from etl-parser.
    let mixed = p.events.iter().any(|e| e.origin.is_some_and(|o| o != "etl-parser"));
    if mixed {
        s.push_str(
            "# Each event says where its layout comes from: a real manifest, or etl-parser with its ambiguities.\n",
        );
    }
    s.push_str("# Comments beside fields say what the facts leave uncertain or what the corpus' traces corrected.\n");
    let _ = writeln!(s, "provider {} {}", word(&p.name), p.guid);
    if let Some(n) = names {
        for (value, name) in &n.channels {
            let _ = writeln!(s, "channel {value} {}", word(name));
        }
        for (value, level) in &n.levels {
            let _ = writeln!(s, "level {value} {}", word(level.shown()));
        }
        for (mask, keyword) in &n.keywords {
            let _ = writeln!(s, "keyword 0x{mask:x} {}", word(keyword.shown()));
        }
        for (value, task) in &n.tasks {
            let _ = write!(s, "task {value} {}", word(&task.name));
            if let Some(m) = &task.message {
                let _ = write!(s, " {}", quoted(m));
            }
            s.push('\n');
        }
        for ((task, value), opcode) in &n.opcodes {
            let _ = match task {
                Some(t) => write!(s, "opcode {t}:{value} {}", word(&opcode.name)),
                None => write!(s, "opcode {value} {}", word(&opcode.name)),
            };
            if let Some(m) = &opcode.message {
                let _ = write!(s, " {}", quoted(m));
            }
            s.push('\n');
        }
    }
    for (name, bitmap, entries) in &p.maps {
        let _ = writeln!(s, "map {} {}", word(name), if *bitmap { "bitmap" } else { "value" });
        for (value, text) in entries {
            let _ = if *bitmap {
                writeln!(s, "  0x{value:x} {}", quoted(text))
            } else {
                writeln!(s, "  {value} {}", quoted(text))
            };
        }
    }
    for e in &p.events {
        s.push('\n');
        if let Some(origin) = e.origin.filter(|_| mixed) {
            let _ = writeln!(s, "# {origin}");
        }
        if let Some(note) = &e.note {
            let _ = writeln!(s, "# {note}");
        }
        for (source, fields) in &e.variants {
            if fields.is_empty() {
                let _ = writeln!(s, "# layout in {source}: an empty payload");
            } else {
                let _ = writeln!(s, "# layout in {source}:");
                for f in fields {
                    let _ = writeln!(s, "#   {}", field_line(f));
                }
            }
        }
        let _ = write!(s, "event {} v{}", e.id, e.version);
        if let Some(symbol) = &e.symbol {
            let _ = write!(s, " name={}", word(symbol));
        }
        for (key, value) in
            [("task", e.task.map(u64::from)), ("opcode", e.opcode.map(u64::from)), ("level", e.level.map(u64::from))]
        {
            if let Some(v) = value {
                let _ = write!(s, " {key}={v}");
            }
        }
        if let Some(k) = e.keywords {
            let _ = write!(s, " keywords=0x{k:x}");
        }
        if let Some(channel) = names.and_then(|n| n.event_channels.get(&(e.id, e.version))) {
            let _ = write!(s, " channel={channel}");
        }
        if let Some(m) = &e.message {
            let _ = write!(s, " {}", quoted(m));
        }
        s.push('\n');
        for f in &e.fields {
            for note in &f.notes {
                let _ = writeln!(s, "  # {note}");
            }
            let _ = writeln!(s, "  {}", field_line(f));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/reference");
    const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../crates/decode/schemas/providers");

    #[test]
    fn the_committed_layouts_are_what_the_generator_writes() {
        let generated = super::generate(Path::new(REFERENCE)).unwrap();
        assert_eq!(generated.len(), 37);
        let mut committed: Vec<String> = std::fs::read_dir(COMMITTED)
            .unwrap()
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".events"))
            .collect();
        committed.sort();
        let names: Vec<&str> = generated.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(committed, names, "schemas/providers is stale: run `cargo xtask gen-layouts`");
        for (name, text) in &generated {
            let on_disk = std::fs::read_to_string(Path::new(COMMITTED).join(name)).unwrap();
            assert!(on_disk == *text, "{name} is stale: run `cargo xtask gen-layouts`");
        }
        let events: usize = generated.iter().map(|(_, t)| t.lines().filter(|l| l.starts_with("event ")).count()).sum();
        assert_eq!(events, 2368 + 2, "the facts' layouts plus PktMon 65 and 66 from the corpus");
    }

    #[test]
    fn manifest_names_resolve_through_the_string_table() {
        let all = super::read_manifests(&Path::new(REFERENCE).join("manifests")).unwrap();
        let network = &all["7dd42a49-5329-4832-8dfd-43d979153a88"];
        assert_eq!(network.opcodes[&(None, 10)].shown(), "Data sent.");
        assert_eq!(network.tasks[&10].shown(), "KERNEL_NETWORK_TASK_TCPIP");
        // The channel has no value attribute: the message compiler numbers it 16.
        assert_eq!(network.channels[&16], "Microsoft-Windows-Kernel-Network/Analytic");
        assert_eq!(network.event_channels[&(11, 0)], 16);
        let http = &all["dd5ef90a-6398-47a4-ad34-4dcecdef795f"];
        assert_eq!(http.tasks[&1].shown(), "HTTP Request Trace Task");
        assert_eq!(http.opcodes[&(None, 12)].shown(), "Parse");
        assert_eq!(http.keywords[&0x2].shown(), "Flagged on all HTTP events dealing with request processing");
    }

    #[test]
    fn xml_attributes_decode_references_and_span_lines() {
        let tags =
            super::xml_tags("<?xml version='1.0'?><!-- <a x='1'/> --><a\n  x=\"&quot;1&amp;\n2&#x41;\"\n  y='>'/></a>")
                .unwrap();
        assert_eq!(tags.len(), 2);
        assert_eq!(tags[0].attr("x"), Some("\"1& 2A"));
        assert_eq!(tags[0].attr("y"), Some(">"));
        assert!(tags[0].empty && tags[1].end);
        assert!(super::xml_tags("<a x=\"1></a>").is_err());
    }
}
