//! `sluice sweep`: many seeds on worker threads, a progress bar, and a summary.
//!
//! Each worker takes the next seed, runs it in every mode (each simulation in a fresh thread of
//! its own) and sends the result to the main thread, which draws the progress bar, writes the
//! replay file of every failed seed, and prints the summary: outcomes, outcomes per fault kind,
//! failures grouped by check with one replay command per group (its fastest-failing seed),
//! seeds per second and the simulated-to-wall time ratio. 5% of the seeds (every seed divisible
//! by 20) are run twice to check determinism; `--check-determinism` does it for all.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};

use super::{Options, load};
use crate::faults::model::KIND_NAMES;
use crate::replay::write_failure;
use crate::seed::{DeterminismCheck, SeedOutcome, SeedResult, run_seed};

#[derive(Default)]
struct KindCounts {
    seeds: u64,
    passed: u64,
    failed: u64,
    unrecoverable: u64,
}

/// A failure group: seeds that failed one check, and the replay file of the fastest.
#[derive(Default)]
struct FailureGroup {
    seeds: Vec<u64>,
    fastest: Option<(Duration, String)>,
}

#[derive(Default)]
struct Summary {
    passed: u64,
    failed: u64,
    unrecoverable: u64,
    kinds: BTreeMap<&'static str, KindCounts>,
    failures: BTreeMap<&'static str, FailureGroup>,
    simulated: Duration,
    wall: Duration,
}

impl Summary {
    fn add(&mut self, result: &SeedResult, replay_file: Option<String>) {
        let outcome = result.outcome();
        match outcome {
            SeedOutcome::Passed => self.passed += 1,
            SeedOutcome::Failed => self.failed += 1,
            SeedOutcome::ExpectedUnrecoverable => self.unrecoverable += 1,
        }
        let mut kinds: Vec<&'static str> = result
            .runs
            .first()
            .map(|(report, _)| report.schedule.iter().map(|fault| fault.kind.name()).collect())
            .unwrap_or_default();
        kinds.sort();
        kinds.dedup();
        for kind in kinds {
            let counts = self.kinds.entry(kind).or_default();
            counts.seeds += 1;
            match outcome {
                SeedOutcome::Passed => counts.passed += 1,
                SeedOutcome::Failed => counts.failed += 1,
                SeedOutcome::ExpectedUnrecoverable => counts.unrecoverable += 1,
            }
        }
        let wall: Duration = result.runs.iter().map(|(report, _)| report.wall_time).sum();
        self.wall += wall;
        self.simulated += result.runs.iter().map(|(report, _)| report.makespan).sum::<Duration>();
        let mut checks: Vec<&'static str> = result.failures().iter().map(|(_, failure)| failure.check).collect();
        checks.sort();
        checks.dedup();
        for check in checks {
            let group = self.failures.entry(check).or_default();
            group.seeds.push(result.seed);
            if let Some(file) = &replay_file
                && group.fastest.as_ref().is_none_or(|(fastest, _)| wall < *fastest)
            {
                group.fastest = Some((wall, file.clone()));
            }
        }
    }

    fn print(&self, seeds: u64, elapsed: Duration) {
        let per_second = seeds as f64 / elapsed.as_secs_f64().max(1e-9);
        let ratio = self.simulated.as_secs_f64() / self.wall.as_secs_f64().max(1e-9);
        println!(
            "summary: {seeds} seeds in {:.1} s wall ({per_second:.1} seeds/s); {:.1} s simulated, {ratio:.0}× the simulations' wall time",
            elapsed.as_secs_f64(),
            self.simulated.as_secs_f64()
        );
        println!("  passed {}, failed {}, expected-unrecoverable {}", self.passed, self.failed, self.unrecoverable);
        if !self.kinds.is_empty() {
            println!("  {:<18} {:>6} {:>7} {:>7} {:>14}", "fault kind", "seeds", "passed", "failed", "unrecoverable");
            for kind in KIND_NAMES {
                if let Some(counts) = self.kinds.get(kind) {
                    println!(
                        "  {kind:<18} {:>6} {:>7} {:>7} {:>14}",
                        counts.seeds, counts.passed, counts.failed, counts.unrecoverable
                    );
                }
            }
        }
        for (check, group) in &self.failures {
            let shown: Vec<String> = group.seeds.iter().take(10).map(ToString::to_string).collect();
            let more = if group.seeds.len() > 10 { ", …" } else { "" };
            println!("  {check}: {} seeds ({}{more})", group.seeds.len(), shown.join(", "));
            if let Some((_, file)) = &group.fastest {
                println!("    replay: cargo run --release -p sluice-sim -- replay {file}");
            }
        }
    }
}

pub(super) fn command(options: &Options) -> i32 {
    let scenario = match load(options) {
        Ok(scenario) => Arc::new(scenario),
        Err(status) => return status,
    };
    let seeds = options.seeds.clone().unwrap_or_else(|| scenario.seeds.clone());
    let modes = options.modes(&scenario);
    let jobs = options.jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |count| count.get()));
    let total = seeds.end - seeds.start;
    println!(
        "sweep `{}`: seeds {}..{}, modes {}, {jobs} worker threads",
        scenario.name,
        seeds.start,
        seeds.end,
        modes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
    );
    let started = Instant::now();
    let next = Arc::new(AtomicU64::new(seeds.start));
    let (sender, receiver) = mpsc::channel::<SeedResult>();
    let all_twice = options.check_determinism;
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (scenario, modes, next, sender, end) =
                (Arc::clone(&scenario), modes.clone(), Arc::clone(&next), sender.clone(), seeds.end);
            std::thread::spawn(move || {
                loop {
                    let seed = next.fetch_add(1, Ordering::Relaxed);
                    if seed >= end {
                        return;
                    }
                    let twice = all_twice || seed % 20 == 0;
                    let determinism = if twice { DeterminismCheck::On } else { DeterminismCheck::Off };
                    if sender.send(run_seed(&scenario, seed, &modes, determinism)).is_err() {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(sender);
    let bar = ProgressBar::new(total);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} seeds  {per_sec}  eta {eta}  {msg}")
            .expect("a valid progress template"),
    );
    let mut summary = Summary::default();
    for result in receiver {
        let replay_file = (result.outcome() == SeedOutcome::Failed)
            .then(|| write_failure(&options.failures_directory(), &scenario, &result))
            .and_then(|written| written.map_err(|error| eprintln!("sluice: cannot write a replay file: {error}")).ok())
            .map(|path| path.display().to_string());
        summary.add(&result, replay_file);
        bar.set_message(format!("{} failed, {} unrecoverable", summary.failed, summary.unrecoverable));
        bar.inc(1);
    }
    bar.finish_and_clear();
    for worker in workers {
        worker.join().expect("a sweep worker panicked outside a simulation");
    }
    summary.print(total, started.elapsed());
    i32::from(summary.failed > 0)
}
