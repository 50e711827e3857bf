//! Every message between the client, the JobMaster and the TaskManagers.

use std::fmt;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

use super::JobSpec;
use crate::checkpoint::{CheckpointId, SnapshotKind, StateHandle};
use crate::graph::{ExecutionVertexId, ExternalSystems, IntermediateDataSetId};
use crate::rpc_request;
use crate::scheduler::SlotId;
use crate::shuffle::{
    InputChannelSpec, PartitionStatistics, ResultPartitionId, ShuffleDescriptor, ShuffleError, WriteError,
};

/// One run of one subtask: the subtask plus the job attempt it belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ExecutionAttemptId {
    /// The subtask.
    pub vertex: ExecutionVertexId,
    /// The job attempt.
    pub attempt: u32,
}

impl fmt::Display for ExecutionAttemptId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@a{}", self.vertex, self.attempt)
    }
}

/// Client → JobMaster: run a job.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubmitJob {
    /// The job.
    pub spec: JobSpec,
}
rpc_request!(SubmitJob => Result<(), String>);

/// Client → JobMaster: how is the job doing?
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestJobStatus {
    /// The job instance.
    pub job_id: String,
}
rpc_request!(RequestJobStatus => Option<JobStatusReport>);

/// A job's status as the JobMaster sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JobStatus {
    /// Tasks are being scheduled or run.
    Running,
    /// Waiting to restart every subtask after a failure (a region restart leaves the job
    /// running).
    Restarting,
    /// Every task finished; sinks committed.
    Finished,
    /// Failed for good.
    Failed(String),
}

impl JobStatus {
    /// Finished or failed.
    pub fn is_terminal(&self) -> bool {
        matches!(self, JobStatus::Finished | JobStatus::Failed(_))
    }
}

/// Answer to [`RequestJobStatus`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobStatusReport {
    /// The status.
    pub status: JobStatus,
    /// The current attempt.
    pub attempt: u32,
    /// Restarts so far, JobMaster failovers included (the attempt number: attempts start at 0
    /// and each restart takes the next).
    pub restarts: u32,
}

/// Client → JobMaster: what the cluster looks like (Flink's `/overview`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestClusterOverview;

/// Answer to [`RequestClusterOverview`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterOverview {
    /// Registered TaskManagers.
    pub task_managers: u32,
    /// Their slots.
    pub total_slots: u32,
    /// Slots not allocated.
    pub free_slots: u32,
}
rpc_request!(RequestClusterOverview => ClusterOverview);

/// TaskManager → JobMaster: offers a process's slots.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RegisterTaskManager {
    /// Its name, stable across restarts.
    pub name: String,
    /// Its incarnation: a new one means the previous process (and its tasks) is gone.
    pub instance: u64,
    /// Counts its registrations: a new one means it lost its JobMaster and cancelled its tasks.
    pub session: u64,
    /// Where it serves requests.
    pub address: SocketAddr,
    /// How many slots it offers.
    pub slots: u32,
    /// The result partitions it holds (a JobMaster that restarted keeps the finished work
    /// whose partitions survive, and releases the rest).
    pub partitions: Vec<ResultPartitionId>,
}
rpc_request!(RegisterTaskManager => ());

/// TaskManager → JobMaster: still alive.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Heartbeat {
    /// Its name.
    pub name: String,
    /// Its incarnation.
    pub instance: u64,
    /// Its registration.
    pub session: u64,
}
// Answers whether the JobMaster knows this registration (if not, the TaskManager registers again).
rpc_request!(Heartbeat => bool);

/// What a finished task reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskReport {
    /// Elements read from the input gate or the source.
    pub records_in: u64,
    /// Elements written to the network or the sink.
    pub records_out: u64,
    /// Bytes of blocking partitions it read (from a producer's disk or the shuffle service).
    pub disk_bytes_read: u64,
    /// Bytes of blocking partitions it wrote (to its disk or the shuffle service).
    pub disk_bytes_written: u64,
    /// Statistics of each partition it produced, by data set.
    pub partitions: Vec<(IntermediateDataSetId, PartitionStatistics)>,
    /// The CPU work it did, as the cost model counts it (the same in a simulated and a real run).
    #[serde(default)]
    pub work: crate::resources::Work,
}

impl TaskReport {
    /// The longest time any of its output partitions held it back, in simulated microseconds.
    pub fn backpressure_micros(&self) -> u64 {
        self.partitions.iter().map(|(_, statistics)| statistics.backpressure_micros).max().unwrap_or(0)
    }

    /// The most bytes any of its output partitions held in memory at once.
    pub fn peak_buffered_bytes(&self) -> u64 {
        self.partitions.iter().map(|(_, statistics)| statistics.peak_buffered_bytes).max().unwrap_or(0)
    }
}

/// How a task ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskOutcome {
    /// Read all input, wrote all output, committed its sink.
    Finished(TaskReport),
    /// Failed.
    Failed(TaskFailure),
}

/// Why a task failed, classified for failover.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TaskFailure {
    /// An input partition could not be read: its producer must run again too.
    Input(ShuffleError),
    /// A user function, source or sink failed.
    Operator(String),
    /// The task could not write one of its output partitions.
    Output(String),
    /// The task cannot start: its plan does not match the JobMaster's.
    Deployment(String),
}

impl TaskFailure {
    /// An input partition whose bytes are not what its producer wrote.
    pub fn corrupt_input(partition: ResultPartitionId, detail: impl Into<String>) -> TaskFailure {
        TaskFailure::Input(ShuffleError::Corrupt { partition, detail: detail.into() })
    }
}

impl From<ShuffleError> for TaskFailure {
    fn from(error: ShuffleError) -> TaskFailure {
        TaskFailure::Input(error)
    }
}

impl From<WriteError> for TaskFailure {
    fn from(error: WriteError) -> TaskFailure {
        TaskFailure::Output(error.to_string())
    }
}

impl fmt::Display for TaskFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskFailure::Input(error) => error.fmt(f),
            TaskFailure::Operator(message) => write!(f, "operator failed: {message}"),
            TaskFailure::Output(message) => write!(f, "output failed: {message}"),
            TaskFailure::Deployment(message) => write!(f, "deployment failed: {message}"),
        }
    }
}

/// TaskManager → JobMaster: a task ended.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct UpdateTaskExecutionState {
    /// The job instance.
    pub job_id: String,
    /// The task run.
    pub execution: ExecutionAttemptId,
    /// How it ended.
    pub outcome: TaskOutcome,
}
rpc_request!(UpdateTaskExecutionState => ());

/// What a TaskManager needs to run one subtask (Flink's `TaskDeploymentDescriptor`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TaskDeploymentDescriptor {
    /// The job, to rebuild the plan from the catalog.
    pub spec: JobSpec,
    /// The JobMaster's plan fingerprint; the TaskManager's rebuilt plan must match it.
    pub plan_fingerprint: u64,
    /// The task run.
    pub execution: ExecutionAttemptId,
    /// Its vertex's parallelism (decided at runtime for some batch vertices).
    pub parallelism: u32,
    /// The slot it runs in.
    pub slot: SlotId,
    /// The partitions it produces, in the order of its produced data sets.
    pub outputs: Vec<ShuffleDescriptor>,
    /// Its input channels, in input order.
    pub inputs: Vec<InputChannelSpec>,
    /// Where external systems are.
    pub external: ExternalSystems,
    /// Streaming with checkpoints: take snapshots at barriers, commit when checkpoints complete.
    pub checkpointing: bool,
    /// The checkpoint to restore from, and this subtask's snapshot in it.
    pub restore: Option<(CheckpointId, StateHandle)>,
    /// The job's last restart of every subtask: tasks and partitions of older attempts are
    /// void (a TaskManager that missed the cancel message learns it here).
    pub attempt_floor: u32,
}

/// JobMaster → TaskManager: run a subtask.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SubmitTask {
    /// The deployment.
    pub descriptor: TaskDeploymentDescriptor,
}
rpc_request!(SubmitTask => Result<(), String>);

/// JobMaster → TaskManager: the source tasks `executions` inject barrier `checkpoint_id`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TriggerCheckpoint {
    /// The job instance.
    pub job_id: String,
    /// The source tasks on this TaskManager.
    pub executions: Vec<ExecutionAttemptId>,
    /// The checkpoint.
    pub checkpoint_id: CheckpointId,
}
// Answers with the executions it does not run (their trigger is lost).
rpc_request!(TriggerCheckpoint => Vec<ExecutionAttemptId>);

/// Task → JobMaster: a task saved its snapshot for a checkpoint, or its final one.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AcknowledgeCheckpoint {
    /// The job instance.
    pub job_id: String,
    /// The task run.
    pub execution: ExecutionAttemptId,
    /// Which checkpoint.
    pub kind: SnapshotKind,
    /// Where the snapshot is.
    pub handle: StateHandle,
    /// The last barrier the task took before this snapshot (for an end-of-input snapshot: its
    /// consumers saw everything it sent after that barrier).
    pub last_barrier: Option<CheckpointId>,
}
rpc_request!(AcknowledgeCheckpoint => ());

/// JobMaster → TaskManager: checkpoint `checkpoint_id` of attempt `attempt` completed; its tasks
/// commit what they prepared up to it (everything, if it is the final checkpoint).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct NotifyCheckpointComplete {
    /// The job instance.
    pub job_id: String,
    /// The attempt whose tasks are notified.
    pub attempt: u32,
    /// The checkpoint.
    pub checkpoint_id: CheckpointId,
    /// It is the final checkpoint: the tasks waiting for it commit and finish.
    pub is_final: bool,
}
rpc_request!(NotifyCheckpointComplete => ());

/// JobMaster → TaskManager: cancel every task of a job from attempts before `attempt` and
/// release their partitions.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CancelJobAttempts {
    /// The job instance.
    pub job_id: String,
    /// Tasks of attempts before this one are cancelled.
    pub attempt: u32,
}
rpc_request!(CancelJobAttempts => ());

/// JobMaster → TaskManager: cancel these task runs (their regions restart); a later deployment
/// of an older attempt of the same subtasks is refused.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CancelTasks {
    /// The job instance.
    pub job_id: String,
    /// The task runs.
    pub executions: Vec<ExecutionAttemptId>,
}
rpc_request!(CancelTasks => ());
