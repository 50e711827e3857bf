//! The batch backend: only the current key's state, dropped when the key changes (Flink's
//! `BatchExecutionKeyedStateBackend`). Correct only because batch mode sorts keyed input.

use std::collections::BTreeMap;

use super::KeyedStateBackend;

/// See the module doc.
#[derive(Default)]
pub struct BatchExecutionKeyedStateBackend {
    current_key: Option<Vec<u8>>,
    states: BTreeMap<String, Vec<u8>>,
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
                self.states.clear();
                self.current_key = Some(key.to_vec());
            }
            None => self.current_key = Some(key.to_vec()),
        }
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        self.states.get(name).map(Vec::as_slice)
    }

    fn put(&mut self, name: &str, value: Vec<u8>) {
        assert!(self.current_key.is_some(), "internal: keyed state accessed before a key was set");
        self.states.insert(name.to_string(), value);
    }

    fn clear(&mut self, name: &str) {
        self.states.remove(name);
    }

    fn key_count(&self) -> usize {
        usize::from(!self.states.is_empty())
    }
}
