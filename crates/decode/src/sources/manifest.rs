//! Instrumentation manifests (XML): providers, channels, levels, tasks,
//! opcodes, keywords, maps, templates, events and their message strings.
//!
//! Elements are matched by local name, so instrumentation manifests, the
//! component manifests Windows ships (`assembly` roots) and EventSource
//! manifests read alike. Only a `provider` inside an `events` element
//! declares events; those under `counters` describe performance counters.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use roxmltree::{Document, Node};

use crate::intype::{InType, OutType};
use crate::layouts::LayoutFile;
use crate::schema::{
    Declared, EventSchema, Field, Len, ProviderInfo, SchemaKey, Source, ValueMap, standard_channel, standard_opcode,
};

/// Templates come from untrusted input and are walked recursively; deeper
/// `struct` nesting than this is refused.
const MAX_STRUCT_DEPTH: usize = 16;

/// A manifest that cannot be read, with where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestError {
    /// 1-based line of the element at fault (or of the XML error), when known.
    pub line: Option<u32>,
    pub message: String,
}

impl std::fmt::Display for ManifestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(f, "line {line}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ManifestError {}

/// Every provider a manifest declares, as layouts tagged with `source`.
pub fn parse(xml: &str, source: Source) -> Result<Vec<LayoutFile>, ManifestError> {
    let xml = xml.strip_prefix('\u{feff}').unwrap_or(xml);
    let doc = Document::parse(xml)
        .map_err(|e| ManifestError { line: Some(e.pos().row), message: format!("not well-formed XML: {e}") })?;
    let strings = Strings::of(&doc);
    let mut files = Vec::new();
    for node in doc.descendants() {
        if is(&node, "provider") && node.parent_element().is_some_and(|p| is(&p, "events")) {
            files.push(provider(node, &strings, source)?);
        }
    }
    if files.is_empty() {
        return Err(ManifestError { line: None, message: "no events/provider element: not an event manifest".into() });
    }
    Ok(files)
}

fn is(node: &Node<'_, '_>, name: &str) -> bool {
    node.is_element() && node.tag_name().name() == name
}

fn child<'a, 'i>(node: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    node.children().find(|c| is(c, name))
}

/// The `name` elements under `parent`'s `section` child (none without one).
fn items<'a, 'i>(parent: Node<'a, 'i>, section: &str, name: &'static str) -> impl Iterator<Item = Node<'a, 'i>> {
    child(parent, section).into_iter().flat_map(|s| s.children()).filter(move |c| is(c, name))
}

/// An error at `node`: its line, and the element with the attributes that
/// identify it.
fn fail(node: Node<'_, '_>, message: impl std::fmt::Display) -> ManifestError {
    let line = node.document().text_pos_at(node.range().start).row;
    let mut element = format!("<{}", node.tag_name().name());
    for attr in ["name", "tid", "chid", "value", "version"] {
        if let Some(v) = node.attribute(attr) {
            element.push_str(&format!(" {attr}={v:?}"));
        }
    }
    ManifestError { line: Some(line), message: format!("{element}>: {message}") }
}

fn required<'a>(node: Node<'a, '_>, attr: &str) -> Result<&'a str, ManifestError> {
    node.attribute(attr).ok_or_else(|| fail(node, format!("the {attr} attribute is missing")))
}

/// Decimal, or hexadecimal with `0x`.
fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn numeric<T: TryFrom<u64>>(node: Node<'_, '_>, attr: &str) -> Result<Option<T>, ManifestError> {
    let Some(text) = node.attribute(attr) else { return Ok(None) };
    let value = number(text).and_then(|v| T::try_from(v).ok());
    value.map(Some).ok_or_else(|| fail(node, format!("{attr} {text:?} is not a number in range")))
}

fn numeric_required<T: TryFrom<u64>>(node: Node<'_, '_>, attr: &str) -> Result<T, ManifestError> {
    numeric(node, attr)?.ok_or_else(|| fail(node, format!("the {attr} attribute is missing")))
}

/// The string table that `$(string.ID)` references resolve through: the
/// en-US resources, else the first.
struct Strings<'a> {
    table: HashMap<&'a str, &'a str>,
}

impl<'a> Strings<'a> {
    fn of(doc: &'a Document<'_>) -> Strings<'a> {
        let resources: Vec<Node<'a, '_>> = doc
            .descendants()
            .filter(|n| is(n, "resources") && n.parent_element().is_some_and(|p| is(&p, "localization")))
            .collect();
        let chosen = resources
            .iter()
            .find(|r| r.attribute("culture").is_some_and(|c| c.eq_ignore_ascii_case("en-US")))
            .or(resources.first());
        let mut table = HashMap::new();
        for s in chosen.into_iter().flat_map(|r| items(*r, "stringTable", "string")) {
            if let (Some(id), Some(value)) = (s.attribute("id"), s.attribute("value")) {
                table.insert(id, value);
            }
        }
        Strings { table }
    }

    /// An attribute's text, a `$(string.ID)` reference looked up.
    fn text(&self, node: Node<'_, '_>, attr: &str) -> Result<Option<String>, ManifestError> {
        let Some(value) = node.attribute(attr) else { return Ok(None) };
        match value.strip_prefix("$(string.").and_then(|r| r.strip_suffix(')')) {
            Some(id) => match self.table.get(id) {
                Some(s) => Ok(Some((*s).to_string())),
                None => Err(fail(node, format!("{attr} refers to string {id:?}, which the string table lacks"))),
            },
            None => Ok(Some(value.to_string())),
        }
    }

    /// How TDH shows a task, opcode, level or keyword: its message, else its name.
    fn shown(&self, node: Node<'_, '_>) -> Result<String, ManifestError> {
        match self.text(node, "message")? {
            Some(message) => Ok(message),
            None => Ok(required(node, "name")?.to_string()),
        }
    }
}

/// A task's display name and value, and the opcodes declared inside it.
struct Task<'a> {
    shown: String,
    value: u16,
    opcodes: HashMap<&'a str, (String, u8)>,
}

fn provider(node: Node<'_, '_>, strings: &Strings<'_>, source: Source) -> Result<LayoutFile, ManifestError> {
    let guid_text = required(node, "guid")?;
    let guid = guid_text.parse().map_err(|_| fail(node, format!("guid {guid_text:?} is not a GUID")))?;
    let mut info = ProviderInfo { guid, name: required(node, "name")?.to_string(), ..ProviderInfo::default() };
    let channel_refs = channels(node, &mut info)?;
    let mut levels = HashMap::new();
    for level in items(node, "levels", "level") {
        let value = numeric_required(level, "value")?;
        levels.insert(required(level, "name")?, value);
        info.levels.insert(value, strings.shown(level)?);
    }
    let mut keywords = HashMap::new();
    for keyword in items(node, "keywords", "keyword") {
        let mask = numeric_required(keyword, "mask")?;
        keywords.insert(required(keyword, "name")?, mask);
        info.keywords.push((mask, strings.shown(keyword)?));
    }
    let mut opcodes = HashMap::new();
    for opcode in items(node, "opcodes", "opcode") {
        opcodes.insert(required(opcode, "name")?, (strings.shown(opcode)?, numeric_required(opcode, "value")?));
    }
    let mut tasks = HashMap::new();
    for task in items(node, "tasks", "task") {
        let mut scoped = HashMap::new();
        for opcode in items(task, "opcodes", "opcode") {
            scoped.insert(required(opcode, "name")?, (strings.shown(opcode)?, numeric_required(opcode, "value")?));
        }
        let value = numeric_required(task, "value")?;
        tasks.insert(required(task, "name")?, Task { shown: strings.shown(task)?, value, opcodes: scoped });
    }
    let maps = maps(node, strings)?;
    let mut templates = HashMap::new();
    for template in items(node, "templates", "template") {
        templates.insert(required(template, "tid")?, fields(template, &maps, 0)?);
    }

    let provider = Arc::new(info);
    let mut events = Vec::new();
    let mut seen = HashSet::new();
    for event in items(node, "events", "event") {
        let id = numeric_required(event, "value")?;
        let version = numeric(event, "version")?.unwrap_or(0);
        if !seen.insert((id, version)) {
            return Err(fail(event, "this event id and version are declared twice"));
        }
        let task = match event.attribute("task") {
            Some(name) => Some(tasks.get(name).ok_or_else(|| fail(event, format!("unknown task {name:?}")))?),
            None => None,
        };
        let opcode = match event.attribute("opcode") {
            Some(name) => Some(
                opcode_shown(name, task, &opcodes).ok_or_else(|| fail(event, format!("unknown opcode {name:?}")))?,
            ),
            None => None,
        };
        // Descriptor values, as far as the manifest declares the names (an
        // unknown one leaves the value unstated rather than failing).
        let level =
            event.attribute("level").and_then(|name| levels.get(name).copied().or_else(|| standard_level_value(name)));
        let mask = event
            .attribute("keywords")
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|name| keywords.get(name))
            .fold(0, |m, k| m | k);
        let channel = event.attribute("channel").and_then(|name| channel_refs.get(name).copied());
        let declared = Declared {
            task: Some(task.map_or(0, |t| t.value)),
            opcode: Some(opcode.as_ref().map_or(0, |(_, v)| *v)),
            level,
            keywords: (mask != 0).then_some(mask),
            channel,
        };
        let fields = match event.attribute("template") {
            Some(tid) => templates.get(tid).cloned().ok_or_else(|| fail(event, format!("unknown template {tid:?}")))?,
            None => Vec::new(),
        };
        let schema = EventSchema {
            provider: provider.clone(),
            source,
            name: event.attribute("symbol").or_else(|| event.attribute("name")).map(str::to_string),
            task: task.map(|t| t.shown.clone()),
            opcode: opcode.map(|(shown, _)| shown),
            message: strings.text(event, "message")?,
            fields,
            declared,
        };
        events.push((SchemaKey::Manifest { provider: provider.guid, id, version }, Arc::new(schema)));
    }
    Ok(LayoutFile { provider, events, by_build: Vec::new(), origins: Vec::new() })
}

/// An event's opcode as shown, and its value: the task's own, the
/// provider's, or a standard `win:` opcode.
fn opcode_shown(name: &str, task: Option<&Task<'_>>, opcodes: &HashMap<&str, (String, u8)>) -> Option<(String, u8)> {
    if let Some(found) = task.and_then(|t| t.opcodes.get(name)).or_else(|| opcodes.get(name)) {
        return Some(found.clone());
    }
    let standard = name.strip_prefix("win:")?;
    (0..=u8::MAX).find_map(|v| standard_opcode(v).filter(|n| *n == standard).map(|n| (n.to_string(), v)))
}

/// winmeta.xml's level names.
fn standard_level_value(name: &str) -> Option<u8> {
    Some(match name.strip_prefix("win:")? {
        "LogAlways" | "Always" => 0,
        "Critical" => 1,
        "Error" => 2,
        "Warning" => 3,
        "Informational" => 4,
        "Verbose" => 5,
        _ => return None,
    })
}

/// Channels by value. A channel without a value gets the next free one from
/// 16, in declaration order, as the message compiler numbers them; an
/// imported standard channel (System, Application…) keeps its own.
fn channels<'a>(node: Node<'a, '_>, info: &mut ProviderInfo) -> Result<HashMap<&'a str, u8>, ManifestError> {
    let mut refs = HashMap::new();
    let Some(section) = child(node, "channels") else { return Ok(refs) };
    let declared: Vec<Node<'_, '_>> =
        section.children().filter(|c| is(c, "channel") || is(c, "importChannel")).collect();
    let mut unnumbered = Vec::new();
    let named = |channel: Node<'a, '_>, name: &'a str, value: u8, refs: &mut HashMap<&'a str, u8>| {
        refs.insert(name, value);
        if let Some(chid) = channel.attribute("chid") {
            refs.insert(chid, value);
        }
    };
    for channel in declared {
        let name = required(channel, "name")?;
        let standard = (8..=12).find(|&v| standard_channel(v) == Some(name.strip_prefix("win:").unwrap_or(name)));
        match numeric::<u8>(channel, "value")?.or(standard.filter(|_| is(&channel, "importChannel"))) {
            Some(value) => {
                info.channels.insert(value, name.to_string());
                named(channel, name, value, &mut refs);
            }
            None => unnumbered.push((channel, name)),
        }
    }
    let mut next = 16u8;
    for (channel, name) in unnumbered {
        while info.channels.contains_key(&next) {
            next = next.checked_add(1).ok_or_else(|| fail(channel, "no channel value is left to assign"))?;
        }
        info.channels.insert(next, name.to_string());
        named(channel, name, next, &mut refs);
    }
    Ok(refs)
}

/// Value and bit maps by name (pattern maps are not used for decoding).
fn maps<'a>(node: Node<'a, '_>, strings: &Strings<'_>) -> Result<HashMap<&'a str, Arc<ValueMap>>, ManifestError> {
    let mut maps = HashMap::new();
    for map in child(node, "maps").into_iter().flat_map(|s| s.children()) {
        let bitmap = match map.tag_name().name() {
            "valueMap" if map.is_element() => false,
            "bitMap" if map.is_element() => true,
            _ => continue,
        };
        let name = required(map, "name")?;
        let mut entries = Vec::new();
        for entry in map.children().filter(|c| is(c, "map")) {
            let text = strings.text(entry, "message")?.unwrap_or_default();
            entries.push((numeric_required(entry, "value")?, text));
        }
        entries.sort_by_key(|(v, _)| *v);
        maps.insert(name, Arc::new(ValueMap { name: name.to_string(), bitmap, entries }));
    }
    Ok(maps)
}

/// The `data` and `struct` children of a template or struct, in payload order.
fn fields(
    parent: Node<'_, '_>,
    maps: &HashMap<&str, Arc<ValueMap>>,
    depth: usize,
) -> Result<Vec<Field>, ManifestError> {
    let mut out: Vec<Field> = Vec::new();
    for node in parent.children().filter(|c| c.is_element()) {
        let name = || required(node, "name");
        let mut field = match node.tag_name().name() {
            "data" => {
                let in_type = required(node, "inType")?;
                let mut field = Field::new(
                    name()?,
                    InType::from_name(in_type).ok_or_else(|| fail(node, format!("unknown inType {in_type:?}")))?,
                );
                if let Some(out_type) = node.attribute("outType") {
                    field.out_type = OutType::from_name(out_type)
                        .ok_or_else(|| fail(node, format!("unknown outType {out_type:?}")))?;
                }
                if let Some(map) = node.attribute("map") {
                    field.map = Some(maps.get(map).cloned().ok_or_else(|| fail(node, format!("unknown map {map:?}")))?);
                }
                field.length = reference(node, "length", &out)?;
                field
            }
            "struct" => {
                if depth >= MAX_STRUCT_DEPTH {
                    return Err(fail(node, format!("structs nest deeper than {MAX_STRUCT_DEPTH} levels")));
                }
                if node.has_attribute("length") {
                    return Err(fail(node, "a struct with a length is not supported"));
                }
                let mut field = Field::new(name()?, InType::Struct);
                field.members = fields(node, maps, depth + 1)?;
                field
            }
            _ => continue, // UserData and other rendering hints
        };
        field.count = reference(node, "count", &out)?;
        out.push(field);
    }
    Ok(out)
}

/// A `length` or `count`: a number, or the name of an earlier item at the
/// same level.
fn reference(node: Node<'_, '_>, attr: &str, earlier: &[Field]) -> Result<Option<Len>, ManifestError> {
    let Some(text) = node.attribute(attr) else { return Ok(None) };
    if let Some(n) = number(text) {
        let n = u32::try_from(n).map_err(|_| fail(node, format!("{attr} {text} is out of range")))?;
        return Ok(Some(Len::Fixed(n)));
    }
    match earlier.iter().rposition(|f| f.name == text) {
        Some(i) => Ok(Some(Len::Field(i))),
        None => Err(fail(node, format!("{attr} {text:?} is neither a number nor an earlier item at this level"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events"
    xmlns:win="http://manifests.microsoft.com/win/2004/08/windows/events">
 <instrumentation>
  <events>
   <provider name="Test-Provider" guid="{7DD42A49-5329-4832-8DFD-43D979153A88}" symbol="P">
    <events>
     <event value="1" version="2" task="Work" opcode="Pause" level="Noisy" keywords="KwA" template="T" symbol="Ev1" message="$(string.ev1)"/>
     <event value="2" task="Work" opcode="win:Start" channel="op"/>
     <event value="3" opcode="Global"/>
    </events>
    <channels>
     <importChannel chid="sys" name="System"/>
     <channel chid="op" name="Test-Provider/Operational" type="Operational"/>
     <channel chid="dbg" name="Test-Provider/Debug" type="Debug" value="17"/>
    </channels>
    <levels><level name="Noisy" value="16" message="$(string.noisy)"/></levels>
    <keywords><keyword name="KwA" mask="0x100000000"/></keywords>
    <opcodes><opcode name="Global" value="20" message="$(string.global)"/></opcodes>
    <tasks>
     <task name="Work" value="5" message="$(string.work)">
      <opcodes><opcode name="Pause" value="11"/></opcodes>
     </task>
    </tasks>
    <maps>
     <bitMap name="Flags"><map value="0x1" message="$(string.a)"/><map value="0x4" message="$(string.c)"/></bitMap>
     <valueMap name="State"><map value="10" message="$(string.ten)"/><map value="0x2" message="$(string.two)"/></valueMap>
     <patternMap name="Ignored" format="%s"/>
    </maps>
    <templates>
     <template tid="T">
      <data name="Count" inType="win:UInt16"/>
      <struct name="Items" count="Count">
       <data name="Len" inType="win:UInt8"/>
       <data name="Text" inType="win:AnsiString" length="Len"/>
       <data name="Pad" inType="win:UInt8" count="3"/>
      </struct>
      <data name="Flags" inType="win:UInt32" outType="win:HexInt32" map="Flags"/>
      <data name="State" inType="win:UInt32" map="State"/>
      <data name="Addr" inType="win:Binary" outType="win:IPv6"/>
      <UserData><Whatever/></UserData>
     </template>
    </templates>
   </provider>
  </events>
 </instrumentation>
 <localization>
  <resources culture="de-DE"><stringTable><string id="ev1" value="Deutsch %1"/></stringTable></resources>
  <resources culture="en-US">
   <stringTable>
    <string id="ev1" value="Count %1, flags %3"/>
    <string id="noisy" value="Very noisy"/>
    <string id="global" value="Global opcode"/>
    <string id="work" value="Doing work"/>
    <string id="a" value="A"/>
    <string id="c" value="C"/>
    <string id="ten" value="Ten"/>
    <string id="two" value="Two"/>
   </stringTable>
  </resources>
 </localization>
</instrumentationManifest>
"#;

    #[test]
    fn every_part_of_a_provider() {
        let files = parse(MANIFEST, Source::Manifest).unwrap();
        assert_eq!(files.len(), 1);
        let file = &files[0];
        let p = &file.provider;
        assert_eq!(p.name, "Test-Provider");
        assert_eq!(p.guid.to_string(), "7dd42a49-5329-4832-8dfd-43d979153a88");
        assert_eq!(p.channels.get(&8).map(String::as_str), Some("System"));
        assert_eq!(p.channels.get(&16).map(String::as_str), Some("Test-Provider/Operational"));
        assert_eq!(p.channels.get(&17).map(String::as_str), Some("Test-Provider/Debug"));
        assert_eq!(p.level_name(16), Some("Very noisy"));
        assert_eq!(p.keyword_names(0x1_0000_0000).collect::<Vec<_>>(), ["KwA"]);

        let event = |id: u16, version: u8| {
            let key = SchemaKey::Manifest { provider: p.guid, id, version };
            file.events.iter().find(|(k, _)| *k == key).map(|(_, e)| e.clone()).unwrap()
        };
        let e1 = event(1, 2);
        assert_eq!(e1.source, Source::Manifest);
        assert_eq!(e1.name.as_deref(), Some("Ev1"));
        assert_eq!(e1.task.as_deref(), Some("Doing work"));
        assert_eq!(e1.opcode.as_deref(), Some("Pause"), "the task's own opcode, shown by name");
        assert_eq!(e1.message.as_deref(), Some("Count %1, flags %3"), "en-US is preferred");
        let names: Vec<&str> = e1.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["Count", "Items", "Flags", "State", "Addr"]);
        let items = &e1.fields[1];
        assert_eq!((items.in_type, items.count), (InType::Struct, Some(Len::Field(0))));
        assert_eq!(items.members[1].length, Some(Len::Field(0)), "Len is the struct's first member");
        assert_eq!(items.members[2].count, Some(Len::Fixed(3)));
        let flags = e1.fields[2].map.as_ref().unwrap();
        assert_eq!((flags.bitmap, flags.lookup(5).as_deref()), (true, Some("A|C")));
        assert_eq!(e1.fields[2].out_type, OutType::HexInt32);
        let state = e1.fields[3].map.as_ref().unwrap();
        assert_eq!(
            (state.lookup(2).as_deref(), state.lookup(10).as_deref(), state.lookup(3)),
            (Some("Two"), Some("Ten"), None)
        );
        assert_eq!(
            (e1.fields[4].in_type, e1.fields[4].out_type, e1.fields[4].length),
            (InType::Binary, OutType::Ipv6, None)
        );

        let d = e1.declared;
        assert_eq!(
            (d.task, d.opcode, d.level, d.keywords, d.channel),
            (Some(5), Some(11), Some(16), Some(0x1_0000_0000), None)
        );

        let e2 = event(2, 0);
        assert_eq!((e2.opcode.as_deref(), e2.fields.len(), e2.message.as_deref()), (Some("Start"), 0, None));
        let d = e2.declared;
        assert_eq!((d.task, d.opcode, d.channel), (Some(5), Some(1), Some(16)), "the chid names channel 16");
        let e3 = event(3, 0);
        assert_eq!((e3.task.as_deref(), e3.opcode.as_deref()), (None, Some("Global opcode")));
    }

    #[test]
    fn a_byte_order_mark_and_the_first_culture() {
        let xml = "\u{feff}<instrumentationManifest><instrumentation><events>\
            <provider name=\"P\" guid=\"7dd42a49-5329-4832-8dfd-43d979153a88\"><events>\
            <event value=\"4\" message=\"$(string.m)\"/></events></provider></events></instrumentation>\
            <localization><resources culture=\"de-DE\"><stringTable><string id=\"m\" value=\"Deutsch %1\"/>\
            </stringTable></resources><resources culture=\"fr-FR\"><stringTable><string id=\"m\" value=\"Français\"/>\
            </stringTable></resources></localization></instrumentationManifest>";
        let files = parse(xml, Source::EventSourceManifest).unwrap();
        let (key, e) = &files[0].events[0];
        assert_eq!(*key, SchemaKey::Manifest { provider: files[0].provider.guid, id: 4, version: 0 });
        assert_eq!(e.message.as_deref(), Some("Deutsch %1"));
        assert_eq!(
            (e.source, e.task.as_deref(), e.opcode.as_deref(), e.fields.len()),
            (Source::EventSourceManifest, None, None, 0)
        );
    }

    fn error_of(xml: &str) -> ManifestError {
        parse(xml, Source::Manifest).unwrap_err()
    }

    #[test]
    fn errors_say_what_and_where() {
        let e = error_of(&MANIFEST.replace("length=\"Len\"", "length=\"Later\""));
        assert_eq!(e.line, Some(35));
        assert!(e.message.contains("<data name=\"Text\">") && e.message.contains("\"Later\""), "{e}");
        assert!(e.to_string().starts_with("line 35: "), "{e}");

        let e = error_of(&MANIFEST.replace("template=\"T\"", "template=\"Nope\""));
        assert_eq!(e.line, Some(8));
        assert!(e.message.contains("unknown template \"Nope\""), "{e}");

        let e = error_of(&MANIFEST.replace("win:UInt16", "win:UInt17"));
        assert!(e.message.contains("unknown inType \"win:UInt17\""), "{e}");
        let e = error_of(&MANIFEST.replace("$(string.work)", "$(string.missing)"));
        assert!(e.message.contains("\"missing\""), "{e}");
        let e = error_of(&MANIFEST.replace("opcode=\"Global\"", "opcode=\"win:Nope\""));
        assert!(e.message.contains("unknown opcode"), "{e}");
        let e = error_of(&MANIFEST.replace("value=\"3\"", "value=\"70000\""));
        assert!(e.message.contains("value \"70000\""), "{e}");
        let e = error_of(&MANIFEST.replace("{7DD42A49-5329-4832-8DFD-43D979153A88}", "{7DD42A49}"));
        assert!(e.message.contains("not a GUID"), "{e}");
        let e = error_of(&MANIFEST.replace("value=\"3\"", "value=\"1\" version=\"2\""));
        assert!(e.message.contains("twice"), "{e}");

        // Truncated at every 97th byte: always an error, never a panic.
        for cut in (0..MANIFEST.len()).step_by(97) {
            let e = error_of(&MANIFEST[..cut]);
            assert!(!e.message.is_empty());
        }
        assert!(error_of("<root/>").message.contains("no events/provider"));
    }

    #[test]
    fn deep_structs_are_refused() {
        let mut template = String::from("<data name=\"x\" inType=\"win:UInt8\"/>");
        for _ in 0..40 {
            template = format!("<struct name=\"s\">{template}</struct>");
        }
        let xml = MANIFEST.replace("<UserData><Whatever/></UserData>", &template);
        assert!(error_of(&xml).message.contains("nest deeper"));
    }
}
