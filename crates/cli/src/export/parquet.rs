//! `nettrail export --format parquet -o DIR`: the tables `requests`,
//! `connections`, `dns`, `http_server` (the columns of the table commands,
//! typed) and `events` (every event, decoded, its properties as a JSON
//! object), one Parquet file each.

use std::path::Path;

use anyhow::Context as _;
use nettrail_decode::{EventNames, format};
use nettrail_export::parquet::{Table, Values, write_parquet};
use nettrail_net::Report;

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
    let (events, damage) = events(&analysed.trace, &analysed.schemas);
    write(dir, &events)?;
    for e in &damage {
        crate::report_damage(trace_path, e);
    }
    if !quiet {
        eprintln!("nettrail: wrote requests, connections, dns, http_server and events (.parquet) to {}", dir.display());
    }
    let mut outcome = analysed.outcome(trace_path);
    if !damage.is_empty() {
        outcome = Outcome::Damaged;
    }
    Ok(outcome)
}

/// Every event: when, who, what, and its decoded properties.
fn events(trace: &nettrail_etl::Trace<'_>, schemas: &nettrail_decode::Schemas) -> (Table, Vec<nettrail_etl::Error>) {
    let clock = trace.clock();
    let start = clock.to_filetime(trace.header_timestamp());
    let mut c = EventColumns::default();
    let mut damage = Vec::new();
    let mut stream = trace.events();
    while let Some(event) = stream.next() {
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                damage.push(e);
                continue;
            }
        };
        let mut values = Vec::new();
        let decoded = schemas.decode(&event.record, &mut values).ok();
        if decoded.is_none() {
            values.clear();
        }
        let names = EventNames::of(&event.record, decoded.as_ref());
        let t = clock.to_filetime(event.timestamp);
        let mut utc = [0u8; 28];
        let n = nettrail_etl::FileTime(t).encode(&mut utc);
        c.time_utc.push(Some(String::from_utf8_lossy(&utc[..n]).into_owned()));
        c.seconds.push(Some((t - start) as f64 / 1e7));
        c.provider.push(names.provider.as_deref().map(str::to_string));
        c.provider_guid.push(Some(event.provider.to_string()));
        c.event.push(names.event.as_deref().map(str::to_string));
        c.task.push(names.task.as_deref().map(str::to_string));
        c.opcode.push(names.opcode.as_deref().map(str::to_string));
        c.id.push(Some(i64::from(event.id)));
        c.version.push(Some(i64::from(event.version)));
        c.level.push(Some(i64::from(event.level)));
        c.keywords.push(Some(format!("0x{:x}", event.keywords)));
        c.pid.push(event.process_id.map(i64::from));
        c.tid.push(event.thread_id.map(i64::from));
        c.cpu.push(Some(i64::from(event.cpu)));
        c.activity.push((!event.activity_id.is_zero()).then(|| event.activity_id.to_string()));
        let properties = decoded.map(|schema| {
            let mut object = serde_json::Map::new();
            let mut text = String::new();
            for (field, value) in schema.fields.iter().zip(&values) {
                text.clear();
                format::text(field, value, event.pointer_size, &mut text);
                object.insert(field.name.clone(), serde_json::Value::String(text.clone()));
            }
            serde_json::Value::Object(object).to_string()
        });
        c.properties.push(properties);
    }
    (c.into_table(), damage)
}

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
    fn into_table(self) -> Table {
        let text = |name: &str, v: Vec<Option<String>>| (name.to_string(), Values::Text(v));
        let int = |name: &str, v: Vec<Option<i64>>| (name.to_string(), Values::Int(v));
        Table {
            name: "events".into(),
            columns: vec![
                text("time_utc", self.time_utc),
                ("seconds".into(), Values::Float(self.seconds)),
                text("provider", self.provider),
                text("provider_guid", self.provider_guid),
                text("event", self.event),
                text("task", self.task),
                text("opcode", self.opcode),
                int("id", self.id),
                int("version", self.version),
                int("level", self.level),
                text("keywords", self.keywords),
                int("pid", self.pid),
                int("tid", self.tid),
                int("cpu", self.cpu),
                text("activity", self.activity),
                text("properties", self.properties),
            ],
        }
    }
}
