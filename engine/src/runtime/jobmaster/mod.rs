//! The JobMaster process: plans a submitted job, schedules its pipelined regions into the
//! TaskManagers' slots, follows task states and heartbeats, and restarts the job after failures.
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
//! A restart cancels every task of the old attempt, frees all slots, and schedules the job
//! again under a new attempt number; messages about older attempts are ignored.
//!
//! The JobMaster keeps each submitted job, every attempt number it starts, and the job's final
//! status in its durable (HA) storage, synced before it acts on them. A restarted JobMaster
//! finds an unfinished job there and runs it again from the start under the next attempt number
//! (Flink's HA job recovery without progress recovery): attempt numbers never repeat, so sink
//! transactions of the lost attempts stay fenced.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use madsim::net::Endpoint;
use madsim::time::Instant;
use tokio::sync::{mpsc, oneshot};

use super::JobSpec;
use super::messages::{
    CancelJobAttempts, ClusterOverview, ExecutionAttemptId, Heartbeat, JobStatus, JobStatusReport, RegisterTaskManager,
    RequestClusterOverview, RequestJobStatus, SubmitJob, SubmitTask, TaskDeploymentDescriptor, TaskOutcome,
    UpdateTaskExecutionState,
};
use super::trace::{TraceEvent, TracerHandle};
use crate::failover::{RestartDecision, RestartTracker};
use crate::graph::{ExecutionGraph, ExecutionVertexId, ExternalSystems, IntermediateDataSetId, RegionId};
use crate::rpc::{RpcClient, serve};
use crate::scheduler::adaptive::decide;
use crate::scheduler::{SchedulingStrategy, SlotId, SlotPool};
use crate::shuffle::{InputChannelSpec, ResultPartitionId};
use crate::storage::Storage;

/// How the JobMaster is set up.
#[derive(Clone)]
pub struct JobMasterConfig {
    /// Where it serves requests.
    pub address: SocketAddr,
    /// A TaskManager silent this long is lost.
    pub heartbeat_timeout: Duration,
    /// A region that waits this long for slots it can never get fails the job.
    pub slot_request_timeout: Duration,
    /// Where external systems are, passed to every task.
    pub external: ExternalSystems,
    /// Durable storage that outlives the process: submitted jobs and their attempts.
    pub storage: Arc<dyn Storage>,
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
    Heartbeat(Heartbeat, oneshot::Sender<bool>),
    TaskUpdate(UpdateTaskExecutionState),
    DeployFailed { execution: ExecutionAttemptId, error: String },
    Tick,
}

struct TaskManagerInfo {
    instance: u64,
    address: SocketAddr,
    last_heartbeat: Instant,
}

struct Execution {
    slot: SlotId,
    finished: bool,
}

struct JobRun {
    spec: JobSpec,
    plan_fingerprint: u64,
    strategy: SchedulingStrategy,
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
}

impl JobRun {
    fn new(spec: JobSpec, attempt: u32) -> Result<JobRun, String> {
        let job_graph = spec.plan()?;
        let plan_fingerprint = job_graph.fingerprint();
        Ok(JobRun {
            restarts: RestartTracker::new(spec.restart_strategy),
            strategy: SchedulingStrategy::new(ExecutionGraph::new(Arc::new(job_graph))),
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
}

fn ha_path(job_id: &str, file: &str) -> String {
    format!("jobs/{job_id}/{file}")
}

struct JobMaster {
    config: JobMasterConfig,
    client: RpcClient,
    events: mpsc::UnboundedSender<Event>,
    task_managers: BTreeMap<String, TaskManagerInfo>,
    slot_pool: SlotPool,
    job: Option<JobRun>,
}

/// A request handler that hands the request to the actor and answers with the actor's reply.
/// If the actor is gone the answer never comes, and the caller's timeout handles it.
fn forward<R, T>(
    events: &mpsc::UnboundedSender<Event>,
    make: impl Fn(R, oneshot::Sender<T>) -> Event + Send + Sync + 'static,
) -> impl Fn(R) -> std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>> + Send + Sync + 'static
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

/// Runs a JobMaster process until it is killed.
pub async fn run_job_master(config: JobMasterConfig) {
    let endpoint = Endpoint::bind(config.address)
        .await
        .unwrap_or_else(|error| panic!("internal: job master cannot bind {}: {error}", config.address));
    config.tracer.record(TraceEvent::JobMasterStarted);
    let (events, mut receiver) = mpsc::unbounded_channel();
    serve(&endpoint, forward(&events, |request: SubmitJob, reply| Event::Submit(request.spec, reply)));
    serve(&endpoint, forward(&events, |request: RequestJobStatus, reply| Event::Status(request.job_id, reply)));
    serve(&endpoint, forward(&events, |request: Heartbeat, reply| Event::Heartbeat(request, reply)));
    serve(&endpoint, forward(&events, |_: RequestClusterOverview, reply| Event::Overview(reply)));
    let sender = events.clone();
    serve(&endpoint, move |request: RegisterTaskManager| {
        let _ = sender.send(Event::Register(request));
        async {}
    });
    let sender = events.clone();
    serve(&endpoint, move |request: UpdateTaskExecutionState| {
        let _ = sender.send(Event::TaskUpdate(request));
        async {}
    });
    let ticker = events.clone();
    madsim::task::spawn(async move {
        loop {
            madsim::time::sleep(TICK).await;
            if ticker.send(Event::Tick).is_err() {
                return;
            }
        }
    });
    let mut job_master = JobMaster {
        client: RpcClient::new(endpoint),
        events,
        config,
        task_managers: BTreeMap::new(),
        slot_pool: SlotPool::default(),
        job: None,
    };
    job_master.recover();
    while let Some(event) = receiver.recv().await {
        job_master.handle(event);
    }
}

impl JobMaster {
    fn trace(&self, event: TraceEvent) {
        self.config.tracer.record(event);
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Submit(spec, reply) => {
                let _ = reply.send(self.submit(spec));
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
            Event::Register(registration) => self.register(registration),
            Event::Heartbeat(heartbeat, reply) => {
                let known = match self.task_managers.get_mut(&heartbeat.name) {
                    Some(info) if info.instance == heartbeat.instance => {
                        info.last_heartbeat = Instant::now();
                        true
                    }
                    _ => false,
                };
                let _ = reply.send(known);
            }
            Event::TaskUpdate(update) => self.on_task_update(update),
            Event::DeployFailed { execution, error } => {
                if self.job.as_ref().is_some_and(|job| job.attempt == execution.attempt) {
                    self.on_failure(format!("deploying {execution} failed: {error}"));
                }
            }
            Event::Tick => self.on_tick(),
        }
    }

    fn submit(&mut self, spec: JobSpec) -> Result<(), String> {
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
        let job = JobRun::new(spec, 0)?;
        self.trace(TraceEvent::JobSubmitted {
            job_id: job.spec.job_id.clone(),
            mode: job.spec.mode.to_string(),
            vertices: job.strategy.graph().job_graph().vertices.iter().map(|vertex| vertex.name.clone()).collect(),
        });
        let encoded = serde_json::to_vec(&job.spec).expect("a job spec serializes");
        let spec_path = ha_path(&job.spec.job_id, "spec");
        self.config.storage.append(&spec_path, &encoded);
        self.config.storage.sync(&spec_path).expect("internal: a file just written exists");
        self.persist_attempt(&job.spec.job_id, 0);
        self.job = Some(job);
        self.try_schedule();
        Ok(())
    }

    /// Makes an attempt number durable before any task of it is deployed.
    fn persist_attempt(&self, job_id: &str, attempt: u32) {
        let path = ha_path(job_id, "attempts");
        self.config.storage.append(&path, &attempt.to_be_bytes());
        self.config.storage.sync(&path).expect("internal: a file just written exists");
    }

    /// Makes a job's final status durable, so a restarted JobMaster does not run it again.
    fn persist_result(&self, job_id: &str, status: &JobStatus) {
        let path = ha_path(job_id, "result");
        self.config.storage.append(&path, &serde_json::to_vec(status).expect("a status serializes"));
        self.config.storage.sync(&path).expect("internal: a file just written exists");
    }

    /// Finds the jobs a previous JobMaster process accepted; runs an unfinished one again under
    /// its next attempt number.
    fn recover(&mut self) {
        let storage = Arc::clone(&self.config.storage);
        let read = |path: &str| -> Option<Vec<u8>> {
            let length = storage.length(path).ok()?;
            Some(storage.read(path, 0, length).expect("internal: reading a whole file"))
        };
        let mut recovered: Vec<JobRun> = Vec::new();
        for spec_path in storage.list("jobs/").into_iter().filter(|path| path.ends_with("/spec")) {
            let spec: JobSpec = serde_json::from_slice(&read(&spec_path).expect("listed"))
                .unwrap_or_else(|error| panic!("internal: HA storage holds an unreadable job spec: {error}"));
            let attempts = read(&ha_path(&spec.job_id, "attempts")).unwrap_or_default();
            let last_attempt = attempts
                .chunks_exact(4)
                .last()
                .map(|bytes| u32::from_be_bytes(bytes.try_into().expect("4 bytes")))
                .unwrap_or(0);
            let result: Option<JobStatus> = read(&ha_path(&spec.job_id, "result")).map(|bytes| {
                serde_json::from_slice(&bytes).expect("internal: HA storage holds an unreadable job status")
            });
            let Ok(mut job) = JobRun::new(spec, last_attempt + 1) else { continue };
            match result {
                Some(status) => job.status = status,
                None => {
                    self.persist_attempt(&job.spec.job_id, job.attempt);
                    self.trace(TraceEvent::JobRecovered { job_id: job.spec.job_id.clone(), attempt: job.attempt });
                }
            }
            recovered.push(job);
        }
        // One job at a time: prefer the unfinished one.
        recovered.sort_by_key(|job| !job.status.is_terminal());
        self.job = recovered.pop();
    }

    fn register(&mut self, registration: RegisterTaskManager) {
        if let Some(known) = self.task_managers.get_mut(&registration.name) {
            if known.instance == registration.instance {
                known.last_heartbeat = Instant::now();
                return; // a retried registration
            }
            self.lose_task_manager(&registration.name, "it restarted as a new instance");
        }
        self.trace(TraceEvent::TaskManagerRegistered {
            name: registration.name.clone(),
            instance: registration.instance,
            slots: registration.slots,
        });
        self.slot_pool.add_task_manager(&registration.name, registration.slots);
        self.task_managers.insert(
            registration.name,
            TaskManagerInfo {
                instance: registration.instance,
                address: registration.address,
                last_heartbeat: Instant::now(),
            },
        );
        self.try_schedule();
    }

    fn lose_task_manager(&mut self, name: &str, reason: &str) {
        self.task_managers.remove(name);
        self.slot_pool.remove_task_manager(name);
        self.trace(TraceEvent::TaskManagerLost { name: name.to_string(), reason: reason.to_string() });
        let affected = self.job.as_ref().is_some_and(|job| {
            job.status == JobStatus::Running
                && job.executions.values().any(|execution| execution.slot.task_manager == name)
        });
        if affected {
            self.on_failure(format!("TaskManager {name} lost: {reason}"));
        }
    }

    fn on_tick(&mut self) {
        let now = Instant::now();
        let silent: Vec<String> = self
            .task_managers
            .iter()
            .filter(|(_, info)| now.duration_since(info.last_heartbeat) > self.config.heartbeat_timeout)
            .map(|(name, _)| name.clone())
            .collect();
        for name in silent {
            let reason = format!("no heartbeat for {} ms", self.config.heartbeat_timeout.as_millis());
            self.lose_task_manager(&name, &reason);
        }
        if let Some(job) = &mut self.job
            && job.status == JobStatus::Restarting
            && job.restart_at.is_some_and(|at| now >= at)
        {
            job.status = JobStatus::Running;
            job.restart_at = None;
        }
        self.try_schedule();
    }

    fn on_task_update(&mut self, update: UpdateTaskExecutionState) {
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
            TaskOutcome::Finished { records_in, records_out, disk_bytes_read, disk_bytes_written, partition_bytes } => {
                if execution.finished {
                    return; // a retried report
                }
                execution.finished = true;
                for (dataset, bytes) in partition_bytes {
                    job.partition_bytes.insert((dataset, vertex.subtask), bytes);
                }
                let slot = execution.slot.clone();
                let attempt = job.attempt;
                let users = job.slot_users.get_mut(&slot).expect("internal: an execution's slot is tracked");
                users.remove(&vertex);
                if users.is_empty() {
                    job.slot_users.remove(&slot);
                    self.slot_pool.release(&slot);
                }
                job.strategy.on_vertex_finished(vertex);
                let all_finished = job.strategy.all_finished();
                let restarts = job.restarts.restarts();
                self.trace(TraceEvent::TaskFinished {
                    attempt,
                    vertex: vertex.vertex.0,
                    subtask: vertex.subtask,
                    records_in,
                    records_out,
                    disk_bytes_read,
                    disk_bytes_written,
                });
                if all_finished {
                    self.end_job(JobStatus::Finished);
                    self.trace(TraceEvent::JobFinished { restarts });
                }
                self.try_schedule();
            }
            TaskOutcome::Failed(failure) => {
                let attempt = job.attempt;
                self.trace(TraceEvent::TaskFailed {
                    attempt,
                    vertex: vertex.vertex.0,
                    subtask: vertex.subtask,
                    reason: failure.to_string(),
                });
                self.on_failure(format!("{vertex} failed: {failure}"));
            }
        }
    }

    fn on_failure(&mut self, cause: String) {
        let Some(job) = &mut self.job else { return };
        if job.status != JobStatus::Running {
            return; // already restarting: one restart covers every failure of the attempt
        }
        match job.restarts.on_failure(&cause) {
            RestartDecision::GiveUp(reason) => {
                let next_attempt = job.attempt + 1;
                self.end_job(JobStatus::Failed(reason.clone()));
                self.trace(TraceEvent::JobFailed { reason });
                self.cancel_attempts_before(next_attempt);
            }
            RestartDecision::RestartAfter(delay) => {
                job.attempt += 1;
                job.status = JobStatus::Restarting;
                job.restart_at = Some(Instant::now() + delay);
                job.strategy.reset();
                job.executions.clear();
                job.slot_users.clear();
                job.partition_bytes.clear();
                job.waiting_for_slots_since = None;
                let (attempt, job_id) = (job.attempt, job.spec.job_id.clone());
                self.persist_attempt(&job_id, attempt);
                self.slot_pool.release_all();
                self.trace(TraceEvent::JobRestarting { attempt, delay_ms: delay.as_millis() as u64, cause });
                self.cancel_attempts_before(attempt);
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

    /// Decides the parallelism of every vertex whose producers all finished (batch, adaptive).
    fn decide_parallelism(&mut self) {
        let Some(job) = &mut self.job else { return };
        let Some(config) = job.spec.adaptive else { return };
        for vertex in job.strategy.decidable_vertices() {
            let job_graph = Arc::clone(job.strategy.graph().job_graph());
            let mut bytes = vec![0u64; job_graph.vertex(vertex).max_parallelism as usize];
            for dataset in &job_graph.vertex(vertex).inputs {
                for ((produced, _), produced_bytes) in job.partition_bytes.range((*dataset, 0)..=(*dataset, u32::MAX)) {
                    assert_eq!(produced, dataset, "internal: partition bytes out of range");
                    assert_eq!(
                        produced_bytes.len(),
                        bytes.len(),
                        "internal: a producer of v{} wrote {} subpartitions, not one per key group",
                        vertex.0,
                        produced_bytes.len()
                    );
                    for (total, add) in bytes.iter_mut().zip(produced_bytes) {
                        *total += add;
                    }
                }
            }
            let decision = decide(&bytes, &config);
            let event = TraceEvent::ParallelismDecided {
                attempt: job.attempt,
                vertex: vertex.0,
                parallelism: decision.parallelism(),
                input_bytes: decision.input_bytes,
            };
            job.strategy.initialize_vertex(vertex, decision.ranges);
            self.config.tracer.record(event);
        }
    }

    fn try_schedule(&mut self) {
        self.decide_parallelism();
        let Some(job) = &self.job else { return };
        if job.status != JobStatus::Running {
            return;
        }
        let mut waiting = false;
        for region in job.strategy.schedulable_regions() {
            let needed = self.job.as_ref().expect("checked").strategy.slot_sharing(region).groups.len() as u32;
            match self.slot_pool.allocate_bulk(needed) {
                Some(slots) => self.deploy_region(region, slots),
                None => waiting = true,
            }
        }
        let now = Instant::now();
        let total_slots = self.slot_pool.total_slots();
        let task_managers = self.slot_pool.task_manager_count();
        let job = self.job.as_mut().expect("checked");
        if !waiting {
            job.waiting_for_slots_since = None;
            return;
        }
        let since = *job.waiting_for_slots_since.get_or_insert(now);
        let plural = if task_managers == 1 { "" } else { "s" };
        let needed = job.strategy.max_slots_per_region();
        if now.duration_since(since) >= self.config.slot_request_timeout && needed > total_slots {
            let reason = format!(
                "not enough slots: a pipelined region of job {} needs {needed} slots at once, but the cluster has {total_slots} ({task_managers} TaskManager{plural})",
                job.spec.job_id
            );
            self.end_job(JobStatus::Failed(reason.clone()));
            self.trace(TraceEvent::JobFailed { reason });
        }
    }

    /// Records a job's final status, durably first.
    fn end_job(&mut self, status: JobStatus) {
        let job = self.job.as_ref().expect("ending needs a job");
        assert!(status.is_terminal(), "internal: {status:?} is not a final status");
        self.persist_result(&job.spec.job_id, &status);
        self.job.as_mut().expect("checked").status = status;
    }

    fn deploy_region(&mut self, region: RegionId, slots: Vec<SlotId>) {
        let job = self.job.as_mut().expect("deploying needs a job");
        let sharing = job.strategy.slot_sharing(region);
        job.strategy.mark_scheduled(region);
        for (slot, group) in slots.iter().zip(&sharing.groups) {
            job.slot_users.insert(slot.clone(), group.iter().copied().collect());
            for vertex in group {
                job.executions.insert(*vertex, Execution { slot: slot.clone(), finished: false });
            }
        }
        let attempt = job.attempt;
        self.trace(TraceEvent::RegionScheduled {
            attempt,
            region: region.0,
            slots: slots.iter().map(ToString::to_string).collect(),
        });
        for (slot, group) in slots.iter().zip(&sharing.groups) {
            for vertex in group {
                self.deploy(*vertex, slot.clone());
            }
        }
    }

    fn deploy(&self, vertex: ExecutionVertexId, slot: SlotId) {
        let job = self.job.as_ref().expect("deploying needs a job");
        let execution = ExecutionAttemptId { vertex, attempt: job.attempt };
        let graph = job.strategy.graph();
        let mut inputs = Vec::new();
        for input in graph.consumed_inputs(vertex) {
            for channel in input.channels {
                let producer_slot = &job
                    .executions
                    .get(&channel.producer)
                    .unwrap_or_else(|| {
                        panic!("internal: {vertex} deployed before its producer {} was placed", channel.producer)
                    })
                    .slot;
                inputs.push(InputChannelSpec {
                    partition: ResultPartitionId { partition: channel.partition, attempt: job.attempt },
                    producer_address: self.task_managers[&producer_slot.task_manager].address,
                    subpartitions: channel.subpartitions,
                });
            }
        }
        let descriptor = TaskDeploymentDescriptor {
            spec: job.spec.clone(),
            plan_fingerprint: job.plan_fingerprint,
            execution,
            parallelism: graph.parallelism(vertex.vertex).expect("internal: a deployed vertex is initialized"),
            slot: slot.clone(),
            inputs,
            external: self.config.external.clone(),
        };
        self.trace(TraceEvent::TaskDeployed {
            attempt: job.attempt,
            vertex: vertex.vertex.0,
            subtask: vertex.subtask,
            slot: slot.to_string(),
        });
        let address = self.task_managers[&slot.task_manager].address;
        let client = self.client.clone();
        let events = self.events.clone();
        madsim::task::spawn(async move {
            let error = match client.call(address, SubmitTask { descriptor }, CONTROL_TIMEOUT).await {
                Ok(Ok(())) => return,
                Ok(Err(refused)) => refused,
                Err(error) => error.to_string(),
            };
            let _ = events.send(Event::DeployFailed { execution, error });
        });
    }
}
