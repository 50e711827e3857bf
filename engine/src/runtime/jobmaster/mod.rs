//! The JobMaster process: plans a submitted job, schedules its pipelined regions into the
//! TaskManagers' slots, follows task states and heartbeats, tracks partitions, and recovers
//! from failures: its own and the tasks'.
//!
//! All state lives in one actor: RPC handlers and a ticker only send it [`Event`]s, so the
//! JobMaster's decisions are a sequence of event handlers with no interleaving to reason about.
//! Heartbeats are the exception: they are answered from a shared registry without waiting for
//! the actor (which may be waiting for the durable store), and the actor judges them by when
//! they arrived.
//!
//! ```text
//!            submit                 all subtasks finished
//!  (none) ───────────> Running ───────────────────────────> Finished
//!                       │   ▲    (a region restart stays Running: the restarted regions
//!   restart-all after   │   │     wait out the delay, the others go on)
//!   a failure           ▼   │ restart delay elapsed
//!                    Restarting ── restart strategy gives up ──> Failed
//! ```
//!
//! Every subtask run has an attempt number; the job's counter only grows and never repeats
//! (it is in the operation log). A failure restarts what the failover strategy says
//! ([`failover`]): every subtask, or only some regions, under the next attempt number, while
//! the other regions go on; messages about runs that are no longer current are ignored.
//!
//! The JobMaster appends what it decides to an operation log in the durable store ([`ha`]),
//! synced before it acts. A restarted JobMaster replays the log ([`recovery`]): a job that
//! checkpoints restarts from its latest completed checkpoint; a batch job keeps the finished
//! subtasks whose partitions the TaskManagers (or the shuffle service) still hold, and re-runs
//! the rest (Flink's batch job recovery, FLIP-383).
//!
//! The TaskManagers it knows, their heartbeats and what losing one fails live in
//! [`task_managers`]; partitions beyond the tracker (what a TaskManager still holds, what to
//! drop) in [`partitions`]; scheduling and deployment in [`deploy`]; checkpoints in
//! [`checkpoints`].

mod checkpoints;
mod deploy;
mod failover;
mod ha;
mod partitions;
mod recovery;
mod task_managers;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::rpc::Endpoint;
use crate::rt::time::Instant;
use tokio::sync::{mpsc, oneshot};

use super::JobSpec;
use super::messages::{
    AcknowledgeCheckpoint, ClusterOverview, ExecutionAttemptId, Heartbeat, JobStatus, JobStatusReport,
    RegisterTaskManager, RequestClusterOverview, RequestJobStatus, SubmitJob, TaskFailure, TaskOutcome,
    UpdateTaskExecutionState,
};
use crate::api::JobRegistry;
use crate::checkpoint::{CheckpointCoordinator, CompletedCheckpoint};
use crate::failover::{FailoverStrategy, RestartTracker};
use crate::graph::{ExecutionGraph, ExecutionVertexId, ExternalSystems, IntermediateDataSetId};
use crate::rpc::{RpcClient, serve};
use crate::scheduler::{SchedulingStrategy, SlotId, SlotPool};
use crate::shuffle::{PartitionTracker, ResultPartitionId, ShuffleDescriptor, ShuffleMaster, shuffle_master};
use crate::storage::{Storage, StorageFactory};
use crate::trace::{TraceEvent, TracerHandle};

use self::failover::Failure;
use self::recovery::Reconciliation;
use self::task_managers::{Registry, TaskManagerInfo};

/// The name under which the shuffle service's address is registered in `ExternalSystems`.
pub const SHUFFLE_SERVICE: &str = "shuffle-service";

/// How the JobMaster is set up.
#[derive(Clone)]
pub struct JobMasterConfig {
    /// Where it serves requests.
    pub address: SocketAddr,
    /// A TaskManager silent this long is lost.
    pub heartbeat_timeout: Duration,
    /// A region that waits this long for slots it can never get fails the job.
    pub slot_request_timeout: Duration,
    /// A restarted JobMaster waits this long for the TaskManagers that held finished partitions
    /// to register again before it decides which finished work to keep.
    pub worker_recovery_timeout: Duration,
    /// Where external systems (and the shuffle service) are, passed to every task.
    pub external: ExternalSystems,
    /// The jobs it can run: a submitted job's plan is built from here.
    pub jobs: JobRegistry,
    /// Opens the durable store, once per process: submitted jobs and their operation logs
    /// outlive the process there.
    pub storage: StorageFactory,
    /// Where its events go.
    pub tracer: TracerHandle,
}

const TICK: Duration = Duration::from_millis(20);
const CONTROL_TIMEOUT: Duration = Duration::from_millis(500);
/// How late the fault point `heartbeat-answered-late` answers a heartbeat: past the
/// TaskManager's call timeout.
const HEARTBEAT_ANSWER_LATE: Duration = Duration::from_secs(1);

/// What the JobMaster's actor reacts to.
enum Event {
    Submit(JobSpec, oneshot::Sender<Result<(), String>>),
    Status(String, oneshot::Sender<Option<JobStatusReport>>),
    Overview(oneshot::Sender<ClusterOverview>),
    Register(RegisterTaskManager, oneshot::Sender<()>),
    TaskUpdate(UpdateTaskExecutionState),
    Deployed(ExecutionAttemptId),
    DeployFailed {
        execution: ExecutionAttemptId,
        error: String,
    },
    CheckpointAck(AcknowledgeCheckpoint),
    CheckpointDeclined {
        attempt: u32,
        checkpoint: u64,
        reason: String,
    },
    /// The shuffle service answered which finished partitions it holds.
    RemotePartitions(Vec<ResultPartitionId>),
    /// A TaskManager answered which of the partitions asked about it can still serve.
    PartitionsHeld {
        name: String,
        instance: u64,
        asked: Vec<ResultPartitionId>,
        held: Vec<ResultPartitionId>,
    },
    /// A TaskManager answered neither a request nor the probe that followed.
    TaskManagerUnreachable {
        name: String,
        instance: u64,
        why: String,
    },
    /// The ticker fired at this time.
    Tick(Instant),
}

struct Execution {
    /// The attempt this run belongs to.
    attempt: u32,
    /// Where it runs; `None` for a finished run a restarted JobMaster found in its log.
    slot: Option<SlotId>,
    /// Its TaskManager accepted it.
    deployed: bool,
    finished: bool,
}

struct JobRun {
    spec: JobSpec,
    plan_fingerprint: u64,
    strategy: SchedulingStrategy,
    shuffle: Box<dyn ShuffleMaster>,
    partitions: PartitionTracker,
    /// The highest attempt number in use; restarted subtasks run under a new one.
    attempt: u32,
    /// The attempt of the last restart of every subtask: runs and partitions of older attempts
    /// are void.
    floor: u32,
    status: JobStatus,
    restarts: RestartTracker,
    restart_at: Option<Instant>,
    /// Regions (by first subtask) that restarted and wait until then to be scheduled again.
    region_holds: BTreeMap<ExecutionVertexId, Instant>,
    /// A restart of every subtask is pending: further failures change nothing.
    global_restart_pending: bool,
    /// The current run of each subtask that was deployed (or found finished in the log).
    executions: BTreeMap<ExecutionVertexId, Execution>,
    /// Unfinished subtasks per allocated slot; the slot is freed when it empties.
    slot_users: BTreeMap<SlotId, BTreeSet<ExecutionVertexId>>,
    /// Bytes per subpartition of every finished producer's partitions, for runtime decisions.
    partition_bytes: BTreeMap<(IntermediateDataSetId, u32), Vec<u64>>,
    waiting_for_slots_since: Option<Instant>,
    /// Streaming with checkpoints: the coordinator.
    checkpoints: Option<CheckpointCoordinator>,
    /// The final checkpoint of this attempt completed: when its tasks were last told.
    final_notified: Option<(u64, Instant)>,
    /// A restarted JobMaster deciding which finished work to keep; nothing is scheduled until
    /// it decided.
    reconciling: Option<Reconciliation>,
}

impl JobRun {
    /// True if a newer run of `execution`'s subtask was deployed, or `execution` is older than
    /// the last restart of every subtask: the state [`Mark::ReportOfSupersededRun`] marks, told
    /// apart from [`JobMaster::is_current`]'s decision so that the mark shows the state whatever
    /// the decision.
    ///
    /// [`Mark::ReportOfSupersededRun`]: crate::cover::Mark::ReportOfSupersededRun
    fn superseded(&self, execution: ExecutionAttemptId) -> bool {
        execution.attempt < self.floor
            || self.executions.get(&execution.vertex).is_some_and(|current| current.attempt > execution.attempt)
    }

    fn new(
        spec: JobSpec,
        attempt: u32,
        (jobs, external): (&JobRegistry, &ExternalSystems),
        completed: Vec<CompletedCheckpoint>,
    ) -> Result<JobRun, String> {
        let job_graph = spec.plan(jobs)?;
        let plan_fingerprint = job_graph.fingerprint();
        let shuffle = shuffle_master(spec.shuffle.kind, external.address(SHUFFLE_SERVICE).ok())?;
        let checkpoints = spec.checkpointing().map(|config| CheckpointCoordinator::new(config, completed));
        Ok(JobRun {
            checkpoints,
            final_notified: None,
            restarts: RestartTracker::new(spec.restart_strategy),
            strategy: SchedulingStrategy::new(ExecutionGraph::new(Arc::new(job_graph))),
            shuffle,
            partitions: PartitionTracker::default(),
            spec,
            plan_fingerprint,
            attempt,
            floor: attempt,
            status: JobStatus::Running,
            restart_at: None,
            region_holds: BTreeMap::new(),
            global_restart_pending: false,
            executions: BTreeMap::new(),
            slot_users: BTreeMap::new(),
            partition_bytes: BTreeMap::new(),
            waiting_for_slots_since: None,
            reconciling: None,
        })
    }

    /// Which subtasks a failure restarts: a job that checkpoints restores all of them from a
    /// checkpoint, whatever the strategy.
    fn failover_strategy(&self) -> FailoverStrategy {
        if self.checkpoints.is_some() { FailoverStrategy::RestartAll } else { self.spec.failover_strategy }
    }

    /// The partition `partition` as its producer's current run writes it.
    fn current_partition(&self, partition: crate::graph::IntermediateResultPartitionId) -> Option<ResultPartitionId> {
        let producer = ExecutionVertexId {
            vertex: self.strategy.graph().job_graph().edge(partition.dataset).source,
            subtask: partition.producer_subtask,
        };
        self.executions.get(&producer).map(|execution| ResultPartitionId { partition, attempt: execution.attempt })
    }

    /// Forgets all progress for a restart of every subtask; returns the partitions to release.
    fn reset_progress(&mut self) -> Vec<ShuffleDescriptor> {
        assert_eq!(
            self.floor, self.attempt,
            "jobmaster invariant: progress is forgotten only by a restart of every subtask, which raises the floor"
        );
        self.strategy.reset();
        self.final_notified = None;
        self.executions.clear();
        self.slot_users.clear();
        self.partition_bytes.clear();
        self.waiting_for_slots_since = None;
        self.region_holds.clear();
        self.partitions.take_all()
    }

    /// Asserts what a job waiting to restart every subtask relies on: that restart is pending,
    /// has a time, and nothing runs or holds a slot meanwhile.
    fn check_restarting(&self) {
        if self.status != JobStatus::Restarting {
            return;
        }
        let attempt = self.attempt;
        assert!(self.global_restart_pending, "jobmaster invariant: a job restarts with a restart pending (a{attempt})");
        assert!(self.restart_at.is_some(), "jobmaster invariant: a restarting job knows when it restarts (a{attempt})");
        assert!(
            self.executions.is_empty(),
            "jobmaster invariant: no subtask runs while every subtask waits to restart (a{attempt}: {} runs)",
            self.executions.len()
        );
        assert!(self.slot_users.is_empty(), "jobmaster invariant: no slot is used while restarting (a{attempt})");
    }

    /// Asserts that a produced partition still tracked belongs to its producer's current run,
    /// which finished it: a run leaves `executions` only with its partitions untracked.
    fn check_produced_by_current_run(&self, id: ResultPartitionId) {
        let producer = ExecutionVertexId {
            vertex: self.strategy.graph().job_graph().edge(id.partition.dataset).source,
            subtask: id.partition.producer_subtask,
        };
        let run = self.executions.get(&producer);
        assert_eq!(
            run.map(|run| run.attempt),
            Some(id.attempt),
            "jobmaster invariant: a tracked partition's producer run is current ({id} of {producer})"
        );
        assert!(
            run.is_some_and(|run| run.finished),
            "jobmaster invariant: a partition is produced only by a run that finished ({id} of {producer})"
        );
    }

    /// Asserts what finishing the job relies on: a run of each subtask, and every run finished.
    fn check_every_run_finished(&self) {
        let subtasks: usize = self.strategy.graph().regions().iter().map(|region| region.vertices.len()).sum();
        assert_eq!(
            self.executions.len(),
            subtasks,
            "jobmaster invariant: a job finishes with a run of each of its subtasks ({})",
            self.spec.job_id
        );
        let unfinished = self.executions.iter().find(|(_, run)| !run.finished).map(|(vertex, _)| *vertex);
        assert!(
            unfinished.is_none(),
            "jobmaster invariant: a job finishes only once every run finished ({} did not: {unfinished:?})",
            self.spec.job_id
        );
    }
}

struct JobMaster {
    config: JobMasterConfig,
    client: RpcClient,
    events: mpsc::UnboundedSender<Event>,
    registry: Registry,
    task_managers: BTreeMap<String, TaskManagerInfo>,
    slot_pool: SlotPool,
    job: Option<JobRun>,
    /// The durable store, opened by this process.
    ha: Arc<dyn Storage>,
    /// When this process started: the checkpoint coordinator's and restart strategy's clock
    /// counts from it.
    started: Instant,
}

/// A request handler that hands the request to the actor and answers with the actor's reply.
/// If the actor is gone the answer never comes, and the caller's timeout handles it.
fn forward<R, T>(
    events: &mpsc::UnboundedSender<Event>,
    make: impl Fn(R, oneshot::Sender<T>) -> Event + Send + Sync + 'static,
) -> impl Fn(R) -> crate::future::BoxFuture<'static, T> + Send + Sync + 'static
where
    T: Send + 'static,
{
    let events = events.clone();
    move |request: R| {
        let (sender, receiver) = oneshot::channel();
        let _ = events.send(make(request, sender));
        Box::pin(async move {
            match receiver.await {
                Ok(value) => value,
                Err(_) => std::future::pending().await,
            }
        })
    }
}

fn serve_events(endpoint: &Endpoint, events: &mpsc::UnboundedSender<Event>, registry: &Registry) {
    serve(endpoint, forward(events, |request: SubmitJob, reply| Event::Submit(request.spec, reply)));
    serve(endpoint, forward(events, |request: RequestJobStatus, reply| Event::Status(request.job_id, reply)));
    serve(endpoint, forward(events, |_: RequestClusterOverview, reply| Event::Overview(reply)));
    let registry = Arc::clone(registry);
    serve(endpoint, move |heartbeat: Heartbeat| {
        let mut registry = registry.lock().expect("registry lock");
        let known = match registry.get_mut(&heartbeat.name) {
            Some(liveness) if liveness.instance == heartbeat.instance && liveness.session == heartbeat.session => {
                liveness.last_heartbeat = Instant::now();
                true
            }
            _ => false,
        };
        let late = crate::buggify!(HeartbeatAnsweredLate);
        async move {
            if late {
                crate::rt::time::sleep(HEARTBEAT_ANSWER_LATE).await;
            }
            known
        }
    });
    // Answered once the actor registered it: a TaskManager heartbeats only after that.
    serve(endpoint, forward(events, |request: RegisterTaskManager, reply| Event::Register(request, reply)));
    let sender = events.clone();
    serve(endpoint, move |request: UpdateTaskExecutionState| {
        let _ = sender.send(Event::TaskUpdate(request));
        async {}
    });
    let sender = events.clone();
    serve(endpoint, move |request: AcknowledgeCheckpoint| {
        let _ = sender.send(Event::CheckpointAck(request));
        async {}
    });
    let ticker = events.clone();
    crate::rt::task::spawn(async move {
        loop {
            crate::rt::time::sleep(TICK).await;
            if ticker.send(Event::Tick(Instant::now())).is_err() {
                return;
            }
        }
    });
}

/// Runs a JobMaster process until it is killed.
pub async fn run_job_master(config: JobMasterConfig) {
    let endpoint = crate::rpc::bind(config.address)
        .await
        .unwrap_or_else(|error| panic!("internal: job master cannot bind {}: {error}", config.address));
    config.tracer.record(TraceEvent::JobMasterStarted);
    let (events, mut receiver) = mpsc::unbounded_channel();
    let registry = Registry::default();
    serve_events(&endpoint, &events, &registry);
    let health = endpoint.clone();
    let mut job_master = JobMaster {
        started: Instant::now(),
        ha: (config.storage)(),
        client: RpcClient::new(endpoint),
        events,
        registry,
        config,
        task_managers: BTreeMap::new(),
        slot_pool: SlotPool::default(),
        job: None,
    };
    job_master.recover().await;
    // Ready once it knows what its predecessor left: submissions and registrations find it so.
    crate::rpc::serve_health(&health, "jm");
    let mut next = None;
    loop {
        let event = match next.take() {
            Some(event) => event,
            None => match receiver.recv().await {
                Some(event) => event,
                None => return,
            },
        };
        match event {
            Event::TaskUpdate(update) if finished(&update) => {
                let (updates, after) = finished_reports_queued(update, &mut receiver);
                next = after;
                job_master.on_finished_reports(updates).await;
            }
            event => job_master.handle(event).await,
        }
    }
}

fn finished(update: &UpdateTaskExecutionState) -> bool {
    matches!(update.outcome, TaskOutcome::Finished(_))
}

/// `first` and the reports of finished subtasks queued right behind it, in order (logged in one
/// write: group commit), and the event that ended the run of them, if one did.
fn finished_reports_queued(
    first: UpdateTaskExecutionState,
    receiver: &mut mpsc::UnboundedReceiver<Event>,
) -> (Vec<UpdateTaskExecutionState>, Option<Event>) {
    let mut updates = vec![first];
    while let Ok(event) = receiver.try_recv() {
        match event {
            Event::TaskUpdate(update) if finished(&update) => updates.push(update),
            other => return (updates, Some(other)),
        }
    }
    (updates, None)
}

impl JobMaster {
    fn trace(&self, event: TraceEvent) {
        self.config.tracer.record(event);
    }

    async fn handle(&mut self, event: Event) {
        match event {
            Event::Submit(spec, reply) => {
                let answer = self.submit(spec).await;
                let _ = reply.send(answer);
            }
            Event::Status(job_id, reply) => {
                let report = self.job.as_ref().filter(|job| job.spec.job_id == job_id).map(|job| JobStatusReport {
                    status: job.status.clone(),
                    attempt: job.attempt,
                    restarts: job.attempt,
                });
                let _ = reply.send(report);
            }
            Event::Overview(reply) => {
                let _ = reply.send(ClusterOverview {
                    task_managers: self.slot_pool.task_manager_count() as u32,
                    total_slots: self.slot_pool.total_slots(),
                    free_slots: self.slot_pool.free_slots(),
                });
            }
            Event::Register(registration, reply) => {
                self.register(registration).await;
                let _ = reply.send(());
            }
            Event::TaskUpdate(update) if finished(&update) => self.on_finished_reports(vec![update]).await,
            Event::TaskUpdate(update) => self.on_task_update(update).await,
            Event::Deployed(execution) => {
                if let Some(job) = &mut self.job
                    && let Some(deployed) = job.executions.get_mut(&execution.vertex)
                    && deployed.attempt == execution.attempt
                {
                    // Only this process deploys, under attempts newer than any run it found
                    // finished in the log: the run it acknowledges was placed in a slot.
                    assert!(
                        deployed.slot.is_some(),
                        "jobmaster invariant: only a run placed in a slot is acknowledged as deployed ({execution})"
                    );
                    deployed.deployed = true;
                }
            }
            Event::CheckpointAck(ack) => self.on_checkpoint_ack(ack).await,
            Event::CheckpointDeclined { attempt, checkpoint, reason } => {
                self.abort_checkpoint(attempt, Some(checkpoint), &reason);
            }
            Event::DeployFailed { execution, error } => {
                if self.is_current(execution) {
                    let cause = format!("deploying {execution} failed: {error}");
                    self.on_failure(Failure::of_subtask(execution.vertex, cause)).await;
                }
            }
            Event::RemotePartitions(held) => self.on_remote_partitions(held),
            Event::PartitionsHeld { name, instance, asked, held } => {
                self.on_partitions_held(name, instance, asked, held).await;
            }
            Event::TaskManagerUnreachable { name, instance, why } => {
                self.on_task_manager_unreachable(&name, instance, &why).await;
            }
            Event::Tick(at) => self.on_tick(at).await,
        }
    }

    /// True if `execution` is the current run of its subtask in a job still going.
    fn is_current(&self, execution: ExecutionAttemptId) -> bool {
        self.job.as_ref().is_some_and(|job| {
            !job.status.is_terminal()
                && job.executions.get(&execution.vertex).is_some_and(|current| current.attempt == execution.attempt)
        })
    }

    async fn submit(&mut self, spec: JobSpec) -> Result<(), String> {
        if let Some(job) = &self.job {
            if job.spec == spec {
                return Ok(()); // a resubmission after a lost reply, or after a JobMaster restart
            }
            if job.spec.job_id == spec.job_id {
                return Err(format!("job id {} was already used for another job", spec.job_id));
            }
            if !job.status.is_terminal() {
                return Err(format!("job {} is still running; this JobMaster runs one job at a time", job.spec.job_id));
            }
        }
        spec.restart_strategy.validate()?;
        let job = JobRun::new(spec, 0, (&self.config.jobs, &self.config.external), Vec::new())?;
        self.trace(TraceEvent::JobSubmitted {
            job_id: job.spec.job_id.clone(),
            mode: job.spec.mode.to_string(),
            vertices: job.strategy.graph().job_graph().vertices.iter().map(|vertex| vertex.name.clone()).collect(),
        });
        ha::persist_spec(self.ha.as_ref(), &job.spec).await;
        ha::append(self.ha.as_ref(), &job.spec.job_id, &ha::JobEvent::AttemptStarted { attempt: 0, global: true })
            .await;
        assert!(
            self.job.as_ref().is_none_or(|previous| previous.status.is_terminal()),
            "jobmaster invariant: a new job replaces only one that ended ({})",
            job.spec.job_id
        );
        self.job = Some(job);
        self.try_schedule().await;
        Ok(())
    }

    /// Every tick: heartbeats, restart delays, reconciliation, scheduling, checkpoints.
    async fn on_tick(&mut self, now: Instant) {
        self.lose_silent_task_managers(now).await;
        if let Some(job) = &self.job {
            job.check_restarting();
        }
        if let Some(job) = &mut self.job
            && job.status == JobStatus::Restarting
            && job.restart_at.is_some_and(|at| now >= at)
        {
            job.status = JobStatus::Running;
            job.restart_at = None;
            job.global_restart_pending = false;
        }
        if let Some(job) = &mut self.job {
            job.region_holds.retain(|_, until| now < *until);
        }
        self.reconcile_tick(now).await;
        self.try_schedule().await;
        self.checkpoint_tick();
    }

    /// Reports of finished subtasks, in the order they came: the finished work of those that are
    /// current is logged in one durable write (a job that checkpoints recovers from its
    /// checkpoints, not from finished work), then each is handled as it would be alone.
    async fn on_finished_reports(&mut self, updates: Vec<UpdateTaskExecutionState>) {
        if let Some(job) = self.job.as_ref().filter(|job| job.checkpoints.is_none()) {
            let mut logged = BTreeSet::new();
            let events: Vec<ha::JobEvent> = updates
                .iter()
                .filter(|update| logged.insert(update.execution))
                .filter_map(|update| self.finished_work(update))
                .collect();
            if !events.is_empty() {
                ha::append_all(self.ha.as_ref(), &job.spec.job_id, &events).await;
            }
        }
        for update in updates {
            self.on_task_update(update).await;
        }
    }

    /// What the operation log records of a finished subtask's report, if the report is about a
    /// current run that has not finished yet: the partitions it completed.
    fn finished_work(&self, update: &UpdateTaskExecutionState) -> Option<ha::JobEvent> {
        let job = self.job.as_ref()?;
        let TaskOutcome::Finished(report) = &update.outcome else { return None };
        if update.job_id != job.spec.job_id || !self.is_current(update.execution) {
            return None;
        }
        let vertex = update.execution.vertex;
        let execution = job.executions.get(&vertex).filter(|execution| !execution.finished)?;
        let attempt = execution.attempt;
        // What a restarted JobMaster's replay keeps: a run no older than the floor, of an attempt
        // the log started (`ha::Replayed`).
        assert!(
            attempt >= job.floor,
            "jobmaster invariant: a current run is no older than the floor ({vertex}@a{attempt}, floor a{})",
            job.floor
        );
        assert!(
            attempt <= job.attempt,
            "jobmaster invariant: a current run's attempt was started ({vertex}@a{attempt}, newest a{})",
            job.attempt
        );
        let partitions = report
            .partitions
            .iter()
            .filter_map(|(dataset, statistics)| {
                let partition =
                    crate::graph::IntermediateResultPartitionId { dataset: *dataset, producer_subtask: vertex.subtask };
                let descriptor = job.partitions.descriptor(ResultPartitionId { partition, attempt })?;
                Some((descriptor.clone(), statistics.bytes_per_subpartition.clone()))
            })
            .collect();
        Some(ha::JobEvent::SubtaskFinished { vertex, attempt, partitions })
    }

    /// Handles one report; a finished subtask's work was logged by [`Self::on_finished_reports`].
    async fn on_task_update(&mut self, update: UpdateTaskExecutionState) {
        let Some(job) = &self.job else { return };
        if update.job_id == job.spec.job_id && job.superseded(update.execution) {
            crate::cover!(ReportOfSupersededRun);
        }
        if update.job_id != job.spec.job_id || !self.is_current(update.execution) {
            return; // about a run that is no longer current, or the job already ended
        }
        let vertex = update.execution.vertex;
        match update.outcome {
            TaskOutcome::Finished(report) => {
                let job = self.job.as_mut().expect("checked");
                let execution = job.executions.get_mut(&vertex).expect("current");
                if execution.finished {
                    return; // a retried report
                }
                execution.finished = true;
                self.on_task_finished(vertex, report).await;
            }
            TaskOutcome::Failed(failure) => {
                self.trace(TraceEvent::TaskFailed {
                    attempt: update.execution.attempt,
                    vertex: vertex.vertex.0,
                    subtask: vertex.subtask,
                    reason: failure.to_string(),
                });
                let lost = match &failure {
                    TaskFailure::Input(error) => BTreeSet::from([error.partition()]),
                    _ => BTreeSet::new(),
                };
                // A partition gone from a TaskManager that still runs: what else did it lose
                // (a lost disk loses them all)? Found now, they restart with this failure
                // instead of one consumer failure at a time.
                if let TaskFailure::Input(error) = &failure
                    && error.data_lost()
                {
                    self.check_partitions_of(error.partition());
                }
                let cause = format!("{vertex} failed: {failure}");
                self.on_failure(Failure { cause, failed: BTreeSet::from([vertex]), lost }).await;
            }
        }
    }

    /// Records a job's final status, durably first, and releases what it still holds.
    async fn end_job(&mut self, status: JobStatus) {
        let job = self.job.as_mut().expect("ending needs a job");
        assert!(status.is_terminal(), "internal: {status:?} is not a final status");
        assert!(
            !job.status.is_terminal(),
            "jobmaster invariant: a job ends once ({} ended {:?}, then {status:?})",
            job.spec.job_id,
            job.status
        );
        ha::append(self.ha.as_ref(), &job.spec.job_id, &ha::JobEvent::JobEnded(status.clone())).await;
        job.status = status;
        let released = job.partitions.take_all();
        self.release_partitions(released);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::JobVertexId;

    fn report(subtask: u32, finished: bool) -> UpdateTaskExecutionState {
        let vertex = ExecutionVertexId { vertex: JobVertexId(0), subtask };
        let outcome = if finished {
            TaskOutcome::Finished(crate::runtime::messages::TaskReport::default())
        } else {
            TaskOutcome::Failed(TaskFailure::Operator("boom".to_string()))
        };
        UpdateTaskExecutionState {
            job_id: "j".to_string(),
            execution: ExecutionAttemptId { vertex, attempt: 0 },
            outcome,
        }
    }

    fn subtasks(updates: &[UpdateTaskExecutionState]) -> Vec<u32> {
        updates.iter().map(|update| update.execution.vertex.subtask).collect()
    }

    #[test]
    fn finished_reports_queued_together_are_taken_up_to_the_first_other_event() {
        let (sender, mut receiver) = mpsc::unbounded_channel();
        for (subtask, finished) in [(1, true), (2, true), (3, false), (4, true)] {
            sender.send(Event::TaskUpdate(report(subtask, finished))).unwrap();
        }
        let (updates, after) = finished_reports_queued(report(0, true), &mut receiver);
        assert_eq!(subtasks(&updates), [0, 1, 2], "in the order they came");
        assert!(matches!(after, Some(Event::TaskUpdate(update)) if update.execution.vertex.subtask == 3));
        let (updates, after) = finished_reports_queued(report(5, true), &mut receiver);
        assert_eq!(subtasks(&updates), [5, 4]);
        assert!(after.is_none(), "nothing else was queued");
    }
}
