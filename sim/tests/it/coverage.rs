//! Coverage: the rare protocol states the suite must keep reaching. Each entry names scenario
//! seeds and the coverage marks they must reach between them; a mark that stops being reached
//! (a change made its state unreachable, or moved it out of these seeds' way) is a red build
//! naming the scenario, not a silent loss of coverage. Every declared mark is required by some
//! entry or listed in [`NOT_YET_REACHED`].

use std::collections::BTreeSet;
use std::ops::Range;

use sluice_engine::cover::Mark;
use sluice_sim::seed::{DeterminismCheck, SeedOutcome, run_seed};

use crate::support::{load, seeds_overridden};

/// Scenario seeds, and the marks their runs must reach between them.
const SUITE: &[(&str, Range<u64>, &[Mark])] = &[
    (
        "scenarios/wordcount-checkpoint-aborted.yaml",
        1..2,
        &[
            Mark::AlignmentBlockedWhileOtherDelivers,
            Mark::RestoreWithPendingCommittables,
            Mark::CommitRetried,
            Mark::LingeringTransactionAborted,
            Mark::BackpressureReachedSource,
        ],
    ),
    ("scenarios/wordcount-lost-triggers.yaml", 1..5, &[Mark::CheckpointCancelledByNewerBarrier]),
    ("scenarios/wordcount-checkpoint-timeout.yaml", 1..2, &[Mark::CheckpointAbortedByTimeout]),
    ("scenarios/wordcount-gives-up.yaml", 1..2, &[Mark::RestartStrategyGaveUp]),
    // A failing sync is 1/256 of the syncs of a seed that enables the point: rare per seed.
    ("scenarios/wordcount-buggify.yaml", 2..3, &[Mark::BuggifySyncFails]),
    (
        "scenarios/tpcds-lost-partition-chain.yaml",
        1..2,
        &[Mark::MissingPartitionProducerRestarted, Mark::ProducerRestartedTwoStagesUp],
    ),
    ("scenarios/tpcds-jm-crash.yaml", 1..2, &[Mark::JobMasterKeptFinishedWork]),
    ("scenarios/tpcds-tm-lost-reconciling.yaml", 1..2, &[Mark::TaskManagerLostDuringReconciliation]),
    ("scenarios/tpcds-adaptive.yaml", 1..2, &[Mark::AdaptiveParallelismDecided]),
    ("scenarios/tpcds-tm-dead-regions.yaml", 1..2, &[Mark::TaskManagerFoundUnreachable]),
    ("scenarios/tpcds.yaml", 1..2, &[Mark::SortBufferSpilled]),
    ("scenarios/tpcds/q3.yaml", 1..2, &[Mark::BroadcastJoinProbeWaited]),
    ("scenarios/tpcds/q64.yaml", 1..2, &[Mark::ChangelogRetracted]),
    (
        "scenarios/wordcount-buggify.yaml",
        5..8,
        &[
            Mark::ZombieWriterFenced,
            Mark::InputSortSpilled,
            Mark::RetriedAppendFoundApplied,
            Mark::BuggifyInputSortSpillsEarly,
            Mark::BuggifySortBufferShrunk,
            Mark::BuggifyCreditsShrunk,
            Mark::BuggifySlowCancel,
            Mark::BuggifyRpcReplyLate,
            Mark::BuggifyRequestHeldBack,
            Mark::BuggifyHeartbeatAnsweredLate,
            Mark::BuggifyTimerLate,
            Mark::BuggifyDurableAppendReplyLost,
        ],
    ),
];

/// Marks no scenario reaches yet, asserted unreached so that reaching one moves it into
/// [`SUITE`]. Empty: every declared mark is reached.
const NOT_YET_REACHED: &[Mark] = &[];

#[test]
fn every_declared_mark_is_required_by_the_suite_or_known_unreached() {
    let required: BTreeSet<Mark> = SUITE.iter().flat_map(|(_, _, marks)| marks.iter().copied()).collect();
    let unreached: BTreeSet<Mark> = NOT_YET_REACHED.iter().copied().collect();
    assert!(required.is_disjoint(&unreached), "a mark is both required and known unreached");
    let accounted: BTreeSet<Mark> = required.union(&unreached).copied().collect();
    let forgotten: Vec<&str> =
        Mark::ALL.iter().filter(|mark| !accounted.contains(mark)).map(|mark| mark.name()).collect();
    assert!(forgotten.is_empty(), "declared marks no entry of SUITE requires: {}", forgotten.join(", "));
}

#[test]
fn the_suite_reaches_every_rare_state_it_declares() {
    if seeds_overridden() {
        return; // the entries name their own seeds; SLUICE_SEED(S) is for the scenario tests
    }
    let mut reached_anywhere: BTreeSet<Mark> = BTreeSet::new();
    let mut missing = Vec::new();
    for (file, seeds, marks) in SUITE {
        let scenario = load(file);
        let mut reached: BTreeSet<Mark> = BTreeSet::new();
        for seed in seeds.clone() {
            let result = run_seed(&scenario, seed, &scenario.modes, DeterminismCheck::Off);
            assert!(
                result.outcome() != SeedOutcome::Failed,
                "{file} seed {seed} failed: {:?}\n    replay: cargo run --release -p sluice-sim -- run {file} --seeds {seed}..{}",
                result.failures(),
                seed + 1
            );
            for (report, _) in &result.runs {
                reached.extend(report.coverage.keys().copied());
            }
        }
        for mark in *marks {
            if !reached.contains(mark) {
                missing.push(format!("{file} seeds {seeds:?} no longer reach {mark}: {}", mark.description()));
            }
        }
        reached_anywhere.extend(reached);
    }
    assert!(missing.is_empty(), "coverage lost:\n{}", missing.join("\n"));
    for mark in NOT_YET_REACHED {
        assert!(
            !reached_anywhere.contains(mark),
            "{mark} is reached now: move it from NOT_YET_REACHED into the SUITE entry that reaches it"
        );
    }
}
