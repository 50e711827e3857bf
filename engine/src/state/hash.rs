//! The hash backend: every key's state in memory, addressed by key (Flink's
//! `HashMapStateBackend`). Used in streaming mode.

use std::collections::BTreeMap;
use std::hash::BuildHasher;

use foldhash::fast::FixedState;
use hashbrown::HashTable;
use smallvec::SmallVec;

use super::KeyedStateBackend;
use crate::record::{DecodeError, Record};

/// Bytes kept inline up to 24 (a short key or value needs no allocation of its own, and is read
/// from the same cache line as what holds it).
pub type InlineBytes = SmallVec<[u8; 24]>;

/// One key's state: its values and its lists, each tagged with its state's index in
/// [`HashMapStateBackend::names`]. An operator has a few states, so a linear scan finds one.
#[derive(Default)]
struct KeyState {
    values: SmallVec<[(u32, InlineBytes); 1]>,
    lists: SmallVec<[(u32, Vec<Vec<u8>>); 0]>,
    maps: SmallVec<[(u32, EncodedMap); 0]>,
}

/// A map state's entries, encoded keys to encoded values.
type EncodedMap = BTreeMap<Vec<u8>, Vec<u8>>;

/// The entry of state `state` among a key's entries, added empty if it has none.
fn entry<V: Default, A: smallvec::Array<Item = (u32, V)>>(entries: &mut SmallVec<A>, state: u32) -> &mut V {
    let position = match entries.iter().position(|(index, _)| *index == state) {
        Some(position) => position,
        None => {
            entries.push((state, V::default()));
            entries.len() - 1
        }
    };
    &mut entries[position].1
}

impl KeyState {
    fn is_empty(&self) -> bool {
        self.values.is_empty() && self.lists.is_empty() && self.maps.is_empty()
    }

    fn value(&self, state: u32) -> Option<&InlineBytes> {
        self.values.iter().find(|(index, _)| *index == state).map(|(_, value)| value)
    }

    fn value_mut(&mut self, state: u32) -> &mut InlineBytes {
        entry(&mut self.values, state)
    }

    fn list(&self, state: u32) -> Option<&Vec<Vec<u8>>> {
        self.lists.iter().find(|(index, _)| *index == state).map(|(_, list)| list)
    }

    fn list_mut(&mut self, state: u32) -> &mut Vec<Vec<u8>> {
        entry(&mut self.lists, state)
    }

    fn map(&self, state: u32) -> Option<&EncodedMap> {
        self.maps.iter().find(|(index, _)| *index == state).map(|(_, map)| map)
    }

    fn map_mut(&mut self, state: u32) -> &mut EncodedMap {
        entry(&mut self.maps, state)
    }

    fn clear(&mut self, state: u32) {
        self.values.retain(|(index, _)| *index != state);
        self.lists.retain(|(index, _)| *index != state);
        self.maps.retain(|(index, _)| *index != state);
    }
}

/// See the module doc.
///
/// Each key's state lives beside its key in the buckets of one hash table ([`HashTable`]):
/// a lookup reads the table's control bytes and then one entry, with no index in between.
/// Setting the current key looks it up once; the reads and writes that follow address its
/// bucket (a record's read-modify-write is one lookup, not three). Keys and short values are
/// stored inline (no allocation, no pointer to chase for a word and its count). A state's name
/// is resolved to an index among the operator's few states, not compared per access. Keys hash
/// with foldhash's fixed seed (fast, and the same in every process); the buckets' order never
/// leaves this type (a snapshot sorts them).
#[derive(Default)]
pub struct HashMapStateBackend {
    /// The states' names, in the order they were first used.
    names: Vec<String>,
    states: HashTable<(InlineBytes, KeyState)>,
    hasher: FixedState,
    current_key: Option<InlineBytes>,
    /// The current key's hash.
    current_hash: u64,
    /// The current key's bucket in `states`, if it has state. A bucket stays put until the
    /// table grows, which only adding a key does, and that key becomes the current one.
    current_index: Option<usize>,
    /// A reused buffer values are encoded into.
    scratch: Vec<u8>,
}

impl HashMapStateBackend {
    fn key(&self) -> &InlineBytes {
        self.current_key.as_ref().expect("internal: keyed state accessed before a key was set")
    }

    fn state(&self) -> Option<&KeyState> {
        self.key();
        self.current_index.map(|index| &self.bucket(index).1)
    }

    fn bucket(&self, index: usize) -> &(InlineBytes, KeyState) {
        self.states.get_bucket(index).expect("internal: the current key's bucket is occupied")
    }

    fn bucket_mut(&mut self, index: usize) -> &mut (InlineBytes, KeyState) {
        self.states.get_bucket_mut(index).expect("internal: the current key's bucket is occupied")
    }

    /// The index of the state called `name`, if it was ever used.
    fn index_of(&self, name: &str) -> Option<u32> {
        self.names.iter().position(|known| known == name).map(|index| index as u32)
    }

    /// The index of the state called `name`, registered on first use.
    fn register(&mut self, name: &str) -> u32 {
        match self.index_of(name) {
            Some(index) => index,
            None => {
                self.names.push(name.to_string());
                (self.names.len() - 1) as u32
            }
        }
    }

    /// The current key's state, created if absent; the key is copied only when it is new.
    fn current(&mut self) -> &mut KeyState {
        let index = match self.current_index {
            Some(index) => index,
            None => {
                let (key, hasher) = (self.key().clone(), self.hasher);
                let entry = self.states.insert_unique(self.current_hash, (key, KeyState::default()), |(key, _)| {
                    hasher.hash_one(key.as_slice())
                });
                let index = entry.bucket_index();
                self.current_index = Some(index);
                index
            }
        };
        &mut self.bucket_mut(index).1
    }
}

impl KeyedStateBackend for HashMapStateBackend {
    fn set_current_key(&mut self, key: &[u8]) {
        // The key's buffer is reused from record to record.
        match &mut self.current_key {
            Some(current) if current.as_slice() == key => return,
            Some(current) => {
                current.clear();
                current.extend_from_slice(key);
            }
            None => self.current_key = Some(InlineBytes::from_slice(key)),
        }
        self.current_hash = self.hasher.hash_one(key);
        self.current_index = self.states.find_bucket_index(self.current_hash, |(known, _)| known.as_slice() == key);
    }

    fn get(&self, name: &str) -> Option<&[u8]> {
        let (state, index) = (self.state()?, self.index_of(name)?);
        state.value(index).map(|value| value.as_slice())
    }

    fn put(&mut self, name: &str, value: Vec<u8>) {
        self.put_encoded(name, &|out| out.extend_from_slice(&value));
    }

    fn put_encoded(&mut self, name: &str, encode: &dyn Fn(&mut Vec<u8>)) {
        let index = self.register(name);
        // Encoded through a reused buffer: `encode` writes to a `Vec`, the value is inline.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        encode(&mut scratch);
        let value = self.current().value_mut(index);
        value.clear();
        value.extend_from_slice(&scratch);
        self.scratch = scratch;
    }

    fn list_append(&mut self, name: &str, value: Vec<u8>) {
        let index = self.register(name);
        self.current().list_mut(index).push(value);
    }

    fn list(&self, name: &str) -> &[Vec<u8>] {
        let list = self.state().and_then(|state| state.list(self.index_of(name)?));
        list.map_or(&[], Vec::as_slice)
    }

    fn map_get(&self, name: &str, user_key: &[u8]) -> Option<&[u8]> {
        let map = self.state()?.map(self.index_of(name)?)?;
        map.get(user_key).map(Vec::as_slice)
    }

    fn map_put(&mut self, name: &str, user_key: Vec<u8>, value: Vec<u8>) {
        let index = self.register(name);
        self.current().map_mut(index).insert(user_key, value);
    }

    fn map_remove(&mut self, name: &str, user_key: &[u8]) {
        let (Some(index), Some(position)) = (self.index_of(name), self.current_index) else { return };
        let state = &mut self.bucket_mut(position).1;
        let emptied = state.maps.iter_mut().find(|(state, _)| *state == index).is_some_and(|(_, map)| {
            map.remove(user_key);
            map.is_empty()
        });
        if emptied {
            self.clear(name);
        }
    }

    fn map_entries(&self, name: &str) -> Vec<(&[u8], &[u8])> {
        let map = self.state().and_then(|state| state.map(self.index_of(name)?));
        map.into_iter().flatten().map(|(key, value)| (key.as_slice(), value.as_slice())).collect()
    }

    fn clear(&mut self, name: &str) {
        let (Some(index), Some(position)) = (self.index_of(name), self.current_index) else { return };
        let state = &mut self.bucket_mut(position).1;
        state.clear(index);
        if state.is_empty() {
            let Ok(entry) = self.states.get_bucket_entry(position) else {
                panic!("internal: the current key's bucket is occupied")
            };
            entry.remove();
            self.current_index = None;
        }
    }

    fn key_count(&self) -> usize {
        self.states.len()
    }

    fn snapshot(&self) -> Vec<u8> {
        let mut keys: Vec<(&[u8], &KeyState)> =
            self.states.iter().map(|(key, state)| (key.as_slice(), state)).collect();
        keys.sort_unstable_by_key(|(key, _)| *key);
        let named = |index: u32| self.names[index as usize].clone();
        let entries: Vec<SnapshotEntry> = keys
            .into_iter()
            .map(|(key, state)| {
                // By name, as the format has always listed them.
                let values: BTreeMap<String, Vec<u8>> =
                    state.values.iter().map(|(index, value)| (named(*index), value.to_vec())).collect();
                let lists: BTreeMap<String, Vec<Vec<u8>>> =
                    state.lists.iter().map(|(index, list)| (named(*index), list.clone())).collect();
                let maps: BTreeMap<String, Vec<EncodedEntry>> = state
                    .maps
                    .iter()
                    .map(|(index, map)| (named(*index), map.iter().map(|(k, v)| (k.clone(), v.clone())).collect()))
                    .collect();
                (key.to_vec(), values.into_iter().collect(), lists.into_iter().collect(), maps.into_iter().collect())
            })
            .collect();
        entries.to_bytes()
    }

    fn restore(&mut self, snapshot: &[u8]) -> Result<(), DecodeError> {
        let entries = Vec::<SnapshotEntry>::from_bytes(snapshot)?;
        let mut restored = HashMapStateBackend::default();
        for (key, values, lists, maps) in entries {
            restored.set_current_key(&key);
            for (name, value) in values {
                let index = restored.register(&name);
                restored.current().value_mut(index).extend_from_slice(&value);
            }
            for (name, list) in lists {
                let index = restored.register(&name);
                *restored.current().list_mut(index) = list;
            }
            for (name, map) in maps {
                let index = restored.register(&name);
                *restored.current().map_mut(index) = map.into_iter().collect();
            }
        }
        restored.current_key = None;
        restored.current_index = None;
        *self = restored;
        Ok(())
    }
}

/// One key's state in a snapshot: the key, its values, its lists and its maps (entries in the
/// byte order of their keys), by name.
pub(super) type SnapshotEntry =
    (Vec<u8>, Vec<(String, Vec<u8>)>, Vec<(String, Vec<Vec<u8>>)>, Vec<(String, Vec<EncodedEntry>)>);

/// A map state's entry in a snapshot: its encoded key and value.
type EncodedEntry = (Vec<u8>, Vec<u8>);
