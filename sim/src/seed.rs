//! One seed of a scenario in every mode, judged: the unit that `run`, `sweep`, `replay`,
//! `shrink` and the test suite all work with.

use sluice_engine::graph::ExecutionMode;

use crate::check::{CheckFailure, Verdict, deterministic, judge, modes_agree, outputs_agree};
use crate::external::txn_store::CommittedView;
use crate::runner::{RunReport, run_on};
use crate::scenario::Scenario;

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
        crash.strike(seed);
    }
    let mut runs = Vec::new();
    let mut determinism_failures = Vec::new();
    // Generated once: every mode of a seed reads the same input.
    let input = std::sync::Arc::new(crate::runner::generate_input(scenario, seed));
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
    let agreement = match (passed(ExecutionMode::Streaming), passed(ExecutionMode::Batch)) {
        (Some(streaming), Some(batch)) => modes_agree_with_late_data(scenario, seed, streaming, batch).err(),
        _ => None,
    };
    SeedResult { seed, runs, agreement, determinism: determinism_failures }
}

/// `streaming == batch`; when the streaming run dropped late elements (to the job's late-data
/// side output), against a batch run over the input without them: batch drops nothing, so its
/// windows over that input are what streaming's must be.
fn modes_agree_with_late_data(
    scenario: &Scenario,
    seed: u64,
    streaming: &RunReport,
    batch: &RunReport,
) -> Result<(), CheckFailure> {
    let (Some(late), Some(Ok(without))) = (scenario.job().late, &streaming.without_late) else {
        return modes_agree(streaming, batch);
    };
    let rerun = run_on(scenario, ExecutionMode::Batch, seed, std::sync::Arc::clone(without));
    if let Some(failure) = judge(&rerun, scenario).failures().first() {
        let detail = format!("batch over the input without the late elements failed: {failure}");
        return Err(CheckFailure { check: "streaming == batch", detail });
    }
    let dropped = streaming.committed.get(late.table).map_or(0, |table| table.log.len());
    let other = format!("batch without the {}", crate::words::counted(dropped as u64, "late element"));
    // The windowed tables against batch without the late elements, every other against batch.
    let only = |run: &RunReport, windowed: bool| {
        let tables = run.committed.iter().filter(|(table, _)| late.windowed.contains(&table.as_str()) == windowed);
        tables.map(|(table, view)| (table.clone(), view.clone())).collect()
    };
    let check = "streaming == batch";
    outputs_agree(check, ("streaming", &only(streaming, true)), (&other, &only(&rerun, true)), None)?;
    let rest = |run: &RunReport| -> CommittedView {
        let mut tables: CommittedView = only(run, false);
        tables.remove(late.table);
        tables
    };
    outputs_agree(check, ("streaming", &rest(streaming)), ("batch", &rest(batch)), None)
}
