//! TRACE_EVENT_INFO and EVENT_MAP_INFO blobs that xperf, WPR and PerfView
//! embed when they merge a trace (KernelTraceControl MetaData events), so the
//! trace decodes on a machine without the providers' manifests.
//!
//! What the real payloads hold (checked on every merged trace of the corpus):
//! - EventInfo (opcode 32): exactly one TRACE_EVENT_INFO, no prefix; its
//!   offsets count from the payload's first byte, and the blob ends where its
//!   binary XML (or last string) ends.
//! - EventMapInfo (opcode 33): the provider GUID (16 bytes), then one
//!   EVENT_MAP_INFO whose offsets count from the map's own start.
//! - The records are FULL_HEADER classic events whose width follows the
//!   process of the events described (a 32-bit CLR's arrive as
//!   FULL_HEADER32), but the blobs hold no pointer-sized field. A pointer
//!   property's `length` is not its width (Kernel-File's 64-bit `Irp` says 4),
//!   so pointers take the decoded event's own pointer size.
//! - String and binary lengths are literal or name another property by its
//!   index in the whole property array; TDH also fills `length` with the size
//!   of fixed-size types, which says nothing new and is ignored.
//! - Map entries and many names end in a space (message-compiler output);
//!   it is trimmed.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;
use std::sync::Arc;

use nettrail_etl::Guid;

use crate::intype::{InType, OutType};
use crate::registry::SchemaSet;
use crate::schema::{EventSchema, Field, Len, ProviderInfo, SchemaKey, Source, ValueMap};
use crate::schema::{standard_level, standard_opcode};

/// Fixed part of TRACE_EVENT_INFO, before the EVENT_PROPERTY_INFO array.
const EVENT_INFO_SIZE: usize = 112;
/// One EVENT_PROPERTY_INFO.
const PROPERTY_SIZE: usize = 24;
/// Fixed part of EVENT_MAP_INFO, before its entries.
const MAP_INFO_SIZE: usize = 16;
/// TDH's EVENT_PROPERTY_INFO flags.
const STRUCT: u32 = 0x1;
const PARAM_LENGTH: u32 = 0x2;
const PARAM_COUNT: u32 = 0x4;
const PARAM_FIXED_LENGTH: u32 = 0x10;
const PARAM_FIXED_COUNT: u32 = 0x20;
const HAS_CUSTOM_SCHEMA: u32 = 0x80;
/// EVENT_MAP_INFO flags: those that make a bit map, pattern maps, MOF maps.
const BITMAP_FLAGS: u32 = 0x2 | 0x10 | 0x20;
const PATTERN_MAP: u32 = 0x4;
const WBEM_FLAGS: u32 = 0x8 | 0x10 | 0x20 | 0x40;
/// Structs deeper than this are damage, not data (the payload decoder recurses).
const MAX_DEPTH: usize = 8;
/// Keyword bits from here up are Windows' (channels, standard keywords).
const RESERVED_KEYWORDS: u64 = 1 << 48;

/// TRACE_EVENT_INFO.DecodingSource.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decoding {
    Manifest,
    Wbem,
    TraceLogging,
}

/// Bounds-checked reads from one blob; every failure names the offset.
struct Blob<'a> {
    data: &'a [u8],
}

impl Blob<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> Result<[u8; N], String> {
        at.checked_add(N)
            .and_then(|end| self.data.get(at..end))
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| format!("{N} bytes at offset {at} run past the {}-byte blob", self.data.len()))
    }

    fn u16(&self, at: usize) -> Result<u16, String> {
        self.bytes(at).map(u16::from_le_bytes)
    }

    fn u32(&self, at: usize) -> Result<u32, String> {
        self.bytes(at).map(u32::from_le_bytes)
    }

    fn u64(&self, at: usize) -> Result<u64, String> {
        self.bytes(at).map(u64::from_le_bytes)
    }

    fn guid(&self, at: usize) -> Result<Guid, String> {
        self.bytes(at).map(Guid::from_bytes_le)
    }

    /// The UTF-16 string at `offset` (up to its NUL) and the offset after
    /// the NUL; `None` for offset 0, which TDH uses for "absent".
    fn string_at(&self, offset: u32) -> Result<Option<(String, usize)>, String> {
        if offset == 0 {
            return Ok(None);
        }
        let start = offset as usize;
        let rest = self
            .data
            .get(start..)
            .filter(|r| !r.is_empty())
            .ok_or_else(|| format!("string offset {start} is outside the {}-byte blob", self.data.len()))?;
        let len = crate::payload::utf16_nul(rest)
            .ok_or_else(|| format!("string at offset {start} has no terminating NUL"))?;
        let units = rest[..len].chunks_exact(2).map(|c| u16::from_le_bytes([c[0], c[1]]));
        // Names are ASCII but for rare exceptions: those bytes are the text.
        let text = if rest[..len].chunks_exact(2).all(|c| c[0] < 0x80 && c[1] == 0) {
            units.map(|u| char::from(u as u8)).collect()
        } else {
            char::decode_utf16(units).map(|r| r.unwrap_or(char::REPLACEMENT_CHARACTER)).collect()
        };
        Ok(Some((text, start + len + 2)))
    }

    /// A name: the string at `offset` without its trailing spaces.
    fn name(&self, offset: u32) -> Result<Option<String>, String> {
        Ok(self.string_at(offset)?.map(|(s, _)| s.trim_end().to_string()))
    }

    /// Strings one after another, ended by an empty one (KeywordsNameOffset).
    fn string_list(&self, offset: u32) -> Result<Vec<String>, String> {
        let mut names = Vec::new();
        let mut at = offset;
        while let Some((s, next)) = self.string_at(at)? {
            if s.is_empty() {
                break;
            }
            names.push(s.trim_end().to_string());
            at = u32::try_from(next).map_err(|_| "keyword list runs past 4 GiB".to_string())?;
        }
        Ok(names)
    }
}

/// One EVENT_PROPERTY_INFO as stored.
#[derive(Debug)]
struct RawProperty {
    flags: u32,
    name: String,
    /// InType, or StructStartIndex for a struct.
    in_type: u16,
    /// OutType, or NumOfStructMembers for a struct.
    out_type: u16,
    /// MapNameOffset (CustomSchemaOffset with HasCustomSchema; padding in a struct).
    map_offset: u32,
    count: u16,
    length: u16,
}

impl RawProperty {
    /// Whether its value can be a count or a length: one integer.
    fn is_scalar_integer(&self) -> bool {
        self.flags & (STRUCT | PARAM_COUNT | PARAM_FIXED_COUNT) == 0
            && self.count <= 1
            && InType::from_tdh(self.in_type).is_some_and(InType::is_integer)
    }
}

/// Builds one level of fields (the top level, or a struct's members) from
/// the properties in `level`, marking each property used: a property can
/// belong to one parent only, which rules out cycles and blow-ups.
struct FieldBuilder<'a> {
    blob: &'a Blob<'a>,
    props: &'a [RawProperty],
    used: Vec<bool>,
    decoding: Decoding,
}

impl FieldBuilder<'_> {
    fn level(&mut self, level: Range<usize>, depth: usize) -> Result<Vec<Field>, String> {
        if depth > MAX_DEPTH {
            return Err("structs nested too deep".into());
        }
        let (props, blob) = (self.props, self.blob);
        let mut fields = Vec::with_capacity(level.len());
        for index in level.clone() {
            let p = props.get(index).ok_or_else(|| format!("property {index} does not exist"))?;
            let used = self.used.get_mut(index).ok_or_else(|| format!("property {index} does not exist"))?;
            if std::mem::replace(used, true) {
                return Err(format!("property {index} ({}) belongs to two structs", p.name));
            }
            let fail = |why: String| format!("property {index} ({}): {why}", p.name);
            // A count or length names an earlier property of the same level.
            let earlier = |what: &str, target: u16| -> Result<Len, String> {
                let target = usize::from(target);
                let ok = (level.start..index).contains(&target)
                    && props.get(target).is_some_and(RawProperty::is_scalar_integer);
                if ok {
                    Ok(Len::Field(target - level.start))
                } else {
                    Err(fail(format!("its {what} is property {target}, not an earlier integer of the same struct")))
                }
            };
            let count = if p.flags & PARAM_COUNT != 0 {
                Some(earlier("count", p.count)?)
            } else if p.flags & PARAM_FIXED_COUNT != 0 || p.count > 1 {
                Some(Len::Fixed(u32::from(p.count)))
            } else {
                None
            };
            let mut field = if p.flags & STRUCT != 0 {
                let start = usize::from(p.in_type);
                let members = start..start + usize::from(p.out_type);
                if members.end > props.len() {
                    return Err(fail(format!("members {members:?} run past the {} properties", props.len())));
                }
                let mut field = Field::new(p.name.clone(), InType::Struct);
                field.members = self.level(members, depth + 1)?;
                field
            } else if p.flags & HAS_CUSTOM_SCHEMA != 0 {
                // TraceLogging's custom-serialized data travels as a u16
                // byte count and the bytes; other sources have no such field.
                if self.decoding != Decoding::TraceLogging {
                    return Err(fail("a custom schema outside TraceLogging".into()));
                }
                Field::new(p.name.clone(), InType::CountedBinary)
            } else {
                let in_type = InType::from_tdh(p.in_type)
                    .filter(|t| *t != InType::Struct)
                    .ok_or_else(|| fail(format!("unknown in-type {}", p.in_type)))?;
                let mut field = Field::new(p.name.clone(), in_type);
                field.out_type = OutType::from_tdh(p.out_type);
                if matches!(in_type, InType::UnicodeString | InType::AnsiString | InType::Binary) {
                    field.length = if p.flags & PARAM_LENGTH != 0 {
                        Some(earlier("length", p.length)?)
                    } else if p.flags & PARAM_FIXED_LENGTH != 0 || p.length != 0 {
                        Some(Len::Fixed(u32::from(p.length)))
                    } else {
                        None
                    };
                }
                // Linked to the provider's map of this name in `finish`.
                field.map = blob
                    .name(p.map_offset)
                    .map_err(fail)?
                    .map(|name| Arc::new(ValueMap { name, ..ValueMap::default() }));
                field
            };
            field.count = count;
            fields.push(field);
        }
        Ok(fields)
    }
}

/// An event read from its TRACE_EVENT_INFO, waiting for its provider's
/// names and maps, which other blobs bring.
#[derive(Debug)]
struct PendingEvent {
    provider: Guid,
    name: Option<String>,
    task: Option<String>,
    opcode: Option<String>,
    message: Option<String>,
    fields: Vec<Field>,
}

/// What the blobs say about a provider, merged over all its events.
#[derive(Debug, Default)]
struct ProviderFacts {
    name: String,
    keywords: BTreeMap<u64, String>,
    channels: HashMap<u8, String>,
    levels: HashMap<u8, String>,
}

/// Pairs an event's keyword names with its keyword bits. TDH lists the names
/// of the set bits from the lowest up; Windows' own bits (channel bits, for
/// one) are often unnamed, so they are dropped from the top until the counts
/// agree. When they still disagree, no name is trusted.
fn keyword_names(mask: u64, names: Vec<String>) -> Vec<(u64, String)> {
    let mut bits: Vec<u64> = (0..64).map(|b| 1u64 << b).filter(|bit| mask & bit != 0).collect();
    while bits.len() > names.len() && bits.last().is_some_and(|&b| b >= RESERVED_KEYWORDS) {
        bits.pop();
    }
    if bits.len() != names.len() {
        return Vec::new();
    }
    bits.into_iter().zip(names).collect()
}

/// Collects embedded metadata; maps are joined to fields at the end.
#[derive(Debug, Default)]
pub struct EmbeddedMetadata {
    /// `None` once two blobs described one key differently: neither is trusted.
    events: HashMap<SchemaKey, Option<PendingEvent>>,
    providers: HashMap<Guid, ProviderFacts>,
    maps: HashMap<(Guid, String), Arc<ValueMap>>,
}

impl EmbeddedMetadata {
    pub fn new() -> Self {
        EmbeddedMetadata::default()
    }

    /// MetaData opcode 32 (EventInfo): the payload is one TRACE_EVENT_INFO.
    pub fn add_event_info(&mut self, payload: &[u8]) -> Result<(), String> {
        let blob = Blob { data: payload };
        let provider = blob.guid(0).map_err(|e| format!("EventInfo: {e}"))?;
        let what = format!(
            "EventInfo of {provider} event {} v{}",
            blob.u16(32).unwrap_or_default(),
            payload.get(34).copied().unwrap_or_default()
        );
        let (key, event, facts) = parse_event_info(&blob).map_err(|e| format!("{what}: {e}"))?;
        let facts_of = self.providers.entry(provider).or_default();
        if facts_of.name.is_empty() {
            facts_of.name = facts.name;
        }
        for (mask, name) in facts.keywords {
            facts_of.keywords.entry(mask).or_insert(name);
        }
        for (channel, name) in facts.channels {
            facts_of.channels.entry(channel).or_insert(name);
        }
        for (level, name) in facts.levels {
            facts_of.levels.entry(level).or_insert(name);
        }
        match self.events.get_mut(&key) {
            None => {
                self.events.insert(key, Some(event));
                Ok(())
            }
            Some(Some(known)) if known.fields == event.fields => Ok(()),
            Some(slot) => {
                *slot = None;
                Err(format!("{what}: described twice with different fields; neither is used"))
            }
        }
    }

    /// MetaData opcode 33 (EventMapInfo): provider GUID, then one EVENT_MAP_INFO.
    pub fn add_event_map_info(&mut self, payload: &[u8]) -> Result<(), String> {
        let provider = Blob { data: payload }.guid(0).map_err(|e| format!("EventMapInfo: {e}"))?;
        let blob = Blob { data: payload.get(16..).unwrap_or_default() };
        let map = parse_map(&blob).map_err(|e| format!("EventMapInfo of {provider}: {e}"))?;
        self.maps.entry((provider, map.name.clone())).or_insert_with(|| Arc::new(map));
        Ok(())
    }

    pub fn finish(self) -> SchemaSet {
        let providers: HashMap<Guid, Arc<ProviderInfo>> = self
            .providers
            .into_iter()
            .map(|(guid, facts)| {
                let info = ProviderInfo {
                    guid,
                    name: facts.name,
                    keywords: facts.keywords.into_iter().collect(),
                    channels: facts.channels,
                    levels: facts.levels,
                };
                (guid, Arc::new(info))
            })
            .collect();
        let mut set = SchemaSet::default();
        for (key, event) in self.events {
            let Some(mut event) = event else { continue };
            let provider = providers.get(&event.provider).cloned().unwrap_or_default();
            link_maps(&mut event.fields, event.provider, &self.maps);
            if let SchemaKey::Classic { class, .. } = key {
                // Classic events are looked up by their class, so is their provider.
                set.providers.insert(class, provider.clone());
            }
            let schema = EventSchema {
                provider,
                source: Source::EmbeddedEventInfo,
                name: event.name,
                task: event.task,
                opcode: event.opcode,
                message: event.message,
                fields: event.fields,
                declared: Default::default(),
            };
            set.events.insert(key, Arc::new(schema));
        }
        set.providers.extend(providers);
        set
    }
}

/// Replaces each field's name-only map with the provider's map of that
/// name, or drops it when the trace did not carry that map.
fn link_maps(fields: &mut [Field], provider: Guid, maps: &HashMap<(Guid, String), Arc<ValueMap>>) {
    for field in fields {
        if let Some(named) = field.map.take() {
            field.map = maps.get(&(provider, named.name.clone())).cloned();
        }
        link_maps(&mut field.members, provider, maps);
    }
}

fn parse_event_info(blob: &Blob<'_>) -> Result<(SchemaKey, PendingEvent, ProviderFacts), String> {
    let provider = blob.guid(0)?;
    let class = blob.guid(16)?;
    let id = blob.u16(32)?;
    let [version, channel, level, opcode] = blob.bytes::<4>(34)?;
    let keyword_mask = blob.u64(40)?;
    let decoding = match blob.u32(48)? {
        0 => Decoding::Manifest,
        1 => Decoding::Wbem,
        2 => return Err("WPP events are keyed by message GUID and number, not by EventInfo".into()),
        3 => Decoding::TraceLogging,
        other => return Err(format!("unknown decoding source {other}")),
    };
    let offset = |i: usize| blob.u32(52 + 4 * i);
    let provider_name = blob.name(offset(0)?)?;
    let level_name = blob.name(offset(1)?)?;
    let channel_name = blob.name(offset(2)?)?;
    let keywords = blob.string_list(offset(3)?)?;
    let task = blob.name(offset(4)?)?;
    let opcode_name = blob.name(offset(5)?)?;
    let message = blob.string_at(offset(6)?)?.map(|(s, _)| s.trim_end().to_string());
    blob.name(offset(7)?)?; // the provider's message: checked, not kept
    let (xml_at, xml_len) = (offset(8)? as usize, offset(9)? as usize);
    if xml_at.checked_add(xml_len).is_none_or(|end| end > blob.data.len()) {
        return Err(format!("binary XML ({xml_len} bytes at {xml_at}) runs past the {}-byte blob", blob.data.len()));
    }
    // The union holds the activity ID property's name for MOF events.
    let event_name = if decoding == Decoding::Wbem { None } else { blob.name(offset(10)?)? };
    let property_count = blob.u32(100)? as usize;
    let top_level = blob.u32(104)? as usize;
    let end = property_count
        .checked_mul(PROPERTY_SIZE)
        .and_then(|n| n.checked_add(EVENT_INFO_SIZE))
        .filter(|&end| end <= blob.data.len())
        .ok_or_else(|| format!("{property_count} properties run past the {}-byte blob", blob.data.len()))?;
    if top_level > property_count {
        return Err(format!("{top_level} top-level properties of {property_count}"));
    }
    let mut props = Vec::with_capacity(property_count);
    for at in (EVENT_INFO_SIZE..end).step_by(PROPERTY_SIZE) {
        let name = blob.name(blob.u32(at + 4)?)?.ok_or_else(|| format!("property {} has no name", props.len()))?;
        props.push(RawProperty {
            flags: blob.u32(at)?,
            name,
            in_type: blob.u16(at + 8)?,
            out_type: blob.u16(at + 10)?,
            map_offset: blob.u32(at + 12)?,
            count: blob.u16(at + 16)?,
            length: blob.u16(at + 18)?,
        });
    }
    let mut builder = FieldBuilder { blob, props: &props, used: vec![false; props.len()], decoding };
    let fields = builder.level(0..top_level, 0)?;

    let key = match decoding {
        Decoding::Wbem => SchemaKey::Classic { class, opcode, version },
        Decoding::Manifest | Decoding::TraceLogging => SchemaKey::Manifest { provider, id, version },
    };
    let opcode_name = match opcode_name {
        // Windows' own opcodes (win:Info, win:Start…) show by their standard names.
        Some(name) if name.starts_with("win:") => standard_opcode(opcode).map(str::to_string).or(Some(name)),
        Some(name) => Some(name),
        None => standard_opcode(opcode).map(str::to_string),
    };
    let task = match (task, decoding) {
        (None, Decoding::Wbem) => provider_name.clone(),
        (task, _) => task,
    };
    let mut facts = ProviderFacts { name: provider_name.unwrap_or_default(), ..ProviderFacts::default() };
    facts.keywords.extend(keyword_names(keyword_mask, keywords));
    if let Some(name) = channel_name.filter(|_| channel != 0) {
        facts.channels.insert(channel, name);
    }
    // Windows' own levels (win:Informational…) keep their standard names.
    if let Some(name) = level_name.filter(|n| !(n.starts_with("win:") && standard_level(level).is_some())) {
        facts.levels.insert(level, name);
    }
    let event = PendingEvent { provider, name: event_name, task, opcode: opcode_name, message, fields };
    Ok((key, event, facts))
}

fn parse_map(blob: &Blob<'_>) -> Result<ValueMap, String> {
    let name = blob.name(blob.u32(0)?)?.filter(|n| !n.is_empty()).ok_or("the map has no name")?;
    let flags = blob.u32(4)?;
    let count = blob.u32(8)? as usize;
    if flags & PATTERN_MAP != 0 {
        return Err(format!("map {name}: pattern maps are not supported"));
    }
    // MapEntryValueType 1: WBEM entries keyed by strings.
    if flags & WBEM_FLAGS != 0 && blob.u32(12)? == 1 {
        return Err(format!("map {name}: string-keyed maps are not supported"));
    }
    let end = count
        .checked_mul(8)
        .and_then(|n| n.checked_add(MAP_INFO_SIZE))
        .filter(|&end| end <= blob.data.len())
        .ok_or_else(|| format!("map {name}: {count} entries run past the {}-byte blob", blob.data.len()))?;
    let mut entries = Vec::with_capacity(count);
    for at in (MAP_INFO_SIZE..end).step_by(8) {
        let text =
            blob.name(blob.u32(at)?)?.ok_or_else(|| format!("map {name}: entry {} has no text", entries.len()))?;
        entries.push((u64::from(blob.u32(at + 4)?), text));
    }
    entries.sort_by_key(|(value, _)| *value);
    entries.dedup_by_key(|(value, _)| *value);
    Ok(ValueMap { name, bitmap: flags & BITMAP_FLAGS != 0, entries })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One EVENT_PROPERTY_INFO to write: flags, name, in-type (or struct
    /// start), out-type (or member count), map name, count, length.
    struct Prop(u32, &'static str, u16, u16, Option<&'static str>, u16, u16);

    /// Writes a TRACE_EVENT_INFO the way TDH lays it out: fixed part,
    /// properties, then the strings.
    fn event_info(decoding: u32, names: [Option<&str>; 7], keywords: &[&str], props: &[Prop]) -> Vec<u8> {
        let strings_at = EVENT_INFO_SIZE + PROPERTY_SIZE * props.len();
        let mut strings = Vec::new();
        let mut add = |s: &str| -> u32 {
            let at = (strings_at + strings.len()) as u32;
            strings.extend(s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
            at
        };
        let mut b = vec![0u8; EVENT_INFO_SIZE];
        b[0..16].copy_from_slice(&Guid::parse_const("11111111-2222-3333-4444-555555555555").to_bytes_le());
        b[16..32].copy_from_slice(&Guid::parse_const("66666666-7777-8888-9999-aaaaaaaaaaaa").to_bytes_le());
        b[32..34].copy_from_slice(&7u16.to_le_bytes()); // id
        b[34..38].copy_from_slice(&[2, 16, 4, 240]); // version, channel, level, opcode
        b[40..48].copy_from_slice(&0x8000_0000_0000_0005u64.to_le_bytes());
        b[48..52].copy_from_slice(&decoding.to_le_bytes());
        // provider, level, channel, task, opcode, message, event name
        for (slot, name) in [52, 56, 60, 68, 72, 76, 92].into_iter().zip(names) {
            let at = name.map_or(0, &mut add);
            b[slot..slot + 4].copy_from_slice(&at.to_le_bytes());
        }
        if !keywords.is_empty() {
            let first = add(keywords[0]);
            for k in &keywords[1..] {
                add(k);
            }
            add("");
            b[64..68].copy_from_slice(&first.to_le_bytes());
        }
        let top = props.iter().take_while(|p| !p.1.starts_with('.')).count();
        b[100..104].copy_from_slice(&(props.len() as u32).to_le_bytes());
        b[104..108].copy_from_slice(&(top as u32).to_le_bytes());
        for Prop(flags, name, a, o, map, count, length) in props {
            let mut p = [0u8; PROPERTY_SIZE];
            p[0..4].copy_from_slice(&flags.to_le_bytes());
            p[4..8].copy_from_slice(&add(name.trim_start_matches('.')).to_le_bytes());
            p[8..10].copy_from_slice(&a.to_le_bytes());
            p[10..12].copy_from_slice(&o.to_le_bytes());
            p[12..16].copy_from_slice(&map.map_or(0, &mut add).to_le_bytes());
            p[16..18].copy_from_slice(&count.to_le_bytes());
            p[18..20].copy_from_slice(&length.to_le_bytes());
            b.extend_from_slice(&p);
        }
        b.extend_from_slice(&strings);
        b
    }

    fn map_info(name: &str, flags: u32, entries: &[(u32, &str)]) -> Vec<u8> {
        let mut b = Guid::parse_const("11111111-2222-3333-4444-555555555555").to_bytes_le().to_vec();
        let strings_at = MAP_INFO_SIZE + 8 * entries.len();
        let mut strings = Vec::new();
        let mut add = |s: &str| -> u32 {
            let at = (strings_at + strings.len()) as u32;
            strings.extend(s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
            at
        };
        for v in [add(name), flags, entries.len() as u32, 0] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for (value, text) in entries {
            b.extend_from_slice(&add(text).to_le_bytes());
            b.extend_from_slice(&value.to_le_bytes());
        }
        b.extend_from_slice(&strings);
        b
    }

    const NAMES: [Option<&str>; 7] = [
        Some("Contoso-Net"),
        Some("win:Informational"),
        Some("Contoso-Net/Analytic"),
        Some("Connect"),
        Some("win:Receive"),
        Some("Peer %1 sent %3 "),
        Some("ConnectReceived"),
    ];

    /// Top level: Count, Peers[Count] of {Port, Size, Data[Size], Tags[2]}, Flags.
    fn connect_props() -> Vec<Prop> {
        vec![
            Prop(0, "Count", 8, 8, None, 1, 4),
            Prop(STRUCT | PARAM_COUNT, "Peers", 3, 4, None, 0, 0),
            Prop(0, "Flags", 8, 18, Some("FlagMap"), 1, 4),
            Prop(0, ".Port", 6, 22, None, 1, 2),
            Prop(0, ".Size", 6, 6, None, 1, 2),
            Prop(PARAM_LENGTH, ".Data", 14, 15, None, 1, 4),
            Prop(PARAM_FIXED_COUNT, ".Tags", 4, 0, Some("TagMap"), 2, 1),
        ]
    }

    #[test]
    fn structs_counts_lengths_names_and_maps() {
        let mut m = EmbeddedMetadata::new();
        m.add_event_info(&event_info(0, NAMES, &["Sends", "Receives"], &connect_props())).unwrap();
        m.add_event_map_info(&map_info("FlagMap", 2, &[(1, "Fast "), (4, "Secure ")])).unwrap();
        m.add_event_map_info(&map_info("TagMap", 1, &[(9, "Nine "), (2, "Two ")])).unwrap();
        let set = m.finish();
        let provider = Guid::parse_const("11111111-2222-3333-4444-555555555555");
        let s = &set.events[&SchemaKey::Manifest { provider, id: 7, version: 2 }];
        assert_eq!(s.source, Source::EmbeddedEventInfo);
        assert_eq!(s.provider.name, "Contoso-Net");
        assert_eq!(
            (s.name.as_deref(), s.task.as_deref(), s.opcode.as_deref()),
            (Some("ConnectReceived"), Some("Connect"), Some("Receive"))
        );
        assert_eq!(s.message.as_deref(), Some("Peer %1 sent %3"));
        // Bits 0 and 2 are named in order; the channel bit 63 is not.
        assert_eq!(s.provider.keywords, [(1, "Sends".to_string()), (4, "Receives".to_string())]);
        assert_eq!(s.provider.channel_name(16), Some("Contoso-Net/Analytic"));
        assert!(s.provider.levels.is_empty(), "win:Informational keeps its standard name");
        assert_eq!(set.providers[&provider].name, "Contoso-Net");

        let names: Vec<&str> = s.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["Count", "Peers", "Flags"]);
        let peers = &s.fields[1];
        assert_eq!((peers.in_type, peers.count), (InType::Struct, Some(Len::Field(0))));
        assert_eq!(peers.members.len(), 4);
        assert_eq!(peers.members[0].out_type, OutType::Port);
        assert_eq!(peers.members[0].length, None, "a fixed-size type's length says nothing");
        // Global property 4 is the struct's second member: local index 1.
        assert_eq!(peers.members[2].length, Some(Len::Field(1)));
        assert_eq!(peers.members[3].count, Some(Len::Fixed(2)));
        assert_eq!(peers.members[3].map.as_ref().unwrap().lookup(9).as_deref(), Some("Nine"));
        let flags = s.fields[2].map.as_ref().unwrap();
        assert!(flags.bitmap);
        assert_eq!(flags.lookup(5).as_deref(), Some("Fast|Secure"));

        // And the schema decodes a payload to its last byte.
        let mut payload = 2u32.to_le_bytes().to_vec();
        for (port, data) in [(80u16, &b"ab"[..]), (443, &b"xyz"[..])] {
            payload.extend_from_slice(&port.to_be_bytes());
            payload.extend_from_slice(&(data.len() as u16).to_le_bytes());
            payload.extend_from_slice(data);
            payload.extend_from_slice(&[9, 2]);
        }
        payload.extend_from_slice(&5u32.to_le_bytes());
        let mut out = Vec::new();
        assert_eq!(crate::payload::decode(&s.fields, &payload, 8, &mut out).unwrap(), payload.len());
        let crate::value::Value::Array(peers) = &out[1] else { panic!("{:?}", out[1]) };
        let crate::value::Value::Struct(second) = &peers[1] else { panic!("{:?}", peers[1]) };
        assert_eq!(second[2], crate::value::Value::Binary(b"xyz"));
    }

    #[test]
    fn mof_events_are_keyed_by_class_opcode_and_version() {
        let props = [Prop(0, "Size", 8, 0, None, 1, 4)];
        let mut m = EmbeddedMetadata::new();
        let mut names = NAMES;
        names[3] = None; // a MOF event without a task name takes the provider's
        m.add_event_info(&event_info(1, names, &[], &props)).unwrap();
        let set = m.finish();
        let class = Guid::parse_const("66666666-7777-8888-9999-aaaaaaaaaaaa");
        let s = &set.events[&SchemaKey::Classic { class, opcode: 240, version: 2 }];
        assert_eq!(s.task.as_deref(), Some("Contoso-Net"));
        assert_eq!(s.name, None, "the union holds the activity ID's name for MOF events");
        assert_eq!(set.providers[&class].name, "Contoso-Net");
        assert_eq!(set.events.len(), 1);
    }

    #[test]
    fn references_that_do_not_fit_the_model_are_errors() {
        // A struct member whose count is a top-level property.
        let mut props = connect_props();
        props[6] = Prop(PARAM_COUNT, ".Tags", 4, 0, None, 0, 1);
        let e = EmbeddedMetadata::new().add_event_info(&event_info(0, NAMES, &[], &props)).unwrap_err();
        assert!(e.contains("property 6 (Tags): its count is property 0"), "{e}");
        // A length that is a later property, and one that is a string.
        let later = [Prop(PARAM_LENGTH, "Data", 14, 0, None, 1, 1), Prop(0, "Size", 8, 0, None, 1, 4)];
        assert!(EmbeddedMetadata::new().add_event_info(&event_info(0, NAMES, &[], &later)).is_err());
        let text = [Prop(0, "Name", 1, 0, None, 1, 0), Prop(PARAM_LENGTH, "Data", 14, 0, None, 1, 0)];
        assert!(EmbeddedMetadata::new().add_event_info(&event_info(0, NAMES, &[], &text)).is_err());
        // A struct that contains itself, and one sharing members with another.
        let cycle = [Prop(STRUCT, "S", 0, 1, None, 1, 0)];
        assert!(
            EmbeddedMetadata::new().add_event_info(&event_info(0, NAMES, &[], &cycle)).unwrap_err().contains("two")
        );
        let shared =
            [Prop(STRUCT, "A", 2, 1, None, 1, 0), Prop(STRUCT, "B", 2, 1, None, 1, 0), Prop(0, ".X", 8, 0, None, 1, 4)];
        assert!(EmbeddedMetadata::new().add_event_info(&event_info(0, NAMES, &[], &shared)).is_err());
        // WPP and unknown in-types.
        assert!(EmbeddedMetadata::new().add_event_info(&event_info(2, NAMES, &[], &[])).is_err());
        let unknown = [Prop(0, "X", 99, 0, None, 1, 0)];
        assert!(EmbeddedMetadata::new().add_event_info(&event_info(0, NAMES, &[], &unknown)).is_err());
    }

    #[test]
    fn one_key_described_two_ways_is_dropped() {
        let mut m = EmbeddedMetadata::new();
        let a = event_info(0, NAMES, &[], &[Prop(0, "X", 8, 0, None, 1, 4)]);
        let b = event_info(0, NAMES, &[], &[Prop(0, "X", 10, 0, None, 1, 8)]);
        m.add_event_info(&a).unwrap();
        m.add_event_info(&a).unwrap();
        assert!(m.add_event_info(&b).is_err());
        assert!(m.add_event_info(&a).is_err());
        assert!(m.finish().events.is_empty());
    }

    #[test]
    fn keyword_names_pair_with_bits_from_the_lowest() {
        let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(keyword_names(0xa0, names(&["A", "B"])), [(0x20, "A".into()), (0x80, "B".into())]);
        assert_eq!(
            keyword_names(0xf000_0000_0040, names(&["T", "S3", "S2", "S1", "S0"]))[4],
            (0x8000_0000_0000, "S0".into())
        );
        assert!(keyword_names(0x3, names(&["Only"])).is_empty(), "which bit is it? no guess");
    }

    #[test]
    fn maps_keyed_by_pattern_or_string_are_refused() {
        assert!(EmbeddedMetadata::new().add_event_map_info(&map_info("P", 4, &[(1, "x")])).is_err());
        let mut string_keyed = map_info("W", 8, &[(1, "x")]);
        string_keyed[16 + 12] = 1;
        assert!(EmbeddedMetadata::new().add_event_map_info(&string_keyed).is_err());
    }

    #[test]
    fn every_truncation_is_an_error() {
        let blob = event_info(0, NAMES, &["Sends", "Receives"], &connect_props());
        for len in 0..blob.len() {
            assert!(EmbeddedMetadata::new().add_event_info(&blob[..len]).is_err(), "{len} bytes");
        }
        let map = map_info("FlagMap", 2, &[(1, "Fast "), (4, "Secure ")]);
        for len in 0..map.len() {
            assert!(EmbeddedMetadata::new().add_event_map_info(&map[..len]).is_err(), "{len} bytes");
        }
    }
}
