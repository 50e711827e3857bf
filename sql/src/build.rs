//! A [`Plan`] onto the engine's DataStream API: one source per source table (shared by every
//! `INSERT INTO` that reads it), operator chains for filters and projections, one
//! transactional-store sink per `INSERT INTO`.

use std::collections::BTreeMap;
use std::sync::Arc;

use sluice_engine::api::changelog::{Change, group_changelog, join_changelogs, keyed_sides};
use sluice_engine::api::outer_join::{OuterChangelogJoin, OuterJoinFunctions, Pad};
use sluice_engine::api::upsert_materializer::materialize;
use sluice_engine::api::{DataStream, StreamEnv};
use sluice_engine::connectors::log::LogSource;
use sluice_engine::connectors::txn_store::TxnStoreSink;
use sluice_engine::graph::ExecutionMode;

use sluice_engine::api::changelog::RetractableAggregate;
use sluice_engine::api::interval_join::{self, IntervalBounds};
use sluice_engine::time::TimeWindow;

use crate::aggregate::{Aggregation, GroupAggregation, GroupBy};
use crate::expr::{self, Expr};
use crate::plan::{Node, Outer, Plan, Sink, Source, is_updating, needs_materializer, source_relation, with_window};
use crate::topn::{Order, TopN, ranked_changes};
use crate::value::{Row, Value};
use crate::window::{SqlWindows, WindowSpec};

/// The log topic a source table's rows are read from: the table's name.
pub fn topic_of(table: &str) -> String {
    format!("sql.{table}")
}

/// A built relation: a stream of rows, or of changes to rows (an updating relation).
enum Built {
    Append(DataStream<Row>),
    Updating(DataStream<Change<Row>>),
}

/// Builds `plan`'s dataflow in `env`.
pub fn build_plan(env: &StreamEnv, plan: &Plan) {
    let mut scans: BTreeMap<String, DataStream<Row>> = BTreeMap::new();
    for insert in &plan.inserts {
        let sink = insert.sink.clone();
        let name = format!("Sink: {}", sink.name);
        match build_node(env, plan, &insert.input.node, &mut scans) {
            Built::Append(stream) => {
                let to_row = move |row: &Row| render(&sink, row);
                let sink = if insert.sink.primary_key.is_empty() {
                    TxnStoreSink::append(&insert.sink.name, to_row)
                } else {
                    TxnStoreSink::upsert(&insert.sink.name, to_row)
                };
                stream.sink_to(sink).name(&name);
            }
            Built::Updating(changes) => {
                let changes = if needs_materializer(insert) {
                    let key = Arc::new(insert.sink.primary_key.clone());
                    let key = move |row: &Row| Row(key.iter().map(|index| row.0[*index].clone()).collect());
                    materialize(&changes, key, env.mode()).name("SinkUpsertMaterializer")
                } else {
                    changes
                };
                let to_change = move |change: &Change<Row>| {
                    let (key, value) = render(&sink, &change.row);
                    (key, change.kind.is_addition().then_some(value))
                };
                changes.sink_to(TxnStoreSink::upsert_changelog(&insert.sink.name, to_change)).name(&name);
            }
        }
    }
}

fn build_node(env: &StreamEnv, plan: &Plan, node: &Node, scans: &mut BTreeMap<String, DataStream<Row>>) -> Built {
    let mut input = |node: &Node| build_node(env, plan, node, scans);
    match node {
        Node::Scan { table } => {
            Built::Append(scans.entry(table.clone()).or_insert_with(|| scan(env, &plan.sources[table])).clone())
        }
        Node::Filter { input: rows, predicate } => calc_filter(input(rows), predicate),
        Node::Project { input: rows, exprs } => calc_project(input(rows), exprs),
        Node::Window { input: rows, time, spec, .. } => Built::Append(window_rows(append(input(rows)), *time, *spec)),
        Node::WindowAggregate { input: rows, spec, group_by, width, .. } => {
            Built::Append(window_aggregate(append(input(rows)), *spec, group_by, *width))
        }
        Node::Join { left, right, left_keys, right_keys, left_width, outer, .. } if is_updating(node) => {
            let (left, right) = (changes(input(left)), changes(input(right)));
            let keys = (left_keys.as_slice(), right_keys.as_slice());
            Built::Updating(changelog_join((&left, &right), keys, *left_width, outer.as_ref(), env.mode()))
        }
        Node::Join { left, right, left_keys, right_keys, times, bounds, .. } => {
            let (left, right) = (append(input(left)), append(input(right)));
            match times.zip(*bounds) {
                Some((times, bounds)) => {
                    Built::Append(interval_join((&left, &right), (left_keys, right_keys), times, bounds))
                }
                None => Built::Append(join(&left, &right, left_keys, right_keys)),
            }
        }
        Node::Rank { input: rows, partition, order, limit, .. } => {
            let limit = limit.expect("invariant: the planner refuses a ROW_NUMBER() without a limit");
            Built::Updating(top_n(env, &append(input(rows)), partition, order, limit))
        }
        Node::Aggregate { input: rows, group_by } => {
            // An updating input's retractions take rows back out of their groups.
            let retracting = is_updating(rows);
            let changes = changes(input(rows));
            let keys = Arc::new(group_by.keys.clone());
            let key = move |row: &Row| Row(keys.iter().map(|key| key.eval(&row.0)).collect());
            Built::Updating(
                group_changelog(
                    &changes,
                    key,
                    GroupAggregation { aggregation: Aggregation(group_by.clone()), retracting },
                    env.mode(),
                )
                .name("GroupAggregate"),
            )
        }
    }
}

/// A relation as changes: an append-only one's rows are insertions.
fn changes(built: Built) -> DataStream<Change<Row>> {
    match built {
        Built::Append(rows) => rows.map(Change::insert).name("Calc: to changelog"),
        Built::Updating(changes) => changes,
    }
}

/// The rows of an input the planner made append-only (windows, joins, aggregates and Top-N
/// read only those).
fn append(built: Built) -> DataStream<Row> {
    match built {
        Built::Append(rows) => rows,
        Built::Updating(_) => unreachable!("invariant: the planner refuses this operator over an updating input"),
    }
}

fn calc_filter(input: Built, predicate: &Expr) -> Built {
    let predicate = Arc::new(predicate.clone());
    match input {
        Built::Append(rows) => Built::Append(
            rows.filter(move |row: &Row| predicate.eval(&row.0) == Value::Bool(true)).name("Calc: filter"),
        ),
        Built::Updating(changes) => Built::Updating(
            changes
                .filter(move |change: &Change<Row>| predicate.eval(&change.row.0) == Value::Bool(true))
                .name("Calc: filter"),
        ),
    }
}

fn calc_project(input: Built, exprs: &[Expr]) -> Built {
    let exprs: Arc<Vec<Expr>> = Arc::new(exprs.to_vec());
    match input {
        Built::Append(rows) => {
            Built::Append(rows.map(move |row: Row| expr::project(&exprs, &row)).name("Calc: project"))
        }
        Built::Updating(changes) => Built::Updating(
            changes
                .map(move |change: Change<Row>| Change { kind: change.kind, row: expr::project(&exprs, &change.row) })
                .name("Calc: project"),
        ),
    }
}

/// A window table function: each row once per window of its time column's value.
fn window_rows(rows: DataStream<Row>, time: usize, spec: WindowSpec) -> DataStream<Row> {
    assert!(!spec.is_merging(), "invariant: sessions are planned only as window aggregations (bind_group_window)");
    rows.flat_map(move |row: Row| {
        let Value::Timestamp(timestamp) = row.0[time] else { return Vec::new() };
        spec.windows(timestamp).into_iter().map(|window| with_window(&row, window)).collect()
    })
    .name("WindowTableFunction")
}

/// Top-N on the engine's group aggregation: each partition's first rows as one result, which
/// changes as a whole, then as changes of its numbered rows.
fn top_n(
    env: &StreamEnv,
    rows: &DataStream<Row>,
    partition: &[Expr],
    order: &Order,
    limit: usize,
) -> DataStream<Change<Row>> {
    let top = TopN { order: order.clone(), limit };
    let keys = Arc::new(partition.to_vec());
    let key = move |row: &Row| Row(keys.iter().map(|key| key.eval(&row.0)).collect());
    let changes = rows.map(Change::insert).name("Calc: to changelog");
    let partitions = group_changelog(&changes, key, top, env.mode()).name("Rank");
    partitions.flat_map(ranked_changes).name("Calc: ranked rows")
}

/// A regular inner equi-join on the engine's keyed join: rows with a `NULL` key meet nothing
/// (SQL's `=`), so they are dropped before the exchange.
fn join(left: &DataStream<Row>, right: &DataStream<Row>, left_keys: &[Expr], right_keys: &[Expr]) -> DataStream<Row> {
    let keyed = |rows: &DataStream<Row>, keys: &[Expr]| {
        let keys = Arc::new(keys.to_vec());
        let for_filter = Arc::clone(&keys);
        rows.filter(move |row: &Row| for_filter.iter().all(|key| key.eval(&row.0) != Value::Null))
            .name("Calc: non-null keys")
            .key_by(move |row: &Row| Row(keys.iter().map(|key| key.eval(&row.0)).collect()))
    };
    keyed(left, left_keys)
        .join(&keyed(right, right_keys), |left: &Row, right: &Row| {
            Row(left.0.iter().chain(&right.0).cloned().collect())
        })
        .name("Join")
}

/// A join whose result updates (an outer join, or a join of an updating input) on the engine's
/// changelog joins: a row with a `NULL` key meets nothing, so an inner side's are dropped before
/// the exchange and an outer side's reach the join only to be padded.
fn changelog_join(
    (left, right): (&DataStream<Change<Row>>, &DataStream<Change<Row>>),
    (left_keys, right_keys): (&[Expr], &[Expr]),
    left_width: usize,
    outer: Option<&Outer>,
    mode: ExecutionMode,
) -> DataStream<Change<Row>> {
    let key_of = |keys: &[Expr]| {
        let keys = Arc::new(keys.to_vec());
        move |row: &Row| Row(keys.iter().map(|key| key.eval(&row.0)).collect())
    };
    let non_null = |changes: &DataStream<Change<Row>>, keys: &[Expr], outer: bool| {
        if outer {
            return changes.clone();
        }
        let key = key_of(keys);
        changes
            .filter(move |change: &Change<Row>| !key(&change.row).0.contains(&Value::Null))
            .name("Calc: non-null keys")
    };
    let (left_outer, right_outer) = outer.map_or((false, false), |outer| (outer.left, outer.right));
    let (left, right) = (non_null(left, left_keys, left_outer), non_null(right, right_keys, right_outer));
    let condition = outer.and_then(|outer| outer.condition.clone());
    let left_key = key_of(left_keys);
    let join = move |left: &Row, right: &Row| {
        let pair = Row(left.0.iter().chain(&right.0).cloned().collect());
        let partners = !left_key(left).0.contains(&Value::Null)
            && condition.as_ref().is_none_or(|condition| condition.eval(&pair.0) == Value::Bool(true));
        partners.then_some(pair)
    };
    let Some(outer) = outer else {
        return join_changelogs(&left, &right, key_of(left_keys), key_of(right_keys), join).name("Join");
    };
    let right_width = outer.right_width;
    let pad_left = move |left: &Row| Row(left.0.iter().cloned().chain(vec![Value::Null; right_width]).collect());
    let pad_right = move |right: &Row| Row(vec![Value::Null; left_width].into_iter().chain(right.0.clone()).collect());
    let functions = OuterJoinFunctions {
        join: Arc::new(join),
        pad_left: outer.left.then(|| Arc::new(pad_left) as Pad<Row, Row>),
        pad_right: outer.right.then(|| Arc::new(pad_right) as Pad<Row, Row>),
    };
    keyed_sides((&left, &right), key_of(left_keys), key_of(right_keys))
        .process(OuterChangelogJoin::new(functions, mode))
        .name(&format!("Join({})", Outer::join_type(Some(outer))))
}

/// An interval join on the engine's (`sluice_engine::api::interval_join`): as a regular join's
/// keys, and each side's time column for its bounds; a row whose time is `NULL` meets nothing.
fn interval_join(
    (left, right): (&DataStream<Row>, &DataStream<Row>),
    (left_keys, right_keys): (&[Expr], &[Expr]),
    (left_time, right_time): (usize, usize),
    bounds: IntervalBounds,
) -> DataStream<Row> {
    let keyed = |rows: &DataStream<Row>, keys: &[Expr], time: usize| {
        let keys = Arc::new(keys.to_vec());
        let key = move |row: &Row| Row(keys.iter().map(|key| key.eval(&row.0)).collect());
        let for_filter = key.clone();
        let joinable = move |row: &Row| {
            matches!(row.0[time], Value::Timestamp(_)) && for_filter(row).0.iter().all(|value| *value != Value::Null)
        };
        (rows.filter(joinable).name("Calc: non-null keys and time"), key)
    };
    let time_of = |time: usize| {
        move |row: &Row| match row.0[time] {
            Value::Timestamp(millis) => millis,
            _ => unreachable!("invariant: rows without a time are filtered out before an interval join"),
        }
    };
    let ((left, left_key), (right, right_key)) =
        (keyed(left, left_keys, left_time), keyed(right, right_keys, right_time));
    let pair = |left: &Row, right: &Row| Row(left.0.iter().chain(&right.0).cloned().collect());
    interval_join::interval_join(
        (&left, &right),
        (left_key, right_key),
        (time_of(left_time), time_of(right_time)),
        bounds,
        pair,
    )
    .name("IntervalJoin")
}

/// Flink's window aggregation on the engine's window operator: rows keyed by the keys that are
/// not the window's, placed into windows by their event timestamps (the time column's values),
/// aggregated, and when a window fires its row built in the keys' order (window columns from
/// the window), then `HAVING`.
fn window_aggregate(rows: DataStream<Row>, spec: WindowSpec, group_by: &GroupBy, width: usize) -> DataStream<Row> {
    let other_keys: Vec<Expr> =
        group_by.keys.iter().filter(|key| !matches!(key, Expr::Column(index) if *index >= width)).cloned().collect();
    let aggregation =
        Arc::new(Aggregation(GroupBy { keys: other_keys.clone(), calls: group_by.calls.clone(), having: None }));
    let layout = Arc::new(group_by.keys.clone());
    let key_exprs = Arc::new(other_keys);
    let keyed = rows.key_by(move |row: &Row| Row(key_exprs.iter().map(|key| key.eval(&row.0)).collect()));
    let add = Arc::clone(&aggregation);
    let merge = Arc::clone(&aggregation);
    // Sessions merge their accumulators; other windows never call `merge`.
    let windowed = keyed.window(SqlWindows(spec)).aggregate_merging(
        Row::default,
        move |mut acc: Row, row: Row| {
            add.accumulate(&mut acc, &row);
            acc
        },
        move |older: Row, newer: Row| merge.merge(older, newer),
        move |_key: &Row, window: TimeWindow, acc: Row| {
            let inner = aggregation.output(&acc).0;
            let mut others = inner.iter();
            let mut row: Vec<Value> = layout
                .iter()
                .map(|key| match key {
                    Expr::Column(index) if *index >= width => {
                        let window = [window.start, window.end, window.end - 1];
                        Value::Timestamp(window[*index - width])
                    }
                    _ => others.next().cloned().unwrap_or(Value::Null),
                })
                .collect();
            row.extend(others.cloned());
            Row(row)
        },
    );
    let windowed = windowed.name("WindowAggregate");
    match group_by.having.clone() {
        Some(having) => windowed.filter(move |row: &Row| having.eval(&row.0) == Value::Bool(true)).name("Calc: having"),
        None => windowed,
    }
}

/// A table's source; with a `WATERMARK FOR`, its readers stamp rows with the rowtime and
/// generate watermarks per log partition, as Flink's FLIP-27 sources do (a reader reading
/// partitions in turn never makes one's rows late by reading another ahead).
fn scan(env: &StreamEnv, source: &Source) -> DataStream<Row> {
    let table = &source.def.name;
    let log = LogSource::<Row>::new(&topic_of(table));
    let name = format!("Source: {table}");
    let Some((column, delay)) = source.watermark else { return env.from_source(log).name(&name) };
    let rowtime = match source_relation(source).node {
        Node::Project { exprs, .. } => exprs[column].clone(),
        _ => Expr::Column(column),
    };
    let timestamp = move |row: &Row| match rowtime.eval(&row.0) {
        Value::Timestamp(millis) => millis,
        _ => i64::MIN,
    };
    env.from_source_with_watermarks(log, delay, timestamp).name(&name)
}

/// A sink row as the transactional store keeps it: an upsert table's key is its primary key's
/// values, its value the other columns'; an append table's key is the first column, its value
/// the rest (values as Flink prints them, separated by `, `).
pub fn render(sink: &Sink, row: &Row) -> (String, String) {
    let join = |values: &mut dyn Iterator<Item = &Value>| values.map(Value::to_string).collect::<Vec<_>>().join(", ");
    if sink.primary_key.is_empty() {
        let (first, rest) =
            row.0.split_first().map_or((String::new(), &[][..]), |(first, rest)| (first.to_string(), rest));
        return (first, join(&mut rest.iter()));
    }
    let key = join(&mut sink.primary_key.iter().map(|index| &row.0[*index]));
    let value = join(
        &mut row.0.iter().enumerate().filter(|(index, _)| !sink.primary_key.contains(index)).map(|(_, value)| value),
    );
    (key, value)
}
