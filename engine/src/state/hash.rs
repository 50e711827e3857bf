//! The hash backend: every key's state in memory, addressed by key (Flink's
//! `HashMapStateBackend`). Used in streaming mode.

use std::collections::{BTreeMap, HashMap};

use super::KeyedStateBackend;

/// See the module doc.
#[derive(Default)]
pub struct HashMapStateBackend {
    // Lookups only: the map's iteration order never leaves this type.
    states: HashMap<Vec<u8>, BTreeMap<String, Vec<u8>>>,
    current_key: Option<Vec<u8>>,
}

impl HashMapStateBackend {
    fn key(&self) -> &[u8] {
        self.current_key.as_deref().expect("internal: keyed state accessed before a key was set")
    }
}

impl KeyedStateBackend for HashMapStateBackend {
    fn set_current_key(&mut self, key: &[u8]) {
        if self.current_key.as_deref() != Some(key) {
            self.current_key = Some(key.to_vec());
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.states.get(self.key()).and_then(|states| states.get(name)).map(Vec::as_slice)
    }

    fn put(&mut self, name: &str, value: Vec<u8>) {
        let key = self.key().to_vec();
        self.states.entry(key).or_default().insert(name.to_string(), value);
    }

    fn clear(&mut self, name: &str) {
        let key = self.key().to_vec();
        if let Some(states) = self.states.get_mut(&key) {
            states.remove(name);
            if states.is_empty() {
                self.states.remove(&key);
            }
        }
    }

    fn key_count(&self) -> usize {
        self.states.len()
    }
}
