//! [`ResultPartitionManager`]: the partitions a TaskManager produces and serves, pipelined
//! ([`super::pipelined`]) and sort-merge blocking ([`super::sort_merge`]), and their local
//! writers.
//!
//! Serving charges the TaskManager's disk (blocking reads) and network interface; writing a
//! blocking region charges its disk. A blocking partition whose files are gone (a lost disk or
//! file) answers `NotFound`, as one the TaskManager never had: the consumer reports
//! partition-not-found and failover re-runs the producer.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use super::pipelined::PipelinedPartition;
use super::protocol::{BufferResponse, PartitionRequestError, RequestBuffers, StreamItem};
use super::sort_merge::{Frame, SortMergePartition};
use super::{
    ItemWriter, PartitionLocation, PartitionStatistics, ResultPartitionId, ShuffleDescriptor, ShuffleEnvironmentConfig,
    ShuffleWriter, WriteError,
};
use crate::future::BoxFuture;
use crate::graph::ResultPartitionType;
use crate::record::Record;
use crate::resources::Resources;
use crate::storage::{Storage, StorageError, framed};

enum Local {
    Pipelined(PipelinedPartition),
    SortMerge(SortMergePartition),
}

struct Entry {
    local: Local,
    notify: Arc<Notify>,
}

/// What a request gets now.
enum ServeStep {
    /// Items of a pipelined partition, or its end.
    Answer(BufferResponse),
    /// Items of a finished blocking partition, to read from its data file.
    Read { data_path: String, frames: Vec<Frame>, backlog: u64 },
    /// Nothing yet: wait for the partition to change.
    Wait(Arc<Notify>),
}

/// What adding an item did.
enum AddStep {
    /// It is in the partition.
    Added,
    /// It is in the sort buffer, which is full: spill it.
    Spill,
    /// The pipelined subpartition is full: wait for a consumer to take items.
    Wait(Arc<Notify>),
}

/// How long a request waits for data before answering `NotYet`.
const LONG_POLL: Duration = Duration::from_millis(100);

/// A blocking partition's sort buffer when the fault point `sort-buffer-shrunk` fires.
const BUGGIFIED_SORT_BUFFER_BYTES: usize = 1024;

/// The partitions a TaskManager produces and serves; a clone shares them.
#[derive(Clone)]
pub struct ResultPartitionManager {
    entries: Arc<Mutex<BTreeMap<ResultPartitionId, Entry>>>,
    storage: Arc<dyn Storage>,
    config: ShuffleEnvironmentConfig,
    resources: Arc<Resources>,
    /// Where it serves partitions, if it does: readers on the same TaskManager read from it
    /// directly.
    location: Option<PartitionLocation>,
}

impl ResultPartitionManager {
    /// A manager writing blocking partitions to `storage`, charging disk and network time to
    /// `resources`.
    pub fn new(
        storage: Arc<dyn Storage>,
        config: ShuffleEnvironmentConfig,
        resources: Arc<Resources>,
    ) -> ResultPartitionManager {
        ResultPartitionManager { entries: Default::default(), storage, config, resources, location: None }
    }

    /// The same manager, known to serve its partitions at `location` (its TaskManager's).
    pub fn serving_at(self, location: PartitionLocation) -> ResultPartitionManager {
        ResultPartitionManager { location: Some(location), ..self }
    }

    /// True if it is where `location` says a partition lives: a reader on its TaskManager then
    /// asks it directly, as Flink's `LocalInputChannel` does, rather than over the network.
    pub fn serves(&self, location: &PartitionLocation) -> bool {
        self.location.as_ref() == Some(location)
    }

    /// The TaskManager's disk, where its blocking partitions (and its tasks' sort spills) live.
    pub fn storage(&self) -> Arc<dyn Storage> {
        Arc::clone(&self.storage)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ResultPartitionId, Entry>> {
        self.entries.lock().expect("partition lock")
    }

    /// A writer for a partition about to be produced on this TaskManager.
    pub fn create_writer(&self, descriptor: ShuffleDescriptor) -> Box<dyn ShuffleWriter> {
        let id = descriptor.partition;
        let local = match descriptor.partition_type {
            ResultPartitionType::Pipelined => {
                Local::Pipelined(PipelinedPartition::new(descriptor.subpartitions, self.config.pipelined_queue_buffers))
            }
            ResultPartitionType::Blocking => Local::SortMerge(SortMergePartition::new(
                format!("partitions/{id}/data"),
                format!("partitions/{id}/index"),
                descriptor.subpartitions,
            )),
        };
        let previous = self.lock().insert(id, Entry { local, notify: Arc::new(Notify::new()) });
        assert!(previous.is_none(), "internal: partition {id} registered twice");
        let sort_buffer_bytes = match descriptor.partition_type {
            ResultPartitionType::Blocking if crate::buggify!(SortBufferShrunk) => BUGGIFIED_SORT_BUFFER_BYTES,
            _ => self.config.sort_buffer_bytes,
        };
        Box::new(LocalWriter { manager: self.clone(), descriptor, backpressure: Duration::ZERO, sort_buffer_bytes })
    }

    /// Forgets partitions and deletes their files.
    pub async fn release(&self, partitions: &[ResultPartitionId]) {
        let removed: Vec<Entry> = {
            let mut entries = self.lock();
            partitions.iter().filter_map(|id| entries.remove(id)).collect()
        };
        for entry in removed {
            // Wake producers waiting for room: their partition is gone.
            entry.notify.notify_waiters();
            if let Local::SortMerge(partition) = entry.local {
                let _ = self.storage.delete(&partition.data_path).await;
                let _ = self.storage.delete(&partition.index_path).await;
            }
        }
    }

    /// Forgets every partition of attempts before `attempt`.
    pub async fn release_before(&self, attempt: u32) {
        let old: Vec<ResultPartitionId> = self.lock().keys().filter(|id| id.attempt < attempt).copied().collect();
        self.release(&old).await;
    }

    /// Partitions currently held, in id order.
    pub fn partition_ids(&self) -> Vec<ResultPartitionId> {
        self.lock().keys().copied().collect()
    }

    /// Partitions held that can still be read, in id order: pipelined ones, and blocking ones
    /// whose data file is still on disk (a lost file or disk loses them). What a TaskManager
    /// tells a JobMaster it holds.
    pub async fn intact_partition_ids(&self) -> Vec<ResultPartitionId> {
        let Ok(files) = self.storage.list("partitions/").await else { return Vec::new() };
        let files: std::collections::BTreeSet<String> = files.into_iter().collect();
        self.lock()
            .iter()
            .filter(|(_, entry)| match &entry.local {
                Local::Pipelined(_) => true,
                Local::SortMerge(partition) => partition.data_length() == 0 || files.contains(&partition.data_path),
            })
            .map(|(id, _)| *id)
            .collect()
    }

    /// Answers one request of a consumer on another node, charging the disk read (blocking) and
    /// the network send. A request for data not there yet waits up to [`LONG_POLL`], then
    /// answers `NotYet`.
    pub async fn serve(&self, request: RequestBuffers) -> Result<BufferResponse, PartitionRequestError> {
        self.answer(request, true).await
    }

    /// Answers one request of a consumer on this TaskManager, as [`Self::serve`] does but
    /// without the network: its buffers never leave the process (Flink's `LocalInputChannel`).
    pub async fn serve_local(&self, request: RequestBuffers) -> Result<BufferResponse, PartitionRequestError> {
        self.answer(request, false).await
    }

    async fn answer(&self, request: RequestBuffers, remote: bool) -> Result<BufferResponse, PartitionRequestError> {
        let mut waited = false;
        loop {
            let notify = match self.serve_step(&request)? {
                ServeStep::Answer(answer) => {
                    if remote {
                        self.charge_network(&answer).await;
                    }
                    return Ok(answer);
                }
                ServeStep::Read { data_path, frames, backlog } => {
                    return self.read_frames(&data_path, frames, backlog, remote).await;
                }
                ServeStep::Wait(notify) => notify,
            };
            if waited {
                return Ok(BufferResponse::NotYet);
            }
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.ready(&request) {
                continue;
            }
            let _ = crate::rt::time::timeout(LONG_POLL, notified).await;
            waited = true;
        }
    }

    /// What a request gets now, decided under the lock.
    fn serve_step(&self, request: &RequestBuffers) -> Result<ServeStep, PartitionRequestError> {
        let mut entries = self.lock();
        let entry = entries.get_mut(&request.partition).ok_or(PartitionRequestError::NotFound)?;
        match &mut entry.local {
            Local::Pipelined(partition) => {
                let (answer, freed) = partition.serve(request)?;
                if freed {
                    entry.notify.notify_waiters();
                }
                if let Some(answer) = answer {
                    return Ok(ServeStep::Answer(answer));
                }
            }
            Local::SortMerge(partition) if partition.finished => {
                if request.subpartitions.is_empty() || request.subpartitions.end > partition.subpartitions() {
                    return Err(PartitionRequestError::NoSuchSubpartition);
                }
                let (frames, backlog) =
                    partition.frames_for(request.subpartitions.clone(), request.sequence, request.credits);
                return Ok(ServeStep::Read { data_path: partition.data_path.clone(), frames, backlog });
            }
            Local::SortMerge(_) => {}
        }
        Ok(ServeStep::Wait(Arc::clone(&entry.notify)))
    }

    /// True if a request could be answered now (checked after registering for wake-ups: a
    /// producer on another thread may have added what it waits for, and woken nobody, after
    /// `serve_step` looked).
    fn ready(&self, request: &RequestBuffers) -> bool {
        let entries = self.lock();
        match entries.get(&request.partition).map(|entry| &entry.local) {
            None => true,
            Some(Local::SortMerge(partition)) => partition.finished,
            Some(Local::Pipelined(partition)) => partition.can_answer(request),
        }
    }

    async fn read_frames(
        &self,
        data_path: &str,
        frames: Vec<Frame>,
        backlog: u64,
        remote: bool,
    ) -> Result<BufferResponse, PartitionRequestError> {
        if frames.is_empty() {
            return Ok(BufferResponse::EndOfPartition);
        }
        let mut items = Vec::with_capacity(frames.len());
        for frame in frames {
            let bytes = match self.storage.read(data_path, frame.offset, frame.length).await {
                Ok(bytes) => bytes,
                // The file is gone or shorter than its index: the partition is lost.
                Err(StorageError::NotFound(_) | StorageError::OutOfRange { .. }) => {
                    return Err(PartitionRequestError::NotFound);
                }
                Err(
                    StorageError::Unavailable(_)
                    | StorageError::AlreadyExists(_)
                    | StorageError::SyncFailed(_)
                    | StorageError::LengthChanged { .. },
                ) => {
                    return Err(PartitionRequestError::NotFound);
                }
            };
            self.resources.disk_read(bytes.len() as u64).await;
            items.push(if frame.event { StreamItem::Event(bytes) } else { StreamItem::Buffer(bytes) });
        }
        let answer = BufferResponse::Items { items, backlog };
        if remote {
            self.charge_network(&answer).await;
        }
        Ok(answer)
    }

    async fn charge_network(&self, answer: &BufferResponse) {
        if let BufferResponse::Items { items, .. } = answer {
            self.resources.network(items.iter().map(|item| item.len() as u64).sum()).await;
        }
    }
}

/// A writer of a partition held by this TaskManager.
struct LocalWriter {
    manager: ResultPartitionManager,
    descriptor: ShuffleDescriptor,
    backpressure: Duration,
    /// Bytes its sort buffer holds before it spills a region (blocking partitions).
    sort_buffer_bytes: usize,
}

impl LocalWriter {
    fn id(&self) -> ResultPartitionId {
        self.descriptor.partition
    }

    /// Adds an item, waiting for room in a pipelined subpartition; spills a full sort buffer.
    async fn add(&mut self, subpartition: u32, item: StreamItem) -> Result<(), WriteError> {
        let started = crate::rt::time::Instant::now();
        let mut item = Some(item);
        loop {
            let notify = match self.try_add(subpartition, &mut item)? {
                AddStep::Added => break,
                AddStep::Spill => return self.spill().await,
                AddStep::Wait(notify) => notify,
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if !self.has_room(subpartition)? {
                notified.await;
            }
        }
        self.backpressure += started.elapsed();
        Ok(())
    }

    /// Adds the item if there is room, under the lock.
    fn try_add(&self, subpartition: u32, item: &mut Option<StreamItem>) -> Result<AddStep, WriteError> {
        let mut entries = self.manager.lock();
        let entry = entries.get_mut(&self.id()).ok_or(WriteError::Released(self.id()))?;
        let is_event = matches!(item, Some(StreamItem::Event(_)));
        match &mut entry.local {
            Local::Pipelined(partition) if is_event || partition.has_room(subpartition) => {
                partition.push(subpartition, item.take().expect("added once"));
                entry.notify.notify_waiters();
                Ok(AddStep::Added)
            }
            Local::Pipelined(_) => Ok(AddStep::Wait(Arc::clone(&entry.notify))),
            Local::SortMerge(partition) => {
                let threshold = self.sort_buffer_bytes;
                let full = partition.add(subpartition, item.take().expect("added once"), threshold);
                if full {
                    crate::cover!(SortBufferSpilled);
                }
                Ok(if full { AddStep::Spill } else { AddStep::Added })
            }
        }
    }

    /// True unless the pipelined subpartition is full (checked after registering for wake-ups).
    fn has_room(&self, subpartition: u32) -> Result<bool, WriteError> {
        let entries = self.manager.lock();
        let entry = entries.get(&self.id()).ok_or(WriteError::Released(self.id()))?;
        Ok(!matches!(&entry.local, Local::Pipelined(partition) if !partition.has_room(subpartition)))
    }

    /// Writes the sort buffer as a region of the data file.
    async fn spill(&mut self) -> Result<(), WriteError> {
        let (spill, data_path, written) = {
            let mut entries = self.manager.lock();
            let entry = entries.get_mut(&self.id()).ok_or(WriteError::Released(self.id()))?;
            let Local::SortMerge(partition) = &mut entry.local else { unreachable!("only blocking partitions spill") };
            let written = partition.data_length();
            (partition.take_spill(), partition.data_path.clone(), written)
        };
        if spill.bytes.is_empty() {
            return Ok(());
        }
        self.manager.resources.disk_write(spill.bytes.len() as u64).await;
        let storage_error =
            |error: StorageError| WriteError::Storage { partition: self.id(), detail: error.to_string() };
        // A data file lost while the partition is written is refused, never appended to afresh.
        self.manager.storage.append_at(&data_path, written, &spill.bytes).await.map_err(storage_error)?;
        let mut index = Vec::new();
        for entry in &spill.entries {
            index.extend(framed::frame(&entry.to_bytes()));
        }
        let index_path = format!("partitions/{}/index", self.id());
        self.manager.storage.append(&index_path, &index).await.map_err(storage_error)
    }

    async fn complete_partition(&mut self) -> Result<PartitionStatistics, WriteError> {
        let blocking = self.descriptor.partition_type == ResultPartitionType::Blocking;
        if blocking {
            self.spill().await?;
            let storage_error =
                |error: StorageError| WriteError::Storage { partition: self.id(), detail: error.to_string() };
            for path in [format!("partitions/{}/data", self.id()), format!("partitions/{}/index", self.id())] {
                match self.manager.storage.sync(&path).await {
                    Ok(()) => self.manager.resources.disk_sync().await,
                    // A partition with no items has no files: nothing to make durable.
                    Err(StorageError::NotFound(_)) => {}
                    Err(error) => return Err(storage_error(error)),
                }
            }
        }
        let mut entries = self.manager.lock();
        let entry = entries.get_mut(&self.id()).ok_or(WriteError::Released(self.id()))?;
        let statistics = match &mut entry.local {
            Local::Pipelined(partition) => {
                partition.finish();
                PartitionStatistics {
                    bytes_per_subpartition: Vec::new(),
                    backpressure_micros: self.backpressure.as_micros() as u64,
                    peak_buffered_bytes: partition.peak_buffered_bytes(),
                }
            }
            Local::SortMerge(partition) => {
                let id = self.descriptor.partition;
                assert!(!partition.finished, "shuffle invariant: blocking partition {id} finishes once");
                // `spill` above took the write buffer, and nothing is added while it writes.
                assert!(!partition.has_pending(), "shuffle invariant: {id} finishes with every item spilled");
                partition.finished = true;
                PartitionStatistics {
                    bytes_per_subpartition: partition.bytes_per_subpartition().to_vec(),
                    backpressure_micros: 0,
                    peak_buffered_bytes: self.sort_buffer_bytes as u64,
                }
            }
        };
        entry.notify.notify_waiters();
        Ok(statistics)
    }
}

impl ItemWriter for LocalWriter {
    fn descriptor(&self) -> &ShuffleDescriptor {
        &self.descriptor
    }

    fn add_item(&mut self, subpartition: u32, item: StreamItem) -> BoxFuture<'_, Result<(), WriteError>> {
        Box::pin(self.add(subpartition, item))
    }

    fn complete(&mut self) -> BoxFuture<'_, Result<PartitionStatistics, WriteError>> {
        Box::pin(self.complete_partition())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::graph::{IntermediateDataSetId, IntermediateResultPartitionId};
    use crate::shuffle::PartitionLocation;
    use crate::storage::MemoryStorage;

    const BUFFER: usize = 1000;
    const QUEUE: usize = 4;
    const SUBPARTITIONS: u32 = 2;
    const BUFFERS_PER_SUBPARTITION: u8 = 50;

    fn manager(storage: &MemoryStorage) -> ResultPartitionManager {
        let config = ShuffleEnvironmentConfig { pipelined_queue_buffers: QUEUE, ..ShuffleEnvironmentConfig::default() };
        ResultPartitionManager::new(Arc::new(storage.clone()), config, Arc::new(Resources::free()))
    }

    fn descriptor(partition_type: ResultPartitionType) -> ShuffleDescriptor {
        ShuffleDescriptor {
            partition: ResultPartitionId {
                partition: IntermediateResultPartitionId { dataset: IntermediateDataSetId(0), producer_subtask: 0 },
                attempt: 0,
            },
            partition_type,
            subpartitions: SUBPARTITIONS,
            location: PartitionLocation::TaskManager { name: "tm-0".into(), address: "10.0.1.1:1".parse().unwrap() },
        }
    }

    fn request(descriptor: &ShuffleDescriptor, subpartition: u32, sequence: u64) -> RequestBuffers {
        RequestBuffers {
            partition: descriptor.partition,
            subpartitions: subpartition..subpartition + 1,
            sequence,
            credits: 2,
        }
    }

    /// Reads a subpartition to its end, one request at a time, pausing `pause` between requests.
    async fn read_all(
        manager: &ResultPartitionManager,
        descriptor: &ShuffleDescriptor,
        subpartition: u32,
        pause: Duration,
    ) -> Vec<StreamItem> {
        let mut items = Vec::new();
        loop {
            crate::rt::time::sleep(pause).await;
            match manager.serve(request(descriptor, subpartition, items.len() as u64)).await.unwrap() {
                BufferResponse::Items { items: more, .. } => items.extend(more),
                BufferResponse::EndOfPartition => return items,
                BufferResponse::NotYet => {}
            }
        }
    }

    #[madsim::test]
    async fn a_slow_consumer_holds_a_pipelined_producer_within_its_queues() {
        {
            let manager = manager(&MemoryStorage::new());
            let descriptor = descriptor(ResultPartitionType::Pipelined);
            let mut writer = manager.create_writer(descriptor.clone());
            let producer = crate::rt::task::spawn(async move {
                for index in 0..BUFFERS_PER_SUBPARTITION {
                    for subpartition in 0..SUBPARTITIONS {
                        writer.write_buffer(subpartition, vec![index; BUFFER]).await.unwrap();
                    }
                }
                writer.finish().await.unwrap()
            });
            let readers: Vec<_> = (0..SUBPARTITIONS)
                .map(|subpartition| {
                    let (manager, descriptor) = (manager.clone(), descriptor.clone());
                    crate::rt::task::spawn(async move {
                        read_all(&manager, &descriptor, subpartition, Duration::from_millis(10)).await
                    })
                })
                .collect();
            let statistics = producer.await.unwrap();
            for reader in readers {
                let items = reader.await.unwrap();
                let expected: Vec<StreamItem> =
                    (0..BUFFERS_PER_SUBPARTITION).map(|index| StreamItem::Buffer(vec![index; BUFFER])).collect();
                assert_eq!(items, expected, "every buffer arrives once, in order");
            }
            let bound = (QUEUE * SUBPARTITIONS as usize * BUFFER) as u64;
            assert!(
                statistics.peak_buffered_bytes <= bound,
                "{} buffered, bound {bound}",
                statistics.peak_buffered_bytes
            );
            assert!(statistics.peak_buffered_bytes >= (QUEUE * BUFFER) as u64, "the queues filled up: {statistics:?}");
            assert!(
                statistics.backpressure_micros >= 100_000,
                "the producer waited for the slow consumer: {statistics:?}"
            );
        }
    }

    #[madsim::test]
    async fn a_blocking_partition_is_read_by_subpartition_ranges_and_lost_with_its_files() {
        {
            let storage = MemoryStorage::new();
            let manager = manager(&storage);
            let descriptor = descriptor(ResultPartitionType::Blocking);
            let mut writer = manager.create_writer(descriptor.clone());
            for index in 0..BUFFERS_PER_SUBPARTITION {
                for subpartition in 0..SUBPARTITIONS {
                    writer.write_buffer(subpartition, vec![index; BUFFER]).await.unwrap();
                }
            }
            let statistics = writer.finish().await.unwrap();
            assert_eq!(statistics.bytes_per_subpartition, vec![50_000, 50_000]);
            // One request for both subpartitions reads them as one stream, the first first.
            let both = RequestBuffers { subpartitions: 0..2, credits: 200, ..request(&descriptor, 0, 0) };
            let BufferResponse::Items { items, backlog: 0 } = manager.serve(both).await.unwrap() else {
                panic!("a finished partition answers with items")
            };
            assert_eq!(items.len(), 100);
            assert_eq!(items[0], StreamItem::Buffer(vec![0; BUFFER]));
            assert_eq!(items[50], StreamItem::Buffer(vec![0; BUFFER]));
            assert_eq!(items[99], StreamItem::Buffer(vec![49; BUFFER]));
            // The files were synced: a crash keeps them.
            storage.crash();
            assert_eq!(read_all(&manager, &descriptor, 1, Duration::ZERO).await.len(), 50);
            // A lost data file reads as a partition the TaskManager does not have.
            storage.lose(&format!("partitions/{}/data", descriptor.partition));
            assert_eq!(manager.serve(request(&descriptor, 0, 0)).await, Err(PartitionRequestError::NotFound));
        }
    }
}
