//! [`InputGate`]: the consumer side of a task's inputs, one fetcher per channel.
//!
//! Each channel runs a fetcher that requests buffers one after the other from the producer's
//! TaskManager and hands them to the task through a bounded queue (so a slow task holds its
//! producers back). A channel that cannot be read fails the gate with an error naming the
//! partition and its producer, so that failover knows what to re-run.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::mpsc;

use super::partition::{PartitionRequestError, RequestSubpartition, ResultPartitionId, SubpartitionData};
use crate::rpc::{RpcClient, RpcError};

/// Where one channel reads from.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputChannelSpec {
    /// The producer's partition.
    pub partition: ResultPartitionId,
    /// The producer's TaskManager.
    pub producer_address: SocketAddr,
    /// The subpartitions this channel reads, as one sequence of buffers.
    pub subpartitions: std::ops::Range<u32>,
}

/// Why an input could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShuffleError {
    /// The producer's TaskManager does not hold the partition (Flink's `PartitionNotFoundException`).
    PartitionNotFound {
        /// The partition.
        partition: ResultPartitionId,
        /// Its TaskManager.
        producer: SocketAddr,
    },
    /// The producer's TaskManager does not answer (Flink's `PartitionConnectionException`).
    ProducerUnreachable {
        /// The partition.
        partition: ResultPartitionId,
        /// Its TaskManager.
        producer: SocketAddr,
    },
    /// The partition's bytes cannot be read or decoded.
    Corrupt {
        /// The partition.
        partition: ResultPartitionId,
        /// What was wrong.
        detail: String,
    },
}

impl fmt::Display for ShuffleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShuffleError::PartitionNotFound { partition, producer } => {
                write!(f, "partition {partition} not found on {producer}")
            }
            ShuffleError::ProducerUnreachable { partition, producer } => {
                write!(f, "producer of partition {partition} at {producer} unreachable")
            }
            ShuffleError::Corrupt { partition, detail } => write!(f, "partition {partition} corrupt: {detail}"),
        }
    }
}

/// Timing of channel requests.
#[derive(Clone, Copy, Debug)]
pub struct InputGateConfig {
    /// Timeout of one request.
    pub request_timeout: Duration,
    /// Consecutive timeouts after which the producer counts as unreachable.
    pub max_timeouts: u32,
    /// How long a channel keeps asking for a partition its producer does not hold yet (a
    /// pipelined producer may still be deploying) before it reports partition-not-found.
    pub partition_wait: Duration,
}

impl Default for InputGateConfig {
    fn default() -> Self {
        InputGateConfig {
            request_timeout: Duration::from_secs(1),
            max_timeouts: 3,
            partition_wait: Duration::from_secs(2),
        }
    }
}

/// What a gate yields.
pub enum GateEvent {
    /// A sealed buffer from channel `channel`.
    Buffer {
        /// Index into the gate's channels.
        channel: usize,
        /// The buffer.
        bytes: Vec<u8>,
    },
    /// Every channel reached its end.
    EndOfInput,
}

enum ChannelMessage {
    Buffer(usize, Vec<u8>),
    End,
    Failed(ShuffleError),
}

/// The channels of a task's inputs; see the module doc.
pub struct InputGate {
    receiver: mpsc::Receiver<ChannelMessage>,
    fetchers: Vec<madsim::task::JoinHandle<()>>,
    open_channels: usize,
}

impl InputGate {
    /// Starts one fetcher per channel.
    pub fn open(channels: Vec<InputChannelSpec>, client: RpcClient, config: InputGateConfig) -> InputGate {
        let (sender, receiver) = mpsc::channel(2 * channels.len().max(1));
        let open_channels = channels.len();
        let fetchers = channels
            .into_iter()
            .enumerate()
            .map(|(index, spec)| {
                madsim::task::spawn(fetch_channel(index, spec, client.clone(), config, sender.clone()))
            })
            .collect();
        InputGate { receiver, fetchers, open_channels }
    }

    /// The next buffer, or the end of input once every channel ended.
    pub async fn next(&mut self) -> Result<GateEvent, ShuffleError> {
        loop {
            if self.open_channels == 0 {
                return Ok(GateEvent::EndOfInput);
            }
            match self.receiver.recv().await.expect("internal: a fetcher ended without a final message") {
                ChannelMessage::Buffer(channel, bytes) => return Ok(GateEvent::Buffer { channel, bytes }),
                ChannelMessage::End => self.open_channels -= 1,
                ChannelMessage::Failed(error) => return Err(error),
            }
        }
    }
}

impl Drop for InputGate {
    fn drop(&mut self) {
        for fetcher in &self.fetchers {
            fetcher.abort();
        }
    }
}

async fn fetch_channel(
    index: usize,
    spec: InputChannelSpec,
    client: RpcClient,
    config: InputGateConfig,
    sender: mpsc::Sender<ChannelMessage>,
) {
    let message = match read_channel(index, &spec, &client, config, &sender).await {
        Ok(()) => ChannelMessage::End,
        Err(error) => ChannelMessage::Failed(error),
    };
    // The gate may be gone (task cancelled); then nobody needs the message.
    let _ = sender.send(message).await;
}

async fn read_channel(
    index: usize,
    spec: &InputChannelSpec,
    client: &RpcClient,
    config: InputGateConfig,
    sender: &mpsc::Sender<ChannelMessage>,
) -> Result<(), ShuffleError> {
    let mut sequence = 0;
    let mut timeouts = 0;
    let mut not_found_since: Option<madsim::time::Instant> = None;
    let mut backoff = Duration::from_millis(10);
    loop {
        let request =
            RequestSubpartition { partition: spec.partition, subpartitions: spec.subpartitions.clone(), sequence };
        match client.call(spec.producer_address, request, config.request_timeout).await {
            Ok(Ok(SubpartitionData::Buffer(bytes))) => {
                timeouts = 0;
                not_found_since = None;
                sequence += 1;
                if sender.send(ChannelMessage::Buffer(index, bytes)).await.is_err() {
                    return Ok(()); // the gate was dropped
                }
            }
            Ok(Ok(SubpartitionData::EndOfPartition)) => return Ok(()),
            Ok(Ok(SubpartitionData::NotYet)) => timeouts = 0,
            Ok(Err(PartitionRequestError::NotFound)) => {
                let since = *not_found_since.get_or_insert_with(madsim::time::Instant::now);
                if since.elapsed() >= config.partition_wait {
                    return Err(ShuffleError::PartitionNotFound {
                        partition: spec.partition,
                        producer: spec.producer_address,
                    });
                }
                madsim::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_millis(200));
            }
            Ok(Err(error)) => {
                return Err(ShuffleError::Corrupt { partition: spec.partition, detail: format!("{error:?}") });
            }
            Err(RpcError::Timeout { .. }) => {
                timeouts += 1;
                if timeouts >= config.max_timeouts {
                    return Err(ShuffleError::ProducerUnreachable {
                        partition: spec.partition,
                        producer: spec.producer_address,
                    });
                }
            }
            Err(RpcError::Io(detail)) => return Err(ShuffleError::Corrupt { partition: spec.partition, detail }),
        }
    }
}
