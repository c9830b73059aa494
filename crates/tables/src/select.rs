//! Which rows to keep, and in what order.

use std::cmp::Ordering;

use nettrail_net::transport::Direction;

use crate::cell::{Cell, Column};

/// What the filters look at in a row.
pub trait Filterable {
    fn process(&self) -> (Option<&str>, Option<u32>);
    fn hosts(&self) -> Vec<String>;
    fn url(&self) -> Option<&str>;
    /// Who began the row's flow, for tables that say.
    fn direction(&self) -> Option<Direction> {
        None
    }
}

/// Which rows to keep: each filter given must match (case-insensitive substrings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Filters {
    /// A process whose name contains this, or with this PID.
    pub process: Option<String>,
    /// A server, other name or IP address containing this.
    pub host: Option<String>,
    /// A URL containing this.
    pub url: Option<String>,
    /// Flows begun this way (outbound, inbound, listen).
    pub direction: Option<Direction>,
}

fn contains(haystack: &str, needle: &str) -> bool {
    haystack.to_lowercase().contains(&needle.to_lowercase())
}

impl Filters {
    pub fn keeps<R: Filterable>(&self, row: &R) -> bool {
        if let Some(p) = &self.process {
            let (name, pid) = row.process();
            let hit = match p.parse::<u32>() {
                Ok(want) => pid == Some(want),
                Err(_) => name.is_some_and(|n| contains(n, p)),
            };
            if !hit {
                return false;
            }
        }
        if let Some(h) = &self.host
            && !row.hosts().iter().any(|x| contains(x, h))
        {
            return false;
        }
        if let Some(u) = &self.url
            && !row.url().is_some_and(|x| contains(x, u))
        {
            return false;
        }
        if self.direction.is_some() && row.direction() != self.direction {
            return false;
        }
        true
    }

    /// The rows these filters keep.
    pub fn kept<'r, R: Filterable>(&self, rows: &'r [R]) -> Vec<&'r R> {
        rows.iter().filter(|r| self.keeps(*r)).collect()
    }
}

/// A column name that is not one of the table's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownColumn {
    pub name: String,
    pub known: Vec<&'static str>,
}

impl std::fmt::Display for UnknownColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no column {:?}; the columns are {}", self.name, self.known.join(", "))
    }
}

impl std::error::Error for UnknownColumn {}

/// The column named `name`.
pub fn find<'c, R>(columns: &'c [Column<R>], name: &str) -> Result<&'c Column<R>, UnknownColumn> {
    columns
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| UnknownColumn { name: name.to_string(), known: columns.iter().map(|c| c.name).collect() })
}

/// Sorts rows by a column: `name`, or `-name` for descending. Rows without a
/// value come last in both directions; ties keep their order.
pub fn sort<R>(rows: &mut [&R], columns: &[Column<R>], by: &str) -> Result<(), UnknownColumn> {
    let descending = by.starts_with('-');
    let column = find(columns, by.trim_start_matches('-'))?;
    let mut keyed: Vec<(Cell, &R)> = rows.iter().map(|r| ((column.get)(r), *r)).collect();
    keyed.sort_by(|(a, _), (b, _)| match (a, b) {
        (Cell::Null, Cell::Null) => Ordering::Equal,
        (Cell::Null, _) => Ordering::Greater,
        (_, Cell::Null) => Ordering::Less,
        _ if descending => b.compare(a),
        _ => a.compare(b),
    });
    for (slot, (_, row)) in rows.iter_mut().zip(keyed) {
        *slot = row;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cell::{Kind, column};

    #[test]
    fn empty_values_sort_last_both_ways() {
        let columns = vec![column("n", Kind::Int, true, |r: &Option<u64>| Cell::opt(*r))];
        let rows = [Some(2), None, Some(9), Some(1)];
        let mut refs: Vec<&Option<u64>> = rows.iter().collect();
        sort(&mut refs, &columns, "-n").unwrap();
        assert_eq!(refs, [&Some(9), &Some(2), &Some(1), &None]);
        sort(&mut refs, &columns, "n").unwrap();
        assert_eq!(refs, [&Some(1), &Some(2), &Some(9), &None]);
        assert_eq!(sort(&mut refs, &columns, "x").unwrap_err().to_string(), "no column \"x\"; the columns are n");
    }
}
