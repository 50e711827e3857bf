//! CSV input: typed columns, the rule that splits a line into fields, and the check of a whole
//! file against a job's declared columns (which the harness runs when it loads a scenario, so
//! that a bad file is named with its line and column before anything runs).
//!
//! A CSV input file starts with a header line naming its columns in order; every other line is
//! one record (RFC 4180 quoting: a field holding `,` or `"` is quoted, `"` doubled; a quoted field
//! must end on its line). A record becomes a typed tuple through [`CsvRecord`]: `String`, `i64`,
//! `u64` and `bool` columns, event times as `i64` milliseconds.

pub use crate::api::registry::{Column, ColumnType};
use crate::record::Record;

impl ColumnType {
    /// Checks one field's text.
    pub fn check(self, field: &str) -> Result<(), String> {
        match self {
            ColumnType::Text => Ok(()),
            ColumnType::Int => i64::parse_field(field).map(drop),
            ColumnType::UInt => u64::parse_field(field).map(drop),
            ColumnType::Bool => bool::parse_field(field).map(drop),
            ColumnType::OptionalInt => Option::<i64>::parse_field(field).map(drop),
        }
    }
}

/// A value one CSV field holds.
pub trait CsvValue: Sized {
    /// Its column type.
    const TYPE: ColumnType;
    /// Parses a field's text.
    fn parse_field(field: &str) -> Result<Self, String>;
}

impl CsvValue for String {
    const TYPE: ColumnType = ColumnType::Text;
    fn parse_field(field: &str) -> Result<String, String> {
        Ok(field.to_string())
    }
}

impl CsvValue for i64 {
    const TYPE: ColumnType = ColumnType::Int;
    fn parse_field(field: &str) -> Result<i64, String> {
        field.parse().map_err(|_| format!("`{}` is not a whole number", shorten(field)))
    }
}

impl CsvValue for u64 {
    const TYPE: ColumnType = ColumnType::UInt;
    fn parse_field(field: &str) -> Result<u64, String> {
        field.parse().map_err(|_| format!("`{}` is not a non-negative whole number", shorten(field)))
    }
}

impl CsvValue for bool {
    const TYPE: ColumnType = ColumnType::Bool;
    fn parse_field(field: &str) -> Result<bool, String> {
        match field {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(format!("`{}` is not true or false", shorten(field))),
        }
    }
}

/// SQL's nullable integer: an empty field is NULL (`None`).
impl CsvValue for Option<i64> {
    const TYPE: ColumnType = ColumnType::OptionalInt;
    fn parse_field(field: &str) -> Result<Option<i64>, String> {
        match field {
            "" => Ok(None),
            field => i64::parse_field(field).map(Some),
        }
    }
}

/// At most 40 characters of a field, for an error message.
fn shorten(field: &str) -> String {
    match field.char_indices().nth(40) {
        Some((end, _)) => format!("{}…", &field[..end]),
        None => field.to_string(),
    }
}

/// A record read from CSV: a tuple of [`CsvValue`]s, one per column.
pub trait CsvRecord: Record {
    /// The column types, in order.
    const TYPES: &'static [ColumnType];
    /// The record of one line's fields (as many as [`CsvRecord::TYPES`]); an error names the
    /// field's index.
    fn from_fields(fields: &[String]) -> Result<Self, (usize, String)>;
}

macro_rules! csv_tuple {
    ($($name:ident $index:tt),+) => {
        impl<$($name: CsvValue + Record),+> CsvRecord for ($($name,)+) {
            const TYPES: &'static [ColumnType] = &[$($name::TYPE),+];
            fn from_fields(fields: &[String]) -> Result<Self, (usize, String)> {
                Ok(($($name::parse_field(&fields[$index]).map_err(|error| ($index, error))?,)+))
            }
        }
    };
}

csv_tuple!(A 0);
csv_tuple!(A 0, B 1);
csv_tuple!(A 0, B 1, C 2);
csv_tuple!(A 0, B 1, C 2, D 3);
csv_tuple!(A 0, B 1, C 2, D 3, E 4);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
csv_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);

/// What a scan leaves at the end of its text: the fields of a record not ended by a line
/// break, its last field so far, and whether that is inside quotes.
struct Rest {
    fields: Vec<String>,
    field: String,
    quoted: bool,
}

/// Splits `text` into CSV records (RFC 4180), calling `on_record` with each one's fields as its
/// line break ends it; returns the records and what follows the last line break. `strict`
/// refuses a quote inside an unquoted field and text after a closing quote (input files);
/// otherwise they are kept as text (files the engine wrote itself).
fn scan(
    text: &str,
    strict: bool,
    mut on_record: impl FnMut(usize, &mut Vec<String>) -> Result<(), String>,
) -> Result<(usize, Rest), String> {
    let (mut records, mut fields, mut field, mut quoted, mut was_quoted) = (0, Vec::new(), String::new(), false, false);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() && !was_quoted => (quoted, was_quoted) = (true, true),
            (false, '"') if strict => {
                return Err(format!("field {} has a quote inside it; quote the whole field", fields.len() + 1));
            }
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, '\r') if chars.peek() == Some(&'\n') => {}
            (false, '\n') => {
                fields.push(std::mem::take(&mut field));
                on_record(records, &mut fields)?;
                fields.clear();
                (records, was_quoted) = (records + 1, false);
            }
            (false, _) if was_quoted && strict => {
                return Err(format!("field {} goes on after its closing quote", fields.len() + 1));
            }
            (false, c) => field.push(c),
        }
    }
    Ok((records, Rest { fields, field, quoted }))
}

/// The fields of one CSV line (without its line break).
pub fn split_fields(line: &str) -> Result<Vec<String>, String> {
    let (_, Rest { mut fields, field, quoted }) = scan(line, true, |_, _| Ok(()))?;
    if quoted {
        return Err(format!("field {}'s quote is not closed on its line", fields.len() + 1));
    }
    fields.push(field);
    Ok(fields)
}

/// Calls `on_record` with the fields of every record of a CSV file (RFC 4180: a quoted field may
/// hold `,`, `""` and line breaks; `\r\n` ends a record as `\n` does); an error names the
/// record (counted from 0) that is cut short, or is `on_record`'s own.
pub fn for_each_record(
    bytes: &[u8],
    on_record: impl FnMut(usize, &mut Vec<String>) -> Result<(), String>,
) -> Result<usize, String> {
    let text = std::str::from_utf8(bytes).map_err(|error| format!("not UTF-8: {error}"))?;
    let (records, rest) = scan(text, false, on_record)?;
    if rest.quoted || !rest.field.is_empty() || !rest.fields.is_empty() {
        return Err(format!("record {records} is cut short"));
    }
    Ok(records)
}

/// Every record of a CSV file, as its fields (see [`for_each_record`]).
pub fn parse_records(bytes: &[u8]) -> Result<Vec<Vec<String>>, String> {
    let mut records = Vec::new();
    for_each_record(bytes, |_, fields| {
        records.push(std::mem::take(fields));
        Ok(())
    })?;
    Ok(records)
}

/// The record of one data line of an input with `columns`: an error says which column is wrong.
pub fn parse_record<T: CsvRecord>(line: &str, columns: &[Column]) -> Result<T, String> {
    let fields = split_fields(line)?;
    if fields.len() != columns.len() {
        return Err(format!("{} fields, the input has {} columns", fields.len(), columns.len()));
    }
    T::from_fields(&fields).map_err(|(index, error)| format!("column `{}`: {error}", columns[index].name))
}

/// Where a CSV file is wrong: its line (from 1), the column if one is to blame, and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvError {
    /// The line, counted from 1.
    pub line: usize,
    /// The column's name, if the error is in one field.
    pub column: Option<&'static str>,
    /// What is wrong.
    pub message: String,
}

/// Checks a whole CSV input file against `columns`: a header line naming them in order, then
/// records of as many fields, each of its column's type. Returns the number of records.
pub fn check_file(contents: &[u8], columns: &[Column]) -> Result<usize, CsvError> {
    let at = |line: usize, column: Option<&'static str>, message: String| CsvError { line, column, message };
    let text = std::str::from_utf8(contents).map_err(|error| {
        let line = contents[..error.valid_up_to()].iter().filter(|byte| **byte == b'\n').count() + 1;
        at(line, None, "not UTF-8 text".to_string())
    })?;
    let mut lines = text.lines();
    let header = lines.next().ok_or_else(|| at(1, None, "the file is empty; it needs a header line".to_string()))?;
    let names: Vec<&str> = columns.iter().map(|column| column.name).collect();
    let found = split_fields(header).map_err(|error| at(1, None, format!("header: {error}")))?;
    if found != names {
        return Err(at(1, None, format!("the header is `{header}`; the job reads columns `{}`", names.join(","))));
    }
    let mut records = 0;
    for (index, line) in lines.enumerate() {
        let number = index + 2;
        let fields = split_fields(line).map_err(|error| at(number, None, error))?;
        if fields.len() != columns.len() {
            let message = format!("{} fields, the header names {}", fields.len(), columns.len());
            return Err(at(number, None, message));
        }
        for (field, column) in fields.iter().zip(columns) {
            column.kind.check(field).map_err(|error| at(number, Some(column.name), error))?;
        }
        records += 1;
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    const COLUMNS: &[Column] = &[
        Column::new("user", ColumnType::Text),
        Column::new("time", ColumnType::Int),
        Column::new("ok", ColumnType::Bool),
    ];

    #[test]
    fn fields_split_with_quotes_and_typed_records_parse() {
        assert_eq!(split_fields("a,\"b,c\",\"d\"\"e\",").unwrap(), ["a", "b,c", "d\"e", ""]);
        assert_eq!(split_fields("").unwrap(), [""]);
        assert!(split_fields("a,\"b").unwrap_err().contains("not closed"));
        assert!(split_fields("a,b\"c").unwrap_err().contains("field 2 has a quote"));
        assert!(split_fields("\"a\"b").unwrap_err().contains("after its closing quote"));
        let record: (String, i64, bool) = parse_record("\"u,1\",-5,true", COLUMNS).unwrap();
        assert_eq!(record, ("u,1".to_string(), -5, true));
        let error = parse_record::<(String, i64, bool)>("u,5x,true", COLUMNS).unwrap_err();
        assert_eq!(error, "column `time`: `5x` is not a whole number");
        assert!(parse_record::<(String, i64, bool)>("u,5", COLUMNS).unwrap_err().contains("2 fields"));
        assert_eq!(<(String, i64, bool)>::TYPES, [ColumnType::Text, ColumnType::Int, ColumnType::Bool]);
    }

    #[test]
    fn an_optional_int_column_reads_an_empty_field_as_null_and_wide_rows_parse() {
        const COLUMNS: &[Column] =
            &[Column::new("a", ColumnType::OptionalInt), Column::new("b", ColumnType::OptionalInt)];
        assert_eq!(parse_record::<(Option<i64>, Option<i64>)>(",-7", COLUMNS).unwrap(), (None, Some(-7)));
        let error = parse_record::<(Option<i64>, Option<i64>)>("x,1", COLUMNS).unwrap_err();
        assert_eq!(error, "column `a`: `x` is not a whole number");
        assert_eq!(ColumnType::OptionalInt.check(""), Ok(()));
        type Wide = (i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, String);
        let wide: Vec<Column> = (0..12).map(|_| Column::new("c", ColumnType::Int)).collect();
        let mut wide = wide;
        wide[11] = Column::new("s", ColumnType::Text);
        let record: Wide = parse_record("1,2,3,4,5,6,7,8,9,10,11,x", &wide).unwrap();
        assert_eq!((record.0, record.10, record.11.as_str()), (1, 11, "x"));
        assert_eq!(Wide::from_bytes(&record.to_bytes()).unwrap(), record);
    }

    #[test]
    fn records_parse_with_quoted_line_breaks_and_a_cut_record_is_named() {
        assert_eq!(parse_records(b"a,\"b\nc\"\r\n\"d\"\"\",\n").unwrap(), [vec!["a", "b\nc"], vec!["d\"", ""]]);
        assert_eq!(parse_records(b"").unwrap(), Vec::<Vec<String>>::new());
        assert_eq!(parse_records(b"a\nb").unwrap_err(), "record 1 is cut short");
        assert_eq!(parse_records(b"\"a\n").unwrap_err(), "record 0 is cut short");
    }

    #[test]
    fn a_file_is_checked_against_its_columns_with_line_and_column() {
        assert_eq!(check_file(b"user,time,ok\na,1,true\r\nb,2,false", COLUMNS), Ok(2));
        assert_eq!(check_file(b"user,time,ok\n", COLUMNS), Ok(0));
        let error = check_file(b"user,time,ok\na,1,true\nb,x,false\n", COLUMNS).unwrap_err();
        assert_eq!((error.line, error.column), (3, Some("time")));
        let error = check_file(b"user,when,ok\n", COLUMNS).unwrap_err();
        assert!(error.line == 1 && error.message.contains("user,time,ok"), "{error:?}");
        assert_eq!(check_file(b"", COLUMNS).unwrap_err().line, 1);
        assert_eq!(check_file(b"user,time,ok\na,1\n", COLUMNS).unwrap_err().line, 2);
        assert_eq!(check_file(b"user,time,ok\na,1,\xff\n", COLUMNS).unwrap_err().line, 2);
        let long = format!("user,time,ok\na,{},true\n", "9".repeat(100));
        let error = check_file(long.as_bytes(), COLUMNS).unwrap_err();
        assert!(error.message.len() < 100, "a field is shortened in errors: {}", error.message);
    }
}
