//! Output is independent of how a job runs: for every catalog job, batch mode under every
//! exchange mode and parallelism 1, 2 and 4, with runtime-decided parallelism too, and streaming
//! mode at every parallelism, all commit exactly the reference output and the same final
//! values (a metamorphic oracle: no expected output is written by hand).

use sluice_catalog as catalog;
use sluice_engine::graph::{ExchangeMode, ExecutionMode};
use sluice_sim::check::modes_agree;
use sluice_sim::report::RunReport;
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

use super::support::{assert_passes, seed_or};

fn scenario(job: &str, parallelism: u32, exchange_mode: ExchangeMode, adaptive: bool) -> Scenario {
    let adaptive = if adaptive { "adaptive_batch: { target_bytes_per_task: 20000, max_parallelism: 5 }\n" } else { "" };
    let text = format!(
        "name: equivalence-{job}\njob: {job}\ncluster: {{ task_managers: 4, slots_per_task_manager: 2 }}\n\
         parallelism: {parallelism}\nexchange_mode: {exchange_mode}\n{adaptive}"
    );
    Scenario::parse("equivalence", &text).unwrap_or_else(|error| panic!("{error}"))
}

fn passing(scenario: &Scenario, mode: ExecutionMode, what: &str) -> RunReport {
    let report = run(scenario, mode, seed_or(3));
    assert_passes(scenario, &report, what);
    report
}

#[test]
fn every_job_commits_the_same_output_under_every_exchange_mode_and_parallelism() {
    for job in catalog::jobs() {
        let baseline = passing(
            &scenario(job.name(), 2, ExchangeMode::AllEdgesBlocking, false),
            ExecutionMode::Streaming,
            job.name(),
        );
        for parallelism in [1, 2, 4] {
            let what = format!("{} streaming p={parallelism}", job.name());
            let streaming = passing(
                &scenario(job.name(), parallelism, ExchangeMode::AllEdgesBlocking, false),
                ExecutionMode::Streaming,
                &what,
            );
            for exchange_mode in ExchangeMode::ALL {
                let what = format!("{} batch p={parallelism} {exchange_mode}", job.name());
                let batch =
                    passing(&scenario(job.name(), parallelism, exchange_mode, false), ExecutionMode::Batch, &what);
                assert_eq!(modes_agree(&baseline, &batch), Ok(()), "{what}");
                assert_eq!(modes_agree(&streaming, &batch), Ok(()), "{what}");
            }
        }
        let what = format!("{} batch with runtime-decided parallelism", job.name());
        let adaptive =
            passing(&scenario(job.name(), 2, ExchangeMode::AllEdgesBlocking, true), ExecutionMode::Batch, &what);
        assert_eq!(modes_agree(&baseline, &adaptive), Ok(()), "{what}");
        let decided = adaptive.trace.iter().filter(|record| record.event.kind() == "parallelism_decided").count();
        // A job of one chain (a SQL job of scans, filters and projections) has no vertex fed by
        // another: the sources' parallelism is the job's, and there is nothing to decide.
        let params = job.resolve_params(&Default::default()).expect("default parameters resolve");
        let plan = job.plan(&params, sluice_engine::api::JobConfig::new(ExecutionMode::Batch, 2)).expect("it plans");
        if plan.edges.is_empty() {
            assert_eq!(decided, 0, "{what}: a job of one vertex had a parallelism decided");
        } else {
            assert!(decided >= 1, "{what}: the adaptive scheduler decided nothing");
        }
    }
}
