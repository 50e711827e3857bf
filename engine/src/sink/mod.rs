//! Sink V2 (Flink's FLIP-143/372): the sink author says *what* and *how* to commit, the engine
//! decides *when* and *where*.
//!
//! A [`Sink`] creates a [`SinkWriter`] per subtask, which writes (and may pre-stage) elements and
//! returns committables from [`SinkWriter::prepare_commit`], and a [`Committer`], which commits
//! them. In batch mode, and in streaming mode without checkpoints, the engine calls
//! `prepare_commit` and `commit` at end of input. In streaming mode with checkpoints it calls
//! `prepare_commit` then [`SinkWriter::snapshot_state`] at every barrier, keeps the committables
//! in the checkpoint, and commits them once a checkpoint at least that new completed (the last
//! ones with the final checkpoint). After a restart it commits again what the restored
//! checkpoint holds: so [`Committer::commit`] must be idempotent, and committables must name
//! something stable across attempts (a transaction id).
//!
//! Depends on: [`crate::graph::operator`] (the erased contract it converts to) and
//! [`crate::record`]. Invariant: a committable crosses task boundaries only encoded.

use std::marker::PhantomData;
use std::sync::Arc;

use crate::graph::operator::{Batch, BoxFuture, ErasedCommitter, ErasedSinkWriter, SinkFactory};
use crate::graph::{OperatorError, TaskInfo};
use crate::record::{Element, Record};

/// A two-phase-commit sink; see the module doc.
pub trait Sink<T: Record>: Send + Sync + 'static {
    /// What a writer hands to the committer: must identify its transaction stably.
    type Committable: Record;
    /// The writer of one subtask.
    fn create_writer(&self, task: &TaskInfo) -> Box<dyn SinkWriter<T, Self::Committable>>;
    /// The committer of one subtask.
    fn create_committer(&self, task: &TaskInfo) -> Box<dyn Committer<Self::Committable>>;
}

/// Writes elements of one subtask (Flink's `CommittingSinkWriter`).
pub trait SinkWriter<T, C>: Send {
    /// Accepts one element; may only buffer it. Called from the task, must not block.
    fn write(&mut self, element: T) -> Result<(), OperatorError>;
    /// Ships buffered elements if the writer wants to (always when `end_of_input`).
    fn flush(&mut self, end_of_input: bool) -> BoxFuture<'_, Result<(), OperatorError>>;
    /// Pre-commits everything written so far and returns the committables.
    fn prepare_commit(&mut self) -> BoxFuture<'_, Result<Vec<C>, OperatorError>>;
    /// Called after `prepare_commit` at checkpoint `checkpoint_id`'s barrier (streaming with
    /// checkpoints): returns the writer's own state, and from now on the writer writes for the
    /// next checkpoint (a transactional writer opens its next transaction). Stateless by default.
    fn snapshot_state(&mut self, _checkpoint_id: u64) -> Result<Vec<u8>, OperatorError> {
        Ok(Vec::new())
    }
    /// Restores what `snapshot_state` returned, before the first element.
    fn restore_state(&mut self, _state: &[u8]) -> Result<(), OperatorError> {
        Ok(())
    }
}

/// Commits committables (Flink's `Committer`). Must be idempotent: after a failure the engine
/// commits again committables that may already be committed.
pub trait Committer<C>: Send + Sync {
    /// Commits all of them, or fails.
    fn commit(&mut self, committables: Vec<C>) -> BoxFuture<'_, Result<(), OperatorError>>;
}

struct WriterAdapter<T, C> {
    writer: Box<dyn SinkWriter<T, C>>,
}

impl<T: Record, C: Record> ErasedSinkWriter for WriterAdapter<T, C> {
    fn write(&mut self, element: Element) -> Result<(), OperatorError> {
        let element = element.downcast::<T>().unwrap_or_else(|_| {
            panic!("internal: sink input is not a {}: the graph's types are inconsistent", std::any::type_name::<T>())
        });
        self.writer.write(*element)
    }

    fn write_batch(&mut self, batch: Batch) -> Result<(), OperatorError> {
        let (values, _) = batch.into_typed::<T>("a sink");
        values.into_iter().try_for_each(|value| self.writer.write(value))
    }

    fn flush(&mut self, end_of_input: bool) -> BoxFuture<'_, Result<(), OperatorError>> {
        self.writer.flush(end_of_input)
    }

    fn prepare_commit(&mut self) -> BoxFuture<'_, Result<Vec<Vec<u8>>, OperatorError>> {
        Box::pin(async move {
            let committables = self.writer.prepare_commit().await?;
            Ok(committables.iter().map(Record::to_bytes).collect())
        })
    }

    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, OperatorError> {
        self.writer.snapshot_state(checkpoint_id)
    }

    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError> {
        self.writer.restore_state(state)
    }
}

struct CommitterAdapter<C> {
    committer: Box<dyn Committer<C>>,
    _type: PhantomData<fn() -> C>,
}

impl<C: Record> ErasedCommitter for CommitterAdapter<C> {
    fn commit(&mut self, committables: Vec<Vec<u8>>) -> BoxFuture<'_, Result<(), OperatorError>> {
        Box::pin(async move {
            let decoded = committables
                .iter()
                .map(|bytes| C::from_bytes(bytes).map_err(|error| OperatorError::new(format!("committable: {error}"))))
                .collect::<Result<Vec<C>, _>>()?;
            self.committer.commit(decoded).await
        })
    }
}

/// Erases a typed sink into the factories a plan carries.
pub fn erase_sink<T: Record, S: Sink<T>>(sink: S) -> SinkFactory {
    let sink = Arc::new(sink);
    let for_committer = Arc::clone(&sink);
    SinkFactory {
        writer: Arc::new(move |task: &TaskInfo| {
            Box::new(WriterAdapter { writer: sink.create_writer(task) }) as Box<dyn ErasedSinkWriter>
        }),
        committer: Arc::new(move |task: &TaskInfo| {
            Box::new(CommitterAdapter { committer: for_committer.create_committer(task), _type: PhantomData })
                as Box<dyn ErasedCommitter>
        }),
    }
}
