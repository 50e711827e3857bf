//! SQL semantics as data: the sqllogictest files of `scenarios/sql/slt/` (read and compared by
//! the `sqllogictest` crate), each run two ways.
//!
//! 1. Every `query` is answered by the script's sequential evaluation (the reference the
//!    oracles hold runs to) and compared with the file's expected rows: the file pins what
//!    the SQL means.
//! 2. Every query of a file then becomes one `INSERT INTO` of a single job (a statement set; each
//!    query gets a sink table of its columns, with its upsert key as primary key when it
//!    updates, or all its columns for a join's changes), which the simulator runs in both modes under random crashes and data loss: each
//!    table must hold what the reference computes, and the modes must agree.
//!
//! `statement ok` declares tables and views (CREATE TABLE, CREATE VIEW; a `VALUES` clause makes a
//! table of literal rows); `statement error` must be refused by the planner.

use std::sync::{Arc, Mutex};

use sluice_sql::plan::{SourceConnector, changes_of_a_join, evaluate, is_updating, upsert_key};
use sluice_sql::value::Row;
use sqllogictest::{DBOutput, DefaultColumnType};

/// The workspace root (this crate's parent).
fn workspace() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the workspace").to_path_buf()
}

/// An error of the SQL front end, as sqllogictest wants it.
#[derive(Debug)]
struct SqlFailure(String);

impl std::fmt::Display for SqlFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SqlFailure {}

/// The statements a file declared, and the sink declarations and INSERTs of its queries so far.
#[derive(Clone, Default)]
struct Script {
    declarations: String,
    queries: Vec<(String, String)>,
}

/// A "database" that answers a file's statements with the planner and its reference.
struct Reference {
    script: Arc<Mutex<Script>>,
}

impl sqllogictest::DB for Reference {
    type Error = SqlFailure;
    type ColumnType = DefaultColumnType;

    fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SqlFailure> {
        let mut script = self.script.lock().expect("one runner");
        let head = sql.trim_start().to_ascii_uppercase();
        if !(head.starts_with("SELECT") || head.starts_with("WITH")) {
            let declarations = format!("{}\n{};", script.declarations, sql.trim().trim_end_matches(';'));
            sluice_sql::check_declarations(&declarations).map_err(|error| SqlFailure(error.to_string()))?;
            script.declarations = declarations;
            return Ok(DBOutput::StatementComplete(0));
        }
        let (sink, insert) = declare_query(&script.declarations, sql, script.queries.len() + 1)?;
        let rows = answer(&script.declarations, &sink, &insert)?;
        script.queries.push((sink, insert));
        let width = rows.first().map_or(0, Vec::len);
        Ok(DBOutput::Rows { types: vec![DefaultColumnType::Any; width], rows })
    }
}

/// A sink table for query number `n` (columns `c1`…, typed as the query's; its upsert key as
/// primary key when it updates) and its INSERT INTO.
fn declare_query(declarations: &str, query: &str, n: usize) -> Result<(String, String), SqlFailure> {
    let relation = sluice_sql::query_relation(declarations, query).map_err(|error| SqlFailure(error.to_string()))?;
    let mut columns: Vec<String> =
        relation.columns.iter().enumerate().map(|(index, (_, ty))| format!("c{} {ty}", index + 1)).collect();
    if is_updating(&relation.node) {
        // A join's changes have no key the planner knows: the whole row is the key.
        let whole_row = || changes_of_a_join(&relation.node).then(|| (0..relation.columns.len()).collect());
        let key = upsert_key(&relation.node)
            .or_else(whole_row)
            .ok_or_else(|| SqlFailure("an updating query whose select list drops its key".to_string()))?;
        let key: Vec<String> = key.iter().map(|index| format!("c{}", index + 1)).collect();
        columns.push(format!("PRIMARY KEY ({}) NOT ENFORCED", key.join(", ")));
    }
    let table = format!("slt_q{n}");
    let sink = format!("CREATE TABLE {table} ({}) WITH ('connector' = 'sluice');", columns.join(", "));
    let insert = format!("INSERT INTO {table} {};", query.trim().trim_end_matches(';'));
    Ok((sink, insert))
}

/// The query's rows as the reference evaluates them (an updating query's final row per key), as
/// text.
fn answer(declarations: &str, sink: &str, insert: &str) -> Result<Vec<Vec<String>>, SqlFailure> {
    let plan = sluice_sql::plan_script(&format!("{declarations}\n{sink}\n{insert}\n"))
        .map_err(|error| SqlFailure(error.to_string()))?;
    let inputs = plan
        .sources
        .iter()
        .map(|(name, source)| {
            let rows: Vec<Row> = match &source.connector {
                SourceConnector::Values(rows) => rows.clone(),
                SourceConnector::Nexmark(options) => sluice_sql::nexmark::events(options).collect(),
            };
            (name.clone(), rows)
        })
        .collect();
    let insert = plan.inserts.last().expect("the query's INSERT");
    let rows = evaluate(&insert.input.node, &inputs);
    let rows: Vec<Row> = if insert.sink.primary_key.is_empty() {
        rows
    } else {
        let key = |row: &Row| insert.sink.primary_key.iter().map(|index| row.0[*index].to_string()).collect::<Vec<_>>();
        let latest: std::collections::BTreeMap<Vec<String>, Row> =
            rows.into_iter().map(|row| (key(&row), row)).collect();
        latest.into_values().collect()
    };
    Ok(rows.iter().map(|row| row.0.iter().map(ToString::to_string).collect()).collect())
}

/// Runs one file against the reference; returns its script (declarations, then every query's
/// sink and INSERT) for the simulator.
fn run_file(path: &std::path::Path) -> String {
    let script = Arc::new(Mutex::new(Script::default()));
    let shared = Arc::clone(&script);
    let mut runner = sqllogictest::Runner::new(move || {
        let script = Arc::clone(&shared);
        async move { Ok::<_, SqlFailure>(Reference { script }) }
    });
    if let Err(error) = runner.run_file(path) {
        panic!("{}: {}", path.display(), error.display(false));
    }
    let script = script.lock().expect("the runner ended").clone();
    assert!(!script.queries.is_empty(), "{}: no query", path.display());
    let mut text = script.declarations;
    for (sink, insert) in &script.queries {
        text.push_str(&format!("\n{sink}\n{insert}\n"));
    }
    text
}

/// Seeds each file's job runs, in both modes, under faults.
const SEEDS: u64 = 60;

fn slt_files() -> Vec<std::path::PathBuf> {
    let directory = workspace().join("scenarios/sql/slt");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&directory)
        .expect("scenarios/sql/slt")
        .map(|entry| entry.expect("readable").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "slt"))
        .collect();
    files.sort();
    files
}

#[test]
fn every_sqllogictest_file_holds_for_the_reference_and_for_both_modes_under_faults() {
    let files = slt_files();
    assert!(files.len() >= 3, "{files:?}");
    let scratch = tempfile::tempdir().expect("a scratch directory");
    for path in &files {
        let script = run_file(path);
        let name = path.file_stem().expect("a file name").to_string_lossy().to_string();
        let file = scratch.path().join(format!("{name}.sql"));
        let queries = script.matches("INSERT INTO").count();
        std::fs::write(&file, script).expect("writable");
        let report = sluice_sim::Simulation::sql(&[&file])
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .name(&format!("slt-{name}"))
            .cluster(3, 2)
            .checkpoints(std::time::Duration::from_millis(20))
            .random_faults(3, &["tm-crash", "jm-crash", "partition-loss"])
            .seeds(1..SEEDS + 1)
            .failures_dir(scratch.path())
            .run();
        report.assert_passed();
        // Every run of every seed, both modes, committed a table for every query.
        let runs: Vec<usize> =
            report.seeds.iter().flat_map(|seed| seed.result.runs.iter().map(|(run, _)| run.committed.len())).collect();
        assert!(
            !report.seeds.is_empty()
                && runs.len() == 2 * report.seeds.len()
                && runs.iter().all(|tables| *tables == queries),
            "{}: {runs:?} of {queries}",
            path.display()
        );
    }
}

/// The runner itself: a file whose expected rows are wrong fails, naming the query.
#[test]
fn a_sqllogictest_file_with_a_wrong_expected_row_fails() {
    let scratch = tempfile::tempdir().expect("a scratch directory");
    let file = scratch.path().join("wrong.slt");
    std::fs::write(
        &file,
        "statement ok\nCREATE VIEW t AS SELECT * FROM (VALUES (1, 'a'), (2, 'b')) AS t(x, y)\n\n\
         query IT rowsort\nSELECT x, y FROM t WHERE x > 1\n----\n2 c\n",
    )
    .expect("writable");
    let outcome = std::panic::catch_unwind(|| run_file(&file));
    let message = outcome.expect_err("a wrong row fails").downcast::<String>().expect("a message");
    assert!(message.contains("SELECT x, y FROM t WHERE x > 1") && message.contains("2 b"), "{message}");
}
