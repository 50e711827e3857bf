//! Sources: where a job's elements come from (Flink's FLIP-27 `Source` and `SourceReader`).

use std::sync::Arc;

use crate::graph::operator::{Batch, BoxFuture, ErasedSourceReader, SourceFactory};
use crate::graph::{OperatorError, TaskInfo};
use crate::record::Record;

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
}

struct ReaderAdapter<T> {
    reader: Box<dyn SourceReader<T>>,
}

impl<T: Record> ErasedSourceReader for ReaderAdapter<T> {
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Batch>, OperatorError>> {
        Box::pin(async move { Ok(self.reader.poll_next().await?.map(Batch::untimed)) })
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
        Box::new(ReaderAdapter { reader: source.create_reader(task) }) as Box<dyn ErasedSourceReader>
    })
}
