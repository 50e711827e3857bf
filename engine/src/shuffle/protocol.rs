//! The messages of the data exchange: how consumers read partitions (from a TaskManager or from
//! the shuffle service alike), and how producers push to the shuffle service.
//!
//! Reading is credit-based and pull-driven: a consumer channel asks for the items of its
//! subpartitions from sequence number `n` on, granting `credits` (how many it has room for);
//! asking from `n` also acknowledges every item before `n`. The server answers with at most
//! `credits` items and its backlog (how many more it holds), with `EndOfPartition` once all were
//! read, or with `NotYet` after a short wait with nothing to send (the consumer asks again, so a
//! dead server shows up as a timeout, never as a hang).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use super::ResultPartitionId;
use crate::rpc_request;

/// One item of a subpartition's stream.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum StreamItem {
    /// A sealed buffer of records.
    Buffer(#[serde(with = "serde_bytes")] Vec<u8>),
    /// An encoded event, broadcast to every subpartition.
    Event(Vec<u8>),
}

impl StreamItem {
    /// Its size in bytes.
    pub fn len(&self) -> usize {
        match self {
            StreamItem::Buffer(bytes) | StreamItem::Event(bytes) => bytes.len(),
        }
    }

    /// True for an empty buffer or event.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Asks for items of a range of subpartitions, read as one stream (one subpartition after the
/// other), from `sequence` on. A range of more than one subpartition is only for blocking
/// partitions (a consumer whose parallelism was decided at runtime reads a range of key groups).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestBuffers {
    /// The partition.
    pub partition: ResultPartitionId,
    /// The subpartitions.
    pub subpartitions: Range<u32>,
    /// The first item wanted; every item before it is acknowledged.
    pub sequence: u64,
    /// How many items the consumer has room for (at least one).
    pub credits: u32,
}

/// Answer to [`RequestBuffers`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BufferResponse {
    /// Items from the requested sequence number on, and how many more are ready behind them.
    Items {
        /// At most `credits` items.
        items: Vec<StreamItem>,
        /// Items ready after these.
        backlog: u64,
    },
    /// Every item was read.
    EndOfPartition,
    /// Nothing ready yet; ask again.
    NotYet,
}

/// Why a partition cannot be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PartitionRequestError {
    /// The server does not hold the partition (not produced yet, released, or lost).
    NotFound,
    /// The partition has fewer subpartitions, or a pipelined one was asked for a range.
    NoSuchSubpartition,
}
rpc_request!(RequestBuffers => Result<BufferResponse, PartitionRequestError>);

/// JobMaster → partition server (TaskManager or shuffle service): nobody needs these any more.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReleasePartitions {
    /// The partitions.
    pub partitions: Vec<ResultPartitionId>,
}
rpc_request!(ReleasePartitions => ());

/// JobMaster → partition server (shuffle service or TaskManager): which partitions can you
/// still serve? (A restarted JobMaster keeps the finished work whose partitions survive; a
/// JobMaster told a partition was not found checks what else its server lost.)
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ListPartitions;
rpc_request!(ListPartitions => Vec<ResultPartitionId>);

/// Producer → shuffle service: items of one subpartition, from `first_sequence` on. A retried
/// push (its reply was lost) carries the same sequence numbers, so nothing is stored twice.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PushItems {
    /// The partition.
    pub partition: ResultPartitionId,
    /// How many subpartitions it has.
    pub subpartitions: u32,
    /// The subpartition.
    pub subpartition: u32,
    /// Sequence number of the first item.
    pub first_sequence: u64,
    /// The items.
    pub items: Vec<StreamItem>,
}

/// Why the shuffle service refused a push.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PushError {
    /// A push skipped items: the service lost what it had (it restarted).
    Gap {
        /// Items the service holds for the subpartition.
        held: u64,
    },
    /// The partition is already finished, or the request does not fit it.
    Rejected(String),
}
rpc_request!(PushItems => Result<(), PushError>);

/// Producer → shuffle service: the partition is complete with this many items per subpartition;
/// the service makes it durable and serves it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FinishPartition {
    /// The partition.
    pub partition: ResultPartitionId,
    /// Items of each subpartition.
    pub items_per_subpartition: Vec<u64>,
}
rpc_request!(FinishPartition => Result<(), PushError>);
