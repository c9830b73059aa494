//! What nettrail decodes without a trace's help — the built-in providers,
//! and each event's id, version, builds, task and opcode, fields and where
//! its layout came from — as text and JSON (`nettrail providers`). Like
//! `logman query providers` and `wevtutil gp`, offline.

use std::collections::BTreeMap;
use std::sync::Arc;

use nettrail_decode::builtin::BuiltIn;
use nettrail_decode::layouts::Builds;
use nettrail_decode::{EventSchema, Field, Len, ProviderInfo, SchemaKey};
use nettrail_etl::Guid;

use crate::json;

/// One layout of an event: for some builds, or for all.
#[derive(Debug)]
pub struct Layout<'a> {
    id: u16,
    version: u8,
    builds: Option<Builds>,
    schema: &'a Arc<EventSchema>,
    origin: Option<&'a str>,
}

/// A built-in provider and its layouts, by (id, version, builds).
#[derive(Debug)]
pub struct Provider<'a> {
    pub info: &'a Arc<ProviderInfo>,
    pub layouts: Vec<Layout<'a>>,
}

/// Every built-in provider with layouts, by name.
pub fn providers(built_in: &BuiltIn) -> Vec<Provider<'_>> {
    let mut by_guid: BTreeMap<String, Provider<'_>> = BTreeMap::new();
    for (guid, info) in &built_in.providers {
        by_guid.insert(guid.to_string(), Provider { info, layouts: Vec::new() });
    }
    let mut add = |key: &SchemaKey, builds: Option<Builds>, schema| {
        let SchemaKey::Manifest { provider, id, version } = *key else { return };
        let origin = built_in.origins.get(&(*key, builds)).map(String::as_str);
        if let Some(p) = by_guid.get_mut(&provider.to_string()) {
            p.layouts.push(Layout { id, version, builds, schema, origin });
        }
    };
    for (key, schema) in &built_in.events {
        if !built_in.by_build.contains_key(key) {
            add(key, None, schema);
        }
    }
    for (key, layouts) in &built_in.by_build {
        for (builds, schema) in layouts {
            add(key, Some(*builds), schema);
        }
    }
    let mut out: Vec<Provider<'_>> = by_guid.into_values().filter(|p| !p.layouts.is_empty()).collect();
    for p in &mut out {
        p.layouts.sort_by_key(|l| (l.id, l.version, l.builds.and_then(|b| b.from)));
    }
    out.sort_by(|a, b| a.info.name.cmp(&b.info.name));
    out
}

/// A provider named by GUID, full name or name without `Microsoft-Windows-`, any case.
pub fn matches(info: &ProviderInfo, wanted: &str) -> bool {
    if let Ok(guid) = wanted.trim_matches(['{', '}']).parse::<Guid>() {
        return info.guid == guid;
    }
    let name = info.name.to_ascii_lowercase();
    let wanted = wanted.to_ascii_lowercase();
    name == wanted || name.strip_prefix("microsoft-windows-") == Some(wanted.as_str())
}

/// One line per provider: GUID, events, layouts, name.
pub fn write_list(out: &mut impl std::io::Write, providers: &[&Provider<'_>]) -> std::io::Result<()> {
    writeln!(out, "{:<38}  {:>6}  {:>7}  name", "guid", "events", "layouts")?;
    for p in providers {
        let mut keys: Vec<(u16, u8)> = p.layouts.iter().map(|l| (l.id, l.version)).collect();
        keys.dedup();
        writeln!(out, "{:<38}  {:>6}  {:>7}  {}", p.info.guid.to_string(), keys.len(), p.layouts.len(), p.info.name)?;
    }
    Ok(())
}

fn length_text(len: Option<Len>, fields: &[Field]) -> Option<String> {
    match len? {
        Len::Fixed(n) => Some(n.to_string()),
        Len::Field(i) => Some(fields.get(i).map_or_else(|| format!("#{i}"), |f| f.name.clone())),
        Len::Prefixed => Some("u16 prefix".to_string()),
        Len::Remaining => Some("rest of the payload".to_string()),
    }
}

fn builds_text(b: Option<Builds>) -> String {
    match b {
        Some(b) => format!(" (builds {b})"),
        None => String::new(),
    }
}

/// A provider and every layout of its events.
pub fn write_text(out: &mut impl std::io::Write, p: &Provider<'_>) -> std::io::Result<()> {
    writeln!(out, "{} {}", p.info.name, p.info.guid)?;
    for l in &p.layouts {
        let s = l.schema;
        write!(out, "\nevent {} v{}{}", l.id, l.version, builds_text(l.builds))?;
        if let Some(name) = &s.name {
            write!(out, " {name}")?;
        }
        writeln!(out)?;
        let d = s.declared;
        let named = |value: Option<String>, number: Option<u64>| match (value, number) {
            (Some(v), Some(n)) => format!("{v} ({n})"),
            (Some(v), None) => v,
            (None, Some(n)) => n.to_string(),
            (None, None) => "-".to_string(),
        };
        writeln!(
            out,
            "  task {}, opcode {}, level {}, keywords {}",
            named(s.task.clone(), d.task.map(u64::from)),
            named(s.opcode.clone(), d.opcode.map(u64::from)),
            d.level.map_or_else(|| "-".to_string(), |l| l.to_string()),
            d.keywords.map_or_else(|| "-".to_string(), |k| format!("0x{k:x}"))
        )?;
        writeln!(out, "  from {}", l.origin.unwrap_or("nettrail's built-in layouts"))?;
        for f in &s.fields {
            write!(out, "    {} {}", f.name, f.in_type.name())?;
            if let Some(o) = f.out_type.name() {
                write!(out, " {o}")?;
            }
            if let Some(len) = length_text(f.length, &s.fields) {
                write!(out, " length={len}")?;
            }
            if let Some(count) = length_text(f.count, &s.fields) {
                write!(out, " count={count}")?;
            }
            if let Some(map) = &f.map {
                write!(out, " map={}", map.name)?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

/// `[{name, guid, events: [{id, version, from_build, to_build, name, task, …, fields: [{name, in_type, …}]}]}]`.
pub fn write_json(out: &mut Vec<u8>, providers: &[&Provider<'_>]) {
    out.push(b'[');
    for (i, p) in providers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"\n{\"name\":");
        json::string(out, &p.info.name);
        out.extend_from_slice(b",\"guid\":");
        json::string(out, &p.info.guid.to_string());
        out.extend_from_slice(b",\"events\":[");
        for (j, l) in p.layouts.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            write_event(out, l);
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"\n]\n");
}

fn write_event(out: &mut Vec<u8>, l: &Layout<'_>) {
    let s = l.schema;
    let optional_text = |out: &mut Vec<u8>, key: &str, value: Option<&str>| {
        out.extend_from_slice(format!(",\"{key}\":").as_bytes());
        match value {
            Some(v) => json::string(out, v),
            None => out.extend_from_slice(b"null"),
        }
    };
    let optional_number = |out: &mut Vec<u8>, key: &str, value: Option<u64>| {
        out.extend_from_slice(format!(",\"{key}\":").as_bytes());
        match value {
            Some(v) => out.extend_from_slice(v.to_string().as_bytes()),
            None => out.extend_from_slice(b"null"),
        }
    };
    out.extend_from_slice(format!("\n {{\"id\":{},\"version\":{}", l.id, l.version).as_bytes());
    match l.builds {
        Some(b) => {
            optional_number(out, "from_build", b.from.map(u64::from));
            optional_number(out, "to_build", b.to.map(u64::from));
        }
        None => out.extend_from_slice(b",\"from_build\":null,\"to_build\":null"),
    }
    optional_text(out, "name", s.name.as_deref());
    optional_text(out, "task", s.task.as_deref());
    optional_number(out, "task_value", s.declared.task.map(u64::from));
    optional_text(out, "opcode", s.opcode.as_deref());
    optional_number(out, "opcode_value", s.declared.opcode.map(u64::from));
    optional_number(out, "level", s.declared.level.map(u64::from));
    optional_text(out, "keywords", s.declared.keywords.map(|k| format!("0x{k:x}")).as_deref());
    optional_text(out, "source", Some(l.origin.unwrap_or("nettrail's built-in layouts")));
    out.extend_from_slice(b",\"fields\":[");
    for (k, f) in s.fields.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"name\":");
        json::string(out, &f.name);
        out.extend_from_slice(b",\"in_type\":");
        json::string(out, f.in_type.name());
        optional_text(out, "out_type", f.out_type.name());
        optional_text(out, "length", length_text(f.length, &s.fields).as_deref());
        optional_text(out, "count", length_text(f.count, &s.fields).as_deref());
        optional_text(out, "map", f.map.as_ref().map(|m| m.name.as_str()));
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
}

/// A provider whose events describe themselves (TraceLogging) that the
/// network model reads: the Chromium-based browsers'.
#[derive(Debug)]
pub struct SelfDescribed {
    pub guid: Guid,
    /// The TraceLogging provider name the browser registers.
    pub name: &'static str,
    /// The browser (`Chrome`, `Edge WebView2` …).
    pub browser: &'static str,
    pub events: Vec<DescribedEvent>,
}

/// An event of a self-describing provider, as the model reads it: its
/// name (the trace event's, `*` for any), keyword, fields and their use.
#[derive(Debug)]
pub struct DescribedEvent {
    pub name: &'static str,
    pub keywords: Option<u64>,
    pub fields: Vec<(&'static str, &'static str)>,
    pub note: &'static str,
}

/// The browsers' providers and the events the model reads of them.
pub fn self_described() -> Vec<SelfDescribed> {
    let trace_event = DescribedEvent {
        name: "*",
        keywords: None,
        fields: vec![("Phase", "AnsiString"), ("Timestamp", "UInt64"), ("Id", "UInt64"), ("Duration", "UInt64")],
        note: "any trace event: Begin/End (Complete/Complete End, Async Begin/End) pair into regions; \
               arguments follow as fields of their own names, a URL found by name or value",
    };
    let netlog = nettrail_net::NETLOG_EVENTS.iter().map(|&(name, note)| DescribedEvent {
        name,
        keywords: Some(nettrail_net::NETLOG_KEYWORD),
        fields: vec![
            ("Phase", "AnsiString"),
            ("Timestamp", "UInt64"),
            ("Id", "UInt64"),
            ("source_type", "AnsiString"),
            ("params", "AnsiString"),
        ],
        note,
    });
    let events: Vec<DescribedEvent> = std::iter::once(trace_event).chain(netlog).collect();
    nettrail_net::BROWSERS
        .iter()
        .map(|&(guid, name, browser)| SelfDescribed {
            guid,
            name,
            browser,
            events: events
                .iter()
                .map(|e| DescribedEvent { name: e.name, keywords: e.keywords, fields: e.fields.clone(), note: e.note })
                .collect(),
        })
        .collect()
}

/// A self-describing provider named by GUID, or by (part of) its name or
/// browser, any case (`webview2`, `Edge` for every Edge channel).
pub fn described_matches(p: &SelfDescribed, wanted: &str) -> bool {
    if let Ok(guid) = wanted.trim_matches(['{', '}']).parse::<Guid>() {
        return p.guid == guid;
    }
    let wanted = wanted.to_ascii_lowercase();
    [p.name, p.browser].iter().any(|n| n.to_ascii_lowercase().contains(&wanted))
}

/// One line per self-describing provider, as [`write_list`] lists the others.
pub fn write_list_described(out: &mut impl std::io::Write, providers: &[&SelfDescribed]) -> std::io::Result<()> {
    for p in providers {
        writeln!(
            out,
            "{:<38}  {:>6}  {:>7}  {} (TraceLogging: {})",
            p.guid.to_string(),
            p.events.len(),
            "-",
            p.name,
            p.browser
        )?;
    }
    Ok(())
}

/// A self-describing provider and the events the model reads.
pub fn write_text_described(out: &mut impl std::io::Write, p: &SelfDescribed) -> std::io::Result<()> {
    writeln!(out, "{} {} ({}; TraceLogging: the events describe themselves)", p.name, p.guid, p.browser)?;
    for e in &p.events {
        write!(out, "\nevent {}", e.name)?;
        if let Some(k) = e.keywords {
            write!(out, " keywords 0x{k:x}")?;
        }
        writeln!(out, "\n  {}", e.note)?;
        for (name, in_type) in &e.fields {
            writeln!(out, "    {name} {in_type}")?;
        }
    }
    Ok(())
}

/// The JSON of [`write_json`] with the self-describing providers after the
/// others: TraceLogging events are id 0, version 0, told apart by name.
pub fn write_json_all(out: &mut Vec<u8>, providers: &[&Provider<'_>], described: &[&SelfDescribed]) {
    write_json(out, providers);
    if described.is_empty() {
        return;
    }
    // Reopen the array: drop "\n]\n".
    out.truncate(out.len().saturating_sub(3));
    for (i, p) in described.iter().enumerate() {
        if i > 0 || !providers.is_empty() {
            out.push(b',');
        }
        out.extend_from_slice(b"\n{\"name\":");
        json::string(out, p.name);
        out.extend_from_slice(b",\"guid\":");
        json::string(out, &p.guid.to_string());
        out.extend_from_slice(b",\"browser\":");
        json::string(out, p.browser);
        out.extend_from_slice(b",\"tracelogging\":true,\"events\":[");
        for (j, e) in p.events.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"\n {\"id\":0,\"version\":0,\"from_build\":null,\"to_build\":null,\"name\":");
            json::string(out, e.name);
            out.extend_from_slice(b",\"keywords\":");
            match e.keywords {
                Some(k) => json::string(out, &format!("0x{k:x}")),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(b",\"source\":\"the event's own TraceLogging metadata\",\"note\":");
            json::string(out, e.note);
            out.extend_from_slice(b",\"fields\":[");
            for (k, (name, in_type)) in e.fields.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"{\"name\":");
                json::string(out, name);
                out.extend_from_slice(b",\"in_type\":");
                json::string(out, in_type);
                out.push(b'}');
            }
            out.extend_from_slice(b"]}");
        }
        out.extend_from_slice(b"]}");
    }
    out.extend_from_slice(b"\n]\n");
}
