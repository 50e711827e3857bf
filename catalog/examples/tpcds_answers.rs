//! The TPC-DS query jobs' references on tables `make_tables.py` wrote, against DuckDB's answers
//! beside them: `cargo run --release -p sluice-catalog --example tpcds_answers -- DIR`, where DIR
//! holds `<table>/part-00000` and `answers/` (`benches/tpcds/make_tables.py --sf 1 --out DIR`
//! checks every query at SF 1, too large to commit). Exits 1 if any answer differs.

use std::collections::BTreeMap;
use std::path::Path;

use sluice_catalog::{self as catalog, ExternalInput};
use sluice_engine::api::ParamValue;
use sluice_engine::graph::ExecutionMode;

/// The jobs and their DuckDB answer files.
const QUERIES: [(&str, &str); 8] = [
    ("tpcds-q3", "q3"),
    ("tpcds-q7", "q7"),
    ("tpcds-q19", "q19"),
    ("tpcds-q42", "q42"),
    ("tpcds-q55", "q55"),
    ("tpcds-q64", "q64"),
    ("tpcds-q72", "q72"),
    ("tpcds-q95", "q95"),
];

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| fail("usage: tpcds_answers DIR"));
    let dir = Path::new(&dir);
    let mut input = ExternalInput::default();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|error| fail(&format!("{}: {error}", dir.display()))) {
        let table = entry.expect("a readable directory").file_name().to_string_lossy().into_owned();
        if let Ok(bytes) = std::fs::read(dir.join(&table).join("part-00000")) {
            input.files.insert(format!("{table}/part-00000"), bytes);
        }
    }
    let params = std::fs::read_to_string(dir.join("answers/params.txt")).unwrap_or_default();
    let mut differ = 0;
    for (job, q) in QUERIES {
        let answer = std::fs::read_to_string(dir.join(format!("answers/{q}.tsv"))).unwrap_or_default();
        let answer: Vec<(String, String)> = answer
            .lines()
            .map(|line| line.split_once('\t').map(|(k, v)| (k.to_string(), v.to_string())).expect("key<TAB>value"))
            .collect();
        let rows = reference(job, q, &params, &input);
        // SQL's global aggregate answers one row of zeros on no input; the job commits none.
        let same = rows == answer || (rows.is_empty() && answer == [("all".to_string(), "0|0|0".to_string())]);
        println!("{job}: {} rows, DuckDB {} rows: {}", rows.len(), answer.len(), if same { "same" } else { "DIFFER" });
        if !same {
            differ += 1;
            println!(
                "  reference: {:?}\n  duckdb:    {:?}",
                &rows[..rows.len().min(5)],
                &answer[..answer.len().min(5)]
            );
        }
    }
    std::process::exit(i32::from(differ > 0));
}

fn fail(message: &str) -> ! {
    eprintln!("{message}");
    std::process::exit(2)
}

/// The reference's rows of `job`, with the substitution values `params.txt` gives for `q`.
fn reference(job: &str, q: &str, params: &str, input: &ExternalInput) -> Vec<(String, String)> {
    let job = catalog::find(job).expect("a catalog job");
    let mut given: BTreeMap<String, ParamValue> = BTreeMap::new();
    for line in params.lines().filter(|line| !line.starts_with('#')) {
        let Some((name, value)) = line.strip_prefix(&format!("{q}.")).and_then(|rest| rest.split_once('=')) else {
            continue;
        };
        if !job.definition.params.iter().any(|param| param.name == name) {
            continue;
        }
        let value = match (name, value.parse::<u64>()) {
            (_, Ok(number)) => ParamValue::Int(number),
            ("start", Err(_)) => ParamValue::Int(julian(value)),
            (_, Err(_)) => ParamValue::Text(value.to_string()),
        };
        given.insert(name.to_string(), value);
    }
    let params = job.resolve_params(&given).unwrap_or_else(|error| fail(&error));
    let expected = job.expected(&params, input, ExecutionMode::Batch).expect("a reference");
    expected["answer"].rows.iter().map(|row| (row.key.clone(), row.shown_value().to_string())).collect()
}

/// The `d_date_sk` (a Julian day) of a `YYYY-MM-DD` date.
fn julian(date: &str) -> u64 {
    let parts: Vec<i64> = date.split('-').map(|part| part.parse().expect("a YYYY-MM-DD date")).collect();
    let (a, y) = ((14 - parts[1]) / 12, parts[0] + 4800 - (14 - parts[1]) / 12);
    let m = parts[1] + 12 * a - 3;
    (parts[2] + (153 * m + 2) / 5 + 365 * y + y / 4 - y / 100 + y / 400 - 32045) as u64
}
