//! The text form of a timeline: fixed-width rows for snapshots and terminals.

use std::fmt::Write;
use std::ops::RangeInclusive;
use std::time::Duration;

use super::style::{TextGlyph, TextRow};
use super::{Fate, MAX_TEXT_WIDTH, Marker, MarkerKind, OriginBasis, Timeline};

/// A killed TaskManager's slots while it is down.
const DOWN: char = '#';

/// The character in the last column of a finished bar whose work came to this fate.
fn fate_character(fate: Fate) -> Option<char> {
    match fate {
        Fate::Stands => None,
        Fate::Kept => Some('>'),
        Fate::Rerun => Some('~'),
    }
}

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
    /// sub-row with `width` columns (at most [`MAX_TEXT_WIDTH`]) covering [0, end], then a
    /// legend and the events with their times. In a row a column shows the vertex of the bar
    /// covering it (`0`–`9`, `A`–`Z`), `#` while its TaskManager is down, or `.` when idle; the
    /// last column of a finished bar shows `>` if a new JobMaster kept its work and `~` if its
    /// subtask ran again; `x` marks a failure, `|` a restart and `:` a recovery by a new
    /// JobMaster (in every row), `!` a fault and `+` its healing (faults row), `c` a commit
    /// (commits row).
    pub fn to_text(&self, width: usize) -> String {
        let columns = Columns::new(width.min(MAX_TEXT_WIDTH), self.end);
        let mut grid = TextGrid::new(self, &columns);
        self.draw_text_downtimes(&mut grid, &columns);
        for bar in &self.bars {
            let row = grid.lane_rows[bar.lane] + bar.row;
            for column in columns.covering(bar.start, bar.end) {
                grid.cells[row][column] = vertex_character(bar.vertex);
            }
        }
        // After every bar, so that a bar starting where one ends does not hide what became of it.
        for bar in &self.bars {
            if let Some(character) = fate_character(bar.fate) {
                let row = grid.lane_rows[bar.lane] + bar.row;
                grid.cells[row][*columns.covering(bar.start, bar.end).end()] = character;
            }
        }
        self.draw_text_markers(&mut grid, &columns);
        let mut text = format!(
            "{}: {} .. {} from {}{}, {} columns of {:.3}ms\n",
            self.title,
            self.seconds(Duration::ZERO),
            self.seconds(self.end),
            self.origin.basis.meaning(),
            self.origin_in_trace(),
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

    /// Where the origin is in the trace's own time, for a header: ` at 0.172s of the trace`.
    pub(super) fn origin_in_trace(&self) -> String {
        match self.origin.basis {
            OriginBasis::TraceStart => String::new(),
            _ => format!(" at {:.3}s of the trace", self.origin.time.as_secs_f64()),
        }
    }

    fn draw_text_downtimes(&self, grid: &mut TextGrid, columns: &Columns) {
        for downtime in &self.downtimes {
            let covered = columns.covering(downtime.from, downtime.until.unwrap_or(self.end));
            for lane in self.lanes_of(&downtime.task_manager) {
                let first_row = grid.lane_rows[lane];
                for row in &mut grid.cells[first_row..first_row + self.lanes[lane].rows] {
                    row[covered.clone()].fill(DOWN);
                }
            }
        }
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
        let mut lane_meanings: Vec<String> = Vec::new();
        if !self.downtimes.is_empty() {
            lane_meanings.push(format!("{DOWN} = TaskManager down"));
        }
        for fate in [Fate::Kept, Fate::Rerun] {
            if let Some(character) = fate_character(fate).filter(|_| self.bars.iter().any(|bar| bar.fate == fate)) {
                lane_meanings.push(format!("{character} = {}", fate.name()));
            }
        }
        let meanings: Vec<String> = self
            .marker_styles()
            .iter()
            .filter_map(|style| Some(format!("{} = {}", style.glyph?.character, style.meaning)))
            .collect();
        for line in [lane_meanings, meanings] {
            if !line.is_empty() {
                let _ = writeln!(text, "{}", line.join(", "));
            }
        }
        for marker in &self.markers {
            let _ = writeln!(text, "{:>9}  {}", self.seconds(marker.time), marker.description.trim_end());
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
