//! Building a [`Timeline`] from a trace: bars from deployments to their ends, lanes, markers.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use sluice_engine::runtime::trace::{TraceEvent, parse_subtask};

use super::{Bar, Lane, Marker, MarkerKind, Outcome, Timeline};
use crate::trace::TraceRecord;

/// A bar whose end may not be known yet.
struct PendingBar {
    /// The index of its deployment in the trace.
    record: usize,
    slot: String,
    attempt: u32,
    vertex: u32,
    subtask: u32,
    start: Duration,
    end: Option<(Duration, Outcome)>,
}

/// A restart or recovery (which cancels the tasks of older attempts) or a job failure (which
/// cancels all).
struct Interruption {
    /// Its index in the trace.
    record: usize,
    time: Duration,
    /// It cancels the tasks of attempts below this.
    cancels_before: u32,
}

/// What `build` has seen so far.
#[derive(Default)]
pub(super) struct Builder {
    title: Option<String>,
    vertices: Vec<String>,
    slots: BTreeSet<String>,
    bars: Vec<PendingBar>,
    /// Bars deployed and not yet finished or failed, by (attempt, vertex, subtask).
    open: BTreeMap<(u32, u32, u32), usize>,
    interruptions: Vec<Interruption>,
    markers: Vec<Marker>,
}

impl Builder {
    pub(super) fn observe(&mut self, index: usize, record: &TraceRecord) {
        let mut closed = None;
        match &record.event {
            TraceEvent::TaskManagerRegistered { name, slots, .. } => {
                self.slots.extend((0..*slots).map(|slot| format!("{name}/s{slot}")));
            }
            TraceEvent::JobSubmitted { job_id, mode, vertices } => {
                self.title.get_or_insert_with(|| format!("{job_id} ({mode})"));
                if self.vertices.is_empty() {
                    self.vertices = vertices.clone();
                }
            }
            TraceEvent::TaskDeployed { attempt, vertex, subtask, slot } => {
                self.slots.insert(slot.clone());
                self.open.insert((*attempt, *vertex, *subtask), self.bars.len());
                self.bars.push(PendingBar {
                    record: index,
                    slot: slot.clone(),
                    attempt: *attempt,
                    vertex: *vertex,
                    subtask: *subtask,
                    start: record.time,
                    end: None,
                });
            }
            TraceEvent::TaskFinished { attempt, vertex, subtask, .. } => {
                self.close((*attempt, *vertex, *subtask), record.time, Outcome::Finished);
            }
            TraceEvent::TaskFailed { attempt, vertex, subtask, .. } => {
                closed = self.close((*attempt, *vertex, *subtask), record.time, Outcome::Failed);
            }
            TraceEvent::JobRestarting { attempt, .. } => {
                self.interruptions.push(Interruption { record: index, time: record.time, cancels_before: *attempt });
            }
            TraceEvent::RegionsRestarting { attempt, subtasks, .. } => {
                for (vertex, subtask) in subtasks.iter().filter_map(|text| parse_subtask(text)) {
                    let open: Vec<(u32, u32, u32)> = self
                        .open
                        .keys()
                        .filter(|key| key.0 < *attempt && key.1 == vertex && key.2 == subtask)
                        .copied()
                        .collect();
                    for key in open {
                        self.close(key, record.time, Outcome::Cancelled);
                    }
                }
            }
            // A recovery by a new JobMaster starts a new attempt without a `JobRestarting`.
            TraceEvent::JobRecovered { attempt, .. } => {
                self.interruptions.push(Interruption { record: index, time: record.time, cancels_before: *attempt });
            }
            TraceEvent::JobFailed { .. } => {
                self.interruptions.push(Interruption { record: index, time: record.time, cancels_before: u32::MAX });
            }
            _ => {}
        }
        if let Some(kind) = marker_of(&record.event, closed) {
            self.markers.push(Marker { time: record.time, kind, description: record.event.to_string() });
        }
    }

    /// Ends the open bar of a task, if its deployment was seen; returns the bar.
    fn close(&mut self, task: (u32, u32, u32), time: Duration, outcome: Outcome) -> Option<usize> {
        let bar = self.open.remove(&task)?;
        self.bars[bar].end = Some((time, outcome));
        Some(bar)
    }

    /// Where a bar that never reported ends: the first later interruption that cancels its
    /// attempt, else the end of the trace.
    fn implicit_end(&self, bar: &PendingBar, end: Duration) -> (Duration, Outcome) {
        self.interruptions
            .iter()
            .find(|interruption| interruption.record > bar.record && interruption.cancels_before > bar.attempt)
            .map_or((end, Outcome::Unfinished), |interruption| (interruption.time, Outcome::Cancelled))
    }

    pub(super) fn finish(self, end: Duration) -> Timeline {
        let mut names: Vec<String> = self.slots.iter().cloned().collect();
        names.sort_by_key(|name| natural_key(name));
        let lane_of: BTreeMap<&str, usize> =
            names.iter().enumerate().map(|(index, name)| (name.as_str(), index)).collect();
        let mut bars: Vec<Bar> = self
            .bars
            .iter()
            .map(|pending| {
                let (bar_end, outcome) = pending.end.unwrap_or_else(|| self.implicit_end(pending, end));
                Bar {
                    lane: lane_of[pending.slot.as_str()],
                    row: 0,
                    attempt: pending.attempt,
                    vertex: pending.vertex,
                    subtask: pending.subtask,
                    start: pending.start,
                    end: bar_end,
                    outcome,
                }
            })
            .collect();
        let rows = assign_rows(&mut bars, names.len());
        let lanes = names.into_iter().zip(rows).map(|(name, rows)| Lane { name, rows }).collect();
        Timeline {
            title: self.title.unwrap_or_else(|| "timeline".to_string()),
            end,
            vertices: self.vertices,
            lanes,
            bars,
            markers: self.markers,
        }
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

/// Stacks the bars of each lane: a bar takes the lowest sub-row that is free when it starts.
/// Bars come in deployment order, so their starts never decrease. Returns the rows per lane.
fn assign_rows(bars: &mut [Bar], lanes: usize) -> Vec<usize> {
    let mut row_ends: Vec<Vec<Duration>> = vec![Vec::new(); lanes];
    for bar in bars.iter_mut() {
        let ends = &mut row_ends[bar.lane];
        bar.row = ends.iter().position(|row_end| *row_end <= bar.start).unwrap_or(ends.len());
        if bar.row == ends.len() {
            ends.push(bar.end);
        } else {
            ends[bar.row] = bar.end;
        }
    }
    row_ends.iter().map(|ends| ends.len().max(1)).collect()
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
