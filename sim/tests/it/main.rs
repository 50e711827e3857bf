//! The simulation suite: scenarios, scenario errors, the CLI, determinism, plans, and canaries.
//!
//! One integration-test binary (modules below) so that the suite builds once. Every scenario
//! test runs its seeds in both modes with real checks; `SLUICE_SEEDS=N` runs seeds `1..=N`
//! instead of each scenario's own range, for a deeper sweep with the same tests, and
//! `SLUICE_SEED=N` only seed N, to rerun one failure (every failure prints that command).

mod canary;
mod changelog;
mod checkpoints;
mod cli;
mod coverage;
mod csv_source;
mod determinism;
mod equivalence;
mod event_time;
mod explore;
mod failover;
mod fault_points;
mod harness;
mod invalid;
mod landing;
mod layout;
mod plans;
mod scenario_errors;
mod scenarios;
mod shuffle;
mod sql;
mod support;
mod sweep;
mod tidy;
mod timeline;
mod tpcds_queries;
