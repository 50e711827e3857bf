//! [`ExecutionGraph`]: the parallel plan, one execution vertex per subtask and one result
//! partition per producing subtask and data set, with the pipelined regions over them.
//!
//! The graph is dynamic, as Flink's adaptive batch scheduler's: a job vertex whose parallelism
//! is decided at runtime has no subtasks until [`ExecutionGraph::initialize`] gives it a
//! parallelism and, per subtask, the contiguous range of subpartitions (key groups) it reads.
//! Its producers write one subpartition per key group (the consumer's max parallelism), so any
//! later decision can split them.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::job_graph::{DistributionPattern, IntermediateDataSetId, JobGraph, JobVertexId, ResultPartitionType};

/// One subtask of a job vertex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ExecutionVertexId {
    /// The job vertex.
    pub vertex: JobVertexId,
    /// The subtask index, `0..parallelism`.
    pub subtask: u32,
}

impl fmt::Display for ExecutionVertexId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}[{}]", self.vertex.0, self.subtask)
    }
}

/// The partition of one data set produced by one subtask.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct IntermediateResultPartitionId {
    /// The data set.
    pub dataset: IntermediateDataSetId,
    /// The producing subtask.
    pub producer_subtask: u32,
}

/// A partition a subtask produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProducedPartition {
    /// Which partition.
    pub id: IntermediateResultPartitionId,
    /// Number of subpartitions (one per consuming channel).
    pub num_subpartitions: u32,
    /// Pipelined or blocking.
    pub partition_type: ResultPartitionType,
}

/// One channel of an input gate: a range of subpartitions of a producer's partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumedChannel {
    /// The producer's partition.
    pub partition: IntermediateResultPartitionId,
    /// The producer's subtask.
    pub producer: ExecutionVertexId,
    /// The subpartitions this consumer reads (one, unless its parallelism was decided at
    /// runtime).
    pub subpartitions: Range<u32>,
}

/// The channels a subtask reads for one of its inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConsumedInput {
    /// The data set.
    pub dataset: IntermediateDataSetId,
    /// The consumer's input it feeds.
    pub input: u32,
    /// Pipelined or blocking.
    pub partition_type: ResultPartitionType,
    /// Its channels, by producer subtask.
    pub channels: Vec<ConsumedChannel>,
}

/// Identifies a pipelined region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RegionId(pub u32);

/// Subtasks connected by pipelined exchanges: they must be scheduled, and restarted, together.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PipelinedRegion {
    /// Position in the order of the regions' first subtasks.
    pub id: RegionId,
    /// Its subtasks, in topological order.
    pub vertices: Vec<ExecutionVertexId>,
}

/// The parallel plan; see the module doc.
#[derive(Clone)]
pub struct ExecutionGraph {
    job_graph: Arc<JobGraph>,
    /// Parallelism of every initialized vertex.
    parallelism: BTreeMap<JobVertexId, u32>,
    /// For vertices initialized at runtime: each subtask's range of subpartitions.
    subpartition_ranges: BTreeMap<JobVertexId, Vec<Range<u32>>>,
    regions: Vec<PipelinedRegion>,
}

impl ExecutionGraph {
    /// Expands a job graph into subtasks and computes its pipelined regions; vertices whose
    /// parallelism is decided at runtime stay uninitialized.
    pub fn new(job_graph: Arc<JobGraph>) -> ExecutionGraph {
        let parallelism = job_graph
            .vertices
            .iter()
            .filter(|vertex| !vertex.auto_parallelism)
            .map(|vertex| (vertex.id, vertex.parallelism))
            .collect();
        let mut graph =
            ExecutionGraph { job_graph, parallelism, subpartition_ranges: BTreeMap::new(), regions: Vec::new() };
        graph.regions = graph.compute_regions();
        graph
    }

    /// The job graph it expands.
    pub fn job_graph(&self) -> &Arc<JobGraph> {
        &self.job_graph
    }

    /// A vertex's parallelism, if it is initialized.
    pub fn parallelism(&self, vertex: JobVertexId) -> Option<u32> {
        self.parallelism.get(&vertex).copied()
    }

    /// Vertices whose parallelism is still to be decided.
    pub fn uninitialized_vertices(&self) -> Vec<JobVertexId> {
        self.job_graph.vertices.iter().map(|vertex| vertex.id).filter(|id| !self.parallelism.contains_key(id)).collect()
    }

    /// Gives a runtime-decided vertex its parallelism and each subtask's subpartition range
    /// (one range per subtask, contiguous, covering `0..max_parallelism`), and recomputes the
    /// regions.
    pub fn initialize(&mut self, vertex: JobVertexId, ranges: Vec<Range<u32>>) {
        let job_vertex = self.job_graph.vertex(vertex);
        assert!(job_vertex.auto_parallelism, "internal: v{} has a fixed parallelism", vertex.0);
        assert!(!self.parallelism.contains_key(&vertex), "internal: v{} initialized twice", vertex.0);
        assert!(!ranges.is_empty(), "internal: v{} initialized with no subtask", vertex.0);
        assert_eq!(ranges.first().map(|range| range.start), Some(0), "internal: ranges must start at 0");
        assert_eq!(
            ranges.last().map(|range| range.end),
            Some(job_vertex.max_parallelism),
            "internal: ranges must cover every key group"
        );
        assert!(
            ranges.windows(2).all(|pair| pair[0].end == pair[1].start && pair[0].start < pair[0].end),
            "internal: ranges must be contiguous"
        );
        self.parallelism.insert(vertex, ranges.len() as u32);
        self.subpartition_ranges.insert(vertex, ranges);
        self.regions = self.compute_regions();
    }

    /// Every subtask of the initialized vertices, in topological order (vertex order, then
    /// subtask index).
    pub fn execution_vertices(&self) -> Vec<ExecutionVertexId> {
        self.parallelism
            .iter()
            .flat_map(|(vertex, parallelism)| {
                (0..*parallelism).map(move |subtask| ExecutionVertexId { vertex: *vertex, subtask })
            })
            .collect()
    }

    fn initialized(&self, vertex: JobVertexId) -> u32 {
        self.parallelism(vertex).unwrap_or_else(|| panic!("internal: v{} is not initialized yet", vertex.0))
    }

    /// The partitions a subtask produces, one per output edge.
    pub fn produced_partitions(&self, vertex: ExecutionVertexId) -> Vec<ProducedPartition> {
        self.job_graph
            .vertex(vertex.vertex)
            .outputs
            .iter()
            .map(|dataset| {
                let edge = self.job_graph.edge(*dataset);
                let target = self.job_graph.vertex(edge.target);
                let num_subpartitions = match edge.distribution {
                    // A consumer whose parallelism is decided later reads key-group ranges.
                    DistributionPattern::AllToAll if target.auto_parallelism => target.max_parallelism,
                    DistributionPattern::AllToAll => target.parallelism,
                    DistributionPattern::Pointwise => {
                        let producers = self.initialized(edge.source);
                        let targets = pointwise_targets(producers, self.initialized(edge.target), vertex.subtask);
                        targets.end - targets.start
                    }
                };
                ProducedPartition {
                    id: IntermediateResultPartitionId { dataset: *dataset, producer_subtask: vertex.subtask },
                    num_subpartitions,
                    partition_type: edge.partition_type,
                }
            })
            .collect()
    }

    /// The channels a subtask reads, one input per input edge.
    pub fn consumed_inputs(&self, vertex: ExecutionVertexId) -> Vec<ConsumedInput> {
        self.job_graph
            .vertex(vertex.vertex)
            .inputs
            .iter()
            .map(|dataset| {
                let edge = self.job_graph.edge(*dataset);
                let channel = |producer_subtask: u32, subpartitions: Range<u32>| ConsumedChannel {
                    partition: IntermediateResultPartitionId { dataset: *dataset, producer_subtask },
                    producer: ExecutionVertexId { vertex: edge.source, subtask: producer_subtask },
                    subpartitions,
                };
                let producers = self.initialized(edge.source);
                let consumers = self.initialized(edge.target);
                let own = match self.subpartition_ranges.get(&edge.target) {
                    Some(ranges) => ranges[vertex.subtask as usize].clone(),
                    None => vertex.subtask..vertex.subtask + 1,
                };
                let channels = match edge.distribution {
                    DistributionPattern::Pointwise => pointwise_sources(producers, consumers, vertex.subtask)
                        .into_iter()
                        .map(|(producer, subpartition)| channel(producer, subpartition..subpartition + 1))
                        .collect(),
                    DistributionPattern::AllToAll => {
                        (0..producers).map(|producer| channel(producer, own.clone())).collect()
                    }
                };
                ConsumedInput {
                    dataset: *dataset,
                    input: edge.target_input,
                    partition_type: edge.partition_type,
                    channels,
                }
            })
            .collect()
    }

    /// The pipelined regions, ordered by their first subtask.
    pub fn regions(&self) -> &[PipelinedRegion] {
        &self.regions
    }

    /// The region a subtask belongs to.
    pub fn region_of(&self, vertex: ExecutionVertexId) -> RegionId {
        self.regions
            .iter()
            .find(|region| region.vertices.contains(&vertex))
            .map(|region| region.id)
            .unwrap_or_else(|| panic!("internal: subtask {vertex} is in no pipelined region"))
    }

    /// Pipelined regions at the subtask level, as Flink's `PipelinedRegionComputeUtil`:
    /// connected components over pipelined exchanges, then every strongly connected set of those
    /// components (blocking exchanges running both ways between them, e.g. a forward pipelined
    /// edge beside an all-to-all blocking one) merged into one region, so that regions form a
    /// DAG. A merged region may contain blocking exchanges; its consumers wait for those inside.
    fn compute_regions(&self) -> Vec<PipelinedRegion> {
        let vertices = self.execution_vertices();
        let index_of = |vertex: ExecutionVertexId| vertices.binary_search(&vertex).expect("vertices are sorted");
        let mut union_find = UnionFind::new(vertices.len());
        let mut blocking = Vec::new();
        for vertex in &vertices {
            // A consumer is initialized only after its producers: their channels all exist.
            for input in self.consumed_inputs(*vertex) {
                for channel in input.channels {
                    let (consumer, producer) = (index_of(*vertex), index_of(channel.producer));
                    if input.partition_type.must_be_pipelined() {
                        union_find.union(consumer, producer);
                    } else {
                        blocking.push((producer, consumer));
                    }
                }
            }
        }
        // Merge raw regions that blocking edges put on a cycle.
        let mut region_graph: petgraph::graph::DiGraph<usize, ()> = petgraph::graph::DiGraph::new();
        let mut node_of_root = std::collections::BTreeMap::new();
        for index in 0..vertices.len() {
            let root = union_find.find(index);
            node_of_root.entry(root).or_insert_with(|| region_graph.add_node(root));
        }
        for (producer, consumer) in blocking {
            let (from, to) = (union_find.find(producer), union_find.find(consumer));
            if from != to {
                region_graph.update_edge(node_of_root[&from], node_of_root[&to], ());
            }
        }
        for component in petgraph::algo::tarjan_scc(&region_graph) {
            for pair in component.windows(2) {
                union_find.union(region_graph[pair[0]], region_graph[pair[1]]);
            }
        }
        let mut regions: Vec<PipelinedRegion> = Vec::new();
        let mut region_of_root: std::collections::BTreeMap<usize, usize> = Default::default();
        for (index, vertex) in vertices.iter().enumerate() {
            let root = union_find.find(index);
            let position = *region_of_root.entry(root).or_insert_with(|| {
                regions.push(PipelinedRegion { id: RegionId(regions.len() as u32), vertices: Vec::new() });
                regions.len() - 1
            });
            regions[position].vertices.push(*vertex);
        }
        regions
    }
}

/// The consumers a producer of a POINTWISE edge feeds (Flink's `connectPointwise`): with at
/// least as many producers as consumers, each producer feeds one consumer; with fewer, each
/// feeds a contiguous group, one subpartition each.
pub fn pointwise_targets(producers: u32, consumers: u32, producer: u32) -> std::ops::Range<u32> {
    let (producers, consumers, producer) = (u64::from(producers), u64::from(consumers), u64::from(producer));
    if producers >= consumers {
        let consumer = (producer * consumers / producers) as u32;
        consumer..consumer + 1
    } else {
        // Consumer c reads producer c * producers / consumers.
        let first = (producer * consumers).div_ceil(producers);
        let end = ((producer + 1) * consumers).div_ceil(producers);
        first as u32..end as u32
    }
}

/// The producers (and the subpartition of each) a consumer of a POINTWISE edge reads.
pub fn pointwise_sources(producers: u32, consumers: u32, consumer: u32) -> Vec<(u32, u32)> {
    if producers >= consumers {
        (0..producers)
            .filter(|producer| pointwise_targets(producers, consumers, *producer).start == consumer)
            .map(|producer| (producer, 0))
            .collect()
    } else {
        let producer = (u64::from(consumer) * u64::from(producers) / u64::from(consumers)) as u32;
        let first = pointwise_targets(producers, consumers, producer).start;
        vec![(producer, consumer - first)]
    }
}

struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(size: usize) -> UnionFind {
        UnionFind { parent: (0..size).collect() }
    }

    fn find(&mut self, mut index: usize) -> usize {
        while self.parent[index] != index {
            self.parent[index] = self.parent[self.parent[index]];
            index = self.parent[index];
        }
        index
    }

    fn union(&mut self, a: usize, b: usize) {
        let (root_a, root_b) = (self.find(a), self.find(b));
        // The smaller index becomes the root: a region is known by its first subtask.
        let (low, high) = if root_a < root_b { (root_a, root_b) } else { (root_b, root_a) };
        self.parent[high] = low;
    }
}

impl fmt::Display for ExecutionGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Pipelined regions of `{}` ({})", self.job_graph.job_name, self.job_graph.mode)?;
        for region in &self.regions {
            let members: Vec<String> = region.vertices.iter().map(ToString::to_string).collect();
            writeln!(f, "  r{}: {}", region.id.0, members.join(" "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{JobConfig, StreamEnv};
    use crate::connectors::{LogSource, TxnStoreSink};
    use crate::graph::ExchangeMode;

    fn graph(exchange_mode: ExchangeMode, build: impl FnOnce(&StreamEnv)) -> ExecutionGraph {
        let config = JobConfig::new(crate::graph::ExecutionMode::Batch, 2).with_exchange_mode(exchange_mode);
        let env = StreamEnv::new("regions", config);
        build(&env);
        let job_graph = JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), exchange_mode).unwrap();
        ExecutionGraph::new(Arc::new(job_graph))
    }

    fn sink() -> TxnStoreSink<u64> {
        TxnStoreSink::append("t", |value: &u64| (value.to_string(), String::new()))
    }

    fn rendered(graph: &ExecutionGraph) -> Vec<String> {
        graph
            .regions()
            .iter()
            .map(|region| region.vertices.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "))
            .collect()
    }

    /// A -> B forward (pipelined under forward-edges-pipelined) beside A -> B rebalance
    /// (blocking): the raw regions {A0, B0} and {A1, B1} each feed the other through the blocking
    /// edge, a cycle, so they must be merged (FLINK-17330).
    #[test]
    fn regions_on_a_blocking_cycle_are_merged() {
        let graph = graph(ExchangeMode::ForwardEdgesPipelined, |env| {
            let a = env.from_source(LogSource::<u64>::new("a"));
            a.union(&[&a.rebalance()]).map(|value| value + 1).name("B").sink_to(sink());
        });
        assert_eq!(rendered(&graph), vec!["v0[0] v0[1] v1[0] v1[1]"]);
    }

    #[test]
    fn forward_pipelined_chains_form_a_region_per_subtask_and_blocking_edges_split_them() {
        let build = |env: &StreamEnv| {
            env.from_source(LogSource::<u64>::new("a"))
                .rebalance()
                .map(|value| value + 1)
                .key_by(|value| *value)
                .reduce(|left, right| left + right)
                .sink_to(sink());
        };
        let blocking = graph(ExchangeMode::AllEdgesBlocking, build);
        assert_eq!(rendered(&blocking), vec!["v0[0]", "v0[1]", "v1[0]", "v1[1]", "v2[0]", "v2[1]"]);
        let pipelined = graph(ExchangeMode::AllEdgesPipelined, build);
        assert_eq!(rendered(&pipelined), vec!["v0[0] v0[1] v1[0] v1[1] v2[0] v2[1]"]);
    }

    #[test]
    fn pointwise_rescale_connects_contiguous_groups() {
        let graph = graph(ExchangeMode::PointwiseEdgesPipelined, |env| {
            env.from_source(LogSource::<u64>::new("a")).rescale().map(|value| value).set_parallelism(4).sink_to(sink());
        });
        // Two producers, four consumers: producer 0 feeds consumers 0 and 1, producer 1 the rest.
        assert_eq!(pointwise_targets(2, 4, 0), 0..2);
        assert_eq!(pointwise_targets(2, 4, 1), 2..4);
        assert_eq!(pointwise_sources(2, 4, 3), vec![(1, 1)]);
        assert_eq!(pointwise_sources(4, 2, 1), vec![(2, 0), (3, 0)]);
        let regions = rendered(&graph);
        assert_eq!(regions[0], "v0[0] v1[0] v1[1]");
        assert_eq!(regions[1], "v0[1] v1[2] v1[3]");
    }

    #[test]
    fn a_vertex_decided_at_runtime_reads_key_group_ranges() {
        let config = JobConfig::new(crate::graph::ExecutionMode::Batch, 2).with_adaptive_parallelism(true);
        let env = StreamEnv::new("adaptive", config);
        env.from_source(LogSource::<u64>::new("a"))
            .key_by(|value| *value)
            .reduce(|left, right| left + right)
            .sink_to(sink());
        let job_graph =
            JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), ExchangeMode::AllEdgesBlocking).unwrap();
        assert!(job_graph.vertices[1].auto_parallelism, "{job_graph}");
        let mut graph = ExecutionGraph::new(Arc::new(job_graph));
        assert_eq!(graph.uninitialized_vertices(), vec![JobVertexId(1)]);
        let producer = ExecutionVertexId { vertex: JobVertexId(0), subtask: 0 };
        assert_eq!(graph.produced_partitions(producer)[0].num_subpartitions, 128, "one subpartition per key group");
        graph.initialize(JobVertexId(1), vec![0..50, 50..100, 100..128]);
        let consumer = ExecutionVertexId { vertex: JobVertexId(1), subtask: 2 };
        let channels = &graph.consumed_inputs(consumer)[0].channels;
        assert_eq!(channels.len(), 2);
        assert!(channels.iter().all(|channel| channel.subpartitions == (100..128)));
        assert_eq!(graph.regions().len(), 5);
    }

    #[test]
    fn a_vertex_that_feeds_a_fixed_one_keeps_its_parallelism_too() {
        let config = JobConfig::new(crate::graph::ExecutionMode::Batch, 2).with_adaptive_parallelism(true);
        let env = StreamEnv::new("adaptive", config);
        // v1 (hash in, hash out) could be decided at runtime, but it feeds v2, whose FORWARD edge
        // into a broadcast join (v4) keeps it fixed; v5 after a HASH edge is free.
        let dimension = env.from_source(LogSource::<u64>::new("b"));
        env.from_source(LogSource::<u64>::new("a"))
            .key_by(|value| *value)
            .reduce(|left, right| left + right)
            .key_by(|value| *value % 7)
            .reduce(|left, right| left.max(right))
            .broadcast_join(&dimension, crate::api::JoinType::Inner, |value| *value, |value| *value, |value, _| *value)
            .key_by(|value| *value)
            .reduce(|left, right| left + right)
            .sink_to(sink());
        let job_graph =
            JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), ExchangeMode::AllEdgesBlocking).unwrap();
        let auto: Vec<bool> = job_graph.vertices.iter().map(|vertex| vertex.auto_parallelism).collect();
        assert_eq!(auto, [false, false, false, false, false, true], "{job_graph}");
        let graph = ExecutionGraph::new(Arc::new(job_graph));
        assert_eq!(graph.uninitialized_vertices(), vec![JobVertexId(5)]);
    }
}
