//! Durations as people write them in scenarios and configuration: `250ns`, `500us`, `150ms`,
//! `2s`, `1m`, `1h`.
//!
//! [`text`] is a serde adapter that writes and reads this form. A bare number is an error, not a
//! guess at its unit.

use std::time::Duration;

/// Parses `250ns`, `500us`, `150ms`, `2s`, `3m` or `1h`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: u64 = number.parse().map_err(|_| format!("`{text}` is not a duration like 150ms, 2s or 1m"))?;
    let duration = match unit {
        "ns" => Some(Duration::from_nanos(value)),
        "us" => Some(Duration::from_micros(value)),
        "ms" => Some(Duration::from_millis(value)),
        "s" => Some(Duration::from_secs(value)),
        "m" => value.checked_mul(60).map(Duration::from_secs),
        "h" => value.checked_mul(3600).map(Duration::from_secs),
        "" => return Err(format!("`{text}` has no unit; write it like 150ms, 2s or 1m")),
        _ => return Err(format!("`{text}` has an unknown unit `{unit}`; use ns, us, ms, s, m or h")),
    };
    duration.ok_or_else(|| format!("`{text}` is too long a duration"))
}

/// Renders a duration the way [`parse_duration`] reads it, in the largest exact unit.
pub fn format_duration(duration: Duration) -> String {
    if duration.subsec_nanos() == 0 && duration.as_secs() > 0 {
        format!("{}s", duration.as_secs())
    } else if duration.subsec_nanos().is_multiple_of(1_000_000) {
        format!("{}ms", duration.as_millis())
    } else if duration.subsec_nanos().is_multiple_of(1_000) {
        format!("{}us", duration.as_micros())
    } else {
        format!("{}ns", duration.as_nanos())
    }
}

/// Serde adapter: `#[serde(with = "crate::duration::text")]`.
pub mod text {
    use std::fmt;
    use std::time::Duration;

    use serde::Serializer;
    use serde::de::{self, Deserializer, Visitor};

    /// Writes `150ms`-style text.
    pub fn serialize<S: Serializer>(duration: &Duration, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&super::format_duration(*duration))
    }

    struct DurationVisitor;

    impl Visitor<'_> for DurationVisitor {
        type Value = Duration;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a duration like 150ms, 2s or 1m")
        }

        fn visit_str<E: de::Error>(self, text: &str) -> Result<Duration, E> {
            super::parse_duration(text).map_err(E::custom)
        }

        fn visit_u64<E: de::Error>(self, number: u64) -> Result<Duration, E> {
            super::parse_duration(&number.to_string()).map_err(E::custom)
        }

        fn visit_i64<E: de::Error>(self, number: i64) -> Result<Duration, E> {
            super::parse_duration(&number.to_string()).map_err(E::custom)
        }
    }

    /// Reads `150ms`-style text. (`deserialize_str`, not `deserialize_any`, so that binary
    /// formats such as bincode read it too.)
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Duration, D::Error> {
        deserializer.deserialize_str(DurationVisitor)
    }
}

/// Serde adapter for an optional duration: `#[serde(default, with = "crate::duration::optional_text")]`.
pub mod optional_text {
    use std::time::Duration;

    use serde::{Deserializer, Serializer};

    /// Writes `150ms`-style text, or nothing.
    pub fn serialize<S: Serializer>(duration: &Option<Duration>, serializer: S) -> Result<S::Ok, S::Error> {
        match duration {
            Some(duration) => super::text::serialize(duration, serializer),
            None => serializer.serialize_none(),
        }
    }

    /// Reads `150ms`-style text (absent fields are `None` through `#[serde(default)]`).
    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Duration>, D::Error> {
        super::text::deserialize(deserializer).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_format_back() {
        for text in ["250ns", "1500ns", "500us", "150ms", "2s", "1500ms"] {
            assert_eq!(format_duration(parse_duration(text).unwrap()), text);
        }
        assert_eq!(parse_duration("3m").unwrap(), Duration::from_secs(180));
        assert!(parse_duration("150").unwrap_err().contains("no unit"));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("2d").unwrap_err().contains("unknown unit `d`; use ns, us, ms, s, m or h"));
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("99999999999999999999m").is_err());
    }
}
