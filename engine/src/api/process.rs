//! [`KeyedProcessFunction`]: per-key logic with keyed state (value, list, map) and event-time
//! timers (Flink's `KeyedProcessFunction` and `KeyedProcessOperator`).
//!
//! Streaming: timers are kept per (time, key) and fire, in that order, as the watermark passes
//! them; a timer set while firing fires in the same pass if it is due. Timers and state are part
//! of the operator's checkpoint. Batch (Flink's `BatchExecutionInternalTimeService`): input
//! arrives sorted by key; when the key changes and at the end of input the watermark is +∞ for
//! that key, and its timers fire in time order; a timer set while they fire is ignored, as in
//! Flink, so that a function re-arming its timer cannot loop forever.

use std::collections::BTreeSet;
use std::marker::PhantomData;
use std::sync::Arc;

use super::operators::downcast;
use crate::graph::operator::{Output, StreamOperator};
use crate::graph::{ExecutionMode, OperatorError};
use crate::record::{Element, Key, Record};
use crate::state::{KeyedStateBackend, backend_for};
use crate::time::{Timestamp, Watermark};

/// A job author's per-key logic; one instance serves every key of every subtask, so everything
/// it remembers lives in keyed state reached through the context.
pub trait KeyedProcessFunction<K, I, O>: Send + Sync + 'static {
    /// Called for every element of the key, in arrival order (batch: in timestamp order).
    fn process_element(&self, value: I, context: &mut KeyedContext<'_, K, O>) -> Result<(), OperatorError>;

    /// Called when an event-time timer of the key fires, with the timer's time.
    fn on_timer(&self, _timestamp: Timestamp, _context: &mut KeyedContext<'_, K, O>) -> Result<(), OperatorError> {
        Ok(())
    }

    /// How far behind its input's watermark the operator's output watermark stays (Flink's
    /// `KeyedCoProcessOperatorWithWatermarkDelay`): a function that emits results stamped
    /// earlier than the element it is processing (an interval join) holds it back so that no
    /// result is behind the watermark downstream. The end of input (+∞) is never held back.
    fn output_watermark_delay(&self) -> i64 {
        0
    }

    /// What the cost model charges an element as: an aggregation's per-key state update,
    /// unless the function does other work (a join of changelogs probes, say).
    fn cost_kind(&self) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }
}

/// Where a keyed process function's timers go.
enum Timers<'a, K> {
    /// Every key's timers, by (time, key).
    Streaming(&'a mut BTreeSet<(Timestamp, K)>),
    /// The current key's timers; none are taken while they fire.
    Batch { timers: &'a mut BTreeSet<Timestamp>, firing: bool },
}

/// What a [`KeyedProcessFunction`] sees of the runtime for one element or timer: the key, event
/// time, keyed state, timers and the output.
pub struct KeyedContext<'a, K, O> {
    key: &'a K,
    timestamp: Option<Timestamp>,
    watermark: Watermark,
    backend: &'a mut dyn KeyedStateBackend,
    timers: Timers<'a, K>,
    output: &'a mut dyn Output,
    _output: PhantomData<fn(O)>,
}

impl<K: Key, O: Record> KeyedContext<'_, K, O> {
    /// The current key.
    pub fn key(&self) -> &K {
        self.key
    }

    /// The element's event time (or the timer's time in `on_timer`).
    pub fn timestamp(&self) -> Option<Timestamp> {
        self.timestamp
    }

    /// The operator's event time: the last watermark it processed (+∞ while batch timers fire).
    pub fn current_watermark(&self) -> Watermark {
        self.watermark
    }

    /// The keyed state of the current key, for [`crate::state::ValueState`],
    /// [`crate::state::ListState`] and [`crate::state::MapState`].
    pub fn state(&mut self) -> &mut dyn KeyedStateBackend {
        self.backend
    }

    /// Asks for `on_timer(time)` once the watermark reaches `time` (one timer per key and
    /// time; setting it twice changes nothing).
    pub fn register_event_time_timer(&mut self, time: Timestamp) {
        match &mut self.timers {
            Timers::Streaming(timers) => {
                timers.insert((time, self.key.clone()));
            }
            Timers::Batch { firing: true, .. } => {}
            Timers::Batch { timers, firing: false } => {
                timers.insert(time);
            }
        }
    }

    /// Cancels the timer at `time`, if set.
    pub fn delete_event_time_timer(&mut self, time: Timestamp) {
        match &mut self.timers {
            Timers::Streaming(timers) => {
                timers.remove(&(time, self.key.clone()));
            }
            Timers::Batch { timers, .. } => {
                timers.remove(&time);
            }
        }
    }

    /// Emits a result, stamped with the element's (or timer's) time.
    pub fn collect(&mut self, value: O) {
        self.output.collect_with_timestamp(Box::new(value), self.timestamp);
    }

    /// Emits a result stamped with `timestamp`; one earlier than the element's needs the
    /// function's [`KeyedProcessFunction::output_watermark_delay`] to cover the difference.
    pub fn collect_with_timestamp(&mut self, value: O, timestamp: Timestamp) {
        self.output.collect_with_timestamp(Box::new(value), Some(timestamp));
    }
}

/// The function and key selector of a keyed process operator, shared by its subtasks.
pub(crate) struct ProcessFunctions<I, K, O> {
    pub(crate) key_selector: Arc<dyn Fn(&I) -> K + Send + Sync>,
    pub(crate) function: Arc<dyn KeyedProcessFunction<K, I, O>>,
}

impl<I, K, O> Clone for ProcessFunctions<I, K, O> {
    fn clone(&self) -> Self {
        ProcessFunctions { key_selector: Arc::clone(&self.key_selector), function: Arc::clone(&self.function) }
    }
}

/// Creates the keyed process operator of the task's mode.
pub(crate) fn process_operator<I: Record, K: Key, O: Record>(
    functions: ProcessFunctions<I, K, O>,
    mode: ExecutionMode,
) -> Box<dyn StreamOperator> {
    Box::new(KeyedProcessOperator {
        functions,
        backend: backend_for(mode),
        mode,
        timers: BTreeSet::new(),
        watermark: Watermark::MIN,
        current: None,
        key_timers: BTreeSet::new(),
    })
}

struct KeyedProcessOperator<I, K, O> {
    functions: ProcessFunctions<I, K, O>,
    backend: Box<dyn KeyedStateBackend>,
    mode: ExecutionMode,
    /// Streaming: every key's timers.
    timers: BTreeSet<(Timestamp, K)>,
    watermark: Watermark,
    /// Batch: the current key and its timers.
    current: Option<K>,
    key_timers: BTreeSet<Timestamp>,
}

impl<I: Record, K: Key, O: Record> KeyedProcessOperator<I, K, O> {
    /// Batch: the current key ends (the watermark is +∞ for it): its timers fire in order.
    fn end_current_key(&mut self, output: &mut dyn Output) -> Result<(), OperatorError> {
        let Some(key) = self.current.take() else { return Ok(()) };
        let timers = std::mem::take(&mut self.key_timers);
        for time in timers {
            let mut context = KeyedContext {
                key: &key,
                timestamp: Some(time),
                watermark: Watermark::MAX,
                backend: self.backend.as_mut(),
                timers: Timers::Batch { timers: &mut self.key_timers, firing: true },
                output: &mut *output,
                _output: PhantomData,
            };
            self.functions.function.on_timer(time, &mut context)?;
        }
        Ok(())
    }
}

impl<I: Record, K: Key, O: Record> StreamOperator for KeyedProcessOperator<I, K, O> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        self.functions.function.cost_kind()
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<I>(element, "process");
        let key = (self.functions.key_selector)(&value);
        let timestamp = output.current_timestamp();
        if self.mode == ExecutionMode::Batch && self.current.as_ref() != Some(&key) {
            self.end_current_key(output)?;
            self.current = Some(key.clone());
        }
        self.backend.set_current_key(&key.to_bytes());
        let timers = match self.mode {
            ExecutionMode::Streaming => Timers::Streaming(&mut self.timers),
            ExecutionMode::Batch => Timers::Batch { timers: &mut self.key_timers, firing: false },
        };
        let watermark = if self.mode == ExecutionMode::Batch { Watermark::MIN } else { self.watermark };
        let mut context = KeyedContext {
            key: &key,
            timestamp,
            watermark,
            backend: self.backend.as_mut(),
            timers,
            output,
            _output: PhantomData,
        };
        self.functions.function.process_element(value, &mut context)
    }

    fn process_watermark(&mut self, watermark: Watermark, output: &mut dyn Output) -> Result<(), OperatorError> {
        match self.mode {
            ExecutionMode::Batch if watermark == Watermark::MAX => self.end_current_key(output)?,
            ExecutionMode::Batch => {}
            ExecutionMode::Streaming => {
                self.watermark = self.watermark.max(watermark);
                while let Some((time, _)) = self.timers.first()
                    && *time <= watermark.0
                {
                    let (time, key) = self.timers.pop_first().expect("peeked");
                    self.backend.set_current_key(&key.to_bytes());
                    let mut context = KeyedContext {
                        key: &key,
                        timestamp: Some(time),
                        watermark: self.watermark,
                        backend: self.backend.as_mut(),
                        timers: Timers::Streaming(&mut self.timers),
                        output: &mut *output,
                        _output: PhantomData,
                    };
                    self.functions.function.on_timer(time, &mut context)?;
                }
            }
        }
        output.emit_watermark(held_back(watermark, self.functions.function.output_watermark_delay()));
        Ok(())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        if self.backend.key_count() == 0 && self.timers.is_empty() {
            return Vec::new();
        }
        let timers: Vec<(i64, K)> = self.timers.iter().cloned().collect();
        (self.backend.snapshot(), timers).to_bytes()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        let mut input = state;
        let (backend, timers) = <(Vec<u8>, Vec<(i64, K)>)>::decode(&mut input)
            .map_err(|error| OperatorError::new(format!("process state: {error}")))?;
        self.backend.restore(&backend).map_err(|error| OperatorError::new(format!("process state: {error}")))?;
        self.timers = timers.into_iter().collect();
        Ok(())
    }
}

/// `watermark` held back by `delay` ms; the end of input stays the end.
fn held_back(watermark: Watermark, delay: i64) -> Watermark {
    if watermark == Watermark::MAX { watermark } else { Watermark(watermark.0.saturating_sub(delay.max(0))) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{ListState, MapState, ValueState};

    #[test]
    fn a_held_back_watermark_trails_by_the_delay_and_the_end_of_input_is_never_held() {
        assert_eq!(held_back(Watermark(10_000), 4_000), Watermark(6_000));
        assert_eq!(held_back(Watermark(10_000), 0), Watermark(10_000));
        assert_eq!(held_back(Watermark::MAX, 4_000), Watermark::MAX);
        assert_eq!(held_back(Watermark::MIN, 4_000), Watermark::MIN, "no overflow below −∞");
    }

    #[derive(Default)]
    struct Collected {
        timestamp: Option<Timestamp>,
        out: Vec<((String, i64, u64), Option<Timestamp>)>,
    }

    impl Output for Collected {
        fn collect(&mut self, element: Element) {
            let timestamp = self.timestamp;
            self.collect_with_timestamp(element, timestamp);
        }
        fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>) {
            self.out.push((*element.downcast::<(String, i64, u64)>().unwrap(), timestamp));
        }
        fn current_timestamp(&self) -> Option<Timestamp> {
            self.timestamp
        }
        fn emit_watermark(&mut self, _: Watermark) {}
    }

    /// Sums each key's amounts in 100ms buckets (map state), remembers them in order (list
    /// state) and counts them (value state); a bucket is emitted when its end passes.
    struct Buckets;

    const COUNT: ValueState<u64> = ValueState::new("count");
    const SEEN: ListState<i64> = ListState::new("seen");
    const SUMS: MapState<i64, u64> = MapState::new("sums");

    impl KeyedProcessFunction<String, (String, i64, u64), (String, i64, u64)> for Buckets {
        fn process_element(
            &self,
            (_, timestamp, amount): (String, i64, u64),
            context: &mut KeyedContext<'_, String, (String, i64, u64)>,
        ) -> Result<(), OperatorError> {
            let bucket = timestamp - timestamp.rem_euclid(100);
            let sum = SUMS.get(context.state(), &bucket)?.unwrap_or(0);
            SUMS.put(context.state(), bucket, sum + amount)?;
            SEEN.add(context.state(), &timestamp);
            let count = COUNT.value(context.state())?.unwrap_or(0);
            COUNT.update(context.state(), &(count + 1));
            context.register_event_time_timer(bucket + 99);
            Ok(())
        }

        fn on_timer(
            &self,
            time: Timestamp,
            context: &mut KeyedContext<'_, String, (String, i64, u64)>,
        ) -> Result<(), OperatorError> {
            let bucket = time - 99;
            let sum = SUMS.get(context.state(), &bucket)?.expect("a bucket with a timer has a sum");
            SUMS.remove(context.state(), &bucket)?;
            let key = context.key().clone();
            context.collect((key, bucket, sum));
            assert!(!SEEN.get(context.state())?.is_empty() && COUNT.value(context.state())?.is_some());
            Ok(())
        }
    }

    fn operator(mode: ExecutionMode) -> Box<dyn StreamOperator> {
        let functions = ProcessFunctions {
            key_selector: Arc::new(|(key, _, _): &(String, i64, u64)| key.clone()),
            function: Arc::new(Buckets) as Arc<dyn KeyedProcessFunction<_, _, _>>,
        };
        process_operator(functions, mode)
    }

    fn feed(operator: &mut dyn StreamOperator, output: &mut Collected, key: &str, timestamp: i64, amount: u64) {
        output.timestamp = Some(timestamp);
        operator.process_element(Box::new((key.to_string(), timestamp, amount)), output).unwrap();
        output.timestamp = None;
    }

    #[test]
    fn timers_fire_in_time_order_as_the_watermark_passes_and_survive_a_checkpoint() {
        let mut streaming = operator(ExecutionMode::Streaming);
        let mut output = Collected::default();
        for (key, timestamp, amount) in [("b", 150, 1), ("a", 10, 2), ("a", 120, 3), ("a", 30, 4)] {
            feed(streaming.as_mut(), &mut output, key, timestamp, amount);
        }
        streaming.process_watermark(Watermark(98), &mut output).unwrap();
        assert!(output.out.is_empty());
        streaming.process_watermark(Watermark(99), &mut output).unwrap();
        assert_eq!(output.out, vec![(("a".to_string(), 0, 6), Some(99))]);
        let mut restored = operator(ExecutionMode::Streaming);
        restored.restore_state(&streaming.snapshot_state()).unwrap();
        restored.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(output.out[1..], [(("a".to_string(), 100, 3), Some(199)), (("b".to_string(), 100, 1), Some(199))]);
    }

    #[test]
    fn batch_fires_a_keys_timers_when_the_key_changes_and_agrees_with_streaming() {
        let input = [("a", 10, 2), ("a", 30, 4), ("a", 120, 3), ("b", 150, 1)];
        let mut batch = operator(ExecutionMode::Batch);
        let mut batch_output = Collected::default();
        for (key, timestamp, amount) in input {
            feed(batch.as_mut(), &mut batch_output, key, timestamp, amount);
        }
        assert_eq!(batch_output.out.len(), 2, "a's buckets fired when b began");
        batch.process_watermark(Watermark::MAX, &mut batch_output).unwrap();
        let mut streaming = operator(ExecutionMode::Streaming);
        let mut streaming_output = Collected::default();
        for (key, timestamp, amount) in input {
            feed(streaming.as_mut(), &mut streaming_output, key, timestamp, amount);
        }
        streaming.process_watermark(Watermark::MAX, &mut streaming_output).unwrap();
        assert_eq!(batch_output.out, streaming_output.out);
    }
}
