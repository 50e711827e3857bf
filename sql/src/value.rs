//! SQL types and values, and the row that flows between a SQL job's operators.
//!
//! Flink's types where Flink has them: `BIGINT` and `INT` are 64-bit integers here (an `INT`
//! column keeps its declared type), `DECIMAL(p, s)` an exact scaled integer, `TIMESTAMP(3)`
//! milliseconds since the epoch, `ROW<…>` a nested row. No floating point: every value has one
//! encoding and one text, so a committed table is a function of the input alone.

use std::fmt;

use sluice_engine::api::Record;
use sluice_engine::record::DecodeError;

/// The largest precision of a `DECIMAL`: Flink's 38 digits.
pub const MAX_DECIMAL_PRECISION: u8 = 38;

/// A column's type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SqlType {
    /// `BOOLEAN`.
    Boolean,
    /// `INT`.
    Int,
    /// `BIGINT`.
    BigInt,
    /// `DECIMAL(precision, scale)`.
    Decimal {
        /// Digits in all.
        precision: u8,
        /// Digits after the point.
        scale: u8,
    },
    /// `VARCHAR` or `STRING`.
    Varchar,
    /// `TIMESTAMP(3)`: milliseconds.
    Timestamp,
    /// `ROW<name type, …>`.
    Row(Vec<(String, SqlType)>),
}

impl SqlType {
    /// Whether values of this type are numbers.
    pub fn is_numeric(&self) -> bool {
        matches!(self, SqlType::Int | SqlType::BigInt | SqlType::Decimal { .. })
    }

    /// The decimal this number type widens to: `BIGINT` is `DECIMAL(19, 0)`, as in Flink.
    pub fn as_decimal(&self) -> Option<(u8, u8)> {
        match self {
            SqlType::Int => Some((10, 0)),
            SqlType::BigInt => Some((19, 0)),
            SqlType::Decimal { precision, scale } => Some((*precision, *scale)),
            _ => None,
        }
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SqlType::Boolean => f.write_str("BOOLEAN"),
            SqlType::Int => f.write_str("INT"),
            SqlType::BigInt => f.write_str("BIGINT"),
            SqlType::Decimal { precision, scale } => write!(f, "DECIMAL({precision}, {scale})"),
            SqlType::Varchar => f.write_str("VARCHAR"),
            SqlType::Timestamp => f.write_str("TIMESTAMP(3)"),
            SqlType::Row(fields) => {
                f.write_str("ROW<")?;
                for (index, (name, field)) in fields.iter().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(f, "{separator}{name} {field}")?;
                }
                f.write_str(">")
            }
        }
    }
}

/// A value of some [`SqlType`], or `NULL`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Value {
    /// `NULL`.
    Null,
    /// A `BOOLEAN`.
    Bool(bool),
    /// An `INT` or `BIGINT`.
    Int(i64),
    /// A `DECIMAL`: `units / 10^scale`.
    Decimal {
        /// The value times `10^scale`.
        units: i128,
        /// Digits after the point.
        scale: u8,
    },
    /// A `VARCHAR`.
    Str(String),
    /// A `TIMESTAMP(3)`, in milliseconds since the epoch.
    Timestamp(i64),
    /// A `ROW`.
    Row(Vec<Value>),
}

impl Value {
    /// The value as a SQL literal: text quoted (a quote doubled), a timestamp as
    /// `TIMESTAMP '…'`, anything else as it prints.
    pub fn to_sql(&self) -> String {
        match self {
            Value::Str(text) => format!("'{}'", text.replace('\'', "''")),
            Value::Timestamp(_) => format!("TIMESTAMP '{self}'"),
            _ => self.to_string(),
        }
    }
}

impl fmt::Display for Value {
    /// Flink's text of a value (as its print sink writes it).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(value) => write!(f, "{}", if *value { "TRUE" } else { "FALSE" }),
            Value::Int(value) => write!(f, "{value}"),
            Value::Decimal { units, scale } => write_decimal(f, *units, *scale),
            Value::Str(text) => f.write_str(text),
            Value::Timestamp(millis) => write_timestamp(f, *millis),
            Value::Row(fields) => {
                f.write_str("(")?;
                for (index, field) in fields.iter().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(f, "{separator}{field}")?;
                }
                f.write_str(")")
            }
        }
    }
}

fn write_decimal(f: &mut fmt::Formatter<'_>, units: i128, scale: u8) -> fmt::Result {
    let sign = if units < 0 { "-" } else { "" };
    let magnitude = units.unsigned_abs();
    if scale == 0 {
        return write!(f, "{sign}{magnitude}");
    }
    let divisor = 10u128.pow(u32::from(scale));
    write!(f, "{sign}{}.{:0width$}", magnitude / divisor, magnitude % divisor, width = usize::from(scale))
}

/// `YYYY-MM-DD HH:MM:SS.mmm`, UTC (days from the epoch by Howard Hinnant's civil calendar).
/// A timestamp's text, `yyyy-MM-dd HH:mm:ss.SSS`, as Flink prints it.
pub fn write_timestamp_text(millis: i64) -> String {
    Value::Timestamp(millis).to_string()
}

fn write_timestamp(f: &mut fmt::Formatter<'_>, millis: i64) -> fmt::Result {
    let days = millis.div_euclid(86_400_000);
    let in_day = millis.rem_euclid(86_400_000);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute) = (in_day / 3_600_000, in_day / 60_000 % 60);
    let (second, milli) = (in_day / 1000 % 60, in_day % 1000);
    write!(f, "{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}.{milli:03}")
}

/// The (year, month, day) of a day number from 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// A row of values: what a SQL job's operators pass along.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Row(pub Vec<Value>);

const NULL: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const DECIMAL: u8 = 3;
const STR: u8 = 4;
const TIMESTAMP: u8 = 5;
const ROW: u8 = 6;

impl Value {
    fn encode_into(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => NULL.encode(out),
            Value::Bool(value) => (BOOL, *value).encode(out),
            Value::Int(value) => (INT, *value).encode(out),
            Value::Decimal { units, scale } => {
                let (high, low) = ((*units >> 64) as i64, *units as u64);
                (DECIMAL, *scale, high, low).encode(out)
            }
            Value::Str(text) => {
                STR.encode(out);
                text.encode(out);
            }
            Value::Timestamp(millis) => (TIMESTAMP, *millis).encode(out),
            Value::Row(fields) => {
                ROW.encode(out);
                Row(fields.clone()).encode(out);
            }
        }
    }

    fn decode_from(input: &mut &[u8], depth: u32) -> Result<Value, DecodeError> {
        Ok(match u8::decode(input)? {
            NULL => Value::Null,
            BOOL => Value::Bool(bool::decode(input)?),
            INT => Value::Int(i64::decode(input)?),
            DECIMAL => {
                let (scale, high, low) = <(u8, i64, u64)>::decode(input)?;
                Value::Decimal { units: (i128::from(high) << 64) | i128::from(low), scale }
            }
            STR => Value::Str(String::decode(input)?),
            TIMESTAMP => Value::Timestamp(i64::decode(input)?),
            ROW if depth < 8 => Value::Row(Row::decode_at(input, depth + 1)?.0),
            ROW => return Err(DecodeError::new("a SQL row nested more than 8 deep")),
            tag => return Err(DecodeError::new(format!("unknown SQL value tag {tag}"))),
        })
    }
}

impl Row {
    fn decode_at(input: &mut &[u8], depth: u32) -> Result<Row, DecodeError> {
        let count = u64::decode(input)?;
        if count > input.len() as u64 {
            return Err(DecodeError::new(format!("a SQL row of {count} values in {} bytes", input.len())));
        }
        (0..count).map(|_| Value::decode_from(input, depth)).collect::<Result<Vec<_>, _>>().map(Row)
    }
}

impl Record for Row {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.0.len() as u64).encode(out);
        for value in &self.0 {
            value.encode_into(out);
        }
    }

    fn decode(input: &mut &[u8]) -> Result<Row, DecodeError> {
        Row::decode_at(input, 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_of_every_kind_of_value_decodes_to_itself() {
        let row = Row(vec![
            Value::Null,
            Value::Bool(true),
            Value::Int(-7),
            Value::Decimal { units: -123_456_789_012_345_678_901_234_567, scale: 3 },
            Value::Str("é, ü".to_string()),
            Value::Timestamp(1_700_000_000_123),
            Value::Row(vec![Value::Int(1), Value::Str("x".to_string())]),
        ]);
        assert_eq!(Row::from_bytes(&row.to_bytes()), Ok(row));
    }

    #[test]
    fn a_truncated_or_hostile_encoding_is_an_error_not_a_panic() {
        let bytes = Row(vec![Value::Str("abc".to_string()), Value::Int(5)]).to_bytes();
        for end in 0..bytes.len() {
            assert!(Row::from_bytes(&bytes[..end]).is_err(), "a row cut at byte {end} decoded");
        }
        assert!(Row::from_bytes(&[1, 42]).is_err(), "an unknown tag decoded");
    }

    #[test]
    fn values_print_as_flink_prints_them() {
        let printed = |value: Value| value.to_string();
        assert_eq!(printed(Value::Decimal { units: 908_000, scale: 3 }), "908.000");
        assert_eq!(printed(Value::Decimal { units: -5, scale: 3 }), "-0.005");
        assert_eq!(printed(Value::Timestamp(0)), "1970-01-01 00:00:00.000");
        assert_eq!(printed(Value::Timestamp(1_436_918_400_001)), "2015-07-15 00:00:00.001");
        assert_eq!(printed(Value::Timestamp(-1)), "1969-12-31 23:59:59.999");
        assert_eq!(printed(Value::Bool(false)), "FALSE");
    }
}
