//! The TPC-DS query jobs' references against DuckDB: on the committed SF 0.01 tables
//! (`catalog/tests/data/tpcds-sf0.01`, written by `benches/tpcds/make_tables.py`), each query's
//! reference computes exactly the rows DuckDB answers to `benches/tpcds/queries/qNN.sql` with
//! the same substitution parameters (`answers/params.txt`). q95's answer at this scale is SQL's
//! row of zeros for no input (one warehouse: no order ships from two), which the job, like
//! Flink's streaming mode, does not commit; `examples/tpcds_answers.rs` checks every query at
//! SF 1 (too large to commit).

use std::collections::BTreeMap;
use std::path::Path;

use sluice_catalog::{self as catalog, ExternalInput};
use sluice_engine::api::ParamValue;
use sluice_engine::graph::ExecutionMode;

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/tpcds-sf0.01");

/// Every table of the fixture, as the files node serves them.
fn fixture() -> ExternalInput {
    let mut input = ExternalInput::default();
    for entry in std::fs::read_dir(FIXTURE).expect("the fixture exists") {
        let table = entry.expect("readable").file_name().to_string_lossy().into_owned();
        let part = Path::new(FIXTURE).join(&table).join("part-00000");
        if let Ok(bytes) = std::fs::read(&part) {
            input.files.insert(format!("{table}/part-00000"), bytes);
        }
    }
    input
}

/// DuckDB's answer to query `q`: its `key<TAB>value` lines.
fn answer(q: &str) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(Path::new(FIXTURE).join(format!("answers/{q}.tsv"))).expect("an answer");
    let line = |line: &str| {
        let (key, value) = line.split_once('\t').expect("key<TAB>value");
        (key.to_string(), value.to_string())
    };
    text.lines().map(line).collect()
}

fn reference_rows(job: &str, params: &[(&str, u64)], input: &ExternalInput) -> Vec<(String, String)> {
    let job = catalog::find(job).unwrap();
    let given: BTreeMap<String, ParamValue> =
        params.iter().map(|(name, value)| (name.to_string(), ParamValue::Int(*value))).collect();
    let params = job.resolve_params(&given).unwrap();
    let expected = job.expected(&params, input, ExecutionMode::Batch).expect("a reference");
    expected["answer"].rows.iter().map(|row| (row.key.clone(), row.shown_value().to_string())).collect()
}

#[test]
fn each_query_reference_gives_duckdbs_answer_on_the_sf001_tables() {
    let input = fixture();
    let cases: [(&str, &str, &[(&str, u64)]); 7] = [
        ("tpcds-q3", "q3", &[("manufact", 167)]),
        ("tpcds-q7", "q7", &[]),
        ("tpcds-q19", "q19", &[("manager", 5), ("year", 2000)]),
        ("tpcds-q42", "q42", &[]),
        ("tpcds-q55", "q55", &[]),
        ("tpcds-q64", "q64", &[("price", 70)]),
        ("tpcds-q72", "q72", &[]),
    ];
    for (job, q, params) in cases {
        let answer = answer(q);
        assert!(!answer.is_empty(), "{q}: DuckDB's answer is empty, which proves nothing");
        assert_eq!(reference_rows(job, params, &input), answer, "{job} against DuckDB's {q}");
    }
}
