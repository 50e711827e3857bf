//! [`Share`]: a share of something a run went through, `40%` or `12.5%`, as relative triggers
//! name points of a run (see [`super::relative`]).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// A share of something the pilot went through, 0% to 100% in steps of 0.1%.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Share {
    permille: u16,
}

impl Share {
    /// The whole.
    pub const ALL: Share = Share { permille: 1000 };

    /// `permille` thousandths; `None` past the whole.
    pub fn from_permille(permille: u64) -> Option<Share> {
        (permille <= 1000).then_some(Share { permille: permille as u16 })
    }

    /// Thousandths of the whole.
    pub fn permille(self) -> u64 {
        u64::from(self.permille)
    }

    /// This share of a duration, to the whole millisecond (replay files stay readable).
    pub fn of_duration(self, whole: Duration) -> Duration {
        let micros = whole.as_micros() as u64 * self.permille() / 1000;
        Duration::from_millis(micros / 1000)
    }

    /// The item this share of the way through `count` items is: a 1-based position, at least
    /// the first (`None` if there are none).
    pub fn position_in(self, count: usize) -> Option<usize> {
        (count > 0).then(|| ((count as u64 * self.permille()).div_ceil(1000) as usize).clamp(1, count))
    }

    /// Reads `40%` or `12.5%`.
    pub fn parse(text: &str) -> Result<Share, String> {
        let invalid = || format!("`{text}` is not a share like 40% or 12.5% (0% to 100%)");
        let number = text.trim().strip_suffix('%').ok_or_else(invalid)?;
        let (whole, tenths) = match number.split_once('.') {
            Some((whole, tenth)) if tenth.len() == 1 => (whole, tenth),
            Some(_) => return Err(invalid()),
            None => (number, "0"),
        };
        let digits = |part: &str| -> Option<u64> {
            (!part.is_empty() && part.len() <= 3 && part.bytes().all(|byte| byte.is_ascii_digit()))
                .then(|| part.parse().ok())
                .flatten()
        };
        let permille =
            digits(whole).zip(digits(tenths)).map(|(whole, tenths)| whole * 10 + tenths).ok_or_else(invalid)?;
        Share::from_permille(permille).ok_or_else(invalid)
    }
}

impl fmt::Display for Share {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.permille % 10 {
            0 => write!(f, "{}%", self.permille / 10),
            tenths => write!(f, "{}.{tenths}%", self.permille / 10),
        }
    }
}

impl Serialize for Share {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

struct ShareVisitor;

impl serde::de::Visitor<'_> for ShareVisitor {
    type Value = Share;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a share like 40% or 12.5%")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Share, E> {
        Share::parse(text).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Share {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Share, D::Error> {
        deserializer.deserialize_str(ShareVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn share(text: &str) -> Share {
        Share::parse(text).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn shares_read_and_write_percentages_to_a_tenth() {
        for text in ["0%", "40%", "12.5%", "100%", "0.1%"] {
            assert_eq!(share(text).to_string(), text);
        }
        assert_eq!(share("40%").permille(), 400);
        for bad in ["40", "101%", "-1%", "12.25%", "%", "1e2%", "40 %", "1000%", ".5%", "5.%"] {
            assert!(Share::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_share_picks_a_position_from_the_first_to_the_last() {
        assert_eq!(share("0%").position_in(5), Some(1));
        assert_eq!(share("20%").position_in(5), Some(1));
        assert_eq!(share("21%").position_in(5), Some(2));
        assert_eq!(share("100%").position_in(5), Some(5));
        assert_eq!(share("50%").position_in(0), None);
        assert_eq!(share("40%").of_duration(Duration::from_millis(1250)), Duration::from_millis(500));
    }
}
