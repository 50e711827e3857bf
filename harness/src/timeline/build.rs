//! Building a [`Timeline`] from a trace: bars from deployments to their ends, lanes, the times
//! killed TaskManagers were down, and markers.
//!
//! A bar ends at the first of these the trace shows:
//!
//! - the task reported that it finished or failed;
//! - its TaskManager was killed: nothing runs on a dead TaskManager (a finish report already on
//!   its way still counts, as finished by then), and a task deployed to it while it is down
//!   never starts;
//! - the JobMaster cancelled it: a region restart naming its subtask, or a restart or a job
//!   failure cancelling its attempt;
//! - its TaskManager lost the JobMaster and cancelled its tasks: after a JobMaster crash, tasks
//!   run on until their TaskManager notices, even past the new JobMaster's recovery;
//! - the recovery by a new JobMaster, if its TaskManager never said;
//! - the end of the trace.
//!
//! Every step looks up what it needs in ordered maps or removes what it touches, so building
//! costs about `n log n` in the size of the trace, whatever the trace holds.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::time::Duration;

use sluice_engine::trace::{TraceEvent, parse_subtask};

use super::{
    Bar, Downtime, Fate, Lane, MAX_LANES, MAX_ROWS, MAX_VERTICES, Marker, MarkerKind, Origin, OriginBasis, Outcome,
    Timeline, TimelineError, task_manager_of,
};
use crate::faults::model::killed_node;
use crate::trace::TraceRecord;

/// A task attempt as (vertex, subtask, attempt), so that the attempts of a subtask are adjacent.
type TaskKey = (u32, u32, u32);

/// A bar whose end may not be known yet.
struct PendingBar {
    /// The index of its deployment in the trace.
    record: usize,
    slot: String,
    task: TaskKey,
    start: Duration,
    /// How it ended, once the trace said so.
    end: Option<(Duration, Outcome)>,
    /// Where it ends if the trace says nothing more precise.
    presumed_end: Option<(Duration, Presumption)>,
    /// A restarted JobMaster kept its work.
    kept: bool,
}

impl PendingBar {
    fn task_manager(&self) -> &str {
        task_manager_of(&self.slot)
    }
}

/// Why a bar that never reported is presumed to have ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Presumption {
    /// The JobMaster restarted or failed the job, cancelling the attempt.
    Cancelled,
    /// A new JobMaster took over: the task ran on until its TaskManager noticed, if it said so.
    Orphaned,
}

/// What `build` has seen so far.
#[derive(Default)]
pub(super) struct Builder {
    title: Option<String>,
    vertices: Vec<String>,
    slots: BTreeSet<String>,
    /// The most slots each TaskManager registered with.
    registered_slots: BTreeMap<String, u32>,
    bars: Vec<PendingBar>,
    /// The latest bar of every task attempt, ended or not.
    bar_of: BTreeMap<TaskKey, usize>,
    /// Bars without an end, by task attempt.
    running: BTreeMap<TaskKey, usize>,
    /// Bars without an end, by TaskManager.
    running_on: BTreeMap<String, BTreeSet<usize>>,
    /// Bars with neither an end nor a presumed one, as (attempt, bar): a restart presumes the
    /// end of those whose attempt it cancels.
    uninterrupted: BTreeSet<(u32, usize)>,
    /// Killed TaskManagers not restarted yet, with the index of their downtime.
    down: BTreeMap<String, usize>,
    /// The downtime each kill opened, by the fault's index in the schedule, until it heals.
    down_by_fault: BTreeMap<usize, usize>,
    downtimes: Vec<Downtime>,
    markers: Vec<Marker>,
    /// The first acknowledged submission, else the first `JobSubmitted`.
    origin: Option<Origin>,
    /// The time of the latest record: times never go back.
    latest: Duration,
}

impl Builder {
    pub(super) fn observe(&mut self, index: usize, record: &TraceRecord) -> Result<(), TimelineError> {
        let error = |field, problem| TimelineError { line: index + 1, field, problem };
        if record.time < self.latest {
            let problem = format!(
                "is {} ns, before the {} ns of the line above: a trace's times never go back",
                record.time.as_nanos(),
                self.latest.as_nanos()
            );
            return Err(error("time_ns", problem));
        }
        let time = record.time;
        self.latest = time;
        let mut closed = None;
        match &record.event {
            TraceEvent::TaskManagerRegistered { name, slots, .. } => {
                self.register(name, *slots).map_err(|problem| error("slots", problem))?;
            }
            TraceEvent::JobSubmitted { job_id, mode, vertices } => {
                self.submitted(job_id, mode, vertices).map_err(|problem| error("vertices", problem))?;
                self.origin.get_or_insert(Origin { time, basis: OriginBasis::JobSubmitted });
            }
            // The first acknowledgement wins over any `JobSubmitted`.
            TraceEvent::SubmissionAcknowledged { .. }
                if self.origin.is_none_or(|origin| origin.basis != OriginBasis::Submission) =>
            {
                self.origin = Some(Origin { time, basis: OriginBasis::Submission });
            }
            TraceEvent::TaskDeployed { attempt, vertex, subtask, slot } => {
                let task = (*vertex, *subtask, *attempt);
                self.deploy(index, time, task, slot).map_err(|(field, problem)| error(field, problem))?;
            }
            TraceEvent::TaskFinished { attempt, vertex, subtask, .. } => {
                self.report((*vertex, *subtask, *attempt), time, Outcome::Finished);
            }
            TraceEvent::TaskFailed { attempt, vertex, subtask, .. } => {
                closed = self.report((*vertex, *subtask, *attempt), time, Outcome::Failed);
            }
            TraceEvent::RegionsRestarting { attempt, subtasks, .. } => self.cancel_subtasks(*attempt, subtasks, time),
            TraceEvent::JobRestarting { attempt, .. } => self.interrupt(Some(*attempt), time, Presumption::Cancelled),
            TraceEvent::JobFailed { .. } => self.interrupt(None, time, Presumption::Cancelled),
            // A recovery by a new JobMaster starts a new attempt without a `JobRestarting`.
            TraceEvent::JobRecovered { attempt, .. } => self.interrupt(Some(*attempt), time, Presumption::Orphaned),
            TraceEvent::FinishedWorkReconciled { attempt, kept, .. } => self.keep(*attempt, kept),
            TraceEvent::JobMasterLost { .. } => self.stop_task_manager(&record.node, time, Outcome::Cancelled),
            TraceEvent::FaultInjected { index: fault, detail, .. } => {
                if let Some(node) = killed_node(detail) {
                    self.kill(*fault, node, time);
                }
            }
            TraceEvent::FaultHealed { index: fault, .. } => self.heal(*fault, time),
            _ => {}
        }
        if let Some(kind) = marker_of(&record.event, closed) {
            self.markers.push(Marker { time, kind, description: record.event.to_string() });
        }
        Ok(())
    }

    /// Adds a lane for a slot not seen yet, unless that makes too many.
    fn add_slot(&mut self, slot: &str) -> Result<(), String> {
        if self.slots.contains(slot) {
            return Ok(());
        }
        if self.slots.len() >= MAX_LANES {
            return Err(format!("`{slot}` is one slot more than the {MAX_LANES} a timeline draws"));
        }
        self.slots.insert(slot.to_string());
        Ok(())
    }

    /// A lane for each slot of a TaskManager. Every slot not known yet is checked against the
    /// limit as it is added, so a huge count fails after at most `2 × MAX_LANES` steps.
    fn register(&mut self, name: &str, slots: u32) -> Result<(), String> {
        let known = self.registered_slots.get(name).copied().unwrap_or(0);
        for slot in known..slots {
            self.add_slot(&format!("{name}/s{slot}")).map_err(|problem| format!("is {slots}: {problem}"))?;
        }
        self.registered_slots.insert(name.to_string(), known.max(slots));
        Ok(())
    }

    fn submitted(&mut self, job_id: &str, mode: &str, vertices: &[String]) -> Result<(), String> {
        if vertices.len() > MAX_VERTICES {
            return Err(format!(
                "names {} job vertices, more than the {MAX_VERTICES} a timeline draws",
                vertices.len()
            ));
        }
        self.title.get_or_insert_with(|| format!("{job_id} ({mode})"));
        if self.vertices.is_empty() {
            self.vertices = vertices.to_vec();
        }
        Ok(())
    }

    fn deploy(
        &mut self,
        index: usize,
        time: Duration,
        task: TaskKey,
        slot: &str,
    ) -> Result<(), (&'static str, String)> {
        if task.0 as usize >= MAX_VERTICES {
            let problem = format!("is {}, but a timeline draws job vertices 0 to {} only", task.0, MAX_VERTICES - 1);
            return Err(("vertex", problem));
        }
        self.add_slot(slot).map_err(|problem| ("slot", problem))?;
        // The same attempt of a subtask deployed again: the first deployment is over.
        if let Some(&earlier) = self.running.get(&task) {
            self.end(earlier, time, Outcome::Cancelled);
        }
        let bar = self.bars.len();
        let task_manager = task_manager_of(slot).to_string();
        self.bars.push(PendingBar {
            record: index,
            slot: slot.to_string(),
            task,
            start: time,
            end: None,
            presumed_end: None,
            kept: false,
        });
        self.bar_of.insert(task, bar);
        self.running.insert(task, bar);
        self.uninterrupted.insert((task.2, bar));
        if self.down.contains_key(&task_manager) {
            // Deployed to a TaskManager that is down: it never starts.
            self.end(bar, time, Outcome::Killed);
        } else {
            self.running_on.entry(task_manager).or_default().insert(bar);
        }
        Ok(())
    }

    /// Ends a bar that has no end yet.
    fn end(&mut self, bar: usize, time: Duration, outcome: Outcome) {
        let pending = &mut self.bars[bar];
        debug_assert!(pending.end.is_none(), "internal: a bar ends once");
        pending.end = Some((time, outcome));
        let task = pending.task;
        if self.running.get(&task) == Some(&bar) {
            self.running.remove(&task);
        }
        if let Some(running) = self.running_on.get_mut(self.bars[bar].task_manager()) {
            running.remove(&bar);
        }
        self.uninterrupted.remove(&(task.2, bar));
    }

    /// A task's report; returns its bar, if its deployment was seen.
    fn report(&mut self, task: TaskKey, time: Duration, outcome: Outcome) -> Option<usize> {
        let bar = *self.bar_of.get(&task)?;
        match self.bars[bar].end {
            None => self.end(bar, time, outcome),
            // Sent before its TaskManager died: it finished, by the kill at the latest.
            Some((killed, Outcome::Killed)) if outcome == Outcome::Finished => {
                self.bars[bar].end = Some((killed, Outcome::Finished));
            }
            Some(_) => {}
        }
        Some(bar)
    }

    /// A region restart cancels the older attempts of the subtasks it names.
    fn cancel_subtasks(&mut self, attempt: u32, subtasks: &[String], time: Duration) {
        for (vertex, subtask) in subtasks.iter().filter_map(|text| parse_subtask(text)) {
            let older: Vec<usize> =
                self.running.range((vertex, subtask, 0)..(vertex, subtask, attempt)).map(|(_, bar)| *bar).collect();
            for bar in older {
                let end = self.bars[bar].presumed_end.map_or(time, |(presumed, _)| presumed);
                self.end(bar, end, Outcome::Cancelled);
            }
        }
    }

    /// A restart, recovery or job failure presumes the end of the bars of the attempts it
    /// cancels (below `attempt`; all of them for `None`) that have not ended.
    fn interrupt(&mut self, attempt: Option<u32>, time: Duration, presumption: Presumption) {
        let interrupted = match attempt {
            Some(attempt) => {
                let newer = self.uninterrupted.split_off(&(attempt, 0));
                std::mem::replace(&mut self.uninterrupted, newer)
            }
            None => std::mem::take(&mut self.uninterrupted),
        };
        for (_, bar) in interrupted {
            self.bars[bar].presumed_end = Some((time, presumption));
        }
    }

    /// Marks the latest finished run before `attempt` of each subtask a new JobMaster kept.
    fn keep(&mut self, attempt: u32, kept: &[String]) {
        for (vertex, subtask) in kept.iter().filter_map(|text| parse_subtask(text)) {
            if let Some((_, &bar)) = self.bar_of.range((vertex, subtask, 0)..(vertex, subtask, attempt)).next_back() {
                self.bars[bar].kept = true;
            }
        }
    }

    /// A TaskManager stopped its tasks (it was killed, or it lost the JobMaster); those the
    /// JobMaster had already cancelled ended then.
    fn stop_task_manager(&mut self, task_manager: &str, time: Duration, outcome: Outcome) {
        let running = self.running_on.remove(task_manager).unwrap_or_default();
        for bar in running {
            let (end, outcome) = match self.bars[bar].presumed_end {
                Some((presumed, Presumption::Cancelled)) => (presumed, Outcome::Cancelled),
                _ => (time, outcome),
            };
            self.end(bar, end, outcome);
        }
    }

    fn kill(&mut self, fault: usize, node: &str, time: Duration) {
        let downtime = self.downtimes.len();
        self.downtimes.push(Downtime { task_manager: node.to_string(), from: time, until: None });
        self.down.insert(node.to_string(), downtime);
        self.down_by_fault.insert(fault, downtime);
        self.stop_task_manager(node, time, Outcome::Killed);
    }

    fn heal(&mut self, fault: usize, time: Duration) {
        let Some(downtime) = self.down_by_fault.remove(&fault) else { return };
        let node = &self.downtimes[downtime].task_manager;
        if self.down.get(node) == Some(&downtime) {
            self.down.remove(node);
        }
        self.downtimes[downtime].until = Some(time);
    }

    pub(super) fn finish(self, end: Duration) -> Result<Timeline, TimelineError> {
        let mut names: Vec<String> = self.slots.iter().cloned().collect();
        names.sort_by_key(|name| natural_key(name));
        let lane_of: BTreeMap<&str, usize> =
            names.iter().enumerate().map(|(index, name)| (name.as_str(), index)).collect();
        let mut bars: Vec<Bar> = self
            .bars
            .iter()
            .zip(self.fates())
            .map(|(pending, fate)| {
                let presumed = pending.presumed_end.map(|(time, _)| (time, Outcome::Cancelled));
                let (bar_end, outcome) = pending.end.or(presumed).unwrap_or((end, Outcome::Unfinished));
                let (vertex, subtask, attempt) = pending.task;
                let lane = lane_of[pending.slot.as_str()];
                Bar { lane, row: 0, attempt, vertex, subtask, start: pending.start, end: bar_end, outcome, fate }
            })
            .collect();
        let rows = assign_rows(&mut bars, names.len()).map_err(|bar| TimelineError {
            line: self.bars[bar].record + 1,
            field: "slot",
            problem: format!(
                "`{}` takes one row of bars more than the {MAX_ROWS} a timeline draws (over all its slots)",
                self.bars[bar].slot
            ),
        })?;
        let task_managers: BTreeSet<&str> = names.iter().map(|name| task_manager_of(name)).collect();
        let downtimes = self
            .downtimes
            .iter()
            .filter(|downtime| task_managers.contains(downtime.task_manager.as_str()))
            .cloned()
            .collect();
        let lanes = names.iter().cloned().zip(rows).map(|(name, rows)| Lane { name, rows }).collect();
        Ok(Timeline {
            title: self.title.unwrap_or_else(|| "timeline".to_string()),
            origin: self.origin.unwrap_or(Origin { time: Duration::ZERO, basis: OriginBasis::TraceStart }),
            end,
            vertices: self.vertices,
            lanes,
            bars,
            downtimes,
            markers: self.markers,
        })
    }

    /// What became of each bar's work: finished work whose subtask was deployed again later was
    /// thrown away, whatever a JobMaster kept before.
    fn fates(&self) -> Vec<Fate> {
        let mut deployed_later: BTreeSet<(u32, u32)> = BTreeSet::new();
        let mut fates = vec![Fate::Stands; self.bars.len()];
        for (index, bar) in self.bars.iter().enumerate().rev() {
            let subtask = (bar.task.0, bar.task.1);
            let finished = matches!(bar.end, Some((_, Outcome::Finished)));
            if finished && deployed_later.contains(&subtask) {
                fates[index] = Fate::Rerun;
            } else if bar.kept {
                fates[index] = Fate::Kept;
            }
            deployed_later.insert(subtask);
        }
        fates
    }
}

/// The marker of an event, if it has one; `closed` is the bar the event ended, if any.
fn marker_of(event: &TraceEvent, closed: Option<usize>) -> Option<MarkerKind> {
    Some(match event {
        TraceEvent::TaskFailed { reason, .. } => MarkerKind::TaskFailed { bar: closed, reason: reason.clone() },
        TraceEvent::JobRestarting { attempt, .. } | TraceEvent::RegionsRestarting { attempt, .. } => {
            MarkerKind::Restart { attempt: *attempt }
        }
        TraceEvent::JobRecovered { attempt, .. } => MarkerKind::Recovered { attempt: *attempt },
        TraceEvent::SubmissionAcknowledged { .. } => MarkerKind::Submitted,
        TraceEvent::FinishedWorkReconciled { kept, rerun, .. } => {
            MarkerKind::WorkReconciled { kept: kept.len(), rerun: rerun.len() }
        }
        TraceEvent::FaultInjected { detail, .. } => MarkerKind::Fault { detail: detail.clone() },
        TraceEvent::FaultHealed { detail, .. } => MarkerKind::Healed { detail: detail.clone() },
        TraceEvent::TransactionCommitted { txn_id, rows, .. } => {
            MarkerKind::Commit { txn_id: txn_id.clone(), rows: *rows }
        }
        TraceEvent::CheckpointCompleted { checkpoint, is_final, .. } => {
            MarkerKind::CheckpointCompleted { checkpoint: *checkpoint, is_final: *is_final }
        }
        TraceEvent::CheckpointAborted { checkpoint, reason, .. } => {
            MarkerKind::CheckpointAborted { checkpoint: *checkpoint, reason: reason.clone() }
        }
        TraceEvent::JobFinished { .. } => MarkerKind::JobFinished,
        TraceEvent::JobFailed { .. } => MarkerKind::JobFailed,
        _ => return None,
    })
}

/// The sub-rows of one lane while bars are stacked.
#[derive(Default)]
struct LaneRows {
    rows: usize,
    /// Rows free since before the bar being placed started.
    free: BTreeSet<usize>,
    /// Rows in use, by when their bar ends (earliest first).
    busy: BinaryHeap<Reverse<(Duration, usize)>>,
}

/// Stacks the bars of each lane: a bar takes the lowest sub-row that is free when it starts.
/// Bars come in deployment order, so their starts never decrease. Returns the rows per lane,
/// or the index of the first bar that would make more than [`MAX_ROWS`] rows in all.
fn assign_rows(bars: &mut [Bar], lanes: usize) -> Result<Vec<usize>, usize> {
    let mut lane_rows: Vec<LaneRows> = (0..lanes).map(|_| LaneRows::default()).collect();
    // Every lane has a row, even an empty one.
    let mut total = lanes;
    for (index, bar) in bars.iter_mut().enumerate() {
        let lane = &mut lane_rows[bar.lane];
        while let Some(Reverse((end, row))) = lane.busy.peek().copied()
            && end <= bar.start
        {
            lane.busy.pop();
            lane.free.insert(row);
        }
        bar.row = match lane.free.pop_first() {
            Some(row) => row,
            None => {
                lane.rows += 1;
                total += usize::from(lane.rows > 1);
                if total > MAX_ROWS {
                    return Err(index);
                }
                lane.rows - 1
            }
        };
        // A bar that ended as it started holds its row for an instant, so that a bar deployed
        // at the same time does not hide it.
        lane.busy.push(Reverse((bar.end.max(bar.start + Duration::from_nanos(1)), bar.row)));
    }
    Ok(lane_rows.iter().map(|lane| lane.rows.max(1)).collect())
}

/// A piece of a name for natural ordering, so that `tm-2` sorts before `tm-10`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum NameChunk {
    /// Digits, compared by value: by length without leading zeros, then lexically.
    Number(usize, String),
    Text(String),
}

pub(super) fn natural_key(name: &str) -> Vec<NameChunk> {
    let mut chunks: Vec<NameChunk> = Vec::new();
    for character in name.chars() {
        match (chunks.last_mut(), character.is_ascii_digit()) {
            (Some(NameChunk::Number(_, digits)), true) => digits.push(character),
            (Some(NameChunk::Text(text)), false) => text.push(character),
            (_, true) => chunks.push(NameChunk::Number(0, character.to_string())),
            (_, false) => chunks.push(NameChunk::Text(character.to_string())),
        }
    }
    for chunk in &mut chunks {
        if let NameChunk::Number(length, digits) = chunk {
            *digits = digits.trim_start_matches('0').to_string();
            *length = digits.len();
        }
    }
    chunks
}
