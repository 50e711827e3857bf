//! The harness's own tools, end to end: replay files reproduce their failure, shrinking finds
//! the one fault that matters among twenty, sweeps summarize and write replay files, and traces
//! become timelines.

use std::time::Duration;

use sluice_engine::graph::ExecutionMode;
use sluice_sim::faults::{Fault, FaultKind, TaskStateTrigger, Trigger};
use sluice_sim::replay::write_failure;
use sluice_sim::scenario::Scenario;
use sluice_sim::seed::{DeterminismCheck, SeedOutcome, run_seed};
use sluice_sim::shrink::shrink;

use super::support::{load, sluice};

/// A scratch directory, removed when dropped (the test's files never outlive it).
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("sluice-it-{name}-")).tempdir().expect("a scratch directory")
}

#[test]
fn a_replay_file_reproduces_its_failure_with_the_same_trace_hash() {
    let scenario = load("scenarios/canary/wordcount-expects-no-restart.yaml");
    let seed = scenario.seeds.start;
    let first = run_seed(&scenario, seed, &scenario.modes, DeterminismCheck::Off);
    assert_eq!(first.outcome(), SeedOutcome::Failed);
    let temporary = scratch("replay");
    let directory = temporary.path();
    let path = write_failure(directory, &scenario, &first).unwrap();
    let replay = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
    let info = replay.replay.clone().expect("a replay file has a replay section");
    assert_eq!(info.check, "expectation");
    assert_eq!(info.seed, seed);
    assert!(!info.realized.is_empty(), "the replay file lists the faults that fired");
    let again = run_seed(&replay, seed, &replay.modes, DeterminismCheck::Off);
    for (report, _) in &again.runs {
        assert_eq!(info.trace_hashes[&report.mode.to_string()], format!("{:016x}", report.trace_hash));
    }
    let (status, stdout, stderr) = sluice(&["replay", path.to_str().unwrap()]);
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert!(stdout.contains("reproduced: expectation failed again, with the same trace hashes"), "{stdout}");
    // An edited replay file (here: a longer restart delay) may trace differently without any
    // determinism bug, and the replay says so.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("delay: 200ms"), "{text}");
    std::fs::write(&path, text.replacen("delay: 200ms", "delay: 250ms", 1)).unwrap();
    let (status, stdout, stderr) = sluice(&["replay", path.to_str().unwrap()]);
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert!(stdout.contains("the trace differs, as expected: the file was edited after it was recorded"), "{stdout}");
    assert!(!stdout.contains("determinism bug"), "{stdout}");
}

#[test]
fn a_replay_file_of_a_batch_failure_keeps_the_checkpoints_it_was_drawn_with_and_loads() {
    let mut scenario = load("scenarios/canary/wordcount-expects-no-restart.yaml");
    scenario.modes = vec![ExecutionMode::Streaming, ExecutionMode::Batch];
    scenario.checkpoints = Some(sluice_engine::checkpoint::CheckpointConfig::every(Duration::from_millis(50)));
    let mut result = run_seed(&scenario, 1, &scenario.modes, DeterminismCheck::Off);
    result.runs.retain(|(report, _)| report.mode == ExecutionMode::Batch);
    assert_eq!(result.outcome(), SeedOutcome::Failed);
    let temporary = scratch("batch-replay");
    let path = write_failure(temporary.path(), &scenario, &result).unwrap();
    let replay = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        (replay.modes.as_slice(), replay.checkpoints),
        ([ExecutionMode::Batch].as_slice(), scenario.checkpoints)
    );
    let mut edited = replay.clone();
    edited.replay = None;
    let text = edited.to_yaml();
    let error = Scenario::parse("edited.yaml", &text).unwrap_err().to_string();
    assert!(error.contains("only streaming mode checkpoints"), "a scenario of its own still may not: {error}");
}

fn harmless(index: usize) -> FaultKind {
    let milliseconds = Duration::from_millis;
    match index % 7 {
        // The log and the store never talk to each other, and tm-2 runs nothing.
        0 => FaultKind::Partition {
            sides: [vec!["log".into()], vec!["txn-store".into()]],
            one_way: false,
            duration: milliseconds(100),
        },
        1 => FaultKind::Latency { min: milliseconds(1), max: milliseconds(3), duration: milliseconds(50) },
        2 => FaultKind::CommitReplyLost { count: 1 },
        3 => FaultKind::CommitFails { count: 1 },
        4 => FaultKind::StoreUnavailable { duration: milliseconds(50) },
        5 => FaultKind::Slow { node: "tm-2".into(), factor: 2, duration: milliseconds(100) },
        _ => FaultKind::Partition {
            sides: [vec!["tm-2".into()], vec!["log".into()]],
            one_way: true,
            duration: milliseconds(80),
        },
    }
}

/// Shrinking proven on a deliberately failing check: twenty faults, of which only the kill of
/// the TaskManager running the job makes it restart (the scenario expects no restart).
#[test]
fn shrinking_finds_the_one_fault_that_matters_among_twenty() {
    let mut scenario = load("scenarios/canary/wordcount-expects-no-restart.yaml");
    scenario.cluster.task_managers = 3;
    let culprit = Fault {
        trigger: Trigger::Task { vertex: 0, subtask: None, state: TaskStateTrigger::Running },
        kind: FaultKind::Kill { node: "tm-0".into(), restart_after: Some(Duration::from_millis(400)) },
    };
    scenario.faults = (0..20)
        .map(|index| match index {
            11 => culprit.clone(),
            _ => Fault { trigger: Trigger::At(Duration::from_millis(20 * index as u64)), kind: harmless(index) },
        })
        .collect();
    let mut harmless_only = scenario.clone();
    harmless_only.faults.remove(11);
    let control = run_seed(&harmless_only, 1, &scenario.modes, DeterminismCheck::Off);
    assert_eq!(
        control.outcome(),
        SeedOutcome::Passed,
        "the other nineteen must really be harmless: {:?}",
        control.failures()
    );

    let shrunk = shrink(&scenario, &mut |_| {}).unwrap();
    assert_eq!(shrunk.check, "expectation");
    assert_eq!(shrunk.scenario.faults.len(), 1, "{:#?}", shrunk.scenario.faults);
    let FaultKind::Kill { node, restart_after } = &shrunk.scenario.faults[0].kind else {
        panic!("the one fault left must be the kill: {}", shrunk.scenario.faults[0]);
    };
    assert_eq!(node, "tm-0");
    assert!(restart_after.is_some_and(|delay| delay < Duration::from_millis(400)), "the restart delay shrinks too");
    assert!(shrunk.scenario.job_params().get("words") < 2000, "the input shrinks too");
    let still = run_seed(&shrunk.scenario, 1, &shrunk.scenario.modes, DeterminismCheck::Off);
    assert!(still.failures().iter().any(|(_, failure)| failure.check == "expectation"));
}

#[test]
fn a_sweep_summarizes_groups_failures_and_writes_replay_files() {
    let temporary = scratch("sweep");
    let directory = temporary.path();
    let failures = directory.to_str().unwrap();
    let (status, stdout, stderr) = sluice(&[
        "sweep",
        "scenarios/canary/wordcount-expects-no-restart.yaml",
        "--seeds",
        "1..4",
        "--jobs",
        "2",
        "--failures",
        failures,
    ]);
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert!(stdout.contains("passed 0, failed 3, expected-unrecoverable 0"), "{stdout}");
    assert!(stdout.contains("expectation: 3 seeds"), "{stdout}");
    assert!(stdout.contains("replay: cargo run --release -p sluice-sim -- replay"), "{stdout}");
    assert!(stdout.contains("seeds/s"), "{stdout}");
    for seed in 1..4 {
        assert!(directory.join(format!("canary-wordcount-expects-no-restart-{seed}.yaml")).exists());
    }
    let (status, stdout, stderr) =
        sluice(&["sweep", "scenarios/wordcount-tm-crash.yaml", "--seeds", "1..5", "--failures", failures]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("passed 4, failed 0"), "{stdout}");
    assert!(stdout.contains("tm-crash"), "the per-kind table lists the explicit crash: {stdout}");
}

#[test]
fn a_run_writes_a_json_trace_that_becomes_a_timeline() {
    let temporary = scratch("timeline");
    let directory = temporary.path();
    let trace = directory.join("crash.jsonl");
    let (status, stdout, stderr) = sluice(&[
        "run",
        "scenarios/wordcount-tm-crash.yaml",
        "--seed",
        "1",
        "--mode",
        "streaming",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    let svg = directory.join("crash.svg");
    let (status, stdout, stderr) = sluice(&["timeline", trace.to_str().unwrap(), "-o", svg.to_str().unwrap()]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    let drawing = std::fs::read_to_string(&svg).unwrap();
    assert!(drawing.starts_with("<svg") && drawing.trim_end().ends_with("</svg>"));
    assert!(drawing.contains("restart a1"), "the restart is drawn");
    assert!(drawing.contains("kill tm-1"), "the crash is drawn");
    let (status, text, _) = sluice(&["timeline", trace.to_str().unwrap(), "--text", "--width", "60"]);
    assert_eq!(status, 0);
    assert!(text.contains("tm-0/s0"), "{text}");
}
