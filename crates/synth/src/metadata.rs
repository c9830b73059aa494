//! The metadata a WPR/xperf merge embeds so a trace decodes without the
//! providers' manifests: KernelTraceControl MetaData events, class
//! bbccf6c1-6cd1-48c4-80ff-839482e37671, opcode 32 (EventInfo: one
//! TRACE_EVENT_INFO) and opcode 33 (EventMapInfo: provider GUID + one
//! EVENT_MAP_INFO).
//!
//! Laid out as the merged traces of the corpus have them (perfview
//! net.4.5.2.x86, net.4.5.x86.PerfViewData, diaghub):
//! - TRACE_EVENT_INFO: the 112-byte fixed part, the EVENT_PROPERTY_INFO
//!   array, then UTF-16 strings with no padding: each property's name
//!   (followed by its map's name), provider, level, channel, keyword list
//!   (ended by an empty string), task, opcode, event message, provider
//!   message; the template's binary XML last, and the blob ends with it.
//!   Offsets count from the blob's start. Fixed-size properties carry
//!   their size as `length` (a pointer says 4), scalars a count of 1,
//!   out-types are explicit (TDH's defaults where the layout has none).
//! - The binary XML is the template the manifest compiler made: an
//!   `<EventData>` element with one `<Data Name="…">` per property holding
//!   an optional substitution, then the template's item descriptors and
//!   names as the provider's resource stores them (those offsets point
//!   into a resource that does not exist here; they are consistent).
//! - EVENT_MAP_INFO: 16 bytes, the entries, eight zero bytes, the map's
//!   name, the entries' texts; names and texts end in a space, as the
//!   message compiler writes them.

use std::fmt;
use std::sync::Arc;

use nettrail_decode::schema::{standard_level, standard_opcode};
use nettrail_decode::{Field, InType, Len, OutType, ValueMap};
use nettrail_etl::Guid;

use crate::catalog::EventLayout;

/// The event class of the merge's metadata events.
pub const METADATA_CLASS: Guid = Guid::parse_const("bbccf6c1-6cd1-48c4-80ff-839482e37671");
/// MetaData opcodes.
pub const EVENT_INFO: u8 = 32;
pub const EVENT_MAP_INFO: u8 = 33;

const FIXED_PART: usize = 112;
const PROPERTY_SIZE: usize = 24;
/// EVENT_PROPERTY_INFO flags.
const PARAM_LENGTH: u32 = 0x2;
const PARAM_COUNT: u32 = 0x4;
/// TRACE_EVENT_INFO flag: the template is `<EventData>`.
const TEMPLATE_EVENT_DATA: u32 = 0x1;
/// Template item flags (the compiled manifest's).
const ITEM_LENGTH_FROM: u32 = 0x4;
const ITEM_FIXED_COUNT: u32 = 0x8;
const ITEM_COUNT_FROM: u32 = 0x10;

/// A layout TRACE_EVENT_INFO cannot describe.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetadataError {
    pub field: String,
    pub why: String,
}

impl fmt::Display for MetadataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field {:?} cannot be described in TRACE_EVENT_INFO: {}", self.field, self.why)
    }
}

impl std::error::Error for MetadataError {}

/// TDH_INTYPE of an in-type.
pub fn tdh_in_type(t: InType) -> u16 {
    use InType::*;
    match t {
        Null => 0,
        UnicodeString => 1,
        AnsiString => 2,
        Int8 => 3,
        UInt8 => 4,
        Int16 => 5,
        UInt16 => 6,
        Int32 => 7,
        UInt32 => 8,
        Int64 => 9,
        UInt64 => 10,
        Float => 11,
        Double => 12,
        Boolean => 13,
        Binary => 14,
        Guid => 15,
        Pointer => 16,
        FileTime => 17,
        SystemTime => 18,
        Sid => 19,
        HexInt32 => 20,
        HexInt64 => 21,
        CountedString => 22,
        CountedAnsiString => 23,
        Struct => 24,
        CountedBinary => 25,
        WbemCountedString => 300,
        WbemCountedAnsiString => 301,
        ReversedCountedString => 302,
        ReversedCountedAnsiString => 303,
        NonNullTerminatedString => 304,
        NonNullTerminatedAnsiString => 305,
        UnicodeChar => 306,
        AnsiChar => 307,
        SizeT => 308,
        HexDump => 309,
        WbemSid => 310,
    }
}

/// TDH_OUTTYPE of an out-type; `Default` becomes what TDH reports for the
/// in-type (the real blobs never hold 0).
pub fn tdh_out_type(out: OutType, in_type: InType) -> u16 {
    use OutType::*;
    match out {
        Default => default_out_type(in_type),
        String => 1,
        DateTime => 2,
        Byte => 3,
        UnsignedByte => 4,
        Short => 5,
        UnsignedShort => 6,
        Int => 7,
        UnsignedInt => 8,
        Long => 9,
        UnsignedLong => 10,
        Float => 11,
        Double => 12,
        Boolean => 13,
        Guid => 14,
        HexBinary => 15,
        HexInt8 => 16,
        HexInt16 => 17,
        HexInt32 => 18,
        HexInt64 => 19,
        Pid => 20,
        Tid => 21,
        Port => 22,
        Ipv4 => 23,
        Ipv6 => 24,
        SocketAddress => 25,
        CimDateTime => 26,
        EtwTime => 27,
        Xml => 28,
        ErrorCode => 29,
        Win32Error => 30,
        NtStatus => 31,
        HResult => 32,
        CultureInsensitiveDateTime => 33,
        Json => 34,
        Utf8 => 35,
        Pkcs7WithTypeInfo => 36,
        CodePointer => 37,
        DateTimeUtc => 38,
        NoPrint => 301,
    }
}

/// winmeta.xml's default out-type of each in-type, as TDH fills it in.
fn default_out_type(t: InType) -> u16 {
    use InType::*;
    match t {
        UnicodeString | AnsiString | CountedString | CountedAnsiString | Sid => 1,
        Int8 => 3,
        UInt8 => 4,
        Int16 => 5,
        UInt16 => 6,
        Int32 => 7,
        UInt32 => 8,
        Int64 => 9,
        UInt64 => 10,
        Float => 11,
        Double => 12,
        Boolean => 13,
        Guid => 14,
        Binary | CountedBinary => 15,
        HexInt32 => 18,
        Pointer | HexInt64 => 19,
        FileTime | SystemTime => 2,
        _ => 0,
    }
}

/// Strings appended after a blob's fixed part, recording their offsets.
struct Strings {
    base: usize,
    bytes: Vec<u8>,
}

impl Strings {
    fn add(&mut self, s: &str) -> u32 {
        let at = (self.base + self.bytes.len()) as u32;
        self.bytes.extend(s.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
        at
    }
}

/// The message compiler's names of Windows' own levels and opcodes.
fn win_level(level: u8) -> Option<String> {
    let name = match level {
        0 => "LogAlways",
        4 => "Informational",
        _ => standard_level(level)?,
    };
    Some(format!("win:{name}"))
}

/// One property as the blob and the template describe it.
struct Property<'a> {
    field: &'a Field,
    flags: u32,
    in_type: u16,
    out_type: u16,
    count: u16,
    length: u16,
    item_flags: u32,
    item_count: u16,
    item_length: u16,
}

fn property(field: &Field) -> Result<Property<'_>, MetadataError> {
    let fail = |why: &str| MetadataError { field: field.name.clone(), why: why.to_string() };
    let small = |n: u32| u16::try_from(n).map_err(|_| fail("a length or count above 65535"));
    let index = |i: usize| u16::try_from(i).map_err(|_| fail("a property index above 65535"));
    let in_type = tdh_in_type(field.in_type);
    if field.in_type == InType::Struct || in_type > 255 {
        return Err(fail("manifest templates have no such in-type"));
    }
    let mut p = Property {
        field,
        flags: 0,
        in_type,
        out_type: tdh_out_type(field.out_type, field.in_type),
        count: 1,
        length: 0,
        item_flags: 0,
        item_count: 0,
        item_length: 0,
    };
    match field.count {
        None => {}
        Some(Len::Fixed(n)) => {
            (p.count, p.item_count, p.item_flags) = (small(n)?, small(n)?, ITEM_FIXED_COUNT);
        }
        Some(Len::Field(i)) => {
            (p.count, p.item_count) = (index(i)?, index(i)?);
            p.flags |= PARAM_COUNT;
            p.item_flags |= ITEM_COUNT_FROM;
        }
        Some(Len::Prefixed | Len::Remaining) => return Err(fail("its element count is not a number or a field")),
    }
    match field.length {
        None => {
            // TDH states the size of fixed-size types; a pointer says 4 in
            // every real blob, whatever the event's width.
            p.length = field.in_type.fixed_size(4).map_or(0, |n| n as u16);
        }
        Some(Len::Fixed(n)) => (p.length, p.item_length) = (small(n)?, small(n)?),
        Some(Len::Field(i)) => {
            (p.length, p.item_length) = (index(i)?, index(i)?);
            p.flags |= PARAM_LENGTH;
            p.item_flags |= ITEM_LENGTH_FROM;
        }
        Some(Len::Prefixed | Len::Remaining) => return Err(fail("its length is not a number or a field")),
    }
    Ok(p)
}

/// The maps an event's fields use, once each, in field order.
pub fn maps_of(fields: &[Field]) -> Vec<Arc<ValueMap>> {
    let mut maps: Vec<Arc<ValueMap>> = Vec::new();
    for map in fields.iter().filter_map(|f| f.map.as_ref()) {
        if !maps.iter().any(|m| m.name == map.name) {
            maps.push(map.clone());
        }
    }
    maps
}

/// The TRACE_EVENT_INFO blob (the EventInfo payload) of a manifest event.
pub fn event_info(layout: &EventLayout) -> Result<Vec<u8>, MetadataError> {
    let fields = &layout.schema.fields;
    let props: Vec<Property<'_>> = fields.iter().map(property).collect::<Result<_, _>>()?;
    let provider = &layout.provider;
    let d = &layout.descriptor;
    let mut s = Strings { base: FIXED_PART + PROPERTY_SIZE * props.len(), bytes: Vec::new() };
    let mut property_bytes = Vec::with_capacity(PROPERTY_SIZE * props.len());
    for p in &props {
        let name = s.add(&p.field.name);
        let map = p.field.map.as_ref().map_or(0, |m| s.add(&m.name));
        property_bytes.extend_from_slice(&p.flags.to_le_bytes());
        property_bytes.extend_from_slice(&name.to_le_bytes());
        property_bytes.extend_from_slice(&p.in_type.to_le_bytes());
        property_bytes.extend_from_slice(&p.out_type.to_le_bytes());
        property_bytes.extend_from_slice(&map.to_le_bytes());
        property_bytes.extend_from_slice(&p.count.to_le_bytes());
        property_bytes.extend_from_slice(&p.length.to_le_bytes());
        property_bytes.extend_from_slice(&0u32.to_le_bytes());
    }
    let provider_name = s.add(&provider.name);
    let level_name = provider.levels.get(&d.level).cloned().or_else(|| win_level(d.level)).map_or(0, |n| s.add(&n));
    let channel_name = match d.channel {
        0 => 0,
        c => s.add(&provider.channels.get(&c).cloned().unwrap_or_else(|| format!("{}/Analytic", provider.name))),
    };
    let mut keyword_names: Vec<&(u64, String)> =
        provider.keywords.iter().filter(|(mask, _)| *mask != 0 && d.keywords & mask == *mask).collect();
    keyword_names.sort_by_key(|(mask, _)| *mask);
    let keywords = match keyword_names.split_first() {
        None => 0,
        Some((first, rest)) => {
            let at = s.add(&first.1);
            rest.iter().for_each(|(_, n)| {
                s.add(n);
            });
            s.add("");
            at
        }
    };
    let task = layout.schema.task.as_deref().filter(|_| d.task != 0).map_or(0, |t| s.add(t));
    let opcode_name = match (layout.schema.opcode.as_deref(), standard_opcode(d.opcode)) {
        (Some(name), Some(std)) if name == std => Some(format!("win:{std}")),
        (None, Some(std)) => Some(format!("win:{std}")),
        (name, _) => name.map(str::to_string),
    };
    let opcode = opcode_name.map_or(0, |n| s.add(&n));
    let message = layout.schema.message.as_deref().map_or(0, |m| s.add(&format!("{m} ")));
    let provider_message = s.add(&format!("{} ", provider.name));
    let event_name = layout.schema.name.as_deref().map_or(0, |n| s.add(n));
    let xml_at = s.base + s.bytes.len();
    let xml = if props.is_empty() { Vec::new() } else { template(layout, &props) };

    let mut b = Vec::with_capacity(xml_at + xml.len());
    b.extend_from_slice(&provider.guid.to_bytes_le());
    b.extend_from_slice(&Guid::ZERO.to_bytes_le());
    b.extend_from_slice(&d.id.to_le_bytes());
    b.extend_from_slice(&[d.version, d.channel, d.level, d.opcode]);
    b.extend_from_slice(&d.task.to_le_bytes());
    b.extend_from_slice(&d.keywords.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // DecodingSource: XML manifest
    let (xml_offset, xml_size) = if xml.is_empty() { (0, 0) } else { (xml_at as u32, xml.len() as u32) };
    for offset in [
        provider_name,
        level_name,
        channel_name,
        keywords,
        task,
        opcode,
        message,
        provider_message,
        xml_offset,
        xml_size,
        event_name,
        0, // EventAttributesOffset
        props.len() as u32,
        props.len() as u32, // every property is top-level
        if props.is_empty() { 0 } else { TEMPLATE_EVENT_DATA },
    ] {
        b.extend_from_slice(&offset.to_le_bytes());
    }
    debug_assert_eq!(b.len(), FIXED_PART);
    b.extend_from_slice(&property_bytes);
    b.extend_from_slice(&s.bytes);
    b.extend_from_slice(&xml);
    Ok(b)
}

/// The binary-XML name hash of the Windows event log (×65599 per UTF-16 unit, low 16 bits).
fn name_hash(name: &str) -> u16 {
    name.encode_utf16().fold(0u32, |h, c| h.wrapping_mul(65599).wrapping_add(u32::from(c))) as u16
}

/// A binary-XML name: hash, character count, the characters, a NUL.
fn xml_name(out: &mut Vec<u8>, name: &str) {
    out.extend_from_slice(&name_hash(name).to_le_bytes());
    out.extend_from_slice(&(name.encode_utf16().count() as u16).to_le_bytes());
    out.extend(name.encode_utf16().chain([0]).flat_map(u16::to_le_bytes));
}

/// Binary-XML tokens.
const FRAGMENT_HEADER: [u8; 4] = [0x0F, 0x01, 0x01, 0x00];
const OPEN_START_ELEMENT: u8 = 0x01;
const HAS_ATTRIBUTES: u8 = 0x40;
const CLOSE_START_ELEMENT: u8 = 0x02;
const END_ELEMENT: u8 = 0x04;
const VALUE_TEXT: u8 = 0x05;
const LAST_ATTRIBUTE: u8 = 0x06;
const OPTIONAL_SUBSTITUTION: u8 = 0x0D;
const END_OF_FRAGMENT: u8 = 0x00;
const STRING_VALUE: u8 = 0x01;
const ARRAY_VALUE: u8 = 0x80;

/// An element: `<name attribute="value">content</name>` (attribute optional).
fn xml_element(out: &mut Vec<u8>, name: &str, attribute: Option<(&str, &str)>, content: &[u8]) {
    out.push(OPEN_START_ELEMENT | if attribute.is_some() { HAS_ATTRIBUTES } else { 0 });
    out.extend_from_slice(&0xFFFFu16.to_le_bytes()); // dependency id: none
    let size_at = out.len();
    out.extend_from_slice(&[0; 4]);
    xml_name(out, name);
    if let Some((attr, value)) = attribute {
        let mut a = vec![LAST_ATTRIBUTE];
        xml_name(&mut a, attr);
        a.extend_from_slice(&[VALUE_TEXT, STRING_VALUE]);
        a.extend_from_slice(&(value.encode_utf16().count() as u16).to_le_bytes());
        a.extend(value.encode_utf16().flat_map(u16::to_le_bytes));
        out.extend_from_slice(&(a.len() as u32).to_le_bytes());
        out.extend_from_slice(&a);
    }
    out.push(CLOSE_START_ELEMENT);
    out.extend_from_slice(content);
    out.push(END_ELEMENT);
    let size = (out.len() - size_at - 4) as u32;
    out[size_at..size_at + 4].copy_from_slice(&size.to_le_bytes());
}

/// Where the (imaginary) WEVT_TEMPLATE resource keeps an event's template,
/// and a map: distinct per event and map, stable across runs.
fn resource_offset(id: u16, version: u8) -> u32 {
    0x1000 + 0x800 * u32::from(id % 0x1000) + 0x100 * u32::from(version % 8)
}

fn map_resource_offset(name: &str) -> u32 {
    0x200 + 4 * u32::from(name_hash(name) % 0x400)
}

/// The template's binary XML, then its item descriptors and item names.
fn template(layout: &EventLayout, props: &[Property<'_>]) -> Vec<u8> {
    let mut content = Vec::new();
    for (i, p) in props.iter().enumerate() {
        let mut substitution = vec![OPTIONAL_SUBSTITUTION];
        substitution.extend_from_slice(&(i as u16).to_le_bytes());
        substitution.push(p.in_type as u8 | if p.field.count.is_some() { ARRAY_VALUE } else { 0 });
        xml_element(&mut content, "Data", Some(("Name", &p.field.name)), &substitution);
    }
    let mut x = FRAGMENT_HEADER.to_vec();
    xml_element(&mut x, "EventData", None, &content);
    x.push(END_OF_FRAGMENT);
    x.resize(x.len().next_multiple_of(4), 0);
    // The template block's header (40 bytes) precedes the fragment in the resource.
    let items_at = resource_offset(layout.id, layout.version) + 40 + x.len() as u32;
    let mut name_at = items_at + 20 * props.len() as u32;
    let mut names = Vec::new();
    for p in props {
        x.extend_from_slice(&p.item_flags.to_le_bytes());
        x.extend_from_slice(&[p.in_type as u8, p.out_type as u8, 0, 0]);
        x.extend_from_slice(&p.field.map.as_ref().map_or(0, |m| map_resource_offset(&m.name)).to_le_bytes());
        x.extend_from_slice(&p.item_count.to_le_bytes());
        x.extend_from_slice(&p.item_length.to_le_bytes());
        x.extend_from_slice(&name_at.to_le_bytes());
        let text: Vec<u8> = p.field.name.encode_utf16().chain([0]).flat_map(u16::to_le_bytes).collect();
        let size = (4 + text.len()).next_multiple_of(4);
        names.extend_from_slice(&(size as u32).to_le_bytes());
        names.extend_from_slice(&text);
        names.resize(names.len() + size - 4 - text.len(), 0);
        name_at += size as u32;
    }
    x.extend_from_slice(&names);
    x
}

/// The EventMapInfo payload: provider GUID, then the EVENT_MAP_INFO.
pub fn event_map_info(provider: Guid, map: &ValueMap) -> Result<Vec<u8>, MetadataError> {
    let fail = |why: String| MetadataError { field: map.name.clone(), why };
    let count = map.entries.len();
    let mut s = Strings { base: 16 + 8 * count + 8, bytes: Vec::new() };
    let name = s.add(&map.name);
    let mut entries = Vec::with_capacity(8 * count);
    for (value, text) in &map.entries {
        let value = u32::try_from(*value).map_err(|_| fail(format!("map value {value} does not fit 32 bits")))?;
        entries.extend_from_slice(&s.add(&format!("{text} ")).to_le_bytes());
        entries.extend_from_slice(&value.to_le_bytes());
    }
    let mut b = provider.to_bytes_le().to_vec();
    b.extend_from_slice(&name.to_le_bytes());
    b.extend_from_slice(&(if map.bitmap { 2u32 } else { 1 }).to_le_bytes()); // MANIFEST_BITMAP / VALUEMAP
    b.extend_from_slice(&(count as u32).to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes()); // entry values are ULONGs
    b.extend_from_slice(&entries);
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&s.bytes);
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_match_the_event_log_names() {
        // As the real templates store them.
        assert_eq!(name_hash("EventData"), 0x8244);
        assert_eq!(name_hash("Data"), 0x6F8A);
        assert_eq!(name_hash("Name"), 0x954B);
    }
}
