//! The hash backend: every key's state in memory, addressed by key (Flink's
//! `HashMapStateBackend`). Used in streaming mode.

use std::collections::{BTreeMap, HashMap};

use foldhash::fast::FixedState;

use super::KeyedStateBackend;
use crate::record::{DecodeError, Record};

/// One key's state: named values and named lists, encoded.
#[derive(Default)]
pub(super) struct KeyState {
    pub(super) values: BTreeMap<String, Vec<u8>>,
    pub(super) lists: BTreeMap<String, Vec<Vec<u8>>>,
}

impl KeyState {
    pub(super) fn is_empty(&self) -> bool {
        self.values.is_empty() && self.lists.is_empty()
    }

    pub(super) fn clear(&mut self, name: &str) {
        self.values.remove(name);
        self.lists.remove(name);
    }
}

/// See the module doc.
///
/// A key is looked up once per record, when it becomes the current key: its state lives in a
/// slot, and the slot's index is kept until the key changes. Keys hash with foldhash's fixed
/// seed (fast, and the same in every process; the map's order never leaves this type anyway).
#[derive(Default)]
pub struct HashMapStateBackend {
    // Lookups only: the map's iteration order never leaves this type.
    slots: HashMap<Vec<u8>, usize, FixedState>,
    states: Vec<KeyState>,
    /// Slots of keys whose state was cleared, for reuse.
    free: Vec<usize>,
    current_key: Option<Vec<u8>>,
    /// The current key's slot, if the key holds state.
    current: Option<usize>,
}

impl HashMapStateBackend {
    fn key(&self) -> &[u8] {
        self.current_key.as_deref().expect("internal: keyed state accessed before a key was set")
    }

    fn state(&self) -> Option<&KeyState> {
        self.key();
        self.current.map(|slot| &self.states[slot])
    }

    /// The current key's state, created if absent; the key is copied only when it is new.
    fn current(&mut self) -> &mut KeyState {
        let slot = match self.current {
            Some(slot) => slot,
            None => {
                let key = self.key().to_vec();
                let slot = match self.free.pop() {
                    Some(slot) => slot,
                    None => {
                        self.states.push(KeyState::default());
                        self.states.len() - 1
                    }
                };
                self.slots.insert(key, slot);
                self.current = Some(slot);
                slot
            }
        };
        &mut self.states[slot]
    }
}

impl KeyedStateBackend for HashMapStateBackend {
    fn set_current_key(&mut self, key: &[u8]) {
        // The key's buffer is reused from record to record.
        let current = self.current_key.get_or_insert_with(Vec::new);
        if current.as_slice() != key {
            current.clear();
            current.extend_from_slice(key);
            self.current = self.slots.get(key).copied();
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.state().and_then(|state| state.values.get(name)).map(Vec::as_slice)
    }

    fn put(&mut self, name: &str, value: Vec<u8>) {
        let values = &mut self.current().values;
        match values.get_mut(name) {
            Some(slot) => *slot = value,
            None => {
                values.insert(name.to_string(), value);
            }
        }
    }

    fn put_encoded(&mut self, name: &str, encode: &dyn Fn(&mut Vec<u8>)) {
        let values = &mut self.current().values;
        match values.get_mut(name) {
            Some(slot) => {
                slot.clear();
                encode(slot);
            }
            None => {
                let mut value = Vec::new();
                encode(&mut value);
                values.insert(name.to_string(), value);
            }
        }
    }

    fn list_append(&mut self, name: &str, value: Vec<u8>) {
        self.current().lists.entry(name.to_string()).or_default().push(value);
    }

    fn list(&self, name: &str) -> &[Vec<u8>] {
        self.state().and_then(|state| state.lists.get(name)).map_or(&[], Vec::as_slice)
    }

    fn clear(&mut self, name: &str) {
        let Some(slot) = self.current else { return };
        let state = &mut self.states[slot];
        state.clear(name);
        if state.is_empty() {
            let key = self.key().to_vec();
            self.slots.remove(&key);
            self.free.push(slot);
            self.current = None;
        }
    }

    fn key_count(&self) -> usize {
        self.slots.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut keys: Vec<(&Vec<u8>, usize)> = self.slots.iter().map(|(key, slot)| (key, *slot)).collect();
        keys.sort_unstable();
        let entries: Vec<SnapshotEntry> = keys
            .into_iter()
            .map(|(key, slot)| {
                let state = &self.states[slot];
                let values = state.values.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
                let lists = state.lists.iter().map(|(name, list)| (name.clone(), list.clone())).collect();
                (key.clone(), values, lists)
            })
            .collect();
        entries.to_bytes()
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), DecodeError> {
        let entries = Vec::<SnapshotEntry>::from_bytes(snapshot)?;
        let (mut slots, mut states) = (HashMap::with_hasher(FixedState::default()), Vec::with_capacity(entries.len()));
        for (key, values, lists) in entries {
            slots.insert(key, states.len());
            states.push(KeyState { values: values.into_iter().collect(), lists: lists.into_iter().collect() });
        }
        (self.slots, self.states) = (slots, states);
        self.free.clear();
        self.current_key = None;
        self.current = None;
        Ok(())
    }
}

/// One key's state in a snapshot: the key, its values and its lists, by name.
type SnapshotEntry = (Vec<u8>, Vec<(String, Vec<u8>)>, Vec<(String, Vec<Vec<u8>>)>);
