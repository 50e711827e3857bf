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
    fn the_report_judges_held_out_shapes_apart() {
        let rows = [row("q3", "a", 100, &[100]), row("q3", "b", 200, &[200]), row("q7", "a", 150, &[100])];
        let text = render(&rows, &["q3".to_string()]);
        assert!(text.contains("calibrated on (1 shapes): error median 0.0%"), "{text}");
        assert!(text.contains("held out (1 shapes): error median 50.0%, p95 50.0%"), "{text}");
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.95), Some(4.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.5), Some(2.0));
    }
}
