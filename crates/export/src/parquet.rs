//! Tables as Parquet files, so DuckDB, Spark or pandas can query fleets of
//! traces. A table is named columns of one type each (integers, floats,
//! booleans, text; every column nullable), with Snappy-compressed pages,
//! written a row group at a time ([`TableWriter`]).

use std::io::Write;
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// One column's values.
#[derive(Clone, Debug, PartialEq)]
pub enum Values {
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    Text(Vec<Option<String>>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Text(v) => v.len(),
        }
    }

    fn physical(&self) -> &'static str {
        match self {
            Values::Int(_) => "INT64",
            Values::Float(_) => "DOUBLE",
            Values::Bool(_) => "BOOLEAN",
            Values::Text(_) => "BYTE_ARRAY",
        }
    }
}

/// A table to write: its name and its columns, all of the same length.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub name: String,
    pub columns: Vec<(String, Values)>,
}

/// Writes `table` as a Parquet file (one row group).
pub fn write_parquet<W: Write + Send>(table: &Table, out: W) -> Result<(), ParquetError> {
    let kinds: Vec<(&str, &Values)> = table.columns.iter().map(|(n, v)| (n.as_str(), v)).collect();
    let mut writer = TableWriter::new(out, &table.name, &kinds)?;
    writer.write(table.columns.iter().map(|(_, v)| v.clone()).collect())?;
    writer.finish()
}

/// A Parquet file written a row group at a time, so a table of any length
/// takes the memory of one group.
pub struct TableWriter<W: Write + Send> {
    writer: SerializedFileWriter<W>,
    names: Vec<String>,
}

impl<W: Write + Send> std::fmt::Debug for TableWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter").field("columns", &self.names).finish()
    }
}

impl<W: Write + Send> TableWriter<W> {
    /// A table of these columns; each column's type is that of its `Values`
    /// (their contents are not written here).
    pub fn new(out: W, name: &str, columns: &[(&str, &Values)]) -> Result<Self, ParquetError> {
        let fields = columns
            .iter()
            .map(|(name, values)| {
                let mut field = Type::primitive_type_builder(name, physical_type(values.physical()))
                    .with_repetition(parquet::basic::Repetition::OPTIONAL);
                if matches!(values, Values::Text(_)) {
                    field = field.with_logical_type(Some(parquet::basic::LogicalType::String));
                }
                field.build().map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Type::group_type_builder(name).with_fields(fields).build()?;
        let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
        let writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props))?;
        Ok(TableWriter { writer, names: columns.iter().map(|(n, _)| n.to_string()).collect() })
    }

    /// Writes one row group: a value list per column, all of one length and
    /// of the types the table was created with.
    pub fn write(&mut self, columns: Vec<Values>) -> Result<(), ParquetError> {
        let rows = columns.first().map_or(0, |v| v.len());
        if columns.len() != self.names.len() {
            return Err(ParquetError::General(format!("{} columns given for {}", columns.len(), self.names.len())));
        }
        if let Some(i) = columns.iter().position(|v| v.len() != rows) {
            return Err(ParquetError::General(format!("column {} has a different number of rows", self.names[i])));
        }
        let mut group = self.writer.next_row_group()?;
        let mut columns = columns.into_iter();
        while let Some(mut column) = group.next_column()? {
            let Some(values) = columns.next() else { break };
            match values {
                Values::Int(v) => {
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
            }
            column.close()?;
        }
        group.close()?;
        Ok(())
    }

    pub fn finish(self) -> Result<(), ParquetError> {
        self.writer.close()?;
        Ok(())
    }
}

fn physical_type(name: &str) -> parquet::basic::Type {
    match name {
        "INT64" => parquet::basic::Type::INT64,
        "DOUBLE" => parquet::basic::Type::DOUBLE,
        "BOOLEAN" => parquet::basic::Type::BOOLEAN,
        _ => parquet::basic::Type::BYTE_ARRAY,
    }
}

/// The present values, and a definition level per row (1 present, 0 null).
fn split<T: Copy>(v: &[Option<T>]) -> (Vec<T>, Vec<i16>) {
    (v.iter().flatten().copied().collect(), v.iter().map(|x| i16::from(x.is_some())).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_small_table_reads_back() {
        let table = Table {
            name: "t".into(),
            columns: vec![
                ("n".into(), Values::Int(vec![Some(1), None, Some(-3)])),
                ("x".into(), Values::Float(vec![None, Some(0.5), Some(2.0)])),
                ("b".into(), Values::Bool(vec![Some(true), Some(false), None])),
                ("s".into(), Values::Text(vec![Some("a\"<".into()), None, Some(String::new())])),
            ],
        };
        let mut bytes = Vec::new();
        write_parquet(&table, &mut bytes).unwrap();
        assert_eq!(&bytes[..4], b"PAR1");
        assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        assert_eq!(reader.metadata().file_metadata().num_rows(), 3);
        let rows: Vec<String> = reader.get_row_iter(None).unwrap().map(|r| r.unwrap().to_string()).collect();
        assert_eq!(rows[0], r#"{n: 1, x: null, b: true, s: "a"<"}"#);
        assert_eq!(rows[1], "{n: null, x: 0.5, b: false, s: null}");

        let uneven = Table {
            name: "u".into(),
            columns: vec![("a".into(), Values::Int(vec![Some(1)])), ("b".into(), Values::Int(vec![]))],
        };
        assert!(write_parquet(&uneven, Vec::new()).is_err());
    }
}
