//! Property: planning a SQL script never panics or hangs, whatever its text (a case that has
//! not ended after [`HANG_BOUND`] fails as a hang). Each case takes a
//! shipped script and applies a few mutations (cut a span, insert a token from a dictionary of
//! SQL syntax, types, extreme numbers and control characters, duplicate a line);
//! `plan_script` must return a plan or an error with a place in the script, never panic, and a
//! plan it returns must plan the same twice and evaluate over a few events without panicking.
//! A thousand cases by default (`PROPTEST_CASES` for more); `SLUICE_SEED=N` reruns one case; a
//! failure prints the mutated text.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use sluice_properties::text_mutation::{apply, mutation};
use sluice_properties::{CaseResult, case_seeds_or, check_seeds};
use sluice_sql::plan::{SourceConnector, evaluate};
use sluice_sql::{nexmark, plan_script};

/// The shipped scripts: Nexmark's DDL with the query files, and the scenarios' inline scripts.
fn scripts() -> Vec<String> {
    let nexmark = [
        include_str!("../../scenarios/sql/nexmark/ddl.sql"),
        include_str!("../../scenarios/sql/nexmark/q0.sql"),
        include_str!("../../scenarios/sql/nexmark/q1.sql"),
        include_str!("../../scenarios/sql/nexmark/q2.sql"),
    ];
    let functions = [
        include_str!("../../scenarios/sql/nexmark/ddl.sql"),
        include_str!("../../scenarios/sql/nexmark/q14.sql"),
        include_str!("../../scenarios/sql/nexmark/q21.sql"),
        include_str!("../../scenarios/sql/nexmark/q22.sql"),
    ];
    let joins = [
        include_str!("../../scenarios/sql/nexmark/ddl.sql"),
        include_str!("../../scenarios/sql/nexmark/q3.sql"),
        include_str!("../../scenarios/sql/nexmark/q4.sql"),
        include_str!("../../scenarios/sql/nexmark/q5.sql"),
        include_str!("../../scenarios/sql/nexmark/q7.sql"),
        include_str!("../../scenarios/sql/nexmark/q8.sql"),
        include_str!("../../scenarios/sql/nexmark/q9.sql"),
        include_str!("../../scenarios/sql/nexmark/q20.sql"),
    ];
    let updating = [
        include_str!("../../scenarios/sql/nexmark/ddl.sql"),
        include_str!("../../scenarios/sql/nexmark/q15.sql"),
        include_str!("../../scenarios/sql/nexmark/q16.sql"),
        include_str!("../../scenarios/sql/nexmark/q17.sql"),
        include_str!("../../scenarios/sql/nexmark/q18.sql"),
        include_str!("../../scenarios/sql/nexmark/q19.sql"),
    ];
    let windows = [
        include_str!("../../scenarios/sql/nexmark/ddl.sql"),
        include_str!("../../scenarios/sql/nexmark/windows.sql"),
        include_str!("../../scenarios/sql/nexmark/interval.sql"),
    ];
    vec![
        nexmark.join("\n"),
        functions.join("\n"),
        joins.join("\n"),
        updating.join("\n"),
        windows.join("\n"),
        script_of(include_str!("../../scenarios/sql/nexmark-grouped.yaml")),
    ]
}

const TOKENS: &[&str] = &[
    "(",
    ")",
    ",",
    ";",
    ".",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "<>",
    "<",
    ">",
    "'",
    "`",
    "--",
    "/*",
    "\n",
    " ",
    "SELECT ",
    "FROM ",
    "WHERE ",
    "AS ",
    "AND ",
    "OR ",
    "NOT ",
    "NULL ",
    "IS ",
    "CASE ",
    "WHEN ",
    "THEN ",
    "ELSE ",
    "END ",
    "GROUP BY ",
    "ORDER BY ",
    "LIMIT 1 ",
    "JOIN ",
    "TABLE(",
    "DESCRIPTOR(",
    "INTERVAL '1' ",
    "SECOND ",
    "WATERMARK FOR ",
    "PRIMARY KEY (auction) NOT ENFORCED, ",
    "ROW<",
    ">",
    "ROW<a ROW<b INT>>",
    "BIGINT",
    "INT",
    "DECIMAL(38, 38)",
    "DECIMAL(39, 0)",
    "TIMESTAMP(9)",
    "VARCHAR(0)",
    "BOOLEAN",
    "MOD(",
    "bid.",
    "datagen.",
    "event_type",
    "price",
    "dateTime",
    "0",
    "-1",
    "0.0000000000000000000000000000000000001",
    "99999999999999999999999999999999999999999",
    "9223372036854775807",
    "9223372036854775808",
    "'events.num' = '0', ",
    "'events.num' = '99999999999', ",
    "'base-time' = '-1', ",
    "'connector' = 'kafka', ",
    "\u{0}",
    "é",
    "TRUE",
    "COUNT(*) ",
    "SUM(",
    "MIN(",
    "MAX(",
    "AVG(",
    "HAVING ",
    "COUNT(DISTINCT ",
    "GROUP BY auction ",
    "TABLE(TUMBLE(TABLE bid, DESCRIPTOR(dateTime), INTERVAL '1' SECOND))",
    "HOP(",
    "CUMULATE(",
    "DESCRIPTOR(",
    "TABLE ",
    "INTERVAL '0' SECOND",
    "window_start",
    "window_time",
    "EXPLAIN ",
    "REGEXP_EXTRACT(url, '(",
    "'[^&]*'",
    "SPLIT_INDEX(",
    "DATE_FORMAT(dateTime, 'yyyy-MM-dd')",
    "HOUR(",
    "lower(",
    " IN (",
    "CREATE FUNCTION f AS 'x';",
    " JOIN ",
    " ON ",
    " BETWEEN ",
    "count(distinct ",
    " filter (where ",
    ", bid AS C",
    "(SELECT * FROM bid) X",
    "ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC)",
    " WHERE rank_number <= ",
    " ORDER BY ",
    " PARTITION BY ",
    "A.*, ",
    "GROUP BY window_start, window_end",
];

/// The script of a scenario: the lines of its `script: |` block, unindented.
fn script_of(scenario: &str) -> String {
    let lines = scenario.lines().skip_while(|line| !line.trim_start().starts_with("script: |")).skip(1);
    let block = lines.take_while(|line| line.is_empty() || line.starts_with("    "));
    block.map(|line| line.strip_prefix("    ").unwrap_or(line)).collect::<Vec<_>>().join("\n")
}

fn plan(text: &str) -> Result<(), String> {
    let Ok(plan) = plan_script(text) else { return Ok(()) };
    if plan_script(text).ok().as_ref() != Some(&plan) {
        return Err("the same text planned twice gave two plans".to_string());
    }
    let mut inputs = BTreeMap::new();
    for (name, source) in &plan.sources {
        let rows = match &source.connector {
            SourceConnector::Nexmark(options) => {
                let options = nexmark::Options { events: options.events.min(50), ..options.clone() };
                nexmark::events(&options).collect()
            }
            SourceConnector::Values(rows) => rows.clone(),
        };
        inputs.insert(name.clone(), rows);
    }
    for insert in &plan.inserts {
        for row in evaluate(&insert.input.node, &inputs) {
            let _ = sluice_sql::build::render(&insert.sink, &row);
        }
    }
    Ok(())
}

fn check(text: &str) -> Result<(), String> {
    match plan_script(text) {
        Err(error)
            if error.line == 0
                && !error.message.contains("nests too deeply")
                && !error.message.contains("no INSERT") =>
        {
            Err(format!("an error without a place in the script: {error}"))
        }
        _ => plan(text),
    }
}

/// How long one case may take before it counts as a hang: a case takes milliseconds (the
/// evaluation reads at most 50 events and a row is in at most 1000 windows), so this is a
/// liveness bound, not a speed target, generous for a loaded debug build.
const HANG_BOUND: std::time::Duration = std::time::Duration::from_secs(60);

/// `case()` on a thread of its own: its result (`Err` if it panicked), or `None` if it did not
/// end within `bound` (the thread is left behind; the test fails).
fn within<T: Send + 'static>(
    bound: std::time::Duration,
    case: impl FnOnce() -> T + Send + 'static,
) -> Option<Result<T, ()>> {
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = catch_unwind(AssertUnwindSafe(case)).map_err(|_| ());
        let _ = done.send(outcome);
    });
    result.recv_timeout(bound).ok()
}

#[test]
fn a_case_that_does_not_end_within_the_bound_counts_as_a_hang() {
    let slow = within(std::time::Duration::from_millis(10), || std::thread::sleep(std::time::Duration::from_secs(2)));
    assert!(slow.is_none(), "a case past the bound is a hang");
    assert!(matches!(within(HANG_BOUND, || check("not sql")), Some(Ok(Ok(())))), "a quick case passes");
    assert!(matches!(within(HANG_BOUND, || panic!("a bug")), Some(Err(()))), "a panic is told apart from a hang");
}

#[test]
fn the_shipped_scripts_plan() {
    for script in scripts() {
        assert!(plan_script(&script).is_ok(), "{:?}\n{script}", plan_script(&script).err());
    }
}

#[test]
fn planning_mutated_sql_text_never_panics() {
    let scripts = scripts();
    let strategy = (0..scripts.len(), proptest::collection::vec(mutation(TOKENS.len()), 1..6));
    check_seeds("planning_mutated_sql_text_never_panics", strategy, case_seeds_or(1000), |(base, mutations), _| {
        let text = apply(scripts[*base].clone(), mutations, TOKENS);
        let case = text.clone();
        match within(HANG_BOUND, move || check(&case)) {
            Some(Ok(Ok(()))) => CaseResult::Pass,
            Some(Ok(Err(message))) => {
                CaseResult::Fail { message: format!("{message}; text:\n{text}"), replay_file: None }
            }
            Some(Err(())) => {
                CaseResult::Fail { message: format!("planning panicked; text:\n{text}"), replay_file: None }
            }
            None => CaseResult::Fail {
                message: format!("planning and evaluating did not end within {HANG_BOUND:?} (a hang); text:\n{text}"),
                replay_file: None,
            },
        }
    });
}
