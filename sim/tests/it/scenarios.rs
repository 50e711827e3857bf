//! Every shipped scenario, every seed of its range, both modes: exactly-once against the
//! reference, streaming == batch, and determinism on a sample of seeds.

use super::support::{load, run_and_check, seeds, seeds_overridden, workspace};

#[test]
fn wordcount_is_exactly_once_and_modes_agree() {
    let scenario = load("scenarios/wordcount.yaml");
    let seeds = seeds(&scenario);
    assert!(seeds.end - seeds.start >= 100 || seeds_overridden(), "the suite runs at least 100 seeds");
    let tally = run_and_check("scenarios/wordcount.yaml", &scenario, seeds);
    assert_eq!(tally.unrecoverable, 0, "a fault-free scenario is always recoverable");
    assert!(tally.runs >= 200 || seeds_overridden());
}

#[test]
fn wordcount_survives_a_task_manager_crash_exactly_once() {
    let scenario = load("scenarios/wordcount-tm-crash.yaml");
    assert!(!scenario.faults.is_empty(), "this scenario exists to inject a crash");
    assert!(scenario.seeds.end - scenario.seeds.start >= 100, "the suite runs at least 100 seeds");
    // The schedule generator keeps faults survivable; if most seeds were written off as
    // unrecoverable, the suite would prove little.
    random_fault_scenario("scenarios/wordcount-tm-crash.yaml");
}

/// Every failing seed once fixed is kept in `scenarios/regressions/` and replayed here.
#[test]
fn regressions_stay_fixed() {
    let directory = workspace().join("scenarios/regressions");
    let mut files: Vec<_> = std::fs::read_dir(&directory)
        .expect("scenarios/regressions exists")
        .map(|entry| entry.expect("readable directory").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
        .collect();
    files.sort();
    for path in files {
        let relative = path.strip_prefix(workspace()).expect("inside the workspace").display().to_string();
        let scenario = load(&relative);
        let seeds = scenario.seeds.clone();
        run_and_check(&relative, &scenario, seeds);
    }
}

/// Runs a shipped scenario with random faults: every seed in both modes, and at most a tenth of
/// the seeds written off as unrecoverable.
fn random_fault_scenario(file: &str) {
    let scenario = load(file);
    assert!(scenario.random_faults.is_some(), "{file} exists to inject random faults");
    let seeds = seeds(&scenario);
    let count = (seeds.end - seeds.start) as usize;
    let tally = run_and_check(file, &scenario, seeds);
    // A share of one seed (`SLUICE_SEED`) says nothing.
    let one_seed = std::env::var_os("SLUICE_SEED").is_some();
    assert!(
        one_seed || tally.unrecoverable * 10 <= count,
        "{} of {count} seeds were unrecoverable",
        tally.unrecoverable
    );
}

#[test]
fn tpcds_with_pointwise_edges_pipelined_survives_random_faults() {
    random_fault_scenario("scenarios/tpcds-chaos.yaml");
}

#[test]
fn tpcds_with_runtime_decided_parallelism_survives_random_faults() {
    random_fault_scenario("scenarios/tpcds-adaptive.yaml");
}

#[test]
fn tpcds_is_exactly_once_and_modes_agree() {
    let scenario = load("scenarios/tpcds.yaml");
    let tally = run_and_check("scenarios/tpcds.yaml", &scenario, seeds(&scenario));
    assert_eq!(tally.unrecoverable, 0, "a fault-free scenario is always recoverable");
}

#[test]
fn wordcount_with_the_remote_shuffle_service_survives_random_faults() {
    let scenario = load("scenarios/wordcount-remote-shuffle.yaml");
    assert_eq!(scenario.shuffle, sluice_engine::shuffle::ShuffleKind::Remote);
    random_fault_scenario("scenarios/wordcount-remote-shuffle.yaml");
}

#[test]
fn tpcds_with_task_manager_shuffle_survives_storage_faults() {
    random_fault_scenario("scenarios/tpcds-shuffle-chaos.yaml");
}

#[test]
fn tpcds_with_the_remote_shuffle_service_survives_random_faults() {
    random_fault_scenario("scenarios/tpcds-remote-shuffle.yaml");
}

#[test]
fn wordcount_with_checkpoints_survives_random_faults_exactly_once() {
    let scenario = load("scenarios/wordcount-checkpoints.yaml");
    assert!(scenario.checkpoints.is_some(), "this scenario exists to take checkpoints");
    assert!(scenario.seeds.end - scenario.seeds.start >= 200, "the suite runs at least 200 seeds per catalog job");
    random_fault_scenario("scenarios/wordcount-checkpoints.yaml");
}

#[test]
fn tpcds_with_checkpoints_survives_random_faults_exactly_once() {
    let scenario = load("scenarios/tpcds-checkpoints.yaml");
    assert!(scenario.checkpoints.is_some(), "this scenario exists to take checkpoints");
    assert!(scenario.seeds.end - scenario.seeds.start >= 200, "the suite runs at least 200 seeds per catalog job");
    random_fault_scenario("scenarios/tpcds-checkpoints.yaml");
}

#[test]
fn event_time_windows_commit_the_same_rows_in_both_modes_under_faults() {
    let scenario = load("scenarios/windowed-checkpoints.yaml");
    assert_eq!(scenario.job, "windowed");
    assert!(scenario.seeds.end - scenario.seeds.start >= 200, "the suite runs at least 200 seeds per catalog job");
    random_fault_scenario("scenarios/windowed-checkpoints.yaml");
}

#[test]
fn a_keyed_process_function_with_state_and_timers_commits_the_same_alerts_in_both_modes_under_faults() {
    let scenario = load("scenarios/alerts-checkpoints.yaml");
    assert_eq!(scenario.job, "alerts");
    assert!(scenario.seeds.end - scenario.seeds.start >= 200, "the suite runs at least 200 seeds per catalog job");
    random_fault_scenario("scenarios/alerts-checkpoints.yaml");
}

/// A program of the `generated` job, every operator kind in one graph, judged against the job's
/// reference interpreter.
#[test]
fn a_generated_program_of_every_operator_kind_survives_random_faults() {
    let scenario = load("scenarios/generated-chaos.yaml");
    assert_eq!(scenario.job, "generated");
    assert!(scenario.seeds.end - scenario.seeds.start >= 200, "the suite runs at least 200 seeds per catalog job");
    random_fault_scenario("scenarios/generated-chaos.yaml");
}

#[test]
fn nexmark_append_only_sql_queries_commit_what_the_script_computes_in_both_modes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-append.yaml");
}

#[test]
fn nexmark_sql_queries_calling_functions_commit_what_the_script_computes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-functions.yaml");
}

#[test]
fn nexmark_sql_joins_commit_what_the_script_computes_in_both_modes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-joins.yaml");
}

#[test]
fn sql_outer_joins_and_joins_of_updates_commit_what_the_script_computes_in_both_modes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-outer.yaml");
}

#[test]
fn nexmark_updating_sql_reports_end_at_the_final_groups_in_both_modes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-updating.yaml");
}

#[test]
fn sql_window_aggregations_commit_each_window_once_in_both_modes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-windows.yaml");
}

#[test]
fn grouped_sql_queries_end_at_the_final_groups_in_both_modes_under_faults() {
    random_fault_scenario("scenarios/sql/nexmark-grouped.yaml");
}

#[test]
fn wordcount_over_files_in_line_aligned_splits_survives_faults_exactly_once() {
    random_fault_scenario("scenarios/wordcount-files.yaml");
}
