//! The test API for a job in a user's own crate: build a simulation of it, run its seeds, and
//! assert that every oracle held.
//!
//! ```no_run
//! use sluice_sim::{Oracle, Simulation};
//!
//! // In a user's crate this is its own job (`examples/clickstream` passes `&CLICKSTREAM` and
//! // its CSV file with `.input("clicks", "data/clicks.csv")`).
//! let job = sluice_catalog::find("wordcount").expect("a built-in job");
//! Simulation::of(job)
//!     .param("words", 5_000u64)
//!     .cluster(3, 2)
//!     .random_faults(4, &["tm-crash", "jm-crash", "partition-loss"])
//!     .seeds(1..21)
//!     .oracle(Oracle::SameAtParallelism(1))
//!     .run()
//!     .assert_passed();
//! ```
//!
//! A Flink SQL script is a job too: `Simulation::sql(&["queries/ddl.sql", "queries/q.sql"])?`.
//!
//! A simulation is a scenario built in code ([`Scenario`]: the same fields, defaults and checks
//! as a YAML file's), plus the oracles to hold on every seed. The standard checks of a run
//! always hold (completed, liveness, checkpoint-commits, commits-stay, and exactly-once against
//! the job's reference when it has one); [`Oracle`]s add reference-free ones. A failing seed
//! writes its replay file and prints the `SLUICE_SEED=<seed>` command that reruns just it;
//! `SLUICE_SEED` set runs that seed alone.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use sluice_catalog::{ParamValue, SimJob};
use sluice_engine::checkpoint::CheckpointConfig;
use sluice_engine::connectors::SinkKind;
use sluice_engine::graph::{ExchangeMode, ExecutionMode};

use crate::seed::{DeterminismCheck, SeedOutcome, SeedResult, run_seed};
use sluice_harness::check::{CheckFailure, same_final_output};
use sluice_harness::faults::{Fault, RandomFaults};
use sluice_harness::report::RunReport;
use sluice_harness::scenario::{FileFormat, InputFile, JobCatalog, Scenario, ScriptError, read_script};

/// A check beyond each run's own, for jobs with or without a reference implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Oracle {
    /// Streaming and batch commit the same final output (on by default when both modes run).
    ModesAgree,
    /// Every mode commits the same final output at this parallelism as at the simulation's.
    SameAtParallelism(u32),
    /// Batch commits the same final output under every exchange mode (all-edges-blocking,
    /// forward-edges-pipelined, pointwise-edges-pipelined, all-edges-pipelined).
    EveryExchangeMode,
    /// No row (key and value) is committed twice to any table: for jobs whose rows are unique.
    NoDuplicates,
}

impl fmt::Display for Oracle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Oracle::ModesAgree => f.write_str("streaming == batch"),
            Oracle::SameAtParallelism(parallelism) => write!(f, "same output at parallelism {parallelism}"),
            Oracle::EveryExchangeMode => f.write_str("same output under every exchange mode"),
            Oracle::NoDuplicates => f.write_str("no duplicates"),
        }
    }
}

/// A simulation of one job; see the module doc.
pub struct Simulation {
    job: &'static SimJob,
    scenario: Scenario,
    oracles: Vec<Oracle>,
    failures: PathBuf,
}

impl Simulation {
    /// A simulation of `job` with a scenario's defaults: 2 TaskManagers of 2 slots, parallelism
    /// 2, both modes, seed 1, no faults.
    pub fn of(job: &'static SimJob) -> Simulation {
        let minimal = format!("name: {}\njob: {}\n", job.name(), job.name());
        let mut scenario: Scenario =
            serde_yaml::from_str(&minimal).expect("internal: a scenario of a name and a job deserializes");
        scenario.jobs = JobCatalog::of([job]).expect("one job has one name");
        Simulation {
            job,
            scenario,
            oracles: vec![Oracle::ModesAgree],
            failures: std::env::temp_dir().join("sluice-failures"),
        }
    }

    /// A simulation of a Flink SQL script: `files` read in order as one script (say, the
    /// tables' DDL, then a query), run as the `sql` job; an error names the SQL file, its line
    /// and column. Named after the last file.
    pub fn sql<P: AsRef<Path>>(files: &[P]) -> Result<Simulation, String> {
        let paths: Vec<PathBuf> = files.iter().map(|file| file.as_ref().to_path_buf()).collect();
        let (script, _) = read_script(&paths).map_err(|error| match error {
            ScriptError::Files(message) => message,
            ScriptError::Sql(error) => error.to_string(),
        })?;
        let name = paths.last().and_then(|path| path.file_stem()).map(|stem| stem.to_string_lossy().into_owned());
        Ok(Simulation::of(&sluice_catalog::sql::SQL)
            .name(name.as_deref().unwrap_or("sql"))
            .param("script", script.as_str()))
    }

    /// The simulation of a scenario file whose job is `job`.
    pub fn from_scenario(job: &'static SimJob, path: impl AsRef<Path>) -> Result<Simulation, String> {
        let jobs = JobCatalog::of([job])?;
        let scenario = Scenario::load_with(path.as_ref(), jobs).map_err(|error| error.to_string())?;
        Ok(Simulation { scenario, ..Simulation::of(job) })
    }

    /// Its name, in reports and replay file names (the job's name unless set).
    pub fn name(mut self, name: &str) -> Simulation {
        self.scenario.name = name.to_string();
        self
    }

    /// Reads `file` (relative to the current directory: a crate's own, under `cargo test`) as
    /// the job's input `input`, in the format the job declares for it.
    pub fn input(mut self, input: &str, file: impl AsRef<Path>) -> Simulation {
        let format = match self.job.definition.input(input).map(|spec| spec.format.name()) {
            Ok("lines") => FileFormat::Lines,
            _ => FileFormat::Csv,
        };
        let file = InputFile { file: file.as_ref().to_path_buf(), format, contents: Default::default() };
        self.scenario.input.insert(input.to_string(), file);
        self
    }

    /// Sets a job parameter: a whole number, or text (durations as `"200ms"`).
    pub fn param(mut self, name: &str, value: impl Into<ParamValue>) -> Simulation {
        self.scenario.params.insert(name.to_string(), value.into());
        self
    }

    /// TaskManagers and slots per TaskManager.
    pub fn cluster(mut self, task_managers: u32, slots_per_task_manager: u32) -> Simulation {
        self.scenario.cluster.task_managers = task_managers;
        self.scenario.cluster.slots_per_task_manager = slots_per_task_manager;
        self
    }

    /// Default parallelism of the job's operators.
    pub fn parallelism(mut self, parallelism: u32) -> Simulation {
        self.scenario.parallelism = parallelism;
        self
    }

    /// The modes each seed runs in.
    pub fn modes(mut self, modes: &[ExecutionMode]) -> Simulation {
        self.scenario.modes = modes.to_vec();
        self
    }

    /// Which exchanges batch mode pipelines.
    pub fn exchange_mode(mut self, exchange_mode: ExchangeMode) -> Simulation {
        self.scenario.exchange_mode = exchange_mode;
        self
    }

    /// Streaming checkpoints every `interval`.
    pub fn checkpoints(mut self, interval: Duration) -> Simulation {
        self.scenario.checkpoints = Some(CheckpointConfig::every(interval));
        self
    }

    /// How often watermark generators emit, in simulated time (200 ms unless set).
    pub fn watermark_interval(mut self, interval: Duration) -> Simulation {
        self.scenario.watermark_interval = Some(interval);
        self
    }

    /// An explicit fault, on every seed.
    pub fn fault(mut self, fault: Fault) -> Simulation {
        self.scenario.faults.push(fault);
        self
    }

    /// Faults in YAML, as a scenario's `faults:` list writes them (`- { at: 150ms, kill: tm-1 }`).
    pub fn faults_yaml(mut self, yaml: &str) -> Result<Simulation, String> {
        let text = format!("name: faults\njob: {}\nfaults:\n{yaml}", self.job.name());
        let parsed: Scenario = serde_yaml::from_str(&text).map_err(|error| format!("faults: {error}"))?;
        self.scenario.faults.extend(parsed.faults);
        Ok(self)
    }

    /// `count` random faults a seed, of `kinds` (as scenarios name them: `tm-crash`, `jm-crash`,
    /// `partition-loss`, …), landing in each run: at shares of the seed's fault-free makespan
    /// in each mode, or at its tasks' states and checkpoints.
    pub fn random_faults(mut self, count: u32, kinds: &[&str]) -> Simulation {
        let kinds = kinds.iter().map(ToString::to_string).collect();
        self.scenario.random_faults = Some(RandomFaults { count, kinds, window: None });
        self
    }

    /// Times random faults blind instead, within `window` of the submission.
    pub fn fault_window(mut self, window: Duration) -> Simulation {
        if let Some(random) = &mut self.scenario.random_faults {
            random.window = Some(window);
        }
        self
    }

    /// The seeds to run (`SLUICE_SEED` overrides them with one).
    pub fn seeds(mut self, seeds: Range<u64>) -> Simulation {
        self.scenario.seeds = seeds;
        self
    }

    /// Adds an oracle.
    pub fn oracle(mut self, oracle: Oracle) -> Simulation {
        if !self.oracles.contains(&oracle) {
            self.oracles.push(oracle);
        }
        self
    }

    /// Where failing seeds' replay files go (the system's temporary directory unless set).
    pub fn failures_dir(mut self, directory: impl AsRef<Path>) -> Simulation {
        self.failures = directory.as_ref().to_path_buf();
        self
    }

    /// The scenario as it will run, checked as a scenario file is: an error names the field.
    pub fn scenario(&self) -> Result<Scenario, String> {
        let text = self.scenario.to_yaml();
        let here = format!("{}/simulation.yaml", std::env::current_dir().map_err(|error| error.to_string())?.display());
        Scenario::parse_with(&here, &text, self.scenario.jobs.clone()).map_err(|error| {
            let field = error.field.map(|field| format!("{field}: ")).unwrap_or_default();
            format!("simulation of `{}`: {field}{}", self.job.name(), error.message)
        })
    }

    /// Runs every seed and checks every oracle. Panics if the simulation itself is invalid (a
    /// test's mistake), naming what is wrong.
    pub fn run(&self) -> SimulationReport {
        let mut scenario = self.scenario().unwrap_or_else(|error| panic!("{error}"));
        if let Some(seed) = seed_override() {
            scenario.seeds = seed..seed + 1;
        }
        let variants = self.variants(&scenario).unwrap_or_else(|error| panic!("{error}"));
        let mut seeds = Vec::new();
        for seed in scenario.seeds.clone() {
            let mut result = run_seed(&scenario, seed, &scenario.modes, DeterminismCheck::Off);
            let mut extra = self.reference_free(&result);
            for (oracle, variant) in &variants {
                extra.extend(variant_agrees(*oracle, variant, seed, &result));
            }
            if !self.oracles.contains(&Oracle::ModesAgree) {
                result.agreement = None;
            }
            let replay = (!extra.is_empty() || result.outcome() == SeedOutcome::Failed)
                .then(|| self.write_replay(&scenario, &result, &extra));
            seeds.push(SeedReport { result, extra, replay });
        }
        SimulationReport { job: self.job.name(), scenario: scenario.name.clone(), seeds }
    }

    /// The reruns the oracles need: (oracle, the scenario at another setting), checked.
    fn variants(&self, scenario: &Scenario) -> Result<Vec<(Oracle, Scenario)>, String> {
        let mut variants = Vec::new();
        for oracle in &self.oracles {
            let changed: Vec<Scenario> = match oracle {
                Oracle::SameAtParallelism(parallelism) => {
                    vec![Scenario { parallelism: *parallelism, ..scenario.clone() }]
                }
                Oracle::EveryExchangeMode => ExchangeMode::ALL
                    .iter()
                    .filter(|mode| **mode != scenario.exchange_mode)
                    .map(|mode| Scenario {
                        exchange_mode: *mode,
                        modes: vec![ExecutionMode::Batch],
                        ..scenario.clone()
                    })
                    .collect(),
                Oracle::ModesAgree | Oracle::NoDuplicates => Vec::new(),
            };
            for variant in changed {
                let text = variant.to_yaml();
                let checked = Scenario::parse_with("variant", &text, variant.jobs.clone())
                    .map_err(|error| format!("oracle `{oracle}` cannot run: {}", error.message))?;
                variants.push((*oracle, checked));
            }
        }
        Ok(variants)
    }

    fn reference_free(&self, result: &SeedResult) -> Vec<CheckFailure> {
        if !self.oracles.contains(&Oracle::NoDuplicates) {
            return Vec::new();
        }
        result.runs.iter().filter_map(|(report, _)| no_duplicates(report).err()).collect()
    }

    fn write_replay(
        &self,
        scenario: &Scenario,
        result: &SeedResult,
        extra: &[CheckFailure],
    ) -> Result<PathBuf, String> {
        let mut result = result.clone();
        if result.failures().is_empty()
            && let Some(failure) = extra.first()
        {
            result.agreement = Some(failure.clone());
        }
        crate::replay::write_failure(&self.failures, scenario, &result)
            .map_err(|error| format!("cannot write a replay file to {}: {error}", self.failures.display()))
    }
}

/// `SLUICE_SEED`, if set to a seed.
fn seed_override() -> Option<u64> {
    let text = std::env::var("SLUICE_SEED").ok()?;
    Some(text.trim().parse().unwrap_or_else(|_| panic!("SLUICE_SEED={text} is not a seed")))
}

/// The same seed of a variant must pass and commit what the main run committed, mode by mode.
fn variant_agrees(oracle: Oracle, variant: &Scenario, seed: u64, main: &SeedResult) -> Vec<CheckFailure> {
    let mut failures = Vec::new();
    for (report, verdict) in &main.runs {
        if !variant.modes.contains(&report.mode) || !verdict.failures().is_empty() {
            continue;
        }
        let other = run_seed(variant, seed, &[report.mode], DeterminismCheck::Off);
        let (other_report, other_verdict) = &other.runs[0];
        let check = oracle_name(oracle);
        if let Some(failure) = other_verdict.failures().first() {
            failures.push(CheckFailure { check, detail: format!("{} failed: {failure}", setting(variant)) });
        } else if other_report.outcome == sluice_harness::report::RunOutcome::Finished
            && report.outcome == sluice_harness::report::RunOutcome::Finished
            && let Err(failure) = same_final_output(check, ("this run", report), (&setting(variant), other_report))
        {
            failures.push(failure);
        }
    }
    failures
}

fn oracle_name(oracle: Oracle) -> &'static str {
    match oracle {
        Oracle::ModesAgree => "streaming == batch",
        Oracle::SameAtParallelism(_) => "same output at another parallelism",
        Oracle::EveryExchangeMode => "same output under every exchange mode",
        Oracle::NoDuplicates => "no duplicates",
    }
}

fn setting(variant: &Scenario) -> String {
    format!("parallelism {}, {}", variant.parallelism, variant.exchange_mode)
}

/// No table of a run holds one row twice.
pub fn no_duplicates(report: &RunReport) -> Result<(), CheckFailure> {
    for (table, view) in &report.committed {
        let mut seen: BTreeMap<(&str, &str), u32> = BTreeMap::new();
        // A deletion is no row: a changelog may delete a key and put the same row again.
        for row in view.log.iter() {
            let Some(value) = row.value else { continue };
            *seen.entry((row.key, value)).or_insert(0) += 1;
        }
        let twice: Vec<String> = seen
            .iter()
            .filter(|(_, times)| **times > 1)
            .take(5)
            .map(|((key, value), times)| format!("{key}={value} ×{times}"))
            .collect();
        if !twice.is_empty() {
            let kind = if view.kind == SinkKind::Upsert { "upsert" } else { "append" };
            return Err(CheckFailure {
                check: "no duplicates",
                detail: format!("{} table `{table}` ({kind}) holds rows twice: {}", report.mode, twice.join(", ")),
            });
        }
    }
    Ok(())
}

/// One seed: its runs, the oracles' failures, and its replay file if it failed.
#[derive(Debug)]
pub struct SeedReport {
    /// The runs and their own checks.
    pub result: SeedResult,
    /// Failures of the simulation's oracles beyond the runs' own.
    pub extra: Vec<CheckFailure>,
    /// The replay file written for it, if it failed.
    pub replay: Option<Result<PathBuf, String>>,
}

impl SeedReport {
    /// Every failure of the seed, with its mode where it has one.
    pub fn failures(&self) -> Vec<String> {
        let own = self.result.failures().into_iter().map(|(mode, failure)| match mode {
            Some(mode) => format!("{mode}: {failure}"),
            None => failure.to_string(),
        });
        own.chain(self.extra.iter().map(ToString::to_string)).collect()
    }
}

/// What a simulation found.
#[derive(Debug)]
pub struct SimulationReport {
    job: &'static str,
    scenario: String,
    /// Every seed, in order.
    pub seeds: Vec<SeedReport>,
}

impl SimulationReport {
    /// Whether every seed passed (expected-unrecoverable ones count as passed).
    pub fn passed(&self) -> bool {
        self.seeds.iter().all(|seed| seed.failures().is_empty())
    }

    /// The seeds that failed.
    pub fn failed_seeds(&self) -> Vec<u64> {
        self.seeds.iter().filter(|seed| !seed.failures().is_empty()).map(|seed| seed.result.seed).collect()
    }

    /// What failed, each seed with its failures, the command that reruns it and its replay file.
    pub fn summary(&self) -> String {
        let failed: Vec<&SeedReport> = self.seeds.iter().filter(|seed| !seed.failures().is_empty()).collect();
        let mut text = format!(
            "simulation `{}` of job `{}`: {} of {} seeds failed\n",
            self.scenario,
            self.job,
            failed.len(),
            self.seeds.len()
        );
        for seed in failed {
            text.push_str(&format!("seed {}:\n", seed.result.seed));
            for failure in seed.failures() {
                text.push_str(&format!("  {}\n", failure.lines().collect::<Vec<_>>().join("\n    ")));
            }
            text.push_str(&format!("  rerun: {}\n", rerun_command(seed.result.seed)));
            match &seed.replay {
                Some(Ok(path)) => {
                    let replay = crate::replay::command("replay", path.display());
                    text.push_str(&format!("  replay file: {} ({replay})\n", path.display()));
                }
                Some(Err(error)) => text.push_str(&format!("  {error}\n")),
                None => {}
            }
        }
        text
    }

    /// Panics with [`SimulationReport::summary`] unless every seed passed.
    #[track_caller]
    pub fn assert_passed(&self) {
        assert!(self.passed(), "{}", self.summary());
    }
}

/// `SLUICE_SEED=<seed> cargo test -p <crate> -- <test> --exact`, for the test running now.
fn rerun_command(seed: u64) -> String {
    let package = std::env::var("CARGO_PKG_NAME").unwrap_or_else(|_| "<crate>".to_string());
    let thread = std::thread::current();
    match thread.name().filter(|name| *name != "main") {
        Some(test) => format!("SLUICE_SEED={seed} cargo test -p {package} -- {test} --exact"),
        None => format!("SLUICE_SEED={seed} cargo test -p {package}"),
    }
}
