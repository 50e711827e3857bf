//! The Sluice simulation: builds a simulated cluster from a YAML scenario, runs a job in
//! streaming and batch mode for many seeds, injects faults, and judges each run with the
//! harness (`sluice-harness`), against the job's reference implementation.
//!
//! | module | owns |
//! |---|---|
//! | [`cluster`] | the madsim nodes: JobMaster, TaskManagers with disks, and the services (`sluice-services`) |
//! | [`inject`] | carries a scenario's fault schedule out at its simulated times |
//! | [`runner`] | one seed in one mode, in a fresh thread with its own madsim runtime |
//! | [`seed`] | one seed in every mode, judged: the verdict, determinism, expected-unrecoverable |
//! | [`harness_crash`] | test-only crashes of the harness itself, that sweeps must survive |
//! | [`simulation`] | the test API for a user's own job: `Simulation::of(&JOB)…run().assert_passed()` |
//! | [`sweep`] | many seeds in isolated worker processes; records, summaries, shards, JUnit |
//! | [`replay`] | replay files of failed seeds, and the command that replays one |
//! | [`shrink`] | a failing seed's fault schedule made minimal |
//! | [`explore`] | coverage-guided campaigns over fault schedules (`sluice explore`), their corpus directory and chart |
//! | [`cli`] | the `sluice` command |
//!
//! The harness's modules are re-exported under their names ([`scenario`], [`check`],
//! [`report`]…), so that a user's crate that tests its own job needs only this one.
//!
//! **Architecture invariant:** `sim` owns nothing that ships and judges nothing itself: the
//! engine, the services and the checks are the crates below it, which `sluice-real` runs as
//! processes. It may read the wall clock (to report how long a simulation took) and spawn OS
//! threads (one per simulation); the crates below may do neither. Its modules exist only in a
//! simulation build (`--cfg madsim`).

#[cfg(madsim)]
pub mod cli;
#[cfg(madsim)]
pub mod cluster;
#[cfg(madsim)]
pub mod explore;
#[cfg(madsim)]
pub mod harness_crash;
#[cfg(madsim)]
pub mod inject;
#[cfg(madsim)]
pub mod replay;
#[cfg(madsim)]
pub mod runner;
#[cfg(madsim)]
pub mod seed;
#[cfg(madsim)]
pub mod shrink;
#[cfg(madsim)]
pub mod simulation;
#[cfg(madsim)]
pub mod sweep;

#[cfg(madsim)]
pub use simulation::{Oracle, Simulation, SimulationReport};
/// What a job brings to be simulated: re-exported so that a user's crate needs only this one.
pub use sluice_catalog::{ExpectedOutput, ExpectedTable, ExternalInput, LateData, LateElements, SimJob, Updates};
pub use sluice_harness::{
    JobCatalog, Scenario, check, client, compare, cost, coverage, failover_sets, faults, late, output, recovery,
    report, scenario, timeline, trace, words,
};

/// Fails when the crate was built without `--cfg madsim`, e.g. because a `RUSTFLAGS` variable
/// replaced `.cargo/config.toml`'s flags: the simulation would silently not be a simulation.
pub const SIMULATION_MODE: bool = cfg!(madsim);
