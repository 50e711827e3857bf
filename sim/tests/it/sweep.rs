//! `sluice sweep` as CI runs it: worker processes that isolate crashes, memory that does not grow
//! with the seed count, shards that merge into the unsharded counts, JSON lines and JUnit.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::support::sluice;

/// A scratch directory, removed when dropped (the test's files never outlive it).
fn scratch(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new().prefix(&format!("sluice-sweep-{name}-")).tempdir().expect("a scratch directory")
}

/// A small WordCount scenario in `directory`, with `extra` lines.
fn small_scenario(directory: &Path, name: &str, extra: &str) -> String {
    let path = directory.join(format!("{name}.yaml"));
    let text = format!(
        "name: {name}\njob: wordcount\nparams: {{ words: 300, distinct_words: 20 }}\n\
         cluster: {{ task_managers: 3, slots_per_task_manager: 2 }}\nseeds: 1..6\n{extra}"
    );
    std::fs::write(&path, text).expect("a scenario file");
    path.display().to_string()
}

/// The JSON lines of a `--format json` output: the seeds' and the summary.
fn json_lines(stdout: &str) -> (Vec<Value>, Value) {
    let lines: Vec<Value> =
        stdout.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|_| panic!("not JSON: {line}"))).collect();
    let (summary, seeds) = lines.split_last().expect("a summary line");
    assert_eq!(summary["type"], "summary", "{stdout}");
    assert!(seeds.iter().all(|line| line["type"] == "seed"), "{stdout}");
    (seeds.to_vec(), summary.clone())
}

#[test]
fn a_seed_that_crashes_its_worker_is_reported_and_the_sweep_goes_on() {
    let temporary = scratch("crash");
    let directory = temporary.path();
    let failures = directory.join("failures");
    let kinds = [
        ("panic", "panicked outside the simulation (exit status 101): thread 'main'"),
        ("abort", "killed by signal 6 (SIGABRT)"),
        ("stack-overflow", "has overflowed its stack"),
        ("hang", "the watchdog killed its worker (--seed-timeout)"),
        ("exhaust-memory", "memory allocation of"),
    ];
    for (how, said) in kinds {
        let name = format!("crash-{how}");
        let file =
            small_scenario(directory, &name, &format!("modes: [batch]\nharness_crash: {{ seed: 3, how: {how} }}\n"));
        // Only the hang must meet the watchdog: a panicking debug worker may spend seconds
        // printing its backtrace (RUST_BACKTRACE in CI) on a loaded machine before it exits.
        let timeout = if how == "hang" { "2s" } else { "60s" };
        let arguments = [
            "sweep",
            &file,
            "--jobs",
            "2",
            "--format",
            "json",
            "--seed-timeout",
            timeout,
            "--memory-limit",
            "256MiB",
            "--failures",
            failures.to_str().unwrap(),
        ];
        let (status, stdout, stderr) = sluice(&arguments);
        assert_eq!(status, 3, "{how}: a crash exits 3\n{stdout}{stderr}");
        let (seeds, summary) = json_lines(&stdout);
        assert_eq!(seeds.len(), 5, "{how}: every other seed still ran");
        assert_eq!((summary["passed"].as_u64(), summary["crashed"].as_u64()), (Some(4), Some(1)), "{how}: {summary}");
        let crashed = seeds.iter().find(|seed| seed["outcome"] == "crashed").expect("a crashed seed");
        assert_eq!(crashed["seed"], 3);
        let crash = crashed["crash"].as_str().unwrap();
        assert!(crash.contains(said), "{how}: {crash}");
        let replay = crashed["replay_file"].as_str().expect("a replay file");
        let recorded = std::fs::read_to_string(replay).expect("the replay file exists");
        assert!(recorded.contains("check: crashed") && recorded.contains("seeds: 3..4"), "{recorded}");
    }
}

#[test]
fn a_worker_s_memory_does_not_grow_with_the_seeds_it_runs() {
    // One worker runs all 200 seeds. Before madsim's runtime dropped its tasks, each seed of this
    // scenario left about 1.9 MB behind: 340 MB between seed 20 and seed 200.
    let temporary = scratch("memory");
    let directory = temporary.path();
    let arguments = [
        "sweep",
        "scenarios/wordcount.yaml",
        "--mode",
        "batch",
        "--seeds",
        "1..201",
        "--jobs",
        "1",
        "--seeds-per-worker",
        "1000",
        "--format",
        "json",
        "--failures",
        directory.to_str().unwrap(),
    ];
    let (status, stdout, stderr) = sluice(&arguments);
    assert_eq!(status, 0, "{stderr}");
    let (seeds, summary) = json_lines(&stdout);
    let rss = |seed: u64| {
        let line = seeds.iter().find(|line| line["seed"] == seed).expect("every seed has a line");
        line["worker_rss_kb"].as_u64().expect("the worker reports its memory")
    };
    let growth = rss(200).saturating_sub(rss(20));
    assert!(growth < 50 * 1024, "the worker grew {growth} KiB from seed 20 to seed 200");
    assert!(summary["worker_peak_rss_kb"].as_u64().unwrap() > 0);
}

/// The counts of a summary that must not depend on how the sweep was split.
fn counts(summary: &Value) -> BTreeMap<&'static str, Value> {
    let groups = |groups: &Value| -> Value {
        let mut seeds: BTreeMap<String, Value> = BTreeMap::new();
        for (check, group) in groups.as_object().into_iter().flatten() {
            seeds.insert(check.clone(), group["seeds"].clone());
        }
        serde_json::to_value(seeds).unwrap()
    };
    BTreeMap::from([
        ("seeds", summary["seeds"].clone()),
        ("passed", summary["passed"].clone()),
        ("failed", summary["failed"].clone()),
        ("expected_unrecoverable", summary["expected_unrecoverable"].clone()),
        ("crashed", summary["crashed"].clone()),
        ("kinds", summary["kinds"].clone()),
        ("failures", groups(&summary["failures"])),
        ("simulated_us", summary["simulated_us"].clone()),
        ("range", summary["range"].clone()),
    ])
}

#[test]
fn four_shards_merge_into_the_counts_of_one_unsharded_sweep() {
    let temporary = scratch("shards");
    let directory = temporary.path();
    let failures = directory.join("failures");
    let file = small_scenario(directory, "sharded", "random_faults: { count: 2 }\nexpect: { max_restarts: 0 }\n");
    let sweep = |extra: &[&str]| {
        let mut arguments = vec![
            "sweep",
            &file,
            "--seeds",
            "1..25",
            "--jobs",
            "2",
            "--format",
            "json",
            "--failures",
            failures.to_str().unwrap(),
        ];
        arguments.extend_from_slice(extra);
        let (status, stdout, stderr) = sluice(&arguments);
        assert!(status <= 1, "{stdout}{stderr}");
        (status, stdout)
    };
    let (status, whole) = sweep(&[]);
    let (_, whole_summary) = json_lines(&whole);
    assert!(whole_summary["failed"].as_u64().unwrap() > 0, "the expectation makes some seeds fail: {whole_summary}");
    assert_eq!(status, 1);
    let mut shard_files = Vec::new();
    for shard in 1..=4 {
        let (_, stdout) = sweep(&["--shard", &format!("{shard}/4")]);
        let (seeds, summary) = json_lines(&stdout);
        assert_eq!(summary["shard"], format!("{shard}/4"));
        assert!(seeds.iter().all(|line| (line["seed"].as_u64().unwrap() - 1) % 4 == shard - 1), "{stdout}");
        let path = directory.join(format!("shard-{shard}.jsonl"));
        std::fs::write(&path, stdout).unwrap();
        shard_files.push(path.display().to_string());
    }
    let junit = directory.join("merged.xml");
    let mut arguments: Vec<&str> = vec!["merge", "--format", "json", "--junit", junit.to_str().unwrap()];
    arguments.extend(shard_files.iter().map(String::as_str));
    let (status, merged, stderr) = sluice(&arguments);
    assert_eq!(status, 1, "failures in the shards make the merge exit 1: {stderr}");
    let (merged_seeds, merged_summary) = json_lines(&merged);
    assert_eq!(merged_seeds.len(), 24);
    assert_eq!(counts(&merged_summary), counts(&whole_summary));
    let report = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(report.matches("<testcase ").count(), 24, "{report}");
    assert!(report.contains("<failure") && report.contains("expectation"), "{report}");
    // Three of four shards, or one twice, is not the whole sweep.
    let (status, _, stderr) = sluice(&["merge", &shard_files[0], &shard_files[1], &shard_files[2]]);
    assert_eq!(status, 2);
    assert!(stderr.contains("incomplete: shard 4/4 missing"), "{stderr}");
    let (status, _, stderr) = sluice(&["merge", &shard_files[0], &shard_files[0]]);
    assert_eq!(status, 2);
    assert!(stderr.contains("shard 1/4 is given twice"), "{stderr}");
}

#[test]
fn the_text_summary_counts_outcomes_and_memory_and_junit_has_a_case_per_seed() {
    let temporary = scratch("text");
    let directory = temporary.path();
    let junit = directory.join("sweep.xml");
    let arguments = [
        "sweep",
        "scenarios/canary/wordcount-expects-no-restart.yaml",
        "--seeds",
        "1..3",
        "--jobs",
        "1",
        "--junit",
        junit.to_str().unwrap(),
        "--failures",
        directory.to_str().unwrap(),
    ];
    let (status, stdout, stderr) = sluice(&arguments);
    assert_eq!(status, 1, "{stdout}{stderr}");
    assert!(stdout.contains("summary: 2 seeds in "), "{stdout}");
    assert!(stdout.contains("peak RSS ") && stdout.contains(" a worker, "), "{stdout}");
    assert!(stdout.contains("passed 0, failed 2, expected-unrecoverable 0, crashed 0"), "{stdout}");
    assert!(stdout.contains("1 worker process"), "{stdout}");
    let report = std::fs::read_to_string(&junit).unwrap();
    assert_eq!(report.matches("<testcase ").count(), 2, "{report}");
    assert_eq!(report.matches("<failure").count(), 2, "{report}");
}

/// A merged sweep ends as its worst seed did, for every outcome: shards of passed and
/// expected-unrecoverable seeds exit 0, a failed seed in any shard 1, a crashed one 3, and each
/// seed counts once under its outcome.
#[test]
fn a_merge_exits_and_counts_as_the_worst_seed_of_any_shard() {
    let temporary = scratch("merge-outcomes");
    let directory = temporary.path();
    let failures = directory.join("failures");
    let cases = [
        ("passed", "", 0, "passed"),
        ("unrecoverable", "faults: [{ at: 0ms, kill: jm }]\n", 0, "expected_unrecoverable"),
        ("failed", "random_faults: { count: 1, kinds: [tm-crash] }\nexpect: { max_restarts: 0 }\n", 1, "failed"),
        ("crashed", "harness_crash: { seed: 3, how: abort }\n", 3, "crashed"),
    ];
    for (name, extra, want, counted) in cases {
        let file = small_scenario(directory, name, &format!("modes: [batch]\n{extra}"));
        let mut shards = Vec::new();
        for shard in 1..=2 {
            let shard_text = format!("{shard}/2");
            let arguments =
                ["sweep", &file, "--shard", &shard_text, "--format", "json", "--failures", failures.to_str().unwrap()];
            let (_, stdout, stderr) = sluice(&arguments);
            let path = directory.join(format!("{name}-{shard}.jsonl"));
            std::fs::write(&path, &stdout).unwrap_or_else(|error| panic!("{error}: {stderr}"));
            shards.push(path.display().to_string());
        }
        let (status, merged, stderr) = sluice(&["merge", "--format", "json", &shards[0], &shards[1]]);
        assert_eq!(status, want, "{name}: {stderr}\n{merged}");
        let (seeds, summary) = json_lines(&merged);
        assert_eq!(seeds.len(), 5, "{name}");
        let outcomes = ["passed", "failed", "expected_unrecoverable", "crashed"];
        let total: u64 = outcomes.iter().map(|outcome| summary[outcome].as_u64().unwrap_or(0)).sum();
        assert_eq!(total, 5, "{name}: each seed counts once: {summary}");
        assert!(summary[counted].as_u64().unwrap_or(0) >= 1, "{name}: {summary}");
    }
}
