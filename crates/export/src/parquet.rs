//! Tables as Parquet files, so DuckDB, Spark or pandas can query fleets of
//! traces. A table is named columns of one type each (integers, floats,
//! booleans, text; every column nullable), written as one row group with
//! Snappy-compressed pages.

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

/// Writes `table` as a Parquet file.
pub fn write_parquet<W: Write + Send>(table: &Table, out: W) -> Result<(), ParquetError> {
    let rows = table.columns.first().map_or(0, |(_, v)| v.len());
    if let Some((name, _)) = table.columns.iter().find(|(_, v)| v.len() != rows) {
        return Err(ParquetError::General(format!("column {name} has a different number of rows")));
    }
    let fields = table
        .columns
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
    let schema = Type::group_type_builder(&table.name).with_fields(fields).build()?;
    let props = WriterProperties::builder().set_compression(Compression::SNAPPY).build();
    let mut writer = SerializedFileWriter::new(out, Arc::new(schema), Arc::new(props))?;
    let mut group = writer.next_row_group()?;
    let mut index = 0;
    while let Some(mut column) = group.next_column()? {
        let values = &table.columns[index].1;
        index += 1;
        match values {
            Values::Int(v) => {
                let (present, levels) = split(v);
                column.typed::<Int64Type>().write_batch(&present, Some(&levels), None)?;
            }
            Values::Float(v) => {
                let (present, levels) = split(v);
                column.typed::<DoubleType>().write_batch(&present, Some(&levels), None)?;
            }
            Values::Bool(v) => {
                let (present, levels) = split(v);
                column.typed::<BoolType>().write_batch(&present, Some(&levels), None)?;
            }
            Values::Text(v) => {
                let levels: Vec<i16> = v.iter().map(|x| i16::from(x.is_some())).collect();
                let present: Vec<ByteArray> = v.iter().flatten().map(|s| ByteArray::from(s.as_str())).collect();
                column.typed::<ByteArrayType>().write_batch(&present, Some(&levels), None)?;
            }
        }
        column.close()?;
    }
    group.close()?;
    writer.close()?;
    Ok(())
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
