//! Helpers shared by the suite.

use std::ops::Range;
use std::path::{Path, PathBuf};

use sluice_engine::graph::ExecutionMode;
use sluice_sim::check::{check_run, deterministic, modes_agree};
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("sim lives in the workspace").to_path_buf()
}

/// Loads a scenario by its path relative to the workspace.
pub fn load(relative: &str) -> Scenario {
    let path = workspace().join(relative);
    Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"))
}

/// The seeds to run: `SLUICE_SEEDS=N` means `1..N+1`, otherwise the scenario's own.
pub fn seeds(scenario: &Scenario) -> Range<u64> {
    match std::env::var("SLUICE_SEEDS") {
        Ok(count) => 1..count.parse::<u64>().expect("SLUICE_SEEDS is a number") + 1,
        Err(_) => scenario.seeds.clone(),
    }
}

/// Runs every seed in every mode of a scenario and checks each run, the agreement of the modes,
/// and (for every tenth seed) determinism. Panics with every failure and its replay command.
pub fn run_and_check(file: &str, scenario: &Scenario, seeds: Range<u64>) -> usize {
    let mut failures = Vec::new();
    let mut runs = 0;
    for seed in seeds {
        let mut reports = Vec::new();
        for mode in &scenario.modes {
            let report = run(scenario, *mode, seed);
            runs += 1;
            let mut problems: Vec<String> = check_run(&report).iter().map(ToString::to_string).collect();
            if seed % 10 == 0
                && let Err(failure) = deterministic(&report, &run(scenario, *mode, seed))
            {
                problems.push(failure.to_string());
            }
            for problem in problems {
                failures.push(format!(
                    "seed {seed} {mode}: {problem}\n    replay: cargo run --release -p sluice-sim -- run {file} --seed {seed} --mode {mode} --trace"
                ));
            }
            reports.push(report);
        }
        let streaming = reports.iter().find(|report| report.mode == ExecutionMode::Streaming);
        let batch = reports.iter().find(|report| report.mode == ExecutionMode::Batch);
        if let (Some(streaming), Some(batch)) = (streaming, batch)
            && let Err(failure) = modes_agree(streaming, batch)
        {
            failures.push(format!(
                "seed {seed}: {failure}\n    replay: cargo run --release -p sluice-sim -- run {file} --seed {seed}"
            ));
        }
    }
    assert!(failures.is_empty(), "{} failures in {file}:\n{}", failures.len(), failures.join("\n"));
    runs
}
