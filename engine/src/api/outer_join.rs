//! Outer equi-joins of updating streams (Flink's `StreamingJoinOperator` with an outer side and
//! its `OuterJoinRecordStateView`): a row of an outer side that meets no row of the other side
//! is still in the result, padded with the other side's `NULL`s, until a partner comes.
//!
//! Per key, each side keeps its rows with how many times each is in the table and with its
//! *associations*, the number of the other side's rows (counted with their multiplicities) it
//! pairs with. A change of one side emits, as [`super::changelog::ChangelogJoin`] does, every
//! pair it makes (`+I`) or breaks (`-D`); and for an outer side, a row whose associations go
//! from 0 to 1 takes back its padded row (`-D`) before its first pair, one whose associations
//! go back to 0 gives its padded row again (`+I`), and a row that arrives (or leaves) with no
//! partner emits (takes back) its padded row.
//!
//! Batch mode computes the same table without taking anything back: pairs are emitted as they
//! are made (batch inputs only insert), and the padded rows of the rows that met nothing are
//! emitted when the key's input ends (a timer at +∞, which batch fires at the key's end).
//!
//! Built over `changelog::keyed_sides` (the two sides tagged, unioned and hashed on the key).
//!
//! Invariant: a row's stored associations equal the multiplicities of the other side's rows it
//! pairs with; a padded row is in the emitted table exactly while its row has none.

use std::sync::Arc;

use super::changelog::{Change, JoinSide, RowKind};
use super::process::{KeyedContext, KeyedProcessFunction};
use crate::graph::{ExecutionMode, OperatorError};
use crate::record::{Key, Record};
use crate::state::MapState;
use crate::time::Timestamp;

/// A side's row padded with the other side's `NULL`s.
pub type Pad<T, O> = Arc<dyn Fn(&T) -> O + Send + Sync>;

/// The pair of a left and a right row of the same key, if they are partners.
pub type Partners<L, R, O> = Arc<dyn Fn(&L, &R) -> Option<O> + Send + Sync>;

/// What an outer join computes: the pair of a left and a right row (`None`: they are not
/// partners, the join's other conditions fail), and for each outer side its padded row.
pub struct OuterJoinFunctions<L, R, O> {
    /// The pair of two rows of the same key, if their other conditions hold.
    pub join: Partners<L, R, O>,
    /// A left row with no partner, if the left side is outer (`LEFT` and `FULL` joins).
    pub pad_left: Option<Pad<L, O>>,
    /// A right row with no partner, if the right side is outer (`RIGHT` and `FULL` joins).
    pub pad_right: Option<Pad<R, O>>,
}

/// An outer join of two updating streams (see the module doc).
pub struct OuterChangelogJoin<L, R, O> {
    functions: OuterJoinFunctions<L, R, O>,
    mode: ExecutionMode,
}

impl<L, R, O> OuterChangelogJoin<L, R, O> {
    /// The join of `functions`, for a job in `mode`.
    pub fn new(functions: OuterJoinFunctions<L, R, O>, mode: ExecutionMode) -> OuterChangelogJoin<L, R, O> {
        OuterChangelogJoin { functions, mode }
    }
}

/// Each side's rows: (row, (multiplicity, associations)).
const LEFT: &str = "left";
const RIGHT: &str = "right";

/// One side of a change as the join sees it: the changed side's rows, the other side's, how
/// to pair a row of the changed side with one of the other, and each side's padding.
struct Sides<'a, A, B, O> {
    this: MapState<A, (i64, i64)>,
    other: MapState<B, (i64, i64)>,
    pair: &'a dyn Fn(&A, &B) -> Option<O>,
    pad_this: Option<&'a (dyn Fn(&A) -> O + Send + Sync)>,
    pad_other: Option<&'a (dyn Fn(&B) -> O + Send + Sync)>,
    /// Whether padded rows are emitted as rows come and go (streaming), not at the key's end.
    eager: bool,
}

impl<K, L, R, O> KeyedProcessFunction<K, JoinSide<L, R>, Change<O>> for OuterChangelogJoin<L, R, O>
where
    K: Key,
    L: Record + Ord,
    R: Record + Ord,
    O: Record,
{
    fn process_element(
        &self,
        input: JoinSide<L, R>,
        context: &mut KeyedContext<'_, K, Change<O>>,
    ) -> Result<(), OperatorError> {
        let eager = self.mode == ExecutionMode::Streaming;
        let functions = &self.functions;
        match input {
            JoinSide::Left(change) => Sides {
                this: MapState::<L, (i64, i64)>::new(LEFT),
                other: MapState::<R, (i64, i64)>::new(RIGHT),
                pair: &*functions.join,
                pad_this: functions.pad_left.as_deref(),
                pad_other: functions.pad_right.as_deref(),
                eager,
            }
            .change(change, context)?,
            JoinSide::Right(change) => {
                let flipped = |right: &R, left: &L| (functions.join)(left, right);
                Sides {
                    this: MapState::<R, (i64, i64)>::new(RIGHT),
                    other: MapState::<L, (i64, i64)>::new(LEFT),
                    pair: &flipped,
                    pad_this: functions.pad_right.as_deref(),
                    pad_other: functions.pad_left.as_deref(),
                    eager,
                }
                .change(change, context)?
            }
        }
        if !eager {
            context.register_event_time_timer(Timestamp::MAX);
        }
        Ok(())
    }

    /// Batch, at the key's end: the padded rows of the outer sides' rows that met nothing.
    fn on_timer(&self, _: Timestamp, context: &mut KeyedContext<'_, K, Change<O>>) -> Result<(), OperatorError> {
        if let Some(pad) = &self.functions.pad_left {
            emit_unmatched(&MapState::<L, (i64, i64)>::new(LEFT), &**pad, context)?;
        }
        if let Some(pad) = &self.functions.pad_right {
            emit_unmatched(&MapState::<R, (i64, i64)>::new(RIGHT), &**pad, context)?;
        }
        Ok(())
    }

    /// A probe of the other side's rows of the key, as a hash join's.
    fn cost_kind(&self) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::HashProbe
    }
}

fn emit_unmatched<K: Key, T: Record + Ord, O: Record>(
    side: &MapState<T, (i64, i64)>,
    pad: &dyn Fn(&T) -> O,
    context: &mut KeyedContext<'_, K, Change<O>>,
) -> Result<(), OperatorError> {
    for (row, (times, associations)) in side.entries(context.state())? {
        if associations == 0 {
            emit(Change::insert(pad(&row)), times, context);
        }
    }
    Ok(())
}

impl<A: Record + Ord, B: Record + Ord, O: Record> Sides<'_, A, B, O> {
    /// Applies `change` of this side: its pairs with the other side's rows made or broken, the
    /// other side's padded rows taken back or given again, its own padded row if it meets none.
    fn change<K: Key>(
        &self,
        change: Change<A>,
        context: &mut KeyedContext<'_, K, Change<O>>,
    ) -> Result<(), OperatorError> {
        let addition = change.kind.is_addition();
        let (times, _) = self.this.get(context.state(), &change.row)?.unwrap_or((0, 0));
        let times = times + if addition { 1 } else { -1 };
        if times < 0 {
            return Err(OperatorError::new(
                "an outer join took back a row its input never inserted: the changelog retracts what it did not add",
            ));
        }
        let mut associations = 0;
        let pad_other = self.pad_other.filter(|_| self.eager);
        for (row, (other_times, before)) in self.other.entries(context.state())? {
            let Some(pair) = (self.pair)(&change.row, &row) else { continue };
            associations += other_times;
            let after = before + if addition { 1 } else { -1 };
            // One entry written per partner, whatever the size of the other side.
            self.other.put(context.state(), row.clone(), (other_times, after))?;
            if addition {
                if let Some(pad) = pad_other.filter(|_| before == 0) {
                    crate::cover!(ChangelogRetracted);
                    emit(Change::delete(pad(&row)), other_times, context);
                }
                emit(Change::insert(pair), other_times, context);
            } else {
                crate::cover!(ChangelogRetracted);
                emit(Change::delete(pair), other_times, context);
                if let Some(pad) = pad_other.filter(|_| after == 0) {
                    emit(Change::insert(pad(&row)), other_times, context);
                }
            }
        }
        if let Some(pad) = self.pad_this.filter(|_| self.eager && associations == 0) {
            let kind = if addition { RowKind::Insert } else { RowKind::Delete };
            emit(Change { kind, row: pad(&change.row) }, 1, context);
        }
        match times {
            0 => self.this.remove(context.state(), &change.row),
            _ => self.this.put(context.state(), change.row, (times, associations)),
        }
    }
}

/// `change`, `times` times.
fn emit<K: Key, O: Record>(change: Change<O>, times: i64, context: &mut KeyedContext<'_, K, Change<O>>) {
    for _ in 1..times {
        context.collect(change.clone());
    }
    context.collect(change);
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;
    use crate::api::changelog::apply_changes;
    use crate::api::process::{ProcessFunctions, process_operator};
    use crate::api::testing::Collected;
    use crate::graph::operator::StreamOperator;
    use crate::time::Watermark;

    type Row = (u8, i64);
    type Side = JoinSide<Row, Row>;
    type Out = (Option<i64>, Option<i64>);

    /// A join on the first field whose other condition is `right ≤ left`, outer on the sides asked.
    fn join(mode: ExecutionMode, left_outer: bool, right_outer: bool) -> Box<dyn StreamOperator> {
        let functions = OuterJoinFunctions::<Row, Row, Out> {
            join: Arc::new(|left: &Row, right: &Row| (right.1 <= left.1).then_some((Some(left.1), Some(right.1)))),
            pad_left: left_outer.then(|| Arc::new(|left: &Row| (Some(left.1), None)) as Pad<Row, Out>),
            pad_right: right_outer.then(|| Arc::new(|right: &Row| (None, Some(right.1))) as Pad<Row, Out>),
        };
        let functions = ProcessFunctions {
            key_selector: Arc::new(|side: &Side| match side {
                JoinSide::Left(change) | JoinSide::Right(change) => change.row.0,
            }),
            function: Arc::new(OuterChangelogJoin::new(functions, mode))
                as Arc<dyn KeyedProcessFunction<u8, Side, Change<Out>>>,
        };
        process_operator(functions, mode)
    }

    fn run(operator: &mut dyn StreamOperator, input: &[Side]) -> Vec<Change<Out>> {
        let mut output = Collected(Vec::new());
        for side in input {
            operator.process_element(Box::new(side.clone()), &mut output).unwrap();
        }
        operator.process_watermark(Watermark::MAX, &mut output).unwrap();
        output.take()
    }

    fn left(kind: RowKind, value: i64) -> Side {
        JoinSide::Left(Change { kind, row: (1, value) })
    }

    fn right(kind: RowKind, value: i64) -> Side {
        JoinSide::Right(Change { kind, row: (1, value) })
    }

    #[test]
    fn a_left_row_is_padded_until_a_partner_comes_and_again_when_its_last_partner_goes() {
        use RowKind::{Delete, Insert};
        let input = [left(Insert, 5), right(Insert, 9), right(Insert, 2), right(Insert, 2), right(Delete, 2)];
        let changes = run(join(ExecutionMode::Streaming, true, false).as_mut(), &input);
        let shown: Vec<String> = changes.iter().map(|c| format!("{}{:?}", c.kind.short_string(), c.row)).collect();
        assert_eq!(
            shown,
            [
                "+I(Some(5), None)",
                // 9 is no partner of 5 (9 > 5): the padded row stays.
                "-D(Some(5), None)",
                "+I(Some(5), Some(2))",
                "+I(Some(5), Some(2))",
                "-D(Some(5), Some(2))",
            ]
        );
        let more = [right(Delete, 2), left(Delete, 5)];
        let mut streaming = join(ExecutionMode::Streaming, true, false);
        let all: Vec<Side> = input.iter().chain(&more).cloned().collect();
        let changes = run(streaming.as_mut(), &all);
        let tail: Vec<String> = changes[5..].iter().map(|c| format!("{}{:?}", c.kind.short_string(), c.row)).collect();
        assert_eq!(tail, ["-D(Some(5), Some(2))", "+I(Some(5), None)", "-D(Some(5), None)"]);
        assert_eq!(apply_changes(changes), Some(BTreeMap::new()));
    }

    #[test]
    fn batch_pads_only_the_rows_that_met_nothing_once_the_key_ends() {
        use RowKind::Insert;
        let input = [left(Insert, 5), left(Insert, 1), right(Insert, 3), right(Insert, 7)];
        let changes = run(join(ExecutionMode::Batch, true, true).as_mut(), &input);
        assert!(changes.iter().all(|change| change.kind == Insert), "batch takes nothing back: {changes:?}");
        let table = apply_changes(changes).unwrap();
        let expected = [((Some(5), Some(3)), 1), ((Some(1), None), 1), ((None, Some(7)), 1)];
        assert_eq!(table, BTreeMap::from(expected));
    }

    /// The outer join of two final tables, from the definition.
    fn reference(lefts: &BTreeMap<Row, u64>, rights: &BTreeMap<Row, u64>, outer: (bool, bool)) -> BTreeMap<Out, u64> {
        let mut table = BTreeMap::new();
        let partners = |l: &Row, r: &Row| l.0 == r.0 && r.1 <= l.1;
        for (l, lt) in lefts {
            let matched: u64 = rights
                .iter()
                .filter(|(r, _)| partners(l, r))
                .map(|(r, rt)| {
                    *table.entry((Some(l.1), Some(r.1))).or_insert(0) += lt * rt;
                    *rt
                })
                .sum();
            if matched == 0 && outer.0 {
                *table.entry((Some(l.1), None)).or_insert(0) += lt;
            }
        }
        for (r, rt) in rights {
            if outer.1 && !lefts.keys().any(|l| partners(l, r)) {
                *table.entry((None, Some(r.1))).or_insert(0) += rt;
            }
        }
        table
    }

    #[test]
    fn random_changelogs_leave_the_outer_join_of_the_final_tables_in_both_modes() {
        for seed in 0..300u64 {
            let mut random = ChaCha8Rng::seed_from_u64(seed);
            let outer = (random.gen_bool(0.7), random.gen_bool(0.5));
            let (mut lefts, mut rights) = (BTreeMap::<Row, u64>::new(), BTreeMap::<Row, u64>::new());
            let mut streaming_input = Vec::new();
            for _ in 0..random.gen_range(0..30) {
                let is_left = random.gen_bool(0.5);
                let table = if is_left { &mut lefts } else { &mut rights };
                let held: Vec<Row> = table.keys().copied().collect();
                let (kind, row) = if !held.is_empty() && random.gen_bool(0.3) {
                    (RowKind::Delete, held[random.gen_range(0..held.len())])
                } else {
                    (RowKind::Insert, (random.gen_range(0..2), random.gen_range(0..6)))
                };
                let times = table.entry(row).or_insert(0);
                if kind.is_addition() {
                    *times += 1
                } else {
                    *times -= 1
                }
                if *times == 0 {
                    table.remove(&row);
                }
                let change = Change { kind, row };
                streaming_input.push(if is_left { JoinSide::Left(change) } else { JoinSide::Right(change) });
            }
            let expected = reference(&lefts, &rights, outer);
            let streaming = run(join(ExecutionMode::Streaming, outer.0, outer.1).as_mut(), &streaming_input);
            assert_eq!(apply_changes(streaming), Some(expected.clone()), "streaming, seed {seed}");
            // Batch reads each side's final rows.
            let finals = |table: &BTreeMap<Row, u64>, side: fn(Change<Row>) -> Side| -> Vec<Side> {
                table.iter().flat_map(|(row, times)| (0..*times).map(move |_| side(Change::insert(*row)))).collect()
            };
            let mut batch_input = finals(&rights, JoinSide::Right);
            batch_input.extend(finals(&lefts, JoinSide::Left));
            // Batch reads a keyed input sorted by key.
            batch_input.sort_by_key(|side| match side {
                JoinSide::Left(change) | JoinSide::Right(change) => change.row.0,
            });
            let batch = run(join(ExecutionMode::Batch, outer.0, outer.1).as_mut(), &batch_input);
            assert_eq!(apply_changes(batch), Some(expected), "batch, seed {seed}");
        }
    }

    #[test]
    fn a_retraction_of_a_row_never_inserted_is_an_error() {
        let mut streaming = join(ExecutionMode::Streaming, true, true);
        let mut output = Collected(Vec::new());
        let error = streaming.process_element(Box::new(left(RowKind::Delete, 3)), &mut output).unwrap_err();
        assert!(error.to_string().contains("never inserted"), "{error}");
    }
}
