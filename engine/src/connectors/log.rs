//! A replayable, partitioned log (think Kafka) and the bounded [`LogSource`] that reads it.
//!
//! A topic has partitions; a partition is a sequence of encoded records addressed by offset. A
//! source subtask reads the partitions `p` with `p % parallelism == subtask_index`, from offset
//! zero up to the end offsets it saw when it started, so the source is bounded and a restarted
//! reader reads exactly the same records. A checkpoint saves each partition's next offset and end
//! offset; a reader restored from it reads exactly the records after it.

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use super::{LOG_SYSTEM, ServiceClient, decode_position, encode_position};
use crate::api::{BoxFuture, OperatorError, ReadOffsets, Record, Source, SourceReader, SplitProgress, TaskInfo};
use crate::rpc_request;

/// Asks for the partitions of a topic and their end offsets.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DescribeTopic {
    /// The topic.
    pub topic: String,
}

/// End offset of every partition of a topic, by partition index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TopicDescription {
    /// `end_offsets[p]` is the number of records in partition `p`.
    pub end_offsets: Vec<u64>,
}

rpc_request!(DescribeTopic => Result<TopicDescription, String>);

/// Reads records of one partition from an offset.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FetchRecords {
    /// The topic.
    pub topic: String,
    /// The partition.
    pub partition: u32,
    /// The first offset to read.
    pub offset: u64,
    /// At most this many records.
    pub max_records: u32,
}

/// Records read from a partition.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FetchedRecords {
    /// Encoded records, starting at the requested offset.
    pub records: Vec<Vec<u8>>,
}

rpc_request!(FetchRecords => Result<FetchedRecords, String>);

/// A bounded source of `T` read from a topic of the log.
pub struct LogSource<T> {
    topic: String,
    fetch_size: u32,
    _type: PhantomData<fn() -> T>,
}

impl<T: Record> LogSource<T> {
    /// Reads `topic`, 512 records per fetch.
    pub fn new(topic: &str) -> LogSource<T> {
        LogSource { topic: topic.to_string(), fetch_size: 512, _type: PhantomData }
    }

    /// Sets how many records one fetch asks for.
    pub fn with_fetch_size(mut self, fetch_size: u32) -> LogSource<T> {
        assert!(fetch_size > 0, "fetch size must be positive");
        self.fetch_size = fetch_size;
        self
    }
}

impl<T: Record> Source<T> for LogSource<T> {
    fn name(&self) -> String {
        format!("log `{}`", self.topic)
    }

    fn create_reader(&self, task: &TaskInfo) -> Box<dyn SourceReader<T>> {
        Box::new(LogReader::<T> {
            topic: self.topic.clone(),
            fetch_size: self.fetch_size,
            task: task.clone(),
            state: None,
            restored: None,
            _type: PhantomData,
        })
    }
}

struct ReaderState {
    log: ServiceClient,
    /// (partition, next offset, end offset) of every assigned partition not yet exhausted.
    splits: Vec<(u32, u64, u64)>,
    next_split: usize,
    /// The partition the last batch came from.
    last: Option<u32>,
    /// (partition, end offset) of every assigned partition read to its end.
    finished: Vec<(u32, u64)>,
}

/// A reader's position: (partition, next offset, end offset) of every partition not exhausted,
/// which of them is read next, and (partition, end offset) of those read to their end.
type Position = (Vec<(u32, u64, u64)>, u64, Vec<(u32, u64)>);

struct LogReader<T> {
    topic: String,
    fetch_size: u32,
    task: TaskInfo,
    state: Option<ReaderState>,
    /// Where to continue from, until the reader opens.
    restored: Option<Position>,
    _type: PhantomData<fn() -> T>,
}

impl<T: Record> LogReader<T> {
    async fn open(&mut self) -> Result<(), OperatorError> {
        let log = ServiceClient::connect(&self.task, LOG_SYSTEM).await?;
        if let Some((splits, next_split, finished)) = self.restored.take() {
            check_position(&self.topic, &splits);
            self.state = Some(ReaderState { log, splits, next_split: next_split as usize, last: None, finished });
            return Ok(());
        }
        let description = log.call(DescribeTopic { topic: self.topic.clone() }).await?.map_err(OperatorError::new)?;
        let splits = description
            .end_offsets
            .iter()
            .enumerate()
            .filter(|(partition, _)| *partition as u32 % self.task.parallelism == self.task.subtask_index)
            .filter(|(_, end)| **end > 0)
            .map(|(partition, end)| (partition as u32, 0, *end))
            .collect();
        self.state = Some(ReaderState { log, splits, next_split: 0, last: None, finished: Vec::new() });
        Ok(())
    }

    async fn next_batch(&mut self) -> Result<Option<Vec<T>>, OperatorError> {
        if self.state.is_none() {
            self.open().await?;
        }
        let state = self.state.as_mut().expect("opened above");
        if state.splits.is_empty() {
            return Ok(None);
        }
        let index = state.next_split % state.splits.len();
        let (partition, offset, end) = state.splits[index];
        assert!(
            offset < end,
            "log invariant: `{}` partition {partition} has records left at offset {offset} before {end}",
            self.topic
        );
        let remaining = u32::try_from(end - offset).unwrap_or(u32::MAX);
        let request =
            FetchRecords { topic: self.topic.clone(), partition, offset, max_records: self.fetch_size.min(remaining) };
        let fetched = state.log.call(request).await?.map_err(OperatorError::new)?;
        if fetched.records.is_empty() {
            return Err(OperatorError::new(format!(
                "log returned no records for `{}` partition {partition} at offset {offset} before its end {end}",
                self.topic
            )));
        }
        let records = fetched
            .records
            .iter()
            .map(|bytes| {
                T::from_bytes(bytes).map_err(|error| OperatorError::new(format!("topic `{}`: {error}", self.topic)))
            })
            .collect::<Result<Vec<T>, _>>()?;
        let next_offset = offset + records.len() as u64;
        state.last = Some(partition);
        assert!(next_offset > offset, "log invariant: `{}` partition {partition}'s offset only grows", self.topic);
        if next_offset >= end {
            state.splits.remove(index);
            state.finished.push((partition, end));
        } else {
            state.splits[index].1 = next_offset;
            state.next_split = index + 1;
        }
        Ok(Some(records))
    }
}

impl<T: Record> SourceReader<T> for LogReader<T> {
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Vec<T>>, OperatorError>> {
        Box::pin(self.next_batch())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        let current: Option<Position> =
            self.state.as_ref().map(|state| (state.splits.clone(), state.next_split as u64, state.finished.clone()));
        if let Some((splits, _, _)) = &current {
            check_position(&self.topic, splits);
        }
        encode_position(current, &self.restored)
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.restored = decode_position(state, &format!("log reader of `{}`", self.topic))?;
        Ok(())
    }

    /// Records read of each assigned partition: its next offset, or its end once read through;
    /// read back from the position a checkpoint saves, so that the cut an oracle checks is the
    /// one a restore would resume from.
    fn read_offsets(&self) -> Option<ReadOffsets> {
        let position: Option<Position> = decode_position(&self.snapshot_state(), "log reader").ok()?;
        let (unfinished, _, finished) = position.unwrap_or_default();
        let mut splits: Vec<(u32, u64)> =
            unfinished.iter().map(|(partition, next, _)| (*partition, *next)).chain(finished).collect();
        splits.sort_unstable();
        Some(ReadOffsets { stream: self.topic.clone(), splits })
    }

    /// Each partition is a split: its records are in the order they were written.
    fn split_progress(&self) -> Option<SplitProgress> {
        let state = self.state.as_ref()?;
        Some(SplitProgress {
            last: state.last?,
            unfinished: state.splits.iter().map(|(partition, _, _)| *partition).collect(),
        })
    }
}

/// What a reader's position holds, checkpointed and restored alike: only partitions with
/// records left, each once.
fn check_position(topic: &str, splits: &[(u32, u64, u64)]) {
    for (partition, offset, end) in splits {
        assert!(
            offset < end,
            "log invariant: a position holds `{topic}` partition {partition} only while it has records left \
             (offset {offset}, end {end})"
        );
    }
    for (index, (partition, _, _)) in splits.iter().enumerate() {
        assert!(
            splits[index + 1..].iter().all(|(other, _, _)| other != partition),
            "log invariant: a position holds `{topic}` partition {partition} once"
        );
    }
}
