//! The batch backend: only the current key's state, dropped when the key changes (Flink's
//! `BatchExecutionKeyedStateBackend`). Correct only because batch mode sorts keyed input.

use std::collections::BTreeMap;

use super::KeyedStateBackend;

/// The current key's state: named values, lists and maps, encoded.
#[derive(Default)]
struct KeyState {
    values: BTreeMap<String, Vec<u8>>,
    lists: BTreeMap<String, Vec<Vec<u8>>>,
    maps: BTreeMap<String, BTreeMap<Vec<u8>, Vec<u8>>>,
}

impl KeyState {
    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.lists.is_empty() && self.maps.is_empty()
    }

    fn clear(&mut self, name: &str) {
        self.values.remove(name);
        self.lists.remove(name);
        self.maps.remove(name);
    }
}

/// See the module doc.
#[derive(Default)]
pub struct BatchExecutionKeyedStateBackend {
    current_key: Option<Vec<u8>>,
    state: KeyState,
}

impl KeyedStateBackend for BatchExecutionKeyedStateBackend {
    fn set_current_key(&mut self, key: &[u8]) {
        match self.current_key.as_deref() {
            Some(current) if current == key => {}
            Some(current) => {
                assert!(
                    current < key,
                    "internal: batch keyed input is not sorted by key ({current:?} came before {key:?})"
                );
                self.state = KeyState::default();
                self.current_key = Some(key.to_vec());
            }
            None => self.current_key = Some(key.to_vec()),
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.state.values.get(name).map(Vec::as_slice)
    }

    fn put(&mut self, name: &str, value: Vec<u8>) {
        assert!(self.current_key.is_some(), "internal: keyed state accessed before a key was set");
        self.state.values.insert(name.to_string(), value);
    }

    fn list_append(&mut self, name: &str, value: Vec<u8>) {
        assert!(self.current_key.is_some(), "internal: keyed state accessed before a key was set");
        self.state.lists.entry(name.to_string()).or_default().push(value);
    }

    fn list(&self, name: &str) -> &[Vec<u8>] {
        self.state.lists.get(name).map_or(&[], Vec::as_slice)
    }

    fn map_get(&self, name: &str, user_key: &[u8]) -> Option<&[u8]> {
        self.state.maps.get(name)?.get(user_key).map(Vec::as_slice)
    }

    fn map_put(&mut self, name: &str, user_key: Vec<u8>, value: Vec<u8>) {
        assert!(self.current_key.is_some(), "internal: keyed state accessed before a key was set");
        self.state.maps.entry(name.to_string()).or_default().insert(user_key, value);
    }

    fn map_remove(&mut self, name: &str, user_key: &[u8]) {
        let Some(map) = self.state.maps.get_mut(name) else { return };
        map.remove(user_key);
        if map.is_empty() {
            self.state.maps.remove(name);
        }
    }

    fn map_entries(&self, name: &str) -> Vec<(&[u8], &[u8])> {
        let entries = self.state.maps.get(name).into_iter().flatten();
        entries.map(|(key, value)| (key.as_slice(), value.as_slice())).collect()
    }

    fn clear(&mut self, name: &str) {
        self.state.clear(name);
    }

    fn key_count(&self) -> usize {
        usize::from(!self.state.is_empty())
    }

    fn snapshot(&self) -> Vec<u8> {
        panic!("internal: batch mode never checkpoints keyed state")
    }

    fn restore(&mut self, _snapshot: &[u8]) -> Result<(), crate::record::DecodeError> {
        panic!("internal: batch mode never restores keyed state")
    }
}
