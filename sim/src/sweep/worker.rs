//! The worker side of a sweep: `sluice __worker` runs the seeds its supervisor sends, one at a
//! time, and answers each with its [`SeedRecord`].
//!
//! The protocol is JSON lines over the worker's standard input and output: first a
//! [`WorkerSetup`] (the scenario's text, so that every worker runs exactly what the supervisor
//! loaded even if the file changes meanwhile), then one [`WorkerRequest`] per seed; the worker
//! answers each with one record line and ends at the end of its input. It writes the replay file
//! of every seed that fails a check. Anything else it prints goes to standard error, which the
//! supervisor reads only to say why a worker died.

use std::io::{BufRead, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use sluice_engine::graph::ExecutionMode;

use super::record::{SeedRecord, resident_memory};
use crate::replay::write_failure;
use crate::seed::{DeterminismCheck, SeedOutcome, run_seed};
use sluice_harness::scenario::{JobCatalog, Scenario};

/// What a worker runs: the first line it reads.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct WorkerSetup {
    /// The supervisor's build: a worker of another build (the binary was rebuilt mid-sweep)
    /// refuses to run.
    pub revision: String,
    /// The scenario file's name, for messages.
    pub file: String,
    /// The scenario, as YAML.
    pub scenario: String,
    /// The modes to run each seed in.
    pub modes: Vec<ExecutionMode>,
    /// Where replay files go.
    pub failures: PathBuf,
}

/// One seed to run.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct WorkerRequest {
    /// The seed.
    pub seed: u64,
    /// Run it twice and compare the traces.
    pub determinism: bool,
}

/// Ends this process if its supervisor is gone (it was reparented): a seed that never ends
/// would otherwise outlive the sweep, whose watchdog died with it.
pub fn exit_with_supervisor() {
    let supervisor = std::os::unix::process::parent_id();
    std::thread::spawn(move || {
        loop {
            std::thread::sleep(std::time::Duration::from_millis(500));
            if std::os::unix::process::parent_id() != supervisor {
                std::process::exit(3);
            }
        }
    });
}

/// Serves a supervisor: reads the setup, then runs each requested seed and writes its record.
/// Returns when the input ends; an error if the input is not what a supervisor sends or the
/// output is gone.
pub fn serve(input: impl BufRead, mut output: impl Write, jobs: JobCatalog) -> Result<(), String> {
    let mut lines = input.lines();
    let setup = lines.next().ok_or("no setup line")?.map_err(|error| error.to_string())?;
    let setup: WorkerSetup = serde_json::from_str(&setup).map_err(|error| format!("a bad setup line: {error}"))?;
    if setup.revision != crate::replay::GIT_REVISION {
        return Err(format!(
            "this worker is build {}, its sweep build {}: the binary changed during the sweep",
            crate::replay::GIT_REVISION,
            setup.revision
        ));
    }
    let scenario = Scenario::parse_with(&setup.file, &setup.scenario, jobs).map_err(|error| error.to_string())?;
    for line in lines {
        let line = line.map_err(|error| error.to_string())?;
        let request: WorkerRequest =
            serde_json::from_str(&line).map_err(|error| format!("a bad request line: {error}"))?;
        let record = run(&scenario, &setup, request);
        let json = serde_json::to_string(&record).expect("internal: a seed record serializes");
        writeln!(output, "{json}").and_then(|()| output.flush()).map_err(|error| error.to_string())?;
    }
    Ok(())
}

/// Runs one seed and makes its record, writing its replay file if it failed.
pub fn run(scenario: &Scenario, setup: &WorkerSetup, request: WorkerRequest) -> SeedRecord {
    let determinism = if request.determinism { DeterminismCheck::On } else { DeterminismCheck::Off };
    let result = run_seed(scenario, request.seed, &setup.modes, determinism);
    let replay_file = (result.outcome() == SeedOutcome::Failed)
        .then(|| write_failure(&setup.failures, scenario, &result))
        .and_then(|written| written.map_err(|error| eprintln!("sluice: cannot write a replay file: {error}")).ok())
        .map(|path| path.display().to_string());
    let mut record = SeedRecord::of(&scenario.name, &result, replay_file);
    if let Some((now, peak)) = resident_memory() {
        record.worker_rss_kb = Some(now);
        record.worker_peak_rss_kb = Some(peak);
    }
    record
}
