//! Timelines: a Gantt chart of one simulated run, built only from its trace.
//!
//! [`build`] turns a trace into a [`Timeline`]: one lane per TaskManager slot, one bar per task
//! attempt (from its deployment to its end), and markers for what happened around the tasks
//! (failures, restarts and recoveries, faults, commits, the job's end). [`Timeline::to_svg`]
//! draws it as a standalone SVG document for a browser; [`Timeline::to_text`] draws a
//! fixed-width text form for snapshots and terminals.
//!
//! A timeline is a pure function of the trace, so it is as deterministic as the trace: ordered
//! maps only, and every name or detail taken from the trace is escaped before it reaches SVG.
//! Adding a marker kind (checkpoints, say) means one [`MarkerKind`] variant, one arm in
//! `marker_of` and one `MarkerStyle` in `MarkerKind::style`; both renderings follow the style.

use std::time::Duration;

use crate::trace::TraceRecord;

use build::Builder;

/// A Gantt chart of one run; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    title: String,
    end: Duration,
    vertices: Vec<String>,
    lanes: Vec<Lane>,
    bars: Vec<Bar>,
    markers: Vec<Marker>,
}

/// One TaskManager slot. Subtasks sharing the slot at the same time get sub-rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lane {
    /// The slot, as `tm-N/sM`.
    pub name: String,
    /// Sub-rows needed so that no two bars of the lane overlap (at least one).
    pub rows: usize,
}

/// How a task attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// It reported that it finished.
    Finished,
    /// It reported a failure.
    Failed,
    /// The job restarted (or was recovered, or failed) before the task reported anything.
    Cancelled,
    /// The trace ended first.
    Unfinished,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Finished => "finished",
            Outcome::Failed => "failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Unfinished => "unfinished",
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
    /// The job finished.
    JobFinished,
    /// The job failed for good.
    JobFailed,
}

/// Where a marker is drawn in the SVG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Placement {
    /// A cross on the bar of the task it concerns.
    OnBar,
    /// A vertical line across every lane, labelled in the band above them.
    AcrossLanes {
        /// The line's `stroke-dasharray`, if not solid.
        dash: Option<&'static str>,
    },
    /// A tick in the commits row.
    CommitsRow,
}

/// The row of the text form a marker's character goes in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TextRow {
    /// The sub-row of the bar it concerns.
    Bar,
    /// Every row.
    All,
    /// The faults row.
    Faults,
    /// The commits row.
    Commits,
}

/// A marker's character in the text form. Higher layers overwrite lower ones in a column, so
/// that a failure is not hidden by the restart it causes in the same column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TextGlyph {
    character: char,
    row: TextRow,
    layer: u8,
}

/// How one kind of marker is drawn, in both forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MarkerStyle {
    /// What it means, for legends.
    meaning: &'static str,
    colour: &'static str,
    placement: Placement,
    glyph: Option<TextGlyph>,
}

const FAILURE_RED: &str = "#d62728";

impl MarkerKind {
    fn style(&self) -> MarkerStyle {
        let glyph = |character, row, layer| Some(TextGlyph { character, row, layer });
        match self {
            MarkerKind::TaskFailed { .. } => MarkerStyle {
                meaning: "task failed",
                colour: FAILURE_RED,
                placement: Placement::OnBar,
                glyph: glyph('x', TextRow::Bar, 3),
            },
            MarkerKind::Restart { .. } => MarkerStyle {
                meaning: "restart",
                colour: "#555555",
                placement: Placement::AcrossLanes { dash: Some("6 4") },
                glyph: glyph('|', TextRow::All, 1),
            },
            MarkerKind::Recovered { .. } => MarkerStyle {
                meaning: "recovered by a new JobMaster",
                colour: "#7b4ea3",
                placement: Placement::AcrossLanes { dash: Some("6 4") },
                glyph: glyph(':', TextRow::All, 1),
            },
            MarkerKind::Fault { .. } => MarkerStyle {
                meaning: "fault injected",
                colour: FAILURE_RED,
                placement: Placement::AcrossLanes { dash: None },
                glyph: glyph('!', TextRow::Faults, 3),
            },
            MarkerKind::Healed { .. } => MarkerStyle {
                meaning: "fault healed",
                colour: "#2ca02c",
                placement: Placement::AcrossLanes { dash: Some("2 3") },
                glyph: glyph('+', TextRow::Faults, 2),
            },
            MarkerKind::Commit { .. } => MarkerStyle {
                meaning: "commit",
                colour: "#3b3b98",
                placement: Placement::CommitsRow,
                glyph: glyph('c', TextRow::Commits, 2),
            },
            MarkerKind::CheckpointCompleted { .. } => MarkerStyle {
                meaning: "checkpoint completed",
                colour: "#17becf",
                placement: Placement::CommitsRow,
                glyph: glyph('k', TextRow::Commits, 3),
            },
            MarkerKind::CheckpointAborted { .. } => MarkerStyle {
                meaning: "checkpoint aborted",
                colour: "#ff7f0e",
                placement: Placement::CommitsRow,
                glyph: glyph('a', TextRow::Commits, 3),
            },
            MarkerKind::JobFinished => MarkerStyle {
                meaning: "job finished",
                colour: "#111111",
                placement: Placement::AcrossLanes { dash: None },
                glyph: None,
            },
            MarkerKind::JobFailed => MarkerStyle {
                meaning: "job failed",
                colour: FAILURE_RED,
                placement: Placement::AcrossLanes { dash: Some("6 4") },
                glyph: None,
            },
        }
    }

    /// The short label written next to the marker in the SVG.
    fn label(&self) -> String {
        match self {
            MarkerKind::TaskFailed { reason, .. } => reason.clone(),
            MarkerKind::Restart { attempt } => format!("restart a{attempt}"),
            MarkerKind::Recovered { attempt } => format!("recovered a{attempt}"),
            MarkerKind::Fault { detail } => detail.clone(),
            MarkerKind::Healed { detail } => format!("healed: {detail}"),
            MarkerKind::Commit { txn_id, rows } => format!("{txn_id} ({rows} rows)"),
            MarkerKind::CheckpointCompleted { checkpoint, is_final: false } => format!("checkpoint {checkpoint}"),
            MarkerKind::CheckpointCompleted { checkpoint, is_final: true } => format!("final checkpoint {checkpoint}"),
            MarkerKind::CheckpointAborted { checkpoint, reason } => {
                format!("checkpoint {checkpoint} aborted: {reason}")
            }
            MarkerKind::JobFinished => "job finished".to_string(),
            MarkerKind::JobFailed => "job failed".to_string(),
        }
    }
}

/// Builds the timeline of a trace; see the module doc.
pub fn build(records: &[TraceRecord]) -> Timeline {
    let mut builder = Builder::default();
    for (index, record) in records.iter().enumerate() {
        builder.observe(index, record);
    }
    let end = records.iter().map(|record| record.time).max().unwrap_or_default();
    builder.finish(end)
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

/// Simulated time as seconds with millisecond precision, e.g. `1.234s`.
fn seconds(time: Duration) -> String {
    format!("{:.3}s", time.as_secs_f64())
}

mod build;
mod svg;
mod text;

#[cfg(test)]
mod tests;
