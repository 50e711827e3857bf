//! The operators behind the DataStream methods (Flink's `StreamMap`, `StreamFilter`,
//! `StreamFlatMap`, `StreamGroupedReduceOperator` and `BatchGroupedReduceOperator`), and the
//! two-input keyed join in its streaming and batch forms.

use std::collections::HashMap;
use std::marker::PhantomData;
use std::ops::Add;
use std::sync::Arc;

use foldhash::fast::FixedState;

use crate::graph::operator::{Batch, Output, StreamOperator};
use crate::graph::{ExecutionMode, OperatorError, TaskInfo};
use crate::record::{DecodeError, Element, Key, KeyEncoder, Record};
use crate::state::{HeapValueState, InlineBytes, KeyedStateBackend, ListState, ValueState, backend_for};
use crate::time::{Timestamp, Watermark};

/// The element as the type the operator's plan says it has; anything else is an engine bug.
pub(crate) fn downcast<T: 'static>(element: Element, operator: &'static str) -> T {
    *element.downcast::<T>().unwrap_or_else(|_| {
        panic!("internal: {operator} received an element that is not a {}", std::any::type_name::<T>())
    })
}

pub(crate) struct MapOperator<T, U> {
    pub(crate) function: Arc<dyn Fn(T) -> U + Send + Sync>,
}

impl<T: Record, U: Record> StreamOperator for MapOperator<T, U> {
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        output.collect(Box::new((self.function)(downcast::<T>(element, "map"))));
        Ok(())
    }

    fn takes_batches(&self) -> bool {
        true
    }

    fn process_batch(&mut self, batch: Batch, output: &mut dyn Output) -> Result<(), OperatorError> {
        let (values, timestamps) = batch.into_typed::<T>("map");
        output.collect_batch(Batch::new(values.into_iter().map(&*self.function).collect(), timestamps));
        Ok(())
    }
}

pub(crate) struct FilterOperator<T> {
    pub(crate) predicate: Arc<dyn Fn(&T) -> bool + Send + Sync>,
}

impl<T: Record> StreamOperator for FilterOperator<T> {
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "filter");
        if (self.predicate)(&value) {
            output.collect(Box::new(value));
        }
        Ok(())
    }

    fn takes_batches(&self) -> bool {
        true
    }

    fn process_batch(&mut self, batch: Batch, output: &mut dyn Output) -> Result<(), OperatorError> {
        let (values, timestamps) = batch.into_typed::<T>("filter");
        let (kept, timestamps): (Vec<T>, Vec<Option<Timestamp>>) =
            values.into_iter().zip(timestamps).filter(|(value, _)| (self.predicate)(value)).unzip();
        output.collect_batch(Batch::new(kept, timestamps));
        Ok(())
    }
}

pub(crate) struct FlatMapOperator<T, U> {
    pub(crate) function: Arc<dyn Fn(T) -> Vec<U> + Send + Sync>,
}

impl<T: Record, U: Record> StreamOperator for FlatMapOperator<T, U> {
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        for item in (self.function)(downcast::<T>(element, "flat_map")) {
            output.collect(Box::new(item));
        }
        Ok(())
    }

    fn takes_batches(&self) -> bool {
        true
    }

    fn process_batch(&mut self, batch: Batch, output: &mut dyn Output) -> Result<(), OperatorError> {
        let (values, timestamps) = batch.into_typed::<T>("flat_map");
        let (mut items, mut item_timestamps) = (Vec::with_capacity(values.len()), Vec::with_capacity(values.len()));
        for (value, timestamp) in values.into_iter().zip(timestamps) {
            items.extend((self.function)(value));
            item_timestamps.resize(items.len(), timestamp);
        }
        output.collect_batch(Batch::new(items, item_timestamps));
        Ok(())
    }
}

/// The user functions of a keyed reduce, shared by all its subtasks.
pub(crate) struct ReduceFunctions<T, K> {
    /// Appends the element's encoded key (of type `K`).
    pub(crate) encode_key: KeyEncoder<T>,
    pub(crate) reduce: Arc<dyn Fn(T, T) -> T + Send + Sync>,
    pub(crate) _key: PhantomData<fn() -> K>,
}

impl<T, K> Clone for ReduceFunctions<T, K> {
    fn clone(&self) -> Self {
        ReduceFunctions {
            encode_key: Arc::clone(&self.encode_key),
            reduce: Arc::clone(&self.reduce),
            _key: PhantomData,
        }
    }
}

/// The name of a keyed reduce's state (and a sum's) in its snapshots.
const REDUCE_STATE: &str = "reduce";

/// Creates the reduce operator of the task's mode: running results in streaming, one final
/// result per key in batch.
pub(crate) fn reduce_operator<T: Record, K: Key>(
    functions: ReduceFunctions<T, K>,
    task: &TaskInfo,
) -> Box<dyn StreamOperator> {
    let backend = backend_for(task.mode);
    let state = ValueState::new(REDUCE_STATE);
    match task.mode {
        ExecutionMode::Streaming => {
            Box::new(StreamGroupedReduceOperator { functions, backend, state, key: Vec::new(), _key: PhantomData })
        }
        ExecutionMode::Batch => {
            Box::new(BatchGroupedReduceOperator { functions, backend, state, current_key: None, _key: PhantomData })
        }
    }
}

fn accumulate<T: Record, K>(
    functions: &ReduceFunctions<T, K>,
    backend: &mut dyn KeyedStateBackend,
    state: &ValueState<T>,
    value: T,
) -> Result<T, OperatorError> {
    let reduced = match state.value(backend)? {
        Some(accumulator) => (functions.reduce)(accumulator, value),
        None => value,
    };
    state.update(backend, &reduced);
    Ok(reduced)
}

/// Emits the updated value for every input element.
struct StreamGroupedReduceOperator<T, K> {
    functions: ReduceFunctions<T, K>,
    backend: Box<dyn KeyedStateBackend>,
    state: ValueState<T>,
    /// The current record's encoded key, its buffer reused.
    key: Vec<u8>,
    _key: PhantomData<fn() -> K>,
}

impl<T: Record, K: Key> StreamOperator for StreamGroupedReduceOperator<T, K> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "reduce");
        self.key.clear();
        (self.functions.encode_key)(&value, &mut self.key);
        self.backend.set_current_key(&self.key);
        let reduced = accumulate(&self.functions, self.backend.as_mut(), &self.state, value)?;
        output.collect(Box::new(reduced));
        Ok(())
    }

    fn takes_batches(&self) -> bool {
        true
    }

    fn process_batch(&mut self, batch: Batch, output: &mut dyn Output) -> Result<(), OperatorError> {
        let (values, mut timestamps) = batch.into_typed::<T>("reduce");
        let (mut reduced, mut result) = (Vec::with_capacity(values.len()), Ok(()));
        for value in values {
            self.key.clear();
            (self.functions.encode_key)(&value, &mut self.key);
            self.backend.set_current_key(&self.key);
            match accumulate(&self.functions, self.backend.as_mut(), &self.state, value) {
                Ok(value) => reduced.push(value),
                Err(error) => {
                    result = Err(error);
                    break;
                }
            }
        }
        // What the elements before a failure emitted, as one at a time would have.
        timestamps.truncate(reduced.len());
        output.collect_batch(Batch::new(reduced, timestamps));
        result
    }

    fn snapshot_state(&self) -> Vec<u8> {
        self.backend.snapshot()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.backend.restore(state).map_err(|error| OperatorError::new(format!("reduce state: {error}")))
    }
}

/// A key's running sum and the first field of its first element, as streaming `sum()` keeps
/// them. Encoded as the pair `(first, sum)`, what a reduce's state of the same stream holds.
#[derive(Clone, Debug)]
pub(crate) struct SumAccumulator<A, N> {
    first: A,
    sum: N,
    /// Whether `first` encodes as the key does (then any element whose first field does too has
    /// an equal first field, and emitting its own spares reading this one). Not state: decoded
    /// as no, and worked out again from the key when the sum's state is restored.
    first_is_key: bool,
}

impl<A: Record, N: Record> Record for SumAccumulator<A, N> {
    fn encode(&self, out: &mut Vec<u8>) {
        self.first.encode(out);
        self.sum.encode(out);
    }

    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        let (first, sum) = <(A, N)>::decode(input)?;
        Ok(SumAccumulator { first, sum, first_is_key: false })
    }
}

/// Streaming `sum()` of `(A, N)` pairs: emits `(first field of the key's first element, running
/// sum)` after every element, as the reduce `sum()` names would. The sum is added in place and,
/// when the first field is the key (`key_by(|pair| &pair.0)`), the element's own first field is
/// emitted: a record costs one lookup and no allocation, where a reduce decodes the accumulator
/// and encodes the result.
pub(crate) struct StreamSumOperator<A, N, K> {
    encode_key: KeyEncoder<(A, N)>,
    state: HeapValueState<SumAccumulator<A, N>>,
    /// The current element's encoded key and its first field's encoding, buffers reused.
    key: Vec<u8>,
    first: Vec<u8>,
    _key: PhantomData<fn() -> K>,
}

impl<A: Record, N: Record + Add<Output = N>, K: Key> StreamSumOperator<A, N, K> {
    pub(crate) fn new(encode_key: KeyEncoder<(A, N)>) -> StreamSumOperator<A, N, K> {
        let state = HeapValueState::new(REDUCE_STATE);
        StreamSumOperator { encode_key, state, key: Vec::new(), first: Vec::new(), _key: PhantomData }
    }

    fn add(&mut self, value: (A, N)) -> (A, N) {
        self.key.clear();
        (self.encode_key)(&value, &mut self.key);
        self.first.clear();
        value.0.encode(&mut self.first);
        let first_is_key = self.first == self.key;
        let slot = self.state.slot(&self.key);
        match slot {
            Some(accumulator) => {
                accumulator.sum = accumulator.sum.clone() + value.1;
                // Both encode as the key: they are equal (an encoding is read back as its value).
                let first = if accumulator.first_is_key && first_is_key { value.0 } else { accumulator.first.clone() };
                (first, accumulator.sum.clone())
            }
            None => {
                *slot = Some(SumAccumulator { first: value.0.clone(), sum: value.1.clone(), first_is_key });
                value
            }
        }
    }
}

impl<A: Record, N: Record + Add<Output = N>, K: Key> StreamOperator for StreamSumOperator<A, N, K> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let summed = self.add(downcast::<(A, N)>(element, "sum"));
        output.collect(Box::new(summed));
        Ok(())
    }

    fn takes_batches(&self) -> bool {
        true
    }

    fn process_batch(&mut self, batch: Batch, output: &mut dyn Output) -> Result<(), OperatorError> {
        let (values, timestamps) = batch.into_typed::<(A, N)>("sum");
        let summed: Vec<(A, N)> = values.into_iter().map(|value| self.add(value)).collect();
        output.collect_batch(Batch::new(summed, timestamps));
        Ok(())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        self.state.snapshot()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.state.restore(state).map_err(|error| OperatorError::new(format!("sum state: {error}")))?;
        let first = &mut self.first;
        self.state.for_each_mut(|key, accumulator| {
            first.clear();
            accumulator.first.encode(first);
            accumulator.first_is_key = first.as_slice() == key;
        });
        Ok(())
    }
}

/// Reads input sorted by key and emits one final value per key, when the key changes and at
/// end of input.
struct BatchGroupedReduceOperator<T, K> {
    functions: ReduceFunctions<T, K>,
    backend: Box<dyn KeyedStateBackend>,
    state: ValueState<T>,
    current_key: Option<Vec<u8>>,
    _key: PhantomData<fn() -> K>,
}

impl<T: Record, K: Key> BatchGroupedReduceOperator<T, K> {
    fn emit_current(&mut self, output: &mut dyn Output) -> Result<(), OperatorError> {
        if self.current_key.is_some()
            && let Some(value) = self.state.value(self.backend.as_ref())?
        {
            output.collect(Box::new(value));
        }
        Ok(())
    }
}

impl<T: Record, K: Key> StreamOperator for BatchGroupedReduceOperator<T, K> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "reduce");
        let mut key = Vec::new();
        (self.functions.encode_key)(&value, &mut key);
        if self.current_key.as_ref() != Some(&key) {
            self.emit_current(output)?;
            self.current_key = Some(key.clone());
        }
        self.backend.set_current_key(&key);
        accumulate(&self.functions, self.backend.as_mut(), &self.state, value)?;
        Ok(())
    }

    fn end_input(&mut self, output: &mut dyn Output) -> Result<(), OperatorError> {
        self.emit_current(output)
    }
}

/// The memory a [`CombineOperator`] may hold before it emits its partial values: Flink sizes its
/// combiner from managed memory; ours is a fixed share of a task's.
pub(crate) const COMBINE_BUDGET_BYTES: usize = 16 << 20;

/// A combiner's partial value of a key (taken out while it is reduced) and its latest timestamp.
type Partial<T> = (Option<T>, Option<Timestamp>);

/// Batch only: pre-aggregates a keyed reduce's input in the producing task, before the hash
/// exchange (Flink's combinable reduce, DataSet's `ReduceCombineDriver` with
/// `CombineHint.HASH`; Flink SQL's local aggregation). It keeps one partial value per key in a
/// hash map by encoded key, and emits them all in encoded key order (never the map's order) when
/// its memory estimate passes its budget, at a watermark (batch has one, at the end of input)
/// and at the end of input; the reduce after the exchange combines the partials. A partial value
/// carries the latest timestamp of the elements it combines.
///
/// Memory is estimated when a key arrives: its element's encoded size plus the entry. A value
/// that grows as it is reduced is counted at its first size.
pub(crate) struct CombineOperator<T, K> {
    functions: ReduceFunctions<T, K>,
    // Lookups only: what it emits is sorted by key first.
    partials: HashMap<InlineBytes, Partial<T>, FixedState>,
    estimated_bytes: usize,
    budget_bytes: usize,
    /// The current element's encoded key.
    key: Vec<u8>,
    scratch: Vec<u8>,
    _key: PhantomData<fn() -> K>,
}

impl<T: Record, K: Key> CombineOperator<T, K> {
    pub(crate) fn new(functions: ReduceFunctions<T, K>, budget_bytes: usize) -> CombineOperator<T, K> {
        CombineOperator {
            functions,
            partials: HashMap::with_hasher(FixedState::default()),
            estimated_bytes: 0,
            budget_bytes,
            key: Vec::new(),
            scratch: Vec::new(),
            _key: PhantomData,
        }
    }

    fn emit_all(&mut self, output: &mut dyn Output) {
        let mut partials: Vec<(InlineBytes, Partial<T>)> = self.partials.drain().collect();
        // Keys are distinct, so the unstable sort has one outcome: the encoded keys' order, the
        // order the reduce's input is sorted in after the exchange.
        partials.sort_unstable_by(|left, right| left.0.cmp(&right.0));
        for (_, (value, timestamp)) in partials {
            output
                .collect_with_timestamp(Box::new(value.expect("internal: a combiner entry lost its value")), timestamp);
        }
        self.estimated_bytes = 0;
    }
}

impl<T: Record, K: Key> CombineOperator<T, K> {
    fn combine(&mut self, value: T, timestamp: Option<Timestamp>, output: &mut dyn Output) {
        // Keyed by the encoded key, inline: a lookup touches one entry, not also a key's heap.
        self.key.clear();
        (self.functions.encode_key)(&value, &mut self.key);
        match self.partials.get_mut(self.key.as_slice()) {
            Some((partial, latest)) => {
                let combined =
                    (self.functions.reduce)(partial.take().expect("internal: a combiner entry lost its value"), value);
                *partial = Some(combined);
                *latest = (*latest).max(timestamp);
            }
            None => {
                self.scratch.clear();
                value.encode(&mut self.scratch);
                self.estimated_bytes +=
                    self.scratch.len() + std::mem::size_of::<(InlineBytes, Option<T>, Option<Timestamp>, u64)>();
                self.partials.insert(InlineBytes::from_slice(&self.key), (Some(value), timestamp));
            }
        }
        if self.estimated_bytes > self.budget_bytes {
            self.emit_all(output);
        }
    }
}

impl<T: Record, K: Key> StreamOperator for CombineOperator<T, K> {
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Aggregate
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let timestamp = output.current_timestamp();
        self.combine(downcast::<T>(element, "combine"), timestamp, output);
        Ok(())
    }

    fn takes_batches(&self) -> bool {
        true
    }

    fn process_batch(&mut self, batch: Batch, output: &mut dyn Output) -> Result<(), OperatorError> {
        let (values, timestamps) = batch.into_typed::<T>("combine");
        for (value, timestamp) in values.into_iter().zip(timestamps) {
            self.combine(value, timestamp, output);
        }
        Ok(())
    }

    fn process_watermark(&mut self, watermark: Watermark, output: &mut dyn Output) -> Result<(), OperatorError> {
        // Nothing held may arrive after the watermark that would make it late.
        self.emit_all(output);
        output.emit_watermark(watermark);
        Ok(())
    }

    fn end_input(&mut self, output: &mut dyn Output) -> Result<(), OperatorError> {
        self.emit_all(output);
        Ok(())
    }
}

/// A join's user function: the output of one matching pair.
type JoinFunction<L, R, O> = Arc<dyn Fn(&L, &R) -> O + Send + Sync>;

/// The user functions of a keyed join, shared by all its subtasks.
pub(crate) struct JoinFunctions<L, R, K, O> {
    pub(crate) left_key: Arc<dyn Fn(&L) -> K + Send + Sync>,
    pub(crate) right_key: Arc<dyn Fn(&R) -> K + Send + Sync>,
    pub(crate) join: JoinFunction<L, R, O>,
}

impl<L, R, K, O> Clone for JoinFunctions<L, R, K, O> {
    fn clone(&self) -> Self {
        JoinFunctions {
            left_key: Arc::clone(&self.left_key),
            right_key: Arc::clone(&self.right_key),
            join: Arc::clone(&self.join),
        }
    }
}

/// Creates the join operator of the task's mode.
pub(crate) fn join_operator<L: Record, R: Record, K: Key, O: Record>(
    functions: JoinFunctions<L, R, K, O>,
    task: &TaskInfo,
) -> Box<dyn StreamOperator> {
    let operator = JoinOperator {
        functions,
        backend: backend_for(task.mode),
        lefts: ListState::new("join-left"),
        rights: ListState::new("join-right"),
        mode: task.mode,
        current_key: None,
        right_seen_for_key: false,
    };
    Box::new(operator)
}

/// An inner equi-join. Streaming keeps both sides per key and emits each pair when its second
/// element arrives. Batch input is sorted by key, and within a key the left input comes first,
/// so batch keeps only the left side of the current key and emits as the right side streams by.
struct JoinOperator<L, R, K, O> {
    functions: JoinFunctions<L, R, K, O>,
    backend: Box<dyn KeyedStateBackend>,
    lefts: ListState<L>,
    rights: ListState<R>,
    mode: ExecutionMode,
    current_key: Option<Vec<u8>>,
    /// Batch only: a right element of the current key was seen (no left may follow).
    right_seen_for_key: bool,
}

impl<L: Record, R: Record, K: Key, O: Record> JoinOperator<L, R, K, O> {
    fn select_key(&mut self, key: Vec<u8>) {
        if self.current_key.as_ref() != Some(&key) {
            self.right_seen_for_key = false;
            self.backend.set_current_key(&key);
            self.current_key = Some(key);
        }
    }
}

impl<L: Record, R: Record, K: Key, O: Record> StreamOperator for JoinOperator<L, R, K, O> {
    fn cost_kind(&self, input: u32) -> crate::resources::OperatorKind {
        match input {
            0 => crate::resources::OperatorKind::HashBuild,
            _ => crate::resources::OperatorKind::HashProbe,
        }
    }

    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let left = downcast::<L>(element, "join (left input)");
        self.select_key((self.functions.left_key)(&left).to_bytes());
        assert!(
            self.mode == ExecutionMode::Streaming || !self.right_seen_for_key,
            "internal: batch join input is not sorted: a left element followed a right one of the same key"
        );
        for right in self.rights.get(self.backend.as_ref())? {
            output.collect(Box::new((self.functions.join)(&left, &right)));
        }
        self.lefts.add(self.backend.as_mut(), &left);
        Ok(())
    }

    fn process_element2(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let right = downcast::<R>(element, "join (right input)");
        self.select_key((self.functions.right_key)(&right).to_bytes());
        for left in self.lefts.get(self.backend.as_ref())? {
            output.collect(Box::new((self.functions.join)(&left, &right)));
        }
        match self.mode {
            ExecutionMode::Streaming => self.rights.add(self.backend.as_mut(), &right),
            ExecutionMode::Batch => self.right_seen_for_key = true,
        }
        Ok(())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        self.backend.snapshot()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.current_key = None;
        self.backend.restore(state).map_err(|error| OperatorError::new(format!("join state: {error}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::ExternalSystems;

    #[derive(Default)]
    struct Collected(Vec<Element>);

    impl Output for Collected {
        fn collect(&mut self, element: Element) {
            self.0.push(element);
        }
        fn collect_with_timestamp(&mut self, element: Element, _: Option<crate::time::Timestamp>) {
            self.0.push(element);
        }
        fn current_timestamp(&self) -> Option<crate::time::Timestamp> {
            None
        }
        fn emit_watermark(&mut self, _: crate::time::Watermark) {}
    }

    impl Collected {
        fn take<T: 'static>(&mut self) -> Vec<T> {
            std::mem::take(&mut self.0).into_iter().map(|element| *element.downcast::<T>().unwrap()).collect()
        }
    }

    fn task(mode: ExecutionMode) -> TaskInfo {
        TaskInfo {
            job_id: "test".into(),
            name: "op".into(),
            operator_id: 0,
            mode,
            subtask_index: 0,
            parallelism: 1,
            max_parallelism: 128,
            attempt: 0,
            checkpointing: false,
            restored_checkpoint: None,
            external: ExternalSystems::default(),
        }
    }

    fn feed<T: Record>(operator: &mut dyn StreamOperator, inputs: Vec<T>, output: &mut Collected) {
        for input in inputs {
            operator.process_element(Box::new(input), output).unwrap();
        }
        operator.end_input(output).unwrap();
    }

    #[test]
    fn map_filter_and_flat_map_transform_each_element() {
        let mut output = Collected::default();
        let mut map = MapOperator::<i64, i64> { function: Arc::new(|value| value * 10) };
        feed(&mut map, vec![1i64, 2], &mut output);
        assert_eq!(output.take::<i64>(), vec![10, 20]);
        let mut filter = FilterOperator::<i64> { predicate: Arc::new(|value| value % 2 == 0) };
        feed(&mut filter, vec![1i64, 2, 3, 4], &mut output);
        assert_eq!(output.take::<i64>(), vec![2, 4]);
        let mut flat_map = FlatMapOperator::<i64, i64> { function: Arc::new(|value| (0..value).collect()) };
        feed(&mut flat_map, vec![0i64, 3], &mut output);
        assert_eq!(output.take::<i64>(), vec![0, 1, 2]);
    }

    /// Records what is emitted with its timestamp; `current` is the element being processed's.
    #[derive(Default)]
    struct Timed {
        current: Option<Timestamp>,
        emitted: Vec<(Element, Option<Timestamp>)>,
    }

    impl Output for Timed {
        fn collect(&mut self, element: Element) {
            self.emitted.push((element, self.current));
        }
        fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>) {
            self.emitted.push((element, timestamp));
        }
        fn current_timestamp(&self) -> Option<Timestamp> {
            self.current
        }
        fn emit_watermark(&mut self, _: Watermark) {}
    }

    impl Timed {
        fn take<O: 'static>(self) -> Vec<(O, Option<Timestamp>)> {
            self.emitted.into_iter().map(|(element, timestamp)| (downcast::<O>(element, "test"), timestamp)).collect()
        }
    }

    type Timestamped<O> = Vec<(O, Option<Timestamp>)>;

    /// What `make()`'s operator emits for `inputs` handed over one at a time, and as batches
    /// of `size`.
    fn both_ways<T: Record, O: Record>(
        make: &dyn Fn() -> Box<dyn StreamOperator>,
        inputs: &[(T, Option<Timestamp>)],
        size: usize,
    ) -> (Timestamped<O>, Timestamped<O>) {
        let (mut one, mut output) = (make(), Timed::default());
        for (value, timestamp) in inputs {
            output.current = *timestamp;
            one.process_element(Box::new(value.clone()), &mut output).unwrap();
        }
        output.current = None;
        one.end_input(&mut output).unwrap();
        let one_at_a_time = output.take::<O>();
        let (mut batched, mut output) = (make(), Timed::default());
        assert!(batched.takes_batches());
        let (values, timestamps): (Vec<T>, Vec<Option<Timestamp>>) = inputs.iter().cloned().unzip();
        for batch in Batch::new(values, timestamps).into_chunks(size) {
            batched.process_batch(batch, &mut output).unwrap();
        }
        batched.end_input(&mut output).unwrap();
        (one_at_a_time, output.take::<O>())
    }

    #[test]
    fn a_batch_emits_what_its_elements_emit_one_at_a_time() {
        let numbers: Vec<(i64, Option<Timestamp>)> =
            (0..23).map(|value| (value % 7, (value % 3 != 0).then_some(value * 10))).collect();
        let words: Vec<((String, i64), Option<Timestamp>)> =
            numbers.iter().map(|(value, timestamp)| ((format!("w{}", value % 4), *value), *timestamp)).collect();
        for size in [1, 4, 100] {
            let map = || Box::new(MapOperator::<i64, i64> { function: Arc::new(|value| value * 10) }) as Box<_>;
            let (one, batched) = both_ways::<i64, i64>(&map, &numbers, size);
            assert_eq!(one, batched, "map, batches of {size}");
            let filter = || Box::new(FilterOperator::<i64> { predicate: Arc::new(|value| value % 2 == 0) }) as Box<_>;
            let (one, batched) = both_ways::<i64, i64>(&filter, &numbers, size);
            assert_eq!(one, batched, "filter, batches of {size}");
            let flat_map =
                || Box::new(FlatMapOperator::<i64, i64> { function: Arc::new(|value| (0..value).collect()) }) as Box<_>;
            let (one, batched) = both_ways::<i64, i64>(&flat_map, &numbers, size);
            assert_eq!(one, batched, "flat_map, batches of {size}");
            let reduce = || reduce_operator(summing(), &task(ExecutionMode::Streaming));
            let (one, batched) = both_ways::<(String, i64), (String, i64)>(&reduce, &words, size);
            assert_eq!(one, batched, "reduce, batches of {size}");
            let combine = || Box::new(CombineOperator::new(summing(), 64)) as Box<dyn StreamOperator>;
            let (one, batched) = both_ways::<(String, i64), (String, i64)>(&combine, &words, size);
            assert_eq!(one, batched, "combine with a budget it overflows, batches of {size}");
            assert!(one.len() > 4, "the budget flushed partial values before the end");
        }
    }

    #[test]
    fn a_batch_cuts_into_chunks_in_order() {
        let batch = Batch::new((0..10).collect::<Vec<u32>>(), (0..10).map(Some).collect());
        let chunks: Vec<(Vec<u32>, Vec<Option<Timestamp>>)> =
            batch.into_chunks(4).into_iter().map(|chunk| chunk.into_typed::<u32>("test")).collect();
        let lengths: Vec<usize> = chunks.iter().map(|(values, _)| values.len()).collect();
        assert_eq!(lengths, vec![4, 4, 2]);
        let values: Vec<u32> = chunks.iter().flat_map(|(values, _)| values.clone()).collect();
        assert_eq!(values, (0..10).collect::<Vec<_>>());
        assert!(
            chunks
                .iter()
                .all(|(values, timestamps)| values.iter().map(|v| Some(*v as i64)).eq(timestamps.iter().copied()))
        );
        assert!(Batch::untimed(Vec::<u32>::new()).into_chunks(4).is_empty());
    }

    fn summing() -> ReduceFunctions<(String, i64), String> {
        ReduceFunctions {
            encode_key: Arc::new(|pair: &(String, i64), out: &mut Vec<u8>| pair.0.encode(out)),
            reduce: Arc::new(|left: (String, i64), right: (String, i64)| (left.0, left.1 + right.1)),
            _key: PhantomData,
        }
    }

    fn pairs(keys: &[&str]) -> Vec<(String, i64)> {
        keys.iter().map(|key| (key.to_string(), 1)).collect()
    }

    /// `sum()`'s reduce (the first field of a key's first element, the running sum), keyed by
    /// `key` of the first field.
    fn summing_by(key: fn(&str) -> String) -> ReduceFunctions<(String, i64), String> {
        ReduceFunctions {
            encode_key: Arc::new(move |pair: &(String, i64), out: &mut Vec<u8>| key(&pair.0).encode(out)),
            ..summing()
        }
    }

    #[test]
    fn streaming_sum_emits_and_keeps_what_the_reduce_it_stands_for_does() {
        let keys: [fn(&str) -> String; 2] = [str::to_string, str::to_lowercase];
        let words = ["b", "Foo", "a", "foo", "b", "FOO", "a", "foo", "Foo", "b"];
        let inputs: Vec<((String, i64), Option<Timestamp>)> = words
            .iter()
            .enumerate()
            .map(|(index, word)| ((word.to_string(), index as i64 + 1), Some(index as i64)))
            .collect();
        for key in keys {
            let sum = || Box::new(StreamSumOperator::<String, i64, String>::new(summing_by(key).encode_key)) as Box<_>;
            let reduce = || reduce_operator(summing_by(key), &task(ExecutionMode::Streaming));
            for size in [1, 3, 100] {
                let (reduced, _) = both_ways::<(String, i64), (String, i64)>(&reduce, &inputs, size);
                let (one, batched) = both_ways::<(String, i64), (String, i64)>(&sum, &inputs, size);
                assert_eq!(one, reduced, "one at a time, batches of {size}");
                assert_eq!(batched, reduced, "batched, batches of {size}");
            }
            // The same snapshot, and each restores into the other and carries on alike.
            let (mut summed, mut reduced) = (sum(), reduce());
            let mut output = Collected::default();
            for ((pair, _), (other, _)) in inputs.iter().zip(&inputs).take(6) {
                summed.process_element(Box::new(pair.clone()), &mut output).unwrap();
                reduced.process_element(Box::new(other.clone()), &mut output).unwrap();
            }
            assert_eq!(summed.snapshot_state(), reduced.snapshot_state());
            let (mut sum_from_reduce, mut reduce_from_sum) = (sum(), reduce());
            sum_from_reduce.restore_state(&reduced.snapshot_state()).unwrap();
            reduce_from_sum.restore_state(&summed.snapshot_state()).unwrap();
            let rest: Vec<(String, i64)> = inputs[6..].iter().map(|(pair, _)| pair.clone()).collect();
            let (mut from_reduce, mut from_sum) = (Collected::default(), Collected::default());
            feed(sum_from_reduce.as_mut(), rest.clone(), &mut from_reduce);
            feed(reduce_from_sum.as_mut(), rest, &mut from_sum);
            let (from_reduce, from_sum) = (from_reduce.take::<(String, i64)>(), from_sum.take::<(String, i64)>());
            assert_eq!(from_reduce, from_sum);
            // A restored sum still knows which keys' first fields are the key.
            let mut restored = StreamSumOperator::<String, i64, String>::new(summing_by(key).encode_key);
            restored.restore_state(&reduced.snapshot_state()).unwrap();
            let mut flags = Vec::new();
            restored
                .state
                .for_each_mut(|_, accumulator| flags.push((accumulator.first.clone(), accumulator.first_is_key)));
            flags.sort();
            let expected: Vec<(String, bool)> = if key("Foo") == "foo" {
                vec![("Foo".into(), false), ("a".into(), true), ("b".into(), true)]
            } else {
                vec![
                    ("FOO".into(), true),
                    ("Foo".into(), true),
                    ("a".into(), true),
                    ("b".into(), true),
                    ("foo".into(), true),
                ]
            };
            assert_eq!(flags, expected);
            if key("Foo") == "foo" {
                assert!(from_reduce.contains(&("Foo".to_string(), 2 + 4 + 6 + 8 + 9)), "{from_reduce:?}");
            }
        }
    }

    #[test]
    fn streaming_reduce_emits_a_running_value_per_element() {
        let mut output = Collected::default();
        let mut reduce = reduce_operator(summing(), &task(ExecutionMode::Streaming));
        feed(reduce.as_mut(), pairs(&["a", "b", "a"]), &mut output);
        let emitted = output.take::<(String, i64)>();
        assert_eq!(emitted, vec![("a".into(), 1), ("b".into(), 1), ("a".into(), 2)]);
    }

    #[test]
    fn a_restored_streaming_reduce_continues_from_its_snapshot() {
        let mut first = reduce_operator(summing(), &task(ExecutionMode::Streaming));
        let mut output = Collected::default();
        for pair in pairs(&["a", "b", "a"]) {
            first.process_element(Box::new(pair), &mut output).unwrap();
        }
        let snapshot = first.snapshot_state();
        let mut restored = reduce_operator(summing(), &task(ExecutionMode::Streaming));
        restored.restore_state(&snapshot).unwrap();
        let mut output = Collected::default();
        feed(restored.as_mut(), pairs(&["a", "b"]), &mut output);
        assert_eq!(output.take::<(String, i64)>(), vec![("a".to_string(), 3), ("b".to_string(), 2)]);
        assert!(restored.restore_state(b"garbage").is_err());
    }

    #[test]
    fn a_combiner_emits_one_partial_per_key_in_key_order_at_the_end_of_input() {
        let mut output = Collected::default();
        let mut combine = CombineOperator::new(summing(), COMBINE_BUDGET_BYTES);
        feed(&mut combine, pairs(&["b", "a", "b", "c", "a", "b"]), &mut output);
        assert_eq!(output.take::<(String, i64)>(), vec![("a".into(), 2), ("b".into(), 3), ("c".into(), 1)]);
    }

    #[test]
    fn a_combiner_over_its_budget_emits_what_it_holds_and_starts_again() {
        let mut output = Collected::default();
        // Room for about two entries: the third key pushes the estimate over.
        let entry = "a".to_string().to_bytes().len()
            + 8
            + std::mem::size_of::<(InlineBytes, Option<(String, i64)>, Option<Timestamp>, u64)>();
        let mut combine = CombineOperator::new(summing(), 2 * entry + 1);
        for pair in pairs(&["a", "b", "a"]) {
            combine.process_element(Box::new(pair), &mut output).unwrap();
        }
        assert!(output.0.is_empty(), "two keys fit the budget");
        combine.process_element(Box::new(("c".to_string(), 1i64)), &mut output).unwrap();
        assert_eq!(output.take::<(String, i64)>(), vec![("a".into(), 2), ("b".into(), 1), ("c".into(), 1)]);
        feed(&mut combine, pairs(&["a"]), &mut output);
        assert_eq!(output.take::<(String, i64)>(), vec![("a".into(), 1)]);
    }

    #[test]
    fn a_combiner_emits_what_it_holds_before_passing_a_watermark_on() {
        let mut output = Collected::default();
        let mut combine = CombineOperator::new(summing(), COMBINE_BUDGET_BYTES);
        for pair in pairs(&["a", "a"]) {
            combine.process_element(Box::new(pair), &mut output).unwrap();
        }
        combine.process_watermark(Watermark::MAX, &mut output).unwrap();
        assert_eq!(output.take::<(String, i64)>(), vec![("a".into(), 2)]);
    }

    #[test]
    fn batch_reduce_emits_one_final_value_per_key_of_sorted_input() {
        let mut output = Collected::default();
        let mut reduce = reduce_operator(summing(), &task(ExecutionMode::Batch));
        let mut sorted = pairs(&["b", "a", "b", "a", "a"]);
        sorted.sort_by_key(|pair| pair.0.to_bytes());
        feed(reduce.as_mut(), sorted, &mut output);
        assert_eq!(output.take::<(String, i64)>(), vec![("a".into(), 3), ("b".into(), 2)]);
    }
}
