//! The JobMaster's durable (HA) metadata: each submitted job's spec, and its *operation log*: an
//! append-only list of [`JobEvent`]s (attempts started, parallelism decided, subtasks finished
//! with their partitions, subtasks reset, checkpoints completed, the final status), as
//! checksummed records in the durable store (Flink keeps the pointers in ZooKeeper and the
//! batch job events in a `FileSystemJobEventStore`, FLIP-383).
//!
//! Every write is synced before the JobMaster acts on it, and retried until it is: the
//! JobMaster waits rather than act on something it could forget. Finished subtasks reported
//! together are logged in one write ([`append_all`], group commit), so the JobMaster's pace is
//! not one durable round trip per subtask. A restarted JobMaster replays
//! the log ([`Replayed`]). Reading skips a damaged suffix (a corrupted or half-written record
//! reads as never written, so the JobMaster only forgets what it had not acted on).

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::super::JobSpec;
use super::super::messages::JobStatus;
use crate::checkpoint::CompletedCheckpoint;
use crate::graph::{ExecutionVertexId, JobVertexId};
use crate::shuffle::ShuffleDescriptor;
use crate::storage::{Storage, StorageError, append_durably, framed, read_all};

/// How long the JobMaster waits between tries while the durable store is unavailable.
const RETRY: Duration = Duration::from_millis(200);

fn path(job_id: &str, file: &str) -> String {
    format!("jobs/{job_id}/{file}")
}

/// Appends one record durably, retrying until it is: while the store is unavailable, and when
/// the store crashed between the append and the sync (the pending append is lost, so the sync,
/// which names the length the append reached, finds no file or a shorter one and refuses it).
/// A retry after a sync whose reply was lost writes the record twice; replaying an event twice
/// changes nothing.
async fn persist(storage: &dyn Storage, file: &str, record: &[u8]) {
    persist_framed(storage, file, &framed::frame(record)).await;
}

/// [`persist`] for records already framed.
async fn persist_framed(storage: &dyn Storage, file: &str, bytes: &[u8]) {
    while append_durably(storage, file, bytes).await.is_err() {
        crate::rt::time::sleep(RETRY).await;
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
            Err(_) => crate::rt::time::sleep(RETRY).await,
        }
    }
}

/// One entry of a job's operation log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum JobEvent {
    /// An attempt number is used from now on: for every subtask (`global`: a restart of all of
    /// them, or the first run) or for those reset next. Attempt numbers never repeat.
    AttemptStarted { attempt: u32, global: bool },
    /// The adaptive batch scheduler gave a vertex these subpartition ranges.
    ParallelismDecided { vertex: JobVertexId, ranges: Vec<(u32, u32)> },
    /// A subtask finished: its partitions are complete where the descriptors say.
    SubtaskFinished { vertex: ExecutionVertexId, attempt: u32, partitions: Vec<(ShuffleDescriptor, Vec<u64>)> },
    /// Regions restart under `attempt`; these subtasks' finished work is void.
    SubtasksReset { attempt: u32, vertices: Vec<ExecutionVertexId> },
    /// A checkpoint completed; before any task is told to commit for it.
    CheckpointCompleted(CompletedCheckpoint),
    /// The job ended; a restarted JobMaster does not run it again.
    JobEnded(JobStatus),
}

/// Records a submitted job.
pub(super) async fn persist_spec(storage: &dyn Storage, spec: &JobSpec) {
    persist(storage, &path(&spec.job_id, "spec"), &serde_json::to_vec(spec).expect("a job spec serializes")).await;
}

/// Appends an event to a job's operation log, durably.
pub(super) async fn append(storage: &dyn Storage, job_id: &str, event: &JobEvent) {
    append_all(storage, job_id, std::slice::from_ref(event)).await;
}

/// Appends events to a job's operation log in one durable write (group commit): one record
/// each, so a write cut short keeps a prefix of them, as separate appends would.
pub(super) async fn append_all(storage: &dyn Storage, job_id: &str, events: &[JobEvent]) {
    assert!(!events.is_empty(), "jobmaster invariant: a write to the operation log of {job_id} holds an event");
    let bytes: Vec<u8> = events
        .iter()
        .flat_map(|event| framed::frame(&serde_json::to_vec(event).expect("a job event serializes")))
        .collect();
    persist_framed(storage, &path(job_id, "events"), &bytes).await;
}

/// A finished subtask found in the log.
#[derive(Clone, Debug)]
pub(super) struct FinishedSubtask {
    pub(super) attempt: u32,
    pub(super) partitions: Vec<(ShuffleDescriptor, Vec<u64>)>,
}

/// What a job's operation log says, folded.
#[derive(Debug, Default)]
pub(super) struct Replayed {
    /// The highest attempt number used (0 if none was recorded).
    pub(super) last_attempt: u32,
    /// The last attempt that restarted every subtask: partitions of older attempts are void.
    pub(super) floor: u32,
    /// Parallelism decisions, in the order they were made.
    pub(super) decisions: Vec<(JobVertexId, Vec<std::ops::Range<u32>>)>,
    /// Subtasks whose finished work stands.
    pub(super) finished: BTreeMap<ExecutionVertexId, FinishedSubtask>,
    /// Completed checkpoints, oldest first.
    pub(super) checkpoints: Vec<CompletedCheckpoint>,
    pub(super) result: Option<JobStatus>,
}

impl Replayed {
    fn apply(&mut self, event: JobEvent) {
        match event {
            JobEvent::AttemptStarted { attempt, global } => {
                // A retried append may record an attempt twice, never an older one after a newer.
                assert!(
                    attempt >= self.last_attempt,
                    "internal: the operation log starts a{attempt} after a{}",
                    self.last_attempt
                );
                self.last_attempt = attempt;
                if global {
                    // Everything runs again, parallelism decisions included.
                    self.floor = self.floor.max(attempt);
                    self.finished.retain(|_, finished| finished.attempt >= attempt);
                    self.decisions.clear();
                }
            }
            JobEvent::ParallelismDecided { vertex, ranges } => {
                // A retried append may have recorded it twice.
                if !self.decisions.iter().any(|(decided, _)| *decided == vertex) {
                    self.decisions.push((vertex, ranges.into_iter().map(|(start, end)| start..end).collect()));
                }
            }
            JobEvent::SubtaskFinished { vertex, attempt, partitions } => {
                assert!(
                    attempt <= self.last_attempt,
                    "internal: the operation log records {vertex} finished as a{attempt}, an attempt it never started"
                );
                if attempt >= self.floor {
                    self.finished.insert(vertex, FinishedSubtask { attempt, partitions });
                }
            }
            JobEvent::SubtasksReset { attempt, vertices } => {
                assert!(
                    attempt >= self.last_attempt,
                    "internal: the operation log resets subtasks as a{attempt} after a{}",
                    self.last_attempt
                );
                self.last_attempt = attempt;
                for vertex in vertices {
                    self.finished.remove(&vertex);
                }
            }
            JobEvent::CheckpointCompleted(checkpoint) => {
                if !self.checkpoints.iter().any(|known| known.id == checkpoint.id) {
                    self.checkpoints.push(checkpoint);
                }
            }
            JobEvent::JobEnded(status) => {
                self.result.get_or_insert(status);
            }
        }
    }
}

/// A job found in the durable store.
pub(super) struct StoredJob {
    pub(super) spec: JobSpec,
    pub(super) log: Replayed,
}

/// Every job a previous JobMaster process accepted.
pub(super) async fn stored_jobs(storage: &dyn Storage) -> Vec<StoredJob> {
    let listing = loop {
        match storage.list("jobs/").await {
            Ok(paths) => break paths,
            Err(_) => crate::rt::time::sleep(RETRY).await,
        }
    };
    let mut jobs = Vec::new();
    for spec_path in listing.iter().filter(|path| path.ends_with("/spec")) {
        let Some(spec) =
            records(storage, spec_path).await.first().and_then(|record| serde_json::from_slice::<JobSpec>(record).ok())
        else {
            continue; // a damaged spec: the job cannot be run again
        };
        let mut log = Replayed::default();
        for record in records(storage, &path(&spec.job_id, "events")).await {
            match serde_json::from_slice(&record) {
                Ok(event) => log.apply(event),
                Err(error) => panic!("internal: an intact operation log record does not parse: {error}"),
            }
        }
        log.checkpoints.sort_by_key(|checkpoint| checkpoint.id);
        jobs.push(StoredJob { spec, log });
    }
    jobs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(vertex: u32, subtask: u32, attempt: u32) -> JobEvent {
        let vertex = ExecutionVertexId { vertex: JobVertexId(vertex), subtask };
        JobEvent::SubtaskFinished { vertex, attempt, partitions: Vec::new() }
    }

    fn replay(events: Vec<JobEvent>) -> Replayed {
        let mut replayed = Replayed::default();
        for event in events {
            replayed.apply(event);
        }
        replayed
    }

    #[madsim::test]
    async fn a_group_commit_is_one_append_of_one_record_per_event_and_a_cut_keeps_a_prefix() {
        let storage = crate::storage::MemoryStorage::new();
        let events = [finished(0, 0, 0), finished(0, 1, 0), finished(0, 2, 0)];
        append(&storage, "j", &JobEvent::AttemptStarted { attempt: 0, global: true }).await;
        append_all(&storage, "j", &events).await;
        let written = read_all(&storage, &path("j", "events")).await.expect("the log exists");
        let read: Vec<JobEvent> = records(&storage, &path("j", "events"))
            .await
            .iter()
            .map(|record| serde_json::from_slice(record).expect("a record parses"))
            .collect();
        assert_eq!(read[1..], events, "one record per event, in order");
        let single: Vec<u8> =
            events.iter().flat_map(|event| framed::frame(&serde_json::to_vec(event).unwrap())).collect();
        assert!(written.ends_with(&single), "the same bytes as one append per event");
        // A write cut inside the last event's record keeps the events before it.
        let (intact, damaged) = framed::unframe(&written[..written.len() - 3]);
        assert!(damaged);
        assert_eq!(intact.len(), 3, "the attempt and the first two finished subtasks");
    }

    #[test]
    fn replay_keeps_finished_work_until_it_is_reset_or_everything_restarts() {
        let decided = JobEvent::ParallelismDecided { vertex: JobVertexId(2), ranges: vec![(0, 64), (64, 128)] };
        let log = replay(vec![
            JobEvent::AttemptStarted { attempt: 0, global: true },
            finished(0, 0, 0),
            finished(0, 1, 0),
            decided.clone(),
            decided.clone(), // a retried append
            finished(2, 0, 0),
            JobEvent::SubtasksReset {
                attempt: 1,
                vertices: vec![ExecutionVertexId { vertex: JobVertexId(2), subtask: 0 }],
            },
            finished(2, 0, 1),
            JobEvent::SubtasksReset {
                attempt: 2,
                vertices: vec![ExecutionVertexId { vertex: JobVertexId(0), subtask: 1 }],
            },
        ]);
        assert_eq!(log.last_attempt, 2);
        assert_eq!(log.floor, 0);
        assert_eq!(log.decisions.len(), 1);
        let kept: Vec<(u32, u32, u32)> =
            log.finished.iter().map(|(vertex, finished)| (vertex.vertex.0, vertex.subtask, finished.attempt)).collect();
        assert_eq!(kept, [(0, 0, 0), (2, 0, 1)]);

        let log = replay(vec![
            finished(0, 0, 0),
            decided,
            JobEvent::AttemptStarted { attempt: 3, global: true },
            finished(0, 1, 3),
            JobEvent::JobEnded(JobStatus::Finished),
            JobEvent::JobEnded(JobStatus::Failed("a duplicate never wins".to_string())),
        ]);
        assert_eq!((log.last_attempt, log.floor), (3, 3));
        assert!(log.decisions.is_empty(), "a restart of everything decides again");
        assert_eq!(log.finished.len(), 1);
        assert_eq!(log.result, Some(JobStatus::Finished));
    }
}
