//! `nettrail export --format parquet -o DIR`: the tables `requests`,
//! `connections`, `dns`, `http_server` (the columns of the table commands,
//! typed) and `events` (every event, decoded, its properties as a JSON
//! object), one Parquet file each.

use std::path::Path;

use anyhow::Context as _;
use nettrail_decode::{EventNames, Schemas, format};
use nettrail_etl::Trace;
use nettrail_export::parquet::{Table, TableWriter, Values, write_parquet};
use nettrail_net::Report;
use rayon::prelude::*;

use crate::Outcome;
use crate::tables::columns;
use crate::tables::render::{Cell, Column};

/// A table's column as Parquet values: integers, floats and booleans keep
/// their type; text and lists are text (lists `;`-joined, as in the CSV).
fn values<R>(column: &Column<R>, rows: &[&R]) -> Values {
    let cells: Vec<Cell> = rows.iter().map(|r| (column.get)(r)).collect();
    let kind = cells.iter().find(|c| **c != Cell::Null);
    let all = |ok: fn(&Cell) -> bool| cells.iter().all(|c| *c == Cell::Null || ok(c));
    match kind {
        Some(Cell::UInt(_)) if all(|c| matches!(c, Cell::UInt(v) if i64::try_from(*v).is_ok())) => {
            Values::Int(cells.iter().map(|c| if let Cell::UInt(v) = c { Some(*v as i64) } else { None }).collect())
        }
        Some(Cell::Float(..)) if all(|c| matches!(c, Cell::Float(..))) => {
            Values::Float(cells.iter().map(|c| if let Cell::Float(v, _) = c { Some(*v) } else { None }).collect())
        }
        Some(Cell::Bool(_)) if all(|c| matches!(c, Cell::Bool(_))) => {
            Values::Bool(cells.iter().map(|c| if let Cell::Bool(b) = c { Some(*b) } else { None }).collect())
        }
        _ => Values::Text(cells.iter().map(|c| (*c != Cell::Null).then(|| c.plain())).collect()),
    }
}

fn table<R>(name: &str, columns: &[Column<R>], rows: &[&R]) -> Table {
    Table { name: name.to_string(), columns: columns.iter().map(|c| (c.name.to_string(), values(c, rows))).collect() }
}

fn write(dir: &Path, table: &Table) -> anyhow::Result<()> {
    let path = dir.join(format!("{}.parquet", table.name));
    let file = std::fs::File::create(&path).with_context(|| format!("{}: cannot create", path.display()))?;
    write_parquet(table, std::io::BufWriter::new(file)).with_context(|| format!("{}: cannot write", path.display()))
}

pub fn run(trace_path: &Path, dir: &Path, manifests: &[std::path::PathBuf], quiet: bool) -> anyhow::Result<Outcome> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot create the folder", dir.display()))?;
    let file = crate::open(trace_path)?;
    let analysed = crate::tables::analyse(trace_path, &file, manifests, quiet)?;
    let report: Report = analysed.analysis.network.report();
    let requests = crate::tables::requests(&report, &crate::tables::Filters::default());
    let request_refs: Vec<&columns::Request<'_>> = requests.iter().collect();
    write(dir, &table("requests", &columns::requests(&report), &request_refs))?;
    let refs: Vec<_> = report.connections.iter().collect();
    write(dir, &table("connections", &columns::connections(&report), &refs))?;
    let refs: Vec<_> = report.dns.iter().collect();
    write(dir, &table("dns", &columns::dns(&report), &refs))?;
    let refs: Vec<_> = report.http_server.iter().collect();
    write(dir, &table("http_server", &columns::http_server(&report), &refs))?;
    // The events pass meets the same damage as the analysis, reported once below.
    let damage = write_events(dir, &analysed.trace, &analysed.schemas)?;
    if !quiet {
        say!("wrote requests, connections, dns, http_server and events (.parquet) to {}", dir.display());
    }
    let mut outcome = analysed.outcome(trace_path);
    if !damage.is_empty() {
        outcome = Outcome::Damaged;
    }
    Ok(outcome)
}

/// Events per row group of the `events` table: memory holds one group.
const GROUP_ROWS: usize = 64 * 1024;
/// Events decoded per parallel task.
const CHUNK: usize = 4096;

/// Writes every event (when, who, what, and its decoded properties) to
/// `events.parquet`, a row group at a time, decoding each group in parallel.
fn write_events(dir: &Path, trace: &Trace<'_>, schemas: &Schemas) -> anyhow::Result<Vec<nettrail_etl::Error>> {
    let path = dir.join("events.parquet");
    let file = std::fs::File::create(&path).with_context(|| format!("{}: cannot create", path.display()))?;
    let cannot = || format!("{}: cannot write", path.display());
    let empty = EventColumns::default().into_values();
    let kinds: Vec<(&str, &Values)> = EVENT_COLUMNS.iter().copied().zip(&empty).collect();
    let mut writer = TableWriter::new(std::io::BufWriter::new(file), "events", &kinds).with_context(cannot)?;
    let start = trace.clock().to_filetime(trace.header_timestamp());
    let mut damage = Vec::new();
    let mut stream = trace.events();
    let mut batch = Vec::with_capacity(GROUP_ROWS);
    loop {
        batch.clear();
        stream.next_batch(GROUP_ROWS, &mut batch);
        if batch.is_empty() {
            break;
        }
        damage.extend(batch.iter().filter_map(|item| item.as_ref().err().cloned()));
        let stream_ref = &stream;
        let parts: Vec<EventColumns> = batch
            .par_chunks(CHUNK)
            .map(|items| {
                let mut c = EventColumns::default();
                let mut values = Vec::new();
                for r in items.iter().flatten() {
                    if let Some(event) = stream_ref.event(*r) {
                        c.push(&event, trace.clock(), start, schemas, &mut values);
                    }
                }
                c
            })
            .collect();
        let group = parts.into_iter().reduce(EventColumns::append).unwrap_or_default().into_values();
        writer.write(group).with_context(cannot)?;
    }
    writer.finish().with_context(cannot)?;
    Ok(damage)
}

const EVENT_COLUMNS: [&str; 16] = [
    "time_utc",
    "seconds",
    "provider",
    "provider_guid",
    "event",
    "task",
    "opcode",
    "id",
    "version",
    "level",
    "keywords",
    "pid",
    "tid",
    "cpu",
    "activity",
    "properties",
];

#[derive(Default)]
struct EventColumns {
    time_utc: Vec<Option<String>>,
    seconds: Vec<Option<f64>>,
    provider: Vec<Option<String>>,
    provider_guid: Vec<Option<String>>,
    event: Vec<Option<String>>,
    task: Vec<Option<String>>,
    opcode: Vec<Option<String>>,
    id: Vec<Option<i64>>,
    version: Vec<Option<i64>>,
    level: Vec<Option<i64>>,
    keywords: Vec<Option<String>>,
    pid: Vec<Option<i64>>,
    tid: Vec<Option<i64>>,
    cpu: Vec<Option<i64>>,
    activity: Vec<Option<String>>,
    properties: Vec<Option<String>>,
}

impl EventColumns {
    fn push<'a>(
        &mut self,
        event: &nettrail_etl::Event<'a>,
        clock: &nettrail_etl::Clock,
        start: i64,
        schemas: &Schemas,
        values: &mut Vec<nettrail_decode::Value<'a>>,
    ) {
        let decoded = schemas.decode(&event.record, values).ok();
        if decoded.is_none() {
            values.clear();
        }
        let names = EventNames::of(&event.record, decoded.as_ref());
        let t = clock.to_filetime(event.timestamp);
        let mut utc = [0u8; 28];
        let n = nettrail_etl::FileTime(t).encode(&mut utc);
        self.time_utc.push(Some(String::from_utf8_lossy(&utc[..n]).into_owned()));
        self.seconds.push(Some((t - start) as f64 / 1e7));
        self.provider.push(names.provider.as_deref().map(str::to_string));
        self.provider_guid.push(Some(event.provider.to_string()));
        self.event.push(names.event.as_deref().map(str::to_string));
        self.task.push(names.task.as_deref().map(str::to_string));
        self.opcode.push(names.opcode.as_deref().map(str::to_string));
        self.id.push(Some(i64::from(event.id)));
        self.version.push(Some(i64::from(event.version)));
        self.level.push(Some(i64::from(event.level)));
        self.keywords.push(Some(format!("0x{:x}", event.keywords)));
        self.pid.push(event.process_id.map(i64::from));
        self.tid.push(event.thread_id.map(i64::from));
        self.cpu.push(Some(i64::from(event.cpu)));
        self.activity.push((!event.activity_id.is_zero()).then(|| event.activity_id.to_string()));
        let properties = decoded.map(|schema| {
            let mut object = serde_json::Map::new();
            let mut text = String::new();
            for (field, value) in schema.fields.iter().zip(values.iter()) {
                text.clear();
                format::text(field, value, event.pointer_size, &mut text);
                object.insert(field.name.clone(), serde_json::Value::String(text.clone()));
            }
            serde_json::Value::Object(object).to_string()
        });
        self.properties.push(properties);
    }

    /// `self`'s rows, then `other`'s.
    fn append(mut self, other: EventColumns) -> EventColumns {
        self.time_utc.extend(other.time_utc);
        self.seconds.extend(other.seconds);
        self.provider.extend(other.provider);
        self.provider_guid.extend(other.provider_guid);
        self.event.extend(other.event);
        self.task.extend(other.task);
        self.opcode.extend(other.opcode);
        self.id.extend(other.id);
        self.version.extend(other.version);
        self.level.extend(other.level);
        self.keywords.extend(other.keywords);
        self.pid.extend(other.pid);
        self.tid.extend(other.tid);
        self.cpu.extend(other.cpu);
        self.activity.extend(other.activity);
        self.properties.extend(other.properties);
        self
    }

    /// The columns, in [`EVENT_COLUMNS`] order.
    fn into_values(self) -> Vec<Values> {
        vec![
            Values::Text(self.time_utc),
            Values::Float(self.seconds),
            Values::Text(self.provider),
            Values::Text(self.provider_guid),
            Values::Text(self.event),
            Values::Text(self.task),
            Values::Text(self.opcode),
            Values::Int(self.id),
            Values::Int(self.version),
            Values::Int(self.level),
            Values::Text(self.keywords),
            Values::Int(self.pid),
            Values::Int(self.tid),
            Values::Int(self.cpu),
            Values::Text(self.activity),
            Values::Text(self.properties),
        ]
    }
}
