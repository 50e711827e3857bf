//! Simulated makespan of each catalog job in batch mode under each exchange mode: which
//! strategy finishes a job sooner on a 3 TaskManager × 2 slot cluster at parallelism 2.
//!
//! Unlike `seeds.rs`, this measures simulated time, not wall time: each iteration runs another
//! seed and `iter_custom` returns the makespans summed, so criterion reports the simulated time
//! of one run. Every run must finish exactly once. `cargo bench -p sluice-benches --bench
//! strategies` measures; `cargo test` runs each bench once as a smoke test.

use std::time::Duration;

use criterion::{Criterion, SamplingMode, criterion_group, criterion_main};
use sluice_catalog as catalog;
use sluice_engine::graph::{ExchangeMode, ExecutionMode};
use sluice_sim::check::check_run;
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

/// A fault-free scenario of a catalog job with its default parameters.
fn scenario(job: &str, exchange_mode: ExchangeMode) -> Scenario {
    let text = format!(
        "name: strategies-{job}\njob: {job}\ncluster: {{ task_managers: 3, slots_per_task_manager: 2 }}\n\
         parallelism: 2\nmodes: [batch]\nexchange_mode: {exchange_mode}\n"
    );
    Scenario::parse("strategies", &text).unwrap_or_else(|error| panic!("{error}"))
}

/// The simulated makespan of one passing batch run.
fn makespan(scenario: &Scenario, seed: u64) -> Duration {
    let report = run(scenario, ExecutionMode::Batch, seed);
    let failures = check_run(&report);
    assert!(failures.is_empty(), "seed {seed} of {} failed: {failures:?}", scenario.name);
    report.makespan
}

fn exchange_modes(criterion: &mut Criterion) {
    for job in catalog::jobs() {
        let mut group = criterion.benchmark_group(format!("makespan/{}", job.name()));
        group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
        for exchange_mode in ExchangeMode::ALL {
            let scenario = scenario(job.name(), exchange_mode);
            let mut next_seed = 1;
            group.bench_function(exchange_mode.as_str(), |bencher| {
                bencher.iter_custom(|iterations| {
                    let seeds = next_seed..next_seed + iterations;
                    next_seed += iterations;
                    seeds.map(|seed| makespan(&scenario, seed)).sum()
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, exchange_modes);
criterion_main!(benches);
