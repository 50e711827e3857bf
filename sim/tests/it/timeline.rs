//! Timeline snapshots: the text timeline of seed 1 of the canonical scenarios in both modes,
//! kept in `snapshots/`, and what a crash must show on it (tasks on the killed TaskManager
//! once ran on, in the picture, until the JobMaster noticed).

use sluice_engine::graph::ExecutionMode;
use sluice_engine::trace::TraceEvent;
use sluice_sim::runner::run;
use sluice_sim::timeline::{self, Bar, Outcome, Timeline};

use super::support::load;

const SCENARIOS: [&str; 2] = ["wordcount", "wordcount-tm-crash"];

fn timeline_of(scenario: &str, mode: ExecutionMode) -> Timeline {
    let report = run(&load(&format!("scenarios/{scenario}.yaml")), mode, 1);
    timeline::build(&report.trace)
}

#[test]
fn timelines_of_the_canonical_scenarios() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../../../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for scenario in SCENARIOS {
            for mode in ExecutionMode::ALL {
                insta::assert_snapshot!(format!("timeline-{scenario}-{mode}"), timeline_of(scenario, mode).to_text(80));
            }
        }
    });
}

#[test]
fn a_crash_shows_a_restart_and_tasks_stopped_by_the_kill() {
    for mode in ExecutionMode::ALL {
        let report = run(&load("scenarios/wordcount-tm-crash.yaml"), mode, 1);
        let timeline = timeline::build(&report.trace);
        let text = timeline.to_text(80);
        let lane_rows: Vec<&str> = text.lines().filter(|line| line.starts_with("tm-")).collect();
        assert!(!lane_rows.is_empty(), "{mode}: no lanes in\n{text}");
        assert!(lane_rows.iter().any(|row| row.contains('|')), "{mode}: no restart line in\n{text}");
        // The scenario kills tm-1 (fault #0): what ran there stops at the kill, and its lanes
        // are down until it restarts, whenever the JobMaster notices.
        let killed_at = report
            .trace
            .iter()
            .find(|record| matches!(&record.event, TraceEvent::FaultInjected { index: 0, .. }))
            .map(|record| record.time)
            .expect("fault #0 fired");
        let down = &timeline.downtimes()[0];
        assert_eq!((down.task_manager.as_str(), down.from), ("tm-1", killed_at), "{mode}");
        let on_tm_1 = |bar: &&Bar| timeline.lanes()[bar.lane].task_manager() == "tm-1";
        let stopped: Vec<&Bar> = timeline
            .bars()
            .iter()
            .filter(on_tm_1)
            .filter(|bar| bar.start < killed_at && bar.end >= killed_at)
            .collect();
        assert!(!stopped.is_empty(), "{mode}: nothing ran on tm-1 at the kill:\n{text}");
        assert!(stopped.iter().all(|bar| bar.end == killed_at), "{mode}: a bar runs past the kill:\n{text}");
        let killed = timeline.bars().iter().filter(on_tm_1).any(|bar| bar.outcome == Outcome::Killed);
        assert!(killed, "{mode}: no task was killed with tm-1:\n{text}");
        assert!(text.lines().any(|line| line.starts_with("tm-1/") && line.contains('#')), "{mode}:\n{text}");
        // The scenario says `at: 60ms`, counted from the job's submission, and so does the picture.
        assert!(text.contains("\n   0.060s  fault #0: kill tm-1 (restart after 500ms)\n"), "{mode}:\n{text}");
        let svg = timeline.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"), "{mode}: {svg}");
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count(), "{mode}: {svg}");
    }
}
