//! What one run of a scenario reports, for one seed in one mode, whoever ran it (the simulation's
//! `sluice_sim::runner` or a real cluster's `sluice_real::local`): how it ended, what it
//! committed, its trace, and the late data that shaped it; and the job's input for a seed.
//!
//! The job's input is generated from the seed (its own `workload` stream) before the run starts,
//! so both modes of one seed read the same input.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use sluice_catalog::{ExpectedOutput, ExternalInput};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::prng::Prng;
use sluice_engine::trace::TraceEvent;

use crate::coverage::Coverage;
use crate::faults::Fault;
use crate::recovery::RecoveryMetrics;
use crate::scenario::Scenario;
use crate::trace::TraceRecord;
use sluice_services::txn_store::CommittedView;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// The job finished.
    Finished,
    /// The JobMaster rejected the job or failed it.
    JobFailed(String),
    /// The job did not finish within the scenario's time limit.
    TimedOut(Duration),
    /// A process panicked: an internal invariant broke.
    Panicked(String),
}

impl fmt::Display for RunOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunOutcome::Finished => f.write_str("finished"),
            RunOutcome::JobFailed(reason) => write!(f, "job failed: {reason}"),
            RunOutcome::TimedOut(limit) => {
                write!(f, "did not finish within {} s of simulated time", limit.as_secs_f64())
            }
            RunOutcome::Panicked(message) => write!(f, "panicked: {message}"),
        }
    }
}

/// What a run's windows left out of windows that had fired, as far as it shaped the committed
/// output ([`crate::late::effective_late_elements`]; none in batch), and what the job's windowed
/// tables must then hold: their reference given those elements, or why the reference could not
/// take them (an element left out of a window the input has no such element in).
#[derive(Clone, Debug)]
pub struct LateOutcome {
    /// The elements, in trace order.
    pub elements: Vec<crate::late::LateElement>,
    /// The windowed tables' expected rows.
    pub windowed: Result<ExpectedOutput, String>,
}

impl LateOutcome {
    /// What a run of a job with late data owes: see the type's doc.
    pub fn of(
        scenario: &Scenario,
        late: &sluice_catalog::LateData,
        input: &ExternalInput,
        trace: &[TraceRecord],
    ) -> LateOutcome {
        let elements = crate::late::effective_late_elements(trace);
        let mut missed = sluice_catalog::LateElements::none();
        for element in &elements {
            for window in &element.missed {
                missed.add(element.element.clone(), *window);
            }
        }
        let windowed = (late.windowed_reference)(&scenario.job_params(), input, &mut missed);
        let windowed = if missed.is_empty() {
            Ok(windowed)
        } else {
            let unasked = missed.unasked();
            Err(format!(
                "{} left out of windows the reference has no such element in: {}",
                crate::words::counted(unasked.len() as u64, "element"),
                unasked.iter().take(5).cloned().collect::<Vec<_>>().join(", ")
            ))
        };
        LateOutcome { elements, windowed }
    }

    /// The elements late for every window (dropped, or sent to the side output).
    pub fn late_for_every_window(&self) -> usize {
        self.elements.iter().filter(|element| element.every_window()).count()
    }
}

/// What a run of a job with late data must commit, given what its windows left out (the
/// trace says): the reference with its windowed tables replaced by their reference over those
/// elements, and the late elements the side output committed in the late table (the
/// `late-data` check holds them to the ones traced); and what was left out. A job without late
/// data owes its reference.
pub fn with_late_data(
    scenario: &Scenario,
    input: &ExternalInput,
    trace: &[TraceRecord],
    committed: &CommittedView,
    expected: Option<ExpectedOutput>,
) -> (Option<ExpectedOutput>, Option<LateOutcome>) {
    let Some(late) = scenario.job().late else { return (expected, None) };
    let outcome = LateOutcome::of(scenario, &late, input, trace);
    let expected = expected.map(|mut tables| {
        if let Ok(windowed) = &outcome.windowed {
            for table in late.windowed {
                if let Some(expectation) = windowed.get(*table) {
                    tables.insert(table.to_string(), expectation.clone());
                }
            }
        }
        let mut rows = committed.get(late.table).map(|table| table.log.to_rows()).unwrap_or_default();
        rows.sort();
        let late_table = sluice_catalog::ExpectedTable {
            kind: sluice_engine::connectors::SinkKind::Append,
            rows,
            updates: sluice_catalog::Updates::Exact,
        };
        tables.insert(late.table.to_string(), late_table);
        tables
    });
    (expected, Some(outcome))
}

/// Everything observed in one run.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario it ran, as given (so that a test can write a replay file of the run).
    pub source: Arc<Scenario>,
    /// The mode.
    pub mode: ExecutionMode,
    /// The seed.
    pub seed: u64,
    /// How it ended.
    pub outcome: RunOutcome,
    /// What the store committed.
    pub committed: CommittedView,
    /// What the reference implementation says must be committed (`None`: the job has none).
    pub expected: Option<ExpectedOutput>,
    /// The fault schedule it ran with (explicit and random faults).
    pub schedule: Vec<Fault>,
    /// What recovering from failures cost.
    pub recovery: RecoveryMetrics,
    /// Simulated time from start to the job's end.
    pub makespan: Duration,
    /// Wall-clock time the simulation took.
    pub wall_time: Duration,
    /// A job with late data ([`sluice_catalog::LateData`]): what its windows left out, and the
    /// windowed tables that makes them owe.
    pub late: Option<LateOutcome>,
    /// The event trace.
    pub trace: Vec<TraceRecord>,
    /// Its canonical hash.
    pub trace_hash: u64,
    /// The engine's coverage marks it reached (none in real mode: processes keep their own).
    pub coverage: Coverage,
    /// The transactions the store held begun and neither committed nor aborted when the run
    /// ended (`None` where the harness cannot see the store's state: real mode).
    pub open_transactions: Option<Vec<String>>,
}

impl RunReport {
    /// Rows committed over all tables.
    pub fn records_committed(&self) -> usize {
        self.committed.values().map(|table| table.log.len()).sum()
    }

    /// Restarts the job took (see [`RecoveryMetrics::restarts`]).
    pub fn restarts(&self) -> u64 {
        self.recovery.restarts
    }

    /// Late elements each window operator dropped, by (vertex, operator): the count each
    /// subtask reported at its end, from its latest attempt (the count is checkpointed).
    pub fn late_dropped(&self) -> BTreeMap<(u32, u32), u64> {
        let mut latest: BTreeMap<(u32, u32, u32), (u32, u64)> = BTreeMap::new();
        for record in &self.trace {
            if let TraceEvent::LateElementsCounted { attempt, vertex, subtask, operator, dropped } = record.event {
                let entry = latest.entry((vertex, operator, subtask)).or_insert((attempt, dropped));
                if attempt >= entry.0 {
                    *entry = (attempt, dropped);
                }
            }
        }
        let mut totals = BTreeMap::new();
        for ((vertex, operator, _), (_, dropped)) in latest {
            *totals.entry((vertex, operator)).or_insert(0) += dropped;
        }
        totals
    }

    /// Positions in the schedule of the faults that never fired in this run.
    pub fn unfired_faults(&self) -> Vec<usize> {
        let fired: std::collections::BTreeSet<usize> = self
            .trace
            .iter()
            .filter_map(|record| match record.event {
                TraceEvent::FaultInjected { index, .. } => Some(index),
                _ => None,
            })
            .collect();
        (0..self.schedule.len()).filter(|index| !fired.contains(index)).collect()
    }
}

/// Timing of the cluster's processes (simulated and real).
#[derive(Clone, Copy, Debug)]
pub struct ClusterTiming {
    /// TaskManager heartbeat interval.
    pub heartbeat_interval: Duration,
    /// Silence after which the JobMaster declares a TaskManager lost.
    pub heartbeat_timeout: Duration,
    /// How long a region may wait for slots it can never get.
    pub slot_request_timeout: Duration,
    /// How long a restarted JobMaster waits for TaskManagers to report the partitions they hold.
    pub worker_recovery_timeout: Duration,
    /// How long a TaskManager without a JobMaster keeps its finished partitions.
    pub partition_grace: Duration,
}

impl Default for ClusterTiming {
    fn default() -> Self {
        ClusterTiming {
            heartbeat_interval: Duration::from_millis(100),
            heartbeat_timeout: Duration::from_secs(1),
            slot_request_timeout: Duration::from_secs(10),
            worker_recovery_timeout: Duration::from_secs(2),
            partition_grace: Duration::from_secs(5),
        }
    }
}

/// The job's input for a seed, the same in every mode: what it generates from the seed, with
/// the scenario's input files in place of the generated files of their inputs.
pub fn generate_input(scenario: &Scenario, seed: u64) -> ExternalInput {
    let generated = match scenario.job().generate_input {
        Some(generate) => generate(&scenario.job_params(), &mut Prng::fork(seed, "workload")),
        None => ExternalInput::default(),
    };
    crate::scenario::inputs::with_files(generated, &scenario.input)
}
