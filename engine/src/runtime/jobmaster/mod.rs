//! The JobMaster process: plans a submitted job, schedules its pipelined regions into the
//! TaskManagers' slots, follows task states and heartbeats, tracks partitions, and restarts the
//! job after failures.
//!
//! All state lives in one actor: RPC handlers and a ticker only send it [`Event`]s, so the
//! JobMaster's decisions are a sequence of event handlers with no interleaving to reason about.
//!
//! ```text
//!            submit                 all subtasks finished
//!  (none) ───────────> Running ───────────────────────────> Finished
//!                       │   ▲
//!   task failed or      │   │ restart delay elapsed
//!   TaskManager lost    ▼   │
//!                    Restarting ── restart strategy gives up ──> Failed
//! ```
//!
//! A restart cancels every task of the old attempt, releases its partitions and slots, and
//! schedules the job again under a new attempt number; messages about older attempts are
//! ignored. A lost TaskManager fails the job only if it ran unfinished tasks: a finished
//! producer's partitions lost with it are found missing by their consumers (partition-not-found),
//! and with the remote shuffle service they are not lost at all.
//!
//! The JobMaster keeps each submitted job, every attempt number it starts, and the job's final
//! status in the durable store ([`ha`]), synced before it acts on them. A restarted JobMaster
//! finds an unfinished job there and runs it again from the start under the next attempt number
//! (Flink's HA job recovery without progress recovery): attempt numbers never repeat, so sink
//! transactions of the lost attempts stay fenced.

mod checkpoints;
mod deploy;
mod ha;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::time::Instant;
use tokio::sync::{mpsc, oneshot};

use super::JobSpec;
use super::messages::{
    AcknowledgeCheckpoint, CancelJobAttempts, ClusterOverview, ExecutionAttemptId, Heartbeat, JobStatus,
    JobStatusReport, RegisterTaskManager, RequestClusterOverview, RequestJobStatus, SubmitJob, TaskOutcome,
    UpdateTaskExecutionState,
};
use super::trace::{TraceEvent, TracerHandle};
use crate::checkpoint::{CheckpointCoordinator, CompletedCheckpoint};
use crate::failover::{RestartDecision, RestartTracker};
use crate::graph::{ExecutionGraph, ExecutionVertexId, ExternalSystems, IntermediateDataSetId};
use crate::rpc::{RpcClient, serve};
use crate::scheduler::{SchedulingStrategy, SlotId, SlotPool};
use crate::shuffle::protocol::ReleasePartitions;
use crate::shuffle::{PartitionTracker, ShuffleDescriptor, ShuffleMaster, shuffle_master};
use crate::storage::{Storage, StorageFactory};

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
    /// Where external systems (and the shuffle service) are, passed to every task.
    pub external: ExternalSystems,
    /// Opens the durable store, once per process: submitted jobs and their attempts outlive
    /// the process there.
    pub storage: StorageFactory,
    /// Where its events go.
    pub tracer: TracerHandle,
}

const TICK: Duration = Duration::from_millis(20);
const CONTROL_TIMEOUT: Duration = Duration::from_millis(500);

/// What the JobMaster's actor reacts to.
enum Event {
    Submit(JobSpec, oneshot::Sender<Result<(), String>>),
    Status(String, oneshot::Sender<Option<JobStatusReport>>),
    Overview(oneshot::Sender<ClusterOverview>),
    Register(RegisterTaskManager),
    /// A heartbeat and when it arrived (it may wait in the queue while the actor waits for the
    /// durable store).
    Heartbeat(Heartbeat, oneshot::Sender<bool>, Instant),
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
    /// The ticker fired at this time.
    Tick(Instant),
}

struct TaskManagerInfo {
    instance: u64,
    address: SocketAddr,
    last_heartbeat: Instant,
}

struct Execution {
    slot: SlotId,
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
    attempt: u32,
    status: JobStatus,
    restarts: RestartTracker,
    restart_at: Option<Instant>,
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
}

impl JobRun {
    fn new(
        spec: JobSpec,
        attempt: u32,
        external: &ExternalSystems,
        completed: Vec<CompletedCheckpoint>,
    ) -> Result<JobRun, String> {
        let job_graph = spec.plan()?;
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
            status: JobStatus::Running,
            restart_at: None,
            executions: BTreeMap::new(),
            slot_users: BTreeMap::new(),
            partition_bytes: BTreeMap::new(),
            waiting_for_slots_since: None,
        })
    }

    /// Forgets the attempt's progress for a restart; returns the partitions to release.
    fn reset_progress(&mut self) -> Vec<ShuffleDescriptor> {
        self.strategy.reset();
        self.final_notified = None;
        self.executions.clear();
        self.slot_users.clear();
        self.partition_bytes.clear();
        self.waiting_for_slots_since = None;
        self.partitions.take_all()
    }
}

struct JobMaster {
    config: JobMasterConfig,
    client: RpcClient,
    events: mpsc::UnboundedSender<Event>,
    task_managers: BTreeMap<String, TaskManagerInfo>,
    slot_pool: SlotPool,
    job: Option<JobRun>,
    /// The durable store, opened by this process.
    ha: Arc<dyn Storage>,
    /// When this process started: the checkpoint coordinator's clock counts from it.
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

fn serve_events(endpoint: &Endpoint, events: &mpsc::UnboundedSender<Event>) {
    serve(endpoint, forward(events, |request: SubmitJob, reply| Event::Submit(request.spec, reply)));
    serve(endpoint, forward(events, |request: RequestJobStatus, reply| Event::Status(request.job_id, reply)));
    serve(endpoint, forward(events, |request: Heartbeat, reply| Event::Heartbeat(request, reply, Instant::now())));
    serve(endpoint, forward(events, |_: RequestClusterOverview, reply| Event::Overview(reply)));
    let sender = events.clone();
    serve(endpoint, move |request: RegisterTaskManager| {
        let _ = sender.send(Event::Register(request));
        async {}
    });
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
    madsim::task::spawn(async move {
        loop {
            madsim::time::sleep(TICK).await;
            if ticker.send(Event::Tick(Instant::now())).is_err() {
                return;
            }
        }
    });
}

/// Runs a JobMaster process until it is killed.
pub async fn run_job_master(config: JobMasterConfig) {
    let endpoint = Endpoint::bind(config.address)
        .await
        .unwrap_or_else(|error| panic!("internal: job master cannot bind {}: {error}", config.address));
    config.tracer.record(TraceEvent::JobMasterStarted);
    let (events, mut receiver) = mpsc::unbounded_channel();
    serve_events(&endpoint, &events);
    let mut job_master = JobMaster {
        started: Instant::now(),
        ha: (config.storage)(),
        client: RpcClient::new(endpoint),
        events,
        config,
        task_managers: BTreeMap::new(),
        slot_pool: SlotPool::default(),
        job: None,
    };
    job_master.recover().await;
    while let Some(event) = receiver.recv().await {
        job_master.handle(event).await;
    }
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
                    restarts: job.restarts.restarts(),
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
            Event::Register(registration) => self.register(registration).await,
            Event::Heartbeat(heartbeat, reply, arrived) => {
                let known = match self.task_managers.get_mut(&heartbeat.name) {
                    Some(info) if info.instance == heartbeat.instance => {
                        info.last_heartbeat = info.last_heartbeat.max(arrived);
                        true
                    }
                    _ => false,
                };
                let _ = reply.send(known);
            }
            Event::TaskUpdate(update) => self.on_task_update(update).await,
            Event::Deployed(execution) => {
                if let Some(job) = self.job.as_mut().filter(|job| job.attempt == execution.attempt)
                    && let Some(deployed) = job.executions.get_mut(&execution.vertex)
                {
                    deployed.deployed = true;
                }
            }
            Event::CheckpointAck(ack) => self.on_checkpoint_ack(ack).await,
            Event::CheckpointDeclined { attempt, checkpoint, reason } => {
                self.abort_checkpoint(attempt, Some(checkpoint), &reason);
            }
            Event::DeployFailed { execution, error } => {
                if self.job.as_ref().is_some_and(|job| job.attempt == execution.attempt) {
                    self.on_failure(format!("deploying {execution} failed: {error}")).await;
                }
            }
            Event::Tick(at) => self.on_tick(at).await,
        }
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
        let job = JobRun::new(spec, 0, &self.config.external, Vec::new())?;
        self.trace(TraceEvent::JobSubmitted {
            job_id: job.spec.job_id.clone(),
            mode: job.spec.mode.to_string(),
            vertices: job.strategy.graph().job_graph().vertices.iter().map(|vertex| vertex.name.clone()).collect(),
        });
        ha::persist_spec(self.ha.as_ref(), &job.spec).await;
        ha::persist_attempt(self.ha.as_ref(), &job.spec.job_id, 0).await;
        self.job = Some(job);
        self.try_schedule().await;
        Ok(())
    }

    /// Finds the jobs a previous JobMaster process accepted; runs an unfinished one again under
    /// its next attempt number.
    async fn recover(&mut self) {
        let mut recovered: Vec<JobRun> = Vec::new();
        for stored in ha::stored_jobs(self.ha.as_ref()).await {
            let completed = stored.checkpoints;
            let Ok(mut job) = JobRun::new(stored.spec, stored.last_attempt + 1, &self.config.external, completed)
            else {
                continue;
            };
            match stored.result {
                Some(status) => job.status = status,
                None => {
                    ha::persist_attempt(self.ha.as_ref(), &job.spec.job_id, job.attempt).await;
                    self.trace(TraceEvent::JobRecovered { job_id: job.spec.job_id.clone(), attempt: job.attempt });
                }
            }
            recovered.push(job);
        }
        // One job at a time: prefer the unfinished one.
        recovered.sort_by_key(|job| !job.status.is_terminal());
        self.job = recovered.pop();
    }

    async fn register(&mut self, registration: RegisterTaskManager) {
        if let Some(known) = self.task_managers.get_mut(&registration.name) {
            if known.instance == registration.instance {
                known.last_heartbeat = Instant::now();
                return; // a retried registration
            }
            self.lose_task_manager(&registration.name, "it restarted as a new instance").await;
        }
        self.trace(TraceEvent::TaskManagerRegistered {
            name: registration.name.clone(),
            instance: registration.instance,
            slots: registration.slots,
        });
        self.slot_pool.add_task_manager(&registration.name, registration.slots);
        let info = TaskManagerInfo {
            instance: registration.instance,
            address: registration.address,
            last_heartbeat: Instant::now(),
        };
        self.task_managers.insert(registration.name, info);
        self.try_schedule().await;
    }

    async fn lose_task_manager(&mut self, name: &str, reason: &str) {
        self.task_managers.remove(name);
        self.slot_pool.remove_task_manager(name);
        let lost = self.job.as_ref().map(|job| job.partitions.needed_on(name)).unwrap_or_default();
        let reason = match lost.len() {
            0 => reason.to_string(),
            1 => format!("{reason}; a finished partition still needed was on it"),
            count => format!("{reason}; {count} finished partitions still needed were on it"),
        };
        self.trace(TraceEvent::TaskManagerLost { name: name.to_string(), reason: reason.clone() });
        // Only tasks still running there fail now. Finished producers' partitions that lived
        // there are gone too, but (as in Flink) their consumers find out when they read them:
        // partition-not-found names the partition, and failover re-runs its producer.
        let affected = self.job.as_ref().is_some_and(|job| {
            job.status == JobStatus::Running
                && job.executions.values().any(|execution| execution.slot.task_manager == name && !execution.finished)
        });
        if affected {
            self.on_failure(format!("TaskManager {name} lost: {reason}")).await;
        }
    }

    /// Judges heartbeats as of `now`, the tick's time: events that queued behind a slow store
    /// are judged by when they arrived, not by when the actor got to them.
    async fn on_tick(&mut self, now: Instant) {
        let silent: Vec<String> = self
            .task_managers
            .iter()
            .filter(|(_, info)| now.duration_since(info.last_heartbeat) > self.config.heartbeat_timeout)
            .map(|(name, _)| name.clone())
            .collect();
        for name in silent {
            let reason = format!("no heartbeat for {} ms", self.config.heartbeat_timeout.as_millis());
            self.lose_task_manager(&name, &reason).await;
        }
        if let Some(job) = &mut self.job
            && job.status == JobStatus::Restarting
            && job.restart_at.is_some_and(|at| now >= at)
        {
            job.status = JobStatus::Running;
            job.restart_at = None;
        }
        self.try_schedule().await;
        self.checkpoint_tick();
    }

    async fn on_task_update(&mut self, update: UpdateTaskExecutionState) {
        let Some(job) = &mut self.job else { return };
        let vertex = update.execution.vertex;
        if update.job_id != job.spec.job_id
            || update.execution.attempt != job.attempt
            || job.status != JobStatus::Running
        {
            return; // about an older attempt, or the job is already restarting
        }
        let Some(execution) = job.executions.get_mut(&vertex) else { return };
        match update.outcome {
            TaskOutcome::Finished(report) => {
                if execution.finished {
                    return; // a retried report
                }
                execution.finished = true;
                self.on_task_finished(vertex, report).await;
            }
            TaskOutcome::Failed(failure) => {
                let attempt = job.attempt;
                self.trace(TraceEvent::TaskFailed {
                    attempt,
                    vertex: vertex.vertex.0,
                    subtask: vertex.subtask,
                    reason: failure.to_string(),
                });
                self.on_failure(format!("{vertex} failed: {failure}")).await;
            }
        }
    }

    async fn on_failure(&mut self, cause: String) {
        let Some(job) = &self.job else { return };
        if job.status != JobStatus::Running {
            return; // already restarting: one restart covers every failure of the attempt
        }
        let attempt = job.attempt;
        self.abort_checkpoint(attempt, None, &cause);
        let Some(job) = &mut self.job else { return };
        match job.restarts.on_failure(&cause) {
            RestartDecision::GiveUp(reason) => {
                let next_attempt = job.attempt + 1;
                self.end_job(JobStatus::Failed(reason.clone())).await;
                self.trace(TraceEvent::JobFailed { reason });
                self.cancel_attempts_before(next_attempt);
            }
            RestartDecision::RestartAfter(delay) => {
                job.attempt += 1;
                job.status = JobStatus::Restarting;
                job.restart_at = Some(Instant::now() + delay);
                let released = job.reset_progress();
                let (attempt, job_id) = (job.attempt, job.spec.job_id.clone());
                ha::persist_attempt(self.ha.as_ref(), &job_id, attempt).await;
                self.slot_pool.release_all();
                self.trace(TraceEvent::JobRestarting { attempt, delay_ms: delay.as_millis() as u64, cause });
                self.cancel_attempts_before(attempt);
                self.release_partitions(released);
            }
        }
    }

    fn cancel_attempts_before(&self, attempt: u32) {
        let Some(job) = &self.job else { return };
        for info in self.task_managers.values() {
            let client = self.client.clone();
            let address = info.address;
            let request = CancelJobAttempts { job_id: job.spec.job_id.clone(), attempt };
            // Best effort: a TaskManager that misses it cancels old tasks when new ones arrive.
            madsim::task::spawn(async move {
                let _ = client.call(address, request, CONTROL_TIMEOUT).await;
            });
        }
    }

    /// Tells each partition's server to drop it (best effort: a TaskManager also drops old
    /// attempts' partitions when it cancels them).
    fn release_partitions(&self, descriptors: Vec<ShuffleDescriptor>) {
        let mut by_server: BTreeMap<SocketAddr, Vec<_>> = BTreeMap::new();
        for descriptor in descriptors {
            by_server.entry(descriptor.location.address()).or_default().push(descriptor.partition);
        }
        for (address, partitions) in by_server {
            let client = self.client.clone();
            madsim::task::spawn(async move {
                let _ = client.call(address, ReleasePartitions { partitions }, CONTROL_TIMEOUT).await;
            });
        }
    }

    /// Records a job's final status, durably first, and releases what it still holds.
    async fn end_job(&mut self, status: JobStatus) {
        let job = self.job.as_mut().expect("ending needs a job");
        assert!(status.is_terminal(), "internal: {status:?} is not a final status");
        ha::persist_result(self.ha.as_ref(), &job.spec.job_id, &status).await;
        job.status = status;
        let released = job.partitions.take_all();
        self.release_partitions(released);
    }
}
