//! `sluice compare`: a scenario's seeds in batch mode under every exchange mode, and in streaming
//! mode, on worker threads; prints what each variant cost (see [`crate::compare`]).
//!
//! Every run must pass [`check_run`] (it finished, exactly once). A failing run is listed with
//! its seed and variant, gets a replay file in `failures/<mode>-<exchange mode>/` (or under
//! `--failures DIR`), is left out of the table, and makes the command exit 1. A variant whose
//! plan does not fit in the cluster's slots is skipped with a note.

use std::collections::BTreeMap;
use std::sync::Arc;

use clap::Args;

use super::parallel::{in_parallel, work, write_replay};
use super::{SeedArgs, limit_memory};
use crate::compare::{RunMetrics, Summary, Variant, render_table, run_metrics, summarize};
use crate::runner::run;
use crate::sweep::summary::status;
use sluice_harness::check::{CheckFailure, check_run};
use sluice_harness::report::RunReport;
use sluice_harness::scenario::Scenario;
use sluice_harness::words::counted;

#[derive(Debug, Args)]
pub(super) struct CompareArgs {
    #[command(flatten)]
    seeds: SeedArgs,
    /// Worker threads (1 to 64) [default: the machine's cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: Option<u16>,
    /// Compare restart-all with region failover instead of exchange modes.
    #[arg(long)]
    failover: bool,
    /// With `--failover`: the failure-rate curve instead of the scenario's faults. Each value is
    /// a mean time between TaskManager kills as a fraction of the fault-free makespan (`2,1,0.5,
    /// 0.2`); kills come at exponential intervals and restart after 100 ms, restarts never give up,
    /// and a run may take 10 fault-free makespans.
    #[arg(long, value_name = "FRACTIONS", value_delimiter = ',', requires = "failover", value_parser = sluice_harness::failure_curve::parse_fraction)]
    mtbf: Vec<f64>,
}

/// One run: its metrics, and its report when it failed.
struct Outcome {
    variant: Variant,
    seed: u64,
    metrics: RunMetrics,
    failures: Vec<CheckFailure>,
    failed_report: Option<RunReport>,
}

pub(super) fn command(arguments: &CompareArgs) -> i32 {
    let options = &arguments.seeds;
    let scenario = match options.load() {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    if options.mode.is_some() || options.check_determinism {
        eprintln!("sluice compare: `--mode` and `--check-determinism` do not apply: compare runs every variant once");
        return status::USAGE;
    }
    let seeds = options.seeds(&scenario);
    let jobs =
        arguments.jobs.map_or_else(|| std::thread::available_parallelism().map_or(1, |count| count.get()), usize::from);
    let variants = runnable_variants(&scenario, arguments.failover);
    if variants.is_empty() {
        eprintln!(
            "sluice compare: no variant of `{}` fits in its cluster",
            sluice_harness::words::printable(&scenario.name)
        );
        return status::USAGE;
    }
    limit_memory(options.memory_limit);
    println!(
        "compare `{}`: job {}, {} × {}, parallelism {}, seeds {}..{}, {}",
        sluice_harness::words::printable(&scenario.name),
        scenario.job,
        counted(scenario.cluster.task_managers, "TaskManager"),
        counted(scenario.cluster.slots_per_task_manager, "slot"),
        scenario.parallelism,
        seeds.start,
        seeds.end,
        counted(jobs as u64, "worker thread")
    );
    if scenario.adaptive_batch.is_some() {
        println!("adaptive_batch: runtime-decided parallelism in batch all-edges-blocking only");
    }
    if !arguments.mtbf.is_empty() {
        return super::curve::command(&scenario, &variants, seeds, jobs, &arguments.mtbf, &options.failures);
    }
    let outcomes = run_all(&scenario, work(&variants, seeds), jobs);
    let failed = report_failures(options, &scenario, outcomes.iter().filter(|outcome| !outcome.failures.is_empty()));
    print!("{}", render_table(&summaries(&variants, &outcomes)));
    if failed > 0 {
        let verb = if failed == 1 { "it is" } else { "they are" };
        println!("{} failed; {verb} not in the table", counted(failed as u64, "run"));
        return status::FAILED;
    }
    status::PASSED
}

/// The variants whose plan fits in the scenario's cluster; prints why the others are skipped.
/// With `--failover`: batch under the scenario's exchange mode, restart-all against region
/// failover; otherwise every exchange mode under the scenario's failover strategy.
fn runnable_variants(scenario: &Scenario, failover: bool) -> Vec<Variant> {
    let slots = scenario.cluster.total_slots();
    let fits = |variant: &Variant| match variant.slots_needed(scenario) {
        Ok(needed) if needed <= slots => true,
        Ok(needed) => {
            println!("skipping {variant}: it needs {needed} slots at once, the cluster has {slots}");
            false
        }
        Err(message) => {
            println!("skipping {variant}: {message}");
            false
        }
    };
    let variants = if failover {
        Variant::failover_pair(scenario.exchange_mode)
    } else {
        Variant::all(scenario.failover_strategy)
    };
    variants.into_iter().filter(fits).collect()
}

/// Runs the work on `jobs` worker threads; returns the outcomes sorted by variant and seed.
fn run_all(scenario: &Scenario, work: Vec<(Variant, u64)>, jobs: usize) -> Vec<Outcome> {
    let scenario = Arc::new(scenario.clone());
    let mut outcomes = in_parallel(work, jobs, move |variant, seed| run_one(&scenario, variant, seed));
    outcomes.sort_by_key(|outcome| (outcome.variant, outcome.seed));
    outcomes
}

fn run_one(scenario: &Scenario, variant: Variant, seed: u64) -> Outcome {
    let report = run(&variant.apply(scenario), variant.mode, seed);
    let failures = check_run(&report);
    let metrics = run_metrics(&report);
    let failed_report = (!failures.is_empty()).then_some(report);
    Outcome { variant, seed, metrics, failures, failed_report }
}

/// Prints each failed run with a replay file; returns how many runs failed.
fn report_failures<'a>(options: &SeedArgs, scenario: &Scenario, failed: impl Iterator<Item = &'a Outcome>) -> usize {
    let mut count = 0;
    for outcome in failed {
        count += 1;
        for failure in &outcome.failures {
            println!("FAIL seed {} {}: {failure}", outcome.seed, outcome.variant);
        }
        let Some(report) = &outcome.failed_report else { continue };
        let variant =
            format!("{}-{}-{}", outcome.variant.mode, outcome.variant.exchange_mode, outcome.variant.failover);
        write_replay(&options.failures.join(variant), &outcome.variant.apply(scenario), report, &outcome.failures);
    }
    count
}

/// One summary per variant over its passing runs, paired with the baseline's.
fn summaries(variants: &[Variant], outcomes: &[Outcome]) -> Vec<Summary> {
    let mut passed: BTreeMap<Variant, BTreeMap<u64, RunMetrics>> = BTreeMap::new();
    for outcome in outcomes.iter().filter(|outcome| outcome.failures.is_empty()) {
        passed.entry(outcome.variant).or_default().insert(outcome.seed, outcome.metrics);
    }
    let empty = BTreeMap::new();
    let Some(base) = variants.first().copied() else { return Vec::new() };
    let baseline = (base, passed.get(&base));
    variants.iter().map(|variant| summarize(*variant, passed.get(variant).unwrap_or(&empty), baseline)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::main;

    fn scenario_file(name: &str, extra: &str) -> std::path::PathBuf {
        let directory = std::env::temp_dir().join(format!("sluice-compare-test-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&directory).unwrap();
        let path = directory.join(format!("{name}.yaml"));
        let text = format!(
            "name: {name}\njob: wordcount\nparams: {{ words: 2000, distinct_words: 50 }}\n\
             cluster: {{ task_managers: 2, slots_per_task_manager: 2 }}\nparallelism: 2\nseeds: 1..3\n{extra}"
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn compare(arguments: &[&str]) -> i32 {
        main(["compare"].iter().chain(arguments).map(ToString::to_string).collect())
    }

    #[test]
    fn every_variant_passes_on_a_healthy_cluster() {
        let path = scenario_file("healthy", "");
        assert_eq!(compare(&[path.to_str().unwrap(), "--seeds", "1..3", "--jobs", "2"]), 0);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_failing_run_exits_with_one_and_gets_a_replay_file() {
        // The job cannot finish in 2ms: every run fails `completed`.
        let path = scenario_file("too-short", "liveness_bound: 1ms\ntime_limit: 2ms\n");
        let failures = path.parent().unwrap().join("failures");
        let arguments =
            [path.to_str().unwrap(), "--seeds", "1..2", "--jobs", "1", "--failures", failures.to_str().unwrap()];
        assert_eq!(compare(&arguments), 1);
        assert!(failures.join("batch-pointwise-edges-pipelined-region/too-short-1.yaml").exists());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn the_failure_rate_curve_runs_both_strategies_under_kills_at_each_rate() {
        let path = scenario_file("curve", "exchange_mode: all-edges-blocking\n");
        let failures = path.parent().unwrap().join("failures");
        let arguments = [path.to_str().unwrap(), "--failover", "--mtbf", "1,0.3", "--seeds", "1..3"];
        let arguments: Vec<&str> = arguments.into_iter().chain(["--failures", failures.to_str().unwrap()]).collect();
        assert_eq!(compare(&arguments), 0, "every run under kills passed its checks");
        assert!(!failures.exists(), "no replay file was written");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn usage_errors_exit_with_two() {
        assert_eq!(compare(&["scenarios/wordcount.yaml", "--mtbf", "1"]), 2, "--mtbf needs --failover");
        assert_eq!(compare(&["scenarios/wordcount.yaml", "--failover", "--mtbf", "0"]), 2);
        assert_eq!(compare(&["scenarios/wordcount.yaml", "--failover", "--mtbf", "often"]), 2);
        assert_eq!(compare(&[]), 2);
        assert_eq!(compare(&["scenarios/does-not-exist.yaml"]), 2);
        assert_eq!(compare(&["scenarios/wordcount.yaml", "--mode", "batch"]), 2);
        assert_eq!(compare(&["scenarios/wordcount.yaml", "--jobs", "0"]), 2);
        assert_eq!(compare(&["scenarios/wordcount.yaml", "--jobs", "65"]), 2);
    }
}
