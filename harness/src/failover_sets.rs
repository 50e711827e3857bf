//! The failover-set oracle: on every run with a failure, the subtasks the JobMaster restarted
//! are exactly those the failover rules say must restart, no fewer (a region skipped that had to
//! run again) and no more (recomputation nobody needed).
//!
//! It follows the JobMaster's own trace, with a model of its own: which subtask runs are current
//! (deployed since their last restart) and finished, and which finished partitions are gone (lost,
//! as a failure said, or released once every subtask of their consumer finished). At each
//! region restart it recomputes the set from the failure's subtasks with its own fixpoint of
//! Flink's rules — the failed subtasks' pipelined regions; the producer region of every input
//! partition such a region reads that is no longer available; every started region consuming a
//! restarted region's output — and compares it with what the JobMaster restarted. A restarted
//! JobMaster's reconciliation is judged the same way (FLIP-383): of the finished work in its log,
//! given which partitions were no longer held, it must re-run exactly the regions that are not
//! whole or lost a partition still needed, and what region failover adds to them. It also checks
//! that no subtask is deployed again without a restart that covers it, and that every finish or
//! failure the JobMaster took is its subtask's current run's (never an older attempt's).
//!
//! Depends on the engine's graph (pipelined regions are the graph's structure, not the decision
//! under test) and trace. Invariant: it never calls the JobMaster's own decision
//! (`regions_to_restart`); a bug there shows up here as a set that differs.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::Arc;

use sluice_engine::graph::{ExecutionGraph, ExecutionVertexId, JobGraph, JobVertexId};
use sluice_engine::trace::{TraceEvent, parse_subtask};

use crate::trace::TraceRecord;

/// A partition as the model keys it: its data set, producer subtask and the producer's attempt.
type PartitionKey = (u32, u32, u32);

/// One subtask's current run.
#[derive(Clone, Copy)]
struct Run {
    attempt: u32,
    finished: bool,
}

/// What the oracle knows of the job: see the module doc.
struct Model {
    job_graph: Arc<JobGraph>,
    decided: BTreeMap<JobVertexId, Vec<Range<u32>>>,
    graph: ExecutionGraph,
    region_of: BTreeMap<ExecutionVertexId, usize>,
    consumers: BTreeMap<ExecutionVertexId, BTreeSet<ExecutionVertexId>>,
    runs: BTreeMap<ExecutionVertexId, Run>,
    last_attempt: BTreeMap<ExecutionVertexId, u32>,
    gone: BTreeSet<PartitionKey>,
}

/// Checks every region restart of a run and returns how many it checked; `region_failover` is
/// the failover strategy the job runs with (a job that checkpoints restarts all of its subtasks
/// whatever its spec says). A restart that re-ran other subtasks than the rules say is an `Err`
/// that says when, which, and what differs (the `failover-sets` check reports it).
pub fn failover_sets(trace: &[TraceRecord], job_graph: Arc<JobGraph>, region_failover: bool) -> Result<usize, String> {
    let mut model = Model::new(job_graph);
    let mut checked = 0;
    for record in trace {
        let outcome = model.apply(&record.event, region_failover);
        match outcome {
            Step::Go => {}
            Step::Checked => checked += 1,
            Step::CannotFollow => return Ok(checked),
            Step::Wrong(detail) => {
                return Err(format!("at {:.3}s: {detail}", record.time.as_secs_f64()));
            }
        }
    }
    Ok(checked)
}

/// What one trace event did to the model.
enum Step {
    Go,
    /// A region restart re-ran what the rules say.
    Checked,
    /// The trace names a subtask of a vertex whose parallelism the oracle does not know (an
    /// adaptive decision the trace lost with a crashed JobMaster): the rest is not checked.
    CannotFollow,
    Wrong(String),
}

impl Model {
    fn new(job_graph: Arc<JobGraph>) -> Model {
        let graph = ExecutionGraph::new(Arc::clone(&job_graph));
        let mut model = Model {
            job_graph,
            decided: BTreeMap::new(),
            graph,
            region_of: BTreeMap::new(),
            consumers: BTreeMap::new(),
            runs: BTreeMap::new(),
            last_attempt: BTreeMap::new(),
            gone: BTreeSet::new(),
        };
        model.index();
        model
    }

    /// Rebuilds the graph from the adaptive decisions, and its indexes.
    fn rebuild(&mut self) {
        self.graph = ExecutionGraph::new(Arc::clone(&self.job_graph));
        for (vertex, ranges) in &self.decided {
            self.graph.initialize(*vertex, ranges.clone());
        }
        self.index();
    }

    fn index(&mut self) {
        self.region_of.clear();
        for (index, region) in self.graph.regions().iter().enumerate() {
            for vertex in &region.vertices {
                self.region_of.insert(*vertex, index);
            }
        }
        self.consumers.clear();
        for consumer in self.graph.execution_vertices() {
            for input in self.graph.consumed_inputs(consumer) {
                for channel in input.channels {
                    self.consumers.entry(channel.producer).or_default().insert(consumer);
                }
            }
        }
    }

    fn apply(&mut self, event: &TraceEvent, region_failover: bool) -> Step {
        match event {
            TraceEvent::ParallelismDecided { vertex, ranges, .. } => {
                if ranges.is_empty() {
                    return Step::CannotFollow; // a trace from before ranges were traced
                }
                self.decided.insert(JobVertexId(*vertex), ranges.iter().map(|(start, end)| *start..*end).collect());
                self.rebuild();
            }
            TraceEvent::TaskDeployed { attempt, vertex, subtask, .. } => {
                let vertex = ExecutionVertexId { vertex: JobVertexId(*vertex), subtask: *subtask };
                if !self.region_of.contains_key(&vertex) {
                    return Step::CannotFollow;
                }
                if let Some(run) = self.runs.get(&vertex) {
                    return Step::Wrong(format!(
                        "{vertex} deployed as a{attempt} while its run a{} was current: no restart covered it",
                        run.attempt
                    ));
                }
                self.runs.insert(vertex, Run { attempt: *attempt, finished: false });
                self.last_attempt.insert(vertex, *attempt);
            }
            TraceEvent::TaskFinished { attempt, vertex, subtask, .. } => {
                let vertex = ExecutionVertexId { vertex: JobVertexId(*vertex), subtask: *subtask };
                if let Err(wrong) = self.current(vertex, *attempt, "finished") {
                    return wrong;
                }
                self.runs.get_mut(&vertex).expect("current").finished = true;
                self.release_inputs_of(vertex.vertex);
            }
            TraceEvent::TaskFailed { attempt, vertex, subtask, .. } => {
                let vertex = ExecutionVertexId { vertex: JobVertexId(*vertex), subtask: *subtask };
                if let Err(wrong) = self.current(vertex, *attempt, "failed") {
                    return wrong;
                }
            }
            TraceEvent::RegionsRestarting { attempt, subtasks, failed, lost, .. } => {
                if !region_failover {
                    return Step::Wrong(format!("regions restarted as a{attempt} in a job that restarts all subtasks"));
                }
                return self.restart_regions(*attempt, subtasks, failed, lost);
            }
            TraceEvent::JobRestarting { .. } | TraceEvent::JobRecovered { .. } => {
                self.runs.clear();
                self.gone.clear();
            }
            TraceEvent::FinishedWorkReconciled { attempt, kept, rerun, lost } => {
                return self.reconcile(*attempt, kept, rerun, lost);
            }
            _ => {}
        }
        Step::Go
    }

    /// A report the JobMaster took (`what` happened to `vertex`'s run `attempt`) must be about
    /// the subtask's current run: the JobMaster ignores older attempts' messages.
    fn current(&self, vertex: ExecutionVertexId, attempt: u32, what: &str) -> Result<(), Step> {
        match self.runs.get(&vertex) {
            Some(run) if run.attempt == attempt && !run.finished => Ok(()),
            Some(run) if run.attempt == attempt => {
                Err(Step::Wrong(format!("{vertex} a{attempt} {what} after it finished")))
            }
            Some(run) => Err(Step::Wrong(format!(
                "{vertex} {what} as a{attempt} while its current run is a{}: the JobMaster took a report from an older attempt",
                run.attempt
            ))),
            None if !self.region_of.contains_key(&vertex) => Err(Step::CannotFollow),
            None => Err(Step::Wrong(format!(
                "{vertex} {what} as a{attempt} with no current run: the JobMaster took a report from an older attempt"
            ))),
        }
    }

    /// Once every subtask of `vertex` finished, the partitions it read are released.
    fn release_inputs_of(&mut self, vertex: JobVertexId) {
        let Some(parallelism) = self.graph.parallelism(vertex) else { return };
        let subtasks: Vec<ExecutionVertexId> =
            (0..parallelism).map(|subtask| ExecutionVertexId { vertex, subtask }).collect();
        if !subtasks.iter().all(|subtask| self.runs.get(subtask).is_some_and(|run| run.finished)) {
            return;
        }
        for consumer in subtasks {
            for input in self.graph.consumed_inputs(consumer) {
                for channel in input.channels {
                    if let Some(run) = self.runs.get(&channel.producer) {
                        self.gone.insert((input.dataset.0, channel.producer.subtask, run.attempt));
                    }
                }
            }
        }
    }

    fn restart_regions(&mut self, attempt: u32, subtasks: &[String], failed: &[String], lost: &[String]) -> Step {
        for partition in lost {
            match partition_key(partition) {
                Some(key) => {
                    self.gone.insert(key);
                }
                None => return Step::Wrong(format!("a lost partition `{partition}` the oracle cannot read")),
            }
        }
        let failed: Vec<ExecutionVertexId> = failed.iter().filter_map(|text| subtask(text)).collect();
        if failed.iter().any(|vertex| !self.region_of.contains_key(vertex)) {
            return Step::CannotFollow;
        }
        let regions =
            failed.iter().filter(|vertex| self.runs.contains_key(vertex)).map(|vertex| self.region_of[vertex]);
        let expected = self.must_restart(regions.collect());
        let restarted: BTreeSet<ExecutionVertexId> = subtasks.iter().filter_map(|text| subtask(text)).collect();
        if restarted != expected {
            return Step::Wrong(format!(
                "the restart as a{attempt} (failed: {}) re-ran {}; the failover rules re-run {}: \
                 needed but not restarted: {}; restarted but not needed: {}",
                listed(failed.iter()),
                listed(restarted.iter()),
                listed(expected.iter()),
                listed(expected.difference(&restarted)),
                listed(restarted.difference(&expected)),
            ));
        }
        for vertex in &restarted {
            self.runs.remove(vertex);
        }
        Step::Checked
    }

    /// A restarted JobMaster decided which finished work of its log (`kept` and `rerun`) to
    /// keep, knowing which of their partitions were `lost`: it must keep exactly the regions
    /// whose subtasks all finished and that region failover would not re-run, from the regions
    /// that cannot be kept (not all finished, or a partition still needed lost).
    fn reconcile(&mut self, attempt: u32, kept: &[String], rerun: &[String], lost: &[String]) -> Step {
        let (Some(kept), Some(rerun)) = (subtasks(kept), subtasks(rerun)) else {
            return Step::Wrong(format!("a reconciliation as a{attempt} names a subtask the oracle cannot read"));
        };
        self.runs.clear();
        self.gone.clear();
        for vertex in kept.iter().chain(&rerun) {
            let Some(attempt) = self.last_attempt.get(vertex).copied() else { return Step::CannotFollow };
            if !self.region_of.contains_key(vertex) {
                return Step::CannotFollow;
            }
            self.runs.insert(*vertex, Run { attempt, finished: true });
        }
        for partition in lost {
            let Some(key) = partition_key(partition) else {
                return Step::Wrong(format!("a lost partition `{partition}` the oracle cannot read"));
            };
            self.gone.insert(key);
        }
        let expected = self.must_restart(self.cannot_keep());
        if expected != rerun {
            return Step::Wrong(format!(
                "the reconciliation as a{attempt} re-runs {}; the failover rules re-run {}: \
                 needed but kept: {}; re-run but not needed: {}",
                listed(rerun.iter()),
                listed(expected.iter()),
                listed(expected.difference(&rerun)),
                listed(rerun.difference(&expected)),
            ));
        }
        for vertex in &rerun {
            self.runs.remove(vertex);
        }
        let vertices: BTreeSet<JobVertexId> = self.runs.keys().map(|vertex| vertex.vertex).collect();
        for vertex in vertices {
            self.release_inputs_of(vertex);
        }
        Step::Checked
    }

    /// The regions that cannot be kept as they are: every region with a subtask that did not
    /// finish (or never ran: it will, and needs its inputs), and every finished one that
    /// produced a partition still needed (a subtask reading it is outside the fully finished
    /// regions, or its consumer vertex is not decided yet) that is lost.
    fn cannot_keep(&self) -> BTreeSet<usize> {
        let whole =
            |region: usize| self.graph.regions()[region].vertices.iter().all(|vertex| self.runs.contains_key(vertex));
        let mut failed: BTreeSet<usize> = (0..self.graph.regions().len()).filter(|region| !whole(*region)).collect();
        for (vertex, run) in &self.runs {
            let needed_and_lost = self.graph.produced_partitions(*vertex).into_iter().any(|produced| {
                let consumer = self.job_graph.edge(produced.id.dataset).target;
                let readers =
                    self.consumers.get(vertex).into_iter().flatten().filter(|reader| reader.vertex == consumer);
                let needed = self.graph.parallelism(consumer).is_none()
                    || readers.map(|reader| self.region_of[reader]).any(|region| !whole(region));
                needed && self.gone.contains(&(produced.id.dataset.0, vertex.subtask, run.attempt))
            });
            if needed_and_lost {
                failed.insert(self.region_of[vertex]);
            }
        }
        failed
    }

    /// The current runs the failover rules restart once the regions `chosen` restart.
    fn must_restart(&self, mut chosen: BTreeSet<usize>) -> BTreeSet<ExecutionVertexId> {
        let regions = self.graph.regions();
        let mut queue: Vec<usize> = chosen.iter().copied().collect();
        while let Some(region) = queue.pop() {
            for vertex in &regions[region].vertices {
                let upstream = self.graph.consumed_inputs(*vertex).into_iter().flat_map(|input| {
                    let dataset = input.dataset.0;
                    input.channels.into_iter().map(move |channel| (dataset, channel.producer))
                });
                let mut reached: Vec<usize> = upstream
                    .filter(|(dataset, producer)| !self.available(*dataset, *producer))
                    .map(|(_, producer)| self.region_of[&producer])
                    .collect();
                let downstream = self.consumers.get(vertex).into_iter().flatten();
                reached
                    .extend(downstream.map(|consumer| self.region_of[consumer]).filter(|index| self.started(*index)));
                for index in reached {
                    if index != region && chosen.insert(index) {
                        queue.push(index);
                    }
                }
            }
        }
        chosen
            .iter()
            .flat_map(|index| regions[*index].vertices.iter().copied())
            .filter(|vertex| self.runs.contains_key(vertex))
            .collect()
    }

    /// Whether the partition of `dataset` that `producer`'s current run wrote can be read.
    fn available(&self, dataset: u32, producer: ExecutionVertexId) -> bool {
        self.runs
            .get(&producer)
            .is_some_and(|run| run.finished && !self.gone.contains(&(dataset, producer.subtask, run.attempt)))
    }

    /// Whether a region has started: one of its subtasks has a current run.
    fn started(&self, region: usize) -> bool {
        self.graph.regions()[region].vertices.iter().any(|vertex| self.runs.contains_key(vertex))
    }
}

/// Subtasks as `v1[0] v2[3]`, or `none`.
fn listed<'a>(subtasks: impl Iterator<Item = &'a ExecutionVertexId>) -> String {
    let names: Vec<String> = subtasks.map(ToString::to_string).collect();
    if names.is_empty() { "none".to_string() } else { names.join(" ") }
}

/// Every subtask of a list as events write them, or `None` if one cannot be read.
fn subtasks(texts: &[String]) -> Option<BTreeSet<ExecutionVertexId>> {
    texts.iter().map(|text| subtask(text)).collect()
}

fn subtask(text: &str) -> Option<ExecutionVertexId> {
    parse_subtask(text).map(|(vertex, subtask)| ExecutionVertexId { vertex: JobVertexId(vertex), subtask })
}

/// `ds3.p1@a0` as (data set, producer subtask, attempt).
fn partition_key(text: &str) -> Option<PartitionKey> {
    let (dataset, rest) = text.strip_prefix("ds")?.split_once(".p")?;
    let (producer, attempt) = rest.split_once("@a")?;
    Some((dataset.parse().ok()?, producer.parse().ok()?, attempt.parse().ok()?))
}
