//! The bounds a scenario's values are checked against when it is loaded, chosen so that one run
//! fits the machine simulating it (2 cores and a few GiB are plenty for any scenario within
//! them). docs/scenarios.md lists them with each field; the job parameters' bounds are each
//! job's own (`ParamKind::Int` and `ParamKind::Duration` ranges; text at most
//! `MAX_TEXT_PARAM_BYTES`).

use std::time::Duration;

pub use super::MAX_PARALLELISM;
pub use super::MAX_SEEDS;
pub use super::guard::{MAX_BRACKETS, MAX_FILE_BYTES, MAX_NESTING};

/// The longest scenario name (it names files: `failures/<name>-<seed>.yaml`).
pub const MAX_NAME: usize = 64;
/// TaskManagers in a cluster.
pub const MAX_TASK_MANAGERS: u32 = 64;
/// Slots per TaskManager.
pub const MAX_SLOTS: u32 = 64;
/// Explicit faults in one scenario.
pub const MAX_FAULTS: usize = 256;
/// Random faults per seed.
pub const MAX_RANDOM_FAULTS: u32 = 64;
/// The longest simulated time limit.
pub const MAX_TIME_LIMIT: Duration = Duration::from_secs(3600);
/// The largest network buffer.
pub const MAX_BUFFER_SIZE: usize = 16 << 20;
/// The smallest network buffer.
pub const MIN_BUFFER_SIZE: usize = 64;
/// Retained checkpoints.
pub const MAX_RETAINED: u32 = 100;
/// CPU time per record.
pub const MAX_CPU_PER_RECORD: Duration = Duration::from_secs(1);
/// Disk or network bandwidth, in MiB/s.
pub const MAX_BANDWIDTH: u64 = 1_000_000;
/// The largest page cache, MiB (16 TiB).
pub const MAX_PAGE_CACHE_MIB: u64 = 16 << 20;
/// The longest one-way network latency.
pub const MAX_NETWORK_LATENCY: Duration = Duration::from_secs(10);
/// The longest time to deploy a task.
pub const MAX_DEPLOY_TASK: Duration = Duration::from_secs(60);
/// The longest time to make a file durable.
pub const MAX_DISK_SYNC: Duration = Duration::from_secs(60);
/// Cores per TaskManager.
pub const MAX_CORES: u32 = 64;
/// Restarts a strategy may allow, and `expect.max_restarts`.
pub const MAX_ATTEMPTS: u32 = 10_000;
/// The longest restart delay or backoff.
pub const MAX_DELAY: Duration = Duration::from_secs(3600);
/// The largest exponential-delay multiplier.
pub const MAX_MULTIPLIER_THOUSANDTHS: u32 = 100_000;
/// The longest latency a fault adds to a message.
pub const MAX_LATENCY: Duration = Duration::from_secs(10);
/// The largest slow-node factor.
pub const MAX_SLOW_FACTOR: u32 = 100;
/// Commits a commit fault may hit, and objects a durable store may lose at once.
pub const MAX_FAULT_COUNT: u32 = 1000;
/// The largest checkpoint a trigger may wait for.
pub const MAX_CHECKPOINT_ID: u64 = 100_000;
/// The most rows a trigger may wait for.
pub const MAX_ROWS: u64 = 1_000_000_000;
/// The largest `adaptive_batch.target_bytes_per_task`.
pub const MAX_TARGET_BYTES: u64 = 1 << 30;
