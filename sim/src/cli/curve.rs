//! `sluice compare --failover --mtbf F,F,…`: the failure-rate curve of restart-all against
//! region failover (Metzger's fine-grained recovery experiment, in simulation).
//!
//! The scenario's own faults are dropped. Each seed runs once without faults under both
//! strategies: the mean of those makespans is the fault-free makespan `T`. Then, for each
//! fraction `f`, each seed's TaskManagers are killed at exponential intervals of mean `f × T`
//! (`faults::random::task_manager_kills`, the same kills for both strategies), each restarted
//! after 100 ms; restarts never give up, and a run that has not finished after `10 × T` did not
//! finish. A run that broke a check other than finishing (exactly-once, commits, failover sets)
//! is a failure: listed with a replay file, and the command exits 1.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use sluice_harness::check::{CheckFailure, check_run};
use sluice_harness::compare::Variant;
use sluice_harness::failure_curve::{
    CurvePoint, RunUnderKills, kills_fired, render_curve, under_kills, without_faults,
};
use sluice_harness::report::{RunOutcome, RunReport};
use sluice_harness::scenario::Scenario;

use super::parallel::{in_parallel, work, write_replay};
use crate::runner::run;
use crate::sweep::summary::status;

/// How long a killed TaskManager stays down.
const RESTART_AFTER: Duration = Duration::from_millis(100);

/// One run under kills: what the curve needs of it.
struct KilledRun {
    variant: Variant,
    seed: u64,
    outcome: RunUnderKills,
    failures: Vec<CheckFailure>,
    /// Kept only when it failed a check, for its replay file.
    failed_report: Option<RunReport>,
}

/// Runs the curve and prints it; the exit status.
pub(super) fn command(
    scenario: &Scenario,
    variants: &[Variant],
    seeds: Range<u64>,
    jobs: usize,
    fractions: &[f64],
    failures: &Path,
) -> i32 {
    let quiet = Arc::new(without_faults(scenario));
    let fault_free = {
        let quiet = Arc::clone(&quiet);
        in_parallel(work(variants, seeds.clone()), jobs, move |variant, seed| {
            let report = run(&variant.apply(&quiet), variant.mode, seed);
            (check_run(&report), report.makespan)
        })
    };
    if let Some((failures, _)) = fault_free.iter().find(|(failures, _)| !failures.is_empty()) {
        eprintln!("sluice compare: a run without faults failed: {}", failures[0]);
        return status::FAILED;
    }
    let total: Duration = fault_free.iter().map(|(_, makespan)| *makespan).sum();
    let makespan = total / fault_free.len().max(1) as u32;
    let mut points = Vec::new();
    let mut failed = 0;
    for &fraction in fractions {
        let runs = killed_runs(&quiet, variants, seeds.clone(), jobs, makespan, fraction);
        failed += report_failures(&runs, failures);
        points.extend(variants.iter().map(|variant| point(fraction, *variant, &runs, makespan)));
    }
    print!("{}", render_curve(&points, makespan));
    if failed > 0 {
        println!("{failed} runs failed a check; they are in the curve as they ended");
        return status::FAILED;
    }
    status::PASSED
}

fn killed_runs(
    quiet: &Arc<Scenario>,
    variants: &[Variant],
    seeds: Range<u64>,
    jobs: usize,
    makespan: Duration,
    fraction: f64,
) -> Vec<KilledRun> {
    let quiet = Arc::clone(quiet);
    let mut runs = in_parallel(work(variants, seeds), jobs, move |variant, seed| {
        let scenario = under_kills(&quiet, seed, makespan, fraction, RESTART_AFTER);
        let report = run(&variant.apply(&scenario), variant.mode, seed);
        let mut failures = check_run(&report);
        let timed_out = matches!(report.outcome, RunOutcome::TimedOut(_));
        if timed_out {
            failures.retain(|failure| !matches!(failure.check, "completed" | "liveness"));
        }
        let kills = kills_fired(&report.trace);
        let restarts = report.recovery.restarts;
        let finished = (report.outcome == RunOutcome::Finished).then_some(report.makespan);
        let failed_report = (!failures.is_empty()).then_some(report);
        KilledRun { variant, seed, outcome: RunUnderKills { finished, kills, restarts }, failures, failed_report }
    });
    runs.sort_by_key(|run| (run.variant, run.seed));
    runs
}

fn point(fraction: f64, variant: Variant, runs: &[KilledRun], makespan: Duration) -> CurvePoint {
    let of_variant: Vec<RunUnderKills> =
        runs.iter().filter(|run| run.variant == variant).map(|run| run.outcome).collect();
    CurvePoint::of(fraction, variant.failover, &of_variant, makespan)
}

/// Prints each run that failed a check, with a replay file under `directory`; how many.
fn report_failures(runs: &[KilledRun], directory: &Path) -> usize {
    let mut count = 0;
    for run in runs.iter().filter(|run| !run.failures.is_empty()) {
        count += 1;
        for failure in &run.failures {
            println!("FAIL seed {} {}: {failure}", run.seed, run.variant);
        }
        let Some(report) = &run.failed_report else { continue };
        write_replay(&directory.join("mtbf"), &report.source, report, &run.failures);
    }
    count
}
