//! `sluice run`: run a scenario's seeds, print each run's verdict, write failures.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use sluice_engine::cover::Mark;

use super::{SeedArgs, limit_memory};
use crate::replay::write_failure;
use crate::seed::{DeterminismCheck, SeedOutcome, SeedResult, run_seed};
use crate::sweep::summary::status;
use sluice_harness::check::Verdict;
use sluice_harness::coverage::CoverageTable;
use sluice_harness::report::RunReport;
use sluice_harness::scenario::Scenario;
use sluice_harness::trace::to_json_lines;
use sluice_harness::words::{counted, printable};

#[derive(Debug, Args)]
pub(super) struct RunArgs {
    #[command(flatten)]
    seeds: SeedArgs,
    /// Write each run's trace as JSON lines: to PATH for one run, else to PATH-<seed>-<mode>.jsonl.
    #[arg(long, value_name = "PATH")]
    trace: Option<PathBuf>,
    /// Print each run's trace.
    #[arg(long)]
    print_trace: bool,
    /// Write each run's committed tables as CSV to DIR/seed-<seed>/<mode>/ (final rows, and an
    /// upsert table's updates in streaming mode); compare two with `sluice diff`.
    #[arg(long, value_name = "DIR")]
    output: Option<PathBuf>,
}

/// What a command prints of each seed.
pub(super) struct Printing<'a> {
    /// Print every trace event.
    pub(super) print_trace: bool,
    /// Where traces go.
    pub(super) trace: Option<&'a Path>,
    /// Whether a failed seed gets a replay file, and where.
    pub(super) failures: Option<&'a Path>,
}

/// One line per run: verdict, rows, makespan, restarts, wall time, trace hash; after a restart,
/// what recovery cost; and the faults that never fired.
pub(super) fn report_line(report: &RunReport, verdict: &Verdict) -> String {
    let verdict = match verdict {
        Verdict::Pass => "PASS".to_string(),
        Verdict::Fail(_) => "FAIL".to_string(),
        Verdict::ExpectedUnrecoverable(_) => "UNRECOVERABLE".to_string(),
    };
    let mut line = format!(
        "  {:<9} {verdict}  committed {:>6}  makespan {:>8.3}s (job {:.3}s)  {}  wall {:>5} ms  trace {:016x}",
        report.mode,
        counted(report.records_committed() as u64, "row"),
        report.makespan.as_secs_f64(),
        crate::compare::job_time(&report.trace).unwrap_or(report.makespan).as_secs_f64(),
        counted(report.restarts(), "restart"),
        report.wall_time.as_millis(),
        report.trace_hash
    );
    let recovery = &report.recovery;
    if recovery.subtasks_restarted > 0 || recovery.regions_restarted > 0 {
        let _ = write!(
            line,
            "\n             recovery: {} and {} restarted, {} recomputed, {:.3}s recovering",
            counted(recovery.subtasks_restarted, "subtask"),
            counted(recovery.regions_restarted, "region"),
            counted(recovery.records_recomputed, "record"),
            recovery.recovery_time.as_secs_f64()
        );
    }
    for ((vertex, operator), dropped) in report.late_dropped() {
        let _ = write!(
            line,
            "\n             late: {} dropped by v{vertex} (operator {operator})",
            counted(dropped, "element")
        );
    }
    let partly = report.late.as_ref().map_or(0, |late| late.elements.len() - late.late_for_every_window());
    if partly > 0 {
        let _ = write!(
            line,
            "\n             late for some windows: {} left out of the windows that had fired, added to the others",
            counted(partly as u64, "element")
        );
    }
    for index in report.unfired_faults() {
        let _ = write!(line, "\n             never fired: fault #{index}: {}", report.schedule[index]);
    }
    line
}

pub(super) fn describe(scenario: &Scenario) -> String {
    let mut text = format!(
        "scenario `{}`: job {}, {} × {}, parallelism {}",
        printable(&scenario.name),
        scenario.job,
        counted(scenario.cluster.task_managers, "TaskManager"),
        counted(scenario.cluster.slots_per_task_manager, "slot"),
        scenario.parallelism
    );
    for fault in &scenario.faults {
        let _ = write!(text, "; {fault}");
    }
    if let Some(random) = &scenario.random_faults {
        let _ = write!(text, "; {} per seed", counted(random.count, "random fault"));
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

/// Checks, before anything runs, that traces can be written where `--trace` says.
pub(super) fn check_trace_destination(base: &Path, single: bool) -> Result<(), String> {
    let directory = match base.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !directory.is_dir() {
        return Err(format!("cannot write traces to {}: no directory {}", base.display(), directory.display()));
    }
    if single {
        std::fs::write(base, "").map_err(|error| format!("cannot write {}: {error}", base.display()))?;
    }
    Ok(())
}

/// Prints a seed's runs and failures, writes traces and a replay file; returns whether it failed,
/// and whether everything could be written.
pub(super) fn print_seed(
    scenario: &Scenario,
    printing: &Printing,
    result: &SeedResult,
    single_run: bool,
) -> (bool, bool) {
    println!("seed {}", result.seed);
    if let Some(policy) = scenario.buggify.policy(result.seed) {
        let points: Vec<&str> = policy.enabled().iter().map(|point| point.name()).collect();
        println!("  fault points enabled: {}", if points.is_empty() { "none".to_string() } else { points.join(", ") });
    }
    let mut written = true;
    for (report, verdict) in &result.runs {
        println!("{}", report_line(report, verdict));
        if !report.coverage.is_empty() {
            let marks: Vec<&str> = report.coverage.keys().map(|mark| mark.name()).collect();
            println!("    covered: {}", marks.join(", "));
        }
        if let Verdict::ExpectedUnrecoverable(reason) = verdict {
            println!("    expected-unrecoverable: {reason}");
        }
        if printing.print_trace {
            for record in &report.trace {
                println!("    {record}");
            }
        }
        if let Some(base) = printing.trace {
            let path = trace_path(base, single_run, report);
            match std::fs::write(&path, to_json_lines(&report.trace)) {
                Ok(()) => println!("    trace written to {}", path.display()),
                Err(error) => {
                    eprintln!("sluice: cannot write {}: {error}", path.display());
                    written = false;
                }
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
    if both_modes_passed && let Some(compared) = &result.compared {
        println!("  streaming == batch: agree {compared}");
    }
    if failures.is_empty() {
        return (false, written);
    }
    if let Some(directory) = printing.failures {
        match write_failure(directory, scenario, result) {
            Ok(path) => println!("    replay: {}", crate::replay::command("replay", path.display())),
            Err(error) => eprintln!("sluice: cannot write the replay file: {error}"),
        }
    }
    (true, written)
}

/// Writes each run's committed tables under `root`; false if one cannot be written.
fn write_outputs(root: &Path, result: &SeedResult) -> bool {
    let mut written = true;
    for (report, _) in &result.runs {
        let directory = sluice_harness::output::run_directory(root, report.seed, report.mode);
        let owed = sluice_harness::output::owed_tables(report);
        match sluice_harness::output::write_tables(&directory, &report.committed, &owed, report.mode) {
            Ok(files) => println!(
                "    {}: {} written to {}",
                report.mode,
                counted(files.len() as u64, "file"),
                directory.display()
            ),
            Err(error) => {
                eprintln!("sluice: cannot write {}: {error}", directory.display());
                written = false;
            }
        }
    }
    written
}

pub(super) fn command(arguments: &RunArgs) -> i32 {
    let scenario = match arguments.seeds.load() {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    let seeds = arguments.seeds.seeds(&scenario);
    let modes = arguments.seeds.modes(&scenario);
    let determinism = if arguments.seeds.check_determinism { DeterminismCheck::On } else { DeterminismCheck::Off };
    let single_run = seeds.end - seeds.start == 1 && modes.len() == 1;
    if let Some(base) = &arguments.trace
        && let Err(message) = check_trace_destination(base, single_run)
    {
        eprintln!("sluice run: {message}");
        return status::USAGE;
    }
    limit_memory(arguments.seeds.memory_limit);
    println!("{}", describe(&scenario));
    let printing = Printing {
        print_trace: arguments.print_trace,
        trace: arguments.trace.as_deref(),
        failures: Some(&arguments.seeds.failures),
    };
    let (mut passed, mut failed, mut unrecoverable, mut all_written) = (0u64, 0u64, 0u64, true);
    let mut coverage = CoverageTable::default();
    for seed in seeds.clone() {
        let result = run_seed(&scenario, seed, &modes, determinism);
        for (report, _) in &result.runs {
            coverage.add(&report.coverage);
        }
        let (seed_failed, written) = print_seed(&scenario, &printing, &result, single_run);
        all_written &= written;
        if let Some(root) = &arguments.output {
            all_written &= write_outputs(root, &result);
        }
        if seed_failed {
            failed += 1;
        } else if result.outcome() == SeedOutcome::ExpectedUnrecoverable {
            unrecoverable += 1;
        } else {
            passed += 1;
        }
    }
    println!(
        "summary: {} × {}: {passed} passed, {failed} failed, {unrecoverable} expected-unrecoverable",
        counted(seeds.end - seeds.start, "seed"),
        counted(modes.len() as u64, "mode"),
    );
    let never = coverage.never_hit();
    // The marks never reached are many for one scenario; `sluice sweep` prints the table.
    println!("coverage: {} of {} marks reached", Mark::ALL.len() - never.len(), Mark::ALL.len());
    if failed > 0 {
        status::FAILED
    } else if !all_written {
        status::USAGE
    } else {
        status::PASSED
    }
}
