//! Tables as Parquet files, so DuckDB, Spark or pandas can query one trace or
//! fleets of them. Every table has a fixed schema, the same for every trace
//! (a column that is all null keeps its type): integers (INT64), numbers
//! (DOUBLE), booleans, text (STRING), times (TIMESTAMP, microseconds, UTC)
//! and lists (LIST of STRING or INT64). Pages are Snappy-compressed; a
//! table is written a row group at a time ([`TableWriter`]), so memory holds
//! one group whatever the length.

use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;

use nettrail_decode::Schemas;
use nettrail_etl::Trace;
use nettrail_tables::columnar::Values;
use nettrail_tables::{Column, Kind};
use parquet::basic::{Compression, LogicalType, Repetition, TimeUnit, Type as Physical};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// A Parquet file written a row group at a time.
pub struct TableWriter<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    schema: Vec<(String, Kind)>,
}

impl<W: Write + Send> std::fmt::Debug for TableWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter").field("schema", &self.schema).finish()
    }
}

/// The Parquet type of a column of `kind`.
fn field(name: &str, kind: Kind) -> Result<Arc<Type>, ParquetError> {
    let leaf = |name: &str, kind: Kind, repetition: Repetition| {
        let (physical, logical) = match kind {
            Kind::Int | Kind::IntList => (Physical::INT64, None),
            Kind::Float => (Physical::DOUBLE, None),
            Kind::Bool => (Physical::BOOLEAN, None),
            Kind::Text | Kind::TextList => (Physical::BYTE_ARRAY, Some(LogicalType::String)),
            Kind::Timestamp => (Physical::INT64, Some(LogicalType::timestamp(true, TimeUnit::MICROS))),
        };
        Type::primitive_type_builder(name, physical).with_repetition(repetition).with_logical_type(logical).build()
    };
    match kind {
        Kind::TextList | Kind::IntList => {
            // The three-level LIST every reader knows: optional group (LIST)
            // { repeated group list { optional element } }.
            let element = leaf("element", kind, Repetition::OPTIONAL)?;
            let list = Type::group_type_builder("list")
                .with_repetition(Repetition::REPEATED)
                .with_fields(vec![Arc::new(element)])
                .build()?;
            let outer = Type::group_type_builder(name)
                .with_repetition(Repetition::OPTIONAL)
                .with_logical_type(Some(LogicalType::List))
                .with_fields(vec![Arc::new(list)])
                .build()?;
            Ok(Arc::new(outer))
        }
        _ => leaf(name, kind, Repetition::OPTIONAL).map(Arc::new),
    }
}

impl<W: Write + Send> TableWriter<W> {
    /// A table named `name` of these columns.
    pub fn new(out: W, name: &str, schema: &[(&str, Kind)]) -> Result<Self, ParquetError> {
        let fields = schema.iter().map(|(n, k)| field(n, *k)).collect::<Result<Vec<_>, _>>()?;
        let root = Type::group_type_builder(name).with_fields(fields).build()?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let writer = SerializedFileWriter::new(out, Arc::new(root), Arc::new(props))?;
        Ok(TableWriter { writer, schema: schema.iter().map(|(n, k)| (n.to_string(), *k)).collect() })
    }

    /// Writes one row group: a value list per column, all of one length,
    /// of the table's types in its order.
    pub fn write(&mut self, columns: Vec<Values>) -> Result<(), ParquetError> {
        let rows = columns.first().map_or(0, Values::len);
        if columns.len() != self.schema.len() {
            return Err(ParquetError::General(format!("{} columns given for {}", columns.len(), self.schema.len())));
        }
        for ((name, kind), values) in self.schema.iter().zip(&columns) {
            if values.len() != rows || values.kind() != *kind {
                return Err(ParquetError::General(format!(
                    "column {name}: {} values of another length or type",
                    values.len()
                )));
            }
        }
        let mut group = self.writer.next_row_group()?;
        let mut columns = columns.into_iter();
        while let Some(mut column) = group.next_column()? {
            let Some(values) = columns.next() else { break };
            match values {
                Values::Int(v) | Values::Timestamp(v) => {
                    let (present, levels) = split(&v);
                    column.typed::<Int64Type>().write_batch(&present, Some(&levels), None)?;
                }
                Values::Float(v) => {
                    let (present, levels) = split(&v);
                    column.typed::<DoubleType>().write_batch(&present, Some(&levels), None)?;
                }
                Values::Bool(v) => {
                    let (present, levels) = split(&v);
                    column.typed::<BoolType>().write_batch(&present, Some(&levels), None)?;
                }
                Values::Text(v) => {
                    let levels: Vec<i16> = v.iter().map(|x| i16::from(x.is_some())).collect();
                    // The strings' buffers become the values: no copy.
                    let present: Vec<ByteArray> =
                        v.into_iter().flatten().map(|s| ByteArray::from(s.into_bytes())).collect();
                    column.typed::<ByteArrayType>().write_batch(&present, Some(&levels), None)?;
                }
                Values::TextList(v) => {
                    let (items, def, rep) = list_levels(v);
                    let items: Vec<ByteArray> = items.into_iter().map(|s| ByteArray::from(s.into_bytes())).collect();
                    column.typed::<ByteArrayType>().write_batch(&items, Some(&def), Some(&rep))?;
                }
                Values::IntList(v) => {
                    let (items, def, rep) = list_levels(v);
                    column.typed::<Int64Type>().write_batch(&items, Some(&def), Some(&rep))?;
                }
            }
            column.close()?;
        }
        group.close()?;
        Ok(())
    }

    /// Writes `rows` of `columns` (the table's, in order) as one row group.
    pub fn write_rows<R>(&mut self, columns: &[Column<R>], rows: &[&R]) -> Result<(), ParquetError> {
        self.write(nettrail_tables::columnar::columns_of(columns, rows))
    }

    pub fn finish(self) -> Result<(), ParquetError> {
        self.writer.close()?;
        Ok(())
    }
}

/// Writes a whole table of `columns` over `rows` as one Parquet file.
pub fn write_table<R, W: Write + Send>(
    out: W,
    name: &str,
    columns: &[Column<R>],
    rows: &[&R],
) -> Result<(), ParquetError> {
    let schema: Vec<(&str, Kind)> = columns.iter().map(|c| (c.name, c.kind)).collect();
    let mut writer = TableWriter::new(out, name, &schema)?;
    writer.write_rows(columns, rows)?;
    writer.finish()
}

/// The present values, and a definition level per row (1 present, 0 null).
fn split<T: Copy>(v: &[Option<T>]) -> (Vec<T>, Vec<i16>) {
    (v.iter().flatten().copied().collect(), v.iter().map(|x| i16::from(x.is_some())).collect())
}

/// The elements of a list column and their definition and repetition
/// levels: a null list is (def 0), an empty one (def 1), an element (def 3,
/// repetition 0 for a row's first element, 1 for the others).
fn list_levels<T>(rows: Vec<Option<Vec<T>>>) -> (Vec<T>, Vec<i16>, Vec<i16>) {
    let (mut items, mut def, mut rep) = (Vec::new(), Vec::new(), Vec::new());
    for row in rows {
        match row {
            None => {
                def.push(0);
                rep.push(0);
            }
            Some(list) if list.is_empty() => {
                def.push(1);
                rep.push(0);
            }
            Some(list) => {
                for (i, item) in list.into_iter().enumerate() {
                    items.push(item);
                    def.push(3);
                    rep.push(i16::from(i > 0));
                }
            }
        }
    }
    (items, def, rep)
}

pub use crate::events::table::SCHEMA as EVENTS_SCHEMA;

/// Events per row group of the `events` table: memory holds one group.
const GROUP_ROWS: usize = 16 * 1024;

/// What writing the `events` table met.
#[derive(Debug, Default)]
pub struct EventsWritten {
    pub events: u64,
    /// Damage, in stream order (every readable event was written).
    pub damage: Vec<nettrail_etl::Error>,
    /// Buffers read out of time order ([`nettrail_etl::EventStream::reordered`]).
    pub reordered: u64,
}

/// Writes every event of a trace as the `events` table, a row group at a
/// time, decoding on every core. `progress` is told the raw timestamp reached.
/// One file, however many events: its footer (each row group's metadata and
/// page indexes, ~25 KB a group) is held until the end.
pub fn write_events<W: Write + Send>(
    out: W,
    trace: &Trace<'_>,
    schemas: &Schemas,
    progress: &mut dyn FnMut(u64),
) -> Result<EventsWritten, ParquetError> {
    let mut out = Some(out);
    let mut one_file = |_| out.take().ok_or_else(|| ParquetError::General("one file only".into()));
    write_events_with(&mut one_file, usize::MAX, trace, schemas, None, progress)
}

/// Row groups of the `events` table per file of a dataset: a writer holds
/// every group's metadata until it closes its file (~25 KB a group), so a
/// file per this many groups (4 M events) keeps that bounded (a 10 GB trace
/// has ~30 000 groups: the footer had grown past 600 MB).
pub const GROUPS_PER_PART: usize = 256;

/// [`write_events`] into files `open(0)`, `open(1)`, … of at most
/// `groups_per_part` row groups each, with a first column `trace` holding
/// `trace_name` when given (datasets).
pub fn write_events_with<W: Write + Send>(
    open: &mut dyn FnMut(usize) -> Result<W, ParquetError>,
    groups_per_part: usize,
    trace: &Trace<'_>,
    schemas: &Schemas,
    trace_name: Option<&str>,
    progress: &mut dyn FnMut(u64),
) -> Result<EventsWritten, ParquetError> {
    let mut schema: Vec<(&str, Kind)> = trace_name.map(|_| ("trace", Kind::Text)).into_iter().collect();
    schema.extend(EVENTS_SCHEMA);
    let mut writer = TableWriter::new(open(0)?, "events", &schema)?;
    let (mut parts, mut groups) = (1, 0);
    let mut failed = None;
    let read = crate::events::table::read(trace, schemas, trace_name, GROUP_ROWS, progress, |group| {
        let write = || {
            if groups == groups_per_part {
                let next = TableWriter::new(open(parts)?, "events", &schema)?;
                std::mem::replace(&mut writer, next).finish()?;
                (parts, groups) = (parts + 1, 0);
            }
            groups += 1;
            writer.write(group)
        };
        match write() {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                failed = Some(e);
                ControlFlow::Break(())
            }
        }
    });
    if let Some(e) = failed {
        return Err(e);
    }
    writer.finish()?;
    Ok(EventsWritten { events: read.events, damage: read.damage, reordered: read.reordered })
}

#[cfg(test)]
mod tests {
    use super::*;
    use nettrail_tables::{Cell, column};

    /// A writer whose bytes stay readable after the Parquet writer drops it.
    #[derive(Clone, Default)]
    struct Shared(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn events_roll_over_to_a_new_file_every_few_row_groups() {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let file =
            nettrail_etl::TraceFile::open(nettrail_testkit::corpus_file("perfview__net.4.5.x86.PerfViewData.etl"))
                .unwrap();
        let trace = Trace::open(&file).unwrap();
        let mut schemas = Schemas::new();
        let _ = schemas.learn(&trace);
        let mut parts: Vec<Shared> = Vec::new();
        let mut open = |number: usize| {
            assert_eq!(number, parts.len(), "files are asked for in order");
            parts.push(Shared::default());
            Ok(parts[number].clone())
        };
        let written = write_events_with(&mut open, 4, &trace, &schemas, Some("t"), &mut |_| {}).unwrap();
        let events = nettrail_etl::Summary::compute(&trace).events;
        assert_eq!(written.events, events);
        let groups = (events as usize).div_ceil(GROUP_ROWS);
        assert!(groups > 8, "{groups} row groups");
        assert_eq!(parts.len(), groups.div_ceil(4));
        let mut rows = 0;
        for part in &parts {
            let bytes = bytes::Bytes::from(part.0.lock().unwrap().clone());
            let reader = SerializedFileReader::new(bytes).unwrap();
            assert!(reader.metadata().num_row_groups() <= 4);
            rows += reader.metadata().file_metadata().num_rows();
        }
        assert_eq!(rows as u64, events);
    }

    #[test]
    fn typed_columns_read_back() {
        type Row = (Option<u64>, Option<Vec<String>>, i64);
        let columns = vec![
            column("n", Kind::Int, true, |r: &Row| Cell::opt(r.0)),
            column("names", Kind::TextList, true, |r: &Row| r.1.clone().map_or(Cell::Null, Cell::List)),
            column("at", Kind::Timestamp, true, |r: &Row| Cell::Time(r.2)),
        ];
        let epoch = nettrail_etl::clock::FILETIME_UNIX_EPOCH;
        let rows: Vec<Row> = vec![
            (Some(1), Some(vec!["a".into(), "b".into()]), epoch + 10_000_000),
            (None, Some(vec![]), epoch),
            (Some(3), None, epoch + 15),
        ];
        let refs: Vec<&Row> = rows.iter().collect();
        let mut bytes = Vec::new();
        write_table(&mut bytes, "t", &columns, &refs).unwrap();
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 3);
        let rows: Vec<String> = reader.get_row_iter(None).unwrap().map(|r| r.unwrap().to_string()).collect();
        assert_eq!(rows[0], "{n: 1, names: [\"a\", \"b\"], at: 1970-01-01 00:00:01.000000 +00:00}");
        assert_eq!(rows[1], "{n: null, names: [], at: 1970-01-01 00:00:00.000000 +00:00}");
        assert_eq!(rows[2], "{n: 3, names: null, at: 1970-01-01 00:00:00.000001 +00:00}");
    }
}
