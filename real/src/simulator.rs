//! The simulator beside a real run: this build has no madsim simulator, so a simulated run is
//! the `sluice` binary's (`sluice run FILE --seeds SEED --trace TRACE`), its job time read from
//! the trace as a real run's is. `compare`, `failure_curve` and `calibrate` run it.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use sluice_harness::compare::job_time;
use sluice_harness::trace::{TraceRecord, from_json_lines};

/// The job time of `sluice run FILE --seeds SEED --trace TRACE` (one mode: the file's).
pub(crate) fn simulate(sluice: &Path, file: &Path, seed: u64, trace: &Path) -> Result<Duration, String> {
    let run = simulate_run(sluice, file, seed, trace)?;
    if !run.passed {
        return Err(format!("the simulation of {} failed:\n{}", file.display(), run.stdout));
    }
    job_time(&run.trace).ok_or_else(|| format!("{}: the simulated job never ended", trace.display()))
}

/// A run of the `sluice` binary: whether it passed, what it printed, its trace.
pub(crate) struct SimulatedRun {
    pub(crate) passed: bool,
    pub(crate) stdout: String,
    pub(crate) trace: Vec<TraceRecord>,
}

/// Runs `sluice run FILE --seeds SEED --trace TRACE`; an error only if it could not run or
/// left no trace (a run whose checks fail is a [`SimulatedRun`] that did not pass).
pub(crate) fn simulate_run(sluice: &Path, file: &Path, seed: u64, trace: &Path) -> Result<SimulatedRun, String> {
    let output = Command::new(sluice)
        .arg("run")
        .arg(file)
        .arg("--seeds")
        .arg(seed.to_string())
        .arg("--trace")
        .arg(trace)
        .arg("--failures")
        .arg(trace.with_extension("failures"))
        .output()
        .map_err(|error| format!("cannot run {}: {error}", sluice.display()))?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let text = std::fs::read_to_string(trace).map_err(|error| {
        let stderr = String::from_utf8_lossy(&output.stderr);
        format!(
            "{}: {error} (the simulation of {} exited {}: {stderr})",
            trace.display(),
            file.display(),
            output.status
        )
    })?;
    let records = from_json_lines(&text).map_err(|error| format!("{}: {error}", trace.display()))?;
    Ok(SimulatedRun { passed: output.status.success(), stdout, trace: records })
}

/// The `sluice` binary beside this one's build: `target/release/sluice` for
/// `target/real/release/sluice-real`.
pub fn default_sluice() -> PathBuf {
    let this = std::env::current_exe().unwrap_or_default();
    let target = this.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_default();
    target.join("release").join("sluice")
}
