//! `sluice plan`: a catalog job's plan, as text (StreamGraph, JobGraph, pipelined regions and
//! the slots they need) or as a Graphviz digraph of the JobGraph.

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_engine::api::JobConfig;
use sluice_engine::catalog;
use sluice_engine::graph::dot::job_graph_dot;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph, ExecutionMode, JobGraph};
use sluice_engine::scheduler::SchedulingStrategy;

use super::Options;
use crate::scenario::MAX_PARALLELISM;

/// How `sluice plan` prints the plan.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PlanFormat {
    /// The plan's text renderings and the slots it needs.
    Text,
    /// The JobGraph as a Graphviz digraph.
    Dot,
}

impl PlanFormat {
    /// Parses `text` or `dot`.
    pub(super) fn parse(text: &str) -> Result<PlanFormat, String> {
        match text {
            "text" => Ok(PlanFormat::Text),
            "dot" => Ok(PlanFormat::Dot),
            other => Err(format!("unknown format `{other}`; use text or dot")),
        }
    }
}

pub(super) fn command(options: &Options) -> i32 {
    match render(options) {
        Ok(text) => {
            print!("{text}");
            0
        }
        Err(message) => {
            eprintln!("sluice plan: {message}");
            2
        }
    }
}

/// The plan of the job named by the first argument, in the requested format.
fn render(options: &Options) -> Result<String, String> {
    let job = catalog::find(&options.file.to_string_lossy())?;
    let parallelism = options.parallelism.unwrap_or(2);
    if !(1..=MAX_PARALLELISM).contains(&parallelism) {
        return Err(format!("parallelism must be in 1..={MAX_PARALLELISM}, not {parallelism}"));
    }
    let mode = options.mode.unwrap_or(ExecutionMode::Batch);
    let exchange_mode = options.exchange_mode.unwrap_or(ExchangeMode::default_for(mode));
    let params = job.resolve_params(&BTreeMap::new())?;
    let graph = job.plan(&params, JobConfig::new(mode, parallelism).with_exchange_mode(exchange_mode))?;
    Ok(match options.format.unwrap_or(PlanFormat::Text) {
        PlanFormat::Text => text(graph),
        PlanFormat::Dot => job_graph_dot(&graph),
    })
}

/// The StreamGraph, JobGraph and pipelined regions, and the most slots a region needs.
fn text(graph: JobGraph) -> String {
    let (stream_graph, job_graph) = (graph.stream_graph.to_string(), graph.to_string());
    let execution_graph = ExecutionGraph::new(Arc::new(graph));
    let slots = SchedulingStrategy::new(execution_graph.clone()).max_slots_per_region();
    format!("{stream_graph}\n{job_graph}\n{execution_graph}slots needed at once: {slots}\n")
}

#[cfg(test)]
mod tests {
    use super::super::{main, parse};
    use super::*;

    fn plan(arguments: &[&str]) -> Result<String, String> {
        let arguments: Vec<String> = arguments.iter().map(ToString::to_string).collect();
        render(&parse(&arguments, &["--mode", "--exchange-mode", "--parallelism", "--format"])?)
    }

    #[test]
    fn the_text_plan_has_every_rendering_and_the_slots_needed() {
        let text = plan(&["tpcds", "--exchange-mode", "pointwise-edges-pipelined"]).unwrap();
        assert!(text.starts_with("StreamGraph `tpcds` (batch)\n"), "{text}");
        assert!(text.contains("JobGraph `tpcds` (batch, pointwise-edges-pipelined)\n"), "{text}");
        assert!(text.contains("\nPipelined regions of `tpcds` (batch)\n  r0: "), "{text}");
        assert!(text.ends_with("slots needed at once: 2\n"), "{text}");
        let streaming = plan(&["wordcount", "--mode", "streaming", "--parallelism", "3"]).unwrap();
        assert!(streaming.contains("(streaming, all-edges-pipelined)") && streaming.ends_with("at once: 3\n"));
    }

    #[test]
    fn the_default_is_batch_all_edges_blocking_at_parallelism_two() {
        let text = plan(&["wordcount"]).unwrap();
        assert!(text.contains("JobGraph `wordcount` (batch, all-edges-blocking)") && text.contains(" p=2 "), "{text}");
    }

    #[test]
    fn the_dot_plan_is_a_digraph() {
        let dot = plan(&["wordcount", "--format", "dot"]).unwrap();
        assert!(dot.starts_with("digraph \"wordcount\" {") && dot.contains("style=dashed"), "{dot}");
    }

    #[test]
    fn unknown_values_are_errors_naming_the_known_ones() {
        let error = plan(&["wordcont"]).unwrap_err();
        assert!(error.contains("wordcount") && error.contains("tpcds"), "{error}");
        let error = plan(&["tpcds", "--exchange-mode", "sideways"]).unwrap_err();
        assert!(error.contains("pointwise-edges-pipelined"), "{error}");
        assert!(plan(&["tpcds", "--format", "svg"]).unwrap_err().contains("text or dot"));
        assert!(plan(&["tpcds", "--mode", "sideways"]).unwrap_err().contains("streaming or batch"));
        assert!(plan(&["tpcds", "--parallelism", "0"]).unwrap_err().contains("1..="));
        let exit = |arguments: &[&str]| main(arguments.iter().map(ToString::to_string).collect());
        assert_eq!(exit(&["plan", "wordcont"]), 2);
        assert_eq!(exit(&["plan", "tpcds", "--exchange-mode", "sideways"]), 2);
        assert_eq!(exit(&["plan"]), 2);
        assert_eq!(exit(&["plan", "wordcount", "--format", "dot"]), 0);
    }
}
