//! `sluice explore`: a coverage-guided campaign over a scenario's fault schedules (see
//! `crate::explore`), optionally beside a blind one of the same budget, with the cells table and
//! an SVG of coverage over runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clap::Args;

use super::{limit_memory, load};
use crate::explore::plot::{Line, svg};
use crate::explore::{self, Plan, Progress, State, runs_to_reach, store};
use crate::replay::{command as replay_command, write_failure_to};
use crate::sweep::shard::Shard;
use crate::sweep::summary::status;
use sluice_harness::words::printable;

/// Most runs a campaign may be asked for.
const MAX_RUNS: u64 = 10_000_000;

#[derive(Debug, Args)]
pub(super) struct ExploreArgs {
    /// The scenario file; it needs `random_faults` (their kinds are what mutations draw).
    file: PathBuf,
    /// Runs in all (each a seed in the scenario's modes); a resumed campaign counts those done.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=MAX_RUNS))]
    runs: u64,
    /// The campaign's seed: with the shard, it decides every genome.
    #[arg(long, default_value_t = 1)]
    campaign_seed: u64,
    /// Run the K-th of N independent campaigns (each its own stream and fresh seeds).
    #[arg(long, value_parser = Shard::parse)]
    shard: Option<Shard>,
    /// Keep the campaign in this directory, resuming it if it holds one.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    corpus: Option<PathBuf>,
    /// Resume the campaign this directory holds (refused if it holds none).
    #[arg(long, value_name = "DIR")]
    resume: Option<PathBuf>,
    /// Run fresh seeds only: a blind sweep with the same accounting.
    #[arg(long, conflicts_with = "against_blind")]
    blind: bool,
    /// Also run a blind campaign of the same budget and compare (cells, rare cells, first failures).
    #[arg(long)]
    against_blind: bool,
    /// Write coverage over runs as an SVG chart here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Stop after the batch that found the first failure (runs to the first failure).
    #[arg(long)]
    until_failure: bool,
    /// Hand every failure's replay file to the shrinker at the end (`sluice shrink`), writing
    /// its minimal schedule beside it as `….min.yaml`.
    #[arg(long)]
    shrink: bool,
    /// Where replay files of failures go.
    #[arg(long, value_name = "DIR", default_value = "failures")]
    failures: PathBuf,
    /// Threads that run a batch's genomes (the results do not depend on it) [default: the cores].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=256))]
    threads: Option<u32>,
    /// Memory limit of this process: `4GiB`, `512MiB` (64MiB to 64GiB).
    #[arg(long, value_name = "SIZE", default_value = "8GiB", value_parser = super::memory_arg)]
    memory_limit: u64,
}

pub(super) fn command(arguments: &ExploreArgs) -> i32 {
    let scenario = match load(&arguments.file) {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    if scenario.random_faults.as_ref().is_none_or(|random| random.count == 0 || random.kinds.is_empty()) {
        eprintln!(
            "sluice explore: {}: needs `random_faults`: their kinds are what a campaign draws faults from",
            arguments.file.display()
        );
        return status::USAGE;
    }
    limit_memory(arguments.memory_limit);
    let shard = arguments.shard.unwrap_or_else(Shard::whole);
    let threads =
        arguments.threads.map_or_else(|| std::thread::available_parallelism().map_or(1, usize::from), |n| n as usize);
    let plan = Plan {
        scenario,
        campaign_seed: arguments.campaign_seed,
        shard: (shard.index, shard.count),
        guided: !arguments.blind,
        runs: arguments.runs,
        threads,
        until_failure: arguments.until_failure,
    };
    let kind = if plan.guided { "guided" } else { "blind" };
    if let Some(dir) = &arguments.resume
        && let Err(message) = store::resume(dir, &plan)
    {
        eprintln!("sluice explore: {}", printable(&message));
        return status::USAGE;
    }
    let dir = arguments.corpus.as_ref().or(arguments.resume.as_ref());
    let main = match campaign(&plan, dir.map(PathBuf::as_path), &arguments.failures, kind) {
        Ok(state) => state,
        Err(message) => {
            eprintln!("sluice explore: {}", printable(&message));
            return status::USAGE;
        }
    };
    let mut lines = vec![(kind.to_string(), main.clone())];
    if arguments.against_blind {
        let blind_plan = Plan { guided: false, ..plan.clone() };
        let blind_dir = dir.map(|dir| dir.join("blind"));
        match campaign(&blind_plan, blind_dir.as_deref(), &arguments.failures, "blind") {
            Ok(blind) => {
                print!("{}", compare(&main, &blind));
                lines.push(("blind".to_string(), blind));
            }
            Err(message) => {
                eprintln!("sluice explore: {}", printable(&message));
                return status::USAGE;
            }
        }
    }
    if let Some(path) = &arguments.svg
        && let Err(status) = write_chart(path, &plan.scenario.name, &lines)
    {
        return status;
    }
    if arguments.shrink
        && let Err(status) = shrink_failures(lines.iter().map(|(_, state)| state))
    {
        return status;
    }
    if lines.iter().any(|(_, state)| !state.found.is_empty()) { status::FAILED } else { status::PASSED }
}

/// Draws each campaign's cells over runs into `path`.
fn write_chart(path: &Path, scenario: &str, lines: &[(String, State)]) -> Result<(), i32> {
    let title = format!("`{scenario}`: cells (marks × fault kinds) reached over runs");
    let colours = ["#d62728", "#1f77b4"];
    let drawn: Vec<Line> =
        lines.iter().zip(colours).map(|((label, state), colour)| Line { label, cells: &state.cells, colour }).collect();
    std::fs::write(path, svg(&title, &drawn)).map_err(|error| {
        eprintln!("sluice explore: cannot write {}: {error}", path.display());
        status::USAGE
    })?;
    println!("chart: {}", path.display());
    Ok(())
}

/// Shrinks each failure's replay file once (campaigns may fail the same seed twice).
fn shrink_failures<'a>(states: impl Iterator<Item = &'a State>) -> Result<(), i32> {
    let files: std::collections::BTreeSet<&String> =
        states.flat_map(|state| state.found.iter().filter_map(|found| found.replay_file.as_ref())).collect();
    for file in files {
        let path = Path::new(file);
        let scenario = load(path)?;
        super::shrink::shrink_to(&scenario, path, &super::shrink::minimal_path(path))?;
    }
    Ok(())
}

/// Runs (or resumes) one campaign, printing its progress and its end.
fn campaign(plan: &Plan, dir: Option<&Path>, failures: &Path, kind: &str) -> Result<State, String> {
    let state = match dir {
        Some(dir) => store::load(dir, plan)?,
        None => State::default(),
    };
    println!(
        "explore `{}`: {kind}, campaign seed {}, shard {}/{}, {} runs{}{}",
        plan.scenario.name,
        plan.campaign_seed,
        plan.shard.0,
        plan.shard.1,
        plan.runs,
        dir.map(|dir| format!(", corpus {}", dir.display())).unwrap_or_default(),
        if state.cells.is_empty() { String::new() } else { format!(" (resumed after run {})", state.cells.len()) }
    );
    let started = std::time::Instant::now();
    let done_before = state.cells.len();
    // Named by run as well as seed: a mutant keeps its parent's seed under another schedule.
    let mut on_failure = |run: u64, scenario: &sluice_harness::scenario::Scenario, result: &crate::seed::SeedResult| {
        let path = failures.join(format!("{}-{}-run{run}.yaml", scenario.name, result.seed));
        write_failure_to(path, scenario, result).ok().map(|path| path.display().to_string())
    };
    let every = (plan.runs / 10).max(explore::BATCH);
    let mut progress = |event: Progress| -> Result<(), String> {
        match event {
            Progress::Failed(found) => {
                let replay = found.replay_file.as_ref().map_or_else(String::new, |file| {
                    format!(
                        "\n    replay: {}\n    shrink: {}",
                        replay_command("replay", printable(file)),
                        replay_command("shrink", printable(file))
                    )
                });
                println!(
                    "  FAIL run {} seed {} ({}): {}{replay}",
                    found.run,
                    found.seed,
                    found.mutation,
                    found.checks.join(", ")
                );
            }
            Progress::Batch(state) => {
                if let Some(dir) = dir {
                    store::save(dir, plan, state)?;
                }
                let runs = state.cells.len() as u64;
                if runs % every < explore::BATCH || runs == plan.runs {
                    println!("  {}", status_line(state));
                }
            }
        }
        Ok(())
    };
    let state = explore::run(plan, state, &mut on_failure, &mut progress)?;
    let elapsed = started.elapsed().as_secs_f64();
    let ran = state.cells.len() - done_before;
    println!(
        "{kind}: {ran} runs in {elapsed:.1} s ({:.1} runs/s); {}",
        ran as f64 / elapsed.max(1e-9),
        status_line(&state)
    );
    Ok(state)
}

fn status_line(state: &State) -> String {
    format!(
        "run {}: {} cells, {} features, {} kept, {} failures",
        state.cells.len(),
        state.cell_runs.len(),
        state.corpus.seen.len(),
        state.corpus.entries.len(),
        state.found.len()
    )
}

/// Rare cells: reached by fewer than this share of a blind campaign's runs (1%).
const RARE_PER_MILLE: u64 = 10;

/// A guided campaign beside a blind one of the same budget: when each reached every cell the
/// blind one reached, how often each reached the blind one's rare cells, the first failures,
/// and the cells table.
fn compare(guided: &State, blind: &State) -> String {
    let runs = blind.cells.len() as u64;
    let reach = |state: &State, cells: &[&String]| {
        runs_to_reach(state, cells.iter().copied())
            .map_or_else(|| "not within the budget".to_string(), |run| format!("run {run}"))
    };
    let of_blind: Vec<&String> = blind.cell_runs.keys().collect();
    let either: Vec<&String> = guided
        .cell_runs
        .keys()
        .chain(blind.cell_runs.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut text = format!(
        "compared over {runs} runs each: guided reached {} cells, blind {}, either {}\n",
        guided.cell_runs.len(),
        blind.cell_runs.len(),
        either.len()
    );
    text.push_str(&format!(
        "  every cell the blind campaign reached ({}): guided by {}, blind by {}\n",
        of_blind.len(),
        reach(guided, &of_blind),
        reach(blind, &of_blind)
    ));
    text.push_str(&format!(
        "  every cell either reached ({}): guided by {}, blind by {}\n",
        either.len(),
        reach(guided, &either),
        reach(blind, &either)
    ));
    let rare: Vec<(&String, &u64)> =
        blind.cell_runs.iter().filter(|(_, count)| **count * 1000 < runs * RARE_PER_MILLE).collect();
    let guided_rare: u64 = rare.iter().map(|(cell, _)| guided.cell_runs.get(*cell).copied().unwrap_or(0)).sum();
    let blind_rare: u64 = rare.iter().map(|(_, count)| **count).sum();
    text.push_str(&format!(
        "  rare cells (in < 1% of blind runs): {}; runs reaching them: guided {guided_rare}, blind {blind_rare}\n",
        rare.len()
    ));
    let first = |state: &State| {
        state
            .found
            .first()
            .map_or_else(|| "none".to_string(), |found| format!("run {} ({})", found.run, found.checks.join(", ")))
    };
    text.push_str(&format!("  first failure: guided {}, blind {}\n", first(guided), first(blind)));
    text.push_str(&cells_table(guided, blind));
    text
}

/// Every cell either reached: runs reaching it in each campaign.
fn cells_table(guided: &State, blind: &State) -> String {
    let mut cells: BTreeMap<&String, (u64, u64)> = BTreeMap::new();
    for (cell, count) in &guided.cell_runs {
        cells.entry(cell).or_default().0 = *count;
    }
    for (cell, count) in &blind.cell_runs {
        cells.entry(cell).or_default().1 = *count;
    }
    let width = cells.keys().map(|cell| cell.len()).max().unwrap_or(4);
    let mut text = format!("  {:<width$} {:>8} {:>8}   (runs that reached each cell)\n", "cell", "guided", "blind");
    for (cell, (guided, blind)) in cells {
        text.push_str(&format!("  {:<width$} {guided:>8} {blind:>8}\n", cell.trim_start_matches("cell ")));
    }
    text
}
