//! Sources: where a job's elements come from (Flink's FLIP-27 `Source` and `SourceReader`).

use std::sync::Arc;

use crate::graph::operator::{Batch, BoxFuture, ErasedSourceReader, ReadOffsets, SourceFactory};
use crate::graph::{ExecutionMode, OperatorError, TaskInfo};
use crate::record::Record;
use crate::time::{BoundedOutOfOrderness, SplitWatermarks, Timestamp, Watermark};

/// A bounded source of `T`: creates one reader per subtask, which reads that subtask's share.
pub trait Source<T: Record>: Send + Sync + 'static {
    /// The name plans print.
    fn name(&self) -> String;
    /// The reader of one subtask.
    fn create_reader(&self, task: &TaskInfo) -> Box<dyn SourceReader<T>>;
}

/// Reads one subtask's share of a source.
pub trait SourceReader<T>: Send + Sync {
    /// The next batch, or `None` when this subtask's share is exhausted. May wait on I/O.
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Vec<T>>, OperatorError>>;
    /// The position after the last batch returned, for a checkpoint: a reader restored from it
    /// returns exactly the elements after that batch.
    fn snapshot_state(&self) -> Vec<u8>;
    /// Continues from a snapshot's position; called before the first poll.
    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError>;
    /// Which split the last batch came from and which splits are still to be read after it,
    /// for a reader that reads several splits in turn (FLIP-27's split-local outputs): a source
    /// with event time then generates a watermark per split, so that a split read ahead never
    /// makes another's records late. `None` (the default): the reader reads one stream.
    fn split_progress(&self) -> Option<SplitProgress> {
        None
    }
    /// How far the reader has read each of its splits, for the checkpoint-prefix oracle; `None`
    /// (the default) for a reader that does not say.
    fn read_offsets(&self) -> Option<ReadOffsets> {
        None
    }
}

/// Where a reader stands among its splits after a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitProgress {
    /// The split the last batch came from.
    pub last: u32,
    /// The splits with records left (the last one among them unless it finished).
    pub unfinished: Vec<u32>,
}

/// How a source with event time stamps its records and generates watermarks: per split, in
/// streaming mode (batch mode emits no watermark before the end of input).
struct EventTime<T> {
    timestamp: Arc<dyn Fn(&T) -> Timestamp + Send + Sync>,
    watermarks: SplitWatermarks<BoundedOutOfOrderness>,
    mode: ExecutionMode,
}

struct ReaderAdapter<T> {
    reader: Box<dyn SourceReader<T>>,
    event_time: Option<EventTime<T>>,
}

impl<T: Record> ReaderAdapter<T> {
    fn stamp(&mut self, values: Vec<T>) -> Batch {
        let Some(event_time) = &mut self.event_time else { return Batch::untimed(values) };
        let timestamps: Vec<Timestamp> = values.iter().map(|value| (event_time.timestamp)(value)).collect();
        let progress = self.reader.split_progress().unwrap_or(SplitProgress { last: 0, unfinished: vec![0] });
        event_time.watermarks.on_events(progress.last, timestamps.iter().copied());
        event_time.watermarks.retain(&progress.unfinished);
        Batch::new(values, timestamps.into_iter().map(Some).collect())
    }
}

impl<T: Record> ErasedSourceReader for ReaderAdapter<T> {
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Batch>, OperatorError>> {
        Box::pin(async move {
            let Some(values) = self.reader.poll_next().await? else { return Ok(None) };
            Ok(Some(self.stamp(values)))
        })
    }

    fn read_offsets(&self) -> Option<ReadOffsets> {
        self.reader.read_offsets()
    }

    fn current_watermark(&mut self) -> Option<Watermark> {
        let event_time = self.event_time.as_mut().filter(|event_time| event_time.mode == ExecutionMode::Streaming)?;
        Some(event_time.watermarks.current_watermark())
    }

    fn snapshot_state(&self) -> Vec<u8> {
        self.reader.snapshot_state()
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.reader.restore_state(state)
    }
}

/// Erases a typed source into the factory a plan carries.
pub fn erase_source<T: Record, S: Source<T>>(source: S) -> SourceFactory {
    let source = Arc::new(source);
    Arc::new(move |task: &TaskInfo| {
        Box::new(ReaderAdapter { reader: source.create_reader(task), event_time: None }) as Box<dyn ErasedSourceReader>
    })
}

/// Erases a typed source whose readers stamp each record with `timestamp(record)` and generate
/// watermarks per split for records at most `generator`'s bound out of order.
pub(crate) fn erase_source_with_watermarks<T: Record, S: Source<T>>(
    source: S,
    generator: BoundedOutOfOrderness,
    timestamp: Arc<dyn Fn(&T) -> Timestamp + Send + Sync>,
) -> SourceFactory {
    let source = Arc::new(source);
    Arc::new(move |task: &TaskInfo| {
        let event_time = EventTime {
            timestamp: Arc::clone(&timestamp),
            watermarks: SplitWatermarks::new(generator.clone()),
            mode: task.mode,
        };
        Box::new(ReaderAdapter { reader: source.create_reader(task), event_time: Some(event_time) })
            as Box<dyn ErasedSourceReader>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two splits read in turn, each in event-time order, the first a whole batch ahead.
    struct TwoSplits {
        batches: Vec<(u32, Vec<i64>)>,
        read: usize,
    }

    impl SourceReader<i64> for TwoSplits {
        fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Vec<i64>>, OperatorError>> {
            let batch = self.batches.get(self.read).map(|(_, values)| values.clone());
            self.read += 1;
            Box::pin(async move { Ok(batch) })
        }
        fn snapshot_state(&self) -> Vec<u8> {
            Vec::new()
        }
        fn restore_state(&mut self, _: &[u8]) -> Result<(), OperatorError> {
            Ok(())
        }
        fn split_progress(&self) -> Option<SplitProgress> {
            let (last, _) = self.batches[self.read - 1];
            let unfinished = self.batches[self.read..].iter().map(|(split, _)| *split).collect::<Vec<_>>();
            Some(SplitProgress { last, unfinished: [0, 1].into_iter().filter(|s| unfinished.contains(s)).collect() })
        }
    }

    fn reader(mode: ExecutionMode) -> ReaderAdapter<i64> {
        let batches = vec![(0, vec![0, 5_000, 10_000]), (1, vec![1_000, 6_000]), (1, vec![21_000]), (0, vec![20_000])];
        ReaderAdapter {
            reader: Box::new(TwoSplits { batches, read: 0 }),
            event_time: Some(EventTime {
                timestamp: Arc::new(|value: &i64| *value),
                watermarks: SplitWatermarks::new(BoundedOutOfOrderness::new(0).unwrap()),
                mode,
            }),
        }
    }

    #[madsim::test]
    async fn a_reader_stamps_records_and_says_the_slowest_unfinished_splits_watermark() {
        let mut reader = reader(ExecutionMode::Streaming);
        let first = reader.poll_next().await.unwrap().unwrap();
        assert_eq!(first.timestamps, vec![Some(0), Some(5_000), Some(10_000)]);
        assert_eq!(reader.current_watermark(), Some(Watermark::MIN), "split 1 is not read yet");
        reader.poll_next().await.unwrap().unwrap();
        assert_eq!(reader.current_watermark(), Some(Watermark(5_999)), "split 1's rows at 6 s are not late");
        reader.poll_next().await.unwrap().unwrap();
        assert_eq!(reader.current_watermark(), Some(Watermark(9_999)), "split 1 finished; split 0 at 10 s holds it");
    }

    #[madsim::test]
    async fn a_batch_reader_stamps_records_but_says_no_watermark() {
        let mut reader = reader(ExecutionMode::Batch);
        let first = reader.poll_next().await.unwrap().unwrap();
        assert_eq!(first.timestamps, vec![Some(0), Some(5_000), Some(10_000)]);
        assert_eq!(reader.current_watermark(), None);
    }
}
