//! The JobMaster's side of partitions beyond the [`PartitionTracker`](crate::shuffle::PartitionTracker):
//! asking a TaskManager which finished partitions it still serves once one of them is found
//! lost (a lost disk loses them all, found at once rather than one consumer failure at a time),
//! and telling partition servers what to drop.
//!
//! It never decides what restarts: lost partitions become a [`Failure`] for the failover
//! strategy.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;

use super::failover::Failure;
use super::{CONTROL_TIMEOUT, Event, JobMaster};
use crate::graph::ExecutionVertexId;
use crate::shuffle::protocol::{ListPartitions, ReleasePartitions};
use crate::shuffle::{PartitionLocation, ResultPartitionId, ShuffleDescriptor};

impl JobMaster {
    /// Asks the TaskManager that held `partition` which of the finished partitions still needed
    /// there it can serve; the answer comes back as [`Event::PartitionsHeld`].
    pub(super) fn check_partitions_of(&self, partition: ResultPartitionId) {
        let Some(job) = &self.job else { return };
        let Some(PartitionLocation::TaskManager { name, .. }) =
            job.partitions.descriptor(partition).map(|descriptor| descriptor.location.clone())
        else {
            return;
        };
        let Some(info) = self.task_managers.get(&name) else { return };
        let asked: Vec<ResultPartitionId> =
            job.partitions.needed_on(&name).into_iter().filter(|id| *id != partition).collect();
        if asked.is_empty() {
            return;
        }
        let (client, events, address, instance) =
            (self.client.clone(), self.events.clone(), info.address, info.instance);
        crate::rt::task::spawn(async move {
            match client.call(address, ListPartitions, CONTROL_TIMEOUT).await {
                Ok(held) => {
                    let _ = events.send(Event::PartitionsHeld { name, instance, asked, held });
                }
                Err(error) => {
                    let why = format!("ListPartitions: {error}");
                    super::task_managers::probe(&client, &events, address, name, instance, why).await;
                }
            }
        });
    }

    /// A TaskManager answered which partitions it can serve: those asked about that it cannot
    /// are lost, and their producers failed.
    pub(super) async fn on_partitions_held(
        &mut self,
        name: String,
        instance: u64,
        asked: Vec<ResultPartitionId>,
        held: Vec<ResultPartitionId>,
    ) {
        if self.task_managers.get(&name).is_none_or(|info| info.instance != instance) {
            return; // lost meanwhile: that loss was handled as a whole
        }
        let Some(job) = &self.job else { return };
        let held: BTreeSet<ResultPartitionId> = held.into_iter().collect();
        let lost: BTreeSet<ResultPartitionId> =
            asked.into_iter().filter(|id| !held.contains(id) && job.partitions.is_available(*id)).collect();
        if lost.is_empty() {
            return;
        }
        for id in &lost {
            job.check_produced_by_current_run(*id); // available: tracked, and its producer finished it
        }
        let job_graph = job.strategy.graph().job_graph();
        let failed = lost
            .iter()
            .map(|id| ExecutionVertexId {
                vertex: job_graph.edge(id.partition.dataset).source,
                subtask: id.partition.producer_subtask,
            })
            .collect();
        let cause = match lost.len() {
            1 => format!("a finished partition still needed was lost on {name}"),
            count => format!("{count} finished partitions still needed were lost on {name}"),
        };
        self.on_failure(Failure { cause, failed, lost }).await;
    }

    /// Tells each partition's server to drop it (best effort: a TaskManager also drops old
    /// attempts' partitions when it cancels them, and a registering one is told what to drop).
    pub(super) fn release_partitions(&self, descriptors: Vec<ShuffleDescriptor>) {
        let mut by_server: BTreeMap<SocketAddr, Vec<_>> = BTreeMap::new();
        for descriptor in descriptors {
            by_server.entry(descriptor.location.address()).or_default().push(descriptor.partition);
        }
        for (address, partitions) in by_server {
            self.release_on(address, partitions);
        }
    }

    /// Tells one partition server to drop some partitions (best effort).
    pub(super) fn release_on(&self, address: SocketAddr, partitions: Vec<ResultPartitionId>) {
        if partitions.is_empty() {
            return;
        }
        let client = self.client.clone();
        crate::rt::task::spawn(async move {
            let _ = client.call(address, ReleasePartitions { partitions }, CONTROL_TIMEOUT).await;
        });
    }
}
