//! Every event of a trace, decoded, in the formats people and tools read:
//! JSON lines (typed properties), the Windows event XML `tracerpt` writes,
//! CSV, and text lines of chosen fields. [`Formatter`] formats one chunk of
//! events at a time, so a pass formats on every core
//! ([`nettrail_etl::drive()`]) and writes the chunks in order.

mod csv;
mod filter;
mod jsonl;
mod kinds;
pub mod table;
mod text;
mod view;
mod xml;

use std::borrow::Cow;
use std::cell::OnceCell;
use std::sync::OnceLock;

use nettrail_decode::{LookupCache, Schemas, Undecoded, Value};
use nettrail_etl::{Chunk, Clock};
use nettrail_stacks::{Code, Frames, Symbols};

pub use self::filter::{Filter, TimeBound};
pub use self::text::{DEFAULT_FIELDS, TextField};
pub use self::view::View;

/// The event formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Format {
    /// One JSON object per event: raw fields, names, message, typed properties.
    Jsonl,
    /// The Windows event schema, as tracerpt writes it.
    Xml,
    /// Fixed columns, then name=value properties (RFC 4180).
    Csv,
    /// One comma-separated line per event with the fields chosen.
    Text,
}

impl Format {
    /// What the output begins with.
    pub fn header(self) -> &'static str {
        match self {
            Format::Xml => xml::HEADER,
            Format::Csv => csv::HEADER,
            _ => "",
        }
    }

    /// What the output ends with.
    pub fn footer(self) -> &'static str {
        match self {
            Format::Xml => xml::FOOTER,
            _ => "",
        }
    }

    /// The end of one event's text (to cut after the n-th).
    pub fn event_end(self) -> &'static [u8] {
        match self {
            Format::Xml => b"</Event>\n",
            Format::Csv => b"\r\n",
            _ => b"\n",
        }
    }
}

/// How to format a pass's events.
#[derive(Debug)]
pub struct Options {
    pub format: Format,
    /// The fields of [`Format::Text`].
    pub fields: Vec<TextField>,
    /// Leave out everything a schema would add (fastest; events as stored).
    pub raw: bool,
    pub filter: Filter,
}

/// Formats chunks of one trace's events (shared by the pass's tasks).
pub struct Formatter<'r, S: Symbols + Sync> {
    schemas: &'r Schemas,
    clock: &'r Clock,
    options: &'r Options,
    /// Stacks and modules (JSON lines only), and who names their frames.
    code: Option<(&'r Code, &'r S)>,
    /// Each stored stack's JSON text, made the first time an event needs it.
    stack_texts: Vec<OnceLock<String>>,
}

impl<S: Symbols + Sync> std::fmt::Debug for Formatter<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Formatter").field("options", self.options).finish()
    }
}

impl<'r, S: Symbols + Sync> Formatter<'r, S> {
    /// `code`: the trace's stacks and modules, to add each event's stack to
    /// JSON lines, and what names their frames.
    pub fn new(schemas: &'r Schemas, clock: &'r Clock, options: &'r Options, code: Option<(&'r Code, &'r S)>) -> Self {
        let stack_texts = code.map_or(0, |(c, _)| c.stacks.counts().0);
        Formatter { schemas, clock, options, code, stack_texts: (0..stack_texts).map(|_| OnceLock::new()).collect() }
    }

    /// Formats the events of a chunk that the filter keeps into `text`
    /// (cleared first); returns how many.
    pub fn chunk(&self, chunk: Chunk<'_, '_>, text: &mut Vec<u8>) -> u64 {
        let Formatter { schemas, clock, options, code, .. } = self;
        text.clear();
        let mut count = 0;
        let mut values: Vec<Value<'_>> = Vec::new();
        let mut cache = LookupCache::default();
        let mut lines = jsonl::Lines::default();
        let mut rows = csv::Rows::default();
        let mut xml_events = xml::Events::default();
        let mut line = String::new();
        let mut cursor = code.map(|(c, _)| c.stacks.cursor());
        for event in chunk.events() {
            let filetime = clock.to_filetime(event.timestamp);
            let decoded = if options.raw {
                values.clear();
                Err(Undecoded::NotDecoded)
            } else {
                schemas.decode_cached(&mut cache, &event.record, &mut values)
            };
            if decoded.is_err() {
                values.clear();
            }
            let names = OnceCell::new();
            let mut view = View {
                event: &event,
                schema: decoded.as_ref().copied(),
                values: &values,
                names: &names,
                filetime,
                stack: None,
            };
            if !options.filter.accepts(&event, || view.names().provider.as_deref(), filetime) {
                continue;
            }
            view.stack = code.zip(cursor.as_mut()).and_then(|((c, symbols), cursor)| {
                // Kernel records without a thread in their header name it in their payload.
                let thread = event.thread_id.or_else(|| {
                    let fields = decoded.as_ref().ok()?.fields.as_slice();
                    let i = fields.iter().position(|f| f.name == "ThreadId")?;
                    values.get(i)?.as_u64().map(|t| t as u32)
                });
                let stack = cursor.of_record_on(&event.record, thread)?;
                let render = || {
                    let frames = Frames { modules: &c.modules, symbols };
                    let pid = stack.pid.or(event.process_id).unwrap_or(0);
                    let mut text = Vec::new();
                    crate::json::stack(&mut text, &frames, pid, &stack.frames, event.timestamp);
                    String::from_utf8(text).unwrap_or_default()
                };
                // Stacks repeat: each stored one is rendered once.
                Some(match stack.id.and_then(|id| self.stack_texts.get(id as usize)) {
                    Some(cell) => Cow::Borrowed(cell.get_or_init(render).as_str()),
                    None => Cow::Owned(render()),
                })
            });
            match options.format {
                Format::Jsonl => jsonl::write(text, &view, options.raw, &mut lines),
                Format::Xml | Format::Csv | Format::Text => {
                    line.clear();
                    match options.format {
                        Format::Xml => xml::write(&mut line, &view, &mut xml_events),
                        Format::Csv => csv::write(&mut line, &view, &mut rows),
                        _ => text::write(&mut line, &view, &options.fields),
                    }
                    text.extend_from_slice(line.as_bytes());
                }
            }
            count += 1;
        }
        count
    }
}

/// The first `n` events of a chunk's text (each ends its last line with `end`).
pub fn first_events<'t>(text: &'t [u8], n: u64, end: &[u8]) -> &'t [u8] {
    let mut seen = 0;
    let mut at = 0;
    while let Some(i) = text.get(at..).and_then(|rest| rest.windows(end.len()).position(|w| w == end)) {
        at += i + end.len();
        seen += 1;
        if seen == n {
            return &text[..at];
        }
    }
    text
}
