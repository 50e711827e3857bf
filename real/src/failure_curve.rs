//! `sluice-real compare --failover --mtbf F,…`: the failure-rate curve for real, beside the
//! simulator's under the cost profile.
//!
//! A scenario's job runs as real processes under restart-all and region failover: first `runs`
//! times each without faults (seeds S, S+1, …; the fault-free makespan `T` is the mean), then,
//! for each fraction `f`, once per seed under that seed's kills: TaskManagers SIGKILLed at
//! exponential intervals of mean `f × T` and started again at once, a run given `10 × T`
//! ([`under_kills`], the draw `sluice compare --failover` makes). The simulator runs the same
//! seeds the same way in its own fault-free makespan (the same draws, scaled to its `T`, each
//! killed TaskManager restarted at once), so the two curves can be held against each other: the
//! same slowdown over the fault-free makespan, the same strategy faster. A run that fails a check
//! other than finishing in time stops the comparison.

use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_harness::compare::{Variant, job_time};
use sluice_harness::failure_curve::{
    CurvePoint, RunUnderKills, kills_fired, render_curve, render_curve_fidelity, under_kills, without_faults,
};
use sluice_harness::faults::{FaultKind, Trigger};
use sluice_harness::recovery::recovery_metrics;
use sluice_harness::report::RunOutcome;
use sluice_harness::scenario::{CostProfile, Scenario};

use crate::local::{Kill, run_mode};
use crate::simulator::simulate_run;

/// What the curve runs: where the simulator is, how many seeds, which rates.
pub(crate) struct CurveOptions<'a> {
    pub(crate) sluice: &'a Path,
    pub(crate) profile: &'a CostProfile,
    pub(crate) runs: u32,
    pub(crate) fractions: &'a [f64],
    pub(crate) root: &'a Path,
}

/// One side of the comparison: runs one variant of a scenario on one seed under its kills.
trait Side {
    fn name(&self) -> &'static str;
    fn run(&self, scenario: &Scenario, variant: Variant, seed: u64, label: &str) -> Result<RunUnderKills, String>;
}

/// Runs the curve of the scenario at `path`, for real and simulated, and prints both.
pub(crate) fn compare_failover(options: &CurveOptions, path: &Path) -> Result<(), String> {
    let scenario = Scenario::load(path).map_err(|error| error.to_string())?;
    let quiet = Scenario { costs: options.profile.costs.clone(), ..without_faults(&scenario) };
    let variants = Variant::failover_pair(scenario.exchange_mode);
    let real = Real { root: options.root };
    let simulated = Simulated { sluice: options.sluice, root: options.root };
    let (real_curve, real_makespan) = curve(options, &quiet, &variants, &real)?;
    let (simulated_curve, simulated_makespan) = curve(options, &quiet, &variants, &simulated)?;
    println!("\n{} for real:\n{}", scenario.name, render_curve(&real_curve, real_makespan));
    println!("{} simulated:\n{}", scenario.name, render_curve(&simulated_curve, simulated_makespan));
    println!("{}", render_curve_fidelity(&real_curve, &simulated_curve));
    Ok(())
}

/// One side's curve and its fault-free makespan.
fn curve(
    options: &CurveOptions,
    quiet: &Scenario,
    variants: &[Variant],
    side: &dyn Side,
) -> Result<(Vec<CurvePoint>, Duration), String> {
    let seeds = quiet.seeds.start..quiet.seeds.start + u64::from(options.runs);
    let mut fault_free = Vec::new();
    for &variant in variants {
        for seed in seeds.clone() {
            let label = format!("{}-{}-{}-fault-free-{seed}", quiet.name, side.name(), variant.failover);
            let run = side.run(quiet, variant, seed, &label)?;
            fault_free.push(run.finished.ok_or_else(|| format!("{label}: did not finish without faults"))?);
        }
    }
    let makespan = fault_free.iter().sum::<Duration>() / fault_free.len().max(1) as u32;
    println!("  {:<9} fault-free makespan {:.3}s", side.name(), makespan.as_secs_f64());
    let mut points = Vec::new();
    for &fraction in options.fractions {
        for &variant in variants {
            let mut runs = Vec::new();
            for seed in seeds.clone() {
                let scenario = under_kills(quiet, seed, makespan, fraction, Duration::ZERO);
                let label = format!("{}-{}-{}-mtbf{fraction}-{seed}", quiet.name, side.name(), variant.failover);
                runs.push(side.run(&scenario, variant, seed, &label)?);
            }
            let point = CurvePoint::of(fraction, variant.failover, &runs, makespan);
            let mean = point.mean_ratio().map_or_else(|| "-".to_string(), |ratio| format!("{ratio:.2}×"));
            println!(
                "  {:<9} MTBF {fraction:.3}T {:<12} {mean:>6}  finished {}/{}  {} kills, {} restarts",
                side.name(),
                variant.failover.to_string(),
                point.ratios.len(),
                point.runs,
                point.kills,
                point.restarts
            );
            points.push(point);
        }
    }
    Ok((points, makespan))
}

/// Real processes on 127.0.0.1.
struct Real<'a> {
    root: &'a Path,
}

impl Side for Real<'_> {
    fn name(&self) -> &'static str {
        "real"
    }

    fn run(&self, scenario: &Scenario, variant: Variant, seed: u64, label: &str) -> Result<RunUnderKills, String> {
        let applied = variant.apply(scenario);
        let file = write_scenario(self.root, label, &applied)?;
        let work = self.root.join(label);
        let kills = real_kills(&applied);
        let run = run_mode(&file, &applied, variant.mode, seed, &kills, None, &work)?;
        let finished = run.report.outcome == RunOutcome::Finished;
        let failure =
            run.failures.iter().find(|failure| finished || !matches!(failure.check, "completed" | "liveness"));
        if let Some(failure) = failure {
            return Err(format!("{label}: real run failed: {failure} (work directory {})", work.display()));
        }
        let _ = std::fs::remove_dir_all(&work);
        let trace = &run.report.trace;
        Ok(RunUnderKills {
            finished: finished.then(|| job_time(trace).unwrap_or(run.report.wall_time)),
            kills: kills_fired(trace),
            restarts: recovery_metrics(trace).restarts,
        })
    }
}

/// The scenario's kills as `sluice-real local --kill`s: each at the same time after the
/// submission, the TaskManager started again at once.
fn real_kills(scenario: &Scenario) -> Vec<Kill> {
    let kill = |fault: &sluice_harness::faults::Fault| match (&fault.trigger, &fault.kind) {
        (Trigger::At(after), FaultKind::Kill { node, .. }) => Some(Kill { node: node.clone(), after: *after }),
        _ => None,
    };
    scenario.faults.iter().filter_map(kill).collect()
}

/// The `sluice` binary's simulation.
struct Simulated<'a> {
    sluice: &'a Path,
    root: &'a Path,
}

impl Side for Simulated<'_> {
    fn name(&self) -> &'static str {
        "simulated"
    }

    fn run(&self, scenario: &Scenario, variant: Variant, seed: u64, label: &str) -> Result<RunUnderKills, String> {
        let file = write_scenario(self.root, label, &variant.apply(scenario))?;
        let trace_file = self.root.join(format!("{label}.jsonl"));
        let run = simulate_run(self.sluice, &file, seed, &trace_file)?;
        let finished = job_time(&run.trace);
        let other_failure = run.stdout.lines().map(str::trim).any(|line| {
            let failure = line.strip_prefix(&format!("{}: ", variant.mode));
            failure.is_some_and(|failure| !failure.starts_with("completed:") && !failure.starts_with("liveness:"))
        });
        if !run.passed && (finished.is_some() || other_failure) {
            return Err(format!("{label}: the simulation failed a check:\n{}", run.stdout));
        }
        let _ = std::fs::remove_file(&trace_file);
        Ok(RunUnderKills { finished, kills: kills_fired(&run.trace), restarts: recovery_metrics(&run.trace).restarts })
    }
}

fn write_scenario(root: &Path, label: &str, scenario: &Scenario) -> Result<PathBuf, String> {
    let file = root.join(format!("{label}.yaml"));
    std::fs::write(&file, scenario.to_yaml()).map_err(|error| format!("{}: {error}", file.display()))?;
    Ok(file)
}
