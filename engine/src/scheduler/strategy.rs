//! [`SchedulingStrategy`]: when a pipelined region may be deployed, and which vertices may have
//! their parallelism decided.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::graph::{
    ExecutionGraph, ExecutionMode, ExecutionVertexId, JobVertexId, PipelinedRegion, RegionId, ResultPartitionType,
};

/// Where a region is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RegionState {
    /// Waiting for its inputs or for slots.
    Created,
    /// Slots allocated and subtasks deployed.
    Scheduled,
    /// Every subtask finished.
    Finished,
}

/// The slots a region needs: `groups[j]` are the subtasks sharing slot `j`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlotSharing {
    /// Subtasks per slot.
    pub groups: Vec<Vec<ExecutionVertexId>>,
}

/// Pipelined-region scheduling; see the module doc.
///
/// Regions are known by their first subtask, so that their state survives a recomputation of
/// the regions when a vertex is initialized at runtime.
pub struct SchedulingStrategy {
    initial: ExecutionGraph,
    graph: ExecutionGraph,
    states: BTreeMap<ExecutionVertexId, RegionState>,
    finished: BTreeSet<ExecutionVertexId>,
}

impl SchedulingStrategy {
    /// A strategy with every region created.
    pub fn new(graph: ExecutionGraph) -> SchedulingStrategy {
        SchedulingStrategy { initial: graph.clone(), graph, states: BTreeMap::new(), finished: BTreeSet::new() }
    }

    /// The execution graph scheduled.
    pub fn graph(&self) -> &ExecutionGraph {
        &self.graph
    }

    fn region(&self, region: RegionId) -> &PipelinedRegion {
        &self.graph.regions()[region.0 as usize]
    }

    fn key(&self, region: RegionId) -> ExecutionVertexId {
        self.region(region).vertices[0]
    }

    /// A region's state.
    pub fn state(&self, region: RegionId) -> RegionState {
        self.states.get(&self.key(region)).copied().unwrap_or(RegionState::Created)
    }

    /// The producers outside a region whose BLOCKING partitions it consumes.
    fn blocking_producers(&self, region: &PipelinedRegion) -> BTreeSet<ExecutionVertexId> {
        let mut producers = BTreeSet::new();
        for vertex in &region.vertices {
            for input in self.graph.consumed_inputs(*vertex) {
                if input.partition_type == ResultPartitionType::Blocking {
                    producers.extend(
                        input
                            .channels
                            .iter()
                            .map(|channel| channel.producer)
                            .filter(|producer| !region.vertices.contains(producer)),
                    );
                }
            }
        }
        producers
    }

    /// Created regions whose blocking inputs are all finished, ordered by first subtask.
    pub fn schedulable_regions(&self) -> Vec<RegionId> {
        self.graph
            .regions()
            .iter()
            .filter(|region| self.state(region.id) == RegionState::Created)
            .filter(|region| self.blocking_producers(region).iter().all(|producer| self.finished.contains(producer)))
            .map(|region| region.id)
            .collect()
    }

    /// Uninitialized vertices whose producers all finished: their parallelism can be decided.
    pub fn decidable_vertices(&self) -> Vec<JobVertexId> {
        let job_graph = self.graph.job_graph();
        self.graph
            .uninitialized_vertices()
            .into_iter()
            .filter(|vertex| {
                job_graph.vertex(*vertex).inputs.iter().all(|dataset| {
                    let producer = job_graph.edge(*dataset).source;
                    self.graph.parallelism(producer).is_some_and(|parallelism| {
                        (0..parallelism)
                            .all(|subtask| self.finished.contains(&ExecutionVertexId { vertex: producer, subtask }))
                    })
                })
            })
            .collect()
    }

    /// Gives a vertex its runtime-decided subpartition ranges (and so its parallelism).
    pub fn initialize_vertex(&mut self, vertex: JobVertexId, ranges: Vec<Range<u32>>) {
        self.graph.initialize(vertex, ranges);
    }

    /// How the subtasks of a region share slots.
    pub fn slot_sharing(&self, region: RegionId) -> SlotSharing {
        let mut groups: Vec<Vec<ExecutionVertexId>> = Vec::new();
        let mut position = 0;
        let mut previous_vertex = None;
        let members = &self.region(region).vertices;
        for vertex in members {
            // Vertices are sorted by job vertex, then subtask.
            if previous_vertex != Some(vertex.vertex) {
                position = 0;
                previous_vertex = Some(vertex.vertex);
            }
            if groups.len() <= position {
                groups.push(Vec::new());
            }
            assert!(
                groups[position].last().is_none_or(|last| last.vertex < vertex.vertex),
                "scheduler invariant: slot {position} of region r{} runs one subtask per vertex, in order ({vertex})",
                region.0
            );
            groups[position].push(*vertex);
            position += 1;
        }
        assert_eq!(
            groups.iter().map(Vec::len).sum::<usize>(),
            members.len(),
            "scheduler invariant: every subtask of region r{} has a slot",
            region.0
        );
        SlotSharing { groups }
    }

    /// The most slots the job needs at once. Streaming deploys every region together and keeps
    /// them running (a checkpoint needs every task), so it needs the slots of all its regions;
    /// batch runs its regions as slots free up, so it needs its largest region's (of the
    /// vertices initialized so far).
    pub fn slots_needed_at_once(&self) -> u32 {
        let per_region = self.graph.regions().iter().map(|region| self.slot_sharing(region.id).groups.len() as u32);
        match self.graph.job_graph().mode {
            ExecutionMode::Streaming => per_region.sum(),
            ExecutionMode::Batch => per_region.max().unwrap_or(0),
        }
    }

    /// Records that a region was deployed: only once every blocking partition it consumes is
    /// finished.
    pub fn mark_scheduled(&mut self, region: RegionId) {
        let waiting: Vec<String> = (self.blocking_producers(self.region(region)).iter())
            .filter(|producer| !self.finished.contains(producer))
            .map(ToString::to_string)
            .collect();
        assert!(waiting.is_empty(), "internal: region r{} scheduled before {} finished", region.0, waiting.join(" "));
        let key = self.key(region);
        let state = self.states.entry(key).or_insert(RegionState::Created);
        assert_eq!(*state, RegionState::Created, "internal: region r{} scheduled twice", region.0);
        *state = RegionState::Scheduled;
    }

    /// Records that a subtask finished (its partitions are complete); returns true if that
    /// finished its region.
    pub fn on_vertex_finished(&mut self, vertex: ExecutionVertexId) -> bool {
        assert!(self.finished.insert(vertex), "internal: subtask {vertex} finished twice");
        let region = self.graph.region_of(vertex);
        let done = self.region(region).vertices.iter().all(|member| self.finished.contains(member));
        if done {
            let key = self.key(region);
            let before = self.states.insert(key, RegionState::Finished);
            assert_ne!(before, Some(RegionState::Finished), "scheduler invariant: region r{} finishes once", region.0);
        }
        done
    }

    /// True once every vertex is initialized and every region finished.
    pub fn all_finished(&self) -> bool {
        self.graph.uninitialized_vertices().is_empty()
            && self.graph.regions().iter().all(|region| self.state(region.id) == RegionState::Finished)
    }

    /// Forgets the progress of some regions (they restart); runtime decisions stay.
    pub fn reset_regions(&mut self, regions: &BTreeSet<RegionId>) {
        for region in regions {
            let key = self.key(*region);
            self.states.remove(&key);
            for vertex in &self.graph.regions()[region.0 as usize].vertices {
                self.finished.remove(vertex);
            }
        }
    }

    /// Forgets all progress, runtime decisions included (restart-all).
    pub fn reset(&mut self) {
        self.graph = self.initial.clone();
        self.finished.clear();
        self.states.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::{JobConfig, StreamEnv};
    use crate::connectors::{LogSource, TxnStoreSink};
    use crate::graph::{ExchangeMode, JobGraph};

    /// Two pipelines sharing nothing: a source of parallelism 3 and one of 2, each into its sink.
    fn two_pipelines(mode: ExecutionMode) -> SchedulingStrategy {
        let env = StreamEnv::new("two", JobConfig::new(mode, 1));
        for (topic, parallelism) in [("a", 3), ("b", 2)] {
            env.from_source(LogSource::<u64>::new(topic))
                .set_parallelism(parallelism)
                .sink_to(TxnStoreSink::append(topic, |value: &u64| (value.to_string(), String::new())))
                .set_parallelism(parallelism);
        }
        let plan =
            JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), ExchangeMode::default_for(mode)).unwrap();
        SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan)))
    }

    #[test]
    fn streaming_needs_the_slots_of_every_region_together_and_batch_its_largest_region() {
        let streaming = two_pipelines(ExecutionMode::Streaming);
        // Chained into one vertex each, every subtask is a region of its own.
        assert_eq!(streaming.graph().regions().len(), 5);
        assert_eq!(streaming.slots_needed_at_once(), 5, "every region runs, and checkpoints, at once");
        assert_eq!(two_pipelines(ExecutionMode::Batch).slots_needed_at_once(), 1, "one region after the other");
    }
}
