//! Event time in the DataStream API: assigning timestamps and watermarks (Flink's
//! `TimestampsAndWatermarksOperator`), and keyed event-time windows (Flink's `WindowOperator`
//! with the default event-time trigger, in its streaming form, and its batch form over input
//! sorted by key).
//!
//! A window's contents are aggregated as elements arrive (an accumulator per key and window);
//! the window fires once, when the watermark reaches its last timestamp, emitting one result
//! stamped with that timestamp, and its state is dropped. An element whose every window already
//! fired is late: counted (the count is checkpointed and reported), handed to the task to trace,
//! and emitted to the late-data side output if the job asked for one (Flink's
//! `sideOutputLateData`), else dropped. Streaming only: batch has no watermark before the end,
//! so every window fires at the end of its key, and no element is late.

use std::collections::{BTreeMap, BTreeSet};
use std::marker::PhantomData;
use std::sync::Arc;

use super::operators::downcast;
use crate::graph::operator::{LateDrop, Output, StreamOperator};
use crate::graph::{ExecutionMode, OperatorError};
use crate::record::{Element, Key, Record};
use crate::time::{
    BoundedOutOfOrderness, TimeWindow, Timestamp, Watermark, WatermarkGenerator, WindowAssigner, merge_session,
};

/// Stamps each element with its event time and, in streaming mode, emits the watermark a
/// bounded-out-of-orderness generator derives from them every auto-watermark interval of the
/// task's time (Flink's periodic `onPeriodicEmit`, `pipeline.auto-watermark-interval`), so that
/// how the source batches its reads does not decide what is late. Batch mode emits no watermark
/// before the end of input (Flink's `emitProgressiveWatermarks = false`). Watermarks from
/// upstream are ignored, except the end of time.
pub(crate) struct TimestampsAndWatermarksOperator<T> {
    pub(crate) assigner: Arc<dyn Fn(&T) -> Timestamp + Send + Sync>,
    pub(crate) generator: BoundedOutOfOrderness,
    pub(crate) mode: ExecutionMode,
    pub(crate) emitted: Watermark,
}

impl<T: Record> StreamOperator for TimestampsAndWatermarksOperator<T> {
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "assign_timestamps_and_watermarks");
        let timestamp = (self.assigner)(&value);
        self.generator.on_event(timestamp);
        output.collect_with_timestamp(Box::new(value), Some(timestamp));
        Ok(())
    }

    fn on_periodic_emit(&mut self, output: &mut dyn Output) -> Result<(), OperatorError> {
        let watermark = self.generator.current_watermark();
        if self.mode == ExecutionMode::Streaming && watermark > self.emitted {
            self.emitted = watermark;
            output.emit_watermark(watermark);
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: Watermark, output: &mut dyn Output) -> Result<(), OperatorError> {
        if watermark == Watermark::MAX {
            self.emitted = watermark;
            output.emit_watermark(watermark);
        }
        Ok(())
    }
}

/// Folds an element into a window's accumulator (`None` for the window's first element).
pub(crate) type AddFunction<T, A> = Arc<dyn Fn(Option<A>, T) -> A + Send + Sync>;
/// A fired window's result from its key, bounds and accumulator.
pub(crate) type FinishFunction<K, A, O> = Arc<dyn Fn(&K, TimeWindow, A) -> O + Send + Sync>;
/// Combines the accumulators of two windows that merge (sessions), the older (earlier start)
/// first.
pub(crate) type MergeFunction<A> = Arc<dyn Fn(A, A) -> A + Send + Sync>;
/// What a late element is emitted as, when the window has a late-data side output.
pub(crate) type LateFunction<T, O> = Arc<dyn Fn(T) -> O + Send + Sync>;

/// How a window operator folds elements into its accumulator and what it emits when a window
/// fires; shared by all its subtasks.
pub(crate) struct WindowFunctions<T, K, A, O> {
    pub(crate) key_selector: Arc<dyn Fn(&T) -> K + Send + Sync>,
    pub(crate) assigner: Arc<dyn WindowAssigner>,
    /// Adds an element to a window's accumulator.
    pub(crate) add: AddFunction<T, A>,
    /// With a merging assigner (sessions): merges accumulators of windows that merge.
    pub(crate) merge: Option<MergeFunction<A>>,
    /// The window's result.
    pub(crate) finish: FinishFunction<K, A, O>,
    /// Emits a late element instead of dropping it silently (`side_output_late_data`).
    pub(crate) late: Option<LateFunction<T, O>>,
}

impl<T, K, A, O> Clone for WindowFunctions<T, K, A, O> {
    fn clone(&self) -> Self {
        WindowFunctions {
            key_selector: Arc::clone(&self.key_selector),
            assigner: Arc::clone(&self.assigner),
            add: Arc::clone(&self.add),
            merge: self.merge.clone(),
            finish: Arc::clone(&self.finish),
            late: self.late.clone(),
        }
    }
}

fn timestamp_of(output: &dyn Output) -> Result<Timestamp, OperatorError> {
    output.current_timestamp().ok_or_else(|| {
        OperatorError::new(
            "an event-time window received an element without a timestamp: call \
             `assign_timestamps_and_watermarks` on the stream before `window`",
        )
    })
}

/// Creates the window operator of the task's mode.
pub(crate) fn window_operator<T: Record, K: Key, A: Record, O: Record>(
    functions: WindowFunctions<T, K, A, O>,
    mode: ExecutionMode,
) -> Box<dyn StreamOperator> {
    match mode {
        ExecutionMode::Streaming => Box::new(WindowOperator {
            functions,
            windows: BTreeMap::new(),
            timers: BTreeSet::new(),
            watermark: Watermark::MIN,
            late: 0,
            drops: Vec::new(),
            _output: PhantomData,
        }),
        ExecutionMode::Batch => {
            Box::new(BatchWindowOperator { functions, current: None, windows: BTreeMap::new(), _output: PhantomData })
        }
    }
}

/// Streaming: an accumulator per (key, window) and a timer per window at its last timestamp.
/// An element is added to its windows that have not fired, and left out of those that have
/// (each such element is handed to the task to trace, whether late for some windows or all);
/// late for all, it is counted and goes to the late-data side output (Flink's
/// `WindowOperator`: `isWindowLate` per window, `isSkippedElement` for the side output).
struct WindowOperator<T, K, A, O> {
    functions: WindowFunctions<T, K, A, O>,
    windows: BTreeMap<(K, TimeWindow), A>,
    /// (fire time, key, window): fired in this order as the watermark passes.
    timers: BTreeSet<(Timestamp, K, TimeWindow)>,
    watermark: Watermark,
    /// Elements dropped because every window they belong to had fired, since the job began
    /// (checkpointed).
    late: u64,
    /// Late elements not yet handed to the task to trace (the task takes them after each batch,
    /// so at most a batch's worth: the harness needs every one).
    drops: Vec<LateDrop>,
    _output: PhantomData<fn(T) -> O>,
}

impl<T: Record, K: Key, A: Record, O: Record> WindowOperator<T, K, A, O> {
    /// The element's windows that fired and those still open. A session window that fired
    /// alone is open if it merges into an open session (Flink judges a merging window's
    /// lateness after the merge).
    fn windows_of(&self, key: &K, timestamp: Timestamp) -> (Vec<TimeWindow>, Vec<TimeWindow>) {
        let (missed, open): (Vec<TimeWindow>, Vec<TimeWindow>) = self
            .functions
            .assigner
            .assign(timestamp)
            .into_iter()
            .partition(|window| window.is_complete(self.watermark));
        let merges = |window: &TimeWindow| self.sessions(key).any(|session| session.intersects(window));
        if self.functions.merge.is_some() && missed.iter().any(merges) {
            return (Vec::new(), missed);
        }
        (missed, open)
    }

    /// The key's open windows, in start order.
    fn sessions<'a>(&'a self, key: &K) -> impl Iterator<Item = TimeWindow> + 'a {
        let low = (key.clone(), TimeWindow { start: Timestamp::MIN, end: Timestamp::MIN });
        let high = (key.clone(), TimeWindow { start: Timestamp::MAX, end: Timestamp::MAX });
        self.windows.range(low..=high).map(|((_, window), _)| *window)
    }

    /// Adds an element to the session its window makes with the key's sessions it intersects:
    /// their accumulators merged (oldest first) and their timers replaced by the merged one's.
    fn add_to_session(&mut self, key: &K, window: TimeWindow, value: T, merge: &MergeFunction<A>) {
        let (merged, swallowed) = merge_session(self.sessions(key).collect::<Vec<_>>(), window);
        let mut parts = Vec::with_capacity(swallowed.len());
        for session in swallowed {
            self.timers.remove(&(session.max_timestamp(), key.clone(), session));
            parts
                .push(self.windows.remove(&(key.clone(), session)).expect("invariant: a session holds an accumulator"));
        }
        self.timers.insert((merged.max_timestamp(), key.clone(), merged));
        self.windows.insert((key.clone(), merged), (self.functions.add)(merge_all(parts, merge), value));
    }
}

/// The accumulators of windows that merge, combined oldest first.
fn merge_all<A>(parts: Vec<A>, merge: &MergeFunction<A>) -> Option<A> {
    parts.into_iter().reduce(|older, newer| merge(older, newer))
}

impl<T: Record, K: Key, A: Record, O: Record> StreamOperator for WindowOperator<T, K, A, O> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "window");
        let timestamp = timestamp_of(output)?;
        let key = (self.functions.key_selector)(&value);
        let (missed, open) = self.windows_of(&key, timestamp);
        // In no window at all (windows that slide by more than their size), an element is late
        // as Flink counts it once the watermark passed its time (`isElementLate`), else skipped.
        let nowhere = missed.is_empty() && open.is_empty();
        if nowhere && timestamp > self.watermark.0 {
            return Ok(());
        }
        if !missed.is_empty() || nowhere {
            // In window order, whatever order the assigner lists them in.
            let spans = |windows: &[TimeWindow]| {
                let mut spans: Vec<(i64, i64)> = windows.iter().map(|window| (window.start, window.end)).collect();
                spans.sort_unstable();
                spans
            };
            self.drops.push(LateDrop {
                element: format!("{value:?}"),
                timestamp,
                watermark: self.watermark.0,
                missed: spans(&missed),
                joined: spans(&open),
            });
        }
        if open.is_empty() {
            self.late += 1;
            if let Some(late) = &self.functions.late {
                output.collect_with_timestamp(Box::new(late(value)), Some(timestamp));
            }
            return Ok(());
        }
        for window in open {
            if let Some(merge) = self.functions.merge.clone() {
                self.add_to_session(&key, window, value.clone(), &merge);
                continue;
            }
            let entry = (key.clone(), window);
            let accumulator = self.windows.remove(&entry);
            if accumulator.is_none() {
                self.timers.insert((window.max_timestamp(), key.clone(), window));
            }
            self.windows.insert(entry, (self.functions.add)(accumulator, value.clone()));
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: Watermark, output: &mut dyn Output) -> Result<(), OperatorError> {
        self.watermark = self.watermark.max(watermark);
        while let Some(first) = self.timers.first()
            && first.0 <= watermark.0
        {
            let (time, key, window) = self.timers.pop_first().expect("peeked");
            let accumulator = self
                .windows
                .remove(&(key.clone(), window))
                .unwrap_or_else(|| panic!("internal: a timer for window {window:?} that holds nothing"));
            let result = (self.functions.finish)(&key, window, accumulator);
            output.collect_with_timestamp(Box::new(result), Some(time));
        }
        output.emit_watermark(watermark);
        Ok(())
    }

    /// The open windows, the late count and the watermark: a restored operator must know which
    /// windows already fired (their output is committed), or an element for one of them would
    /// open it again instead of being late.
    fn snapshot_state(&self) -> Vec<u8> {
        if self.windows.is_empty() && self.late == 0 && self.watermark == Watermark::MIN {
            return Vec::new();
        }
        let entries: Vec<(K, i64, i64, A)> = self
            .windows
            .iter()
            .map(|((key, window), accumulator)| (key.clone(), window.start, window.end, accumulator.clone()))
            .collect();
        (entries, self.late, self.watermark.0).to_bytes()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        let mut input = state;
        let (entries, late, watermark) = <(Vec<(K, i64, i64, A)>, u64, i64)>::decode(&mut input)
            .map_err(|error| OperatorError::new(format!("window state: {error}")))?;
        (self.late, self.watermark) = (late, Watermark(watermark));
        for (key, start, end, accumulator) in entries {
            let window = TimeWindow { start, end };
            self.timers.insert((window.max_timestamp(), key.clone(), window));
            self.windows.insert((key, window), accumulator);
        }
        Ok(())
    }

    fn dropped_late(&self) -> u64 {
        self.late
    }

    fn take_late_drops(&mut self) -> Vec<LateDrop> {
        std::mem::take(&mut self.drops)
    }
}

/// Batch: input sorted by key; the current key's windows fire, in window order, when the key
/// changes and at the end of input (the watermark is +∞ at the end of each key).
struct BatchWindowOperator<T, K, A, O> {
    functions: WindowFunctions<T, K, A, O>,
    current: Option<K>,
    windows: BTreeMap<TimeWindow, A>,
    _output: PhantomData<fn(T) -> O>,
}

impl<T, K: Key, A, O: Record> BatchWindowOperator<T, K, A, O> {
    fn fire_current_key(&mut self, output: &mut dyn Output) {
        let Some(key) = self.current.take() else { return };
        for (window, accumulator) in std::mem::take(&mut self.windows) {
            let result = (self.functions.finish)(&key, window, accumulator);
            output.collect_with_timestamp(Box::new(result), Some(window.max_timestamp()));
        }
    }
}

impl<T: Record, K: Key, A: Record, O: Record> StreamOperator for BatchWindowOperator<T, K, A, O> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "window");
        let timestamp = timestamp_of(output)?;
        let key = (self.functions.key_selector)(&value);
        if self.current.as_ref() != Some(&key) {
            self.fire_current_key(output);
            self.current = Some(key);
        }
        for window in self.functions.assigner.assign(timestamp) {
            if let Some(merge) = &self.functions.merge {
                let (merged, swallowed) = merge_session(self.windows.keys().copied().collect::<Vec<_>>(), window);
                let take = |session| self.windows.remove(session).expect("invariant: a session holds an accumulator");
                let parts = swallowed.iter().map(take).collect();
                self.windows.insert(merged, (self.functions.add)(merge_all(parts, merge), value.clone()));
                continue;
            }
            let accumulator = self.windows.remove(&window);
            self.windows.insert(window, (self.functions.add)(accumulator, value.clone()));
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: Watermark, output: &mut dyn Output) -> Result<(), OperatorError> {
        if watermark == Watermark::MAX {
            self.fire_current_key(output);
        }
        output.emit_watermark(watermark);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{SlidingEventTimeWindows, TumblingEventTimeWindows};

    /// Collects what an operator emits, as (value, timestamp), and the watermarks.
    #[derive(Default)]
    struct Collected<O> {
        timestamp: Option<Timestamp>,
        out: Vec<(O, Option<Timestamp>)>,
        watermarks: Vec<Watermark>,
    }

    impl<O: Record> Output for Collected<O> {
        fn collect(&mut self, element: Element) {
            let timestamp = self.timestamp;
            self.collect_with_timestamp(element, timestamp);
        }
        fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>) {
            self.out.push((*element.downcast::<O>().unwrap(), timestamp));
        }
        fn current_timestamp(&self) -> Option<Timestamp> {
            self.timestamp
        }
        fn emit_watermark(&mut self, watermark: Watermark) {
            self.watermarks.push(watermark);
        }
    }

    type Count = WindowFunctions<(String, i64), String, u64, (String, i64, u64)>;

    fn counting(assigner: Arc<dyn WindowAssigner>) -> Count {
        WindowFunctions {
            key_selector: Arc::new(|(key, _): &(String, i64)| key.clone()),
            assigner,
            add: Arc::new(|count: Option<u64>, _| count.unwrap_or(0) + 1),
            merge: None,
            finish: Arc::new(|key: &String, window: TimeWindow, count| (key.clone(), window.start, count)),
            late: None,
        }
    }

    /// Counting in sessions of `gap` ms: counts of merged sessions add up.
    fn sessions(gap: i64) -> Count {
        let merge: MergeFunction<u64> = Arc::new(|older, newer| older + newer);
        WindowFunctions {
            merge: Some(merge),
            ..counting(Arc::new(crate::time::EventTimeSessionWindows::with_gap(gap).unwrap()))
        }
    }

    /// (key, start, count, last timestamp) of what fired.
    fn fired(output: &Collected<(String, i64, u64)>) -> Vec<(String, i64, u64, i64)> {
        output.out.iter().map(|((key, start, count), at)| (key.clone(), *start, *count, at.unwrap())).collect()
    }

    fn late_drop(key: &str, timestamp: i64, watermark: i64, missed: &[(i64, i64)], joined: &[(i64, i64)]) -> LateDrop {
        LateDrop {
            element: format!("{:?}", (key.to_string(), timestamp)),
            timestamp,
            watermark,
            missed: missed.to_vec(),
            joined: joined.to_vec(),
        }
    }

    fn feed(
        operator: &mut dyn StreamOperator,
        output: &mut Collected<(String, i64, u64)>,
        key: &str,
        timestamp: Timestamp,
    ) {
        output.timestamp = Some(timestamp);
        operator.process_element(Box::new((key.to_string(), timestamp)), output).unwrap();
        output.timestamp = None;
    }

    #[test]
    fn a_tumbling_window_fires_once_when_the_watermark_reaches_its_end_and_drops_late_elements() {
        let tumbling = Arc::new(TumblingEventTimeWindows::of(1_000, 0).unwrap());
        let mut operator = window_operator(counting(tumbling), ExecutionMode::Streaming);
        let mut output = Collected::default();
        for (key, timestamp) in [("a", 10), ("b", 999), ("a", 500), ("a", 1_000)] {
            feed(operator.as_mut(), &mut output, key, timestamp);
        }
        operator.process_watermark(Watermark(998), &mut output).unwrap();
        assert!(output.out.is_empty(), "[0, 1000) fires at 999, not before");
        operator.process_watermark(Watermark(999), &mut output).unwrap();
        assert_eq!(
            output.out,
            vec![(("a".to_string(), 0, 2), Some(999)), (("b".to_string(), 0, 1), Some(999))],
            "one result per key, stamped with the window's last timestamp"
        );
        feed(operator.as_mut(), &mut output, "a", 300); // late: [0, 1000) fired
        assert_eq!(operator.dropped_late(), 1);
        assert_eq!(operator.take_late_drops(), [late_drop("a", 300, 999, &[(0, 1_000)], &[])]);
        assert!(operator.take_late_drops().is_empty(), "each drop is handed over once");
        operator.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(output.out[2..], [(("a".to_string(), 1_000, 1), Some(1_999))]);
        assert_eq!(output.watermarks, vec![Watermark(998), Watermark(999), Watermark::MAX]);
    }

    #[test]
    fn a_late_element_goes_to_the_side_output_and_the_late_count_survives_a_checkpoint() {
        let tumbling: Arc<dyn WindowAssigner> = Arc::new(TumblingEventTimeWindows::of(1_000, 0).unwrap());
        let functions = || WindowFunctions {
            key_selector: Arc::new(|(key, _): &(String, i64)| key.clone()),
            assigner: Arc::clone(&tumbling),
            add: Arc::new(|count: Option<u64>, _| count.unwrap_or(0) + 1),
            merge: None,
            finish: Arc::new(|key: &String, window: TimeWindow, count| {
                (Some((key.clone(), window.start, count)), None)
            }),
            late: Some(Arc::new(|element: (String, i64)| (None, Some(element)))),
        };
        type Split = (Option<(String, i64, u64)>, Option<(String, i64)>);
        let mut operator = window_operator(functions(), ExecutionMode::Streaming);
        let mut output: Collected<Split> = Collected::default();
        for timestamp in [10, 1_500] {
            output.timestamp = Some(timestamp);
            operator.process_element(Box::new(("a".to_string(), timestamp)), &mut output).unwrap();
        }
        operator.process_watermark(Watermark(999), &mut output).unwrap();
        output.timestamp = Some(20);
        operator.process_element(Box::new(("a".to_string(), 20_i64)), &mut output).unwrap();
        assert_eq!(
            output.out,
            vec![((Some(("a".to_string(), 0, 1)), None), Some(999)), ((None, Some(("a".to_string(), 20))), Some(20))]
        );
        let mut restored = window_operator(functions(), ExecutionMode::Streaming);
        restored.restore_state(&operator.snapshot_state()).unwrap();
        assert_eq!(restored.dropped_late(), 1);
        assert!(restored.take_late_drops().is_empty(), "a restored drop was traced by the attempt that made it");
        // The window [0, 1000) fired before the checkpoint: an element for it is still late.
        output.timestamp = Some(30);
        restored.process_element(Box::new(("a".to_string(), 30_i64)), &mut output).unwrap();
        assert_eq!(output.out.last(), Some(&((None, Some(("a".to_string(), 30))), Some(30))));
        assert_eq!(restored.take_late_drops(), [late_drop("a", 30, 999, &[(0, 1_000)], &[])]);
    }

    #[test]
    fn an_element_late_for_some_sliding_windows_joins_the_open_ones_and_is_not_late() {
        // Windows of 2 s every 1 s: an element at 1 500 belongs to [0, 2000) and [1000, 3000).
        let sliding = Arc::new(SlidingEventTimeWindows::of(2_000, 1_000, 0).unwrap());
        let mut operator = window_operator(counting(sliding), ExecutionMode::Streaming);
        let mut output = Collected::default();
        feed(operator.as_mut(), &mut output, "k", 1_200);
        operator.process_watermark(Watermark(1_999), &mut output).unwrap(); // [0, 2000) fires
        assert_eq!(output.out.len(), 1, "{:?}", output.out);
        feed(operator.as_mut(), &mut output, "k", 1_500);
        assert_eq!(operator.dropped_late(), 0, "on time for [1000, 3000): not late as Flink counts it");
        assert_eq!(operator.take_late_drops(), [late_drop("k", 1_500, 1_999, &[(0, 2_000)], &[(1_000, 3_000)])]);
        feed(operator.as_mut(), &mut output, "k", 900); // [-1000, 1000) and [0, 2000) both fired
        assert_eq!(operator.dropped_late(), 1);
        assert_eq!(operator.take_late_drops(), [late_drop("k", 900, 1_999, &[(-1_000, 1_000), (0, 2_000)], &[])]);
        operator.process_watermark(Watermark::MAX, &mut output).unwrap();
        let counts: Vec<(i64, u64)> = output.out.iter().map(|((_, start, count), _)| (*start, *count)).collect();
        assert_eq!(counts, [(0, 1), (1_000, 2)], "1 500 counted in [1000, 3000) only, 900 in none");
    }

    #[test]
    fn an_element_in_no_window_is_skipped_until_the_watermark_passes_it_and_late_after() {
        // Windows of 1 s every 2 s: [0, 1000), [2000, 3000)…; 1 500 is in none.
        let gaps = Arc::new(SlidingEventTimeWindows::of(1_000, 2_000, 0).unwrap());
        let mut operator = window_operator(counting(gaps), ExecutionMode::Streaming);
        let mut output = Collected::default();
        feed(operator.as_mut(), &mut output, "k", 1_500);
        assert_eq!((operator.dropped_late(), operator.take_late_drops()), (0, vec![]), "skipped, as Flink does");
        operator.process_watermark(Watermark(1_600), &mut output).unwrap();
        feed(operator.as_mut(), &mut output, "k", 1_500);
        assert_eq!(operator.dropped_late(), 1, "late once the watermark passed its time (isElementLate)");
        assert_eq!(operator.take_late_drops(), [late_drop("k", 1_500, 1_600, &[], &[])]);
    }

    #[test]
    fn window_state_survives_a_checkpoint_and_its_timers_with_it() {
        let sliding = Arc::new(SlidingEventTimeWindows::of(2_000, 1_000, 0).unwrap());
        let mut operator = window_operator(counting(sliding.clone()), ExecutionMode::Streaming);
        let mut output = Collected::default();
        for timestamp in [100, 1_100, 1_200] {
            feed(operator.as_mut(), &mut output, "k", timestamp);
        }
        let state = operator.snapshot_state();
        let mut restored = window_operator(counting(sliding), ExecutionMode::Streaming);
        restored.restore_state(&state).unwrap();
        restored.process_watermark(Watermark::MAX, &mut output).unwrap();
        let counts: Vec<(i64, u64)> = output.out.iter().map(|((_, start, count), _)| (*start, *count)).collect();
        assert_eq!(counts, vec![(-1_000, 1), (0, 3), (1_000, 2)]);
    }

    #[test]
    fn batch_fires_every_window_of_a_key_when_the_key_changes_and_agrees_with_streaming() {
        let sliding: Arc<dyn WindowAssigner> = Arc::new(SlidingEventTimeWindows::of(2_000, 1_000, 0).unwrap());
        let input = [("a", 100), ("a", 1_500), ("a", 2_600), ("b", 50), ("b", 3_000)];
        let mut batch = window_operator(counting(Arc::clone(&sliding)), ExecutionMode::Batch);
        let mut batch_output = Collected::default();
        for (key, timestamp) in input {
            feed(batch.as_mut(), &mut batch_output, key, timestamp);
        }
        assert_eq!(batch_output.out.len(), 4, "key a's four windows fired when b began: {:?}", batch_output.out);
        batch.process_watermark(Watermark::MAX, &mut batch_output).unwrap();
        let mut streaming = window_operator(counting(sliding), ExecutionMode::Streaming);
        let mut streaming_output = Collected::default();
        for (key, timestamp) in input {
            feed(streaming.as_mut(), &mut streaming_output, key, timestamp);
        }
        streaming.process_watermark(Watermark::MAX, &mut streaming_output).unwrap();
        let mut from_batch = batch_output.out.clone();
        let mut from_streaming = streaming_output.out.clone();
        from_batch.sort();
        from_streaming.sort();
        assert_eq!(from_batch, from_streaming);
        assert_eq!(from_batch.len(), 4 + 4);
    }

    #[test]
    fn sessions_merge_when_their_windows_touch_and_fire_once_a_gap_after_their_last_element() {
        let mut operator = window_operator(sessions(100), ExecutionMode::Streaming);
        let mut output = Collected::default();
        for timestamp in [0, 50, 300, 150] {
            feed(operator.as_mut(), &mut output, "a", timestamp);
        }
        operator.process_watermark(Watermark(249), &mut output).unwrap();
        assert_eq!(fired(&output), [("a".into(), 0, 3, 249)], "[0, 150) and [150, 250) touch: one session");
        feed(operator.as_mut(), &mut output, "a", 260); // [260, 360) touches nothing fired; [300, 400) it does
        operator.process_watermark(Watermark(398), &mut output).unwrap();
        assert_eq!(output.out.len(), 1, "[260, 400) fires at 399, not before");
        operator.process_watermark(Watermark(399), &mut output).unwrap();
        assert_eq!(fired(&output)[1..], [("a".into(), 260, 2, 399)]);
    }

    #[test]
    fn a_session_window_that_fired_alone_is_not_late_when_it_merges_into_an_open_session() {
        let mut operator = window_operator(sessions(100), ExecutionMode::Streaming);
        let mut output = Collected::default();
        feed(operator.as_mut(), &mut output, "b", 450);
        operator.process_watermark(Watermark(500), &mut output).unwrap();
        feed(operator.as_mut(), &mut output, "b", 380); // [380, 480) is complete, but joins [450, 550)
        assert_eq!((operator.dropped_late(), operator.take_late_drops()), (0, vec![]));
        feed(operator.as_mut(), &mut output, "b", 100); // [100, 200) is complete and joins nothing
        assert_eq!(operator.dropped_late(), 1);
        assert_eq!(operator.take_late_drops(), [late_drop("b", 100, 500, &[(100, 200)], &[])]);
        let state = operator.snapshot_state();
        let mut restored = window_operator(sessions(100), ExecutionMode::Streaming);
        restored.restore_state(&state).unwrap();
        feed(restored.as_mut(), &mut output, "b", 540); // merges with the restored [380, 550)
        restored.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(fired(&output), [("b".into(), 380, 3, 639)], "the session and its timer survive a checkpoint");
    }

    #[test]
    fn batch_sessions_agree_with_streaming_over_input_out_of_time_order() {
        let input = [("a", 400), ("a", 0), ("a", 250), ("a", 120), ("b", 10), ("b", 500), ("b", 111)];
        let run = |mode| {
            let mut operator = window_operator(sessions(130), mode);
            let mut output = Collected::default();
            for (key, timestamp) in input {
                feed(operator.as_mut(), &mut output, key, timestamp);
            }
            operator.process_watermark(Watermark::MAX, &mut output).unwrap();
            let mut fired = fired(&output);
            fired.sort();
            fired
        };
        let expected: Vec<(String, i64, u64, i64)> = vec![
            ("a".into(), 0, 3, 379),
            ("a".into(), 400, 1, 529),
            ("b".into(), 10, 2, 240),
            ("b".into(), 500, 1, 629),
        ];
        assert_eq!(run(ExecutionMode::Streaming), expected);
        assert_eq!(run(ExecutionMode::Batch), expected);
    }

    #[test]
    fn an_element_without_a_timestamp_is_an_error_that_says_what_to_call() {
        let tumbling = Arc::new(TumblingEventTimeWindows::of(1_000, 0).unwrap());
        let mut operator = window_operator(counting(tumbling), ExecutionMode::Streaming);
        let mut output: Collected<(String, i64, u64)> = Collected::default();
        let error = operator.process_element(Box::new(("a".to_string(), 5_i64)), &mut output).unwrap_err();
        assert!(error.message.contains("assign_timestamps_and_watermarks"), "{error}");
    }

    #[test]
    fn timestamps_are_assigned_and_watermarks_trail_them_in_streaming_only() {
        for mode in [ExecutionMode::Streaming, ExecutionMode::Batch] {
            let mut operator = TimestampsAndWatermarksOperator::<(String, i64)> {
                assigner: Arc::new(|(_, timestamp): &(String, i64)| *timestamp),
                generator: BoundedOutOfOrderness::new(100).unwrap(),
                mode,
                emitted: Watermark::MIN,
            };
            let mut output: Collected<(String, i64)> = Collected::default();
            for timestamp in [1_000_i64, 950, 1_200] {
                operator.process_element(Box::new(("x".to_string(), timestamp)), &mut output).unwrap();
                operator.on_periodic_emit(&mut output).unwrap();
            }
            operator.process_watermark(Watermark(5_000), &mut output).unwrap();
            operator.process_watermark(Watermark::MAX, &mut output).unwrap();
            let stamps: Vec<Option<Timestamp>> = output.out.iter().map(|(_, timestamp)| *timestamp).collect();
            assert_eq!(stamps, vec![Some(1_000), Some(950), Some(1_200)]);
            let expected = match mode {
                ExecutionMode::Streaming => vec![Watermark(899), Watermark(1_099), Watermark::MAX],
                ExecutionMode::Batch => vec![Watermark::MAX],
            };
            assert_eq!(output.watermarks, expected, "{mode}");
        }
    }
}
