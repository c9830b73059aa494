//! What one source says about one provider in one Windows build: its
//! provider-level names (with their values where the source has them) and
//! its events with their fields, in the source's own terms.

use std::collections::BTreeMap;

/// A length or count: a constant, or the name of an earlier field.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Len {
    Fixed(u32),
    Field(String),
}

/// One payload field. `in_type` and `out_type` are spelled as in manifests
/// without their `win:`/`xs:` prefix; an out-type that is its in-type's
/// default is `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    pub in_type: String,
    pub out_type: Option<String>,
    pub length: Option<Len>,
    pub count: Option<Len>,
    pub map: Option<String>,
    /// Where attributes the build's own source lacks came from, and corrections.
    pub notes: Vec<String>,
    /// A corpus trace states this field (a trace fix applied or confirmed it).
    pub corpus: bool,
}

impl Field {
    pub fn new(name: &str, in_type: &str) -> Field {
        Field {
            name: name.to_string(),
            in_type: in_type.to_string(),
            out_type: None,
            length: None,
            count: None,
            map: None,
            notes: Vec::new(),
            corpus: false,
        }
    }
}

/// One event as a source declares it. Task, opcode, level, keywords and
/// channel are names, resolved to values through [`Names`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Event {
    pub symbol: Option<String>,
    pub task: Option<String>,
    pub opcode: Option<String>,
    pub level: Option<String>,
    pub keywords: Vec<String>,
    pub channel: Option<String>,
    pub message: Option<String>,
    pub fields: Vec<Field>,
}

/// A value or bit map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Map {
    pub bitmap: bool,
    pub entries: Vec<(u64, String)>,
}

/// A name with its value and, where the source has one, its message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Named<V> {
    pub value: V,
    pub message: Option<String>,
}

/// Provider-level names with values. Sources that state only names (the
/// TSV dumps) leave these empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Names {
    pub tasks: BTreeMap<String, Named<u16>>,
    /// (task scope, name): opcodes declared inside a task are its own.
    pub opcodes: BTreeMap<(Option<String>, String), Named<u8>>,
    pub keywords: BTreeMap<String, Named<u64>>,
    pub levels: BTreeMap<String, Named<u8>>,
    /// By the name events refer to (chid, else name): (value, channel path).
    pub channels: BTreeMap<String, (u8, String)>,
    pub maps: BTreeMap<String, Map>,
}

/// What one source file declares for one provider.
#[derive(Clone, Debug, Default)]
pub struct Declaration {
    pub provider: String,
    /// Lower case, no braces; `None` where the source does not state it.
    pub guid: Option<String>,
    pub names: Names,
    pub events: BTreeMap<(u16, u8), Event>,
    /// Events the source has but cannot state readably: (id, version, why).
    pub unreadable: Vec<(u16, u8, String)>,
}

/// The kind of a source, which decides what it can state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// jdu2600/Windows10EtwEvents `manifest/*.tsv`: names and in-types only.
    Tsv,
    /// repnz/etw-providers-docs XML dumps: in-types, length and count
    /// references, maps, names with values; no fixed lengths, out-types,
    /// channels or messages.
    Dump,
    /// A complete instrumentation manifest or WEPExplorer template dump:
    /// every attribute a template has.
    Full,
}

/// One source file: which build it describes and where it lives.
#[derive(Clone, Debug)]
pub struct Source {
    pub build: u32,
    /// "Windows 10 1511".
    pub release: &'static str,
    /// Pre-release builds lose when names differ.
    pub insider: bool,
    pub kind: Kind,
    /// It states value and bit maps (WEPExplorer's dumps, complete otherwise, have none).
    pub states_maps: bool,
    /// `repository@commit path` or a path under `../shared/reference`.
    pub file: String,
}

impl Source {
    /// The short form used in layout comments: `18990 Manifests-Win10-18990/X.xml`.
    pub fn short(&self) -> String {
        let file = self.file.rsplit_once(' ').map_or(self.file.as_str(), |(_, f)| f);
        format!("{} {file}", self.build)
    }
}

/// In-types whose size is the record's pointer width or fixed, and the
/// ones the layout language and the decoder know.
pub const IN_TYPES: &[&str] = &[
    "UnicodeString",
    "AnsiString",
    "Int8",
    "UInt8",
    "Int16",
    "UInt16",
    "Int32",
    "UInt32",
    "Int64",
    "UInt64",
    "Float",
    "Double",
    "Boolean",
    "Binary",
    "GUID",
    "Pointer",
    "FILETIME",
    "SYSTEMTIME",
    "SID",
    "HexInt32",
    "HexInt64",
    "CountedUnicodeString",
    "CountedAnsiString",
    "CountedBinary",
];

/// The out-type TDH shows a field with when the manifest names none.
pub fn default_out_type(in_type: &str) -> &'static str {
    nettrail_decode::InType::from_name(in_type).and_then(|t| t.default_out_type().name()).unwrap_or_default()
}

/// An in-type as this project spells it (`win:` dropped, the two spellings
/// of GUID/FILETIME/SYSTEMTIME/SID/counted strings unified).
pub fn in_type(text: &str) -> Option<&'static str> {
    let name = text.trim().strip_prefix("win:").unwrap_or(text.trim());
    let name = match name {
        "Guid" => "GUID",
        "FileTime" => "FILETIME",
        "SystemTime" => "SYSTEMTIME",
        "Sid" => "SID",
        "CountedString" | "CountedUtf16String" => "CountedUnicodeString",
        "CountedMbcsString" => "CountedAnsiString",
        other => other,
    };
    IN_TYPES.iter().find(|t| **t == name).copied()
}

/// An out-type without its prefix; `None` for the in-type's default (and
/// for WEPExplorer's explicit defaults such as `xs:unsignedInt`).
pub fn out_type(text: &str, in_type: &str) -> Option<String> {
    let name = text.trim();
    let name = name.strip_prefix("win:").or_else(|| name.strip_prefix("xs:")).unwrap_or(name);
    let name = match name {
        "Hresult" => "HResult",
        other => other,
    };
    if name.is_empty() || name == default_out_type(in_type) {
        return None;
    }
    Some(name.to_string())
}

/// A name as field names compare: TDH-based dumps drop the spaces that
/// older manifests have (`Source IPv4 Address` → `SourceIPv4Address`).
pub fn name_key(name: &str) -> String {
    name.chars().filter(|c| !c.is_whitespace()).collect()
}
