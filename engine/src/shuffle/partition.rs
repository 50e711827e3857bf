//! Result partitions on the producer's TaskManager, and the protocol consumers read them with.
//!
//! A consumer channel asks for buffer `n` of its subpartition ([`RequestSubpartition`]); asking
//! for `n` also acknowledges every buffer before `n`. The producer answers with the buffer, with
//! `EndOfPartition` once all buffers were read, or with `NotYet` after a short wait without data
//! (the consumer asks again, so a dead producer shows up as a timeout, never as a hang).
//!
//! - PIPELINED subpartitions hold at most [`ShuffleConfig::pipelined_queue_buffers`] unacknowledged
//!   buffers in memory; a producer that finds the queue full waits (backpressure with bounded
//!   memory, one buffer in flight per channel until credit-based flow control arrives).
//! - BLOCKING partitions append every buffer to one data file on the TaskManager's
//!   [`Storage`], sync it when the producer finishes, and serve any buffer any number of times
//!   afterwards. They are lost with the TaskManager's disk, or when the TaskManager forgets them.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Notify;

use crate::graph::{IntermediateResultPartitionId, ResultPartitionType};
use crate::rpc_request;
use crate::runtime::resources::Resources;
use crate::storage::Storage;

/// Tuning of the data exchange.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShuffleConfig {
    /// Bytes per network buffer.
    pub buffer_size: usize,
    /// Unacknowledged buffers a pipelined subpartition may hold before its producer waits.
    pub pipelined_queue_buffers: usize,
}

impl Default for ShuffleConfig {
    fn default() -> Self {
        ShuffleConfig { buffer_size: 32 * 1024, pipelined_queue_buffers: 4 }
    }
}

/// One attempt's partition: partitions of different job attempts never mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ResultPartitionId {
    /// The partition in the execution graph.
    pub partition: IntermediateResultPartitionId,
    /// The job attempt that produces it.
    pub attempt: u32,
}

impl fmt::Display for ResultPartitionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ds{}.p{}@a{}", self.partition.dataset.0, self.partition.producer_subtask, self.attempt)
    }
}

/// Asks for buffer `sequence` of a range of subpartitions read as one sequence (their buffers
/// one after the other), acknowledging the ones before it. A range of more than one
/// subpartition is only for BLOCKING partitions (a consumer whose parallelism was decided at
/// runtime reads a range of key groups).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestSubpartition {
    /// The partition.
    pub partition: ResultPartitionId,
    /// The subpartitions.
    pub subpartitions: std::ops::Range<u32>,
    /// The buffer wanted.
    pub sequence: u64,
}

/// Answer to [`RequestSubpartition`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SubpartitionData {
    /// The buffer asked for.
    Buffer(Vec<u8>),
    /// Every buffer was read.
    EndOfPartition,
    /// No data yet; ask again.
    NotYet,
}

/// Why a partition cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PartitionRequestError {
    /// This TaskManager does not hold the partition (not deployed yet, released, or lost).
    NotFound,
    /// The partition has fewer subpartitions, or a pipelined one was asked for a range.
    NoSuchSubpartition,
    /// The partition's data could not be read back.
    Unreadable(String),
}

rpc_request!(RequestSubpartition => Result<SubpartitionData, PartitionRequestError>);

enum Subpartition {
    Pipelined { queue: VecDeque<Vec<u8>>, first_sequence: u64 },
    Blocking { frames: Vec<(u64, u64)> },
}

struct Partition {
    subpartitions: Vec<Subpartition>,
    finished: bool,
    notify: Arc<Notify>,
    data_path: String,
}

impl Partition {
    fn is_blocking(&self) -> bool {
        self.subpartitions.iter().any(|subpartition| matches!(subpartition, Subpartition::Blocking { .. }))
    }
}

/// The partitions a TaskManager produces and serves.
#[derive(Clone)]
pub struct ResultPartitionManager {
    partitions: Arc<Mutex<BTreeMap<ResultPartitionId, Partition>>>,
    storage: Arc<dyn Storage>,
    config: ShuffleConfig,
    resources: Arc<Resources>,
}

/// How long a request waits for data before answering `NotYet`.
const LONG_POLL: Duration = Duration::from_millis(100);

impl ResultPartitionManager {
    /// A manager writing blocking partitions to `storage`, charging disk and network time to
    /// `resources`.
    pub fn new(storage: Arc<dyn Storage>, config: ShuffleConfig, resources: Arc<Resources>) -> ResultPartitionManager {
        ResultPartitionManager { partitions: Default::default(), storage, config, resources }
    }

    /// Registers a partition a task is about to produce and returns its writer.
    pub fn register(
        &self,
        id: ResultPartitionId,
        partition_type: ResultPartitionType,
        subpartitions: u32,
    ) -> ResultPartitionWriter {
        let data_path = format!("partitions/{id}/data");
        self.storage.delete(&data_path);
        let subpartitions = (0..subpartitions)
            .map(|_| match partition_type {
                ResultPartitionType::Pipelined => Subpartition::Pipelined { queue: VecDeque::new(), first_sequence: 0 },
                ResultPartitionType::Blocking => Subpartition::Blocking { frames: Vec::new() },
            })
            .collect();
        let partition = Partition { subpartitions, finished: false, notify: Arc::new(Notify::new()), data_path };
        let previous = self.partitions.lock().expect("partition lock").insert(id, partition);
        assert!(previous.is_none(), "internal: partition {id} registered twice");
        ResultPartitionWriter { manager: self.clone(), id, blocking: partition_type == ResultPartitionType::Blocking }
    }

    /// Forgets every partition of attempts before `attempt` and deletes their files.
    pub fn release_before(&self, attempt: u32) {
        let mut partitions = self.partitions.lock().expect("partition lock");
        let released: Vec<ResultPartitionId> = partitions.keys().filter(|id| id.attempt < attempt).copied().collect();
        for id in released {
            let partition = partitions.remove(&id).expect("listed above");
            self.storage.delete(&partition.data_path);
            // Wake producers waiting for credit: their partition is gone.
            partition.notify.notify_waiters();
        }
    }

    /// Partitions currently held, in id order.
    pub fn partition_ids(&self) -> Vec<ResultPartitionId> {
        self.partitions.lock().expect("partition lock").keys().copied().collect()
    }

    /// Answers one consumer request, charging the disk read (blocking) and the network send.
    pub async fn serve(&self, request: RequestSubpartition) -> Result<SubpartitionData, PartitionRequestError> {
        let (answer, from_disk) = self.answer(request).await?;
        if let SubpartitionData::Buffer(bytes) = &answer {
            if from_disk {
                self.resources.disk_read(bytes.len() as u64).await;
            }
            self.resources.network(bytes.len() as u64).await;
        }
        Ok(answer)
    }

    /// The answer to a request, and whether its buffer comes from disk.
    async fn answer(&self, request: RequestSubpartition) -> Result<(SubpartitionData, bool), PartitionRequestError> {
        let mut waited = false;
        loop {
            let notify = {
                let mut partitions = self.partitions.lock().expect("partition lock");
                let partition = partitions.get_mut(&request.partition).ok_or(PartitionRequestError::NotFound)?;
                if let Some(answer) = self.try_answer(partition, &request)? {
                    return Ok((answer, partition.is_blocking()));
                }
                Arc::clone(&partition.notify)
            };
            if waited {
                return Ok((SubpartitionData::NotYet, false));
            }
            let notified = notify.notified();
            // Re-check after registering interest, so a wake-up between the check and the wait
            // is not lost.
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut partitions = self.partitions.lock().expect("partition lock");
                let partition = partitions.get_mut(&request.partition).ok_or(PartitionRequestError::NotFound)?;
                if let Some(answer) = self.try_answer(partition, &request)? {
                    return Ok((answer, partition.is_blocking()));
                }
            }
            let _ = madsim::time::timeout(LONG_POLL, notified).await;
            waited = true;
        }
    }

    fn try_answer(
        &self,
        partition: &mut Partition,
        request: &RequestSubpartition,
    ) -> Result<Option<SubpartitionData>, PartitionRequestError> {
        let finished = partition.finished;
        let range = request.subpartitions.clone();
        if range.is_empty() || range.end as usize > partition.subpartitions.len() {
            return Err(PartitionRequestError::NoSuchSubpartition);
        }
        if partition.is_blocking() {
            if !finished {
                return Ok(None);
            }
            return self.read_blocking(partition, range, request.sequence).map(Some);
        }
        if range.len() != 1 {
            return Err(PartitionRequestError::NoSuchSubpartition);
        }
        let Subpartition::Pipelined { queue, first_sequence } = &mut partition.subpartitions[range.start as usize]
        else {
            unreachable!("a partition is all pipelined or all blocking")
        };
        let mut acknowledged = false;
        while *first_sequence < request.sequence && !queue.is_empty() {
            queue.pop_front();
            *first_sequence += 1;
            acknowledged = true;
        }
        if acknowledged {
            partition.notify.notify_waiters();
        }
        let available = *first_sequence + queue.len() as u64;
        if request.sequence < available {
            Ok(Some(SubpartitionData::Buffer(queue[(request.sequence - *first_sequence) as usize].clone())))
        } else if finished && request.sequence == available {
            Ok(Some(SubpartitionData::EndOfPartition))
        } else {
            Ok(None)
        }
    }

    /// Buffer `sequence` of the buffers of `range`, one subpartition after the other.
    fn read_blocking(
        &self,
        partition: &Partition,
        range: Range<u32>,
        sequence: u64,
    ) -> Result<SubpartitionData, PartitionRequestError> {
        let mut skipped = 0u64;
        for subpartition in &partition.subpartitions[range.start as usize..range.end as usize] {
            let Subpartition::Blocking { frames } = subpartition else { unreachable!("checked blocking") };
            if let Some((offset, length)) = frames.get((sequence - skipped) as usize).filter(|_| sequence >= skipped) {
                let bytes = self
                    .storage
                    .read(&partition.data_path, *offset, *length)
                    .map_err(|error| PartitionRequestError::Unreadable(error.to_string()))?;
                return Ok(SubpartitionData::Buffer(bytes));
            }
            skipped += frames.len() as u64;
        }
        Ok(SubpartitionData::EndOfPartition)
    }
}

/// Why a producer could not write its partition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionReleased(pub ResultPartitionId);

impl fmt::Display for PartitionReleased {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "partition {} was released while its producer ran", self.0)
    }
}

/// The producer's handle to its partition.
pub struct ResultPartitionWriter {
    manager: ResultPartitionManager,
    id: ResultPartitionId,
    blocking: bool,
}

impl ResultPartitionWriter {
    /// The partition written.
    pub fn id(&self) -> ResultPartitionId {
        self.id
    }

    /// True for a BLOCKING partition (written to disk).
    pub fn is_blocking(&self) -> bool {
        self.blocking
    }

    /// Adds a sealed buffer to a subpartition; waits while a pipelined queue is full, and for the
    /// disk when the partition is blocking.
    pub async fn add_buffer(&self, subpartition: u32, buffer: Vec<u8>) -> Result<(), PartitionReleased> {
        if self.blocking {
            self.manager.resources.disk_write(buffer.len() as u64).await;
        }
        let capacity = self.manager.config.pipelined_queue_buffers;
        let mut buffer = Some(buffer);
        loop {
            let notify = {
                let mut partitions = self.manager.partitions.lock().expect("partition lock");
                let partition = partitions.get_mut(&self.id).ok_or(PartitionReleased(self.id))?;
                assert!(!partition.finished, "internal: buffer added to finished partition {}", self.id);
                let data_path = partition.data_path.clone();
                match &mut partition.subpartitions[subpartition as usize] {
                    Subpartition::Pipelined { queue, .. } if queue.len() < capacity => {
                        queue.push_back(buffer.take().expect("added once"));
                        partition.notify.notify_waiters();
                        return Ok(());
                    }
                    Subpartition::Pipelined { .. } => Arc::clone(&partition.notify),
                    Subpartition::Blocking { frames } => {
                        let bytes = buffer.take().expect("added once");
                        let offset = self.manager.storage.length(&data_path).unwrap_or(0);
                        self.manager.storage.append(&data_path, &bytes);
                        frames.push((offset, bytes.len() as u64));
                        return Ok(());
                    }
                }
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let full = {
                let partitions = self.manager.partitions.lock().expect("partition lock");
                let partition = partitions.get(&self.id).ok_or(PartitionReleased(self.id))?;
                matches!(&partition.subpartitions[subpartition as usize], Subpartition::Pipelined { queue, .. } if queue.len() >= capacity)
            };
            if full {
                notified.await;
            }
        }
    }

    /// Marks the partition complete: consumers see `EndOfPartition` after the last buffer, and a
    /// blocking partition's data is synced first.
    pub fn finish(&self) -> Result<(), PartitionReleased> {
        let mut partitions = self.manager.partitions.lock().expect("partition lock");
        let partition = partitions.get_mut(&self.id).ok_or(PartitionReleased(self.id))?;
        if partition.is_blocking() && self.manager.storage.length(&partition.data_path).is_ok() {
            self.manager
                .storage
                .sync(&partition.data_path)
                .unwrap_or_else(|error| panic!("internal: syncing a file that exists failed: {error}"));
        }
        partition.finished = true;
        partition.notify.notify_waiters();
        Ok(())
    }
}
