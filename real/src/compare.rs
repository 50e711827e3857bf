//! `sluice-real compare`: a scenario's variants (batch under every exchange mode, and streaming)
//! run as real processes, several times each, beside the simulator's run of the same variant
//! under a cost profile; the fidelity report (`sluice_harness::fidelity`) puts them side by side.
//!
//! The simulator cannot run in this binary (the real build has no madsim simulator), so each
//! simulated run is the `sluice` binary's: `sluice run FILE --mode M --seeds S --trace T`, its
//! job time read from the trace `T` as a real run's is (`sluice_harness::compare::job_time`). Both
//! sides run the same variant file, written with the profile's costs; every run must pass its
//! checks, or the comparison stops and says which. With `--failover --mtbf`, the failure-rate
//! curve instead ([`crate::failure_curve`]).

use std::path::{Path, PathBuf};

use sluice_harness::compare::{Variant, job_time};
use sluice_harness::fidelity::{FidelityRow, render, render_svg};
use sluice_harness::scenario::{CostProfile, Scenario};

use crate::failure_curve::{CurveOptions, compare_failover};
use crate::local::run_mode;
use crate::simulator::simulate;
use crate::trace::now;

/// What `sluice-real compare` does.
#[derive(Clone, Debug)]
pub struct CompareOptions {
    /// The scenarios (one shape each).
    pub scenarios: Vec<PathBuf>,
    /// The cost profile the simulator charges.
    pub profile: PathBuf,
    /// Real runs of each variant.
    pub runs: u32,
    /// The `sluice` binary that runs the simulations.
    pub sluice: PathBuf,
    /// Scenario names the profile was calibrated on, reported apart.
    pub calibrated_on: Vec<String>,
    /// Where runs put their files [default: a fresh temporary directory, removed after].
    pub work_dir: Option<PathBuf>,
    /// Where to write the report as an SVG chart, if anywhere.
    pub svg: Option<PathBuf>,
    /// If any: the failure-rate curve at these rates (`--failover --mtbf`) instead of the
    /// exchange modes.
    pub mtbf: Vec<f64>,
}

/// Runs every variant of every scenario, prints the report; the exit status.
pub fn run_compare(options: &CompareOptions) -> Result<i32, String> {
    let profile = CostProfile::load(&options.profile).map_err(|error| format!("--profile: {error}"))?;
    if !options.sluice.is_file() {
        return Err(format!(
            "no simulator at {} (build it with `cargo build --release -p sluice-sim`, or give --sluice)",
            options.sluice.display()
        ));
    }
    let root = match &options.work_dir {
        Some(directory) => directory.clone(),
        None => std::env::temp_dir().join(format!("sluice-compare-{}-{}", std::process::id(), now().as_nanos())),
    };
    std::fs::create_dir_all(&root).map_err(|error| format!("{}: {error}", root.display()))?;
    let mut rows = Vec::new();
    let mut result = Ok(());
    let curve = CurveOptions {
        sluice: &options.sluice,
        profile: &profile,
        runs: options.runs,
        fractions: &options.mtbf,
        root: &root,
    };
    for path in &options.scenarios {
        let compared = if options.mtbf.is_empty() {
            compare_scenario(options, &profile, path, &root, &mut rows)
        } else {
            compare_failover(&curve, path)
        };
        if let Err(error) = compared {
            result = Err(error);
            break;
        }
    }
    if options.work_dir.is_none() {
        let _ = std::fs::remove_dir_all(&root);
    }
    result?;
    if !options.mtbf.is_empty() {
        return Ok(0);
    }
    let calibrated_on: Vec<String> = options.calibrated_on.iter().chain(&profile.calibrated_on).cloned().collect();
    println!("\n{}", render(&rows, &calibrated_on));
    if let Some(path) = &options.svg {
        std::fs::write(path, render_svg(&rows)).map_err(|error| format!("{}: {error}", path.display()))?;
        println!("chart written to {}", path.display());
    }
    Ok(0)
}

fn compare_scenario(
    options: &CompareOptions,
    profile: &CostProfile,
    path: &Path,
    root: &Path,
    rows: &mut Vec<FidelityRow>,
) -> Result<(), String> {
    let scenario = Scenario::load(path).map_err(|error| error.to_string())?;
    let seed = scenario.seeds.start;
    for variant in Variant::all(scenario.failover_strategy) {
        let mut applied = variant.apply(&scenario);
        applied.costs = profile.costs.clone();
        let label = format!("{}-{}-{}", scenario.name, variant.mode, variant.exchange_mode);
        let file = root.join(format!("{label}.yaml"));
        std::fs::write(&file, applied.to_yaml()).map_err(|error| format!("{}: {error}", file.display()))?;
        let simulated = simulate(&options.sluice, &file, seed, &root.join(format!("{label}.jsonl")))?;
        let mut real = Vec::new();
        for run in 0..options.runs {
            let work = root.join(format!("{label}-{run}"));
            let mode_run = run_mode(&file, &applied, variant.mode, seed, &[], None, &work)?;
            if let Some(failure) = mode_run.failures.first() {
                return Err(format!("{label}: real run {run} failed: {failure} (work directory {})", work.display()));
            }
            real.push(job_time(&mode_run.report.trace).unwrap_or(mode_run.report.wall_time));
            let _ = std::fs::remove_dir_all(&work);
        }
        let row = FidelityRow { shape: scenario.name.clone(), variant: variant.to_string(), simulated, real };
        println!(
            "  {:<22} {:<40} simulated {:>7.3}s  real {:>7.3}s  ({:+.1}%)",
            row.shape,
            row.variant,
            row.simulated.as_secs_f64(),
            row.real_median(),
            row.error() * 100.0
        );
        rows.push(row);
    }
    Ok(())
}
