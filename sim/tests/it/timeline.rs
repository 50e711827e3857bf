//! Timeline snapshots: the text timeline of seed 1 of the canonical scenarios in both modes,
//! kept in `snapshots/`, and what a crash must show on it.

use sluice_engine::graph::ExecutionMode;
use sluice_sim::runner::run;
use sluice_sim::timeline::{self, Outcome, Timeline};

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
fn a_crash_shows_a_restart_and_an_interrupted_task() {
    for mode in ExecutionMode::ALL {
        let timeline = timeline_of("wordcount-tm-crash", mode);
        let text = timeline.to_text(80);
        let lane_rows: Vec<&str> = text.lines().filter(|line| line.starts_with("tm-")).collect();
        assert!(!lane_rows.is_empty(), "{mode}: no lanes in\n{text}");
        assert!(lane_rows.iter().any(|row| row.contains('|')), "{mode}: no restart line in\n{text}");
        assert!(
            timeline.bars().iter().any(|bar| matches!(bar.outcome, Outcome::Cancelled | Outcome::Failed)),
            "{mode}: no task was cancelled or failed in\n{text}"
        );
        let svg = timeline.to_svg();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"), "{mode}: {svg}");
        assert_eq!(svg.matches("<text").count(), svg.matches("</text>").count(), "{mode}: {svg}");
    }
}
