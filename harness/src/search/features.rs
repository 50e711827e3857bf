//! What a run reached, as the features a coverage-guided search keeps schedules for.
//!
//! Three kinds, each a semantic abstraction of the run rather than code edges (Mallory, Legolas
//! and moonpool found the semantic kind is what pays in distributed systems):
//!
//! - a **cell**: a coverage mark reached while a fault kind was active (`none` when none was),
//!   the sweep's table of marks × fault kinds, and the measure campaigns are compared by;
//! - a **count**: a mark reached a number of times in one mode, bucketed as AFL buckets hit
//!   counts (1, 2, 3, 4–7, 8–15, 16–31, 32–127, 128+): reaching a retry path four times is a
//!   different behaviour from reaching it once;
//! - a **phase**: a fault kind that fired while the run was in a protocol phase (deploying,
//!   running, checkpointing, committing, restarting, reconciling), per mode: where a fault
//!   actually landed, which its trigger only aims at; and **landings**, two faults that fired
//!   one after the other with their phases (AFL's edges, over landings);
//! - **restarts**: how many times the run restarted, bucketed, per mode (a watermark of how deep
//!   into recovery it went).

use std::collections::BTreeSet;
use std::fmt;

use sluice_engine::trace::TraceEvent;

use crate::report::RunReport;
use crate::trace::TraceRecord;

/// One feature of a run; see the module doc. Ordered and printed stably: corpora keep them as text.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// A mark reached with a fault kind active.
    Cell {
        /// The mark's name.
        mark: String,
        /// The fault kind, or `none`.
        kind: String,
    },
    /// A mark's hits in one run of a mode, bucketed.
    Count {
        /// The mark's name.
        mark: String,
        /// The bucket's lower bound.
        bucket: u64,
        /// The mode.
        mode: String,
    },
    /// The run restarted this many times (bucketed), in one mode: a watermark of how deep into
    /// recovery it went (moonpool's `sometimes_greater_than`).
    Restarts {
        /// The bucket's lower bound.
        bucket: u64,
        /// The mode.
        mode: String,
    },
    /// Two faults fired one after the other, each in its phase: AFL's edges over landings.
    Landings {
        /// The first fault's kind and phase.
        first: (String, Phase),
        /// The next fault's kind and phase.
        next: (String, Phase),
        /// The mode.
        mode: String,
    },
    /// A fault kind fired in a protocol phase.
    Phase {
        /// The fault kind.
        kind: String,
        /// The phase.
        phase: Phase,
        /// The mode.
        mode: String,
    },
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Feature::Cell { mark, kind } => write!(f, "cell {mark} × {kind}"),
            Feature::Count { mark, bucket, mode } => write!(f, "count {mark} ≥{bucket} {mode}"),
            Feature::Phase { kind, phase, mode } => write!(f, "phase {kind} in {phase} {mode}"),
            Feature::Restarts { bucket, mode } => write!(f, "restarts ≥{bucket} {mode}"),
            Feature::Landings { first, next, mode } => {
                write!(f, "landings {} in {} then {} in {} {mode}", first.0, first.1, next.0, next.1)
            }
        }
    }
}

/// What the run was doing when a fault fired, the most specific that held.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    /// Before any task ran.
    Deploying,
    /// Tasks ran, nothing more specific was under way.
    Running,
    /// A checkpoint was triggered and not yet completed or aborted.
    Checkpointing,
    /// A transaction was prepared and not yet committed: between a prepare and its commit.
    Committing,
    /// A restart was decided and the restarted tasks were not running yet.
    Restarting,
    /// A restarted JobMaster had not yet reconciled the finished work.
    Reconciling,
    /// After the last task finished.
    Finishing,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Phase::Deploying => "deploying",
            Phase::Running => "running",
            Phase::Checkpointing => "checkpointing",
            Phase::Committing => "committing",
            Phase::Restarting => "restarting",
            Phase::Reconciling => "reconciling",
            Phase::Finishing => "finishing",
        };
        f.write_str(name)
    }
}

/// AFL's hit-count buckets: the lower bound of the bucket `hits` falls in.
pub fn bucket(hits: u64) -> u64 {
    match hits {
        0..=3 => hits,
        4..=7 => 4,
        8..=15 => 8,
        16..=31 => 16,
        32..=127 => 32,
        _ => 128,
    }
}

/// The phase each fired fault landed in, by its index in the schedule, in firing order.
pub fn fault_phases(trace: &[TraceRecord]) -> Vec<(usize, String, Phase)> {
    #[derive(Default)]
    struct Now {
        running: bool,
        finished: bool,
        checkpoints: BTreeSet<u64>,
        prepared: BTreeSet<String>,
        restarting: bool,
        reconciling: bool,
    }
    let mut now = Now::default();
    let mut landed = Vec::new();
    for record in trace {
        match &record.event {
            TraceEvent::TaskRunning { .. } => {
                now.running = true;
                now.restarting = false;
            }
            TraceEvent::TaskFinished { .. } => now.finished = true,
            TraceEvent::CheckpointTriggered { checkpoint, .. } => {
                now.checkpoints.insert(*checkpoint);
            }
            TraceEvent::CheckpointCompleted { checkpoint, .. } | TraceEvent::CheckpointAborted { checkpoint, .. } => {
                now.checkpoints.remove(checkpoint);
            }
            TraceEvent::TransactionPrepared { txn_id, .. } => {
                now.prepared.insert(txn_id.clone());
            }
            TraceEvent::TransactionCommitted { txn_id, .. } => {
                now.prepared.remove(txn_id);
            }
            TraceEvent::JobRestarting { .. } | TraceEvent::RegionsRestarting { .. } => {
                now.restarting = true;
                now.checkpoints.clear();
            }
            TraceEvent::JobRecovered { .. } => now.reconciling = true,
            TraceEvent::FinishedWorkReconciled { .. } => now.reconciling = false,
            TraceEvent::JobFinished { .. } => now.finished = true,
            TraceEvent::FaultInjected { index, kind, .. } => {
                let phase = if now.reconciling {
                    Phase::Reconciling
                } else if now.restarting {
                    Phase::Restarting
                } else if !now.prepared.is_empty() {
                    Phase::Committing
                } else if !now.checkpoints.is_empty() {
                    Phase::Checkpointing
                } else if !now.running {
                    Phase::Deploying
                } else if now.finished {
                    Phase::Finishing
                } else {
                    Phase::Running
                };
                landed.push((*index, kind.clone(), phase));
            }
            _ => {}
        }
    }
    landed
}

/// Every feature of a run; see the module doc.
pub fn features(report: &RunReport) -> BTreeSet<Feature> {
    let mode = report.mode.to_string();
    let mut features = cells(report);
    for (mark, hits) in &report.coverage {
        features.insert(Feature::Count {
            mark: mark.name().to_string(),
            bucket: bucket(hits.hits),
            mode: mode.clone(),
        });
    }
    let landed = fault_phases(&report.trace);
    for pair in landed.windows(2) {
        let (first, next) = ((pair[0].1.clone(), pair[0].2), (pair[1].1.clone(), pair[1].2));
        features.insert(Feature::Landings { first, next, mode: mode.clone() });
    }
    for (_, kind, phase) in landed {
        features.insert(Feature::Phase { kind, phase, mode: mode.clone() });
    }
    features.insert(Feature::Restarts { bucket: bucket(report.restarts()), mode });
    features
}

/// The cells of a run: marks × the fault kinds active when they were reached.
pub fn cells(report: &RunReport) -> BTreeSet<Feature> {
    let mut cells = BTreeSet::new();
    for (mark, hits) in &report.coverage {
        for kind in hits.fault_kinds.keys() {
            cells.insert(Feature::Cell { mark: mark.name().to_string(), kind: kind.clone() });
        }
    }
    cells
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(millis: u64, event: TraceEvent) -> TraceRecord {
        TraceRecord { time: Duration::from_millis(millis), node: "x".into(), event }
    }

    fn fault(index: usize) -> TraceEvent {
        TraceEvent::FaultInjected { index, kind: "tm-crash".into(), detail: "kill tm-0".into() }
    }

    #[test]
    fn buckets_are_afl_hit_count_buckets() {
        let buckets: Vec<u64> = [1, 2, 3, 4, 7, 8, 15, 16, 31, 32, 127, 128, 9000].into_iter().map(bucket).collect();
        assert_eq!(buckets, vec![1, 2, 3, 4, 4, 8, 8, 16, 16, 32, 32, 128, 128]);
    }

    #[test]
    fn a_fault_lands_in_the_most_specific_phase_under_way() {
        let running = TraceEvent::TaskRunning { attempt: 0, vertex: 0, subtask: 0 };
        let trace = vec![
            at(1, fault(0)),
            at(2, running.clone()),
            at(3, fault(1)),
            at(4, TraceEvent::CheckpointTriggered { attempt: 0, checkpoint: 1 }),
            at(5, fault(2)),
            at(6, TraceEvent::TransactionPrepared { txn_id: "t/c1".into(), epoch: 0 }),
            at(7, fault(3)),
            at(8, TraceEvent::JobRecovered { job_id: "j".into(), attempt: 1 }),
            at(9, fault(4)),
        ];
        let phases: Vec<Phase> = fault_phases(&trace).into_iter().map(|(_, _, phase)| phase).collect();
        assert_eq!(
            phases,
            vec![Phase::Deploying, Phase::Running, Phase::Checkpointing, Phase::Committing, Phase::Reconciling]
        );
    }
}
