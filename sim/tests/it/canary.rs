//! Canaries: runs that must fail, proving the checks can see a failure at all.

use std::time::Duration;

use sluice_engine::failover::RestartStrategy;
use sluice_engine::graph::ExecutionMode;
use sluice_sim::check::{Verdict, check_run, judge, modes_agree};
use sluice_sim::faults::{Fault, FaultKind, Trigger};
use sluice_sim::report::RunOutcome;
use sluice_sim::runner::run;
use sluice_sim::seed::{DeterminismCheck, SeedOutcome, run_seed};

use super::support::{load, seed_or};

#[test]
fn a_crash_without_restarts_fails_the_job_and_the_completed_check() {
    let mut scenario = load("scenarios/wordcount-tm-crash.yaml");
    scenario.random_faults = None;
    scenario.restart_strategy = RestartStrategy::None;
    let report = run(&scenario, ExecutionMode::Batch, seed_or(1));
    match &report.outcome {
        RunOutcome::JobFailed(reason) => assert!(reason.contains("no-restart"), "{reason}"),
        other => panic!("expected the job to fail, got {other}"),
    }
    let failures = check_run(&report);
    assert_eq!(failures.len(), 1);
    assert_eq!(failures[0].check, "completed");
}

#[test]
fn a_lost_task_manager_that_never_returns_is_detected_by_heartbeat() {
    let mut scenario = load("scenarios/wordcount-tm-crash.yaml");
    scenario.random_faults = None;
    scenario.faults = vec![Fault {
        trigger: Trigger::At(Duration::from_millis(100)),
        kind: FaultKind::Kill { node: "tm-0".to_string(), restart_after: None },
    }];
    let report = run(&scenario, ExecutionMode::Streaming, seed_or(3));
    assert_eq!(check_run(&report), vec![]);
    let lost = report.trace.iter().any(|record| record.event.to_string().starts_with("lost tm-0: no heartbeat"));
    assert!(lost, "the JobMaster must notice the silent TaskManager");
}

#[test]
fn different_inputs_make_the_modes_disagree() {
    let scenario = load("scenarios/wordcount.yaml");
    let streaming = run(&scenario, ExecutionMode::Streaming, 1);
    let batch = run(&scenario, ExecutionMode::Batch, 2);
    let failure = modes_agree(&streaming, &batch).unwrap_err();
    assert_eq!(failure.check, "streaming == batch");
}

#[test]
fn a_job_that_outlives_its_time_limit_fails_the_liveness_check() {
    let mut scenario = load("scenarios/wordcount.yaml");
    scenario.time_limit = Duration::from_millis(100);
    let report = run(&scenario, ExecutionMode::Batch, seed_or(1));
    assert_eq!(report.outcome, RunOutcome::TimedOut(Duration::from_millis(100)));
    assert_eq!(check_run(&report)[0].check, "completed");
}

/// The canary scenario's expectation is deliberately wrong (a crash, yet no restart expected):
/// the harness must report it as failed, in every mode, through the same path a real failure
/// takes.
#[test]
fn the_canary_scenario_is_reported_as_failed() {
    let scenario = load("scenarios/canary/wordcount-expects-no-restart.yaml");
    let result = run_seed(&scenario, scenario.seeds.start, &scenario.modes, DeterminismCheck::Off);
    assert_eq!(result.outcome(), SeedOutcome::Failed);
    for (report, verdict) in &result.runs {
        let checks: Vec<&str> = verdict.failures().iter().map(|failure| failure.check).collect();
        assert_eq!(checks, vec!["expectation"], "{} must fail only its expectation", report.mode);
    }
}

#[test]
fn a_job_master_killed_for_good_is_expected_unrecoverable_not_failed() {
    let mut scenario = load("scenarios/wordcount.yaml");
    scenario.faults = vec![Fault {
        trigger: Trigger::At(Duration::from_millis(50)),
        kind: FaultKind::Kill { node: "jm".to_string(), restart_after: None },
    }];
    scenario.time_limit = Duration::from_secs(70);
    let report = run(&scenario, ExecutionMode::Streaming, seed_or(1));
    match judge(&report, &scenario) {
        Verdict::ExpectedUnrecoverable(reason) => {
            assert!(reason.contains("jm is killed and never restarted"), "{reason}")
        }
        other => panic!("expected unrecoverable, got {other:?}"),
    }
}

/// A region that can never fit fails the job with a message saying how many slots it needs and
/// how many exist (here: a TaskManager is lost for good before the job can be deployed).
#[test]
fn a_region_that_can_never_fit_fails_the_job_saying_how_many_slots_it_needs() {
    let mut scenario = load("scenarios/wordcount.yaml");
    scenario.cluster.task_managers = 2;
    scenario.parallelism = 4;
    scenario.faults = vec![Fault {
        trigger: Trigger::At(Duration::ZERO),
        kind: FaultKind::Kill { node: "tm-1".to_string(), restart_after: None },
    }];
    let report = run(&scenario, ExecutionMode::Streaming, seed_or(1));
    match &report.outcome {
        RunOutcome::JobFailed(reason) => {
            assert!(reason.contains("needs 4 slots at once, but the cluster has 2 (1 TaskManager)"), "{reason}")
        }
        other => panic!("expected the job to fail for lack of slots, got {other}"),
    }
    assert!(matches!(judge(&report, &scenario), Verdict::ExpectedUnrecoverable(_)));
}
