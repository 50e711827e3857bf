//! The real engine as real processes: `sluice-real local` starts a cluster of OS processes on
//! 127.0.0.1 (JobMaster, three TaskManagers, the durable store, the transactional store, the log,
//! the shuffle service), runs WordCount over 1,000,000 generated words in both modes, and judges
//! what the store committed with the simulation's checks: exactly the reference output, once,
//! nothing committed before its checkpoint, and both modes agreeing; without faults it restarts
//! nothing. Then the same with each role killed by SIGKILL mid-job and started again, and the
//! restarts that costs pinned.
//!
//! The binary is the real build (`cargo real-build`, without `--cfg madsim`), built once here
//! into `target/real`. Each run's files live in a temporary directory removed when the test
//! ends; every process listens on 127.0.0.1 only and exits when its launcher does.

mod support;

use std::path::Path;
use std::process::Command;

use support::{ONE_CLUSTER, real_binary, workspace};

/// Runs `sluice-real local` on the real-mode WordCount scenario; its exit status and output.
fn local(arguments: &[&str]) -> (i32, String) {
    let (status, text, _) = local_on(Path::new("scenarios/real/wordcount.yaml"), arguments);
    (status, text)
}

/// Runs `sluice-real local` on a scenario (relative to the workspace); its exit status, output
/// and how long the process ran (not counting the build or the wait for another cluster).
fn local_on(scenario: &Path, arguments: &[&str]) -> (i32, String, std::time::Duration) {
    let binary = real_binary();
    let _one = ONE_CLUSTER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let work = tempfile::tempdir().expect("a temporary directory");
    let started = std::time::Instant::now();
    let output = Command::new(binary)
        .arg("local")
        .arg(workspace().join(scenario))
        .arg("--work-dir")
        .arg(work.path())
        .args(arguments)
        .output()
        .expect("sluice-real runs");
    let ran = started.elapsed();
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    (output.status.code().unwrap_or(-1), text, ran)
}

/// The verdict line of a mode, and the lines under it.
fn mode_block<'a>(output: &'a str, mode: &str) -> &'a str {
    let start = output.find(&format!("  {mode} ")).unwrap_or_else(|| panic!("no {mode} line in:\n{output}"));
    let rest = &output[start..];
    // The block ends at the next line that is not indented under it.
    let mut end = rest.len();
    let mut offset = rest.find('\n').map_or(rest.len(), |newline| newline + 1);
    while offset < rest.len() {
        if !rest[offset..].starts_with("   ") {
            end = offset;
            break;
        }
        offset += rest[offset..].find('\n').map_or(rest.len() - offset, |newline| newline + 1);
    }
    &rest[..end]
}

fn assert_passes_in_both_modes(status: i32, output: &str) {
    assert_eq!(status, 0, "sluice-real local failed:\n{output}");
    for mode in ["streaming", "batch"] {
        let block = mode_block(output, mode);
        assert!(block.contains("PASS"), "{mode} did not pass:\n{output}");
    }
    assert!(mode_block(output, "streaming").contains("committed 1000000 rows"), "{output}");
    assert!(output.contains("streaming == batch: agree"), "{output}");
}

/// The restarts a mode's line reports: the simulation's figure (`sluice_harness::recovery`: new
/// attempts in the JobMaster's trace), read from the merged trace of the processes.
fn restarts(output: &str, mode: &str) -> u64 {
    let block = mode_block(output, mode);
    let before = block.split(" restart").next().unwrap_or_default();
    before.rsplit(' ').next().and_then(|count| count.parse().ok()).unwrap_or_else(|| panic!("no restarts in:\n{block}"))
}

/// Every role is ready (answers the readiness probe) before the job is submitted, so a run
/// without faults meets no service that is not up yet and restarts nothing, in either mode;
/// and a passing run prints no command to run it again.
#[test]
fn a_local_cluster_of_processes_commits_the_reference_output_in_both_modes_and_restarts_nothing() {
    let (status, output) = local(&[]);
    assert_passes_in_both_modes(status, &output);
    for mode in ["streaming", "batch"] {
        assert_eq!(restarts(&output, mode), 0, "{mode}: a run without faults restarted:\n{output}");
    }
    assert!(!output.contains("rerun:") && !output.contains("replay:"), "{output}");
}

/// One role killed with SIGKILL 60 ms after the submission and started again at once, in both
/// modes: exactly the reference output, once, and the restarts the kill costs, counted as in
/// simulation. `Some(n)`: exactly n restarts in each mode.
fn kill_mid_job(node: &str, expected_restarts: Option<u64>) -> String {
    kill_mid_job_of("scenarios/real/wordcount.yaml", node, expected_restarts)
}

/// [`kill_mid_job`] on another real-mode scenario.
fn kill_mid_job_of(scenario: &str, node: &str, expected_restarts: Option<u64>) -> String {
    let (status, output, _) = local_on(Path::new(scenario), &["--kill", &format!("{node}@60ms")]);
    assert_eq!(status, 0, "sluice-real local failed:\n{output}");
    assert!(output.contains("streaming == batch: agree"), "{output}");
    for mode in ["streaming", "batch"] {
        let block = mode_block(&output, mode);
        assert!(block.contains("PASS"), "{mode} did not pass:\n{output}");
        assert!(block.contains(&format!("kill -9 {node}")), "{mode}: the kill did not fire mid-job:\n{output}");
        assert!(!block.contains("never fired"), "{mode}: the kill came after the job ended:\n{output}");
        if let Some(expected) = expected_restarts {
            assert_eq!(restarts(&output, mode), expected, "{mode}: restarts after killing {node}:\n{output}");
        }
    }
    output
}

/// A TaskManager's tasks and partitions are lost with it: one restart (from the latest
/// checkpoint in streaming; of the regions that lost work in batch).
#[test]
fn a_task_manager_killed_with_sigkill_mid_job_costs_one_restart_and_no_row() {
    kill_mid_job("tm-0", Some(1));
}

/// A new JobMaster recovers the job from its log: that is the one restart (a run that restarts
/// again afterwards met a cluster that was not ready for it).
#[test]
fn a_job_master_killed_with_sigkill_mid_job_costs_one_restart_and_no_row() {
    kill_mid_job("jm", Some(1));
}

/// The store's journal brings back what it answered: committed transactions stay committed
/// (or the streaming run would commit fewer than its 1,000,000 rows), prepared ones committable,
/// fences raised. A transaction still being staged dies with the process: its writer's prepare
/// fails and its task restarts, once, if the kill caught one (so 0 or 1 restarts).
#[test]
fn a_transactional_store_killed_with_sigkill_mid_job_recovers_its_journal_and_loses_no_commit() {
    let output = kill_mid_job("txn-store", None);
    for mode in ["streaming", "batch"] {
        assert!(restarts(&output, mode) <= 1, "{mode}: more than the writer that lost its stage:\n{output}");
    }
}

/// A service that restarts is a pause, not a failure: its clients ride out the refused
/// connections (`reconnect_timeout`), and nothing restarts. WordCount reads the log and
/// checkpoints to the durable store; wordcount-files reads the files node.
#[test]
fn the_log_the_files_and_the_durable_store_killed_mid_job_restart_nothing() {
    for node in ["log", "durable-store"] {
        kill_mid_job(node, Some(0));
    }
    kill_mid_job_of("scenarios/real/wordcount-files.yaml", "files", Some(0));
}

/// The shuffle service keeps the partitions that finished (it recovers them from its disk) and
/// loses those being pushed: a producer that was pushing when it died restarts, once.
#[test]
fn a_shuffle_service_killed_mid_job_costs_at_most_the_producers_that_were_pushing() {
    let output = kill_mid_job_of("scenarios/real/wordcount-remote-shuffle.yaml", "shuffle-service", None);
    assert!(restarts(&output, "batch") <= 1, "{output}");
    assert_eq!(restarts(&output, "streaming"), 0, "streaming shuffles through pipelines, not the service:\n{output}");
}

/// A kill timed after the job's end never fires, and the job's wall time is the job's, not
/// the wait for the kill.
#[test]
fn a_kill_after_the_job_ended_does_not_stretch_its_wall_time() {
    let (status, output, ran) =
        local_on(Path::new("scenarios/real/wordcount.yaml"), &["--kill", "tm-0@20s", "--mode", "batch"]);
    assert_eq!(status, 0, "{output}");
    let block = mode_block(&output, "batch");
    assert!(block.contains("never fired: kill tm-0@20s"), "{output}");
    let wall: f64 = block
        .split("wall")
        .nth(1)
        .and_then(|rest| rest.trim_start().split('s').next())
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("no wall in:\n{block}"));
    assert!(wall < 20.0, "the wall waited for the kill: {wall} s\n{output}");
    assert!(ran < std::time::Duration::from_secs(20), "the launcher waited for the kill:\n{output}");
}

/// A kill that fired while the job ran, and the job restarted after it.
fn assert_killed_mid_job(output: &str, node: &str) {
    for mode in ["streaming", "batch"] {
        let block = mode_block(output, mode);
        assert!(block.contains(&format!("kill -9 {node}")), "{mode}: the kill did not fire mid-job:\n{output}");
        assert!(!block.contains("never fired"), "{mode}: the kill came after the job ended:\n{output}");
        assert!(!block.contains(" 0 restarts"), "{mode}: the kill did not restart anything:\n{output}");
    }
}

#[test]
fn a_simulation_build_of_sluice_real_refuses_to_run_and_says_how_to_build_it() {
    let output = Command::new(env!("CARGO_BIN_EXE_sluice-real"))
        .args(["local", "scenarios/real/wordcount.yaml"])
        .current_dir(workspace())
        .output()
        .expect("sluice-real runs");
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("cargo real"));
}

/// A cluster started by hand: one `sluice-real serve <node>` per role from one cluster file, as
/// on several machines, then `sluice-real submit`.
#[test]
fn a_cluster_started_by_hand_from_a_cluster_file_runs_a_submitted_job_exactly_once() {
    let binary = real_binary();
    let _one = ONE_CLUSTER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let work = tempfile::tempdir().expect("a temporary directory");
    let cluster = sluice_real::cluster::ClusterFile::on_loopback(3, 2).expect("free ports");
    let cluster_file = work.path().join("cluster.yaml");
    std::fs::write(&cluster_file, cluster.to_yaml()).unwrap();
    let scenario = workspace().join("scenarios/real/wordcount.yaml");
    let mut children: Vec<std::process::Child> = cluster
        .roles()
        .into_iter()
        .map(|(node, _)| {
            Command::new(binary)
                .args(["serve", &node, "--exit-with-stdin", "--cluster"])
                .arg(&cluster_file)
                .arg("--data")
                .arg(work.path().join("data"))
                .arg("--trace")
                .arg(work.path().join("trace"))
                .arg("--scenario")
                .arg(&scenario)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .spawn()
                .expect("a node starts")
        })
        .collect();
    let output = Command::new(binary)
        .args(["submit", "--mode", "batch", "--cluster"])
        .arg(&cluster_file)
        .arg(&scenario)
        .output()
        .expect("sluice-real runs");
    for child in &mut children {
        let _ = child.kill();
        let _ = child.wait();
    }
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&output.stderr));
    assert!(text.contains("batch finished, 4972 rows committed"), "{text}");
    assert!(text.contains("PASS  exactly the reference output, once"), "{text}");
}

/// A user's directory of text files, read by the file source in both modes with a TaskManager
/// killed mid-job, and left exactly as it was; the counts come out as committed CSV files
/// (the file sink: in-progress, pending at pre-commit, committed by rename).
#[test]
fn a_directory_of_text_files_is_counted_exactly_once_through_a_sigkill_and_left_unchanged() {
    let input = tempfile::tempdir().expect("a temporary directory");
    let mut contents = Vec::new();
    for file in 0..3u64 {
        let mut text = String::new();
        for line in 0..60_000u64 {
            let words: Vec<String> =
                (0..(line % 12 + 1)).map(|word| format!("w{}", (line * 7 + word * 13 + file) % 3000)).collect();
            text.push_str(&words.join(" "));
            text.push_str(if line % 5 == 0 { "\r\n" } else { "\n" });
        }
        let path = input.path().join(format!("part-{file}.txt"));
        std::fs::write(&path, &text).unwrap();
        contents.push((path, text));
    }
    let binary = real_binary();
    let _one = ONE_CLUSTER.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let work = tempfile::tempdir().expect("a temporary directory");
    let output = Command::new(binary)
        .arg("local")
        .arg(workspace().join("scenarios/real/wordcount-files.yaml"))
        .arg("--input")
        .arg(input.path())
        // Early: the batch run of these 1.17 M words ends about 130 ms after its submission
        // here, and `assert_killed_mid_job` fails a kill that came after the job's end.
        .args(["--kill", "tm-0@60ms", "--keep", "--work-dir"])
        .arg(work.path())
        .output()
        .expect("sluice-real runs");
    let text = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.status.code(), Some(0), "{text}");
    // What a user reads with any tool: the committed CSV files, one final count per word in batch.
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    for (_, written) in &contents {
        for word in written.split_whitespace() {
            *counts.entry(word.to_string()).or_default() += 1;
        }
    }
    let sinks = work.path().join("batch/data/durable-store/sinks/word_counts");
    let mut committed = std::collections::BTreeMap::<String, u64>::new();
    for entry in std::fs::read_dir(&sinks).unwrap_or_else(|error| panic!("{}: {error}\n{text}", sinks.display())) {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().unwrap().is_dir() {
            assert_eq!(name, "in-progress", "only committed files and in-progress/ are there");
            continue;
        }
        assert!(name.starts_with("part-"), "{name}");
        for line in std::fs::read_to_string(entry.path()).unwrap().lines() {
            let (word, count) = line.split_once(',').unwrap_or_else(|| panic!("{name}: `{line}` is not word,count"));
            assert!(committed.insert(word.to_string(), count.parse().unwrap()).is_none(), "{word} twice");
        }
    }
    assert_eq!(committed, counts, "the committed files hold exactly the counts");
    for mode in ["streaming", "batch"] {
        assert!(mode_block(&text, mode).contains("PASS"), "{mode}:\n{text}");
    }
    assert_killed_mid_job(&text, "tm-0");
    assert!(text.contains("streaming == batch: agree"), "{text}");
    for (path, written) in contents {
        assert_eq!(std::fs::read_to_string(&path).unwrap(), written, "{} changed", path.display());
    }
    assert_eq!(std::fs::read_dir(input.path()).unwrap().count(), 3, "nothing was added to the input");
}
