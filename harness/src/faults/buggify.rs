//! The engine's fault points under simulation: with `buggify: true` a scenario's seed first
//! enables each [`FaultPoint`] with probability one half (swarm testing: each seed explores a
//! different combination, and one point's noise does not drown another's), then every time an
//! enabled point is asked it fires with the point's own odds ([`FaultPoint::odds`]: one in four
//! for a point asked once per task, far rarer for one asked on every call or timer). Both draws come from streams
//! forked from the seed for this purpose, so a seed replays the same points firing at the same
//! steps, and the seed's other streams (faults, workload) are unchanged.

use std::cell::RefCell;

use serde::{Deserialize, Serialize};

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

    /// `points` enabled whatever the seed, and `seed`'s stream of firings (an explicit setting:
    /// `buggify: [slow-cancel, …]`, or a campaign's genome).
    pub fn with_points(seed: u64, points: &[FaultPoint]) -> SwarmPolicy {
        let enabled = FaultPoint::ALL.iter().copied().filter(|point| points.contains(point)).collect();
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

/// A scenario's `buggify:` setting: off (`false`, the default), swarm (`true`: each seed enables
/// each point with probability one half), or the points named (`[slow-cancel, sync-fails]`,
/// enabled on every seed: what a replay file or a campaign's genome records).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Buggify {
    /// No fault point fires.
    #[default]
    Off,
    /// Each seed enables its own points.
    Swarm,
    /// These points, on every seed.
    Points(Vec<FaultPoint>),
}

impl Buggify {
    /// Whether it is off.
    pub fn is_off(&self) -> bool {
        *self == Buggify::Off
    }

    /// The policy a run of `seed` installs, if any.
    pub fn policy(&self, seed: u64) -> Option<SwarmPolicy> {
        match self {
            Buggify::Off => None,
            Buggify::Swarm => Some(SwarmPolicy::for_seed(seed)),
            Buggify::Points(points) => Some(SwarmPolicy::with_points(seed, points)),
        }
    }
}

impl Serialize for Buggify {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Buggify::Off => serializer.serialize_bool(false),
            Buggify::Swarm => serializer.serialize_bool(true),
            Buggify::Points(points) => points.serialize(serializer),
        }
    }
}

impl<'de> Deserialize<'de> for Buggify {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Buggify, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged, expecting = "`true`, `false`, or a list of fault points like [slow-cancel, sync-fails]")]
        enum Raw {
            Switch(bool),
            Points(Vec<String>),
        }
        Ok(match Raw::deserialize(deserializer)? {
            Raw::Switch(true) => Buggify::Swarm,
            Raw::Switch(false) => Buggify::Off,
            Raw::Points(names) => {
                let mut points = Vec::new();
                for name in names {
                    let point: FaultPoint = name.parse().map_err(serde::de::Error::custom)?;
                    if !points.contains(&point) {
                        points.push(point);
                    }
                }
                points.sort();
                Buggify::Points(points)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_reads_as_off_swarm_or_the_points_named() {
        let read = |yaml: &str| serde_yaml::from_str::<Buggify>(yaml).map_err(|error| error.to_string());
        assert_eq!(read("false"), Ok(Buggify::Off));
        assert_eq!(read("true"), Ok(Buggify::Swarm));
        let points = read("[sync-fails, slow-cancel, sync-fails]").unwrap();
        assert_eq!(points, Buggify::Points(vec![FaultPoint::SlowCancel, FaultPoint::SyncFails]));
        assert_eq!(serde_yaml::to_string(&points).unwrap(), "- slow-cancel\n- sync-fails\n");
        assert!(read("[sink-fails]").unwrap_err().contains("unknown fault point `sink-fails`"));
        assert!(read("maybe").unwrap_err().contains("a list of fault points"));
        let policy = points.policy(9).unwrap();
        assert_eq!(policy.enabled(), [FaultPoint::SlowCancel, FaultPoint::SyncFails], "on any seed");
        let swarm = SwarmPolicy::for_seed(9);
        let same = SwarmPolicy::with_points(9, swarm.enabled());
        let fire = |policy: &SwarmPolicy| (0..400).map(|_| policy.fires(FaultPoint::SlowCancel)).collect::<Vec<_>>();
        assert_eq!(fire(&swarm), fire(&same), "a seed's own points, named, fire as the swarm does");
    }

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
