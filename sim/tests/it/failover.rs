//! Failover re-runs only what a failure made necessary, proven with attempt numbers on the
//! TPC-DS-like job in batch mode (parallelism 2, every exchange blocking, so every subtask is its
//! own pipelined region):
//!
//! ```text
//!   v0 store_sales ─┐ (pointwise)          (rescale: v2[k] feeds v3[2k], v3[2k+1])
//!   v1 web_sales  ──┴─> v2 Drop returns ──> v3 Add tax ─┐ (hash)
//!   v4 items ───────────────────────────────────────────┴─> v5 Join ──> v6 Sum -> Sink
//! ```
//!
//! A partition is released once every subtask of its consumer vertex finished, so by the time
//! the join runs only v3's and v4's partitions are still held: a lost v3 partition re-runs the
//! chain above it too.

use std::collections::BTreeSet;

use sluice_engine::failover::FailoverStrategy;
use sluice_engine::graph::{ExchangeMode, ExecutionMode};
use sluice_engine::trace::{TraceEvent, parse_subtask};
use sluice_sim::check::restarts_follow_the_failover_rules;
use sluice_sim::compare::Variant;
use sluice_sim::recovery::recovery_metrics;
use sluice_sim::report::RunReport;
use sluice_sim::runner::run;

use super::support::{context, load, passing_runs};

fn batch_runs(file: &str) -> Vec<RunReport> {
    passing_runs(&load(file), &[ExecutionMode::Batch])
}

fn subtask(vertex: u32, index: u32) -> String {
    format!("v{vertex}[{index}]")
}

/// The subtasks of every region restart, in order.
fn region_restarts(report: &RunReport) -> Vec<Vec<String>> {
    report
        .trace
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::RegionsRestarting { subtasks, .. } => Some(subtasks.clone()),
            _ => None,
        })
        .collect()
}

/// Subtasks deployed more than once.
fn redeployed(report: &RunReport) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut again = BTreeSet::new();
    for record in &report.trace {
        if let TraceEvent::TaskDeployed { vertex, subtask: index, .. } = &record.event
            && !seen.insert(subtask(*vertex, *index))
        {
            again.insert(subtask(*vertex, *index));
        }
    }
    again
}

/// Where each subtask's first run was deployed: `tm-N`.
fn first_placement(report: &RunReport, vertex: u32, index: u32) -> String {
    report
        .trace
        .iter()
        .find_map(|record| match &record.event {
            TraceEvent::TaskDeployed { vertex: v, subtask: s, slot, .. } if (*v, *s) == (vertex, index) => {
                Some(slot.split('/').next().expect("a slot names its TaskManager").to_string())
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("{}: v{vertex}[{index}] was never deployed", context(report)))
}

/// What region failover must re-run when the partitions of these `Add tax` (v3) and `items`
/// (v4) subtasks are lost while the join runs: each lost v3[i], the chain that fed it (v2[k],
/// v0[k], v1[k] for k = i / 2, released once read), its sibling sharing v2[k]'s output, and each
/// lost v4[j]; the join (v5) comes on top when it had started.
fn expected_chain(lost_add_tax: &[u32], lost_items: &[u32]) -> BTreeSet<String> {
    let mut expected = BTreeSet::new();
    for index in lost_add_tax {
        let k = index / 2;
        expected.extend([subtask(0, k), subtask(1, k), subtask(2, k), subtask(3, 2 * k), subtask(3, 2 * k + 1)]);
    }
    expected.extend(lost_items.iter().map(|index| subtask(4, *index)));
    expected
}

#[test]
fn a_task_manager_crash_in_a_multi_region_batch_job_re_runs_only_the_expected_regions() {
    let mut restarted = Vec::new();
    for report in batch_runs("scenarios/tpcds-tm-crash-regions.yaml") {
        let restarts = region_restarts(&report);
        assert_eq!(restarts.len(), 1, "{}: one failure, one restart: {restarts:?}", context(&report));
        let set: BTreeSet<String> = restarts[0].iter().cloned().collect();
        // What tm-1 ran: its running join subtask fails; its finished v3 and v4 partitions,
        // still needed by the join, are lost.
        let on_tm_1 = |vertex: u32, count: u32| -> Vec<u32> {
            (0..count).filter(|index| first_placement(&report, vertex, *index) == "tm-1").collect()
        };
        let mut expected = expected_chain(&on_tm_1(3, 4), &on_tm_1(4, 2));
        expected.extend([subtask(5, 0), subtask(5, 1)]);
        assert_eq!(set, expected, "{}", context(&report));
        // Nothing outside the restarted regions ran twice.
        let again = redeployed(&report);
        assert!(again.is_subset(&set), "{}: {again:?} re-ran outside {set:?}", context(&report));
        assert!(
            !report.trace.iter().any(|record| matches!(record.event, TraceEvent::JobRestarting { .. })),
            "{}: region failover never restarts the whole job",
            context(&report)
        );
        restarted.push(format!("seed {}: {}", report.seed, restarts[0].join(" ")));
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../../../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_snapshot!("failover-tpcds-tm-crash-regions", restarted.join("\n")));
}

/// The failover-set oracle, which every run's checks include, judges each region restart on
/// its own: shown here on real traces with the restart's set edited as a buggy JobMaster would
/// have written it (the committed output of such a run can still be right).
#[test]
fn the_failover_set_oracle_reports_a_restart_that_re_ran_too_little_or_too_much() {
    for report in batch_runs("scenarios/tpcds-tm-crash-regions.yaml") {
        let judge = |trace: Vec<sluice_sim::trace::TraceRecord>| {
            restarts_follow_the_failover_rules(&RunReport { trace, ..report.clone() })
        };
        assert_eq!(judge(report.trace.clone()), Ok(1), "{}: the one region restart was checked", context(&report));
        let at = report
            .trace
            .iter()
            .position(|record| matches!(record.event, TraceEvent::RegionsRestarting { .. }))
            .expect("a region restart");
        let TraceEvent::RegionsRestarting { subtasks, failed, .. } = &report.trace[at].event else { unreachable!() };
        let edited = |edit: &dyn Fn(&mut Vec<String>)| {
            let mut trace = report.trace.clone();
            if let TraceEvent::RegionsRestarting { subtasks, .. } = &mut trace[at].event {
                edit(subtasks);
            }
            judge(trace).expect_err("an edited restart set must be reported").detail
        };
        // Too little: a consumer of a restarted producer kept running on the old partitions.
        let spared = subtasks.iter().find(|name| !failed.contains(name)).expect("a subtask restarted as a consequence");
        let detail = edited(&|set| set.retain(|name| name != spared));
        assert!(detail.contains(&format!("needed but not restarted: {spared}")), "{}: {detail}", context(&report));
        // Too much: a subtask running before the failure, outside every region it made restart.
        let innocent = report.trace[..at]
            .iter()
            .find_map(|record| match &record.event {
                TraceEvent::TaskDeployed { vertex, subtask: index, .. } => {
                    Some(subtask(*vertex, *index)).filter(|name| !subtasks.contains(name))
                }
                _ => None,
            })
            .expect("a subtask the failure did not touch");
        let detail = edited(&|set| set.push(innocent.clone()));
        assert!(detail.contains(&format!("restarted but not needed: {innocent}")), "{}: {detail}", context(&report));
        // No restart at all, yet the subtasks run again.
        let mut trace = report.trace.clone();
        trace.remove(at);
        let detail = judge(trace).expect_err("a redeployment without a restart must be reported").detail;
        assert!(detail.contains("no restart covered it"), "{}: {detail}", context(&report));
    }
}

/// The same oracle judges a restarted JobMaster's reconciliation: keeping finished work whose
/// lost partitions are still needed, or re-running work that survived, is reported.
#[test]
fn the_failover_set_oracle_reports_a_reconciliation_that_kept_too_much_or_too_little() {
    for report in batch_runs("scenarios/tpcds-jm-tm-crash.yaml") {
        let judge = |trace: Vec<sluice_sim::trace::TraceRecord>| {
            restarts_follow_the_failover_rules(&RunReport { trace, ..report.clone() })
        };
        assert_eq!(judge(report.trace.clone()), Ok(1), "{}: the reconciliation was checked", context(&report));
        let at = report
            .trace
            .iter()
            .position(|record| matches!(record.event, TraceEvent::FinishedWorkReconciled { .. }))
            .expect("a reconciliation");
        let TraceEvent::FinishedWorkReconciled { kept, rerun, .. } = report.trace[at].event.clone() else {
            unreachable!()
        };
        assert!(!kept.is_empty() && !rerun.is_empty(), "{}: tm-2 lost some of the finished work", context(&report));
        let moved = |from_kept: bool| {
            let mut trace = report.trace.clone();
            if let TraceEvent::FinishedWorkReconciled { kept, rerun, .. } = &mut trace[at].event {
                let (from, to) = if from_kept { (kept, rerun) } else { (rerun, kept) };
                to.push(from.remove(0));
            }
            judge(trace).expect_err("an edited reconciliation must be reported").detail
        };
        let detail = moved(false);
        assert!(detail.contains(&format!("needed but kept: {}", rerun[0])), "{}: {detail}", context(&report));
        let detail = moved(true);
        assert!(detail.contains(&format!("re-run but not needed: {}", kept[0])), "{}: {detail}", context(&report));
    }
}

/// The restarted JobMaster's reconciliation: (kept, re-run).
fn reconciled(report: &RunReport) -> (BTreeSet<String>, BTreeSet<String>) {
    let found = report.trace.iter().find_map(|record| match &record.event {
        TraceEvent::FinishedWorkReconciled { kept, rerun, .. } => {
            Some((kept.iter().cloned().collect(), rerun.iter().cloned().collect()))
        }
        _ => None,
    });
    found.unwrap_or_else(|| panic!("{}: the restarted JobMaster did not reconcile", context(report)))
}

/// Subtasks deployed after the JobMaster recovered.
fn deployed_after_recovery(report: &RunReport) -> BTreeSet<String> {
    let recovered = report
        .trace
        .iter()
        .position(|record| matches!(record.event, TraceEvent::JobRecovered { .. }))
        .unwrap_or_else(|| panic!("{}: the JobMaster never recovered", context(report)));
    report.trace[recovered..]
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::TaskDeployed { vertex, subtask: index, .. } => Some(subtask(*vertex, *index)),
            _ => None,
        })
        .collect()
}

fn all_subtasks_of(vertices: &[(u32, u32)]) -> BTreeSet<String> {
    vertices.iter().flat_map(|(vertex, count)| (0..*count).map(|index| subtask(*vertex, index))).collect()
}

#[test]
fn a_job_master_crash_re_runs_no_finished_subtask_whose_partitions_survive() {
    let finished_before = all_subtasks_of(&[(0, 2), (1, 2), (2, 2), (3, 4), (4, 2)]);
    for report in batch_runs("scenarios/tpcds-jm-crash.yaml") {
        let (kept, rerun) = reconciled(&report);
        assert_eq!(kept, finished_before, "{}", context(&report));
        assert!(rerun.is_empty(), "{}: {rerun:?}", context(&report));
        let after = deployed_after_recovery(&report);
        assert_eq!(after, all_subtasks_of(&[(5, 2), (6, 2)]), "{}: only the join and the sink run", context(&report));
        assert!(region_restarts(&report).is_empty(), "{}", context(&report));
    }
}

#[test]
fn a_job_master_crash_re_runs_exactly_the_producers_of_lost_partitions() {
    let finished_before = all_subtasks_of(&[(0, 2), (1, 2), (2, 2), (3, 4), (4, 2)]);
    for report in batch_runs("scenarios/tpcds-jm-tm-crash.yaml") {
        let (kept, rerun) = reconciled(&report);
        let on_tm_2 = |vertex: u32, count: u32| -> Vec<u32> {
            (0..count).filter(|index| first_placement(&report, vertex, *index) == "tm-2").collect()
        };
        let expected = expected_chain(&on_tm_2(3, 4), &on_tm_2(4, 2));
        assert!(!expected.is_empty(), "{}: tm-2 held partitions the join needed", context(&report));
        assert_eq!(rerun, expected, "{}", context(&report));
        assert_eq!(kept, &finished_before - &expected, "{}", context(&report));
        let after = deployed_after_recovery(&report);
        assert!(after.is_disjoint(&kept), "{}: kept work ran again: {:?}", context(&report), &after & &kept);
    }
}

#[test]
fn a_lost_partition_re_runs_its_producer_chain_and_nothing_else() {
    for report in batch_runs("scenarios/tpcds-lost-partition-chain.yaml") {
        // The harness notes which file it lost: `lost tm-2:partitions/ds3.p{i}@a0/data`.
        let lost = report
            .trace
            .iter()
            .find_map(|record| match &record.event {
                TraceEvent::Harness { detail } => detail
                    .strip_prefix("lost tm-2:partitions/ds3.p")
                    .and_then(|rest| rest.split_once('@'))
                    .and_then(|(index, _)| index.parse::<u32>().ok()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{}: tm-2 lost no `Add tax` partition", context(&report)));
        let restarts = region_restarts(&report);
        assert_eq!(restarts.len(), 1, "{}: {restarts:?}", context(&report));
        let set: BTreeSet<String> = restarts[0].iter().cloned().collect();
        let mut expected = expected_chain(&[lost], &[]);
        expected.extend([subtask(5, 0), subtask(5, 1)]);
        assert_eq!(set, expected, "{}", context(&report));
        let again = redeployed(&report);
        assert!(again.is_subset(&set), "{}: {again:?} re-ran outside {set:?}", context(&report));
        let failure = report.trace.iter().any(|record| {
            matches!(&record.event, TraceEvent::TaskFailed { reason, .. }
                if reason.starts_with(&format!("partition ds3.p{lost}@a0")) && reason.contains("not found on tm-2"))
        });
        assert!(failure, "{}: the join named the lost partition", context(&report));
    }
}

#[test]
fn region_failover_recomputes_less_than_restart_all_on_the_tpcds_job() {
    let scenario = load("scenarios/tpcds-tm-crash-regions.yaml");
    let mut recomputed = Vec::new();
    for variant in Variant::failover_pair(ExchangeMode::AllEdgesBlocking) {
        let mut total = 0;
        for seed in super::support::seeds_in(1..4) {
            let applied = variant.apply(&scenario);
            let report = run(&applied, ExecutionMode::Batch, seed);
            super::support::assert_passes(&applied, &report, &variant.to_string());
            let metrics = recovery_metrics(&report.trace);
            assert!(metrics.subtasks_restarted > 0, "{variant} seed {seed}: the crash restarted something");
            total += metrics.records_recomputed;
        }
        recomputed.push((variant.failover, total));
    }
    let [(FailoverStrategy::RestartAll, all), (FailoverStrategy::Region, region)] = recomputed[..] else {
        panic!("restart-all first, then region: {recomputed:?}");
    };
    assert!(region < all, "region failover recomputed {region} records, restart-all {all}");
}

#[test]
fn subtask_names_round_trip() {
    assert_eq!(parse_subtask(&subtask(12, 3)), Some((12, 3)));
    assert_eq!(parse_subtask("v1"), None);
}

#[test]
fn task_managers_keep_finished_partitions_only_for_their_grace_period() {
    let mut scenario = load("scenarios/tpcds-jm-crash.yaml");
    // Down for longer than the TaskManagers' grace period (5 s after they notice, 1 s after).
    for fault in &mut scenario.faults {
        if let sluice_sim::faults::FaultKind::Kill { restart_after, .. } = &mut fault.kind {
            *restart_after = Some(std::time::Duration::from_secs(8));
        }
    }
    scenario.seeds = 1..3;
    let finished_before = all_subtasks_of(&[(0, 2), (1, 2), (2, 2), (3, 4), (4, 2)]);
    for report in passing_runs(&scenario, &[ExecutionMode::Batch]) {
        let lost_the_job_master: BTreeSet<&str> = report
            .trace
            .iter()
            .filter(|record| matches!(record.event, TraceEvent::JobMasterLost { .. }))
            .map(|record| record.node.as_str())
            .collect();
        assert_eq!(lost_the_job_master, BTreeSet::from(["tm-0", "tm-1", "tm-2"]), "{}", context(&report));
        let expired = report
            .trace
            .iter()
            .any(|record| matches!(record.event, TraceEvent::PartitionsExpired { partitions } if partitions > 0));
        assert!(expired, "{}: no TaskManager released its partitions", context(&report));
        let (kept, rerun) = reconciled(&report);
        assert!(kept.is_empty(), "{}: {kept:?}", context(&report));
        assert_eq!(rerun, finished_before, "{}", context(&report));
    }
}

#[test]
fn exponential_delay_spaces_restarts_with_seeded_jitter_and_failure_rate_gives_up() {
    let mut scenario = load("scenarios/tpcds-lost-partition-chain.yaml");
    scenario.restart_strategy = serde_yaml::from_str(
        "{ type: exponential-delay, initial_backoff: 400ms, max_backoff: 2s, multiplier: 2, jitter_factor: 0.25 }",
    )
    .unwrap();
    let mut delays = BTreeSet::new();
    for report in passing_runs(&scenario, &[ExecutionMode::Batch]) {
        for record in &report.trace {
            if let TraceEvent::RegionsRestarting { delay_ms, .. } = record.event {
                assert!((300..=500).contains(&delay_ms), "{}: {delay_ms} ms", context(&report));
                delays.insert(delay_ms);
            }
        }
    }
    assert!(delays.len() > 1, "the jitter differs between seeds: {delays:?}");

    // Two crashes within the interval: failure-rate allows one.
    let mut scenario = load("scenarios/tpcds-tm-crash-regions.yaml");
    scenario.restart_strategy = serde_yaml::from_str(
        "{ type: failure-rate, max_failures_per_interval: 1, failure_rate_interval: 1m, delay: 100ms }",
    )
    .unwrap();
    let mut second = scenario.faults[0].clone();
    second.kind = sluice_sim::faults::FaultKind::Kill { node: "tm-2".to_string(), restart_after: None };
    second.trigger = sluice_sim::faults::Trigger::Task {
        vertex: 5,
        subtask: Some(0),
        state: sluice_sim::faults::TaskStateTrigger::Running,
    };
    scenario.faults.push(second);
    let report = run(&scenario, ExecutionMode::Batch, super::support::seed_or(1));
    let sluice_sim::report::RunOutcome::JobFailed(reason) = &report.outcome else {
        panic!("the job must fail: {:?}", report.outcome);
    };
    assert!(
        reason.contains("restart strategy failure-rate") && reason.contains("2 failures within 60000 ms"),
        "{reason}"
    );
    // The schedule exceeded what the strategy allows: expected-unrecoverable, not a failure.
    match sluice_sim::check::judge(&report, &scenario) {
        sluice_sim::check::Verdict::ExpectedUnrecoverable(why) => {
            assert!(why.contains("exhausted the restart strategy"), "{why}");
        }
        other => panic!("expected-unrecoverable, got {other:?}"),
    }
}

/// The JobMaster's own count of restarts (its `job finished after N restarts`) is the harness's,
/// whatever restarted the job: region failover, restart-all, a restore, a new JobMaster.
#[test]
fn the_job_master_and_the_harness_count_the_same_restarts() {
    let files = [
        "scenarios/tpcds-jm-tm-crash.yaml",
        "scenarios/tpcds-jm-crash.yaml",
        "scenarios/tpcds-failover.yaml",
        "scenarios/wordcount-checkpoints.yaml",
    ];
    for file in files {
        let mut scenario = load(file);
        scenario.seeds = super::support::seeds_in(1..6);
        for report in passing_runs(&scenario, &scenario.modes.clone()) {
            let finished = report.trace.iter().find_map(|record| match record.event {
                TraceEvent::JobFinished { restarts } => Some(u64::from(restarts)),
                _ => None,
            });
            assert_eq!(finished, Some(report.restarts()), "{file} {} {}", context(&report), report.mode);
        }
    }
}

/// The failure-rate curve's row at one rate: (mean makespan in fault-free makespans, runs that
/// finished) for restart-all and for region failover.
fn curve_row(output: &str, rate: &str) -> [(Option<f64>, u32); 2] {
    let row = output.lines().find(|line| line.starts_with(rate)).unwrap_or_else(|| panic!("no {rate} row:\n{output}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    let cell = |at: usize| {
        let ratio = cells[at].strip_suffix('×').map(|ratio| ratio.parse::<f64>().expect("a ratio"));
        let finished = cells[at + 1].split('/').next().and_then(|count| count.parse().ok()).expect("finished/runs");
        (ratio, finished)
    };
    [cell(2), cell(5)]
}

#[test]
fn region_failover_pays_off_when_task_managers_fail_often_and_the_shuffle_keeps_their_results() {
    // Kills every fifth of the fault-free makespan, the blocking results in the shuffle service
    // (Metzger's setup): restart-all starts over at every kill and often does not finish within
    // ten makespans; region failover re-runs what the kill was running.
    let (status, output, _) = super::support::sluice(&[
        "compare",
        "scenarios/tpcds-remote-shuffle.yaml",
        "--failover",
        "--mtbf",
        "0.2",
        "--seeds",
        "1..9",
    ]);
    assert_eq!(status, 0, "{output}");
    let [(restart_all, all_finished), (region, region_finished)] = curve_row(&output, "0.200T");
    let region = region.expect("region failover finished runs");
    assert!(region_finished >= all_finished && region_finished >= 7, "{output}");
    assert!(restart_all.is_none_or(|restart_all| region < restart_all * 0.75), "{output}");
}
