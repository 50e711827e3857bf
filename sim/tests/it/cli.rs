//! The `sluice` command as a user runs it: the process, its exit status and its output.

use super::support::{sluice, workspace};

#[test]
fn run_reports_both_modes_exactly_once_and_in_agreement() {
    let (status, stdout, stderr) = sluice(&["run", "scenarios/wordcount-tm-crash.yaml", "--seeds", "1..3"]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    for line in ["seed 1", "seed 2", "streaming PASS", "batch PASS", "streaming == batch: agree", " 1 restart "] {
        assert!(stdout.contains(line), "missing `{line}` in:\n{stdout}");
    }
    assert!(stdout.contains("summary: 2 seeds × 2 modes: 2 passed, 0 failed, 0 expected-unrecoverable"), "{stdout}");
}

#[test]
fn rerunning_a_seed_prints_the_same_trace_hash() {
    let hash = |stdout: &str| -> Vec<String> {
        stdout.lines().filter_map(|line| line.split("trace ").nth(1).map(str::to_string)).collect()
    };
    let (_, first, _) = sluice(&["run", "scenarios/wordcount.yaml", "--seed", "5"]);
    let (_, second, _) = sluice(&["run", "scenarios/wordcount.yaml", "--seed", "5", "--check-determinism"]);
    assert_eq!(hash(&first).len(), 2, "{first}");
    assert_eq!(hash(&first), hash(&second));
}

#[test]
fn a_misspelled_field_exits_non_zero_naming_line_and_field() {
    let directory = std::env::temp_dir().join(format!("sluice-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let path = directory.join("misspelled.yaml");
    let text = std::fs::read_to_string(workspace().join("scenarios/wordcount-tm-crash.yaml")).unwrap();
    std::fs::write(&path, text.replace("restart_after:", "restart_afterr:")).unwrap();
    let line = 1 + text
        .lines()
        .position(|line| line.contains("restart_after:"))
        .expect("the scenario restarts its TaskManager");
    let (status, stdout, stderr) = sluice(&["run", path.to_str().unwrap()]);
    assert_eq!(status, 2, "{stdout}{stderr}");
    let expected = format!("misspelled.yaml:{line}: field `faults[0].restart_afterr`: unknown field");
    assert!(stderr.contains(&expected), "{stderr}");
    std::fs::remove_dir_all(&directory).unwrap();
}

#[test]
fn usage_errors_exit_with_two() {
    assert_eq!(sluice(&[]).0, 2);
    assert_eq!(sluice(&["run"]).0, 2);
    assert_eq!(sluice(&["run", "scenarios/wordcount.yaml", "--mode", "sideways"]).0, 2);
    assert_eq!(sluice(&["run", "scenarios/does-not-exist.yaml"]).0, 2);
}

#[test]
fn run_takes_a_parallelism_that_must_fit_the_cluster() {
    let (status, stdout, stderr) =
        sluice(&["run", "scenarios/wordcount.yaml", "--seed", "1", "--mode", "batch", "--parallelism", "1"]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    let header = "scenario `wordcount-p1`: job wordcount, 3 TaskManagers × 2 slots, parallelism 1";
    assert!(stdout.contains(header), "{stdout}");
    let (status, _, stderr) = sluice(&["run", "scenarios/wordcount.yaml", "--parallelism", "7"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("scenarios/wordcount.yaml with --parallelism 7: field `parallelism`: "), "{stderr}");
    assert!(stderr.contains("needs 7 slots at once, but the cluster has 6"), "{stderr}");
    assert!(sluice(&["run", "scenarios/wordcount.yaml", "--parallelism", "0"]).2.contains("1..=256"));
}

#[test]
fn plan_prints_the_plan_as_text_and_as_dot() {
    let (status, stdout, stderr) = sluice(&["plan", "tpcds", "--exchange-mode", "pointwise-edges-pipelined"]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("JobGraph `tpcds` (batch, pointwise-edges-pipelined)"), "{stdout}");
    assert!(stdout.contains("slots needed at once: 2"), "{stdout}");
    let (status, dot, _) = sluice(&["plan", "tpcds", "--format", "dot"]);
    assert_eq!(status, 0);
    assert!(dot.starts_with("digraph \"tpcds\""), "{dot}");
    let (status, _, stderr) = sluice(&["plan", "wordcont"]);
    assert_eq!(status, 2);
    assert!(stderr.contains("known jobs: wordcount, wordcount-files, tpcds"), "{stderr}");
}

#[test]
fn compare_tables_every_exchange_mode_against_all_blocking() {
    let directory = std::env::temp_dir().join(format!("sluice-compare-{}", std::process::id()));
    let (status, stdout, stderr) =
        sluice(&["compare", "scenarios/tpcds.yaml", "--seeds", "1..3", "--failures", directory.to_str().unwrap()]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    for row in [
        "all-edges-blocking",
        "forward-edges-pipelined",
        "pointwise-edges-pipelined",
        "all-edges-pipelined",
        "baseline",
    ] {
        assert!(stdout.contains(row), "missing `{row}` in:\n{stdout}");
    }
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn compare_with_failover_shows_region_failover_recomputing_less_than_restart_all() {
    let directory = std::env::temp_dir().join(format!("sluice-compare-failover-{}", std::process::id()));
    let arguments = [
        "compare",
        "scenarios/tpcds-tm-crash-regions.yaml",
        "--failover",
        "--seeds",
        "1..3",
        "--failures",
        directory.to_str().unwrap(),
    ];
    let (status, stdout, stderr) = sluice(&arguments);
    assert_eq!(status, 0, "{stdout}{stderr}");
    // The recomputed-records column is the one before the recovery time.
    let recomputed = |failover: &str| -> f64 {
        let row = stdout
            .lines()
            .find(|line| line.starts_with("batch") && line.split_whitespace().nth(2) == Some(failover))
            .unwrap_or_else(|| panic!("no `{failover}` row in:\n{stdout}"));
        let fields: Vec<&str> = row.split_whitespace().collect();
        fields[fields.len() - 2].parse().unwrap_or_else(|_| panic!("not a number in `{row}`"))
    };
    let (all, region) = (recomputed("restart-all"), recomputed("region"));
    assert!(all > 0.0 && region < all, "restart-all recomputed {all}, region {region}:\n{stdout}");
    let _ = std::fs::remove_dir_all(&directory);
}

#[test]
fn a_run_that_recovered_says_what_recovery_cost() {
    // tm-2 dies with the `items` partition: region failover re-runs that one source (500 items).
    let (status, stdout, stderr) = sluice(&["run", "scenarios/tpcds-lost-producer-local.yaml", "--seed", "1"]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("recovery: 1 subtask and 1 region restarted, 500 records recomputed, "), "{stdout}");
}

#[test]
fn every_command_has_help_that_documents_the_exit_statuses() {
    for command in ["run", "sweep", "merge", "replay", "shrink", "timeline", "plan", "compare"] {
        let (status, stdout, stderr) = sluice(&[command, "--help"]);
        assert_eq!(status, 0, "{command} --help: {stderr}");
        assert!(stdout.contains("Usage: sluice ") && stdout.contains("Exit status:"), "{command}:\n{stdout}");
        assert!(stdout.contains("3  a seed crashed its process"), "{command}:\n{stdout}");
    }
    let (status, stdout, _) = sluice(&["--help"]);
    assert_eq!(status, 0);
    assert!(stdout.contains("sweep") && stdout.contains("merge") && !stdout.contains("__worker"), "{stdout}");
}

#[test]
fn the_version_names_the_crate_version_and_the_git_revision() {
    let (status, stdout, _) = sluice(&["--version"]);
    assert_eq!(status, 0);
    assert_eq!(
        stdout.trim(),
        format!("sluice {} (git {})", env!("CARGO_PKG_VERSION"), sluice_sim::replay::GIT_REVISION)
    );
}

#[test]
fn a_closed_output_pipe_ends_the_command_quietly() {
    use std::io::{BufRead, BufReader};
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_sluice"))
        .args(["run", "scenarios/wordcount.yaml", "--mode", "batch", "--seeds", "1..1000", "--print-trace"])
        .current_dir(workspace())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sluice starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    // The reader is gone, as after `| head -1`.
    let output = child.wait_with_output().unwrap();
    assert!(first.starts_with("scenario `wordcount`"), "{first}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(141), "as a shell reports a process a closed pipe ended: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn counts_of_one_are_singular() {
    let (status, stdout, stderr) =
        sluice(&["run", "scenarios/wordcount-tm-crash.yaml", "--seed", "1", "--mode", "batch"]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.contains("summary: 1 seed × 1 mode: 1 passed"), "{stdout}");
    assert!(stdout.contains("3 random faults per seed"), "{stdout}");
    let (_, stdout, _) = sluice(&["run", "scenarios/tpcds-lost-producer-local.yaml", "--seed", "1"]);
    assert!(stdout.contains("1 subtask and 1 region restarted"), "{stdout}");
}

#[test]
fn a_trace_that_cannot_be_written_is_refused_before_anything_runs() {
    let (status, stdout, stderr) = sluice(&[
        "run",
        "scenarios/wordcount.yaml",
        "--seed",
        "1",
        "--mode",
        "batch",
        "--trace",
        "/nonexistent/x.jsonl",
    ]);
    assert_eq!(status, 2, "{stdout}");
    assert!(stderr.contains("no directory /nonexistent") && stdout.is_empty(), "{stderr}{stdout}");
}

#[test]
fn a_job_master_failover_counts_one_restart_everywhere() {
    let (status, stdout, stderr) = sluice(&["run", "scenarios/tpcds-jm-tm-crash.yaml", "--seed", "1", "--print-trace"]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.contains("PASS  committed ") && stdout.contains("  1 restart  "), "{stdout}");
    assert!(stdout.contains("job finished after 1 restart\n"), "{stdout}");
    let recovery = stdout.lines().find(|line| line.contains("recovery: ")).expect("a recovery line");
    assert!(!recovery.contains(" 0 regions restarted"), "the recovery re-ran regions: {recovery}");
}
