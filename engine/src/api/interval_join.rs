//! The event-time interval join (Flink's `RowTimeIntervalJoin`, and the DataStream API's
//! `KeyedStream.intervalJoin(…).between(lower, upper)`): an inner equi-join of two append-only
//! streams whose pairs must also lie close in event time, `lower ≤ left time − right time ≤ upper`.
//!
//! Unlike a regular join, its state is bounded: a row is kept only while the other side may still
//! bring a row it pairs with. A right row that arrives later has a time above the watermark, so a
//! left row at `t` can meet none once the watermark reaches `t − lower`, and a right row at `t`
//! none once it reaches `t + upper`; a cleanup timer at that time removes it. A row that arrives
//! when its partners can no longer come is still joined with the rows kept, but not kept itself
//! (Flink's operator does the same). The result is append-only and equals the regular join of the
//! two streams filtered by the bounds, as long as no row is later than the watermark says; batch
//! mode, whose watermark is −∞ until a key's input ends, keeps every row of a key until then.
//!
//! A pair is stamped with its left row's time: the result's time attribute, so that a window
//! can follow (Flink's SQL result keeps both sides' times; its DataStream API stamps the later).
//! A pair made when its right row arrives may be stamped up to `−lower` before that row, so the
//! output watermark trails the input's by `max(0, −lower)` (Flink holds its watermark back by
//! the bounds too): no pair is behind the watermark downstream.
//!
//! Must never: keep a row past the watermark that ends its matches, or emit a pair outside the
//! bounds.

use std::sync::Arc;

use super::changelog::{Change, JoinSide};
use super::{DataStream, KeyedContext, KeyedProcessFunction};
use crate::graph::OperatorError;
use crate::record::{Key, Record};
use crate::state::ListState;
use crate::time::Timestamp;

/// The bounds of an interval join, in milliseconds: a pair's `left time − right time` lies in
/// `lower..=upper`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalBounds {
    /// The least `left time − right time` of a pair.
    pub lower: i64,
    /// The greatest.
    pub upper: i64,
}

impl IntervalBounds {
    /// Whether a left row at `left` and a right row at `right` pair.
    pub fn contains(&self, left: Timestamp, right: Timestamp) -> bool {
        let difference = i128::from(left) - i128::from(right);
        i128::from(self.lower) <= difference && difference <= i128::from(self.upper)
    }

    /// The watermark from which a left row at `time` meets no right row still to come.
    pub fn left_expires(&self, time: Timestamp) -> Timestamp {
        time.saturating_sub(self.lower)
    }

    /// The watermark from which a right row at `time` meets no left row still to come.
    pub fn right_expires(&self, time: Timestamp) -> Timestamp {
        time.saturating_add(self.upper)
    }
}

/// A side's event time.
type TimeOf<T> = Arc<dyn Fn(&T) -> Timestamp + Send + Sync>;
/// The output of a pair that meets.
type PairFunction<L, R, O> = Arc<dyn Fn(&L, &R) -> O + Send + Sync>;

/// The functions of an interval join: each side's event time, and the pair's output.
pub struct IntervalJoin<L, R, O> {
    bounds: IntervalBounds,
    left_time: TimeOf<L>,
    right_time: TimeOf<R>,
    join: PairFunction<L, R, O>,
}

/// `left ⋈ right` on their keys and within `bounds` of each other's times (see the module doc),
/// each stream tagged with its side, the two unioned and hashed on the key.
pub fn interval_join<L, R, K, O>(
    (left, right): (&DataStream<L>, &DataStream<R>),
    (left_key, right_key): (impl Fn(&L) -> K + Send + Sync + 'static, impl Fn(&R) -> K + Send + Sync + 'static),
    (left_time, right_time): (
        impl Fn(&L) -> Timestamp + Send + Sync + 'static,
        impl Fn(&R) -> Timestamp + Send + Sync + 'static,
    ),
    bounds: IntervalBounds,
    join: impl Fn(&L, &R) -> O + Send + Sync + 'static,
) -> DataStream<O>
where
    L: Record,
    R: Record,
    K: Key,
    O: Record,
{
    let left = left.map(|row: L| JoinSide::<L, R>::Left(Change::insert(row))).name("Left side");
    let right = right.map(|row: R| JoinSide::<L, R>::Right(Change::insert(row))).name("Right side");
    let key = move |side: &JoinSide<L, R>| match side {
        JoinSide::Left(change) => left_key(&change.row),
        JoinSide::Right(change) => right_key(&change.row),
    };
    let function =
        IntervalJoin { bounds, left_time: Arc::new(left_time), right_time: Arc::new(right_time), join: Arc::new(join) };
    left.union(&[&right]).key_by(key).process(function)
}

/// A side's rows of the current key with their times, in arrival order: appending one costs
/// the row alone (a map state is re-encoded whole on every change).
type Rows<T> = ListState<(Timestamp, T)>;

impl<K, L, R, O> KeyedProcessFunction<K, JoinSide<L, R>, O> for IntervalJoin<L, R, O>
where
    K: Key,
    L: Record,
    R: Record,
    O: Record,
{
    fn process_element(
        &self,
        input: JoinSide<L, R>,
        context: &mut KeyedContext<'_, K, O>,
    ) -> Result<(), OperatorError> {
        let (lefts, rights) = (Rows::<L>::new("left"), Rows::<R>::new("right"));
        let watermark = context.current_watermark().0;
        match input {
            JoinSide::Left(change) => {
                let row = appended(change)?;
                let time = (self.left_time)(&row);
                for (other_time, other) in rights.get(context.state())? {
                    if self.bounds.contains(time, other_time) {
                        context.collect_with_timestamp((self.join)(&row, &other), time);
                    }
                }
                keep(&lefts, (time, row), self.bounds.left_expires(time), watermark, context)
            }
            JoinSide::Right(change) => {
                let row = appended(change)?;
                let time = (self.right_time)(&row);
                for (other_time, other) in lefts.get(context.state())? {
                    if self.bounds.contains(other_time, time) {
                        context.collect_with_timestamp((self.join)(&other, &row), other_time);
                    }
                }
                keep(&rights, (time, row), self.bounds.right_expires(time), watermark, context)
            }
        }
    }

    /// Drops every row of the key whose matches can no longer come.
    fn on_timer(&self, _: Timestamp, context: &mut KeyedContext<'_, K, O>) -> Result<(), OperatorError> {
        let watermark = context.current_watermark().0;
        let bounds = self.bounds;
        expire(&Rows::<L>::new("left"), |time| bounds.left_expires(time) <= watermark, context)?;
        expire(&Rows::<R>::new("right"), |time| bounds.right_expires(time) <= watermark, context)
    }

    /// A probe of the other side's rows of the key, as a hash join's.
    fn cost_kind(&self) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::HashProbe
    }

    /// A pair stamped with a left time up to `−lower` before the right row that made it.
    fn output_watermark_delay(&self) -> i64 {
        self.bounds.lower.saturating_neg().max(0)
    }
}

/// An interval join's input row; a retraction is an error of the plan.
fn appended<T>(change: Change<T>) -> Result<T, OperatorError> {
    if change.kind.is_addition() {
        Ok(change.row)
    } else {
        Err(OperatorError::new("an interval join took a retraction: its inputs must be append-only"))
    }
}

/// Keeps `entry` until the watermark reaches `expires` (a cleanup timer then), unless it already
/// has: no row still to come can meet it.
fn keep<K: Key, T: Record, O: Record>(
    side: &Rows<T>,
    entry: (Timestamp, T),
    expires: Timestamp,
    watermark: Timestamp,
    context: &mut KeyedContext<'_, K, O>,
) -> Result<(), OperatorError> {
    if expires <= watermark {
        return Ok(());
    }
    side.add(context.state(), &entry);
    context.register_event_time_timer(expires);
    Ok(())
}

fn expire<K: Key, T: Record, O: Record>(
    side: &Rows<T>,
    expired: impl Fn(Timestamp) -> bool,
    context: &mut KeyedContext<'_, K, O>,
) -> Result<(), OperatorError> {
    let mut rows = side.get(context.state())?;
    let before = rows.len();
    rows.retain(|(time, _)| !expired(*time));
    if rows.len() != before {
        side.update(context.state(), &rows);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::api::process::{ProcessFunctions, process_operator};
    use crate::api::testing::Collected;
    use crate::graph::ExecutionMode;
    use crate::graph::operator::StreamOperator;
    use crate::record::Element;
    use crate::time::Watermark;

    #[test]
    fn a_pair_lies_within_its_bounds_inclusive_and_rows_expire_when_no_partner_can_come() {
        let bounds = IntervalBounds { lower: -4000, upper: 0 };
        assert!(bounds.contains(6000, 10_000), "left 4 s before right: on the lower bound");
        assert!(bounds.contains(10_000, 10_000));
        assert!(!bounds.contains(5999, 10_000));
        assert!(!bounds.contains(10_001, 10_000), "left after right is past the upper bound");
        assert!(!bounds.contains(i64::MIN, i64::MAX), "no overflow at the extremes");
        // A left row at 6000 meets right rows up to 10000; a right row at 10000 left rows up to it.
        assert_eq!(bounds.left_expires(6000), 10_000);
        assert_eq!(bounds.right_expires(10_000), 10_000);
        assert_eq!(IntervalBounds { lower: i64::MIN, upper: 0 }.left_expires(1), i64::MAX);
    }

    /// The pairs emitted since the last call, sorted.
    fn pairs(collected: &mut Collected) -> Vec<(i64, i64)> {
        let mut pairs: Vec<(i64, i64)> = collected.take();
        pairs.sort_unstable();
        pairs
    }

    /// Rows are `(key, time)`; a pair is the two times. Bounds: the left row at most 10 before
    /// the right one and at most 5 after it.
    type Side = JoinSide<(String, i64), (String, i64)>;

    fn operator(mode: ExecutionMode) -> Box<dyn StreamOperator> {
        let key = |side: &Side| match side {
            JoinSide::Left(change) | JoinSide::Right(change) => change.row.0.clone(),
        };
        let function = IntervalJoin {
            bounds: IntervalBounds { lower: -10, upper: 5 },
            left_time: Arc::new(|row: &(String, i64)| row.1),
            right_time: Arc::new(|row: &(String, i64)| row.1),
            join: Arc::new(|left: &(String, i64), right: &(String, i64)| (left.1, right.1)),
        };
        let functions = ProcessFunctions {
            key_selector: Arc::new(key),
            function: Arc::new(function) as Arc<dyn KeyedProcessFunction<String, Side, (i64, i64)>>,
        };
        process_operator(functions, mode)
    }

    fn left(time: i64) -> Element {
        Box::new(Side::Left(Change::insert(("k".to_string(), time))))
    }

    fn right(time: i64) -> Element {
        Box::new(Side::Right(Change::insert(("k".to_string(), time))))
    }

    #[test]
    fn a_pair_is_stamped_with_its_left_time_and_the_watermark_trails_by_the_lower_bound() {
        let mut join = operator(ExecutionMode::Streaming);
        let mut output = crate::api::testing::Stamped::default();
        for element in [left(100), right(104), right(95)] {
            join.process_element(element, &mut output).unwrap();
        }
        // Made when the right rows came, yet stamped 100: the result's time is the left row's.
        assert_eq!(output.take::<(i64, i64)>(), [((100, 104), Some(100)), ((100, 95), Some(100))]);
        join.process_watermark(Watermark(105), &mut output).unwrap();
        // A right row at 106 may still meet a left row at 96 (lower −10): the watermark says 95.
        join.process_element(left(96), &mut output).unwrap();
        join.process_element(right(106), &mut output).unwrap();
        // Kept rows are probed in arrival order.
        let expected = [((96, 104), Some(96)), ((100, 106), Some(100)), ((96, 106), Some(96))];
        assert_eq!(output.take::<(i64, i64)>(), expected, "95 expired at 100; 100 and 104 are kept");
        join.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(output.watermarks, [Watermark(95), Watermark::MAX], "held back by 10 ms, never at the end");
    }

    #[test]
    fn pairs_within_the_bounds_meet_whichever_comes_first() {
        let mut join = operator(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        for element in [left(100), right(104), right(111), right(95), left(120), right(89)] {
            join.process_element(element, &mut output).unwrap();
        }
        // 100 meets 104 (−4), 95 (+5) and 111 (−11: no); 120 meets 111 (+9: no) and none else.
        assert_eq!(pairs(&mut output), [(100, 95), (100, 104)]);
        join.process_element(Box::new(Side::Left(Change::delete(("k".to_string(), 100)))), &mut output)
            .expect_err("an interval join's input is append-only");
    }

    #[test]
    fn a_row_is_dropped_once_the_watermark_says_no_partner_can_come() {
        let mut join = operator(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        join.process_element(left(100), &mut output).unwrap();
        join.process_element(right(200), &mut output).unwrap();
        // The left row at 100 meets right rows up to 110; the right row at 200 left rows up to 205.
        join.process_watermark(Watermark(110), &mut output).unwrap();
        // Later than the watermark allows: the left row it would meet is gone; it is not kept.
        join.process_element(right(105), &mut output).unwrap();
        join.process_element(left(203), &mut output).unwrap();
        assert_eq!(pairs(&mut output), [(203, 200)], "the right row at 200 is still kept");
        join.process_watermark(Watermark(205), &mut output).unwrap();
        join.process_element(left(204), &mut output).unwrap();
        assert_eq!(pairs(&mut output), [], "and dropped at 205");
        // The left rows at 203 and 204 meet right rows up to 213 and 214.
        join.process_watermark(Watermark(214), &mut output).unwrap();
        let mut empty = operator(ExecutionMode::Streaming);
        empty.process_watermark(Watermark(214), &mut output).unwrap();
        assert_eq!(join.snapshot_state(), empty.snapshot_state(), "nothing is left of the key, rows or timers");
    }

    #[test]
    fn state_stays_bounded_as_the_watermark_advances_and_batch_keeps_a_key_whole() {
        let mut join = operator(ExecutionMode::Streaming);
        let mut output = Collected(Vec::new());
        let mut sizes = Vec::new();
        let times: Vec<i64> = (0..2000).step_by(2).collect();
        for time in &times {
            join.process_element(left(*time), &mut output).unwrap();
            join.process_element(right(time + 1), &mut output).unwrap();
            join.process_watermark(Watermark(time - 20), &mut output).unwrap();
            sizes.push(join.snapshot_state().len());
        }
        assert!(sizes[999] <= sizes[99] + 64, "state grows with the input: {} then {} bytes", sizes[99], sizes[999]);
        let bounds = IntervalBounds { lower: -10, upper: 5 };
        let every: usize = times.iter().map(|l| times.iter().filter(|r| bounds.contains(*l, *r + 1)).count()).sum();
        assert_eq!(pairs(&mut output).len(), every, "cleanup lost no pair the watermark allowed");
        // Batch: no watermark until the key ends; every pair is found whatever the order.
        let mut batch = operator(ExecutionMode::Batch);
        for element in [right(111), left(100), right(95), right(104)] {
            batch.process_element(element, &mut output).unwrap();
        }
        batch.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(pairs(&mut output), [(100, 95), (100, 104)]);
    }
}
