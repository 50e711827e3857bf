//! An updating stream through the whole engine to an upsert sink that deletes: a group-by whose
//! HAVING stops holding takes its row back (`-D`), and the sink commits that as a tombstone. Under
//! a TaskManager crash with checkpoints, streaming commits puts and deletions exactly once and
//! ends at the table batch commits (batch reads final rows only and never deletes).

use std::collections::BTreeMap;

use sluice_catalog::{ExpectedOutput, ExpectedTable, ExternalInput, JobParams, SimJob, Updates};
use sluice_engine::api::changelog::{Change, RetractableAggregate, RowKind, group_changelog};
use sluice_engine::api::{InputFormat, InputSpec, JobDefinition, StreamEnv};
use sluice_engine::connectors::csv::{Column, ColumnType, parse_records};
use sluice_engine::connectors::{CsvSource, Row, SinkKind, TxnStoreSink};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::prng::Prng;

use sluice_sim::scenario::{JobCatalog, Scenario};
use sluice_sim::seed::{DeterminismCheck, SeedOutcome, run_seed};

const POINTS: InputSpec = InputSpec {
    name: "points",
    format: InputFormat::Csv(&[Column::new("player", ColumnType::Text), Column::new("points", ColumnType::Int)]),
    doc: "points scored by players",
};

/// Players stay in the table while they have fewer points than this.
const LIMIT: i64 = 100;

/// `SELECT player, SUM(points) FROM points GROUP BY player HAVING SUM(points) < 100`.
struct UnderLimit;

impl RetractableAggregate for UnderLimit {
    type In = (String, i64);
    type Acc = (String, i64, i64);
    type Out = (String, i64);

    fn accumulate(&self, acc: &mut (String, i64, i64), row: &(String, i64)) {
        *acc = (row.0.clone(), acc.1 + 1, acc.2 + row.1);
    }
    fn retract(&self, acc: &mut (String, i64, i64), row: &(String, i64)) {
        *acc = (row.0.clone(), acc.1 - 1, acc.2 - row.1);
    }
    fn count(&self, acc: &(String, i64, i64)) -> i64 {
        acc.1
    }
    fn result(&self, acc: &(String, i64, i64)) -> Option<(String, i64)> {
        (acc.2 < LIMIT).then(|| (acc.0.clone(), acc.2))
    }
}

fn build(env: &StreamEnv, _: &JobParams) {
    let points = env.from_source(CsvSource::<(String, i64)>::new(&POINTS).with_split_bytes(64).with_fetch_size(4));
    let changes = points.map(Change::insert);
    let totals = group_changelog(&changes, |row: &(String, i64)| row.0.clone(), UnderLimit, env.mode());
    // Flink's upsert sink: -U is dropped, the +U after it replaces the row.
    let sink = TxnStoreSink::upsert_changelog("under_limit", |change: &Change<(String, i64)>| {
        let value = (change.kind != RowKind::Delete).then(|| change.row.1.to_string());
        (change.row.0.clone(), value)
    });
    totals.filter(|change: &Change<(String, i64)>| change.kind != RowKind::UpdateBefore).sink_to(sink);
}

/// 30 players, 12 scores each of 1 to 20 points: about half end over the limit.
fn generate(_: &JobParams, prng: &mut Prng) -> ExternalInput {
    let file = |part: usize, prng: &mut Prng| {
        let records: String = (0..120).map(|_| format!("p{},{}\n", prng.below(30), 1 + prng.below(20))).collect();
        (format!("points/part-{part}.csv"), format!("player,points\n{records}").into_bytes())
    };
    ExternalInput { files: (0..3).map(|part| file(part, prng)).collect(), ..ExternalInput::default() }
}

fn reference(_: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> ExpectedOutput {
    let mut totals: BTreeMap<String, i64> = BTreeMap::new();
    for (_, contents) in input.input_files("points") {
        for fields in parse_records(contents).expect("generated CSV").into_iter().skip(1) {
            *totals.entry(fields[0].clone()).or_default() += fields[1].parse::<i64>().expect("a number");
        }
    }
    let rows = totals
        .into_iter()
        .filter(|(_, total)| *total < LIMIT)
        .map(|(player, total)| Row::new(player, total.to_string()));
    let updates = if mode == ExecutionMode::Batch { Updates::Exact } else { Updates::FinalOnly };
    let table = ExpectedTable { kind: SinkKind::Upsert, rows: rows.collect(), updates };
    BTreeMap::from([("under_limit".to_string(), table)])
}

static UNDER_LIMIT_JOB: SimJob = SimJob {
    definition: JobDefinition {
        name: "under-limit",
        description: "players under a limit, deleted when they pass it",
        params: &[],
        inputs: &[POINTS],
        build,
    },
    generate_input: Some(generate),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: None,
};

#[test]
fn deletions_of_an_updating_stream_commit_exactly_once_through_a_crash() {
    let text = "name: under-limit\njob: under-limit\ncluster: { task_managers: 3, slots_per_task_manager: 2 }\n\
                checkpoints: { interval: 5ms }\nfaults:\n  - { at: 15ms, kill: tm-1, restart_after: 100ms }\n";
    let scenario = Scenario::parse_with("under-limit.yaml", text, JobCatalog::of([&UNDER_LIMIT_JOB]).unwrap()).unwrap();
    let mut deleted = 0;
    for seed in 1..6 {
        let result = run_seed(&scenario, seed, &scenario.modes, DeterminismCheck::Off);
        assert_eq!(result.outcome(), SeedOutcome::Passed, "seed {seed}: {:?}", result.failures());
        for (report, _) in &result.runs {
            let tombstones = report.committed["under_limit"].log.iter().filter(|row| row.value.is_none()).count();
            match report.mode {
                ExecutionMode::Batch => assert_eq!(tombstones, 0, "seed {seed}: batch never takes a row back"),
                ExecutionMode::Streaming => deleted += tombstones,
            }
        }
    }
    assert!(deleted > 0, "no streaming run deleted a player: the test proves nothing");
}
