//! [`InputGate`]: the consumer side of a task's inputs, one fetcher per channel, with
//! credit-based flow control.
//!
//! Each channel owns `credits` slots: its fetcher asks the partition's server for as many items
//! as it has free slots (at least one), and a slot is freed only when the task takes the item.
//! So a slow task holds its producers back with bounded memory on both sides. A channel that
//! cannot be read fails the gate with an error naming the partition (its data set and producer
//! subtask) and where it lives, so that failover knows what to re-run.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use super::protocol::{BufferResponse, PartitionRequestError, RequestBuffers, StreamItem};
use super::{GateEventKind, ResultPartitionId, ResultPartitionManager, ShuffleDescriptor, ShuffleReader};
use crate::future::BoxFuture;
use crate::rpc::{RpcClient, RpcError};

/// Where one channel reads from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputChannelSpec {
    /// The producer's partition and where it lives.
    pub descriptor: ShuffleDescriptor,
    /// The subpartitions this channel reads, as one stream.
    pub subpartitions: std::ops::Range<u32>,
    /// Its producer had finished when this consumer was deployed: if its server does not hold
    /// it, it is lost (otherwise the producer may not have registered it yet).
    #[serde(default)]
    pub finished: bool,
}

impl InputChannelSpec {
    /// The partition read.
    pub fn partition(&self) -> ResultPartitionId {
        self.descriptor.partition
    }
}

/// Why an input could not be read; a task fails with it as [`crate::runtime::TaskFailure::Input`],
/// and the JobMaster restarts the partition's producer too.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ShuffleError {
    /// The partition's server does not hold it (Flink's `PartitionNotFoundException`).
    PartitionNotFound {
        /// The partition.
        partition: ResultPartitionId,
        /// Where it should have been.
        location: String,
    },
    /// The partition's server does not answer (Flink's `PartitionConnectionException`).
    ProducerUnreachable {
        /// The partition.
        partition: ResultPartitionId,
        /// Where it should have been.
        location: String,
    },
    /// The partition's bytes cannot be read or decoded.
    Corrupt {
        /// The partition.
        partition: ResultPartitionId,
        /// What was wrong.
        detail: String,
    },
}

impl ShuffleError {
    /// The partition that could not be read.
    pub fn partition(&self) -> ResultPartitionId {
        match self {
            ShuffleError::PartitionNotFound { partition, .. }
            | ShuffleError::ProducerUnreachable { partition, .. }
            | ShuffleError::Corrupt { partition, .. } => *partition,
        }
    }

    /// True if the partition's data is gone or damaged where it lives (not merely out of reach),
    /// so other partitions held there may be too.
    pub fn data_lost(&self) -> bool {
        !matches!(self, ShuffleError::ProducerUnreachable { .. })
    }
}

impl fmt::Display for ShuffleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShuffleError::PartitionNotFound { partition, location } => write!(
                f,
                "partition {partition} (data set {}, producer subtask {}) not found on {location}",
                partition.partition.dataset.0, partition.partition.producer_subtask
            ),
            ShuffleError::ProducerUnreachable { partition, location } => {
                write!(f, "{location}, holding partition {partition}, is unreachable")
            }
            ShuffleError::Corrupt { partition, detail } => write!(f, "input {partition} corrupt: {detail}"),
        }
    }
}

/// Timing and flow control of channel requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputGateConfig {
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// Consecutive timeouts after which the server counts as unreachable.
    pub max_timeouts: u32,
    /// How long a channel keeps asking for a partition its server does not hold yet (a
    /// pipelined producer may still be deploying) before it reports partition-not-found.
    pub partition_wait: Duration,
    /// Items a channel can hold (its credits).
    pub credits: u32,
}

impl Default for InputGateConfig {
    fn default() -> Self {
        InputGateConfig {
            request_timeout: Duration::from_secs(1),
            max_timeouts: 3,
            partition_wait: Duration::from_secs(2),
            credits: 4,
        }
    }
}

/// What a gate yields.
pub enum GateEvent {
    /// A sealed buffer or an event from channel `channel`.
    Item {
        /// Index into the gate's channels.
        channel: usize,
        /// Buffer or event.
        kind: GateEventKind,
        /// Its bytes.
        bytes: Vec<u8>,
    },
    /// Channel `channel` delivered its last item.
    ChannelEnd {
        /// Index into the gate's channels.
        channel: usize,
    },
    /// Every channel reached its end.
    EndOfInput,
}

enum ChannelMessage {
    Item(usize, StreamItem, OwnedSemaphorePermit),
    /// The channel's end, after the items its fetcher received (and sent) before it.
    End(usize, u64),
    Failed(ShuffleError),
}

/// An item of a blocked channel, held until the channel is unblocked; it keeps its credit, so
/// the channel's fetcher stops asking once its credits are held.
enum Held {
    Item(StreamItem, OwnedSemaphorePermit),
    /// The end, after this many items.
    End(u64),
}

/// The channels of a task's inputs; see the module doc.
pub struct InputGate {
    receiver: mpsc::UnboundedReceiver<ChannelMessage>,
    fetchers: Vec<crate::rt::task::JoinHandle<()>>,
    open_channels: usize,
    blocked: BTreeSet<usize>,
    held: BTreeMap<usize, VecDeque<Held>>,
    /// Items of unblocked channels, delivered before anything newer.
    released: VecDeque<(usize, Held)>,
    /// Per channel, items delivered to the task: at its end, what its fetcher received.
    delivered: Vec<u64>,
    /// Per channel, whether its end was delivered.
    ended: Vec<bool>,
}

impl InputGate {
    /// Starts one fetcher per channel. A channel whose partition lives in `local` (the
    /// TaskManager's own partitions) asks it directly; the others ask over the network.
    pub fn open(
        channels: Vec<InputChannelSpec>,
        client: RpcClient,
        local: Option<ResultPartitionManager>,
        config: InputGateConfig,
    ) -> InputGate {
        let (sender, receiver) = mpsc::unbounded_channel();
        let open_channels = channels.len();
        let fetchers = channels
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                let credits = Arc::new(Semaphore::new(config.credits.max(1) as usize));
                let local = local.clone().filter(|manager| manager.serves(&spec.descriptor.location));
                let source = ChannelSource { client: client.clone(), local };
                crate::rt::task::spawn(fetch_channel(index, spec, source, config, credits, sender.clone()))
            })
            .collect();
        InputGate {
            receiver,
            fetchers,
            open_channels,
            blocked: BTreeSet::new(),
            held: BTreeMap::new(),
            released: VecDeque::new(),
            delivered: vec![0; open_channels],
            ended: vec![false; open_channels],
        }
    }

    /// The next buffer or event, the end of a channel, or the end of input once every channel
    /// ended. Cancel-safe: dropping the future loses nothing.
    pub async fn next(&mut self) -> Result<GateEvent, ShuffleError> {
        loop {
            while let Some((channel, held)) = self.released.pop_front() {
                // A released item can be a newer barrier that blocked its channel again: what
                // the channel sent after it waits for the next alignment's end, in order.
                if self.blocked.contains(&channel) {
                    self.held.entry(channel).or_default().push_back(held);
                    continue;
                }
                return Ok(self.deliver(channel, held));
            }
            if self.open_channels == 0 {
                assert!(self.ended.iter().all(|ended| *ended), "shuffle invariant: input ends after every channel");
                return Ok(GateEvent::EndOfInput);
            }
            let (channel, held) =
                match self.receiver.recv().await.expect("internal: a fetcher ended without a final message") {
                    ChannelMessage::Item(channel, item, credit) => (channel, Held::Item(item, credit)),
                    ChannelMessage::End(channel, sent) => (channel, Held::End(sent)),
                    ChannelMessage::Failed(error) => return Err(error),
                };
            if self.blocked.contains(&channel) {
                self.held.entry(channel).or_default().push_back(held);
                continue;
            }
            return Ok(self.deliver(channel, held));
        }
    }

    fn deliver(&mut self, channel: usize, held: Held) -> GateEvent {
        let channels = self.ended.len();
        assert!(channel < channels, "shuffle invariant: channel {channel} is one of the gate's {channels}");
        assert!(!self.ended[channel], "shuffle invariant: channel {channel} delivers nothing after its end");
        match held {
            // Taking the item frees its slot: the credit is dropped here.
            Held::Item(item, _credit) => {
                self.delivered[channel] += 1;
                let (kind, bytes) = match item {
                    StreamItem::Buffer(bytes) => (GateEventKind::Buffer, bytes),
                    StreamItem::Event(bytes) => (GateEventKind::Event, bytes),
                };
                GateEvent::Item { channel, kind, bytes }
            }
            Held::End(received) => {
                assert_eq!(
                    self.delivered[channel], received,
                    "shuffle invariant: channel {channel} delivers, before its end, every item its fetcher received"
                );
                assert!(self.open_channels > 0, "internal: channel {channel} ended after every channel had");
                self.ended[channel] = true;
                self.open_channels -= 1;
                GateEvent::ChannelEnd { channel }
            }
        }
    }

    /// Holds what `channel` sends from now on (checkpoint barrier alignment), including what
    /// it sent earlier that an unblocking released and the task has not taken yet.
    pub fn block(&mut self, channel: usize) {
        // The aligner blocks a channel that just delivered a barrier: it is open.
        assert!(
            self.ended.get(channel).is_some_and(|ended| !ended),
            "shuffle invariant: only an open channel of the gate is blocked (channel {channel})"
        );
        self.blocked.insert(channel);
    }

    /// Delivers what blocked channels sent, in order per channel, before anything newer.
    pub fn unblock_all(&mut self) {
        for channel in std::mem::take(&mut self.blocked) {
            if let Some(held) = self.held.remove(&channel) {
                self.released.extend(held.into_iter().map(|item| (channel, item)));
            }
        }
    }
}

impl ShuffleReader for InputGate {
    fn next_event(&mut self) -> BoxFuture<'_, Result<GateEvent, ShuffleError>> {
        Box::pin(self.next())
    }
}

impl Drop for InputGate {
    fn drop(&mut self) {
        for fetcher in &self.fetchers {
            fetcher.abort();
        }
    }
}

/// Where a channel's fetcher asks: its TaskManager's own partitions (a local channel), or the
/// partition's server over the network. Both answer the same requests the same way.
struct ChannelSource {
    client: RpcClient,
    local: Option<ResultPartitionManager>,
}

impl ChannelSource {
    async fn request(
        &self,
        address: std::net::SocketAddr,
        request: RequestBuffers,
        timeout: Duration,
    ) -> Result<Result<BufferResponse, PartitionRequestError>, RpcError> {
        match &self.local {
            Some(manager) => Ok(manager.serve_local(request).await),
            None => self.client.call(address, request, timeout).await,
        }
    }
}

async fn fetch_channel(
    index: usize,
    spec: InputChannelSpec,
    source: ChannelSource,
    config: InputGateConfig,
    credits: Arc<Semaphore>,
    sender: mpsc::UnboundedSender<ChannelMessage>,
) {
    let message = match read_channel(index, &spec, &source, config, credits, &sender).await {
        Ok(received) => ChannelMessage::End(index, received),
        Err(error) => ChannelMessage::Failed(error),
    };
    // The gate may be gone (task cancelled); then nobody needs the message.
    let _ = sender.send(message);
}

async fn read_channel(
    index: usize,
    spec: &InputChannelSpec,
    source: &ChannelSource,
    config: InputGateConfig,
    credits: Arc<Semaphore>,
    sender: &mpsc::UnboundedSender<ChannelMessage>,
) -> Result<u64, ShuffleError> {
    let (partition, location) = (spec.partition(), spec.descriptor.location.to_string());
    let address = spec.descriptor.location.address();
    let mut sequence = 0;
    let mut timeouts = 0;
    let mut not_found_since: Option<crate::rt::time::Instant> = None;
    let mut backoff = Duration::from_millis(10);
    loop {
        // Wait for at least one free slot, then take every free slot: the credits granted.
        let first = Arc::clone(&credits).acquire_owned().await.expect("channel credits are never closed");
        let mut permits = vec![first];
        while let Ok(permit) = Arc::clone(&credits).try_acquire_owned() {
            permits.push(permit);
        }
        let request = RequestBuffers {
            partition,
            subpartitions: spec.subpartitions.clone(),
            sequence,
            credits: permits.len() as u32,
        };
        match source.request(address, request, config.request_timeout).await {
            Ok(Ok(BufferResponse::Items { items, .. })) => {
                timeouts = 0;
                not_found_since = None;
                assert!(items.len() <= permits.len(), "internal: a server sent more items than the credits granted");
                sequence += items.len() as u64;
                for (item, permit) in items.into_iter().zip(permits.drain(..)) {
                    if sender.send(ChannelMessage::Item(index, item, permit)).is_err() {
                        return Ok(sequence); // the gate was dropped
                    }
                }
            }
            Ok(Ok(BufferResponse::EndOfPartition)) => return Ok(sequence),
            Ok(Ok(BufferResponse::NotYet)) => timeouts = 0,
            Ok(Err(PartitionRequestError::NotFound)) => {
                // A partition that was finished when this consumer was deployed is lost; one
                // whose producer runs beside this consumer may not be registered yet.
                let since = *not_found_since.get_or_insert_with(crate::rt::time::Instant::now);
                if spec.finished || since.elapsed() >= config.partition_wait {
                    return Err(ShuffleError::PartitionNotFound { partition, location });
                }
                crate::rt::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
            Ok(Err(error @ PartitionRequestError::NoSuchSubpartition)) => {
                return Err(ShuffleError::Corrupt { partition, detail: format!("{error:?}") });
            }
            Err(RpcError::Timeout { .. }) => {
                timeouts += 1;
                if timeouts >= config.max_timeouts {
                    return Err(ShuffleError::ProducerUnreachable { partition, location });
                }
            }
            // Nothing listens where the partition lived: its TaskManager died or restarted, and
            // a restarted TaskManager starts without the partitions of the one before.
            Err(RpcError::Connection(_)) => return Err(ShuffleError::PartitionNotFound { partition, location }),
            Err(RpcError::Io(detail)) => return Err(ShuffleError::Corrupt { partition, detail }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition_id() -> ResultPartitionId {
        use crate::graph::{IntermediateDataSetId, IntermediateResultPartitionId};
        let partition = IntermediateResultPartitionId { dataset: IntermediateDataSetId(3), producer_subtask: 1 };
        ResultPartitionId { partition, attempt: 2 }
    }

    #[test]
    fn an_input_error_names_its_partition_and_whether_its_data_is_gone() {
        let partition = partition_id();
        let location = "tm-2 (10.0.1.2:9000)".to_string();
        let not_found = ShuffleError::PartitionNotFound { partition, location: location.clone() };
        let unreachable = ShuffleError::ProducerUnreachable { partition, location };
        let corrupt = ShuffleError::Corrupt { partition, detail: "buffer checksum mismatch".to_string() };
        for error in [&not_found, &unreachable, &corrupt] {
            assert_eq!(error.partition(), partition, "{error}");
        }
        assert!(not_found.data_lost() && corrupt.data_lost(), "gone or damaged where it lives");
        assert!(!unreachable.data_lost(), "out of reach, maybe still there");
        assert_eq!(
            not_found.to_string(),
            "partition ds3.p1@a2 (data set 3, producer subtask 1) not found on tm-2 (10.0.1.2:9000)"
        );
        assert_eq!(unreachable.to_string(), "tm-2 (10.0.1.2:9000), holding partition ds3.p1@a2, is unreachable");
        assert_eq!(corrupt.to_string(), "input ds3.p1@a2 corrupt: buffer checksum mismatch");
    }

    /// A gate over `channels` channels without fetchers: the test sends what they would.
    fn gate(channels: usize) -> (InputGate, mpsc::UnboundedSender<ChannelMessage>) {
        let (sender, receiver) = mpsc::unbounded_channel();
        let gate = InputGate {
            receiver,
            fetchers: Vec::new(),
            open_channels: channels,
            blocked: BTreeSet::new(),
            held: BTreeMap::new(),
            released: VecDeque::new(),
            delivered: vec![0; channels],
            ended: vec![false; channels],
        };
        (gate, sender)
    }

    fn send(sender: &mpsc::UnboundedSender<ChannelMessage>, channel: usize, byte: u8) {
        let credit = Arc::new(Semaphore::new(1)).try_acquire_owned().expect("a free credit");
        sender.send(ChannelMessage::Item(channel, StreamItem::Buffer(vec![byte]), credit)).expect("the gate listens");
    }

    async fn next_byte(gate: &mut InputGate) -> (usize, u8) {
        match gate.next().await.expect("no channel fails") {
            GateEvent::Item { channel, bytes, .. } => (channel, bytes[0]),
            _ => panic!("expected an item"),
        }
    }

    /// Barrier 1 and then barrier 2 were held on channel 0 during an alignment: once it ends,
    /// barrier 2 blocks the channel again, and what followed barrier 2 must wait for barrier
    /// 2's alignment, not reach the task before its snapshot (seed 419 of
    /// `scenarios/wordcount-files.yaml` counted such records twice after a restore).
    #[madsim::test]
    async fn a_channel_blocked_again_holds_what_an_unblocking_released() {
        let (mut gate, sender) = gate(2);
        gate.block(0);
        for byte in [b'a', b'b'] {
            send(&sender, 0, byte); // `a` stands for barrier 2, `b` for a record after it
        }
        send(&sender, 1, b'x');
        assert_eq!(next_byte(&mut gate).await, (1, b'x'), "channel 0 is held");
        gate.unblock_all();
        assert_eq!(next_byte(&mut gate).await, (0, b'a'));
        gate.block(0); // `a` was a barrier: the channel aligns again
        send(&sender, 1, b'y');
        send(&sender, 0, b'c');
        assert_eq!(next_byte(&mut gate).await, (1, b'y'), "what channel 0 sent after `a` is held");
        gate.unblock_all();
        assert_eq!(next_byte(&mut gate).await, (0, b'b'), "held items keep their order");
        assert_eq!(next_byte(&mut gate).await, (0, b'c'));
    }
}
