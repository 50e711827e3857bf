//! [`MemoryStorage`]: an in-memory disk with pending and synced bytes, and its faults.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use super::{ImmediateStorage, StorageError};

#[derive(Default)]
struct File {
    bytes: Vec<u8>,
    synced: usize,
    /// When the file was last appended to, in write order: the newest file has the highest.
    written: u64,
}

#[derive(Default)]
struct Disk {
    files: BTreeMap<String, File>,
    writes: u64,
}

/// An in-memory [`Storage`]; a clone shares the disk.
#[derive(Clone, Default)]
pub struct MemoryStorage {
    disk: Arc<Mutex<Disk>>,
}

impl MemoryStorage {
    /// An empty disk.
    pub fn new() -> MemoryStorage {
        MemoryStorage::default()
    }

    fn disk(&self) -> std::sync::MutexGuard<'_, Disk> {
        self.disk.lock().expect("storage lock")
    }

    /// A power failure: every file loses its unsynced bytes; files never synced disappear.
    pub fn crash(&self) {
        let mut disk = self.disk();
        disk.files.retain(|_, file| file.synced > 0);
        for (path, file) in disk.files.iter_mut() {
            assert!(
                file.synced <= file.bytes.len(),
                "storage invariant: a file's synced bytes are a prefix of its bytes (`{path}`)"
            );
            file.bytes.truncate(file.synced);
        }
    }

    /// The disk is gone: every file, synced or not.
    pub fn wipe(&self) {
        self.disk().files.clear();
    }

    /// One file is gone; returns whether it existed.
    pub fn lose(&self, path: &str) -> bool {
        self.disk().files.remove(path).is_some()
    }

    /// Flips every bit of the byte at `offset` of a file; returns whether there was one.
    pub fn corrupt(&self, path: &str, offset: u64) -> bool {
        let mut disk = self.disk();
        match disk.files.get_mut(path).and_then(|file| file.bytes.get_mut(offset as usize)) {
            Some(byte) => {
                *byte = !*byte;
                true
            }
            None => false,
        }
    }

    /// The most recently written file with a path starting with `prefix`.
    pub fn newest(&self, prefix: &str) -> Option<String> {
        let disk = self.disk();
        disk.files
            .iter()
            .filter(|(path, _)| path.starts_with(prefix))
            .max_by_key(|(_, file)| file.written)
            .map(|(path, _)| path.clone())
    }

    /// When a file was last appended to, as a position in the disk's write order (higher is
    /// newer); `None` if there is no such file.
    pub fn write_order(&self, path: &str) -> Option<u64> {
        self.disk().files.get(path).map(|file| file.written)
    }

    /// Paths starting with `prefix`, sorted (without going through the asynchronous trait).
    pub fn paths(&self, prefix: &str) -> Vec<String> {
        self.disk()
            .files
            .range(prefix.to_string()..)
            .map(|(path, _)| path)
            .take_while(|path| path.starts_with(prefix))
            .cloned()
            .collect()
    }

    /// A file's length, pending bytes included (0 if there is no such file).
    pub fn used_bytes_of(&self, path: &str) -> u64 {
        self.disk().files.get(path).map_or(0, |file| file.bytes.len() as u64)
    }

    /// Total bytes stored, pending included.
    pub fn used_bytes(&self) -> u64 {
        self.disk().files.values().map(|file| file.bytes.len() as u64).sum()
    }
}

impl ImmediateStorage for MemoryStorage {
    fn append_now(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let mut disk = self.disk();
        disk.writes += 1;
        let written = disk.writes;
        let file = disk.files.entry(path.to_string()).or_default();
        assert!(file.written < written, "storage invariant: the disk's write order only grows (`{path}`)");
        file.bytes.extend_from_slice(bytes);
        file.written = written;
        Ok(())
    }

    fn sync_now(&self, path: &str) -> Result<(), StorageError> {
        let mut disk = self.disk();
        let file = disk.files.get_mut(path).ok_or_else(|| StorageError::NotFound(path.to_string()))?;
        assert!(
            file.synced <= file.bytes.len(),
            "storage invariant: a file's synced bytes are a prefix of its bytes (`{path}`)"
        );
        file.synced = file.bytes.len();
        Ok(())
    }

    fn read_now(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, StorageError> {
        let disk = self.disk();
        let file = disk.files.get(path).ok_or_else(|| StorageError::NotFound(path.to_string()))?;
        let end = offset.checked_add(length).filter(|end| *end <= file.bytes.len() as u64);
        match end {
            Some(end) => Ok(file.bytes[offset as usize..end as usize].to_vec()),
            None => Err(StorageError::OutOfRange { path: path.to_string(), length: file.bytes.len() as u64 }),
        }
    }

    fn rename_now(&self, from: &str, to: &str) -> Result<(), StorageError> {
        let mut disk = self.disk();
        if disk.files.contains_key(to) {
            return Err(StorageError::AlreadyExists(to.to_string()));
        }
        let file = disk.files.remove(from).ok_or_else(|| StorageError::NotFound(from.to_string()))?;
        let replaced = disk.files.insert(to.to_string(), file);
        assert!(replaced.is_none(), "storage invariant: a rename never replaces a file (`{from}` to `{to}`)");
        Ok(())
    }

    fn synced_length_now(&self, path: &str) -> Option<u64> {
        Some(self.disk().files.get(path).map_or(0, |file| file.synced as u64))
    }

    fn length_now(&self, path: &str) -> Result<u64, StorageError> {
        self.disk()
            .files
            .get(path)
            .map(|file| file.bytes.len() as u64)
            .ok_or_else(|| StorageError::NotFound(path.to_string()))
    }

    fn delete_now(&self, path: &str) -> Result<(), StorageError> {
        self.lose(path);
        Ok(())
    }

    fn list_now(&self, prefix: &str) -> Result<Vec<String>, StorageError> {
        Ok(self.paths(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::future::BoxFuture;
    use crate::storage::Storage;

    fn now<T>(future: BoxFuture<'_, T>) -> T {
        // MemoryStorage's futures are ready at once.
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let mut future = future;
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(value) => value,
            std::task::Poll::Pending => panic!("MemoryStorage never waits"),
        }
    }

    #[test]
    fn crash_drops_pending_bytes_and_never_synced_files_but_keeps_synced_ones() {
        let disk = MemoryStorage::new();
        now(disk.append("a", b"durable")).unwrap();
        now(disk.sync("a")).unwrap();
        now(disk.append("a", b"-lost")).unwrap();
        now(disk.append("b", b"never synced")).unwrap();
        assert_eq!(now(disk.read("a", 0, 12)).unwrap(), b"durable-lost");
        disk.crash();
        assert_eq!(now(disk.length("a")).unwrap(), 7);
        assert_eq!(now(disk.read("a", 0, 7)).unwrap(), b"durable");
        assert_eq!(now(disk.length("b")), Err(StorageError::NotFound("b".to_string())));
    }

    #[test]
    fn a_sync_through_bytes_a_crash_lost_says_so_where_a_plain_sync_would_not() {
        let disk = MemoryStorage::new();
        now(disk.append("a", b"durable")).unwrap();
        now(disk.sync_through("a", 7)).unwrap();
        now(disk.append_at("a", 7, b"-lost")).unwrap();
        disk.crash();
        assert_eq!(now(disk.sync("a")), Ok(()), "a plain sync makes the shorter file durable");
        let refused = now(disk.sync_through("a", 12)).unwrap_err();
        assert_eq!(refused, StorageError::LengthChanged { path: "a".to_string(), expected: 12, length: 7 });
        now(disk.append_at("a", 7, b"-again")).unwrap();
        now(disk.sync_through("a", 13)).unwrap();
        assert_eq!(now(disk.read("a", 0, 13)).unwrap(), b"durable-again");
    }

    struct Always(crate::buggify::FaultPoint);

    impl crate::buggify::FaultPolicy for Always {
        fn fires(&self, point: crate::buggify::FaultPoint) -> bool {
            point == self.0
        }
    }

    #[test]
    fn a_failed_sync_says_so_and_leaves_the_bytes_pending() {
        let disk = MemoryStorage::new();
        now(disk.append("a", b"durable")).unwrap();
        now(disk.sync("a")).unwrap();
        now(disk.append("a", b"-pending")).unwrap();
        {
            let _installed = crate::buggify::install(std::rc::Rc::new(Always(crate::buggify::FaultPoint::SyncFails)));
            assert_eq!(now(disk.sync("a")), Err(StorageError::SyncFailed("a".to_string())));
            assert_eq!(now(disk.sync("none")), Err(StorageError::NotFound("none".to_string())), "still NotFound");
        }
        disk.crash();
        assert_eq!(now(disk.read("a", 0, 7)).unwrap(), b"durable");
        assert_eq!(now(disk.length("a")).unwrap(), 7, "the bytes of the failed sync were pending");
    }

    #[test]
    fn an_append_at_a_known_length_refuses_a_file_lost_while_being_written() {
        let disk = MemoryStorage::new();
        let append_at = |expected, bytes: &'static [u8]| now(disk.append_at("d", expected, bytes));
        append_at(0, b"abc").unwrap();
        append_at(3, b"de").unwrap();
        assert!(disk.lose("d"));
        let refused = append_at(5, b"f").unwrap_err();
        assert_eq!(refused, StorageError::LengthChanged { path: "d".to_string(), expected: 5, length: 0 });
        assert!(refused.to_string().contains("lost or cut while being written"), "{refused}");
        assert_eq!(now(disk.length("d")), Err(StorageError::NotFound("d".to_string())), "nothing appended afresh");
    }

    #[test]
    fn reads_check_ranges_and_listings_are_sorted() {
        let disk = MemoryStorage::new();
        now(disk.append("p/2", b"x")).unwrap();
        now(disk.append("p/1", b"y")).unwrap();
        now(disk.append("q/1", b"z")).unwrap();
        assert_eq!(now(disk.list("p/")).unwrap(), vec!["p/1".to_string(), "p/2".to_string()]);
        assert!(matches!(now(disk.read("p/1", 0, 2)), Err(StorageError::OutOfRange { .. })));
        now(disk.delete("p/1")).unwrap();
        assert_eq!(disk.paths("p/"), vec!["p/2".to_string()]);
    }

    #[test]
    fn faults_lose_and_corrupt_and_the_newest_file_is_known() {
        let disk = MemoryStorage::new();
        now(disk.append("a", b"1")).unwrap();
        now(disk.append("b", b"2")).unwrap();
        now(disk.append("a", b"3")).unwrap();
        assert_eq!(disk.newest(""), Some("a".to_string()));
        assert!(disk.corrupt("b", 0));
        assert_ne!(now(disk.read("b", 0, 1)).unwrap(), b"2");
        assert!(!disk.corrupt("b", 9));
        assert!(disk.lose("a"));
        assert_eq!(disk.newest(""), Some("b".to_string()));
        disk.wipe();
        assert!(disk.paths("").is_empty());
    }

    #[test]
    fn the_disk_says_how_much_of_a_file_is_synced_and_the_invariant_holds_acks_to_it() {
        let disk = MemoryStorage::new();
        assert_eq!(disk.synced_length("log"), Some(0), "a missing file has nothing synced");
        now(disk.append("log", b"first ")).unwrap();
        now(disk.sync("log")).unwrap();
        now(disk.append("log", b"second")).unwrap();
        assert_eq!(disk.synced_length("log"), Some(6));
        crate::storage::check_synced(disk.synced_length("log"), "log", 6, "the first record was acknowledged");
        let unsynced = std::panic::catch_unwind(|| {
            crate::storage::check_synced(disk.synced_length("log"), "log", 12, "both records were acknowledged");
        });
        let message = *unsynced.expect_err("an ack past the synced bytes panics").downcast::<String>().unwrap();
        assert!(message.contains("both records were acknowledged, so `log` is synced through byte 12"), "{message}");
        crate::storage::check_synced(None, "log", 12, "a storage that cannot tell is not checked");
    }

    #[test]
    fn a_rename_applies_once_and_moves_synced_and_pending_bytes_as_they_are() {
        let disk = MemoryStorage::new();
        now(disk.append("pending", b"synced")).unwrap();
        now(disk.sync("pending")).unwrap();
        now(disk.append("pending", b"+pending")).unwrap();
        now(disk.rename("pending", "committed")).unwrap();
        assert_eq!(now(disk.rename("pending", "committed")), Err(StorageError::AlreadyExists("committed".into())));
        assert_eq!(now(disk.rename("pending", "other")), Err(StorageError::NotFound("pending".into())));
        disk.crash();
        assert_eq!(disk.paths(""), vec!["committed".to_string()]);
        assert_eq!(now(disk.read("committed", 0, 6)).unwrap(), b"synced");
        assert_eq!(now(disk.length("committed")).unwrap(), 6);
    }
}
