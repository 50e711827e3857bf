//! What a search runs, and how it makes a new one from those it kept.
//!
//! A [`Genome`] is a seed and an explicit fault schedule. The seed drives everything madsim
//! draws (scheduling, message timing, the input, buggify's swarm); the schedule is data, with
//! relative triggers, mutated with the campaign's own random stream. Editing one fault therefore
//! changes what that fault changes and nothing else, where mutating madsim's draws would
//! reshuffle everything after them (RisingWave found driving madsim's RNG with a fuzzer "seems
//! not working at all", risingwave#5010).
//!
//! The operators, each from a tool that reported gains with it (notes: guided-search.md §5):
//! insert, delete or replace a fault (Mallory's power schedule); draw a fault's trigger again, or
//! nudge a share trigger earlier or later (FaultFuzz's occurrence, CrashTuner's timing), or move
//! it to right after a protocol step (CrashTuner's meta-info access points) or right after
//! another of its faults fires (Jepsen's composed nemeses: faults that overlap); draw a
//! fault's node, duration or count again (DistFuzz, Chronos); splice two schedules (AFL); keep
//! the schedule under a new seed (moonpool's and Antithesis' branching).

use std::fmt;

use serde::{Deserialize, Serialize};
use sluice_engine::prng::Prng;

use crate::faults::random::{RandomFaults, Topology};
use sluice_engine::buggify::FaultPoint;
use sluice_engine::cover::Mark;

use crate::faults::{CheckpointTrigger, Fault, FaultKind, ProtocolStep, Share, Trigger};

/// A seed and its explicit schedule: one input of a search.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Genome {
    /// What madsim draws from.
    pub seed: u64,
    /// The faults, in schedule order.
    pub faults: Vec<Fault>,
    /// The engine's fault points enabled (for a scenario with `buggify`), in declaration order:
    /// part of what the search varies, apart from the seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buggify: Option<Vec<FaultPoint>>,
}

impl Genome {
    /// A genome without fault points.
    pub fn new(seed: u64, faults: Vec<Fault>) -> Genome {
        Genome { seed, faults, buggify: None }
    }
}

/// Which operator made a genome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutation {
    /// A fresh seed's own random schedule (no parent).
    Fresh,
    /// A fault added.
    Insert,
    /// A fault removed.
    Delete,
    /// A fault replaced by a new one.
    Replace,
    /// A fault's trigger drawn again.
    Retrigger,
    /// A share trigger moved earlier or later.
    Nudge,
    /// A fault point of the engine's turned on or off (for a scenario with `buggify`).
    Toggle,
    /// A fault's trigger moved to right after a protocol step: a JobMaster reconciling, a
    /// service that just acknowledged a write, a failover under way (CrashTuner's meta-info
    /// points).
    Follow,
    /// A fault's trigger moved to right after another fault of the schedule fires (`after:
    /// { step: fault-injected, nth }`): faults that overlap, such as a partition lost while the
    /// JobMaster is down, which two blind times rarely make.
    Overlap,
    /// A fault's node, duration or count drawn again.
    Redraw,
    /// The start of one schedule and the end of another.
    Splice,
    /// The same schedule under a new seed.
    Reseed,
    /// A fault of a kind not yet seen at a mark the parent reaches, in place of one of its
    /// faults (same trigger) or added (directed swarm testing: aim at an unreached cell).
    Aim,
    /// A fault added right after a hit of a rare mark the parent reaches, under the parent's
    /// seed: the branch from a rare state (moonpool's and Antithesis' split points).
    Branch,
}

impl fmt::Display for Mutation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = serde_yaml::to_string(self).unwrap_or_default();
        f.write_str(name.trim())
    }
}

/// What mutations may draw from: the scenario's random-fault spec and cluster.
pub struct Space<'a> {
    /// Kinds and triggers to draw faults from.
    pub spec: &'a RandomFaults,
    /// The cluster and job the faults land on.
    pub topology: &'a Topology,
    /// Most faults a schedule holds.
    pub max_faults: usize,
    /// Fewest faults a schedule is cut down to (by deletion or aiming at no fault); a schedule
    /// already at or below it is only retimed.
    pub min_faults: usize,
}

/// TaskManagers a schedule kills for good.
fn permanent_losses(faults: &[Fault]) -> u32 {
    faults
        .iter()
        .filter(|fault| matches!(&fault.kind, FaultKind::Kill { node, restart_after: None } if node.starts_with("tm-")))
        .count() as u32
}

/// A mutant of `parent`, with `other` (another kept genome) for splicing and `fresh_seed` for
/// reseeding; see the module doc. Always differs from the parent in its schedule or its seed.
pub fn mutate(parent: &Genome, other: &Genome, fresh_seed: u64, prng: &mut Prng, space: &Space) -> (Genome, Mutation) {
    for _ in 0..16 {
        let mutation = *prng.pick(&OPERATORS);
        if let Some(child) = apply(mutation, parent, other, fresh_seed, prng, space)
            && child != *parent
        {
            return (child, mutation);
        }
    }
    (Genome { seed: fresh_seed, ..parent.clone() }, Mutation::Reseed)
}

const OPERATORS: [Mutation; 11] = [
    Mutation::Insert,
    Mutation::Delete,
    Mutation::Replace,
    Mutation::Retrigger,
    Mutation::Nudge,
    Mutation::Follow,
    Mutation::Overlap,
    Mutation::Toggle,
    Mutation::Redraw,
    Mutation::Splice,
    Mutation::Reseed,
];

/// One operator; `None` where it does not apply (deleting the only fault, inserting past the most).
fn apply(
    mutation: Mutation,
    parent: &Genome,
    other: &Genome,
    fresh_seed: u64,
    prng: &mut Prng,
    space: &Space,
) -> Option<Genome> {
    let mut faults = parent.faults.clone();
    let at = |prng: &mut Prng, len: usize| prng.below(len as u64) as usize;
    let mut losses = permanent_losses(&faults);
    match mutation {
        Mutation::Insert if faults.len() < space.max_faults => {
            let index = at(prng, faults.len() + 1);
            faults.insert(index, space.spec.draw_fault(prng, space.topology, &mut losses));
        }
        Mutation::Delete if faults.len() > space.min_faults.max(1) => {
            faults.remove(at(prng, faults.len()));
        }
        Mutation::Replace if !faults.is_empty() => {
            let index = at(prng, faults.len());
            losses -= permanent_losses(&faults[index..=index]);
            faults[index] = space.spec.draw_fault(prng, space.topology, &mut losses);
        }
        Mutation::Retrigger | Mutation::Follow | Mutation::Overlap | Mutation::Nudge => {
            retime(mutation, &mut faults, prng, space)?;
        }
        Mutation::Redraw if !faults.is_empty() => {
            let index = at(prng, faults.len());
            losses -= permanent_losses(&faults[index..=index]);
            faults[index] = space.spec.redraw_kind(&faults[index], prng, space.topology, &mut losses);
        }
        Mutation::Splice if !other.faults.is_empty() => {
            let keep = at(prng, faults.len() + 1);
            let from = at(prng, other.faults.len());
            faults.truncate(keep);
            faults.extend(other.faults[from..].iter().cloned());
            faults.truncate(space.max_faults);
            if faults.is_empty() {
                return None;
            }
        }
        Mutation::Toggle => {
            let mut points = parent.buggify.clone()?;
            let point = *prng.pick(FaultPoint::ALL);
            match points.iter().position(|enabled| *enabled == point) {
                Some(index) => {
                    points.remove(index);
                }
                None => points.push(point),
            }
            points.sort();
            return Some(Genome { buggify: Some(points), ..parent.clone() });
        }
        Mutation::Reseed => return Some(Genome { seed: fresh_seed, faults, buggify: parent.buggify.clone() }),
        _ => return None,
    }
    Some(Genome { seed: parent.seed, faults, buggify: parent.buggify.clone() })
}

/// The operators that move one fault's trigger; `None` where there is none to move (or, for
/// `overlap`, no other fault to follow).
fn retime(mutation: Mutation, faults: &mut [Fault], prng: &mut Prng, space: &Space) -> Option<()> {
    let len = faults.len();
    let (index, trigger) = match mutation {
        Mutation::Nudge => {
            let shares: Vec<usize> = (0..len).filter(|index| share_of(&faults[*index].trigger).is_some()).collect();
            let index = *shares.get(prng.below(shares.len().max(1) as u64) as usize)?;
            (index, nudged(&faults[index].trigger, prng))
        }
        Mutation::Retrigger | Mutation::Follow if len > 0 => {
            let index = prng.below(len as u64) as usize;
            match mutation {
                Mutation::Retrigger => (index, space.spec.trigger(prng, space.topology)),
                _ => (index, crate::faults::random::step_trigger(prng, space.topology)),
            }
        }
        Mutation::Overlap if len >= 2 => {
            let index = prng.below(len as u64) as usize;
            let nth = prng.range_inclusive(1, len as u64 - 1) as u32;
            (index, Trigger::Step { step: ProtocolStep::FaultInjected, nth })
        }
        _ => return None,
    };
    faults[index].trigger = trigger;
    Some(())
}

/// A mutant of `parent` aimed at the cell (a mark the parent reaches) × `kind`: one time in two
/// a fault of `kind` replaces one of the parent's, keeping its trigger (the fault active when the
/// parent reached the mark may be the one to swap), else one is added with a trigger drawn anew.
/// Aimed at the cell × `none` (the mark reached with no fault active), a fault is removed, or
/// the only one drawn a new trigger.
pub fn aim(parent: &Genome, kind: &str, prng: &mut Prng, space: &Space) -> Genome {
    let mut faults = parent.faults.clone();
    let mut losses = permanent_losses(&faults);
    if kind == crate::coverage::NO_FAULT {
        if faults.len() > space.min_faults.max(1) {
            faults.remove(prng.below(faults.len() as u64) as usize);
        } else if let Some(only) = faults.first_mut() {
            only.trigger = space.spec.trigger(prng, space.topology);
        }
    } else if !faults.is_empty() && (prng.below(2) == 0 || faults.len() >= space.max_faults) {
        let index = prng.below(faults.len() as u64) as usize;
        losses -= permanent_losses(&faults[index..=index]);
        let trigger = faults[index].trigger.clone();
        faults[index] = space.spec.draw_fault_of_kind(kind, trigger, prng, space.topology, &mut losses);
    } else {
        let trigger = space.spec.trigger(prng, space.topology);
        let index = prng.below(faults.len() as u64 + 1) as usize;
        faults.insert(index, space.spec.draw_fault_of_kind(kind, trigger, prng, space.topology, &mut losses));
    }
    Genome { seed: parent.seed, faults, buggify: parent.buggify.clone() }
}

/// A mutant of `parent` that branches at a rare state: one more fault, of a kind drawn from the
/// scenario's, right after hit `nth` of `mark` (drawn among the first `hits`, at most three, the
/// parent's runs reached), under the parent's seed, so that the run comes to the state again as
/// far as waiting for the mark leaves the scheduling unchanged. At the most faults, the new one
/// takes the place of a fault not itself triggered by a mark, which keeps those that led there
/// when the parent branched before. See [`Mutation::Branch`].
pub fn branch(parent: &Genome, mark: Mark, hits: u64, prng: &mut Prng, space: &Space) -> Genome {
    let mut faults = parent.faults.clone();
    let nth = prng.range_inclusive(1, hits.clamp(1, 3)) as u32;
    if faults.len() >= space.max_faults {
        let replaceable: Vec<usize> =
            (0..faults.len()).filter(|index| !matches!(faults[*index].trigger, Trigger::Mark { .. })).collect();
        match replaceable.is_empty() {
            true => faults.remove(prng.below(faults.len() as u64) as usize),
            false => faults.remove(*prng.pick(&replaceable)),
        };
    }
    let mut losses = permanent_losses(&faults);
    let kind = prng.pick(&space.spec.kinds).clone();
    let fault = space.spec.draw_fault_of_kind(&kind, Trigger::Mark { mark, nth }, prng, space.topology, &mut losses);
    faults.push(fault);
    Genome { seed: parent.seed, faults, buggify: parent.buggify.clone() }
}

/// The share a relative trigger names.
fn share_of(trigger: &Trigger) -> Option<Share> {
    match trigger {
        Trigger::AtShare(share)
        | Trigger::PreparedShare(share)
        | Trigger::Checkpoint(CheckpointTrigger::Share(share)) => Some(*share),
        _ => None,
    }
}

/// A share trigger moved by up to a tenth of the run, either way, within the whole.
fn nudged(trigger: &Trigger, prng: &mut Prng) -> Trigger {
    let share = share_of(trigger).expect("internal: only share triggers are nudged");
    let step = prng.range_inclusive(1, 100);
    let permille =
        if prng.below(2) == 0 { share.permille().saturating_sub(step) } else { (share.permille() + step).min(1000) };
    let moved = Share::from_permille(permille).expect("internal: a nudged share stays within the whole");
    match trigger {
        Trigger::AtShare(_) => Trigger::AtShare(moved),
        Trigger::PreparedShare(_) => Trigger::PreparedShare(moved),
        _ => Trigger::Checkpoint(CheckpointTrigger::Share(moved)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology() -> Topology {
        Topology {
            task_managers: 3,
            slots_per_task_manager: 2,
            slots_needed: 2,
            vertices: 3,
            remote_shuffle: false,
            checkpointing: true,
        }
    }

    fn spec() -> RandomFaults {
        RandomFaults {
            count: 3,
            kinds: vec!["tm-crash".into(), "jm-crash".into(), "partition-loss".into()],
            window: None,
        }
    }

    #[test]
    fn every_operator_is_used_and_every_mutant_differs_within_bounds() {
        let spec = spec();
        let topology = topology();
        let space = Space { spec: &spec, topology: &topology, max_faults: 5, min_faults: 1 };
        let parent =
            Genome { buggify: Some(vec![FaultPoint::SlowCancel]), ..Genome::new(7, spec.generate(7, &topology)) };
        let other = Genome::new(8, spec.generate(8, &topology));
        let mut prng = Prng::fork(1, "test");
        let mut used = std::collections::BTreeSet::new();
        for round in 0..400 {
            let (child, mutation) = mutate(&parent, &other, 1000 + round, &mut prng, &space);
            assert_ne!(child, parent, "{mutation}");
            assert!((1..=5).contains(&child.faults.len()), "{mutation}: {} faults", child.faults.len());
            assert_eq!(child.seed != parent.seed, mutation == Mutation::Reseed);
            used.insert(mutation);
        }
        assert_eq!(used.len(), OPERATORS.len(), "{used:?}");
    }

    #[test]
    fn an_overlap_places_a_fault_right_after_one_of_the_others_fires() {
        let spec = spec();
        let topology = topology();
        let space = Space { spec: &spec, topology: &topology, max_faults: 5, min_faults: 1 };
        let parent = Genome::new(7, spec.generate(7, &topology));
        let mut prng = Prng::fork(3, "test");
        for _ in 0..50 {
            let child =
                apply(Mutation::Overlap, &parent, &parent, 99, &mut prng, &space).expect("three faults overlap");
            let moved: Vec<&Fault> =
                child.faults.iter().zip(&parent.faults).filter(|(c, p)| c != p).map(|(c, _)| c).collect();
            assert!(moved.len() <= 1, "one fault retimed");
            for fault in moved {
                let Trigger::Step { step: ProtocolStep::FaultInjected, nth } = fault.trigger else {
                    panic!("{fault:?}")
                };
                assert!((1..=2).contains(&nth), "after one of the two others: {nth}");
            }
        }
        let alone = Genome::new(7, parent.faults[..1].to_vec());
        assert_eq!(apply(Mutation::Overlap, &alone, &alone, 99, &mut prng, &space), None, "no other fault to follow");
    }

    #[test]
    fn mutation_is_a_function_of_the_stream() {
        let spec = spec();
        let topology = topology();
        let space = Space { spec: &spec, topology: &topology, max_faults: 5, min_faults: 1 };
        let parent = Genome::new(7, spec.generate(7, &topology));
        let run = || {
            let mut prng = Prng::fork(3, "test");
            (0..50).map(|round| mutate(&parent, &parent, round, &mut prng, &space)).collect::<Vec<_>>()
        };
        assert_eq!(run(), run());
    }

    #[test]
    fn an_aimed_mutant_holds_a_fault_of_the_kind_aimed_at() {
        let spec = spec();
        let topology = topology();
        let space = Space { spec: &spec, topology: &topology, max_faults: 4, min_faults: 1 };
        let parent = Genome::new(7, spec.generate(7, &topology));
        let mut prng = Prng::fork(9, "test");
        for _ in 0..100 {
            let child = aim(&parent, "jm-crash", &mut prng, &space);
            assert!(child.faults.iter().any(|fault| fault.kind.name() == "jm-crash"));
            assert!(child.faults.len() <= 4 && child.seed == parent.seed);
        }
    }

    #[test]
    fn aimed_at_no_fault_a_mutant_holds_fewer() {
        let spec = spec();
        let topology = topology();
        let space = Space { spec: &spec, topology: &topology, max_faults: 4, min_faults: 1 };
        let parent = Genome::new(7, spec.generate(7, &topology));
        let mut prng = Prng::fork(9, "test");
        assert_eq!(aim(&parent, "none", &mut prng, &space).faults.len(), parent.faults.len() - 1);
    }

    #[test]
    fn a_branch_adds_a_fault_right_after_the_mark_under_the_parents_seed() {
        let spec = spec();
        let topology = topology();
        let space = Space { spec: &spec, topology: &topology, max_faults: 4, min_faults: 1 };
        let parent = Genome::new(7, spec.generate(7, &topology));
        let mut prng = Prng::fork(11, "test");
        let mut child = parent.clone();
        for round in 0..3 {
            child = branch(&child, Mark::CommitRetried, 2, &mut prng, &space);
            let added = child.faults.last().unwrap();
            assert!(matches!(added.trigger, Trigger::Mark { mark: Mark::CommitRetried, nth: 1 | 2 }), "{added}");
            assert!(spec.kinds.contains(&added.kind.name().to_string()));
            assert_eq!((child.seed, child.faults.len()), (7, (parent.faults.len() + round + 1).min(4)));
        }
        // At the most faults, the branch points made before are kept.
        let marked = child.faults.iter().filter(|fault| matches!(fault.trigger, Trigger::Mark { .. })).count();
        assert_eq!(marked, 3);
    }

    #[test]
    fn a_nudge_stays_within_the_whole() {
        let mut prng = Prng::fork(5, "test");
        for _ in 0..200 {
            let share = Share::from_permille(prng.range_inclusive(0, 1000)).unwrap();
            let Some(moved) = share_of(&nudged(&Trigger::AtShare(share), &mut prng)) else { panic!() };
            assert!(moved.permille().abs_diff(share.permille()) <= 100);
        }
    }
}
