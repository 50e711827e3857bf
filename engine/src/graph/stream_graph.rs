//! [`StreamGraph`]: the logical plan, one node per transformation of the program.

use std::fmt;

use petgraph::Direction;
use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef;

use super::operator::{ExecutionMode, OperatorFactory, SinkFactory, SourceFactory};
use super::partitioner::Partitioner;
use crate::record::{KeySelector, TypeInfo};

/// Identifies a node of a [`StreamGraph`]: its creation order in the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamNodeId(pub u32);

/// Whether an operator may be chained to its predecessor (Flink's `ChainingStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChainingStrategy {
    /// Chain whenever the edge allows it.
    Always,
    /// Always start a new chain (keyed operators in batch mode: sorting happens at the input).
    Head,
}

/// What a node runs.
#[derive(Clone)]
pub enum NodeBody {
    /// Reads an external system; has no inputs.
    Source(SourceFactory),
    /// Transforms elements.
    Operator(OperatorFactory),
    /// Writes to an external system with two-phase commit; has no outputs.
    Sink(SinkFactory),
}

impl NodeBody {
    /// "Source", "Operator" or "Sink".
    pub fn kind(&self) -> &'static str {
        match self {
            NodeBody::Source(_) => "Source",
            NodeBody::Operator(_) => "Operator",
            NodeBody::Sink(_) => "Sink",
        }
    }
}

/// One transformation of the program.
#[derive(Clone)]
pub struct StreamNode {
    /// Position in the program.
    pub id: StreamNodeId,
    /// The name the program gave it.
    pub name: String,
    /// Number of parallel subtasks.
    pub parallelism: u32,
    /// True if the program set the parallelism; only others may be decided at runtime.
    pub parallelism_explicit: bool,
    /// True if it takes its one input's parallelism and max parallelism whatever the program
    /// set (a combiner, which runs in the task that produces its input).
    pub inherits_parallelism: bool,
    /// Number of key groups of its keyed state.
    pub max_parallelism: u32,
    /// Type of the elements it emits (for a sink: of the elements it accepts).
    pub output_type: TypeInfo,
    /// Chaining with its predecessor.
    pub chaining: ChainingStrategy,
    /// For keyed operators, per input: how to extract an input element's key (batch mode sorts
    /// keyed inputs by it). Empty for operators that are not keyed.
    pub input_keys: Vec<Option<KeySelector>>,
    /// What it runs.
    pub body: NodeBody,
}

/// An edge of the logical plan.
#[derive(Clone, Debug)]
pub struct StreamEdge {
    /// How records are distributed to the consumer's subtasks.
    pub partitioner: Partitioner,
    /// False when the program did not choose: FORWARD then becomes REBALANCE if the
    /// parallelism changes across the edge (Flink's default).
    pub explicit: bool,
    /// Which input of the target it feeds (Flink's type number): 0, or 1 for the second input
    /// of a two-input operator. The inputs of a union all feed input 0.
    pub input: u32,
}

/// The logical plan built by a program on a `StreamEnv`.
#[derive(Clone)]
pub struct StreamGraph {
    /// The job's name in the catalog.
    pub job_name: String,
    /// The mode the program was built for.
    pub mode: ExecutionMode,
    /// Batch mode may decide the parallelism of vertices at runtime, from the bytes their inputs
    /// produced (Flink's adaptive batch scheduler).
    pub adaptive_parallelism: bool,
    graph: DiGraph<StreamNode, StreamEdge>,
    /// Mistakes the program made while building (reported by [`StreamGraph::validate`]).
    errors: Vec<String>,
}

impl StreamGraph {
    /// An empty plan.
    pub fn new(job_name: &str, mode: ExecutionMode) -> StreamGraph {
        StreamGraph {
            job_name: job_name.to_string(),
            mode,
            adaptive_parallelism: false,
            graph: DiGraph::new(),
            errors: Vec::new(),
        }
    }

    /// Records a mistake in the program; the plan is rejected with it.
    pub fn add_error(&mut self, error: String) {
        self.errors.push(error);
    }

    /// Adds a node; its id is assigned here.
    pub fn add_node(&mut self, build: impl FnOnce(StreamNodeId) -> StreamNode) -> StreamNodeId {
        let id = StreamNodeId(self.graph.node_count() as u32);
        let node = build(id);
        assert_eq!(node.id, id, "internal: a stream node must carry the id it was given");
        let index = self.graph.add_node(node);
        assert_eq!(index.index() as u32, id.0, "internal: stream node ids follow insertion order");
        id
    }

    /// Connects two nodes.
    pub fn add_edge(&mut self, from: StreamNodeId, to: StreamNodeId, edge: StreamEdge) {
        self.graph.add_edge(NodeIndex::new(from.0 as usize), NodeIndex::new(to.0 as usize), edge);
    }

    /// A node by id.
    pub fn node(&self, id: StreamNodeId) -> &StreamNode {
        &self.graph[NodeIndex::new(id.0 as usize)]
    }

    /// A node by id, to change its settings while the program builds it.
    pub fn node_mut(&mut self, id: StreamNodeId) -> &mut StreamNode {
        &mut self.graph[NodeIndex::new(id.0 as usize)]
    }

    /// All nodes in id order.
    pub fn nodes(&self) -> impl Iterator<Item = &StreamNode> {
        self.graph.node_weights()
    }

    /// Outgoing edges of a node, in the order they were added.
    pub fn out_edges(&self, id: StreamNodeId) -> Vec<(StreamNodeId, &StreamEdge)> {
        self.edges(id, Direction::Outgoing)
    }

    /// Incoming edges of a node, in the order they were added.
    pub fn in_edges(&self, id: StreamNodeId) -> Vec<(StreamNodeId, &StreamEdge)> {
        self.edges(id, Direction::Incoming)
    }

    fn edges(&self, id: StreamNodeId, direction: Direction) -> Vec<(StreamNodeId, &StreamEdge)> {
        let mut edges: Vec<_> = self
            .graph
            .edges_directed(NodeIndex::new(id.0 as usize), direction)
            .map(|edge| {
                let other = if direction == Direction::Outgoing { edge.target() } else { edge.source() };
                (edge.id().index(), StreamNodeId(other.index() as u32), edge.weight())
            })
            .collect();
        // petgraph lists edges newest first; plans must not depend on that.
        edges.sort_by_key(|(edge_index, _, _)| *edge_index);
        edges.into_iter().map(|(_, other, edge)| (other, edge)).collect()
    }

    /// Gives each node that inherits its parallelism, and whose parallelism the program did not
    /// set, its input's. Nodes are in program order,
    /// an input before its consumers, so a node's input is resolved before the node.
    pub fn resolve_inherited_parallelism(&mut self) {
        for index in 0..self.graph.node_count() {
            let id = StreamNodeId(index as u32);
            // A parallelism the program set wins over the inherited one.
            if !self.node(id).inherits_parallelism || self.node(id).parallelism_explicit {
                continue;
            }
            if let [(input, _)] = self.in_edges(id).as_slice() {
                let input = self.node(*input);
                let (parallelism, explicit, max) =
                    (input.parallelism, input.parallelism_explicit, input.max_parallelism);
                let node = self.node_mut(id);
                (node.parallelism, node.parallelism_explicit, node.max_parallelism) = (parallelism, explicit, max);
            }
        }
    }

    /// Applies Flink's default partitioner rule to edges the program did not partition
    /// explicitly: FORWARD between equal parallelism, REBALANCE otherwise.
    pub fn resolve_default_partitioners(&mut self) {
        let parallelism: Vec<u32> = self.graph.node_weights().map(|node| node.parallelism).collect();
        for edge_index in self.graph.edge_indices().collect::<Vec<_>>() {
            let (source, target) = self.graph.edge_endpoints(edge_index).expect("edge exists");
            let edge = &mut self.graph[edge_index];
            if !edge.explicit {
                edge.partitioner = if parallelism[source.index()] == parallelism[target.index()] {
                    Partitioner::Forward
                } else {
                    Partitioner::Rebalance
                };
            }
        }
    }

    /// Checks what the API cannot check while building: every sink reachable, types agree.
    pub fn validate(&self) -> Result<(), String> {
        if let Some(error) = self.errors.first() {
            return Err(format!("job `{}`: {error}", self.job_name));
        }
        if self.graph.node_count() == 0 {
            return Err(format!("job `{}` defines no operators", self.job_name));
        }
        for node in self.nodes() {
            let inputs = self.in_edges(node.id);
            let outputs = self.out_edges(node.id);
            match node.body {
                NodeBody::Source(_) if !inputs.is_empty() => {
                    return Err(format!("source `{}` cannot have inputs", node.name));
                }
                NodeBody::Sink(_) if !outputs.is_empty() => {
                    return Err(format!("sink `{}` cannot have outputs", node.name));
                }
                NodeBody::Operator(_) | NodeBody::Sink(_) if inputs.is_empty() => {
                    return Err(format!("`{}` has no input", node.name));
                }
                _ => {}
            }
            if node.parallelism == 0 || node.parallelism > node.max_parallelism {
                return Err(format!(
                    "`{}` has parallelism {} but it must be in 1..={}",
                    node.name, node.parallelism, node.max_parallelism
                ));
            }
            for (target, edge) in &outputs {
                let target = self.node(*target);
                if edge.input as usize >= target.input_keys.len().max(1) {
                    return Err(format!("`{}` has no input {}", target.name, edge.input));
                }
                if matches!(edge.partitioner, Partitioner::Forward) && target.parallelism != node.parallelism {
                    return Err(format!(
                        "forward edge `{}` -> `{}` changes parallelism {} -> {}; forward partitioning does not allow that",
                        node.name, target.name, node.parallelism, target.parallelism
                    ));
                }
            }
        }
        Ok(())
    }
}

impl fmt::Display for StreamGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "StreamGraph `{}` ({})", self.job_name, self.mode)?;
        for node in self.nodes() {
            writeln!(
                f,
                "  #{} {} \"{}\" p={} -> {}",
                node.id.0,
                node.body.kind(),
                node.name,
                node.parallelism,
                node.output_type.readable_name()
            )?;
            for (target, edge) in self.out_edges(node.id) {
                let input = if edge.input > 0 { format!(" (input {})", edge.input) } else { String::new() };
                writeln!(f, "      --{}--> #{}{input}", edge.partitioner.name(), target.0)?;
            }
        }
        Ok(())
    }
}
