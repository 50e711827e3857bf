//! What a timeline of failures must show, so that it does not mislead: a killed TaskManager's
//! tasks stop at the kill (not when the JobMaster notices), its lanes are marked down until it
//! restarts, tasks run on after a JobMaster crash until their TaskManager notices, and work a
//! new JobMaster kept is told apart from work that ran again.

use super::*;

fn kill(index: usize, node: &str, restart_after: &str) -> TraceEvent {
    let detail = format!("kill {node} (restart after {restart_after})");
    let kind = if node == "jm" { "jm-crash" } else { "tm-crash" };
    TraceEvent::FaultInjected { index, kind: kind.to_string(), detail }
}

fn healed(index: usize, node: &str, restart_after: &str) -> TraceEvent {
    let detail = format!("kill {node} (restart after {restart_after})");
    TraceEvent::FaultHealed { index, kind: "tm-crash".to_string(), detail }
}

fn submitted() -> TraceEvent {
    TraceEvent::JobSubmitted {
        job_id: "demo".to_string(),
        mode: "batch".to_string(),
        vertices: vec!["Source".to_string(), "Sink".to_string()],
    }
}

fn ends(timeline: &Timeline) -> Vec<(String, u64, u64, Outcome, Fate)> {
    let millis = |time: Duration| time.as_millis() as u64;
    timeline.bars().iter().map(|bar| (bar.label(), millis(bar.start), millis(bar.end), bar.outcome, bar.fate)).collect()
}

fn expected(bars: &[(&str, u64, u64, Outcome, Fate)]) -> Vec<(String, u64, u64, Outcome, Fate)> {
    bars.iter().map(|(label, start, end, outcome, fate)| (label.to_string(), *start, *end, *outcome, *fate)).collect()
}

/// `tm-1` is killed at 20 ms and restarts at 60 ms; the JobMaster notices only at 65 ms.
fn task_manager_crash() -> Vec<TraceRecord> {
    vec![
        record(0, "jm", registered("tm-0", 1)),
        record(0, "jm", registered("tm-1", 2)),
        record(0, "jm", submitted()),
        record(10, "jm", deployed(0, 0, 0, "tm-0/s0")),
        record(10, "jm", deployed(0, 0, 1, "tm-1/s0")),
        record(10, "jm", deployed(0, 1, 1, "tm-1/s1")),
        record(20, "harness", kill(0, "tm-1", "40ms")),
        // Sent before the kill, received after it.
        record(25, "jm", finished(0, 0, 1)),
        // Deployed to the dead TaskManager: it never starts.
        record(30, "jm", deployed(0, 1, 0, "tm-1/s0")),
        record(50, "jm", finished(0, 0, 0)),
        record(60, "harness", healed(0, "tm-1", "40ms")),
        record(
            65,
            "jm",
            TraceEvent::RegionsRestarting {
                attempt: 1,
                delay_ms: 0,
                cause: "TaskManager tm-1 lost".to_string(),
                regions: 2,
                subtasks: vec!["v0[1]".to_string(), "v1[0]".to_string(), "v1[1]".to_string()],
                finished: 1,
                failed: vec![],
                lost: vec![],
            },
        ),
        record(70, "jm", deployed(1, 0, 1, "tm-1/s0")),
        record(80, "jm", finished(1, 0, 1)),
        record(100, "harness", TraceEvent::Harness { detail: "done".to_string() }),
    ]
}

#[test]
fn tasks_on_a_killed_task_manager_stop_at_the_kill() {
    let timeline = build(&task_manager_crash());
    let expected = expected(&[
        ("v0[0] a0", 10, 50, Outcome::Finished, Fate::Stands),
        ("v0[1] a0", 10, 20, Outcome::Finished, Fate::Rerun),
        ("v1[1] a0", 10, 20, Outcome::Killed, Fate::Stands),
        ("v1[0] a0", 30, 30, Outcome::Killed, Fate::Stands),
        ("v0[1] a1", 70, 80, Outcome::Finished, Fate::Stands),
    ]);
    assert_eq!(ends(&timeline), expected);
    let downtime = Downtime {
        task_manager: "tm-1".to_string(),
        from: Duration::from_millis(20),
        until: Some(Duration::from_millis(60)),
    };
    assert_eq!(timeline.downtimes(), [downtime]);
}

#[test]
fn a_killed_task_managers_lanes_are_down_until_it_restarts() {
    let text = build(&task_manager_crash()).to_text(20);
    let lanes: Vec<&str> = text.lines().skip(3).take(3).collect();
    assert_eq!(
        lanes,
        ["tm-0/s0  ..00000000...|......", "tm-1/s0  ..0~##1#####.|00....", "tm-1/s1  ..11########.|......"]
    );
    assert!(text.contains("\n# = TaskManager down, ~ = finished, then run again\n"), "{text}");
    let svg = build(&task_manager_crash()).to_svg();
    assert_eq!(svg.matches(r#"fill="url(#down)"/>"#).count(), 2, "one hatching per lane of tm-1:\n{svg}");
    assert!(svg.contains("<title>tm-1 down: killed at 0.020s, restarted at 0.060s</title>"), "{svg}");
    assert!(svg.contains("(killed with its TaskManager)</title>"), "{svg}");
    assert!(svg.contains(">TaskManager down (killed, until it restarted)</text>"), "{svg}");
}

/// The JobMaster dies at 30 ms and its successor recovers the job at 50 ms; `tm-0` notices at
/// 55 ms and cancels the task it still runs. The new JobMaster keeps `v0[0]` and re-runs `v0[1]`.
fn job_master_crash() -> Vec<TraceRecord> {
    vec![
        record(0, "jm", registered("tm-0", 2)),
        record(0, "jm", registered("tm-1", 1)),
        record(0, "jm", submitted()),
        record(10, "jm", deployed(0, 0, 0, "tm-0/s0")),
        record(10, "jm", deployed(0, 0, 1, "tm-1/s0")),
        record(20, "jm", finished(0, 0, 0)),
        record(20, "jm", finished(0, 0, 1)),
        record(20, "jm", deployed(0, 1, 0, "tm-0/s1")),
        record(30, "harness", kill(0, "jm", "10ms")),
        record(40, "harness", healed(0, "jm", "10ms")),
        record(50, "jm", TraceEvent::JobRecovered { job_id: "demo".to_string(), attempt: 1 }),
        record(
            55,
            "tm-0",
            TraceEvent::JobMasterLost { reason: "the JobMaster does not know it".to_string(), tasks_cancelled: 1 },
        ),
        record(
            60,
            "jm",
            TraceEvent::FinishedWorkReconciled {
                attempt: 1,
                kept: vec!["v0[0]".to_string()],
                rerun: vec!["v0[1]".to_string()],
                lost: vec!["ds0.p1@a0".to_string()],
            },
        ),
        record(65, "jm", deployed(1, 0, 1, "tm-1/s0")),
        record(75, "jm", finished(1, 0, 1)),
        record(75, "jm", deployed(1, 1, 0, "tm-0/s1")),
        record(90, "jm", finished(1, 1, 0)),
        record(100, "jm", TraceEvent::JobFinished { restarts: 0 }),
    ]
}

#[test]
fn after_a_job_master_crash_tasks_run_until_their_task_manager_notices() {
    let timeline = build(&job_master_crash());
    let expected = expected(&[
        ("v0[0] a0", 10, 20, Outcome::Finished, Fate::Kept),
        ("v0[1] a0", 10, 20, Outcome::Finished, Fate::Rerun),
        ("v1[0] a0", 20, 55, Outcome::Cancelled, Fate::Stands),
        ("v0[1] a1", 65, 75, Outcome::Finished, Fate::Stands),
        ("v1[0] a1", 75, 90, Outcome::Finished, Fate::Stands),
    ]);
    assert_eq!(ends(&timeline), expected);
    assert_eq!(timeline.downtimes(), [], "the JobMaster has no lanes to mark down");
}

#[test]
fn work_a_new_job_master_kept_is_drawn_apart_from_work_it_re_ran() {
    let timeline = build(&job_master_crash());
    let text = timeline.to_text(20);
    let lanes: Vec<&str> = text.lines().skip(3).take(3).collect();
    assert_eq!(
        lanes,
        ["tm-0/s0  ..0>......:.........", "tm-0/s1  ....111111:....111..", "tm-1/s0  ..0~......:..00....."]
    );
    assert!(text.contains("\n> = kept by a new JobMaster, ~ = finished, then run again\n"), "{text}");
    assert!(text.contains("   0.060s  a1 keeps 1 finished subtasks, re-runs 1 (v0[1])\n"), "{text}");
    let svg = timeline.to_svg();
    assert!(svg.contains("(finished; kept by a new JobMaster)</title>"), "{svg}");
    assert!(svg.contains("(finished; finished, then run again)</title>"), "{svg}");
    assert_eq!(
        svg.matches(r#"fill="url(#rerun)" stroke="none"/>"#).count(),
        2,
        "the bar and its legend swatch:\n{svg}"
    );
    assert!(svg.contains(">kept by a new JobMaster</text>") && svg.contains(">keeps 1 finished, re-runs 1</text>"));
}

#[test]
fn a_task_the_job_master_cancelled_is_not_extended_by_what_its_task_manager_says_later() {
    let mut records = job_master_crash()[..8].to_vec();
    let restart =
        TraceEvent::JobRestarting { attempt: 1, delay_ms: 0, cause: "boom".to_string(), regions: 1, subtasks: 1 };
    records.push(record(30, "jm", restart));
    records.push(record(40, "tm-0", TraceEvent::JobMasterLost { reason: "gone".to_string(), tasks_cancelled: 1 }));
    records.push(record(50, "harness", kill(0, "tm-0", "10ms")));
    let timeline = build(&records);
    assert_eq!(ends(&timeline)[2], ("v1[0] a0".to_string(), 20, 30, Outcome::Cancelled, Fate::Stands));
    // A task orphaned by a JobMaster crash runs on until its TaskManager dies.
    let mut records = job_master_crash()[..11].to_vec();
    records.push(record(52, "harness", kill(1, "tm-0", "10ms")));
    assert_eq!(ends(&build(&records))[2], ("v1[0] a0".to_string(), 20, 52, Outcome::Killed, Fate::Stands));
}
