//! [`RemoteStorage`]: a [`Storage`] on another node — the durable store that keeps the
//! JobMaster's metadata (and, later, checkpoints) — and the protocol it speaks.
//!
//! Every call has a timeout and is retried a few times; a store that stays silent is
//! `Unavailable`. Appends name the offset they expect to write at, so a retried append whose
//! first try was applied (and whose reply was lost) is recognized instead of doubled.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{Storage, StorageError};
use crate::future::BoxFuture;
use crate::rpc::{Reconnect, RpcClient, RpcError};
use crate::rpc_request;

/// One storage operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StorageOperation {
    /// Append `bytes`, which must start at `offset` (the file's length before the append).
    Append {
        /// The file.
        path: String,
        /// Where the bytes start.
        offset: u64,
        /// The bytes.
        #[serde(with = "serde_bytes")]
        bytes: Vec<u8>,
    },
    /// Make the file durable.
    Sync {
        /// The file.
        path: String,
        /// The length its writer wrote: a shorter file (a crash of the store lost pending
        /// appends) is refused rather than made durable (`Storage::sync_through`).
        #[serde(default)]
        through: Option<u64>,
    },
    /// Read a range.
    Read {
        /// The file.
        path: String,
        /// First byte.
        offset: u64,
        /// How many bytes.
        length: u64,
    },
    /// The file's length.
    Length {
        /// The file.
        path: String,
    },
    /// Remove the file.
    Delete {
        /// The file.
        path: String,
    },
    /// Paths with a prefix.
    List {
        /// The prefix.
        prefix: String,
    },
    /// Rename a file ([`Storage::rename`]).
    Rename {
        /// The file.
        from: String,
        /// Its new name.
        to: String,
    },
}

/// The answer to a [`StorageOperation`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StorageAnswer {
    /// Done.
    Done,
    /// Bytes read.
    Bytes(#[serde(with = "serde_bytes")] Vec<u8>),
    /// A length.
    Length(u64),
    /// Paths, sorted.
    Paths(Vec<String>),
}

/// A storage call to a storage node.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StorageCall {
    /// The operation.
    pub operation: StorageOperation,
}
rpc_request!(StorageCall => Result<StorageAnswer, StorageError>);

/// How long one call waits, and how often it is tried.
const CALL_TIMEOUT: Duration = Duration::from_millis(500);
const CALL_ATTEMPTS: u32 = 4;

/// A storage node's client; see the module doc.
pub struct RemoteStorage {
    address: SocketAddr,
    client: tokio::sync::OnceCell<RpcClient>,
    reconnect: Reconnect,
}

impl RemoteStorage {
    /// A client of the storage node at `address`, riding out a refused or dropped connection
    /// for [`Reconnect::DEFAULT_TIMEOUT`].
    pub fn new(address: SocketAddr) -> RemoteStorage {
        RemoteStorage { address, client: tokio::sync::OnceCell::new(), reconnect: Reconnect::default() }
    }

    /// The same client, riding out a refused or dropped connection as `reconnect` says.
    pub fn with_reconnect(self, reconnect: Reconnect) -> RemoteStorage {
        RemoteStorage { reconnect, ..self }
    }

    async fn call(&self, operation: StorageOperation) -> Result<StorageAnswer, StorageError> {
        let client = self
            .client
            .get_or_try_init(RpcClient::bind_ephemeral)
            .await
            .map_err(|error| StorageError::Unavailable(error.to_string()))?;
        let mut last = String::new();
        for _ in 0..CALL_ATTEMPTS {
            let call = StorageCall { operation: operation.clone() };
            match client.call_reconnecting(self.address, call, CALL_TIMEOUT, self.reconnect).await {
                Ok(Err(StorageError::Unavailable(detail))) => {
                    last = detail;
                    crate::rt::time::sleep(CALL_TIMEOUT).await;
                }
                // The fault point: the store applied the append, and its reply was lost.
                Ok(Ok(_))
                    if matches!(operation, StorageOperation::Append { .. })
                        && crate::buggify!(DurableAppendReplyLost) =>
                {
                    last = "the reply to an applied append was lost".to_string();
                }
                Ok(answer) => return answer,
                Err(error @ RpcError::Timeout { .. }) => last = error.to_string(),
                Err(error) => return Err(StorageError::Unavailable(error.to_string())),
            }
        }
        Err(StorageError::Unavailable(format!("{} after {CALL_ATTEMPTS} attempts: {last}", self.address)))
    }

    /// Appends at the file's current end.
    async fn append_at_end(&self, path: &str, bytes: &[u8]) -> Result<(), StorageError> {
        let offset = super::length_or_zero(self.length_of(path).await)?;
        self.append_at_offset(path, offset, bytes).await
    }

    /// Appends where the writer expects the file to end: one call, checked by the store.
    async fn append_at_offset(&self, path: &str, offset: u64, bytes: &[u8]) -> Result<(), StorageError> {
        let operation = StorageOperation::Append { path: path.to_string(), offset, bytes: bytes.to_vec() };
        match self.call(operation).await {
            Ok(_) => Ok(()),
            Err(StorageError::OutOfRange { path, length }) => {
                Err(StorageError::LengthChanged { path, expected: offset, length })
            }
            Err(error) => Err(error),
        }
    }

    async fn sync_to(&self, path: &str, through: Option<u64>) -> Result<(), StorageError> {
        self.call(StorageOperation::Sync { path: path.to_string(), through }).await.map(|_| ())
    }

    async fn length_of(&self, path: &str) -> Result<u64, StorageError> {
        match self.call(StorageOperation::Length { path: path.to_string() }).await? {
            StorageAnswer::Length(length) => Ok(length),
            other => Err(unexpected(other)),
        }
    }
}

fn unexpected(answer: StorageAnswer) -> StorageError {
    StorageError::Unavailable(format!("the storage node answered {answer:?} out of turn"))
}

impl Storage for RemoteStorage {
    fn append<'a>(&'a self, path: &'a str, bytes: &'a [u8]) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(self.append_at_end(path, bytes))
    }

    fn sync<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(self.sync_to(path, None))
    }

    fn append_at<'a>(
        &'a self,
        path: &'a str,
        expected: u64,
        bytes: &'a [u8],
    ) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(self.append_at_offset(path, expected, bytes))
    }

    fn sync_through<'a>(&'a self, path: &'a str, end: u64) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(self.sync_to(path, Some(end)))
    }

    fn read<'a>(&'a self, path: &'a str, offset: u64, length: u64) -> BoxFuture<'a, Result<Vec<u8>, StorageError>> {
        Box::pin(async move {
            match self.call(StorageOperation::Read { path: path.to_string(), offset, length }).await? {
                StorageAnswer::Bytes(bytes) => Ok(bytes),
                other => Err(unexpected(other)),
            }
        })
    }

    fn length<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<u64, StorageError>> {
        Box::pin(self.length_of(path))
    }

    fn delete<'a>(&'a self, path: &'a str) -> BoxFuture<'a, Result<(), StorageError>> {
        Box::pin(async move { self.call(StorageOperation::Delete { path: path.to_string() }).await.map(|_| ()) })
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Vec<String>, StorageError>> {
        Box::pin(async move {
            match self.call(StorageOperation::List { prefix: prefix.to_string() }).await? {
                StorageAnswer::Paths(paths) => Ok(paths),
                other => Err(unexpected(other)),
            }
        })
    }

    fn rename<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<(), StorageError>> {
        // A retry of a rename that was applied answers `AlreadyExists`: the caller decides
        // whether the file under the new name is the one it renamed.
        let operation = StorageOperation::Rename { from: from.to_string(), to: to.to_string() };
        Box::pin(async move { self.call(operation).await.map(|_| ()) })
    }
}

/// Serves storage calls against `storage` (the storage node's side); an append at the wrong
/// offset is either a retry that was already applied (accepted) or a conflict (refused).
pub async fn apply(storage: &dyn Storage, operation: StorageOperation) -> Result<StorageAnswer, StorageError> {
    match operation {
        StorageOperation::Append { path, offset, bytes } => {
            let length = super::length_or_zero(storage.length(&path).await)?;
            if length == offset {
                storage.append(&path, &bytes).await?;
            } else if length != offset + bytes.len() as u64
                || storage.read(&path, offset, bytes.len() as u64).await? != bytes
            {
                return Err(StorageError::OutOfRange { path, length });
            } else {
                crate::cover!(RetriedAppendFoundApplied);
            }
            let end = storage.length(&path).await?;
            assert_eq!(
                end,
                offset + bytes.len() as u64,
                "storage invariant: an append, retried or not, is applied once: `{path}` ends where its writer expects"
            );
            Ok(StorageAnswer::Done)
        }
        StorageOperation::Sync { path, through } => {
            match through {
                Some(end) => storage.sync_through(&path, end).await?,
                None => storage.sync(&path).await?,
            }
            let end = match through {
                Some(end) => end,
                None => storage.length(&path).await?,
            };
            super::check_synced(storage.synced_length(&path), &path, end, "the store acknowledges a sync");
            Ok(StorageAnswer::Done)
        }
        StorageOperation::Read { path, offset, length } => {
            storage.read(&path, offset, length).await.map(StorageAnswer::Bytes)
        }
        StorageOperation::Length { path } => storage.length(&path).await.map(StorageAnswer::Length),
        StorageOperation::Delete { path } => storage.delete(&path).await.map(|()| StorageAnswer::Done),
        StorageOperation::List { prefix } => storage.list(&prefix).await.map(StorageAnswer::Paths),
        StorageOperation::Rename { from, to } => storage.rename(&from, &to).await.map(|()| StorageAnswer::Done),
    }
}
