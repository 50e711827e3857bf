//! One seed of a scenario in every mode, judged: the unit that `run`, `sweep`, `replay`,
//! `shrink` and the test suite all work with.

use sluice_engine::connectors::SinkKind;
use sluice_engine::graph::ExecutionMode;

use crate::runner::run_on;
use sluice_harness::check::{CheckFailure, Verdict, deterministic, judge, modes_agree, outputs_agree};
use sluice_harness::report::RunReport;
use sluice_harness::scenario::Scenario;
use sluice_harness::words::counted;
use sluice_services::txn_store::CommittedView;

/// Whether to run a seed twice and compare traces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeterminismCheck {
    /// Run once.
    Off,
    /// Run twice, compare trace hashes.
    On,
}

/// A seed's runs and what was found.
#[derive(Clone, Debug)]
pub struct SeedResult {
    /// The seed.
    pub seed: u64,
    /// Each mode's run and its verdict.
    pub runs: Vec<(RunReport, Verdict)>,
    /// `streaming == batch`, when both modes ran and passed.
    pub agreement: Option<CheckFailure>,
    /// What `streaming == batch` compared, when it agreed (`on `t` (3 keys)`, and what it left
    /// out and why).
    pub compared: Option<String>,
    /// Determinism failures, by mode.
    pub determinism: Vec<(ExecutionMode, CheckFailure)>,
}

/// A seed's overall outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SeedOutcome {
    /// Every run passed and the modes agreed.
    Passed,
    /// Some run was expected-unrecoverable, and nothing failed.
    ExpectedUnrecoverable,
    /// Something failed.
    Failed,
}

impl SeedResult {
    /// Every failure, with the mode it happened in (`None` for the cross-mode check).
    pub fn failures(&self) -> Vec<(Option<ExecutionMode>, CheckFailure)> {
        let mut failures: Vec<(Option<ExecutionMode>, CheckFailure)> = self
            .runs
            .iter()
            .flat_map(|(report, verdict)| verdict.failures().iter().map(|failure| (Some(report.mode), failure.clone())))
            .collect();
        failures.extend(self.determinism.iter().map(|(mode, failure)| (Some(*mode), failure.clone())));
        failures.extend(self.agreement.iter().map(|failure| (None, failure.clone())));
        failures
    }

    /// The seed's outcome.
    pub fn outcome(&self) -> SeedOutcome {
        if !self.failures().is_empty() {
            SeedOutcome::Failed
        } else if self.runs.iter().any(|(_, verdict)| matches!(verdict, Verdict::ExpectedUnrecoverable(_))) {
            SeedOutcome::ExpectedUnrecoverable
        } else {
            SeedOutcome::Passed
        }
    }
}

/// Runs and judges one seed in each of `modes`.
pub fn run_seed(scenario: &Scenario, seed: u64, modes: &[ExecutionMode], determinism: DeterminismCheck) -> SeedResult {
    if let Some(crash) = &scenario.harness_crash {
        crate::harness_crash::strike(crash, seed);
    }
    let mut runs = Vec::new();
    let mut determinism_failures = Vec::new();
    // Generated once: every mode of a seed reads the same input.
    let input = std::sync::Arc::new(sluice_harness::report::generate_input(scenario, seed));
    for mode in modes {
        let report = run_on(scenario, *mode, seed, std::sync::Arc::clone(&input));
        if determinism == DeterminismCheck::On
            && let Err(failure) = deterministic(&report, &run_on(scenario, *mode, seed, std::sync::Arc::clone(&input)))
        {
            determinism_failures.push((*mode, failure));
        }
        let verdict = judge(&report, scenario);
        runs.push((report, verdict));
    }
    let passed = |mode: ExecutionMode| {
        runs.iter().find(|(report, verdict)| report.mode == mode && *verdict == Verdict::Pass).map(|(report, _)| report)
    };
    let (agreement, compared) = match (passed(ExecutionMode::Streaming), passed(ExecutionMode::Batch)) {
        (Some(streaming), Some(batch)) => match modes_agree_with_late_data(scenario, streaming, batch) {
            Ok(compared) => (None, Some(compared)),
            Err(failure) => (Some(failure), None),
        },
        _ => (None, None),
    };
    SeedResult { seed, runs, agreement, compared, determinism: determinism_failures }
}

/// `streaming == batch`, and what it compared: every table, or, when the streaming run's
/// windows left elements out of windows that had fired (late data), every table but the
/// windowed ones and the late table, which rightly differ from batch's (each mode's windowed
/// tables were held to their reference by `late-data`).
fn modes_agree_with_late_data(
    scenario: &Scenario,
    streaming: &RunReport,
    batch: &RunReport,
) -> Result<String, CheckFailure> {
    let left_out = streaming.late.as_ref().map_or(0, |late| late.elements.len());
    let Some(late) = scenario.job().late.filter(|_| left_out > 0) else {
        modes_agree(streaming, batch)?;
        return Ok(described(&batch.committed, |_| true));
    };
    let compared = |table: &str| !late.windowed.contains(&table) && table != late.table;
    let only = |run: &RunReport| -> CommittedView {
        run.committed
            .iter()
            .filter(|(table, _)| compared(table))
            .map(|(table, view)| (table.clone(), view.clone()))
            .collect()
    };
    outputs_agree("streaming == batch", ("streaming", &only(streaming)), ("batch", &only(batch)), None)?;
    let every_window = streaming.late.as_ref().map_or(0, |late| late.late_for_every_window());
    let rows = |run: &RunReport, table: &str| run.committed.get(table).map_or(0, |view| view.log.len() as u64);
    let windowed: Vec<String> = late
        .windowed
        .iter()
        .map(|table| {
            format!("`{table}` (streaming {}, batch {})", rows(streaming, table), counted(rows(batch, table), "row"))
        })
        .collect();
    Ok(format!(
        "{}; not compared: {}, since streaming left {} out of windows that had fired ({} late for every window); \
         each mode's windowed tables matched their reference",
        described(&batch.committed, compared),
        windowed.join(", "),
        counted(left_out as u64, "element"),
        every_window,
    ))
}

/// The tables of `committed` that `include` names, as `on `t` (3 keys), `u` (5 rows)`.
fn described(committed: &CommittedView, include: impl Fn(&str) -> bool) -> String {
    let tables: Vec<String> = committed
        .iter()
        .filter(|(table, _)| include(table))
        .map(|(table, view)| match view.kind {
            SinkKind::Upsert => format!("`{table}` ({})", counted(view.latest.len() as u64, "key")),
            SinkKind::Append => format!("`{table}` ({})", counted(view.log.len() as u64, "row")),
        })
        .collect();
    if tables.is_empty() { "no table".to_string() } else { format!("on {}", tables.join(", ")) }
}
