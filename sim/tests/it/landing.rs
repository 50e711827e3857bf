//! Faults that land: in every shipped scenario with faults, both modes, at least nine in ten
//! scheduled faults fire, on a sample of seeds from each scenario's own range.

use std::collections::BTreeMap;

use sluice_engine::trace::TraceEvent;
use sluice_harness::faults::Trigger;
use sluice_sim::runner::run;

use super::support::{load, workspace};

/// The share of scheduled faults that must fire, per scenario and mode.
const LANDED_AT_LEAST: f64 = 0.9;

/// Seeds sampled from the start of each scenario's range.
const SAMPLE: u64 = 4;

/// Every shipped scenario file with faults: `scenarios/` and `scenarios/tpcds/`, not the invalid
/// ones, the regressions (explicit schedules kept as they once failed), the canary or real mode's.
fn shipped_with_faults() -> Vec<String> {
    let mut files = Vec::new();
    for folder in ["scenarios", "scenarios/tpcds"] {
        let mut entries: Vec<_> = std::fs::read_dir(workspace().join(folder))
            .unwrap_or_else(|error| panic!("{folder}: {error}"))
            .map(|entry| entry.expect("a directory entry").path())
            .filter(|path| path.extension().is_some_and(|extension| extension == "yaml"))
            .collect();
        entries.sort();
        for path in entries {
            let name = path.file_name().and_then(|name| name.to_str()).expect("a file name").to_string();
            let relative = format!("{folder}/{name}");
            let scenario = load(&relative);
            if !scenario.faults.is_empty() || scenario.random_faults.as_ref().is_some_and(|random| random.count > 0) {
                files.push(relative);
            }
        }
    }
    files
}

#[test]
fn nine_in_ten_scheduled_faults_fire_in_every_shipped_scenario_and_mode() {
    let files = shipped_with_faults();
    assert!(files.len() >= 30, "the shipped scenarios with faults: {files:?}");
    let mut short = Vec::new();
    for file in &files {
        let scenario = load(file);
        // (scheduled, fired) per mode.
        let mut counts: BTreeMap<String, (usize, usize)> = BTreeMap::new();
        let sample = scenario.seeds.start..scenario.seeds.end.min(scenario.seeds.start + SAMPLE);
        for seed in sample.clone() {
            for &mode in &scenario.modes {
                let report = run(&scenario, mode, seed);
                let entry = counts.entry(mode.to_string()).or_default();
                entry.0 += report.schedule.len();
                entry.1 += report.schedule.len() - report.unfired_faults().len();
            }
        }
        for (mode, (scheduled, fired)) in counts {
            if (fired as f64) < LANDED_AT_LEAST * scheduled as f64 {
                let seeds = format!("--seeds {}..{}", sample.start, sample.end);
                short.push(format!("{file} {mode}: {fired} of {scheduled} fired (sluice sweep {file} {seeds})"));
            }
        }
    }
    assert!(short.is_empty(), "faults that did not land:\n{}", short.join("\n"));
}

/// A fault after a protocol step lands right after that step's `nth` occurrence: in trace order
/// after it, within a millisecond of simulated time (the step is an acknowledgement or a recovery, and the
/// fault must meet the state it leaves, not a later one).
#[test]
fn a_fault_after_a_protocol_step_lands_right_after_its_nth_occurrence() {
    let file = "scenarios/tpcds-after-steps.yaml";
    let scenario = load(file);
    for seed in scenario.seeds.start..scenario.seeds.start + 2 {
        for &mode in &scenario.modes {
            let report = run(&scenario, mode, seed);
            super::support::assert_passes(&scenario, &report, &format!("{file} seed {seed} {mode}"));
            for (index, fault) in report.schedule.iter().enumerate() {
                let Trigger::Step { step, nth } = fault.trigger else { continue };
                let position =
                    |found: &dyn Fn(&TraceEvent) -> bool| report.trace.iter().position(|record| found(&record.event));
                let injected =
                    position(&|event| matches!(event, TraceEvent::FaultInjected { index: i, .. } if *i == index))
                        .unwrap_or_else(|| panic!("{file} seed {seed}: fault #{index} ({}) fired", fault.trigger));
                let occurrences: Vec<usize> = (0..report.trace.len())
                    .filter(|at| step.events().contains(&report.trace[*at].event.kind()))
                    .collect();
                let step_at = occurrences[nth as usize - 1];
                assert!(step_at < injected, "{file} seed {seed}: fault #{index} after its step in trace order");
                let delay = report.trace[injected].time - report.trace[step_at].time;
                assert!(
                    delay < std::time::Duration::from_millis(1),
                    "{file} seed {seed}: fault #{index} ({}) fired right after its step, not {delay:?} later",
                    fault.trigger
                );
            }
        }
    }
}
