//! The `sluice` command: its subcommands, their options with the bounds each is checked
//! against, and its exit statuses.
//!
//! Every subcommand has `--help`; `--version` prints the crate version and the git revision it
//! was built from. Exit status: 0 when every run passed (or was expected-unrecoverable), 1 when
//! a check failed, 2 for a bad command line or input file (nothing ran), 3 when a seed crashed
//! its process. Every failure prints the command that replays it and writes a replay file to
//! `failures/` (or `--failures DIR`). A closed output pipe (`sluice … | head`) ends the
//! command quietly with status 141; see `bin/sluice.rs`.

mod compare;
mod curve;
mod diff;
mod explore;
mod merge;
mod parallel;
mod plan;
mod replay;
mod run;
mod shrink;
mod sql;
mod sweep;
mod timeline;

use std::ops::Range;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use sluice_engine::graph::ExecutionMode;

use crate::sweep::summary::status;
use sluice_harness::scenario::{JobCatalog, Scenario, parse_seeds};
use sluice_harness::words::printable;

/// `0.1.0 (git 1a2b3c4d5e6f)`.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (git ", env!("SLUICE_GIT_REVISION"), ")");

const EXIT_STATUS: &str = "\
Exit status:
  0  every run passed (or was expected-unrecoverable)
  1  a check failed (each failure prints the command that replays it)
  2  a bad command line or input file (nothing ran), or an output that cannot be written
  3  a seed crashed its process (a sweep goes on with the other seeds; `run` and `replay`
     run seeds in their own process and end with it)
  141  the output pipe was closed (`sluice … | head`)";

/// Simulates a Flink-like engine on a deterministic cluster: one seed replays a whole
/// distributed run, faults included.
#[derive(Debug, Parser)]
#[command(name = "sluice", version = VERSION, after_help = EXIT_STATUS, arg_required_else_help = true)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario's seeds in each of its modes and print every run's verdict.
    #[command(after_help = EXIT_STATUS)]
    Run(run::RunArgs),
    /// Run many seeds of a scenario in isolated worker processes and summarize them.
    #[command(after_help = EXIT_STATUS)]
    Sweep(sweep::SweepArgs),
    /// A coverage-guided campaign over a scenario's fault schedules (`--against-blind` compares).
    #[command(after_help = EXIT_STATUS)]
    Explore(explore::ExploreArgs),
    /// Join the `--format json` outputs of a sweep's shards into one summary.
    #[command(after_help = EXIT_STATUS)]
    Merge(merge::MergeArgs),
    /// Run a replay file again and say whether it reproduced its failure.
    #[command(after_help = EXIT_STATUS)]
    Replay(replay::ReplayArgs),
    /// Minimize a failing replay file's faults and input; writes `NAME.min.yaml`.
    #[command(after_help = EXIT_STATUS)]
    Shrink(shrink::ShrinkArgs),
    /// Draw a JSON lines trace (`sluice run --trace`) as an SVG Gantt chart, or as text.
    #[command(after_help = EXIT_STATUS)]
    Timeline(timeline::TimelineArgs),
    /// Run a Flink SQL script in both modes and print the verdicts and tables (or `--explain`).
    #[command(after_help = EXIT_STATUS)]
    Sql(sql::SqlArgs),
    /// Print a job's plan: StreamGraph, JobGraph, pipelined regions, slots needed.
    #[command(after_help = EXIT_STATUS)]
    Plan(plan::PlanArgs),
    /// Compare exchange modes (or failover strategies) on a scenario's seeds.
    #[command(after_help = EXIT_STATUS)]
    Compare(compare::CompareArgs),
    /// Compare two directories of committed tables (`run --output`) row by row.
    #[command(after_help = EXIT_STATUS)]
    Diff(diff::DiffArgs),
    /// A sweep's worker process (started by `sluice sweep`, not by people).
    #[command(name = "__worker", hide = true)]
    Worker(sweep::WorkerArgs),
}

/// `--mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Mode {
    Streaming,
    Batch,
}

impl From<Mode> for ExecutionMode {
    fn from(mode: Mode) -> ExecutionMode {
        match mode {
            Mode::Streaming => ExecutionMode::Streaming,
            Mode::Batch => ExecutionMode::Batch,
        }
    }
}

/// `--format` of the commands that print results.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
enum Format {
    /// For people.
    #[default]
    Text,
    /// One JSON object per line: one per seed, then a summary.
    Json,
}

/// The options of the commands that run a scenario's seeds.
#[derive(Clone, Debug, Args)]
struct SeedArgs {
    /// The scenario file.
    file: PathBuf,
    /// The seeds: one (`7`), `A..B` (B excluded) or `A..=B`; at most 100,000,000 of them
    /// [default: the scenario's `seeds`].
    #[arg(long, visible_alias = "seed", value_name = "SEEDS", value_parser = seeds_arg)]
    seeds: Option<Range<u64>>,
    /// Run only this mode [default: the scenario's `modes`].
    #[arg(long, value_enum)]
    mode: Option<Mode>,
    /// Run every seed twice and compare the trace hashes.
    #[arg(long)]
    check_determinism: bool,
    /// Where replay files of failed seeds go.
    #[arg(long, value_name = "DIR", default_value = "failures")]
    failures: PathBuf,
    /// Memory limit of each process that runs simulations: `4GiB`, `512MiB` (64MiB to 64GiB).
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = memory_arg)]
    memory_limit: u64,
    /// Run at this default parallelism instead of the scenario's (1 to 256): the scenario is
    /// checked again against its cluster and named `<name>-p<N>`, and its replay files record it
    /// [default: the scenario's `parallelism`].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=i64::from(sluice_harness::scenario::MAX_PARALLELISM)))]
    parallelism: Option<u32>,
    /// Charge the costs of this cost profile (`sluice-real calibrate` writes one) instead of the
    /// scenario's `costs`; replay files hold the costs themselves.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
}

impl SeedArgs {
    /// The scenario file, with `--profile`'s costs and at `--parallelism` if given; an error
    /// names the option with the file, since the value it is about is not in the file.
    fn load(&self) -> Result<Scenario, i32> {
        let mut scenario = load(&self.file)?;
        if let Some(path) = &self.profile {
            let profile = sluice_harness::scenario::CostProfile::load(path).map_err(|error| {
                eprintln!("sluice: --profile: {error}");
                status::USAGE
            })?;
            scenario.costs = profile.costs;
        }
        let Some(parallelism) = self.parallelism else { return Ok(scenario) };
        scenario.with_parallelism(parallelism).map_err(|error| {
            let file = format!("{} with --parallelism {parallelism}", self.file.display());
            eprintln!("sluice: {}", sluice_harness::scenario::ScenarioError { file, ..error });
            status::USAGE
        })
    }

    fn seeds(&self, scenario: &Scenario) -> Range<u64> {
        self.seeds.clone().unwrap_or_else(|| scenario.seeds.clone())
    }

    fn modes(&self, scenario: &Scenario) -> Vec<ExecutionMode> {
        match self.mode {
            Some(mode) => vec![mode.into()],
            None => scenario.modes.clone(),
        }
    }
}

/// Parses `--seeds`.
fn seeds_arg(text: &str) -> Result<Range<u64>, String> {
    parse_seeds(text).map_err(|message| printable(&message))
}

/// Parses a size: `4GiB`, `512MiB`, `65536KiB` (binary units; `G`, `M`, `K` too), bounded to 64 MiB
/// ..= 64 GiB.
fn memory_arg(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let split = trimmed.find(|c: char| !c.is_ascii_digit()).unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let shift = match unit.trim() {
        "GiB" | "G" | "GB" => 30,
        "MiB" | "M" | "MB" => 20,
        "KiB" | "K" | "KB" => 10,
        _ => return Err(format!("`{}` is not a size like 4GiB or 512MiB", printable(text))),
    };
    let value: u64 = number.parse().map_err(|_| format!("`{}` is not a size like 4GiB or 512MiB", printable(text)))?;
    let bytes = value.checked_mul(1 << shift).ok_or("too large a size")?;
    if !((64 << 20)..=(64 << 30)).contains(&bytes) {
        return Err(format!("{} is outside 64MiB..=64GiB", printable(text)));
    }
    Ok(bytes)
}

/// Parses a wall-clock duration option such as `--seed-timeout`: 1s to 1h.
fn wall_duration_arg(text: &str) -> Result<Duration, String> {
    let duration = sluice_engine::duration::parse_duration(text)?;
    if !(Duration::from_secs(1)..=Duration::from_secs(3600)).contains(&duration) {
        return Err(format!("{} is outside 1s..=1h", printable(text)));
    }
    Ok(duration)
}

/// The jobs this process's scenarios may name: the built-in ones, unless a user's binary started
/// the command with its own ([`main_with`]).
static JOBS: std::sync::OnceLock<JobCatalog> = std::sync::OnceLock::new();

fn jobs() -> JobCatalog {
    JOBS.get().cloned().unwrap_or_else(JobCatalog::built_in)
}

/// Loads a scenario, or prints why not and returns the usage status.
fn load(file: &std::path::Path) -> Result<Scenario, i32> {
    Scenario::load_with(file, jobs()).map_err(|error| {
        eprintln!("sluice: {error}");
        status::USAGE
    })
}

/// Whether the command owns its process (it is the `sluice` binary, not a test calling
/// [`main`]), and may set process-wide things such as a memory limit.
static OWNS_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Sets this process's memory limit, if the command owns its process; a process that cannot is
/// told so on standard error and goes on.
fn limit_memory(bytes: u64) {
    if !OWNS_PROCESS.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if let Err(error) = rlimit::setrlimit(rlimit::Resource::DATA, bytes, bytes) {
        eprintln!("sluice: cannot set a memory limit of {bytes} bytes: {error}");
    }
}

/// [`main`] for the `sluice` binary, which owns its process: commands may set its memory limit.
pub fn main_process(arguments: Vec<String>) -> i32 {
    OWNS_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
    main(arguments)
}

/// [`main_process`] for a user's own binary whose scenarios name its own jobs: the whole
/// `sluice` command (run, sweep, replay, shrink, …) over `jobs`. A sweep's workers are this
/// binary again, so they know the same jobs. Call it once, from `main`.
pub fn main_with(arguments: Vec<String>, jobs: JobCatalog) -> i32 {
    if JOBS.set(jobs).is_err() {
        panic!("internal: main_with is called once per process");
    }
    main_process(arguments)
}

/// The command line, with `plan`'s job argument listing `jobs`: a user's binary ([`main_with`])
/// knows other jobs than the built-in ones a doc comment could name.
fn command_line(jobs: &JobCatalog) -> clap::Command {
    let names: Vec<&str> = jobs.jobs().map(|job| job.name()).collect();
    let listed = match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, others)) => format!("{} or {last}", others.join(", ")),
        None => "none".to_string(),
    };
    Cli::command().mut_subcommand("plan", |plan| plan.mut_arg("job", |job| job.help(format!("The job: {listed}"))))
}

/// Parses a command line (with the program name) as `Cli::try_parse_from` does, against
/// [`command_line`] with this process's jobs.
fn parse(arguments: impl IntoIterator<Item = String>) -> Result<Cli, clap::Error> {
    let mut command = command_line(&jobs());
    let mut matches = command.try_get_matches_from_mut(arguments)?;
    Cli::from_arg_matches_mut(&mut matches).map_err(|error| error.format(&mut command))
}

/// Runs the command line (without the program name); returns the exit status.
pub fn main(arguments: Vec<String>) -> i32 {
    let cli = match parse(std::iter::once("sluice".to_string()).chain(arguments)) {
        Ok(cli) => cli,
        Err(error) => {
            // clap echoes the values it refused: escape what a terminal would act on.
            let rendered = error.render().to_string();
            let text = rendered.lines().map(printable).collect::<Vec<_>>().join("\n");
            if error.use_stderr() {
                eprintln!("{text}");
                return status::USAGE;
            }
            println!("{text}");
            return status::PASSED;
        }
    };
    match cli.command {
        Command::Run(arguments) => run::command(&arguments),
        Command::Sweep(arguments) => sweep::command(&arguments),
        Command::Merge(arguments) => merge::command(&arguments),
        Command::Explore(arguments) => explore::command(&arguments),
        Command::Replay(arguments) => replay::command(&arguments),
        Command::Shrink(arguments) => shrink::command(&arguments),
        Command::Timeline(arguments) => timeline::command(&arguments),
        Command::Plan(arguments) => plan::command(&arguments),
        Command::Sql(arguments) => sql::command(&arguments),
        Command::Compare(arguments) => compare::command(&arguments),
        Command::Diff(arguments) => diff::command(&arguments),
        Command::Worker(arguments) => sweep::worker(&arguments),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
        command_line(&JobCatalog::built_in()).debug_assert();
    }

    #[test]
    fn plan_help_lists_the_jobs_the_command_was_given() {
        let help = |jobs: &JobCatalog| {
            let mut command = command_line(jobs);
            command.build();
            command.find_subcommand_mut("plan").expect("a `plan` subcommand").render_help().to_string()
        };
        let built_in = help(&JobCatalog::built_in());
        assert!(built_in.contains("The job: wordcount, ") && built_in.contains(" or tpcds-q95"), "{built_in}");
        let wordcount = sluice_catalog::jobs().first().expect("a built-in job");
        let one = help(&JobCatalog::of([wordcount]).unwrap());
        assert!(one.contains("The job: wordcount\n") && !one.contains("tpcds"), "{one}");
    }

    #[test]
    fn sizes_and_durations_are_bounded() {
        assert_eq!(memory_arg("4GiB"), Ok(4 << 30));
        assert_eq!(memory_arg("512M"), Ok(512 << 20));
        assert!(memory_arg("1MiB").unwrap_err().contains("outside 64MiB..=64GiB"));
        assert!(memory_arg("100TiB").unwrap_err().contains("not a size"));
        assert!(memory_arg("18446744073709551615GiB").is_err());
        assert!(memory_arg("lots").unwrap_err().contains("not a size"));
        assert_eq!(wall_duration_arg("2m"), Ok(Duration::from_secs(120)));
        assert!(wall_duration_arg("10ms").unwrap_err().contains("1s..=1h"));
        assert!(seeds_arg("1..200000000").unwrap_err().contains("more than 100000000 seeds"));
        assert_eq!(seeds_arg("7"), Ok(7..8));
    }

    #[test]
    fn help_and_version_exit_zero_and_usage_errors_two() {
        let exit = |arguments: &[&str]| main(arguments.iter().map(ToString::to_string).collect());
        assert_eq!(exit(&["--version"]), status::PASSED);
        assert_eq!(exit(&["sweep", "--help"]), status::PASSED);
        assert_eq!(exit(&["run", "--help"]), status::PASSED);
        assert_eq!(exit(&[]), status::USAGE);
        assert_eq!(exit(&["sweep"]), status::USAGE);
        assert_eq!(exit(&["sweep", "x.yaml", "--jobs", "1000000"]), status::USAGE);
        assert_eq!(exit(&["frobnicate"]), status::USAGE);
    }
}
