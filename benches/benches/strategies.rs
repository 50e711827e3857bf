//! Simulated makespan of each catalog job (the TPC-DS query shapes among them) in batch mode
//! under each exchange mode: which strategy finishes a job sooner on a 3 TaskManager × 2 slot
//! cluster at parallelism 2, under this machine's measured costs (`profiles/this-machine.yaml`,
//! which `sluice-real compare` holds against real runs; the default costs on a machine of
//! another kind, which the profile does not describe).
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
use sluice_sim::cost::CostSpec;
use sluice_sim::runner::run;
use sluice_sim::scenario::{CostProfile, Scenario};

/// This machine's cost profile, if it describes a machine of this kind.
fn costs() -> Option<CostSpec> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../profiles/this-machine.yaml");
    match CostProfile::load(&path) {
        Ok(profile) => Some(profile.costs),
        Err(error) => {
            eprintln!("strategies: default costs, not the profile: {error}");
            None
        }
    }
}

/// A fault-free scenario of a catalog job with its default parameters.
fn scenario(job: &str, exchange_mode: ExchangeMode, costs: Option<&CostSpec>) -> Scenario {
    let text = format!(
        "name: strategies-{job}\njob: {job}\ncluster: {{ task_managers: 3, slots_per_task_manager: 2 }}\n\
         parallelism: 2\nmodes: [batch]\nexchange_mode: {exchange_mode}\n"
    );
    let scenario = Scenario::parse("strategies", &text).unwrap_or_else(|error| panic!("{error}"));
    Scenario { costs: costs.cloned().unwrap_or_default(), ..scenario }
}

/// The simulated makespan of one passing batch run.
fn makespan(scenario: &Scenario, seed: u64) -> Duration {
    let report = run(scenario, ExecutionMode::Batch, seed);
    let failures = check_run(&report);
    assert!(failures.is_empty(), "seed {seed} of {} failed: {failures:?}", scenario.name);
    report.makespan
}

fn exchange_modes(criterion: &mut Criterion) {
    let costs = costs();
    for job in catalog::jobs() {
        let mut group = criterion.benchmark_group(format!("makespan/{}", job.name()));
        group.sample_size(10).sampling_mode(SamplingMode::Flat).warm_up_time(Duration::from_millis(500));
        for exchange_mode in ExchangeMode::ALL {
            let scenario = scenario(job.name(), exchange_mode, costs.as_ref());
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
