//! `sluice sweep`: many seeds in isolated worker processes, a progress bar, and a summary.
//!
//! The seeds (or one `--shard` of them) go to a pool of worker processes (see
//! [`crate::sweep::pool`]); each seed's record is folded into the summary as it arrives, and with
//! `--format json` also printed as a JSON line, so that the shards of one sweep, run on other
//! machines, merge with `sluice merge` into the summary of the whole. The summary gives the
//! outcomes, the outcomes per fault kind, the failures grouped by check with one replay command
//! per group (its fastest-failing seed), the crashed seeds, seeds per second, the
//! simulated-to-wall time ratio and peak memory. 5% of the seeds (every seed divisible by 20)
//! run twice to check determinism; `--check-determinism` does it for all.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::{Format, OWNS_PROCESS, SeedArgs, limit_memory, wall_duration_arg};
use crate::sweep::junit::{self, Case};
use crate::sweep::pool::{SweepConfig, sweep};
use crate::sweep::record::resident_memory;
use crate::sweep::shard::Shard;
use crate::sweep::summary::JsonLine;
use crate::sweep::summary::{Summary, SweepSummary, status};
use sluice_harness::words::{counted, printable, size};

#[derive(Debug, Args)]
pub(super) struct SweepArgs {
    #[command(flatten)]
    seeds: SeedArgs,
    /// Run only the K-th of N disjoint slices of the seeds: seed S of A..B is in shard
    /// ((S - A) mod N) + 1. Merge the shards' `--format json` outputs with `sluice merge`.
    #[arg(long, value_name = "K/N", value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Worker processes at once (1 to 64) [default: the machine's cores].
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=64))]
    jobs: Option<u16>,
    /// `json`: one JSON object per seed on standard output, then the summary's.
    #[arg(long, value_enum, default_value_t)]
    format: Format,
    /// Also write a JUnit XML report to FILE, one test case per seed.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// A seed still running after this much wall time is killed and reported as crashed (1s to 1h).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = wall_duration_arg)]
    seed_timeout: Duration,
    /// Seeds a worker process runs before a fresh one replaces it (1 to 1000000).
    #[arg(long, value_name = "N", default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    seeds_per_worker: u64,
}

/// `sluice __worker`: serves a sweep over standard input and output.
#[derive(Debug, Args)]
pub(super) struct WorkerArgs {
    /// The worker's memory limit, in bytes.
    #[arg(long)]
    memory_limit: u64,
}

pub(super) fn worker(arguments: &WorkerArgs) -> i32 {
    limit_memory(arguments.memory_limit);
    crate::sweep::worker::exit_with_supervisor();
    match crate::sweep::worker::serve(std::io::stdin().lock(), std::io::stdout().lock(), super::jobs()) {
        Ok(()) => status::PASSED,
        Err(message) => {
            eprintln!("sluice __worker: {message}");
            status::USAGE
        }
    }
}

/// Checks what a sweep needs before anything runs: the binary to run workers from, and a JUnit
/// file it can write.
fn preflight(arguments: &SweepArgs) -> Result<std::path::PathBuf, String> {
    let program = match std::env::current_exe() {
        Ok(program) if OWNS_PROCESS.load(std::sync::atomic::Ordering::Relaxed) => program,
        _ => return Err("sweeps run their workers from the `sluice` binary; run it".to_string()),
    };
    if let Some(file) = &arguments.junit {
        std::fs::write(file, "").map_err(|error| format!("cannot write {}: {error}", file.display()))?;
    }
    Ok(program)
}

pub(super) fn command(arguments: &SweepArgs) -> i32 {
    let options = &arguments.seeds;
    let scenario = match options.load() {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    let program = match preflight(arguments) {
        Ok(program) => program,
        Err(message) => {
            eprintln!("sluice sweep: {message}");
            return status::USAGE;
        }
    };
    let available = std::thread::available_parallelism().map_or(1, |count| count.get()).min(64);
    let config = SweepConfig {
        file: options.file.display().to_string(),
        modes: options.modes(&scenario),
        failures: options.failures.clone(),
        jobs: arguments.jobs.map_or(available, usize::from),
        check_all_determinism: options.check_determinism,
        seed_timeout: arguments.seed_timeout,
        memory_limit: options.memory_limit,
        seeds_per_worker: arguments.seeds_per_worker,
        program,
        scenario,
    };
    run(arguments, &config)
}

/// Runs the configured sweep: header, progress, records, summary, report; the exit status.
fn run(arguments: &SweepArgs, config: &SweepConfig) -> i32 {
    let range = arguments.seeds.seeds(&config.scenario);
    let shard = arguments.shard.unwrap_or_else(Shard::whole);
    let total = shard.len(range.clone());
    let shard_text =
        arguments.shard.map(|shard| format!(" (shard {shard}: {})", counted(total, "seed"))).unwrap_or_default();
    let header = format!(
        "sweep `{}`: seeds {}..{}{shard_text}, modes {}, {}",
        printable(&config.scenario.name),
        range.start,
        range.end,
        config.modes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "),
        counted(config.jobs as u64, "worker process")
    );
    if arguments.format == Format::Json {
        eprintln!("{header}")
    } else {
        println!("{header}")
    }
    let started = Instant::now();
    let bar = progress_bar(total);
    let mut summary = Summary::new(&config.scenario.name);
    let mut cases: Vec<Case> = Vec::new();
    let result = sweep(config, shard.seeds(range.clone()), |record| {
        summary.add(&record);
        if arguments.junit.is_some() {
            cases.push(Case::of(&record));
        }
        if arguments.format == Format::Json {
            bar.suspend(|| {
                println!("{}", serde_json::to_string(&JsonLine::Seed(record)).expect("a record serializes"))
            });
        }
        bar.set_message(format!(
            "{} failed, {} crashed, {} unrecoverable",
            summary.failed, summary.crashed, summary.expected_unrecoverable
        ));
        bar.inc(1);
    });
    bar.finish_and_clear();
    let result = result.and_then(|()| match total - summary.seeds {
        0 => Ok(()),
        missing => Err(format!("{} never ran", counted(missing, "seed"))),
    });
    let line = SweepSummary {
        summary,
        range: format!("{}..{}", range.start, range.end),
        shard: arguments.shard.map(|shard| shard.to_string()),
        modes: config.modes.clone(),
        fingerprint: config.scenario.fingerprint(),
        git_revision: crate::replay::GIT_REVISION.to_string(),
        elapsed_ms: started.elapsed().as_millis() as u64,
        supervisor_peak_rss_kb: resident_memory().map(|(_, peak)| peak),
    };
    finish(arguments, &line, &mut cases, result)
}

fn progress_bar(total: u64) -> ProgressBar {
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}  {msg}")
            .expect("a valid progress template"),
    );
    bar
}

/// Prints the summary, writes the JUnit report; the exit status.
fn finish(arguments: &SweepArgs, line: &SweepSummary, cases: &mut [Case], result: Result<(), String>) -> i32 {
    match arguments.format {
        Format::Json => {
            println!(
                "{}",
                serde_json::to_string(&JsonLine::Summary(Box::new(line.clone()))).expect("a summary serializes")
            )
        }
        Format::Text => print!("{}", render_summary(line)),
    }
    if let Some(file) = &arguments.junit {
        let name = format!("sluice sweep {}", line.summary.scenario);
        if let Err(error) = std::fs::write(file, junit::report(&name, &line.summary.scenario, cases)) {
            eprintln!("sluice sweep: cannot write {}: {error}", file.display());
            return status::USAGE;
        }
    }
    if let Err(message) = result {
        eprintln!("sluice sweep: {message}");
        return status::CRASHED;
    }
    line.summary.exit_status()
}

/// The summary for people: throughput and memory, then [`Summary::render`].
pub(super) fn render_summary(line: &SweepSummary) -> String {
    let summary = &line.summary;
    let elapsed = Duration::from_millis(line.elapsed_ms).as_secs_f64().max(1e-9);
    let simulated = Duration::from_micros(summary.simulated_us).as_secs_f64();
    let wall = Duration::from_millis(summary.wall_ms).as_secs_f64().max(1e-9);
    let memory = match line.supervisor_peak_rss_kb {
        Some(supervisor) => format!(
            "; peak RSS {} a worker, {} the supervisor",
            size(summary.worker_peak_rss_kb * 1024),
            size(supervisor * 1024)
        ),
        None if summary.worker_peak_rss_kb > 0 => {
            format!("; peak RSS {} a worker", size(summary.worker_peak_rss_kb * 1024))
        }
        None => String::new(),
    };
    format!(
        "summary: {} in {elapsed:.1} s wall ({:.1} seeds/s); {simulated:.1} s simulated, {:.0}× the simulations' wall time{memory}\n{}",
        counted(summary.seeds, "seed"),
        summary.seeds as f64 / elapsed,
        simulated / wall,
        summary.render()
    )
}
