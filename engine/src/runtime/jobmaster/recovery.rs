//! A restarted JobMaster: replays each job's operation log and resumes it.
//!
//! A job that ended stays ended. A job that checkpoints (or whose log records no finished
//! subtask) runs every subtask again under the next attempt number, restoring the latest
//! completed checkpoint. Otherwise the JobMaster *reconciles* (Flink's FLIP-383): it re-applies
//! the recorded parallelism decisions, waits (up to `worker_recovery_timeout`) for the
//! TaskManagers that held finished partitions to register again with what they still hold, and
//! asks the shuffle service the same; then it keeps every region whose subtasks all finished
//! and whose partitions still needed survive, and re-runs the rest, with what region failover
//! says depends on it (consumers of a re-run producer re-run too; a producer whose partitions
//! are gone re-runs, as far upstream as needed).

use std::collections::{BTreeMap, BTreeSet};

use crate::rt::time::Instant;

use super::ha::{FinishedSubtask, JobEvent};
use super::{CONTROL_TIMEOUT, Event, Execution, JobMaster, JobRun, SHUFFLE_SERVICE, ha};
use crate::failover::{all_subtasks, finished_work_to_keep, partitions_to_track};
use crate::graph::{ExecutionGraph, ExecutionVertexId, IntermediateResultPartitionId, JobGraph};
use crate::runtime::messages::JobStatus;
use crate::shuffle::protocol::ListPartitions;
use crate::shuffle::{PartitionLocation, ResultPartitionId, ShuffleDescriptor};
use crate::trace::TraceEvent;

/// What a restarted JobMaster knows while it reconciles.
pub(super) struct Reconciliation {
    /// It decides at this time at the latest.
    until: Instant,
    /// Finished subtasks in the log.
    finished: BTreeMap<ExecutionVertexId, FinishedSubtask>,
    /// TaskManagers that held finished partitions and have not registered yet.
    waiting: BTreeSet<String>,
    /// What each registered TaskManager holds.
    held: BTreeMap<String, BTreeSet<ResultPartitionId>>,
    /// What the shuffle service holds, once it answered (if any partition lived there).
    remote: Option<BTreeSet<ResultPartitionId>>,
    remote_needed: bool,
}

impl Reconciliation {
    /// A TaskManager was lost while the JobMaster reconciled: nothing it reported is held.
    pub(super) fn forget(&mut self, name: &str) {
        self.held.remove(name);
    }

    fn is_held(&self, descriptor: &ShuffleDescriptor) -> bool {
        match &descriptor.location {
            PartitionLocation::TaskManager { name, .. } => {
                self.held.get(name).is_some_and(|held| held.contains(&descriptor.partition))
            }
            PartitionLocation::Remote { .. } => {
                self.remote.as_ref().is_some_and(|held| held.contains(&descriptor.partition))
            }
        }
    }

    /// True if the finished producer of `partition` wrote it where it is still held.
    fn holds(&self, job_graph: &JobGraph, partition: IntermediateResultPartitionId) -> bool {
        let producer =
            ExecutionVertexId { vertex: job_graph.edge(partition.dataset).source, subtask: partition.producer_subtask };
        self.finished.get(&producer).is_some_and(|finished| {
            finished
                .partitions
                .iter()
                .any(|(descriptor, _)| descriptor.partition.partition == partition && self.is_held(descriptor))
        })
    }

    /// Decides which finished work to keep; see the module doc.
    fn decide(&self, graph: &ExecutionGraph) -> Decision {
        let job_graph = graph.job_graph();
        let held = |partition: IntermediateResultPartitionId| self.holds(job_graph, partition);
        let lost: Vec<String> = (self.finished.iter())
            .flat_map(|(vertex, finished)| {
                let gone = graph.produced_partitions(*vertex).into_iter().filter(|produced| !held(produced.id));
                gone.map(|produced| ResultPartitionId { partition: produced.id, attempt: finished.attempt }.to_string())
            })
            .collect();
        let finished: BTreeSet<ExecutionVertexId> = self.finished.keys().copied().collect();
        let kept = finished_work_to_keep(graph, &finished, held);
        assert!(kept.is_subset(&finished), "jobmaster invariant: reconciliation keeps only finished work");
        let rerun: Vec<ExecutionVertexId> =
            self.finished.keys().copied().filter(|vertex| !kept.contains(vertex)).collect();
        Decision { lost, kept, rerun }
    }
}

/// What a restarted JobMaster decided about the finished work in its log.
struct Decision {
    /// For the trace, what the decision is told is gone: every partition of a finished subtask
    /// not held where it was written.
    lost: Vec<String>,
    /// Finished subtasks whose work stands.
    kept: BTreeSet<ExecutionVertexId>,
    /// Finished subtasks that run again.
    rerun: Vec<ExecutionVertexId>,
}

impl JobRun {
    /// Asserts what installing the kept work relies on: the job runs, and nothing ran or took a
    /// slot while it reconciled.
    fn check_nothing_installed(&self) {
        assert_eq!(self.status, JobStatus::Running, "jobmaster invariant: a job reconciles while it runs");
        assert!(
            self.executions.is_empty(),
            "jobmaster invariant: nothing runs before reconciliation decided ({} runs)",
            self.executions.len()
        );
        assert!(self.slot_users.is_empty(), "jobmaster invariant: no slot is used before reconciliation decided");
    }

    /// Installs the kept work: finished runs, their statistics, the partitions still needed
    /// that survived (a kept subtask's lost partition stays unavailable: `partitions_to_track`).
    /// Returns the partitions it tracks.
    fn install_kept(
        &mut self,
        graph: &ExecutionGraph,
        reconciliation: &Reconciliation,
        kept: &BTreeSet<ExecutionVertexId>,
    ) -> BTreeSet<ResultPartitionId> {
        let job_graph = graph.job_graph();
        let held = |partition: IntermediateResultPartitionId| reconciliation.holds(job_graph, partition);
        let to_track = partitions_to_track(graph, kept, held);
        cover_kept_partitions_gone(graph, kept, held);
        let mut tracked: BTreeSet<ResultPartitionId> = BTreeSet::new();
        for vertex in kept {
            let finished = &reconciliation.finished[vertex];
            self.executions
                .insert(*vertex, Execution { attempt: finished.attempt, slot: None, deployed: true, finished: true });
            self.strategy.on_vertex_finished(*vertex);
            for (descriptor, bytes) in &finished.partitions {
                let partition = descriptor.partition.partition;
                self.partition_bytes.insert((partition.dataset, vertex.subtask), bytes.clone());
                let consumer = job_graph.edge(partition.dataset).target;
                if to_track.contains(&partition) {
                    self.partitions.track(descriptor.clone(), consumer);
                    self.partitions.produced(descriptor.partition);
                    tracked.insert(descriptor.partition);
                }
            }
        }
        tracked
    }
}

/// Asserts what reconciling relies on in the finished work a log replayed (`ha::Replayed`): each
/// run is of an attempt the log started, no older than its floor, and its partitions are the
/// ones the JobMaster registered for that run (its subtask's, under its attempt).
fn check_finished_work(finished: &BTreeMap<ExecutionVertexId, FinishedSubtask>, floor: u32, last_attempt: u32) {
    assert!(floor <= last_attempt, "jobmaster invariant: the floor was started (a{floor}, last a{last_attempt})");
    for (vertex, run) in finished {
        let attempt = run.attempt;
        assert!(attempt >= floor, "jobmaster invariant: finished work stands from the floor on ({vertex}@a{attempt})");
        assert!(
            attempt <= last_attempt,
            "jobmaster invariant: finished work is of an attempt the log started ({vertex}@a{attempt})"
        );
        for (descriptor, _) in &run.partitions {
            let id = descriptor.partition;
            assert_eq!(id.attempt, attempt, "jobmaster invariant: a run's partitions are its attempt's ({id})");
            assert_eq!(
                id.partition.producer_subtask, vertex.subtask,
                "jobmaster invariant: a run's partitions are its subtask's ({vertex}: {id})"
            );
        }
    }
}

impl JobMaster {
    /// Finds the jobs a previous JobMaster process accepted and resumes an unfinished one.
    pub(super) async fn recover(&mut self) {
        let mut recovered: Vec<JobRun> = Vec::new();
        for stored in ha::stored_jobs(self.ha.as_ref()).await {
            let log = stored.log;
            let attempt = log.last_attempt + 1;
            assert!(
                attempt > log.last_attempt,
                "jobmaster invariant: attempt numbers never repeat, across JobMaster restarts too (a{})",
                log.last_attempt
            );
            let Ok(mut job) =
                JobRun::new(stored.spec, attempt, (&self.config.jobs, &self.config.external), log.checkpoints)
            else {
                continue;
            };
            if let Some(status) = log.result {
                job.status = status;
                recovered.push(job);
                continue;
            }
            let keep = job.checkpoints.is_none() && !log.finished.is_empty();
            let job_id = job.spec.job_id.clone();
            ha::append(self.ha.as_ref(), &job_id, &JobEvent::AttemptStarted { attempt, global: !keep }).await;
            self.trace(TraceEvent::JobRecovered { job_id, attempt });
            if keep {
                check_finished_work(&log.finished, log.floor, log.last_attempt);
                job.floor = log.floor;
                for (vertex, ranges) in log.decisions {
                    job.strategy.initialize_vertex(vertex, ranges);
                }
                let mut waiting = BTreeSet::new();
                let mut remote_needed = false;
                for finished in log.finished.values() {
                    for (descriptor, _) in &finished.partitions {
                        match &descriptor.location {
                            PartitionLocation::TaskManager { name, .. } => {
                                waiting.insert(name.clone());
                            }
                            PartitionLocation::Remote { .. } => remote_needed = true,
                        }
                    }
                }
                job.reconciling = Some(Reconciliation {
                    until: Instant::now() + self.config.worker_recovery_timeout,
                    finished: log.finished,
                    waiting,
                    held: BTreeMap::new(),
                    remote: None,
                    remote_needed,
                });
                if remote_needed {
                    self.ask_shuffle_service();
                }
            }
            recovered.push(job);
        }
        // One job at a time: prefer the unfinished one.
        recovered.sort_by_key(|job| !job.status.is_terminal());
        self.job = recovered.pop();
    }

    /// Asks the shuffle service which finished partitions it holds, until it answers.
    fn ask_shuffle_service(&self) {
        let Ok(address) = self.config.external.address(SHUFFLE_SERVICE) else { return };
        let (client, events) = (self.client.clone(), self.events.clone());
        crate::rt::task::spawn(async move {
            loop {
                if let Ok(held) = client.call(address, ListPartitions, CONTROL_TIMEOUT).await {
                    let _ = events.send(Event::RemotePartitions(held));
                    return;
                }
                crate::rt::time::sleep(CONTROL_TIMEOUT).await;
            }
        });
    }

    pub(super) fn on_remote_partitions(&mut self, held: Vec<ResultPartitionId>) {
        let Some(reconciliation) = self.job.as_mut().and_then(|job| job.reconciling.as_mut()) else { return };
        reconciliation.remote = Some(held.into_iter().collect());
    }

    /// A TaskManager registered while the JobMaster reconciles: remember what it holds.
    pub(super) fn reconcile_registration(&mut self, name: &str, partitions: Vec<ResultPartitionId>) {
        let Some(reconciliation) = self.job.as_mut().and_then(|job| job.reconciling.as_mut()) else { return };
        reconciliation.waiting.remove(name);
        reconciliation.held.insert(name.to_string(), partitions.into_iter().collect());
    }

    /// Decides once every TaskManager it waits for registered and the shuffle service answered,
    /// or the time is up.
    pub(super) async fn reconcile_tick(&mut self, now: Instant) {
        let Some(reconciliation) = self.job.as_ref().and_then(|job| job.reconciling.as_ref()) else { return };
        let everyone =
            reconciliation.waiting.is_empty() && (!reconciliation.remote_needed || reconciliation.remote.is_some());
        if everyone || now >= reconciliation.until {
            self.finish_reconciliation().await;
        }
    }

    /// Keeps the finished work whose partitions survive; see the module doc.
    async fn finish_reconciliation(&mut self) {
        let job = self.job.as_mut().expect("reconciling needs a job");
        let reconciliation = job.reconciling.take().expect("reconciling");
        job.check_nothing_installed();
        let graph = job.strategy.graph().clone();
        let Decision { lost, kept, rerun } = reconciliation.decide(&graph);
        let tracked = job.install_kept(&graph, &reconciliation, &kept);
        if !kept.is_empty() {
            crate::cover!(JobMasterKeptFinishedWork);
        }
        let (attempt, job_id) = (job.attempt, job.spec.job_id.clone());
        if !rerun.is_empty() {
            let event = JobEvent::SubtasksReset { attempt, vertices: rerun.clone() };
            ha::append(self.ha.as_ref(), &job_id, &event).await;
        }
        self.trace(TraceEvent::FinishedWorkReconciled {
            attempt,
            kept: kept.iter().map(ToString::to_string).collect(),
            rerun: rerun.iter().map(ToString::to_string).collect(),
            lost,
        });
        self.release_unneeded(&reconciliation, &tracked);
        let job = self.job.as_ref().expect("still there");
        if job.strategy.all_finished() {
            job.check_every_run_finished();
            // Restarts over the job's whole life (see deploy.rs).
            let restarts = job.attempt;
            self.end_job(JobStatus::Finished).await;
            self.trace(TraceEvent::JobFinished { restarts });
        }
    }

    /// Tells the TaskManagers and the shuffle service to drop what they hold that the kept work
    /// does not need (`tracked`).
    fn release_unneeded(&self, reconciliation: &Reconciliation, tracked: &BTreeSet<ResultPartitionId>) {
        for (name, held) in &reconciliation.held {
            let Some(info) = self.task_managers.get(name) else { continue };
            let stale: Vec<ResultPartitionId> = held.iter().filter(|id| !tracked.contains(id)).copied().collect();
            self.release_on(info.address, stale);
        }
        if let (Some(held), Ok(address)) = (&reconciliation.remote, self.config.external.address(SHUFFLE_SERVICE)) {
            let stale: Vec<ResultPartitionId> = held.iter().filter(|id| !tracked.contains(id)).copied().collect();
            self.release_on(address, stale);
        }
    }
}

/// Marks [`KeptWorkWithPartitionGone`](crate::cover::Mark::KeptWorkWithPartitionGone) if a kept
/// subtask's partition is gone while not every subtask of its consumer was kept: the state
/// `partitions_to_track` leaves untracked, told apart from its decision.
fn cover_kept_partitions_gone(
    graph: &ExecutionGraph,
    kept: &BTreeSet<ExecutionVertexId>,
    held: impl Fn(IntermediateResultPartitionId) -> bool,
) {
    let job_graph = graph.job_graph();
    let gone = kept.iter().flat_map(|vertex| graph.produced_partitions(*vertex)).any(|produced| {
        let consumer = job_graph.edge(produced.id.dataset).target;
        !all_subtasks(graph, consumer, &|candidate| kept.contains(&candidate)) && !held(produced.id)
    });
    if gone {
        crate::cover!(KeptWorkWithPartitionGone);
    }
}
