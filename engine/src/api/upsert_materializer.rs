//! Flink's `SinkUpsertMaterializer`: the changes of a query whose rows have no key the planner
//! knows (a join's, which take rows back and give them again) made into upserts by the key of
//! the table they are written to.
//!
//! Per sink key it keeps the rows currently in the table under that key, in the order they
//! came. An addition appends its row and writes it (`+I` for the key's first row, `+U` after);
//! a retraction removes the last equal row: if none is left the key is deleted (`-D`), if it
//! was the last one the row before it is written again (`+U`), else nothing changes. Where a
//! key holds one row in the final table, as a primary key says, that row is what is written
//! last, whatever order the changes came in.
//!
//! Batch mode writes each key once, its last row, when the key's input ends.
//!
//! Invariant: a retraction takes back a row the key holds (anything else is an error of the
//! input, never ignored).

use super::changelog::{Change, RowKind};
use super::datastream::DataStream;
use super::process::{KeyedContext, KeyedProcessFunction};
use crate::graph::{ExecutionMode, OperatorError};
use crate::record::{Key, Record};
use crate::state::ValueState;
use crate::time::Timestamp;

/// The upsert materializer (see the module doc).
pub struct UpsertMaterializer {
    mode: ExecutionMode,
}

impl UpsertMaterializer {
    /// The materializer of a job in `mode`.
    pub fn new(mode: ExecutionMode) -> UpsertMaterializer {
        UpsertMaterializer { mode }
    }
}

/// A key's rows, oldest first.
const ROWS: &str = "rows";

impl<K: Key, T: Record + PartialEq> KeyedProcessFunction<K, Change<T>, Change<T>> for UpsertMaterializer {
    fn process_element(
        &self,
        change: Change<T>,
        context: &mut KeyedContext<'_, K, Change<T>>,
    ) -> Result<(), OperatorError> {
        let state = ValueState::<Vec<T>>::new(ROWS);
        let mut rows = state.value(context.state())?.unwrap_or_default();
        let emitted = if change.kind.is_addition() {
            let kind = if rows.is_empty() { RowKind::Insert } else { RowKind::UpdateAfter };
            rows.push(change.row.clone());
            Some(Change { kind, row: change.row })
        } else {
            let Some(position) = rows.iter().rposition(|row| *row == change.row) else {
                return Err(OperatorError::new(
                    "an upsert materializer was asked to take back a row its key does not hold: the changelog retracts what it did not add",
                ));
            };
            rows.remove(position);
            crate::cover!(ChangelogRetracted);
            match rows.last() {
                None => Some(Change::delete(change.row)),
                Some(last) if position == rows.len() => Some(Change { kind: RowKind::UpdateAfter, row: last.clone() }),
                Some(_) => None,
            }
        };
        if rows.is_empty() {
            state.clear(context.state())
        } else {
            state.update(context.state(), &rows)
        }
        match self.mode {
            ExecutionMode::Streaming => emitted.into_iter().for_each(|change| context.collect(change)),
            ExecutionMode::Batch => context.register_event_time_timer(Timestamp::MAX),
        }
        Ok(())
    }

    /// Batch, at the key's end: its last row.
    fn on_timer(&self, _: Timestamp, context: &mut KeyedContext<'_, K, Change<T>>) -> Result<(), OperatorError> {
        if let Some(last) = ValueState::<Vec<T>>::new(ROWS).value(context.state())?.and_then(|mut rows| rows.pop()) {
            context.collect(Change::insert(last));
        }
        Ok(())
    }
}

/// `changes` materialized by `key`, the sink's primary key, as an [`UpsertMaterializer`].
pub fn materialize<T: Record + PartialEq, K: Key>(
    changes: &DataStream<Change<T>>,
    key: impl Fn(&T) -> K + Send + Sync + 'static,
    mode: ExecutionMode,
) -> DataStream<Change<T>> {
    changes.key_by(move |change: &Change<T>| key(&change.row)).process(UpsertMaterializer::new(mode))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use super::*;
    use crate::api::process::{ProcessFunctions, process_operator};
    use crate::api::testing::Collected;
    use crate::graph::operator::StreamOperator;
    use crate::time::Watermark;

    type Row = (u8, i64);

    fn materializer(mode: ExecutionMode) -> Box<dyn StreamOperator> {
        let functions = ProcessFunctions {
            key_selector: Arc::new(|change: &Change<Row>| change.row.0),
            function: Arc::new(UpsertMaterializer::new(mode))
                as Arc<dyn KeyedProcessFunction<u8, Change<Row>, Change<Row>>>,
        };
        process_operator(functions, mode)
    }

    fn run(mode: ExecutionMode, input: &[Change<Row>]) -> Vec<Change<Row>> {
        let mut operator = materializer(mode);
        let mut output = Collected(Vec::new());
        for change in input {
            operator.process_element(Box::new(change.clone()), &mut output).unwrap();
        }
        operator.process_watermark(Watermark::MAX, &mut output).unwrap();
        output.take()
    }

    /// What an upsert table holds after `changes`: `+I`/`+U` put, `-D` deletes, `-U` is dropped.
    fn upserted(changes: Vec<Change<Row>>) -> BTreeMap<u8, i64> {
        let mut table = BTreeMap::new();
        for change in changes {
            match change.kind {
                RowKind::Insert | RowKind::UpdateAfter => drop(table.insert(change.row.0, change.row.1)),
                RowKind::Delete => drop(table.remove(&change.row.0)),
                RowKind::UpdateBefore => {}
            }
        }
        table
    }

    #[test]
    fn a_padded_row_replaced_by_its_pair_and_back_leaves_the_row_the_key_holds_last() {
        // An outer join's changes for key 1: padded, replaced by a pair, the pair taken back.
        let input = [
            Change::insert((1, 0)),
            Change::delete((1, 0)),
            Change::insert((1, 7)),
            Change::insert((2, 3)),
            Change::delete((1, 7)),
            Change::insert((1, 0)),
        ];
        let streaming = run(ExecutionMode::Streaming, &input);
        let kinds: Vec<&str> = streaming.iter().map(|change| change.kind.short_string()).collect();
        assert_eq!(kinds, ["+I", "-D", "+I", "+I", "-D", "+I"]);
        assert_eq!(upserted(streaming), BTreeMap::from([(1, 0), (2, 3)]));
        // Batch reads a keyed input sorted by key, each key's changes in their order.
        let mut sorted = input.to_vec();
        sorted.sort_by_key(|change| change.row.0);
        let batch = run(ExecutionMode::Batch, &sorted);
        assert_eq!(batch, [Change::insert((1, 0)), Change::insert((2, 3))], "batch writes each key's last row once");
    }

    #[test]
    fn a_row_taken_back_from_under_a_later_one_changes_nothing_and_the_earlier_comes_back_when_the_later_goes() {
        let input = [Change::insert((1, 4)), Change::insert((1, 5)), Change::delete((1, 4))];
        let streaming = run(ExecutionMode::Streaming, &input);
        assert_eq!(streaming.len(), 2, "removing a row under the last one writes nothing: {streaming:?}");
        let input = [Change::insert((1, 4)), Change::insert((1, 5)), Change::delete((1, 5))];
        let streaming = run(ExecutionMode::Streaming, &input);
        assert_eq!(streaming.last(), Some(&Change { kind: RowKind::UpdateAfter, row: (1, 4) }));
        assert_eq!(upserted(streaming), BTreeMap::from([(1, 4)]));
    }

    #[test]
    fn a_retraction_of_a_row_the_key_does_not_hold_is_an_error() {
        let mut operator = materializer(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        operator.process_element(Box::new(Change::insert((1u8, 4i64))), &mut output).unwrap();
        let error = operator.process_element(Box::new(Change::delete((1u8, 5i64))), &mut output).unwrap_err();
        assert!(error.to_string().contains("does not hold"), "{error}");
    }
}
