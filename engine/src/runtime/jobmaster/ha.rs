//! The JobMaster's durable (HA) metadata: each submitted job's spec, every attempt number it
//! starts, its completed checkpoints, and its final status, in the durable store as checksummed
//! records (Flink keeps this in ZooKeeper: the consistent part of the store).
//!
//! Every write is synced before the JobMaster acts on it, and retried until it is: the
//! JobMaster waits rather than act on something it could forget. Reading skips a
//! damaged suffix (a corrupted or half-written record reads as never written).

use std::time::Duration;

use super::super::JobSpec;
use super::super::messages::JobStatus;
use crate::checkpoint::CompletedCheckpoint;
use crate::storage::{Storage, StorageError, append_durably, framed, read_all};

/// How long the JobMaster waits between tries while the durable store is unavailable.
const RETRY: Duration = Duration::from_millis(200);

fn path(job_id: &str, file: &str) -> String {
    format!("jobs/{job_id}/{file}")
}

/// Appends one record durably, retrying until it is: while the store is unavailable, and when
/// the store crashed between the append and the sync (the pending append is lost, so the sync
/// finds no file, or a shorter one than a retried append expected). A retry after a sync whose
/// reply was lost writes the record twice; readers take the first spec and result and the
/// highest attempt, so a duplicate changes nothing.
async fn persist(storage: &dyn Storage, file: &str, record: &[u8]) {
    let bytes = framed::frame(record);
    while append_durably(storage, file, &bytes).await.is_err() {
        madsim::time::sleep(RETRY).await;
    }
}

/// Reads a file's intact records; a missing file has none. Retries until the store answers.
async fn records(storage: &dyn Storage, file: &str) -> Vec<Vec<u8>> {
    loop {
        match read_all(storage, file).await {
            Ok(bytes) => return framed::unframe(&bytes).0,
            Err(StorageError::NotFound(_)) => return Vec::new(),
            // Unavailable, or the file shrank between reading its length and its bytes (the
            // store crashed and lost a pending append): read again.
            Err(_) => madsim::time::sleep(RETRY).await,
        }
    }
}

/// Records a submitted job.
pub(super) async fn persist_spec(storage: &dyn Storage, spec: &JobSpec) {
    persist(storage, &path(&spec.job_id, "spec"), &serde_json::to_vec(spec).expect("a job spec serializes")).await;
}

/// Records that an attempt starts; before any of its tasks is deployed.
pub(super) async fn persist_attempt(storage: &dyn Storage, job_id: &str, attempt: u32) {
    persist(storage, &path(job_id, "attempts"), &attempt.to_be_bytes()).await;
}

/// Records a job's final status, so a restarted JobMaster does not run it again.
pub(super) async fn persist_result(storage: &dyn Storage, job_id: &str, status: &JobStatus) {
    persist(storage, &path(job_id, "result"), &serde_json::to_vec(status).expect("a status serializes")).await;
}

/// Records a completed checkpoint; before any task is told to commit for it.
pub(super) async fn persist_checkpoint(storage: &dyn Storage, job_id: &str, checkpoint: &CompletedCheckpoint) {
    let record = serde_json::to_vec(checkpoint).expect("a checkpoint serializes");
    persist(storage, &path(job_id, "checkpoints"), &record).await;
}

/// A job found in the durable store.
pub(super) struct StoredJob {
    pub(super) spec: JobSpec,
    /// The highest attempt number started (0 if none was recorded).
    pub(super) last_attempt: u32,
    pub(super) result: Option<JobStatus>,
    /// Its completed checkpoints, oldest first.
    pub(super) checkpoints: Vec<CompletedCheckpoint>,
}

/// Every job a previous JobMaster process accepted.
pub(super) async fn stored_jobs(storage: &dyn Storage) -> Vec<StoredJob> {
    let listing = loop {
        match storage.list("jobs/").await {
            Ok(paths) => break paths,
            Err(_) => madsim::time::sleep(RETRY).await,
        }
    };
    let mut jobs = Vec::new();
    for spec_path in listing.iter().filter(|path| path.ends_with("/spec")) {
        let Some(spec) =
            records(storage, spec_path).await.first().and_then(|record| serde_json::from_slice::<JobSpec>(record).ok())
        else {
            continue; // a damaged spec: the job cannot be run again
        };
        let last_attempt = records(storage, &path(&spec.job_id, "attempts"))
            .await
            .iter()
            .filter_map(|record| record.as_slice().try_into().ok().map(u32::from_be_bytes))
            .max()
            .unwrap_or(0);
        let result = records(storage, &path(&spec.job_id, "result"))
            .await
            .first()
            .and_then(|record| serde_json::from_slice(record).ok());
        let mut checkpoints: Vec<CompletedCheckpoint> = records(storage, &path(&spec.job_id, "checkpoints"))
            .await
            .iter()
            .filter_map(|record| serde_json::from_slice(record).ok())
            .collect();
        // A retried write may have recorded one twice.
        checkpoints.sort_by_key(|checkpoint| checkpoint.id);
        checkpoints.dedup_by_key(|checkpoint| checkpoint.id);
        jobs.push(StoredJob { spec, last_attempt, result, checkpoints });
    }
    jobs
}
