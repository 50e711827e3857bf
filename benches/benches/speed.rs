//! Issue 16's yardstick in criterion: one seed of `benches/scenarios/speed-1000000.yaml` (a
//! million words, ten random faults, four TaskManagers) per mode, the whole judged run: input,
//! reference, simulation, checks. `benches/speed.sh` compares whole `sluice run` processes with
//! a baseline build; this bench is the profile-friendly target:
//!
//! ```text
//! cargo bench -p sluice-benches --bench speed --profile profiling --no-run
//! perf record -g target/profiling/deps/speed-* --bench --profile-time 20
//! ```
//!
//! `cluster-size` runs `benches/scenarios/cluster-4.yaml` and `cluster-64.yaml` (100,000 words;
//! 4 TaskManagers at parallelism 4, 64 at 64) and the 64-TaskManager cluster at parallelism 4.
//!
//! `cargo test` runs each once on a tenth of the words, so it cannot rot unnoticed. The bench
//! allocates with mimalloc, as the `sluice` binary does.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use sluice_catalog::ParamValue;
use sluice_engine::graph::ExecutionMode;
use sluice_sim::check::{Verdict, judge};
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A scenario of `benches/scenarios`, on a tenth of its words unless benchmarking.
fn scenario(file: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios").join(file);
    let mut scenario = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
    if !std::env::args().any(|argument| argument == "--bench") {
        let words = scenario.job_params().get("words");
        scenario.params.insert("words".to_string(), ParamValue::Int(words / 10));
    }
    scenario
}

/// Runs and judges one seed in `mode`.
fn judged_run(scenario: &Scenario, mode: ExecutionMode, seed: u64) -> sluice_sim::report::RunReport {
    let report = run(scenario, mode, seed);
    assert_eq!(judge(&report, scenario), Verdict::Pass, "the benchmarked seed passes");
    report
}

fn one_seed(criterion: &mut Criterion) {
    let scenario = scenario("speed-1000000.yaml");
    let mut group = criterion.benchmark_group("speed-1000000");
    group.sample_size(10);
    for mode in ExecutionMode::ALL {
        group.bench_function(format!("seed 3/{mode}"), |bencher| bencher.iter(|| judged_run(&scenario, mode, 3)));
    }
    group.finish();
}

fn cluster_size(criterion: &mut Criterion) {
    let mut wide = scenario("cluster-64.yaml");
    wide.parallelism = 4;
    let clusters =
        [("4 TMs p4", scenario("cluster-4.yaml")), ("64 TMs p4", wide), ("64 TMs p64", scenario("cluster-64.yaml"))];
    let mut group = criterion.benchmark_group("cluster-size");
    group.sample_size(10);
    for (name, scenario) in &clusters {
        for mode in ExecutionMode::ALL {
            group.bench_function(format!("{name}/{mode}"), |bencher| bencher.iter(|| judged_run(scenario, mode, 1)));
        }
    }
    group.finish();
}

criterion_group!(benches, one_seed, cluster_size);
criterion_main!(benches);
