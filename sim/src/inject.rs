//! Carries out a fault schedule against a running cluster.
//!
//! One harness task per fault waits for its trigger, records `FaultInjected`, applies the fault,
//! and, when the fault has a duration, undoes it and records `FaultHealed`. The trace is thus the
//! realized schedule: which faults fired, and when. A fault whose trigger never comes (the vertex
//! never reached that state, say) never fires.
//!
//! Overlapping network faults of the same kind share one setting: the first to heal restores
//! the baseline for both.

use std::sync::Arc;
use std::time::Duration;

use sluice_engine::trace::TraceEvent;

use sluice_engine::connectors::txn_store::txn_checkpoint;

use crate::cluster::Cluster;
use sluice_harness::faults::{CheckpointTrigger, Fault, FaultKind, TaskStateTrigger, Trigger};
use sluice_harness::trace::TraceRecord;

/// How long a slow node runs between pauses.
const SLOW_SLICE: Duration = Duration::from_millis(5);

/// Starts one harness task per fault; trigger times count from now.
pub fn inject(cluster: &Arc<Cluster>, schedule: &[Fault]) {
    for (index, fault) in schedule.iter().cloned().enumerate() {
        let cluster = Arc::clone(cluster);
        madsim::task::spawn(async move {
            wait_for_trigger(&cluster, &fault.trigger).await;
            let kind = fault.kind.name().to_string();
            let detail = fault.kind.to_string();
            cluster
                .trace()
                .record("harness", TraceEvent::FaultInjected { index, kind: kind.clone(), detail: detail.clone() });
            if apply(&cluster, &fault.kind).await {
                cluster.trace().record("harness", TraceEvent::FaultHealed { index, kind, detail });
            }
        });
    }
}

fn task_event_matches(record: &TraceRecord, vertex: u32, subtask: Option<u32>, state: TaskStateTrigger) -> bool {
    let (event_vertex, event_subtask) = match (&record.event, state) {
        (TraceEvent::TaskDeployed { vertex, subtask, .. }, TaskStateTrigger::Deployed)
        | (TraceEvent::TaskRunning { vertex, subtask, .. }, TaskStateTrigger::Running)
        | (TraceEvent::TaskFinished { vertex, subtask, .. }, TaskStateTrigger::Finished) => (*vertex, *subtask),
        _ => return false,
    };
    event_vertex == vertex && subtask.is_none_or(|wanted| wanted == event_subtask)
}

async fn wait_for_trigger(cluster: &Cluster, trigger: &Trigger) {
    match trigger {
        Trigger::At(time) => madsim::time::sleep(*time).await,
        Trigger::Task { vertex, subtask, state } => {
            cluster.trace().wait_for(|record| task_event_matches(record, *vertex, *subtask, *state)).await
        }
        Trigger::Checkpoint(wanted) => {
            cluster
                .trace()
                .wait_for(|record| match (&record.event, wanted) {
                    (TraceEvent::CheckpointCompleted { checkpoint, .. }, CheckpointTrigger::Id(id)) => checkpoint >= id,
                    (TraceEvent::CheckpointCompleted { is_final, .. }, CheckpointTrigger::Final(_)) => *is_final,
                    (_, CheckpointTrigger::Share(_)) => unreachable_relative(trigger),
                    _ => false,
                })
                .await
        }
        Trigger::Prepared(wanted) => {
            cluster
                .trace()
                .wait_for(|record| match &record.event {
                    TraceEvent::TransactionPrepared { txn_id, .. } => txn_checkpoint(txn_id) == Some(*wanted),
                    _ => false,
                })
                .await
        }
        Trigger::AtShare(_) | Trigger::PreparedShare(_) => unreachable_relative(trigger),
        Trigger::Step { step, nth } => {
            let mut seen = 0;
            cluster
                .trace()
                .wait_for(|record| {
                    if step.events().contains(&record.event.kind()) {
                        seen += 1;
                    }
                    seen >= *nth
                })
                .await
        }
        Trigger::Mark { mark, nth } => cluster.trace().coverage().wait_for_hits(*mark, u64::from(*nth)).await,
        Trigger::RecordsCommitted(threshold) => {
            let mut committed = 0;
            cluster
                .trace()
                .wait_for(|record| {
                    if let TraceEvent::TransactionCommitted { rows, .. } = record.event {
                        committed += rows;
                    }
                    committed >= *threshold
                })
                .await
        }
    }
}

fn unreachable_relative(trigger: &Trigger) -> ! {
    panic!("harness invariant: relative triggers are resolved against the pilot before injection ({trigger})")
}

/// Records what a fault did, where the schedule alone cannot say (which file it hit).
fn note(cluster: &Cluster, detail: String) {
    cluster.trace().record("harness", TraceEvent::Harness { detail });
}

/// Applies a fault; returns true once a fault with a duration has healed.
async fn apply(cluster: &Cluster, kind: &FaultKind) -> bool {
    match kind {
        FaultKind::Kill { node, restart_after } => {
            cluster.kill(node);
            let Some(delay) = restart_after else { return false };
            madsim::time::sleep(*delay).await;
            cluster.restart(node);
        }
        FaultKind::Partition { sides, one_way, duration } => {
            cluster.partition(&sides[0], &sides[1], *one_way, true);
            madsim::time::sleep(*duration).await;
            cluster.partition(&sides[0], &sides[1], *one_way, false);
        }
        FaultKind::PacketLoss { percent, duration } => {
            cluster.set_packet_loss(f64::from(*percent) / 100.0);
            madsim::time::sleep(*duration).await;
            cluster.restore_network();
        }
        FaultKind::Latency { min, max, duration } => {
            cluster.set_latency(*min, *max);
            madsim::time::sleep(*duration).await;
            cluster.restore_network();
        }
        FaultKind::Slow { node, factor, duration } if cluster.set_slowdown(node, *factor) => {
            madsim::time::sleep(*duration).await;
            cluster.set_slowdown(node, 1);
        }
        // A node without costed work is slowed by pausing it most of the time.
        FaultKind::Slow { node, factor, duration } => {
            let end = madsim::time::Instant::now() + *duration;
            while madsim::time::Instant::now() < end {
                cluster.pause(node);
                madsim::time::sleep(SLOW_SLICE * (factor - 1)).await;
                cluster.resume(node);
                madsim::time::sleep(SLOW_SLICE).await;
            }
        }
        FaultKind::StoreUnavailable { duration } => {
            cluster.store().lock().expect("store lock").faults.unavailable = true;
            madsim::time::sleep(*duration).await;
            cluster.store().lock().expect("store lock").faults.unavailable = false;
        }
        FaultKind::CommitFails { count } => {
            cluster.store().lock().expect("store lock").faults.failing_commits += count;
            return false;
        }
        FaultKind::CommitReplyLost { count } => {
            cluster.store().lock().expect("store lock").faults.lost_commit_replies += count;
            return false;
        }
        FaultKind::LosePartition { .. }
        | FaultKind::CorruptPartition { .. }
        | FaultKind::LoseDisk { .. }
        | FaultKind::LoseNewestObjects { .. } => {
            lose_data(cluster, kind);
            return false;
        }
        FaultKind::DurableStoreUnavailable { duration } => {
            cluster.durable_store().set_unavailable(true);
            madsim::time::sleep(*duration).await;
            cluster.durable_store().set_unavailable(false);
        }
    }
    true
}

/// Applies a fault that loses or damages stored data, at once, noting what it hit.
fn lose_data(cluster: &Cluster, kind: &FaultKind) {
    match kind {
        FaultKind::LosePartition { node } => {
            let lost = cluster.lose_partition(node);
            note(
                cluster,
                lost.map_or_else(|| format!("{node} held no partition to lose"), |path| format!("lost {node}:{path}")),
            );
        }
        FaultKind::CorruptPartition { node } => {
            let corrupted = cluster.corrupt_partition(node);
            note(
                cluster,
                corrupted.map_or_else(
                    || format!("{node} held no partition to corrupt"),
                    |path| format!("corrupted {node}:{path}"),
                ),
            );
        }
        FaultKind::LoseDisk { node } => {
            cluster.lose_disk(node);
        }
        FaultKind::LoseNewestObjects { count } => {
            for _ in 0..*count {
                let lost = cluster.durable_store().lose_newest_object();
                note(
                    cluster,
                    lost.map_or_else(
                        || "the durable store held no object to lose".to_string(),
                        |path| format!("lost durable-store:{path}"),
                    ),
                );
            }
        }
        other => unreachable!("lose_data applies only data-loss faults, not {other:?}"),
    }
}
