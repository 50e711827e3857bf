//! The SVG form of a timeline: a standalone document for a browser.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

use super::style::{FAILURE_RED, MarkerStyle, Placement};
use super::{Bar, Fate, MarkerKind, Outcome, Timeline};

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
/// The most levels of marker labels above the lanes; a marker whose label finds no room is
/// drawn without it (its tooltip still says what it is), so that no trace makes them pile up.
const MAX_LABEL_LEVELS: usize = 12;

/// Fill patterns: the hatching of a down TaskManager's lanes, and the stripes over finished
/// work that was thrown away.
const PATTERNS: &str = concat!(
    r##"<defs><pattern id="down" width="8" height="8" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">"##,
    r##"<rect width="8" height="8" fill="#d62728" fill-opacity="0.08"/>"##,
    r##"<line x1="0" y1="0" x2="0" y2="8" stroke="#d62728" stroke-opacity="0.3" stroke-width="3"/></pattern>"##,
    r##"<pattern id="rerun" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)">"##,
    r##"<line x1="0" y1="0" x2="0" y2="6" stroke="white" stroke-opacity="0.85" stroke-width="2.5"/></pattern></defs>"##,
);

/// Escapes the XML special characters of text taken from the trace.
pub(super) fn escape(text: &str) -> String {
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
            if level == MAX_LABEL_LEVELS {
                continue;
            }
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
        Outcome::Killed => {
            format!(
                r#"fill="{colour}" fill-opacity="0.35" stroke="{FAILURE_RED}" stroke-width="1.5" stroke-dasharray="4 2""#
            )
        }
        Outcome::Unfinished => {
            format!(r##"fill="{colour}" fill-opacity="0.7" stroke="#555555" stroke-dasharray="1 2""##)
        }
    }
}

/// The attributes of a second shape drawn over a finished bar whose work came to this fate.
fn fate_overlay(fate: Fate) -> Option<&'static str> {
    match fate {
        Fate::Stands => None,
        Fate::Kept => Some(r##"fill="none" stroke="#2ca02c" stroke-width="2.5""##),
        Fate::Rerun => Some(r#"fill="url(#rerun)" stroke="none""#),
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
pub(super) fn tick_step(end: Duration) -> u128 {
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
pub(super) fn tick_label(time: u128, step: u128, end: Duration) -> String {
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
        let title = format!(
            "{} — {} … {} from {}{}",
            self.title,
            self.seconds(Duration::ZERO),
            self.seconds(self.end),
            self.origin.basis.meaning(),
            self.origin_in_trace()
        );
        halo_text(&mut body, 12.0, 22.0, "start", "#111111", &title);
        self.svg_lanes(&mut body, &layout);
        self.svg_downtimes(&mut body, &layout);
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
                "\n{patterns}\n{body}</svg>\n"
            ),
            width = WIDTH,
            height = height,
            patterns = PATTERNS,
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

    /// Hatches the lanes of each killed TaskManager from its kill until its restart.
    fn svg_downtimes(&self, svg: &mut String, layout: &SvgLayout) {
        svg.push_str("<g class=\"downtimes\">\n");
        for downtime in &self.downtimes {
            let until = downtime.until.unwrap_or(self.end);
            let (left, right) = (layout.x(downtime.from), layout.x(until));
            let restarted = downtime
                .until
                .map_or_else(|| "not restarted".to_string(), |until| format!("restarted at {}", self.seconds(until)));
            let _ = write!(
                svg,
                "<g><title>{} down: killed at {}, {restarted}</title>",
                escape(&downtime.task_manager),
                self.seconds(downtime.from)
            );
            for lane in self.lanes_of(&downtime.task_manager) {
                let top = layout.lane_tops[lane];
                let bottom = layout.lane_tops.get(lane + 1).copied().unwrap_or(layout.lanes_bottom);
                let _ = write!(
                    svg,
                    r#"<rect x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="url(#down)"/>"#,
                    (right - left).max(1.0),
                    bottom - top
                );
            }
            svg.push_str("</g>\n");
        }
        svg.push_str("</g>\n");
    }

    /// The time axis: ticks at whole steps from the origin (negative before it), captioned with
    /// what the origin is.
    fn svg_axis(&self, svg: &mut String, layout: &SvgLayout) {
        let step = tick_step(self.end);
        let (origin, end) = (self.origin.time.as_nanos(), self.end.as_nanos());
        let axis_y = layout.lanes_bottom + 4.0;
        svg.push_str("<g class=\"axis\">\n");
        let _ = writeln!(
            svg,
            r##"<line x1="{PLOT_LEFT}" y1="{axis_y:.1}" x2="{PLOT_RIGHT}" y2="{axis_y:.1}" stroke="#333333"/><text x="8" y="{:.1}" font-size="10" fill="#333333">{}</text>"##,
            axis_y + 18.0,
            self.origin.basis.caption()
        );
        // The first tick at or after the trace's start.
        let mut tick = origin % step;
        while tick <= end {
            let x = layout.x(Duration::from_nanos(tick as u64));
            let label = match tick.checked_sub(origin) {
                Some(after) => tick_label(after, step, self.end),
                None => format!("-{}", tick_label(origin - tick, step, self.end)),
            };
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{axis_y:.1}" stroke="#d0d0d0"/><line x1="{x:.1}" y1="{axis_y:.1}" x2="{x:.1}" y2="{:.1}" stroke="#333333"/><text x="{x:.1}" y="{:.1}" text-anchor="middle" fill="#333333">{label}</text>"##,
                layout.commits_top,
                axis_y + 5.0,
                axis_y + 18.0,
            );
            tick += step;
        }
        svg.push_str("</g>\n");
    }

    fn svg_bars(&self, svg: &mut String, layout: &SvgLayout) {
        svg.push_str("<g class=\"bars\">\n");
        for bar in &self.bars {
            let (x, top) = (layout.x(bar.start), layout.row_top(bar.lane, bar.row));
            let width = (layout.x(bar.end) - x).max(1.5);
            let label = bar_text(bar);
            let _ = write!(
                svg,
                r#"<g><title>{} {}: {} .. {} ({}{})</title><rect x="{x:.1}" y="{top:.1}" width="{width:.1}" height="{ROW_HEIGHT}" rx="2" {}/>"#,
                escape(&bar.label()),
                escape(self.vertex_name(bar.vertex as usize)),
                self.seconds(bar.start),
                self.seconds(bar.end),
                bar.outcome.name(),
                fate_note(bar.fate),
                bar_attributes(vertex_colour(bar.vertex), bar.outcome)
            );
            if let Some(overlay) = fate_overlay(bar.fate) {
                let _ = write!(
                    svg,
                    r#"<rect x="{x:.1}" y="{top:.1}" width="{width:.1}" height="{ROW_HEIGHT}" rx="2" {overlay}/>"#
                );
            }
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
            let _ = write!(svg, "<g><title>{} {}</title>", self.seconds(marker.time), escape(&marker.description));
            match style.placement {
                Placement::OnBar => {
                    if let MarkerKind::TaskFailed { bar: Some(bar), .. } = marker.kind {
                        let top = layout.row_top(self.bars[bar].lane, self.bars[bar].row);
                        marker_shape(svg, &style, x, top, top + ROW_HEIGHT);
                    }
                }
                Placement::AcrossLanes { .. } => {
                    let Some(&level) = layout.label_levels.get(&index) else {
                        marker_shape(svg, &style, x, layout.commits_top, layout.lanes_bottom);
                        svg.push_str("</g>\n");
                        continue;
                    };
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
        for outcome in Outcome::ALL {
            let swatch =
                format!(r#"<rect x="{{x}}" y="{{y}}" width="14" height="10" {}/>"#, bar_attributes("#9a9a9a", outcome));
            flow.item(&swatch, outcome.name());
        }
        for fate in [Fate::Kept, Fate::Rerun] {
            if let Some(overlay) = fate_overlay(fate).filter(|_| self.bars.iter().any(|bar| bar.fate == fate)) {
                let base = bar_attributes("#9a9a9a", Outcome::Finished);
                let swatch = format!(
                    r#"<rect x="{{x}}" y="{{y}}" width="14" height="10" {base}/><rect x="{{x}}" y="{{y}}" width="14" height="10" {overlay}/>"#
                );
                flow.item(&swatch, fate.name());
            }
        }
        if !self.downtimes.is_empty() {
            let swatch = r##"<rect x="{x}" y="{y}" width="14" height="10" fill="url(#down)" stroke="#d62728" stroke-width="0.6"/>"##;
            flow.item(swatch, "TaskManager down (killed, until it restarted)");
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

/// A bar's label: its task, and what became of its work if it was kept or thrown away.
fn bar_text(bar: &Bar) -> String {
    match bar.fate {
        Fate::Stands => bar.label(),
        Fate::Kept => format!("{} kept", bar.label()),
        Fate::Rerun => format!("{} re-run", bar.label()),
    }
}

/// What became of a bar's work, for its tooltip.
fn fate_note(fate: Fate) -> String {
    match fate {
        Fate::Stands => String::new(),
        fate => format!("; {}", fate.name()),
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
