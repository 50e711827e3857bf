//! Helpers shared by the suite.

use std::ops::Range;
use std::path::{Path, PathBuf};

use sluice_engine::graph::ExecutionMode;
use sluice_sim::replay::write_failure;
use sluice_sim::runner::RunReport;
use sluice_sim::scenario::Scenario;
use sluice_sim::seed::{DeterminismCheck, SeedOutcome, run_seed};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("sim lives in the workspace").to_path_buf()
}

/// Runs the `sluice` binary in the workspace: exit status, standard output, standard error.
pub fn sluice(arguments: &[&str]) -> (i32, String, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(arguments)
        .current_dir(workspace())
        .output()
        .expect("the sluice binary runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.code().expect("sluice exits normally"), text(&output.stdout), text(&output.stderr))
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

/// What a scenario's seeds came to.
#[derive(Debug, Default)]
pub struct Tally {
    /// Simulations run (determinism double-runs included).
    pub runs: usize,
    /// Seeds where every run passed.
    pub passed: usize,
    /// Seeds whose schedule exceeded what the engine promises to survive.
    pub unrecoverable: usize,
}

/// Runs every seed in every mode of a scenario and judges each run, the agreement of the modes,
/// and (for every tenth seed) determinism. Every failed seed gets a replay file in `failures/`;
/// the test panics listing each failure with the command that replays it.
pub fn run_and_check(file: &str, scenario: &Scenario, seeds: Range<u64>) -> Tally {
    let mut failures = Vec::new();
    let mut tally = Tally::default();
    for seed in seeds {
        let determinism = if seed % 10 == 0 { DeterminismCheck::On } else { DeterminismCheck::Off };
        let result = run_seed(scenario, seed, &scenario.modes, determinism);
        tally.runs += result.runs.len() * if determinism == DeterminismCheck::On { 2 } else { 1 };
        match result.outcome() {
            SeedOutcome::Passed => tally.passed += 1,
            SeedOutcome::ExpectedUnrecoverable => tally.unrecoverable += 1,
            SeedOutcome::Failed => {
                let path = write_failure(&workspace().join("failures"), scenario, &result).map_or_else(
                    |error| format!("(cannot write a replay file: {error})"),
                    |path| path.display().to_string(),
                );
                for (mode, failure) in result.failures() {
                    let mode = mode.map_or_else(String::new, |mode| format!(" {mode}"));
                    failures.push(format!(
                        "seed {seed}{mode}: {failure}\n    replay: cargo run --release -p sluice-sim -- replay {path}"
                    ));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{} failures in {file}:\n{}", failures.len(), failures.join("\n"));
    tally
}

/// Runs and judges every seed of a scenario in `modes`; a failing seed gets a replay file and the
/// test panics with the command that replays it. Returns the runs, for tests that look further.
pub fn passing_runs(scenario: &Scenario, modes: &[ExecutionMode]) -> Vec<RunReport> {
    let mut reports = Vec::new();
    for seed in scenario.seeds.clone() {
        let result = run_seed(scenario, seed, modes, DeterminismCheck::Off);
        if result.outcome() != SeedOutcome::Passed {
            let path = write_failure(&workspace().join("failures"), scenario, &result).map_or_else(
                |error| format!("(cannot write a replay file: {error})"),
                |path| path.display().to_string(),
            );
            panic!(
                "seed {seed} of `{}`: {:?}\n  replay: cargo run --release -p sluice-sim -- replay {path}",
                scenario.name,
                result.failures()
            );
        }
        reports.extend(result.runs.into_iter().map(|(report, _)| report));
    }
    reports
}
