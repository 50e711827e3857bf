//! The shuffle's promises, end to end on the simulated cluster: backpressure bounds a producer's
//! memory, the remote shuffle service keeps a finished producer's output when its TaskManager
//! dies, a TaskManager-local partition lost with its TaskManager is reported as
//! partition-not-found naming it, and corrupted or lost partitions are detected, never read as
//! data.

use sluice_engine::graph::ExecutionMode;
use sluice_engine::shuffle::ShuffleEnvironmentConfig;
use sluice_engine::trace::TraceEvent;
use sluice_sim::report::RunReport;
use sluice_sim::scenario::Scenario;
use sluice_sim::trace::TraceRecord;

use super::support::{context, load};

/// Every seed of a scenario in its first mode, each judged to pass.
fn passing_runs(scenario: &Scenario) -> Vec<RunReport> {
    super::support::passing_runs(scenario, &scenario.modes[..1])
}

fn failures(trace: &[TraceRecord]) -> Vec<String> {
    trace
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::TaskFailed { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect()
}

fn finished(trace: &[TraceRecord], vertex: u32) -> Vec<&TraceEvent> {
    trace
        .iter()
        .map(|record| &record.event)
        .filter(|event| matches!(event, TraceEvent::TaskFinished { vertex: finished, .. } if *finished == vertex))
        .collect()
}

/// No subtask of these vertices finished twice: region failover left them alone.
fn assert_ran_once(report: &RunReport, vertices: &[u32]) {
    let mut seen = std::collections::BTreeSet::new();
    for record in &report.trace {
        if let TraceEvent::TaskFinished { vertex, subtask, .. } = &record.event
            && vertices.contains(vertex)
        {
            assert!(seen.insert((*vertex, *subtask)), "{}: v{vertex}[{subtask}] ran twice", context(report));
        }
    }
}

/// The `items` source (v4) ran on tm-2, alone: the premise of the lost-producer scenarios.
fn assert_items_source_ran_alone_on_tm_2(report: &RunReport) {
    let deployed: Vec<(u32, String)> = report
        .trace
        .iter()
        .filter_map(|record| match &record.event {
            TraceEvent::TaskDeployed { attempt: 0, vertex, slot, .. } if slot.starts_with("tm-2/") => {
                Some((*vertex, slot.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(deployed.first(), Some(&(4, "tm-2/s0".to_string())), "{}: {deployed:?}", context(report));
}

#[test]
fn backpressure_holds_producers_within_their_queues_while_a_consumer_is_slow() {
    let scenario = load("scenarios/wordcount-backpressure.yaml");
    assert_eq!(scenario.modes, vec![ExecutionMode::Streaming], "streaming: every exchange is pipelined");
    let queue = ShuffleEnvironmentConfig::default().pipelined_queue_buffers as u64;
    let subpartitions = u64::from(scenario.parallelism);
    let buffer = scenario.buffer_size as u64;
    for report in passing_runs(&scenario) {
        let producers = finished(&report.trace, 0);
        assert_eq!(producers.len(), 2, "{}", context(&report));
        let mut held_back = 0;
        for event in producers {
            let TraceEvent::TaskFinished { backpressure_micros, peak_buffered_bytes, records_out, .. } = event else {
                unreachable!()
            };
            assert!(
                *peak_buffered_bytes <= queue * subpartitions * buffer,
                "{}: a producer buffered {peak_buffered_bytes} bytes, over {queue} buffers × {subpartitions} \
                 subpartitions × {buffer} bytes",
                context(&report)
            );
            // It wrote far more than the bound: the bound is not met by having little to send.
            assert!(
                *records_out * 8 > 4 * queue * subpartitions * buffer,
                "{}: {records_out} records",
                context(&report)
            );
            if *backpressure_micros >= 1_000_000 && *peak_buffered_bytes > queue * buffer {
                held_back += 1;
            }
        }
        assert!(held_back >= 1, "{}: no producer was held back by the slow consumer", context(&report));
    }
}

#[test]
fn with_the_remote_shuffle_service_a_lost_producer_task_manager_costs_nothing() {
    let scenario = load("scenarios/tpcds-lost-producer-remote.yaml");
    for report in passing_runs(&scenario) {
        assert_items_source_ran_alone_on_tm_2(&report);
        let lost = report
            .trace
            .iter()
            .any(|record| matches!(&record.event, TraceEvent::TaskManagerLost { name, .. } if name == "tm-2"));
        assert!(lost, "{}: the JobMaster noticed tm-2's death", context(&report));
        assert_eq!(report.restarts(), 0, "{}: {:?}", context(&report), failures(&report.trace));
        assert_eq!(finished(&report.trace, 4).len(), 1, "{}: the items source ran once", context(&report));
    }
}

#[test]
fn with_task_manager_shuffle_a_lost_producer_task_manager_re_runs_only_that_producer() {
    let scenario = load("scenarios/tpcds-lost-producer-local.yaml");
    for report in passing_runs(&scenario) {
        assert_items_source_ran_alone_on_tm_2(&report);
        // The JobMaster knew the partition was gone: nobody had to fail reading it.
        assert_eq!(failures(&report.trace), Vec::<String>::new(), "{}", context(&report));
        assert_eq!(report.restarts(), 1, "{}", context(&report));
        assert_eq!(finished(&report.trace, 4).len(), 2, "{}: the items source ran again", context(&report));
        assert_ran_once(&report, &[0, 1, 2, 3, 5, 6]);
    }
}

#[test]
fn with_task_manager_shuffle_the_consumer_reports_the_lost_partition_by_name() {
    let scenario = load("scenarios/tpcds-lost-partition-local.yaml");
    for report in passing_runs(&scenario) {
        assert_items_source_ran_alone_on_tm_2(&report);
        let failures = failures(&report.trace);
        let named = failures.iter().any(|reason| {
            reason.starts_with("partition ds")
                && reason.contains(".p0@a0 (data set ")
                && reason.contains(", producer subtask 0) not found on tm-2 (")
        });
        assert!(named, "{}: no partition-not-found naming the items partition: {failures:?}", context(&report));
        assert!(report.restarts() >= 1, "{}", context(&report));
        assert_eq!(finished(&report.trace, 4).len(), 2, "{}: the items source ran again", context(&report));
        assert_ran_once(&report, &[0, 1, 2, 3]);
    }
}

fn corruption_scenario(shuffle: &str, node: &str) -> Scenario {
    let yaml = format!(
        "name: wordcount-corrupt-{node}
job: wordcount
params: {{ words: 20000, distinct_words: 500 }}
cluster: {{ task_managers: 2, slots_per_task_manager: 2 }}
parallelism: 2
modes: [batch]
shuffle: {shuffle}
seeds: 1..4
faults:
  - when: {{ vertex: 0, subtask: 0, state: finished }}
    corrupt_partition: {node}
"
    );
    Scenario::parse("corruption.yaml", &yaml).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn a_corrupted_partition_is_detected_and_never_read_as_data() {
    for (shuffle, node) in [("task-manager", "tm-0"), ("remote", "shuffle-service")] {
        let scenario = corruption_scenario(shuffle, node);
        // Passing runs committed exactly the reference output: nothing corrupt was read as data.
        for report in passing_runs(&scenario) {
            let corrupted = report.trace.iter().any(|record| {
                matches!(&record.event, TraceEvent::Harness { detail } if detail.starts_with(&format!("corrupted {node}:")))
            });
            assert!(corrupted, "{shuffle}, {}: the fault hit a partition file", context(&report));
            let failures = failures(&report.trace);
            assert!(
                failures.iter().any(|reason| reason.contains("corrupt: buffer checksum mismatch")),
                "{shuffle}, {}: the reader caught the corruption: {failures:?}",
                context(&report)
            );
            assert!(report.restarts() >= 1, "{shuffle}, {}", context(&report));
        }
    }
}
