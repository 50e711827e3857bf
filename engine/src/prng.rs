//! The one seeded pseudo-random generator type used for workloads and harness decisions.
//!
//! It wraps `rand_chacha::ChaCha8Rng` in our own type so that a dependency upgrade cannot silently
//! change the streams that seeds replay, and keeps floats out of its API: probabilities are a
//! [`Ratio`]. Child generators are derived by name ([`Prng::fork`]), so that one purpose (say, the
//! fault schedule) drawing more or fewer numbers never reshuffles another (say, the workload).
//!
//! The engine itself draws its internal randomness (jitter, tie-breaks) from [`crate::rt`] (`madsim::rand`),
//! which is seeded by the simulation; this type is for code that is handed an explicit seed.

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// A probability as `numerator / denominator`, never a float.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ratio {
    /// Chances in favour.
    pub numerator: u64,
    /// Chances in all; never zero.
    pub denominator: u64,
}

impl Ratio {
    /// `numerator / denominator`; panics on a zero denominator or a ratio above one.
    pub fn new(numerator: u64, denominator: u64) -> Ratio {
        assert!(denominator > 0, "a Ratio needs a non-zero denominator");
        assert!(numerator <= denominator, "a Ratio is at most one: {numerator}/{denominator}");
        Ratio { numerator, denominator }
    }
}

/// A seeded generator; see the module doc.
#[derive(Clone, Debug)]
pub struct Prng {
    rng: ChaCha8Rng,
}

impl Prng {
    /// A generator whose whole stream is determined by `seed`.
    pub fn from_seed(seed: u64) -> Prng {
        Prng { rng: ChaCha8Rng::seed_from_u64(seed) }
    }

    /// A child generator for one purpose: depends on this generator's seed and `purpose` only,
    /// not on how many numbers were drawn from this generator before.
    pub fn fork(seed: u64, purpose: &str) -> Prng {
        Prng::from_seed(seed ^ fnv1a64(purpose.as_bytes()).rotate_left(17))
    }

    /// A uniformly distributed `u64`.
    pub fn next_u64(&mut self) -> u64 {
        self.rng.next_u64()
    }

    /// A uniform integer in `0..bound`; `bound` must be non-zero.
    pub fn below(&mut self, bound: u64) -> u64 {
        assert!(bound > 0, "Prng::below needs a non-zero bound");
        // Rejection sampling keeps the distribution exactly uniform.
        let zone = u64::MAX - (u64::MAX % bound);
        loop {
            let value = self.next_u64();
            if value < zone {
                return value % bound;
            }
        }
    }

    /// A uniform integer in `low..=high`.
    pub fn range_inclusive(&mut self, low: u64, high: u64) -> u64 {
        assert!(low <= high, "empty range {low}..={high}");
        if high - low == u64::MAX {
            return self.next_u64();
        }
        low + self.below(high - low + 1)
    }

    /// True with probability `ratio`.
    pub fn chance(&mut self, ratio: Ratio) -> bool {
        self.below(ratio.denominator) < ratio.numerator
    }

    /// A uniformly chosen element of a non-empty slice.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        assert!(!items.is_empty(), "Prng::pick from an empty slice");
        &items[self.below(items.len() as u64) as usize]
    }
}

/// FNV-1a, 64 bit: a stable hash for names and trace canonicalization.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_forks_are_independent() {
        let mut a = Prng::from_seed(7);
        let mut b = Prng::from_seed(7);
        let drawn_a: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
        let drawn_b: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
        assert_eq!(drawn_a, drawn_b);
        let mut faults = Prng::fork(7, "faults");
        let mut workload = Prng::fork(7, "workload");
        assert_ne!(faults.next_u64(), workload.next_u64());
        // A fork does not depend on draws from its parent.
        assert_eq!(Prng::fork(7, "faults").next_u64(), Prng::fork(7, "faults").next_u64());
    }

    #[test]
    fn below_stays_in_bounds_and_chance_respects_extremes() {
        let mut prng = Prng::from_seed(1);
        for bound in 1..50 {
            assert!(prng.below(bound) < bound);
        }
        assert!(!prng.chance(Ratio::new(0, 5)));
        assert!(prng.chance(Ratio::new(5, 5)));
        let value = prng.range_inclusive(10, 12);
        assert!((10..=12).contains(&value));
    }
}
