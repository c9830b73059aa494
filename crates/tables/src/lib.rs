//! The network tables of an ETW trace — requests, connections, DNS lookups,
//! Http.sys requests, browsers' regions and events — as the contract every output shares: named, typed
//! columns ([`columns`]), filters and sorting ([`select`]), and the terminal
//! table, CSV and JSON-lines renderings ([`render`]). The Parquet export,
//! the HTML report and the Python package read the same columns, so a
//! column means one thing everywhere.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use nettrail_tables::{Analysed, Filters, columns, render};
//! let file = nettrail_etl::TraceFile::open("trace.etl")?;
//! let trace = nettrail_etl::Trace::open(&file)?;
//! let mut schemas = nettrail_decode::Schemas::new();
//! schemas.learn(&trace);
//! let analysed = Analysed::new(trace, schemas, &mut |_| {});
//! let report = analysed.report();
//! let rows = nettrail_tables::requests(&report, &Filters::default());
//! let refs: Vec<_> = rows.iter().collect();
//! render::write(&mut std::io::stdout(), render::Format::Csv, &columns::requests(&report), None, &refs)?;
//! # Ok(()) }
//! ```

mod analysed;
mod browser;
pub mod cell;
pub mod columnar;
pub mod columns;
pub mod render;
pub mod select;

pub use analysed::{Analysed, requests};
pub use cell::{Cell, Column, Kind, column};
pub use columnar::Values;
pub use columns::{Request, StackView};
pub use select::{Filterable, Filters, UnknownColumn};

/// The tables, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Table {
    Requests,
    Connections,
    Dns,
    HttpServer,
    Browser,
}

impl Table {
    pub const ALL: [Table; 5] = [Table::Requests, Table::Connections, Table::Dns, Table::HttpServer, Table::Browser];

    /// The name files and datasets use (`requests`, `connections`, `dns`, `http_server`, `browser`).
    pub fn name(self) -> &'static str {
        match self {
            Table::Requests => "requests",
            Table::Connections => "connections",
            Table::Dns => "dns",
            Table::HttpServer => "http_server",
            Table::Browser => "browser",
        }
    }

    /// Each column's name and type: the table's fixed schema.
    pub fn schema(self) -> Vec<(&'static str, Kind)> {
        fn of<R>(columns: Vec<Column<R>>) -> Vec<(&'static str, Kind)> {
            columns.into_iter().map(|c| (c.name, c.kind)).collect()
        }
        match self {
            Table::Requests => of(columns::requests_from(0)),
            Table::Connections => of(columns::connections_from(0)),
            Table::Dns => of(columns::dns_from(0)),
            Table::HttpServer => of(columns::http_server_from(0)),
            Table::Browser => of(columns::browser_from(0)),
        }
    }
}
