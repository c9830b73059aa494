//! A table's columns as typed value lists, by the column's declared
//! [`Kind`]: what columnar writers take (Parquet, Arrow for Python).

use nettrail_etl::clock::FILETIME_UNIX_EPOCH;

use crate::cell::{Cell, Column, Kind};

/// One column's values, all of its kind; `None` is null.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
    /// Microseconds since 1970-01-01 UTC.
    Timestamp(Vec<Option<i64>>),
    TextList(Vec<Option<Vec<String>>>),
    IntList(Vec<Option<Vec<i64>>>),
}

impl Values {
    /// An empty list of `kind`.
    pub fn empty(kind: Kind) -> Values {
        match kind {
            Kind::Int => Values::Int(Vec::new()),
            Kind::Float => Values::Float(Vec::new()),
            Kind::Bool => Values::Bool(Vec::new()),
            Kind::Text => Values::Text(Vec::new()),
            Kind::Timestamp => Values::Timestamp(Vec::new()),
            Kind::TextList => Values::TextList(Vec::new()),
            Kind::IntList => Values::IntList(Vec::new()),
        }
    }

    pub fn kind(&self) -> Kind {
        match self {
            Values::Int(_) => Kind::Int,
            Values::Float(_) => Kind::Float,
            Values::Bool(_) => Kind::Bool,
            Values::Text(_) => Kind::Text,
            Values::Timestamp(_) => Kind::Timestamp,
            Values::TextList(_) => Kind::TextList,
            Values::IntList(_) => Kind::IntList,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Values::Int(v) | Values::Timestamp(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Text(v) => v.len(),
            Values::TextList(v) => v.len(),
            Values::IntList(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds one cell, read as this column's kind (a cell of another type,
    /// which the column definitions never give, is null).
    pub fn push(&mut self, cell: Cell) {
        match (self, cell) {
            (Values::Int(v), Cell::UInt(n)) => v.push(i64::try_from(n).ok()),
            (Values::Int(v), _) => v.push(None),
            (Values::Float(v), Cell::Float(x, _)) => v.push(x.is_finite().then_some(x)),
            (Values::Float(v), _) => v.push(None),
            (Values::Bool(v), Cell::Bool(b)) => v.push(Some(b)),
            (Values::Bool(v), _) => v.push(None),
            (Values::Timestamp(v), Cell::Time(ft)) => v.push(Some(unix_micros(ft))),
            (Values::Timestamp(v), _) => v.push(None),
            (Values::TextList(v), Cell::List(items)) => v.push(Some(items)),
            (Values::TextList(v), _) => v.push(None),
            (Values::IntList(v), Cell::Numbers(items)) => {
                v.push(Some(items.into_iter().map(|n| i64::try_from(n).unwrap_or(i64::MAX)).collect()))
            }
            (Values::IntList(v), _) => v.push(None),
            (Values::Text(v), Cell::Null) => v.push(None),
            (Values::Text(v), cell) => v.push(Some(cell.plain())),
        }
    }

    /// `other`'s values after this one's (of the same kind; others are ignored).
    pub fn append(&mut self, other: Values) {
        match (self, other) {
            (Values::Int(a), Values::Int(b)) | (Values::Timestamp(a), Values::Timestamp(b)) => a.extend(b),
            (Values::Float(a), Values::Float(b)) => a.extend(b),
            (Values::Bool(a), Values::Bool(b)) => a.extend(b),
            (Values::Text(a), Values::Text(b)) => a.extend(b),
            (Values::TextList(a), Values::TextList(b)) => a.extend(b),
            (Values::IntList(a), Values::IntList(b)) => a.extend(b),
            _ => {}
        }
    }
}

/// Microseconds since 1970 of a FILETIME (100 ns since 1601), toward the past.
pub fn unix_micros(filetime: i64) -> i64 {
    (filetime - FILETIME_UNIX_EPOCH).div_euclid(10)
}

/// Every column of `columns` over `rows`, typed.
pub fn columns_of<R>(columns: &[Column<R>], rows: &[&R]) -> Vec<Values> {
    columns
        .iter()
        .map(|c| {
            let mut values = Values::empty(c.kind);
            for row in rows {
                values.push((c.get)(row));
            }
            values
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_become_their_columns_type() {
        let mut t = Values::empty(Kind::Timestamp);
        t.push(Cell::Time(FILETIME_UNIX_EPOCH + 15));
        t.push(Cell::Null);
        assert_eq!(t, Values::Timestamp(vec![Some(1), None]));
        let mut l = Values::empty(Kind::TextList);
        l.push(Cell::List(vec!["a".into()]));
        l.push(Cell::List(vec![]));
        l.push(Cell::Null);
        assert_eq!(l, Values::TextList(vec![Some(vec!["a".into()]), Some(vec![]), None]));
        let mut s = Values::empty(Kind::Text);
        s.push(Cell::UInt(7));
        assert_eq!(s, Values::Text(vec![Some("7".into())]));
    }
}
