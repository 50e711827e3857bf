//! The engine's storage trait: files with pending and synced bytes, that can be lost.
//!
//! `madsim::fs` never loses data, so the engine writes through [`Storage`] instead. Written bytes
//! stay *pending* until [`Storage::sync`]; a crash loses everything pending. Blocking shuffle
//! partitions live on a TaskManager's storage, the remote shuffle service's on its own, and the
//! JobMaster's durable metadata (and, later, checkpoints) on the durable store. The trait is
//! asynchronous because a storage may be a remote service that can be unavailable.
//!
//! [`MemoryStorage`] models a disk for the simulation and carries its faults: a crash (pending
//! bytes lost), a lost disk (everything lost), a lost file, corrupted bytes, and losing the
//! newest file (an object store rolling back its last write). Corruption is never silent:
//! [`framed`] records carry checksums, and shuffle buffers carry their own.
//!
//! Depends on: [`crate::future`]. Invariants: only `sync` makes bytes survive a crash; listings
//! are sorted; a missing file is `NotFound`, never empty data.

pub mod framed;
pub mod memory;
pub mod remote;

pub use memory::MemoryStorage;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::future::BoxFuture;

/// Why a storage operation failed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StorageError {
    /// No such file (never written, deleted, or lost).
    NotFound(String),
    /// The requested range lies beyond the end of the file.
    OutOfRange {
        /// The file.
        path: String,
        /// Its length.
        length: u64,
    },
    /// The storage does not answer (a remote store that is down or unreachable).
    Unavailable(String),
    /// A rename's target exists already.
    AlreadyExists(String),
    /// Syncing the file failed: its bytes written since the last sync stay pending, and a crash
    /// may lose them.
    SyncFailed(String),
    /// A file does not hold what its writer wrote to it: lost or cut while being written.
    LengthChanged {
        /// The file.
        path: String,
        /// The bytes its writer wrote.
        expected: u64,
        /// The bytes it holds.
        length: u64,
    },
}

impl fmt::Display for StorageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageError::NotFound(path) => write!(f, "no file `{path}`"),
            StorageError::OutOfRange { path, length } => write!(f, "read beyond the end of `{path}` ({length} bytes)"),
            StorageError::Unavailable(detail) => write!(f, "storage unavailable: {detail}"),
            StorageError::AlreadyExists(path) => write!(f, "`{path}` exists already"),
            StorageError::SyncFailed(path) => write!(f, "syncing `{path}` failed: its newest bytes are not durable"),
            StorageError::LengthChanged { path, expected, length } => {
                write!(
                    f,
                    "`{path}` holds {length} bytes where {expected} were written: lost or cut while being written"
                )
            }
        }
    }
}

impl std::error::Error for StorageError {}

/// A flat namespace of append-only files; see the module doc.
pub trait Storage: Send + Sync {
    /// Appends to a file, creating it if needed; the bytes are pending until synced.
    fn append<'a>(&'a self, path: &'a str, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), StorageError>>;
    /// Makes everything written to the file so far survive a crash.
    fn sync<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<(), StorageError>>;
    /// Reads `length` bytes at `offset`.
    fn read<'a>(&'a self, path: &'a str, offset: u64, length: u64) -> BoxFuture<'a, Result<Vec<u8>, StorageError>>;
    /// The file's length, pending bytes included.
    fn length<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<u64, StorageError>>;
    /// Removes a file (no error if absent).
    fn delete<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<(), StorageError>>;
    /// Paths starting with `prefix`, sorted.
    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>, StorageError>>;
    /// Gives the file `from` the name `to`, atomically and durably (its bytes move as they
    /// are: synced ones stay synced, pending ones pending). `to` must not exist
    /// (`AlreadyExists`), and `from` must (`NotFound`): a rename applied once is never applied
    /// again, which is what makes it a commit.
    fn rename<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), StorageError>>;

    /// Appends `bytes` to a file its writer knows to hold `expected` bytes (none: the file may
    /// not exist yet). A file lost or cut while being written (`NotFound`, or another length) is
    /// refused as [`StorageError::LengthChanged`] rather than appended to: the writer's offsets
    /// would no longer say where its bytes are, and a reader would take one item's bytes for
    /// another's. A remote store checks the offset where it applies the append, in one call.
    fn append_at<'a>(
        &'a self,
        path: &'a str,
        expected: u64,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            let length = length_or_zero(self.length(path).await)?;
            if length != expected {
                return Err(StorageError::LengthChanged { path: path.to_string(), expected, length });
            }
            self.append(path, bytes).await
        })
    }

    /// Makes the file's first `end` bytes (all its writer wrote) survive a crash, or says that
    /// they cannot: a store that crashed after an append and before this sync lost the pending
    /// bytes, and syncing what is left would make a shorter file durable as if it were whole
    /// ([`StorageError::LengthChanged`]). A remote store checks the length where it syncs.
    fn sync_through<'a>(&'a self, path: &'a str, end: u64) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move {
            self.sync(path).await?;
            let length = self.length(path).await?;
            if length < end {
                return Err(StorageError::LengthChanged { path: path.to_string(), expected: end, length });
            }
            Ok(())
        })
    }

    /// How many of the file's first bytes would survive a crash now (0 for a missing file),
    /// where the storage can tell: the simulated disk can; a remote store cannot (its own node
    /// checks), nor can a real directory (the kernel knows). For invariants only: see
    /// [`check_synced`].
    fn synced_length(&self, _path: &str) -> Option<u64> {
        None
    }
}

/// The invariant of every acknowledgement that promises durability (`promise` says which):
/// the file's first `end` bytes are synced, so a crash right after the acknowledgement keeps
/// them. Checked where the storage can tell ([`Storage::synced_length`]); a panic otherwise,
/// since an acknowledged write that a crash would lose breaks exactly-once only when a crash
/// lands in that window, and no oracle can count on that.
pub fn check_synced(synced: Option<u64>, path: &str, end: u64, promise: &str) {
    if let Some(synced) = synced {
        assert!(
            synced >= end,
            "storage invariant: {promise}, so `{path}` is synced through byte {end}, but only {synced} bytes are"
        );
    }
}

/// A file's length from [`Storage::length`]'s answer, a missing file's being 0.
pub fn length_or_zero(answer: Result<u64, StorageError>) -> Result<u64, StorageError> {
    match answer {
        Err(StorageError::NotFound(_)) => Ok(0),
        other => other,
    }
}

/// A storage whose every operation completes at once (the simulated disk, a local directory):
/// implementing it implements [`Storage`], with futures that are ready immediately.
pub trait ImmediateStorage: Send + Sync {
    /// [`Storage::append`].
    fn append_now(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError>;
    /// [`Storage::sync`].
    fn sync_now(&self, path: &str) -> Result<(), StorageError>;
    /// [`Storage::read`].
    fn read_now(&self, path: &str, offset: u64, length: u64) -> Result<Vec<u8>, StorageError>;
    /// [`Storage::length`].
    fn length_now(&self, path: &str) -> Result<u64, StorageError>;
    /// [`Storage::delete`].
    fn delete_now(&self, path: &str) -> Result<(), StorageError>;
    /// [`Storage::list`].
    fn list_now(&self, prefix: &str) -> Result<Vec<String>, StorageError>;
    /// [`Storage::rename`].
    fn rename_now(&self, from: &str, to: &str) -> Result<(), StorageError>;
    /// [`Storage::synced_length`].
    fn synced_length_now(&self, _path: &str) -> Option<u64> {
        None
    }
}

impl<T: ImmediateStorage> Storage for T {
    fn append<'a>(&'a self, path: &'a str, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(std::future::ready(self.append_now(path, bytes)))
    }

    /// The fault point `sync-fails` makes a sync of a file that exists fail: its bytes stay
    /// pending.
    fn sync<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<(), StorageError>> {
        let synced = if crate::buggify!(SyncFails) && self.length_now(path).is_ok() {
            Err(StorageError::SyncFailed(path.to_string()))
        } else {
            self.sync_now(path)
        };
        Box::pin(std::future::ready(synced))
    }

    fn read<'a>(&'a self, path: &'a str, offset: u64, length: u64) -> BoxFuture<'a, Result<Vec<u8>, StorageError>> {
        Box::pin(std::future::ready(self.read_now(path, offset, length)))
    }

    fn length<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<u64, StorageError>> {
        Box::pin(std::future::ready(self.length_now(path)))
    }

    fn delete<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(std::future::ready(self.delete_now(path)))
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>, StorageError>> {
        Box::pin(std::future::ready(self.list_now(prefix)))
    }

    fn rename<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(std::future::ready(self.rename_now(from, to)))
    }

    fn synced_length(&self, path: &str) -> Option<u64> {
        self.synced_length_now(path)
    }
}

/// Opens a storage; a process calls it when it starts, so that a client of a remote store
/// belongs to the process that uses it.
pub type StorageFactory = std::sync::Arc<dyn Fn() -> std::sync::Arc<dyn Storage> + Send + Sync>;

/// Reads a whole file.
pub async fn read_all(storage: &dyn Storage, path: &str) -> Result<Vec<u8>, StorageError> {
    let length = storage.length(path).await?;
    storage.read(path, 0, length).await
}

/// Appends and syncs: the bytes are durable when this returns. A store that crashed between
/// the two lost the append, and the sync says so ([`Storage::sync_through`]) instead of making
/// the file without it durable.
pub async fn append_durably(storage: &dyn Storage, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
    let offset = length_or_zero(storage.length(path).await)?;
    storage.append_at(path, offset, bytes).await?;
    storage.sync_through(path, offset + bytes.len() as u64).await
}
