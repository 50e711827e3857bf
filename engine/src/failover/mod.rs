//! Failover: which subtasks a failure restarts, and when to restart or give up.
//!
//! Two [`FailoverStrategy`]s, as in Flink (`jobmanager.execution.failover-strategy`):
//! restart-all cancels every task and runs the job again (from the latest checkpoint, if it
//! checkpoints); restart-pipelined-region ([`region`]) restarts the failed subtask's region, the
//! regions downstream that consumed what it produced, and the producer regions whose results are
//! no longer available, as far upstream as needed. A [`RestartStrategy`] ([`restart`]) decides
//! the delay before each restart and when to give up. What a restarted JobMaster keeps of the
//! finished work it finds is decided here too ([`reconcile`]).
//!
//! Depends on: `graph`. Invariants: a decision depends only on the failures seen, the simulated
//! times they were seen at and the jitter the caller drew from the seeded generator, never on
//! the clock or on randomness of its own; giving up is an error that says which strategy gave
//! up and why.

pub mod reconcile;
pub mod region;
pub mod restart;
#[cfg(test)]
mod testing;

pub use reconcile::{all_subtasks, finished_work_to_keep, partitions_to_track};
pub use region::regions_to_restart;
pub use restart::{Factor, RestartDecision, RestartStrategy, RestartTracker};

use serde::{Deserialize, Serialize};

/// Which subtasks a failure restarts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailoverStrategy {
    /// Every task of the job (Flink's `full`).
    RestartAll,
    /// The failed subtask's pipelined region and what depends on it (Flink's `region`, its
    /// default). A job that checkpoints restarts all its tasks from the latest checkpoint: in
    /// streaming mode every exchange is pipelined, so a connected job is one region anyway.
    #[default]
    #[serde(alias = "restart-pipelined-region")]
    Region,
}

impl std::fmt::Display for FailoverStrategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FailoverStrategy::RestartAll => "restart-all",
            FailoverStrategy::Region => "region",
        })
    }
}
