//! Keyed state: the hash backend (streaming), the batch backend (one key at a time), and one
//! value state kept as objects (the streaming reduce's).
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
mod heap;

pub use batch::BatchExecutionKeyedStateBackend;
pub use hash::{HashMapStateBackend, InlineBytes};
pub use heap::HeapValueState;

use std::collections::BTreeMap;
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
    /// Replaces it with what `encode` writes (a backend may reuse the old value's buffer).
    fn put_encoded(&mut self, name: &str, encode: &dyn Fn(&mut Vec<u8>)) {
        let mut value = Vec::new();
        encode(&mut value);
        self.put(name, value);
    }
    /// Appends an encoded element to list state `name` of the current key.
    fn list_append(&mut self, name: &str, value: Vec<u8>);
    /// The encoded elements of list state `name` of the current key, in append order.
    fn list(&self, name: &str) -> &[Vec<u8>];
    /// The encoded value under the encoded `user_key` of map state `name` of the current key.
    fn map_get(&self, name: &str, user_key: &[u8]) -> Option<&[u8]>;
    /// Sets the value under `user_key` of map state `name` of the current key (one entry is
    /// written, not the whole map).
    fn map_put(&mut self, name: &str, user_key: Vec<u8>, value: Vec<u8>);
    /// Removes the entry under `user_key` of map state `name` of the current key.
    fn map_remove(&mut self, name: &str, user_key: &[u8]);
    /// The entries of map state `name` of the current key, in the byte order of their keys.
    fn map_entries(&self, name: &str) -> Vec<(&[u8], &[u8])>;
    /// Removes state `name` (value, list or map) for the current key.
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
    pub const fn new(name: &'static str) -> ValueState<T> {
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
        backend.put_encoded(self.name, &|out| value.encode(out));
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
    pub const fn new(name: &'static str) -> ListState<T> {
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

    /// Replaces the current key's list.
    pub fn update(&self, backend: &mut dyn KeyedStateBackend, values: &[T]) {
        backend.clear(self.name);
        for value in values {
            self.add(backend, value);
        }
    }

    /// Empties the current key's list.
    pub fn clear(&self, backend: &mut dyn KeyedStateBackend) {
        backend.clear(self.name);
    }
}

/// A typed map per key (Flink's `MapState`), ordered by map key. Each entry is stored on its
/// own (as Flink's RocksDB backend keys each by key and map key): a `put` or `remove` writes
/// one entry, whatever the map's size.
pub struct MapState<K, V> {
    name: &'static str,
    _type: PhantomData<fn() -> (K, V)>,
}

impl<K: Record + Ord, V: Record> MapState<K, V> {
    /// The state called `name`.
    pub const fn new(name: &'static str) -> MapState<K, V> {
        MapState { name, _type: PhantomData }
    }

    fn error(&self, error: crate::record::DecodeError) -> OperatorError {
        OperatorError::new(format!("state `{}`: {error}", self.name))
    }

    /// The current key's whole map.
    pub fn entries(&self, backend: &dyn KeyedStateBackend) -> Result<BTreeMap<K, V>, OperatorError> {
        backend
            .map_entries(self.name)
            .into_iter()
            .map(|(key, value)| {
                Ok((K::from_bytes(key).map_err(|e| self.error(e))?, V::from_bytes(value).map_err(|e| self.error(e))?))
            })
            .collect()
    }

    /// Replaces the current key's whole map.
    pub fn update(&self, backend: &mut dyn KeyedStateBackend, map: BTreeMap<K, V>) {
        backend.clear(self.name);
        for (key, value) in map {
            backend.map_put(self.name, key.to_bytes(), value.to_bytes());
        }
    }

    /// The current key's value for `key`.
    pub fn get(&self, backend: &dyn KeyedStateBackend, key: &K) -> Result<Option<V>, OperatorError> {
        backend
            .map_get(self.name, &key.to_bytes())
            .map(|bytes| V::from_bytes(bytes).map_err(|e| self.error(e)))
            .transpose()
    }

    /// Sets the current key's value for `key`.
    pub fn put(&self, backend: &mut dyn KeyedStateBackend, key: K, value: V) -> Result<(), OperatorError> {
        backend.map_put(self.name, key.to_bytes(), value.to_bytes());
        Ok(())
    }

    /// Removes the current key's value for `key`.
    pub fn remove(&self, backend: &mut dyn KeyedStateBackend, key: &K) -> Result<(), OperatorError> {
        backend.map_remove(self.name, &key.to_bytes());
        Ok(())
    }

    /// Empties the current key's map.
    pub fn clear(&self, backend: &mut dyn KeyedStateBackend) {
        backend.clear(self.name);
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
    fn clearing_a_key_in_the_hash_backend_leaves_every_other_key_its_state() {
        // A cleared key's entry is replaced by the last one: the others must still be found.
        let mut backend = HashMapStateBackend::default();
        let count = ValueState::<i64>::new("count");
        for (key, value) in [(b"a", 1), (b"b", 2), (b"c", 3)] {
            backend.set_current_key(key);
            count.update(&mut backend, &value);
        }
        backend.set_current_key(b"a");
        count.clear(&mut backend);
        assert_eq!(count.value(&backend).unwrap(), None);
        count.update(&mut backend, &10);
        for (key, value) in [(b"c", 3), (b"b", 2), (b"a", 10)] {
            backend.set_current_key(key);
            assert_eq!(count.value(&backend).unwrap(), Some(value), "key {}", key[0] as char);
        }
        backend.set_current_key(b"b");
        count.clear(&mut backend);
        backend.set_current_key(b"b");
        assert_eq!(count.value(&backend).unwrap(), None, "cleared, and set again as the current key");
        assert_eq!(backend.key_count(), 2);
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
    fn map_state_is_ordered_per_key_and_survives_a_snapshot() {
        let mut backend = HashMapStateBackend::default();
        let map = MapState::<String, u64>::new("m");
        backend.set_current_key(b"k1");
        map.put(&mut backend, "b".into(), 2).unwrap();
        map.put(&mut backend, "a".into(), 1).unwrap();
        backend.set_current_key(b"k2");
        map.put(&mut backend, "z".into(), 26).unwrap();
        let mut restored = HashMapStateBackend::default();
        restored.restore(&backend.snapshot()).unwrap();
        restored.set_current_key(b"k1");
        let entries: Vec<(String, u64)> = map.entries(&restored).unwrap().into_iter().collect();
        assert_eq!(entries, vec![("a".into(), 1), ("b".into(), 2)]);
        map.remove(&mut restored, &"a".to_string()).unwrap();
        assert_eq!(map.get(&restored, &"a".to_string()).unwrap(), None);
        assert_eq!(map.get(&restored, &"b".to_string()).unwrap(), Some(2));
        restored.set_current_key(b"k2");
        map.clear(&mut restored);
        assert!(map.entries(&restored).unwrap().is_empty());
        let mut again = HashMapStateBackend::default();
        again.restore(&backend.snapshot()).unwrap();
        assert_eq!(again.snapshot(), backend.snapshot(), "map entries snapshot canonically");
    }

    #[test]
    fn map_state_writes_and_removes_one_entry_in_either_backend() {
        for mut backend in [backend_for(ExecutionMode::Streaming), backend_for(ExecutionMode::Batch)] {
            let map = MapState::<i64, String>::new("m");
            backend.set_current_key(b"k");
            for key in [3, -1, 2] {
                map.put(backend.as_mut(), key, key.to_string()).unwrap();
            }
            map.put(backend.as_mut(), 2, "two".into()).unwrap();
            map.remove(backend.as_mut(), &3).unwrap();
            let entries: Vec<(i64, String)> = map.entries(backend.as_ref()).unwrap().into_iter().collect();
            assert_eq!(entries, [(-1, "-1".to_string()), (2, "two".to_string())], "ordered by the map's key");
            map.remove(backend.as_mut(), &-1).unwrap();
            map.remove(backend.as_mut(), &2).unwrap();
            assert_eq!(backend.key_count(), 0, "a key whose last entry is removed holds no state");
        }
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
