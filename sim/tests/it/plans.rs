//! Plan snapshots, kept in `snapshots/`: for every catalog job, in streaming mode and in batch
//! mode under every exchange mode, the StreamGraph, the JobGraph, the pipelined regions, and
//! the scheduling decisions of a fault-free run (seed 1).

use std::sync::Arc;

use sluice_catalog as catalog;
use sluice_engine::api::JobConfig;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph, ExecutionMode};
use sluice_engine::scheduler::SchedulingStrategy;
use sluice_engine::trace::TraceEvent;
use sluice_sim::runner::run;
use sluice_sim::scenario::Scenario;

fn scenario(job: &str, mode: ExecutionMode, exchange_mode: ExchangeMode) -> Scenario {
    let text = format!(
        "name: plan-{job}\njob: {job}\ncluster: {{ task_managers: 3, slots_per_task_manager: 2 }}\nparallelism: 2\n\
         modes: [{mode}]\nexchange_mode: {exchange_mode}\n"
    );
    Scenario::parse("plan", &text).unwrap_or_else(|error| panic!("{error}"))
}

/// What the scheduler decided, in order: regions and the slots they got.
fn decisions(scenario: &Scenario, mode: ExecutionMode) -> String {
    let report = run(scenario, mode, 1);
    assert_eq!(sluice_sim::check::check_run(&report), vec![], "the snapshot run must pass");
    report
        .trace
        .iter()
        .filter(|record| matches!(record.event, TraceEvent::RegionScheduled { .. }))
        .map(|record| format!("  {}\n", record.event))
        .collect()
}

fn render(job: &catalog::SimJob, mode: ExecutionMode, exchange_mode: ExchangeMode) -> String {
    let params = job.resolve_params(&Default::default()).unwrap();
    let plan = job.plan(&params, JobConfig::new(mode, 2).with_exchange_mode(exchange_mode)).unwrap();
    let stream_graph = plan.stream_graph.to_string();
    let job_graph = plan.to_string();
    let graph = ExecutionGraph::new(Arc::new(plan));
    let slots = SchedulingStrategy::new(graph.clone()).slots_needed_at_once();
    let decisions = decisions(&scenario(job.name(), mode, exchange_mode), mode);
    format!(
        "{stream_graph}\n{job_graph}\n{graph}slots needed at once: {slots}\n\nscheduling decisions (seed 1):\n{decisions}"
    )
}

#[test]
fn catalog_plans_in_both_modes_and_every_exchange_mode() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../../../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for job in catalog::jobs() {
            insta::assert_snapshot!(
                format!("plan-{}-streaming", job.name()),
                render(job, ExecutionMode::Streaming, ExchangeMode::AllEdgesPipelined)
            );
            for exchange_mode in ExchangeMode::ALL {
                insta::assert_snapshot!(
                    format!("plan-{}-batch-{exchange_mode}", job.name()),
                    render(job, ExecutionMode::Batch, exchange_mode)
                );
            }
        }
    });
}

#[test]
fn streaming_is_one_region_and_batch_one_region_per_subtask() {
    let job = catalog::find("wordcount").unwrap();
    let params = job.resolve_params(&Default::default()).unwrap();
    let streaming =
        ExecutionGraph::new(Arc::new(job.plan(&params, JobConfig::new(ExecutionMode::Streaming, 3)).unwrap()));
    assert_eq!(streaming.regions().len(), 1);
    assert_eq!(SchedulingStrategy::new(streaming).slots_needed_at_once(), 3);
    let batch = ExecutionGraph::new(Arc::new(job.plan(&params, JobConfig::new(ExecutionMode::Batch, 3)).unwrap()));
    assert_eq!(batch.regions().len(), 6);
    assert_eq!(SchedulingStrategy::new(batch).slots_needed_at_once(), 1);
}
