//! The durable store node: a [`Storage`] served over the network (the protocol of
//! `sluice_engine::storage::remote`), where the JobMaster keeps its HA metadata (and, later,
//! checkpoints live).
//!
//! Its disk ([`MemoryStorage`]) belongs to the cluster, so a killed store keeps what it synced
//! and loses what it did not. Its own faults: it can refuse every call for a while
//! (`Unavailable`), and it can lose its newest object outside `jobs/` (an object store rolling
//! back its last write). The JobMaster's metadata under `jobs/` is the consistent part of the
//! store, as Flink keeps it in ZooKeeper rather than in the blob store: losing it would let a
//! restarted JobMaster reuse attempt numbers, which no engine survives.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_engine::rpc::serve;
use sluice_engine::storage::remote::{StorageCall, apply};
use sluice_engine::storage::{MemoryStorage, StorageError};

/// Where the JobMaster's HA metadata lives: never lost by [`DurableStoreState::lose_newest_object`].
pub const METADATA_PREFIX: &str = "jobs/";

/// The store's disk and fault switches; outlives the node.
#[derive(Clone, Default)]
pub struct DurableStoreState {
    /// Its disk.
    pub disk: MemoryStorage,
    unavailable: Arc<AtomicBool>,
}

impl DurableStoreState {
    /// Makes every call fail with `Unavailable` (or answer again).
    pub fn set_unavailable(&self, unavailable: bool) {
        self.unavailable.store(unavailable, Ordering::SeqCst);
    }

    /// Loses the most recently written object outside [`METADATA_PREFIX`]; returns its path.
    pub fn lose_newest_object(&self) -> Option<String> {
        let newest = self
            .disk
            .paths("")
            .into_iter()
            .filter(|path| !path.starts_with(METADATA_PREFIX))
            .filter_map(|path| self.disk.write_order(&path).map(|order| (order, path)))
            .max()?
            .1;
        self.disk.lose(&newest);
        Some(newest)
    }
}

/// Serves the store at `address` until the node is killed.
pub async fn run_durable_store(address: SocketAddr, state: DurableStoreState) {
    let endpoint = sluice_engine::rpc::bind(address)
        .await
        .unwrap_or_else(|error| panic!("internal: the durable store cannot bind {address}: {error}"));
    serve(&endpoint, move |call: StorageCall| {
        let state = state.clone();
        async move {
            if state.unavailable.load(Ordering::SeqCst) {
                return Err(StorageError::Unavailable("the durable store refuses calls (fault)".to_string()));
            }
            apply(&state.disk, call.operation).await
        }
    });
    std::future::pending::<()>().await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_engine::storage::Storage;

    #[madsim::test]
    async fn losing_the_newest_object_spares_the_metadata_and_older_objects() {
        let state = DurableStoreState::default();
        state.disk.append("checkpoints/1", b"one").await.unwrap();
        state.disk.append("checkpoints/2", b"two").await.unwrap();
        state.disk.append("jobs/j/attempts", b"a").await.unwrap();
        assert_eq!(state.lose_newest_object().as_deref(), Some("checkpoints/2"));
        assert_eq!(state.disk.paths(""), vec!["checkpoints/1".to_string(), "jobs/j/attempts".to_string()]);
        assert_eq!(state.lose_newest_object().as_deref(), Some("checkpoints/1"));
        assert_eq!(state.lose_newest_object(), None);
    }
}
