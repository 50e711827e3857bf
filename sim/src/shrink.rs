//! Shrinking: the smallest scenario that still fails the same check.
//!
//! 1. Delta debugging (Zeller's ddmin) over the fault schedule: drop chunks of faults, keep any
//!    smaller schedule that still fails.
//! 2. Simplify each remaining fault: an earlier trigger (or a time trigger instead of an event
//!    trigger), a shorter duration, a sooner restart, fewer nodes in a partition, milder loss,
//!    latency, slowness or counts.
//! 3. Smaller input and lower parallelism: halve each job parameter and the parallelism while
//!    the failure stays.
//!
//! A step is kept only if the seed still fails *the same check*; every step re-runs the seed in
//! the scenario's modes. The result is a scenario with explicit faults only.

use std::time::Duration;

use sluice_catalog::ParamValue;
use sluice_engine::graph::ExecutionMode;

use crate::seed::{DeterminismCheck, SeedResult, run_seed};
use sluice_harness::faults::{Fault, FaultKind, Trigger};
use sluice_harness::scenario::Scenario;

/// What shrinking produced.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The minimal scenario.
    pub scenario: Scenario,
    /// The check it fails.
    pub check: String,
    /// The last failing run, for its replay information.
    pub result: SeedResult,
    /// Simulations run while shrinking.
    pub tests: usize,
}

struct Shrinker<'a> {
    seed: u64,
    modes: Vec<ExecutionMode>,
    check: String,
    tests: usize,
    last_failure: Option<SeedResult>,
    progress: &'a mut dyn FnMut(&str),
}

impl Shrinker<'_> {
    /// True if `candidate` still fails the target check (and remembers that run).
    fn fails(&mut self, candidate: &Scenario) -> bool {
        self.tests += 1;
        let result = run_seed(candidate, self.seed, &self.modes, DeterminismCheck::Off);
        let same = result.failures().iter().any(|(_, failure)| failure.check == self.check);
        if same {
            self.last_failure = Some(result);
        }
        same
    }

    fn with_faults(base: &Scenario, faults: Vec<Fault>) -> Scenario {
        Scenario { faults, random_faults: None, ..base.clone() }
    }

    /// ddmin: the smallest subsequence of `faults` (1-minimal) that still fails.
    fn minimize_faults(&mut self, base: &Scenario, mut faults: Vec<Fault>) -> Vec<Fault> {
        let mut granularity = 2;
        while faults.len() >= 2 {
            let chunk = faults.len().div_ceil(granularity);
            let chunks: Vec<Vec<Fault>> = faults.chunks(chunk).map(<[Fault]>::to_vec).collect();
            let mut reduced = false;
            for index in 0..chunks.len() {
                // Try one chunk alone, then everything but that chunk.
                let complement: Vec<Fault> = chunks
                    .iter()
                    .enumerate()
                    .filter(|(other, _)| *other != index)
                    .flat_map(|(_, chunk)| chunk.clone())
                    .collect();
                for candidate in [chunks[index].clone(), complement] {
                    if candidate.len() < faults.len() && self.fails(&Self::with_faults(base, candidate.clone())) {
                        (self.progress)(&format!(
                            "{} still fail",
                            sluice_harness::words::counted(candidate.len() as u64, "fault")
                        ));
                        faults = candidate;
                        granularity = (granularity - 1).max(2);
                        reduced = true;
                        break;
                    }
                }
                if reduced {
                    break;
                }
            }
            if !reduced {
                if granularity >= faults.len() {
                    break;
                }
                granularity = (granularity * 2).min(faults.len());
            }
        }
        if faults.len() == 1 && self.fails(&Self::with_faults(base, Vec::new())) {
            faults.clear();
        }
        faults
    }

    /// Simplifies each fault in turn until none of its simplifications still fails.
    fn simplify_faults(
        &mut self,
        base: &Scenario,
        mut faults: Vec<Fault>,
        fired_at: &[Option<Duration>],
    ) -> Vec<Fault> {
        for index in 0..faults.len() {
            let mut rounds = 0;
            'fixpoint: while rounds < 32 {
                rounds += 1;
                for simpler in simplifications(&faults[index], fired_at.get(index).copied().flatten()) {
                    let mut candidate = faults.clone();
                    candidate[index] = simpler.clone();
                    let candidate = Self::with_faults(base, candidate);
                    if self.valid(&candidate) && self.fails(&candidate) {
                        (self.progress)(&format!("fault #{index} is now {simpler}"));
                        faults[index] = simpler;
                        continue 'fixpoint;
                    }
                }
                break;
            }
        }
        faults
    }

    /// Halves job parameters and the parallelism while the failure stays.
    fn shrink_input(&mut self, mut scenario: Scenario) -> Scenario {
        let params = scenario.job_params().0;
        let names: Vec<String> =
            params.into_iter().filter(|(_, value)| matches!(value, ParamValue::Int(_))).map(|(name, _)| name).collect();
        for name in names {
            loop {
                let current = scenario.job_params().get(&name);
                if current <= 1 {
                    break;
                }
                let mut candidate = scenario.clone();
                candidate.params.insert(name.clone(), ParamValue::Int(current / 2));
                if !self.valid(&candidate) || !self.fails(&candidate) {
                    break;
                }
                (self.progress)(&format!("{name} = {}", current / 2));
                scenario = candidate;
            }
        }
        while scenario.parallelism > 1 {
            let candidate = Scenario { parallelism: scenario.parallelism / 2, ..scenario.clone() };
            if !self.valid(&candidate) || !self.fails(&candidate) {
                break;
            }
            (self.progress)(&format!("parallelism = {}", candidate.parallelism));
            scenario = candidate;
        }
        scenario
    }

    /// A candidate must still be a valid scenario (a parameter may have a minimum).
    fn valid(&self, candidate: &Scenario) -> bool {
        Scenario::parse_with("shrink candidate", &candidate.to_yaml(), candidate.jobs.clone()).is_ok()
    }
}

/// Half a duration, in whole milliseconds and at least one (a fault's `for` is at least 1ms).
fn halve(duration: Duration) -> Option<Duration> {
    let half = Duration::from_millis((duration.as_millis() / 2) as u64).max(Duration::from_millis(1));
    (half < duration).then_some(half)
}

/// Simpler versions of a fault, most aggressive first.
fn simplifications(fault: &Fault, fired_at: Option<Duration>) -> Vec<Fault> {
    let mut simpler = Vec::new();
    let with_trigger = |trigger: Trigger| Fault { trigger, kind: fault.kind.clone() };
    match &fault.trigger {
        Trigger::At(time) => simpler.extend(halve(*time).map(|earlier| with_trigger(Trigger::At(earlier)))),
        // An event trigger becomes a time trigger at the moment it fired.
        // A share of the fault-free run likewise, in the mode that failed first.
        Trigger::Task { .. }
        | Trigger::RecordsCommitted(_)
        | Trigger::Checkpoint(_)
        | Trigger::Prepared(_)
        | Trigger::AtShare(_)
        | Trigger::PreparedShare(_)
        | Trigger::Step { .. }
        | Trigger::Mark { .. } => simpler
            .extend(fired_at.map(|time| with_trigger(Trigger::At(Duration::from_millis(time.as_millis() as u64))))),
    }
    simpler.extend(simpler_kinds(&fault.kind).into_iter().map(|kind| Fault { trigger: fault.trigger.clone(), kind }));
    simpler
}

/// Simpler kinds of fault than `kind`, most aggressive first: shorter, milder, or a loss in place
/// of a corruption.
fn simpler_kinds(kind: &FaultKind) -> Vec<FaultKind> {
    match kind {
        FaultKind::Kill { node, restart_after: Some(delay) } => halve(*delay)
            .map(|sooner| FaultKind::Kill { node: node.clone(), restart_after: Some(sooner) })
            .into_iter()
            .collect(),
        FaultKind::Kill { restart_after: None, .. }
        | FaultKind::CommitFails { count: 1 }
        | FaultKind::CommitReplyLost { count: 1 }
        | FaultKind::LoseNewestObjects { count: 1 }
        | FaultKind::LosePartition { .. } => Vec::new(),
        // A corruption is a loss the reader has to detect, and losing a disk loses every
        // partition on it: losing one partition is simpler than either.
        FaultKind::CorruptPartition { node } | FaultKind::LoseDisk { node } => {
            vec![FaultKind::LosePartition { node: node.clone() }]
        }
        FaultKind::DurableStoreUnavailable { duration } => halve(*duration)
            .map(|shorter| FaultKind::DurableStoreUnavailable { duration: shorter })
            .into_iter()
            .collect(),
        FaultKind::StoreUnavailable { duration } => {
            halve(*duration).map(|shorter| FaultKind::StoreUnavailable { duration: shorter }).into_iter().collect()
        }
        FaultKind::LoseNewestObjects { count } => vec![FaultKind::LoseNewestObjects { count: count / 2 }],
        FaultKind::CommitFails { count } => vec![FaultKind::CommitFails { count: count / 2 }],
        FaultKind::CommitReplyLost { count } => vec![FaultKind::CommitReplyLost { count: count / 2 }],
        FaultKind::Partition { .. }
        | FaultKind::PacketLoss { .. }
        | FaultKind::Latency { .. }
        | FaultKind::Slow { .. } => simpler_network_kinds(kind),
    }
}

/// Simpler network and node faults: shorter, then over fewer nodes or milder.
fn simpler_network_kinds(kind: &FaultKind) -> Vec<FaultKind> {
    let mut simpler = Vec::new();
    match kind {
        FaultKind::Partition { sides, one_way, duration } => {
            let one_way = *one_way;
            simpler.extend(halve(*duration).map(|shorter| FaultKind::Partition {
                sides: sides.clone(),
                one_way,
                duration: shorter,
            }));
            for side in 0..2 {
                for drop in 0..sides[side].len() {
                    if sides[side].len() > 1 {
                        let mut fewer = sides.clone();
                        fewer[side].remove(drop);
                        simpler.push(FaultKind::Partition { sides: fewer, one_way, duration: *duration });
                    }
                }
            }
        }
        FaultKind::PacketLoss { percent, duration } => {
            simpler
                .extend(halve(*duration).map(|shorter| FaultKind::PacketLoss { percent: *percent, duration: shorter }));
            if *percent > 1 {
                simpler.push(FaultKind::PacketLoss { percent: percent / 2, duration: *duration });
            }
        }
        FaultKind::Latency { min, max, duration } => {
            simpler.extend(halve(*duration).map(|shorter| FaultKind::Latency {
                min: *min,
                max: *max,
                duration: shorter,
            }));
            let middle = *min + (*max - *min) / 2;
            if middle < *max {
                simpler.push(FaultKind::Latency { min: *min, max: middle, duration: *duration });
            }
        }
        FaultKind::Slow { node, factor, duration } => {
            simpler.extend(halve(*duration).map(|shorter| FaultKind::Slow {
                node: node.clone(),
                factor: *factor,
                duration: shorter,
            }));
            if *factor > 2 {
                simpler.push(FaultKind::Slow { node: node.clone(), factor: (factor / 2).max(2), duration: *duration });
            }
        }
        other => unreachable!("simpler_network_kinds takes only network and node faults, not {other:?}"),
    }
    simpler
}

/// Shrinks a failing scenario (its first seed, or its replay seed); see the module doc.
pub fn shrink(scenario: &Scenario, progress: &mut dyn FnMut(&str)) -> Result<Shrunk, String> {
    let seed = scenario.replay.as_ref().map_or(scenario.seeds.start, |replay| replay.seed);
    let initial = run_seed(scenario, seed, &scenario.modes, DeterminismCheck::Off);
    let failures = initial.failures();
    let target = match &scenario.replay {
        Some(replay) if failures.iter().any(|(_, failure)| failure.check == replay.check) => replay.check.clone(),
        _ => failures
            .first()
            .map(|(_, failure)| failure.check.to_string())
            .ok_or_else(|| format!("seed {seed} of `{}` does not fail: there is nothing to shrink", scenario.name))?,
    };
    // When each fault fired, counted (as `at:` triggers count) from the job's submission.
    let fired_at: Vec<Option<Duration>> = initial.runs.first().map_or_else(Vec::new, |(report, _)| {
        let submitted = report
            .trace
            .iter()
            .find(|record| matches!(record.event, sluice_engine::trace::TraceEvent::SubmissionAcknowledged { .. }))
            .map_or(Duration::ZERO, |record| record.time);
        (0..report.schedule.len())
            .map(|index| {
                report.trace.iter().find_map(|record| match record.event {
                    sluice_engine::trace::TraceEvent::FaultInjected { index: fired, .. } if fired == index => {
                        Some(record.time.saturating_sub(submitted))
                    }
                    _ => None,
                })
            })
            .collect()
    });
    let schedule = initial.runs.first().map(|(report, _)| report.schedule.clone()).unwrap_or_default();
    let base = Scenario { seeds: seed..seed + 1, replay: None, ..scenario.clone() };
    let mut shrinker = Shrinker {
        seed,
        modes: scenario.modes.clone(),
        check: target.clone(),
        tests: 0,
        last_failure: Some(initial),
        progress,
    };
    // Fault indices shift as faults go; keep each survivor's firing time with it.
    let kept = shrinker.minimize_faults(&base, schedule.clone());
    let kept_fired: Vec<Option<Duration>> = kept
        .iter()
        .map(|fault| schedule.iter().position(|original| original == fault).and_then(|index| fired_at[index]))
        .collect();
    let simplified = shrinker.simplify_faults(&base, kept, &kept_fired);
    let minimal = shrinker.shrink_input(Shrinker::with_faults(&base, simplified));
    let result = shrinker.last_failure.take().expect("the initial run failed");
    Ok(Shrunk { scenario: minimal, check: target, result, tests: shrinker.tests })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_halves_down_to_one_millisecond_and_no_further() {
        let ms = Duration::from_millis;
        assert_eq!(halve(ms(9)), Some(ms(4)));
        assert_eq!(halve(ms(3)), Some(ms(1)));
        assert_eq!(halve(ms(1)), None);
        let slow = Fault {
            trigger: sluice_harness::faults::Trigger::At(ms(5)),
            kind: FaultKind::Slow { node: "tm-0".to_string(), factor: 2, duration: ms(1) },
        };
        assert!(simplifications(&slow, None).iter().all(|fault| match &fault.kind {
            FaultKind::Slow { duration, .. } => *duration >= ms(1),
            _ => true,
        }));
    }
}
