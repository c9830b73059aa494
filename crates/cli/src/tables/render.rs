//! Rows as a terminal table, CSV (RFC 4180) or JSON lines, from columns of
//! typed cells: JSON keeps types (numbers, null, arrays), CSV writes lists
//! joined by `;` and null as empty, the table aligns and shortens. What a
//! trace says never reaches a terminal or a spreadsheet as a command: the
//! table and CSV show control characters as escapes, and CSV makes a cell
//! that a spreadsheet would evaluate a formula text (`nettrail_decode::safe_text`).

use std::cmp::Ordering;
use std::io::Write;

use clap::ValueEnum;
use nettrail_decode::safe_text::{push_csv_field, visible};

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns for reading (the main columns; --columns for others).
    #[default]
    Table,
    /// Every column, RFC 4180.
    Csv,
    /// One JSON object per row, every column, typed.
    Jsonl,
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

    /// Shown in a table or CSV.
    pub fn plain(&self) -> String {
        match self {
            Cell::Null => String::new(),
            Cell::Text(s) => s.clone(),
            Cell::UInt(v) => v.to_string(),
            Cell::Float(v, d) => format!("{v:.d$}"),
            Cell::Bool(b) => b.to_string(),
            Cell::List(v) => v.join(";"),
            Cell::Numbers(v) => v.iter().map(u64::to_string).collect::<Vec<_>>().join(";"),
        }
    }

    pub(crate) fn json(&self, out: &mut Vec<u8>) {
        match self {
            Cell::Null => out.extend_from_slice(b"null"),
            Cell::Text(s) => crate::json::string(out, s),
            Cell::UInt(v) => crate::json::uint(out, *v),
            Cell::Float(v, d) if v.is_finite() => {
                let _ = write!(out, "{v:.d$}");
            }
            Cell::Float(..) => out.extend_from_slice(b"null"),
            Cell::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Cell::List(v) => crate::json::string_array(out, v),
            Cell::Numbers(v) => {
                out.push(b'[');
                for (i, n) in v.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    crate::json::uint(out, *n);
                }
                out.push(b']');
            }
        }
    }

    fn is_numeric(&self) -> bool {
        matches!(self, Cell::UInt(_) | Cell::Float(..))
    }

    /// Ordering for `--sort`: numbers by value, text case-insensitively, nulls last.
    pub fn compare(&self, other: &Cell) -> Ordering {
        let num = |c: &Cell| match c {
            Cell::UInt(v) => Some(*v as f64),
            Cell::Float(v, _) => Some(*v),
            _ => None,
        };
        match (self, other) {
            (Cell::Null, Cell::Null) => Ordering::Equal,
            (Cell::Null, _) => Ordering::Greater,
            (_, Cell::Null) => Ordering::Less,
            _ => match (num(self), num(other)) {
                (Some(a), Some(b)) => a.total_cmp(&b),
                _ => self.plain().to_lowercase().cmp(&other.plain().to_lowercase()),
            },
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

/// A named column and how to read it from a row.
pub struct Column<R> {
    pub name: &'static str,
    pub get: Box<dyn Fn(&R) -> Cell>,
    /// Shown by `--format table` unless `--columns` says otherwise.
    pub in_table: bool,
    /// Widest a table shows it (longer text is cut with `…`).
    pub max_width: usize,
}

impl<R> std::fmt::Debug for Column<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

pub fn column<R>(name: &'static str, in_table: bool, get: impl Fn(&R) -> Cell + 'static) -> Column<R> {
    Column { name, get: Box::new(get), in_table, max_width: 60 }
}

/// Writes `rows` in `format`; `columns` chooses the table's columns.
pub fn write<R>(
    out: &mut impl Write,
    format: Format,
    columns: &[Column<R>],
    chosen: Option<&[String]>,
    rows: &[&R],
) -> std::io::Result<()> {
    let shown: Vec<&Column<R>> = match chosen {
        Some(names) => names.iter().filter_map(|n| columns.iter().find(|c| c.name == n)).collect(),
        None if format == Format::Table => columns.iter().filter(|c| c.in_table).collect(),
        None => columns.iter().collect(),
    };
    match format {
        Format::Jsonl => {
            let mut line = Vec::with_capacity(512);
            for row in rows {
                line.clear();
                line.push(b'{');
                for (i, c) in shown.iter().enumerate() {
                    if i > 0 {
                        line.push(b',');
                    }
                    crate::json::string(&mut line, c.name);
                    line.push(b':');
                    (c.get)(row).json(&mut line);
                }
                line.extend_from_slice(b"}\n");
                out.write_all(&line)?;
            }
        }
        Format::Csv => {
            let mut line = String::new();
            for (i, c) in shown.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                push_csv_field(&mut line, c.name);
            }
            line.push_str("\r\n");
            out.write_all(line.as_bytes())?;
            for row in rows {
                line.clear();
                for (i, c) in shown.iter().enumerate() {
                    if i > 0 {
                        line.push(',');
                    }
                    push_csv_field(&mut line, &(c.get)(row).plain());
                }
                line.push_str("\r\n");
                out.write_all(line.as_bytes())?;
            }
        }
        Format::Table => {
            let cells: Vec<Vec<Cell>> = rows.iter().map(|r| shown.iter().map(|c| (c.get)(r)).collect()).collect();
            let texts: Vec<Vec<String>> = cells
                .iter()
                .map(|r| {
                    r.iter()
                        .zip(&shown)
                        .map(|(cell, col)| match cell {
                            Cell::Null => "-".to_string(),
                            // Escaped before measuring, so columns stay aligned.
                            other => shorten(&visible(&other.plain()), col.max_width),
                        })
                        .collect()
                })
                .collect();
            let mut widths: Vec<usize> = shown.iter().map(|c| c.name.chars().count()).collect();
            for r in &texts {
                for (w, t) in widths.iter_mut().zip(r) {
                    *w = (*w).max(t.chars().count());
                }
            }
            let numeric: Vec<bool> = (0..shown.len()).map(|i| cells.iter().any(|r| r[i].is_numeric())).collect();
            let line = |fields: &[String]| {
                let mut s = String::new();
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        s.push_str("  ");
                    }
                    let pad = widths[i].saturating_sub(f.chars().count());
                    if numeric[i] {
                        s.extend(std::iter::repeat_n(' ', pad));
                        s.push_str(f);
                    } else {
                        s.push_str(f);
                        if i + 1 < fields.len() {
                            s.extend(std::iter::repeat_n(' ', pad));
                        }
                    }
                }
                s.push('\n');
                s
            };
            let header: Vec<String> = shown.iter().map(|c| c.name.to_string()).collect();
            out.write_all(line(&header).as_bytes())?;
            for r in &texts {
                out.write_all(line(r).as_bytes())?;
            }
        }
    }
    Ok(())
}

fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max.saturating_sub(1)).collect();
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let columns = vec![
            column("name", true, |r: &(&str, Option<u64>)| Cell::text(r.0)),
            column("bytes", true, |r: &(&str, Option<u64>)| Cell::opt(r.1)),
        ];
        let rows = [("a,\"b\"", Some(5)), ("c", None)];
        let refs: Vec<&(&str, Option<u64>)> = rows.iter().collect();
        let mut out = Vec::new();
        write(&mut out, Format::Csv, &columns, None, &refs).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "name,bytes\r\n\"a,\"\"b\"\"\",5\r\nc,\r\n");
        let mut out = Vec::new();
        write(&mut out, Format::Jsonl, &columns, None, &refs).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"name\":\"a,\\\"b\\\"\",\"bytes\":5}\n{\"name\":\"c\",\"bytes\":null}\n"
        );
        let mut out = Vec::new();
        write(&mut out, Format::Table, &columns, None, &refs).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "name   bytes\na,\"b\"      5\nc          -\n");
    }
}
