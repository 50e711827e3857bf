//! The simulation suite: scenarios, scenario errors, the CLI, determinism, plans, and canaries.
//!
//! One integration-test binary (modules below) so that the suite builds once. Every scenario
//! test runs its seeds in both modes with real checks; `SLUICE_SEEDS=N` runs seeds `1..=N`
//! instead of each scenario's own range, for a deeper sweep with the same tests.

mod canary;
mod checkpoints;
mod cli;
mod determinism;
mod equivalence;
mod event_time;
mod failover;
mod harness;
mod plans;
mod scenario_errors;
mod scenarios;
mod shuffle;
mod support;
mod tidy;
mod timeline;
