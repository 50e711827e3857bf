//! Flink's built-in scalar functions that Nexmark's queries call, and Nexmark's own `count_char`
//! (its `CREATE FUNCTION count_char AS 'com.github.nexmark.flink.udf.CountChar'`, which Sluice
//! knows by that class name): `LOWER`, `UPPER`, `CHAR_LENGTH`, `HOUR`, `DATE_FORMAT`,
//! `SPLIT_INDEX`, `REGEXP_EXTRACT`. A `NULL` argument gives `NULL`, as in Flink.
//!
//! A pattern (`REGEXP_EXTRACT`) or format (`DATE_FORMAT`) must be a literal: it is compiled when
//! the script is planned, so that a bad one is an error with a place, not a failure at run time.

use std::fmt;
use std::sync::Arc;

use crate::value::{SqlType, Value, write_timestamp_text};

/// The class of Nexmark's `count_char` UDF, which `CREATE FUNCTION` may name.
pub const COUNT_CHAR_CLASS: &str = "com.github.nexmark.flink.udf.CountChar";

/// The longest pattern `REGEXP_EXTRACT` takes.
const MAX_PATTERN_BYTES: usize = 1024;

/// A scalar function.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// `LOWER(s)`
    Lower,
    /// `UPPER(s)`
    Upper,
    /// `CHAR_LENGTH(s)`: characters.
    CharLength,
    /// `HOUR(ts)`: the hour of the day, 0 to 23.
    Hour,
    /// `DATE_FORMAT(ts, 'format')`
    DateFormat(DateFormat),
    /// `SPLIT_INDEX(s, separator, index)`: the `index`-th (from 0) piece, or `NULL`.
    SplitIndex,
    /// `REGEXP_EXTRACT(s, 'pattern' [, group])`: the group of the first match, or `NULL`.
    RegexpExtract(Pattern),
    /// Nexmark's `count_char(s, 'c')`: how often the character occurs.
    CountChar,
}

/// A compiled regular expression, compared by its text.
#[derive(Clone, Debug)]
pub struct Pattern(Arc<regex::Regex>);

impl PartialEq for Pattern {
    fn eq(&self, other: &Pattern) -> bool {
        self.0.as_str() == other.0.as_str()
    }
}

/// A `DATE_FORMAT` format: Java's `SimpleDateFormat` letters Sluice knows, and literal text.
#[derive(Clone, Debug, PartialEq)]
pub struct DateFormat(Vec<DatePart>);

#[derive(Clone, Debug, PartialEq)]
enum DatePart {
    /// A field of the timestamp's text `yyyy-MM-dd HH:mm:ss.SSS`: its byte range there.
    Field(usize, usize),
    Text(String),
}

impl DateFormat {
    /// Parses `yyyy`, `MM`, `dd`, `HH`, `mm`, `ss`, `SSS` and quoted or other literal text.
    fn parse(format: &str) -> Result<DateFormat, String> {
        const FIELDS: [(&str, usize, usize); 7] = [
            ("yyyy", 0, 4),
            ("MM", 5, 7),
            ("dd", 8, 10),
            ("HH", 11, 13),
            ("mm", 14, 16),
            ("ss", 17, 19),
            ("SSS", 20, 23),
        ];
        let mut parts = Vec::new();
        let mut rest = format;
        while let Some(first) = rest.chars().next() {
            if let Some((letters, from, to)) = FIELDS.iter().find(|(letters, ..)| rest.starts_with(letters)) {
                parts.push(DatePart::Field(*from, *to));
                rest = &rest[letters.len()..];
            } else if first.is_ascii_alphabetic() {
                let letters: Vec<&str> = FIELDS.iter().map(|(letters, ..)| *letters).collect();
                return Err(format!(
                    "DATE_FORMAT pattern letter `{first}` is not supported: Sluice knows {}",
                    letters.join(", ")
                ));
            } else if first == '\'' {
                let end = rest[1..].find('\'').ok_or("DATE_FORMAT: an unclosed quote")?;
                parts.push(DatePart::Text(rest[1..=end].to_string()));
                rest = &rest[end + 2..];
            } else {
                parts.push(DatePart::Text(first.to_string()));
                rest = &rest[first.len_utf8()..];
            }
        }
        Ok(DateFormat(parts))
    }

    fn format(&self, millis: i64) -> String {
        let text = write_timestamp_text(millis);
        self.0
            .iter()
            .map(|part| match part {
                DatePart::Field(from, to) => text.get(*from..*to).unwrap_or(""),
                DatePart::Text(text) => text.as_str(),
            })
            .collect()
    }
}

/// Binds a call of `name` (upper case) to arguments of `types` (and, where an argument is a
/// string literal, its text): the function and its result type, or `None` if there is no such
/// function; a wrong argument is an error.
pub fn bind(name: &str, types: &[&SqlType], literals: &[Option<&str>]) -> Option<Result<(Scalar, SqlType), String>> {
    let literal = |index: usize| match literals.get(index) {
        Some(Some(text)) => Ok(text.to_string()),
        _ => Err(format!("{name}'s argument {} must be a string literal", index + 1)),
    };
    let is_text = |ty: &&SqlType| matches!(ty, SqlType::Varchar);
    let is_int = |ty: &&SqlType| matches!(ty, SqlType::Int | SqlType::BigInt);
    let result = match (name, types) {
        ("LOWER", [text]) if is_text(text) => Ok((Scalar::Lower, SqlType::Varchar)),
        ("UPPER", [text]) if is_text(text) => Ok((Scalar::Upper, SqlType::Varchar)),
        ("CHAR_LENGTH" | "CHARACTER_LENGTH", [text]) if is_text(text) => Ok((Scalar::CharLength, SqlType::Int)),
        ("HOUR", [SqlType::Timestamp]) => Ok((Scalar::Hour, SqlType::BigInt)),
        ("DATE_FORMAT", [SqlType::Timestamp, format]) if is_text(format) => literal(1)
            .and_then(|format| DateFormat::parse(&format))
            .map(|format| (Scalar::DateFormat(format), SqlType::Varchar)),
        ("SPLIT_INDEX", [text, separator, index]) if is_text(text) && is_text(separator) && is_int(index) => {
            Ok((Scalar::SplitIndex, SqlType::Varchar))
        }
        ("REGEXP_EXTRACT", [text, pattern] | [text, pattern, _]) if is_text(text) && is_text(pattern) => {
            if types.get(2).is_some_and(|group| !is_int(group)) {
                return Some(Err("REGEXP_EXTRACT's group is an integer".to_string()));
            }
            literal(1)
                .and_then(|pattern| compile(&pattern))
                .map(|pattern| (Scalar::RegexpExtract(pattern), SqlType::Varchar))
        }
        ("COUNT_CHAR", [text, character]) if is_text(text) && is_text(character) => {
            Ok((Scalar::CountChar, SqlType::BigInt))
        }
        (
            "LOWER" | "UPPER" | "CHAR_LENGTH" | "CHARACTER_LENGTH" | "HOUR" | "DATE_FORMAT" | "SPLIT_INDEX"
            | "REGEXP_EXTRACT" | "COUNT_CHAR",
            _,
        ) => {
            let types: Vec<String> = types.iter().map(ToString::to_string).collect();
            Err(format!("{name}({}): no such signature", types.join(", ")))
        }
        _ => return None,
    };
    Some(result)
}

fn compile(pattern: &str) -> Result<Pattern, String> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(format!("a pattern of {} bytes; at most {MAX_PATTERN_BYTES}", pattern.len()));
    }
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map(|regex| Pattern(Arc::new(regex)))
        .map_err(|error| format!("REGEXP_EXTRACT pattern `{pattern}`: {error}"))
}

impl Scalar {
    /// The function's value on its arguments' values.
    pub fn eval(&self, args: &[Value]) -> Value {
        if args.contains(&Value::Null) {
            return Value::Null;
        }
        let text = |index: usize| match args.get(index) {
            Some(Value::Str(text)) => text.as_str(),
            _ => "",
        };
        let int = |index: usize| match args.get(index) {
            Some(Value::Int(value)) => Some(*value),
            _ => None,
        };
        match self {
            Scalar::Lower => Value::Str(text(0).to_lowercase()),
            Scalar::Upper => Value::Str(text(0).to_uppercase()),
            Scalar::CharLength => Value::Int(text(0).chars().count() as i64),
            Scalar::Hour => match args[0] {
                Value::Timestamp(millis) => Value::Int(millis.div_euclid(3_600_000).rem_euclid(24)),
                _ => Value::Null,
            },
            Scalar::DateFormat(format) => match args[0] {
                Value::Timestamp(millis) => Value::Str(format.format(millis)),
                _ => Value::Null,
            },
            Scalar::SplitIndex => {
                let piece = usize::try_from(int(2).unwrap_or(-1)).ok().and_then(|index| split(text(0), text(1), index));
                piece.map_or(Value::Null, |piece| Value::Str(piece.to_string()))
            }
            Scalar::RegexpExtract(pattern) => {
                let group = usize::try_from(int(2).unwrap_or(1)).ok();
                let found = pattern.0.captures(text(0)).and_then(|captures| captures.get(group?));
                found.map_or(Value::Null, |found| Value::Str(found.as_str().to_string()))
            }
            Scalar::CountChar => {
                let character = text(1).chars().next();
                Value::Int(character.map_or(0, |character| text(0).chars().filter(|c| *c == character).count()) as i64)
            }
        }
    }
}

/// Flink's `SPLIT_INDEX`: the piece at `index`; an empty separator splits nothing.
fn split<'a>(text: &'a str, separator: &str, index: usize) -> Option<&'a str> {
    if separator.is_empty() {
        return (index == 0).then_some(text);
    }
    text.split(separator).nth(index)
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Scalar::Lower => "LOWER",
            Scalar::Upper => "UPPER",
            Scalar::CharLength => "CHAR_LENGTH",
            Scalar::Hour => "HOUR",
            Scalar::DateFormat(_) => "DATE_FORMAT",
            Scalar::SplitIndex => "SPLIT_INDEX",
            Scalar::RegexpExtract(_) => "REGEXP_EXTRACT",
            Scalar::CountChar => "count_char",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &str) -> Value {
        Value::Str(value.to_string())
    }

    #[test]
    fn the_functions_compute_what_flink_s_do() {
        let url = text("https://www.nexmark.com/abc/def/item.htm?query=1&channel_id=7");
        let pattern = compile("(&|^)channel_id=([^&]*)").unwrap();
        let extract = Scalar::RegexpExtract(pattern);
        assert_eq!(extract.eval(&[text("a=1&channel_id=7"), text(""), Value::Int(2)]), text("7"));
        assert_eq!(extract.eval(&[text("channel_id=9&b=2"), text(""), Value::Int(2)]), text("9"));
        assert_eq!(extract.eval(&[url.clone(), text(""), Value::Int(2)]), text("7"));
        assert_eq!(extract.eval(&[text("nothing"), text(""), Value::Int(2)]), Value::Null);
        assert_eq!(Scalar::SplitIndex.eval(&[url.clone(), text("/"), Value::Int(3)]), text("abc"));
        assert_eq!(Scalar::SplitIndex.eval(&[url, text("/"), Value::Int(9)]), Value::Null);
        // 2015-07-15 19:30:05.123 UTC
        let evening = Value::Timestamp(1_436_988_605_123);
        assert_eq!(Scalar::Hour.eval(std::slice::from_ref(&evening)), Value::Int(19));
        let format = DateFormat::parse("yyyy-MM-dd 'at' HH:mm").unwrap();
        assert_eq!(Scalar::DateFormat(format).eval(&[evening, text("")]), text("2015-07-15 at 19:30"));
        assert_eq!(Scalar::CountChar.eval(&[text("occurrence"), text("c")]), Value::Int(3));
        assert_eq!(Scalar::Lower.eval(&[text("Apple")]), text("apple"));
        assert_eq!(Scalar::Lower.eval(&[Value::Null]), Value::Null);
    }

    #[test]
    fn bad_patterns_and_formats_are_errors() {
        assert!(compile("(unclosed").unwrap_err().contains("unclosed"));
        assert!(compile(&"a".repeat(2000)).unwrap_err().contains("at most"));
        assert!(DateFormat::parse("yyyy-QQ").unwrap_err().contains("`Q`"));
        assert!(DateFormat::parse("'open").unwrap_err().contains("unclosed"));
    }
}
