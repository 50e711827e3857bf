//! One value state of every key, held as objects (Flink's `HeapValueState` over the heap
//! backend's state table): what the streaming reduce keeps. A record reads and replaces its
//! key's value in place, with no decoding or encoding on the way; a checkpoint encodes the
//! values, in the hash backend's snapshot format, so that each restores the other's snapshot.

use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use super::hash::{InlineBytes, SnapshotEntry};
use crate::record::{DecodeError, Record};

/// See the module doc. Keys are encoded (as the hash backend keys them) and stored inline in
/// the table's buckets; the buckets' order never leaves this type (a snapshot sorts them).
pub struct HeapValueState<T> {
    name: &'static str,
    /// A value is `None` only while it is taken out to be reduced.
    table: HashTable<(InlineBytes, Option<T>)>,
    hasher: FixedState,
}

impl<T: Record> HeapValueState<T> {
    /// The state called `name` (the name its snapshot entries carry).
    pub fn new(name: &'static str) -> HeapValueState<T> {
        HeapValueState { name, table: HashTable::new(), hasher: FixedState::default() }
    }

    /// The value of the key encoded as `key`, added empty if the key is new.
    pub fn slot(&mut self, key: &[u8]) -> &mut Option<T> {
        let hasher = self.hasher;
        let hash = hasher.hash_one(key);
        let entry = self.table.entry(
            hash,
            |(known, _)| known.as_slice() == key,
            |(known, _)| hasher.hash_one(known.as_slice()),
        );
        match entry {
            Entry::Occupied(occupied) => &mut occupied.into_mut().1,
            Entry::Vacant(vacant) => &mut vacant.insert((InlineBytes::from_slice(key), None)).into_mut().1,
        }
    }

    /// Visits every key (encoded) and its value, in no particular order.
    pub fn for_each_mut(&mut self, mut visit: impl FnMut(&[u8], &mut T)) {
        for (key, value) in self.table.iter_mut() {
            if let Some(value) = value {
                visit(key.as_slice(), value);
            }
        }
    }

    /// How many keys hold a value.
    pub fn key_count(&self) -> usize {
        self.table.iter().filter(|(_, value)| value.is_some()).count()
    }

    /// Every key's value, encoded in key order: what the hash backend's snapshot of this one
    /// state would be.
    pub fn snapshot(&self) -> Vec<u8> {
        let mut keys: Vec<(&[u8], &T)> =
            self.table.iter().filter_map(|(key, value)| Some((key.as_slice(), value.as_ref()?))).collect();
        keys.sort_unstable_by_key(|(key, _)| *key);
        let entries: Vec<SnapshotEntry> = keys
            .into_iter()
            .map(|(key, value)| (key.to_vec(), vec![(self.name.to_string(), value.to_bytes())], Vec::new(), Vec::new()))
            .collect();
        entries.to_bytes()
    }

    /// Replaces every value with a snapshot's, which must hold this state only.
    pub fn restore(&mut self, snapshot: &[u8]) -> Result<(), DecodeError> {
        let mut restored = HeapValueState::new(self.name);
        for (key, values, lists, maps) in Vec::<SnapshotEntry>::from_bytes(snapshot)? {
            if let Some(name) = lists.first().map(|(name, _)| name).or(maps.first().map(|(name, _)| name)) {
                return Err(DecodeError::new(format!(
                    "list or map state `{name}` in a snapshot of value state `{}`",
                    self.name
                )));
            }
            for (name, bytes) in values {
                if name != self.name {
                    return Err(DecodeError::new(format!("state `{name}` in a snapshot of state `{}`", self.name)));
                }
                *restored.slot(&key) = Some(T::from_bytes(&bytes)?);
            }
        }
        *self = restored;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{HashMapStateBackend, KeyedStateBackend, ValueState};

    #[test]
    fn values_are_kept_per_key_and_replaced_in_place() {
        let mut state = HeapValueState::<(String, i64)>::new("reduce");
        *state.slot(b"a") = Some(("a".into(), 1));
        *state.slot(b"b") = Some(("b".into(), 2));
        let slot = state.slot(b"a");
        let (word, count) = slot.take().unwrap();
        *slot = Some((word, count + 10));
        assert_eq!(state.slot(b"a").as_ref(), Some(&("a".to_string(), 11)));
        assert_eq!(state.slot(b"b").as_ref(), Some(&("b".to_string(), 2)));
        assert_eq!(state.slot(b"c").as_ref(), None, "a new key starts empty");
        assert_eq!(state.key_count(), 2, "an empty slot is not a key with state");
    }

    #[test]
    fn a_snapshot_is_the_hash_backends_and_each_restores_the_others() {
        let (mut heap, mut backend) = (HeapValueState::<i64>::new("reduce"), HashMapStateBackend::default());
        let typed = ValueState::<i64>::new("reduce");
        for (key, value) in [(&b"b"[..], 2), (b"a", 1), (b"a-much-longer-key-than-fits-inline", 3)] {
            *heap.slot(key) = Some(value);
            backend.set_current_key(key);
            typed.update(&mut backend, &value);
        }
        assert_eq!(heap.snapshot(), backend.snapshot(), "the same state, the same bytes");
        let mut restored = HashMapStateBackend::default();
        restored.restore(&heap.snapshot()).unwrap();
        restored.set_current_key(b"a");
        assert_eq!(typed.value(&restored).unwrap(), Some(1));
        let mut back = HeapValueState::<i64>::new("reduce");
        back.restore(&backend.snapshot()).unwrap();
        assert_eq!(back.snapshot(), heap.snapshot());
        assert_eq!(back.slot(b"a-much-longer-key-than-fits-inline").as_ref(), Some(&3));
    }

    #[test]
    fn a_snapshot_of_other_state_or_cut_short_is_refused() {
        let mut backend = HashMapStateBackend::default();
        backend.set_current_key(b"k");
        ValueState::<i64>::new("other").update(&mut backend, &1);
        let mut heap = HeapValueState::<i64>::new("reduce");
        *heap.slot(b"kept") = Some(7);
        let error = heap.restore(&backend.snapshot()).unwrap_err();
        assert!(error.to_string().contains("state `other`"), "{error}");
        let snapshot = heap.snapshot();
        assert!(heap.restore(&snapshot[..snapshot.len() - 1]).is_err());
        assert_eq!(heap.slot(b"kept").as_ref(), Some(&7), "a refused snapshot changes nothing");
    }
}
