//! Comparing exchange modes: what one run cost, and the table `sluice compare` prints.
//!
//! A scenario runs as several [`Variant`]s: batch mode under each exchange mode, and streaming.
//! Each run comes down to [`RunMetrics`], computed from its trace alone:
//!
//! - the makespan (the report's simulated time to the job's end);
//! - slot-time: the sum over slots of the time they were occupied. A slot is occupied from the
//!   first `TaskDeployed` into it until the last of the tasks deployed into it finished (the
//!   JobMaster frees a slot when it empties); a later deployment into the freed slot starts a
//!   new occupancy. A job restart, recovery or end closes every occupancy of older attempts;
//! - the bytes of blocking partitions written to and read from disk (`TaskFinished` sums);
//! - the peak number of slots occupied at once.
//!
//! A [`Summary`] averages a variant's runs over seeds and pairs them, seed by seed, with the
//! baseline (batch, all-edges-blocking): the mean relative makespan change and how many seeds
//! got faster.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

use sluice_engine::failover::FailoverStrategy;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph, ExecutionMode};
use sluice_engine::scheduler::SchedulingStrategy;
use sluice_engine::trace::{TraceEvent, parse_subtask};

use crate::recovery::{RecoveryMetrics, recovery_metrics};
use crate::report::RunReport;
use crate::scenario::Scenario;
use crate::trace::TraceRecord;
use crate::words::size;

/// A mode, the exchange mode and the failover strategy it runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Variant {
    /// Streaming or batch.
    pub mode: ExecutionMode,
    /// Which edges are pipelined (always all of them in streaming mode).
    pub exchange_mode: ExchangeMode,
    /// Which subtasks a failure restarts.
    pub failover: FailoverStrategy,
}

impl Variant {
    /// What the exchange-mode variants are compared with: batch, all edges blocking.
    pub fn baseline(failover: FailoverStrategy) -> Variant {
        Variant { mode: ExecutionMode::Batch, exchange_mode: ExchangeMode::AllEdgesBlocking, failover }
    }

    /// Batch under every exchange mode (most blocking first), then streaming; the baseline
    /// first.
    pub fn all(failover: FailoverStrategy) -> Vec<Variant> {
        let batch = ExchangeMode::ALL.into_iter().map(|exchange_mode| Variant {
            mode: ExecutionMode::Batch,
            exchange_mode,
            failover,
        });
        let streaming =
            Variant { mode: ExecutionMode::Streaming, exchange_mode: ExchangeMode::AllEdgesPipelined, failover };
        batch.chain([streaming]).collect()
    }

    /// Batch under one exchange mode with restart-all (the baseline, first) and with region
    /// failover.
    pub fn failover_pair(exchange_mode: ExchangeMode) -> Vec<Variant> {
        [FailoverStrategy::RestartAll, FailoverStrategy::Region]
            .into_iter()
            .map(|failover| Variant { mode: ExecutionMode::Batch, exchange_mode, failover })
            .collect()
    }

    /// The scenario run in this variant only. Parallelism decided at runtime (`adaptive_batch`)
    /// needs all edges blocking, so the other variants run with the plan's parallelism.
    pub fn apply(self, scenario: &Scenario) -> Scenario {
        let adaptive_batch = scenario.adaptive_batch.filter(|_| self.exchange_mode == ExchangeMode::AllEdgesBlocking);
        Scenario {
            modes: vec![self.mode],
            exchange_mode: self.exchange_mode,
            adaptive_batch,
            failover_strategy: self.failover,
            ..scenario.clone()
        }
    }

    /// The most slots the job needs at once in this variant.
    pub fn slots_needed(self, scenario: &Scenario) -> Result<u32, String> {
        let plan = scenario.job().plan(&scenario.job_params(), self.apply(scenario).job_config(self.mode))?;
        Ok(SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan))).slots_needed_at_once())
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.mode, self.exchange_mode, self.failover)
    }
}

/// What one run cost; see the module doc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunMetrics {
    /// Simulated time to the job's end.
    pub makespan: Duration,
    /// The job's own time ([`job_time`]): what a simulated and a real run can be held against.
    pub job_time: Duration,
    /// Sum over slots of the time they were occupied.
    pub slot_time: Duration,
    /// Bytes of blocking partitions written to disk.
    pub disk_bytes_written: u64,
    /// Bytes of blocking partitions read from disk.
    pub disk_bytes_read: u64,
    /// The most slots occupied at once.
    pub peak_slots: usize,
    /// What recovering from failures cost.
    pub recovery: RecoveryMetrics,
}

/// The metrics of a run.
pub fn run_metrics(report: &RunReport) -> RunMetrics {
    trace_metrics(&report.trace, report.makespan)
}

/// The metrics of a trace whose job took `makespan`.
pub fn trace_metrics(trace: &[TraceRecord], makespan: Duration) -> RunMetrics {
    let occupancies = slot_occupancies(trace);
    let (disk_bytes_read, disk_bytes_written) = disk_bytes(trace);
    RunMetrics {
        makespan,
        job_time: job_time(trace).unwrap_or(makespan),
        slot_time: slot_time(&occupancies),
        disk_bytes_written,
        disk_bytes_read,
        peak_slots: peak_slots(&occupancies),
        recovery: recovery_metrics(trace),
    }
}

/// The job's own time: from the JobMaster's acknowledging its submission to the job's end, as
/// the trace of a simulated or a real run says. A cluster's start (processes and connections
/// in a real run, the simulation's first steps) is not in it. `None` if the job did not end.
pub fn job_time(trace: &[TraceRecord]) -> Option<Duration> {
    let acknowledged = trace.iter().find(|record| matches!(record.event, TraceEvent::SubmissionAcknowledged { .. }))?;
    let finished = trace.iter().rev().find(|record| matches!(record.event, TraceEvent::JobFinished { .. }))?;
    finished.time.checked_sub(acknowledged.time)
}

/// One slot occupied without a break, by tasks of one job attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotOccupancy {
    /// The job attempt.
    pub attempt: u32,
    /// The slot, as `tm-N/sM`.
    pub slot: String,
    /// When the first task was deployed into it.
    pub start: Duration,
    /// When its last task finished (or its attempt ended).
    pub end: Duration,
}

/// A slot being occupied: since when, and by which subtasks (vertex, subtask).
struct OpenOccupancy {
    start: Duration,
    tasks: BTreeSet<(u32, u32)>,
}

/// Occupancies not yet closed, by (attempt, slot), and the slot of each deployed task.
#[derive(Default)]
struct Occupancies {
    open: BTreeMap<(u32, String), OpenOccupancy>,
    slot_of_task: BTreeMap<(u32, u32, u32), String>,
    closed: Vec<SlotOccupancy>,
}

impl Occupancies {
    fn deploy(&mut self, time: Duration, attempt: u32, task: (u32, u32), slot: &str) {
        let open = self
            .open
            .entry((attempt, slot.to_string()))
            .or_insert_with(|| OpenOccupancy { start: time, tasks: BTreeSet::new() });
        open.tasks.insert(task);
        self.slot_of_task.insert((attempt, task.0, task.1), slot.to_string());
    }

    fn finish(&mut self, time: Duration, attempt: u32, task: (u32, u32)) {
        let Some(slot) = self.slot_of_task.remove(&(attempt, task.0, task.1)) else { return };
        let key = (attempt, slot);
        let Some(open) = self.open.get_mut(&key) else { return };
        open.tasks.remove(&task);
        if open.tasks.is_empty() {
            self.close(time, |candidate| *candidate == key);
        }
    }

    fn close(&mut self, time: Duration, which: impl Fn(&(u32, String)) -> bool) {
        let keys: Vec<(u32, String)> = self.open.keys().filter(|key| which(key)).cloned().collect();
        for key in keys {
            let open = self.open.remove(&key).expect("a key just listed");
            self.slot_of_task.retain(|task, _| task.0 != key.0 || !open.tasks.contains(&(task.1, task.2)));
            self.closed.push(SlotOccupancy { attempt: key.0, slot: key.1, start: open.start, end: time });
        }
    }
}

/// Every slot occupancy of a trace, in the order they ended; see the module doc.
pub fn slot_occupancies(trace: &[TraceRecord]) -> Vec<SlotOccupancy> {
    let mut occupancies = Occupancies::default();
    for record in trace {
        let time = record.time;
        match &record.event {
            TraceEvent::TaskDeployed { attempt, vertex, subtask, slot } => {
                occupancies.deploy(time, *attempt, (*vertex, *subtask), slot);
            }
            TraceEvent::TaskFinished { attempt, vertex, subtask, .. } => {
                occupancies.finish(time, *attempt, (*vertex, *subtask));
            }
            TraceEvent::JobRestarting { attempt, .. } | TraceEvent::JobRecovered { attempt, .. } => {
                occupancies.close(time, |key| key.0 < *attempt);
            }
            // The restarted regions' running tasks are cancelled: their slots free up.
            TraceEvent::RegionsRestarting { attempt, subtasks, .. } => {
                for (vertex, subtask) in subtasks.iter().filter_map(|text| parse_subtask(text)) {
                    let cancelled: Vec<u32> = occupancies
                        .slot_of_task
                        .keys()
                        .filter(|key| key.0 < *attempt && key.1 == vertex && key.2 == subtask)
                        .map(|key| key.0)
                        .collect();
                    for old in cancelled {
                        occupancies.finish(time, old, (vertex, subtask));
                    }
                }
            }
            TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. } => occupancies.close(time, |_| true),
            _ => {}
        }
    }
    let last = trace.last().map_or(Duration::ZERO, |record| record.time);
    occupancies.close(last, |_| true);
    occupancies.closed
}

/// The total time slots were occupied.
pub fn slot_time(occupancies: &[SlotOccupancy]) -> Duration {
    occupancies.iter().map(|occupancy| occupancy.end - occupancy.start).sum()
}

/// The most slots occupied at the same time (a slot freed at the instant another is taken
/// counts once).
pub fn peak_slots(occupancies: &[SlotOccupancy]) -> usize {
    let mut changes: Vec<(Duration, i64)> =
        occupancies.iter().flat_map(|occupancy| [(occupancy.start, 1), (occupancy.end, -1)]).collect();
    changes.sort();
    let (mut current, mut peak) = (0_i64, 0_i64);
    for (_, change) in changes {
        current += change;
        peak = peak.max(current);
    }
    peak as usize
}

/// Bytes of blocking partitions read from and written to disk: (read, written).
pub fn disk_bytes(trace: &[TraceRecord]) -> (u64, u64) {
    trace.iter().fold((0, 0), |(read, written), record| match &record.event {
        TraceEvent::TaskFinished { disk_bytes_read, disk_bytes_written, .. } => {
            (read + disk_bytes_read, written + disk_bytes_written)
        }
        _ => (read, written),
    })
}

/// A variant's runs against the baseline's, paired by seed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Paired {
    /// Mean over seeds of (makespan − baseline makespan) / baseline makespan.
    pub mean_relative_change: f64,
    /// Seeds whose makespan was shorter than the baseline's.
    pub improved: usize,
    /// Seeds in both.
    pub seeds: usize,
}

/// A variant's runs, averaged over seeds.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// The variant.
    pub variant: Variant,
    /// Runs averaged.
    pub runs: usize,
    /// Mean makespan.
    pub makespan: Duration,
    /// Mean slot-time.
    pub slot_time: Duration,
    /// Mean bytes written to disk.
    pub disk_bytes_written: f64,
    /// Mean bytes read from disk.
    pub disk_bytes_read: f64,
    /// Mean peak slots.
    pub peak_slots: f64,
    /// Mean subtasks restarted.
    pub subtasks_restarted: f64,
    /// Mean records recomputed.
    pub records_recomputed: f64,
    /// Mean simulated time spent recovering.
    pub recovery_time: Duration,
    /// Against the baseline; `None` for the baseline itself or when no seed is in both.
    pub paired: Option<Paired>,
    /// This is the baseline.
    pub is_baseline: bool,
}

/// Averages a variant's runs (by seed) and pairs them with the baseline's.
pub fn summarize(
    variant: Variant,
    runs: &BTreeMap<u64, RunMetrics>,
    baseline: (Variant, Option<&BTreeMap<u64, RunMetrics>>),
) -> Summary {
    let is_baseline = variant == baseline.0;
    let count = runs.len().max(1);
    let mean = |value: fn(&RunMetrics) -> f64| runs.values().map(value).sum::<f64>() / count as f64;
    Summary {
        variant,
        runs: runs.len(),
        makespan: Duration::from_secs_f64(mean(|metrics| metrics.makespan.as_secs_f64())),
        slot_time: Duration::from_secs_f64(mean(|metrics| metrics.slot_time.as_secs_f64())),
        disk_bytes_written: mean(|metrics| metrics.disk_bytes_written as f64),
        disk_bytes_read: mean(|metrics| metrics.disk_bytes_read as f64),
        peak_slots: mean(|metrics| metrics.peak_slots as f64),
        subtasks_restarted: mean(|metrics| metrics.recovery.subtasks_restarted as f64),
        records_recomputed: mean(|metrics| metrics.recovery.records_recomputed as f64),
        recovery_time: Duration::from_secs_f64(mean(|metrics| metrics.recovery.recovery_time.as_secs_f64())),
        paired: baseline.1.filter(|_| !is_baseline).and_then(|baseline| pair(runs, baseline)),
        is_baseline,
    }
}

fn pair(runs: &BTreeMap<u64, RunMetrics>, baseline: &BTreeMap<u64, RunMetrics>) -> Option<Paired> {
    let changes: Vec<f64> = runs
        .iter()
        .filter_map(|(seed, metrics)| {
            let base = baseline.get(seed)?.makespan.as_secs_f64();
            (base > 0.0).then(|| (metrics.makespan.as_secs_f64() - base) / base)
        })
        .collect();
    if changes.is_empty() {
        return None;
    }
    Some(Paired {
        mean_relative_change: changes.iter().sum::<f64>() / changes.len() as f64,
        improved: changes.iter().filter(|change| **change < 0.0).count(),
        seeds: changes.len(),
    })
}

/// The comparison table, one row per summary.
pub fn render_table(summaries: &[Summary]) -> String {
    let mut table = format!(
        "{:<10} {:<26} {:<12} {:>4} {:>10} {:>11} {:>9} {:>11} {:>13} {:>11} {:>6} {:>9} {:>11} {:>9}\n",
        "mode",
        "exchange mode",
        "failover",
        "runs",
        "makespan",
        "vs baseline",
        "faster",
        "slot-time",
        "disk written",
        "disk read",
        "peak",
        "restarted",
        "recomputed",
        "recovery"
    );
    for summary in summaries {
        let (change, faster) = match summary.paired {
            Some(paired) => (
                format!("{:+.1}%", paired.mean_relative_change * 100.0),
                format!("{}/{}", paired.improved, paired.seeds),
            ),
            None if summary.is_baseline => ("baseline".to_string(), "-".to_string()),
            None => ("n/a".to_string(), "-".to_string()),
        };
        let _ = writeln!(
            table,
            "{:<10} {:<26} {:<12} {:>4} {:>9.3}s {change:>11} {faster:>9} {:>10.3}s {:>13} {:>11} {:>6.1} {:>9.1} {:>11.0} {:>8.3}s",
            summary.variant.mode.as_str(),
            summary.variant.exchange_mode.as_str(),
            summary.variant.failover.to_string(),
            summary.runs,
            summary.makespan.as_secs_f64(),
            summary.slot_time.as_secs_f64(),
            size(summary.disk_bytes_written.round() as u64),
            size(summary.disk_bytes_read.round() as u64),
            summary.peak_slots,
            summary.subtasks_restarted,
            summary.records_recomputed,
            summary.recovery_time.as_secs_f64(),
        );
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(milliseconds: u64, event: TraceEvent) -> TraceRecord {
        TraceRecord { time: Duration::from_millis(milliseconds), node: "jm".to_string(), event }
    }

    fn deployed(milliseconds: u64, attempt: u32, vertex: u32, subtask: u32, slot: &str) -> TraceRecord {
        at(milliseconds, TraceEvent::TaskDeployed { attempt, vertex, subtask, slot: slot.to_string() })
    }

    fn finished(milliseconds: u64, attempt: u32, vertex: u32, subtask: u32, disk: (u64, u64)) -> TraceRecord {
        let (disk_bytes_read, disk_bytes_written) = disk;
        at(
            milliseconds,
            TraceEvent::TaskFinished {
                attempt,
                vertex,
                subtask,
                records_in: 0,
                records_out: 0,
                disk_bytes_read,
                disk_bytes_written,
                backpressure_micros: 0,
                peak_buffered_bytes: 0,
                work: Default::default(),
            },
        )
    }

    fn milliseconds(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    /// Two stages: a region of two slots shared by v0 and v1, then v2 in a freed slot.
    fn two_stages() -> Vec<TraceRecord> {
        vec![
            deployed(10, 0, 0, 0, "tm-0/s0"),
            deployed(10, 0, 1, 0, "tm-0/s0"),
            deployed(10, 0, 0, 1, "tm-1/s0"),
            deployed(10, 0, 1, 1, "tm-1/s0"),
            finished(20, 0, 0, 0, (0, 0)),
            finished(30, 0, 1, 0, (0, 100)),
            finished(40, 0, 0, 1, (0, 0)),
            finished(50, 0, 1, 1, (0, 200)),
            deployed(60, 0, 2, 0, "tm-0/s0"),
            finished(90, 0, 2, 0, (300, 0)),
            at(90, TraceEvent::JobFinished { restarts: 0 }),
        ]
    }

    #[test]
    fn a_slot_is_occupied_from_its_first_deployment_to_its_last_task() {
        let occupancies = slot_occupancies(&two_stages());
        let spans: Vec<(&str, u64, u64)> = occupancies
            .iter()
            .map(|occupancy| {
                (occupancy.slot.as_str(), occupancy.start.as_millis() as u64, occupancy.end.as_millis() as u64)
            })
            .collect();
        assert_eq!(spans, vec![("tm-0/s0", 10, 30), ("tm-1/s0", 10, 50), ("tm-0/s0", 60, 90)]);
        assert_eq!(slot_time(&occupancies), milliseconds(20 + 40 + 30));
        assert_eq!(peak_slots(&occupancies), 2);
    }

    #[test]
    fn disk_bytes_sum_over_finished_tasks() {
        assert_eq!(disk_bytes(&two_stages()), (300, 300));
        let metrics = trace_metrics(&two_stages(), milliseconds(95));
        assert_eq!(
            metrics,
            RunMetrics {
                makespan: milliseconds(95),
                job_time: milliseconds(95),
                slot_time: milliseconds(90),
                disk_bytes_written: 300,
                disk_bytes_read: 300,
                peak_slots: 2,
                recovery: RecoveryMetrics::default(),
            }
        );
    }

    #[test]
    fn the_jobs_time_runs_from_its_acknowledged_submission_to_its_end() {
        assert_eq!(job_time(&two_stages()), None, "no acknowledged submission");
        let mut trace = vec![at(4, TraceEvent::SubmissionAcknowledged { job_id: "job".into() })];
        trace.extend(two_stages());
        assert_eq!(job_time(&trace), Some(milliseconds(86)));
        assert_eq!(trace_metrics(&trace, milliseconds(95)).job_time, milliseconds(86));
        trace.pop();
        assert_eq!(job_time(&trace), None, "the job did not end");
    }

    #[test]
    fn a_restart_ends_the_old_attempts_occupancies() {
        let trace = vec![
            deployed(10, 0, 0, 0, "tm-0/s0"),
            deployed(10, 0, 0, 1, "tm-1/s0"),
            finished(15, 0, 0, 1, (0, 0)),
            at(20, TraceEvent::TaskFailed { attempt: 0, vertex: 0, subtask: 0, reason: "crash".into() }),
            at(
                20,
                TraceEvent::JobRestarting { attempt: 1, delay_ms: 10, cause: "crash".into(), regions: 2, subtasks: 2 },
            ),
            // A late report of the old attempt changes nothing.
            finished(25, 0, 0, 0, (0, 0)),
            deployed(30, 1, 0, 0, "tm-0/s0"),
            deployed(30, 1, 0, 1, "tm-2/s0"),
            finished(40, 1, 0, 0, (0, 0)),
        ];
        let occupancies = slot_occupancies(&trace);
        let spans: Vec<(u32, &str, u64, u64)> = occupancies
            .iter()
            .map(|occupancy| {
                (
                    occupancy.attempt,
                    occupancy.slot.as_str(),
                    occupancy.start.as_millis() as u64,
                    occupancy.end.as_millis() as u64,
                )
            })
            .collect();
        // tm-2/s0 never finished: the trace's end closes it.
        assert_eq!(
            spans,
            vec![(0, "tm-1/s0", 10, 15), (0, "tm-0/s0", 10, 20), (1, "tm-0/s0", 30, 40), (1, "tm-2/s0", 30, 40)]
        );
        assert_eq!(peak_slots(&occupancies), 2);
    }

    #[test]
    fn a_slot_handed_over_at_one_instant_counts_once() {
        let trace = vec![
            deployed(0, 0, 0, 0, "tm-0/s0"),
            finished(10, 0, 0, 0, (0, 0)),
            deployed(10, 0, 1, 0, "tm-0/s1"),
            finished(20, 0, 1, 0, (0, 0)),
        ];
        assert_eq!(peak_slots(&slot_occupancies(&trace)), 1);
        assert_eq!(peak_slots(&[]), 0);
        assert_eq!(slot_occupancies(&[]), vec![]);
    }

    fn metrics(makespan: u64) -> RunMetrics {
        RunMetrics { makespan: milliseconds(makespan), slot_time: milliseconds(makespan * 2), ..RunMetrics::default() }
    }

    #[test]
    fn summaries_average_and_pair_by_seed() {
        let baseline: BTreeMap<u64, RunMetrics> = [(1, metrics(100)), (2, metrics(200)), (3, metrics(400))].into();
        let pipelined: BTreeMap<u64, RunMetrics> = [(1, metrics(80)), (2, metrics(220)), (4, metrics(1))].into();
        let variant = Variant {
            mode: ExecutionMode::Batch,
            exchange_mode: ExchangeMode::PointwiseEdgesPipelined,
            failover: FailoverStrategy::Region,
        };
        let base = Variant::baseline(FailoverStrategy::Region);
        let summary = summarize(variant, &pipelined, (base, Some(&baseline)));
        assert_eq!(summary.runs, 3);
        assert!((summary.makespan.as_secs_f64() - 0.301 / 3.0).abs() < 1e-9, "{summary:?}");
        let paired = summary.paired.expect("seeds 1 and 2 are in both");
        assert_eq!((paired.improved, paired.seeds), (1, 2));
        assert!((paired.mean_relative_change - (-0.2 + 0.1) / 2.0).abs() < 1e-9, "{paired:?}");
        let own = summarize(base, &baseline, (base, Some(&baseline)));
        assert_eq!(own.paired, None);
    }

    #[test]
    fn the_table_has_a_row_per_variant_with_the_change() {
        let baseline: BTreeMap<u64, RunMetrics> = [(1, metrics(100))].into();
        let faster: BTreeMap<u64, RunMetrics> = [(1, metrics(79))].into();
        let variant = Variant {
            mode: ExecutionMode::Batch,
            exchange_mode: ExchangeMode::AllEdgesPipelined,
            failover: FailoverStrategy::Region,
        };
        let base = Variant::baseline(FailoverStrategy::Region);
        let table = render_table(&[
            summarize(base, &baseline, (base, Some(&baseline))),
            summarize(variant, &faster, (base, Some(&baseline))),
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 3, "{table}");
        assert!(lines[1].starts_with("batch      all-edges-blocking") && lines[1].contains("baseline"), "{table}");
        assert!(
            lines[2].contains("all-edges-pipelined") && lines[2].contains("-21.0%") && lines[2].contains("1/1"),
            "{table}"
        );
    }

    #[test]
    fn runtime_decided_parallelism_stays_with_the_all_blocking_variant() {
        let text = "name: adaptive\njob: tpcds\ncluster: { task_managers: 3, slots_per_task_manager: 2 }\n\
                    adaptive_batch: { target_bytes_per_task: 32768, min_parallelism: 1, max_parallelism: 6 }\n";
        let scenario = Scenario::parse("adaptive", text).unwrap();
        let base = Variant::baseline(FailoverStrategy::Region);
        for variant in Variant::all(FailoverStrategy::Region) {
            let applied = variant.apply(&scenario);
            assert_eq!(applied.modes, vec![variant.mode]);
            assert_eq!(applied.adaptive_batch.is_some(), variant == base, "{variant}");
            assert!(variant.slots_needed(&scenario).unwrap() <= 6, "{variant}");
        }
    }

    #[test]
    fn variants_cover_every_exchange_mode_in_batch_and_streaming_once() {
        let variants = Variant::all(FailoverStrategy::RestartAll);
        assert_eq!(variants.len(), 5);
        assert_eq!(variants[0], Variant::baseline(FailoverStrategy::RestartAll));
        assert_eq!(variants.iter().filter(|variant| variant.mode == ExecutionMode::Streaming).count(), 1);
        assert_eq!(crate::words::size(512), "512 B");
        assert_eq!(crate::words::size(1536), "1.5 KiB");
        assert_eq!(crate::words::size(3 * 1024 * 1024), "3 MiB");
    }
}
