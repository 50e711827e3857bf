//! Property: for any seed, input size, cluster shape, parallelism, buffer size, shuffle
//! implementation, batch exchange mode, failover strategy (region or restart-all), checkpoint
//! interval (or none), TaskManager crash (time, victim, and whether and when it restarts),
//! JobMaster crash (time and restart delay), storage fault (a lost or corrupted partition or a
//! lost disk, on a TaskManager or the shuffle service) and commit fault (failed or ambiguous
//! commits after the first commit), WordCount commits exactly the reference output in streaming
//! and in batch mode, never commits for a checkpoint that did not complete, and the two modes
//! agree.
//!
//! Only recoverable cases are generated: the parallelism is cut to what the cluster holds, and a
//! TaskManager that would leave too few slots behind comes back.
//!
//! Cases come from `sluice_properties::check`: each from its own case seed, which is also the
//! simulations' seed, so `SLUICE_SEED=N` reruns exactly one. Shrinking the seed means nothing,
//! so the structural inputs are what shrinks: fewer words, lower parallelism, an earlier crash.
//! A failure writes a replay file and prints the commands that rerun it. `PROPTEST_CASES=N` runs
//! more cases than the default, `PROPTEST_RNG_SEED=N` other ones.

use std::time::Duration;

use proptest::prelude::*;
use sluice_engine::graph::ExecutionMode;
use sluice_properties::{CaseResult, check};
use sluice_sim::check::{Verdict, check_run, modes_agree};
use sluice_sim::faults::{Fault, FaultKind, Trigger};
use sluice_sim::replay::write_failure;
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;
use sluice_sim::seed::SeedResult;

/// The cluster and job shape of one case.
#[derive(Clone, Copy, Debug)]
struct Shape {
    words: u64,
    task_managers: u32,
    slots: u32,
    parallelism: u32,
    buffer_size: usize,
    remote_shuffle: bool,
    /// Streaming mode's checkpoint interval in milliseconds, if it checkpoints.
    checkpoint_ms: Option<u64>,
    /// Region failover (else restart-all).
    region_failover: bool,
    /// Batch mode blocks every exchange (else the default, pointwise exchanges pipelined).
    all_blocking: bool,
}

/// The commit faults the property draws from.
const COMMIT_FAULTS: [&str; 2] = ["commit_fails", "commit_reply_lost"];

/// A commit fault: which kind (an index into [`COMMIT_FAULTS`]) and how many commits it hits.
type CommitFault = (usize, u32);

/// The storage faults the property draws from.
const STORAGE_FAULTS: [&str; 3] = ["lose_partition", "corrupt_partition", "lose_disk"];

/// A storage fault: when, which kind (an index into [`STORAGE_FAULTS`]), and on which node
/// (`tm-N`, or the shuffle service when the index is the TaskManager count).
type StorageFault = (u64, usize, u32);

/// A JobMaster crash: when, and how long until it restarts.
type JobMasterCrash = (u64, u64);

fn scenario(
    shape: Shape,
    crash: Option<(u64, u32, Option<u64>)>,
    job_master_crash: Option<JobMasterCrash>,
    storage: Option<StorageFault>,
    commit: Option<CommitFault>,
) -> Scenario {
    let Shape {
        words,
        task_managers,
        slots,
        parallelism,
        buffer_size,
        remote_shuffle,
        checkpoint_ms,
        region_failover,
        all_blocking,
    } = shape;
    let shuffle = if remote_shuffle { "remote" } else { "task-manager" };
    let failover = if region_failover { "region" } else { "restart-all" };
    let exchange_mode = if all_blocking { "all-edges-blocking" } else { "pointwise-edges-pipelined" };
    let mut text = format!(
        "name: wordcount-property\njob: wordcount\nparams: {{ words: {words}, distinct_words: 50 }}\n\
         cluster: {{ task_managers: {task_managers}, slots_per_task_manager: {slots} }}\n\
         parallelism: {parallelism}\nbuffer_size: {buffer_size}\nshuffle: {shuffle}\n\
         failover_strategy: {failover}\nexchange_mode: {exchange_mode}\n"
    );
    if let Some(interval) = checkpoint_ms {
        text.push_str(&format!("checkpoints: {{ interval: {interval}ms }}\n"));
    }
    if crash.is_some() || job_master_crash.is_some() || storage.is_some() || commit.is_some() {
        text.push_str("faults:\n");
    }
    if let Some((at_ms, restart_after_ms)) = job_master_crash {
        text.push_str(&format!("  - at: {at_ms}ms\n    kill: jm\n    restart_after: {restart_after_ms}ms\n"));
    }
    if let Some((at_ms, victim, restart_after_ms)) = crash {
        text.push_str(&format!("  - at: {at_ms}ms\n    kill: tm-{victim}\n"));
        if let Some(delay) = restart_after_ms {
            text.push_str(&format!("    restart_after: {delay}ms\n"));
        }
    }
    if let Some((at_ms, kind, node)) = storage {
        let node = if node == task_managers { "shuffle-service".to_string() } else { format!("tm-{node}") };
        text.push_str(&format!("  - at: {at_ms}ms\n    {}: {node}\n", STORAGE_FAULTS[kind]));
    }
    if let Some((kind, count)) = commit {
        text.push_str(&format!("  - after_committed: 1\n    {}: {count}\n", COMMIT_FAULTS[kind]));
    }
    Scenario::parse("property", &text).expect("generated scenarios are valid")
}

/// The case: everything but the simulation seed, which is the case's own seed.
type Case = (
    u64,
    (u32, u32, u32),
    (usize, bool),
    Option<(u64, u32, Option<u64>)>,
    Option<StorageFault>,
    Option<u64>,
    Option<CommitFault>,
    (Option<JobMasterCrash>, bool, bool),
);

fn strategy() -> impl Strategy<Value = Case> {
    (
        1u64..4000,
        (1u32..=4, 1u32..=3, 1u32..=4),
        (proptest::sample::select(vec![64usize, 512, 4096, 32768]), any::<bool>()),
        proptest::option::weighted(0.8, (0u64..1500, 0u32..4, proptest::option::of(50u64..1000))),
        proptest::option::weighted(0.5, (0u64..1500, 0usize..STORAGE_FAULTS.len(), 0u32..5)),
        proptest::option::weighted(0.7, 10u64..300),
        proptest::option::weighted(0.3, (0usize..COMMIT_FAULTS.len(), 1u32..4)),
        (proptest::option::weighted(0.3, (0u64..1500, 50u64..1000)), any::<bool>(), any::<bool>()),
    )
}

/// The scenario of a case. Only recoverable cases: the parallelism is cut to what the cluster
/// holds, and a TaskManager that would leave too few slots behind comes back after 500 ms.
fn case_scenario(case: &Case) -> Scenario {
    let &(
        words,
        (task_managers, slots, parallelism),
        (buffer_size, remote_shuffle),
        crash,
        storage,
        checkpoint_ms,
        commit,
        failover,
    ) = case;
    let (job_master_crash, region_failover, all_blocking) = failover;
    let parallelism = parallelism.min(task_managers * slots);
    let room = (task_managers - 1) * slots >= parallelism;
    let crash = crash.map(|(at, victim, restart)| (at, victim % task_managers, restart.or((!room).then_some(500))));
    // The node index wraps to a TaskManager, or to the shuffle service (index `task_managers`).
    let storage = storage.map(|(at, kind, node)| (at, kind, node % (task_managers + 1)));
    let shape = Shape {
        words,
        task_managers,
        slots,
        parallelism,
        buffer_size,
        remote_shuffle,
        checkpoint_ms,
        region_failover,
        all_blocking,
    };
    scenario(shape, crash, job_master_crash, storage, commit)
}

/// Runs a case in both modes; a failure gets a replay file.
fn run_case(case: &Case, seed: u64) -> CaseResult {
    let scenario = case_scenario(case);
    let streaming = run(&scenario, ExecutionMode::Streaming, seed);
    let batch = run(&scenario, ExecutionMode::Batch, seed);
    let verdict = |report| match check_run(report) {
        failures if failures.is_empty() => Verdict::Pass,
        failures => Verdict::Fail(failures),
    };
    let (streaming_verdict, batch_verdict) = (verdict(&streaming), verdict(&batch));
    let agreement = match (&streaming_verdict, &batch_verdict) {
        (Verdict::Pass, Verdict::Pass) => modes_agree(&streaming, &batch).err(),
        _ => None,
    };
    let result = SeedResult {
        seed,
        runs: vec![(streaming, streaming_verdict), (batch, batch_verdict)],
        agreement,
        compared: None,
        determinism: Vec::new(),
    };
    let failures = result.failures();
    if failures.is_empty() {
        return CaseResult::Pass;
    }
    let directory = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../failures");
    let replay_file = write_failure(&directory, &scenario, &result).ok().map(|path| path.display().to_string());
    let message = failures.iter().map(|(mode, failure)| format!("{mode:?}: {failure}")).collect::<Vec<_>>().join("; ");
    CaseResult::Fail { message, replay_file }
}

#[test]
fn wordcount_is_exactly_once_in_both_modes_under_a_crash_and_a_storage_fault() {
    check("wordcount_is_exactly_once_in_both_modes_under_a_crash_and_a_storage_fault", strategy(), run_case);
}

#[test]
fn generated_cases_fit_their_cluster_and_survive_their_faults() {
    // Guards the generator: no case is thrown away, so every one must be recoverable.
    let cases = [
        (10, (1, 1, 4), (64, false), Some((5, 0, None)), None, None, None, (None, true, true)),
        (10, (2, 1, 2), (64, false), Some((5, 1, None)), None, None, None, (None, true, true)),
        (10, (3, 2, 2), (64, false), Some((5, 1, None)), None, None, None, (None, true, true)),
    ];
    let built: Vec<Scenario> = cases.iter().map(case_scenario).collect();
    assert_eq!(built[0].parallelism, 1, "cut to the one slot there is");
    for scenario in &built[..2] {
        assert!(
            matches!(&scenario.faults[0].kind, FaultKind::Kill { restart_after: Some(_), .. }),
            "a TaskManager the job cannot do without comes back: {:?}",
            scenario.faults
        );
        assert_eq!(scenario.schedule_is_unsurvivable(&scenario.faults), None);
    }
    assert!(
        matches!(&built[2].faults[0].kind, FaultKind::Kill { restart_after: None, .. }),
        "one that leaves room stays dead"
    );
}

#[test]
fn the_property_can_crash_every_task_manager_and_not_restart_it() {
    // Guards the generator: the faults it builds are the ones the property claims to cover.
    let shape = Shape {
        words: 10,
        task_managers: 3,
        slots: 2,
        parallelism: 1,
        buffer_size: 64,
        remote_shuffle: true,
        checkpoint_ms: Some(20),
        region_failover: false,
        all_blocking: true,
    };
    let built = scenario(shape, Some((5, 2, None)), Some((6, 300)), Some((7, 1, 3)), Some((1, 2)));
    assert_eq!(
        built.faults,
        vec![
            Fault {
                trigger: Trigger::At(Duration::from_millis(6)),
                kind: FaultKind::Kill { node: "jm".to_string(), restart_after: Some(Duration::from_millis(300)) }
            },
            Fault {
                trigger: Trigger::At(Duration::from_millis(5)),
                kind: FaultKind::Kill { node: "tm-2".to_string(), restart_after: None }
            },
            Fault {
                trigger: Trigger::At(Duration::from_millis(7)),
                kind: FaultKind::CorruptPartition { node: "shuffle-service".to_string() }
            },
            Fault { trigger: Trigger::RecordsCommitted(1), kind: FaultKind::CommitReplyLost { count: 2 } },
        ]
    );
    assert_eq!(built.checkpoints.map(|config| config.interval), Some(Duration::from_millis(20)));
    assert_eq!(built.buffer_size, 64);
    assert_eq!(built.shuffle, sluice_engine::shuffle::ShuffleKind::Remote);
    assert_eq!(built.cluster.total_slots(), 6);
    assert_eq!(built.failover_strategy, sluice_engine::failover::FailoverStrategy::RestartAll);
    assert_eq!(built.exchange_mode, sluice_engine::graph::ExchangeMode::AllEdgesBlocking);
    let plain = scenario(Shape { checkpoint_ms: None, region_failover: true, ..shape }, None, None, None, None);
    assert_eq!(plain.failover_strategy, sluice_engine::failover::FailoverStrategy::Region);
    assert!(plain.faults.is_empty());
    assert!(plain.checkpoints.is_none());
}

#[test]
#[allow(clippy::assertions_on_constants, reason = "the constant is what this test checks")]
fn simulation_mode_is_on() {
    assert!(cfg!(madsim), "built without --cfg madsim: a RUSTFLAGS variable replaced .cargo/config.toml's flags");
}
