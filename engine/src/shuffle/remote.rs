//! The remote shuffle service (think Celeborn or flink-remote-shuffle): BLOCKING partitions
//! pushed by producers to a service node of their own, fetched from it by consumers, and so
//! surviving the TaskManagers that produced them.
//!
//! - [`RemoteWriter`] (producer side) collects items per subpartition and pushes them in
//!   batches; a push names the sequence number of its first item, so a retried push is stored
//!   once. `FinishPartition` makes the partition durable and servable.
//! - [`run_shuffle_service`] (the service): appends pushed items to one data file per
//!   partition; at finish it syncs the data and writes an index (checksummed records), so that
//!   a restarted service serves every finished partition again. A partition unfinished at a
//!   crash is gone, and its producer's next push learns so (a gap).
//!
//! The service reads and writes through its own [`Storage`]: it can lose a file, its disk, or
//! everything unsynced, like any node.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::protocol::{
    BufferResponse, FinishPartition, ListPartitions, PartitionRequestError, PushError, PushItems, ReleasePartitions,
    RequestBuffers, StreamItem,
};
use super::sort_merge::{Frame, IndexEntry, frames_for, frames_from_index};
use super::{ItemWriter, PartitionStatistics, ResultPartitionId, ShuffleDescriptor, WriteError};
use crate::buggify::FaultPoint;
use crate::future::BoxFuture;
use crate::record::Record;
use crate::resources::Resources;
use crate::rpc::{RpcClient, RpcError, serve};
use crate::storage::{Storage, StorageError, framed, read_all};
use crate::trace::{TraceEvent, TracerHandle};

/// How long a push or finish waits for the service, and how often it is tried.
const PUSH_TIMEOUT: Duration = Duration::from_millis(500);
const PUSH_ATTEMPTS: u32 = 10;

/// Bytes a producer collects per subpartition before it pushes them.
const PUSH_BYTES: usize = 64 * 1024;

/// How long a fetch for an unfinished partition waits before answering `NotYet`.
const LONG_POLL: Duration = Duration::from_millis(100);

fn data_path(partition: ResultPartitionId) -> String {
    format!("shuffle/{partition}/data")
}

fn index_path(partition: ResultPartitionId) -> String {
    format!("shuffle/{partition}/index")
}

/// A producer's writer to the shuffle service; see the module doc.
pub struct RemoteWriter {
    descriptor: ShuffleDescriptor,
    client: RpcClient,
    pending: Vec<Vec<StreamItem>>,
    pending_bytes: Vec<usize>,
    pushed: Vec<u64>,
    bytes_per_subpartition: Vec<u64>,
    resources: Arc<Resources>,
}

impl RemoteWriter {
    /// A writer of `descriptor`'s partition, pushing from `client`'s endpoint.
    pub fn new(descriptor: ShuffleDescriptor, client: RpcClient, resources: Arc<Resources>) -> RemoteWriter {
        let subpartitions = descriptor.subpartitions as usize;
        RemoteWriter {
            descriptor,
            client,
            pending: vec![Vec::new(); subpartitions],
            pending_bytes: vec![0; subpartitions],
            pushed: vec![0; subpartitions],
            bytes_per_subpartition: vec![0; subpartitions],
            resources,
        }
    }

    fn unavailable(&self, detail: String) -> WriteError {
        WriteError::ServiceUnavailable { partition: self.descriptor.partition, detail }
    }

    /// Calls the service until it answers, at most [`PUSH_ATTEMPTS`] times; a reply lost after
    /// the service applied the request (the fault point `lost_reply`, if any) is retried too.
    async fn call<R: crate::rpc::Request<Response = Result<(), PushError>> + Clone>(
        &self,
        request: R,
        lost_reply: Option<FaultPoint>,
    ) -> Result<(), WriteError> {
        let address = self.descriptor.location.address();
        let mut last = String::new();
        for _ in 0..PUSH_ATTEMPTS {
            match self.client.call(address, request.clone(), PUSH_TIMEOUT).await {
                // The fault point: the service stored the push, and its reply was lost.
                Ok(Ok(())) if lost_reply.is_some_and(crate::buggify::fires) => {
                    last = "the reply to a stored push was lost".to_string();
                }
                Ok(Ok(())) => return Ok(()),
                Ok(Err(error)) => return Err(self.unavailable(format!("{error:?}"))),
                Err(error @ RpcError::Timeout { .. }) => last = error.to_string(),
                Err(error) => return Err(self.unavailable(error.to_string())),
            }
        }
        Err(self.unavailable(last))
    }

    async fn push(&mut self, subpartition: u32) -> Result<(), WriteError> {
        let items = std::mem::take(&mut self.pending[subpartition as usize]);
        if items.is_empty() {
            return Ok(());
        }
        let bytes: usize = std::mem::take(&mut self.pending_bytes[subpartition as usize]);
        self.resources.network(bytes as u64).await;
        let count = items.len() as u64;
        let request = PushItems {
            partition: self.descriptor.partition,
            subpartitions: self.descriptor.subpartitions,
            subpartition,
            first_sequence: self.pushed[subpartition as usize],
            items,
        };
        self.call(request, Some(FaultPoint::ShufflePushReplyLost)).await?;
        self.pushed[subpartition as usize] += count;
        Ok(())
    }

    async fn add(&mut self, subpartition: u32, item: StreamItem) -> Result<(), WriteError> {
        let index = subpartition as usize;
        self.pending_bytes[index] += item.len();
        if let StreamItem::Buffer(bytes) = &item {
            self.bytes_per_subpartition[index] += bytes.len() as u64;
        }
        self.pending[index].push(item);
        if self.pending_bytes[index] >= PUSH_BYTES {
            self.push(subpartition).await?;
        }
        Ok(())
    }

    async fn complete_partition(&mut self) -> Result<PartitionStatistics, WriteError> {
        for subpartition in 0..self.descriptor.subpartitions {
            self.push(subpartition).await?;
        }
        self.check_all_pushed();
        self.call(
            FinishPartition { partition: self.descriptor.partition, items_per_subpartition: self.pushed.clone() },
            None,
        )
        .await?;
        Ok(PartitionStatistics {
            bytes_per_subpartition: self.bytes_per_subpartition.clone(),
            backpressure_micros: 0,
            peak_buffered_bytes: (PUSH_BYTES * self.pending.len()) as u64,
        })
    }

    /// Before finishing: every item was pushed and acknowledged, so the counts the service
    /// compares with what it holds are one per subpartition, of every item added.
    fn check_all_pushed(&self) {
        let partition = self.descriptor.partition;
        let subpartitions = self.descriptor.subpartitions as usize;
        assert!(self.pending.iter().all(Vec::is_empty), "shuffle invariant: {partition} finishes with all pushed");
        assert!(
            self.pending_bytes.iter().all(|bytes| *bytes == 0),
            "shuffle invariant: {partition} finishes with no bytes waiting to be pushed"
        );
        assert_eq!(self.pushed.len(), subpartitions, "shuffle invariant: {partition} counts each subpartition's items");
    }
}

impl ItemWriter for RemoteWriter {
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

/// How the shuffle service is set up.
#[derive(Clone)]
pub struct ShuffleServiceConfig {
    /// Where it serves.
    pub address: SocketAddr,
    /// Its disk: outlives the process.
    pub storage: Arc<dyn Storage>,
    /// Its disk's and network interface's costs.
    pub resources: Arc<Resources>,
    /// Where its events go.
    pub tracer: TracerHandle,
}

/// What finishing a partition takes.
enum FinishStep {
    AlreadyFinished,
    Empty,
    /// The index to write, over this many bytes of data.
    WriteIndex(Vec<u8>, u64),
}

struct Held {
    frames: Vec<Vec<Frame>>,
    data_length: u64,
    finished: bool,
}

struct Service {
    partitions: Mutex<BTreeMap<ResultPartitionId, Held>>,
    finished: tokio::sync::Notify,
    config: ShuffleServiceConfig,
    /// Held while a push appends: a retried push that overtakes its slow original must see
    /// what the original stored, or the same items are stored twice.
    appends: tokio::sync::Mutex<()>,
}

/// Runs the shuffle service until its node is killed.
pub async fn run_shuffle_service(config: ShuffleServiceConfig) {
    let recovered = recover(config.storage.as_ref()).await;
    config.tracer.record(TraceEvent::ShuffleServiceStarted { partitions: recovered.len() as u32 });
    let endpoint = crate::rpc::bind(config.address)
        .await
        .unwrap_or_else(|error| panic!("internal: the shuffle service cannot bind {}: {error}", config.address));
    let service = Arc::new(Service {
        partitions: Mutex::new(recovered),
        finished: tokio::sync::Notify::new(),
        appends: tokio::sync::Mutex::new(()),
        config,
    });
    let this = Arc::clone(&service);
    serve(&endpoint, move |request: PushItems| {
        let this = Arc::clone(&this);
        async move { this.push(request).await }
    });
    let this = Arc::clone(&service);
    serve(&endpoint, move |request: FinishPartition| {
        let this = Arc::clone(&this);
        async move { this.finish(request).await }
    });
    let this = Arc::clone(&service);
    serve(&endpoint, move |request: RequestBuffers| {
        let this = Arc::clone(&this);
        async move { this.fetch(request).await }
    });
    let this = Arc::clone(&service);
    serve(&endpoint, move |request: ReleasePartitions| {
        let this = Arc::clone(&this);
        async move { this.release(request.partitions).await }
    });
    let this = Arc::clone(&service);
    serve(&endpoint, move |_: ListPartitions| {
        let held: Vec<ResultPartitionId> =
            this.lock().iter().filter(|(_, held)| held.finished).map(|(id, _)| *id).collect();
        async move { held }
    });
    crate::rpc::serve_health(&endpoint, "shuffle-service");
    std::future::pending::<()>().await;
}

/// The finished partitions on disk; anything unfinished or damaged is deleted.
async fn recover(storage: &dyn Storage) -> BTreeMap<ResultPartitionId, Held> {
    let mut recovered = BTreeMap::new();
    let paths = storage.list("shuffle/").await.unwrap_or_default();
    let mut partitions: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for path in paths {
        if let Some((directory, _)) = path.rsplit_once('/') {
            partitions.entry(directory.to_string()).or_default().push(path);
        }
    }
    for (directory, files) in partitions {
        match read_index(storage, &directory).await {
            Some((id, held)) => {
                recovered.insert(id, held);
            }
            None => {
                for file in files {
                    let _ = storage.delete(&file).await;
                }
            }
        }
    }
    recovered
}

/// Reads a partition's index: `None` if it is missing or damaged.
async fn read_index(storage: &dyn Storage, directory: &str) -> Option<(ResultPartitionId, Held)> {
    let bytes = read_all(storage, &format!("{directory}/index")).await.ok()?;
    let (records, damaged) = framed::unframe(&bytes);
    let (header, entries) = records.split_first()?;
    if damaged {
        return None;
    }
    let (id_text, subpartitions) = <(String, u32)>::from_bytes(header).ok()?;
    let entries: Vec<IndexEntry> =
        entries.iter().map(|record| IndexEntry::from_bytes(record)).collect::<Result<_, _>>().ok()?;
    let data_length = entries.iter().map(|entry| entry.frame.offset + entry.frame.length).max().unwrap_or(0);
    let id = parse_partition_id(&id_text)?;
    Some((id, Held { frames: frames_from_index(subpartitions, &entries), data_length, finished: true }))
}

/// Parses the `Display` form `ds{d}.p{p}@a{a}`.
fn parse_partition_id(text: &str) -> Option<ResultPartitionId> {
    let rest = text.strip_prefix("ds")?;
    let (dataset, rest) = rest.split_once(".p")?;
    let (producer, attempt) = rest.split_once("@a")?;
    Some(ResultPartitionId {
        partition: crate::graph::IntermediateResultPartitionId {
            dataset: crate::graph::IntermediateDataSetId(dataset.parse().ok()?),
            producer_subtask: producer.parse().ok()?,
        },
        attempt: attempt.parse().ok()?,
    })
}

impl Service {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<ResultPartitionId, Held>> {
        self.partitions.lock().expect("shuffle service lock")
    }

    async fn push(&self, request: PushItems) -> Result<(), PushError> {
        let _appending = self.appends.lock().await;
        let (held_items, offset) = {
            let mut partitions = self.lock();
            let held = partitions.entry(request.partition).or_insert_with(|| Held {
                frames: vec![Vec::new(); request.subpartitions as usize],
                data_length: 0,
                finished: false,
            });
            if held.finished {
                return Err(PushError::Rejected(format!("partition {} is already finished", request.partition)));
            }
            let frames = held.frames.get(request.subpartition as usize).ok_or_else(|| {
                PushError::Rejected(format!(
                    "partition {} has no subpartition {}",
                    request.partition, request.subpartition
                ))
            })?;
            let held_items = frames.len() as u64;
            if request.first_sequence > held_items {
                return Err(PushError::Gap { held: held_items });
            }
            (held_items, held.data_length)
        };
        let skip = (held_items - request.first_sequence) as usize;
        let fresh = &request.items[skip.min(request.items.len())..];
        if fresh.is_empty() {
            crate::cover!(RetriedPushFoundApplied);
            return Ok(()); // a retried push that was applied
        }
        let mut bytes = Vec::new();
        let mut new_frames = Vec::new();
        let mut position = offset;
        for item in fresh {
            let frame =
                Frame { offset: position, length: item.len() as u64, event: matches!(item, StreamItem::Event(_)) };
            let (StreamItem::Buffer(data) | StreamItem::Event(data)) = item;
            bytes.extend_from_slice(data);
            position += frame.length;
            new_frames.push(frame);
        }
        self.config.resources.disk_write(bytes.len() as u64).await;
        self.config
            .storage
            .append_at(&data_path(request.partition), offset, &bytes)
            .await
            .map_err(|error| PushError::Rejected(error.to_string()))?;
        let mut partitions = self.lock();
        let held = partitions.get_mut(&request.partition).ok_or_else(|| PushError::Rejected("released".to_string()))?;
        check_append(held, &request, held_items, offset);
        held.frames[request.subpartition as usize].extend(new_frames);
        held.data_length = position;
        assert_eq!(
            held.frames[request.subpartition as usize].len() as u64,
            request.first_sequence + request.items.len() as u64,
            "shuffle invariant: a push, retried or not, stores each of its items once ({} subpartition {})",
            request.partition,
            request.subpartition
        );
        Ok(())
    }

    async fn finish(&self, request: FinishPartition) -> Result<(), PushError> {
        let (index, data_length) = match self.finish_step(&request)? {
            FinishStep::AlreadyFinished => return Ok(()), // a retried finish
            FinishStep::Empty => return self.finish_empty(request).await,
            FinishStep::WriteIndex(index, data_length) => (index, data_length),
        };
        self.make_durable(request.partition, data_length, &index).await?;
        let mut partitions = self.lock();
        let held = partitions.get_mut(&request.partition).ok_or_else(|| PushError::Rejected("released".to_string()))?;
        self.check_durable(request.partition, held.data_length, index.len() as u64);
        held.finished = true;
        let bytes = held.data_length;
        drop(partitions);
        self.config.tracer.record(TraceEvent::PartitionStored { partition: request.partition.to_string(), bytes });
        self.finished.notify_waiters();
        Ok(())
    }

    /// What finishing a partition takes, decided under the lock.
    fn finish_step(&self, request: &FinishPartition) -> Result<FinishStep, PushError> {
        let partitions = self.lock();
        let Some(held) = partitions.get(&request.partition) else {
            // Nothing was pushed: an empty partition, or a lost one.
            return if request.items_per_subpartition.iter().all(|count| *count == 0) {
                Ok(FinishStep::Empty)
            } else {
                Err(PushError::Gap { held: 0 })
            };
        };
        if held.finished {
            return Ok(FinishStep::AlreadyFinished);
        }
        let held_counts: Vec<u64> = held.frames.iter().map(|frames| frames.len() as u64).collect();
        if held_counts != request.items_per_subpartition {
            return Err(PushError::Gap { held: held_counts.iter().sum() });
        }
        Ok(FinishStep::WriteIndex(index_bytes(request.partition, &held.frames), held.data_length))
    }

    async fn finish_empty(&self, request: FinishPartition) -> Result<(), PushError> {
        let frames = vec![Vec::new(); request.items_per_subpartition.len()];
        let index = index_bytes(request.partition, &frames);
        self.make_durable(request.partition, 0, &index).await?;
        self.check_durable(request.partition, 0, index.len() as u64);
        self.lock().insert(request.partition, Held { frames, data_length: 0, finished: true });
        self.config.tracer.record(TraceEvent::PartitionStored { partition: request.partition.to_string(), bytes: 0 });
        self.finished.notify_waiters();
        Ok(())
    }

    /// A finished partition is acknowledged only once its data and index are synced: a
    /// restarted service serves it from them.
    fn check_durable(&self, partition: ResultPartitionId, data_length: u64, index_length: u64) {
        let storage = self.config.storage.as_ref();
        let promise = "the shuffle service acknowledges a finished partition";
        let data = data_path(partition);
        crate::storage::check_synced(storage.synced_length(&data), &data, data_length, promise);
        let index = index_path(partition);
        crate::storage::check_synced(storage.synced_length(&index), &index, index_length, promise);
    }

    /// Syncs the partition's data, then writes and syncs its index: an index is written only
    /// over data already synced, or a crash between the two would keep an index of lost data.
    async fn make_durable(
        &self,
        partition: ResultPartitionId,
        data_length: u64,
        index: &[u8],
    ) -> Result<(), PushError> {
        let storage = self.config.storage.as_ref();
        let refused = |error: StorageError| PushError::Rejected(error.to_string());
        let data = data_path(partition);
        // A data file lost or cut while the partition was pushed (a lost disk or file) is
        // refused here rather than indexed: the producer learns its partition is gone.
        if data_length > 0 {
            storage.sync_through(&data, data_length).await.map_err(refused)?;
            self.config.resources.disk_sync().await;
        }
        let promise = "an index is written only over synced data";
        crate::storage::check_synced(storage.synced_length(&data), &data, data_length, promise);
        storage.delete(&index_path(partition)).await.map_err(refused)?;
        crate::storage::append_durably(storage, &index_path(partition), index).await.map_err(refused)
    }

    async fn fetch(&self, request: RequestBuffers) -> Result<BufferResponse, PartitionRequestError> {
        for attempt in 0..2 {
            let notified = self.finished.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let frames = {
                let partitions = self.lock();
                let held = partitions.get(&request.partition).ok_or(PartitionRequestError::NotFound)?;
                if request.subpartitions.is_empty() || request.subpartitions.end as usize > held.frames.len() {
                    return Err(PartitionRequestError::NoSuchSubpartition);
                }
                held.finished
                    .then(|| frames_for(&held.frames, request.subpartitions.clone(), request.sequence, request.credits))
            };
            match frames {
                Some((frames, backlog)) => return self.read(request.partition, frames, backlog).await,
                None if attempt == 0 => {
                    let _ = crate::rt::time::timeout(LONG_POLL, notified).await;
                }
                None => {}
            }
        }
        Ok(BufferResponse::NotYet)
    }

    async fn read(
        &self,
        partition: ResultPartitionId,
        frames: Vec<Frame>,
        backlog: u64,
    ) -> Result<BufferResponse, PartitionRequestError> {
        if frames.is_empty() {
            return Ok(BufferResponse::EndOfPartition);
        }
        let mut items = Vec::with_capacity(frames.len());
        for frame in frames {
            let bytes = self
                .config
                .storage
                .read(&data_path(partition), frame.offset, frame.length)
                .await
                .map_err(|_| PartitionRequestError::NotFound)?;
            self.config.resources.disk_read(bytes.len() as u64).await;
            self.config.resources.network(bytes.len() as u64).await;
            items.push(if frame.event { StreamItem::Event(bytes) } else { StreamItem::Buffer(bytes) });
        }
        Ok(BufferResponse::Items { items, backlog })
    }

    async fn release(&self, partitions: Vec<ResultPartitionId>) {
        for partition in partitions {
            self.lock().remove(&partition);
            let _ = self.config.storage.delete(&data_path(partition)).await;
            let _ = self.config.storage.delete(&index_path(partition)).await;
        }
    }
}

/// What a push relies on between deciding what to store and storing it: pushes append one at a
/// time (the `appends` lock), so the subpartition and the data file are as it found them, and a
/// partition is finished only once every item was acknowledged, so not while items are unstored.
fn check_append(held: &Held, request: &PushItems, held_items: u64, offset: u64) {
    let (partition, subpartition) = (request.partition, request.subpartition);
    assert_eq!(
        held.frames[subpartition as usize].len() as u64,
        held_items,
        "shuffle invariant: pushes append one at a time ({partition} subpartition {subpartition})"
    );
    assert_eq!(held.data_length, offset, "shuffle invariant: pushes append one at a time ({partition}'s data file)");
    assert!(!held.finished, "shuffle invariant: {partition} is finished only after every push was stored");
}

/// A partition's index: a header (its id and subpartitions), then one record per item.
fn index_bytes(partition: ResultPartitionId, frames: &[Vec<Frame>]) -> Vec<u8> {
    let mut bytes = framed::frame(&(partition.to_string(), frames.len() as u32).to_bytes());
    for (subpartition, frames) in frames.iter().enumerate() {
        for frame in frames {
            bytes.extend(framed::frame(&IndexEntry { subpartition: subpartition as u32, frame: *frame }.to_bytes()));
        }
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    // Crashing and restarting a node needs the simulation's nodes: these tests exist only there.
    #[cfg(madsim)]
    mod crash {
        use super::*;
        use crate::graph::{IntermediateDataSetId, IntermediateResultPartitionId, ResultPartitionType};
        use crate::shuffle::{PartitionLocation, ShuffleWriter};
        use crate::storage::MemoryStorage;
        use crate::trace::NoopTracer;

        const SERVICE: &str = "10.0.5.1:9700";

        fn descriptor(producer_subtask: u32) -> ShuffleDescriptor {
            ShuffleDescriptor {
                partition: ResultPartitionId {
                    partition: IntermediateResultPartitionId { dataset: IntermediateDataSetId(1), producer_subtask },
                    attempt: 0,
                },
                partition_type: ResultPartitionType::Blocking,
                subpartitions: 2,
                location: PartitionLocation::Remote { address: SERVICE.parse().unwrap() },
            }
        }

        /// Every item of subpartition 0..2 of a partition, or why it cannot be read.
        async fn fetch_all(
            client: &RpcClient,
            descriptor: &ShuffleDescriptor,
        ) -> Result<Vec<StreamItem>, PartitionRequestError> {
            let mut items = Vec::new();
            loop {
                let request = RequestBuffers {
                    partition: descriptor.partition,
                    subpartitions: 0..2,
                    sequence: items.len() as u64,
                    credits: 8,
                };
                match client
                    .call(descriptor.location.address(), request, Duration::from_secs(1))
                    .await
                    .expect("the service answers")?
                {
                    BufferResponse::Items { items: more, .. } => items.extend(more),
                    BufferResponse::EndOfPartition => return Ok(items),
                    BufferResponse::NotYet => {}
                }
            }
        }

        #[madsim::test]
        async fn the_service_keeps_finished_partitions_across_a_crash_and_loses_them_with_its_disk() {
            {
                let handle = madsim::runtime::Handle::current();
                let disk = MemoryStorage::new();
                let config = ShuffleServiceConfig {
                    address: SERVICE.parse().unwrap(),
                    storage: Arc::new(disk.clone()),
                    resources: Arc::new(Resources::free()),
                    tracer: Arc::new(NoopTracer),
                };
                let service = handle
                    .create_node()
                    .name("shuffle-service")
                    .ip(config.address.ip())
                    .init(move || run_shuffle_service(config.clone()))
                    .build();
                let producer = handle.create_node().name("producer").ip("10.0.1.1".parse().unwrap()).build();
                let (finished, unfinished) = (descriptor(0), descriptor(1));
                let written: Vec<StreamItem> = (0..40u8).map(|index| StreamItem::Buffer(vec![index; 4000])).collect();
                let (to_write, to_push) = (written.clone(), unfinished.clone());
                producer
                    .spawn(async move {
                        crate::rt::time::sleep(Duration::from_millis(10)).await;
                        let client = RpcClient::bind_ephemeral().await.unwrap();
                        let resources = Arc::new(Resources::free());
                        let mut writer = RemoteWriter::new(finished.clone(), client.clone(), Arc::clone(&resources));
                        for (index, item) in to_write.into_iter().enumerate() {
                            let StreamItem::Buffer(bytes) = item else { unreachable!() };
                            writer.write_buffer(index as u32 % 2, bytes).await.unwrap();
                        }
                        writer.finish().await.unwrap();
                        // Enough to push, never finished.
                        let mut partial = RemoteWriter::new(to_push, client, resources);
                        for index in 0..40u8 {
                            partial.write_buffer(0, vec![index; 4000]).await.unwrap();
                        }
                    })
                    .await
                    .unwrap();
                let (finished, reader) =
                    (descriptor(0), handle.create_node().name("reader").ip("10.0.1.2".parse().unwrap()).build());
                let expected: Vec<StreamItem> =
                    written.iter().step_by(2).chain(written.iter().skip(1).step_by(2)).cloned().collect();
                let read = |descriptor: ShuffleDescriptor| {
                    reader.spawn(async move {
                        let client = RpcClient::bind_ephemeral().await.unwrap();
                        fetch_all(&client, &descriptor).await
                    })
                };
                assert_eq!(read(finished.clone()).await.unwrap(), Ok(expected.clone()), "served while running");
                assert!(disk.paths("shuffle/").iter().any(|path| path.contains(&unfinished.partition.to_string())));

                // A crash: the finished partition was synced with its index; the unfinished one was not.
                handle.kill(service.id());
                disk.crash();
                handle.restart(service.id());
                crate::rt::time::sleep(Duration::from_millis(50)).await;
                assert_eq!(
                    read(finished.clone()).await.unwrap(),
                    Ok(expected),
                    "a restarted service serves what it finished"
                );
                assert_eq!(read(unfinished.clone()).await.unwrap(), Err(PartitionRequestError::NotFound));
                assert!(!disk.paths("shuffle/").iter().any(|path| path.contains(&unfinished.partition.to_string())));

                // Losing the disk loses everything, even across a restart.
                handle.kill(service.id());
                disk.wipe();
                handle.restart(service.id());
                crate::rt::time::sleep(Duration::from_millis(50)).await;
                assert_eq!(read(finished).await.unwrap(), Err(PartitionRequestError::NotFound));
            }
        }
    }

    #[test]
    fn partition_ids_round_trip_through_their_display_form() {
        let id = ResultPartitionId {
            partition: crate::graph::IntermediateResultPartitionId {
                dataset: crate::graph::IntermediateDataSetId(3),
                producer_subtask: 11,
            },
            attempt: 2,
        };
        assert_eq!(parse_partition_id(&id.to_string()), Some(id));
        assert_eq!(parse_partition_id("garbage"), None);
    }
}
