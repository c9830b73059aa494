//! Many traces as one Parquet dataset, Hive-partitioned by table and trace:
//!
//! ```text
//! DATASET/table=requests/trace=<name>/part-0.parquet
//! DATASET/table=connections/trace=<name>/part-0.parquet
//! DATASET/table=dns/…  table=http_server/…  table=browser/…  table=events/…
//! DATASET/table=events/trace=<name>/part-1.parquet, part-2.parquet, …
//! ```
//!
//! The events come in files of [`GROUPS_PER_PART`] row groups (4 M events):
//! a Parquet writer holds every row group's metadata until it closes its file.
//!
//! Every file of a table has the same schema (the table's fixed columns,
//! [`nettrail_tables::Table::schema`]), with a first column `trace` naming
//! the trace, equal to its partition value. DuckDB reads a table of every
//! trace with one glob (`read_parquet('DATASET/table=requests/*/*.parquet',
//! hive_partitioning = true)`), as do Spark and pandas/pyarrow.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use nettrail_net::Report;
use nettrail_tables::{Analysed, Cell, Column, Filters, Kind, Table, column, columns};

use crate::parquet::{GROUPS_PER_PART, TableWriter, write_events_with};
use parquet::errors::ParquetError;

/// A dataset being written.
#[derive(Debug)]
pub struct Dataset {
    root: PathBuf,
    names: HashSet<String>,
}

/// What one trace added.
#[derive(Debug)]
pub struct Added {
    /// Its partition name (the file's stem, made unique and safe).
    pub name: String,
    /// Rows per table, in [`Table::ALL`] order, then events.
    pub rows: [usize; 5],
    pub events: u64,
    /// Damage met while reading it (everything readable was written).
    pub damage: Vec<nettrail_etl::Error>,
}

/// An error writing part of the dataset, naming the file.
#[derive(Debug)]
pub struct DatasetError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl std::fmt::Display for DatasetError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: cannot write: {}", self.path.display(), self.error)
    }
}

impl std::error::Error for DatasetError {}

impl Dataset {
    /// A dataset in `root` (created if need be). Traces already in it keep
    /// their partitions; a trace added again replaces its own.
    pub fn create(root: &Path) -> io::Result<Dataset> {
        std::fs::create_dir_all(root)?;
        Ok(Dataset { root: root.to_path_buf(), names: HashSet::new() })
    }

    /// The partition name of a trace file: its stem with every character
    /// but letters, digits, `.`, `-` and `_` replaced by `_`, and a number
    /// added when two traces of one run would share it.
    pub fn name_for(&mut self, trace: &Path) -> String {
        let stem = trace.file_stem().map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
        let safe: String = stem
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' })
            .collect();
        let safe = if safe.is_empty() || safe.starts_with('.') { format!("trace{safe}") } else { safe };
        let mut name = safe.clone();
        let mut n = 2;
        while !self.names.insert(name.clone()) {
            name = format!("{safe}-{n}");
            n += 1;
        }
        name
    }

    fn part(&self, table: &str, name: &str) -> io::Result<(PathBuf, std::io::BufWriter<std::fs::File>)> {
        self.numbered_part(table, name, 0)
    }

    /// File `number` of a table's partition (`part-NUMBER.parquet`).
    fn numbered_part(
        &self,
        table: &str,
        name: &str,
        number: usize,
    ) -> io::Result<(PathBuf, std::io::BufWriter<std::fs::File>)> {
        let dir = self.root.join(format!("table={table}")).join(format!("trace={name}"));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join(format!("part-{number}.parquet"));
        let file = std::fs::File::create(&path)?;
        Ok((path, std::io::BufWriter::with_capacity(1 << 20, file)))
    }

    /// Writes an analysed trace's tables and events under the partition `name`.
    pub fn add(
        &mut self,
        name: &str,
        analysed: &Analysed<'_>,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Added, DatasetError> {
        let report: Report = analysed.report();
        let requests = nettrail_tables::requests(&report, &Filters::default());
        let mut rows = [0; 5];
        for (i, table) in Table::ALL.into_iter().enumerate() {
            rows[i] = match table {
                Table::Requests => self.table(
                    name,
                    table,
                    with_trace(name, columns::requests(&report)),
                    &requests.iter().collect::<Vec<_>>(),
                )?,
                Table::Connections => self.table(
                    name,
                    table,
                    with_trace(name, columns::connections(&report)),
                    &report.connections.iter().collect::<Vec<_>>(),
                )?,
                Table::Dns => self.table(
                    name,
                    table,
                    with_trace(name, columns::dns(&report)),
                    &report.dns.iter().collect::<Vec<_>>(),
                )?,
                Table::HttpServer => self.table(
                    name,
                    table,
                    with_trace(name, columns::http_server(&report)),
                    &report.http_server.iter().collect::<Vec<_>>(),
                )?,
                Table::Browser => self.table(
                    name,
                    table,
                    with_trace(name, columns::browser(&report)),
                    &report.browser.iter().collect::<Vec<_>>(),
                )?,
            };
        }
        // The events in files of GROUPS_PER_PART row groups each (part-0, part-1, …).
        let mut path = self.root.clone();
        let mut open = |number| {
            let (at, out) =
                self.numbered_part("events", name, number).map_err(|e| ParquetError::External(Box::new(e)))?;
            path = at;
            Ok(out)
        };
        let driven =
            write_events_with(&mut open, GROUPS_PER_PART, &analysed.trace, &analysed.schemas, Some(name), progress)
                .map_err(|e| DatasetError { path: path.clone(), error: io::Error::other(e) })?;
        let mut damage = analysed.analysis.damage.clone();
        if damage.is_empty() {
            damage = driven.damage;
        }
        Ok(Added { name: name.to_string(), rows, events: driven.events, damage })
    }

    fn table<R>(&self, name: &str, table: Table, columns: Vec<Column<R>>, rows: &[&R]) -> Result<usize, DatasetError> {
        let (path, out) =
            self.part(table.name(), name).map_err(|error| DatasetError { path: self.root.clone(), error })?;
        let fail = |e: parquet::errors::ParquetError| DatasetError { path: path.clone(), error: io::Error::other(e) };
        let schema: Vec<(&str, Kind)> = columns.iter().map(|c| (c.name, c.kind)).collect();
        let mut writer = TableWriter::new(out, table.name(), &schema).map_err(fail)?;
        writer.write_rows(&columns, rows).map_err(fail)?;
        writer.finish().map_err(fail)?;
        Ok(rows.len())
    }
}

/// The columns with a first column `trace` holding the partition name.
fn with_trace<R>(name: &str, columns: Vec<Column<R>>) -> Vec<Column<R>> {
    let name = name.to_string();
    let mut all = vec![column("trace", Kind::Text, false, move |_: &R| Cell::text(name.clone()))];
    all.extend(columns);
    all
}
