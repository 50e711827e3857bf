//! The hash backend: every key's state in memory, addressed by key (Flink's
//! `HashMapStateBackend`). Used in streaming mode.

use std::collections::{BTreeMap, HashMap};

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
#[derive(Default)]
pub struct HashMapStateBackend {
    // Lookups only: the map's iteration order never leaves this type.
    states: HashMap<Vec<u8>, KeyState>,
    current_key: Option<Vec<u8>>,
}

impl HashMapStateBackend {
    fn key(&self) -> &[u8] {
        self.current_key.as_deref().expect("internal: keyed state accessed before a key was set")
    }

    /// The current key's state, created if absent; the key is copied only when it is new.
    fn current(&mut self) -> &mut KeyState {
        let key = self.current_key.as_deref().expect("internal: keyed state accessed before a key was set");
        if !self.states.contains_key(key) {
            self.states.insert(key.to_vec(), KeyState::default());
        }
        self.states.get_mut(key).expect("inserted above")
    }
}

impl KeyedStateBackend for HashMapStateBackend {
    fn set_current_key(&mut self, key: &[u8]) {
        // The key's buffer is reused from record to record.
        let current = self.current_key.get_or_insert_with(Vec::new);
        if current.as_slice() != key {
            current.clear();
            current.extend_from_slice(key);
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.states.get(self.key()).and_then(|state| state.values.get(name)).map(Vec::as_slice)
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

    fn list_append(&mut self, name: &str, value: Vec<u8>) {
        self.current().lists.entry(name.to_string()).or_default().push(value);
    }

    fn list(&self, name: &str) -> &[Vec<u8>] {
        self.states.get(self.key()).and_then(|state| state.lists.get(name)).map_or(&[], Vec::as_slice)
    }

    fn clear(&mut self, name: &str) {
        let key = self.key().to_vec();
        if let Some(state) = self.states.get_mut(&key) {
            state.clear(name);
            if state.is_empty() {
                self.states.remove(&key);
            }
        }
    }

    fn key_count(&self) -> usize {
        self.states.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut keys: Vec<&Vec<u8>> = self.states.keys().collect();
        keys.sort_unstable();
        let entries: Vec<SnapshotEntry> = keys
            .into_iter()
            .map(|key| {
                let state = &self.states[key];
                let values = state.values.iter().map(|(name, value)| (name.clone(), value.clone())).collect();
                let lists = state.lists.iter().map(|(name, list)| (name.clone(), list.clone())).collect();
                (key.clone(), values, lists)
            })
            .collect();
        entries.to_bytes()
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), DecodeError> {
        let entries = Vec::<SnapshotEntry>::from_bytes(snapshot)?;
        self.states = entries
            .into_iter()
            .map(|(key, values, lists)| {
                (key, KeyState { values: values.into_iter().collect(), lists: lists.into_iter().collect() })
            })
            .collect();
        self.current_key = None;
        Ok(())
    }
}

/// One key's state in a snapshot: the key, its values and its lists, by name.
type SnapshotEntry = (Vec<u8>, Vec<(String, Vec<u8>)>, Vec<(String, Vec<Vec<u8>>)>);
