//! Wall time of one simulated seed of each shipped scenario, per mode: the cost of a seed, which
//! decides how many seeds `cargo test` and a sweep can afford.
//!
//! `cargo bench -p sluice-benches` measures; `cargo test` runs each bench once as a smoke test.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use sluice_engine::graph::ExecutionMode;
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

fn shipped_scenarios() -> Vec<Scenario> {
    let directory = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
    let mut paths: Vec<_> = std::fs::read_dir(&directory)
        .expect("scenarios/ exists")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
        .collect();
    paths.sort();
    paths.iter().map(|path| Scenario::load(path).unwrap_or_else(|error| panic!("{error}"))).collect()
}

fn one_seed(criterion: &mut Criterion) {
    let mut group = criterion.benchmark_group("one-seed");
    group.sample_size(20);
    for scenario in shipped_scenarios() {
        for mode in ExecutionMode::ALL {
            group.bench_function(format!("{}/{mode}", scenario.name), |bencher| {
                bencher.iter(|| {
                    let report = run(&scenario, mode, 1);
                    assert!(report.records_committed() > 0, "a benchmarked run must do the work");
                    report
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, one_seed);
criterion_main!(benches);
