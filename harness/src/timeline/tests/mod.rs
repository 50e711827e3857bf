//! Unit tests of the timeline: building, both renderings, and their helpers; what a picture of
//! failures must show in `failures.rs`, and hostile traces in `limits.rs`.

use std::time::Duration;

use sluice_engine::trace::TraceEvent;

use super::build::natural_key;
use super::svg::{escape, tick_label, tick_step};
use super::*;
use crate::trace::TraceRecord;

mod failures;
mod limits;

fn record(millis: u64, node: &str, event: TraceEvent) -> TraceRecord {
    TraceRecord { time: Duration::from_millis(millis), node: node.to_string(), event }
}

fn registered(name: &str, slots: u32) -> TraceEvent {
    TraceEvent::TaskManagerRegistered { name: name.to_string(), instance: 1, slots }
}

fn deployed(attempt: u32, vertex: u32, subtask: u32, slot: &str) -> TraceEvent {
    TraceEvent::TaskDeployed { attempt, vertex, subtask, slot: slot.to_string() }
}

fn finished(attempt: u32, vertex: u32, subtask: u32) -> TraceEvent {
    TraceEvent::TaskFinished {
        attempt,
        vertex,
        subtask,
        records_in: 1,
        records_out: 1,
        disk_bytes_read: 0,
        disk_bytes_written: 0,
        backpressure_micros: 0,
        peak_buffered_bytes: 0,
        work: Default::default(),
    }
}

/// Two TaskManagers (`tm-10` registered first, to check natural order), slot sharing in
/// `tm-2/s0`, a fault, a failure, a restart, a healing, a commit, and the job's end.
fn trace() -> Vec<TraceRecord> {
    vec![
        record(0, "jm", registered("tm-10", 1)),
        record(0, "jm", registered("tm-2", 2)),
        record(
            0,
            "jm",
            TraceEvent::JobSubmitted {
                job_id: "demo".to_string(),
                mode: "streaming".to_string(),
                vertices: vec!["Source: <log> & \"more\"".to_string(), "Sink: store".to_string()],
            },
        ),
        record(10, "jm", deployed(0, 0, 0, "tm-2/s0")),
        record(10, "jm", deployed(0, 1, 0, "tm-2/s0")),
        record(10, "jm", deployed(0, 0, 1, "tm-10/s0")),
        record(10, "jm", deployed(0, 1, 1, "tm-2/s1")),
        record(
            20,
            "harness",
            TraceEvent::FaultInjected { index: 0, kind: "kill".to_string(), detail: "kill tm-10 <now>".to_string() },
        ),
        record(
            30,
            "jm",
            TraceEvent::TaskFailed { attempt: 0, vertex: 0, subtask: 1, reason: "producer unreachable".to_string() },
        ),
        record(
            30,
            "jm",
            TraceEvent::JobRestarting {
                attempt: 1,
                delay_ms: 10,
                cause: "v0[1] failed".to_string(),
                regions: 2,
                subtasks: 2,
            },
        ),
        record(40, "jm", deployed(1, 0, 0, "tm-2/s0")),
        record(40, "jm", deployed(1, 1, 0, "tm-2/s0")),
        record(40, "jm", deployed(1, 0, 1, "tm-2/s1")),
        record(40, "jm", deployed(1, 1, 1, "tm-2/s1")),
        record(
            50,
            "harness",
            TraceEvent::FaultHealed { index: 0, kind: "kill".to_string(), detail: "kill tm-10 <now>".to_string() },
        ),
        record(60, "jm", finished(1, 0, 0)),
        record(60, "jm", finished(1, 0, 1)),
        record(70, "txn-store", TraceEvent::TransactionCommitted { txn_id: "demo-0".to_string(), epoch: 0, rows: 5 }),
        record(80, "jm", finished(1, 1, 0)),
        record(80, "jm", finished(1, 1, 1)),
        record(80, "jm", TraceEvent::JobFinished { restarts: 1 }),
        record(100, "harness", TraceEvent::Harness { detail: "done".to_string() }),
    ]
}

fn lane_names(timeline: &Timeline) -> Vec<&str> {
    timeline.lanes().iter().map(|lane| lane.name.as_str()).collect()
}

#[test]
fn lanes_follow_task_managers_then_slots_in_natural_order() {
    let timeline = build(&trace());
    assert_eq!(lane_names(&timeline), ["tm-2/s0", "tm-2/s1", "tm-10/s0"]);
    let mut names = vec!["tm-10/s1", "tm-2/s10", "tm-2/s9", "tm-1/s0", "tm-02/s3"];
    names.sort_by_key(|name| natural_key(name));
    assert_eq!(names, ["tm-1/s0", "tm-02/s3", "tm-2/s9", "tm-2/s10", "tm-10/s1"]);
}

#[test]
fn bars_end_by_outcome() {
    let timeline = build(&trace());
    let outcomes: Vec<(String, Outcome, u64)> =
        timeline.bars().iter().map(|bar| (bar.label(), bar.outcome, bar.end.as_millis() as u64)).collect();
    let expected = [
        ("v0[0] a0", Outcome::Cancelled, 30),
        ("v1[0] a0", Outcome::Cancelled, 30),
        ("v0[1] a0", Outcome::Failed, 30),
        ("v1[1] a0", Outcome::Cancelled, 30),
        ("v0[0] a1", Outcome::Finished, 60),
        ("v1[0] a1", Outcome::Finished, 80),
        ("v0[1] a1", Outcome::Finished, 60),
        ("v1[1] a1", Outcome::Finished, 80),
    ];
    let expected: Vec<(String, Outcome, u64)> =
        expected.iter().map(|(label, outcome, end)| (label.to_string(), *outcome, *end)).collect();
    assert_eq!(outcomes, expected);
}

#[test]
fn bars_without_an_end_are_unfinished_or_cancelled_by_a_job_failure() {
    let mut records = trace()[..7].to_vec();
    records.push(record(
        25,
        "jm",
        TraceEvent::TaskFailed { attempt: 0, vertex: 0, subtask: 1, reason: "boom".to_string() },
    ));
    records.push(record(26, "jm", TraceEvent::JobFailed { reason: "no restarts left".to_string() }));
    records.push(record(27, "jm", deployed(1, 0, 0, "tm-2/s1")));
    records.push(record(90, "harness", TraceEvent::Harness { detail: "done".to_string() }));
    let timeline = build(&records);
    let ends: Vec<(Outcome, u64)> =
        timeline.bars().iter().map(|bar| (bar.outcome, bar.end.as_millis() as u64)).collect();
    assert_eq!(
        ends,
        [
            (Outcome::Cancelled, 26),
            (Outcome::Cancelled, 26),
            (Outcome::Failed, 25),
            (Outcome::Cancelled, 26),
            (Outcome::Unfinished, 90),
        ]
    );
}

#[test]
fn a_recovery_by_a_new_job_master_cancels_older_attempts() {
    let mut records = trace()[..7].to_vec();
    let recovered = TraceEvent::JobRecovered { job_id: "demo".to_string(), attempt: 1 };
    records.push(record(50, "jm", recovered));
    records.push(record(60, "jm", deployed(1, 0, 0, "tm-2/s0")));
    records.push(record(70, "jm", finished(1, 0, 0)));
    let timeline = build(&records);
    let ends: Vec<(Outcome, u64)> =
        timeline.bars().iter().map(|bar| (bar.outcome, bar.end.as_millis() as u64)).collect();
    let cancelled = (Outcome::Cancelled, 50);
    assert_eq!(ends, [cancelled, cancelled, cancelled, cancelled, (Outcome::Finished, 70)]);
    assert!(timeline.to_text(7).contains("\ntm-2/s0   .0000:0\n"), "{}", timeline.to_text(7));
}

/// As a run records it: the JobMaster takes the job at 73 ms and deploys at 164 ms; the client
/// has its acknowledgement at 172 ms, from which a fault `at: 150ms` counts.
fn submitted_then_acknowledged() -> Vec<TraceRecord> {
    let submitted =
        TraceEvent::JobSubmitted { job_id: "demo".into(), mode: "batch".into(), vertices: vec!["a".into()] };
    let fault = TraceEvent::FaultInjected {
        index: 0,
        kind: "tm-crash".into(),
        detail: "kill tm-0 (restart after 100ms)".into(),
    };
    vec![
        record(0, "jm", registered("tm-0", 1)),
        record(73, "jm", submitted),
        record(164, "jm", deployed(0, 0, 0, "tm-0/s0")),
        record(172, "client", TraceEvent::SubmissionAcknowledged { job_id: "demo".into() }),
        record(322, "harness", fault),
        record(472, "jm", TraceEvent::JobFinished { restarts: 0 }),
    ]
}

#[test]
fn time_is_drawn_from_the_submission_that_fault_times_count_from() {
    let timeline = build(&submitted_then_acknowledged());
    assert_eq!(timeline.origin(), Origin { time: Duration::from_millis(172), basis: OriginBasis::Submission });
    let text = timeline.to_text(20);
    let header = "demo (batch): -0.172s .. 0.300s from the job's submission at 0.172s of the trace, 20 columns";
    assert!(text.starts_with(header), "{text}");
    assert!(text.contains("\n   0.000s  submission of demo acknowledged: fault times count from here\n"), "{text}");
    assert!(text.contains("\n   0.150s  fault #0: kill tm-0 (restart after 100ms)\n"), "{text}");
    let svg = timeline.to_svg();
    assert!(svg.contains("<title>0.150s fault #0: kill tm-0"), "{svg}");
    assert!(svg.contains("<title>v0[0] a0 a: -0.008s .. 0.150s (killed with its TaskManager)</title>"), "{svg}");
    assert!(svg.contains(">from submission</text>"), "the axis says where zero is:\n{svg}");
    let ticks: Vec<&str> = svg
        .split("text-anchor=\"middle\" fill=\"#333333\">")
        .skip(1)
        .map(|tick| tick.split('<').next().unwrap())
        .collect();
    assert_eq!(
        ticks,
        ["-150 ms", "-100 ms", "-50 ms", "0 ms", "50 ms", "100 ms", "150 ms", "200 ms", "250 ms", "300 ms"]
    );
    // Without the acknowledgement (an older trace), the JobMaster's record of the submission.
    let mut older = submitted_then_acknowledged();
    older.remove(3);
    assert_eq!(build(&older).origin(), Origin { time: Duration::from_millis(73), basis: OriginBasis::JobSubmitted });
}

#[test]
fn tasks_sharing_a_slot_are_stacked() {
    let timeline = build(&trace());
    let rows: Vec<(usize, usize)> = timeline.bars().iter().map(|bar| (bar.lane, bar.row)).collect();
    assert_eq!(rows, [(0, 0), (0, 1), (2, 0), (1, 0), (0, 0), (0, 1), (1, 0), (1, 1)]);
    let lane_rows: Vec<usize> = timeline.lanes().iter().map(|lane| lane.rows).collect();
    assert_eq!(lane_rows, [2, 2, 1]);
}

#[test]
fn the_text_form_shows_bars_markers_and_a_legend() {
    let expected = "\
demo (streaming): 0.000s .. 0.100s from the JobMaster's job_submitted at 0.000s of the trace, 20 columns of 5.000ms
faults    ....!.|...+.........
commits   ......|.......c.....
tm-2/s0   ..0000|.0000........
          ..1111|.11111111....
tm-2/s1   ..1111|.0000........
          ......|.11111111....
tm-10/s0  ..0000x.............
0 = Source: <log> & \"more\"
1 = Sink: store
! = fault injected, x = task failed, | = restart, + = fault healed, c = commit
   0.020s  fault #0: kill tm-10 <now>
   0.030s  a0 v0[1] failed: producer unreachable
   0.030s  restart as a1 in 10 ms: v0[1] failed
   0.050s  healed #0: kill tm-10 <now>
   0.070s  committed demo-0 (epoch 0, 5 rows)
   0.080s  job finished after 1 restart
";
    assert_eq!(build(&trace()).to_text(20), expected);
}

fn count(text: &str, pattern: &str) -> usize {
    text.matches(pattern).count()
}

#[test]
fn the_svg_is_well_formed_and_escaped() {
    let svg = build(&trace()).to_svg();
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.ends_with("</svg>\n"), "{svg}");
    assert_eq!(count(&svg, "<g>") + count(&svg, "<g "), count(&svg, "</g>"));
    assert_eq!(count(&svg, "<text"), count(&svg, "</text>"));
    assert_eq!(count(&svg, "<title>"), count(&svg, "</title>"));
    assert!(svg.contains("Source: &lt;log&gt; &amp; &quot;more&quot;"), "{svg}");
    assert!(svg.contains("kill tm-10 &lt;now&gt;"), "{svg}");
    assert!(!svg.contains("<log>") && !svg.contains("<now>"), "{svg}");
    for label in ["restart a1", "healed: kill tm-10 &lt;now&gt;", "job finished", ">commits<", ">tm-10/s0<"] {
        assert!(svg.contains(label), "{label} missing from {svg}");
    }
}

#[test]
fn escape_covers_the_xml_special_characters() {
    assert_eq!(escape(r#"a & b < c > d "e" 'f'"#), "a &amp; b &lt; c &gt; d &quot;e&quot; &apos;f&apos;");
}

#[test]
fn ticks_are_one_two_or_five_times_a_power_of_ten() {
    let step = |millis| tick_step(Duration::from_millis(millis)) / 1_000_000;
    assert_eq!([step(100), step(1234), step(2000), step(7000), step(45)], [10, 200, 200, 1000, 5]);
    for millis in [3, 45, 100, 999, 1234, 8765, 123_456] {
        let ticks = Duration::from_millis(millis).as_nanos() / tick_step(Duration::from_millis(millis));
        assert!((4..=10).contains(&ticks), "{millis} ms: {ticks} ticks");
    }
    let second = Duration::from_secs(1);
    assert_eq!(tick_label(1_200_000_000, 200_000_000, second), "1.2 s");
    assert_eq!(tick_label(0, 1_000_000_000, second), "0 s");
    assert_eq!(tick_label(50_000_000, 50_000_000, second), "0.05 s");
    assert_eq!(tick_label(20_000_000, 10_000_000, Duration::from_millis(100)), "20 ms");
    assert_eq!(tick_label(500_000, 500_000, Duration::from_millis(3)), "0.5 ms");
}

#[test]
fn an_empty_trace_still_renders() {
    let timeline = build(&[]);
    assert_eq!(
        timeline.to_text(4),
        "timeline: 0.000s .. 0.000s from the start of the trace, 4 columns of 0.000ms\nfaults   ....\ncommits  ....\n"
    );
    assert!(timeline.to_svg().ends_with("</svg>\n"));
}
