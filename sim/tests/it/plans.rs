//! Plan snapshots: the StreamGraph, JobGraph and pipelined regions of every catalog job in both
//! modes, side by side, kept in `snapshots/`.

use std::sync::Arc;

use sluice_engine::api::JobConfig;
use sluice_engine::catalog;
use sluice_engine::graph::{ExecutionGraph, ExecutionMode};
use sluice_engine::scheduler::SchedulingStrategy;

fn render(job: &catalog::CatalogJob, mode: ExecutionMode) -> String {
    let params = job.resolve_params(&Default::default()).unwrap();
    let plan = job.plan(&params, JobConfig::new(mode, 2)).unwrap();
    let stream_graph = plan.stream_graph.to_string();
    let job_graph = plan.to_string();
    let graph = ExecutionGraph::new(Arc::new(plan));
    let slots = SchedulingStrategy::new(graph.clone()).max_slots_per_region();
    format!("{stream_graph}\n{job_graph}\n{graph}slots needed at once: {slots}\n")
}

#[test]
fn catalog_plans_in_both_modes() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../../../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for job in catalog::jobs() {
            for mode in ExecutionMode::ALL {
                insta::assert_snapshot!(format!("plan-{}-{mode}", job.name), render(job, mode));
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
    assert_eq!(SchedulingStrategy::new(streaming).max_slots_per_region(), 3);
    let batch = ExecutionGraph::new(Arc::new(job.plan(&params, JobConfig::new(ExecutionMode::Batch, 3)).unwrap()));
    assert_eq!(batch.regions().len(), 6);
    assert_eq!(SchedulingStrategy::new(batch).max_slots_per_region(), 1);
}
