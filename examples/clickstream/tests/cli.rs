//! The crate's own `sluice` command (`src/main.rs`) as a user runs it: a scenario over its CSV
//! file, the committed tables written with `--output`, and the two modes compared with `diff`.

use std::path::Path;
use std::process::Command;

fn clickstream(arguments: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_clickstream")).args(arguments).output().expect("the binary runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.code().unwrap_or(-1), text)
}

fn run_and_diff(scenario: &str, out: &Path) -> (i32, String) {
    let (status, text) = clickstream(&["run", scenario, "--seeds", "1", "--output", &out.display().to_string()]);
    assert_eq!(status, 0, "{text}");
    let seed = out.join("seed-1");
    clickstream(&["diff", &seed.join("streaming").display().to_string(), &seed.join("batch").display().to_string()])
}

#[test]
fn both_modes_commit_the_same_tables_and_diff_says_so() {
    let out = tempfile::tempdir().expect("a scratch directory");
    let (status, text) = run_and_diff("scenarios/clicks-faults.yaml", out.path());
    assert_eq!(status, 0, "{text}");
    assert!(text.contains("table `clicks_per_window`: agree (125 rows)"), "{text}");
    assert!(text.contains("table `clicks_per_page`: agree (8 rows)"), "{text}");
    assert!(out.path().join("seed-1/streaming/clicks_per_page.updates.csv").is_file(), "the streaming update log");
    for mode in ["streaming", "batch"] {
        let late = std::fs::read_to_string(out.path().join(format!("seed-1/{mode}/late_clicks.csv")));
        assert_eq!(late.ok().as_deref(), Some("key,value\n"), "{mode}: no click was late, an empty table");
    }
}

#[test]
fn with_late_clicks_diff_shows_what_streaming_sent_to_the_side_output() {
    let out = tempfile::tempdir().expect("a scratch directory");
    let (status, text) = run_and_diff("scenarios/late-clicks.yaml", out.path());
    assert_eq!(status, 1, "{text}");
    assert!(
        text.contains("table `late_clicks`: differ: 10 rows against 0; 10 only in the first (user-0,312,/late;"),
        "{text}"
    );
    assert!(text.contains("table `clicks_per_page`: agree"), "the page counts see every click: {text}");
    assert!(text.contains("table `clicks_per_window`: differ"), "the windows lack the late clicks: {text}");
}

#[test]
fn plan_help_lists_this_binarys_job_and_not_the_built_in_ones() {
    let (status, text) = clickstream(&["plan", "--help"]);
    assert_eq!(status, 0, "{text}");
    assert!(text.contains("The job: clickstream") && !text.contains("wordcount"), "{text}");
}
