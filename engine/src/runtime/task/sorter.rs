//! [`KeyedInputSorter`]: batch mode's keyed input sorted by key, input and timestamp within a
//! memory budget (Flink's `SortingDataInput` over its managed memory).
//!
//! Records stay encoded: each is kept as its key's bytes and its own bytes in one arena, with a
//! small entry saying where. Once the arena and the entries reach the budget they are sorted
//! and spilled to the TaskManager's disk as a run (`spills/…/run-N`, checksummed frames, so
//! that a damaged run fails the task rather than feeding it other records); at the end of input the
//! runs and what is left in memory are merged. The order is Flink's, by key bytes, then input,
//! then timestamp, and then, where Flink keeps arrival order, by the record's own bytes: the
//! order is a function of the records alone, never of how their channels interleaved, so a
//! subtask that runs again after a failover emits what it emitted before in the same order (a
//! round-robin exchange after it, or a sink whose end-of-input transaction was already
//! committed, relies on that). Records equal in all four are identical; spilling never changes
//! what a task computes.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use crate::prng::fnv1a64;
use crate::storage::{Storage, StorageError, framed};
use crate::time::Timestamp;

/// Bytes of records and entries a task's sorter holds before it spills a run (its vectors may
/// hold up to twice that while they grow).
pub const SORT_BUDGET_BYTES: usize = 32 * 1024 * 1024;

/// The budget when the fault point `input-sort-spills-early` fires: a few records per run.
pub const BUGGIFIED_SORT_BUDGET_BYTES: usize = 4 * 1024;

/// A run is written as checksummed frames of whole entries, about this large, and read back a
/// frame at a time (damage reads as an error, never as other records).
const FRAME_BYTES: usize = 1024 * 1024;

/// Where one record is in the arena, and what it sorts by besides its key.
#[derive(Clone, Copy, Debug)]
struct Entry {
    offset: usize,
    key_length: u32,
    record_length: u32,
    input: u32,
    timestamp: Option<Timestamp>,
}

/// One sorted record: its input, timestamp and encoded bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SortedRecord {
    /// The head's input it arrived on.
    pub input: u32,
    /// Its event timestamp.
    pub timestamp: Option<Timestamp>,
    /// Its encoded bytes.
    pub record: Vec<u8>,
}

/// See the module doc.
pub struct KeyedInputSorter {
    arena: Vec<u8>,
    entries: Vec<Entry>,
    budget: usize,
    storage: Arc<dyn Storage>,
    spill_prefix: String,
    runs: Vec<String>,
}

impl KeyedInputSorter {
    /// A sorter spilling to `storage` under `spill_prefix` once it holds `budget` bytes.
    pub fn new(storage: Arc<dyn Storage>, spill_prefix: String, budget: usize) -> KeyedInputSorter {
        KeyedInputSorter { arena: Vec::new(), entries: Vec::new(), budget, storage, spill_prefix, runs: Vec::new() }
    }

    /// Bytes of records and entries held in memory.
    pub fn held_bytes(&self) -> usize {
        self.arena.len() + self.entries.len() * std::mem::size_of::<Entry>()
    }

    /// Adds one record; may spill a run.
    pub async fn add(
        &mut self,
        key: &[u8],
        input: u32,
        timestamp: Option<Timestamp>,
        record: &[u8],
    ) -> Result<(), SpillError> {
        let length = |bytes: &[u8]| u32::try_from(bytes.len()).expect("internal: a record is under 4 GiB");
        self.entries.push(Entry {
            offset: self.arena.len(),
            key_length: length(key),
            record_length: length(record),
            input,
            timestamp,
        });
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(record);
        if self.held_bytes() >= self.budget {
            crate::cover!(InputSortSpilled);
            self.spill().await?;
        }
        Ok(())
    }

    fn key(&self, entry: &Entry) -> &[u8] {
        &self.arena[entry.offset..entry.offset + entry.key_length as usize]
    }

    fn record(&self, entry: &Entry) -> &[u8] {
        let start = entry.offset + entry.key_length as usize;
        &self.arena[start..start + entry.record_length as usize]
    }

    fn sort(&mut self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_by(|left, right| {
            self.key(left)
                .cmp(self.key(right))
                .then(left.input.cmp(&right.input))
                .then(left.timestamp.cmp(&right.timestamp))
                .then_with(|| self.record(left).cmp(self.record(right)))
        });
        self.entries = entries;
    }

    async fn spill(&mut self) -> Result<(), SpillError> {
        self.sort();
        let path = format!("{}/run-{}", self.spill_prefix, self.runs.len());
        let mut bytes = Vec::with_capacity(self.arena.len() + self.entries.len() * 21);
        for entry in &self.entries {
            let key = self.key(entry);
            encode_entry(&mut bytes, key, entry, self.record(entry));
            if bytes.len() >= FRAME_BYTES {
                self.storage.append(&path, &framed::frame(&bytes)).await?;
                bytes.clear();
            }
        }
        if !bytes.is_empty() {
            self.storage.append(&path, &framed::frame(&bytes)).await?;
        }
        self.runs.push(path);
        self.entries.clear();
        self.arena.clear();
        Ok(())
    }

    /// Every record added, in order: from memory if nothing was spilled, else merged from the
    /// runs (what is left in memory spilled as the last one).
    pub async fn finish(mut self) -> Result<SortedRecords, SpillError> {
        if self.runs.is_empty() {
            self.sort();
            return Ok(SortedRecords::Memory { sorter: self, next: 0 });
        }
        if !self.entries.is_empty() {
            self.spill().await?;
        }
        let mut readers = Vec::with_capacity(self.runs.len());
        let mut heads = BinaryHeap::new();
        for (run, path) in self.runs.iter().enumerate() {
            let mut reader = RunReader::open(&*self.storage, path).await?;
            if let Some(head) = reader.next(&*self.storage).await? {
                heads.push(Head { record: head, run });
            }
            readers.push(reader);
        }
        Ok(SortedRecords::Merge { storage: Arc::clone(&self.storage), readers, heads })
    }
}

/// The sorted records, one at a time; see [`KeyedInputSorter::finish`]. Spilled runs are
/// deleted once read to their end.
pub enum SortedRecords {
    /// Nothing was spilled.
    Memory {
        /// The sorted arena.
        sorter: KeyedInputSorter,
        /// The next entry.
        next: usize,
    },
    /// A merge of spilled runs.
    Merge {
        /// Where the runs are.
        storage: Arc<dyn Storage>,
        /// One per run.
        readers: Vec<RunReader>,
        /// Each unfinished run's next record.
        heads: BinaryHeap<Head>,
    },
}

impl SortedRecords {
    /// The next record, `None` after the last.
    pub async fn next(&mut self) -> Result<Option<SortedRecord>, SpillError> {
        match self {
            SortedRecords::Memory { sorter, next } => {
                let Some(entry) = sorter.entries.get(*next) else { return Ok(None) };
                *next += 1;
                let start = entry.offset + entry.key_length as usize;
                let record = sorter.arena[start..start + entry.record_length as usize].to_vec();
                Ok(Some(SortedRecord { input: entry.input, timestamp: entry.timestamp, record }))
            }
            SortedRecords::Merge { storage, readers, heads } => {
                let Some(Head { record: (_, sorted), run }) = heads.pop() else { return Ok(None) };
                match readers[run].next(&**storage).await? {
                    Some(next) => heads.push(Head { record: next, run }),
                    // Best effort: a restarted TaskManager deletes `spills/`.
                    None => {
                        let _ = storage.delete(&readers[run].path).await;
                    }
                }
                Ok(Some(sorted))
            }
        }
    }
}

/// `[key length u32][record length u32][input u32][timestamp flag u8][timestamp i64?][key][record]`.
fn encode_entry(out: &mut Vec<u8>, key: &[u8], entry: &Entry, record: &[u8]) {
    out.extend_from_slice(&entry.key_length.to_be_bytes());
    out.extend_from_slice(&entry.record_length.to_be_bytes());
    out.extend_from_slice(&entry.input.to_be_bytes());
    match entry.timestamp {
        Some(timestamp) => {
            out.push(1);
            out.extend_from_slice(&timestamp.to_be_bytes());
        }
        None => out.push(0),
    }
    out.extend_from_slice(key);
    out.extend_from_slice(record);
}

/// A run's next record in the merge: ordered so that the heap (a max-heap) pops the smallest
/// key, input, timestamp and record bytes first, and of identical ones the earliest run's.
pub struct Head {
    record: (Vec<u8>, SortedRecord),
    run: usize,
}

impl Head {
    fn order(&self, other: &Head) -> Ordering {
        let (key, record) = &self.record;
        let (other_key, other_record) = &other.record;
        key.cmp(other_key)
            .then(record.input.cmp(&other_record.input))
            .then(record.timestamp.cmp(&other_record.timestamp))
            .then_with(|| record.record.cmp(&other_record.record))
            .then(self.run.cmp(&other.run))
    }
}

impl PartialEq for Head {
    fn eq(&self, other: &Head) -> bool {
        self.order(other) == Ordering::Equal
    }
}

impl Eq for Head {}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Head) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Head {
    fn cmp(&self, other: &Head) -> Ordering {
        self.order(other).reverse()
    }
}

/// Reads a spilled run's entries a frame at a time.
pub struct RunReader {
    path: String,
    length: u64,
    /// Where the next frame starts.
    offset: u64,
    /// The current frame's entries.
    frame: Vec<u8>,
    position: usize,
}

/// Why the sorter could not spill or read back a run: the disk failed, or a run is damaged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillError(pub String);

impl From<StorageError> for SpillError {
    fn from(error: StorageError) -> SpillError {
        SpillError(error.to_string())
    }
}

impl std::fmt::Display for SpillError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl RunReader {
    async fn open(storage: &dyn Storage, path: &str) -> Result<RunReader, SpillError> {
        let length = storage.length(path).await?;
        Ok(RunReader { path: path.to_string(), length, offset: 0, frame: Vec::new(), position: 0 })
    }

    /// Reads the next frame, checking its checksum; false at the end of the run.
    async fn next_frame(&mut self, storage: &dyn Storage) -> Result<bool, SpillError> {
        if self.offset >= self.length {
            return Ok(false);
        }
        let corrupt = |detail: &str| SpillError(format!("spilled run `{}` is damaged: {detail}", self.path));
        if self.length - self.offset < 12 {
            return Err(corrupt("a frame header is cut short"));
        }
        let header = storage.read(&self.path, self.offset, 12).await?;
        let length = u64::from(u32::from_be_bytes(header[..4].try_into().expect("4 bytes")));
        let checksum = u64::from_be_bytes(header[4..12].try_into().expect("8 bytes"));
        if self.length - self.offset - 12 < length {
            return Err(corrupt("a frame is cut short"));
        }
        self.frame = storage.read(&self.path, self.offset + 12, length).await?;
        if fnv1a64(&self.frame) != checksum {
            return Err(corrupt("a frame fails its checksum"));
        }
        self.offset += 12 + length;
        self.position = 0;
        Ok(true)
    }

    fn take(&mut self, count: usize) -> Result<&[u8], SpillError> {
        let bytes = self.frame.get(self.position..self.position + count).ok_or_else(|| {
            SpillError(format!("spilled run `{}` is damaged: a record runs past its frame", self.path))
        })?;
        self.position += count;
        Ok(bytes)
    }

    async fn next(&mut self, storage: &dyn Storage) -> Result<Option<(Vec<u8>, SortedRecord)>, SpillError> {
        if self.position >= self.frame.len() && !self.next_frame(storage).await? {
            return Ok(None);
        }
        let word = |bytes: &[u8]| u32::from_be_bytes(bytes.try_into().expect("4 bytes"));
        let header = self.take(13)?;
        let (key_length, record_length, input) = (word(&header[..4]), word(&header[4..8]), word(&header[8..12]));
        let timestamp = match header[12] {
            0 => None,
            _ => Some(Timestamp::from_be_bytes(self.take(8)?.try_into().expect("8 bytes"))),
        };
        let key = self.take(key_length as usize)?.to_vec();
        let record = self.take(record_length as usize)?.to_vec();
        Ok(Some((key, SortedRecord { input, timestamp, record })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::MemoryStorage;

    fn now<T>(future: impl std::future::Future<Output = T>) -> T {
        let mut future = std::pin::pin!(future);
        let mut context = std::task::Context::from_waker(std::task::Waker::noop());
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("a MemoryStorage call waited"),
        }
    }

    /// A key, an input, a timestamp, the record.
    type Added = (Vec<u8>, u32, Option<Timestamp>, Vec<u8>);

    /// Records with few keys, two inputs, timestamps and duplicates, in a scrambled order.
    fn records() -> Vec<Added> {
        (0..2_000u64)
            .map(|index| {
                let scrambled = index.wrapping_mul(2_654_435_761) % 1_000;
                let key = format!("k{}", scrambled % 37).into_bytes();
                let timestamp = (index % 3 != 0).then_some((scrambled % 5) as Timestamp);
                (key, (index % 2) as u32, timestamp, index.to_be_bytes().to_vec())
            })
            .collect()
    }

    fn sorted_with_budget(budget: usize, storage: &MemoryStorage) -> (Vec<SortedRecord>, usize) {
        let mut sorter = KeyedInputSorter::new(Arc::new(storage.clone()), "spills/j/t".to_string(), budget);
        for (key, input, timestamp, record) in records() {
            now(sorter.add(&key, input, timestamp, &record)).unwrap();
        }
        let runs = sorter.runs.len();
        let mut sorted = now(sorter.finish()).unwrap();
        let mut out = Vec::new();
        while let Some(record) = now(sorted.next()).unwrap() {
            out.push(record);
        }
        (out, runs)
    }

    #[test]
    fn spilling_runs_and_merging_them_gives_the_in_memory_order() {
        let mut expected = records();
        expected.sort_by(|left, right| (&left.0, left.1, left.2, &left.3).cmp(&(&right.0, right.1, right.2, &right.3)));
        let expected: Vec<SortedRecord> = expected
            .into_iter()
            .map(|(_, input, timestamp, record)| SortedRecord { input, timestamp, record })
            .collect();
        let storage = MemoryStorage::new();
        let (in_memory, runs) = sorted_with_budget(usize::MAX, &storage);
        assert_eq!((in_memory.len(), runs), (2_000, 0));
        assert_eq!(in_memory, expected);
        for budget in [1, 4_096, 50_000] {
            let (spilled, runs) = sorted_with_budget(budget, &storage);
            assert!(runs > 1, "a budget of {budget} bytes spills");
            assert_eq!(spilled, expected, "a budget of {budget} bytes");
            assert!(storage.paths("spills/").is_empty(), "spilled runs are deleted once merged");
        }
    }

    #[test]
    fn the_order_is_the_same_whatever_order_the_records_arrived_in() {
        // Records equal in key, input and timestamp but not in value, as two channels deliver
        // them in a different interleaving on each attempt.
        let records: Vec<Added> =
            (0..200u64).map(|value| (b"k".to_vec(), 0, Some(7), value.to_be_bytes().to_vec())).collect();
        let sorted = |records: &[Added]| {
            let storage = MemoryStorage::new();
            let mut sorter = KeyedInputSorter::new(Arc::new(storage.clone()), "spills/j/t".to_string(), 512);
            for (key, input, timestamp, record) in records {
                now(sorter.add(key, *input, *timestamp, record)).unwrap();
            }
            let mut sorted = now(sorter.finish()).unwrap();
            let mut out = Vec::new();
            while let Some(record) = now(sorted.next()).unwrap() {
                out.push(record.record);
            }
            out
        };
        let reversed: Vec<Added> = records.iter().rev().cloned().collect();
        let forward = sorted(&records);
        assert_eq!(forward.len(), 200);
        assert_eq!(forward, sorted(&reversed), "the order must not depend on arrival");
    }

    #[test]
    fn a_damaged_or_cut_run_is_an_error_never_other_records() {
        let storage = MemoryStorage::new();
        let spill = |storage: &MemoryStorage| {
            let mut sorter = KeyedInputSorter::new(Arc::new(storage.clone()), "spills/j/t".to_string(), 10_000);
            for (key, input, timestamp, record) in records() {
                now(sorter.add(&key, input, timestamp, &record)).unwrap();
            }
            sorter
        };
        let drain = |sorter: KeyedInputSorter| -> Result<usize, SpillError> {
            let mut sorted = now(sorter.finish())?;
            let mut count = 0;
            while now(sorted.next())?.is_some() {
                count += 1;
            }
            Ok(count)
        };
        let sorter = spill(&storage);
        assert!(storage.corrupt("spills/j/t/run-1", 40));
        let error = drain(sorter).expect_err("a flipped byte is found");
        assert!(error.0.contains("run-1` is damaged: a frame fails its checksum"), "{error}");
        storage.wipe();
        let sorter = spill(&storage);
        let length = storage.used_bytes_of("spills/j/t/run-0");
        let cut = now(storage.read("spills/j/t/run-0", 0, length - 1)).unwrap();
        assert!(storage.lose("spills/j/t/run-0"));
        now(storage.append("spills/j/t/run-0", &cut)).unwrap();
        let error = drain(sorter).expect_err("a cut run is found");
        assert!(error.0.contains("run-0` is damaged: a frame is cut short"), "{error}");
    }
}
