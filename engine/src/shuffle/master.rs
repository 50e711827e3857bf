//! The JobMaster's side of the shuffle: the [`ShuffleMaster`] that says where a partition will
//! live, and the [`PartitionTracker`] that remembers each partition until nobody needs it.
//!
//! PIPELINED partitions always live on their producer's TaskManager. BLOCKING ones live there
//! too with `shuffle: task-manager`, and in the shuffle service with `shuffle: remote`. A
//! partition is released when every subtask of the vertex consuming it finished (Flink releases
//! per consumer region; a vertex is coarser and never earlier). A lost TaskManager matters to a
//! job when it held partitions still needed.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use super::{PartitionLocation, ResultPartitionId, ShuffleDescriptor, ShuffleKind};
use crate::graph::{JobVertexId, ResultPartitionType};

/// Says where a partition about to be produced will live (Flink's `ShuffleMaster`).
pub trait ShuffleMaster: Send + Sync {
    /// Where a partition of this type, produced on `producer`, lives.
    fn location(&self, partition_type: ResultPartitionType, producer: PartitionLocation) -> PartitionLocation;

    /// Registers a partition of `subpartitions` that a task on `producer` will produce.
    fn register_partition(
        &self,
        partition: ResultPartitionId,
        partition_type: ResultPartitionType,
        subpartitions: u32,
        producer: PartitionLocation,
    ) -> ShuffleDescriptor {
        assert!(producer.task_manager().is_some(), "shuffle invariant: {partition} is produced on a TaskManager");
        let pipelined_on = (partition_type == ResultPartitionType::Pipelined).then(|| producer.clone());
        let location = self.location(partition_type, producer);
        if let Some(producer) = pipelined_on {
            assert_eq!(location, producer, "shuffle invariant: pipelined {partition} lives on its producer's node");
        }
        ShuffleDescriptor { partition, partition_type, subpartitions, location }
    }
}

/// Every partition on its producer's TaskManager.
struct TaskManagerShuffleMaster;

impl ShuffleMaster for TaskManagerShuffleMaster {
    fn location(&self, _: ResultPartitionType, producer: PartitionLocation) -> PartitionLocation {
        producer
    }
}

/// Blocking partitions in the shuffle service.
struct RemoteShuffleMaster {
    service: SocketAddr,
}

impl ShuffleMaster for RemoteShuffleMaster {
    fn location(&self, partition_type: ResultPartitionType, producer: PartitionLocation) -> PartitionLocation {
        match partition_type {
            ResultPartitionType::Pipelined => producer,
            ResultPartitionType::Blocking => PartitionLocation::Remote { address: self.service },
        }
    }
}

/// The shuffle master of a kind; `service` is where the shuffle service is (for `Remote`).
pub fn shuffle_master(kind: ShuffleKind, service: Option<SocketAddr>) -> Result<Box<dyn ShuffleMaster>, String> {
    match kind {
        ShuffleKind::TaskManager => Ok(Box::new(TaskManagerShuffleMaster)),
        ShuffleKind::Remote => match service {
            Some(service) => Ok(Box::new(RemoteShuffleMaster { service })),
            None => Err("shuffle: remote needs a shuffle service, and none is configured".to_string()),
        },
    }
}

struct Tracked {
    descriptor: ShuffleDescriptor,
    consumer: JobVertexId,
    produced: bool,
}

/// Partitions of the current subtask runs: where they are and who still needs them.
#[derive(Default)]
pub struct PartitionTracker {
    partitions: BTreeMap<ResultPartitionId, Tracked>,
}

impl PartitionTracker {
    /// Starts tracking a partition consumed by `consumer`.
    pub fn track(&mut self, descriptor: ShuffleDescriptor, consumer: JobVertexId) {
        let id = descriptor.partition;
        let previous = self.partitions.insert(id, Tracked { descriptor, consumer, produced: false });
        assert!(previous.is_none(), "internal: partition {id} tracked twice");
    }

    /// Where a tracked partition lives.
    pub fn descriptor(&self, partition: ResultPartitionId) -> Option<&ShuffleDescriptor> {
        self.partitions.get(&partition).map(|tracked| &tracked.descriptor)
    }

    /// Records that a partition's producer finished it.
    pub fn produced(&mut self, partition: ResultPartitionId) {
        if let Some(tracked) = self.partitions.get_mut(&partition) {
            tracked.produced = true;
        }
    }

    /// Every subtask of `consumer` finished: its input partitions are no longer needed. Stops
    /// tracking them and returns them, to be released.
    pub fn consumer_finished(&mut self, consumer: JobVertexId) -> Vec<ShuffleDescriptor> {
        let done: Vec<ResultPartitionId> =
            self.partitions.iter().filter(|(_, tracked)| tracked.consumer == consumer).map(|(id, _)| *id).collect();
        done.into_iter().map(|id| Self::released(id, self.partitions.remove(&id).expect("listed above"))).collect()
    }

    /// A partition that stops being tracked, to be released: tracking forgets it, so it is
    /// released once.
    fn released(id: ResultPartitionId, tracked: Tracked) -> ShuffleDescriptor {
        assert_eq!(tracked.descriptor.partition, id, "shuffle invariant: a partition is tracked under its own id");
        tracked.descriptor
    }

    /// True if the partition is tracked and its producer finished it: it can be read.
    pub fn is_available(&self, partition: ResultPartitionId) -> bool {
        self.partitions.get(&partition).is_some_and(|tracked| tracked.produced)
    }

    /// Stops tracking a partition found lost (its consumers' failover re-runs its producer).
    pub fn lose(&mut self, partition: ResultPartitionId) {
        self.partitions.remove(&partition);
    }

    /// Stops tracking a partition whose producer restarts; returns it, to be released.
    pub fn untrack(&mut self, partition: ResultPartitionId) -> Option<ShuffleDescriptor> {
        self.partitions.remove(&partition).map(|tracked| Self::released(partition, tracked))
    }

    /// Produced partitions still needed that live on a TaskManager (lost with it).
    pub fn needed_on(&self, task_manager: &str) -> Vec<ResultPartitionId> {
        self.partitions
            .iter()
            .filter(|(_, tracked)| tracked.produced && tracked.descriptor.location.task_manager() == Some(task_manager))
            .map(|(id, _)| *id)
            .collect()
    }

    /// Stops tracking everything (a restart) and returns it, to be released.
    pub fn take_all(&mut self) -> Vec<ShuffleDescriptor> {
        std::mem::take(&mut self.partitions).into_iter().map(|(id, tracked)| Self::released(id, tracked)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{IntermediateDataSetId, IntermediateResultPartitionId};

    fn id(producer_subtask: u32) -> ResultPartitionId {
        ResultPartitionId {
            partition: IntermediateResultPartitionId { dataset: IntermediateDataSetId(0), producer_subtask },
            attempt: 0,
        }
    }

    fn on(name: &str) -> PartitionLocation {
        PartitionLocation::TaskManager { name: name.to_string(), address: "10.0.1.1:1".parse().unwrap() }
    }

    #[test]
    fn remote_shuffle_keeps_pipelined_partitions_local() {
        let service: SocketAddr = "10.0.5.1:1".parse().unwrap();
        let master = shuffle_master(ShuffleKind::Remote, Some(service)).unwrap();
        let blocking = master.register_partition(id(0), ResultPartitionType::Blocking, 2, on("tm-0"));
        assert_eq!(blocking.location, PartitionLocation::Remote { address: service });
        let pipelined = master.register_partition(id(1), ResultPartitionType::Pipelined, 2, on("tm-0"));
        assert_eq!(pipelined.location, on("tm-0"));
        assert!(shuffle_master(ShuffleKind::Remote, None).is_err());
    }

    #[test]
    fn partitions_are_needed_until_their_consumer_finished() {
        let master = shuffle_master(ShuffleKind::TaskManager, None).unwrap();
        let mut tracker = PartitionTracker::default();
        tracker.track(master.register_partition(id(0), ResultPartitionType::Blocking, 1, on("tm-0")), JobVertexId(1));
        tracker.track(master.register_partition(id(1), ResultPartitionType::Blocking, 1, on("tm-1")), JobVertexId(1));
        assert!(tracker.needed_on("tm-0").is_empty(), "not produced yet: the running producer is what matters");
        tracker.produced(id(0));
        assert_eq!(tracker.needed_on("tm-0"), vec![id(0)]);
        let released = tracker.consumer_finished(JobVertexId(1));
        assert_eq!(released.len(), 2);
        assert!(tracker.needed_on("tm-0").is_empty());
    }
}
