//! `--provider NAME|GUID[:KEYWORDS[:LEVEL[:stack]]]`, xperf's spelling.
//!
//! A GUID is used as is; `*Name` is a TraceLogging or EventSource provider,
//! whose GUID is the hash of its name (what an app tracing itself with
//! `nettrail-tracelogging` registers); a name nettrail knows (the network
//! providers, the runtimes) becomes its GUID; any other name is left to the
//! recorder, which looks it up among the manifests registered on the machine.

use nettrail_etl::Guid;

use crate::provider::{Provider, Stacks, Target};

/// Why a `--provider` value was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SpecError {
    #[error("empty provider name in {0:?}")]
    EmptyName(String),
    #[error("{value:?}: keywords {keywords:?} are not a number (expected e.g. 0x10 or 16)")]
    Keywords { value: String, keywords: String },
    #[error("{value:?}: level {level:?} is not 0-255 or one of critical, error, warning, info, verbose")]
    Level { value: String, level: String },
    #[error("{value:?}: {extra:?} is not understood (expected NAME|GUID[:KEYWORDS[:LEVEL[:stack]]])")]
    Extra { value: String, extra: String },
}

/// Parses one `--provider` value.
pub fn parse_provider(value: &str) -> Result<Provider, SpecError> {
    let mut parts = value.split(':');
    let name = parts.next().unwrap_or_default().trim();
    if name.is_empty() || name == "*" {
        return Err(SpecError::EmptyName(value.to_string()));
    }
    let (target, label) = target_of(name);
    let mut provider = Provider::new(&label, target);
    if let Some(k) = parts.next().filter(|k| !k.is_empty()) {
        provider.keywords = Some(
            parse_number(k).ok_or_else(|| SpecError::Keywords { value: value.to_string(), keywords: k.to_string() })?,
        );
    }
    if let Some(l) = parts.next().filter(|l| !l.is_empty()) {
        provider.level =
            Some(parse_level(l).ok_or_else(|| SpecError::Level { value: value.to_string(), level: l.to_string() })?);
    }
    match parts.next() {
        None => {}
        Some(s) if s.eq_ignore_ascii_case("stack") || s.eq_ignore_ascii_case("'stack'") => {
            provider.stacks = Stacks::All
        }
        Some(extra) => return Err(SpecError::Extra { value: value.to_string(), extra: extra.to_string() }),
    }
    if let Some(extra) = parts.next() {
        return Err(SpecError::Extra { value: value.to_string(), extra: extra.to_string() });
    }
    Ok(provider)
}

/// The provider a name stands for, and a label for it.
fn target_of(name: &str) -> (Target, String) {
    if let Ok(guid) = name.parse::<Guid>() {
        let label = nettrail_etl::well_known::provider_name(&guid).map_or_else(|| guid.to_string(), str::to_string);
        return (Target::Guid(guid), label);
    }
    if let Some(hashed) = name.strip_prefix('*') {
        return (Target::Guid(nettrail_tracelogging::provider_guid(hashed)), hashed.to_string());
    }
    match nettrail_etl::well_known::PROVIDERS.iter().find(|(_, known)| known.eq_ignore_ascii_case(name)) {
        Some((guid, known)) => (Target::Guid(*guid), known.to_string()),
        None => (Target::Registered(name.to_string()), name.to_string()),
    }
}

fn parse_number(s: &str) -> Option<u64> {
    let s = s.trim();
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn parse_level(s: &str) -> Option<u8> {
    match s.trim().to_ascii_lowercase().as_str() {
        "critical" => Some(1),
        "error" => Some(2),
        "warning" => Some(3),
        "info" | "informational" => Some(4),
        "verbose" => Some(5),
        n => parse_number(n).and_then(|v| u8::try_from(v).ok()),
    }
}
