//! Data exchange between tasks, behind Flink's unified shuffle seams.
//!
//! The engine talks only to three seams; implementations differ in where data lives and for
//! how long:
//!
//! - [`ShuffleMaster`] (on the JobMaster): registers a partition about to be produced and says
//!   where it will live ([`ShuffleDescriptor`]); the JobMaster's [`PartitionTracker`] remembers
//!   who produced it and who still needs it, and releases it when nobody does.
//! - [`ShuffleWriter`] (one per produced partition): buffers to subpartitions, events to all,
//!   finish.
//! - [`ShuffleReader`] (one per input gate, [`InputGate`]): the next buffer or event of any
//!   channel, wherever the partition lives.
//!
//! Implementations:
//!
//! - PIPELINED, TaskManager-local ([`pipelined`]): a bounded queue per subpartition, read with
//!   credit-based flow control. A full queue holds the producer back (backpressure with bounded
//!   memory); the time it waits is a metric.
//! - BLOCKING, TaskManager-local, sort-merge ([`sort_merge`]): items clustered by subpartition in
//!   a write buffer, spilled as regions to one data file, with an index file; read after the
//!   producer finished; lost with the TaskManager's disk.
//! - BLOCKING, remote ([`remote`]): pushed to the shuffle service node, which survives
//!   TaskManager crashes.
//!
//! Every partition is read with one protocol ([`protocol`]), whoever serves it: a request for
//! items from a sequence number, with credits, answered with items and a backlog.
//!
//! Depends on: [`crate::graph`], [`crate::storage`], [`crate::rpc`], [`crate::record`],
//! [`crate::resources`] (costs). Invariants: never one message per record; partitions of
//! different job attempts never mix; an unreadable input is an error naming the partition and its
//! producer, never a hang; every buffer is checksummed, so corruption reads as loss.

pub mod buffer;
pub mod input_gate;
pub mod master;
pub mod partition;
pub mod pipelined;
pub mod protocol;
pub mod remote;
pub mod sort_merge;
pub mod writer;

use std::fmt;
use std::net::SocketAddr;

use serde::{Deserialize, Serialize};

pub use input_gate::{GateEvent, InputChannelSpec, InputGate, InputGateConfig, ShuffleError};
pub use master::{PartitionTracker, ShuffleMaster, shuffle_master};
pub use partition::ResultPartitionManager;
pub use protocol::StreamItem;
pub use writer::RecordWriter;

use crate::future::BoxFuture;
use crate::graph::{IntermediateResultPartitionId, ResultPartitionType};

/// The data exchange as a job sets it: how its records are cut into buffers, how many buffers
/// each consumer channel asks for at once, and where its blocking partitions live. It travels
/// with the job ([`crate::runtime::JobSpec`]) to every task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleConfig {
    /// Bytes per network buffer.
    pub buffer_size: usize,
    /// Credits a consumer channel grants (buffers it can take at once).
    pub channel_credits: u32,
    /// Where blocking partitions live.
    pub kind: ShuffleKind,
}

impl Default for ShuffleConfig {
    fn default() -> Self {
        ShuffleConfig { buffer_size: 32 * 1024, channel_credits: 4, kind: ShuffleKind::TaskManager }
    }
}

impl ShuffleConfig {
    /// How a task's input gate is set: the job's credits per channel, the gate's own timeouts.
    pub fn input_gate(&self) -> InputGateConfig {
        assert!(self.channel_credits > 0, "a channel needs at least one credit to receive anything");
        let credits = if crate::buggify!(CreditsShrunk) { 1 } else { self.channel_credits };
        InputGateConfig { credits, ..InputGateConfig::default() }
    }
}

/// The data exchange as a TaskManager sets it, for every job it serves (Flink's
/// `ShuffleEnvironment` configuration): the memory its partitions may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShuffleEnvironmentConfig {
    /// Items a pipelined subpartition may hold before its producer waits (the memory bound).
    pub pipelined_queue_buffers: usize,
    /// Bytes a blocking partition's write buffer holds before it spills a region.
    pub sort_buffer_bytes: usize,
}

impl Default for ShuffleEnvironmentConfig {
    fn default() -> Self {
        ShuffleEnvironmentConfig { pipelined_queue_buffers: 8, sort_buffer_bytes: 256 * 1024 }
    }
}

/// Where blocking partitions live (pipelined ones always live on the producer's TaskManager).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShuffleKind {
    /// On the producer's TaskManager's disk.
    TaskManager,
    /// In the remote shuffle service.
    Remote,
}

/// One attempt's partition: partitions of different job attempts never mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ResultPartitionId {
    /// The partition in the execution graph.
    pub partition: IntermediateResultPartitionId,
    /// The job attempt that produces it.
    pub attempt: u32,
}

impl fmt::Display for ResultPartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ds{}.p{}@a{}", self.partition.dataset.0, self.partition.producer_subtask, self.attempt)
    }
}

/// Where a partition lives.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PartitionLocation {
    /// On a TaskManager: lost with it (or its disk).
    TaskManager {
        /// Its name.
        name: String,
        /// Where it serves partitions.
        address: SocketAddr,
    },
    /// In the remote shuffle service: survives TaskManagers.
    Remote {
        /// Where the service serves partitions.
        address: SocketAddr,
    },
}

impl PartitionLocation {
    /// Where readers fetch the partition and where it is released.
    pub fn address(&self) -> SocketAddr {
        match self {
            PartitionLocation::TaskManager { address, .. } | PartitionLocation::Remote { address } => *address,
        }
    }

    /// The TaskManager the partition is lost with, if any.
    pub fn task_manager(&self) -> Option<&str> {
        match self {
            PartitionLocation::TaskManager { name, .. } => Some(name),
            PartitionLocation::Remote { .. } => None,
        }
    }
}

impl fmt::Display for PartitionLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PartitionLocation::TaskManager { name, address } => write!(f, "{name} ({address})"),
            PartitionLocation::Remote { address } => write!(f, "the shuffle service ({address})"),
        }
    }
}

/// What the shuffle master says about a partition (Flink's `ShuffleDescriptor`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ShuffleDescriptor {
    /// The partition.
    pub partition: ResultPartitionId,
    /// Pipelined or blocking.
    pub partition_type: ResultPartitionType,
    /// Subpartitions it has.
    pub subpartitions: u32,
    /// Where it lives.
    pub location: PartitionLocation,
}

/// Whether a gate item is a buffer of records or an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateEventKind {
    /// A sealed buffer of records.
    Buffer,
    /// An encoded event.
    Event,
}

/// Statistics of a finished partition: what the adaptive scheduler decides from.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionStatistics {
    /// Bytes written to each subpartition.
    pub bytes_per_subpartition: Vec<u64>,
    /// Longest time, in simulated microseconds, the producer waited for room (backpressure).
    pub backpressure_micros: u64,
    /// Most bytes the partition held in memory at once.
    pub peak_buffered_bytes: u64,
}

/// Why a producer could not write its partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// The partition was released under its producer (its attempt was cancelled).
    Released(ResultPartitionId),
    /// The remote shuffle service did not take the data.
    ServiceUnavailable {
        /// The partition.
        partition: ResultPartitionId,
        /// Why.
        detail: String,
    },
    /// The local disk refused.
    Storage {
        /// The partition.
        partition: ResultPartitionId,
        /// Why.
        detail: String,
    },
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Released(partition) => write!(f, "partition {partition} was released while its producer ran"),
            WriteError::ServiceUnavailable { partition, detail } => {
                write!(f, "the shuffle service did not take partition {partition}: {detail}")
            }
            WriteError::Storage { partition, detail } => write!(f, "cannot store partition {partition}: {detail}"),
        }
    }
}

/// Writes one produced partition (Flink's `ResultPartitionWriter`).
pub trait ShuffleWriter: Send {
    /// The partition written.
    fn partition(&self) -> &ShuffleDescriptor;
    /// Adds a sealed buffer to a subpartition; may wait (backpressure, disk, network).
    fn write_buffer(&mut self, subpartition: u32, buffer: Vec<u8>) -> BoxFuture<'_, Result<(), WriteError>>;
    /// Adds an encoded event to every subpartition, after what was written so far.
    fn broadcast_event(&mut self, event: Vec<u8>) -> BoxFuture<'_, Result<(), WriteError>>;
    /// Completes the partition (durably, for a blocking one): readers see its end.
    fn finish(&mut self) -> BoxFuture<'_, Result<PartitionStatistics, WriteError>>;
}

/// A writer that stores items one subpartition at a time; [`ShuffleWriter`] follows from it
/// (an event is an item added to every subpartition).
pub(crate) trait ItemWriter: Send {
    /// The partition written.
    fn descriptor(&self) -> &ShuffleDescriptor;
    /// Adds one item to a subpartition.
    fn add_item(&mut self, subpartition: u32, item: StreamItem) -> BoxFuture<'_, Result<(), WriteError>>;
    /// Completes the partition.
    fn complete(&mut self) -> BoxFuture<'_, Result<PartitionStatistics, WriteError>>;
}

impl<W: ItemWriter> ShuffleWriter for W {
    fn partition(&self) -> &ShuffleDescriptor {
        self.descriptor()
    }

    fn write_buffer(&mut self, subpartition: u32, buffer: Vec<u8>) -> BoxFuture<'_, Result<(), WriteError>> {
        let descriptor = self.descriptor();
        assert!(
            subpartition < descriptor.subpartitions,
            "shuffle invariant: a buffer goes to a subpartition of {} ({subpartition} of {})",
            descriptor.partition,
            descriptor.subpartitions
        );
        self.add_item(subpartition, StreamItem::Buffer(buffer))
    }

    fn broadcast_event(&mut self, event: Vec<u8>) -> BoxFuture<'_, Result<(), WriteError>> {
        Box::pin(async move {
            for subpartition in 0..self.descriptor().subpartitions {
                self.add_item(subpartition, StreamItem::Event(event.clone())).await?;
            }
            Ok(())
        })
    }

    fn finish(&mut self) -> BoxFuture<'_, Result<PartitionStatistics, WriteError>> {
        self.complete()
    }
}

/// Reads a task's inputs (Flink's `InputGate`).
pub trait ShuffleReader: Send {
    /// The next buffer or event of any channel, or the end of all input.
    fn next_event(&mut self) -> BoxFuture<'_, Result<GateEvent, ShuffleError>>;
}

impl fmt::Display for ShuffleKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ShuffleKind::TaskManager => "task-manager",
            ShuffleKind::Remote => "remote",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_jobs_channel_credits_reach_its_input_gates() {
        assert_eq!(ShuffleConfig::default().input_gate(), InputGateConfig::default(), "defaults agree");
        let config = ShuffleConfig { channel_credits: 1, ..ShuffleConfig::default() };
        assert_eq!(config.input_gate().credits, 1);
        assert_eq!(config.input_gate().request_timeout, InputGateConfig::default().request_timeout);
    }
}
