//! The files node: a directory of input files served read-only over the storage protocol, which
//! `sluice_engine::connectors::files::FileSource` reads. In simulation its disk is a simulated
//! one holding the job's generated files (`part-00000`, …) and a scenario's input files (`<input>/<file>`); for real (`sluice-real`) it is a
//! directory on the machine's disk. A write of any kind is refused: input is never changed.

use std::net::SocketAddr;
use std::sync::Arc;

use sluice_catalog::ExternalInput;
use sluice_engine::rpc::serve;
use sluice_engine::storage::remote::{StorageCall, StorageOperation, apply};
use sluice_engine::storage::{ImmediateStorage, MemoryStorage, Storage, StorageError};

/// The job's input files on a simulated disk, synced, if it reads any.
pub fn load(input: &ExternalInput) -> Option<MemoryStorage> {
    if input.files.is_empty() {
        return None;
    }
    let disk = MemoryStorage::new();
    for (path, contents) in &input.files {
        disk.append_now(path, contents).expect("a simulated disk takes every append");
        disk.sync_now(path).expect("a file just written exists");
    }
    Some(disk)
}

/// Serves `files` at `address`, read-only, until the node is killed.
pub async fn run_file_server(address: SocketAddr, files: Arc<dyn Storage>) {
    let endpoint = sluice_engine::rpc::bind(address)
        .await
        .unwrap_or_else(|error| panic!("internal: the files node cannot bind {address}: {error}"));
    serve(&endpoint, move |call: StorageCall| {
        let files = Arc::clone(&files);
        async move {
            match reads_only(&call.operation) {
                true => apply(&*files, call.operation).await,
                false => Err(StorageError::Unavailable("the input files are read-only".to_string())),
            }
        }
    });
    sluice_engine::rpc::serve_health(&endpoint, sluice_engine::connectors::FILES_SYSTEM);
    std::future::pending::<()>().await;
}

/// Whether the files node serves `operation`: reads, lengths and listings. Appends, syncs,
/// deletes and renames alike are refused, and so is any operation added later.
fn reads_only(operation: &StorageOperation) -> bool {
    matches!(operation, StorageOperation::Read { .. } | StorageOperation::Length { .. } | StorageOperation::List { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_files_node_serves_reads_and_refuses_every_write() {
        let path = || "part-00000".to_string();
        assert!(reads_only(&StorageOperation::Length { path: path() }));
        assert!(!reads_only(&StorageOperation::Delete { path: path() }));
        assert!(!reads_only(&StorageOperation::Rename { from: path(), to: "other".to_string() }));
    }
}
