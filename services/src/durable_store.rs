//! The durable store node: a [`Storage`] served over the network (the protocol of
//! `sluice_engine::storage::remote`), where the JobMaster keeps its HA metadata (and, later,
//! checkpoints live).
//!
//! Its disk ([`MemoryStorage`]) belongs to the cluster, so a killed store keeps what it synced
//! and loses what it did not. Its own faults: it can refuse every call for a while
//! (`Unavailable`), and it can lose its newest object outside `jobs/` (an object store rolling
//! back its last write). The JobMaster's metadata under `jobs/` is the consistent part of the
//! store, as Flink keeps it in ZooKeeper rather than in the blob store: losing it would let a
//! restarted JobMaster reuse attempt numbers, which no engine survives. Sink files under
//! `sinks/` are not lost either: losing a committed file loses committed output, and losing a
//! pending one (synced, and named by a completed checkpoint) loses rows no restore can bring
//! back, which no sink survives.
//!
//! It is also the cluster's file system for [`FileSink`](sluice_engine::connectors::FileSink):
//! a rename that commits a sink's file is traced as that file's commit (the events the
//! transactional store records for its transactions), and [`file_tables`] reads the committed
//! files back as tables.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use sluice_catalog::ExpectedOutput;
use sluice_engine::connectors::SinkKind;
use sluice_engine::connectors::file_sink::{
    CsvRecordCounter, LOCAL_PIECE, REMOTE_PIECE, SINKS_PREFIX, committed_file_txn, in_progress_attempt, parse_csv_rows,
    read_in_pieces,
};
use sluice_engine::connectors::txn_store::txn_checkpoint;
use sluice_engine::rpc::serve;
use sluice_engine::storage::remote::{StorageAnswer, StorageCall, StorageOperation, apply};
use sluice_engine::storage::{MemoryStorage, Storage, StorageError};
use sluice_engine::trace::{TraceEvent, TracerHandle};

use super::txn_store::{CommittedView, table_from_log};

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
            .filter(|path| !path.starts_with(METADATA_PREFIX) && !path.starts_with(SINKS_PREFIX))
            .filter_map(|path| self.disk.write_order(&path).map(|order| (order, path)))
            .max()?
            .1;
        assert!(
            !newest.starts_with(METADATA_PREFIX),
            "durable-store invariant: the JobMaster's metadata is never lost (`{newest}`)"
        );
        assert!(!newest.starts_with(SINKS_PREFIX), "durable-store invariant: a sink's file is never lost (`{newest}`)");
        self.disk.lose(&newest);
        Some(newest)
    }
}

/// How each table of a job's reference applies rows (none known without a reference).
pub fn table_kinds(expected: Option<&ExpectedOutput>) -> BTreeMap<String, SinkKind> {
    expected.into_iter().flatten().map(|(table, expectation)| (table.clone(), expectation.kind)).collect()
}

/// Serves the store at `address` until the node is killed.
pub async fn run_durable_store(address: SocketAddr, state: DurableStoreState, tracer: TracerHandle) {
    let endpoint = sluice_engine::rpc::bind(address)
        .await
        .unwrap_or_else(|error| panic!("internal: the durable store cannot bind {address}: {error}"));
    serve(&endpoint, move |call: StorageCall| {
        let (state, tracer) = (state.clone(), Arc::clone(&tracer));
        async move {
            if state.unavailable.load(Ordering::SeqCst) {
                return Err(StorageError::Unavailable("the durable store refuses calls (fault)".to_string()));
            }
            apply_traced(&state.disk, call.operation, &tracer).await
        }
    });
    sluice_engine::rpc::serve_health(&endpoint, "durable-store");
    std::future::pending::<()>().await;
}

/// Applies a storage call; a rename that commits a sink's file is traced as its commit, with
/// the rows it made visible and the attempt that wrote them.
pub async fn apply_traced(
    storage: &dyn Storage,
    operation: StorageOperation,
    tracer: &TracerHandle,
) -> Result<StorageAnswer, StorageError> {
    let commit = match &operation {
        StorageOperation::Rename { from, to } => {
            committed_file_txn(to).map(|(_, txn_id)| (txn_id, in_progress_attempt(from).unwrap_or(0), to.clone()))
        }
        _ => None,
    };
    let answer = apply(storage, operation).await;
    if let (Ok(_), Some((txn_id, epoch, path))) = (&answer, commit) {
        if let Ok(length) = storage.length(&path).await {
            let promise = "a file sink commits (renames) only a file it synced whole at its pre-commit";
            sluice_engine::storage::check_synced(storage.synced_length(&path), &path, length, promise);
        }
        let mut counter = CsvRecordCounter::default();
        let rows = match read_in_pieces(storage, &path, LOCAL_PIECE, |piece| counter.feed(piece)).await {
            Ok(()) => counter.records,
            Err(_) => 0,
        };
        tracer.record(TraceEvent::TransactionCommitted { txn_id, epoch, rows });
    }
    answer
}

/// The tables file sinks committed to `disk`: each table's files in commit order (which, for
/// the rows of one key, all written by one subtask, is checkpoint order), each file's rows in
/// order, each table applying rows as `kinds` says (the job's reference; append if it does not
/// say). An error names a committed file that cannot be read or is not CSV rows.
pub async fn file_tables(disk: &dyn Storage, kinds: &BTreeMap<String, SinkKind>) -> Result<CommittedView, String> {
    let paths = disk.list(SINKS_PREFIX).await.map_err(|error| format!("listing committed files: {error}"))?;
    let mut files: Vec<(String, (u64, u64, u64), String)> = paths
        .into_iter()
        .filter_map(|path| {
            let (table, txn_id) = committed_file_txn(&path)?;
            let (_, place) = txn_id.split_once('#')?;
            let mut parts = place.split('/');
            let (operator, subtask) = (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
            // `c<N>` in checkpoint order; `eoi`, the only file without checkpoints, last.
            let checkpoint = txn_checkpoint(&txn_id).unwrap_or(u64::MAX);
            Some((table.to_string(), (operator, subtask, checkpoint), path))
        })
        .collect();
    files.sort();
    let mut logs: BTreeMap<String, Vec<_>> = BTreeMap::new();
    for (table, _, path) in files {
        let read = |error: String| format!("committed file `{path}`: {error}");
        let mut bytes = Vec::new();
        read_in_pieces(disk, &path, REMOTE_PIECE, |piece| bytes.extend_from_slice(piece))
            .await
            .map_err(|error| read(error.to_string()))?;
        logs.entry(table).or_default().extend(parse_csv_rows(&bytes).map_err(read)?);
    }
    Ok(logs
        .into_iter()
        .map(|(table, log)| {
            let kind = kinds.get(&table).copied().unwrap_or(SinkKind::Append);
            (table, table_from_log(kind, log))
        })
        .collect())
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
        state.disk.append("sinks/t/in-progress/part-1-0-c1.attempt-0", b"a,1\n").await.unwrap();
        assert_eq!(state.lose_newest_object().as_deref(), Some("checkpoints/2"));
        assert_eq!(
            state.disk.paths(""),
            ["checkpoints/1", "jobs/j/attempts", "sinks/t/in-progress/part-1-0-c1.attempt-0"].map(String::from)
        );
        assert_eq!(state.lose_newest_object().as_deref(), Some("checkpoints/1"));
        assert_eq!(state.lose_newest_object(), None);
    }
}
