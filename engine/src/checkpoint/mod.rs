//! Checkpoints: Flink's aligned checkpoints for streaming jobs, and what a task saves in them.
//!
//! The JobMaster's [`CheckpointCoordinator`] triggers checkpoint `n` every configured interval by
//! asking the source tasks to inject a [`CheckpointBarrier`] into their outputs. A task with
//! several input channels aligns barriers ([`BarrierAligner`]): a channel that delivered barrier
//! `n` is blocked until every open channel has, so the snapshot holds exactly the effect of the
//! records before the barrier. The task then saves a [`TaskSnapshot`] (operator and keyed state,
//! source offsets, sink writer state and the committables not yet committed) to the durable
//! store, forwards the barrier and acknowledges. The checkpoint completes when every task
//! acknowledged (a task that reached the end of its input counts with its final snapshot); the
//! JobMaster records it durably and notifies the tasks, whose committers then commit. A
//! checkpoint that cannot complete (a failure, a timeout) is aborted and never committed
//! against; its committables wait for the next checkpoint that completes.
//!
//! A bounded streaming job ends with a *final checkpoint*: each task that reached the end of
//! its input saves a final snapshot and waits; when every task has, the coordinator completes
//! the final checkpoint and the sinks commit their last transactions (Flink's FLIP-147). After a
//! failure the job restarts from the latest completed checkpoint: sources rewind to its offsets,
//! operators restore their state, and sinks commit again (idempotently) what it holds.
//!
//! Depends on: [`crate::record`], [`crate::storage`]. Invariants: a checkpoint is complete only
//! when its metadata is durable, and nothing is committed for a checkpoint before that; a
//! checkpoint id is never completed twice in one job attempt; the coordinator is a pure state
//! machine (no clock, no I/O): the JobMaster carries out what it decides.

pub mod alignment;
pub mod coordinator;

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use alignment::{Alignment, BarrierAligner};
pub use coordinator::{CheckpointCoordinator, CompletedCheckpoint, StateHandle};

use crate::record::{DecodeError, Record};

/// A checkpoint's number: increases with every trigger of a job.
pub type CheckpointId = u64;

/// How a streaming job checkpoints (Flink's `execution.checkpointing.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointConfig {
    /// Time between the end of one checkpoint and the trigger of the next.
    #[serde(with = "crate::duration::text")]
    pub interval: Duration,
    /// A checkpoint not complete this long after its trigger is aborted.
    #[serde(default = "default_timeout", with = "crate::duration::text")]
    pub timeout: Duration,
    /// Completed checkpoints kept; older ones are deleted.
    #[serde(default = "default_retained")]
    pub retained: u32,
}

fn default_timeout() -> Duration {
    Duration::from_secs(5)
}

fn default_retained() -> u32 {
    2
}

impl CheckpointConfig {
    /// Checkpoints every `interval`, with a 5 s timeout, keeping two.
    pub fn every(interval: Duration) -> CheckpointConfig {
        CheckpointConfig { interval, timeout: default_timeout(), retained: default_retained() }
    }
}

/// The event a source injects and every task forwards: everything before it belongs to
/// checkpoint `id` (Flink's `CheckpointBarrier`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointBarrier {
    /// The checkpoint.
    pub id: CheckpointId,
}

/// Tag of a barrier in an encoded event.
const BARRIER_TAG: u8 = 1;

// A task reads an event as a watermark first: a barrier must never read as one.
const _: () = assert!(
    BARRIER_TAG != crate::time::WATERMARK_TAG,
    "checkpoint invariant: a barrier's tag differs from a watermark's"
);

impl CheckpointBarrier {
    /// The barrier as an event on a data channel.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![BARRIER_TAG];
        self.id.encode(&mut bytes);
        assert_eq!(
            CheckpointBarrier::decode(&bytes),
            Ok(*self),
            "checkpoint invariant: a barrier's wire form reads back as the same barrier (cp{})",
            self.id
        );
        bytes
    }

    /// Reads an event; an event that is not a barrier is an error (no other event exists).
    pub fn decode(event: &[u8]) -> Result<CheckpointBarrier, DecodeError> {
        match event.split_first() {
            Some((&BARRIER_TAG, mut rest)) => {
                let id = CheckpointId::decode(&mut rest)?;
                if !rest.is_empty() {
                    return Err(DecodeError::new("bytes after a checkpoint barrier"));
                }
                Ok(CheckpointBarrier { id })
            }
            Some((tag, _)) => Err(DecodeError::new(format!("unknown event tag {tag}"))),
            None => Err(DecodeError::new("an empty event")),
        }
    }
}

/// What one task saves in a checkpoint: each chained operator's state by operator id, its
/// source reader's position, and its sinks' writer state and committables not yet committed,
/// by the checkpoint they were prepared for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskSnapshot {
    /// State of each stateful chained operator, by stream node id.
    pub operators: Vec<(u32, Vec<u8>)>,
    /// The source reader's position, if the task reads a source.
    pub source: Option<Vec<u8>>,
    /// Each sink's writer state, by stream node id.
    pub sink_writers: Vec<(u32, Vec<u8>)>,
    /// Committables not yet committed: (sink node id, prepared for checkpoint, committables).
    pub pending_committables: Vec<(u32, CheckpointId, Vec<Vec<u8>>)>,
}

impl Record for TaskSnapshot {
    fn encode(&self, out: &mut Vec<u8>) {
        self.operators.encode(out);
        self.source.encode(out);
        self.sink_writers.encode(out);
        self.pending_committables.encode(out);
    }

    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        Ok(TaskSnapshot {
            operators: Vec::decode(input)?,
            source: Option::decode(input)?,
            sink_writers: Vec::decode(input)?,
            pending_committables: Vec::decode(input)?,
        })
    }
}

/// Which checkpoint a task's snapshot belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum SnapshotKind {
    /// Taken at barrier `n`.
    Barrier(CheckpointId),
    /// Taken when the task reached the end of its input; stands for the task in every later
    /// checkpoint of its attempt, the final one included.
    EndOfInput,
}

impl fmt::Display for SnapshotKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotKind::Barrier(id) => write!(f, "cp{id}"),
            SnapshotKind::EndOfInput => f.write_str("end-of-input"),
        }
    }
}

/// Where a task's snapshot lives in the durable store.
pub fn snapshot_path(job_id: &str, attempt: u32, kind: SnapshotKind, vertex: u32, subtask: u32) -> String {
    match kind {
        SnapshotKind::Barrier(id) => format!("checkpoints/{job_id}/cp{id}/v{vertex}-{subtask}"),
        SnapshotKind::EndOfInput => format!("checkpoints/{job_id}/a{attempt}-final/v{vertex}-{subtask}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barriers_and_snapshots_round_trip_and_other_events_are_refused() {
        let barrier = CheckpointBarrier { id: 42 };
        assert_eq!(CheckpointBarrier::decode(&barrier.encode()), Ok(barrier));
        assert!(CheckpointBarrier::decode(&[9, 0]).unwrap_err().message.contains("unknown event tag 9"));
        assert!(CheckpointBarrier::decode(&[]).is_err());
        let snapshot = TaskSnapshot {
            operators: vec![(3, vec![1, 2])],
            source: Some(vec![7]),
            sink_writers: vec![(4, Vec::new())],
            pending_committables: vec![(4, 5, vec![vec![8, 9]])],
        };
        assert_eq!(TaskSnapshot::from_bytes(&snapshot.to_bytes()), Ok(snapshot));
    }
}
