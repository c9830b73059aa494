//! EventSource manifests sent inside a trace (event id 0xFFFE), in chunks.
//!
//! Each ManifestData payload starts with an 8-byte envelope: Format u8
//! (1 = XML), MajorVersion u8, MinorVersion u8, Magic u8 (0x5B), TotalChunks
//! u16, ChunkNumber u16; a piece of the UTF-8 XML follows. A provider sends
//! its chunks in order, and may send the whole manifest again (at rundown,
//! or from another process): the last complete one that parses wins.

use std::collections::HashMap;

use nettrail_etl::Guid;

use super::manifest;
use crate::layouts::LayoutFile;
use crate::registry::SchemaSet;
use crate::schema::Source;

const ENVELOPE: usize = 8;
const FORMAT_XML: u8 = 1;
const MAGIC: u8 = 0x5B;
/// Distinct complete sends kept of a provider, the latest: a later one that
/// does not parse falls back to an earlier one.
const KEPT_SENDS: usize = 4;

/// A manifest whose chunks are still arriving.
#[derive(Debug)]
struct Partial {
    total: u16,
    next: u16,
    /// Only what the chunks carried: never sized from `total`.
    xml: Vec<u8>,
}

/// Collects ManifestData chunks and turns complete manifests into schemas.
#[derive(Debug, Default)]
pub struct EventSourceManifests {
    partial: HashMap<Guid, Partial>,
    /// Each provider's complete sends, distinct, the latest last, in the
    /// order providers were first seen: parsed at the end, side by side
    /// (a provider sends the same manifest again at rundown, and parsing
    /// them one after the other as they completed was a serial part of
    /// every command on a .NET trace).
    complete: Vec<(Guid, Vec<String>)>,
    /// Sends abandoned half-way (a new chunk 0 came first).
    problems: Vec<String>,
}

impl EventSourceManifests {
    pub fn new() -> Self {
        EventSourceManifests::default()
    }

    /// One ManifestData event of `provider`: its whole payload. An error
    /// rejects the chunk (and drops the send it belonged to), or reports a
    /// completed manifest that does not parse.
    pub fn add_chunk(&mut self, provider: Guid, payload: &[u8]) -> Result<(), String> {
        let what = format!("EventSource manifest of {provider}");
        let Some((header, body)) = payload.split_first_chunk::<ENVELOPE>() else {
            return Err(format!("{what}: a {}-byte chunk is shorter than its {ENVELOPE}-byte envelope", payload.len()));
        };
        let [format, _major, _minor, magic, t0, t1, c0, c1] = *header;
        if magic != MAGIC {
            return Err(format!("{what}: envelope magic 0x{magic:02X}, expected 0x{MAGIC:02X}"));
        }
        if format != FORMAT_XML {
            return Err(format!("{what}: format {format} is not XML ({FORMAT_XML})"));
        }
        let (total, number) = (u16::from_le_bytes([t0, t1]), u16::from_le_bytes([c0, c1]));
        if number >= total {
            self.partial.remove(&provider);
            return Err(format!("{what}: chunk {number} of {total} is out of range"));
        }
        if number == 0 {
            let fresh = Partial { total, next: 0, xml: Vec::new() };
            if let Some(old) = self.partial.insert(provider, fresh) {
                self.problems.push(format!("{what}: sent again after {} of its {} chunks", old.next, old.total));
            }
        }
        let partial = match self.partial.get_mut(&provider) {
            Some(p) if p.total == total && p.next == number => p,
            other => {
                let missing = match other {
                    Some(p) if p.total == total => format!("chunk {}", p.next),
                    Some(p) => format!("the rest of a {}-chunk send", p.total),
                    None => "chunk 0".to_string(),
                };
                self.partial.remove(&provider);
                return Err(format!("{what}: chunk {number} of {total} came without {missing}"));
            }
        };
        partial.xml.extend_from_slice(body);
        partial.next += 1;
        if partial.next < total {
            return Ok(());
        }
        let xml = self.partial.remove(&provider).map(|p| p.xml).unwrap_or_default();
        let xml = String::from_utf8(xml).map_err(|e| format!("{what}: not UTF-8 ({e})"))?;
        let sends = match self.complete.iter_mut().find(|(g, _)| *g == provider) {
            Some((_, sends)) => sends,
            None => {
                self.complete.push((provider, Vec::new()));
                &mut self.complete.last_mut().expect("just pushed").1
            }
        };
        sends.retain(|sent| *sent != xml);
        if sends.len() == KEPT_SENDS {
            sends.remove(0);
        }
        sends.push(xml);
        Ok(())
    }

    /// The schemas of each provider's latest complete manifest that parses
    /// (an earlier send, if a later one does not), and what could not be
    /// read. Providers' manifests are parsed in parallel.
    pub fn finish(self) -> (SchemaSet, Vec<String>) {
        use rayon::prelude::*;
        let mut problems = self.problems;
        let mut unfinished: Vec<(Guid, Partial)> = self.partial.into_iter().collect();
        unfinished.sort_by_key(|(g, _)| *g);
        for (provider, p) in unfinished {
            problems.push(format!(
                "EventSource manifest of {provider}: the trace ends after {} of its {} chunks",
                p.next, p.total
            ));
        }
        let parsed: Vec<(Vec<LayoutFile>, Vec<String>)> = self
            .complete
            .par_iter()
            .map(|(provider, sends)| {
                let mut failures = Vec::new();
                for xml in sends.iter().rev() {
                    match manifest::parse(xml.trim_end_matches('\0'), Source::EventSourceManifest) {
                        Ok(files) => return (files, failures),
                        Err(e) => failures.push(format!("EventSource manifest of {provider}: {e}")),
                    }
                }
                (Vec::new(), failures)
            })
            .collect();
        let mut set = SchemaSet::default();
        for (files, failures) in parsed {
            problems.extend(failures);
            for file in files {
                set.insert_file(file);
            }
        }
        (set, problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::SchemaKey;

    const GUID: Guid = Guid::parse_const("2e5dba47-a3d2-4d16-8ee0-6671ffdcd7b5");

    fn manifest(message: &str) -> String {
        format!(
            "<instrumentationManifest><instrumentation><events>\
             <provider name=\"Es\" guid=\"{{{GUID}}}\"><events><event value=\"7\" message=\"{message}\"/></events>\
             </provider></events></instrumentation></instrumentationManifest>"
        )
    }

    fn chunk(total: u16, number: u16, body: &[u8]) -> Vec<u8> {
        let mut out = vec![FORMAT_XML, 1, 0, MAGIC];
        out.extend_from_slice(&total.to_le_bytes());
        out.extend_from_slice(&number.to_le_bytes());
        out.extend_from_slice(body);
        out
    }

    fn message_of(set: &SchemaSet) -> Option<String> {
        let key = SchemaKey::Manifest { provider: GUID, id: 7, version: 0 };
        set.events.get(&key).and_then(|e| e.message.clone())
    }

    #[test]
    fn chunks_reassemble_and_the_last_send_wins() {
        let mut m = EventSourceManifests::new();
        let first = manifest("first");
        let parts: Vec<&[u8]> = first.as_bytes().chunks(first.len() / 3 + 1).collect();
        assert_eq!(parts.len(), 3);
        for (i, part) in parts.iter().enumerate() {
            m.add_chunk(GUID, &chunk(3, i as u16, part)).unwrap();
        }
        m.add_chunk(GUID, &chunk(1, 0, manifest("second").as_bytes())).unwrap();
        let (set, problems) = m.finish();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(message_of(&set).as_deref(), Some("second"));
        assert_eq!(set.providers[&GUID].name, "Es");
        assert_eq!(set.events.values().next().map(|e| e.source), Some(Source::EventSourceManifest));
    }

    #[test]
    fn a_bad_resend_keeps_the_good_manifest() {
        let mut m = EventSourceManifests::new();
        m.add_chunk(GUID, &chunk(1, 0, manifest("good").as_bytes())).unwrap();
        m.add_chunk(GUID, &chunk(1, 0, b"<instrumentationManifest><instr")).unwrap();
        let (set, problems) = m.finish();
        assert_eq!(message_of(&set).as_deref(), Some("good"));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("not well-formed XML"), "{problems:?}");
    }

    #[test]
    fn a_manifest_sent_again_is_kept_once_and_the_latest_send_wins() {
        let mut m = EventSourceManifests::new();
        for message in ["a", "b", "a"] {
            m.add_chunk(GUID, &chunk(1, 0, manifest(message).as_bytes())).unwrap();
        }
        assert_eq!(m.complete[0].1.len(), 2);
        // Only the latest few distinct sends are held.
        for message in ["c", "d", "e", "f"] {
            m.add_chunk(GUID, &chunk(1, 0, manifest(message).as_bytes())).unwrap();
        }
        assert_eq!(m.complete[0].1.len(), KEPT_SENDS);
        m.add_chunk(GUID, &chunk(1, 0, manifest("a").as_bytes())).unwrap();
        let (set, problems) = m.finish();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(message_of(&set).as_deref(), Some("a"));
    }

    #[test]
    fn bad_envelopes_and_missing_chunks_are_errors() {
        let body = manifest("x");
        let mut m = EventSourceManifests::new();
        assert!(m.add_chunk(GUID, &[1, 1, 0, MAGIC, 1]).unwrap_err().contains("shorter than its 8-byte envelope"));
        let mut bad = chunk(1, 0, body.as_bytes());
        bad[3] = 0x5C;
        assert!(m.add_chunk(GUID, &bad).unwrap_err().contains("magic 0x5C"));
        bad[3] = MAGIC;
        bad[0] = 2;
        assert!(m.add_chunk(GUID, &bad).unwrap_err().contains("format 2"));
        assert!(m.add_chunk(GUID, &chunk(2, 2, b"")).unwrap_err().contains("out of range"));
        assert!(m.add_chunk(GUID, &chunk(0, 0, b"")).unwrap_err().contains("out of range"));
        // Chunk 1 without chunk 0; chunk 2 after chunk 0 (1 lost).
        assert!(m.add_chunk(GUID, &chunk(3, 1, b"")).unwrap_err().contains("without chunk 0"));
        m.add_chunk(GUID, &chunk(3, 0, b"<a")).unwrap();
        assert!(m.add_chunk(GUID, &chunk(3, 2, b"/>")).unwrap_err().contains("without chunk 1"));
        // A restart abandons an unfinished send; huge totals only wait.
        m.add_chunk(GUID, &chunk(3, 0, b"<a")).unwrap();
        m.add_chunk(GUID, &chunk(u16::MAX, 0, body.as_bytes())).unwrap();
        let (set, problems) = m.finish();
        assert!(set.events.is_empty());
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("sent again after 1 of its 3 chunks"), "{problems:?}");
        assert!(problems[1].contains("ends after 1 of its 65535 chunks"), "{problems:?}");
    }

    #[test]
    fn invalid_utf8_is_an_error() {
        let mut m = EventSourceManifests::new();
        assert!(m.add_chunk(GUID, &chunk(1, 0, &[0xff, 0xfe, b'<'])).unwrap_err().contains("not UTF-8"));
    }
}
