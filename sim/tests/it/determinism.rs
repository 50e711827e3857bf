//! A seed replays: the same seed gives the same trace (hash and every event), in both modes and
//! with a crash; another seed gives another trace, so the hash is not a constant.

use sluice_engine::graph::ExecutionMode;
use sluice_sim::check::deterministic;
use sluice_sim::runner::run;

use super::support::load;

#[test]
fn the_same_seed_gives_the_same_trace() {
    let scenario = load("scenarios/wordcount-tm-crash.yaml");
    for mode in ExecutionMode::ALL {
        let first = run(&scenario, mode, 42);
        let second = run(&scenario, mode, 42);
        assert_eq!(deterministic(&first, &second), Ok(()));
        assert_eq!(first.trace, second.trace);
        assert!(first.trace.len() > 20, "a run with a crash and a restart has a real trace");
        let other = run(&scenario, mode, 43);
        assert_ne!(first.trace_hash, other.trace_hash, "different seeds must give different traces");
    }
}

#[test]
fn a_crash_restarts_the_job_and_the_trace_shows_it() {
    let scenario = load("scenarios/wordcount-tm-crash.yaml");
    let report = run(&scenario, ExecutionMode::Streaming, super::support::seed_or(7));
    let lines: Vec<String> = report.trace.iter().map(|record| record.event.to_string()).collect();
    assert!(lines.iter().any(|line| line == "fault #0: kill tm-1 (restart after 500ms)"), "{lines:#?}");
    // Streaming: every exchange is pipelined, so the job is one region and all of it restarts.
    assert!(lines.iter().any(|line| line.starts_with("restart 1 region as a1 ")), "{lines:#?}");
    assert!(report.restarts() >= 1);
}
