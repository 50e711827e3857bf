//! The operators behind the DataStream methods (Flink's `StreamMap`, `StreamFilter`,
//! `StreamFlatMap`, `StreamGroupedReduceOperator` and `BatchGroupedReduceOperator`).

use std::marker::PhantomData;
use std::sync::Arc;

use crate::graph::operator::{Output, StreamOperator};
use crate::graph::{ExecutionMode, OperatorError, TaskInfo};
use crate::record::{Element, Key, Record};
use crate::state::{KeyedStateBackend, ValueState, backend_for};

fn downcast<T: 'static>(element: Element, operator: &'static str) -> T {
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
}

/// The user functions of a keyed reduce, shared by all its subtasks.
pub(crate) struct ReduceFunctions<T, K> {
    pub(crate) key_selector: Arc<dyn Fn(&T) -> K + Send + Sync>,
    pub(crate) reduce: Arc<dyn Fn(T, T) -> T + Send + Sync>,
}

impl<T, K> Clone for ReduceFunctions<T, K> {
    fn clone(&self) -> Self {
        ReduceFunctions { key_selector: Arc::clone(&self.key_selector), reduce: Arc::clone(&self.reduce) }
    }
}

/// Creates the reduce operator of the task's mode: running results in streaming, one final
/// result per key in batch.
pub(crate) fn reduce_operator<T: Record, K: Key>(
    functions: ReduceFunctions<T, K>,
    task: &TaskInfo,
) -> Box<dyn StreamOperator> {
    let backend = backend_for(task.mode);
    let state = ValueState::new("reduce");
    match task.mode {
        ExecutionMode::Streaming => {
            Box::new(StreamGroupedReduceOperator { functions, backend, state, _key: PhantomData })
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
    _key: PhantomData<fn() -> K>,
}

impl<T: Record, K: Key> StreamOperator for StreamGroupedReduceOperator<T, K> {
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "reduce");
        self.backend.set_current_key(&(self.functions.key_selector)(&value).to_bytes());
        let reduced = accumulate(&self.functions, self.backend.as_mut(), &self.state, value)?;
        output.collect(Box::new(reduced));
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
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError> {
        let value = downcast::<T>(element, "reduce");
        let key = (self.functions.key_selector)(&value).to_bytes();
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
