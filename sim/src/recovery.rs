//! What recovering from failures cost a run, computed from its trace alone.
//!
//! - *subtasks restarted*: deployments of a subtask that had been deployed before (whatever
//!   restarted it: region failover, restart-all, a JobMaster failover, a failed deployment);
//! - *regions restarted*: the started regions each `JobRestarting` and `RegionsRestarting`
//!   restarted;
//! - *records recomputed*: records read by subtask runs that finished and were then thrown away
//!   (the same subtask finished again later);
//! - *recovery time*: simulated time during which some recovery was under way: from a restart
//!   (or a JobMaster's recovery) until every subtask it restarted is running again, or the job
//!   ended; overlapping recoveries count once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sluice_engine::runtime::trace::{TraceEvent, parse_subtask};

use crate::trace::TraceRecord;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryMetrics {
    /// Re-deployments of subtasks.
    pub subtasks_restarted: u64,
    /// Started regions restarted.
    pub regions_restarted: u64,
    /// Records read by finished runs whose results were thrown away.
    pub records_recomputed: u64,
    /// Simulated time spent recovering.
    pub recovery_time: Duration,
}

/// A recovery under way: since when, and the subtasks not running again yet, with the attempt
/// they must run under at least.
struct Pending {
    since: Duration,
    waiting: BTreeSet<(u32, u32)>,
    attempt: u32,
}

/// The recovery metrics of a trace; see the module doc.
pub fn recovery_metrics(trace: &[TraceRecord]) -> RecoveryMetrics {
    let mut metrics = RecoveryMetrics::default();
    let mut deployed: BTreeSet<(u32, u32)> = BTreeSet::new();
    // Per subtask: its current run's attempt and whether it finished, and the records its last
    // finished run read.
    let mut runs: BTreeMap<(u32, u32), (u32, bool)> = BTreeMap::new();
    let mut last_finished_records: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    let mut intervals: Vec<(Duration, Duration)> = Vec::new();
    let mut end = trace.last().map_or(Duration::ZERO, |record| record.time);
    for record in trace {
        match &record.event {
            TraceEvent::TaskDeployed { attempt, vertex, subtask, .. } => {
                if !deployed.insert((*vertex, *subtask)) {
                    metrics.subtasks_restarted += 1;
                }
                runs.insert((*vertex, *subtask), (*attempt, false));
            }
            TraceEvent::TaskRunning { attempt, vertex, subtask } => {
                for recovery in &mut pending {
                    if *attempt >= recovery.attempt {
                        recovery.waiting.remove(&(*vertex, *subtask));
                    }
                }
            }
            TraceEvent::TaskFinished { vertex, subtask, records_in, .. } => {
                if let Some(previous) = last_finished_records.insert((*vertex, *subtask), *records_in) {
                    metrics.records_recomputed += previous;
                }
                if let Some(run) = runs.get_mut(&(*vertex, *subtask)) {
                    run.1 = true;
                }
            }
            TraceEvent::JobRestarting { attempt, regions, .. } => {
                metrics.regions_restarted += u64::from(*regions);
                let waiting = runs.keys().copied().collect();
                runs.clear();
                pending.push(Pending { since: record.time, waiting, attempt: *attempt });
            }
            TraceEvent::RegionsRestarting { attempt, regions, subtasks, .. } => {
                metrics.regions_restarted += u64::from(*regions);
                let waiting: BTreeSet<(u32, u32)> = subtasks.iter().filter_map(|text| parse_subtask(text)).collect();
                for subtask in &waiting {
                    runs.remove(subtask);
                }
                pending.push(Pending { since: record.time, waiting, attempt: *attempt });
            }
            TraceEvent::JobRecovered { attempt, .. } => {
                // Unfinished runs were lost with the JobMaster; finished ones may be kept.
                let waiting: BTreeSet<(u32, u32)> =
                    runs.iter().filter(|(_, (_, finished))| !finished).map(|(subtask, _)| *subtask).collect();
                runs.retain(|_, (_, finished)| *finished);
                pending.push(Pending { since: record.time, waiting, attempt: *attempt });
            }
            TraceEvent::FinishedWorkReconciled { attempt, rerun, .. } => {
                let rerun: BTreeSet<(u32, u32)> = rerun.iter().filter_map(|text| parse_subtask(text)).collect();
                for subtask in &rerun {
                    runs.remove(subtask);
                }
                match pending.last_mut() {
                    Some(recovery) if recovery.attempt == *attempt => recovery.waiting.extend(rerun),
                    _ => pending.push(Pending { since: record.time, waiting: rerun, attempt: *attempt }),
                }
            }
            TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. } => end = record.time,
            _ => {}
        }
        pending.retain(|recovery| {
            let done = recovery.waiting.is_empty();
            if done {
                intervals.push((recovery.since, record.time));
            }
            !done
        });
    }
    intervals.extend(pending.iter().map(|recovery| (recovery.since, end.max(recovery.since))));
    metrics.recovery_time = union_length(intervals);
    metrics
}

/// The total length of a set of intervals, overlaps counted once.
fn union_length(mut intervals: Vec<(Duration, Duration)>) -> Duration {
    intervals.sort();
    let mut total = Duration::ZERO;
    let mut current: Option<(Duration, Duration)> = None;
    for (start, stop) in intervals {
        match &mut current {
            Some((_, current_stop)) if start <= *current_stop => *current_stop = (*current_stop).max(stop),
            _ => {
                if let Some((current_start, current_stop)) = current.take() {
                    total += current_stop - current_start;
                }
                current = Some((start, stop));
            }
        }
    }
    if let Some((start, stop)) = current {
        total += stop - start;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(millis: u64, event: TraceEvent) -> TraceRecord {
        TraceRecord { time: Duration::from_millis(millis), node: "jm".to_string(), event }
    }

    fn deployed(millis: u64, attempt: u32, vertex: u32, subtask: u32) -> [TraceRecord; 2] {
        [
            at(millis, TraceEvent::TaskDeployed { attempt, vertex, subtask, slot: "tm-0/s0".to_string() }),
            at(millis + 1, TraceEvent::TaskRunning { attempt, vertex, subtask }),
        ]
    }

    fn finished(millis: u64, attempt: u32, vertex: u32, subtask: u32, records_in: u64) -> TraceRecord {
        at(
            millis,
            TraceEvent::TaskFinished {
                attempt,
                vertex,
                subtask,
                records_in,
                records_out: records_in,
                disk_bytes_read: 0,
                disk_bytes_written: 0,
                backpressure_micros: 0,
                peak_buffered_bytes: 0,
            },
        )
    }

    #[test]
    fn a_region_restart_counts_its_subtasks_the_work_redone_and_the_time_until_they_run_again() {
        let mut trace = Vec::new();
        trace.extend(deployed(0, 0, 0, 0));
        trace.push(finished(10, 0, 0, 0, 100));
        trace.extend(deployed(10, 0, 1, 0));
        trace.push(at(
            20,
            TraceEvent::RegionsRestarting {
                attempt: 1,
                delay_ms: 5,
                cause: "lost".to_string(),
                regions: 2,
                subtasks: vec!["v0[0]".to_string(), "v1[0]".to_string()],
                finished: 1,
            },
        ));
        trace.extend(deployed(30, 1, 0, 0));
        trace.push(finished(40, 1, 0, 0, 100));
        trace.extend(deployed(40, 1, 1, 0));
        trace.push(finished(50, 1, 1, 0, 100));
        trace.push(at(50, TraceEvent::JobFinished { restarts: 1 }));
        let metrics = recovery_metrics(&trace);
        assert_eq!(metrics.subtasks_restarted, 2);
        assert_eq!(metrics.regions_restarted, 2);
        assert_eq!(metrics.records_recomputed, 100, "v0[0]'s first run was thrown away");
        assert_eq!(metrics.recovery_time, Duration::from_millis(21), "from 20 ms until v1[0] ran again at 41 ms");
    }

    #[test]
    fn overlapping_recoveries_count_once() {
        let intervals = vec![
            (Duration::from_millis(0), Duration::from_millis(10)),
            (Duration::from_millis(5), Duration::from_millis(20)),
            (Duration::from_millis(30), Duration::from_millis(31)),
        ];
        assert_eq!(union_length(intervals), Duration::from_millis(21));
    }
}
