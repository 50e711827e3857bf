//! [`ExecutionGraph`]: the parallel plan, one execution vertex per subtask and one result
//! partition per producing subtask and data set, with the pipelined regions over them.

use std::fmt;
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

/// One channel of an input gate: a subpartition of a producer's partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConsumedChannel {
    /// The producer's partition.
    pub partition: IntermediateResultPartitionId,
    /// The producer's subtask.
    pub producer: ExecutionVertexId,
    /// The subpartition this consumer reads.
    pub subpartition: u32,
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
    regions: Vec<PipelinedRegion>,
}

impl ExecutionGraph {
    /// Expands a job graph into subtasks and computes its pipelined regions.
    pub fn new(job_graph: Arc<JobGraph>) -> ExecutionGraph {
        let mut graph = ExecutionGraph { job_graph, regions: Vec::new() };
        graph.regions = graph.compute_regions();
        graph
    }

    /// The job graph it expands.
    pub fn job_graph(&self) -> &Arc<JobGraph> {
        &self.job_graph
    }

    /// Every subtask, in topological order (vertex order, then subtask index).
    pub fn execution_vertices(&self) -> Vec<ExecutionVertexId> {
        self.job_graph
            .vertices
            .iter()
            .flat_map(|vertex| {
                (0..vertex.parallelism).map(move |subtask| ExecutionVertexId { vertex: vertex.id, subtask })
            })
            .collect()
    }

    /// The partitions a subtask produces, one per output edge.
    pub fn produced_partitions(&self, vertex: ExecutionVertexId) -> Vec<ProducedPartition> {
        self.job_graph
            .vertex(vertex.vertex)
            .outputs
            .iter()
            .map(|dataset| {
                let edge = self.job_graph.edge(*dataset);
                let consumers = self.job_graph.vertex(edge.target).parallelism;
                let num_subpartitions = match edge.distribution {
                    DistributionPattern::Pointwise => {
                        let producers = self.job_graph.vertex(edge.source).parallelism;
                        let targets = pointwise_targets(producers, consumers, vertex.subtask);
                        targets.end - targets.start
                    }
                    DistributionPattern::AllToAll => consumers,
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
                let channel = |producer_subtask: u32, subpartition: u32| ConsumedChannel {
                    partition: IntermediateResultPartitionId { dataset: *dataset, producer_subtask },
                    producer: ExecutionVertexId { vertex: edge.source, subtask: producer_subtask },
                    subpartition,
                };
                let producers = self.job_graph.vertex(edge.source).parallelism;
                let consumers = self.job_graph.vertex(edge.target).parallelism;
                let channels = match edge.distribution {
                    DistributionPattern::Pointwise => pointwise_sources(producers, consumers, vertex.subtask)
                        .into_iter()
                        .map(|(producer, subpartition)| channel(producer, subpartition))
                        .collect(),
                    DistributionPattern::AllToAll => (0..producers).map(|producer| channel(producer, vertex.subtask)).collect(),
                };
                ConsumedInput { dataset: *dataset, input: edge.target_input, partition_type: edge.partition_type, channels }
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
        (0..producers).filter(|producer| pointwise_targets(producers, consumers, *producer).start == consumer).map(|producer| (producer, 0)).collect()
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
