//! The processes: a JobMaster and TaskManagers that wire every layer together over RPC.
//!
//! - [`jobmaster`]: accepts a job, plans it, schedules pipelined regions into slots, tracks task
//!   states and TaskManager heartbeats, and restarts the job after failures.
//! - [`taskmanager`]: registers its slots, heartbeats, runs the tasks it is given, and serves
//!   the result partitions they produce.
//! - [`task`]: one subtask: an operator chain between an input gate and record writers (or a
//!   sink).
//! - [`messages`]: every message between client, JobMaster and TaskManagers.
//! - [`crate::trace`] (below the shuffle, which reports through it too): the structured events
//!   the processes report; [`crate::resources`]: a TaskManager's cores, disk and network.
//!
//! This is the one layer that spawns tasks and keeps time (through [`crate::rt`]). Depends on every
//! layer below. Invariants: every remote call has a timeout; a message from an older job attempt
//! or an older process incarnation is recognized and ignored; no `HashMap` iteration order
//! reaches a message or a trace event.

pub mod jobmaster;
pub mod messages;
pub mod task;
pub mod taskmanager;

use serde::{Deserialize, Serialize};

use crate::api::{JobConfig, JobParams, JobRegistry};
use crate::checkpoint::CheckpointConfig;
use crate::failover::{FailoverStrategy, RestartStrategy};
use crate::graph::{ExchangeMode, ExecutionMode, JobGraph};
use crate::scheduler::adaptive::AdaptiveBatchConfig;
use crate::shuffle::ShuffleConfig;

/// Everything needed to build and run one job instance: what a client submits and what every
/// TaskManager rebuilds the plan from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// The instance's id: stable across restarts (sink transaction ids derive from it).
    pub job_id: String,
    /// The job, by its name in the cluster's registry.
    pub job_name: String,
    /// Its parameters, defaults filled in.
    pub params: JobParams,
    /// Streaming or batch.
    pub mode: ExecutionMode,
    /// Default parallelism.
    pub parallelism: u32,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// Which edges are pipelined in batch mode.
    pub exchange_mode: ExchangeMode,
    /// Batch only: decide parallelism at runtime where the program did not set it.
    pub adaptive: Option<AdaptiveBatchConfig>,
    /// When to restart and when to give up.
    pub restart_strategy: RestartStrategy,
    /// Which subtasks a failure restarts.
    #[serde(default)]
    pub failover_strategy: FailoverStrategy,
    /// How its data is exchanged: buffer size, credits per channel, where blocking partitions
    /// live (the TaskManager sets the memory its partitions hold).
    pub shuffle: ShuffleConfig,
    /// Streaming only: checkpoint at this interval (otherwise sinks commit at end of input and
    /// a restart starts from the beginning).
    #[serde(default)]
    pub checkpoint: Option<CheckpointConfig>,
    /// How often watermark generators emit (Flink's `pipeline.auto-watermark-interval`); the
    /// task's default, 200 ms, if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark_interval: Option<std::time::Duration>,
}

impl JobSpec {
    /// The job's configuration as the API sees it.
    pub fn config(&self) -> JobConfig {
        JobConfig {
            mode: self.mode,
            parallelism: self.parallelism,
            max_parallelism: self.max_parallelism,
            exchange_mode: self.exchange_mode.effective(self.mode),
            adaptive_parallelism: self.adaptive.is_some() && self.mode == ExecutionMode::Batch,
        }
    }

    /// The checkpoint configuration, if this job checkpoints (streaming mode only).
    pub fn checkpointing(&self) -> Option<CheckpointConfig> {
        self.checkpoint.filter(|_| self.mode == ExecutionMode::Streaming)
    }

    /// Builds the job's plan from the cluster's registry.
    pub fn plan(&self, registry: &JobRegistry) -> Result<JobGraph, String> {
        registry.find(&self.job_name)?.plan(&self.params, self.config())
    }
}
