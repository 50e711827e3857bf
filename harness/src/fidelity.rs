//! Fidelity: the simulator's job times held against real runs of the same shapes and variants,
//! as `sluice-real compare` reports them. Pure functions over the figures.
//!
//! Per shape and variant: the simulated job time, the real runs' median and spread (smallest to
//! largest), and the relative error of the simulation against the real median. Per shape: whether
//! the simulation ranks the variants as the real runs do (Kendall's τ over pairs of variants),
//! and the inversions that matter: a pair the simulation orders the other way although the real
//! medians differ by more than twice the larger of their spreads. Shapes used to calibrate the
//! profile are reported apart from those it is judged on.

use std::fmt::Write as _;
use std::time::Duration;

use crate::calibration::median;

/// One shape under one variant.
#[derive(Clone, Debug, PartialEq)]
pub struct FidelityRow {
    /// The shape (scenario name).
    pub shape: String,
    /// The variant (mode, exchange mode, failover strategy).
    pub variant: String,
    /// The simulated job time.
    pub simulated: Duration,
    /// Each real run's job time.
    pub real: Vec<Duration>,
}

impl FidelityRow {
    /// The real runs' median, in seconds.
    pub fn real_median(&self) -> f64 {
        median(&self.real.iter().map(Duration::as_secs_f64).collect::<Vec<_>>()).unwrap_or(0.0)
    }

    /// The real runs' spread (largest minus smallest), in seconds.
    pub fn real_spread(&self) -> f64 {
        let seconds: Vec<f64> = self.real.iter().map(Duration::as_secs_f64).collect();
        let largest = seconds.iter().copied().fold(f64::MIN, f64::max);
        let smallest = seconds.iter().copied().fold(f64::MAX, f64::min);
        if seconds.is_empty() { 0.0 } else { largest - smallest }
    }

    /// The simulation's error relative to the real median (+0.10: 10% too slow).
    pub fn error(&self) -> f64 {
        let real = self.real_median();
        if real > 0.0 { self.simulated.as_secs_f64() / real - 1.0 } else { 0.0 }
    }
}

/// Pairs of variants of one shape: concordant, discordant, and the discordant ones whose real
/// medians differ by more than twice their spread (inversions that matter).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ranking {
    /// Pairs both order the same way.
    pub concordant: u32,
    /// Pairs they order differently.
    pub discordant: u32,
    /// Discordant pairs the real runs tell apart clearly.
    pub clear_inversions: u32,
}

impl Ranking {
    /// Kendall's τ: (concordant − discordant) / pairs; 1 when there are no pairs.
    pub fn tau(&self) -> f64 {
        let pairs = self.concordant + self.discordant;
        if pairs == 0 { 1.0 } else { (f64::from(self.concordant) - f64::from(self.discordant)) / f64::from(pairs) }
    }

    fn add(&mut self, other: Ranking) {
        self.concordant += other.concordant;
        self.discordant += other.discordant;
        self.clear_inversions += other.clear_inversions;
    }
}

/// How the simulation ranks `rows` (one shape's variants) against the real runs. A pair tied in
/// either counts as neither.
pub fn ranking(rows: &[&FidelityRow]) -> Ranking {
    let mut ranking = Ranking::default();
    for (index, a) in rows.iter().enumerate() {
        for b in &rows[index + 1..] {
            let simulated = a.simulated.cmp(&b.simulated);
            let real = a.real_median().total_cmp(&b.real_median());
            if simulated.is_eq() || real.is_eq() {
                continue;
            }
            if simulated == real {
                ranking.concordant += 1;
            } else {
                ranking.discordant += 1;
                let gap = (a.real_median() - b.real_median()).abs();
                if gap > 2.0 * a.real_spread().max(b.real_spread()) {
                    ranking.clear_inversions += 1;
                }
            }
        }
    }
    ranking
}

/// The `q`-quantile (0..=1) of `values`, by the nearest rank.
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let last = sorted.len().checked_sub(1)?;
    Some(sorted[((q * sorted.len() as f64).ceil() as usize).saturating_sub(1).min(last)])
}

/// Summary figures over a set of rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// Median of the absolute errors.
    pub median_error: f64,
    /// 95th percentile of the absolute errors.
    pub p95_error: f64,
    /// Pairs pooled over shapes.
    pub ranking: Ranking,
}

/// Judges `rows` (any number of shapes).
pub fn judge(rows: &[FidelityRow]) -> Judgement {
    let errors: Vec<f64> = rows.iter().map(|row| row.error().abs()).collect();
    let mut pooled = Ranking::default();
    for shape in shapes(rows) {
        let of_shape: Vec<&FidelityRow> = rows.iter().filter(|row| row.shape == shape).collect();
        pooled.add(ranking(&of_shape));
    }
    Judgement {
        median_error: median(&errors).unwrap_or(0.0),
        p95_error: quantile(&errors, 0.95).unwrap_or(0.0),
        ranking: pooled,
    }
}

fn shapes(rows: &[FidelityRow]) -> Vec<String> {
    let mut shapes: Vec<String> = Vec::new();
    for row in rows {
        if !shapes.contains(&row.shape) {
            shapes.push(row.shape.clone());
        }
    }
    shapes
}

/// The report: a line per shape and variant, then the judgement of the shapes calibrated on and
/// of the others.
pub fn render(rows: &[FidelityRow], calibrated_on: &[String]) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{:<22} {:<40} {:>10} {:>10} {:>9} {:>8}",
        "shape", "variant", "simulated", "real", "spread", "error"
    );
    for row in rows {
        let _ = writeln!(
            text,
            "{:<22} {:<40} {:>9.3}s {:>9.3}s {:>8.3}s {:>+7.1}%",
            row.shape,
            row.variant,
            row.simulated.as_secs_f64(),
            row.real_median(),
            row.real_spread(),
            row.error() * 100.0
        );
    }
    for shape in shapes(rows) {
        let of_shape: Vec<&FidelityRow> = rows.iter().filter(|row| row.shape == shape).collect();
        let ranking = ranking(&of_shape);
        let _ = writeln!(
            text,
            "{shape}: Kendall τ {:+.2} ({} concordant, {} discordant, {} clear inversions)",
            ranking.tau(),
            ranking.concordant,
            ranking.discordant,
            ranking.clear_inversions
        );
    }
    let (calibration, held_out): (Vec<FidelityRow>, Vec<FidelityRow>) =
        rows.iter().cloned().partition(|row| calibrated_on.contains(&row.shape));
    for (label, set) in [("calibrated on", calibration), ("held out", held_out)] {
        if set.is_empty() {
            continue;
        }
        let judgement = judge(&set);
        let _ = writeln!(
            text,
            "{label} ({} shapes): error median {:.1}%, p95 {:.1}%; Kendall τ {:+.2} pooled, {} clear inversions",
            shapes(&set).len(),
            judgement.median_error * 100.0,
            judgement.p95_error * 100.0,
            judgement.ranking.tau(),
            judgement.ranking.clear_inversions
        );
    }
    text
}

/// Where the bars of [`render_svg`] start, and how long the longest one is, in pixels.
const LABEL_WIDTH: f64 = 330.0;
const BAR_SPACE: f64 = 520.0;
const ROW_HEIGHT: f64 = 22.0;
const TOP: f64 = 46.0;

/// The report as an SVG chart: a row per shape and variant, the simulated job time as a filled
/// bar, the real median as an outlined one with a whisker from the fastest to the slowest real
/// run, and the error at the end of the row; a line between shapes.
pub fn render_svg(rows: &[FidelityRow]) -> String {
    let longest = rows
        .iter()
        .flat_map(|row| row.real.iter().copied().chain([row.simulated]))
        .map(|time| time.as_secs_f64())
        .fold(0.0, f64::max)
        .max(1e-3);
    let scale = BAR_SPACE / longest;
    let height = TOP + ROW_HEIGHT * rows.len() as f64 + 30.0;
    let width = LABEL_WIDTH + BAR_SPACE + 90.0;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <rect x=\"{LABEL_WIDTH}\" y=\"8\" width=\"12\" height=\"10\" fill=\"#4a78b5\"/><text x=\"{}\" y=\"17\">simulated</text>\n\
         <rect x=\"{}\" y=\"8\" width=\"12\" height=\"10\" fill=\"none\" stroke=\"#d2691e\" stroke-width=\"2\"/><text x=\"{}\" y=\"17\">real (median; fastest to slowest run)</text>\n",
        LABEL_WIDTH + 16.0,
        LABEL_WIDTH + 100.0,
        LABEL_WIDTH + 116.0
    );
    grid(&mut svg, longest, scale, height);
    let mut previous: Option<&str> = None;
    for (index, row) in rows.iter().enumerate() {
        let y = TOP + ROW_HEIGHT * index as f64;
        if previous.is_some_and(|shape| shape != row.shape) {
            let _ = writeln!(svg, "<line x1=\"0\" x2=\"{width}\" y1=\"{y}\" y2=\"{y}\" stroke=\"#999\"/>");
        }
        previous = Some(&row.shape);
        bar_row(&mut svg, row, y, scale);
    }
    svg.push_str("</svg>\n");
    svg
}

/// Vertical lines at round numbers of seconds, labelled under the chart.
fn grid(svg: &mut String, longest: f64, scale: f64, height: f64) {
    let step = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0]
        .into_iter()
        .find(|step| longest / step <= 8.0)
        .unwrap_or(longest / 8.0);
    let mut at = 0.0;
    while at <= longest * 1.0001 {
        let x = LABEL_WIDTH + at * scale;
        let _ = writeln!(
            svg,
            "<line x1=\"{x:.1}\" x2=\"{x:.1}\" y1=\"{TOP}\" y2=\"{:.1}\" stroke=\"#eee\"/><text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{at:.2}s</text>",
            height - 26.0,
            height - 12.0
        );
        at += step;
    }
}

fn bar_row(svg: &mut String, row: &FidelityRow, y: f64, scale: f64) {
    let label = format!("{} · {}", row.shape, row.variant).replace('&', "&amp;").replace('<', "&lt;");
    let seconds: Vec<f64> = row.real.iter().map(Duration::as_secs_f64).collect();
    let fastest = seconds.iter().copied().fold(f64::MAX, f64::min).min(row.real_median());
    let slowest = seconds.iter().copied().fold(0.0, f64::max);
    let middle = y + ROW_HEIGHT / 2.0;
    let _ = writeln!(
        svg,
        "<text x=\"4\" y=\"{:.1}\">{label}</text>\n\
         <rect x=\"{LABEL_WIDTH}\" y=\"{:.1}\" width=\"{:.1}\" height=\"7\" fill=\"#4a78b5\"/>\n\
         <rect x=\"{LABEL_WIDTH}\" y=\"{:.1}\" width=\"{:.1}\" height=\"7\" fill=\"none\" stroke=\"#d2691e\" stroke-width=\"1.5\"/>\n\
         <line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"{:.1}\" y2=\"{:.1}\" stroke=\"#d2691e\"/>\n\
         <text x=\"{:.1}\" y=\"{:.1}\">{:+.1}%</text>",
        middle + 4.0,
        y + 3.0,
        row.simulated.as_secs_f64() * scale,
        y + 11.0,
        row.real_median() * scale,
        LABEL_WIDTH + fastest * scale,
        LABEL_WIDTH + slowest * scale,
        y + 14.5,
        y + 14.5,
        LABEL_WIDTH + BAR_SPACE + 8.0,
        middle + 4.0,
        row.error() * 100.0
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(shape: &str, variant: &str, simulated_ms: u64, real_ms: &[u64]) -> FidelityRow {
        FidelityRow {
            shape: shape.into(),
            variant: variant.into(),
            simulated: Duration::from_millis(simulated_ms),
            real: real_ms.iter().map(|ms| Duration::from_millis(*ms)).collect(),
        }
    }

    #[test]
    fn errors_are_against_the_real_median() {
        let row = row("q3", "batch", 1100, &[900, 1000, 1300]);
        assert!((row.error() - 0.10).abs() < 1e-9);
        assert!((row.real_spread() - 0.4).abs() < 1e-9);
    }

    #[test]
    fn kendall_tau_counts_pairs_and_only_clear_inversions_matter() {
        let same = [row("q", "a", 100, &[100]), row("q", "b", 200, &[210]), row("q", "c", 300, &[290])];
        let agreeing = ranking(&same.iter().collect::<Vec<_>>());
        assert_eq!((agreeing.concordant, agreeing.discordant), (3, 0));
        assert_eq!(agreeing.tau(), 1.0);
        // b and c swapped: within noise (spread 40 ms, gap 10 ms) for one, clear for the other.
        let noisy = [row("q", "b", 200, &[280, 320]), row("q", "c", 300, &[270, 310])];
        let ranking_noisy = ranking(&noisy.iter().collect::<Vec<_>>());
        assert_eq!((ranking_noisy.discordant, ranking_noisy.clear_inversions), (1, 0));
        let clear = [row("q", "b", 200, &[400, 401]), row("q", "c", 300, &[200, 201])];
        assert_eq!(ranking(&clear.iter().collect::<Vec<_>>()).clear_inversions, 1);
        assert_eq!(ranking(&clear.iter().collect::<Vec<_>>()).tau(), -1.0);
    }

    #[test]
    fn the_chart_has_a_row_of_bars_per_shape_and_variant() {
        let rows = [row("q3", "a", 100, &[90, 110]), row("q3", "b", 200, &[200]), row("q7", "a<b", 150, &[100])];
        let svg = render_svg(&rows);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"), "{svg}");
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count());
        assert_eq!(svg.matches("fill=\"#4a78b5\"/>").count(), 3 + 1, "a simulated bar per row, and the legend's");
        assert!(svg.contains("q7 · a&lt;b") && svg.contains("+50.0%"), "{svg}");
        assert_eq!(svg.matches("stroke=\"#999\"").count(), 1, "one line between the two shapes");
    }

    #[test]
    fn the_report_judges_held_out_shapes_apart() {
        let rows = [row("q3", "a", 100, &[100]), row("q3", "b", 200, &[200]), row("q7", "a", 150, &[100])];
        let text = render(&rows, &["q3".to_string()]);
        assert!(text.contains("calibrated on (1 shapes): error median 0.0%"), "{text}");
        assert!(text.contains("held out (1 shapes): error median 50.0%, p95 50.0%"), "{text}");
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.95), Some(4.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
    }
}
