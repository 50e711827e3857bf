//! Helpers shared by the suite.

use std::ops::Range;
use std::path::{Path, PathBuf};

use sluice_engine::graph::ExecutionMode;
use sluice_sim::replay::write_failure;
use sluice_sim::report::RunReport;
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

/// The seeds to run: `SLUICE_SEED=N` means just seed N (to rerun one failure), `SLUICE_SEEDS=N`
/// means `1..N+1` (a deeper sweep), otherwise the scenario's own.
pub fn seeds(scenario: &Scenario) -> Range<u64> {
    if let Ok(seed) = std::env::var("SLUICE_SEED") {
        let seed: u64 = seed.trim().parse().expect("SLUICE_SEED is a seed, a number");
        return seed..seed + 1;
    }
    match std::env::var("SLUICE_SEEDS") {
        Ok(count) => 1..count.parse::<u64>().expect("SLUICE_SEEDS is a number") + 1,
        Err(_) => scenario.seeds.clone(),
    }
}

/// `SLUICE_SEED` if set, else `range`: the seeds of a test that picks its own.
pub fn seeds_in(range: Range<u64>) -> Range<u64> {
    match std::env::var("SLUICE_SEED") {
        Ok(seed) => {
            let seed: u64 = seed.trim().parse().expect("SLUICE_SEED is a seed, a number");
            seed..seed + 1
        }
        Err(_) => range,
    }
}

/// `SLUICE_SEED` if set, else `seed`: the seed of a test that runs one it picked.
pub fn seed_or(seed: u64) -> u64 {
    seeds_in(seed..seed + 1).start
}

/// Asserts that one run passed every check; else writes its replay file and panics with the
/// commands that rerun it.
pub fn assert_passes(scenario: &Scenario, report: &RunReport, what: &str) {
    let failures = sluice_sim::check::check_run(report);
    if failures.is_empty() {
        return;
    }
    let result = sluice_sim::seed::SeedResult {
        seed: report.seed,
        runs: vec![(report.clone(), sluice_sim::check::Verdict::Fail(failures.clone()))],
        agreement: None,
        compared: None,
        determinism: Vec::new(),
    };
    let path = write_failure(&workspace().join("failures"), scenario, &result)
        .map_or_else(|error| format!("(cannot write a replay file: {error})"), |path| path.display().to_string());
    panic!("{what}, seed {}: {failures:?}\n{}", report.seed, rerun_commands(report.seed, &path));
}

/// Whether `SLUICE_SEED` or `SLUICE_SEEDS` chose the seeds instead of the scenario.
pub fn seeds_overridden() -> bool {
    std::env::var_os("SLUICE_SEED").is_some() || std::env::var_os("SLUICE_SEEDS").is_some()
}

/// The commands that rerun a failed seed: this test with only that seed, and its replay file.
pub fn rerun_commands(seed: u64, replay_file: &str) -> String {
    let current = std::thread::current();
    let test = current.name().filter(|name| *name != "main").unwrap_or("<test>");
    format!(
        "    rerun:  SLUICE_SEED={seed} cargo test -p sluice-sim --test it -- --exact {test}\n    \
         replay: cargo run --release -p sluice-sim -- replay {replay_file}"
    )
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
                    failures.push(format!("seed {seed}{mode}: {failure}\n{}", rerun_commands(seed, &path)));
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
    for seed in seeds(scenario) {
        let result = run_seed(scenario, seed, modes, DeterminismCheck::Off);
        if result.outcome() != SeedOutcome::Passed {
            let path = write_failure(&workspace().join("failures"), scenario, &result).map_or_else(
                |error| format!("(cannot write a replay file: {error})"),
                |path| path.display().to_string(),
            );
            panic!("seed {seed} of `{}`: {:?}\n{}", scenario.name, result.failures(), rerun_commands(seed, &path));
        }
        reports.extend(result.runs.into_iter().map(|(report, _)| report));
    }
    reports
}

/// Says which run an assertion is about, and how to run it again: `seed N` and, when displayed
/// (only when the assertion fails), the command that reruns the test with that seed alone and a
/// replay file of the run with the command that shows its trace.
pub struct Context<'a>(&'a RunReport);

/// See [`Context`]: `assert!(…, "{}: …", context(&report))`.
pub fn context(report: &RunReport) -> Context<'_> {
    Context(report)
}

impl std::fmt::Display for Context<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let report = self.0;
        let current = std::thread::current();
        let test = current.name().filter(|name| *name != "main").unwrap_or("<test>");
        write!(
            f,
            "seed {} ({}; rerun: SLUICE_SEED={} cargo test -p sluice-sim --test it -- --exact {test}",
            report.seed, report.mode, report.seed
        )?;
        let why = format!("{test}: an assertion about seed {} in {} mode failed", report.seed, report.mode);
        match sluice_sim::replay::write_seed(&workspace().join("failures"), &report.source, report.seed, &why) {
            Ok(path) => write!(
                f,
                "; trace: cargo run --release -p sluice-sim -- run {} --mode {} --print-trace)",
                path.display(),
                report.mode
            ),
            Err(error) => write!(f, "; cannot write a replay file: {error})"),
        }
    }
}
