//! Rows as a terminal table, CSV (RFC 4180) or JSON lines. JSON keeps types
//! (numbers, null, arrays, times as ISO 8601 text), CSV writes lists joined
//! by `;` and null as empty, the table aligns and shortens. What a trace
//! says never reaches a terminal or a spreadsheet as a command: the table
//! and CSV show control characters as escapes, and CSV makes a cell that a
//! spreadsheet would evaluate a formula text (`nettrail_decode::safe_text`).

use std::io::Write;

use nettrail_decode::format::json_string;
use nettrail_decode::safe_text::{push_csv_field, visible};

use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::cell::{Cell, Column};

/// How rows are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    /// Aligned columns for reading (the main columns, unless chosen).
    #[default]
    Table,
    /// Every column, RFC 4180.
    Csv,
    /// One JSON object per row, every column, typed.
    Jsonl,
}

/// The columns `chosen` names (in that order), or by default every column
/// (the table: the main ones).
pub fn shown<'c, R>(format: Format, columns: &'c [Column<R>], chosen: Option<&[String]>) -> Vec<&'c Column<R>> {
    match chosen {
        Some(names) => names.iter().filter_map(|n| columns.iter().find(|c| c.name == n)).collect(),
        None if format == Format::Table => columns.iter().filter(|c| c.main).collect(),
        None => columns.iter().collect(),
    }
}

/// Writes `rows` in `format`; `chosen` picks the columns.
pub fn write<R>(
    out: &mut impl Write,
    format: Format,
    columns: &[Column<R>],
    chosen: Option<&[String]>,
    rows: &[&R],
) -> std::io::Result<()> {
    write_fitted(out, format, columns, chosen, rows, None)
}

/// [`write()`], the table fitted into `width` display columns when given (a
/// terminal's): the widest text columns are cut, with `…`, until it fits.
pub fn write_fitted<R>(
    out: &mut impl Write,
    format: Format,
    columns: &[Column<R>],
    chosen: Option<&[String]>,
    rows: &[&R],
    width: Option<usize>,
) -> std::io::Result<()> {
    let shown = shown(format, columns, chosen);
    match format {
        Format::Jsonl => {
            let mut line = Vec::with_capacity(512);
            for row in rows {
                line.clear();
                jsonl_row(&mut line, &shown, row);
                out.write_all(&line)?;
            }
        }
        Format::Csv => {
            let mut line = String::new();
            csv_header(&mut line, &shown);
            out.write_all(line.as_bytes())?;
            for row in rows {
                line.clear();
                csv_row(&mut line, &shown, row);
                out.write_all(line.as_bytes())?;
            }
        }
        Format::Table => table(out, &shown, rows, width)?,
    }
    Ok(())
}

/// One JSON object of `columns`, and a line feed.
pub fn jsonl_row<R>(line: &mut Vec<u8>, columns: &[&Column<R>], row: &R) {
    line.push(b'{');
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            line.push(b',');
        }
        json_string(line, c.name);
        line.push(b':');
        (c.get)(row).json(line);
    }
    line.extend_from_slice(b"}\n");
}

/// The CSV header line of `columns`.
pub fn csv_header<R>(line: &mut String, columns: &[&Column<R>]) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        push_csv_field(line, c.name);
    }
    line.push_str("\r\n");
}

/// One CSV line of `columns`.
pub fn csv_row<R>(line: &mut String, columns: &[&Column<R>], row: &R) {
    for (i, c) in columns.iter().enumerate() {
        if i > 0 {
            line.push(',');
        }
        push_csv_field(line, &(c.get)(row).plain());
    }
    line.push_str("\r\n");
}

/// Display columns a text takes in a terminal (wide CJK characters and
/// emoji count two, combining marks none).
fn display_width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

/// Narrowest a text column is cut to when fitting a terminal (or its
/// heading's width, if wider): past that the line is left to wrap.
const MIN_FITTED: usize = 8;

fn table<R>(out: &mut impl Write, shown: &[&Column<R>], rows: &[&R], fit: Option<usize>) -> std::io::Result<()> {
    let cells: Vec<Vec<Cell>> = rows.iter().map(|r| shown.iter().map(|c| (c.get)(r)).collect()).collect();
    let mut texts: Vec<Vec<String>> = cells
        .iter()
        .map(|r| {
            r.iter()
                .zip(shown)
                .map(|(cell, col)| match cell {
                    Cell::Null => "-".to_string(),
                    // Escaped before measuring, so columns stay aligned.
                    other => shorten(&visible(&other.plain()), col.max_width),
                })
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = shown.iter().map(|c| display_width(c.name)).collect();
    for r in &texts {
        for (w, t) in widths.iter_mut().zip(r) {
            *w = (*w).max(display_width(t));
        }
    }
    let numeric: Vec<bool> = (0..shown.len()).map(|i| cells.iter().any(|r| r[i].is_numeric())).collect();
    if let Some(fit) = fit {
        // Cut the widest text columns, one display column at a time, until the line fits.
        let total = |w: &[usize]| w.iter().sum::<usize>() + 2 * w.len().saturating_sub(1);
        while total(&widths) > fit {
            let widest = (0..widths.len())
                .filter(|&i| !numeric[i] && widths[i] > MIN_FITTED.max(display_width(shown[i].name)))
                .max_by_key(|&i| widths[i]);
            let Some(i) = widest else { break };
            widths[i] -= 1;
        }
        for r in &mut texts {
            for (t, &w) in r.iter_mut().zip(&widths) {
                if display_width(t) > w {
                    *t = shorten(t, w);
                }
            }
        }
    }
    let line = |fields: &[String]| {
        let mut s = String::new();
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                s.push_str("  ");
            }
            let pad = widths[i].saturating_sub(display_width(f));
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
    Ok(())
}

/// `s` cut to at most `max` display columns, ending in `…` when cut.
fn shorten(s: &str, max: usize) -> String {
    if display_width(s) <= max {
        return s.to_string();
    }
    let mut t = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = UnicodeWidthChar::width(c).unwrap_or(0);
        if used + w + 1 > max {
            break;
        }
        t.push(c);
        used += w;
    }
    t.push('…');
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Kind, column};

    #[test]
    fn formats() {
        let columns = vec![
            column("name", Kind::Text, true, |r: &(&str, Option<u64>)| Cell::text(r.0)),
            column("bytes", Kind::Int, true, |r: &(&str, Option<u64>)| Cell::opt(r.1)),
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

    #[test]
    fn a_table_fits_a_terminal_counting_display_columns() {
        let columns = vec![
            column("host", Kind::Text, true, |r: &(&str, u64)| Cell::text(r.0)),
            column("n", Kind::Int, true, |r: &(&str, u64)| Cell::UInt(r.1)),
        ];
        let rows = [("名前.example.com/long/path", 12), ("a", 3)];
        let refs: Vec<&(&str, u64)> = rows.iter().collect();
        let mut out = Vec::new();
        write_fitted(&mut out, Format::Table, &columns, None, &refs, Some(16)).unwrap();
        let text = String::from_utf8(out).unwrap();
        for line in text.lines() {
            assert!(display_width(line) <= 16, "{line:?} is {} wide", display_width(line));
        }
        assert_eq!(text, "host           n\n名前.exampl…  12\na              3\n");
        // Past the narrowest a column is cut to, the line wraps.
        let mut out = Vec::new();
        write_fitted(&mut out, Format::Table, &columns, None, &refs, Some(4)).unwrap();
        assert!(String::from_utf8(out).unwrap().contains("名前.ex…  12"));
    }
}
