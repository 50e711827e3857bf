//! The engine's fault points under simulation: with `buggify: true` a scenario's seed first
//! enables each [`FaultPoint`] with probability one half (swarm testing: each seed explores a
//! different combination, and one point's noise does not drown another's), then every time an
//! enabled point is asked it fires with the point's own odds ([`FaultPoint::odds`]: one in four
//! for a point asked once per task, far rarer for one asked on every call or timer). Both draws come from streams
//! forked from the seed for this purpose, so a seed replays the same points firing at the same
//! steps, and the seed's other streams (faults, workload) are unchanged.

use std::cell::RefCell;

use sluice_engine::buggify::{FaultPoint, FaultPolicy};
use sluice_engine::prng::{Prng, Ratio};

/// One seed's fault points; see the module doc.
pub struct SwarmPolicy {
    enabled: Vec<FaultPoint>,
    draws: RefCell<Prng>,
}

impl SwarmPolicy {
    /// The points `seed` enables, and its stream of firings.
    pub fn for_seed(seed: u64) -> SwarmPolicy {
        let mut choose = Prng::fork(seed, "buggify-points");
        let enabled = FaultPoint::ALL.iter().copied().filter(|_| choose.chance(Ratio::new(1, 2))).collect();
        SwarmPolicy { enabled, draws: RefCell::new(Prng::fork(seed, "buggify-firings")) }
    }

    /// The points this seed enables, in declaration order.
    pub fn enabled(&self) -> &[FaultPoint] {
        &self.enabled
    }
}

impl FaultPolicy for SwarmPolicy {
    fn fires(&self, point: FaultPoint) -> bool {
        self.enabled.contains(&point) && self.draws.borrow_mut().chance(point.odds())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_enable_different_points_and_replay_the_same_firings() {
        let sets: std::collections::BTreeSet<Vec<FaultPoint>> =
            (1..64).map(|seed| SwarmPolicy::for_seed(seed).enabled().to_vec()).collect();
        assert!(sets.len() > 8, "seeds explore different combinations: {sets:?}");
        let firings = |seed| {
            let policy = SwarmPolicy::for_seed(seed);
            (0..200)
                .map(|_| FaultPoint::ALL.iter().map(|point| policy.fires(*point)).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        assert_eq!(firings(7), firings(7), "a seed replays");
        let policy = SwarmPolicy::for_seed(7);
        for point in FaultPoint::ALL {
            let fired = (0..25_600).filter(|_| policy.fires(*point)).count() as u64;
            if policy.enabled().contains(point) {
                let odds = point.odds();
                let expected = 25_600 * odds.numerator / odds.denominator;
                assert!(
                    (expected / 2..expected * 3 / 2).contains(&fired),
                    "{point} fires at its odds {odds:?}: {fired} of 25600, about {expected} expected"
                );
            } else {
                assert_eq!(fired, 0, "{point} is not enabled");
            }
        }
    }
}
