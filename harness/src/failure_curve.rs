//! The failure-rate curve (Metzger's fine-grained recovery experiment): a job run under
//! TaskManager kills at exponential intervals of a fraction of its fault-free makespan, under
//! restart-all and region failover, simulated (`sluice compare --failover --mtbf`) or for real
//! (`sluice-real compare --failover --mtbf`). What both need: the scenario without its own
//! faults, the same scenario under one seed's kills, the kills that fired, and the tables.

use std::fmt::Write as _;
use std::time::Duration;

use sluice_engine::failover::{FailoverStrategy, RestartStrategy};
use sluice_engine::trace::TraceEvent;

use crate::faults::random::task_manager_kills;
use crate::scenario::Scenario;
use crate::scenario::limits::MAX_ATTEMPTS;
use crate::trace::TraceRecord;

/// A run under kills may take this many fault-free makespans; after that it did not finish.
pub const PATIENCE: u32 = 10;

/// The scenario without its faults, its restarts never giving up (the restart delay kept, or
/// 200 ms).
pub fn without_faults(scenario: &Scenario) -> Scenario {
    let delay = match scenario.restart_strategy {
        RestartStrategy::FixedDelay { delay, .. } => delay,
        _ => Duration::from_millis(200),
    };
    Scenario {
        faults: Vec::new(),
        random_faults: None,
        restart_strategy: RestartStrategy::FixedDelay { delay, attempts: MAX_ATTEMPTS },
        ..scenario.clone()
    }
}

/// `quiet` (a scenario [`without_faults`]) under seed `seed`'s kills: TaskManagers killed at
/// exponential intervals of mean `fraction × makespan`, each restarted `restart_after` later,
/// until [`PATIENCE`] × `makespan`, which is also the run's time limit (the liveness bound just
/// under it, so that a run that is still recovering when time is up counts as not finished).
pub fn under_kills(
    quiet: &Scenario,
    seed: u64,
    makespan: Duration,
    fraction: f64,
    restart_after: Duration,
) -> Scenario {
    let horizon = (makespan * PATIENCE).max(Duration::from_millis(10));
    let kills =
        task_manager_kills(seed, makespan.mul_f64(fraction), horizon, quiet.cluster.task_managers, restart_after);
    let liveness_bound = quiet.liveness_bound.min(horizon - Duration::from_millis(1));
    Scenario { faults: kills, time_limit: horizon, liveness_bound, ..quiet.clone() }
}

/// A mean time between failures as a fraction of the fault-free makespan (`--mtbf`), in
/// 0.01..=100.
pub fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(value) if (0.01..=100.0).contains(&value) => Ok(value),
        _ => Err(format!("`{text}` is not a fraction of the makespan in 0.01..=100")),
    }
}

/// How many TaskManager kills fired in a run: `tm-crash` in simulation, `kill` for real.
pub fn kills_fired(trace: &[TraceRecord]) -> u64 {
    let killed = |kind: &str| matches!(kind, "tm-crash" | "kill");
    trace
        .iter()
        .filter(|record| matches!(&record.event, TraceEvent::FaultInjected { kind, .. } if killed(kind)))
        .count() as u64
}

/// What one run under kills came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunUnderKills {
    /// Its makespan (or job time), if it finished within the time limit.
    pub finished: Option<Duration>,
    /// The kills that fired.
    pub kills: u64,
    /// The restarts it took.
    pub restarts: u64,
}

/// What one failover strategy's runs came to at one failure rate (`sluice compare --failover
/// --mtbf`): a point of the failure-rate curve.
#[derive(Clone, Debug, PartialEq)]
pub struct CurvePoint {
    /// The mean time between failures, as a fraction of the fault-free makespan.
    pub fraction: f64,
    /// The strategy.
    pub failover: FailoverStrategy,
    /// Runs (seeds).
    pub runs: usize,
    /// Makespans of the runs that finished within the time limit, over the fault-free makespan.
    pub ratios: Vec<f64>,
    /// TaskManager kills that fired, over all runs.
    pub kills: u64,
    /// Restarts, over all runs.
    pub restarts: u64,
}

impl CurvePoint {
    /// The point of `failover`'s runs at `fraction`, their makespans over `fault_free`.
    pub fn of(fraction: f64, failover: FailoverStrategy, runs: &[RunUnderKills], fault_free: Duration) -> CurvePoint {
        CurvePoint {
            fraction,
            failover,
            runs: runs.len(),
            ratios: runs
                .iter()
                .filter_map(|run| run.finished)
                .map(|finished| finished.as_secs_f64() / fault_free.as_secs_f64())
                .collect(),
            kills: runs.iter().map(|run| run.kills).sum(),
            restarts: runs.iter().map(|run| run.restarts).sum(),
        }
    }

    /// The mean makespan of the finished runs, in fault-free makespans.
    pub fn mean_ratio(&self) -> Option<f64> {
        (!self.ratios.is_empty()).then(|| self.ratios.iter().sum::<f64>() / self.ratios.len() as f64)
    }
}

/// The failure-rate curve as a table: a row per failure rate, restart-all and region failover
/// side by side (mean makespan in fault-free makespans, runs that finished, restarts per kill).
pub fn render_curve(points: &[CurvePoint], fault_free: Duration) -> String {
    let mut text = format!(
        "fault-free makespan {:.3}s; TaskManager kills at exponential intervals, mean MTBF\n\
         {:>6} {:>9}   {:<34} {:<34}\n",
        fault_free.as_secs_f64(),
        "MTBF",
        "",
        "restart-all: makespan, finished, restarts/kill",
        "region: makespan, finished, restarts/kill"
    );
    let mut fractions: Vec<f64> = points.iter().map(|point| point.fraction).collect();
    fractions.dedup();
    for fraction in fractions {
        let cell = |failover: FailoverStrategy| {
            let Some(point) = points.iter().find(|point| point.fraction == fraction && point.failover == failover)
            else {
                return String::new();
            };
            let makespan = point.mean_ratio().map_or_else(|| "   -  ".to_string(), |ratio| format!("{ratio:>5.2}×"));
            let per_kill = if point.kills == 0 { 0.0 } else { point.restarts as f64 / point.kills as f64 };
            format!("{makespan} {:>3}/{:<3} {per_kill:>5.2}", point.ratios.len(), point.runs)
        };
        let _ = writeln!(
            text,
            "{:>5.3}T {:>8.3}s   {:<34} {:<34}",
            fraction,
            fault_free.as_secs_f64() * fraction,
            cell(FailoverStrategy::RestartAll),
            cell(FailoverStrategy::Region)
        );
    }
    text
}

/// Two strategies whose mean makespans differ by less than this fraction are a tie: a run's
/// noise (real runs here spread by a few percent) decides no ranking.
pub const TIE: f64 = 0.05;

/// The real curve beside the simulated one, each in its own fault-free makespans: per failure
/// rate and strategy, the mean makespan of each and their difference; and whether the two
/// strategies rank the same way in both (a strategy none of whose runs finished is the slower;
/// means within [`TIE`] of each other rank neither first; `=` when neither finished a run).
pub fn render_curve_fidelity(real: &[CurvePoint], simulated: &[CurvePoint]) -> String {
    let mut text = format!(
        "{:>7}   {:<30} {:<30} {}\n",
        "MTBF", "restart-all: real, simulated", "region: real, simulated", "faster in both"
    );
    let mut fractions: Vec<f64> = real.iter().map(|point| point.fraction).collect();
    fractions.dedup();
    for fraction in fractions {
        let mean = |points: &[CurvePoint], failover| {
            points.iter().find(|point| point.fraction == fraction && point.failover == failover)?.mean_ratio()
        };
        let cell = |failover| {
            let (real, simulated) = (mean(real, failover), mean(simulated, failover));
            let shown = |ratio: Option<f64>| ratio.map_or_else(|| "-".to_string(), |ratio| format!("{ratio:.2}×"));
            let difference = match (real, simulated) {
                (Some(real), Some(simulated)) => format!("({:+.0}%)", (simulated / real - 1.0) * 100.0),
                _ => String::new(),
            };
            format!("{:>6} {:>6} {difference:<9}", shown(real), shown(simulated))
        };
        let faster = |points: &[CurvePoint]| {
            let (all, region) = (mean(points, FailoverStrategy::RestartAll), mean(points, FailoverStrategy::Region));
            match (all, region) {
                (Some(all), Some(region)) if region * (1.0 + TIE) < all => Some("region"),
                (Some(all), Some(region)) if all * (1.0 + TIE) < region => Some("restart-all"),
                (Some(_), Some(_)) => Some("neither"),
                (None, Some(_)) => Some("region"),
                (Some(_), None) => Some("restart-all"),
                (None, None) => None,
            }
        };
        let agreement = match (faster(real), faster(simulated)) {
            (Some(real), Some(simulated)) if real == simulated => format!("{real} in both"),
            (Some(real), Some(simulated)) => format!("DIFFER: {real} for real, {simulated} simulated"),
            _ => "=".to_string(),
        };
        let _ = writeln!(
            text,
            "{fraction:>6.3}T   {:<30} {:<30} {agreement}",
            cell(FailoverStrategy::RestartAll),
            cell(FailoverStrategy::Region)
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_curve_puts_both_strategies_of_a_rate_on_one_row() {
        let point = |failover, ratios: Vec<f64>, kills, restarts| CurvePoint {
            fraction: 0.2,
            failover,
            runs: 2,
            ratios,
            kills,
            restarts,
        };
        let points =
            [point(FailoverStrategy::RestartAll, vec![], 8, 6), point(FailoverStrategy::Region, vec![1.5, 2.5], 10, 5)];
        let text = render_curve(&points, Duration::from_secs(2));
        let row = text.lines().nth(2).expect("a row for the rate");
        assert_eq!(
            row.split_whitespace().collect::<Vec<_>>(),
            ["0.200T", "0.400s", "-", "0/2", "0.75", "2.00×", "2/2", "0.50"]
        );
        assert!(text.starts_with("fault-free makespan 2.000s"), "{text}");
    }

    fn quiet() -> Scenario {
        let text = "name: t\njob: tpcds\ncluster: { task_managers: 3, slots_per_task_manager: 2 }\n\
                    modes: [batch]\nfaults:\n  - { at: 10ms, kill: tm-0 }\n";
        without_faults(&Scenario::parse("t.yaml", text).expect("a valid scenario"))
    }

    #[test]
    fn a_scenario_under_kills_is_one_a_file_can_hold() {
        let quiet = quiet();
        assert!(quiet.faults.is_empty(), "without_faults drops the scenario's own faults");
        let scenario = under_kills(&quiet, 7, Duration::from_secs(2), 0.2, Duration::ZERO);
        assert_eq!(scenario.time_limit, Duration::from_secs(20));
        assert!(scenario.liveness_bound < scenario.time_limit);
        // Poisson with mean 0.4 s over 20 s: about 50 kills; far fewer or more is a broken draw.
        assert!((20..=100).contains(&scenario.faults.len()), "{} kills", scenario.faults.len());
        let reloaded = Scenario::parse("again.yaml", &scenario.to_yaml()).expect("the file is valid");
        assert_eq!(reloaded.faults, scenario.faults);
        let fewer = under_kills(&quiet, 7, Duration::from_secs(2), 2.0, Duration::ZERO);
        assert!(fewer.faults.len() < scenario.faults.len() / 4, "a lower rate kills less");
    }

    #[test]
    fn the_fidelity_table_says_when_the_strategies_rank_differently() {
        let point = |fraction, failover, ratios: Vec<f64>| CurvePoint {
            fraction,
            failover,
            runs: 2,
            ratios,
            kills: 2,
            restarts: 2,
        };
        let real = [
            point(0.2, FailoverStrategy::RestartAll, vec![3.0]),
            point(0.2, FailoverStrategy::Region, vec![1.5]),
            point(1.0, FailoverStrategy::RestartAll, vec![1.2]),
            point(1.0, FailoverStrategy::Region, vec![1.3]),
            point(2.0, FailoverStrategy::RestartAll, vec![1.0]),
            point(2.0, FailoverStrategy::Region, vec![1.04]),
        ];
        let simulated = [
            point(0.2, FailoverStrategy::RestartAll, vec![]),
            point(0.2, FailoverStrategy::Region, vec![1.8]),
            point(1.0, FailoverStrategy::RestartAll, vec![1.1]),
            point(1.0, FailoverStrategy::Region, vec![1.0]),
            point(2.0, FailoverStrategy::RestartAll, vec![1.0]),
            point(2.0, FailoverStrategy::Region, vec![1.1]),
        ];
        let text = render_curve_fidelity(&real, &simulated);
        let rows: Vec<&str> = text.lines().skip(1).collect();
        assert!(rows[0].contains("1.50×  1.80× (+20%)") && rows[0].ends_with("region in both"), "{text}");
        assert!(rows[1].ends_with("DIFFER: restart-all for real, region simulated"), "{text}");
        assert!(rows[2].ends_with("DIFFER: neither for real, restart-all simulated"), "4% is a tie: {text}");
    }
}
