//! Timelines: a Gantt chart of one simulated run, built only from its trace.
//!
//! [`try_build`] turns a trace into a [`Timeline`]: one lane per TaskManager slot, one bar per
//! task attempt (from its deployment to its end), the time each killed TaskManager was down,
//! and markers for what happened around the tasks (failures, restarts and recoveries, faults,
//! commits, the job's end). [`Timeline::to_svg`] draws it as a standalone SVG document for a
//! browser; [`Timeline::to_text`] draws a fixed-width text form for snapshots and terminals.
//!
//! Both draw time from the job's submission, as the harness recorded it
//! (`SubmissionAcknowledged`): that is where a scenario's `at:` fault times count from, so a fault
//! `at: 150ms` is drawn at 0.150 s. What happened before it (the cluster starting, the first
//! deployments) is drawn at negative times. A trace without that record counts from the
//! JobMaster's `JobSubmitted`, or else from its own start; the header and the axis say which.
//!
//! The pictures must not mislead, so a bar ends where the task really stopped, as far as the
//! trace can tell: when it reported, when the JobMaster cancelled its attempt, when its
//! TaskManager lost the JobMaster and cancelled it, or when its TaskManager was killed (the
//! JobMaster notices only later; nothing runs on a dead TaskManager). A finished task whose
//! subtask ran again later is drawn as work thrown away; one that a restarted JobMaster kept
//! (its partitions survived) is drawn as kept.
//!
//! A timeline is a pure function of the trace, so it is as deterministic as the trace: ordered
//! maps only, and every name or detail taken from the trace is escaped before it reaches SVG.
//! Adding a marker kind (checkpoints, say) means one [`MarkerKind`] variant, one arm in
//! `marker_of` and one `MarkerStyle` in `MarkerKind::style`; both renderings follow the style.
//!
//! # Limits
//!
//! A trace file is input, so a timeline never allocates in proportion to a number it finds in
//! one, and any trace gives a timeline or an error, never a panic or a hang. Times must not go
//! backwards. A timeline draws at most [`MAX_VERTICES`] job vertices (vertex indices below it),
//! [`MAX_LANES`] slots and [`MAX_ROWS`] rows of bars over all lanes (a lane has one row per task
//! it runs at once); a trace beyond them is an error naming its line (the record's position in
//! the trace, which is its line in the trace file) and field. The text form is at most
//! [`MAX_TEXT_WIDTH`] columns wide. Everything else it keeps is proportional to the trace's size.

use std::fmt;
use std::time::Duration;

use crate::trace::TraceRecord;

use build::Builder;
use style::MarkerStyle;

/// The most job vertices a timeline draws: vertex indices must be below it.
pub const MAX_VERTICES: usize = 1024;
/// The most slots (lanes) a timeline draws.
pub const MAX_LANES: usize = 2048;
/// The most rows of bars a timeline draws, over all its lanes.
pub const MAX_ROWS: usize = 4096;
/// The widest text form, in columns: a wider request is narrowed to it.
pub const MAX_TEXT_WIDTH: usize = 2000;

/// A Gantt chart of one run; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    title: String,
    origin: Origin,
    end: Duration,
    vertices: Vec<String>,
    lanes: Vec<Lane>,
    bars: Vec<Bar>,
    downtimes: Vec<Downtime>,
    markers: Vec<Marker>,
}

/// The time a timeline draws as zero, and what it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    /// Its time in the trace.
    pub time: Duration,
    /// What happened then.
    pub basis: OriginBasis,
}

/// What a timeline's time zero is; see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OriginBasis {
    /// The client's submission was acknowledged: fault times count from here.
    Submission,
    /// The JobMaster recorded the job's submission (a trace without the acknowledgement).
    JobSubmitted,
    /// The trace's own start (a trace without either).
    TraceStart,
}

impl OriginBasis {
    /// For headers: `0 = …`.
    fn meaning(self) -> &'static str {
        match self {
            OriginBasis::Submission => "the job's submission",
            OriginBasis::JobSubmitted => "the JobMaster's job_submitted",
            OriginBasis::TraceStart => "the start of the trace",
        }
    }

    /// For the time axis, short enough for the lane label column.
    fn caption(self) -> &'static str {
        match self {
            OriginBasis::Submission | OriginBasis::JobSubmitted => "from submission",
            OriginBasis::TraceStart => "from trace start",
        }
    }
}

/// One TaskManager slot. Subtasks sharing the slot at the same time get sub-rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The slot, as `tm-N/sM`.
    pub name: String,
    /// Sub-rows needed so that no two bars of the lane overlap (at least one).
    pub rows: usize,
}

impl Lane {
    /// The TaskManager the slot belongs to: `tm-N` of `tm-N/sM`.
    pub fn task_manager(&self) -> &str {
        task_manager_of(&self.name)
    }
}

/// The TaskManager of a slot name, `tm-N` of `tm-N/sM`.
fn task_manager_of(slot: &str) -> &str {
    slot.split('/').next().unwrap_or_default()
}

/// A time a TaskManager was down: from the fault that killed it until it restarted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Downtime {
    /// The TaskManager, `tm-N`.
    pub task_manager: String,
    /// When it was killed.
    pub from: Duration,
    /// When it restarted; `None` if it never did within the trace.
    pub until: Option<Duration>,
}

/// How a task attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It reported that it finished.
    Finished,
    /// It reported a failure.
    Failed,
    /// The job restarted or failed, or its TaskManager lost the JobMaster, before the task
    /// reported anything.
    Cancelled,
    /// Its TaskManager was killed while it ran (or before it could start).
    Killed,
    /// The trace ended first.
    Unfinished,
}

impl Outcome {
    /// Every outcome, in legend order.
    const ALL: [Outcome; 5] =
        [Outcome::Finished, Outcome::Failed, Outcome::Cancelled, Outcome::Killed, Outcome::Unfinished];

    fn name(self) -> &'static str {
        match self {
            Outcome::Finished => "finished",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Killed => "killed with its TaskManager",
            Outcome::Unfinished => "unfinished",
        }
    }
}

/// What became of a finished task attempt's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Nothing later said otherwise (and every attempt that did not finish).
    Stands,
    /// A restarted JobMaster kept it: its partitions survived, so it did not run again.
    Kept,
    /// Its subtask ran again later: this work was thrown away.
    Rerun,
}

impl Fate {
    fn name(self) -> &'static str {
        match self {
            Fate::Stands => "",
            Fate::Kept => "kept by a new JobMaster",
            Fate::Rerun => "finished, then run again",
        }
    }
}

/// One task attempt in one slot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bar {
    /// Index into [`Timeline::lanes`].
    pub lane: usize,
    /// Sub-row within the lane.
    pub row: usize,
    /// Job attempt.
    pub attempt: u32,
    /// Job vertex.
    pub vertex: u32,
    /// Subtask.
    pub subtask: u32,
    /// When it was deployed.
    pub start: Duration,
    /// When it ended (see [`Outcome`]).
    pub end: Duration,
    /// How it ended.
    pub outcome: Outcome,
    /// What became of its work, if it finished.
    pub fate: Fate,
}

impl Bar {
    /// `v{vertex}[{subtask}] a{attempt}`.
    pub fn label(&self) -> String {
        format!("v{}[{}] a{}", self.vertex, self.subtask, self.attempt)
    }
}

/// Something that happened at one instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    /// When.
    pub time: Duration,
    /// What.
    pub kind: MarkerKind,
    /// The trace event as text, for tooltips and the text form's event list.
    pub description: String,
}

/// The kinds of markers; each has one style (`MarkerKind::style`) that both renderings follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkerKind {
    /// A task failed; drawn on its bar (if its deployment is in the trace).
    TaskFailed {
        /// Index into [`Timeline::bars`].
        bar: Option<usize>,
        /// Why.
        reason: String,
    },
    /// The job restarts as a new attempt.
    Restart {
        /// The new attempt.
        attempt: u32,
    },
    /// A new JobMaster recovered the job and runs it as a new attempt.
    Recovered {
        /// The new attempt.
        attempt: u32,
    },
    /// The harness injected a fault.
    Fault {
        /// What exactly.
        detail: String,
    },
    /// A fault's effect ended.
    Healed {
        /// What exactly.
        detail: String,
    },
    /// The transactional store committed a transaction.
    Commit {
        /// The transaction.
        txn_id: String,
        /// Rows it made visible.
        rows: u64,
    },
    /// A checkpoint completed (recorded durably, tasks told).
    CheckpointCompleted {
        /// The checkpoint.
        checkpoint: u64,
        /// The final checkpoint of a bounded job.
        is_final: bool,
    },
    /// A checkpoint was aborted: it is never committed against.
    CheckpointAborted {
        /// The checkpoint.
        checkpoint: u64,
        /// Why.
        reason: String,
    },
    /// The job's submission was acknowledged: time zero of the timeline.
    Submitted,
    /// A restarted JobMaster decided which finished work to keep and which to run again.
    WorkReconciled {
        /// Finished subtasks kept.
        kept: usize,
        /// Finished subtasks that run again.
        rerun: usize,
    },
    /// The job finished.
    JobFinished,
    /// The job failed for good.
    JobFailed,
}

/// Why a timeline cannot be drawn: the line of the trace (the record's position in it, which is
/// its line in a trace file), the field, and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineError {
    /// The record's line, from 1.
    pub line: usize,
    /// The field at fault, as the JSON trace names it.
    pub field: &'static str,
    /// What is wrong.
    pub problem: String,
}

impl fmt::Display for TimelineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: `{}` {}", self.line, self.field, self.problem)
    }
}

impl std::error::Error for TimelineError {}

/// Builds the timeline of a trace, or says why it cannot; see the module doc.
pub fn try_build(records: &[TraceRecord]) -> Result<Timeline, TimelineError> {
    let mut builder = Builder::default();
    for (index, record) in records.iter().enumerate() {
        builder.observe(index, record)?;
    }
    let end = records.last().map(|record| record.time).unwrap_or_default();
    builder.finish(end)
}

/// Builds the timeline of a run's trace. A trace beyond the limits (see the module doc) gives a
/// timeline with nothing on it but the error in its title, never a panic; a trace read from a
/// file should go through [`try_build`], so that the error can be reported as one.
pub fn build(records: &[TraceRecord]) -> Timeline {
    try_build(records).unwrap_or_else(|error| Timeline {
        title: format!("cannot draw this trace: {error}"),
        origin: Origin { time: Duration::ZERO, basis: OriginBasis::TraceStart },
        end: Duration::ZERO,
        vertices: Vec::new(),
        lanes: Vec::new(),
        bars: Vec::new(),
        downtimes: Vec::new(),
        markers: Vec::new(),
    })
}

impl Timeline {
    /// `job_id (mode)` from the job's submission, or `timeline`.
    pub fn title(&self) -> &str {
        &self.title
    }

    /// The time of the trace's last record.
    pub fn end(&self) -> Duration {
        self.end
    }

    /// The time drawn as zero; see the module doc. Bars, markers and downtimes keep the trace's
    /// own times; only the renderings count from the origin.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// A time of the trace as drawn: seconds from the origin with millisecond precision, e.g.
    /// `1.234s` or `-0.010s`.
    fn seconds(&self, time: Duration) -> String {
        let (sign, magnitude) = match time.checked_sub(self.origin.time) {
            Some(after) => ("", after),
            None => ("-", self.origin.time - time),
        };
        format!("{sign}{:.3}s", magnitude.as_secs_f64())
    }

    /// The job's vertex names, by vertex index.
    pub fn vertices(&self) -> &[String] {
        &self.vertices
    }

    /// The lanes, by TaskManager then slot, in natural order.
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// The bars, in deployment order.
    pub fn bars(&self) -> &[Bar] {
        &self.bars
    }

    /// The times killed TaskManagers with lanes were down, in the order they were killed.
    pub fn downtimes(&self) -> &[Downtime] {
        &self.downtimes
    }

    /// The lanes of a TaskManager, as indices into [`Timeline::lanes`].
    fn lanes_of<'a>(&'a self, task_manager: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.lanes
            .iter()
            .enumerate()
            .filter(move |(_, lane)| lane.task_manager() == task_manager)
            .map(|(index, _)| index)
    }

    /// The markers, in trace order.
    pub fn markers(&self) -> &[Marker] {
        &self.markers
    }

    /// The styles of the marker kinds present, in order of first appearance.
    fn marker_styles(&self) -> Vec<MarkerStyle> {
        let mut styles: Vec<MarkerStyle> = Vec::new();
        for marker in &self.markers {
            let style = marker.kind.style();
            if !styles.iter().any(|known| known.meaning == style.meaning) {
                styles.push(style);
            }
        }
        styles
    }

    fn vertex_name(&self, vertex: usize) -> &str {
        self.vertices.get(vertex).map_or("(unnamed vertex)", String::as_str)
    }

    fn vertex_count(&self) -> usize {
        let deployed = self.bars.iter().map(|bar| bar.vertex as usize + 1).max().unwrap_or(0);
        deployed.max(self.vertices.len())
    }
}

mod build;
mod style;
mod svg;
mod text;

#[cfg(test)]
mod tests;
