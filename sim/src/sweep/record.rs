//! [`SeedRecord`]: what a sweep keeps of one seed, one line of its `--format json` output.
//!
//! A record is small (no trace, no committed rows), so a sweep of millions of seeds keeps
//! constant memory, and it is everything a summary needs, so that the records of several shards
//! merge into the summary one unsharded sweep would have printed. Times are whole microseconds
//! or milliseconds, never floats, so that merged sums are exact.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sluice_engine::graph::ExecutionMode;

use crate::seed::{SeedOutcome, SeedResult};
use sluice_harness::check::Verdict;
use sluice_harness::coverage::Coverage;

/// A seed's outcome, as sweeps count it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// Every run passed and the modes agreed.
    Passed,
    /// Some run was expected-unrecoverable, and nothing failed.
    ExpectedUnrecoverable,
    /// A check failed.
    Failed,
    /// The process running the seed died (a signal, a panic outside the simulation, a memory
    /// limit) or the watchdog killed it: no check could run.
    Crashed,
}

impl Outcome {
    /// The name used in output.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::ExpectedUnrecoverable => "expected-unrecoverable",
            Outcome::Failed => "failed",
            Outcome::Crashed => "crashed",
        }
    }
}

impl From<SeedOutcome> for Outcome {
    fn from(outcome: SeedOutcome) -> Outcome {
        match outcome {
            SeedOutcome::Passed => Outcome::Passed,
            SeedOutcome::ExpectedUnrecoverable => Outcome::ExpectedUnrecoverable,
            SeedOutcome::Failed => Outcome::Failed,
        }
    }
}

/// One run (a seed in one mode), without its trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    /// The mode.
    pub mode: ExecutionMode,
    /// `pass`, `fail` or `expected-unrecoverable`.
    pub verdict: String,
    /// Why it was expected-unrecoverable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unrecoverable: Option<String>,
    /// Rows committed.
    pub rows: u64,
    /// Simulated time from start to the job's end, in microseconds.
    pub makespan_us: u64,
    /// Restarts (see `RecoveryMetrics::restarts`).
    pub restarts: u64,
    /// Wall time of the simulation, in milliseconds.
    pub wall_ms: u64,
    /// The trace hash, in hex.
    pub trace_hash: String,
    /// Positions in the schedule of the faults that never fired.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unfired: Vec<usize>,
    /// The coverage marks it reached, with the fault kinds active at each.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub coverage: Coverage,
}

/// A check that failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureRecord {
    /// The mode it failed in; none for the cross-mode check.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<ExecutionMode>,
    /// The check.
    pub check: String,
    /// What was wrong.
    pub detail: String,
}

/// What a sweep keeps of one seed; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeedRecord {
    /// The scenario's name.
    pub scenario: String,
    /// The seed.
    pub seed: u64,
    /// Its outcome.
    pub outcome: Outcome,
    /// The kind of each fault of the seed's schedule, in schedule order.
    pub faults: Vec<String>,
    /// Each mode's run (none when it crashed).
    #[serde(default)]
    pub runs: Vec<RunRecord>,
    /// The checks that failed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failures: Vec<FailureRecord>,
    /// How it crashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crash: Option<String>,
    /// The replay file written for it, when it failed or crashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay_file: Option<String>,
    /// Wall time spent on it, in milliseconds.
    pub wall_ms: u64,
    /// The worker's resident memory after it, in KiB (Linux only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_rss_kb: Option<u64>,
    /// The worker's peak resident memory so far, in KiB (Linux only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_peak_rss_kb: Option<u64>,
}

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail(_) => "fail",
        Verdict::ExpectedUnrecoverable(_) => "expected-unrecoverable",
    }
}

impl SeedRecord {
    /// The record of a seed that ran; `replay_file` is where its replay file went, if it failed.
    pub fn of(scenario: &str, result: &SeedResult, replay_file: Option<String>) -> SeedRecord {
        let faults =
            result.runs.first().map(|(report, _)| report.schedule.iter().map(|fault| fault.kind.name().to_string()));
        let runs = result
            .runs
            .iter()
            .map(|(report, verdict)| RunRecord {
                mode: report.mode,
                verdict: verdict_name(verdict).to_string(),
                unrecoverable: match verdict {
                    Verdict::ExpectedUnrecoverable(reason) => Some(reason.clone()),
                    _ => None,
                },
                rows: report.records_committed() as u64,
                makespan_us: report.makespan.as_micros() as u64,
                restarts: report.recovery.restarts,
                wall_ms: report.wall_time.as_millis() as u64,
                trace_hash: format!("{:016x}", report.trace_hash),
                unfired: report.unfired_faults(),
                coverage: report.coverage.clone(),
            })
            .collect::<Vec<_>>();
        let failures = result
            .failures()
            .into_iter()
            .map(|(mode, failure)| FailureRecord { mode, check: failure.check.to_string(), detail: failure.detail })
            .collect();
        SeedRecord {
            scenario: scenario.to_string(),
            seed: result.seed,
            outcome: result.outcome().into(),
            faults: faults.map(Iterator::collect).unwrap_or_default(),
            wall_ms: runs.iter().map(|run| run.wall_ms).sum(),
            runs,
            failures,
            crash: None,
            replay_file,
            worker_rss_kb: None,
            worker_peak_rss_kb: None,
        }
    }

    /// The record of a seed whose process crashed.
    pub fn crashed(scenario: &str, seed: u64, faults: Vec<String>, crash: String, wall_ms: u64) -> SeedRecord {
        SeedRecord {
            scenario: scenario.to_string(),
            seed,
            outcome: Outcome::Crashed,
            faults,
            runs: Vec::new(),
            failures: Vec::new(),
            crash: Some(crash),
            replay_file: None,
            wall_ms,
            worker_rss_kb: None,
            worker_peak_rss_kb: None,
        }
    }

    /// Simulated time over its runs, in microseconds.
    pub fn simulated_us(&self) -> u64 {
        self.runs.iter().map(|run| run.makespan_us).sum()
    }
}

/// This process's resident memory now and at its peak, in KiB, from `/proc/self/status`
/// (`None` where there is no such file).
pub fn resident_memory() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status.lines().find_map(|line| line.strip_prefix(name)?.trim().strip_suffix("kB")?.trim().parse::<u64>().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
