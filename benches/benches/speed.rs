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
//! `cargo test` runs it once on a tenth of the words, so it cannot rot unnoticed.

use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use sluice_catalog::ParamValue;
use sluice_engine::graph::ExecutionMode;
use sluice_sim::check::{Verdict, judge};
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

fn scenario() -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/speed-1000000.yaml");
    let mut scenario = Scenario::load(&path).unwrap_or_else(|error| panic!("{error}"));
    if !std::env::args().any(|argument| argument == "--bench") {
        scenario.params.insert("words".to_string(), ParamValue::Int(100_000));
    }
    scenario
}

fn one_seed(criterion: &mut Criterion) {
    let scenario = scenario();
    let mut group = criterion.benchmark_group("speed-1000000");
    group.sample_size(10);
    for mode in ExecutionMode::ALL {
        group.bench_function(format!("seed 3/{mode}"), |bencher| {
            bencher.iter(|| {
                let report = run(&scenario, mode, 3);
                assert_eq!(judge(&report, &scenario), Verdict::Pass, "the benchmarked seed passes");
                report
            })
        });
    }
    group.finish();
}

criterion_group!(benches, one_seed);
criterion_main!(benches);
