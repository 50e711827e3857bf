//! Checkpoints and Sink V2 commits, end to end on the simulated cluster: a checkpoint aborted by
//! a failure is never committed against, a job restores after its final checkpoint, ambiguous
//! and failed commits apply every transaction exactly once in both modes, and barriers align
//! across several inputs (the join of the TPC-DS-like job) without losing or doubling a row.

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_engine::connectors::txn_store::txn_checkpoint;
use sluice_engine::graph::ExecutionMode;
use sluice_engine::trace::TraceEvent;
use sluice_sim::faults::{CheckpointTrigger, Fault, FaultKind, Trigger};
use sluice_sim::report::RunReport;
use sluice_sim::scenario::Scenario;
use sluice_sim::trace::TraceRecord;

use super::support::{context, load};

/// Every seed of a scenario in each of its modes, each judged to pass.
fn passing_runs(scenario: &Scenario) -> Vec<RunReport> {
    super::support::passing_runs(scenario, &scenario.modes)
}

fn events(report: &RunReport) -> impl Iterator<Item = &TraceEvent> {
    report.trace.iter().map(|record: &TraceRecord| &record.event)
}

fn completed(report: &RunReport) -> Vec<(u32, u64, bool)> {
    events(report)
        .filter_map(|event| match event {
            TraceEvent::CheckpointCompleted { attempt, checkpoint, is_final } => {
                Some((*attempt, *checkpoint, *is_final))
            }
            _ => None,
        })
        .collect()
}

fn restored(report: &RunReport) -> Vec<(u32, u64)> {
    events(report)
        .filter_map(|event| match event {
            TraceEvent::CheckpointRestored { attempt, checkpoint } => Some((*attempt, *checkpoint)),
            _ => None,
        })
        .collect()
}

/// (transaction, epoch) → how many times the store applied it.
fn commits(report: &RunReport) -> BTreeMap<(String, u64), u32> {
    let mut commits = BTreeMap::new();
    for event in events(report) {
        if let TraceEvent::TransactionCommitted { txn_id, epoch, .. } = event {
            *commits.entry((txn_id.clone(), *epoch)).or_insert(0) += 1;
        }
    }
    commits
}

fn harness_notes(report: &RunReport, containing: &str) -> usize {
    events(report)
        .filter(|event| matches!(event, TraceEvent::Harness { detail } if detail.contains(containing)))
        .count()
}

#[test]
fn a_checkpoint_aborted_by_a_failure_is_never_committed_against() {
    let scenario = load("scenarios/wordcount-checkpoint-aborted.yaml");
    for report in passing_runs(&scenario) {
        let seed = context(&report);
        // The premise: attempt 0 pre-committed transactions for checkpoint 3, then lost tm-0.
        let prepared_for_3: Vec<&String> = events(&report)
            .filter_map(|event| match event {
                TraceEvent::TransactionPrepared { txn_id, epoch: 0 } if txn_checkpoint(txn_id) == Some(3) => {
                    Some(txn_id)
                }
                _ => None,
            })
            .collect();
        assert!(!prepared_for_3.is_empty(), "{seed}: no sink prepared for checkpoint 3");
        let aborted = events(&report).any(|event| {
            matches!(event, TraceEvent::CheckpointAborted { attempt: 0, checkpoint: 3, reason } if reason.contains("tm-0"))
        });
        assert!(aborted, "{seed}: checkpoint 3 was not aborted because of tm-0");
        assert!(
            !completed(&report).iter().any(|(attempt, checkpoint, _)| *attempt == 0 && *checkpoint == 3),
            "{seed}: the aborted checkpoint completed"
        );
        // Never committed against: what attempt 0 staged for checkpoint 3 never became visible.
        for txn_id in prepared_for_3 {
            assert_eq!(commits(&report).get(&(txn_id.clone(), 0)), None, "{seed}: {txn_id} of attempt 0 was committed");
        }
        // The re-run's writers abort what attempt 0 left open, fencing it off.
        let aborted: u64 = events(&report)
            .filter_map(|event| match event {
                TraceEvent::TransactionsAborted { epoch: 1, transactions, .. } => Some(*transactions),
                _ => None,
            })
            .sum();
        assert!(aborted >= 1, "{seed}: the lingering transactions of checkpoint 3 were not aborted");
        // The re-run starts from checkpoint 2 and commits its own transactions (a newer epoch).
        assert_eq!(restored(&report), vec![(1, 2)], "{seed}");
        assert!(commits(&report).keys().any(|(_, epoch)| *epoch == 1), "{seed}: the re-run committed nothing");
        assert!(commits(&report).values().all(|count| *count == 1), "{seed}: a transaction applied twice");
        assert_eq!(report.restarts(), 1, "{seed}");
    }
}

#[test]
fn a_job_restores_after_its_final_checkpoint_and_commits_what_it_holds() {
    let scenario = load("scenarios/wordcount-final-checkpoint-restore.yaml");
    for report in passing_runs(&scenario) {
        let seed = context(&report);
        let finals: Vec<(u32, u64)> = completed(&report)
            .into_iter()
            .filter(|(_, _, is_final)| *is_final)
            .map(|(attempt, checkpoint, _)| (attempt, checkpoint))
            .collect();
        let (attempt, final_checkpoint) = finals[0];
        assert_eq!(attempt, 0, "{seed}: {finals:?}");
        // The kill came as the final checkpoint completed: the restart restores it.
        assert_eq!(restored(&report), vec![(1, final_checkpoint)], "{seed}");
        // What the final checkpoint holds is committed exactly once (possibly by the restored
        // sinks), and the re-run has nothing left to write.
        let commits = commits(&report);
        let held: Vec<&(String, u64)> =
            commits.keys().filter(|(txn_id, _)| txn_checkpoint(txn_id) == Some(final_checkpoint)).collect();
        assert_eq!(held.len(), scenario.parallelism as usize, "{seed}: {commits:?}");
        assert!(commits.values().all(|count| *count == 1), "{seed}: {commits:?}");
        assert!(commits.keys().all(|(_, epoch)| *epoch == 0), "{seed}: the re-run wrote rows: {commits:?}");
    }
}

#[test]
fn ambiguous_and_failed_commits_apply_each_transaction_once_in_both_modes() {
    let scenario = load("scenarios/wordcount-ambiguous-commit.yaml");
    assert_eq!(scenario.modes, vec![ExecutionMode::Streaming, ExecutionMode::Batch]);
    for report in passing_runs(&scenario) {
        let seed = context(&report);
        assert_eq!(harness_notes(&report, "lost its reply"), 2, "{seed}: two replies lost");
        assert_eq!(harness_notes(&report, "failed the commit"), 3, "{seed}: three commits failed");
        let commits = commits(&report);
        assert!(commits.values().all(|count| *count == 1), "{seed}: {commits:?}");
        // The committers rode the faults out by retrying: no restart was needed.
        assert_eq!(report.restarts(), 0, "{seed}");
    }
}

/// v2 (`Drop returns`) unions two inputs and v5 (`Join items`) joins two: each aligns barriers
/// from all its input channels before it snapshots. A TaskManager dies after checkpoint 2 and the
/// job restores it: had a task let records from after a barrier into its snapshot (or kept
/// records from before it out), the restored run would double or lose rows.
#[test]
fn barriers_align_across_the_inputs_of_a_union_and_a_join() {
    let scenario = load("scenarios/tpcds-checkpoints.yaml");
    let params = [("store_sales", 40_000), ("web_sales", 20_000), ("items", 500)];
    let scenario = Scenario {
        params: params.into_iter().map(|(name, value)| (name.to_string(), value.into())).collect(),
        modes: vec![ExecutionMode::Streaming],
        seeds: 1..11,
        random_faults: None,
        faults: vec![Fault {
            trigger: Trigger::Checkpoint(CheckpointTrigger::Id(2)),
            kind: FaultKind::Kill { node: "tm-1".to_string(), restart_after: Some(Duration::from_millis(200)) },
        }],
        ..scenario
    };
    for report in passing_runs(&scenario) {
        let seed = context(&report);
        let checkpoints: Vec<u64> = completed(&report)
            .iter()
            .filter(|(_, _, is_final)| !is_final)
            .map(|(_, checkpoint, _)| *checkpoint)
            .collect();
        assert!(checkpoints.len() >= 2, "{seed}: only {checkpoints:?} completed before the end");
        let restored = restored(&report);
        assert!(
            restored.first().is_some_and(|(_, checkpoint)| *checkpoint >= 2),
            "{seed}: the restart restored {restored:?}"
        );
    }
}
