//! [`SchedulingStrategy`]: when a pipelined region may be deployed.

use std::collections::BTreeSet;

use crate::graph::{ExecutionGraph, ExecutionVertexId, RegionId, ResultPartitionType};

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
pub struct SchedulingStrategy {
    graph: ExecutionGraph,
    states: Vec<RegionState>,
    finished: BTreeSet<ExecutionVertexId>,
    /// For each region: the producers outside it whose BLOCKING partitions it consumes.
    blocking_producers: Vec<BTreeSet<ExecutionVertexId>>,
}

impl SchedulingStrategy {
    /// A strategy with every region created.
    pub fn new(graph: ExecutionGraph) -> SchedulingStrategy {
        let blocking_producers = graph
            .regions()
            .iter()
            .map(|region| {
                let mut producers = BTreeSet::new();
                for vertex in &region.vertices {
                    for input in graph.consumed_inputs(*vertex) {
                        for channel in input.channels {
                            if input.partition_type == ResultPartitionType::Blocking
                                && !region.vertices.contains(&channel.producer)
                            {
                                producers.insert(channel.producer);
                            }
                        }
                    }
                }
                producers
            })
            .collect();
        let states = vec![RegionState::Created; graph.regions().len()];
        SchedulingStrategy { graph, states, finished: BTreeSet::new(), blocking_producers }
    }

    /// The execution graph scheduled.
    pub fn graph(&self) -> &ExecutionGraph {
        &self.graph
    }

    /// A region's state.
    pub fn state(&self, region: RegionId) -> RegionState {
        self.states[region.0 as usize]
    }

    /// Created regions whose blocking inputs are all finished, in topological order.
    pub fn schedulable_regions(&self) -> Vec<RegionId> {
        self.graph
            .regions()
            .iter()
            .filter(|region| self.states[region.id.0 as usize] == RegionState::Created)
            .filter(|region| {
                self.blocking_producers[region.id.0 as usize].iter().all(|producer| self.finished.contains(producer))
            })
            .map(|region| region.id)
            .collect()
    }

    /// How the subtasks of a region share slots.
    pub fn slot_sharing(&self, region: RegionId) -> SlotSharing {
        let mut groups: Vec<Vec<ExecutionVertexId>> = Vec::new();
        let vertices = &self.graph.regions()[region.0 as usize].vertices;
        let mut position = 0;
        let mut previous_vertex = None;
        for vertex in vertices {
            // Vertices are sorted by job vertex, then subtask.
            if previous_vertex != Some(vertex.vertex) {
                position = 0;
                previous_vertex = Some(vertex.vertex);
            }
            if groups.len() <= position {
                groups.push(Vec::new());
            }
            groups[position].push(*vertex);
            position += 1;
        }
        SlotSharing { groups }
    }

    /// The most slots any region needs at once.
    pub fn max_slots_per_region(&self) -> u32 {
        self.graph.regions().iter().map(|region| self.slot_sharing(region.id).groups.len() as u32).max().unwrap_or(0)
    }

    /// Records that a region was deployed.
    pub fn mark_scheduled(&mut self, region: RegionId) {
        let state = &mut self.states[region.0 as usize];
        assert_eq!(*state, RegionState::Created, "internal: region r{} scheduled twice", region.0);
        *state = RegionState::Scheduled;
    }

    /// Records that a subtask finished (its partitions are complete); returns true if that
    /// finished its region.
    pub fn on_vertex_finished(&mut self, vertex: ExecutionVertexId) -> bool {
        assert!(self.finished.insert(vertex), "internal: subtask {vertex} finished twice");
        let region = self.graph.region_of(vertex);
        let done = self.graph.regions()[region.0 as usize].vertices.iter().all(|member| self.finished.contains(member));
        if done {
            self.states[region.0 as usize] = RegionState::Finished;
        }
        done
    }

    /// True once every region finished.
    pub fn all_finished(&self) -> bool {
        self.states.iter().all(|state| *state == RegionState::Finished)
    }

    /// Forgets all progress (restart-all).
    pub fn reset(&mut self) {
        self.finished.clear();
        self.states.iter_mut().for_each(|state| *state = RegionState::Created);
    }
}
