//! The CSV source through the whole engine: files cut into many splits, read a few records at a
//! time by two subtasks, under a TaskManager crash.

use std::collections::BTreeMap;

use sluice_catalog::{ExpectedOutput, ExpectedTable, ExternalInput, JobParams, SimJob, Updates};
use sluice_engine::api::{InputFormat, InputSpec, JobDefinition, StreamEnv};
use sluice_engine::connectors::csv::{Column, ColumnType, parse_records};
use sluice_engine::connectors::{CsvSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::prng::Prng;

use sluice_sim::scenario::{JobCatalog, Scenario};
use sluice_sim::seed::{DeterminismCheck, SeedOutcome, run_seed};

const SCORES: InputSpec = InputSpec {
    name: "scores",
    format: InputFormat::Csv(&[Column::new("name", ColumnType::Text), Column::new("score", ColumnType::Int)]),
    doc: "names and scores",
};

fn build(env: &StreamEnv, _: &JobParams) {
    env.from_source(CsvSource::<(String, i64)>::new(&SCORES).with_split_bytes(16).with_fetch_size(3))
        .sink_to(TxnStoreSink::append("scores", |score: &(String, i64)| (score.0.clone(), score.1.to_string())));
}

/// Three files of 40 records each, every one with its header line.
fn generate(_: &JobParams, _: &mut Prng) -> ExternalInput {
    let file = |index: usize| {
        let records: String = (0..40).map(|row| format!("\"n,{index}\",{}\n", index * 100 + row)).collect();
        (format!("scores/part-{index}.csv"), format!("name,score\n{records}").into_bytes())
    };
    ExternalInput { files: (0..3).map(file).collect(), ..ExternalInput::default() }
}

/// Every record of every file once: a header read as data would fail the task, one skipped
/// elsewhere than at its file's start would lose a record.
fn reference(_: &JobParams, input: &ExternalInput, _: ExecutionMode) -> ExpectedOutput {
    let mut rows: Vec<Row> = input
        .input_files("scores")
        .flat_map(|(_, contents)| parse_records(contents).expect("generated CSV").into_iter().skip(1))
        .map(|fields| Row::new(fields[0].clone(), fields[1].clone()))
        .collect();
    rows.sort();
    BTreeMap::from([("scores".to_string(), ExpectedTable { kind: SinkKind::Append, rows, updates: Updates::Exact })])
}

static SCORES_JOB: SimJob = SimJob {
    definition: JobDefinition { name: "scores", description: "scores", params: &[], inputs: &[SCORES], build },
    generate_input: Some(generate),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

#[test]
fn every_record_of_every_split_is_read_once_and_every_header_skipped() {
    let text = "name: scores\njob: scores\ncluster: { task_managers: 3, slots_per_task_manager: 2 }\n\
                checkpoints: { interval: 5ms }\nfaults:\n  - { at: 20ms, kill: tm-1, restart_after: 100ms }\n";
    let scenario = Scenario::parse_with("scores.yaml", text, JobCatalog::of([&SCORES_JOB]).unwrap()).unwrap();
    for seed in 1..4 {
        let result = run_seed(&scenario, seed, &scenario.modes, DeterminismCheck::Off);
        assert_eq!(result.outcome(), SeedOutcome::Passed, "seed {seed}: {:?}", result.failures());
        for (report, _) in &result.runs {
            assert_eq!(report.committed["scores"].log.len(), 120, "{} seed {seed}", report.mode);
        }
    }
}
