//! `sluice-real calibrate` and `sluice-real compare` on this machine: a calibration on tiny runs
//! writes a cost profile that loads, describes this machine and is taken by the simulator; and
//! the comparison runs each variant of a TPC-DS shape for real beside the simulator under the
//! committed profile of this machine, reporting error and ranking per variant; and the
//! failure-rate curve runs both failover strategies under kills, for real and simulated. Files
//! live in temporary directories removed when the tests end; every process listens on 127.0.0.1
//! only.

mod support;

use std::process::Command;
use std::time::Duration;

use sluice_harness::scenario::{CostProfile, Machine};
use support::{ONE_CLUSTER, real_binary, simulator_binary, workspace};

#[test]
fn a_calibration_on_tiny_runs_writes_a_profile_of_this_machine_that_the_simulator_takes() {
    let binary = real_binary();
    let _one = ONE_CLUSTER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let work = tempfile::tempdir().expect("a temporary directory");
    let out = work.path().join("tiny.yaml");
    let output = Command::new(binary)
        .args(["calibrate", "--elements", "4000", "--probe-mib", "8", "--out"])
        .arg(&out)
        .arg("--work-dir")
        .arg(work.path().join("runs"))
        .output()
        .expect("sluice-real runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "calibrate failed:\n{text}");
    let profile = CostProfile::load(&out).unwrap_or_else(|error| panic!("{error}\n{text}"));
    let this = Machine::this();
    assert_eq!(profile.machine, this, "{text}");
    let costs = &profile.costs;
    assert_eq!(costs.shared_machine_cores, Some(this.cores), "a local cluster shares this machine's cores");
    assert!(costs.disk_mib_per_second > 0 && costs.network_mib_per_second > 0, "{costs:?}");
    assert!(costs.page_cache_mib > 0 && costs.page_cache_mib <= this.memory_mib, "{costs:?}");
    let latency = costs.network_latency.expect("a latency was measured");
    assert!(latency < Duration::from_millis(10), "loopback RPC latency {latency:?}");
    // A fit in the wrong unit (seconds for microseconds) would be off by orders of magnitude;
    // no operator of these small jobs costs a millisecond a record on any machine.
    for kind in sluice_engine::resources::OperatorKind::ALL {
        let cost = costs.cpu.of(kind).unwrap_or_else(|| panic!("no cost fitted for {}: {costs:?}", kind.name()));
        assert!(cost < Duration::from_millis(1), "{} costs {cost:?} a record", kind.name());
    }
    assert!(profile.calibrated_on.is_empty(), "no shapes were given");
    let run = Command::new(simulator_binary())
        .current_dir(workspace())
        .args(["run", "scenarios/wordcount.yaml", "--seeds", "1", "--profile"])
        .arg(&out)
        .output()
        .expect("sluice runs");
    let ran = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success() && ran.contains("1 passed"), "the simulator under the profile:\n{ran}");
}

#[test]
fn a_comparison_puts_each_variants_simulated_job_time_beside_the_real_ones() {
    let binary = real_binary();
    let _one = ONE_CLUSTER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let work = tempfile::tempdir().expect("a temporary directory");
    let output = Command::new(binary)
        .current_dir(workspace())
        .args(["compare", "scenarios/tpcds/q3-sf001.yaml", "--runs", "2", "--profile", "profiles/this-machine.yaml"])
        .arg("--sluice")
        .arg(simulator_binary())
        .arg("--work-dir")
        .arg(work.path().join("runs"))
        .arg("--svg")
        .arg(work.path().join("q3.svg"))
        .output()
        .expect("sluice-real runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "compare failed:\n{text}");
    let svg = std::fs::read_to_string(work.path().join("q3.svg")).expect("the chart was written");
    assert_eq!(svg.matches("tpcds-q3-sf001 · ").count(), 5, "a row per variant:\n{svg}");
    let report = text.split_once("\nshape ").map(|(_, report)| report).unwrap_or_else(|| panic!("no report:\n{text}"));
    let rows: Vec<&str> = report.lines().filter(|line| line.starts_with("tpcds-q3-sf001 ")).collect();
    assert_eq!(rows.len(), 5, "batch under four exchange modes, and streaming:\n{text}");
    for row in rows {
        let figures: Vec<&str> = row.split_whitespace().rev().take(4).collect();
        assert!(figures.iter().all(|figure| figure.ends_with('s') || figure.ends_with('%')), "{row}");
    }
    assert!(report.contains("tpcds-q3-sf001: Kendall τ"), "{text}");
    assert!(
        report.contains("held out (1 shapes): error median"),
        "the committed profile was not fitted to it:\n{text}"
    );
}

#[test]
fn the_failure_rate_curve_runs_both_strategies_under_kills_for_real_and_simulated() {
    let binary = real_binary();
    let _one = ONE_CLUSTER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let work = tempfile::tempdir().expect("a temporary directory");
    // MTBF a tenth of a run: a kill almost surely lands while the job runs.
    let output = Command::new(binary)
        .current_dir(workspace())
        .args(["compare", "scenarios/tpcds-failover-curve.yaml", "--failover", "--mtbf", "0.1", "--runs", "1"])
        .arg("--sluice")
        .arg(simulator_binary())
        .arg("--work-dir")
        .arg(work.path().join("runs"))
        .output()
        .expect("sluice-real runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "compare --failover failed:\n{text}");
    for side in ["real", "simulated"] {
        let line = |strategy: &str| {
            let start = format!("  {side:<9} MTBF 0.100T {strategy:<12}");
            text.lines().find(|line| line.starts_with(&start)).unwrap_or_else(|| panic!("no {start}:\n{text}"))
        };
        for strategy in ["restart-all", "region"] {
            let kills: u64 = line(strategy)
                .split(", ")
                .next()
                .and_then(|head| head.split_whitespace().rev().nth(1))
                .and_then(|kills| kills.parse().ok())
                .unwrap_or_else(|| panic!("no kill count:\n{text}"));
            assert!(kills > 0, "{side} {strategy}: no kill fired:\n{text}");
        }
    }
    assert!(text.contains("tpcds-failover-curve for real:\nfault-free makespan"), "{text}");
    assert!(text.contains("tpcds-failover-curve simulated:\nfault-free makespan"), "{text}");
    let fidelity = text.lines().skip_while(|line| !line.contains("restart-all: real, simulated")).nth(1);
    assert!(fidelity.is_some_and(|row| row.trim_start().starts_with("0.100T")), "{text}");
}

#[test]
fn a_failure_rate_curve_needs_its_rates() {
    let output = Command::new(real_binary())
        .current_dir(workspace())
        .args(["compare", "scenarios/tpcds-failover-curve.yaml", "--failover"])
        .output()
        .expect("sluice-real runs");
    let text = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{text}");
    assert!(text.contains("--mtbf"), "{text}");
    let output = Command::new(real_binary())
        .current_dir(workspace())
        .args(["compare", "scenarios/tpcds-failover-curve.yaml", "--failover", "--mtbf", "0"])
        .output()
        .expect("sluice-real runs");
    let text = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.code() == Some(2) && text.contains("not a fraction of the makespan"), "{text}");
}
