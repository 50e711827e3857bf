//! Sluice: a unified stream/batch dataflow engine in the spirit of Apache Flink.
//!
//! A job is a Rust function that builds a [`graph::StreamGraph`] on an [`api::StreamEnv`]. It is
//! registered by name in an [`api::JobRegistry`] that the JobMaster and every TaskManager are
//! handed when they start, so that they build the same graph from the same name and parameters
//! (the built-in jobs are the `sluice-catalog` crate's, registered like a user's). The same job runs in
//! [`api::ExecutionMode::Streaming`] (pipelined exchanges, keyed state in a hash backend) or
//! [`api::ExecutionMode::Batch`] (blocking exchanges, sorted keyed input, one key's state at a
//! time), and commits through a two-phase-commit sink.
//!
//! Layers, bottom up (dependencies only point downward):
//!
//! | layer | owns |
//! |---|---|
//! | [`trace`], [`resources`] | the events processes report, a TaskManager's cores, disk and network |
//! | [`graph`], [`sink`], [`storage`], [`time`] | the plan, the Sink V2 contract, the storage trait, event time (watermarks, windows) |
//! | [`scheduler`], [`shuffle`], [`state`], [`checkpoint`] | region scheduling and slots, data exchange, keyed state, checkpoints |
//! | [`api`], [`failover`], [`connectors`] | the DataStream SDK and operators, restart strategies, external systems |
//! | [`runtime`] | the JobMaster and TaskManager processes, tasks, RPC: the layers wired together |
//!
//! The engine never reads the wall clock, never spawns OS threads and never draws unseeded
//! randomness: time, tasks and randomness come from the runtime seam [`rt`] (madsim's simulation,
//! or tokio in the real build), so a whole simulated run replays from one seed.

pub mod api;
pub mod buggify;
pub mod checkpoint;
pub mod connectors;
pub mod counted;
pub mod cover;
pub mod duration;
pub mod failover;
pub mod future;
pub mod graph;
pub mod prng;
pub mod record;
pub mod resources;
pub mod rpc;
pub mod rt;
pub mod runtime;
pub mod scheduler;
pub mod shuffle;
pub mod sink;
pub mod state;
pub mod storage;
pub mod time;
pub mod trace;
