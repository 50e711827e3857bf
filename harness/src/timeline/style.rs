//! How each kind of marker is drawn: one [`MarkerStyle`] per [`MarkerKind`], followed by both
//! renderings, and the short label the SVG writes beside a marker.

use super::MarkerKind;

/// Where a marker is drawn in the SVG.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Placement {
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
pub(super) enum TextRow {
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
pub(super) struct TextGlyph {
    pub(super) character: char,
    pub(super) row: TextRow,
    pub(super) layer: u8,
}

/// How one kind of marker is drawn, in both forms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct MarkerStyle {
    /// What it means, for legends.
    pub(super) meaning: &'static str,
    pub(super) colour: &'static str,
    pub(super) placement: Placement,
    pub(super) glyph: Option<TextGlyph>,
}

pub(super) const FAILURE_RED: &str = "#d62728";

const SOLID: Placement = Placement::AcrossLanes { dash: None };
const DASHED: Placement = Placement::AcrossLanes { dash: Some("6 4") };
const DOTTED: Placement = Placement::AcrossLanes { dash: Some("2 3") };
const SPARSE: Placement = Placement::AcrossLanes { dash: Some("1 3") };

/// One row of the style table below.
fn marker(meaning: &'static str, colour: &'static str, placement: Placement, glyph: Option<TextGlyph>) -> MarkerStyle {
    MarkerStyle { meaning, colour, placement, glyph }
}

impl MarkerKind {
    pub(super) fn style(&self) -> MarkerStyle {
        let glyph = |character, row, layer| Some(TextGlyph { character, row, layer });
        match self {
            MarkerKind::TaskFailed { .. } => {
                marker("task failed", FAILURE_RED, Placement::OnBar, glyph('x', TextRow::Bar, 3))
            }
            MarkerKind::Restart { .. } => marker("restart", "#555555", DASHED, glyph('|', TextRow::All, 1)),
            MarkerKind::Recovered { .. } => {
                marker("recovered by a new JobMaster", "#7b4ea3", DASHED, glyph(':', TextRow::All, 1))
            }
            MarkerKind::Fault { .. } => marker("fault injected", FAILURE_RED, SOLID, glyph('!', TextRow::Faults, 3)),
            MarkerKind::Healed { .. } => marker("fault healed", "#2ca02c", DOTTED, glyph('+', TextRow::Faults, 2)),
            MarkerKind::Commit { .. } => {
                marker("commit", "#3b3b98", Placement::CommitsRow, glyph('c', TextRow::Commits, 2))
            }
            MarkerKind::CheckpointCompleted { .. } => {
                marker("checkpoint completed", "#17becf", Placement::CommitsRow, glyph('k', TextRow::Commits, 3))
            }
            MarkerKind::CheckpointAborted { .. } => {
                marker("checkpoint aborted", "#ff7f0e", Placement::CommitsRow, glyph('a', TextRow::Commits, 3))
            }
            MarkerKind::Submitted => marker("job submitted (time zero)", "#111111", SPARSE, None),
            MarkerKind::WorkReconciled { .. } => {
                marker("finished work kept or re-run by a new JobMaster", "#7b4ea3", DOTTED, None)
            }
            MarkerKind::JobFinished => marker("job finished", "#111111", SOLID, None),
            MarkerKind::JobFailed => marker("job failed", FAILURE_RED, DASHED, None),
        }
    }

    /// The short label written next to the marker in the SVG.
    pub(super) fn label(&self) -> String {
        match self {
            MarkerKind::TaskFailed { reason, .. } => reason.clone(),
            MarkerKind::Restart { attempt } => format!("restart a{attempt}"),
            MarkerKind::Recovered { attempt } => format!("recovered a{attempt}"),
            MarkerKind::Fault { detail } => detail.clone(),
            MarkerKind::Healed { detail } => format!("healed: {detail}"),
            MarkerKind::Commit { txn_id, rows } => format!("{txn_id} ({})", crate::words::counted(*rows, "row")),
            MarkerKind::CheckpointCompleted { checkpoint, is_final: false } => format!("checkpoint {checkpoint}"),
            MarkerKind::CheckpointCompleted { checkpoint, is_final: true } => format!("final checkpoint {checkpoint}"),
            MarkerKind::CheckpointAborted { checkpoint, reason } => {
                format!("checkpoint {checkpoint} aborted: {reason}")
            }
            MarkerKind::Submitted => "submitted".to_string(),
            MarkerKind::WorkReconciled { kept, rerun } => format!("keeps {kept} finished, re-runs {rerun}"),
            MarkerKind::JobFinished => "job finished".to_string(),
            MarkerKind::JobFailed => "job failed".to_string(),
        }
    }
}
