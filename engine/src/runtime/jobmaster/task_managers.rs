//! The JobMaster's TaskManager registry: registrations (a TaskManager that comes back as a new
//! instance, or without its tasks, is lost first), heartbeats judged by when they arrived, and
//! what losing one means for the job (its unfinished subtasks failed, and the finished ones
//! whose partitions, still needed, were only there); and the cancellations it sends them.
//!
//! It never decides what restarts: a loss becomes a [`Failure`] for the failover strategy.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use crate::rt::time::Instant;

use super::failover::Failure;
use tokio::sync::mpsc;

use super::{CONTROL_TIMEOUT, Event, JobMaster};
use crate::graph::ExecutionVertexId;
use crate::rpc::RpcClient;
use crate::runtime::messages::{CancelJobAttempts, CancelTasks, ExecutionAttemptId, RegisterTaskManager};
use crate::scheduler::SlotId;
use crate::shuffle::ResultPartitionId;
use crate::shuffle::protocol::ListPartitions;
use crate::trace::TraceEvent;

/// A registered TaskManager as the heartbeat handler sees it.
pub(super) struct Liveness {
    pub(super) instance: u64,
    pub(super) session: u64,
    pub(super) last_heartbeat: Instant,
}

/// Registered TaskManagers, shared with the heartbeat handler.
pub(super) type Registry = Arc<Mutex<BTreeMap<String, Liveness>>>;

pub(super) struct TaskManagerInfo {
    pub(super) instance: u64,
    pub(super) session: u64,
    pub(super) address: SocketAddr,
}

impl JobMaster {
    pub(super) async fn register(&mut self, registration: RegisterTaskManager) {
        let name = registration.name.clone();
        if let Some(known) = self.task_managers.get(&name) {
            if known.instance == registration.instance && known.session == registration.session {
                // A retried registration.
                if let Some(liveness) = self.registry.lock().expect("registry lock").get_mut(&name) {
                    liveness.last_heartbeat = Instant::now();
                }
                return;
            }
            let reason = if known.instance == registration.instance {
                "it lost the JobMaster and cancelled its tasks"
            } else {
                "it restarted as a new instance"
            };
            let held: BTreeSet<ResultPartitionId> = registration.partitions.iter().copied().collect();
            self.lose_task_manager(&name, reason, &held).await;
        }
        assert!(
            !self.task_managers.contains_key(&name),
            "jobmaster invariant: a TaskManager registers anew only once its last registration is lost ({name})"
        );
        self.trace(TraceEvent::TaskManagerRegistered {
            name: name.clone(),
            instance: registration.instance,
            slots: registration.slots,
        });
        self.slot_pool.add_task_manager(&name, registration.slots);
        let info = TaskManagerInfo {
            instance: registration.instance,
            session: registration.session,
            address: registration.address,
        };
        self.task_managers.insert(name.clone(), info);
        self.registry.lock().expect("registry lock").insert(
            name.clone(),
            Liveness { instance: registration.instance, session: registration.session, last_heartbeat: Instant::now() },
        );
        if self.job.as_ref().is_some_and(|job| job.reconciling.is_some()) {
            self.reconcile_registration(&name, registration.partitions);
        } else {
            // What it holds and nobody needs: partitions of runs that are no longer current.
            let stale: Vec<ResultPartitionId> = registration
                .partitions
                .into_iter()
                .filter(|id| self.job.as_ref().is_none_or(|job| job.partitions.descriptor(*id).is_none()))
                .collect();
            self.release_on(registration.address, stale);
        }
        self.try_schedule().await;
    }

    /// A TaskManager is gone (or came back without its tasks): its unfinished subtasks failed,
    /// and so did the finished ones whose partitions, still needed, were only there (`held`:
    /// what it still has, if it came back).
    pub(super) async fn lose_task_manager(&mut self, name: &str, reason: &str, held: &BTreeSet<ResultPartitionId>) {
        let known = self.task_managers.remove(name);
        let followed = self.registry.lock().expect("registry lock").remove(name);
        // Both learn of a TaskManager when it registers and forget it here, together.
        assert!(known.is_some(), "jobmaster invariant: only a registered TaskManager is lost ({name})");
        assert!(followed.is_some(), "jobmaster invariant: a registered TaskManager's heartbeats are followed ({name})");
        self.slot_pool.remove_task_manager(name);
        if let Some(reconciliation) = self.job.as_mut().and_then(|job| job.reconciling.as_mut()) {
            crate::cover!(TaskManagerLostDuringReconciliation);
            reconciliation.forget(name); // what it held is gone with it
        }
        let Some(job) = self.job.as_mut() else {
            self.trace(TraceEvent::TaskManagerLost { name: name.to_string(), reason: reason.to_string() });
            return;
        };
        let lost: Vec<ResultPartitionId> =
            job.partitions.needed_on(name).into_iter().filter(|id| !held.contains(id)).collect();
        let reason = match lost.len() {
            0 => reason.to_string(),
            1 => format!("{reason}; a finished partition still needed was on it"),
            count => format!("{reason}; {count} finished partitions still needed were on it"),
        };
        self.trace(TraceEvent::TaskManagerLost { name: name.to_string(), reason: reason.clone() });
        let job = self.job.as_mut().expect("checked");
        if job.status.is_terminal() {
            return;
        }
        let mut failed: BTreeSet<ExecutionVertexId> = job
            .executions
            .iter()
            .filter(|(_, execution)| {
                !execution.finished && execution.slot.as_ref().is_some_and(|slot| slot.task_manager == name)
            })
            .map(|(vertex, _)| *vertex)
            .collect();
        for id in &lost {
            job.check_produced_by_current_run(*id); // needed on it: tracked, and its producer finished it
            job.partitions.lose(*id);
            let producer = ExecutionVertexId {
                vertex: job.strategy.graph().job_graph().edge(id.partition.dataset).source,
                subtask: id.partition.producer_subtask,
            };
            failed.insert(producer);
        }
        if !failed.is_empty() {
            // The failure names the lost partitions too (lost above already, as the decision
            // would), so that the trace says what the decision knew.
            let cause = format!("TaskManager {name} lost: {reason}");
            self.on_failure(Failure { cause, failed, lost: lost.into_iter().collect() }).await;
        }
    }

    /// A TaskManager answered neither a request nor a probe: unless it registered anew
    /// meanwhile, it is lost now rather than when its heartbeats time out, so that its running
    /// subtasks and the partitions it held fail together (Flink's
    /// `stopTrackingAndReleasePartitionsFor`), not one consumer at a time.
    pub(super) async fn on_task_manager_unreachable(&mut self, name: &str, instance: u64, why: &str) {
        if self.task_managers.get(name).is_none_or(|info| info.instance != instance) {
            return; // lost meanwhile, or back as a new instance: handled then
        }
        crate::cover!(TaskManagerFoundUnreachable);
        self.lose_task_manager(name, &format!("unreachable ({why}, then a probe)"), &BTreeSet::new()).await;
    }

    /// Judges heartbeats as of `now`, the tick's time: heartbeats are stamped when they arrive,
    /// even while the actor waits for the durable store.
    pub(super) async fn lose_silent_task_managers(&mut self, now: Instant) {
        let silent: Vec<String> = self
            .registry
            .lock()
            .expect("registry lock")
            .iter()
            .filter(|(_, liveness)| now.duration_since(liveness.last_heartbeat) > self.config.heartbeat_timeout)
            .map(|(name, _)| name.clone())
            .collect();
        for name in silent {
            let reason = format!("no heartbeat for {} ms", self.config.heartbeat_timeout.as_millis());
            self.lose_task_manager(&name, &reason, &BTreeSet::new()).await;
        }
    }

    pub(super) fn cancel_attempts_before(&self, attempt: u32) {
        let Some(job) = &self.job else { return };
        for info in self.task_managers.values() {
            let client = self.client.clone();
            let address = info.address;
            let request = CancelJobAttempts { job_id: job.spec.job_id.clone(), attempt };
            // Best effort: a TaskManager that misses it cancels old tasks when new ones arrive.
            crate::rt::task::spawn(async move {
                let _ = client.call(address, request, CONTROL_TIMEOUT).await;
            });
        }
    }

    /// Cancels task runs where they run (best effort: a deployment of a newer run of the same
    /// subtask cancels an older one too).
    pub(super) fn cancel_tasks(&self, executions: Vec<(SlotId, ExecutionAttemptId)>) {
        let Some(job) = &self.job else { return };
        let mut by_task_manager: BTreeMap<SocketAddr, Vec<ExecutionAttemptId>> = BTreeMap::new();
        for (slot, execution) in executions {
            if let Some(info) = self.task_managers.get(&slot.task_manager) {
                by_task_manager.entry(info.address).or_default().push(execution);
            }
        }
        for (address, executions) in by_task_manager {
            let client = self.client.clone();
            let request = CancelTasks { job_id: job.spec.job_id.clone(), executions };
            crate::rt::task::spawn(async move {
                let _ = client.call(address, request, CONTROL_TIMEOUT).await;
            });
        }
    }
}

/// How long a probe of a TaskManager that left a request unanswered waits: a live one answers in
/// well under a millisecond on a quiet network, and the request already waited its timeout.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(200);

/// Probes the TaskManager at `address` after `why` went unanswered: if the probe is unanswered
/// too, reports it unreachable and returns true; false if it answered.
pub(super) async fn probe(
    client: &RpcClient,
    events: &mpsc::UnboundedSender<Event>,
    address: SocketAddr,
    name: String,
    instance: u64,
    why: String,
) -> bool {
    if client.call(address, ListPartitions, PROBE_TIMEOUT).await.is_ok() {
        return false;
    }
    let _ = events.send(Event::TaskManagerUnreachable { name, instance, why });
    true
}
