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

impl MarkerKind {
    pub(super) fn style(&self) -> MarkerStyle {
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
            MarkerKind::Submitted => MarkerStyle {
                meaning: "job submitted (time zero)",
                colour: "#111111",
                placement: Placement::AcrossLanes { dash: Some("1 3") },
                glyph: None,
            },
            MarkerKind::WorkReconciled { .. } => MarkerStyle {
                meaning: "finished work kept or re-run by a new JobMaster",
                colour: "#7b4ea3",
                placement: Placement::AcrossLanes { dash: Some("2 3") },
                glyph: None,
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
