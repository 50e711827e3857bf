//! The `sluice` command.
//!
//! ```text
//! sluice run FILE [--seed N | --seeds A..B] [--mode M] [--check-determinism] [--trace PATH] [--print-trace] [--failures DIR]
//! sluice sweep FILE [--seeds A..B] [--jobs N] [--mode M] [--check-determinism] [--failures DIR]
//! sluice replay FILE [--trace PATH] [--print-trace]
//! sluice shrink FILE [-o OUT]
//! sluice timeline TRACE [-o OUT.svg] [--text] [--width N]
//! sluice plan JOB [--mode M] [--exchange-mode MODE] [--parallelism N] [--format text|dot]
//! sluice compare FILE [--seeds A..B] [--jobs N] [--failures DIR] [--failover]
//! ```
//!
//! Exit status: 0 when every run passed (or was expected-unrecoverable), 1 when something
//! failed, 2 for a bad command line or scenario. Every failure prints the command that replays
//! it and writes a replay file to `failures/` (or `--failures DIR`).

mod compare;
mod plan;
mod replay;
mod run;
mod shrink;
mod sweep;
mod timeline;

use std::ops::Range;
use std::path::PathBuf;

use sluice_engine::graph::{ExchangeMode, ExecutionMode};

use crate::scenario::{Scenario, parse_seeds};

const USAGE: &str = "\
usage:
  sluice run FILE [--seed N | --seeds A..B] [--mode streaming|batch] [--check-determinism]
                  [--trace PATH] [--print-trace] [--failures DIR]
  sluice sweep FILE [--seeds A..B] [--jobs N] [--mode streaming|batch] [--check-determinism] [--failures DIR]
  sluice replay FILE [--trace PATH] [--print-trace]
  sluice shrink FILE [-o OUT]
  sluice timeline TRACE [-o OUT.svg] [--text] [--width N]
  sluice plan JOB [--mode streaming|batch] [--exchange-mode MODE] [--parallelism N] [--format text|dot]
  sluice compare FILE [--seeds A..B] [--jobs N] [--failures DIR] [--failover]";

/// Options shared by the commands; each command uses the ones it needs.
#[derive(Clone, Debug, Default)]
struct Options {
    file: PathBuf,
    seeds: Option<Range<u64>>,
    mode: Option<ExecutionMode>,
    check_determinism: bool,
    trace: Option<PathBuf>,
    print_trace: bool,
    failures: Option<PathBuf>,
    jobs: Option<usize>,
    output: Option<PathBuf>,
    text: bool,
    width: Option<usize>,
    exchange_mode: Option<ExchangeMode>,
    parallelism: Option<u32>,
    format: Option<plan::PlanFormat>,
    failover: bool,
}

impl Options {
    fn failures_directory(&self) -> PathBuf {
        self.failures.clone().unwrap_or_else(|| PathBuf::from("failures"))
    }

    fn modes(&self, scenario: &Scenario) -> Vec<ExecutionMode> {
        match self.mode {
            Some(mode) => vec![mode],
            None => scenario.modes.clone(),
        }
    }
}

fn number<T: std::str::FromStr>(flag: &str, text: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("{flag} needs a number, not `{text}`"))
}

fn parse(arguments: &[String], allowed: &[&str]) -> Result<Options, String> {
    let mut options = Options::default();
    let mut file = None;
    let mut iter = arguments.iter();
    while let Some(argument) = iter.next() {
        if argument.starts_with('-') && !allowed.contains(&argument.as_str()) {
            return Err(format!("unknown option `{argument}`"));
        }
        let mut value = || iter.next().cloned().ok_or_else(|| format!("{argument} needs a value"));
        match argument.as_str() {
            "--seed" | "--seeds" => options.seeds = Some(parse_seeds(&value()?)?),
            "--mode" => {
                options.mode = Some(match value()?.as_str() {
                    "streaming" => ExecutionMode::Streaming,
                    "batch" => ExecutionMode::Batch,
                    other => return Err(format!("unknown mode `{other}`; use streaming or batch")),
                })
            }
            "--check-determinism" => options.check_determinism = true,
            "--trace" => options.trace = Some(PathBuf::from(value()?)),
            "--print-trace" => options.print_trace = true,
            "--failover" => options.failover = true,
            "--failures" => options.failures = Some(PathBuf::from(value()?)),
            "--jobs" => options.jobs = Some(number("--jobs", &value()?)?).filter(|jobs| *jobs > 0),
            "-o" => options.output = Some(PathBuf::from(value()?)),
            "--text" => options.text = true,
            "--width" => options.width = Some(number("--width", &value()?)?),
            "--exchange-mode" => options.exchange_mode = Some(ExchangeMode::parse(&value()?)?),
            "--parallelism" => options.parallelism = Some(number("--parallelism", &value()?)?),
            "--format" => options.format = Some(plan::PlanFormat::parse(&value()?)?),
            path if file.is_none() => file = Some(PathBuf::from(path)),
            extra => return Err(format!("unexpected argument `{extra}`")),
        }
    }
    options.file = file.ok_or("a file argument is missing")?;
    Ok(options)
}

fn load(options: &Options) -> Result<Scenario, i32> {
    Scenario::load(&options.file).map_err(|error| {
        eprintln!("sluice: {error}");
        2
    })
}

/// Runs the command line (without the program name); returns the exit status.
pub fn main(arguments: Vec<String>) -> i32 {
    let Some(command) = arguments.first() else {
        eprintln!("{USAGE}");
        return 2;
    };
    let rest = &arguments[1..];
    let (allowed, run): (&[&str], fn(&Options) -> i32) = match command.as_str() {
        "run" => (
            &["--seed", "--seeds", "--mode", "--check-determinism", "--trace", "--print-trace", "--failures"],
            run::command,
        ),
        "sweep" => (&["--seed", "--seeds", "--jobs", "--mode", "--check-determinism", "--failures"], sweep::command),
        "replay" => (&["--trace", "--print-trace"], replay::command),
        "shrink" => (&["-o"], shrink::command),
        "timeline" => (&["-o", "--text", "--width"], timeline::command),
        "plan" => (&["--mode", "--exchange-mode", "--parallelism", "--format"], plan::command),
        "compare" => (&["--seed", "--seeds", "--jobs", "--failures", "--failover"], compare::command),
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            return 0;
        }
        other => {
            eprintln!("sluice: unknown command `{other}`\n{USAGE}");
            return 2;
        }
    };
    match parse(rest, allowed) {
        Ok(options) => run(&options),
        Err(message) => {
            eprintln!("sluice {command}: {message}\n{USAGE}");
            2
        }
    }
}
