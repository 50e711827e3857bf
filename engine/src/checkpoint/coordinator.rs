//! [`CheckpointCoordinator`]: the JobMaster's checkpoint state machine (Flink's
//! `CheckpointCoordinator`), pure: the JobMaster passes in the time and the tasks' messages, and
//! carries out what it returns (send triggers, persist, notify, delete).
//!
//! ```text
//!            interval elapsed, every task deployed, a source still running
//!   (idle) ───────────────────────────────────────────────────────────────> pending n
//!     ▲                                                                        │
//!     │  every task acknowledged n or reached its end    ──> complete n (persist, then notify)
//!     └──────────────────────────────────────────────────────────────────────┤
//!        timeout, failure, or every task reached its end  ──> abort n        │
//! ```
//!
//! A task that reached the end of its input stands in every later checkpoint of its attempt
//! with its end-of-input snapshot — but only in checkpoints whose barrier it never saw: a task
//! that forwarded barrier `n` and ended must acknowledge `n` itself, because what its consumers
//! saved at `n` does not include what it sent after the barrier. When every task has ended, the
//! coordinator completes the *final* checkpoint. Completed checkpoints are kept (the newest `retained`) across attempts: a restart
//! restores the newest.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{CheckpointConfig, CheckpointId, SnapshotKind};
use crate::graph::ExecutionVertexId;

/// Where a task's snapshot was saved.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct StateHandle {
    /// The file in the durable store.
    pub path: String,
    /// Its length.
    pub bytes: u64,
}

/// A checkpoint every task contributed to, recorded durably by the JobMaster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletedCheckpoint {
    /// Its id.
    pub id: CheckpointId,
    /// Each task's snapshot.
    pub handles: Vec<(ExecutionVertexId, StateHandle)>,
    /// True for the final checkpoint of a bounded job: every task had reached its end.
    pub is_final: bool,
}

impl CompletedCheckpoint {
    /// The snapshot of one subtask.
    pub fn handle(&self, vertex: ExecutionVertexId) -> Option<&StateHandle> {
        self.handles.iter().find(|(task, _)| *task == vertex).map(|(_, handle)| handle)
    }
}

struct Pending {
    id: CheckpointId,
    triggered_at: Duration,
    acknowledged: BTreeMap<ExecutionVertexId, StateHandle>,
}

/// What an acknowledgement led to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AckOutcome {
    /// Nothing to do yet.
    Waiting,
    /// The pending checkpoint can never complete (a task took its barrier, lost its snapshot,
    /// and ended): it is aborted.
    Aborted(CheckpointId),
    /// A checkpoint is ready: persist it, then call
    /// [`CheckpointCoordinator::confirm_completed`] and notify the tasks.
    Complete(CompletedCheckpoint),
    /// Every task reached its end while checkpoint `aborted` was pending: it is aborted, and
    /// the final checkpoint is ready.
    AbortedForFinal {
        /// The pending checkpoint given up.
        aborted: CheckpointId,
        /// The final checkpoint.
        completed: CompletedCheckpoint,
    },
}

/// See the module doc.
pub struct CheckpointCoordinator {
    config: CheckpointConfig,
    next_id: CheckpointId,
    completed: Vec<CompletedCheckpoint>,
    tasks: BTreeSet<ExecutionVertexId>,
    /// The job attempt whose tasks these are.
    attempt: u32,
    /// End-of-input snapshots, with the last barrier the task took before it ended.
    ended: BTreeMap<ExecutionVertexId, (StateHandle, Option<CheckpointId>)>,
    pending: Option<Pending>,
    /// When the last checkpoint was triggered or ended (the interval counts from it).
    last_activity: Duration,
    final_done: bool,
}

impl CheckpointCoordinator {
    /// A coordinator that knows the checkpoints completed so far (from the JobMaster's durable
    /// metadata), oldest first.
    pub fn new(config: CheckpointConfig, completed: Vec<CompletedCheckpoint>) -> CheckpointCoordinator {
        let next_id = completed.iter().map(|checkpoint| checkpoint.id + 1).max().unwrap_or(1);
        let mut coordinator = CheckpointCoordinator {
            config,
            next_id,
            completed,
            tasks: BTreeSet::new(),
            attempt: 0,
            ended: BTreeMap::new(),
            pending: None,
            last_activity: Duration::ZERO,
            final_done: false,
        };
        coordinator.prune();
        coordinator
    }

    /// The configuration.
    pub fn config(&self) -> &CheckpointConfig {
        &self.config
    }

    /// The newest completed checkpoint: where a restart restores from.
    pub fn latest(&self) -> Option<&CompletedCheckpoint> {
        self.completed.last()
    }

    /// The completed checkpoints kept, oldest first.
    pub fn completed(&self) -> &[CompletedCheckpoint] {
        &self.completed
    }

    /// Job attempt `attempt` with these subtasks starts at `now`; anything pending is forgotten
    /// (the caller aborted it). Attempts only grow.
    pub fn start_attempt(&mut self, tasks: BTreeSet<ExecutionVertexId>, attempt: u32, now: Duration) {
        assert!(
            self.tasks.is_empty() || attempt > self.attempt,
            "internal: checkpointing attempt a{attempt} started after a{}",
            self.attempt
        );
        self.tasks = tasks;
        self.attempt = attempt;
        self.ended.clear();
        self.pending = None;
        self.last_activity = now;
        self.final_done = false;
    }

    /// The pending checkpoint, if any.
    pub fn pending(&self) -> Option<CheckpointId> {
        self.pending.as_ref().map(|pending| pending.id)
    }

    /// True if `task` reached its end in this attempt.
    pub fn has_ended(&self, task: ExecutionVertexId) -> bool {
        self.ended.contains_key(&task)
    }

    /// Triggers the next checkpoint if the interval elapsed and none is pending; `ready` says
    /// that every task is deployed and some source still runs. Returns its id.
    pub fn maybe_trigger(&mut self, now: Duration, ready: bool) -> Option<CheckpointId> {
        if !ready
            || self.pending.is_some()
            || self.final_done
            || now.saturating_sub(self.last_activity) < self.config.interval
        {
            return None;
        }
        let id = self.next_id;
        assert!(
            self.completed.last().is_none_or(|last| last.id < id),
            "internal: checkpoint {id} triggered after checkpoint {} completed",
            self.completed.last().map_or(0, |last| last.id)
        );
        self.next_id += 1;
        assert!(
            !self.final_done,
            "checkpoint invariant: nothing is triggered after a{}'s final checkpoint",
            self.attempt
        );
        self.pending = Some(Pending { id, triggered_at: now, acknowledged: BTreeMap::new() });
        self.last_activity = now;
        Some(id)
    }

    /// Aborts the pending checkpoint if it is older than the timeout; returns its id.
    pub fn check_timeout(&mut self, now: Duration) -> Option<CheckpointId> {
        let pending = self.pending.as_ref()?;
        if now.saturating_sub(pending.triggered_at) < self.config.timeout {
            return None;
        }
        crate::cover!(CheckpointAbortedByTimeout);
        self.abort(now)
    }

    /// Aborts the pending checkpoint (a task failed, or the job restarts); returns its id.
    pub fn abort(&mut self, now: Duration) -> Option<CheckpointId> {
        let pending = self.pending.take()?;
        self.last_activity = now;
        Some(pending.id)
    }

    /// A task of the current attempt saved its snapshot: for barrier `n`, or at end of input
    /// (with the last barrier it took before, if any). The caller drops older attempts'
    /// acknowledgements: one that reached the coordinator could complete a checkpoint with a
    /// snapshot of state that attempt's restart threw away.
    pub fn acknowledge(
        &mut self,
        task: ExecutionVertexId,
        attempt: u32,
        kind: SnapshotKind,
        handle: StateHandle,
        last_barrier: Option<CheckpointId>,
        now: Duration,
    ) -> AckOutcome {
        assert_eq!(
            attempt, self.attempt,
            "internal: {task}'s acknowledgement of a{attempt} reached the checkpoint coordinator of a{}",
            self.attempt
        );
        if !self.tasks.contains(&task) {
            return AckOutcome::Waiting; // not a task of this attempt
        }
        match kind {
            SnapshotKind::Barrier(id) => match &mut self.pending {
                Some(pending) if pending.id == id => {
                    pending.acknowledged.insert(task, handle);
                }
                _ => return AckOutcome::Waiting, // late, for an aborted checkpoint
            },
            SnapshotKind::EndOfInput => {
                self.ended.insert(task, (handle, last_barrier));
                if self.ended.len() == self.tasks.len() && !self.final_done {
                    return self.complete_final(now);
                }
            }
        }
        if self.final_done {
            assert!(
                self.pending.is_none(),
                "checkpoint invariant: nothing is pending after a{}'s final checkpoint",
                self.attempt
            );
        }
        let Some(pending) = &self.pending else { return AckOutcome::Waiting };
        let id = pending.id;
        let mut handles = BTreeMap::new();
        for task in &self.tasks {
            if let Some(handle) = pending.acknowledged.get(task) {
                handles.insert(*task, handle.clone());
            } else if let Some((handle, last_barrier)) = self.ended.get(task) {
                if last_barrier.is_some_and(|last| last >= id) {
                    // It took barrier `id` but its snapshot never arrived, and it has ended: the
                    // checkpoint cannot complete.
                    self.abort(now);
                    return AckOutcome::Aborted(id);
                }
                handles.insert(*task, handle.clone());
            } else {
                return AckOutcome::Waiting;
            }
        }
        self.check_completes(id, handles.len());
        self.pending = None;
        self.last_activity = now;
        AckOutcome::Complete(CompletedCheckpoint { id, handles: handles.into_iter().collect(), is_final: false })
    }

    /// What a checkpoint `id` completing with `handles` snapshots relies on: one per task of the
    /// attempt, and an id newer than every checkpoint completed before.
    fn check_completes(&self, id: CheckpointId, handles: usize) {
        assert_eq!(
            handles,
            self.tasks.len(),
            "checkpoint invariant: checkpoint {id} completes with a snapshot of every task of a{}",
            self.attempt
        );
        assert!(id < self.next_id, "checkpoint invariant: checkpoint {id} completes only once triggered");
        assert!(
            self.completed.last().is_none_or(|last| last.id < id),
            "checkpoint invariant: checkpoint {id} completes after older ones only (newest completed: {})",
            self.completed.last().map_or(0, |last| last.id)
        );
    }

    fn complete_final(&mut self, now: Duration) -> AckOutcome {
        assert!(!self.final_done, "checkpoint invariant: the final checkpoint of a{} completes once", self.attempt);
        assert_eq!(
            self.ended.len(),
            self.tasks.len(),
            "checkpoint invariant: the final checkpoint completes after every task of a{} ended",
            self.attempt
        );
        self.final_done = true;
        let id = self.next_id;
        self.next_id += 1;
        self.check_completes(id, self.ended.len());
        let completed = CompletedCheckpoint {
            id,
            handles: self.ended.iter().map(|(task, (handle, _))| (*task, handle.clone())).collect(),
            is_final: true,
        };
        match self.abort(now) {
            Some(aborted) => AckOutcome::AbortedForFinal { aborted, completed },
            None => AckOutcome::Complete(completed),
        }
    }

    /// The JobMaster persisted `checkpoint`: it is complete. Returns the state files no kept
    /// checkpoint refers to any more, to delete.
    pub fn confirm_completed(&mut self, checkpoint: CompletedCheckpoint) -> Vec<String> {
        assert!(
            self.completed.last().is_none_or(|last| last.id < checkpoint.id),
            "internal: checkpoint {} completed after checkpoint {}",
            checkpoint.id,
            self.completed.last().map_or(0, |last| last.id)
        );
        let id = checkpoint.id;
        assert!(
            id < self.next_id,
            "checkpoint invariant: only a checkpoint this coordinator numbered completes (cp{id})"
        );
        assert!(self.pending.is_none(), "checkpoint invariant: cp{id} is recorded with no checkpoint pending");
        if checkpoint.is_final {
            assert!(
                self.final_done,
                "checkpoint invariant: final checkpoint {id} is recorded after a{} ended",
                self.attempt
            );
        }
        assert!(
            checkpoint.handles.windows(2).all(|pair| pair[0].0 < pair[1].0),
            "checkpoint invariant: checkpoint {id} holds one snapshot per task"
        );
        self.completed.push(checkpoint);
        self.prune()
    }

    fn prune(&mut self) -> Vec<String> {
        let keep = (self.config.retained.max(1)) as usize;
        if self.completed.len() <= keep {
            return Vec::new();
        }
        let dropped: Vec<CompletedCheckpoint> = self.completed.drain(..self.completed.len() - keep).collect();
        assert_eq!(
            self.completed.len(),
            keep,
            "checkpoint invariant: the newest {keep} checkpoints completed are kept"
        );
        let kept: BTreeSet<&str> = self
            .completed
            .iter()
            .flat_map(|checkpoint| checkpoint.handles.iter().map(|(_, handle)| handle.path.as_str()))
            .collect();
        let mut unused: BTreeSet<String> = BTreeSet::new();
        for checkpoint in &dropped {
            for (_, handle) in &checkpoint.handles {
                if !kept.contains(handle.path.as_str()) {
                    unused.insert(handle.path.clone());
                }
            }
        }
        unused.into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::JobVertexId;

    fn task(vertex: u32, subtask: u32) -> ExecutionVertexId {
        ExecutionVertexId { vertex: JobVertexId(vertex), subtask }
    }

    fn handle(name: &str) -> StateHandle {
        StateHandle { path: name.to_string(), bytes: 1 }
    }

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    fn coordinator() -> CheckpointCoordinator {
        let mut coordinator = CheckpointCoordinator::new(
            CheckpointConfig { interval: ms(100), timeout: ms(1000), retained: 2 },
            Vec::new(),
        );
        coordinator.start_attempt([task(0, 0), task(1, 0)].into(), 0, ms(0));
        coordinator
    }

    #[test]
    fn a_checkpoint_completes_when_every_task_acknowledged() {
        let mut coordinator = coordinator();
        assert_eq!(coordinator.maybe_trigger(ms(50), true), None, "the interval has not elapsed");
        assert_eq!(coordinator.maybe_trigger(ms(100), false), None, "not every task is deployed");
        assert_eq!(coordinator.maybe_trigger(ms(100), true), Some(1));
        assert_eq!(coordinator.maybe_trigger(ms(300), true), None, "one at a time");
        assert_eq!(
            coordinator.acknowledge(task(0, 0), 0, SnapshotKind::Barrier(1), handle("a"), None, ms(110)),
            AckOutcome::Waiting
        );
        let AckOutcome::Complete(completed) =
            coordinator.acknowledge(task(1, 0), 0, SnapshotKind::Barrier(1), handle("b"), None, ms(120))
        else {
            panic!("both acknowledged")
        };
        assert_eq!(completed.id, 1);
        assert_eq!(completed.handle(task(1, 0)), Some(&handle("b")));
        assert!(coordinator.latest().is_none(), "complete only once persisted");
        assert!(coordinator.confirm_completed(completed).is_empty());
        assert_eq!(coordinator.latest().map(|checkpoint| checkpoint.id), Some(1));
    }

    #[test]
    fn an_aborted_checkpoint_never_completes_and_late_acknowledgements_are_ignored() {
        let mut coordinator = coordinator();
        assert_eq!(coordinator.maybe_trigger(ms(100), true), Some(1));
        coordinator.acknowledge(task(0, 0), 0, SnapshotKind::Barrier(1), handle("a"), None, ms(110));
        assert_eq!(coordinator.check_timeout(ms(500)), None);
        assert_eq!(coordinator.check_timeout(ms(1100)), Some(1), "timed out");
        assert_eq!(
            coordinator.acknowledge(task(1, 0), 0, SnapshotKind::Barrier(1), handle("b"), None, ms(1110)),
            AckOutcome::Waiting
        );
        assert!(coordinator.latest().is_none());
        // The next one gets a new id.
        assert_eq!(coordinator.maybe_trigger(ms(1300), true), Some(2));
        assert_eq!(coordinator.abort(ms(1310)), Some(2), "a failure aborts it");
        assert_eq!(
            coordinator.acknowledge(task(0, 0), 0, SnapshotKind::Barrier(2), handle("a"), None, ms(1320)),
            AckOutcome::Waiting
        );
        assert_eq!(
            coordinator.acknowledge(task(1, 0), 0, SnapshotKind::Barrier(2), handle("b"), None, ms(1330)),
            AckOutcome::Waiting
        );
        assert!(coordinator.latest().is_none());
    }

    #[test]
    fn ended_tasks_stand_in_with_their_final_snapshot_and_the_final_checkpoint_follows() {
        let mut coordinator = coordinator();
        coordinator.acknowledge(task(0, 0), 0, SnapshotKind::EndOfInput, handle("a-final"), None, ms(10));
        assert_eq!(coordinator.maybe_trigger(ms(100), true), Some(1));
        let AckOutcome::Complete(first) =
            coordinator.acknowledge(task(1, 0), 0, SnapshotKind::Barrier(1), handle("b1"), None, ms(110))
        else {
            panic!("the ended task counts with its final snapshot")
        };
        assert_eq!(first.handle(task(0, 0)), Some(&handle("a-final")));
        coordinator.confirm_completed(first);
        assert_eq!(coordinator.maybe_trigger(ms(300), true), Some(2));
        let AckOutcome::AbortedForFinal { aborted: 2, completed } =
            coordinator.acknowledge(task(1, 0), 0, SnapshotKind::EndOfInput, handle("b-final"), None, ms(310))
        else {
            panic!("every task ended: the pending checkpoint gives way to the final one")
        };
        assert!(completed.is_final);
        assert_eq!(completed.id, 3);
        coordinator.confirm_completed(completed);
        assert_eq!(coordinator.maybe_trigger(ms(1000), true), None, "nothing after the final checkpoint");
    }

    #[test]
    fn a_task_that_took_the_barrier_and_ended_without_its_snapshot_aborts_the_checkpoint() {
        let mut coordinator = coordinator();
        assert_eq!(coordinator.maybe_trigger(ms(100), true), Some(1));
        coordinator.acknowledge(task(1, 0), 0, SnapshotKind::Barrier(1), handle("b1"), None, ms(110));
        // Task 0 forwarded barrier 1, could not save its snapshot, and then ended: its final
        // snapshot is past the barrier, so it cannot stand in checkpoint 1.
        assert_eq!(
            coordinator.acknowledge(task(0, 0), 0, SnapshotKind::EndOfInput, handle("a-final"), Some(1), ms(120)),
            AckOutcome::Aborted(1)
        );
        assert!(coordinator.latest().is_none());
        assert_eq!(coordinator.pending(), None);
    }

    #[test]
    fn only_the_newest_checkpoints_are_kept_and_shared_files_survive_pruning() {
        let mut coordinator = coordinator();
        coordinator.acknowledge(task(0, 0), 0, SnapshotKind::EndOfInput, handle("a-final"), None, ms(0));
        let mut deleted = Vec::new();
        for round in 0..3u64 {
            let id = coordinator.maybe_trigger(ms(200 * (round + 1)), true).expect("triggered");
            let name = format!("b{id}");
            let AckOutcome::Complete(completed) = coordinator.acknowledge(
                task(1, 0),
                0,
                SnapshotKind::Barrier(id),
                handle(&name),
                None,
                ms(200 * (round + 1) + 10),
            ) else {
                panic!("complete")
            };
            deleted.extend(coordinator.confirm_completed(completed));
        }
        assert_eq!(deleted, vec!["b1".to_string()], "a-final is still referenced by the kept checkpoints");
        assert_eq!(coordinator.completed().iter().map(|checkpoint| checkpoint.id).collect::<Vec<_>>(), vec![2, 3]);
        // A restarted JobMaster continues the numbering after what it recovered.
        let recovered = CheckpointCoordinator::new(*coordinator.config(), coordinator.completed().to_vec());
        assert_eq!(recovered.latest().map(|checkpoint| checkpoint.id), Some(3));
    }
}
