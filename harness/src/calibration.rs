//! Calibration: what a real run's trace says about the work it did, and fitting the CPU costs
//! of a cost profile to what real runs consumed (Monotasks' per-resource decomposition with
//! Ernest's non-negative least squares). Pure functions: `sluice-real calibrate` runs the jobs
//! and measures the devices.
//!
//! The same engine counts the same work in a simulated and a real run (records handed to each
//! operator kind, bytes serialized: `TaskFinished.work`), so the CPU a real cluster's processes
//! consumed during a job is a sum over that work of unknown per-unit costs, plus a per-task and
//! a per-job overhead. Jobs that vary each kind on its own make those costs identifiable.

use std::collections::BTreeMap;
use std::time::Duration;

use sluice_engine::resources::{OperatorKind, Work};
use sluice_engine::trace::TraceEvent;

use crate::cost::CpuCosts;
use crate::trace::TraceRecord;

/// What a run did, as the fit reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// The work of every finished task.
    pub work: Work,
    /// Tasks that finished.
    pub tasks: u64,
}

/// The work of every task that finished in `trace`.
pub fn trace_features(trace: &[TraceRecord]) -> Features {
    let mut features = Features::default();
    for record in trace {
        if let TraceEvent::TaskFinished { work, .. } = &record.event {
            features.work.merge(work);
            features.tasks += 1;
        }
    }
    features
}

/// For each task that ran, the time from its deployment (the JobMaster's `TaskDeployed`) to its
/// start on the TaskManager (`TaskRunning`).
pub fn deploy_latencies(trace: &[TraceRecord]) -> Vec<Duration> {
    let mut deployed = BTreeMap::new();
    let mut latencies = Vec::new();
    for record in trace {
        match &record.event {
            TraceEvent::TaskDeployed { attempt, vertex, subtask, .. } => {
                deployed.insert((*attempt, *vertex, *subtask), record.time);
            }
            TraceEvent::TaskRunning { attempt, vertex, subtask } => {
                if let Some(at) = deployed.remove(&(*attempt, *vertex, *subtask)) {
                    latencies.push(record.time.saturating_sub(at));
                }
            }
            _ => {}
        }
    }
    latencies
}

/// One calibration run: what it did and the CPU time the cluster's processes spent on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CalibrationRun {
    /// What it did.
    pub features: Features,
    /// CPU time (user and system) of every process of the cluster, from submission to the end.
    pub cpu_time: Duration,
}

/// The fitted costs.
#[derive(Clone, Debug, PartialEq)]
pub struct CpuFit {
    /// CPU per record, by operator kind.
    pub cpu: CpuCosts,
    /// CPU per KiB serialized or deserialized.
    pub serialization_per_kib: Duration,
    /// CPU per task beyond its records (setting it up and reporting it).
    pub per_task: Duration,
    /// CPU per job beyond its tasks.
    pub per_job: Duration,
    /// Median relative error of the fit over the runs it was fitted to.
    pub median_error: f64,
}

/// The columns of the fit: a record of each kind, a KiB, a task, a job.
const COLUMNS: usize = OperatorKind::ALL.len() + 3;

fn row(features: &Features) -> [f64; COLUMNS] {
    let mut row = [0.0; COLUMNS];
    for kind in OperatorKind::ALL {
        row[kind.index()] = features.work.records[kind.index()] as f64;
    }
    row[COLUMNS - 3] = features.work.serialized_bytes as f64 / 1024.0;
    row[COLUMNS - 2] = features.tasks as f64;
    row[COLUMNS - 1] = 1.0;
    row
}

/// Fits the per-unit CPU costs to `runs` (see the module doc). A cost the runs cannot tell
/// apart from zero comes out zero; none comes out negative.
pub fn fit_cpu(runs: &[CalibrationRun]) -> CpuFit {
    let rows: Vec<Vec<f64>> = runs.iter().map(|run| row(&run.features).to_vec()).collect();
    let targets: Vec<f64> = runs.iter().map(|run| run.cpu_time.as_secs_f64()).collect();
    let solution = nnls(&rows, &targets);
    let seconds = |value: f64| Duration::from_secs_f64(value.max(0.0));
    let mut cpu = CpuCosts::default();
    for kind in OperatorKind::ALL {
        cpu.set(kind, seconds(solution[kind.index()]));
    }
    let errors: Vec<f64> = rows
        .iter()
        .zip(&targets)
        .filter(|(_, target)| **target > 0.0)
        .map(|(row, target)| (dot(row, &solution) - target).abs() / target)
        .collect();
    CpuFit {
        cpu,
        serialization_per_kib: seconds(solution[COLUMNS - 3]),
        per_task: seconds(solution[COLUMNS - 2]),
        per_job: seconds(solution[COLUMNS - 1]),
        median_error: median(&errors).unwrap_or(0.0),
    }
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Non-negative least squares: the `x ≥ 0` minimising `|A x − b|²`, by cyclic coordinate
/// descent on the normal equations, over columns scaled to unit length (a column of zeros
/// gets 0).
pub fn nnls(rows: &[Vec<f64>], targets: &[f64]) -> Vec<f64> {
    let columns = rows.first().map_or(0, Vec::len);
    let norms: Vec<f64> = (0..columns).map(|j| rows.iter().map(|row| row[j] * row[j]).sum::<f64>().sqrt()).collect();
    let scaled = |i: usize, j: usize| if norms[j] > 0.0 { rows[i][j] / norms[j] } else { 0.0 };
    let gram: Vec<Vec<f64>> = (0..columns)
        .map(|j| (0..columns).map(|k| (0..rows.len()).map(|i| scaled(i, j) * scaled(i, k)).sum()).collect())
        .collect();
    let projected: Vec<f64> = (0..columns).map(|j| (0..rows.len()).map(|i| scaled(i, j) * targets[i]).sum()).collect();
    let mut x = vec![0.0; columns];
    for _sweep in 0..20_000 {
        let mut moved = 0.0f64;
        for j in (0..columns).filter(|&j| gram[j][j] > 0.0) {
            let gradient = dot(&gram[j], &x) - projected[j];
            let next = (x[j] - gradient / gram[j][j]).max(0.0);
            moved = moved.max((next - x[j]).abs());
            x[j] = next;
        }
        if moved < 1e-12 {
            break;
        }
    }
    x.iter().zip(&norms).map(|(value, norm)| if *norm > 0.0 { value / norm } else { 0.0 }).collect()
}

/// The median of `values`, if any (the mean of the middle two of an even count).
pub fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let middle = sorted.len() / 2;
    match sorted.len() {
        0 => None,
        length if length % 2 == 1 => Some(sorted[middle]),
        _ => Some((sorted[middle - 1] + sorted[middle]) / 2.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nnls_recovers_non_negative_costs_and_clamps_a_negative_one() {
        // b = 2·x0 + 3·x1, exactly.
        let rows = vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![1.0, 1.0], vec![2.0, 1.0]];
        let targets = [2.0, 3.0, 5.0, 7.0];
        let x = nnls(&rows, &targets);
        assert!((x[0] - 2.0).abs() < 1e-9 && (x[1] - 3.0).abs() < 1e-9, "{x:?}");
        // The best unconstrained x1 would be negative: it is 0, and x0 fits alone.
        let x = nnls(&[vec![1.0, 1.0], vec![2.0, 1.0]], &[1.0, 3.0]);
        assert_eq!(x[1], 0.0);
        assert!(x[0] > 1.0, "{x:?}");
        assert_eq!(nnls(&[vec![1.0, 0.0]], &[4.0]), vec![4.0, 0.0], "a column of zeros gets 0");
    }

    fn run(scan: u64, map: u64, probe: u64, kib: u64, tasks: u64, cpu_micros: u64) -> CalibrationRun {
        let mut work = Work::of(OperatorKind::Scan, scan);
        work.add(OperatorKind::Map, map);
        work.add(OperatorKind::HashProbe, probe);
        work.serialized_bytes = kib * 1024;
        CalibrationRun { features: Features { work, tasks }, cpu_time: Duration::from_micros(cpu_micros) }
    }

    #[test]
    fn per_kind_costs_come_back_from_runs_that_vary_each_kind() {
        // scan 2 µs, map 0.5 µs, probe 3 µs, 1 µs a KiB, 1 ms a task, 5 ms a job.
        let cost = |scan: u64, map: u64, probe: u64, kib: u64, tasks: u64| {
            2 * scan + map / 2 + 3 * probe + kib + 1000 * tasks + 5000
        };
        let shapes = [(1000, 1000, 0, 0, 1), (1000, 5000, 0, 0, 1), (2000, 2000, 1000, 30, 3), (4000, 4000, 0, 100, 2)];
        let runs: Vec<CalibrationRun> = shapes
            .iter()
            .flat_map(|&(s, m, p, k, t)| {
                [1, 4].map(|scale| {
                    run(
                        s * scale,
                        m * scale,
                        p * scale,
                        k * scale,
                        t,
                        cost(s * scale, m * scale, p * scale, k * scale, t),
                    )
                })
            })
            .collect();
        let fit = fit_cpu(&runs);
        let near = |got: Duration, micros: f64| (got.as_secs_f64() * 1e6 - micros).abs() < 0.01 * micros.max(1.0);
        assert!(near(fit.cpu.scan.unwrap(), 2.0), "{fit:?}");
        assert!(near(fit.cpu.map.unwrap(), 0.5), "{fit:?}");
        assert!(near(fit.cpu.hash_probe.unwrap(), 3.0), "{fit:?}");
        assert!(near(fit.serialization_per_kib, 1.0), "{fit:?}");
        assert!(near(fit.per_task, 1000.0) && near(fit.per_job, 5000.0), "{fit:?}");
        assert_eq!(fit.cpu.sort, Some(Duration::ZERO), "no run sorted anything");
        assert!(fit.median_error < 1e-6, "{fit:?}");
    }

    #[test]
    fn medians_of_odd_and_even_counts() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
    }
}
