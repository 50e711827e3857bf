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
    ("scenarios/tpcds-kept-work-partition-gone.yaml", 131..132, &[Mark::KeptWorkWithPartitionGone]),
    ("scenarios/wordcount-report-of-superseded-run.yaml", 14..15, &[Mark::ReportOfSupersededRun]),
    ("scenarios/tpcds-adaptive.yaml", 1..2, &[Mark::AdaptiveParallelismDecided]),
    (
        "scenarios/wordcount-remote-shuffle.yaml",
        6..7,
        &[Mark::BuggifyShufflePushReplyLost, Mark::RetriedPushFoundApplied],
    ),
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

/// Marks a run without any fault (none scheduled, buggify off) may reach: states of a healthy
/// job. Every other mark names a state only a fault or a fault point brings about.
const WITHOUT_FAULTS: &[Mark] = &[
    Mark::AlignmentBlockedWhileOtherDelivers,
    // A checkpoint timeout shorter than the job's alignment aborts checkpoints of a healthy job.
    Mark::CheckpointAbortedByTimeout,
    Mark::BackpressureReachedSource,
    Mark::SortBufferSpilled,
    Mark::InputSortSpilled,
    Mark::BroadcastJoinProbeWaited,
    Mark::ChangelogRetracted,
    Mark::AdaptiveParallelismDecided,
];

/// Of [`WITHOUT_FAULTS`], the marks a streaming WordCount never reaches: it sorts nothing,
/// broadcasts nothing, retracts nothing and decides no parallelism at runtime.
const NOT_IN_STREAMING_WORDCOUNT: &[Mark] = &[
    Mark::SortBufferSpilled,
    Mark::InputSortSpilled,
    Mark::BroadcastJoinProbeWaited,
    Mark::ChangelogRetracted,
    Mark::AdaptiveParallelismDecided,
];

/// The other side of the suite above: a mark that fires whether or not its state occurred
/// would pass it. Each entry's first seed, run without its faults and without buggify, reaches
/// no mark that needs a fault, and a streaming WordCount none of the batch or planner marks.
#[test]
fn no_mark_is_reached_by_a_run_where_its_state_does_not_occur() {
    let mut wrong = Vec::new();
    let mut quiet_runs = 0;
    let files: BTreeSet<&str> = SUITE.iter().map(|(file, _, _)| *file).collect();
    for file in files {
        let mut scenario = load(file);
        scenario.faults.clear();
        scenario.random_faults = None;
        scenario.buggify = sluice_harness::faults::buggify::Buggify::Off;
        scenario.harness_crash = None;
        let seed = scenario.seeds.start;
        let result = run_seed(&scenario, seed, &scenario.modes, DeterminismCheck::Off);
        for (report, _) in &result.runs {
            quiet_runs += 1;
            for mark in report.coverage.keys().filter(|mark| !WITHOUT_FAULTS.contains(mark)) {
                wrong.push(format!(
                    "{file} seed {seed} {} without faults reached {mark}: {}",
                    report.mode,
                    mark.description()
                ));
            }
        }
    }
    let wordcount = load("scenarios/wordcount.yaml");
    let streaming =
        sluice_sim::runner::run(&wordcount, sluice_engine::graph::ExecutionMode::Streaming, wordcount.seeds.start);
    for mark in NOT_IN_STREAMING_WORDCOUNT.iter().filter(|mark| streaming.coverage.contains_key(mark)) {
        wrong.push(format!("scenarios/wordcount.yaml streaming reached {mark}: {}", mark.description()));
    }
    assert!(quiet_runs >= 15, "{quiet_runs} runs");
    assert!(wrong.is_empty(), "marks reached where their state did not occur:\n{}", wrong.join("\n"));
}
