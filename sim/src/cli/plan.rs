//! `sluice plan`: a job's plan, as text (StreamGraph, JobGraph, pipelined regions and
//! the slots they need) or as a Graphviz digraph of the JobGraph.

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_engine::api::JobConfig;
use sluice_engine::graph::dot::job_graph_dot;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph, ExecutionMode, JobGraph};
use sluice_engine::scheduler::SchedulingStrategy;

use clap::{Args, ValueEnum};

use super::Mode;
use crate::sweep::summary::status;
use sluice_harness::scenario::MAX_PARALLELISM;
use sluice_harness::words::printable;

/// How `sluice plan` prints the plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(super) enum PlanFormat {
    /// The plan's text renderings and the slots it needs.
    #[default]
    Text,
    /// The JobGraph as a Graphviz digraph.
    Dot,
}

#[derive(Debug, Args)]
pub(super) struct PlanArgs {
    /// The job: one this binary knows (`sluice plan --help` lists them).
    job: String,
    /// The mode to plan.
    #[arg(long, value_enum, default_value = "batch")]
    mode: Mode,
    /// Which exchanges are pipelined [default: all-edges-blocking in batch, all-edges-pipelined in streaming].
    #[arg(long, value_name = "MODE", value_parser = |text: &str| ExchangeMode::parse(text).map_err(|message| printable(&message)))]
    exchange_mode: Option<ExchangeMode>,
    /// The job's default parallelism.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_PARALLELISM)))]
    parallelism: u32,
    /// Text, or a Graphviz digraph of the JobGraph.
    #[arg(long, value_enum, default_value_t)]
    format: PlanFormat,
}

pub(super) fn command(arguments: &PlanArgs) -> i32 {
    match render(arguments) {
        Ok(text) => {
            print!("{text}");
            status::PASSED
        }
        Err(message) => {
            eprintln!("sluice plan: {message}");
            status::USAGE
        }
    }
}

/// The plan of the job, in the requested format.
fn render(arguments: &PlanArgs) -> Result<String, String> {
    let job = super::jobs().find(&arguments.job).map_err(|message| printable(&message))?;
    let mode = ExecutionMode::from(arguments.mode);
    let exchange_mode = arguments.exchange_mode.unwrap_or(ExchangeMode::default_for(mode));
    let params = job.resolve_params(&BTreeMap::new())?;
    let graph = job.plan(&params, JobConfig::new(mode, arguments.parallelism).with_exchange_mode(exchange_mode))?;
    Ok(match arguments.format {
        PlanFormat::Text => text(graph),
        PlanFormat::Dot => job_graph_dot(&graph),
    })
}

/// The StreamGraph, JobGraph and pipelined regions, and the most slots a region needs.
pub(super) fn text(graph: JobGraph) -> String {
    let (stream_graph, job_graph) = (graph.stream_graph.to_string(), graph.to_string());
    let execution_graph = ExecutionGraph::new(Arc::new(graph));
    let slots = SchedulingStrategy::new(execution_graph.clone()).slots_needed_at_once();
    format!("{stream_graph}\n{job_graph}\n{execution_graph}slots needed at once: {slots}\n")
}

#[cfg(test)]
mod tests {
    use super::super::{Cli, Command, main};
    use super::*;
    use clap::Parser;

    fn plan(arguments: &[&str]) -> Result<String, String> {
        let line = ["sluice", "plan"].iter().chain(arguments);
        match Cli::try_parse_from(line).map_err(|error| error.to_string())?.command {
            Command::Plan(arguments) => render(&arguments),
            other => panic!("parsed as {other:?}"),
        }
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
        assert!(plan(&["tpcds", "--format", "svg"]).unwrap_err().contains("text, dot"));
        assert!(plan(&["tpcds", "--mode", "sideways"]).unwrap_err().contains("streaming, batch"));
        assert!(plan(&["tpcds", "--parallelism", "0"]).unwrap_err().contains("1..=256"));
        assert!(plan(&["tpcds", "--parallelism", "100000"]).unwrap_err().contains("1..=256"));
        let exit = |arguments: &[&str]| main(arguments.iter().map(ToString::to_string).collect());
        assert_eq!(exit(&["plan", "wordcont"]), status::USAGE);
        assert_eq!(exit(&["plan", "tpcds", "--exchange-mode", "sideways"]), status::USAGE);
        assert_eq!(exit(&["plan"]), status::USAGE);
        assert_eq!(exit(&["plan", "wordcount", "--format", "dot"]), status::PASSED);
    }
}
