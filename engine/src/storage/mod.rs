//! The engine's storage trait: files with pending and synced bytes.
//!
//! `madsim::fs` never loses data, so the engine writes through [`Storage`] instead: written bytes
//! stay *pending* until [`Storage::sync`], and a crash loses everything pending
//! ([`MemoryStorage::crash`]). Blocking shuffle partitions live here now; checkpoints and the
//! operation log will too. The simulation hands each TaskManager its own storage, which
//! outlives the process (it is the machine's disk) unless a fault says otherwise.
//!
//! Depends on: nothing. Invariants: a read returns synced and pending bytes alike (the page
//! cache), only [`Storage::sync`] makes bytes survive a crash, and listings are sorted.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Mutex};

/// Why a storage operation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageError {
    /// No such file.
    NotFound(String),
    /// The requested range lies beyond the end of the file.
    OutOfRange {
        /// The file.
        path: String,
        /// Its length.
        length: u64,
    },
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::NotFound(path) => write!(f, "no file `{path}`"),
            StorageError::OutOfRange { path, length } => write!(f, "read beyond the end of `{path}` ({length} bytes)"),
        }
    }
}

impl std::error::Error for StorageError {}

/// A flat namespace of append-only files; see the module doc.
pub trait Storage: Send + Sync {
    /// Appends to a file, creating it if needed; the bytes are pending until synced.
    fn append(&self, path: &str, bytes: &[u8]);
    /// Makes everything written to the file so far survive a crash.
    fn sync(&self, path: &str) -> Result<(), StorageError>;
    /// Reads `length` bytes at `offset`.
    fn read(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, StorageError>;
    /// The file's length, pending bytes included.
    fn length(&self, path: &str) -> Result<u64, StorageError>;
    /// Removes a file (no-op if absent).
    fn delete(&self, path: &str);
    /// Paths starting with `prefix`, sorted.
    fn list(&self, prefix: &str) -> Vec<String>;
}

#[derive(Default)]
struct File {
    bytes: Vec<u8>,
    synced: usize,
}

/// An in-memory [`Storage`] that models the pending/synced distinction; a clone shares the disk.
#[derive(Clone, Default)]
pub struct MemoryStorage {
    files: Arc<Mutex<BTreeMap<String, File>>>,
}

impl MemoryStorage {
    /// An empty disk.
    pub fn new() -> MemoryStorage {
        MemoryStorage::default()
    }

    /// A power failure: every file loses its unsynced bytes; files never synced disappear.
    pub fn crash(&self) {
        let mut files = self.files.lock().expect("storage lock");
        files.retain(|_, file| file.synced > 0);
        for file in files.values_mut() {
            file.bytes.truncate(file.synced);
        }
    }

    /// Total bytes stored, pending included.
    pub fn used_bytes(&self) -> u64 {
        self.files.lock().expect("storage lock").values().map(|file| file.bytes.len() as u64).sum()
    }
}

impl Storage for MemoryStorage {
    fn append(&self, path: &str, bytes: &[u8]) {
        self.files.lock().expect("storage lock").entry(path.to_string()).or_default().bytes.extend_from_slice(bytes);
    }

    fn sync(&self, path: &str) -> Result<(), StorageError> {
        let mut files = self.files.lock().expect("storage lock");
        let file = files.get_mut(path).ok_or_else(|| StorageError::NotFound(path.to_string()))?;
        file.synced = file.bytes.len();
        Ok(())
    }

    fn read(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, StorageError> {
        let files = self.files.lock().expect("storage lock");
        let file = files.get(path).ok_or_else(|| StorageError::NotFound(path.to_string()))?;
        let end = offset.checked_add(length).filter(|end| *end <= file.bytes.len() as u64);
        match end {
            Some(end) => Ok(file.bytes[offset as usize..end as usize].to_vec()),
            None => Err(StorageError::OutOfRange { path: path.to_string(), length: file.bytes.len() as u64 }),
        }
    }

    fn length(&self, path: &str) -> Result<u64, StorageError> {
        let files = self.files.lock().expect("storage lock");
        files.get(path).map(|file| file.bytes.len() as u64).ok_or_else(|| StorageError::NotFound(path.to_string()))
    }

    fn delete(&self, path: &str) {
        self.files.lock().expect("storage lock").remove(path);
    }

    fn list(&self, prefix: &str) -> Vec<String> {
        let files = self.files.lock().expect("storage lock");
        files
            .range(prefix.to_string()..)
            .map(|(path, _)| path)
            .take_while(|path| path.starts_with(prefix))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_drops_pending_bytes_and_never_synced_files() {
        let disk = MemoryStorage::new();
        disk.append("a", b"durable");
        disk.sync("a").unwrap();
        disk.append("a", b"-lost");
        disk.append("b", b"never synced");
        assert_eq!(disk.read("a", 0, 12).unwrap(), b"durable-lost");
        disk.crash();
        assert_eq!(disk.length("a").unwrap(), 7);
        assert_eq!(disk.read("a", 0, 7).unwrap(), b"durable");
        assert_eq!(disk.length("b"), Err(StorageError::NotFound("b".to_string())));
    }

    #[test]
    fn reads_check_ranges_and_listings_are_sorted() {
        let disk = MemoryStorage::new();
        disk.append("p/2", b"x");
        disk.append("p/1", b"y");
        disk.append("q/1", b"z");
        assert_eq!(disk.list("p/"), vec!["p/1".to_string(), "p/2".to_string()]);
        assert!(matches!(disk.read("p/1", 0, 2), Err(StorageError::OutOfRange { .. })));
        disk.delete("p/1");
        assert_eq!(disk.list("p/"), vec!["p/2".to_string()]);
    }
}
