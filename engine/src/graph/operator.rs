//! The type-erased contract between a plan and the task that runs it.
//!
//! The typed DataStream API ([`crate::api`]) and the typed Sink V2 API ([`crate::sink`]) erase
//! their user functions into the factories defined here; the graph carries the factories and a
//! task instantiates them. Nothing here knows about the network or the clock: sources and sinks
//! reach external systems through the addresses in [`ExternalSystems`].

use std::collections::BTreeMap;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::record::{Element, Record, TypeInfo, Values, downcast_values};
use crate::time::{Timestamp, Watermark};

pub use crate::future::BoxFuture;

/// Streaming or batch execution of the same program (Flink's `RuntimeExecutionMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExecutionMode {
    /// Pipelined exchanges, one pipelined region, keyed state in the hash backend, running results.
    Streaming,
    /// Blocking exchanges, stage by stage, keyed input sorted by key, one final result per key.
    Batch,
}

impl ExecutionMode {
    /// Both modes, streaming first.
    pub const ALL: [ExecutionMode; 2] = [ExecutionMode::Streaming, ExecutionMode::Batch];

    /// The lowercase name used in scenarios and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::Streaming => "streaming",
            ExecutionMode::Batch => "batch",
        }
    }
}

impl fmt::Display for ExecutionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Addresses of the external systems a job's sources and sinks talk to, by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExternalSystems {
    addresses: BTreeMap<String, SocketAddr>,
    /// How their clients ride out a refused or dropped connection.
    #[serde(default)]
    reconnect: crate::rpc::Reconnect,
}

impl ExternalSystems {
    /// Their clients ride out a refused or dropped connection as `reconnect` says.
    pub fn with_reconnect(mut self, reconnect: crate::rpc::Reconnect) -> ExternalSystems {
        self.reconnect = reconnect;
        self
    }

    /// How their clients ride out a refused or dropped connection.
    pub fn reconnect(&self) -> crate::rpc::Reconnect {
        self.reconnect
    }

    /// Registers the address of the system called `name`.
    pub fn with(mut self, name: &str, address: SocketAddr) -> ExternalSystems {
        self.addresses.insert(name.to_string(), address);
        self
    }

    /// The address of the system called `name`.
    pub fn address(&self, name: &str) -> Result<SocketAddr, OperatorError> {
        self.addresses
            .get(name)
            .copied()
            .ok_or_else(|| OperatorError::new(format!("no external system called `{name}` is configured")))
    }
}

/// What a running subtask knows about itself; handed to every factory.
#[derive(Clone, Debug)]
pub struct TaskInfo {
    /// The job instance, stable across restarts.
    pub job_id: String,
    /// The operator or sink name from the program.
    pub name: String,
    /// The operator's stream node id: stable across attempts, unique in the job.
    pub operator_id: u32,
    /// Streaming or batch.
    pub mode: ExecutionMode,
    /// This subtask's index, `0..parallelism`.
    pub subtask_index: u32,
    /// Number of subtasks of this vertex.
    pub parallelism: u32,
    /// Number of key groups.
    pub max_parallelism: u32,
    /// The job attempt: 0 for the first run, +1 on every restart.
    pub attempt: u32,
    /// Streaming with checkpoints: sinks commit per checkpoint, not at end of input.
    pub checkpointing: bool,
    /// The checkpoint this subtask was restored from, if any.
    pub restored_checkpoint: Option<u64>,
    /// Where external systems are.
    pub external: ExternalSystems,
}

/// A failure inside an operator, source or sink; fails the task, which triggers failover.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OperatorError {
    /// What went wrong, for people.
    pub message: String,
}

impl OperatorError {
    /// An error with a message.
    pub fn new(message: impl Into<String>) -> OperatorError {
        OperatorError { message: message.into() }
    }
}

impl fmt::Display for OperatorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OperatorError {}

/// Elements of one type with their timestamps, passed along an operator chain together: one box
/// for the run instead of one per element, and one call per operator instead of one per
/// element (timely's containers; Flink passes records one at a time). A chain passes batches
/// where both ends take them and single elements elsewhere; either way each operator sees the
/// same elements in the same order.
pub struct Batch {
    /// A `Vec` of the elements' values.
    pub values: Values,
    /// Each element's event timestamp, if it has one.
    pub timestamps: Vec<Option<Timestamp>>,
    /// The values' type.
    pub type_info: TypeInfo,
}

impl Batch {
    /// A batch of `values` with their `timestamps`, one each.
    pub fn new<T: Record>(values: Vec<T>, timestamps: Vec<Option<Timestamp>>) -> Batch {
        assert_eq!(values.len(), timestamps.len(), "internal: a batch has one timestamp per element");
        Batch { values: Box::new(values), timestamps, type_info: TypeInfo::of::<T>() }
    }

    /// A batch of `values` without timestamps.
    pub fn untimed<T: Record>(values: Vec<T>) -> Batch {
        let timestamps = vec![None; values.len()];
        Batch::new(values, timestamps)
    }

    /// The values, typed, and their timestamps; a batch of another type is an engine bug.
    pub fn into_typed<T: 'static>(self, operator: &str) -> (Vec<T>, Vec<Option<Timestamp>>) {
        (downcast_values::<T>(self.values, operator), self.timestamps)
    }

    /// How many elements it holds.
    pub fn len(&self) -> usize {
        self.timestamps.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.timestamps.is_empty()
    }

    /// Its elements one by one, with their timestamps, in order.
    pub fn into_elements(self) -> impl Iterator<Item = (Element, Option<Timestamp>)> {
        self.type_info.into_elements(self.values).into_iter().zip(self.timestamps)
    }

    /// The batch cut into batches of `size` elements (the last may be shorter), in order.
    pub fn into_chunks(self, size: usize) -> Vec<Batch> {
        let Batch { values, timestamps, type_info } = self;
        let size = size.max(1);
        let chunks = type_info.chunk_values(values, size);
        chunks
            .into_iter()
            .zip(timestamps.chunks(size))
            .map(|(values, timestamps)| Batch { values, timestamps: timestamps.to_vec(), type_info: type_info.clone() })
            .collect()
    }

    /// A copy (for a node with several chained outputs).
    pub fn duplicate(&self) -> Batch {
        Batch {
            values: self.type_info.clone_values(&self.values),
            timestamps: self.timestamps.clone(),
            type_info: self.type_info.clone(),
        }
    }
}

/// Where an operator emits its results: the next operator of the chain, or the network. It is
/// also the operator's view of the element being processed (Flink's `Context.timestamp()`).
pub trait Output {
    /// Emits one element downstream, with the timestamp of the element being processed (Flink's
    /// `TimestampedCollector`).
    fn collect(&mut self, element: Element);

    /// Emits one element downstream with its own event timestamp (or none).
    fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>);

    /// Emits a batch downstream: what `collect_with_timestamp` of each of its elements in turn
    /// does, in one call.
    fn collect_batch(&mut self, batch: Batch) {
        for (element, timestamp) in batch.into_elements() {
            self.collect_with_timestamp(element, timestamp);
        }
    }

    /// The event timestamp of the element being processed, if it has one (none while a
    /// watermark or the end of input is processed).
    fn current_timestamp(&self) -> Option<Timestamp>;

    /// Sends event-time progress downstream: no element at or below `watermark` follows.
    fn emit_watermark(&mut self, watermark: Watermark);
}

/// One operator of a chain (Flink's `StreamOperator`), as the task runs it.
///
/// Hooks are called from one task only, never concurrently, and must not block: anything that
/// needs I/O belongs in a source or a sink.
pub trait StreamOperator: Send {
    /// Called once per element, in arrival order; in batch mode a keyed operator sees its input
    /// sorted by key.
    fn process_element(&mut self, element: Element, output: &mut dyn Output) -> Result<(), OperatorError>;

    /// Whether it takes a run of elements of its first input in one call
    /// ([`StreamOperator::process_batch`]); if not, the chain hands it each element in turn.
    fn takes_batches(&self) -> bool {
        false
    }

    /// Called, if it takes batches, with a run of elements of its first input, in arrival
    /// order: it must do what `process_element` of each in turn (with each one's timestamp as
    /// the current one) would do.
    fn process_batch(&mut self, _batch: Batch, _output: &mut dyn Output) -> Result<(), OperatorError> {
        panic!("internal: a batch was handed to an operator that takes elements one at a time")
    }

    /// Called once per element of the second input of a two-input operator (Flink's
    /// `processElement2`); one-input operators never get it.
    fn process_element2(&mut self, _element: Element, _output: &mut dyn Output) -> Result<(), OperatorError> {
        panic!("internal: an element arrived on the second input of a one-input operator")
    }

    /// Called when the task's event time advances to `watermark` (the minimum over its input
    /// channels; [`Watermark::MAX`] once its input ended): fire event-time timers due by then,
    /// then pass the watermark on. The default passes it on.
    fn process_watermark(&mut self, watermark: Watermark, output: &mut dyn Output) -> Result<(), OperatorError> {
        output.emit_watermark(watermark);
        Ok(())
    }

    /// Called when every channel of input `input` (0 or 1) ended, before [`Self::end_input`]
    /// (Flink's `BoundedMultiInput.endInput(int)`): a hash join knows its build side is whole.
    /// Only a chain's head gets it, once per input; after a restore, again for an input that had
    /// ended before the checkpoint. The default does nothing.
    fn end_input_of(&mut self, _input: u32, _output: &mut dyn Output) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Called once after the last element (Flink's `endInput` + `finish`): emit what was held
    /// back. Nothing may be emitted after it returns.
    fn end_input(&mut self, _output: &mut dyn Output) -> Result<(), OperatorError> {
        Ok(())
    }

    /// The operator's state for a checkpoint (keyed state included); empty if it has none.
    fn snapshot_state(&self) -> Vec<u8> {
        Vec::new()
    }

    /// Restores the state a checkpoint saved, before the first element.
    fn restore_state(&mut self, _state: &[u8]) -> Result<(), OperatorError> {
        Ok(())
    }

    /// Called every auto-watermark interval of the task's time (Flink's
    /// `pipeline.auto-watermark-interval`, an `onPeriodicEmit`): a watermark generator emits
    /// its current watermark here. The default does nothing.
    fn on_periodic_emit(&mut self, _output: &mut dyn Output) -> Result<(), OperatorError> {
        Ok(())
    }

    /// What it does with a record of input `input` (0 or 1), for the cost model; the default is
    /// a stateless record function.
    fn cost_kind(&self, _input: u32) -> crate::resources::OperatorKind {
        crate::resources::OperatorKind::Map
    }

    /// Elements it dropped as late since the job began (checkpointed with its state), for the
    /// task's report.
    fn dropped_late(&self) -> u64 {
        0
    }

    /// The elements it left out of a window that had fired since the last call (late for some
    /// of their windows or for all), to be traced at once.
    fn take_late_drops(&mut self) -> Vec<LateDrop> {
        Vec::new()
    }
}

/// An element a window operator left out of at least one of its windows because that window
/// had fired when it arrived (Flink's `isWindowLate`: `end - 1 <= watermark`), and added to the
/// others. Late for every window, it is *late* as Flink counts it: counted, and sent to the
/// late-data side output if there is one. With sliding windows an element can be late for its
/// earliest windows only.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LateDrop {
    /// The element as `{:?}` shows it: how the harness finds it in the input.
    pub element: String,
    /// The element's event time.
    pub timestamp: Timestamp,
    /// The operator's watermark when it arrived.
    pub watermark: Timestamp,
    /// `[start, end)` of each window it was left out of (each had fired), in window order.
    pub missed: Vec<(Timestamp, Timestamp)>,
    /// `[start, end)` of each window it was added to (none had fired), in window order.
    pub joined: Vec<(Timestamp, Timestamp)>,
}

impl LateDrop {
    /// Whether it was late for every window it belongs to (and so went to the side output).
    pub fn every_window(&self) -> bool {
        self.joined.is_empty()
    }
}

/// Creates an operator instance for one subtask.
pub type OperatorFactory = Arc<dyn Fn(&TaskInfo) -> Box<dyn StreamOperator> + Send + Sync>;

/// The reader half of a source (Flink's `SourceReader`), erased.
pub trait ErasedSourceReader: Send + Sync {
    /// The next batch of elements, or `None` once this subtask's share of a bounded source is
    /// exhausted. May wait for the external system.
    fn poll_next(&mut self) -> BoxFuture<'_, Result<Option<Batch>, OperatorError>>;
    /// The reader's position after the last batch returned (for a checkpoint).
    fn snapshot_state(&self) -> Vec<u8>;
    /// Continues from a checkpoint's position, before the first poll.
    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError>;
    /// The watermark the records read so far justify, for a source that generates them (in
    /// streaming mode); `None` for one that does not.
    fn current_watermark(&mut self) -> Option<crate::time::Watermark> {
        None
    }
    /// How far the reader has read (see [`ReadOffsets`]); `None` for a reader that does not say.
    fn read_offsets(&self) -> Option<ReadOffsets> {
        None
    }
}

/// How far a source reader has read, split by split (Flink's split state, as offsets): what a
/// checkpoint's barrier follows, for the oracle that rebuilds exactly that input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadOffsets {
    /// The stream it reads (a log topic).
    pub stream: String,
    /// (split, records read) of every split assigned to it, finished ones included; a split
    /// not named: none read.
    pub splits: Vec<(u32, u64)>,
}

/// Creates a source reader for one subtask.
pub type SourceFactory = Arc<dyn Fn(&TaskInfo) -> Box<dyn ErasedSourceReader> + Send + Sync>;

/// The writer half of a Sink V2 sink, erased; committables travel encoded.
pub trait ErasedSinkWriter: Send {
    /// Accepts one element (may only buffer it).
    fn write(&mut self, element: Element) -> Result<(), OperatorError>;
    /// Accepts a batch of elements, as `write` of each in turn.
    fn write_batch(&mut self, batch: Batch) -> Result<(), OperatorError> {
        batch.into_elements().try_for_each(|(element, _)| self.write(element))
    }
    /// Gives the writer a chance to ship buffered elements; `end_of_input` asks for everything.
    fn flush(&mut self, end_of_input: bool) -> BoxFuture<'_, Result<(), OperatorError>>;
    /// Pre-commits what was written and returns the encoded committables.
    fn prepare_commit(&mut self) -> BoxFuture<'_, Result<Vec<Vec<u8>>, OperatorError>>;
    /// Called after `prepare_commit` at barrier `checkpoint_id`: the writer's state, and from
    /// now on it writes for the next checkpoint.
    fn snapshot_state(&mut self, checkpoint_id: u64) -> Result<Vec<u8>, OperatorError>;
    /// Restores the state a checkpoint saved, before the first element.
    fn restore_state(&mut self, state: &[u8]) -> Result<(), OperatorError>;
}

/// The committer half of a Sink V2 sink, erased.
pub trait ErasedCommitter: Send + Sync {
    /// Commits encoded committables; must be idempotent.
    fn commit(&mut self, committables: Vec<Vec<u8>>) -> BoxFuture<'_, Result<(), OperatorError>>;
}

/// Creates a sink writer for one subtask.
pub type SinkWriterFactory = Arc<dyn Fn(&TaskInfo) -> Box<dyn ErasedSinkWriter> + Send + Sync>;

/// Creates a committer for one subtask.
pub type CommitterFactory = Arc<dyn Fn(&TaskInfo) -> Box<dyn ErasedCommitter> + Send + Sync>;

/// Creates the writer and committer of a sink for one subtask.
#[derive(Clone)]
pub struct SinkFactory {
    /// Creates the writer.
    pub writer: SinkWriterFactory,
    /// Creates the committer.
    pub committer: CommitterFactory,
}
