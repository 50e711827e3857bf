//! Event time end to end: watermarks travel from the sources through the shuffle, so windows
//! and timers fire while the job runs — their results are committed with checkpoints long before
//! the end of input — and what streaming commits equals what batch commits.

use std::collections::BTreeSet;

use sluice_engine::connectors::txn_store::txn_checkpoint;
use sluice_engine::graph::ExecutionMode;
use sluice_engine::trace::TraceEvent;
use sluice_sim::report::RunReport;
use sluice_sim::scenario::Scenario;

use super::support::{context, load, passing_runs};

/// The checkpoints whose transactions made rows visible.
fn checkpoints_with_rows(report: &RunReport) -> BTreeSet<u64> {
    report
        .trace
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::TransactionCommitted { txn_id, rows, .. } if *rows > 0 => txn_checkpoint(txn_id),
            _ => None,
        })
        .collect()
}

fn fault_free(file: &str) -> Scenario {
    let scenario = load(file);
    Scenario { seeds: 1..4, faults: Vec::new(), random_faults: None, ..scenario }
}

#[test]
fn windows_and_timers_fire_as_watermarks_pass_not_only_at_the_end() {
    for file in ["scenarios/windowed-checkpoints.yaml", "scenarios/alerts-checkpoints.yaml"] {
        let scenario = fault_free(file);
        for report in passing_runs(&scenario, &[ExecutionMode::Streaming]) {
            // Were watermarks held back, every window and timer would fire when the sources end,
            // and all results would go out in one transaction per sink subtask.
            let checkpoints = checkpoints_with_rows(&report);
            assert!(checkpoints.len() >= 3, "{file} {}: rows only in checkpoints {checkpoints:?}", context(&report));
        }
    }
}

#[test]
fn without_checkpoints_streaming_event_time_still_agrees_with_batch() {
    for file in ["scenarios/windowed-checkpoints.yaml", "scenarios/alerts-checkpoints.yaml"] {
        let scenario = Scenario { checkpoints: None, ..fault_free(file) };
        // passing_runs judges exactly-once against the reference and streaming == batch.
        let reports = passing_runs(&scenario, &scenario.modes);
        assert_eq!(reports.len(), 3 * 2, "{file}");
    }
}
