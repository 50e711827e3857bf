//! SQL jobs where a job goes: a scenario's `sql:` files in place of `job`, and `sluice sql`
//! (run a script, print verdicts and tables; `--explain` and `EXPLAIN` print plans). Errors in
//! a script name the SQL file, its line and column.

use super::support::{sluice, workspace};

const DDL: &str = "scenarios/sql/nexmark/ddl.sql";
const Q1: &str = "scenarios/sql/nexmark/q1.sql";

/// Writes `files` into a fresh directory (removed when the guard drops).
fn directory_with(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).expect("writable");
    }
    dir
}

fn ddl() -> String {
    std::fs::read_to_string(workspace().join(DDL)).expect("the Nexmark DDL")
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

#[test]
fn sluice_sql_runs_a_script_in_both_modes_and_prints_its_tables() {
    let (status, stdout, stderr) = sluice(&["sql", DDL, Q1, "--rows", "3"]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("streaming PASS") && stdout.contains("batch PASS"), "{stdout}");
    assert!(stdout.contains("streaming == batch: agree on `nexmark_q1` (2760 rows)"), "{stdout}");
    let table = stdout.split("table nexmark_q1 (append, 2760 rows in streaming mode; the first 3):\n").nth(1);
    let lines: Vec<&str> = table.expect("the table is printed").lines().collect();
    assert_eq!(lines[0], "  auction, bidder, price, dateTime, extra");
    assert!(lines[1].starts_with("  1000, 1000, ") && lines.len() == 4, "{stdout}");
}

#[test]
fn sluice_sql_under_faults_restarts_and_still_agrees() {
    let (status, stdout, stderr) = sluice(&["sql", DDL, Q1, "--faults", "3", "--seed", "2", "--rows", "0"]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("restarted") && stdout.contains("agree on `nexmark_q1` (2760 rows)"), "{stdout}");
}

#[test]
fn explain_prints_each_plan_with_changelog_modes_and_the_job_graph_and_runs_nothing() {
    let (status, stdout, stderr) = sluice(&["sql", DDL, Q1, "--explain"]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.starts_with("Sink(table=[nexmark_q1], fields=[auction, bidder, price, dateTime, extra]) [I]\n"));
    assert!(stdout.contains("TableSourceScan(table=[datagen]"), "{stdout}");
    assert!(stdout.contains("JobGraph `sql` (streaming, all-edges-pipelined)"), "{stdout}");
    assert!(!stdout.contains("PASS"), "{stdout}");
    // An EXPLAIN statement prints its plan; a script of nothing else runs nothing.
    let dir = directory_with(&[(
        "explain.sql",
        "CREATE TABLE s (channel VARCHAR, bids BIGINT, PRIMARY KEY (channel) NOT ENFORCED) WITH ('connector' = 'sluice');\n\
         EXPLAIN PLAN FOR INSERT INTO s SELECT channel, COUNT(*) FROM bid GROUP BY channel;",
    )]);
    let (status, stdout, stderr) = sluice(&["sql", DDL, &path(&dir, "explain.sql")]);
    assert_eq!(status, 0, "{stderr}");
    assert!(stdout.starts_with("Sink(table=[s], fields=[channel, bids], primaryKey=[channel]) [I,UB,UA,D]\n"));
    assert!(stdout.contains("GroupAggregate(groupBy=[$3], select=[COUNT(*)]) [I,UB,UA,D]"), "{stdout}");
    assert!(!stdout.contains("PASS"), "{stdout}");
}

#[test]
fn an_error_in_a_script_names_its_sql_file_line_and_column() {
    let query =
        "CREATE TABLE s (auction BIGINT) WITH ('connector' = 'sluice');\n\nINSERT INTO s SELECT channel FROM bid;\n";
    let dir = directory_with(&[("q.sql", query), ("ddl.sql", &ddl())]);
    let file = path(&dir, "q.sql");
    let (status, stdout, stderr) = sluice(&["sql", &path(&dir, "ddl.sql"), &file]);
    assert_eq!((status, stdout.as_str()), (2, ""));
    let want =
        format!("sluice sql: {file}:3: column 1: column `channel` is VARCHAR; the sink's column `auction` is BIGINT\n");
    assert_eq!(stderr, want);
    // The same error through a scenario's `sql:`.
    let scenario = "name: s\nsql: [ddl.sql, q.sql]\ncluster: { task_managers: 2, slots_per_task_manager: 2 }\n";
    std::fs::write(dir.path().join("s.yaml"), scenario).expect("writable");
    let (status, _, stderr) = sluice(&["run", &path(&dir, "s.yaml")]);
    assert_eq!((status, stderr), (2, want.replace("sluice sql:", "sluice:")));
    let (status, _, stderr) = sluice(&["sql", &path(&dir, "missing.sql")]);
    assert!(status == 2 && stderr.contains("cannot read") && stderr.contains("missing.sql"), "{stderr}");
}

#[test]
fn a_scenario_gives_job_or_sql_files_never_both_nor_a_script_beside_them() {
    let dir =
        directory_with(&[("q.sql", &std::fs::read_to_string(workspace().join(Q1)).unwrap()), ("ddl.sql", &ddl())]);
    let run = |yaml: &str| {
        let file = dir.path().join("s.yaml");
        std::fs::write(&file, format!("name: s\n{yaml}cluster: {{ task_managers: 3, slots_per_task_manager: 2 }}\n"))
            .expect("writable");
        let (status, _, stderr) = sluice(&["run", &file.display().to_string(), "--seeds", "1"]);
        (status, stderr.replace(&format!("{}", dir.path().display()), "DIR"))
    };
    let (status, stderr) = run("job: sql\nsql: q.sql\n");
    assert_eq!(status, 2);
    assert_eq!(stderr, "sluice: DIR/s.yaml:3: field `sql`: give `job` or `sql`, not both (`sql` runs the `sql` job)\n");
    let (status, stderr) = run("sql: [ddl.sql, q.sql]\nparams:\n  script: x\n");
    assert_eq!(status, 2);
    assert!(stderr.contains("field `params.script`: the script is the `sql` files'"), "{stderr}");
    let (status, stderr) = run("sql: [ddl.sql, nowhere.sql]\n");
    assert!(status == 2 && stderr.contains("field `sql`: cannot read") && stderr.contains("nowhere.sql"), "{stderr}");
    let (status, stderr) = run("sql: []\n");
    assert!(status == 2 && stderr.contains("field `sql`: name 1 to 64 SQL files"), "{stderr}");
    // A scenario of `sql:` files runs like any other.
    let (status, stderr) = run("sql: [ddl.sql, q.sql]\n");
    assert_eq!(status, 0, "{stderr}");
}

#[test]
fn a_user_crate_simulates_its_sql_files_under_faults_through_the_test_api() {
    let files = [workspace().join(DDL), workspace().join("scenarios/sql/nexmark/q19.sql")];
    sluice_sim::Simulation::sql(&files)
        .expect("the script plans")
        .cluster(3, 2)
        .checkpoints(std::time::Duration::from_millis(50))
        .random_faults(3, &["tm-crash", "jm-crash", "partition-loss"])
        .seeds(1..4)
        .run()
        .assert_passed();
    let dir = directory_with(&[("bad.sql", "INSERT INTO nowhere SELECT 1 FROM bid;")]);
    let error = sluice_sim::Simulation::sql(&[workspace().join(DDL), dir.path().join("bad.sql")]).err();
    let error = error.expect("an unknown sink is refused");
    assert!(error.contains("bad.sql:1: column 1: INSERT INTO `nowhere`"), "{error}");
}

/// The Nexmark DDL, then every query file whose text `keep`s, in name order.
fn nexmark_script(keep: impl Fn(&str) -> bool) -> Vec<std::path::PathBuf> {
    let queries = std::fs::read_dir(workspace().join("scenarios/sql/nexmark")).expect("the Nexmark queries");
    let mut files: Vec<std::path::PathBuf> = queries
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.file_name().is_some_and(|name| name.to_string_lossy().starts_with('q')))
        .filter(|path| keep(&std::fs::read_to_string(path).unwrap_or_default()))
        .collect();
    files.sort();
    files.insert(0, workspace().join(DDL));
    files
}

/// Every query in one job, window queries included: each source subtask reads several log
/// partitions in turn (4 partitions, parallelism 2 and 1), so a watermark generated over the
/// reader's stream, not per partition, made rows of one partition late once another was read
/// ahead (q5 committed two wrong rows, q8 lost a window at parallelism 1). Watermarks are per
/// split now (FLIP-27), and every table matches.
#[test]
fn every_nexmark_query_commits_the_same_tables_at_parallelism_one_and_under_every_exchange_mode() {
    let files = nexmark_script(|_| true);
    assert!(files.len() >= 19, "the DDL and {} query files", files.len() - 1);
    // One job of every query (a statement set), at parallelism 2, then 1, and in batch under
    // every exchange mode; each run is also checked against the script's evaluation.
    sluice_sim::Simulation::sql(&files)
        .expect("every query plans")
        .cluster(3, 2)
        .seeds(1..2)
        .oracle(sluice_sim::Oracle::SameAtParallelism(1))
        .oracle(sluice_sim::Oracle::EveryExchangeMode)
        .run()
        .assert_passed();
}

/// The checkpoint-prefix oracle over every Nexmark query: after each checkpoint a streaming run
/// completed, every table committed up to it is the script's evaluation over exactly the rows
/// the sources had read at its barrier (a windowed table: a part of it). Checks that it looked
/// at checkpoints taken mid-input, under faults, not only at the end.
#[test]
fn every_completed_checkpoints_tables_are_the_query_over_the_input_read_before_its_barrier() {
    use sluice_engine::graph::ExecutionMode;
    let scenario = sluice_sim::Simulation::sql(&nexmark_script(|_| true))
        .expect("every query plans")
        .cluster(3, 2)
        .checkpoints(std::time::Duration::from_millis(50))
        .random_faults(2, &["tm-crash", "jm-crash", "partition-loss"])
        .scenario()
        .expect("valid");
    let (mut checked, mut mid_input, mut skipped) = (0, 0, 0);
    for seed in 1..4 {
        let result = sluice_sim::seed::run_seed(
            &scenario,
            seed,
            &[ExecutionMode::Streaming],
            sluice_sim::seed::DeterminismCheck::Off,
        );
        assert!(result.failures().is_empty(), "seed {seed}: {:?}", result.failures());
        let (report, _) = &result.runs[0];
        let prefix = sluice_harness::prefix::checkpoint_prefix(report).expect("judged above");
        (checked, mid_input, skipped) =
            (checked + prefix.checkpoints, mid_input + prefix.mid_input, skipped + prefix.skipped);
    }
    assert!(
        checked >= 6 && mid_input >= 3 && skipped == 0,
        "{checked} checkpoints checked ({mid_input} mid-input), {skipped} without a full cut"
    );
}
