//! `tracing` spans and events as TraceLogging events.

use std::fmt;
use std::time::SystemTime;

use nettrail_etl::Guid;
use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::encode::{FieldValue, encode_event};
use crate::event::{EncodedEvent, KEYWORD, Provider, descriptor, level, opcode};
use crate::guid::ActivityIds;
use crate::sink::{EtwSink, Sink, thread_number};

/// A `tracing_subscriber` layer that writes the program's spans and events
/// as TraceLogging events of its own provider.
///
/// - Entering a span writes an event named after the span with opcode 1
///   (`win:Start`) and the span's fields; exiting it writes one of the same
///   name with opcode 2 (`win:Stop`) and the fields recorded while it was
///   entered (`Span::record`), if any. Both carry the span's activity id;
///   the Start also carries the parent span's as its related activity id,
///   so tools pair Starts with Stops and nest them. A span entered several
///   times (an async task polled again) writes a Start/Stop pair each time,
///   under the same activity id.
/// - Each `tracing` event writes an event (opcode 0) named after its
///   message (or, without one, its callsite's name) with its other fields,
///   under the activity of the span it is in.
/// - Levels: ERROR → 2, WARN → 3, INFO → 4, DEBUG and TRACE → 5.
///   Keywords: [`KEYWORD`] (1) on every event.
///
/// Nothing is formatted or encoded unless the sink is enabled for the
/// event's level (on Windows: a session has enabled the provider). A span
/// created while no session listened keeps no fields.
#[derive(Debug)]
pub struct EtwLayer<K = EtwSink> {
    provider: Provider,
    sink: K,
    ids: ActivityIds,
}

/// The layer for the provider named `provider_name`, whose GUID is the
/// name's hash ([`crate::provider_guid`]), writing to ETW (on Windows; it
/// writes nothing elsewhere, or if registration fails).
pub fn layer(provider_name: &str) -> EtwLayer<EtwSink> {
    let provider = Provider::new(provider_name);
    let sink = EtwSink::register(&provider).unwrap_or_else(|_| EtwSink::unregistered());
    EtwLayer::with_sink(provider, sink)
}

/// The ETW level of a `tracing` level.
pub fn level_of(l: &Level) -> u8 {
    match *l {
        Level::ERROR => level::ERROR,
        Level::WARN => level::WARNING,
        Level::INFO => level::INFORMATION,
        _ => level::VERBOSE,
    }
}

/// What the layer keeps of a span (in its registry extensions).
#[derive(Debug)]
struct SpanState {
    activity: Guid,
    parent: Option<Guid>,
    fields: Vec<(&'static str, FieldValue)>,
    /// Recorded since the span was last entered: the Stop's fields.
    recorded: Vec<(&'static str, FieldValue)>,
}

impl<K: Sink> EtwLayer<K> {
    /// The layer for `provider`, writing to `sink` (a [`crate::CollectingSink`] in tests).
    pub fn with_sink(provider: Provider, sink: K) -> EtwLayer<K> {
        EtwLayer { provider, sink, ids: ActivityIds::new() }
    }

    pub fn provider(&self) -> &Provider {
        &self.provider
    }

    pub fn sink(&self) -> &K {
        &self.sink
    }

    fn encode(
        &self,
        name: &str,
        (level, opcode): (u8, u8),
        (activity_id, related_activity_id): (Option<Guid>, Option<Guid>),
        fields: &[(&'static str, FieldValue)],
    ) -> Option<EncodedEvent> {
        let (metadata, payload) = encode_event(name, fields).ok()?;
        Some(EncodedEvent {
            provider: self.provider.guid(),
            name: name.to_string(),
            descriptor: descriptor(level, opcode),
            activity_id,
            related_activity_id,
            provider_traits: self.provider.traits().to_vec(),
            metadata,
            payload,
            thread: thread_number(),
            time: SystemTime::now(),
        })
    }
}

/// Replaces a field of the same name, or adds it.
fn merge(into: &mut Vec<(&'static str, FieldValue)>, name: &'static str, value: FieldValue) {
    match into.iter_mut().find(|(n, _)| *n == name) {
        Some(slot) => slot.1 = value,
        None => into.push((name, value)),
    }
}

impl<S, K> Layer<S> for EtwLayer<K>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    K: Sink,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span.parent().and_then(|p| p.extensions().get::<SpanState>().map(|s| s.activity));
        let mut fields = Vec::new();
        if self.sink.enabled(level_of(attrs.metadata().level()), KEYWORD) {
            attrs.record(&mut Collect { fields: &mut fields, message: None });
        }
        let state = SpanState { activity: self.ids.next(id.into_u64()), parent, fields, recorded: Vec::new() };
        span.extensions_mut().insert(state);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        if !self.sink.enabled(level_of(span.metadata().level()), KEYWORD) {
            return;
        }
        let mut new = Vec::new();
        values.record(&mut Collect { fields: &mut new, message: None });
        let mut ext = span.extensions_mut();
        let Some(state) = ext.get_mut::<SpanState>() else { return };
        for (name, value) in new {
            merge(&mut state.fields, name, value.clone());
            merge(&mut state.recorded, name, value);
        }
    }

    fn on_enter(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let level = level_of(span.metadata().level());
        let enabled = self.sink.enabled(level, KEYWORD);
        let event = {
            let mut ext = span.extensions_mut();
            let Some(state) = ext.get_mut::<SpanState>() else { return };
            state.recorded.clear();
            if !enabled {
                return;
            }
            self.encode(span.name(), (level, opcode::START), (Some(state.activity), state.parent), &state.fields)
        };
        if let Some(event) = event {
            self.sink.write(event);
        }
    }

    fn on_exit(&self, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let level = level_of(span.metadata().level());
        let enabled = self.sink.enabled(level, KEYWORD);
        let event = {
            let mut ext = span.extensions_mut();
            let Some(state) = ext.get_mut::<SpanState>() else { return };
            let recorded = std::mem::take(&mut state.recorded);
            if !enabled {
                return;
            }
            self.encode(span.name(), (level, opcode::STOP), (Some(state.activity), None), &recorded)
        };
        if let Some(event) = event {
            self.sink.write(event);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let level = level_of(meta.level());
        if !self.sink.enabled(level, KEYWORD) {
            return;
        }
        let mut fields = Vec::new();
        let mut message = None;
        event.record(&mut Collect { fields: &mut fields, message: Some(&mut message) });
        let activity = ctx.event_span(event).and_then(|span| span.extensions().get::<SpanState>().map(|s| s.activity));
        let name = message.as_deref().unwrap_or(meta.name());
        if let Some(encoded) = self.encode(name, (level, opcode::INFO), (activity, None), &fields) {
            self.sink.write(encoded);
        }
    }
}

/// Collects field values; an event's `message` goes to `message` when given.
struct Collect<'a> {
    fields: &'a mut Vec<(&'static str, FieldValue)>,
    message: Option<&'a mut Option<String>>,
}

impl Collect<'_> {
    fn push(&mut self, field: &Field, value: FieldValue) {
        self.fields.push((field.name(), value));
    }

    fn text(&mut self, field: &Field, text: String) {
        match &mut self.message {
            Some(message) if field.name() == "message" => **message = Some(text),
            _ => self.push(field, FieldValue::Str(text)),
        }
    }
}

impl Visit for Collect<'_> {
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push(field, FieldValue::F64(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push(field, FieldValue::I64(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push(field, FieldValue::U64(value));
    }

    fn record_i128(&mut self, field: &Field, value: i128) {
        match i64::try_from(value) {
            Ok(v) => self.push(field, FieldValue::I64(v)),
            Err(_) => self.push(field, FieldValue::Str(value.to_string())),
        }
    }

    fn record_u128(&mut self, field: &Field, value: u128) {
        match u64::try_from(value) {
            Ok(v) => self.push(field, FieldValue::U64(v)),
            Err(_) => self.push(field, FieldValue::Str(value.to_string())),
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push(field, FieldValue::Bool(value));
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        self.text(field, value.to_string());
    }

    fn record_bytes(&mut self, field: &Field, value: &[u8]) {
        self.push(field, FieldValue::Bytes(value.to_vec()));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.text(field, value.to_string());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.text(field, format!("{value:?}"));
    }
}
