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

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::ops::RangeInclusive;
use std::time::Duration;

use sluice_engine::runtime::trace::{TraceEvent, parse_subtask};

use crate::trace::TraceRecord;

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
struct Builder {
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
    fn observe(&mut self, index: usize, record: &TraceRecord) {
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

    fn finish(self, end: Duration) -> Timeline {
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
enum NameChunk {
    /// Digits, compared by value: by length without leading zeros, then lexically.
    Number(usize, String),
    Text(String),
}

fn natural_key(name: &str) -> Vec<NameChunk> {
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

// ---------------------------------------------------------------------------------------------
// The text form.

/// Maps times to the columns of the text form: `width` columns covering [0, end].
struct Columns {
    width: usize,
    span: u128,
}

impl Columns {
    fn new(width: usize, end: Duration) -> Columns {
        // An empty trace still gets a (meaningless) scale rather than a division by zero.
        Columns { width: width.max(1), span: end.as_nanos().max(1) }
    }

    fn at(&self, time: Duration) -> usize {
        let column = time.as_nanos() * self.width as u128 / self.span;
        (column as usize).min(self.width - 1)
    }

    /// The columns an interval overlaps; a short interval still gets its start's column.
    fn covering(&self, start: Duration, end: Duration) -> RangeInclusive<usize> {
        let first = self.at(start);
        let last = (end.as_nanos() * self.width as u128).div_ceil(self.span) as usize;
        first..=last.saturating_sub(1).clamp(first, self.width - 1)
    }
}

/// The character of a vertex in the text form: `0`–`9`, then `A`–`Z`, then `*`.
fn vertex_character(vertex: u32) -> char {
    char::from_digit(vertex, 36).map_or('*', |character| character.to_ascii_uppercase())
}

impl Timeline {
    /// A fixed-width text form: a header, a faults row, a commits row, one row per lane
    /// sub-row with `width` columns covering [0, end], then a legend and the events with their
    /// times. In a row a column shows the vertex of the bar covering it (`0`–`9`, `A`–`Z`) or
    /// `.` when idle; `x` marks a failure, `|` a restart and `:` a recovery by a new JobMaster
    /// (in every row), `!` a fault and `+` its healing (faults row), `c` a commit (commits row).
    pub fn to_text(&self, width: usize) -> String {
        let columns = Columns::new(width, self.end);
        let mut grid = TextGrid::new(self, &columns);
        for bar in &self.bars {
            let row = grid.lane_rows[bar.lane] + bar.row;
            for column in columns.covering(bar.start, bar.end) {
                grid.cells[row][column] = vertex_character(bar.vertex);
            }
        }
        self.draw_text_markers(&mut grid, &columns);
        let mut text = format!(
            "{}: 0s .. {}, {} columns of {:.3}ms\n",
            self.title,
            seconds(self.end),
            columns.width,
            self.end.as_secs_f64() * 1000.0 / columns.width as f64
        );
        let label_width = grid.labels.iter().map(String::len).max().unwrap_or(0);
        for (label, cells) in grid.labels.iter().zip(&grid.cells) {
            let row: String = cells.iter().collect();
            text.push_str(format!("{label:<label_width$}  {row}").trim_end());
            text.push('\n');
        }
        text.push_str(&self.text_legend());
        text
    }

    fn draw_text_markers(&self, grid: &mut TextGrid, columns: &Columns) {
        let mut glyphs: Vec<(TextGlyph, &Marker)> =
            self.markers.iter().filter_map(|marker| Some((marker.kind.style().glyph?, marker))).collect();
        // Stable: within a layer, later markers overwrite earlier ones.
        glyphs.sort_by_key(|(glyph, _)| glyph.layer);
        for (glyph, marker) in glyphs {
            let column = columns.at(marker.time);
            let rows = match (glyph.row, &marker.kind) {
                (TextRow::All, _) => 0..grid.cells.len(),
                (TextRow::Faults, _) => 0..1,
                (TextRow::Commits, _) => 1..2,
                (TextRow::Bar, MarkerKind::TaskFailed { bar: Some(bar), .. }) => {
                    let row = grid.lane_rows[self.bars[*bar].lane] + self.bars[*bar].row;
                    row..row + 1
                }
                (TextRow::Bar, _) => 0..0,
            };
            for row in rows {
                grid.cells[row][column] = glyph.character;
            }
        }
    }

    fn text_legend(&self) -> String {
        let mut text = String::new();
        for vertex in 0..self.vertex_count() {
            let _ = writeln!(text, "{} = {}", vertex_character(vertex as u32), self.vertex_name(vertex));
        }
        let meanings: Vec<String> = self
            .marker_styles()
            .iter()
            .filter_map(|style| Some(format!("{} = {}", style.glyph?.character, style.meaning)))
            .collect();
        if !meanings.is_empty() {
            let _ = writeln!(text, "{}", meanings.join(", "));
        }
        for marker in &self.markers {
            let _ = writeln!(text, "{:>9}  {}", seconds(marker.time), marker.description.trim_end());
        }
        text
    }
}

/// The rows of the text form before they are joined: faults, commits, then lane sub-rows.
struct TextGrid {
    labels: Vec<String>,
    cells: Vec<Vec<char>>,
    /// The grid row of each lane's first sub-row.
    lane_rows: Vec<usize>,
}

impl TextGrid {
    fn new(timeline: &Timeline, columns: &Columns) -> TextGrid {
        let mut labels = vec!["faults".to_string(), "commits".to_string()];
        let mut lane_rows = Vec::new();
        for lane in &timeline.lanes {
            lane_rows.push(labels.len());
            // Only a lane's first sub-row is named, so the sub-rows read as one lane.
            labels.extend((0..lane.rows).map(|row| if row == 0 { lane.name.clone() } else { String::new() }));
        }
        let cells = vec![vec!['.'; columns.width]; labels.len()];
        TextGrid { labels, cells, lane_rows }
    }
}

// ---------------------------------------------------------------------------------------------
// The SVG form.

/// Bar colours by vertex index (modulo its length): distinguishable, and none of them the red
/// or green of the fault markers.
const PALETTE: [&str; 10] =
    ["#4e79a7", "#f28e2b", "#76b7b2", "#b07aa1", "#edc948", "#9c755f", "#ff9da7", "#bab0ac", "#59a0c9", "#d4a6c8"];

fn vertex_colour(vertex: u32) -> &'static str {
    PALETTE[vertex as usize % PALETTE.len()]
}

const WIDTH: f64 = 1360.0;
const PLOT_LEFT: f64 = 120.0;
const PLOT_RIGHT: f64 = WIDTH - 30.0;
const TITLE_HEIGHT: f64 = 34.0;
const LABEL_LEVEL_HEIGHT: f64 = 16.0;
const COMMITS_HEIGHT: f64 = 20.0;
const ROW_HEIGHT: f64 = 18.0;
const ROW_GAP: f64 = 3.0;
const LANE_PADDING: f64 = 4.0;
const AXIS_HEIGHT: f64 = 30.0;
const LEGEND_LINE: f64 = 20.0;
/// The least horizontal space between two marker labels on one level.
const LABEL_GAP: f64 = 8.0;
/// An estimate of the advance of one character at font size 11, for layout only.
const CHARACTER_WIDTH: f64 = 6.6;

/// Escapes the XML special characters of text taken from the trace.
fn escape(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for character in text.chars() {
        match character {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '"' => escaped.push_str("&quot;"),
            '\'' => escaped.push_str("&apos;"),
            _ => escaped.push(character),
        }
    }
    escaped
}

fn text_width(text: &str) -> f64 {
    text.chars().count() as f64 * CHARACTER_WIDTH
}

/// Vertical positions, computed once from the lanes and the markers' labels.
struct SvgLayout {
    scale: f64,
    labels_top: f64,
    /// The label level of each marker drawn across the lanes, by marker index.
    label_levels: BTreeMap<usize, usize>,
    commits_top: f64,
    lane_tops: Vec<f64>,
    lanes_bottom: f64,
}

impl SvgLayout {
    fn new(timeline: &Timeline) -> SvgLayout {
        let scale = (PLOT_RIGHT - PLOT_LEFT) / timeline.end.as_nanos().max(1) as f64;
        let mut layout = SvgLayout {
            scale,
            labels_top: TITLE_HEIGHT,
            label_levels: BTreeMap::new(),
            commits_top: 0.0,
            lane_tops: Vec::new(),
            lanes_bottom: 0.0,
        };
        layout.place_labels(timeline);
        let levels = layout.label_levels.values().max().map_or(0, |level| level + 1);
        layout.commits_top = layout.labels_top + levels as f64 * LABEL_LEVEL_HEIGHT + 4.0;
        let mut top = layout.commits_top + COMMITS_HEIGHT + 4.0;
        for lane in &timeline.lanes {
            layout.lane_tops.push(top);
            top += lane.rows as f64 * (ROW_HEIGHT + ROW_GAP) - ROW_GAP + 2.0 * LANE_PADDING;
        }
        layout.lanes_bottom = top;
        layout
    }

    fn x(&self, time: Duration) -> f64 {
        PLOT_LEFT + time.as_nanos() as f64 * self.scale
    }

    /// Packs the labels of the lines across lanes into levels, greedily in time order, so that
    /// labels of nearby markers do not overlap.
    fn place_labels(&mut self, timeline: &Timeline) {
        let mut level_ends: Vec<f64> = Vec::new();
        for (index, marker) in timeline.markers.iter().enumerate() {
            if !matches!(marker.kind.style().placement, Placement::AcrossLanes { .. }) {
                continue;
            }
            let (left, right) = label_extent(self.x(marker.time), &marker.kind.label());
            let level = level_ends.iter().position(|end| end + LABEL_GAP < left).unwrap_or(level_ends.len());
            if level == level_ends.len() {
                level_ends.push(right);
            } else {
                level_ends[level] = right;
            }
            self.label_levels.insert(index, level);
        }
    }

    fn label_baseline(&self, level: usize) -> f64 {
        self.labels_top + (level as f64 + 1.0) * LABEL_LEVEL_HEIGHT - 4.0
    }

    fn row_top(&self, lane: usize, row: usize) -> f64 {
        self.lane_tops[lane] + LANE_PADDING + row as f64 * (ROW_HEIGHT + ROW_GAP)
    }
}

/// The horizontal extent of a marker's label: right of its line, or left of it near the right
/// edge.
fn label_extent(x: f64, label: &str) -> (f64, f64) {
    let width = text_width(label) + 4.0;
    if x + width > WIDTH - 4.0 { (x - width, x) } else { (x, x + width) }
}

/// The fill and stroke attributes of a bar (or a legend swatch) by outcome.
fn bar_attributes(colour: &str, outcome: Outcome) -> String {
    match outcome {
        Outcome::Finished => format!(r##"fill="{colour}" stroke="#333333" stroke-width="0.6""##),
        Outcome::Failed => format!(r#"fill="{colour}" stroke="{FAILURE_RED}" stroke-width="2""#),
        Outcome::Cancelled => {
            format!(r##"fill="{colour}" fill-opacity="0.35" stroke="#555555" stroke-dasharray="4 2""##)
        }
        Outcome::Unfinished => {
            format!(r##"fill="{colour}" fill-opacity="0.7" stroke="#555555" stroke-dasharray="1 2""##)
        }
    }
}

/// Draws a marker's shape at `x`, spanning `top` to `bottom`.
fn marker_shape(svg: &mut String, style: &MarkerStyle, x: f64, top: f64, bottom: f64) {
    let colour = style.colour;
    match style.placement {
        Placement::OnBar => {
            let (middle, half) = ((top + bottom) / 2.0, 5.0);
            let _ = write!(
                svg,
                r#"<path d="M{:.1},{:.1}L{:.1},{:.1}M{:.1},{:.1}L{:.1},{:.1}" stroke="{colour}" stroke-width="2.5"/>"#,
                x - half,
                middle - half,
                x + half,
                middle + half,
                x - half,
                middle + half,
                x + half,
                middle - half
            );
        }
        Placement::AcrossLanes { dash } => {
            let dash = dash.map_or_else(String::new, |dash| format!(r#" stroke-dasharray="{dash}""#));
            let _ = write!(
                svg,
                r#"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{colour}" stroke-width="1.5"{dash}/>"#
            );
        }
        Placement::CommitsRow => {
            let _ = write!(
                svg,
                r#"<line x1="{x:.1}" y1="{top:.1}" x2="{x:.1}" y2="{bottom:.1}" stroke="{colour}" stroke-width="2"/>"#
            );
        }
    }
}

/// Text with a white halo, so that it stays legible over lines and bars.
fn halo_text(svg: &mut String, x: f64, y: f64, anchor: &str, colour: &str, text: &str) {
    let _ = write!(
        svg,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" fill="{colour}" stroke="white" stroke-width="3" paint-order="stroke">{}</text>"#,
        escape(text)
    );
}

/// A tick step of 1, 2 or 5 × 10^k nanoseconds giving at most ten ticks (so at least four).
fn tick_step(end: Duration) -> u128 {
    let span = end.as_nanos().max(1);
    let mut power: u128 = 1;
    loop {
        for multiple in [1, 2, 5] {
            if span / (multiple * power) <= 10 {
                return multiple * power;
            }
        }
        power *= 10;
    }
}

/// A tick label in seconds (spans of a second or more) or milliseconds, with as many decimals
/// as the step needs.
fn tick_label(time: u128, step: u128, end: Duration) -> String {
    let (unit, suffix) = if end >= Duration::from_secs(1) { (1_000_000_000, "s") } else { (1_000_000, "ms") };
    let mut decimals = 0;
    let mut resolution: u128 = unit;
    while !step.is_multiple_of(resolution) && resolution > 1 {
        resolution /= 10;
        decimals += 1;
    }
    let whole = time / unit;
    if decimals == 0 {
        return format!("{whole} {suffix}");
    }
    let fraction = (time % unit) / resolution;
    format!("{whole}.{fraction:0decimals$} {suffix}")
}

impl Timeline {
    /// A standalone SVG document: title, marker labels, commits row, lanes with their bars,
    /// lines across the lanes, a time axis, and a legend. Every bar and marker has a tooltip.
    pub fn to_svg(&self) -> String {
        let layout = SvgLayout::new(self);
        let mut body = String::new();
        halo_text(&mut body, 12.0, 22.0, "start", "#111111", &format!("{} — 0 … {}", self.title, seconds(self.end)));
        self.svg_lanes(&mut body, &layout);
        self.svg_axis(&mut body, &layout);
        self.svg_bars(&mut body, &layout);
        self.svg_markers(&mut body, &layout);
        let legend_top = layout.lanes_bottom + AXIS_HEIGHT + 10.0;
        let height = self.svg_legend(&mut body, legend_top) + 12.0;
        format!(
            concat!(
                r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height:.0}" viewBox="0 0 {width} {height:.0}" "#,
                r#"font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">"#,
                "\n",
                r#"<rect width="100%" height="100%" fill="white"/>"#,
                "\n{body}</svg>\n"
            ),
            width = WIDTH,
            height = height,
            body = body
        )
    }

    fn svg_lanes(&self, svg: &mut String, layout: &SvgLayout) {
        svg.push_str("<g class=\"lanes\">\n");
        let _ = writeln!(
            svg,
            r##"<rect x="{PLOT_LEFT}" y="{:.1}" width="{:.1}" height="{COMMITS_HEIGHT}" fill="#f4f4fb"/><text x="8" y="{:.1}" fill="#3b3b98">commits</text>"##,
            layout.commits_top,
            PLOT_RIGHT - PLOT_LEFT,
            layout.commits_top + 14.0
        );
        let mut task_managers: Vec<&str> = Vec::new();
        for (index, lane) in self.lanes.iter().enumerate() {
            let task_manager = lane.name.split('/').next().unwrap_or_default();
            if task_managers.last() != Some(&task_manager) {
                task_managers.push(task_manager);
            }
            // Alternate shading by TaskManager, so a TaskManager's slots read as one group.
            let shade = if task_managers.len() % 2 == 1 { "#eef1f5" } else { "#fafafa" };
            let top = layout.lane_tops[index];
            let bottom = layout.lane_tops.get(index + 1).copied().unwrap_or(layout.lanes_bottom);
            let _ = writeln!(
                svg,
                r##"<rect x="0" y="{top:.1}" width="{PLOT_RIGHT}" height="{:.1}" fill="{shade}"/><text x="8" y="{:.1}" fill="#111111">{}</text>"##,
                bottom - top,
                top + LANE_PADDING + ROW_HEIGHT - 5.0,
                escape(&lane.name)
            );
        }
        svg.push_str("</g>\n");
    }

    fn svg_axis(&self, svg: &mut String, layout: &SvgLayout) {
        let step = tick_step(self.end);
        let axis_y = layout.lanes_bottom + 4.0;
        svg.push_str("<g class=\"axis\">\n");
        let _ = writeln!(
            svg,
            r##"<line x1="{PLOT_LEFT}" y1="{axis_y:.1}" x2="{PLOT_RIGHT}" y2="{axis_y:.1}" stroke="#333333"/>"##
        );
        let mut time = 0;
        while time <= self.end.as_nanos() {
            let x = layout.x(Duration::from_nanos(time as u64));
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{axis_y:.1}" stroke="#d0d0d0"/><line x1="{x:.1}" y1="{axis_y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333333">{}</text>"##,
                layout.commits_top,
                axis_y + 5.0,
                axis_y + 18.0,
                tick_label(time, step, self.end)
            );
            time += step;
        }
        svg.push_str("</g>\n");
    }

    fn svg_bars(&self, svg: &mut String, layout: &SvgLayout) {
        svg.push_str("<g class=\"bars\">\n");
        for bar in &self.bars {
            let (x, top) = (layout.x(bar.start), layout.row_top(bar.lane, bar.row));
            let width = (layout.x(bar.end) - x).max(1.5);
            let label = bar.label();
            let _ = write!(
                svg,
                r#"<g><title>{} {}: {} .. {} ({})</title><rect x="{x:.1}" y="{top:.1}" width="{width:.1}" height="{ROW_HEIGHT}" rx="2" {}/>"#,
                escape(&label),
                escape(self.vertex_name(bar.vertex as usize)),
                seconds(bar.start),
                seconds(bar.end),
                bar.outcome.name(),
                bar_attributes(vertex_colour(bar.vertex), bar.outcome)
            );
            // A label that does not fit is left to the tooltip rather than spilling over.
            if width >= text_width(&label) * 0.92 + 8.0 {
                let _ = write!(
                    svg,
                    r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#111111">{}</text>"##,
                    x + 4.0,
                    top + ROW_HEIGHT - 5.0,
                    escape(&label)
                );
            }
            svg.push_str("</g>\n");
        }
        svg.push_str("</g>\n");
    }

    fn svg_markers(&self, svg: &mut String, layout: &SvgLayout) {
        svg.push_str("<g class=\"markers\">\n");
        for (index, marker) in self.markers.iter().enumerate() {
            let style = marker.kind.style();
            let x = layout.x(marker.time);
            let _ = write!(svg, "<g><title>{} {}</title>", seconds(marker.time), escape(&marker.description));
            match style.placement {
                Placement::OnBar => {
                    if let MarkerKind::TaskFailed { bar: Some(bar), .. } = marker.kind {
                        let top = layout.row_top(self.bars[bar].lane, self.bars[bar].row);
                        marker_shape(svg, &style, x, top, top + ROW_HEIGHT);
                    }
                }
                Placement::AcrossLanes { .. } => {
                    let level = layout.label_levels[&index];
                    let baseline = layout.label_baseline(level);
                    marker_shape(svg, &style, x, baseline - 10.0, layout.lanes_bottom);
                    let label = marker.kind.label();
                    let (left, _) = label_extent(x, &label);
                    let anchor = if left < x { "end" } else { "start" };
                    let text_x = if left < x { x - 3.0 } else { x + 3.0 };
                    halo_text(svg, text_x, baseline, anchor, style.colour, &label);
                }
                Placement::CommitsRow => {
                    marker_shape(svg, &style, x, layout.commits_top + 3.0, layout.commits_top + COMMITS_HEIGHT - 3.0);
                }
            }
            svg.push_str("</g>\n");
        }
        svg.push_str("</g>\n");
    }

    /// Draws the legend from `top`; returns its bottom.
    fn svg_legend(&self, svg: &mut String, top: f64) -> f64 {
        svg.push_str("<g class=\"legend\">\n");
        let mut flow = LegendFlow { svg, x: PLOT_LEFT, y: top };
        if self.vertex_count() > 0 {
            flow.heading("vertices");
        }
        for vertex in 0..self.vertex_count() {
            let swatch = format!(
                r##"<rect x="{{x}}" y="{{y}}" width="14" height="10" fill="{}" stroke="#333333" stroke-width="0.6"/>"##,
                vertex_colour(vertex as u32)
            );
            flow.item(&swatch, &format!("v{vertex} {}", self.vertex_name(vertex)));
        }
        flow.heading("tasks");
        for outcome in [Outcome::Finished, Outcome::Failed, Outcome::Cancelled, Outcome::Unfinished] {
            let swatch =
                format!(r#"<rect x="{{x}}" y="{{y}}" width="14" height="10" {}/>"#, bar_attributes("#9a9a9a", outcome));
            flow.item(&swatch, outcome.name());
        }
        let styles = self.marker_styles();
        if !styles.is_empty() {
            flow.heading("markers");
        }
        for style in styles {
            let mut swatch = String::new();
            marker_shape(&mut swatch, &style, 7.0, -2.0, 12.0);
            let swatch = format!(r#"<g transform="translate({{x}},{{y}})">{swatch}</g>"#);
            flow.item(&swatch, style.meaning);
        }
        let bottom = flow.y + LEGEND_LINE;
        svg.push_str("</g>\n");
        bottom
    }
}

/// Lays legend items out left to right, wrapping at the plot's right edge; each group starts
/// a new line with its heading in the label column.
struct LegendFlow<'a> {
    svg: &'a mut String,
    x: f64,
    y: f64,
}

impl LegendFlow<'_> {
    fn heading(&mut self, heading: &str) {
        if self.x > PLOT_LEFT {
            self.y += LEGEND_LINE;
        }
        self.x = PLOT_LEFT;
        let _ = writeln!(self.svg, r##"<text x="8" y="{:.1}" fill="#555555">{heading}</text>"##, self.y + 10.0);
    }

    /// One swatch (SVG with `{x}` and `{y}` placeholders for its top left corner) and its text.
    fn item(&mut self, swatch: &str, text: &str) {
        let width = 20.0 + text_width(text) + 24.0;
        if self.x > PLOT_LEFT && self.x + width > PLOT_RIGHT {
            self.x = PLOT_LEFT;
            self.y += LEGEND_LINE;
        }
        let swatch = swatch.replace("{x}", &format!("{:.1}", self.x)).replace("{y}", &format!("{:.1}", self.y + 1.0));
        let _ = writeln!(
            self.svg,
            r##"{swatch}<text x="{:.1}" y="{:.1}" fill="#111111">{}</text>"##,
            self.x + 20.0,
            self.y + 10.0,
            escape(text)
        );
        self.x += width;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(millis: u64, node: &str, event: TraceEvent) -> TraceRecord {
        TraceRecord { time: Duration::from_millis(millis), node: node.to_string(), event }
    }

    fn registered(name: &str, slots: u32) -> TraceEvent {
        TraceEvent::TaskManagerRegistered { name: name.to_string(), instance: 1, slots }
    }

    fn deployed(attempt: u32, vertex: u32, subtask: u32, slot: &str) -> TraceEvent {
        TraceEvent::TaskDeployed { attempt, vertex, subtask, slot: slot.to_string() }
    }

    fn finished(attempt: u32, vertex: u32, subtask: u32) -> TraceEvent {
        TraceEvent::TaskFinished {
            attempt,
            vertex,
            subtask,
            records_in: 1,
            records_out: 1,
            disk_bytes_read: 0,
            disk_bytes_written: 0,
            backpressure_micros: 0,
            peak_buffered_bytes: 0,
        }
    }

    /// Two TaskManagers (`tm-10` registered first, to check natural order), slot sharing in
    /// `tm-2/s0`, a fault, a failure, a restart, a healing, a commit, and the job's end.
    fn trace() -> Vec<TraceRecord> {
        vec![
            record(0, "jm", registered("tm-10", 1)),
            record(0, "jm", registered("tm-2", 2)),
            record(
                0,
                "jm",
                TraceEvent::JobSubmitted {
                    job_id: "demo".to_string(),
                    mode: "streaming".to_string(),
                    vertices: vec!["Source: <log> & \"more\"".to_string(), "Sink: store".to_string()],
                },
            ),
            record(10, "jm", deployed(0, 0, 0, "tm-2/s0")),
            record(10, "jm", deployed(0, 1, 0, "tm-2/s0")),
            record(10, "jm", deployed(0, 0, 1, "tm-10/s0")),
            record(10, "jm", deployed(0, 1, 1, "tm-2/s1")),
            record(
                20,
                "harness",
                TraceEvent::FaultInjected {
                    index: 0,
                    kind: "kill".to_string(),
                    detail: "kill tm-10 <now>".to_string(),
                },
            ),
            record(
                30,
                "jm",
                TraceEvent::TaskFailed {
                    attempt: 0,
                    vertex: 0,
                    subtask: 1,
                    reason: "producer unreachable".to_string(),
                },
            ),
            record(
                30,
                "jm",
                TraceEvent::JobRestarting {
                    attempt: 1,
                    delay_ms: 10,
                    cause: "v0[1] failed".to_string(),
                    regions: 2,
                    subtasks: 2,
                },
            ),
            record(40, "jm", deployed(1, 0, 0, "tm-2/s0")),
            record(40, "jm", deployed(1, 1, 0, "tm-2/s0")),
            record(40, "jm", deployed(1, 0, 1, "tm-2/s1")),
            record(40, "jm", deployed(1, 1, 1, "tm-2/s1")),
            record(
                50,
                "harness",
                TraceEvent::FaultHealed { index: 0, kind: "kill".to_string(), detail: "kill tm-10 <now>".to_string() },
            ),
            record(60, "jm", finished(1, 0, 0)),
            record(60, "jm", finished(1, 0, 1)),
            record(
                70,
                "txn-store",
                TraceEvent::TransactionCommitted { txn_id: "demo-0".to_string(), epoch: 0, rows: 5 },
            ),
            record(80, "jm", finished(1, 1, 0)),
            record(80, "jm", finished(1, 1, 1)),
            record(80, "jm", TraceEvent::JobFinished { restarts: 1 }),
            record(100, "harness", TraceEvent::Harness { detail: "done".to_string() }),
        ]
    }

    fn lane_names(timeline: &Timeline) -> Vec<&str> {
        timeline.lanes().iter().map(|lane| lane.name.as_str()).collect()
    }

    #[test]
    fn lanes_follow_task_managers_then_slots_in_natural_order() {
        let timeline = build(&trace());
        assert_eq!(lane_names(&timeline), ["tm-2/s0", "tm-2/s1", "tm-10/s0"]);
        let mut names = vec!["tm-10/s1", "tm-2/s10", "tm-2/s9", "tm-1/s0", "tm-02/s3"];
        names.sort_by_key(|name| natural_key(name));
        assert_eq!(names, ["tm-1/s0", "tm-02/s3", "tm-2/s9", "tm-2/s10", "tm-10/s1"]);
    }

    #[test]
    fn bars_end_by_outcome() {
        let timeline = build(&trace());
        let outcomes: Vec<(String, Outcome, u64)> =
            timeline.bars().iter().map(|bar| (bar.label(), bar.outcome, bar.end.as_millis() as u64)).collect();
        let expected = [
            ("v0[0] a0", Outcome::Cancelled, 30),
            ("v1[0] a0", Outcome::Cancelled, 30),
            ("v0[1] a0", Outcome::Failed, 30),
            ("v1[1] a0", Outcome::Cancelled, 30),
            ("v0[0] a1", Outcome::Finished, 60),
            ("v1[0] a1", Outcome::Finished, 80),
            ("v0[1] a1", Outcome::Finished, 60),
            ("v1[1] a1", Outcome::Finished, 80),
        ];
        let expected: Vec<(String, Outcome, u64)> =
            expected.iter().map(|(label, outcome, end)| (label.to_string(), *outcome, *end)).collect();
        assert_eq!(outcomes, expected);
    }

    #[test]
    fn bars_without_an_end_are_unfinished_or_cancelled_by_a_job_failure() {
        let mut records = trace()[..7].to_vec();
        records.push(record(
            25,
            "jm",
            TraceEvent::TaskFailed { attempt: 0, vertex: 0, subtask: 1, reason: "boom".to_string() },
        ));
        records.push(record(26, "jm", TraceEvent::JobFailed { reason: "no restarts left".to_string() }));
        records.push(record(27, "jm", deployed(1, 0, 0, "tm-2/s1")));
        records.push(record(90, "harness", TraceEvent::Harness { detail: "done".to_string() }));
        let timeline = build(&records);
        let ends: Vec<(Outcome, u64)> =
            timeline.bars().iter().map(|bar| (bar.outcome, bar.end.as_millis() as u64)).collect();
        assert_eq!(
            ends,
            [
                (Outcome::Cancelled, 26),
                (Outcome::Cancelled, 26),
                (Outcome::Failed, 25),
                (Outcome::Cancelled, 26),
                (Outcome::Unfinished, 90),
            ]
        );
    }

    #[test]
    fn a_recovery_by_a_new_job_master_cancels_older_attempts() {
        let mut records = trace()[..7].to_vec();
        let recovered = TraceEvent::JobRecovered { job_id: "demo".to_string(), attempt: 1 };
        records.push(record(50, "jm", recovered));
        records.push(record(60, "jm", deployed(1, 0, 0, "tm-2/s0")));
        records.push(record(70, "jm", finished(1, 0, 0)));
        let timeline = build(&records);
        let ends: Vec<(Outcome, u64)> =
            timeline.bars().iter().map(|bar| (bar.outcome, bar.end.as_millis() as u64)).collect();
        let cancelled = (Outcome::Cancelled, 50);
        assert_eq!(ends, [cancelled, cancelled, cancelled, cancelled, (Outcome::Finished, 70)]);
        assert!(timeline.to_text(7).contains("\ntm-2/s0   .0000:0\n"), "{}", timeline.to_text(7));
    }

    #[test]
    fn tasks_sharing_a_slot_are_stacked() {
        let timeline = build(&trace());
        let rows: Vec<(usize, usize)> = timeline.bars().iter().map(|bar| (bar.lane, bar.row)).collect();
        assert_eq!(rows, [(0, 0), (0, 1), (2, 0), (1, 0), (0, 0), (0, 1), (1, 0), (1, 1)]);
        let lane_rows: Vec<usize> = timeline.lanes().iter().map(|lane| lane.rows).collect();
        assert_eq!(lane_rows, [2, 2, 1]);
    }

    #[test]
    fn the_text_form_shows_bars_markers_and_a_legend() {
        let expected = "\
demo (streaming): 0s .. 0.100s, 20 columns of 5.000ms
faults    ....!.|...+.........
commits   ......|.......c.....
tm-2/s0   ..0000|.0000........
          ..1111|.11111111....
tm-2/s1   ..1111|.0000........
          ......|.11111111....
tm-10/s0  ..0000x.............
0 = Source: <log> & \"more\"
1 = Sink: store
! = fault injected, x = task failed, | = restart, + = fault healed, c = commit
   0.020s  fault #0: kill tm-10 <now>
   0.030s  a0 v0[1] failed: producer unreachable
   0.030s  restart as a1 in 10 ms: v0[1] failed
   0.050s  healed #0: kill tm-10 <now>
   0.070s  committed demo-0 (epoch 0, 5 rows)
   0.080s  job finished after 1 restarts
";
        assert_eq!(build(&trace()).to_text(20), expected);
    }

    fn count(text: &str, pattern: &str) -> usize {
        text.matches(pattern).count()
    }

    #[test]
    fn the_svg_is_well_formed_and_escaped() {
        let svg = build(&trace()).to_svg();
        assert!(svg.starts_with("<svg"), "{svg}");
        assert!(svg.ends_with("</svg>\n"), "{svg}");
        assert_eq!(count(&svg, "<g>") + count(&svg, "<g "), count(&svg, "</g>"));
        assert_eq!(count(&svg, "<text"), count(&svg, "</text>"));
        assert_eq!(count(&svg, "<title>"), count(&svg, "</title>"));
        assert!(svg.contains("Source: &lt;log&gt; &amp; &quot;more&quot;"), "{svg}");
        assert!(svg.contains("kill tm-10 &lt;now&gt;"), "{svg}");
        assert!(!svg.contains("<log>") && !svg.contains("<now>"), "{svg}");
        for label in ["restart a1", "healed: kill tm-10 &lt;now&gt;", "job finished", ">commits<", ">tm-10/s0<"] {
            assert!(svg.contains(label), "{label} missing from {svg}");
        }
    }

    #[test]
    fn escape_covers_the_xml_special_characters() {
        assert_eq!(escape(r#"a & b < c > d "e" 'f'"#), "a &amp; b &lt; c &gt; d &quot;e&quot; &apos;f&apos;");
    }

    #[test]
    fn ticks_are_one_two_or_five_times_a_power_of_ten() {
        let step = |millis| tick_step(Duration::from_millis(millis)) / 1_000_000;
        assert_eq!([step(100), step(1234), step(2000), step(7000), step(45)], [10, 200, 200, 1000, 5]);
        for millis in [3, 45, 100, 999, 1234, 8765, 123_456] {
            let ticks = Duration::from_millis(millis).as_nanos() / tick_step(Duration::from_millis(millis));
            assert!((4..=10).contains(&ticks), "{millis} ms: {ticks} ticks");
        }
        let second = Duration::from_secs(1);
        assert_eq!(tick_label(1_200_000_000, 200_000_000, second), "1.2 s");
        assert_eq!(tick_label(0, 1_000_000_000, second), "0 s");
        assert_eq!(tick_label(50_000_000, 50_000_000, second), "0.05 s");
        assert_eq!(tick_label(20_000_000, 10_000_000, Duration::from_millis(100)), "20 ms");
        assert_eq!(tick_label(500_000, 500_000, Duration::from_millis(3)), "0.5 ms");
    }

    #[test]
    fn an_empty_trace_still_renders() {
        let timeline = build(&[]);
        assert_eq!(timeline.to_text(4), "timeline: 0s .. 0.000s, 4 columns of 0.000ms\nfaults   ....\ncommits  ....\n");
        assert!(timeline.to_svg().ends_with("</svg>\n"));
    }
}
