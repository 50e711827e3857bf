//! `sluice run`: run a scenario's seeds, print each run's verdict, write failures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::{Options, load};
use crate::check::Verdict;
use crate::replay::write_failure;
use crate::runner::RunReport;
use crate::scenario::Scenario;
use crate::seed::{DeterminismCheck, SeedResult, run_seed};
use crate::trace::to_json_lines;

/// One line per run: verdict, rows, makespan, restarts, wall time, trace hash; and, after a
/// restart, what recovery cost.
pub(super) fn report_line(report: &RunReport, verdict: &Verdict) -> String {
    let verdict = match verdict {
        Verdict::Pass => "PASS".to_string(),
        Verdict::Fail(_) => "FAIL".to_string(),
        Verdict::ExpectedUnrecoverable(_) => "UNRECOVERABLE".to_string(),
    };
    let mut line = format!(
        "  {:<9} {verdict}  committed {:>6} rows  makespan {:>8.3}s  restarts {}  wall {:>5} ms  trace {:016x}",
        report.mode,
        report.records_committed(),
        report.makespan.as_secs_f64(),
        report.restarts,
        report.wall_time.as_millis(),
        report.trace_hash
    );
    let recovery = &report.recovery;
    if recovery.subtasks_restarted > 0 || recovery.regions_restarted > 0 {
        let plural = |count: u64, noun: &str| format!("{count} {noun}{}", if count == 1 { "" } else { "s" });
        line.push_str(&format!(
            "\n             recovery: {} and {} restarted, {} recomputed, {:.3}s recovering",
            plural(recovery.subtasks_restarted, "subtask"),
            plural(recovery.regions_restarted, "region"),
            plural(recovery.records_recomputed, "record"),
            recovery.recovery_time.as_secs_f64()
        ));
    }
    line
}

fn describe(scenario: &Scenario) -> String {
    let mut text = format!(
        "scenario `{}`: job {}, {} TaskManagers × {} slots, parallelism {}",
        scenario.name,
        scenario.job,
        scenario.cluster.task_managers,
        scenario.cluster.slots_per_task_manager,
        scenario.parallelism
    );
    for fault in &scenario.faults {
        let _ = write!(text, "; {fault}");
    }
    if let Some(random) = &scenario.random_faults {
        let _ = write!(text, "; {} random faults per seed", random.count);
    }
    text
}

/// Where the JSON lines trace of one run goes: the path itself for a single run, else the path
/// with `-<seed>-<mode>` before its extension.
pub(super) fn trace_path(base: &Path, single: bool, report: &RunReport) -> PathBuf {
    if single {
        return base.to_path_buf();
    }
    let stem = base.file_stem().map_or_else(|| "trace".into(), |stem| stem.to_string_lossy().into_owned());
    base.with_file_name(format!("{stem}-{}-{}.jsonl", report.seed, report.mode))
}

/// Whether a failed seed gets a replay file.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum ReplayFile {
    Write,
    Skip,
}

/// Prints a seed's runs and failures, writes traces and a replay file; returns whether it failed.
pub(super) fn print_seed(
    scenario: &Scenario,
    options: &Options,
    result: &SeedResult,
    single_run: bool,
    replay_file: ReplayFile,
) -> bool {
    println!("seed {}", result.seed);
    for (report, verdict) in &result.runs {
        println!("{}", report_line(report, verdict));
        if let Verdict::ExpectedUnrecoverable(reason) = verdict {
            println!("    expected-unrecoverable: {reason}");
        }
        if options.print_trace {
            for record in &report.trace {
                println!("    {record}");
            }
        }
        if let Some(base) = &options.trace {
            let path = trace_path(base, single_run, report);
            match std::fs::write(&path, to_json_lines(&report.trace)) {
                Ok(()) => println!("    trace written to {}", path.display()),
                Err(error) => eprintln!("sluice: cannot write {}: {error}", path.display()),
            }
        }
    }
    let failures = result.failures();
    for (mode, failure) in &failures {
        match mode {
            Some(mode) => println!("    {mode}: {failure}"),
            None => println!("    {failure}"),
        }
    }
    let both_modes_passed = result.runs.len() == 2 && result.runs.iter().all(|(_, verdict)| *verdict == Verdict::Pass);
    if both_modes_passed && result.agreement.is_none() {
        let keys: usize = result.runs[1].0.committed.values().map(|table| table.latest.len()).sum();
        println!("  streaming == batch: agree ({keys} keys)");
    }
    if failures.is_empty() {
        return false;
    }
    if replay_file == ReplayFile::Skip {
        return true;
    }
    match write_failure(&options.failures_directory(), scenario, result) {
        Ok(path) => println!("    replay: cargo run --release -p sluice-sim -- replay {}", path.display()),
        Err(error) => eprintln!("sluice: cannot write the replay file: {error}"),
    }
    true
}

pub(super) fn command(options: &Options) -> i32 {
    let scenario = match load(options) {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    let seeds = options.seeds.clone().unwrap_or_else(|| scenario.seeds.clone());
    let modes = options.modes(&scenario);
    let determinism = if options.check_determinism { DeterminismCheck::On } else { DeterminismCheck::Off };
    let single_run = seeds.end - seeds.start == 1 && modes.len() == 1;
    println!("{}", describe(&scenario));
    let (mut passed, mut failed, mut unrecoverable) = (0, 0, 0);
    for seed in seeds.clone() {
        let result = run_seed(&scenario, seed, &modes, determinism);
        if print_seed(&scenario, options, &result, single_run, ReplayFile::Write) {
            failed += 1;
        } else if result.outcome() == crate::seed::SeedOutcome::ExpectedUnrecoverable {
            unrecoverable += 1;
        } else {
            passed += 1;
        }
    }
    println!(
        "summary: {} seeds × {} modes: {passed} seeds passed, {failed} failed, {unrecoverable} expected-unrecoverable",
        seeds.end - seeds.start,
        modes.len()
    );
    i32::from(failed > 0)
}
