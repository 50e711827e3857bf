//! TPC-DS queries as jobs (`tpcds-q3`, `tpcds-q7`, …): each query's DAG as Flink's batch
//! planner shapes it, over the TPC-DS tables (CSV inputs, [`tables`]), with a sequential
//! reference that computes the query's answer from the same tables.
//!
//! The tables come from a scenario's files (DuckDB's `dsdgen` through
//! `benches/tpcds/make_tables.py`: the committed fixture is `catalog/tests/data/tpcds-sf0.01`)
//! or from [`generate`], which draws them at a scale from the marginals measured at SF 1. What a
//! job commits is the query's answer as `benches/tpcds/queries/qNN.sql` writes it (no ORDER BY or
//! LIMIT, averages as sums and counts): one upsert row per group, its key the group's columns
//! and its value the aggregates, joined with `|`. Streaming updates a group once per joined
//! row; batch commits one row per group.
//!
//! Plans use Flink's physical operators: the fact table's scan with its projection chained to
//! it; small dimensions, filtered at their scan, broadcast to hash joins that probe over
//! FORWARD edges (two-input operators are never chained, so each is a pointwise edge); a local
//! aggregation chained to the last join, and the final one behind a HASH edge.

use std::collections::BTreeMap;

use sluice_engine::api::{
    DataStream, ExecutionMode, InputSpec, Key, KeyedContext, KeyedProcessFunction, OperatorError, ParamSpec, Record,
    StreamEnv, ValueState,
};
use sluice_engine::connectors::csv::{CsvRecord, parse_records};
use sluice_engine::connectors::{CsvSource, Row, SinkKind, TxnStoreSink};

use super::{ExpectedOutput, ExpectedTable, ExternalInput, Updates};

pub mod generate;
mod q03;
mod q07;
mod q19;
mod q42_55;
mod q64;
mod q72;
mod q95;
pub mod tables;

pub(crate) use q03::Q3;
pub(crate) use q07::Q7;
pub(crate) use q19::Q19;
pub(crate) use q42_55::{Q42, Q55};
pub(crate) use q64::Q64;
pub(crate) use q72::Q72;
pub(crate) use q95::Q95;

/// The generator's scale: SF in thousandths.
pub(crate) const SCALE: ParamSpec =
    ParamSpec::int("scale", 5, 1, 1_000, "scale factor in thousandths, for generated tables (5: 14,400 store sales)");

/// A scan splits its files into parts of at most this many bytes, read by its subtasks.
const SPLIT_BYTES: u64 = 64 << 10;

/// The rows of table `input`, read as a job's source reads them.
pub(crate) fn scan<T: CsvRecord>(env: &StreamEnv, input: &InputSpec) -> DataStream<T> {
    env.from_source(CsvSource::<T>::new(input).with_split_bytes(SPLIT_BYTES))
}

/// `store_sales` projected to `(ss_sold_date_sk, ss_item_sk, ss_ext_sales_price)`.
pub(crate) fn sale_prices(env: &StreamEnv) -> DataStream<(i64, i64, Option<i64>)> {
    scan::<tables::StoreSale>(env, &tables::STORE_SALES)
        .map(|sale: tables::StoreSale| (sale.ss_sold_date_sk, sale.ss_item_sk, sale.ss_ext_sales_price))
        .name("Project store_sales")
}

/// Commits `(group, value)` rows to the upsert table [`ANSWER`], the value shown by `show`.
pub(crate) fn commit<V: Record>(answer: DataStream<(String, V)>, show: impl Fn(&V) -> String + Send + Sync + 'static) {
    let sink = TxnStoreSink::upsert(ANSWER, move |row: &(String, V)| (row.0.clone(), show(&row.1)));
    answer.sink_to(sink).name("Sink: answer");
}

/// An optional integer as SQL prints it in a key: NULL is the empty string.
pub(crate) fn show(value: Option<i64>) -> String {
    value.map_or_else(String::new, |value| value.to_string())
}

/// Every record of table `input`, for a reference (the input was checked when it was loaded or
/// generated).
pub(crate) fn read<T: CsvRecord>(input: &ExternalInput, spec: &InputSpec) -> Vec<T> {
    let mut records = Vec::new();
    for (path, bytes) in input.input_files(spec.name) {
        let rows = parse_records(bytes).unwrap_or_else(|error| panic!("reference: {path}: {error}"));
        for fields in rows.into_iter().skip(1) {
            records.push(
                T::from_fields(&fields)
                    .unwrap_or_else(|(column, error)| panic!("reference: {path}: column {column}: {error}")),
            );
        }
    }
    records
}

/// A query's answer, as a reference computes it: per group, its value and how many joined
/// rows updated it (what streaming commits per group).
pub(crate) struct Groups<V>(BTreeMap<String, (V, u64)>);

impl<V: Default> Groups<V> {
    pub(crate) fn new() -> Groups<V> {
        Groups(BTreeMap::new())
    }

    /// Folds one joined row into group `key`.
    pub(crate) fn add(&mut self, key: String, fold: impl FnOnce(&mut V)) {
        let (value, updates) = self.0.entry(key).or_default();
        fold(value);
        *updates += 1;
    }

    /// What the job must commit in `mode`, each group's value shown by `show`.
    pub(crate) fn expected(self, show: impl Fn(&V) -> String, mode: ExecutionMode) -> ExpectedOutput {
        let rows = self.0.iter().map(|(key, (value, _))| Row::new(key.clone(), show(value))).collect();
        let updates = self.0.into_iter().map(|(key, (_, count))| match mode {
            ExecutionMode::Streaming => (key, count),
            ExecutionMode::Batch => (key, 1),
        });
        let table = ExpectedTable { kind: SinkKind::Upsert, rows, updates: Updates::CountPerKey(updates.collect()) };
        BTreeMap::from([(ANSWER.to_string(), table)])
    }
}

/// Marks each element with whether it is the first of its key (a distinct, or the per-key step
/// of a split distinct count): `(first, element)`.
pub(crate) struct MarkFirst;

/// Whether a key was seen.
const SEEN: ValueState<bool> = ValueState::new("seen");

impl<K: Key, T: Record> KeyedProcessFunction<K, T, (bool, T)> for MarkFirst {
    fn process_element(&self, value: T, context: &mut KeyedContext<'_, K, (bool, T)>) -> Result<(), OperatorError> {
        let first = SEEN.value(context.state())?.is_none();
        if first {
            SEEN.update(context.state(), &true);
        }
        context.collect((first, value));
        Ok(())
    }
}

/// The answer's table of every query job.
pub(crate) const ANSWER: &str = "answer";
