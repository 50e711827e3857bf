//! The Sluice simulation harness: builds a simulated cluster from a YAML scenario, runs a job in
//! streaming and batch mode for many seeds, injects faults, and checks the committed output
//! against the job's reference implementation.
//!
//! | module | owns |
//! |---|---|
//! | [`scenario`] | the YAML format; errors that name file, line and field |
//! | [`cluster`] | the madsim nodes: JobMaster, TaskManagers with disks, log, transactional store |
//! | [`external`] | the simulated external systems (log server, transactional store server) |
//! | [`harness_crash`] | test-only crashes of the harness itself, that sweeps must survive |
//! | [`faults`] | injects a scenario's faults at their simulated times |
//! | [`runner`] | one seed in one mode, in a fresh thread: the [`runner::RunReport`] |
//! | [`check`] | exactly-once, streaming == batch, determinism |
//! | [`late`] | late data from the trace: the elements left out of fired windows that shaped the output |
//! | [`simulation`] | the test API for a user's own job: `Simulation::of(&JOB)…run().assert_passed()` |
//! | [`output`] | committed tables written as CSV (`run --output`), and two outputs compared (`diff`) |
//! | [`compare`] | what a run cost (makespan, slot-time, disk bytes, peak slots), per exchange mode |
//! | [`sweep`] | many seeds in isolated worker processes; records, summaries, shards, JUnit |
//! | [`trace`] | the event trace and its hash |
//! | [`coverage`] | the engine's coverage marks a run reached, against the faults active; the sweep's table |
//! | [`words`] | counts in the singular when they are one; user text made safe for a terminal |
//! | [`cli`] | the `sluice` command |
//!
//! `sim` depends on the engine, never the reverse. It may read the wall clock (to report how
//! long a simulation took) and spawn OS threads (one per simulation); the engine may do neither.

pub mod check;
#[cfg(madsim)]
pub mod cli;
#[cfg(madsim)]
pub mod cluster;
#[cfg(madsim)]
pub mod compare;
pub mod cost;
pub mod coverage;
pub mod external;
pub mod failover_sets;
pub mod faults;
pub mod harness_crash;
pub mod late;
pub mod output;
pub mod recovery;
#[cfg(madsim)]
pub mod replay;
pub mod runner;
pub mod scenario;
#[cfg(madsim)]
pub mod seed;
#[cfg(madsim)]
pub mod shrink;
#[cfg(madsim)]
pub mod simulation;
#[cfg(madsim)]
pub mod sweep;
pub mod timeline;
pub mod trace;
pub mod words;

pub use scenario::{JobCatalog, Scenario};
#[cfg(madsim)]
pub use simulation::{Oracle, Simulation, SimulationReport};
/// What a job brings to be simulated: re-exported so that a user's crate needs only this one.
pub use sluice_catalog::{ExpectedOutput, ExpectedTable, ExternalInput, LateData, LateElements, SimJob, Updates};

/// Fails when the crate was built without `--cfg madsim`, e.g. because a `RUSTFLAGS` variable
/// replaced `.cargo/config.toml`'s flags: the simulation would silently not be a simulation.
pub const SIMULATION_MODE: bool = cfg!(madsim);
