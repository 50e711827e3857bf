//! Updating streams: Flink's changelog (`RowKind`: `+I`, `-U`, `+U`, `-D`) and the operators
//! that keep one right when an aggregate or a join reads it (Flink's `GroupAggFunction` and
//! `StreamingJoinOperator` on retract streams).
//!
//! A stream of [`Change`]s says how a table changes: a row inserted, a row's old version taken
//! back and its new one given, a row deleted. An operator over such a stream must take back what
//! it emitted for a row that is taken back: [`GroupAggregate`] retracts a row from its group's
//! accumulator and emits the group's old result (`-U`) before its new one (`+U`), or `-D` when
//! the group is empty or its `HAVING` no longer holds; [`ChangelogJoin`] keeps both sides' rows
//! with their multiplicities and emits `+I` or `-D` for each pair a change makes or breaks. A
//! sink writes the stream with `TxnStoreSink::upsert_changelog`: `+I` and `+U` put, `-D`
//! deletes, `-U` is dropped (the `+U` after it replaces it).
//!
//! The modes differ as Flink's physical operators do, never in what they compute: in batch
//! mode every input is final, so an aggregate emits each group's result once, when its key's
//! input ends (a timer at +∞, which batch fires at the key's end), and nothing is ever taken
//! back; in streaming mode it emits on every change. Either way the table the changes leave
//! behind is the same.
//!
//! Invariant: the retractions an operator emits always take back rows it emitted before, in
//! the order it emitted them, per key; state holds each side's rows with positive counts only.

use std::collections::BTreeMap;

use super::datastream::DataStream;
use super::process::{KeyedContext, KeyedProcessFunction};
use crate::graph::{ExecutionMode, OperatorError};
use crate::record::{DecodeError, Key, Record};
use crate::state::{MapState, ValueState};
use crate::time::Timestamp;

/// What a change does to its row (Flink's `RowKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RowKind {
    /// `+I`: a new row.
    Insert,
    /// `-U`: the old version of an updated row, taken back.
    UpdateBefore,
    /// `+U`: the new version of an updated row.
    UpdateAfter,
    /// `-D`: a row deleted.
    Delete,
}

impl RowKind {
    /// Whether the row is added to the table (`+I`, `+U`) rather than taken out (`-U`, `-D`).
    pub fn is_addition(self) -> bool {
        matches!(self, RowKind::Insert | RowKind::UpdateAfter)
    }

    /// Flink's short string: `+I`, `-U`, `+U`, `-D`.
    pub fn short_string(self) -> &'static str {
        match self {
            RowKind::Insert => "+I",
            RowKind::UpdateBefore => "-U",
            RowKind::UpdateAfter => "+U",
            RowKind::Delete => "-D",
        }
    }
}

/// One change of an updating stream: a row and what happens to it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Change<T> {
    /// What happens to the row.
    pub kind: RowKind,
    /// The row.
    pub row: T,
}

impl<T> Change<T> {
    /// `+I row`.
    pub fn insert(row: T) -> Change<T> {
        Change { kind: RowKind::Insert, row }
    }

    /// `-D row`.
    pub fn delete(row: T) -> Change<T> {
        Change { kind: RowKind::Delete, row }
    }
}

impl<T: Record> Record for Change<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        let kind: u8 = match self.kind {
            RowKind::Insert => 0,
            RowKind::UpdateBefore => 1,
            RowKind::UpdateAfter => 2,
            RowKind::Delete => 3,
        };
        kind.encode(out);
        self.row.encode(out);
    }

    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        let kind = match u8::decode(input)? {
            0 => RowKind::Insert,
            1 => RowKind::UpdateBefore,
            2 => RowKind::UpdateAfter,
            3 => RowKind::Delete,
            other => return Err(DecodeError::new(format!("row kind {other} is not 0 to 3"))),
        };
        Ok(Change { kind, row: T::decode(input)? })
    }
}

/// An aggregate that can take rows back: what [`GroupAggregate`] folds a group with.
pub trait RetractableAggregate: Send + Sync + 'static {
    /// The rows it reads.
    type In: Record;
    /// Its accumulator (`Default` is the empty group's).
    type Acc: Record + Default;
    /// Its result.
    type Out: Record + PartialEq;

    /// Adds `row` to `acc`.
    fn accumulate(&self, acc: &mut Self::Acc, row: &Self::In);

    /// Takes `row` back out of `acc`.
    fn retract(&self, acc: &mut Self::Acc, row: &Self::In);

    /// How many rows `acc` holds (a group with none has no result).
    fn count(&self, acc: &Self::Acc) -> i64;

    /// The group's result, or `None` if its `HAVING` rejects it.
    fn result(&self, acc: &Self::Acc) -> Option<Self::Out>;

    /// The values `row` holds that the aggregate keeps outside its accumulator, each encoded
    /// and with its view's number (Flink's `MapView`s: a `COUNT(DISTINCT …)`'s values, or a
    /// `MIN` or `MAX` over an input that retracts): the group keeps how many of its rows hold
    /// each value in map state, one entry per value, so that a row costs the values it holds,
    /// not the size of the views. None by default.
    fn view_values(&self, _row: &Self::In) -> Vec<(u32, Vec<u8>)> {
        Vec::new()
    }

    /// A value of view `view` entered the group (the first row holding it came) or left it (the
    /// last one was taken back). Returns whether the aggregate needs the view's values to know
    /// its result again (a `MIN` whose value left): they come to
    /// [`RetractableAggregate::view_rescanned`].
    fn view_changed(&self, _acc: &mut Self::Acc, _view: u32, _value: &[u8], _entered: bool) -> bool {
        false
    }

    /// The values view `view` holds after a change `view_changed` asked them for, encoded,
    /// in no particular order.
    fn view_rescanned(&self, _acc: &mut Self::Acc, _view: u32, _values: Vec<&[u8]>) {}
}

/// A group-by over an updating stream (Flink's `GroupAggFunction`): per key, the aggregate of
/// the rows currently in the group, emitted as a changelog (see the module doc).
pub struct GroupAggregate<A> {
    aggregate: A,
    mode: ExecutionMode,
}

impl<A> GroupAggregate<A> {
    /// The group-by of `aggregate`, for a job in `mode`.
    pub fn new(aggregate: A, mode: ExecutionMode) -> GroupAggregate<A> {
        GroupAggregate { aggregate, mode }
    }
}

/// A group's accumulator, as the state holds it.
const ACCUMULATOR: &str = "accumulator";

/// A group's viewed values: (view, encoded value) → how many of its rows hold it.
const VIEWS: MapState<(u32, Vec<u8>), i64> = MapState::new("views");

impl<K: Key, A: RetractableAggregate> KeyedProcessFunction<K, Change<A::In>, Change<A::Out>> for GroupAggregate<A> {
    fn process_element(
        &self,
        change: Change<A::In>,
        context: &mut KeyedContext<'_, K, Change<A::Out>>,
    ) -> Result<(), OperatorError> {
        let state = ValueState::<A::Acc>::new(ACCUMULATOR);
        let mut acc = state.value(context.state())?.unwrap_or_default();
        let before = self.result(&acc);
        if change.kind.is_addition() {
            self.aggregate.accumulate(&mut acc, &change.row);
        } else {
            self.aggregate.retract(&mut acc, &change.row);
        }
        self.count_views(&change, &mut acc, context)?;
        match self.aggregate.count(&acc) {
            0 => state.clear(context.state()),
            1.. => state.update(context.state(), &acc),
            negative => {
                return Err(OperatorError::new(format!(
                    "a group-by took back more rows than it was given ({negative}): its input retracts a row it never inserted"
                )));
            }
        }
        if self.mode == ExecutionMode::Batch {
            // Every input is final: the result goes out once, when the key's input ends.
            context.register_event_time_timer(Timestamp::MAX);
            return Ok(());
        }
        emit_update(before, self.result(&acc), context);
        Ok(())
    }

    fn on_timer(&self, _: Timestamp, context: &mut KeyedContext<'_, K, Change<A::Out>>) -> Result<(), OperatorError> {
        let acc = ValueState::<A::Acc>::new(ACCUMULATOR).value(context.state())?;
        if let Some(result) = acc.and_then(|acc| self.result(&acc)) {
            context.collect(Change::insert(result));
        }
        Ok(())
    }
}

impl<A: RetractableAggregate> GroupAggregate<A> {
    /// Counts `change`'s viewed values into the group's map state, telling the accumulator of
    /// each value that enters or leaves the group.
    fn count_views<K: Key>(
        &self,
        change: &Change<A::In>,
        acc: &mut A::Acc,
        context: &mut KeyedContext<'_, K, Change<A::Out>>,
    ) -> Result<(), OperatorError> {
        let delta = if change.kind.is_addition() { 1 } else { -1 };
        for entry in self.aggregate.view_values(&change.row) {
            let rows = VIEWS.get(context.state(), &entry)?.unwrap_or(0) + delta;
            let rescan = match rows {
                0 => {
                    VIEWS.remove(context.state(), &entry)?;
                    self.aggregate.view_changed(acc, entry.0, &entry.1, false)
                }
                1.. => {
                    let entered = rows == 1 && delta == 1;
                    let rescan = entered && self.aggregate.view_changed(acc, entry.0, &entry.1, true);
                    VIEWS.put(context.state(), entry.clone(), rows)?;
                    rescan
                }
                _ => {
                    return Err(OperatorError::new(
                        "a group-by took back a viewed value none of its rows held: its input retracts a row it never inserted",
                    ));
                }
            };
            if rescan {
                let held = VIEWS.entries(context.state())?;
                let values = held.keys().filter(|(view, _)| *view == entry.0).map(|(_, value)| value.as_slice());
                self.aggregate.view_rescanned(acc, entry.0, values.collect());
            }
        }
        Ok(())
    }

    fn result(&self, acc: &A::Acc) -> Option<A::Out> {
        if self.aggregate.count(acc) > 0 { self.aggregate.result(acc) } else { None }
    }
}

/// What a group's result going from `before` to `after` emits: nothing if it is unchanged.
fn emit_update<K: Key, O: Record + PartialEq>(
    before: Option<O>,
    after: Option<O>,
    context: &mut KeyedContext<'_, K, Change<O>>,
) {
    if before.is_some() && before != after {
        crate::cover!(ChangelogRetracted);
    }
    match (before, after) {
        (Some(before), Some(after)) if before == after => {}
        (Some(before), Some(after)) => {
            context.collect(Change { kind: RowKind::UpdateBefore, row: before });
            context.collect(Change { kind: RowKind::UpdateAfter, row: after });
        }
        (None, Some(after)) => context.collect(Change::insert(after)),
        (Some(before), None) => context.collect(Change::delete(before)),
        (None, None) => {}
    }
}

/// One input of a [`ChangelogJoin`]: a change of its left or of its right side (the two
/// sides' streams, unioned, as one keyed input).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum JoinSide<L, R> {
    /// A change of the left side.
    Left(Change<L>),
    /// A change of the right side.
    Right(Change<R>),
}

impl<L: Record, R: Record> Record for JoinSide<L, R> {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            JoinSide::Left(change) => {
                0u8.encode(out);
                change.encode(out);
            }
            JoinSide::Right(change) => {
                1u8.encode(out);
                change.encode(out);
            }
        }
    }

    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        match u8::decode(input)? {
            0 => Ok(JoinSide::Left(Change::decode(input)?)),
            1 => Ok(JoinSide::Right(Change::decode(input)?)),
            other => Err(DecodeError::new(format!("join side {other} is not 0 or 1"))),
        }
    }
}

/// An inner equi-join of two updating streams (Flink's `StreamingJoinOperator`): per key, each
/// side's rows with how many times each is in the table; a change of one side emits, for every
/// row of the other side that `join` pairs it with (`None`: the non-equi condition fails),
/// that pair as many times as that row is there: `+I` for an addition, `-D` for a retraction.
pub struct ChangelogJoin<F> {
    join: F,
}

impl<F> ChangelogJoin<F> {
    /// The join that pairs rows with `join`.
    pub fn new(join: F) -> ChangelogJoin<F> {
        ChangelogJoin { join }
    }
}

impl<K, L, R, O, F> KeyedProcessFunction<K, JoinSide<L, R>, Change<O>> for ChangelogJoin<F>
where
    K: Key,
    L: Record + Ord,
    R: Record + Ord,
    O: Record,
    F: Fn(&L, &R) -> Option<O> + Send + Sync + 'static,
{
    fn process_element(
        &self,
        input: JoinSide<L, R>,
        context: &mut KeyedContext<'_, K, Change<O>>,
    ) -> Result<(), OperatorError> {
        let (left, right) = (MapState::<L, i64>::new("left"), MapState::<R, i64>::new("right"));
        match input {
            JoinSide::Left(change) => {
                count(&left, context, &change)?;
                let kind = pair_kind(change.kind);
                for (row, times) in right.entries(context.state())? {
                    emit_pairs((self.join)(&change.row, &row), kind, times, context);
                }
            }
            JoinSide::Right(change) => {
                count(&right, context, &change)?;
                let kind = pair_kind(change.kind);
                for (row, times) in left.entries(context.state())? {
                    emit_pairs((self.join)(&row, &change.row), kind, times, context);
                }
            }
        }
        Ok(())
    }

    /// A probe of the other side's rows of the key, as a hash join's.
    fn cost_kind(&self) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::HashProbe
    }
}

/// An inner join's output says only whether a pair is added or taken back.
fn pair_kind(kind: RowKind) -> RowKind {
    if kind.is_addition() { RowKind::Insert } else { RowKind::Delete }
}

/// Counts `change` into a side's rows; a retraction of a row the side does not hold is an
/// error of the input.
fn count<K: Key, T: Record + Ord, O: Record>(
    side: &MapState<T, i64>,
    context: &mut KeyedContext<'_, K, O>,
    change: &Change<T>,
) -> Result<(), OperatorError> {
    let times = side.get(context.state(), &change.row)?.unwrap_or(0) + if change.kind.is_addition() { 1 } else { -1 };
    match times {
        0 => side.remove(context.state(), &change.row),
        1.. => side.put(context.state(), change.row.clone(), times),
        _ => Err(OperatorError::new(
            "a join took back a row its input never inserted: the changelog retracts what it did not add",
        )),
    }
}

fn emit_pairs<K: Key, O: Record>(
    pair: Option<O>,
    kind: RowKind,
    times: i64,
    context: &mut KeyedContext<'_, K, Change<O>>,
) {
    let Some(pair) = pair else { return };
    if kind == RowKind::Delete {
        crate::cover!(ChangelogRetracted);
    }
    for _ in 1..times {
        context.collect(Change { kind, row: pair.clone() });
    }
    context.collect(Change { kind, row: pair });
}

/// `aggregate` grouped by `key` over `changes`, as a [`GroupAggregate`] (HASH on the key).
pub fn group_changelog<A: RetractableAggregate, K: Key>(
    changes: &DataStream<Change<A::In>>,
    key: impl Fn(&A::In) -> K + Send + Sync + 'static,
    aggregate: A,
    mode: ExecutionMode,
) -> DataStream<Change<A::Out>> {
    changes.key_by(move |change: &Change<A::In>| key(&change.row)).process(GroupAggregate::new(aggregate, mode))
}

/// `left ⋈ right` on their keys, as a [`ChangelogJoin`]: each stream tagged with its side, the
/// two unioned and hashed on the key; `join` pairs a left and a right row (`None`: its
/// non-equi condition fails).
pub fn join_changelogs<L, R, K, O>(
    left: &DataStream<Change<L>>,
    right: &DataStream<Change<R>>,
    left_key: impl Fn(&L) -> K + Send + Sync + 'static,
    right_key: impl Fn(&R) -> K + Send + Sync + 'static,
    join: impl Fn(&L, &R) -> Option<O> + Send + Sync + 'static,
) -> DataStream<Change<O>>
where
    L: Record + Ord,
    R: Record + Ord,
    K: Key,
    O: Record,
{
    keyed_sides((left, right), left_key, right_key).process(ChangelogJoin::new(join))
}

/// The two sides of a join of changelogs as one keyed input: each stream tagged with its side,
/// the two unioned and hashed on the key.
pub fn keyed_sides<L: Record, R: Record, K: Key>(
    (left, right): (&DataStream<Change<L>>, &DataStream<Change<R>>),
    left_key: impl Fn(&L) -> K + Send + Sync + 'static,
    right_key: impl Fn(&R) -> K + Send + Sync + 'static,
) -> super::datastream::KeyedStream<JoinSide<L, R>, K> {
    let left = left.map(JoinSide::<L, R>::Left).name("Left side");
    let right = right.map(JoinSide::<L, R>::Right).name("Right side");
    let key = move |side: &JoinSide<L, R>| match side {
        JoinSide::Left(change) => left_key(&change.row),
        JoinSide::Right(change) => right_key(&change.row),
    };
    left.union(&[&right]).key_by(key)
}

/// The rows an updating stream leaves behind, with their multiplicities: what a table that
/// applies `changes` in order holds (for references and tests). `None` if a change takes back
/// a row that is not there.
pub fn apply_changes<T: Ord + Clone>(changes: impl IntoIterator<Item = Change<T>>) -> Option<BTreeMap<T, u64>> {
    let mut table: BTreeMap<T, u64> = BTreeMap::new();
    for change in changes {
        if change.kind.is_addition() {
            *table.entry(change.row).or_insert(0) += 1;
        } else {
            let times = table.get_mut(&change.row)?;
            *times -= 1;
            if *times == 0 {
                table.remove(&change.row);
            }
        }
    }
    Some(table)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::process::{ProcessFunctions, process_operator};
    use crate::api::testing::Collected;
    use crate::graph::operator::StreamOperator;
    use crate::time::Watermark;

    /// `SUM(amount) GROUP BY key HAVING SUM(amount) < 10`, with the row count.
    struct SumUnderTen;

    impl RetractableAggregate for SumUnderTen {
        type In = (String, i64);
        type Acc = (i64, i64);
        type Out = (String, i64);

        fn accumulate(&self, acc: &mut (i64, i64), row: &(String, i64)) {
            *acc = (acc.0 + 1, acc.1 + row.1);
        }
        fn retract(&self, acc: &mut (i64, i64), row: &(String, i64)) {
            *acc = (acc.0 - 1, acc.1 - row.1);
        }
        fn count(&self, acc: &(i64, i64)) -> i64 {
            acc.0
        }
        fn result(&self, acc: &(i64, i64)) -> Option<(String, i64)> {
            (acc.1 < 10).then(|| ("sum".to_string(), acc.1))
        }
    }

    fn aggregate(mode: ExecutionMode) -> Box<dyn StreamOperator> {
        let functions = ProcessFunctions {
            key_selector: Arc::new(|change: &Change<(String, i64)>| change.row.0.clone()),
            function: Arc::new(GroupAggregate::new(SumUnderTen, mode))
                as Arc<dyn KeyedProcessFunction<String, Change<(String, i64)>, Change<(String, i64)>>>,
        };
        process_operator(functions, mode)
    }

    fn feed<T: Record>(operator: &mut dyn StreamOperator, output: &mut Collected, input: impl IntoIterator<Item = T>) {
        for element in input {
            operator.process_element(Box::new(element), output).unwrap();
        }
    }

    fn row(amount: i64) -> (String, i64) {
        ("a".to_string(), amount)
    }

    #[test]
    fn a_group_by_takes_back_its_old_result_and_deletes_a_group_its_having_rejects() {
        let mut streaming = aggregate(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        let input = [Change::insert(row(3)), Change::insert(row(4)), Change::insert(row(5)), Change::delete(row(4))];
        feed(streaming.as_mut(), &mut output, input.clone());
        let sum = |kind, value| Change { kind, row: ("sum".to_string(), value) };
        let changes: Vec<Change<(String, i64)>> = output.take();
        assert_eq!(
            changes,
            [
                sum(RowKind::Insert, 3),
                sum(RowKind::UpdateBefore, 3),
                sum(RowKind::UpdateAfter, 7),
                // 12 fails the HAVING: the group's row is deleted, then comes back at 8.
                sum(RowKind::Delete, 7),
                sum(RowKind::Insert, 8),
            ]
        );
        assert_eq!(apply_changes(changes.clone()), Some(BTreeMap::from([(("sum".to_string(), 8), 1)])));
        // Batch reads the same rows as final ones (its input never retracts) and emits once.
        let mut batch = aggregate(ExecutionMode::Batch);
        feed(batch.as_mut(), &mut output, [Change::insert(row(3)), Change::insert(row(5))]);
        assert!(output.0.is_empty(), "nothing before the key's end");
        batch.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(output.take::<Change<(String, i64)>>(), [sum(RowKind::Insert, 8)]);
    }

    #[test]
    fn a_group_that_empties_is_deleted_and_a_retraction_it_never_saw_is_an_error() {
        let mut streaming = aggregate(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        feed(streaming.as_mut(), &mut output, [Change::insert(row(1)), Change::delete(row(1))]);
        assert_eq!(apply_changes(output.take::<Change<(String, i64)>>()), Some(BTreeMap::new()));
        let error = streaming.process_element(Box::new(Change::delete(row(1))), &mut output).unwrap_err();
        assert!(error.to_string().contains("took back more rows than it was given"), "{error}");
    }

    /// `COUNT(DISTINCT amount) GROUP BY key` (or, `max`, `MAX(amount)` over an input that
    /// retracts), its amounts in a view; the accumulator is (rows, result).
    struct ViewedAmounts {
        max: bool,
    }

    impl RetractableAggregate for ViewedAmounts {
        type In = (String, i64);
        type Acc = (i64, i64);
        type Out = i64;

        fn accumulate(&self, acc: &mut (i64, i64), _: &(String, i64)) {
            acc.0 += 1;
        }
        fn retract(&self, acc: &mut (i64, i64), _: &(String, i64)) {
            acc.0 -= 1;
        }
        fn count(&self, acc: &(i64, i64)) -> i64 {
            acc.0
        }
        fn result(&self, acc: &(i64, i64)) -> Option<i64> {
            Some(acc.1)
        }
        fn view_values(&self, row: &(String, i64)) -> Vec<(u32, Vec<u8>)> {
            vec![(0, row.1.to_bytes())]
        }
        fn view_changed(&self, acc: &mut (i64, i64), view: u32, value: &[u8], entered: bool) -> bool {
            assert_eq!(view, 0);
            if !self.max {
                acc.1 += if entered { 1 } else { -1 };
                return false;
            }
            let value = i64::from_bytes(value).unwrap();
            if entered {
                acc.1 = if acc.0 == 1 { value } else { acc.1.max(value) };
            }
            !entered && value == acc.1
        }
        fn view_rescanned(&self, acc: &mut (i64, i64), _: u32, values: Vec<&[u8]>) {
            acc.1 = values.into_iter().map(|value| i64::from_bytes(value).unwrap()).max().unwrap_or(0);
        }
    }

    /// The results `aggregate` emits in streaming for `input`, as `+I5`, `-U5`…
    fn viewed(aggregate: ViewedAmounts, input: Vec<Change<(String, i64)>>) -> Vec<String> {
        let functions = ProcessFunctions {
            key_selector: Arc::new(|change: &Change<(String, i64)>| change.row.0.clone()),
            function: Arc::new(GroupAggregate::new(aggregate, ExecutionMode::Streaming))
                as Arc<dyn KeyedProcessFunction<String, Change<(String, i64)>, Change<i64>>>,
        };
        let mut streaming = process_operator(functions, ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        feed(streaming.as_mut(), &mut output, input);
        let error = streaming.process_element(Box::new(Change::delete(row(99))), &mut output).unwrap_err();
        assert!(error.to_string().contains("took back"), "{error}");
        let changes = output.take::<Change<i64>>();
        changes.iter().map(|change| format!("{}{}", change.kind.short_string(), change.row)).collect()
    }

    #[test]
    fn view_values_are_counted_in_map_state_and_leave_with_their_last_row() {
        let input = [3, 3, 4].map(|amount| Change::insert(row(amount)));
        let retracted = [3, 3, 4].map(|amount| Change::delete(row(amount)));
        let results = viewed(ViewedAmounts { max: false }, input.into_iter().chain(retracted).collect());
        // 1 distinct, still 1 (3 twice), 2, still 2 (one 3 is left), 1, then the group is empty.
        assert_eq!(results, ["+I1", "-U1", "+U2", "-U2", "+U1", "-D1"]);
    }

    #[test]
    fn a_view_asks_for_its_values_again_when_its_extreme_leaves() {
        let input = [5, 9, 9, 7].map(|amount| Change::insert(row(amount)));
        let retracted = [9, 9, 7].map(|amount| Change::delete(row(amount)));
        let results = viewed(ViewedAmounts { max: true }, input.into_iter().chain(retracted).collect());
        // 5, 9 (twice: one 9 taken back leaves 9), then 7 once both 9s are gone, then 5.
        assert_eq!(results, ["+I5", "-U5", "+U9", "-U9", "+U7", "-U7", "+U5"]);
    }

    type Side = JoinSide<(String, i64), (String, i64)>;

    fn join(mode: ExecutionMode) -> Box<dyn StreamOperator> {
        let key = |side: &Side| match side {
            JoinSide::Left(change) | JoinSide::Right(change) => change.row.0.clone(),
        };
        // Pairs a left row with a right row no larger.
        let pair = |left: &(String, i64), right: &(String, i64)| (right.1 <= left.1).then_some((left.1, right.1));
        let functions = ProcessFunctions {
            key_selector: Arc::new(key),
            function: Arc::new(ChangelogJoin::new(pair))
                as Arc<dyn KeyedProcessFunction<String, Side, Change<(i64, i64)>>>,
        };
        process_operator(functions, mode)
    }

    #[test]
    fn a_join_of_changelogs_takes_back_the_pairs_of_a_retracted_row_as_often_as_it_made_them() {
        let mut streaming = join(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        let input = [
            JoinSide::Right(Change::insert(row(2))),
            JoinSide::Right(Change::insert(row(2))),
            JoinSide::Right(Change::insert(row(9))),
            JoinSide::Left(Change::insert(row(5))),
            JoinSide::Left(Change { kind: RowKind::UpdateBefore, row: row(5) }),
            JoinSide::Left(Change { kind: RowKind::UpdateAfter, row: row(10) }),
            JoinSide::Right(Change::delete(row(2))),
        ];
        feed(streaming.as_mut(), &mut output, input);
        let changes: Vec<Change<(i64, i64)>> = output.take();
        let kinds: Vec<&str> = changes.iter().map(|change| change.kind.short_string()).collect();
        assert_eq!(kinds, ["+I", "+I", "-D", "-D", "+I", "+I", "+I", "-D"]);
        assert_eq!(apply_changes(changes), Some(BTreeMap::from([((10, 2), 1), ((10, 9), 1)])));
        let error = streaming.process_element(Box::new(Side::Left(Change::delete(row(7)))), &mut output).unwrap_err();
        assert!(error.to_string().contains("never inserted"), "{error}");
    }

    #[test]
    fn changes_encode_their_kind_and_refuse_an_unknown_one() {
        for kind in [RowKind::Insert, RowKind::UpdateBefore, RowKind::UpdateAfter, RowKind::Delete] {
            let side: Side = JoinSide::Right(Change { kind, row: row(7) });
            let mut bytes = Vec::new();
            side.encode(&mut bytes);
            assert_eq!(Side::decode(&mut bytes.as_slice()).unwrap(), side);
        }
        assert!(Change::<i64>::decode(&mut [4u8, 0, 0, 0, 0, 0, 0, 0, 0].as_slice()).is_err());
        assert!(Side::decode(&mut [2u8].as_slice()).is_err());
    }
}
