//! The sequential reference interpreter of a program: what each node outputs, as a multiset,
//! computed node by node in plain Rust, and the tables the sinks must hold.

use std::collections::BTreeMap;

use super::build::{bucket_end, joined, larger};
use super::program::{Agg, Edge, Event, MODULUS, Op, Program};
use super::{sliding, table_name, tumbling};
use crate::{ExpectedOutput, ExpectedTable, Updates};
use sluice_engine::connectors::{Row, SinkKind};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::time::{TimeWindow, WindowAssigner};

/// Groups events by key, keeping each key's in the order given.
fn by_key(events: &[Event]) -> BTreeMap<u64, Vec<Event>> {
    let mut keys: BTreeMap<u64, Vec<Event>> = BTreeMap::new();
    for event in events {
        keys.entry(event.0).or_default().push(*event);
    }
    keys
}

fn aggregate(values: &[Event], agg: Agg) -> u64 {
    match agg {
        Agg::Sum => values.iter().map(|event| event.2).sum(),
        Agg::Count => values.len() as u64,
        Agg::Max => values.iter().copied().reduce(larger).map_or(0, |event| event.2),
    }
}

/// One event per (key, window) of `assigner` with the window's aggregate.
fn windows(events: &[Event], assigner: &dyn WindowAssigner, agg: Agg) -> Vec<Event> {
    let mut windows: BTreeMap<(u64, TimeWindow), Vec<Event>> = BTreeMap::new();
    for event in events {
        for window in assigner.assign(event.1) {
            windows.entry((event.0, window)).or_default().push(*event);
        }
    }
    windows.into_iter().map(|((key, window), events)| (key, window.max_timestamp(), aggregate(&events, agg))).collect()
}

/// Per key and bucket, the key's running total at the bucket's end.
fn bucket_totals(events: &[Event], bucket: i64) -> Vec<Event> {
    let mut out = Vec::new();
    for (key, events) in by_key(events) {
        let mut buckets: BTreeMap<i64, u64> = BTreeMap::new();
        for event in events {
            *buckets.entry(bucket_end(event.1, bucket)).or_insert(0) += event.2;
        }
        let mut total = 0;
        for (end, sum) in buckets {
            total += sum;
            out.push((key, end, total));
        }
    }
    out
}

/// How many pairs a join of `left` and `right` makes.
fn join_size(left: &[Event], right: &[Event]) -> usize {
    let rights = by_key(right);
    left.iter().map(|event| rights.get(&event.0).map_or(0, Vec::len)).sum()
}

fn join(left: &[Event], right: &[Event]) -> Vec<Event> {
    let rights = by_key(right);
    let mut out = Vec::new();
    for event in left {
        for other in rights.get(&event.0).into_iter().flatten() {
            out.push(joined(event, other));
        }
    }
    out
}

/// What every node outputs, given each source's events (by node index); `None` as soon as the
/// nodes together output more than `limit` events (a join is measured before it is made).
pub(super) fn evaluate(
    program: &Program,
    sources: &BTreeMap<usize, Vec<Event>>,
    limit: usize,
) -> Option<Vec<Vec<Event>>> {
    let mut outputs: Vec<Vec<Event>> = Vec::with_capacity(program.nodes.len());
    let mut total = 0usize;
    for (index, node) in program.nodes.iter().enumerate() {
        // A broadcast edge copies every element to each of the consumer's subtasks.
        let copies = node.parallelism.unwrap_or(1) as usize;
        let read = |position: usize| -> Vec<Event> {
            let input = node.inputs()[position];
            let events = &outputs[input.node];
            match input.edge {
                Edge::Broadcast => events.iter().flat_map(|event| std::iter::repeat_n(*event, copies)).collect(),
                _ => events.clone(),
            }
        };
        let output = match &node.op {
            Op::Source { .. } => sources.get(&index).cloned().unwrap_or_default(),
            &Op::Map { mul, add, .. } => read(0)
                .into_iter()
                .map(|(key, time, value)| (key, time, (value % MODULUS * mul + add) % MODULUS))
                .collect(),
            &Op::Rekey { modulus, .. } => {
                read(0).into_iter().map(|(key, time, value)| ((key + value) % modulus, time, value)).collect()
            }
            &Op::Filter { modulus, drop, .. } => {
                read(0).into_iter().filter(|event| (event.0 + event.2) % modulus != drop).collect()
            }
            &Op::Flat { copies, .. } => read(0)
                .into_iter()
                .flat_map(|(key, time, value)| (0..value % (copies + 1)).map(move |copy| (key, time, value + copy)))
                .collect(),
            Op::Union { inputs } => (0..inputs.len()).flat_map(read).collect(),
            &Op::Tumble { size, agg, .. } => windows(&read(0), &tumbling(size), agg),
            &Op::Slide { size, slide, agg, .. } => windows(&read(0), &sliding(size, slide), agg),
            &Op::Process { bucket, .. } => bucket_totals(&read(0), bucket),
            Op::Join { .. } => {
                let (left, right) = (read(0), read(1));
                if total.saturating_add(join_size(&left, &right)) > limit {
                    return None;
                }
                join(&left, &right)
            }
            Op::Reduce { .. } => read(0),
        };
        total = total.saturating_add(output.len());
        if total > limit {
            return None;
        }
        outputs.push(output);
    }
    Some(outputs)
}

/// A reduce's table: the final value per key, and in streaming one update per element.
fn reduce_table(events: &[Event], agg: Agg, mode: ExecutionMode) -> ExpectedTable {
    let keys = by_key(events);
    let rows: Vec<Row> =
        keys.iter().map(|(key, events)| Row::new(key.to_string(), aggregate(events, agg).to_string())).collect();
    let updates = match mode {
        ExecutionMode::Batch => Updates::Exact,
        ExecutionMode::Streaming => {
            Updates::CountPerKey(keys.iter().map(|(key, events)| (key.to_string(), events.len() as u64)).collect())
        }
    };
    ExpectedTable { kind: SinkKind::Upsert, rows, updates }
}

/// The tables the program's sinks must hold in `mode`.
pub(super) fn tables(program: &Program, outputs: &[Vec<Event>], mode: ExecutionMode) -> ExpectedOutput {
    let mut expected = BTreeMap::new();
    for leaf in program.leaves() {
        let table = match program.nodes[leaf].op {
            Op::Reduce { agg, .. } => reduce_table(&outputs[leaf], agg, mode),
            _ => {
                let mut rows: Vec<Row> = outputs[leaf]
                    .iter()
                    .map(|event| Row::new(event.0.to_string(), format!("{}:{}", event.1, event.2)))
                    .collect();
                rows.sort();
                ExpectedTable { kind: SinkKind::Append, rows, updates: Updates::Exact }
            }
        };
        expected.insert(table_name(leaf), table);
    }
    expected
}
