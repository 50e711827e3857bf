//! [`Shard`]: the K-th of N disjoint slices of a seed range, so that N machines split a sweep.
//!
//! Seeds are dealt round robin: seed `s` of `A..B` belongs to shard `((s - A) mod N) + 1`. Every
//! seed is in exactly one shard, the shards differ in size by at most one seed, and each holds a
//! fair sample of the range (as `cargo nextest run --partition count:K/N` deals tests).

use std::fmt;
use std::ops::Range;

/// The most shards a sweep may be split into.
pub const MAX_SHARDS: u64 = 100_000;

/// One slice of a seed range; see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    /// 1-based index.
    pub index: u64,
    /// How many shards there are.
    pub count: u64,
}

impl Shard {
    /// Parses `K/N` with `1 <= K <= N <= MAX_SHARDS`.
    pub fn parse(text: &str) -> Result<Shard, String> {
        let malformed = || format!("`{text}` is not a shard like 2/4 (the 2nd of 4)");
        let (index, count) = text.split_once('/').ok_or_else(malformed)?;
        let index: u64 = index.trim().parse().map_err(|_| malformed())?;
        let count: u64 = count.trim().parse().map_err(|_| malformed())?;
        if count == 0 || count > MAX_SHARDS {
            return Err(format!("a sweep splits into 1 to {MAX_SHARDS} shards, not {count}"));
        }
        if index == 0 || index > count {
            return Err(format!("shard {index} of {count} does not exist: shards are numbered 1 to {count}"));
        }
        Ok(Shard { index, count })
    }

    /// The seeds of `range` in this shard, in order.
    pub fn seeds(self, range: Range<u64>) -> impl Iterator<Item = u64> + Send + use<> {
        let first = range.start.saturating_add(self.index - 1);
        (first..range.end).step_by(usize::try_from(self.count).unwrap_or(usize::MAX))
    }

    /// How many seeds of `range` are in this shard.
    pub fn len(self, range: Range<u64>) -> u64 {
        let total = range.end.saturating_sub(range.start);
        total / self.count + u64::from(total % self.count >= self.index)
    }

    /// The whole range as one shard.
    pub fn whole() -> Shard {
        Shard { index: 1, count: 1 }
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_disjoint_cover_the_range_and_differ_by_at_most_one() {
        for count in 1..=7u64 {
            let mut all: Vec<u64> = Vec::new();
            let mut sizes = Vec::new();
            for index in 1..=count {
                let shard = Shard { index, count };
                let seeds: Vec<u64> = shard.seeds(3..26).collect();
                assert_eq!(seeds.len() as u64, shard.len(3..26), "{shard}");
                sizes.push(seeds.len());
                all.extend(seeds);
            }
            all.sort_unstable();
            assert_eq!(all, (3..26).collect::<Vec<_>>(), "{count} shards");
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1, "{sizes:?}");
        }
        assert_eq!(Shard::parse("2/4").unwrap().seeds(1..11).collect::<Vec<_>>(), vec![2, 6, 10]);
        assert_eq!(Shard { index: 5, count: 9 }.seeds(1..3).count(), 0, "more shards than seeds");
        assert_eq!(Shard { index: 5, count: 9 }.len(1..3), 0);
        assert_eq!(Shard { index: 2, count: 2 }.seeds(u64::MAX - 3..u64::MAX).collect::<Vec<_>>().len(), 1);
    }

    #[test]
    fn bad_shards_are_errors_that_say_what_a_shard_is() {
        assert!(Shard::parse("0/4").unwrap_err().contains("numbered 1 to 4"));
        assert!(Shard::parse("5/4").unwrap_err().contains("does not exist"));
        assert!(Shard::parse("1/0").unwrap_err().contains("1 to 100000 shards"));
        assert!(Shard::parse("1/1000000").unwrap_err().contains("not 1000000"));
        assert!(Shard::parse("two/4").unwrap_err().contains("like 2/4"));
        assert!(Shard::parse("2").unwrap_err().contains("like 2/4"));
        assert_eq!(Shard::parse(" 3 / 8 ").unwrap(), Shard { index: 3, count: 8 });
    }
}
