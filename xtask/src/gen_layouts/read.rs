//! Readers of the four kinds of source: jdu2600's TSV dumps, repnz's XML
//! dumps, instrumentation manifests and WEPExplorer dumps. Each gives a
//! [`Declaration`] per provider, in the source's own words.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use roxmltree::{Document, Node};

use super::model::{self, Declaration, Event, Field, Len, Map, Named, Names};

/// A file of a git repository at a commit (`git show COMMIT:PATH`); `None`
/// when the commit has no such file.
pub fn git_file(repo: &Path, commit: &str, path: &str) -> anyhow::Result<Option<String>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["show", &format!("{commit}:{path}")])
        .output()
        .with_context(|| format!("running git in {}", repo.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        if err.contains("does not exist") || err.contains("exists on disk, but not in") {
            return Ok(None);
        }
        bail!("git -C {} show {commit}:{path}: {}", repo.display(), err.trim());
    }
    Ok(Some(String::from_utf8(out.stdout).with_context(|| format!("{commit}:{path} is not UTF-8"))?))
}

// ---------------------------------------------------------------------------
// jdu2600/Windows10EtwEvents: `manifest/<Provider>.tsv`.

/// A TSV dump: `provider, event_id, version, Symbol(InType Field, …),
/// opcode, keywords, task, level, evtlog_channel, evtlog_message`.
pub fn tsv(text: &str) -> anyhow::Result<Declaration> {
    let mut d = Declaration::default();
    for (n, line) in text.lines().enumerate().skip(1) {
        let fail = || format!("line {}", n + 1);
        let cols: Vec<&str> = line.split('\t').collect();
        if cols.len() < 8 {
            bail!("line {}: {} columns", n + 1, cols.len());
        }
        d.provider = cols[0].to_string();
        let id: u16 = cols[1].parse().with_context(fail)?;
        let version: u8 = cols[2].parse().with_context(fail)?;
        let signature = cols[3];
        let open = list_start(signature).with_context(fail)?;
        let list = signature[open + 1..].strip_suffix(')').with_context(fail)?;
        let mut fields = Vec::new();
        let mut unreadable = None;
        for item in list.split(", ").filter(|s| !s.trim().is_empty()) {
            let (in_type, name) = item.trim().split_once(' ').with_context(|| format!("{}: {item:?}", fail()))?;
            match model::in_type(in_type) {
                Some(t) => fields.push(Field::new(name.trim(), t)),
                // The dump's tool prints some struct members as numbers.
                None if in_type.chars().all(|c| c.is_ascii_digit()) => unreadable = Some(in_type.to_string()),
                None => bail!("{}: in-type {in_type:?}", fail()),
            }
        }
        if let Some(t) = unreadable {
            d.unreadable.push((id, version, format!("the dump gives a field the in-type {t}")));
            continue;
        }
        let text = |s: &str| Some(s.trim().to_string()).filter(|s| !s.is_empty());
        let event = Event {
            symbol: text(&signature[..open]),
            opcode: text(cols[4]),
            keywords: cols[5].split_whitespace().map(str::to_string).collect(),
            task: text(cols[6]),
            level: text(cols[7]),
            channel: cols.get(8).and_then(|c| text(c)),
            message: cols.get(9).and_then(|c| text(c)),
            fields,
        };
        if d.events.insert((id, version), event).is_some() {
            bail!("line {}: event {id} v{version} twice", n + 1);
        }
    }
    Ok(d)
}

/// Where the field list of `Symbol(…)` opens: the `(` that the final `)`
/// closes (symbols may hold parentheses themselves).
fn list_start(signature: &str) -> Option<usize> {
    if !signature.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in signature.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

// ---------------------------------------------------------------------------
// Instrumentation manifests (repnz's dumps and the reference manifests).

fn is(node: &Node<'_, '_>, name: &str) -> bool {
    node.is_element() && node.tag_name().name() == name
}

fn children<'a, 'i>(node: Node<'a, 'i>, name: &'static str) -> impl Iterator<Item = Node<'a, 'i>> {
    node.children().filter(move |c| is(c, name))
}

/// The `name` elements of `node`'s `section` child.
fn items<'a, 'i>(node: Node<'a, 'i>, section: &'static str, name: &'static str) -> Vec<Node<'a, 'i>> {
    children(node, section).flat_map(move |s| children(s, name)).collect()
}

fn number(text: &str) -> Option<u64> {
    let text = text.trim();
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

fn attr_number<T: TryFrom<u64>>(node: Node<'_, '_>, attr: &str) -> anyhow::Result<T> {
    let text = node.attribute(attr).with_context(|| format!("<{} without {attr}", node.tag_name().name()))?;
    number(text).and_then(|n| T::try_from(n).ok()).with_context(|| format!("{attr}={text:?}"))
}

/// Resolves `$(string.ID)` through the en-US string table.
struct Strings<'a>(std::collections::HashMap<&'a str, &'a str>);

impl<'a> Strings<'a> {
    fn of(doc: &'a Document<'_>) -> Strings<'a> {
        let resources: Vec<Node<'a, '_>> = doc.descendants().filter(|n| is(n, "resources")).collect();
        let chosen = resources
            .iter()
            .find(|r| r.attribute("culture").is_some_and(|c| c.eq_ignore_ascii_case("en-US")))
            .or(resources.first());
        let mut table = std::collections::HashMap::new();
        for table_node in chosen.into_iter().flat_map(|r| children(*r, "stringTable")) {
            for s in children(table_node, "string") {
                if let (Some(id), Some(value)) = (s.attribute("id"), s.attribute("value")) {
                    table.insert(id, value);
                }
            }
        }
        Strings(table)
    }

    fn text(&self, value: Option<&str>) -> Option<String> {
        let value = value?;
        match value.strip_prefix("$(string.").and_then(|r| r.strip_suffix(')')) {
            Some(id) => self.0.get(id).map(|s| s.trim().to_string()),
            None => Some(value.trim().to_string()),
        }
        .filter(|s| !s.is_empty())
    }
}

/// The providers `wanted` names of an instrumentation manifest (a
/// `provider` inside `events`).
pub fn manifest(xml: &str, wanted: &dyn Fn(&str) -> bool) -> anyhow::Result<Vec<Declaration>> {
    let xml = xml.trim_start_matches('\u{feff}');
    let doc = Document::parse(xml).context("not well-formed XML")?;
    let strings = Strings::of(&doc);
    let mut out = Vec::new();
    for p in doc.descendants().filter(|n| is(n, "provider") && n.parent_element().is_some_and(|e| is(&e, "events"))) {
        let name = p.attribute("name").context("provider without a name")?;
        if !wanted(name) {
            continue;
        }
        out.push(manifest_provider(p, &strings).with_context(|| name.to_string())?);
    }
    Ok(out)
}

fn manifest_provider(p: Node<'_, '_>, strings: &Strings<'_>) -> anyhow::Result<Declaration> {
    let mut names = Names::default();
    let named = |n: Node<'_, '_>| strings.text(n.attribute("message"));
    for t in items(p, "tasks", "task") {
        let task = t.attribute("name").context("task without a name")?.to_string();
        for o in items(t, "opcodes", "opcode") {
            let opcode = o.attribute("name").context("opcode without a name")?.to_string();
            names
                .opcodes
                .insert((Some(task.clone()), opcode), Named { value: attr_number(o, "value")?, message: named(o) });
        }
        names.tasks.insert(task, Named { value: attr_number(t, "value")?, message: named(t) });
    }
    for o in items(p, "opcodes", "opcode") {
        let opcode = o.attribute("name").context("opcode without a name")?.to_string();
        names.opcodes.insert((None, opcode), Named { value: attr_number(o, "value")?, message: named(o) });
    }
    for k in items(p, "keywords", "keyword") {
        let keyword = k.attribute("name").context("keyword without a name")?.to_string();
        names.keywords.insert(keyword, Named { value: attr_number(k, "mask")?, message: named(k) });
    }
    for l in items(p, "levels", "level") {
        let level = l.attribute("name").context("level without a name")?.to_string();
        names.levels.insert(level, Named { value: attr_number(l, "value")?, message: named(l) });
    }
    channels(p, &mut names)?;
    for section in children(p, "maps") {
        for m in section.children().filter(|c| c.is_element()) {
            let bitmap = match m.tag_name().name() {
                "valueMap" => false,
                "bitMap" => true,
                _ => continue,
            };
            let map_name = m.attribute("name").context("map without a name")?.to_string();
            let mut entries = Vec::new();
            for e in children(m, "map") {
                entries.push((attr_number(e, "value")?, strings.text(e.attribute("message")).unwrap_or_default()));
            }
            entries.sort();
            names.maps.insert(map_name, Map { bitmap, entries });
        }
    }
    let mut templates = std::collections::HashMap::new();
    for t in items(p, "templates", "template") {
        let tid = t.attribute("tid").context("template without a tid")?;
        templates.insert(tid, template(t).with_context(|| format!("template {tid}"))?);
    }
    let mut d = Declaration {
        provider: p.attribute("name").unwrap_or_default().to_string(),
        guid: p.attribute("guid").map(|g| g.trim_matches(['{', '}']).to_ascii_lowercase()),
        names,
        events: Default::default(),
        unreadable: Vec::new(),
    };
    for e in items(p, "events", "event") {
        let id: u16 = attr_number(e, "value")?;
        let version: u8 = match e.attribute("version") {
            Some(_) => attr_number(e, "version")?,
            None => 0,
        };
        let fields = match e.attribute("template") {
            Some(tid) => templates.get(tid).cloned().with_context(|| format!("event {id}: template {tid}"))?,
            None => Vec::new(),
        };
        let event = Event {
            symbol: e.attribute("symbol").map(str::to_string),
            task: e.attribute("task").map(str::to_string),
            opcode: e.attribute("opcode").map(str::to_string),
            level: e.attribute("level").map(str::to_string),
            keywords: e.attribute("keywords").unwrap_or_default().split_whitespace().map(str::to_string).collect(),
            channel: e.attribute("channel").map(str::to_string),
            message: strings.text(e.attribute("message")),
            fields,
        };
        if d.events.insert((id, version), event).is_some() {
            bail!("event {id} v{version} twice");
        }
    }
    Ok(d)
}

/// Channel values as the message compiler assigns them: explicit ones,
/// standard imports, then the next free value from 16 in declaration order.
fn channels(p: Node<'_, '_>, names: &mut Names) -> anyhow::Result<()> {
    let mut pending = Vec::new();
    for c in children(p, "channels").flat_map(|s| s.children().filter(|c| c.is_element())) {
        let name = c.attribute("name").context("channel without a name")?.to_string();
        let chid = c.attribute("chid").map(str::to_string);
        let value = match (c.tag_name().name(), c.attribute("value")) {
            (_, Some(_)) => Some(attr_number(c, "value")?),
            ("importChannel", None) => Some(match name.as_str() {
                "System" => 8,
                "Application" => 9,
                "Security" => 10,
                other => bail!("importChannel of {other:?}"),
            }),
            _ => None,
        };
        pending.push((chid, name, value));
    }
    let mut taken: Vec<u8> = pending.iter().filter_map(|(_, _, v)| *v).collect();
    for (chid, name, value) in pending {
        let value = match value {
            Some(v) => v,
            None => {
                let v = (16..=u8::MAX).find(|v| !taken.contains(v)).context("no channel value left")?;
                taken.push(v);
                v
            }
        };
        // Events refer to a channel by its chid, or by its name.
        if let Some(chid) = chid {
            names.channels.insert(chid, (value, name.clone()));
        }
        names.channels.insert(name.clone(), (value, name));
    }
    Ok(())
}

/// A template's `data` items in payload order.
fn template(t: Node<'_, '_>) -> anyhow::Result<Vec<Field>> {
    let mut out = Vec::new();
    for d in t.children().filter(|c| c.is_element()) {
        match d.tag_name().name() {
            "data" => {}
            "struct" => bail!("struct {:?}: not supported in layouts", d.attribute("name")),
            _ => continue,
        }
        let name = d.attribute("name").context("data without a name")?;
        let raw = d.attribute("inType").with_context(|| format!("{name}: no inType"))?;
        let in_type = model::in_type(raw).with_context(|| format!("{name}: in-type {raw:?}"))?;
        let mut f = Field::new(name, in_type);
        f.out_type = d.attribute("outType").and_then(|o| model::out_type(o, in_type));
        f.length = d.attribute("length").map(reference);
        f.count = d.attribute("count").map(reference);
        f.map = d.attribute("map").map(str::to_string);
        out.push(f);
    }
    Ok(out)
}

fn reference(text: &str) -> Len {
    match number(text).and_then(|n| u32::try_from(n).ok()) {
        Some(n) => Len::Fixed(n),
        None => Len::Field(text.trim().to_string()),
    }
}

// ---------------------------------------------------------------------------
// WEPExplorer dumps (nasbench/EVTX-ETW-Resources, as copied to
// `../shared/reference/manifests/windows11/`).

fn text_of<'a>(node: Node<'a, '_>, name: &str) -> Option<&'a str> {
    node.children().find(|c| is(c, name)).and_then(|c| c.text()).map(str::trim)
}

/// A WEPExplorer dump: `<Provider>` with `<Metadata>` (GUID, channels,
/// levels, tasks, opcodes, keywords) and `<Event>`s whose `<Template>` is a
/// manifest template in CDATA. It has no maps and no event keywords.
pub fn wepexplorer(xml: &str) -> anyhow::Result<Vec<Declaration>> {
    let doc = Document::parse(xml.trim_start_matches('\u{feff}')).context("not well-formed XML")?;
    let mut out = Vec::new();
    for p in doc.descendants().filter(|n| is(n, "Provider")) {
        let mut names = Names::default();
        let meta = p.children().find(|c| is(c, "Metadata")).context("no Metadata")?;
        let number_of = |n: Node<'_, '_>| text_of(n, "Value").and_then(number).context("no Value");
        let message = |n: Node<'_, '_>| text_of(n, "Message").filter(|m| !m.is_empty()).map(str::to_string);
        let name_of = |n: Node<'_, '_>| text_of(n, "Name").unwrap_or_default().to_string();
        let mut task_names = std::collections::HashMap::new();
        for t in items(meta, "Tasks", "Task") {
            let value = u16::try_from(number_of(t)?)?;
            task_names.insert(value, name_of(t));
            names.tasks.insert(name_of(t), Named { value, message: message(t) });
        }
        for o in items(meta, "Opcodes", "Opcode") {
            let scope = text_of(o, "Task").and_then(number).and_then(|t| u16::try_from(t).ok()).filter(|t| *t != 0);
            let scope = scope.and_then(|t| task_names.get(&t).cloned());
            names
                .opcodes
                .insert((scope, name_of(o)), Named { value: u8::try_from(number_of(o)?)?, message: message(o) });
        }
        for k in items(meta, "Keywords", "Keyword") {
            names.keywords.insert(name_of(k), Named { value: number_of(k)?, message: message(k) });
        }
        for l in items(meta, "Levels", "Level") {
            names.levels.insert(name_of(l), Named { value: u8::try_from(number_of(l)?)?, message: message(l) });
        }
        for c in items(meta, "Channels", "Channel") {
            let id = text_of(c, "Id").and_then(number).and_then(|v| u8::try_from(v).ok()).context("channel Id")?;
            let path = text_of(c, "Path").unwrap_or_default().to_string();
            // Events name their channel by its message (or path when it has none).
            let shown = message(c).unwrap_or_else(|| path.clone());
            names.channels.insert(shown, (id, path));
        }
        let mut d = Declaration {
            provider: text_of(p, "Name").context("no Name")?.to_string(),
            guid: text_of(meta, "Guid").map(|g| g.trim_matches(['{', '}']).to_ascii_lowercase()),
            names,
            events: Default::default(),
            unreadable: Vec::new(),
        };
        // WEPExplorer lists the events under `EventMetadata`.
        let events = items(p, "EventMetadata", "Event").into_iter().chain(items(p, "Events", "Event"));
        for e in events {
            let id = text_of(e, "Id").and_then(number).and_then(|v| u16::try_from(v).ok()).context("Event Id")?;
            let version = text_of(e, "Version").and_then(number).and_then(|v| u8::try_from(v).ok()).unwrap_or(0);
            let fields = match text_of(e, "Template").filter(|t| !t.is_empty()) {
                Some(t) => {
                    let inner = Document::parse(t).with_context(|| format!("event {id} template"))?;
                    template(inner.root_element())?
                }
                None => Vec::new(),
            };
            let level = text_of(e, "Level").filter(|l| !l.is_empty()).map(str::to_string);
            let event = Event {
                symbol: None,
                task: text_of(e, "Task").filter(|t| !t.is_empty()).map(str::to_string),
                opcode: text_of(e, "Opcode").filter(|t| !t.is_empty()).map(str::to_string),
                level,
                keywords: Vec::new(),
                channel: text_of(e, "Channel").filter(|t| !t.is_empty()).map(str::to_string),
                message: text_of(e, "Message").filter(|m| !m.is_empty()).map(str::to_string),
                fields,
            };
            d.events.insert((id, version), event);
        }
        out.push(d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tsv_line() {
        let text = "provider\tevent_id\tversion\tevent(fields)\topcode\tkeywords\ttask\tlevel\tevtlog_channel\tevtlog_message\n\
            Microsoft-Windows-TCPIP\t1033\t1\tTcpConnectTcbComplete_V1(UInt32 LocalAddressLength, Binary LocalAddress, Pointer Tcb, UInt64 ProcessStartKey)\t\tut:TcpipTcb ut:Endpoint\tTcpConnectTcbComplete\tInformational\t\t\n\
            Microsoft-Windows-TCPIP\t1595\t0\tTcpGlobalTimerCancelled()\t\tut:Global\tTcpGlobalTimerCancelled\tInformational\t\t\n";
        let d = tsv(text).unwrap();
        assert_eq!(d.provider, "Microsoft-Windows-TCPIP");
        let e = &d.events[&(1033, 1)];
        assert_eq!(e.symbol.as_deref(), Some("TcpConnectTcbComplete_V1"));
        let fields: Vec<(&str, &str)> = e.fields.iter().map(|f| (f.name.as_str(), f.in_type.as_str())).collect();
        assert_eq!(
            fields,
            [
                ("LocalAddressLength", "UInt32"),
                ("LocalAddress", "Binary"),
                ("Tcb", "Pointer"),
                ("ProcessStartKey", "UInt64")
            ]
        );
        assert_eq!(e.keywords, ["ut:TcpipTcb", "ut:Endpoint"]);
        assert_eq!(
            (e.task.as_deref(), e.level.as_deref(), e.opcode.as_deref()),
            (Some("TcpConnectTcbComplete"), Some("Informational"), None)
        );
        assert!(d.events[&(1595, 0)].fields.is_empty());
        assert!(tsv("h\nP\t1\t0\tX(Weird A)\t\t\t\t\t\t\n").is_err());
    }

    #[test]
    fn a_manifest_and_a_wepexplorer_dump_read_alike() {
        let man = r#"<instrumentationManifest xmlns="http://schemas.microsoft.com/win/2004/08/events"><instrumentation><events>
            <provider name="P" guid="{7DD42A49-5329-4832-8DFD-43D979153A88}">
             <channels><channel chid="c1" name="P/Operational"/></channels>
             <tasks><task name="T" value="7" message="$(string.t)"><opcodes><opcode name="Go" value="12"/></opcodes></task></tasks>
             <keywords><keyword name="K" mask="0x10"/></keywords>
             <maps><valueMap name="M"><map value="0x1" message="$(string.one)"/></valueMap></maps>
             <events><event value="5" version="1" task="T" opcode="Go" keywords="K" channel="c1" template="A" symbol="Five"/></events>
             <templates><template tid="A">
              <data name="Len" inType="win:UInt32"/>
              <data name="Addr" inType="win:Binary" outType="win:SocketAddress" length="Len"/>
              <data name="V6" inType="win:Binary" outType="win:IPv6" length="16"/>
              <data name="State" inType="win:UInt32" outType="xs:unsignedInt" map="M"/>
             </template></templates>
            </provider></events></instrumentation>
            <localization><resources culture="en-US"><stringTable><string id="t" value="Task seven"/><string id="one" value="One"/></stringTable></resources></localization>
            </instrumentationManifest>"#;
        let d = &manifest(man, &|_| true).unwrap()[0];
        assert_eq!(d.guid.as_deref(), Some("7dd42a49-5329-4832-8dfd-43d979153a88"));
        assert_eq!(d.names.tasks["T"], Named { value: 7, message: Some("Task seven".into()) });
        assert_eq!(d.names.opcodes[&(Some("T".into()), "Go".into())].value, 12);
        assert_eq!(d.names.channels["c1"], (16, "P/Operational".to_string()));
        assert_eq!(d.names.maps["M"].entries, [(1, "One".to_string())]);
        let e = &d.events[&(5, 1)];
        assert_eq!(e.fields[1].length, Some(Len::Field("Len".into())));
        assert_eq!(e.fields[1].out_type.as_deref(), Some("SocketAddress"));
        assert_eq!(e.fields[2].length, Some(Len::Fixed(16)));
        assert_eq!(e.fields[3].out_type, None, "xs:unsignedInt is UInt32's default");

        let dump = "<Providers><Provider><Name>P</Name><Metadata><Guid>{7DD42A49-5329-4832-8DFD-43D979153A88}</Guid>\
            <Channels><Channel><Message>Op</Message><Path>P/Operational</Path><Id>16</Id></Channel></Channels>\
            <Tasks><Task><Message></Message><Name>T</Name><Value>7</Value></Task></Tasks>\
            <Opcodes><Opcode><Message>Go</Message><Name>Go</Name><Value>12</Value><Task>7</Task></Opcode></Opcodes>\
            </Metadata><Events><Event><Id>5</Id><Version>1</Version><Channel>Op</Channel><Level>Information</Level><Task>T</Task>\
            <Message><![CDATA[\nFive %1]]></Message><Template><![CDATA[\n<template xmlns=\"http://schemas.microsoft.com/win/2004/08/events\">\n\
            <data name=\"Len\" inType=\"win:UInt32\" outType=\"xs:unsignedInt\"/>\n\
            <data name=\"Addr\" inType=\"win:Binary\" outType=\"win:SocketAddress\" length=\"Len\"/>\n</template>\n]]></Template></Event></Events></Provider></Providers>";
        let w = &wepexplorer(dump).unwrap()[0];
        assert_eq!(w.provider, "P");
        assert_eq!(w.names.opcodes[&(Some("T".into()), "Go".into())].value, 12);
        let e = &w.events[&(5, 1)];
        assert_eq!(e.fields, d.events[&(5, 1)].fields[..2]);
        assert_eq!(e.message.as_deref(), Some("Five %1"));
        assert_eq!(w.names.channels["Op"], (16, "P/Operational".to_string()));
    }
}
