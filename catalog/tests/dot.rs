//! The Graphviz rendering of job graphs (`sluice plan --format dot`) on the catalog's plans:
//! every vertex and edge drawn with its record type as a user writes it, blocking edges dashed,
//! regions as clusters, a legend of what the drawing uses, names escaped.

use sluice_catalog as catalog;
use sluice_engine::api::{JobConfig, StreamEnv};
use sluice_engine::connectors::{LogSource, TxnStoreSink};
use sluice_engine::graph::dot::job_graph_dot;
use sluice_engine::graph::{ExchangeMode, ExecutionMode, JobGraph};

fn plan(job: &str, mode: ExecutionMode, exchange_mode: ExchangeMode) -> JobGraph {
    let job = catalog::find(job).unwrap();
    let params = job.resolve_params(&Default::default()).unwrap();
    job.plan(&params, JobConfig::new(mode, 2).with_exchange_mode(exchange_mode)).unwrap()
}

#[test]
fn every_vertex_and_edge_is_drawn_and_blocking_edges_are_dashed() {
    let graph = plan("tpcds", ExecutionMode::Batch, ExchangeMode::PointwiseEdgesPipelined);
    let dot = job_graph_dot(&graph);
    assert!(dot.starts_with("digraph \"tpcds\" {\n") && dot.ends_with("}\n"), "{dot}");
    for vertex in &graph.vertices {
        let label = format!("v{} [label=\"{}\\np={}\"];", vertex.id.0, vertex.name, vertex.parallelism);
        assert!(dot.contains(&label), "`{label}` missing:\n{dot}");
    }
    assert_eq!(dot.matches(" -> v").count(), graph.edges.len(), "{dot}");
    assert!(dot.contains("v0 -> v2 [label=\"FORWARD Pointwise\\n(u64, u64)\", style=solid];"), "{dot}");
    assert!(dot.contains("v4 -> v5 [label=\"HASH AllToAll\\n(u64, String)\\n(input 1)\", style=dashed];"), "{dot}");
    assert!(!dot.contains("alloc::"), "types are printed as a user writes them:\n{dot}");
}

/// The legend, the part of the drawing after its last edge.
fn legend(dot: &str) -> &str {
    dot.split_once("  subgraph cluster_legend {\n").map_or("", |(_, legend)| legend)
}

#[test]
fn the_legend_explains_the_edge_styles_and_clusters_the_drawing_uses() {
    let pointwise = job_graph_dot(&plan("tpcds", ExecutionMode::Batch, ExchangeMode::PointwiseEdgesPipelined));
    let legend_of_both = legend(&pointwise);
    assert!(legend_of_both.contains("legend_pipelined_producer -> legend_pipelined [style=solid];"), "{pointwise}");
    assert!(legend_of_both.contains("legend_blocking_producer -> legend_blocking [style=dashed];"), "{pointwise}");
    assert!(legend_of_both.contains("legend_region [shape=box, style=rounded, color=gray,"), "{pointwise}");
    assert!(legend_of_both.contains("record type"), "the legend says what an edge label holds:\n{pointwise}");
    let blocking = job_graph_dot(&plan("tpcds", ExecutionMode::Batch, ExchangeMode::AllEdgesBlocking));
    assert!(legend(&blocking).contains("[style=dashed]"), "{blocking}");
    assert!(!legend(&blocking).contains("legend_pipelined") && !legend(&blocking).contains("legend_region"));
    let streaming = job_graph_dot(&plan("wordcount", ExecutionMode::Streaming, ExchangeMode::AllEdgesPipelined));
    assert!(!legend(&streaming).contains("legend_blocking"), "{streaming}");
    for dot in [pointwise, blocking, streaming] {
        assert_eq!(dot.matches('{').count(), dot.matches('}').count(), "{dot}");
    }
}

#[test]
fn job_vertices_sharing_a_pipelined_region_form_one_cluster() {
    let pointwise = job_graph_dot(&plan("tpcds", ExecutionMode::Batch, ExchangeMode::PointwiseEdgesPipelined));
    assert_eq!(pointwise.matches("subgraph cluster_region_").count(), 1, "{pointwise}");
    let cluster = pointwise.split("subgraph cluster_region_0 {").nth(1).unwrap().split("  }").next().unwrap();
    for vertex in ["v0", "v1", "v2", "v3"] {
        assert!(cluster.contains(&format!("    {vertex} [label=")), "{vertex} not in the cluster:\n{pointwise}");
    }
    let blocking = job_graph_dot(&plan("tpcds", ExecutionMode::Batch, ExchangeMode::AllEdgesBlocking));
    assert!(!blocking.contains("subgraph cluster_region_") && !blocking.contains("style=solid"), "{blocking}");
    let streaming = job_graph_dot(&plan("wordcount", ExecutionMode::Streaming, ExchangeMode::AllEdgesPipelined));
    assert_eq!(streaming.matches("subgraph cluster_region_").count(), 1, "{streaming}");
    assert!(!streaming.contains("style=dashed"), "{streaming}");
}

#[test]
fn a_parallelism_decided_at_runtime_is_drawn_as_auto() {
    let job = catalog::find("tpcds").unwrap();
    let params = job.resolve_params(&Default::default()).unwrap();
    let config = JobConfig::new(ExecutionMode::Batch, 2).with_adaptive_parallelism(true);
    let graph = job.plan(&params, config).unwrap();
    let dot = job_graph_dot(&graph);
    for vertex in &graph.vertices {
        let parallelism = if vertex.auto_parallelism { "auto".to_string() } else { vertex.parallelism.to_string() };
        assert!(dot.contains(&format!("v{} [label=\"{}\\np={parallelism}\"];", vertex.id.0, vertex.name)), "{dot}");
    }
    assert!(dot.contains("\\np=auto\""), "tpcds has vertices whose parallelism is decided at runtime:\n{dot}");
}

#[test]
fn the_rendering_is_deterministic() {
    for job in catalog::jobs() {
        for exchange_mode in ExchangeMode::ALL {
            let first = job_graph_dot(&plan(job.name(), ExecutionMode::Batch, exchange_mode));
            assert_eq!(first, job_graph_dot(&plan(job.name(), ExecutionMode::Batch, exchange_mode)));
        }
    }
}

#[test]
fn quotes_in_job_and_operator_names_are_escaped() {
    let env = StreamEnv::new("say \"hi\"", JobConfig::new(ExecutionMode::Batch, 1));
    env.from_source(LogSource::<u64>::new("numbers"))
        .rebalance()
        .map(|value| value + 1)
        .name("add \"one\"")
        .sink_to(TxnStoreSink::append("t", |value: &u64| (value.to_string(), String::new())));
    let graph = JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), ExchangeMode::AllEdgesBlocking).unwrap();
    let dot = job_graph_dot(&graph);
    assert!(dot.starts_with("digraph \"say \\\"hi\\\"\" {"), "{dot}");
    assert!(dot.contains("add \\\"one\\\" -> Sink\\np=1"), "{dot}");
}
