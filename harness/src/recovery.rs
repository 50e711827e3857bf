//! What recovering from failures cost a run, computed from its trace alone. Each figure is
//! defined here once; `sluice run`, sweeps, `compare` and the JobMaster's own "job finished after
//! N restarts" all mean the same thing by it.
//!
//! - *restarts*: how often the job started again under a new attempt number: a restart of every
//!   subtask (`JobRestarting`, restart-all or a restore from a checkpoint), of some regions
//!   (`RegionsRestarting`), or its recovery by a new JobMaster (`JobRecovered`). The JobMaster
//!   counts the same way: attempt numbers start at 0 and each restart takes the next, so it
//!   reports its current attempt number;
//! - *subtasks restarted*: deployments of a subtask that had been deployed before (whatever
//!   restarted it: region failover, restart-all, a JobMaster failover, a failed deployment);
//! - *regions restarted*: schedulings of a pipelined region that had been scheduled before
//!   (`RegionScheduled` of a region seen already), whatever restarted it;
//! - *records recomputed*: records read by subtask runs that finished and were then thrown away
//!   (the same subtask finished again later);
//! - *recovery time*: simulated time during which some recovery was under way: from a restart
//!   (or a JobMaster's recovery) until every subtask it restarted is running again, or the job
//!   ended; overlapping recoveries count once.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sluice_engine::trace::{TraceEvent, parse_subtask};

use crate::trace::TraceRecord;

/// See the module doc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryMetrics {
    /// Times the job started again under a new attempt.
    pub restarts: u64,
    /// Re-deployments of subtasks.
    pub subtasks_restarted: u64,
    /// Re-schedulings of regions.
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
    let mut tally = Tally { end: trace.last().map_or(Duration::ZERO, |record| record.time), ..Tally::default() };
    for record in trace {
        tally.observe(record);
    }
    tally.finish()
}

/// What [`recovery_metrics`] keeps while it reads a trace.
#[derive(Default)]
struct Tally {
    metrics: RecoveryMetrics,
    deployed: BTreeSet<(u32, u32)>,
    scheduled: BTreeSet<u32>,
    /// Per subtask: its current run's attempt and whether it finished.
    runs: BTreeMap<(u32, u32), (u32, bool)>,
    /// Per subtask: the records its last finished run read.
    last_finished_records: BTreeMap<(u32, u32), u64>,
    pending: Vec<Pending>,
    intervals: Vec<(Duration, Duration)>,
    end: Duration,
}

impl Tally {
    fn observe(&mut self, record: &TraceRecord) {
        let now = record.time;
        match &record.event {
            TraceEvent::RegionScheduled { region, .. } if !self.scheduled.insert(*region) => {
                self.metrics.regions_restarted += 1;
            }
            TraceEvent::TaskDeployed { attempt, vertex, subtask, .. } => {
                if !self.deployed.insert((*vertex, *subtask)) {
                    self.metrics.subtasks_restarted += 1;
                }
                self.runs.insert((*vertex, *subtask), (*attempt, false));
            }
            TraceEvent::TaskRunning { attempt, vertex, subtask } => {
                for recovery in &mut self.pending {
                    if *attempt >= recovery.attempt {
                        recovery.waiting.remove(&(*vertex, *subtask));
                    }
                }
            }
            TraceEvent::TaskFinished { vertex, subtask, records_in, .. } => {
                if let Some(previous) = self.last_finished_records.insert((*vertex, *subtask), *records_in) {
                    self.metrics.records_recomputed += previous;
                }
                if let Some(run) = self.runs.get_mut(&(*vertex, *subtask)) {
                    run.1 = true;
                }
            }
            TraceEvent::JobRestarting { attempt, .. } => {
                let waiting = std::mem::take(&mut self.runs).into_keys().collect();
                self.restart(now, waiting, *attempt);
            }
            TraceEvent::RegionsRestarting { attempt, subtasks, .. } => {
                let waiting: BTreeSet<(u32, u32)> = subtasks.iter().filter_map(|text| parse_subtask(text)).collect();
                self.runs.retain(|subtask, _| !waiting.contains(subtask));
                self.restart(now, waiting, *attempt);
            }
            TraceEvent::JobRecovered { attempt, .. } => {
                // Unfinished runs were lost with the JobMaster; finished ones may be kept.
                let waiting = self.runs.iter().filter(|(_, (_, finished))| !finished).map(|(subtask, _)| *subtask);
                let waiting: BTreeSet<(u32, u32)> = waiting.collect();
                self.runs.retain(|_, (_, finished)| *finished);
                self.restart(now, waiting, *attempt);
            }
            TraceEvent::FinishedWorkReconciled { attempt, rerun, .. } => self.reconciled(now, rerun, *attempt),
            TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. } => self.end = now,
            _ => {}
        }
        let intervals = &mut self.intervals;
        self.pending.retain(|recovery| {
            let done = recovery.waiting.is_empty();
            if done {
                intervals.push((recovery.since, now));
            }
            !done
        });
    }

    /// The job started again under `attempt`; `waiting` must run again.
    fn restart(&mut self, now: Duration, waiting: BTreeSet<(u32, u32)>, attempt: u32) {
        self.metrics.restarts += 1;
        self.pending.push(Pending { since: now, waiting, attempt });
    }

    /// A new JobMaster decided which finished subtasks run again.
    fn reconciled(&mut self, now: Duration, rerun: &[String], attempt: u32) {
        let rerun: BTreeSet<(u32, u32)> = rerun.iter().filter_map(|text| parse_subtask(text)).collect();
        self.runs.retain(|subtask, _| !rerun.contains(subtask));
        match self.pending.last_mut() {
            Some(recovery) if recovery.attempt == attempt => recovery.waiting.extend(rerun),
            _ => self.pending.push(Pending { since: now, waiting: rerun, attempt }),
        }
    }

    fn finish(mut self) -> RecoveryMetrics {
        let end = self.end;
        self.intervals.extend(self.pending.iter().map(|recovery| (recovery.since, end.max(recovery.since))));
        self.metrics.recovery_time = union_length(self.intervals);
        self.metrics
    }
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
                work: Default::default(),
            },
        )
    }

    #[test]
    fn a_region_restart_counts_its_subtasks_the_work_redone_and_the_time_until_they_run_again() {
        let scheduled = |millis: u64, attempt: u32, region: u32| {
            at(millis, TraceEvent::RegionScheduled { attempt, region, slots: vec!["tm-0/s0".to_string()] })
        };
        let mut trace = vec![scheduled(0, 0, 0)];
        trace.extend(deployed(0, 0, 0, 0));
        trace.push(finished(10, 0, 0, 0, 100));
        trace.push(scheduled(10, 0, 1));
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
                failed: vec![],
                lost: vec![],
            },
        ));
        trace.push(scheduled(30, 1, 0));
        trace.extend(deployed(30, 1, 0, 0));
        trace.push(finished(40, 1, 0, 0, 100));
        trace.push(scheduled(40, 1, 1));
        trace.extend(deployed(40, 1, 1, 0));
        trace.push(finished(50, 1, 1, 0, 100));
        trace.push(at(50, TraceEvent::JobFinished { restarts: 1 }));
        let metrics = recovery_metrics(&trace);
        assert_eq!(metrics.restarts, 1);
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
