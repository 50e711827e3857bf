//! Fault schedules: faults as data, decided before the run, each a trigger and a kind.
//!
//! - [`model`]: [`Fault`], [`Trigger`], [`FaultKind`] and their YAML form. `FaultKind` is the
//!   one place to add a kind of fault.
//! - [`random`]: swarm-style random schedules from a seed: each seed first picks which kinds
//!   are enabled, then draws the faults, each from its own stream.
//! - [`relative`]: triggers given as a share of what the same seed's fault-free run went
//!   through (`at: 40%`), resolved against that run, so that faults land in runs of any length.
//! - [`buggify`]: the engine's own fault points ([`sluice_engine::buggify`]), enabled per seed
//!   swarm-style for scenarios with `buggify: true`.
//!
//! Carrying a schedule out against a running cluster is the simulation's (`sluice_sim::inject`),
//! which records in the trace what fired and when (the realized schedule).
//!
//! Every fault is within the contract the engine claims to survive, provided the cluster can
//! still hold the job and the restart strategy allows the restarts: crashes of processes
//! (memory lost, synced disk kept), lost and delayed messages, partitions, slow nodes, and an
//! external store that is unavailable or fails or loses commit replies. What the engine does
//! not promise to survive is classified as expected-unrecoverable by the checks (`check.rs`).

pub mod buggify;
pub mod model;
pub mod random;
pub mod relative;
pub mod share;

pub use model::{CheckpointTrigger, Fault, FaultKind, FinalKeyword, ProtocolStep, TaskStateTrigger, Trigger};
pub use random::RandomFaults;
pub use relative::Pilot;
pub use share::Share;
