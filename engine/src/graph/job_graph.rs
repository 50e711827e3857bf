//! [`JobGraph`]: the plan after chaining, with a result partition type on every edge.
//!
//! Chaining follows Flink's `StreamingJobGraphGenerator.isChainable`: an edge is chained when
//! its target has exactly one input, the partitioner is FORWARD, both sides have the same
//! parallelism and max parallelism, and the target may be chained (keyed operators head their
//! chain in batch mode). A node may chain into several outputs, so a chain is a tree rooted at
//! its head. The exchange mode decides each remaining edge's [`ResultPartitionType`].

use std::fmt;

use serde::{Deserialize, Serialize};

use super::operator::ExecutionMode;
use super::partitioner::Partitioner;
use super::stream_graph::{ChainingStrategy, NodeBody, StreamGraph, StreamNodeId};
use crate::prng::fnv1a64;

/// Identifies a vertex of a [`JobGraph`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct JobVertexId(pub u32);

/// Identifies the data set an edge carries (one per [`JobEdge`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct IntermediateDataSetId(pub u32);

/// How a produced partition may be consumed (Flink's `ResultPartitionType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ResultPartitionType {
    /// Consumed while produced; producer and consumer run together (same pipelined region).
    Pipelined,
    /// Fully produced and persisted on the producer's TaskManager, then consumed; can be re-read.
    Blocking,
}

impl ResultPartitionType {
    /// True if producer and consumer must run at the same time.
    pub fn must_be_pipelined(self) -> bool {
        self == ResultPartitionType::Pipelined
    }
}

/// Which edges are pipelined (Flink's `GlobalStreamExchangeMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExchangeMode {
    /// Every edge blocking: each stage runs after its inputs finished (batch default).
    AllEdgesBlocking,
    /// FORWARD edges pipelined, the rest blocking.
    ForwardEdgesPipelined,
    /// POINTWISE edges (forward, rescale) pipelined, the rest blocking.
    PointwiseEdgesPipelined,
    /// Every edge pipelined: the whole job is one region (streaming, always).
    AllEdgesPipelined,
}

impl ExchangeMode {
    /// The exchange mode a job runs with in `mode` when nothing else is configured.
    pub fn default_for(mode: ExecutionMode) -> ExchangeMode {
        match mode {
            ExecutionMode::Streaming => ExchangeMode::AllEdgesPipelined,
            ExecutionMode::Batch => ExchangeMode::AllEdgesBlocking,
        }
    }

    /// Every mode, from the most blocking to the most pipelined.
    pub const ALL: [ExchangeMode; 4] = [
        ExchangeMode::AllEdgesBlocking,
        ExchangeMode::ForwardEdgesPipelined,
        ExchangeMode::PointwiseEdgesPipelined,
        ExchangeMode::AllEdgesPipelined,
    ];

    /// The name scenarios and the command line use, e.g. `pointwise-edges-pipelined`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExchangeMode::AllEdgesBlocking => "all-edges-blocking",
            ExchangeMode::ForwardEdgesPipelined => "forward-edges-pipelined",
            ExchangeMode::PointwiseEdgesPipelined => "pointwise-edges-pipelined",
            ExchangeMode::AllEdgesPipelined => "all-edges-pipelined",
        }
    }

    /// Parses [`ExchangeMode::as_str`].
    pub fn parse(text: &str) -> Result<ExchangeMode, String> {
        ExchangeMode::ALL.into_iter().find(|mode| mode.as_str() == text).ok_or_else(|| {
            let known: Vec<&str> = ExchangeMode::ALL.iter().map(|mode| mode.as_str()).collect();
            format!("unknown exchange mode `{text}`; modes: {}", known.join(", "))
        })
    }

    /// The exchange mode a job in `mode` actually runs with: streaming is always all-pipelined.
    pub fn effective(self, mode: ExecutionMode) -> ExchangeMode {
        match mode {
            ExecutionMode::Streaming => ExchangeMode::AllEdgesPipelined,
            ExecutionMode::Batch => self,
        }
    }

    fn partition_type(self, partitioner: &Partitioner) -> ResultPartitionType {
        let pipelined = match self {
            ExchangeMode::AllEdgesBlocking => false,
            ExchangeMode::ForwardEdgesPipelined => matches!(partitioner, Partitioner::Forward),
            ExchangeMode::PointwiseEdgesPipelined => partitioner.is_pointwise(),
            ExchangeMode::AllEdgesPipelined => true,
        };
        if pipelined { ResultPartitionType::Pipelined } else { ResultPartitionType::Blocking }
    }
}

impl fmt::Display for ExchangeMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether each producer feeds a subset of consumers or all of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum DistributionPattern {
    /// Producer `i` feeds consumer `i`.
    Pointwise,
    /// Every producer feeds every consumer.
    AllToAll,
}

/// A chain of stream nodes that runs as one task.
#[derive(Clone, Debug)]
pub struct JobVertex {
    /// Position in topological order.
    pub id: JobVertexId,
    /// Names of the chained operators joined by " -> " (in chain order).
    pub name: String,
    /// Number of subtasks (the default, if decided at runtime).
    pub parallelism: u32,
    /// True if the parallelism is decided at runtime from the bytes of the vertex's inputs.
    pub auto_parallelism: bool,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// Stream nodes of the chain, head first, in topological order; the chained edges between
    /// them are the stream graph's edges whose both ends are in the chain.
    pub chain: Vec<StreamNodeId>,
    /// Data sets this vertex consumes, in input order.
    pub inputs: Vec<IntermediateDataSetId>,
    /// Data sets this vertex produces, in output order.
    pub outputs: Vec<IntermediateDataSetId>,
}

/// An edge between two vertices, carrying one intermediate data set.
#[derive(Clone, Debug)]
pub struct JobEdge {
    /// The data set.
    pub id: IntermediateDataSetId,
    /// Producer vertex.
    pub source: JobVertexId,
    /// Consumer vertex.
    pub target: JobVertexId,
    /// The node of the producer's chain that emits into this edge.
    pub source_node: StreamNodeId,
    /// The consumer's input it feeds (0, or 1 for the second input of a two-input operator).
    pub target_input: u32,
    /// How records are distributed.
    pub partitioner: Partitioner,
    /// POINTWISE or ALL_TO_ALL.
    pub distribution: DistributionPattern,
    /// Pipelined or blocking.
    pub partition_type: ResultPartitionType,
}

/// The chained plan; see the module doc.
#[derive(Clone)]
pub struct JobGraph {
    /// The job's name in the catalog.
    pub job_name: String,
    /// The execution mode.
    pub mode: ExecutionMode,
    /// The exchange mode that typed the edges.
    pub exchange_mode: ExchangeMode,
    /// Vertices in topological order.
    pub vertices: Vec<JobVertex>,
    /// Edges, indexed by their data set id.
    pub edges: Vec<JobEdge>,
    /// The stream graph the vertices were chained from.
    pub stream_graph: StreamGraph,
}

fn is_chainable(graph: &StreamGraph, upstream: StreamNodeId, downstream: StreamNodeId) -> bool {
    let up = graph.node(upstream);
    let down = graph.node(downstream);
    let inputs = graph.in_edges(downstream);
    inputs.len() == 1
        && matches!(inputs[0].1.partitioner, Partitioner::Forward)
        && up.parallelism == down.parallelism
        && up.max_parallelism == down.max_parallelism
        && down.chaining == ChainingStrategy::Always
        && !matches!(down.body, NodeBody::Source(_))
}

/// A vertex's parallelism may be decided at runtime when the program did not set it, it reads
/// from other vertices, and all its inputs and outputs are hash or rebalance edges: then its
/// producers can write key groups and it can read any contiguous range of them.
fn may_decide_at_runtime(vertex: &JobVertex, edges: &[JobEdge], stream_graph: &StreamGraph) -> bool {
    let explicit = vertex.chain.iter().any(|node| stream_graph.node(*node).parallelism_explicit);
    let splittable = |dataset: &IntermediateDataSetId| {
        let edge = &edges[dataset.0 as usize];
        matches!(edge.partitioner, Partitioner::Hash(_) | Partitioner::Rebalance)
    };
    !explicit
        && !vertex.inputs.is_empty()
        && vertex.inputs.iter().all(splittable)
        && vertex.outputs.iter().all(splittable)
}

/// `auto` (whether each vertex may have its parallelism decided at runtime) with every vertex
/// that feeds a fixed one made fixed too: a fixed vertex's subtasks exist from the start, and
/// their channels need their producers' parallelism (the execution graph's invariant: a consumer
/// is initialized only after its producers). Vertex ids are a topological order, so one pass from
/// the last vertex back settles it.
fn fixed_upstream_of_fixed(mut auto: Vec<bool>, edges: &[JobEdge]) -> Vec<bool> {
    for vertex in (0..auto.len()).rev() {
        let feeds_fixed = edges.iter().any(|edge| edge.source.0 as usize == vertex && !auto[edge.target.0 as usize]);
        if feeds_fixed {
            auto[vertex] = false;
        }
    }
    auto
}

/// The job vertices of a stream graph, each a chain of nodes (without edges yet), and the vertex
/// of each node, by node id.
fn chain(stream_graph: &StreamGraph) -> (Vec<JobVertex>, Vec<JobVertexId>) {
    // Node ids follow program order, and the API only connects existing nodes to new ones, so id
    // order is a topological order: a node's upstream has its vertex already.
    let mut vertex_of: Vec<JobVertexId> = Vec::new();
    let mut vertices: Vec<JobVertex> = Vec::new();
    for node in stream_graph.nodes() {
        assert_eq!(node.id.0 as usize, vertex_of.len(), "stream graph invariant: node ids follow program order");
        let inputs = stream_graph.in_edges(node.id);
        let chained_to = match inputs.as_slice() {
            [(upstream, _)] if is_chainable(stream_graph, *upstream, node.id) => Some(vertex_of[upstream.0 as usize]),
            _ => None,
        };
        let vertex_id = match chained_to {
            Some(vertex_id) => {
                let vertex = &mut vertices[vertex_id.0 as usize];
                vertex.chain.push(node.id);
                vertex.name = format!("{} -> {}", vertex.name, node.name);
                vertex_id
            }
            None => {
                let vertex_id = JobVertexId(vertices.len() as u32);
                vertices.push(JobVertex {
                    id: vertex_id,
                    name: node.name.clone(),
                    parallelism: node.parallelism,
                    auto_parallelism: false,
                    max_parallelism: node.max_parallelism,
                    chain: vec![node.id],
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                });
                vertex_id
            }
        };
        vertex_of.push(vertex_id);
    }
    (vertices, vertex_of)
}

impl JobGraph {
    /// Chains a validated stream graph and types its edges with `exchange_mode`.
    pub fn from_stream_graph(stream_graph: StreamGraph, exchange_mode: ExchangeMode) -> Result<JobGraph, String> {
        stream_graph.validate()?;
        let exchange_mode = exchange_mode.effective(stream_graph.mode);
        let (mut vertices, vertex_of) = chain(&stream_graph);
        let mut edges = Vec::new();
        for node in stream_graph.nodes() {
            let source = vertex_of[node.id.0 as usize];
            for (target_node, edge) in stream_graph.out_edges(node.id) {
                let target = vertex_of[target_node.0 as usize];
                if source == target {
                    continue; // chained
                }
                let id = IntermediateDataSetId(edges.len() as u32);
                let distribution = if edge.partitioner.is_pointwise() {
                    DistributionPattern::Pointwise
                } else {
                    DistributionPattern::AllToAll
                };
                edges.push(JobEdge {
                    id,
                    source,
                    target,
                    source_node: node.id,
                    target_input: edge.input,
                    partitioner: edge.partitioner.clone(),
                    distribution,
                    partition_type: exchange_mode.partition_type(&edge.partitioner),
                });
                vertices[source.0 as usize].outputs.push(id);
                vertices[target.0 as usize].inputs.push(id);
            }
        }
        if stream_graph.adaptive_parallelism && exchange_mode == ExchangeMode::AllEdgesBlocking {
            let decided: Vec<bool> =
                vertices.iter().map(|vertex| may_decide_at_runtime(vertex, &edges, &stream_graph)).collect();
            for (vertex, auto) in vertices.iter_mut().zip(fixed_upstream_of_fixed(decided, &edges)) {
                vertex.auto_parallelism = auto;
            }
        }
        Ok(JobGraph {
            job_name: stream_graph.job_name.clone(),
            mode: stream_graph.mode,
            exchange_mode,
            vertices,
            edges,
            stream_graph,
        })
    }

    /// A vertex by id.
    pub fn vertex(&self, id: JobVertexId) -> &JobVertex {
        &self.vertices[id.0 as usize]
    }

    /// An edge by the data set it carries.
    pub fn edge(&self, id: IntermediateDataSetId) -> &JobEdge {
        &self.edges[id.0 as usize]
    }

    /// A hash of the plan's rendering: TaskManagers check it against the JobMaster's, so that a
    /// job rebuilt from the catalog is the job that was scheduled.
    pub fn fingerprint(&self) -> u64 {
        fnv1a64(self.to_string().as_bytes())
    }
}

impl fmt::Display for JobGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "JobGraph `{}` ({}, {})", self.job_name, self.mode, self.exchange_mode)?;
        for vertex in &self.vertices {
            let parallelism = if vertex.auto_parallelism { "auto".to_string() } else { vertex.parallelism.to_string() };
            writeln!(f, "  v{} \"{}\" p={parallelism} maxp={}", vertex.id.0, vertex.name, vertex.max_parallelism)?;
            for output in &vertex.outputs {
                let edge = self.edge(*output);
                let input =
                    if edge.target_input > 0 { format!(" (input {})", edge.target_input) } else { String::new() };
                writeln!(
                    f,
                    "      --{} {:?} {:?}--> v{}{input}",
                    edge.partitioner.name(),
                    edge.distribution,
                    edge.partition_type,
                    edge.target.0
                )?;
            }
        }
        Ok(())
    }
}
