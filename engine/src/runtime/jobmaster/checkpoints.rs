//! The JobMaster's side of checkpoints: it carries out what the [`CheckpointCoordinator`]
//! decides — triggers to the source tasks, durable records of completed checkpoints before any
//! task is told, notifications, and deleting the state of checkpoints no longer kept.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::Duration;

use crate::rt::time::Instant;

use super::{CONTROL_TIMEOUT, Event, JobMaster, JobRun, ha};
use crate::checkpoint::CompletedCheckpoint;
use crate::checkpoint::coordinator::AckOutcome;
use crate::graph::ExecutionVertexId;
use crate::runtime::messages::{
    AcknowledgeCheckpoint, ExecutionAttemptId, JobStatus, NotifyCheckpointComplete, TriggerCheckpoint,
};
use crate::trace::TraceEvent;

/// How often the final checkpoint's notification is repeated to tasks still waiting for it.
const FINAL_RESEND: Duration = Duration::from_millis(500);

impl JobMaster {
    fn coordinator_clock(&self) -> Duration {
        Instant::now().duration_since(self.started)
    }

    /// Starts the checkpoint coordinator's view of a new attempt, once its first region is
    /// deployed; traces the checkpoint the attempt restores.
    pub(super) fn start_checkpointing_attempt(&mut self) {
        let now = self.coordinator_clock();
        let Some(job) = &mut self.job else { return };
        let tasks: BTreeSet<ExecutionVertexId> =
            job.strategy.graph().regions().iter().flat_map(|region| region.vertices.iter().copied()).collect();
        let attempt = job.attempt;
        let Some(coordinator) = &mut job.checkpoints else { return };
        // A job that checkpoints restarts every subtask (failover.rs): one attempt, no older runs.
        assert_eq!(
            job.floor, attempt,
            "checkpoint invariant: a checkpointing attempt runs every subtask under its number (a{attempt}, floor a{})",
            job.floor
        );
        coordinator.start_attempt(tasks, attempt, now);
        if let Some(checkpoint) = coordinator.latest().map(|checkpoint| checkpoint.id) {
            self.trace(TraceEvent::CheckpointRestored { attempt, checkpoint });
        }
    }

    /// Every tick: times out a pending checkpoint, triggers the next one, and repeats the final
    /// checkpoint's notification to tasks still waiting for it.
    pub(super) fn checkpoint_tick(&mut self) {
        let now = self.coordinator_clock();
        let Some(job) = &self.job else { return };
        if job.status != JobStatus::Running || job.checkpoints.is_none() {
            return;
        }
        let attempt = job.attempt;
        if let Some(checkpoint) = job.checkpoints.as_ref().and_then(|coordinator| coordinator.pending()) {
            let timeout = job.checkpoints.as_ref().expect("checked").config().timeout;
            let timed_out =
                self.job.as_mut().and_then(|job| job.checkpoints.as_mut()).and_then(|c| c.check_timeout(now));
            if timed_out.is_some() {
                let reason = format!("not acknowledged by every task within {} ms", timeout.as_millis());
                self.trace(TraceEvent::CheckpointAborted { attempt, checkpoint, reason });
            }
        }
        self.resend_final_notification();
        let job = self.job.as_ref().expect("checked");
        let graph = job.strategy.graph();
        let tasks: Vec<ExecutionVertexId> =
            graph.regions().iter().flat_map(|region| region.vertices.iter().copied()).collect();
        let all_deployed =
            tasks.iter().all(|task| job.executions.get(task).is_some_and(|execution| execution.deployed));
        let coordinator = job.checkpoints.as_ref().expect("checked");
        let sources: Vec<ExecutionVertexId> = tasks
            .iter()
            .copied()
            .filter(|task| graph.job_graph().vertex(task.vertex).inputs.is_empty())
            .filter(|task| {
                !coordinator.has_ended(*task) && job.executions.get(task).is_some_and(|execution| !execution.finished)
            })
            .collect();
        let ready = all_deployed && !sources.is_empty();
        let Some(checkpoint) =
            self.job.as_mut().and_then(|job| job.checkpoints.as_mut()).and_then(|c| c.maybe_trigger(now, ready))
        else {
            return;
        };
        self.trace(TraceEvent::CheckpointTriggered { attempt, checkpoint });
        let job = self.job.as_ref().expect("checked");
        let mut by_task_manager: BTreeMap<SocketAddr, Vec<ExecutionAttemptId>> = BTreeMap::new();
        for source in sources {
            let run = &job.executions[&source];
            assert_eq!(run.attempt, attempt, "checkpoint invariant: barriers go to runs of the attempt ({source})");
            let Some(slot) = &run.slot else { continue };
            let Some(info) = self.task_managers.get(&slot.task_manager) else { continue };
            by_task_manager.entry(info.address).or_default().push(ExecutionAttemptId { vertex: source, attempt });
        }
        for (address, executions) in by_task_manager {
            let request = TriggerCheckpoint { job_id: job.spec.job_id.clone(), executions, checkpoint_id: checkpoint };
            let (client, events) = (self.client.clone(), self.events.clone());
            crate::rt::task::spawn(async move {
                let reason = match client.call(address, request, CONTROL_TIMEOUT).await {
                    Ok(missing) if missing.is_empty() => return,
                    Ok(missing) => format!("{} does not run {}", address, missing[0]),
                    Err(error) => format!("trigger not delivered: {error}"),
                };
                let _ = events.send(Event::CheckpointDeclined { attempt, checkpoint, reason });
            });
        }
    }

    /// Aborts the pending checkpoint of `attempt` (`checkpoint`, or whichever is pending).
    pub(super) fn abort_checkpoint(&mut self, attempt: u32, checkpoint: Option<u64>, reason: &str) {
        let now = self.coordinator_clock();
        let Some(job) = self.job.as_mut().filter(|job| job.attempt == attempt) else { return };
        let Some(coordinator) = &mut job.checkpoints else { return };
        if checkpoint.is_some() && coordinator.pending() != checkpoint {
            return; // already completed or aborted
        }
        if let Some(checkpoint) = coordinator.abort(now) {
            self.trace(TraceEvent::CheckpointAborted { attempt, checkpoint, reason: reason.to_string() });
        }
    }

    /// A task saved a snapshot.
    pub(super) async fn on_checkpoint_ack(&mut self, ack: AcknowledgeCheckpoint) {
        let now = self.coordinator_clock();
        let Some(job) = &mut self.job else { return };
        if ack.job_id != job.spec.job_id || ack.execution.attempt != job.attempt || job.status != JobStatus::Running {
            return;
        }
        let attempt = job.attempt;
        let Some(coordinator) = &mut job.checkpoints else { return };
        match coordinator.acknowledge(
            ack.execution.vertex,
            ack.execution.attempt,
            ack.kind,
            ack.handle,
            ack.last_barrier,
            now,
        ) {
            AckOutcome::Waiting => {}
            AckOutcome::Aborted(checkpoint) => {
                let reason = format!("{} took its barrier and ended without saving its snapshot", ack.execution);
                self.trace(TraceEvent::CheckpointAborted { attempt, checkpoint, reason });
            }
            AckOutcome::Complete(checkpoint) => self.complete_checkpoint(checkpoint).await,
            AckOutcome::AbortedForFinal { aborted, completed } => {
                let reason = "every task reached its end: the final checkpoint replaces it".to_string();
                self.trace(TraceEvent::CheckpointAborted { attempt, checkpoint: aborted, reason });
                self.complete_checkpoint(completed).await;
            }
        }
    }

    /// Records a checkpoint durably, then tells the tasks, then deletes state no kept
    /// checkpoint needs. The JobMaster waits for the record (events queue meanwhile, each with
    /// the time it arrived, so a slow store does not make TaskManagers look silent): no
    /// restart can start while a checkpoint of the attempt it replaces is being recorded.
    async fn complete_checkpoint(&mut self, checkpoint: CompletedCheckpoint) {
        let job = self.job.as_ref().expect("a checkpoint belongs to a job");
        let (job_id, attempt) = (job.spec.job_id.clone(), job.attempt);
        job.check_completing(&checkpoint);
        ha::append(self.ha.as_ref(), &job_id, &ha::JobEvent::CheckpointCompleted(checkpoint.clone())).await;
        let (id, is_final) = (checkpoint.id, checkpoint.is_final);
        let job = self.job.as_mut().expect("still there");
        assert_eq!(job.attempt, attempt, "checkpoint invariant: no restart starts while checkpoint {id} is recorded");
        let unused = job.checkpoints.as_mut().expect("a checkpointing job").confirm_completed(checkpoint);
        self.trace(TraceEvent::CheckpointCompleted { attempt, checkpoint: id, is_final });
        self.notify_checkpoint(id, is_final);
        if is_final {
            self.job.as_mut().expect("still there").final_notified = Some((id, Instant::now()));
        }
        for path in unused {
            let storage = std::sync::Arc::clone(&self.ha);
            crate::rt::task::spawn(async move {
                let _ = storage.delete(&path).await;
            });
        }
    }

    /// Tells every TaskManager running tasks of the attempt that a checkpoint completed.
    fn notify_checkpoint(&self, checkpoint: u64, is_final: bool) {
        let job = self.job.as_ref().expect("notifying needs a job");
        let latest = job.checkpoints.as_ref().and_then(|coordinator| coordinator.latest()).map(|latest| latest.id);
        assert!(
            latest.is_some_and(|latest| latest >= checkpoint),
            "internal: tasks told checkpoint {checkpoint} completed, but the newest recorded is {latest:?}"
        );
        let addresses: BTreeSet<SocketAddr> = job
            .executions
            .values()
            .filter(|execution| !execution.finished)
            .filter_map(|execution| execution.slot.as_ref())
            .filter_map(|slot| self.task_managers.get(&slot.task_manager))
            .map(|info| info.address)
            .collect();
        for address in addresses {
            let request = NotifyCheckpointComplete {
                job_id: job.spec.job_id.clone(),
                attempt: job.attempt,
                checkpoint_id: checkpoint,
                is_final,
            };
            let client = self.client.clone();
            crate::rt::task::spawn(async move {
                let _ = client.call(address, request, CONTROL_TIMEOUT).await;
            });
        }
    }

    fn resend_final_notification(&mut self) {
        let Some((checkpoint, at)) = self.job.as_ref().and_then(|job| job.final_notified) else { return };
        let job = self.job.as_ref().expect("checked");
        let latest = job.checkpoints.as_ref().and_then(|coordinator| coordinator.latest()).map(|latest| latest.id);
        assert_eq!(
            latest,
            Some(checkpoint),
            "checkpoint invariant: no checkpoint completes after the final one of a{}",
            job.attempt
        );
        if at.elapsed() < FINAL_RESEND {
            return;
        }
        self.notify_checkpoint(checkpoint, true);
        self.job.as_mut().expect("checked").final_notified = Some((checkpoint, Instant::now()));
    }
}

impl JobRun {
    /// Asserts what recording `checkpoint` relies on, before it is written: it is newer than every
    /// checkpoint recorded, holds a snapshot of every subtask, and a final one is the attempt's
    /// first. Confirming it with the coordinator checks the order again after.
    fn check_completing(&self, checkpoint: &CompletedCheckpoint) {
        let id = checkpoint.id;
        let latest = self.checkpoints.as_ref().and_then(|coordinator| coordinator.latest()).map(|latest| latest.id);
        assert!(
            latest.is_none_or(|latest| latest < id),
            "checkpoint invariant: checkpoint ids grow ({id} completes after {latest:?})"
        );
        let subtasks: usize = self.strategy.graph().regions().iter().map(|region| region.vertices.len()).sum();
        assert_eq!(
            checkpoint.handles.len(),
            subtasks,
            "checkpoint invariant: checkpoint {id} holds a snapshot of every subtask of a{}",
            self.attempt
        );
        if checkpoint.is_final {
            assert!(
                self.final_notified.is_none(),
                "checkpoint invariant: an attempt's final checkpoint completes once ({id} of a{})",
                self.attempt
            );
        }
    }
}
