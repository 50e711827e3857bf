//! Data exchange between tasks: network buffers, result partitions and input gates.
//!
//! Records that cross a task boundary are serialized into buffers ([`buffer`]) by a
//! [`RecordWriter`], handed to a [`ResultPartitionManager`] on the producer's TaskManager
//! ([`partition`]), and fetched buffer by buffer by the consumer's [`InputGate`]. A PIPELINED
//! partition is read while it is produced, from bounded memory; a BLOCKING partition is written
//! to the TaskManager's storage and read after its producer finished.
//!
//! Depends on: [`crate::graph`] (partitioners, partition ids), [`crate::storage`],
//! [`crate::rpc`], [`crate::record`]. Invariants: never one message per record; partitions of
//! different job attempts never mix; an unreadable input is an error naming the partition and
//! its producer, never a hang; every buffer is checksummed.

pub mod buffer;
pub mod input_gate;
pub mod partition;
pub mod writer;

pub use input_gate::{GateEvent, InputChannelSpec, InputGate, InputGateConfig, ShuffleError};
pub use partition::{ResultPartitionId, ResultPartitionManager, ResultPartitionWriter, ShuffleConfig};
pub use writer::RecordWriter;
