//! Typed cells and the type of each column: every table has a fixed
//! schema, the same for every trace, whatever its rows hold.

use std::cmp::Ordering;
use std::io::Write as _;

use nettrail_decode::format::{json_string, json_string_array};
use nettrail_etl::FileTime;

/// What a column holds, for the writers that keep types (Parquet, Arrow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A 64-bit integer.
    Int,
    /// A number with a fixed number of decimals in text.
    Float,
    Bool,
    Text,
    /// A time: UTC, 100 ns (shown as ISO 8601 text).
    Timestamp,
    /// A list of text.
    TextList,
    /// A list of integers.
    IntList,
}

impl Kind {
    /// The type's name as the tables document it.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Int => "int64",
            Kind::Float => "float64",
            Kind::Bool => "bool",
            Kind::Text => "string",
            Kind::Timestamp => "timestamp[us, UTC]",
            Kind::TextList => "list<string>",
            Kind::IntList => "list<int64>",
        }
    }
}

/// One value of a row.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    Null,
    Text(String),
    UInt(u64),
    /// A number shown with this many decimals.
    Float(f64, usize),
    Bool(bool),
    /// A FILETIME (100 ns since 1601, UTC).
    Time(i64),
    List(Vec<String>),
    Numbers(Vec<u64>),
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    pub fn opt<T: Into<Cell>>(v: Option<T>) -> Cell {
        v.map_or(Cell::Null, Into::into)
    }

    /// Shown in a table or CSV (lists joined by `;`, null empty).
    pub fn plain(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Text(s) => s.clone(),
            Cell::UInt(v) => v.to_string(),
            Cell::Float(v, d) => format!("{v:.d$}"),
            Cell::Bool(b) => b.to_string(),
            Cell::Time(t) => FileTime(*t).to_string(),
            Cell::List(v) => v.join(";"),
            Cell::Numbers(v) => v.iter().map(u64::to_string).collect::<Vec<_>>().join(";"),
        }
    }

    /// The typed JSON of the cell: numbers, booleans, null, arrays; times
    /// as ISO 8601 text.
    pub fn json(&self, out: &mut Vec<u8>) {
        match self {
            Cell::Null => out.extend_from_slice(b"null"),
            Cell::Text(s) => json_string(out, s),
            Cell::UInt(v) => out.extend_from_slice(itoa::Buffer::new().format(*v).as_bytes()),
            Cell::Float(v, d) if v.is_finite() => {
                let _ = write!(out, "{v:.d$}");
            }
            Cell::Float(..) => out.extend_from_slice(b"null"),
            Cell::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Cell::Time(t) => json_string(out, &FileTime(*t).to_string()),
            Cell::List(v) => json_string_array(out, v),
            Cell::Numbers(v) => {
                out.push(b'[');
                for (i, n) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes());
                }
                out.push(b']');
            }
        }
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self, Cell::UInt(_) | Cell::Float(..))
    }

    /// Ordering for sorting: numbers by value, times by time, text
    /// case-insensitively. Nulls are not ordered here (see [`crate::select::sort`]).
    pub fn compare(&self, other: &Cell) -> Ordering {
        let num = |c: &Cell| match c {
            Cell::UInt(v) => Some(*v as f64),
            Cell::Float(v, _) => Some(*v),
            Cell::Time(t) => Some(*t as f64),
            _ => None,
        };
        match (num(self), num(other)) {
            (Some(a), Some(b)) => a.total_cmp(&b),
            _ => self.plain().to_lowercase().cmp(&other.plain().to_lowercase()),
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<u64> for Cell {
    fn from(v: u64) -> Cell {
        Cell::UInt(v)
    }
}

impl From<u32> for Cell {
    fn from(v: u32) -> Cell {
        Cell::UInt(u64::from(v))
    }
}

impl From<u16> for Cell {
    fn from(v: u16) -> Cell {
        Cell::UInt(u64::from(v))
    }
}

/// A named, typed column and how to read it from a row.
pub struct Column<R> {
    pub name: &'static str,
    pub kind: Kind,
    /// Shown by the terminal table unless the user chooses columns.
    pub main: bool,
    /// Widest a terminal table shows it (longer text is cut with `…`).
    pub max_width: usize,
    pub get: Box<dyn Fn(&R) -> Cell + Send + Sync>,
}

impl<R> std::fmt::Debug for Column<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.name, self.kind.name())
    }
}

/// A column of `kind`; `main` puts it in the terminal table.
pub fn column<R>(
    name: &'static str,
    kind: Kind,
    main: bool,
    get: impl Fn(&R) -> Cell + Send + Sync + 'static,
) -> Column<R> {
    Column { name, kind, main, max_width: 60, get: Box::new(get) }
}
