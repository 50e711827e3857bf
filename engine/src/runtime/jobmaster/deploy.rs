//! Scheduling and deployment: runtime parallelism decisions, slot allocation per pipelined
//! region, partition registration with the shuffle master, and task deployment; and what a
//! finished task changes (slots, partitions, the job's end).

use std::sync::Arc;

use crate::rt::time::Instant;

use super::{Event, Execution, JobMaster, JobRun, ha};
use crate::graph::{ExecutionVertexId, JobVertexId, RegionId};
use crate::runtime::messages::{ExecutionAttemptId, JobStatus, SubmitTask, TaskDeploymentDescriptor, TaskReport};
use crate::scheduler::SlotId;
use crate::scheduler::adaptive::decide;
use crate::shuffle::{InputChannelSpec, PartitionLocation, ResultPartitionId};
use crate::trace::TraceEvent;

impl JobMaster {
    /// A subtask of the current attempt finished: frees its slot once the slot's other subtasks
    /// are done, marks its partitions produced, releases partitions nobody needs any more, and
    /// ends the job when it was the last one.
    pub(super) async fn on_task_finished(&mut self, vertex: ExecutionVertexId, report: TaskReport) {
        let job = self.job.as_mut().expect("a finished task belongs to a job");
        let attempt = job.executions[&vertex].attempt;
        assert!(
            job.executions[&vertex].finished,
            "jobmaster invariant: a run's finish is handled once it is marked finished ({vertex}@a{attempt})"
        );
        for (dataset, statistics) in &report.partitions {
            job.partition_bytes.insert((*dataset, vertex.subtask), statistics.bytes_per_subpartition.clone());
            let partition =
                crate::graph::IntermediateResultPartitionId { dataset: *dataset, producer_subtask: vertex.subtask };
            job.partitions.produced(ResultPartitionId { partition, attempt });
        }
        let slot = job.executions[&vertex].slot.clone().expect("internal: a running execution has a slot");
        let users = job.slot_users.get_mut(&slot).expect("internal: an execution's slot is tracked");
        let was_user = users.remove(&vertex);
        assert!(was_user, "jobmaster invariant: a run uses its slot until it finishes ({vertex}@a{attempt} on {slot})");
        if users.is_empty() {
            job.slot_users.remove(&slot);
            self.slot_pool.release(&slot);
        }
        job.strategy.on_vertex_finished(vertex);
        let released = if vertex_finished(job, vertex.vertex) {
            job.partitions.consumer_finished(vertex.vertex)
        } else {
            Vec::new()
        };
        let all_finished = job.strategy.all_finished();
        if all_finished {
            job.check_every_run_finished();
        }
        // Restarts over the job's whole life, JobMaster failovers included: attempts start at
        // 0 and each restart takes the next (the harness counts the same, from the trace).
        let restarts = job.attempt;
        let event = TraceEvent::TaskFinished {
            attempt,
            vertex: vertex.vertex.0,
            subtask: vertex.subtask,
            records_in: report.records_in,
            records_out: report.records_out,
            disk_bytes_read: report.disk_bytes_read,
            disk_bytes_written: report.disk_bytes_written,
            backpressure_micros: report.backpressure_micros(),
            peak_buffered_bytes: report.peak_buffered_bytes(),
            work: report.work,
        };
        self.trace(event);
        self.release_partitions(released);
        if all_finished {
            self.end_job(JobStatus::Finished).await;
            self.trace(TraceEvent::JobFinished { restarts });
        }
        self.try_schedule().await;
    }

    /// Decides the parallelism of vertices whose inputs are all produced (adaptive batch).
    async fn decide_parallelism(&mut self) {
        let Some(job) = &self.job else { return };
        let Some(config) = job.spec.adaptive else { return };
        for vertex in job.strategy.decidable_vertices() {
            let job = self.job.as_mut().expect("checked");
            let job_graph = Arc::clone(job.strategy.graph().job_graph());
            let mut bytes = vec![0u64; job_graph.vertex(vertex).max_parallelism as usize];
            for dataset in &job_graph.vertex(vertex).inputs {
                for ((produced, _), produced_bytes) in job.partition_bytes.range((*dataset, 0)..=(*dataset, u32::MAX)) {
                    assert_eq!(produced, dataset, "internal: partition bytes out of range");
                    assert_eq!(
                        produced_bytes.len(),
                        bytes.len(),
                        "internal: a producer of v{} wrote {} subpartitions, not one per key group",
                        vertex.0,
                        produced_bytes.len()
                    );
                    for (total, add) in bytes.iter_mut().zip(produced_bytes) {
                        *total += add;
                    }
                }
            }
            let decision = decide(&bytes, &config);
            crate::cover!(AdaptiveParallelismDecided);
            let ranges: Vec<(u32, u32)> = decision.ranges.iter().map(|range| (range.start, range.end)).collect();
            let event = TraceEvent::ParallelismDecided {
                attempt: job.attempt,
                vertex: vertex.0,
                parallelism: decision.parallelism(),
                input_bytes: decision.input_bytes,
                ranges: ranges.clone(),
            };
            // Durably first: a restarted JobMaster must plan the vertex the same way.
            let job_id = job.spec.job_id.clone();
            ha::append(self.ha.as_ref(), &job_id, &ha::JobEvent::ParallelismDecided { vertex, ranges }).await;
            let job = self.job.as_mut().expect("checked");
            job.strategy.initialize_vertex(vertex, decision.ranges);
            self.config.tracer.record(event);
        }
    }

    /// Deploys every region that can run and fits the free slots; fails the job if a region
    /// waited too long for more slots than the cluster has.
    pub(super) async fn try_schedule(&mut self) {
        let Some(job) = &self.job else { return };
        if job.status != JobStatus::Running || job.reconciling.is_some() {
            return;
        }
        self.decide_parallelism().await;
        let mut waiting = false;
        let job = self.job.as_ref().expect("checked");
        let now = Instant::now();
        let held = |region: &RegionId| {
            let key = job.strategy.graph().regions()[region.0 as usize].vertices[0];
            job.region_holds.get(&key).is_some_and(|until| now < *until)
        };
        let schedulable: Vec<RegionId> =
            job.strategy.schedulable_regions().into_iter().filter(|region| !held(region)).collect();
        for region in schedulable {
            let needed = self.job.as_ref().expect("checked").strategy.slot_sharing(region).groups.len() as u32;
            match self.slot_pool.allocate_bulk(needed) {
                Some(slots) => self.deploy_region(region, slots),
                None => waiting = true,
            }
        }
        let now = Instant::now();
        let total_slots = self.slot_pool.total_slots();
        let task_managers = self.slot_pool.task_manager_count();
        let job = self.job.as_mut().expect("checked");
        if !waiting {
            job.waiting_for_slots_since = None;
            return;
        }
        let since = *job.waiting_for_slots_since.get_or_insert(now);
        let plural = if task_managers == 1 { "" } else { "s" };
        let needed = job.strategy.slots_needed_at_once();
        if now.duration_since(since) >= self.config.slot_request_timeout && needed > total_slots {
            let reason = format!(
                "not enough slots: job {} needs {needed} slots at once, but the cluster has {total_slots} ({task_managers} TaskManager{plural})",
                job.spec.job_id
            );
            self.end_job(JobStatus::Failed(reason.clone())).await;
            self.trace(TraceEvent::JobFailed { reason });
        }
    }

    /// Places a region's subtasks in `slots`, registers every partition they produce (so that
    /// pipelined consumers in the region know where to read), and deploys them.
    fn deploy_region(&mut self, region: RegionId, slots: Vec<SlotId>) {
        if self.job.as_ref().is_some_and(|job| job.checkpoints.is_some() && job.executions.is_empty()) {
            self.start_checkpointing_attempt(); // the attempt's first region
        }
        let job = self.job.as_mut().expect("deploying needs a job");
        assert_eq!(
            job.status,
            JobStatus::Running,
            "jobmaster invariant: regions deploy only while the job runs (r{})",
            region.0
        );
        assert!(job.reconciling.is_none(), "jobmaster invariant: nothing deploys until reconciled (r{})", region.0);
        let sharing = job.strategy.slot_sharing(region);
        assert_eq!(
            slots.len(),
            sharing.groups.len(),
            "internal: region r{} needs {} slots and was given {}",
            region.0,
            sharing.groups.len(),
            slots.len()
        );
        job.strategy.mark_scheduled(region);
        for (slot, group) in slots.iter().zip(&sharing.groups) {
            let previous = job.slot_users.insert(slot.clone(), group.iter().copied().collect());
            assert!(previous.is_none(), "jobmaster invariant: a slot serves one region's subtasks at a time ({slot})");
            for vertex in group {
                let execution =
                    Execution { attempt: job.attempt, slot: Some(slot.clone()), deployed: false, finished: false };
                if let Some(current) = job.executions.insert(*vertex, execution) {
                    panic!(
                        "internal: {vertex} deployed as a{} while its run a{} is current",
                        job.attempt, current.attempt
                    );
                }
                let task_manager = &self.task_managers[&slot.task_manager];
                let producer =
                    PartitionLocation::TaskManager { name: slot.task_manager.clone(), address: task_manager.address };
                let job_graph = Arc::clone(job.strategy.graph().job_graph());
                for produced in job.strategy.graph().produced_partitions(*vertex) {
                    let id = ResultPartitionId { partition: produced.id, attempt: job.attempt };
                    let descriptor = job.shuffle.register_partition(
                        id,
                        produced.partition_type,
                        produced.num_subpartitions,
                        producer.clone(),
                    );
                    job.partitions.track(descriptor, job_graph.edge(produced.id.dataset).target);
                }
            }
        }
        let attempt = job.attempt;
        self.trace(TraceEvent::RegionScheduled {
            attempt,
            region: region.0,
            slots: slots.iter().map(ToString::to_string).collect(),
        });
        for (slot, group) in slots.iter().zip(&sharing.groups) {
            for vertex in group {
                self.deploy(*vertex, slot.clone());
            }
        }
    }

    fn deploy(&self, vertex: ExecutionVertexId, slot: SlotId) {
        let job = self.job.as_ref().expect("deploying needs a job");
        job.check_deploying(vertex, &slot);
        let execution = ExecutionAttemptId { vertex, attempt: job.executions[&vertex].attempt };
        let graph = job.strategy.graph();
        let descriptor_of = |partition| {
            let id = job
                .current_partition(partition)
                .unwrap_or_else(|| panic!("internal: {vertex} deployed before the producer of {partition:?} ran"));
            job.partitions
                .descriptor(id)
                .unwrap_or_else(|| panic!("internal: {vertex} deployed before its partition {id} was registered"))
                .clone()
        };
        let outputs =
            graph.produced_partitions(vertex).into_iter().map(|produced| descriptor_of(produced.id)).collect();
        let inputs = graph
            .consumed_inputs(vertex)
            .into_iter()
            .flat_map(|input| input.channels)
            .map(|channel| InputChannelSpec {
                descriptor: descriptor_of(channel.partition),
                subpartitions: channel.subpartitions,
                finished: job.executions.get(&channel.producer).is_some_and(|producer| producer.finished),
            })
            .collect();
        let descriptor = TaskDeploymentDescriptor {
            spec: job.spec.clone(),
            plan_fingerprint: job.plan_fingerprint,
            execution,
            parallelism: graph.parallelism(vertex.vertex).expect("internal: a deployed vertex is initialized"),
            slot: slot.clone(),
            outputs,
            inputs,
            external: self.config.external.clone(),
            checkpointing: job.checkpoints.is_some(),
            restore: job.checkpoints.as_ref().and_then(|coordinator| coordinator.latest()).map(|checkpoint| {
                let handle = checkpoint
                    .handle(vertex)
                    .unwrap_or_else(|| panic!("internal: checkpoint {} has no snapshot of {vertex}", checkpoint.id));
                (checkpoint.id, handle.clone())
            }),
            attempt_floor: job.floor,
        };
        self.trace(TraceEvent::TaskDeployed {
            attempt: execution.attempt,
            vertex: vertex.vertex.0,
            subtask: vertex.subtask,
            slot: slot.to_string(),
        });
        self.submit_task(descriptor, &slot.task_manager);
    }

    /// Sends the task to its TaskManager; the answer comes back as an event. An unanswered
    /// submission is followed by a probe: a TaskManager that answers neither is lost at once,
    /// with this deployment and what it holds, in one restart round.
    fn submit_task(&self, descriptor: TaskDeploymentDescriptor, task_manager: &str) {
        let execution = descriptor.execution;
        let info = &self.task_managers[task_manager];
        let (name, instance, address) = (task_manager.to_string(), info.instance, info.address);
        let client = self.client.clone();
        let events = self.events.clone();
        crate::rt::task::spawn(async move {
            let error = match client.call(address, SubmitTask { descriptor }, super::CONTROL_TIMEOUT).await {
                Ok(Ok(())) => {
                    let _ = events.send(Event::Deployed(execution));
                    return;
                }
                Ok(Err(refused)) => refused,
                Err(error) => {
                    let why = format!("SubmitTask of {execution}: {error}");
                    if super::task_managers::probe(&client, &events, address, name, instance, why).await {
                        return;
                    }
                    error.to_string()
                }
            };
            let _ = events.send(Event::DeployFailed { execution, error });
        });
    }
}

impl JobRun {
    /// Asserts what deploying `vertex` into `slot` relies on: its run was just placed there, under
    /// the current attempt, no older than the floor its TaskManager is told.
    fn check_deploying(&self, vertex: ExecutionVertexId, slot: &SlotId) {
        let run = &self.executions[&vertex];
        let attempt = run.attempt;
        assert_eq!(attempt, self.attempt, "jobmaster invariant: a run deploys under the current attempt ({vertex})");
        assert!(
            attempt >= self.floor,
            "jobmaster invariant: a deployed run is no older than its floor ({vertex}@a{attempt}, floor a{})",
            self.floor
        );
        assert_eq!(
            run.slot.as_ref(),
            Some(slot),
            "jobmaster invariant: a run deploys into the slot it was placed in ({vertex}@a{attempt})"
        );
        assert!(!run.deployed, "jobmaster invariant: a run is deployed once ({vertex}@a{attempt})");
        assert!(!run.finished, "jobmaster invariant: a run deploys before it finishes ({vertex}@a{attempt})");
    }
}

/// True if every subtask of `vertex` in the current attempt finished.
fn vertex_finished(job: &super::JobRun, vertex: JobVertexId) -> bool {
    let Some(parallelism) = job.strategy.graph().parallelism(vertex) else { return false };
    let finished = job
        .executions
        .range(ExecutionVertexId { vertex, subtask: 0 }..=ExecutionVertexId { vertex, subtask: u32::MAX })
        .filter(|(_, execution)| execution.finished)
        .count();
    finished as u32 == parallelism
}
