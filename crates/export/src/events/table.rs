//! The `events` table: every event of a trace as typed columns (when, who,
//! what, and its decoded properties as a JSON object of text values), read
//! on every core and handed on a group of rows at a time — what the Parquet
//! export writes and the Python package returns.

use std::ops::ControlFlow;

use nettrail_decode::{EventNames, Schemas, format};
use nettrail_etl::{Batching, Chunk, Clock, Error, Trace};
use nettrail_tables::Kind;
use nettrail_tables::columnar::{Values, unix_micros};

/// The columns of the `events` table: every event, when, who, what, and
/// its decoded properties as a JSON object of text values.
pub const SCHEMA: [(&str, Kind); 16] = [
    ("time_utc", Kind::Timestamp),
    ("seconds", Kind::Float),
    ("provider", Kind::Text),
    ("provider_guid", Kind::Text),
    ("event", Kind::Text),
    ("task", Kind::Text),
    ("opcode", Kind::Text),
    ("id", Kind::Int),
    ("version", Kind::Int),
    ("level", Kind::Int),
    ("keywords", Kind::Text),
    ("pid", Kind::Int),
    ("tid", Kind::Int),
    ("cpu", Kind::Int),
    ("activity", Kind::Text),
    ("properties", Kind::Text),
];

/// What reading the table met.
#[derive(Debug, Default)]
pub struct Read {
    pub events: u64,
    /// Damage, in stream order (every readable event was read).
    pub damage: Vec<Error>,
    /// Buffers read out of time order ([`nettrail_etl::EventStream::reordered`]).
    pub reordered: u64,
}

/// Reads every event into groups of at most `group_rows` rows (the
/// columns of [`SCHEMA`], after a `trace` column holding `trace_name` when
/// given) and hands each to `done`, which can stop the reading.
pub fn read(
    trace: &Trace<'_>,
    schemas: &Schemas,
    trace_name: Option<&str>,
    group_rows: usize,
    progress: &mut dyn FnMut(u64),
    mut done: impl FnMut(Vec<Values>) -> ControlFlow<()>,
) -> Read {
    let clock = *trace.clock();
    let start = clock.to_filetime(trace.header_timestamp());
    let mut group = event_columns();
    let mut events = 0u64;
    let mut stopped = false;
    let mut hand_on = |group: Vec<Values>| {
        let rows = group[0].len();
        let mut columns: Vec<Values> =
            trace_name.map(|n| Values::Text(vec![Some(n.to_string()); rows])).into_iter().collect();
        columns.extend(group);
        done(columns)
    };
    let driven = nettrail_etl::drive(
        trace,
        Batching { batch: group_rows.clamp(1, 64 * 1024), chunk: 4096 },
        |chunk| events_of(chunk, &clock, start, schemas),
        |part| {
            for (all, some) in group.iter_mut().zip(part) {
                all.append(some);
            }
            if group[0].len() >= group_rows {
                let full = std::mem::replace(&mut group, event_columns());
                events += full[0].len() as u64;
                if hand_on(full).is_break() {
                    stopped = true;
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        },
        progress,
    );
    if !stopped && !group[0].is_empty() {
        events += group[0].len() as u64;
        let _ = hand_on(group);
    }
    Read { events, damage: driven.damage, reordered: driven.reordered }
}

fn event_columns() -> Vec<Values> {
    SCHEMA.iter().map(|(_, k)| Values::empty(*k)).collect()
}

/// The `events` columns of one chunk.
fn events_of(chunk: Chunk<'_, '_>, clock: &Clock, start: i64, schemas: &Schemas) -> Vec<Values> {
    let n = chunk.len();
    let (mut time, mut seconds) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let mut text: [Vec<Option<String>>; 8] = Default::default();
    let mut ints: [Vec<Option<i64>>; 6] = Default::default();
    let mut values = Vec::new();
    let mut cache = nettrail_decode::LookupCache::default();
    for event in chunk.events() {
        let decoded = schemas.decode_cached(&mut cache, &event.record, &mut values).ok();
        if decoded.is_none() {
            values.clear();
        }
        let names = EventNames::of(&event.record, decoded);
        let t = clock.to_filetime(event.timestamp);
        time.push(Some(unix_micros(t)));
        seconds.push(Some((t - start) as f64 / 1e7));
        let name = |n: &Option<std::borrow::Cow<'_, str>>| n.as_deref().map(str::to_string);
        text[0].push(name(&names.provider));
        text[1].push(Some(event.provider.to_string()));
        text[2].push(name(&names.event));
        text[3].push(name(&names.task));
        text[4].push(name(&names.opcode));
        text[5].push(Some(format!("0x{:x}", event.keywords)));
        text[6].push((!event.activity_id.is_zero()).then(|| event.activity_id.to_string()));
        text[7].push(decoded.map(|schema| {
            let mut json = Vec::with_capacity(256);
            json.push(b'{');
            let mut value = String::new();
            for (i, (field, v)) in schema.fields.iter().zip(&values).enumerate() {
                if i > 0 {
                    json.push(b',');
                }
                crate::json::string(&mut json, &field.name);
                json.push(b':');
                value.clear();
                format::text(field, v, event.pointer_size, &mut value);
                crate::json::string(&mut json, &value);
            }
            json.push(b'}');
            String::from_utf8(json).unwrap_or_default()
        }));
        ints[0].push(Some(i64::from(event.id)));
        ints[1].push(Some(i64::from(event.version)));
        ints[2].push(Some(i64::from(event.level)));
        ints[3].push(event.process_id.map(i64::from));
        ints[4].push(event.thread_id.map(i64::from));
        ints[5].push(Some(i64::from(event.cpu)));
    }
    let [provider, guid, name, task, opcode, keywords, activity, properties] = text;
    let [id, version, level, pid, tid, cpu] = ints;
    vec![
        Values::Timestamp(time),
        Values::Float(seconds),
        Values::Text(provider),
        Values::Text(guid),
        Values::Text(name),
        Values::Text(task),
        Values::Text(opcode),
        Values::Int(id),
        Values::Int(version),
        Values::Int(level),
        Values::Text(keywords),
        Values::Int(pid),
        Values::Int(tid),
        Values::Int(cpu),
        Values::Text(activity),
        Values::Text(properties),
    ]
}
