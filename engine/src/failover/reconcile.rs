//! What a restarted JobMaster keeps of the finished work it finds (Flink's FLIP-383 batch job
//! recovery): a pure decision, apart from the actor that installs it
//! (`runtime/jobmaster/recovery.rs`).
//!
//! A region can be kept only if every one of its subtasks finished. It must re-run if a
//! partition it produced is still needed (a subtask reading it is not kept, or its consumer
//! vertex's parallelism is not decided yet) and no longer held where it was written. From the regions that cannot be kept, region
//! failover ([`regions_to_restart`]) adds the producers of inputs that are gone and the started
//! consumers of what re-runs; what is left is kept.

use std::collections::{BTreeMap, BTreeSet};

use super::regions_to_restart;
use crate::graph::{ExecutionGraph, ExecutionVertexId, IntermediateResultPartitionId, JobVertexId, RegionId};

/// The finished subtasks to keep, of those in `finished`; `held(partition)` says whether a
/// finished producer's partition is still where it was written. Every other finished subtask
/// re-runs. See the module doc.
pub fn finished_work_to_keep(
    graph: &ExecutionGraph,
    finished: &BTreeSet<ExecutionVertexId>,
    held: impl Fn(IntermediateResultPartitionId) -> bool,
) -> BTreeSet<ExecutionVertexId> {
    let job_graph = graph.job_graph();
    let candidates: BTreeSet<RegionId> = graph
        .regions()
        .iter()
        .filter(|region| region.vertices.iter().all(|vertex| finished.contains(vertex)))
        .map(|region| region.id)
        .collect();
    let in_candidates =
        |vertex: ExecutionVertexId| finished.contains(&vertex) && candidates.contains(&graph.region_of(vertex));
    let producer_of = |partition: IntermediateResultPartitionId| ExecutionVertexId {
        vertex: job_graph.edge(partition.dataset).source,
        subtask: partition.producer_subtask,
    };
    let available = |partition: IntermediateResultPartitionId| in_candidates(producer_of(partition)) && held(partition);
    let readers = readers(graph);
    // Read by a subtask that is not kept, or by a vertex not decided yet (whose subtasks will).
    let needed = |partition: IntermediateResultPartitionId| {
        graph.parallelism(job_graph.edge(partition.dataset).target).is_none()
            || readers.get(&partition).into_iter().flatten().any(|reader| !in_candidates(*reader))
    };
    // Regions that cannot be kept: not all finished, or a partition still needed is gone.
    let mut failed: BTreeSet<RegionId> =
        graph.regions().iter().map(|region| region.id).filter(|region| !candidates.contains(region)).collect();
    for region in &candidates {
        for vertex in &graph.regions()[region.0 as usize].vertices {
            if graph.produced_partitions(*vertex).iter().any(|produced| needed(produced.id) && !available(produced.id))
            {
                failed.insert(*region);
            }
        }
    }
    let reset = regions_to_restart(graph, &failed, available, |region| candidates.contains(&region));
    let kept: BTreeSet<ExecutionVertexId> = candidates
        .iter()
        .filter(|region| !reset.contains(region))
        .flat_map(|region| graph.regions()[region.0 as usize].vertices.iter().copied())
        .collect();
    check_kept(graph, finished, &kept, &readers, &held);
    kept
}

/// What the kept work guarantees the restarted JobMaster: only finished subtasks, whole regions,
/// and every partition of theirs that a subtask not kept (or not decided yet) will read is held.
fn check_kept(
    graph: &ExecutionGraph,
    finished: &BTreeSet<ExecutionVertexId>,
    kept: &BTreeSet<ExecutionVertexId>,
    readers: &BTreeMap<IntermediateResultPartitionId, BTreeSet<ExecutionVertexId>>,
    held: &dyn Fn(IntermediateResultPartitionId) -> bool,
) {
    assert!(kept.is_subset(finished), "failover invariant: only finished subtasks are kept");
    for region in graph.regions() {
        let kept_members = region.vertices.iter().filter(|vertex| kept.contains(*vertex)).count();
        assert!(
            kept_members == 0 || kept_members == region.vertices.len(),
            "failover invariant: region r{} is kept whole or not at all ({kept_members} of {} subtasks kept)",
            region.id.0,
            region.vertices.len()
        );
    }
    let job_graph = graph.job_graph();
    for vertex in kept {
        for produced in graph.produced_partitions(*vertex) {
            let undecided = graph.parallelism(job_graph.edge(produced.id.dataset).target).is_none();
            let read_again = readers.get(&produced.id).into_iter().flatten().any(|reader| !kept.contains(reader));
            if undecided || read_again {
                assert!(
                    held(produced.id),
                    "failover invariant: kept {vertex}'s partition of ds{} is still needed, so it is held",
                    produced.id.dataset.0
                );
            }
        }
    }
}

/// The partitions of the kept work a restarted JobMaster tracks as available: each kept
/// subtask's partition that a subtask not kept may still read (its consumer vertex is not wholly
/// kept, or not decided yet) and that is still `held`. A kept subtask's partition that is gone
/// is left out on purpose: untracked, it is unavailable, so a later failure that re-runs one of
/// its readers re-runs its producer in the same restart instead of failing again on reading it.
pub fn partitions_to_track(
    graph: &ExecutionGraph,
    kept: &BTreeSet<ExecutionVertexId>,
    held: impl Fn(IntermediateResultPartitionId) -> bool,
) -> BTreeSet<IntermediateResultPartitionId> {
    let job_graph = graph.job_graph();
    kept.iter()
        .flat_map(|vertex| graph.produced_partitions(*vertex))
        .map(|produced| produced.id)
        .filter(|partition| {
            let consumer = job_graph.edge(partition.dataset).target;
            !all_subtasks(graph, consumer, &|candidate| kept.contains(&candidate)) && held(*partition)
        })
        .collect()
}

/// The subtasks that read each partition (through an input channel).
fn readers(graph: &ExecutionGraph) -> BTreeMap<IntermediateResultPartitionId, BTreeSet<ExecutionVertexId>> {
    let mut readers: BTreeMap<IntermediateResultPartitionId, BTreeSet<ExecutionVertexId>> = BTreeMap::new();
    for region in graph.regions() {
        for vertex in &region.vertices {
            for input in graph.consumed_inputs(*vertex) {
                for channel in input.channels {
                    readers.entry(channel.partition).or_default().insert(*vertex);
                }
            }
        }
    }
    readers
}

/// True if every subtask of `vertex` satisfies `done` (false while its parallelism is unknown).
pub fn all_subtasks(graph: &ExecutionGraph, vertex: JobVertexId, done: &dyn Fn(ExecutionVertexId) -> bool) -> bool {
    graph
        .parallelism(vertex)
        .is_some_and(|parallelism| (0..parallelism).all(|subtask| done(ExecutionVertexId { vertex, subtask })))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failover::testing::chain;

    fn subtasks(names: &[(u32, u32)]) -> BTreeSet<ExecutionVertexId> {
        names
            .iter()
            .map(|(vertex, subtask)| ExecutionVertexId { vertex: JobVertexId(*vertex), subtask: *subtask })
            .collect()
    }

    fn rendered(kept: &BTreeSet<ExecutionVertexId>) -> Vec<String> {
        kept.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn finished_work_whose_partitions_are_held_is_kept() {
        let graph = chain();
        let finished = subtasks(&[(0, 0), (0, 1), (1, 0), (1, 1)]);
        let kept = finished_work_to_keep(&graph, &finished, |_| true);
        assert_eq!(rendered(&kept), ["v0[0]", "v0[1]", "v1[0]", "v1[1]"]);
    }

    #[test]
    fn a_lost_partition_still_needed_re_runs_its_producer_and_its_producer_above() {
        let graph = chain();
        // v1[0]'s partition is gone and v2 still needs it: v1[0] re-runs, and so does v0[0],
        // whose partition v1[0] must read again but is gone too. v0[1] and v1[1] are kept.
        let finished = subtasks(&[(0, 0), (0, 1), (1, 0), (1, 1)]);
        let held = |partition: IntermediateResultPartitionId| {
            !(partition.producer_subtask == 0 && (partition.dataset.0 == 0 || partition.dataset.0 == 1))
        };
        let kept = finished_work_to_keep(&graph, &finished, held);
        assert_eq!(rendered(&kept), ["v0[1]", "v1[1]"]);
    }

    #[test]
    fn a_lost_partition_nobody_needs_any_more_keeps_its_producer() {
        let graph = chain();
        // Everything finished, v0's partitions were released after v1 read them: v0 needs no
        // re-run, because every consumer of its partitions is kept.
        let finished = subtasks(&[(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1)]);
        let kept = finished_work_to_keep(&graph, &finished, |partition| partition.dataset.0 != 0);
        assert_eq!(kept, finished, "nothing re-runs");
    }

    #[test]
    fn a_lost_partition_whose_readers_are_all_kept_is_not_needed_though_its_vertex_re_runs() {
        let graph = chain();
        // v1[0] did not finish and re-runs, reading v0[0]'s partition, which is held. v0[1]'s is
        // gone, but only v1[1] reads it (rescale), and v1[1] is kept: nothing else re-runs.
        let finished = subtasks(&[(0, 0), (0, 1), (1, 1)]);
        let held =
            |partition: IntermediateResultPartitionId| partition.dataset.0 != 0 || partition.producer_subtask == 0;
        assert_eq!(rendered(&finished_work_to_keep(&graph, &finished, held)), ["v0[0]", "v0[1]", "v1[1]"]);
    }

    #[test]
    fn a_kept_subtasks_lost_partition_is_not_tracked_so_its_readers_restart_brings_it_back() {
        let graph = chain();
        // v0[1]'s partition is gone, but only v1[1] reads it and v1[1] is kept: v0[1] is kept
        // too. v1[0] did not finish and re-runs, so v0[0]'s partition (held) is tracked; v0[1]'s
        // is not, though v1 as a whole is not kept.
        let finished = subtasks(&[(0, 0), (0, 1), (1, 1)]);
        let held =
            |partition: IntermediateResultPartitionId| !(partition.dataset.0 == 0 && partition.producer_subtask == 1);
        let kept = finished_work_to_keep(&graph, &finished, held);
        assert_eq!(rendered(&kept), ["v0[0]", "v0[1]", "v1[1]"]);
        let tracked = partitions_to_track(&graph, &kept, held);
        let tracked_names: Vec<String> = tracked
            .iter()
            .map(|partition| format!("ds{}.p{}", partition.dataset.0, partition.producer_subtask))
            .collect();
        // v1[1]'s own partition is read by v2, which is not kept: tracked, it is held.
        assert_eq!(tracked_names, ["ds0.p0", "ds1.p1"]);
        // Later v1[1]'s partition is lost and v1[1] must re-run: with only the tracked
        // partitions available, region failover re-runs v0[1] in the same restart (had its gone
        // partition been tracked, v1[1] would fail again reading it), and not v0[0].
        let failed = BTreeSet::from([graph.region_of(ExecutionVertexId { vertex: JobVertexId(1), subtask: 1 })]);
        let restart = regions_to_restart(&graph, &failed, |partition| tracked.contains(&partition), |_| true);
        let restarted: Vec<String> = restart
            .iter()
            .flat_map(|region| graph.regions()[region.0 as usize].vertices.iter().map(ToString::to_string))
            .collect();
        assert!(restarted.contains(&"v0[1]".to_string()) && restarted.contains(&"v1[1]".to_string()), "{restarted:?}");
        assert!(!restarted.contains(&"v0[0]".to_string()), "v0[0]'s partition is held: {restarted:?}");
    }

    #[test]
    fn a_lost_input_partition_of_an_unfinished_consumer_re_runs_the_producer_chain() {
        let graph = chain();
        // v1 did not finish: v1 re-runs and needs v0's partitions, which are gone: v0 re-runs.
        let finished = subtasks(&[(0, 0), (0, 1)]);
        assert!(finished_work_to_keep(&graph, &finished, |_| false).is_empty());
        assert_eq!(rendered(&finished_work_to_keep(&graph, &finished, |_| true)), ["v0[0]", "v0[1]"]);
    }
}
