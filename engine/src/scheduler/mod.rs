//! Scheduling: which subtasks run when, and in which slots.
//!
//! One strategy serves both modes (Flink's `PipelinedRegionSchedulingStrategy`): a pipelined
//! region is scheduled once every BLOCKING partition it consumes from outside the region is
//! finished, and its slots are allocated in bulk, all or nothing ([`SlotPool::allocate_bulk`]),
//! so that a region never deploys half-way and deadlocks waiting for its other half. Within a
//! region, subtasks share slots as Flink's slot sharing does: slot `j` runs the `j`-th subtask
//! of every vertex in the region. Streaming is the one-region case.
//!
//! A batch vertex whose parallelism the program did not set may get it at runtime
//! ([`adaptive`]): when its inputs finished, from the bytes they produced.
//!
//! Depends on: [`crate::graph`]. Invariants: decisions are a function of the events seen
//! (no clock, no randomness, ties broken by ids); a slot is never given to two regions.

pub mod adaptive;
mod slot_pool;
mod strategy;

pub use slot_pool::{SlotId, SlotPool};
pub use strategy::{RegionState, SchedulingStrategy, SlotSharing};
