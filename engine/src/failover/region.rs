//! Restart-pipelined-region failover (Flink's `RestartPipelinedRegionFailoverStrategy`).
//!
//! Starting from the regions that failed, a breadth-first search adds:
//!
//! 1. for each partition a restarted region consumes from outside itself that is no longer
//!    available (lost with a TaskManager, not found, corrupt, or already released because its
//!    consumers had finished), the region that produces it;
//! 2. every region that consumes a partition a restarted region produces and that has started
//!    (running or finished): a re-run producer may write its partitions in a different order, so
//!    what its consumers computed from the old ones cannot be mixed with the new ones.
//!
//! Regions that never started need no restart: they will run when their inputs are ready.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::graph::{ExecutionGraph, IntermediateResultPartitionId, RegionId};

/// The regions to restart after `failed` failed; see the module doc. `available` says whether a
/// finished producer's partition can still be read; `started` whether a region was deployed
/// (or finished) in the current run.
pub fn regions_to_restart(
    graph: &ExecutionGraph,
    failed: &BTreeSet<RegionId>,
    available: impl Fn(IntermediateResultPartitionId) -> bool,
    started: impl Fn(RegionId) -> bool,
) -> BTreeSet<RegionId> {
    // Who consumes each partition, and from which region each is produced.
    let mut consumers: BTreeMap<IntermediateResultPartitionId, BTreeSet<RegionId>> = BTreeMap::new();
    for region in graph.regions() {
        for vertex in &region.vertices {
            for input in graph.consumed_inputs(*vertex) {
                for channel in input.channels {
                    consumers.entry(channel.partition).or_default().insert(region.id);
                }
            }
        }
    }
    for region in failed {
        assert!(
            (region.0 as usize) < graph.regions().len(),
            "failover invariant: failed region r{} is a region of the graph",
            region.0
        );
    }
    let mut restart: BTreeSet<RegionId> = failed.clone();
    // Each region with how many lost partitions upstream of a failed region it is.
    let mut queue: VecDeque<(RegionId, u32)> = failed.iter().map(|region| (*region, 0)).collect();
    while let Some((region, stages_up)) = queue.pop_front() {
        assert_eq!(graph.regions()[region.0 as usize].id, region, "failover invariant: a region's id is its position");
        let members = &graph.regions()[region.0 as usize].vertices;
        for vertex in members {
            for input in graph.consumed_inputs(*vertex) {
                for channel in input.channels {
                    if members.contains(&channel.producer) || available(channel.partition) {
                        continue;
                    }
                    let producer = graph.region_of(channel.producer);
                    if restart.insert(producer) {
                        if stages_up == 0 {
                            crate::cover!(MissingPartitionProducerRestarted);
                        } else {
                            crate::cover!(ProducerRestartedTwoStagesUp);
                        }
                        queue.push_back((producer, stages_up + 1));
                    }
                }
            }
            for produced in graph.produced_partitions(*vertex) {
                for consumer in consumers.get(&produced.id).into_iter().flatten() {
                    if *consumer != region && started(*consumer) && restart.insert(*consumer) {
                        queue.push_back((*consumer, 0));
                    }
                }
            }
        }
    }
    assert!(failed.is_subset(&restart), "failover invariant: every failed region restarts");
    check_closed(graph, &restart, &consumers, &available, &started);
    restart
}

/// The regions to restart are closed under both rules of the module doc: every input a
/// restarted region reads from outside it is available or produced by a restarted region, and
/// every started consumer of what a restarted region produces restarts too.
fn check_closed(
    graph: &ExecutionGraph,
    restart: &BTreeSet<RegionId>,
    consumers: &BTreeMap<IntermediateResultPartitionId, BTreeSet<RegionId>>,
    available: &dyn Fn(IntermediateResultPartitionId) -> bool,
    started: &dyn Fn(RegionId) -> bool,
) {
    for region in restart {
        let members = &graph.regions()[region.0 as usize].vertices;
        for vertex in members {
            for input in graph.consumed_inputs(*vertex) {
                for channel in input.channels {
                    if members.contains(&channel.producer) || available(channel.partition) {
                        continue;
                    }
                    assert!(
                        restart.contains(&graph.region_of(channel.producer)),
                        "failover invariant: {vertex} restarts without {}, whose partition it reads is gone",
                        channel.producer
                    );
                }
            }
            for produced in graph.produced_partitions(*vertex) {
                for consumer in consumers.get(&produced.id).into_iter().flatten() {
                    if started(*consumer) {
                        assert!(
                            restart.contains(consumer),
                            "failover invariant: {vertex} restarts, but r{}, which started and reads it, does not",
                            consumer.0
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failover::testing::chain;
    use crate::graph::{ExecutionVertexId, JobVertexId};

    fn subtask(vertex: u32, subtask: u32) -> ExecutionVertexId {
        ExecutionVertexId { vertex: JobVertexId(vertex), subtask }
    }

    fn rendered(graph: &ExecutionGraph, regions: &BTreeSet<RegionId>) -> Vec<String> {
        regions
            .iter()
            .flat_map(|region| graph.regions()[region.0 as usize].vertices.iter().map(ToString::to_string))
            .collect()
    }

    fn region(graph: &ExecutionGraph, vertex: u32, index: u32) -> RegionId {
        graph.region_of(subtask(vertex, index))
    }

    #[test]
    fn a_failed_subtask_whose_inputs_are_available_restarts_alone() {
        let graph = chain();
        assert_eq!(graph.regions().len(), 6, "every subtask is its own region");
        let failed = BTreeSet::from([region(&graph, 1, 0)]);
        // v0 finished and its partitions are still there; v2 has not started.
        let started = |region: RegionId| graph.regions()[region.0 as usize].vertices[0].vertex.0 <= 1;
        let restart = regions_to_restart(&graph, &failed, |_| true, started);
        assert_eq!(rendered(&graph, &restart), ["v1[0]"]);
    }

    #[test]
    fn a_lost_input_re_runs_its_producer_and_the_producers_other_consumers() {
        let graph = chain();
        // v2[1] fails reading v1[0]'s lost partition; v0's partitions were released when v1
        // finished. v1[0] re-runs, so does its producer v0[0] (rescale: only v0[0] feeds it); and
        // v2[0], which also consumed v1[0]'s partition, re-runs. v0[1] and v1[1] do not.
        let failed = BTreeSet::from([region(&graph, 2, 1)]);
        let available =
            |partition: IntermediateResultPartitionId| partition.dataset.0 == 1 && partition.producer_subtask == 1;
        let restart = regions_to_restart(&graph, &failed, available, |_| true);
        assert_eq!(rendered(&graph, &restart), ["v0[0]", "v1[0]", "v2[0]", "v2[1]"]);
    }

    #[test]
    fn restarting_a_producer_restarts_every_started_consumer_downstream() {
        let graph = chain();
        let failed = BTreeSet::from([region(&graph, 0, 1)]);
        let restart = regions_to_restart(&graph, &failed, |_| true, |_| true);
        assert_eq!(rendered(&graph, &restart), ["v0[1]", "v1[1]", "v2[0]", "v2[1]"]);
        let not_started = |region: RegionId| graph.regions()[region.0 as usize].vertices[0].vertex.0 == 0;
        let restart = regions_to_restart(&graph, &failed, |_| true, not_started);
        assert_eq!(rendered(&graph, &restart), ["v0[1]"], "consumers that never started need no restart");
    }
}
