//! The `sluice` command.
//!
//! ```text
//! sluice run FILE [--seed N | --seeds A..B] [--mode streaming|batch] [--check-determinism] [--trace]
//! ```
//!
//! `run` prints, per seed and mode: the verdict, rows committed, simulated makespan, restarts,
//! wall time and trace hash; then whether the modes agree. Any failure prints the one command
//! that replays it and makes the exit status 1; a bad command line or scenario exits with 2.

use std::fmt::Write as _;
use std::ops::Range;
use std::path::PathBuf;

use sluice_engine::graph::ExecutionMode;

use crate::check::{CheckFailure, check_run, deterministic, modes_agree};
use crate::runner::{RunReport, run};
use crate::scenario::{Scenario, format_duration, parse_seeds};

const USAGE: &str =
    "usage: sluice run FILE [--seed N | --seeds A..B] [--mode streaming|batch] [--check-determinism] [--trace]";

struct RunOptions {
    file: PathBuf,
    seeds: Option<Range<u64>>,
    mode: Option<ExecutionMode>,
    check_determinism: bool,
    print_trace: bool,
}

fn parse_run(arguments: &[String]) -> Result<RunOptions, String> {
    let mut options =
        RunOptions { file: PathBuf::new(), seeds: None, mode: None, check_determinism: false, print_trace: false };
    let mut file = None;
    let mut iter = arguments.iter();
    while let Some(argument) = iter.next() {
        let mut value = |flag: &str| iter.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match argument.as_str() {
            "--seed" | "--seeds" => options.seeds = Some(parse_seeds(&value(argument)?)?),
            "--mode" => {
                options.mode = Some(match value("--mode")?.as_str() {
                    "streaming" => ExecutionMode::Streaming,
                    "batch" => ExecutionMode::Batch,
                    other => return Err(format!("unknown mode `{other}`; use streaming or batch")),
                })
            }
            "--check-determinism" => options.check_determinism = true,
            "--trace" => options.print_trace = true,
            flag if flag.starts_with('-') => return Err(format!("unknown option `{flag}`")),
            path if file.is_none() => file = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    options.file = file.ok_or("run needs a scenario file")?;
    Ok(options)
}

/// Runs the command line (without the program name); returns the exit status.
pub fn main(arguments: Vec<String>) -> i32 {
    match arguments.first().map(String::as_str) {
        Some("run") => match parse_run(&arguments[1..]) {
            Ok(options) => run_command(&options),
            Err(message) => {
                eprintln!("sluice: {message}\n{USAGE}");
                2
            }
        },
        Some("help" | "--help" | "-h") => {
            println!("{USAGE}");
            0
        }
        _ => {
            eprintln!("{USAGE}");
            2
        }
    }
}

fn replay_command(options: &RunOptions, seed: u64, mode: ExecutionMode) -> String {
    format!("cargo run --release -p sluice-sim -- run {} --seed {seed} --mode {mode} --trace", options.file.display())
}

fn summary_line(report: &RunReport, failures: &[CheckFailure]) -> String {
    let verdict = if failures.is_empty() { "PASS" } else { "FAIL" };
    format!(
        "  {:<9} {verdict}  committed {:>6} rows  makespan {:>8.3}s  restarts {}  wall {:>5} ms  trace {:016x}",
        report.mode,
        report.records_committed(),
        report.makespan.as_secs_f64(),
        report.restarts,
        report.wall_time.as_millis(),
        report.trace_hash
    )
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
        let _ = write!(text, "; kill {} at {}", fault.kill, format_duration(fault.at));
        if let Some(delay) = fault.restart_after {
            let _ = write!(text, " (restart after {})", format_duration(delay));
        }
    }
    text
}

fn run_command(options: &RunOptions) -> i32 {
    let scenario = match Scenario::load(&options.file) {
        Ok(scenario) => scenario,
        Err(error) => {
            eprintln!("sluice: {error}");
            return 2;
        }
    };
    let seeds = options.seeds.clone().unwrap_or_else(|| scenario.seeds.clone());
    let modes: Vec<ExecutionMode> = match options.mode {
        Some(mode) => vec![mode],
        None => scenario.modes.clone(),
    };
    println!("{}", describe(&scenario));
    let (mut passed, mut failed, mut agreed, mut compared) = (0, 0, 0, 0);
    for seed in seeds.clone() {
        println!("seed {seed}");
        let mut reports = Vec::new();
        for mode in &modes {
            let report = run(&scenario, *mode, seed);
            let mut failures = check_run(&report);
            if options.check_determinism
                && let Err(failure) = deterministic(&report, &run(&scenario, *mode, seed))
            {
                failures.push(failure);
            }
            println!("{}", summary_line(&report, &failures));
            if options.print_trace {
                for record in &report.trace {
                    println!("    {record}");
                }
            }
            if failures.is_empty() {
                passed += 1;
            } else {
                failed += 1;
                for failure in &failures {
                    println!("    {failure}");
                }
                println!("    replay: {}", replay_command(options, seed, *mode));
            }
            reports.push(report);
        }
        if let [streaming, batch] = reports.as_slice() {
            compared += 1;
            match modes_agree(streaming, batch) {
                Ok(()) => {
                    agreed += 1;
                    let keys: usize = batch.committed.values().map(|table| table.latest.len()).sum();
                    println!("  streaming == batch: agree ({keys} keys)");
                }
                Err(failure) => {
                    failed += 1;
                    println!("  {failure}");
                    println!(
                        "    replay: cargo run --release -p sluice-sim -- run {} --seed {seed}",
                        options.file.display()
                    );
                }
            }
        }
    }
    println!(
        "summary: {} seeds × {} modes: {passed} passed, {failed} failed; streaming == batch on {agreed}/{compared} seeds",
        seeds.end - seeds.start,
        modes.len()
    );
    if failed > 0 { 1 } else { 0 }
}
