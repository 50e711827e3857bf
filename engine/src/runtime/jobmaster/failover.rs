//! The JobMaster's side of failover: a failure goes to the restart strategy, then either every
//! subtask restarts (restart-all, and every job that checkpoints: the job is `Restarting` until
//! the delay passed) or the regions that [`regions_to_restart`] picks do, under a new attempt
//! number, each held back until the delay passed; the other regions go on meanwhile, and are
//! scheduled as their inputs become ready.

use std::collections::BTreeSet;

use crate::rt::time::Instant;

use super::{JobMaster, JobRun, ha};
use crate::failover::{FailoverStrategy, RestartDecision, regions_to_restart};
use crate::graph::{ExecutionVertexId, RegionId};
use crate::runtime::messages::{ExecutionAttemptId, JobStatus};
use crate::scheduler::RegionState;
use crate::shuffle::ResultPartitionId;
use crate::trace::TraceEvent;

/// A failure: why, which subtasks failed, and which partitions were found unreadable.
pub(super) struct Failure {
    pub(super) cause: String,
    /// Subtasks whose current run failed, or whose finished partitions were lost.
    pub(super) failed: BTreeSet<ExecutionVertexId>,
    /// Partitions a consumer could not read (not found, unreachable, corrupt).
    pub(super) lost: BTreeSet<ResultPartitionId>,
}

impl Failure {
    /// One subtask failed.
    pub(super) fn of_subtask(vertex: ExecutionVertexId, cause: String) -> Failure {
        Failure { cause, failed: BTreeSet::from([vertex]), lost: BTreeSet::new() }
    }
}

impl JobMaster {
    /// Decides about a failure of the current runs: restart (what and when) or give up.
    pub(super) async fn on_failure(&mut self, failure: Failure) {
        let Some(job) = &self.job else { return };
        if job.status.is_terminal() || job.global_restart_pending || job.reconciling.is_some() {
            return; // a restart of every subtask covers every failure until it starts
        }
        // Restarting every subtask is pending for as long as the job is restarting.
        assert_eq!(job.status, JobStatus::Running, "failover invariant: a failure is decided while the job runs");
        let attempt = job.attempt;
        self.abort_checkpoint(attempt, None, &failure.cause);
        let now = self.started.elapsed();
        let jitter: u64 = crate::rt::random_u64();
        let job = self.job.as_mut().expect("checked");
        for partition in &failure.lost {
            job.partitions.lose(*partition);
        }
        match job.restarts.on_failure(&failure.cause, now, jitter) {
            RestartDecision::GiveUp(reason) => {
                crate::cover!(RestartStrategyGaveUp);
                let next_attempt = job.attempt + 1;
                self.end_job(JobStatus::Failed(reason.clone())).await;
                self.trace(TraceEvent::JobFailed { reason });
                self.cancel_attempts_before(next_attempt);
            }
            RestartDecision::RestartAfter(delay) => match job.failover_strategy() {
                FailoverStrategy::RestartAll => self.restart_all(delay, failure.cause).await,
                FailoverStrategy::Region => self.restart_regions(delay, failure).await,
            },
        }
    }

    /// Cancels every subtask and runs the whole job again after `delay`.
    async fn restart_all(&mut self, delay: std::time::Duration, cause: String) {
        let job = self.job.as_mut().expect("restarting needs a job");
        let graph = job.strategy.graph();
        let regions =
            graph.regions().iter().filter(|region| job.strategy.state(region.id) != RegionState::Created).count();
        let subtasks = job.executions.len() as u32;
        job.attempt += 1;
        job.check_restart(FailoverStrategy::RestartAll);
        job.floor = job.attempt;
        job.status = JobStatus::Restarting;
        job.restart_at = Some(Instant::now() + delay);
        job.global_restart_pending = true;
        let released = job.reset_progress();
        let (attempt, job_id) = (job.attempt, job.spec.job_id.clone());
        ha::append(self.ha.as_ref(), &job_id, &ha::JobEvent::AttemptStarted { attempt, global: true }).await;
        self.slot_pool.release_all();
        self.trace(TraceEvent::JobRestarting {
            attempt,
            delay_ms: delay.as_millis() as u64,
            cause,
            regions: regions as u32,
            subtasks,
        });
        self.cancel_attempts_before(attempt);
        self.release_partitions(released);
    }

    /// Restarts the regions the failure makes necessary (see [`regions_to_restart`]) after
    /// `delay`; the others go on.
    async fn restart_regions(&mut self, delay: std::time::Duration, failure: Failure) {
        let job = self.job.as_mut().expect("restarting needs a job");
        let graph = job.strategy.graph();
        let failed: BTreeSet<RegionId> = failure
            .failed
            .iter()
            .filter(|vertex| job.executions.contains_key(vertex))
            .map(|vertex| graph.region_of(*vertex))
            .collect();
        let available = |partition| job.current_partition(partition).is_some_and(|id| job.partitions.is_available(id));
        let started = |region| job.strategy.state(region) != RegionState::Created;
        let regions = regions_to_restart(graph, &failed, available, started);
        let vertices: Vec<ExecutionVertexId> = regions
            .iter()
            .flat_map(|region| graph.regions()[region.0 as usize].vertices.iter().copied())
            .filter(|vertex| job.executions.contains_key(vertex))
            .collect();
        job.attempt += 1;
        job.check_restart(FailoverStrategy::Region);
        let attempt = job.attempt;
        let finished: Vec<ExecutionVertexId> =
            vertices.iter().copied().filter(|vertex| job.executions[vertex].finished).collect();
        let event = ha::JobEvent::SubtasksReset { attempt, vertices: finished.clone() };
        let job_id = job.spec.job_id.clone();
        ha::append(self.ha.as_ref(), &job_id, &event).await;

        let job = self.job.as_mut().expect("still there");
        let (mut cancel, mut released) = (Vec::new(), Vec::new());
        for vertex in &vertices {
            let execution = job.executions.remove(vertex).expect("listed above");
            for produced in job.strategy.graph().produced_partitions(*vertex) {
                let id = ResultPartitionId { partition: produced.id, attempt: execution.attempt };
                released.extend(job.partitions.untrack(id));
            }
            if execution.finished {
                continue;
            }
            let Some(slot) = execution.slot else { continue };
            cancel.push((slot.clone(), ExecutionAttemptId { vertex: *vertex, attempt: execution.attempt }));
            if let Some(users) = job.slot_users.get_mut(&slot) {
                let was_user = users.remove(vertex);
                assert!(was_user, "jobmaster invariant: a run uses its slot until it finishes or restarts ({vertex})");
                if users.is_empty() {
                    job.slot_users.remove(&slot);
                    self.slot_pool.release(&slot);
                }
            }
        }
        // The restarted regions wait out the delay; the others go on, and are scheduled as
        // their inputs become ready.
        let due = Instant::now() + delay;
        for region in &regions {
            let key = job.strategy.graph().regions()[region.0 as usize].vertices[0];
            let hold = job.region_holds.entry(key).or_insert(due);
            *hold = (*hold).max(due);
        }
        job.strategy.reset_regions(&regions);
        self.trace(TraceEvent::RegionsRestarting {
            attempt,
            delay_ms: delay.as_millis() as u64,
            cause: failure.cause,
            regions: regions.len() as u32,
            subtasks: vertices.iter().map(ToString::to_string).collect(),
            finished: finished.len() as u32,
            failed: failure.failed.iter().map(ToString::to_string).collect(),
            lost: failure.lost.iter().map(ToString::to_string).collect(),
        });
        self.cancel_tasks(cancel);
        self.release_partitions(released);
    }
}

impl JobRun {
    /// Asserts what a restart under the attempt just taken relies on: it follows the job's
    /// strategy, starts while the job runs with no restart of every subtask pending, and its
    /// number is newer than every current run's (attempt numbers only grow).
    fn check_restart(&self, strategy: FailoverStrategy) {
        let attempt = self.attempt;
        assert_eq!(self.failover_strategy(), strategy, "failover invariant: a restart follows the job's strategy");
        assert_eq!(self.status, JobStatus::Running, "failover invariant: a restart starts while running (a{attempt})");
        assert!(!self.global_restart_pending, "failover invariant: no restart starts while all restart (a{attempt})");
        assert!(self.reconciling.is_none(), "failover invariant: no restart starts while reconciling (a{attempt})");
        let newest = self.executions.values().map(|run| run.attempt).max();
        assert!(
            newest.is_none_or(|newest| newest < attempt),
            "jobmaster invariant: attempt numbers only grow (a{attempt} after a run of a{newest:?})"
        );
    }
}
