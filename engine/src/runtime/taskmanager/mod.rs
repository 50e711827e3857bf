//! The TaskManager process: offers slots to the JobMaster, runs the subtasks it is given, and
//! serves the result partitions they produce.
//!
//! ```text
//!  start ──> register with the JobMaster (retry until acknowledged)
//!             │
//!             └─> heartbeat every interval ── "unknown instance" ──> register again
//! ```
//!
//! A new process is a new *instance* (a random id from the simulation's seeded generator): the
//! JobMaster treats a new instance as the loss of the previous one and its tasks. On start the
//! TaskManager deletes partition files left by a previous instance, which it cannot serve, and
//! its tasks' sort spills.
//!
//! Cancellation: the JobMaster cancels the task runs of restarted regions by name
//! ([`CancelTasks`]), or every run before an attempt ([`CancelJobAttempts`], restart-all); a
//! deployment carries the job's attempt floor and cancels older runs of the same subtask, so a
//! lost cancel message is made up for by the next deployment.
//!
//! Losing the JobMaster: heartbeats that go unanswered for `job_master_timeout`, or answered by
//! a JobMaster that does not know this instance (it restarted, or declared this TaskManager
//! lost), mean the running tasks are orphans: they are cancelled, and the TaskManager registers
//! again, listing the partitions it holds. Finished partitions are kept for `partition_grace`
//! so that a restarted JobMaster can keep the work that produced them; if no JobMaster takes
//! the registration within that time, they are released.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::messages::{
    CancelJobAttempts, CancelTasks, ExecutionAttemptId, Heartbeat, NotifyCheckpointComplete, RegisterTaskManager,
    SubmitTask, TaskDeploymentDescriptor, TaskFailure, TaskOutcome, TriggerCheckpoint, UpdateTaskExecutionState,
};
use super::task::{CheckpointEnvironment, TaskControl, TaskEnvironment, run_task};
use crate::api::JobRegistry;
use crate::graph::{ExecutionGraph, ExecutionVertexId};
use crate::resources::Resources;
use crate::rpc::{RpcClient, serve};
use crate::shuffle::protocol::{ListPartitions, ReleasePartitions, RequestBuffers};
use crate::shuffle::{PartitionLocation, ResultPartitionManager, ShuffleEnvironmentConfig};
use crate::storage::{Storage, StorageFactory};
use crate::trace::{TraceEvent, TracerHandle};

/// How a TaskManager is set up.
#[derive(Clone)]
pub struct TaskManagerConfig {
    /// Its name, stable across restarts.
    pub name: String,
    /// Where it serves requests.
    pub address: SocketAddr,
    /// Slots it offers.
    pub slots: u32,
    /// The jobs it can run: a deployed task's plan is rebuilt from here.
    pub jobs: JobRegistry,
    /// The JobMaster.
    pub job_master: SocketAddr,
    /// How often it heartbeats.
    pub heartbeat_interval: Duration,
    /// Unanswered heartbeats for this long mean the JobMaster is lost.
    pub job_master_timeout: Duration,
    /// How long finished partitions are kept for a JobMaster to come back.
    pub partition_grace: Duration,
    /// Its disk: outlives the process.
    pub storage: Arc<dyn Storage>,
    /// Opens the durable store, where its tasks save checkpoint snapshots.
    pub checkpoint_storage: StorageFactory,
    /// The memory of the partitions it serves, for every job (the job's own shuffle settings
    /// arrive with each task, in its [`crate::runtime::JobSpec`]).
    pub shuffle: ShuffleEnvironmentConfig,
    /// Its cores, disk and network interface and how long work takes on them: its own, or a
    /// machine's that it shares with other TaskManagers. Outlives the process, as the machine.
    pub resources: Arc<Resources>,
    /// Where its events go.
    pub tracer: TracerHandle,
}

/// Timeout of control messages to the JobMaster.
const CONTROL_TIMEOUT: Duration = Duration::from_millis(500);

struct RunningTask {
    handle: crate::rt::task::JoinHandle<()>,
    controls: tokio::sync::mpsc::UnboundedSender<TaskControl>,
}

#[derive(Default)]
struct Tasks {
    running: BTreeMap<(String, ExecutionAttemptId), RunningTask>,
    /// Per job, the attempt of its last restart of every subtask: older runs are void.
    floor: BTreeMap<String, u32>,
    /// Per subtask, the newest attempt seen: older runs are cancelled and refused.
    newest: BTreeMap<(String, ExecutionVertexId), u32>,
    /// Plans rebuilt from the registry, per job and attempt-independent fingerprint.
    plans: BTreeMap<(String, u64), Arc<ExecutionGraph>>,
}

struct TaskManager {
    config: TaskManagerConfig,
    client: RpcClient,
    partitions: ResultPartitionManager,
    resources: Arc<Resources>,
    checkpoint_storage: Arc<dyn Storage>,
    tasks: Mutex<Tasks>,
}

/// Runs a TaskManager process until it is killed.
pub async fn run_task_manager(config: TaskManagerConfig) {
    let instance: u64 = crate::rt::random_u64();
    config.tracer.record(TraceEvent::TaskManagerStarted { instance, slots: config.slots });
    // Best effort: a file it cannot delete now is deleted by the next instance. Sort spills
    // belong to tasks of the previous instance, which are gone.
    for prefix in ["partitions/", "spills/"] {
        for path in config.storage.list(prefix).await.unwrap_or_default() {
            let _ = config.storage.delete(&path).await;
        }
    }
    let endpoint = crate::rpc::bind(config.address).await.unwrap_or_else(|error| {
        panic!("internal: task manager {} cannot bind {}: {error}", config.name, config.address)
    });
    let resources = Arc::clone(&config.resources);
    let task_manager = Arc::new(TaskManager {
        partitions: ResultPartitionManager::new(Arc::clone(&config.storage), config.shuffle, Arc::clone(&resources))
            .serving_at(PartitionLocation::TaskManager { name: config.name.clone(), address: config.address }),
        resources,
        checkpoint_storage: (config.checkpoint_storage)(),
        client: RpcClient::new(endpoint.clone()),
        tasks: Mutex::new(Tasks::default()),
        config,
    });
    let this = Arc::clone(&task_manager);
    serve(&endpoint, move |request: SubmitTask| {
        let this = Arc::clone(&this);
        async move { this.submit(request.descriptor).await }
    });
    let this = Arc::clone(&task_manager);
    serve(&endpoint, move |request: CancelJobAttempts| {
        let this = Arc::clone(&this);
        async move { this.cancel_before(&request.job_id, request.attempt).await }
    });
    let this = Arc::clone(&task_manager);
    serve(&endpoint, move |request: CancelTasks| {
        this.cancel_tasks(&request);
        async {}
    });
    let this = Arc::clone(&task_manager);
    serve(&endpoint, move |request: TriggerCheckpoint| {
        let missing = this.trigger(&request);
        async move { missing }
    });
    let this = Arc::clone(&task_manager);
    serve(&endpoint, move |request: NotifyCheckpointComplete| {
        this.notify(&request);
        async {}
    });
    let partitions = task_manager.partitions.clone();
    serve(&endpoint, move |request: RequestBuffers| {
        let partitions = partitions.clone();
        async move { partitions.serve(request).await }
    });
    let partitions = task_manager.partitions.clone();
    serve(&endpoint, move |_: ListPartitions| {
        let partitions = partitions.clone();
        async move { partitions.intact_partition_ids().await }
    });
    let partitions = task_manager.partitions.clone();
    serve(&endpoint, move |request: ReleasePartitions| {
        let partitions = partitions.clone();
        async move { partitions.release(&request.partitions).await }
    });
    crate::rpc::serve_health(&endpoint, &task_manager.config.name);
    task_manager.register_and_heartbeat(instance).await;
}

impl TaskManager {
    async fn register_and_heartbeat(&self, instance: u64) {
        let config = &self.config;
        // Since when no JobMaster has this instance registered (from the start: none yet).
        let mut unregistered_since = crate::rt::time::Instant::now();
        let mut partitions_kept = true;
        for session in 0.. {
            loop {
                let registration = RegisterTaskManager {
                    name: config.name.clone(),
                    instance,
                    session,
                    address: config.address,
                    slots: config.slots,
                    partitions: self.partitions.intact_partition_ids().await,
                };
                if self.client.call(config.job_master, registration, CONTROL_TIMEOUT).await.is_ok() {
                    break;
                }
                if partitions_kept && unregistered_since.elapsed() > config.partition_grace {
                    partitions_kept = false;
                    let held = self.partitions.partition_ids();
                    config.tracer.record(TraceEvent::PartitionsExpired { partitions: held.len() as u32 });
                    self.partitions.release(&held).await;
                }
                crate::rt::time::sleep(config.heartbeat_interval).await;
            }
            partitions_kept = true;
            let reason = self.heartbeat(instance, session).await;
            if crate::buggify!(SlowCancel) {
                // A cancel that hangs: the orphaned tasks run on, as zombies, a while longer.
                crate::rt::time::sleep(config.job_master_timeout * 2).await;
            }
            unregistered_since = crate::rt::time::Instant::now();
            let cancelled = self.cancel_all_tasks();
            config.tracer.record(TraceEvent::JobMasterLost { reason, tasks_cancelled: cancelled });
        }
    }

    /// Heartbeats one registration until the JobMaster is lost; returns why. Each heartbeat is
    /// its own call, sent every interval whether or not the previous one was answered, so that
    /// a slow or lossy network does not look like a lost JobMaster.
    async fn heartbeat(&self, instance: u64, session: u64) -> String {
        let config = &self.config;
        let answered = Arc::new(Mutex::new(crate::rt::time::Instant::now()));
        let refused = Arc::new(std::sync::atomic::AtomicBool::new(false));
        loop {
            crate::rt::time::sleep(config.heartbeat_interval).await;
            if refused.load(std::sync::atomic::Ordering::SeqCst) {
                return "the JobMaster does not know this instance".to_string();
            }
            if answered.lock().expect("heartbeat lock").elapsed() > config.job_master_timeout {
                return format!("no heartbeat answer for {} ms", config.job_master_timeout.as_millis());
            }
            let heartbeat = Heartbeat { name: config.name.clone(), instance, session };
            let (client, address) = (self.client.clone(), config.job_master);
            let (answered, refused) = (Arc::clone(&answered), Arc::clone(&refused));
            crate::rt::task::spawn(async move {
                match client.call(address, heartbeat, CONTROL_TIMEOUT).await {
                    Ok(true) => *answered.lock().expect("heartbeat lock") = crate::rt::time::Instant::now(),
                    Ok(false) => refused.store(true, std::sync::atomic::Ordering::SeqCst),
                    Err(_) => {}
                }
            });
        }
    }

    /// Cancels every running task (their JobMaster no longer knows them); returns how many.
    fn cancel_all_tasks(&self) -> u32 {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        let running = std::mem::take(&mut tasks.running);
        for task in running.values() {
            task.handle.abort();
        }
        running.len() as u32
    }

    /// Cancels the named task runs and refuses their attempts from now on.
    fn cancel_tasks(&self, request: &CancelTasks) {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        for execution in &request.executions {
            let newest = tasks.newest.entry((request.job_id.clone(), execution.vertex)).or_insert(0);
            *newest = (*newest).max(execution.attempt + 1);
            if let Some(task) = tasks.running.remove(&(request.job_id.clone(), *execution)) {
                task.handle.abort();
            }
        }
    }

    async fn cancel_before(&self, job_id: &str, attempt: u32) {
        self.cancel_tasks_before(job_id, attempt);
        self.partitions.release_before(attempt).await;
    }

    fn cancel_tasks_before(&self, job_id: &str, attempt: u32) {
        let mut tasks = self.tasks.lock().expect("tasks lock");
        let floor = tasks.floor.entry(job_id.to_string()).or_insert(attempt);
        *floor = (*floor).max(attempt);
        let cancelled: Vec<(String, ExecutionAttemptId)> = tasks
            .running
            .keys()
            .filter(|(job, execution)| job == job_id && execution.attempt < attempt)
            .cloned()
            .collect();
        for key in cancelled {
            tasks.running.remove(&key).expect("listed above").handle.abort();
        }
        assert!(
            !tasks.running.keys().any(|(job, execution)| job == job_id && execution.attempt < attempt),
            "taskmanager invariant: no run of job {job_id} before a{attempt} stays registered after its cancellation"
        );
    }

    /// Asks source tasks to take checkpoint `checkpoint_id`; returns those it does not run.
    fn trigger(&self, request: &TriggerCheckpoint) -> Vec<ExecutionAttemptId> {
        let tasks = self.tasks.lock().expect("tasks lock");
        request
            .executions
            .iter()
            .filter(|execution| {
                let task = tasks.running.get(&(request.job_id.clone(), **execution));
                task.is_none_or(|task| task.controls.send(TaskControl::Trigger(request.checkpoint_id)).is_err())
            })
            .copied()
            .collect()
    }

    /// Tells every task of the attempt that a checkpoint completed.
    fn notify(&self, request: &NotifyCheckpointComplete) {
        let tasks = self.tasks.lock().expect("tasks lock");
        let control = TaskControl::Complete { id: request.checkpoint_id, is_final: request.is_final };
        for ((job_id, execution), task) in &tasks.running {
            if *job_id == request.job_id && execution.attempt == request.attempt {
                // A task that just ended has dropped its receiver: nothing left to tell it.
                let _ = task.controls.send(control);
            }
        }
    }

    fn plan_for(&self, descriptor: &TaskDeploymentDescriptor) -> Result<Arc<ExecutionGraph>, String> {
        let key = (descriptor.spec.job_id.clone(), descriptor.plan_fingerprint);
        if let Some(plan) = self.tasks.lock().expect("tasks lock").plans.get(&key) {
            return Ok(Arc::clone(plan));
        }
        let job_graph = descriptor.spec.plan(&self.config.jobs)?;
        if job_graph.fingerprint() != descriptor.plan_fingerprint {
            return Err(format!(
                "the plan rebuilt from the registry for job `{}` differs from the JobMaster's",
                descriptor.spec.job_name
            ));
        }
        let plan = Arc::new(ExecutionGraph::new(Arc::new(job_graph)));
        self.tasks.lock().expect("tasks lock").plans.insert(key, Arc::clone(&plan));
        Ok(plan)
    }

    async fn submit(self: &Arc<Self>, descriptor: TaskDeploymentDescriptor) -> Result<(), String> {
        let job_id = descriptor.spec.job_id.clone();
        let execution = descriptor.execution;
        assert!(
            descriptor.attempt_floor <= execution.attempt,
            "internal: {execution} deployed with the attempt floor a{} above its own attempt",
            descriptor.attempt_floor
        );
        self.admit(&descriptor).await?;
        let graph = match self.plan_for(&descriptor) {
            Ok(graph) => graph,
            Err(message) => {
                let this = Arc::clone(self);
                crate::rt::task::spawn(async move {
                    this.report(job_id, execution, TaskOutcome::Failed(TaskFailure::Deployment(message))).await;
                });
                return Ok(());
            }
        };
        self.start(descriptor, graph);
        Ok(())
    }

    /// Admits a deployment of `descriptor.execution`, or refuses it as older than the job's
    /// newest restart or the subtask's newest attempt; cancels what the deployment supersedes.
    async fn admit(&self, descriptor: &TaskDeploymentDescriptor) -> Result<(), String> {
        let job_id = descriptor.spec.job_id.clone();
        let execution = descriptor.execution;
        let (floor, newest) = {
            let tasks = self.tasks.lock().expect("tasks lock");
            (tasks.floor.get(&job_id).copied(), tasks.newest.get(&(job_id.clone(), execution.vertex)).copied())
        };
        if let Some(floor) = floor.filter(|floor| execution.attempt < *floor) {
            return Err(format!("{execution} belongs to an attempt before the job's restart as a{floor}"));
        }
        if let Some(newest) = newest.filter(|newest| execution.attempt < *newest) {
            return Err(format!("{execution} is older than a{newest} of the same subtask"));
        }
        if floor.is_none_or(|floor| floor < descriptor.attempt_floor) {
            // The job restarted every subtask since this TaskManager last heard of it.
            self.cancel_before(&job_id, descriptor.attempt_floor).await;
        }
        {
            let mut tasks = self.tasks.lock().expect("tasks lock");
            // Floors only grow, and the branch above raised it to the deployment's if it was lower.
            assert!(
                tasks.floor.get(&job_id).is_some_and(|floor| *floor >= descriptor.attempt_floor),
                "taskmanager invariant: {execution}'s attempt floor a{} is in force before it starts",
                descriptor.attempt_floor
            );
            tasks.newest.insert((job_id.clone(), execution.vertex), execution.attempt);
            let older: Vec<(String, ExecutionAttemptId)> = tasks
                .running
                .keys()
                .filter(|(job, running)| {
                    *job == job_id && running.vertex == execution.vertex && running.attempt < execution.attempt
                })
                .cloned()
                .collect();
            for key in older {
                tasks.running.remove(&key).expect("listed above").handle.abort();
            }
        }
        Ok(())
    }

    /// Runs the admitted task `descriptor` describes on `graph`, superseding any task of the same
    /// execution still registered.
    fn start(self: &Arc<Self>, descriptor: TaskDeploymentDescriptor, graph: Arc<ExecutionGraph>) {
        let job_id = descriptor.spec.job_id.clone();
        let execution = descriptor.execution;
        let (controls, control_receiver) = tokio::sync::mpsc::unbounded_channel();
        let environment = TaskEnvironment {
            descriptor,
            graph,
            partitions: self.partitions.clone(),
            client: self.client.clone(),
            resources: Arc::clone(&self.resources),
            controls: control_receiver,
            checkpoints: CheckpointEnvironment {
                storage: Arc::clone(&self.checkpoint_storage),
                job_master: self.config.job_master,
            },
            tracer: Arc::clone(&self.config.tracer),
        };
        let this = Arc::clone(self);
        let key = (job_id.clone(), execution);
        let handle = crate::rt::task::spawn(async move {
            this.resources.deploy().await;
            this.config.tracer.record(TraceEvent::TaskRunning {
                attempt: execution.attempt,
                vertex: execution.vertex.vertex.0,
                subtask: execution.vertex.subtask,
            });
            let outcome = match run_task(environment).await {
                Ok(report) => TaskOutcome::Finished(report),
                Err(failure) => TaskOutcome::Failed(failure),
            };
            this.tasks.lock().expect("tasks lock").running.remove(&(job_id.clone(), execution));
            this.report(job_id, execution, outcome).await;
        });
        let previous = self.tasks.lock().expect("tasks lock").running.insert(key, RunningTask { handle, controls });
        if let Some(previous) = previous {
            previous.handle.abort();
        }
    }

    /// Tells the JobMaster how a task ended; retried, since a lost report would stall the job.
    async fn report(&self, job_id: String, execution: ExecutionAttemptId, outcome: TaskOutcome) {
        let update = UpdateTaskExecutionState { job_id, execution, outcome };
        for _ in 0..20 {
            if self.client.call(self.config.job_master, update.clone(), CONTROL_TIMEOUT).await.is_ok() {
                return;
            }
        }
    }
}
