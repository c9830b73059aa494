//! nettrail's event-layout files (`schemas/**/*.events`): a compact, line-based
//! statement of what a provider's events hold, one file per provider or
//! kernel event class.
//!
//! ```text
//! # a comment
//! provider Microsoft-Windows-Kernel-Network 7dd42a49-5329-4832-8dfd-43d979153a88
//! channel 16 Microsoft-Windows-Kernel-Network/Analytic
//! keyword 0x10 KERNEL_NETWORK_KEYWORD_IPV4
//! task 10 KERNEL_NETWORK_TASK_TCPIP
//! opcode 10 KERNEL_NETWORK_OPCODE_SEND "Data sent."
//! map TCPIP_STATE value
//!   0 "Closed"
//! event 10 v0 name=KNetEvt_SendIPV4 task=10 opcode=10 level=4 keywords=0x10 channel=16 "TCPv4: %2 bytes …"
//!   PID UInt32
//!   daddr UInt32 IPv4
//!   Name UnicodeString len=@NameLength
//!   "IPv4 Address" Binary len=4
//!
//! kernel Process 3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c
//! event 1,2,3,4 v3-4 Start,End,DCStart,DCEnd
//!   UniqueProcessKey Pointer
//! ```
//!
//! `provider` files key events by (GUID, id, version); `kernel` files by
//! (event class GUID, opcode, version), as classic and kernel events are.
//! Where Windows builds lay one id and version out differently, each layout
//! says which builds it is for: `builds=19041-26099` (inclusive; either end
//! may be open, `builds=26100-`); the decoder picks by the trace's build.
//! Field lines are indented and list the payload in wire order: name, TDH
//! in-type, optional out-type, then `len=`/`count=` (a number or `@field`)
//! and `map=`. `count=*` repeats a field to the end of the payload.

use crate::fasthash::FastMap;
use std::borrow::Cow;
use std::sync::Arc;

use nettrail_etl::Guid;

use crate::intype::{InType, OutType};
use crate::schema::{Declared, EventSchema, Field, Len, ProviderInfo, SchemaKey, Source, ValueMap, standard_opcode};

/// An error in a layout file, with its line number.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LayoutError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// Splits a line into words at ASCII white space; double quotes group words
/// (with `\"` inside). One pass over the bytes for the words that are their
/// own text (bare, or quoted without escapes): layout files are read when a
/// trace first needs their provider, so this is start-up time.
fn words(line: &str) -> Result<Vec<Cow<'_, str>>, String> {
    let bytes = line.as_bytes();
    let mut out = Vec::with_capacity(8);
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        while i < bytes.len() && !bytes[i].is_ascii_whitespace() && !matches!(bytes[i], b'"' | b'\\') {
            i += 1;
        }
        if bytes.get(i).is_none_or(u8::is_ascii_whitespace) {
            out.push(Cow::Borrowed(&line[start..i]));
            continue;
        }
        if i == start && bytes[i] == b'"' {
            let close = bytes[i + 1..].iter().position(|&b| b == b'"' || b == b'\\').map(|at| i + 1 + at);
            if let Some(close) = close
                && bytes[close] == b'"'
                && bytes.get(close + 1).is_none_or(u8::is_ascii_whitespace)
            {
                out.push(Cow::Borrowed(&line[i + 1..close]));
                i = close + 1;
                continue;
            }
        }
        let (word, taken) = unquote(&line[start..])?;
        out.push(Cow::Owned(word));
        i = start + taken;
    }
    Ok(out)
}

/// The word `text` starts with, its quotes removed and escapes replaced, and
/// the bytes it takes.
fn unquote(text: &str) -> Result<(String, usize), String> {
    let mut word = String::new();
    let mut quoted = false;
    let mut chars = text.char_indices().peekable();
    let mut taken = text.len();
    while let Some(&(at, c)) = chars.peek() {
        if c == '"' {
            quoted = !quoted;
            chars.next();
        } else if c == '\\' && quoted {
            chars.next();
            match chars.next() {
                Some((_, 'n')) => word.push('\n'),
                Some((_, 't')) => word.push('\t'),
                Some((_, other)) => word.push(other),
                None => return Err("line ends after a backslash".into()),
            }
        } else if c.is_ascii_whitespace() && !quoted {
            taken = at;
            break;
        } else {
            word.push(c);
            chars.next();
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    Ok((word, taken))
}

fn number(s: &str) -> Result<u64, String> {
    let parsed = match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => s.parse(),
    };
    parsed.map_err(|_| format!("expected a number, found {s:?}"))
}

fn small<T: TryFrom<u64>>(s: &str) -> Result<T, String> {
    T::try_from(number(s)?).map_err(|_| format!("{s} is out of range"))
}

/// The Windows builds a layout is for (inclusive; `None`: open end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Builds {
    pub from: Option<u32>,
    pub to: Option<u32>,
}

impl Builds {
    pub fn contains(&self, build: u32) -> bool {
        self.from.is_none_or(|f| build >= f) && self.to.is_none_or(|t| build <= t)
    }
}

impl std::fmt::Display for Builds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let end = |b: Option<u32>| b.map(|b| b.to_string()).unwrap_or_default();
        write!(f, "{}-{}", end(self.from), end(self.to))
    }
}

/// An event statement's line, read before its field lines.
struct EventLine {
    keys: Vec<(SchemaKey, Option<String>)>,
    builds: Option<Builds>,
    origin: Option<String>,
    name: Option<String>,
    /// The descriptor values the line states (task and opcode also name the event).
    declared: Declared,
    message: Option<String>,
}

struct Names {
    tasks: FastMap<u16, String>,
    opcodes: FastMap<(Option<u16>, u8), String>,
}

/// Everything one layout file declares.
#[derive(Debug, Default)]
pub struct LayoutFile {
    pub provider: Arc<ProviderInfo>,
    /// Layouts for every build.
    pub events: Vec<(SchemaKey, Arc<EventSchema>)>,
    /// Layouts for some builds only (`builds=`).
    pub by_build: Vec<(SchemaKey, Builds, Arc<EventSchema>)>,
    /// Where each layout came from, as the comment before it says
    /// (`# builds …: file`): for `nettrail providers`.
    pub origins: Vec<(SchemaKey, Option<Builds>, String)>,
}

/// Parses one layout file; `source` is recorded on every schema.
pub fn parse(text: &str, source: Source) -> Result<LayoutFile, LayoutError> {
    let outline = Outline::parse(text, source)?;
    let mut events = Vec::new();
    let mut by_build = Vec::new();
    let mut origins = Vec::new();
    for (i, event) in outline.events.iter().enumerate() {
        let schemas = outline.layouts(i)?;
        for ((key, _), schema) in event.line.keys.iter().zip(schemas) {
            if let Some(origin) = &event.line.origin {
                origins.push((*key, event.line.builds, origin.clone()));
            }
            match event.line.builds {
                Some(builds) => by_build.push((*key, builds, schema)),
                None => events.push((*key, schema)),
            }
        }
    }
    Ok(LayoutFile { provider: outline.provider, events, by_build, origins })
}

/// A layout file read but for its events' field lines, which are parsed
/// per event when asked for ([`Outline::layouts`]). A trace needs a few
/// events of a provider, and its layout file may hold hundreds: parsing
/// every field of a large provider's file took as long as `info` on a small
/// trace.
pub struct Outline<'t> {
    text: &'t str,
    provider: Arc<ProviderInfo>,
    classic: Option<Guid>,
    source: Source,
    maps: FastMap<String, Arc<ValueMap>>,
    names: Names,
    events: Vec<OutlinedEvent>,
}

impl std::fmt::Debug for Outline<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outline").field("provider", &self.provider.name).field("events", &self.events.len()).finish()
    }
}

struct OutlinedEvent {
    line: EventLine,
    /// Line number of the event statement.
    line_no: usize,
    /// Byte range of its field lines in the text (comments among them included).
    fields: std::ops::Range<usize>,
}

impl<'t> Outline<'t> {
    /// Reads every statement but the events' field lines; fails on the
    /// first malformed statement read.
    pub fn parse(text: &'t str, source: Source) -> Result<Outline<'t>, LayoutError> {
        let mut provider = ProviderInfo::default();
        let mut classic: Option<Guid> = None;
        let mut maps: FastMap<String, Arc<ValueMap>> = FastMap::default();
        let mut open_map: Option<ValueMap> = None;
        let mut names = Names { tasks: FastMap::default(), opcodes: FastMap::default() };
        let mut events: Vec<OutlinedEvent> = Vec::new();
        let mut seen_provider = false;
        // The `# builds …` comment of the event that follows it.
        let mut origin: Option<String> = None;
        let mut end = 0;
        for (i, raw) in text.split_inclusive('\n').enumerate() {
            end += raw.len();
            let line_no = i + 1;
            let fail = |message: String| LayoutError { line: line_no, message };
            let trimmed = raw.trim_ascii();
            if let Some(comment) = trimmed.strip_prefix("# builds ").filter(|_| !raw.starts_with(' ')) {
                origin = Some(format!("builds {comment}"));
            }
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indented = raw.starts_with(' ') || raw.starts_with('\t');
            if indented && open_map.is_none() {
                let event = events.last_mut().ok_or_else(|| fail("a field line before any event".into()))?;
                event.fields.end = end;
                continue;
            }
            let w = words(trimmed).map_err(fail)?;
            if indented {
                if let Some(map) = open_map.as_mut() {
                    let [value, text] = w.as_slice() else {
                        return Err(fail("a map entry is a value and a quoted text".into()));
                    };
                    map.entries.push((number(value).map_err(fail)?, text.to_string()));
                }
                continue;
            }
            if let Some(mut map) = open_map.take() {
                map.entries.sort_by_key(|(v, _)| *v);
                maps.insert(map.name.clone(), Arc::new(map));
            }
            let arg = |k: usize| w.get(k).map(|s| s.as_ref()).ok_or_else(|| fail(format!("{} needs more words", w[0])));
            match w[0].as_ref() {
                "provider" | "kernel" => {
                    if seen_provider {
                        return Err(fail("one provider or kernel class per file".into()));
                    }
                    seen_provider = true;
                    provider.name = arg(1)?.to_string();
                    provider.guid = arg(2)?.parse().map_err(|e| fail(format!("{e}")))?;
                    if w[0] == "kernel" {
                        classic = Some(provider.guid);
                    }
                }
                "channel" => {
                    provider.channels.insert(small(arg(1)?).map_err(fail)?, arg(2)?.to_string());
                }
                "level" => {
                    provider.levels.insert(small(arg(1)?).map_err(fail)?, arg(2)?.to_string());
                }
                "keyword" => provider.keywords.push((number(arg(1)?).map_err(fail)?, arg(2)?.to_string())),
                "task" => {
                    // A task shows as its message where it has one.
                    let shown = w.get(3).unwrap_or(&w[2]).to_string();
                    names.tasks.insert(small(arg(1)?).map_err(fail)?, shown);
                }
                "opcode" => {
                    let (task, value) = match arg(1)?.split_once(':') {
                        Some((t, v)) => (Some(small(t).map_err(fail)?), small(v).map_err(fail)?),
                        None => (None, small(arg(1)?).map_err(fail)?),
                    };
                    let shown = w.get(3).unwrap_or(&w[2]).to_string();
                    names.opcodes.insert((task, value), shown);
                }
                "map" => {
                    let bitmap = match arg(2)? {
                        "value" => false,
                        "bitmap" => true,
                        other => return Err(fail(format!("map kind is value or bitmap, not {other}"))),
                    };
                    open_map = Some(ValueMap { name: arg(1)?.to_string(), bitmap, entries: Vec::new() });
                }
                "event" => {
                    if !seen_provider {
                        return Err(fail("an event before the provider line".into()));
                    }
                    let mut line = parse_event(&w, &provider, classic).map_err(fail)?;
                    line.origin = origin.take();
                    events.push(OutlinedEvent { line, line_no, fields: end..end });
                }
                other => return Err(fail(format!("unknown statement {other:?}"))),
            }
        }
        if let Some(mut map) = open_map.take() {
            map.entries.sort_by_key(|(v, _)| *v);
            maps.insert(map.name.clone(), Arc::new(map));
        }
        Ok(Outline { text, provider: Arc::new(provider), classic, source, maps, names, events })
    }

    pub fn provider(&self) -> &Arc<ProviderInfo> {
        &self.provider
    }

    /// How many event statements the file has.
    pub fn event_count(&self) -> usize {
        self.events.len()
    }

    /// The keys an event statement declares, in order, and the builds it is for.
    pub fn event_keys(&self, event: usize) -> (impl Iterator<Item = SchemaKey> + '_, Option<Builds>) {
        let line = self.events.get(event).map(|e| &e.line);
        (line.into_iter().flat_map(|l| l.keys.iter().map(|(key, _)| *key)), line.and_then(|l| l.builds))
    }

    /// An event statement's layouts, one per key it declares
    /// ([`Outline::event_keys`]), its field lines parsed now.
    pub fn layouts(&self, event: usize) -> Result<Vec<Arc<EventSchema>>, LayoutError> {
        let Some(OutlinedEvent { line: event, line_no, fields }) = self.events.get(event) else {
            return Ok(Vec::new());
        };
        let mut pending = Vec::new();
        for (i, raw) in self.text[fields.clone()].lines().enumerate() {
            let trimmed = raw.trim_ascii();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let fail = |message: String| LayoutError { line: line_no + 1 + i, message };
            let w = words(trimmed).map_err(fail)?;
            pending.push(parse_field(&w, &self.maps).map_err(fail)?);
        }
        let fields = resolve(pending).map_err(|message| LayoutError { line: *line_no, message })?;
        let provider = &self.provider;
        let task = event.declared.task.and_then(|t| self.names.tasks.get(&t).cloned());
        let schemas = event.keys.iter().map(|(_, opcode_name)| {
            let opcode = match (opcode_name, event.declared.opcode) {
                (Some(name), _) => Some(name.clone()),
                (None, Some(op)) => self
                    .names
                    .opcodes
                    .get(&(event.declared.task, op))
                    .or_else(|| self.names.opcodes.get(&(None, op)))
                    .cloned()
                    .or_else(|| standard_opcode(op).map(str::to_string)),
                (None, None) => None,
            };
            Arc::new(EventSchema {
                provider: provider.clone(),
                source: self.source,
                name: event.name.clone(),
                task: task.clone().or_else(|| self.classic.map(|_| provider.name.clone())),
                opcode,
                message: event.message.clone(),
                fields: fields.clone(),
                declared: event.declared,
            })
        });
        Ok(schemas.collect())
    }
}

fn version_range(w: &str) -> Result<std::ops::RangeInclusive<u8>, String> {
    let v = w.strip_prefix('v').ok_or_else(|| format!("expected a version like v2 or v0-3, found {w:?}"))?;
    Ok(match v.split_once('-') {
        Some((a, b)) => small(a)?..=small(b)?,
        None => {
            let x = small(v)?;
            x..=x
        }
    })
}

fn parse_event(w: &[Cow<'_, str>], provider: &ProviderInfo, classic: Option<Guid>) -> Result<EventLine, String> {
    let ids = w.get(1).ok_or("event needs an id")?;
    let versions = version_range(w.get(2).ok_or("event needs a version")?)?;
    let mut event = EventLine {
        keys: Vec::new(),
        builds: None,
        origin: None,
        name: None,
        declared: Declared::default(),
        message: None,
    };
    let mut opcode_names: Vec<String> = Vec::new();
    for word in w.iter().skip(3) {
        match word.split_once('=') {
            Some(("name", v)) => event.name = Some(v.to_string()),
            Some(("task", v)) => event.declared.task = Some(small(v)?),
            Some(("opcode", v)) => event.declared.opcode = Some(small(v)?),
            Some(("level", v)) => event.declared.level = Some(small(v)?),
            Some(("keywords", v)) => event.declared.keywords = Some(number(v)?),
            Some(("channel", v)) => event.declared.channel = Some(small(v)?),
            Some(("builds", v)) => {
                let (from, to) = v.split_once('-').ok_or_else(|| format!("builds={v}: expected FROM-TO"))?;
                let end = |b: &str| if b.is_empty() { Ok(None) } else { small(b).map(Some) };
                event.builds = Some(Builds { from: end(from)?, to: end(to)? });
            }
            _ if classic.is_some() && opcode_names.is_empty() && event.message.is_none() => {
                opcode_names = word.split(',').map(str::to_string).collect();
            }
            _ => event.message = Some(word.to_string()),
        }
    }
    let id_list: Vec<&str> = ids.split(',').collect();
    if classic.is_some() && !opcode_names.is_empty() && opcode_names.len() != id_list.len() {
        return Err(format!("{} opcodes but {} names", id_list.len(), opcode_names.len()));
    }
    for (k, id) in id_list.iter().enumerate() {
        for version in versions.clone() {
            let key = match classic {
                Some(class) => SchemaKey::Classic { class, opcode: small(id)?, version },
                None => SchemaKey::Manifest { provider: provider.guid, id: small(id)?, version },
            };
            event.keys.push((key, opcode_names.get(k).cloned()));
        }
    }
    Ok(event)
}

fn parse_field(
    w: &[Cow<'_, str>],
    maps: &FastMap<String, Arc<ValueMap>>,
) -> Result<(Field, Option<String>, Option<String>), String> {
    let name = w.first().ok_or("a field needs a name")?;
    let in_type = w.get(1).ok_or("a field needs a type")?;
    let in_type = InType::from_name(in_type).ok_or_else(|| format!("unknown in-type {in_type:?}"))?;
    let mut field = Field::new(name.as_ref(), in_type);
    let (mut len_ref, mut count_ref) = (None, None);
    for word in w.iter().skip(2) {
        match word.split_once('=') {
            Some(("len", v)) => match v.strip_prefix('@') {
                Some(r) => len_ref = Some(r.to_string()),
                None => field.length = Some(Len::Fixed(small(v)?)),
            },
            Some(("count", "*")) => field.count = Some(Len::Remaining),
            Some(("count", v)) => match v.strip_prefix('@') {
                Some(r) => count_ref = Some(r.to_string()),
                None => field.count = Some(Len::Fixed(small(v)?)),
            },
            Some(("map", v)) => field.map = Some(maps.get(v).cloned().ok_or_else(|| format!("unknown map {v:?}"))?),
            _ => field.out_type = OutType::from_name(word).ok_or_else(|| format!("unknown out-type {word:?}"))?,
        }
    }
    Ok((field, len_ref, count_ref))
}

/// Turns `@name` references into indices of earlier fields.
fn resolve(fields: Vec<(Field, Option<String>, Option<String>)>) -> Result<Vec<Field>, String> {
    let mut out: Vec<Field> = Vec::with_capacity(fields.len());
    for (mut field, len_ref, count_ref) in fields {
        let index = |r: &str, out: &[Field]| {
            out.iter().position(|f| f.name == r).ok_or_else(|| format!("{}: no earlier field {r:?}", field.name))
        };
        if let Some(r) = len_ref {
            field.length = Some(Len::Field(index(&r, &out)?));
        }
        if let Some(r) = count_ref {
            field.count = Some(Len::Field(index(&r, &out)?));
        }
        out.push(field);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_provider_file() {
        let text = r#"
# Kernel-Network, two events
provider Microsoft-Windows-Kernel-Network 7dd42a49-5329-4832-8dfd-43d979153a88
channel 16 Microsoft-Windows-Kernel-Network/Analytic
keyword 0x10 KERNEL_NETWORK_KEYWORD_IPV4
task 10 KERNEL_NETWORK_TASK_TCPIP
opcode 10 KERNEL_NETWORK_OPCODE_SEND "Data sent."
map State value
  0 "Closed"
  1 "Listen"
event 10 v0 name=KNetEvt_SendIPV4 task=10 opcode=10 level=4 "TCPv4: %2 bytes"
  PID UInt32
  daddr UInt32 IPv4
  NameLength UInt16
  "Host Name" UnicodeString len=@NameLength
  State UInt32 map=State
event 99 v1-2
"#;
        let file = parse(text, Source::BuiltIn).unwrap();
        assert_eq!(file.provider.name, "Microsoft-Windows-Kernel-Network");
        assert_eq!(file.events.len(), 3);
        let (key, e) = &file.events[0];
        assert_eq!(*key, SchemaKey::Manifest { provider: file.provider.guid, id: 10, version: 0 });
        assert_eq!(e.task.as_deref(), Some("KERNEL_NETWORK_TASK_TCPIP"));
        assert_eq!(e.opcode.as_deref(), Some("Data sent."));
        assert_eq!(e.message.as_deref(), Some("TCPv4: %2 bytes"));
        assert_eq!(e.fields[1].out_type, OutType::Ipv4);
        assert_eq!(e.fields[3].name, "Host Name");
        assert_eq!(e.fields[3].length, Some(Len::Field(2)));
        assert_eq!(e.fields[4].map.as_ref().unwrap().lookup(1).as_deref(), Some("Listen"));
        assert_eq!(file.events[2].0, SchemaKey::Manifest { provider: file.provider.guid, id: 99, version: 2 });
        assert_eq!(file.events[2].1.opcode, None);
    }

    #[test]
    fn layouts_for_some_builds() {
        let text = "provider P 7dd42a49-5329-4832-8dfd-43d979153a88\n\
            # builds 7600 22621: some.xml\n\
            event 5 v0 builds=-26099\n  A UInt32\n\
            event 5 v0 builds=26100-\n  A UInt32\n  B UInt32\n\
            event 6 v0\n";
        let file = parse(text, Source::BuiltIn).unwrap();
        assert_eq!(file.events.len(), 1);
        let [(_, old, a), (_, new, b)] = &file.by_build[..] else { panic!("two layouts by build") };
        assert_eq!((a.fields.len(), b.fields.len()), (1, 2));
        assert!(old.contains(22621) && !old.contains(26100));
        assert!(new.contains(26100) && new.contains(28000) && !new.contains(26099));
        assert_eq!(new.to_string(), "26100-");
        assert_eq!(file.origins.len(), 1);
        assert_eq!((file.origins[0].1, file.origins[0].2.as_str()), (Some(*old), "builds 7600 22621: some.xml"));
        assert!(
            parse("provider P 7dd42a49-5329-4832-8dfd-43d979153a88\nevent 5 v0 builds=7\n", Source::BuiltIn).is_err()
        );
    }

    #[test]
    fn a_kernel_file() {
        let text =
            "kernel Process 3d6fa8d0-fe05-11d0-9dda-00c04fd7ba7c\nevent 1,2 v3-4 Start,End\n  ProcessId UInt32\n";
        let file = parse(text, Source::Kernel).unwrap();
        let class = file.provider.guid;
        let keys: Vec<_> = file.events.iter().map(|(k, e)| (*k, e.opcode.clone().unwrap())).collect();
        assert_eq!(keys.len(), 4);
        assert_eq!(keys[0], (SchemaKey::Classic { class, opcode: 1, version: 3 }, "Start".to_string()));
        assert_eq!(keys[3], (SchemaKey::Classic { class, opcode: 2, version: 4 }, "End".to_string()));
        assert_eq!(file.events[0].1.task.as_deref(), Some("Process"));
    }

    #[test]
    fn words_split_at_white_space_and_group_quoted_text() {
        let split = |line: &str| words(line).map(|w| w.iter().map(|w| w.to_string()).collect::<Vec<_>>());
        assert_eq!(split("  a  b\tc ").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            split(r#"opcode 11 RecvReq "Request received" x"#).unwrap(),
            ["opcode", "11", "RecvReq", "Request received", "x"]
        );
        assert_eq!(split(r#""" "a b""#).unwrap(), ["", "a b"]);
        assert_eq!(split(r#""say \"hi\"\n" "tab\t""#).unwrap(), ["say \"hi\"\n", "tab\t"]);
        assert_eq!(split(r#"a"b c"d "e"f"#).unwrap(), ["ab cd", "ef"]);
        assert_eq!(split(r#""…é ü""#).unwrap(), ["…é ü"]);
        assert!(split(r#""open"#).is_err());
        assert!(split(r#""ends \"#).is_err());
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse("provider X 7dd42a49-5329-4832-8dfd-43d979153a88\nevent 1 v0\n  A NoSuchType\n", Source::BuiltIn)
            .unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.message.contains("NoSuchType"));
    }
}
