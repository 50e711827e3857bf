//! Hostile traces: a trace file is input, so whatever it holds gives a timeline or an error that
//! names the line and the field, never a panic, a hang or memory in proportion to a number in
//! it (`"vertex": 1000000000` once made `sluice timeline` allocate a legend line per vertex).

use super::*;
use crate::trace::from_json_lines;

fn error_of(records: &[TraceRecord]) -> (usize, &'static str, String) {
    let error = try_build(records).expect_err("the trace is beyond the limits");
    (error.line, error.field, error.to_string())
}

/// Both renderings of a timeline that must draw, so that they are exercised too.
fn renders(records: &[TraceRecord]) -> Timeline {
    let timeline = try_build(records).unwrap_or_else(|error| panic!("{error}"));
    assert!(timeline.to_svg().ends_with("</svg>\n"));
    assert!(!timeline.to_text(80).is_empty());
    timeline
}

#[test]
fn a_vertex_beyond_the_limit_is_an_error_naming_its_line_and_field() {
    let text = concat!(
        r#"{"time_ns":0,"node":"jm","event":"task_manager_registered","name":"tm-0","instance":1,"slots":1}"#,
        "\n",
        r#"{"time_ns":5,"node":"jm","event":"task_deployed","attempt":0,"vertex":1000000000,"subtask":0,"slot":"tm-0/s0"}"#,
        "\n"
    );
    let (line, field, message) = error_of(&from_json_lines(text).unwrap());
    assert_eq!((line, field), (2, "vertex"));
    assert_eq!(message, "line 2: `vertex` is 1000000000, but a timeline draws job vertices 0 to 1023 only");
    let timeline = build(&from_json_lines(text).unwrap());
    assert!(timeline.title().starts_with("cannot draw this trace: line 2: `vertex`"), "{}", timeline.title());
    assert!(timeline.to_text(80).starts_with("cannot draw this trace"));
    let last = MAX_VERTICES as u32 - 1;
    assert_eq!(renders(&[record(0, "jm", deployed(0, last, 0, "tm-0/s0"))]).bars().len(), 1);
    let vertices = (0..=MAX_VERTICES).map(|vertex| format!("v{vertex}")).collect();
    let submitted = TraceEvent::JobSubmitted { job_id: "big".into(), mode: "batch".into(), vertices };
    assert_eq!(error_of(&[record(0, "jm", submitted)]).1, "vertices");
}

#[test]
fn slots_beyond_the_limit_are_an_error_however_many_are_claimed() {
    let (line, field, message) =
        error_of(&[record(0, "jm", registered("tm-0", 1)), record(0, "jm", registered("tm-1", u32::MAX))]);
    assert_eq!((line, field), (2, "slots"), "{message}");
    assert!(message.contains("is 4294967295: `tm-1/s2047` is one slot more than the 2048"), "{message}");
    // A TaskManager registering again (after a restart) adds no lanes, however often it does.
    let again: Vec<TraceRecord> = (0..20_000).map(|_| record(0, "jm", registered("tm-0", MAX_LANES as u32))).collect();
    assert_eq!(renders(&again).lanes().len(), MAX_LANES);
}

#[test]
fn thousands_of_lanes_are_an_error_at_the_first_one_too_many() {
    let records: Vec<TraceRecord> =
        (0..3000).map(|slot| record(1, "jm", deployed(0, 0, slot, &format!("tm-{slot}/s0")))).collect();
    let (line, field, message) = error_of(&records);
    assert_eq!((line, field), (MAX_LANES + 1, "slot"), "{message}");
    assert_eq!(renders(&records[..MAX_LANES]).lanes().len(), MAX_LANES);
}

#[test]
fn bars_that_never_end_are_an_error_once_they_need_too_many_rows() {
    // Every attempt of v0[0] deployed to one slot and never ended: each needs a row of its own.
    let records: Vec<TraceRecord> =
        (0..MAX_ROWS as u32 + 10).map(|attempt| record(1, "jm", deployed(attempt, 0, 0, "tm-0/s0"))).collect();
    let (line, field, message) = error_of(&records);
    assert_eq!((line, field), (MAX_ROWS + 1, "slot"), "{message}");
    assert!(message.contains("more than the 4096 a timeline draws"), "{message}");
}

#[test]
fn times_that_go_back_are_an_error() {
    let records = [record(10, "jm", deployed(0, 0, 0, "tm-0/s0")), record(5, "jm", finished(0, 0, 0))];
    let (line, field, message) = error_of(&records);
    assert_eq!((line, field), (2, "time_ns"));
    assert_eq!(
        message,
        "line 2: `time_ns` is 5000000 ns, before the 10000000 ns of the line above: a trace's times never go back"
    );
}

#[test]
fn huge_attempts_subtasks_and_times_draw_without_panicking() {
    let huge = u32::MAX;
    let restart =
        |attempt| TraceEvent::JobRestarting { attempt, delay_ms: 0, cause: "x".into(), regions: 0, subtasks: 0 };
    let regions = TraceEvent::RegionsRestarting {
        attempt: huge,
        delay_ms: u64::MAX,
        cause: "x".into(),
        regions: huge,
        subtasks: vec![format!("v0[{huge}]"), "v4294967296[0]".into(), "nonsense".into()],
        finished: huge,
        failed: vec!["nonsense".into()],
        lost: vec!["ds9.p9@a9".into(), "nonsense".into()],
    };
    let reconciled =
        TraceEvent::FinishedWorkReconciled { attempt: 0, kept: vec!["v0[0]".into()], rerun: vec![], lost: vec![] };
    let records = vec![
        record(0, "jm", deployed(huge, 0, huge, "tm-0/s0")),
        record(1, "jm", deployed(0, 1, 0, "tm-0/s0")),
        record(2, "jm", restart(huge)),
        record(3, "jm", regions),
        record(4, "jm", reconciled),
        record(5, "jm", finished(huge, 0, huge)),
        record(6, "jm", TraceEvent::JobFailed { reason: "x".into() }),
        TraceRecord { time: Duration::from_nanos(u64::MAX), node: "jm".into(), event: restart(0) },
    ];
    let timeline = renders(&records);
    assert_eq!(timeline.bars()[0].label(), "v0[4294967295] a4294967295");
    assert_eq!(timeline.end(), Duration::from_nanos(u64::MAX));
}

#[test]
fn markers_crowding_one_instant_do_not_pile_up_their_labels() {
    let fault =
        |index| TraceEvent::FaultInjected { index, kind: "slow-node".into(), detail: "slow tm-0 2x for 1s".into() };
    let records: Vec<TraceRecord> = (0..20_000).map(|index| record(5, "harness", fault(index))).collect();
    let svg = renders(&records).to_svg();
    assert_eq!(svg.matches("<title>0.005s fault #").count(), 20_000, "every marker is drawn");
    let labels = svg.matches(">slow tm-0 2x for 1s</text>").count();
    assert!((1..=12).contains(&labels), "{labels} labels");
}

#[test]
fn the_text_form_is_at_most_max_text_width_columns() {
    let text = renders(&[record(10, "jm", deployed(0, 0, 0, "tm-0/s0"))]).to_text(usize::MAX);
    assert!(text.lines().next().unwrap().contains(&format!(", {MAX_TEXT_WIDTH} columns of ")), "{text}");
    assert!(text.lines().all(|line| line.len() <= MAX_TEXT_WIDTH + 20));
}

/// A trace of many megabytes: 200 000 records of deployments, reports, restarts and TaskManager
/// losses. Quadratic work anywhere (say, every restart looking at every bar) would not finish.
#[test]
fn a_trace_of_many_megabytes_builds() {
    let mut records = Vec::new();
    for attempt in 0..25_000u32 {
        let time = u64::from(attempt) * 10;
        let slot = format!("tm-{}/s0", attempt % 8);
        records.push(record(time, "jm", deployed(attempt, 0, 0, &slot)));
        records.push(record(time, "jm", deployed(attempt, 1, 0, &slot)));
        records.push(record(time + 1, "jm", finished(attempt, 0, 0)));
        records.push(record(time + 2, "jm", TraceEvent::JobRecovered { job_id: "j".into(), attempt: attempt + 1 }));
        let lost = TraceEvent::JobMasterLost { reason: "x".into(), tasks_cancelled: 1 };
        records.push(record(time + 3, &format!("tm-{}", attempt % 8), lost));
        let rerun = vec!["v0[0]".to_string(); 2];
        let reconciled =
            TraceEvent::FinishedWorkReconciled { attempt: attempt + 1, kept: rerun.clone(), rerun, lost: vec![] };
        records.push(record(time + 4, "jm", reconciled));
        records.push(record(
            time + 5,
            "harness",
            TraceEvent::FaultInjected {
                index: attempt as usize,
                kind: "tm-crash".into(),
                detail: format!("kill tm-{} (restart after 1ms)", attempt % 8),
            },
        ));
        records.push(record(
            time + 6,
            "harness",
            TraceEvent::FaultHealed {
                index: attempt as usize,
                kind: "tm-crash".into(),
                detail: format!("kill tm-{} (restart after 1ms)", attempt % 8),
            },
        ));
    }
    assert_eq!(records.len(), 200_000);
    let timeline = try_build(&records).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(timeline.bars().len(), 50_000);
    assert_eq!(timeline.downtimes().len(), 25_000);
    assert!(timeline.to_text(100).len() > 100);
}
