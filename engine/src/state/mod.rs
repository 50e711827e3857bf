//! Keyed state: the hash backend (streaming) and the batch backend (one key at a time).
//!
//! State is addressed by (current key, state name) and holds encoded values, so that what is
//! stored is what would be checkpointed. A keyed operator sets the current key before every
//! access. In batch mode keyed input arrives sorted by key, so the batch backend keeps only the
//! current key's state and drops it when the key changes (Flink's
//! `BatchExecutionKeyedStateBackend`).
//!
//! Depends on: [`crate::record`]. Invariants: the batch backend panics if keys arrive out of
//! order (that is an engine bug: the input was not sorted); no backend exposes its iteration
//! order (a snapshot lists keys in byte order).

mod batch;
mod hash;

pub use batch::BatchExecutionKeyedStateBackend;
pub use hash::HashMapStateBackend;

use std::marker::PhantomData;

use crate::graph::{ExecutionMode, OperatorError};
use crate::record::Record;

/// Keyed state storage; see the module doc.
pub trait KeyedStateBackend: Send {
    /// Selects the key that the following accesses address.
    fn set_current_key(&mut self, key: &[u8]);
    /// The encoded value of state `name` for the current key.
    fn get(&self, name: &str) -> Option<&[u8]>;
    /// Replaces the encoded value of state `name` for the current key.
    fn put(&mut self, name: &str, value: Vec<u8>);
    /// Appends an encoded element to list state `name` of the current key.
    fn list_append(&mut self, name: &str, value: Vec<u8>);
    /// The encoded elements of list state `name` of the current key, in append order.
    fn list(&self, name: &str) -> &[Vec<u8>];
    /// Removes state `name` (value or list) for the current key.
    fn clear(&mut self, name: &str);
    /// How many keys currently hold state.
    fn key_count(&self) -> usize;
    /// Every key's state, encoded in key order (for a checkpoint).
    fn snapshot(&self) -> Vec<u8>;
    /// Replaces all state with a snapshot's.
    fn restore(&mut self, snapshot: &[u8]) -> Result<(), crate::record::DecodeError>;
}

/// The backend each mode uses.
pub fn backend_for(mode: ExecutionMode) -> Box<dyn KeyedStateBackend> {
    match mode {
        ExecutionMode::Streaming => Box::new(HashMapStateBackend::default()),
        ExecutionMode::Batch => Box::new(BatchExecutionKeyedStateBackend::default()),
    }
}

/// A typed view of one value per key (Flink's `ValueState`).
pub struct ValueState<T> {
    name: &'static str,
    _type: PhantomData<fn() -> T>,
}

impl<T: Record> ValueState<T> {
    /// The state called `name`.
    pub fn new(name: &'static str) -> ValueState<T> {
        ValueState { name, _type: PhantomData }
    }

    /// The current key's value.
    pub fn value(&self, backend: &dyn KeyedStateBackend) -> Result<Option<T>, OperatorError> {
        backend
            .get(self.name)
            .map(|bytes| {
                T::from_bytes(bytes).map_err(|error| OperatorError::new(format!("state `{}`: {error}", self.name)))
            })
            .transpose()
    }

    /// Replaces the current key's value.
    pub fn update(&self, backend: &mut dyn KeyedStateBackend, value: &T) {
        backend.put(self.name, value.to_bytes());
    }

    /// Removes the current key's value.
    pub fn clear(&self, backend: &mut dyn KeyedStateBackend) {
        backend.clear(self.name);
    }
}

/// A typed view of a list per key (Flink's `ListState`).
pub struct ListState<T> {
    name: &'static str,
    _type: PhantomData<fn() -> T>,
}

impl<T: Record> ListState<T> {
    /// The state called `name`.
    pub fn new(name: &'static str) -> ListState<T> {
        ListState { name, _type: PhantomData }
    }

    /// The current key's elements, in the order they were added.
    pub fn get(&self, backend: &dyn KeyedStateBackend) -> Result<Vec<T>, OperatorError> {
        backend
            .list(self.name)
            .iter()
            .map(|bytes| {
                T::from_bytes(bytes).map_err(|error| OperatorError::new(format!("state `{}`: {error}", self.name)))
            })
            .collect()
    }

    /// Appends to the current key's list.
    pub fn add(&self, backend: &mut dyn KeyedStateBackend, value: &T) {
        backend.list_append(self.name, value.to_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn value_state_round_trips_per_key_in_the_hash_backend() {
        let mut backend = HashMapStateBackend::default();
        let count = ValueState::<i64>::new("count");
        backend.set_current_key(b"a");
        assert_eq!(count.value(&backend).unwrap(), None);
        count.update(&mut backend, &3);
        backend.set_current_key(b"b");
        count.update(&mut backend, &5);
        backend.set_current_key(b"a");
        assert_eq!(count.value(&backend).unwrap(), Some(3));
        assert_eq!(backend.key_count(), 2);
        count.clear(&mut backend);
        assert_eq!(count.value(&backend).unwrap(), None);
        assert_eq!(backend.key_count(), 1);
    }

    #[test]
    fn list_state_keeps_order_per_key_and_clears() {
        for mut backend in [backend_for(ExecutionMode::Streaming), backend_for(ExecutionMode::Batch)] {
            let seen = ListState::<String>::new("seen");
            backend.set_current_key(b"a");
            seen.add(backend.as_mut(), &"x".to_string());
            seen.add(backend.as_mut(), &"y".to_string());
            assert_eq!(seen.get(backend.as_ref()).unwrap(), vec!["x".to_string(), "y".to_string()]);
            backend.set_current_key(b"b");
            assert!(seen.get(backend.as_ref()).unwrap().is_empty());
            seen.add(backend.as_mut(), &"z".to_string());
            backend.clear("seen");
            assert!(seen.get(backend.as_ref()).unwrap().is_empty());
        }
    }

    #[test]
    fn a_hash_backend_snapshot_restores_every_key_and_is_canonical() {
        let mut backend = HashMapStateBackend::default();
        let count = ValueState::<i64>::new("count");
        let seen = ListState::<String>::new("seen");
        for (key, value) in [(b"b", 2), (b"a", 1), (b"c", 3)] {
            backend.set_current_key(key);
            count.update(&mut backend, &value);
            seen.add(&mut backend, &format!("{value}"));
        }
        let snapshot = backend.snapshot();
        let mut restored = HashMapStateBackend::default();
        restored.restore(&snapshot).unwrap();
        assert_eq!(restored.snapshot(), snapshot, "the same state encodes the same way");
        restored.set_current_key(b"b");
        assert_eq!(count.value(&restored).unwrap(), Some(2));
        assert_eq!(seen.get(&restored).unwrap(), vec!["2".to_string()]);
        assert_eq!(restored.key_count(), 3);
        assert!(restored.restore(&snapshot[..snapshot.len() - 1]).is_err());
    }

    #[test]
    fn batch_backend_keeps_only_the_current_key() {
        let mut backend = BatchExecutionKeyedStateBackend::default();
        let count = ValueState::<i64>::new("count");
        backend.set_current_key(b"a");
        count.update(&mut backend, &3);
        backend.set_current_key(b"a");
        assert_eq!(count.value(&backend).unwrap(), Some(3));
        backend.set_current_key(b"b");
        assert_eq!(count.value(&backend).unwrap(), None, "state of the previous key must be dropped");
        assert_eq!(backend.key_count(), 0);
    }

    #[test]
    #[should_panic(expected = "not sorted")]
    fn batch_backend_rejects_unsorted_keys() {
        let mut backend = BatchExecutionKeyedStateBackend::default();
        backend.set_current_key(b"b");
        backend.set_current_key(b"a");
    }
}
