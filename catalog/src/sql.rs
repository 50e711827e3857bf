//! `sql`: a job written in Flink SQL, given as its script (`params: { script: … }`), planned by
//! `sluice-sql` in every process, with the script's own sequential evaluation as its reference.
//!
//! The script's source tables are generated here (the `nexmark` connector's events, spread
//! round-robin over `partitions` log partitions), so a SQL job runs under the simulator, its
//! faults and its oracles like any built-in job: streaming and batch must commit what the
//! reference computes. The same evaluation over the rows read before a checkpoint's barrier is
//! its prefix reference (the checkpoint-prefix oracle).

use std::collections::BTreeMap;

use super::{
    ExpectedOutput, ExpectedTable, ExternalInput, JobDefinition, JobParams, ParamSpec, PrefixTable, ReadInput, SimJob,
    Updates,
};
use sluice_engine::api::{ExecutionMode, Record, StreamEnv};
use sluice_engine::connectors::{Row, SinkKind};
use sluice_engine::prng::Prng;
pub use sluice_sql::SqlError;
use sluice_sql::build::{build_plan, render, topic_of};
use sluice_sql::node::Node;
pub use sluice_sql::plan::Plan;
use sluice_sql::plan::{Insert, SourceConnector, evaluate};
use sluice_sql::{nexmark, plan_script, value};

/// The longest script a scenario may give.
pub const MAX_SCRIPT_BYTES: usize = 32 * 1024;

/// The script of a scenario that does not give one: Nexmark's query 1 over 1,000 events.
pub const DEFAULT_SCRIPT: &str = concat!(
    "CREATE TABLE datagen (",
    sluice_sql::nexmark_columns!(),
    ") WITH ('connector' = 'nexmark', 'events.num' = '1000');
CREATE TABLE q1 (auction BIGINT, bidder BIGINT, price DECIMAL(23, 3), extra VARCHAR)
  WITH ('connector' = 'sluice');
INSERT INTO q1 SELECT bid.auction, bid.bidder, 0.908 * bid.price, bid.extra FROM datagen WHERE event_type = 2;
"
);

/// The job.
pub const SQL: SimJob = SimJob {
    definition: JobDefinition {
        name: "sql",
        description: "a Flink SQL script: CREATE TABLE, CREATE VIEW and INSERT INTO statements (see docs/sql.md)",
        params: &[
            ParamSpec::long_text("script", DEFAULT_SCRIPT, check_script, MAX_SCRIPT_BYTES, "the SQL script"),
            ParamSpec::int("partitions", 4, 1, 64, "log partitions of each source table"),
        ],
        inputs: &[],
        build,
    },
    generate_input: Some(generate_input),
    reference: Some(reference),
    reference_summary: None,
    late: None,
    prefix_reference: Some(prefix_reference),
};

fn check_script(text: &str) -> Result<(), String> {
    check_script_text(text).map_err(|error| error.to_string())
}

/// Plans a script as every process will (for `EXPLAIN`, or the error with its line and column).
pub fn plan_text(text: &str) -> Result<Plan, SqlError> {
    plan_script(text)
}

/// The plan trees of `inserts` (`EXPLAIN`), with their changelog modes.
pub fn explain(plan: &Plan, inserts: &[sluice_sql::plan::Insert]) -> String {
    sluice_sql::explain::explain(plan, inserts)
}

/// Plans a script and checks that it runs something, for the error with its line and column.
pub fn check_script_text(text: &str) -> Result<(), SqlError> {
    if plan_script(text)?.inserts.is_empty() {
        let message = "the script has no INSERT INTO: nothing to run (EXPLAIN statements only print plans)";
        return Err(SqlError { line: 0, column: 0, message: message.to_string() });
    }
    Ok(())
}

/// The plan of `params`' script, checked when the parameters were resolved.
pub fn plan_of(params: &JobParams) -> Plan {
    plan_script(params.text("script"))
        .unwrap_or_else(|error| panic!("internal: the script parameter was checked: {error}"))
}

fn build(env: &StreamEnv, params: &JobParams) {
    build_plan(env, &plan_of(params));
}

fn source_rows(plan: &Plan) -> BTreeMap<String, Vec<value::Row>> {
    plan.sources
        .iter()
        .map(|(name, source)| {
            let rows = match &source.connector {
                SourceConnector::Nexmark(options) => nexmark::events(options).collect(),
                SourceConnector::Values(rows) => rows.clone(),
            };
            (name.clone(), rows)
        })
        .collect()
}

fn generate_input(params: &JobParams, _prng: &mut Prng) -> ExternalInput {
    let plan = plan_of(params);
    let partitions = params.get("partitions") as usize;
    let mut topics = BTreeMap::new();
    for (table, rows) in source_rows(&plan) {
        let mut topic: Vec<Vec<Vec<u8>>> = vec![Vec::new(); partitions];
        for (index, row) in rows.iter().enumerate() {
            topic[index % partitions].push(row.to_bytes());
        }
        topics.insert(topic_of(&table), topic);
    }
    ExternalInput { topics, ..ExternalInput::default() }
}

fn reference(params: &JobParams, _input: &ExternalInput, _mode: ExecutionMode) -> ExpectedOutput {
    let plan = plan_of(params);
    let inputs = source_rows(&plan);
    plan.inserts.iter().map(|insert| (insert.sink.name.clone(), expected_table(insert, &inputs))).collect()
}

/// What an INSERT INTO commits over `inputs`: an append table's rows, an upsert table's final
/// row per key.
fn expected_table(insert: &Insert, inputs: &BTreeMap<String, Vec<value::Row>>) -> ExpectedTable {
    let evaluated = evaluate(&insert.input.node, inputs);
    let rows = evaluated.iter().map(|row| render(&insert.sink, row));
    if insert.sink.primary_key.is_empty() {
        let mut rows: Vec<Row> = rows.map(|(key, value)| Row::new(key, value)).collect();
        rows.sort();
        ExpectedTable { kind: SinkKind::Append, rows, updates: Updates::Exact }
    } else {
        let latest: BTreeMap<String, String> = rows.collect();
        let rows = latest.into_iter().map(|(key, value)| Row::new(key, value)).collect();
        ExpectedTable { kind: SinkKind::Upsert, rows, updates: Updates::FinalOnly }
    }
}

/// The script's tables over the rows the sources had read (`read`: topic → partition → rows
/// read; rows are spread round-robin, so row `i` is partition `i % P`'s `i / P`-th). A table fed
/// by a window is complete only up to the watermark, so it is owed in part.
fn prefix_reference(params: &JobParams, read: &ReadInput) -> BTreeMap<String, PrefixTable> {
    let plan = plan_of(params);
    let partitions = params.get("partitions") as usize;
    let inputs: BTreeMap<String, Vec<value::Row>> = source_rows(&plan)
        .into_iter()
        .map(|(table, rows)| {
            let offsets = read.get(&topic_of(&table));
            let was_read = |index: usize| {
                let partition = (index % partitions) as u32;
                offsets
                    .and_then(|offsets| offsets.get(&partition))
                    .is_some_and(|read| (index / partitions) < *read as usize)
            };
            let prefix =
                rows.into_iter().enumerate().filter(|(index, _)| was_read(*index)).map(|(_, row)| row).collect();
            (table, prefix)
        })
        .collect();
    let windowed = |node: &Node| matches!(node, Node::Window { .. } | Node::WindowAggregate { .. });
    plan.inserts
        .iter()
        .map(|insert| {
            let table = expected_table(insert, &inputs);
            (insert.sink.name.clone(), PrefixTable { table, complete: !insert.input.node.any(&windowed) })
        })
        .collect()
}
