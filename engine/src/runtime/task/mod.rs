//! One subtask: reads its input gate (or its source), pushes elements through its operator
//! chain, and writes to record writers or sinks; at end of input it finishes its operators,
//! its output partitions and, for each sink, pre-commits and commits.
//!
//! In streaming mode with checkpoints ([`checkpointing`]) a source task takes a snapshot and
//! injects a barrier when the JobMaster asks (between source batches); other tasks align the
//! barriers of their input channels (a channel that delivered one is blocked until all have)
//! and snapshot; sinks commit when checkpoints complete; at end of input the task saves a final
//! snapshot and waits for the final checkpoint before it commits its last transaction and
//! finishes.
//!
//! In batch mode a chain headed by a keyed operator first reads its whole input and sorts it
//! by (key, input), stable, by encoded key bytes, as Flink's sorted inputs do: the operator sees
//! one key after the other and, for a two-input operator, all of a key's first input before its
//! second.
//!
//! Every batch of records processed is charged to the TaskManager's cores through the
//! [`Resources`] cost model.

mod chain;
mod checkpointing;
pub mod sorter;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use chain::{ChainBody, ChainNode, OperatorChain};
pub use checkpointing::{CheckpointEnvironment, TaskControl};
use checkpointing::{Checkpointing, SinkCommitter};
use sorter::{BUGGIFIED_SORT_BUDGET_BYTES, KeyedInputSorter, SORT_BUDGET_BYTES, SortedRecord, SpillError};
use tokio::sync::mpsc;

use super::messages::{TaskDeploymentDescriptor, TaskFailure, TaskReport};
use crate::checkpoint::{Alignment, BarrierAligner, CheckpointBarrier};
use crate::graph::operator::{Batch, ErasedSourceReader};
use crate::graph::partitioner::ChannelSelector;
use crate::graph::{
    ExecutionGraph, ExecutionMode, JobGraph, JobVertex, NodeBody, OperatorError, ResultPartitionType, StreamNodeId,
    TaskInfo,
};
use crate::record::{Element, KeySelector, TypeInfo};
use crate::resources::{CpuMeter, OperatorKind, Resources, Work};
use crate::rpc::RpcClient;
use crate::rt::time::Instant;
use crate::shuffle::buffer::{decode_batch, decode_buffer, for_each_record};
use crate::shuffle::remote::RemoteWriter;
use crate::shuffle::{
    GateEvent, GateEventKind, InputGate, PartitionLocation, RecordWriter, ResultPartitionManager, ShuffleWriter,
};
use crate::storage::Storage;
use crate::time::{StatusWatermarkValve, Timestamp, Watermark};
use crate::trace::{TraceEvent, TracerHandle};

/// How many elements of a source's batch go through its chain together.
const SOURCE_GROUP: usize = 256;

/// What a task needs from its TaskManager.
pub struct TaskEnvironment {
    /// The deployment.
    pub descriptor: TaskDeploymentDescriptor,
    /// The plan, rebuilt from the catalog.
    pub graph: Arc<ExecutionGraph>,
    /// The TaskManager's partitions: where TaskManager-local outputs live.
    pub partitions: ResultPartitionManager,
    /// For reading input channels.
    pub client: RpcClient,
    /// The TaskManager's cores, disk and network interface.
    pub resources: Arc<Resources>,
    /// What the JobMaster tells the task while it runs.
    pub controls: mpsc::UnboundedReceiver<TaskControl>,
    /// Where checkpoints are saved and acknowledged.
    pub checkpoints: CheckpointEnvironment,
    /// The TaskManager's tracer: the task traces its windows' late elements.
    pub tracer: TracerHandle,
}

/// How often a task gives its operators their periodic emit (Flink's
/// `pipeline.auto-watermark-interval` default): watermark generators emit at this pace.
pub const AUTO_WATERMARK_INTERVAL: Duration = Duration::from_millis(200);

/// What each input channel carries: its element type, the head's input it feeds, and whether
/// it is read from a disk.
struct Channel {
    element_type: TypeInfo,
    input: u32,
    blocking: bool,
}

/// Which inputs of a task still have open channels (Flink's `BoundedMultiInput` bookkeeping).
struct InputEnds {
    /// Open channels per input.
    open: Vec<usize>,
}

impl InputEnds {
    fn new(channels: &[Channel]) -> InputEnds {
        let inputs = channels.iter().map(|channel| channel.input as usize + 1).max().unwrap_or(0);
        let mut open = vec![0; inputs];
        for channel in channels {
            open[channel.input as usize] += 1;
        }
        InputEnds { open }
    }

    /// A channel of `input` ended: whether it was the input's last open one.
    fn channel_ended(&mut self, input: u32) -> bool {
        let open = &mut self.open[input as usize];
        assert!(*open > 0, "task invariant: a channel of input {input} ended after all of them had");
        *open -= 1;
        *open == 0
    }

    /// The inputs with channels still open (none, once the gate ended: kept for its end), now
    /// taken as ended.
    fn take_open(&mut self) -> Vec<u32> {
        let open = (0..self.open.len() as u32).filter(|input| self.open[*input as usize] > 0).collect();
        self.open.iter_mut().for_each(|open| *open = 0);
        open
    }
}

enum Head {
    Source,
    Input { gate: InputGate, channels: Vec<Channel>, sort_by: Option<Vec<Option<KeySelector>>> },
}

fn operator_failure(error: OperatorError) -> TaskFailure {
    TaskFailure::Operator(error.message)
}

/// The task's chain (nodes in chain order, their writers) and its sinks' committers.
struct Built {
    chain: OperatorChain,
    source: Option<Box<dyn ErasedSourceReader>>,
    committers: Vec<SinkCommitter>,
}

fn build_chain(
    descriptor: &TaskDeploymentDescriptor,
    graph: &ExecutionGraph,
    outputs: &OutputFactory<'_>,
) -> Result<Built, TaskFailure> {
    let vertex = graph.job_graph().vertex(descriptor.execution.vertex.vertex);
    let position: BTreeMap<_, _> = vertex.chain.iter().enumerate().map(|(index, node)| (*node, index)).collect();
    let (writers, mut writers_of) = record_writers(descriptor, graph, outputs, &position)?;
    let stream_graph = &graph.job_graph().stream_graph;
    let (mut nodes, mut source, mut committers) = (Vec::new(), None, Vec::new());
    for (index, node_id) in vertex.chain.iter().enumerate() {
        let node = stream_graph.node(*node_id);
        let info = task_info(descriptor, vertex.max_parallelism, node.name.clone(), node_id.0);
        let body = match &node.body {
            NodeBody::Source(factory) => {
                source = Some(factory(&info));
                ChainBody::Source
            }
            NodeBody::Operator(factory) => ChainBody::Operator(Some(factory(&info))),
            NodeBody::Sink(factory) => {
                committers.push(SinkCommitter {
                    node: index,
                    operator_id: node_id.0,
                    committer: (factory.committer)(&info),
                });
                ChainBody::Sink((factory.writer)(&info))
            }
        };
        let children =
            stream_graph.out_edges(*node_id).iter().filter_map(|(target, _)| position.get(target).copied()).collect();
        let writers = writers_of.remove(&index).unwrap_or_default();
        nodes.push(ChainNode {
            operator_id: node_id.0,
            body,
            output_type: node.output_type.clone(),
            children,
            writers,
        });
    }
    assert!(writers_of.is_empty(), "task chain invariant: every record writer belongs to a node of the chain");
    Ok(Built { chain: OperatorChain::new(nodes, writers), source, committers })
}

/// What a chained operator is told of its task.
fn task_info(descriptor: &TaskDeploymentDescriptor, max_parallelism: u32, name: String, operator_id: u32) -> TaskInfo {
    let execution = descriptor.execution;
    TaskInfo {
        job_id: descriptor.spec.job_id.clone(),
        name,
        operator_id,
        mode: descriptor.spec.mode,
        subtask_index: execution.vertex.subtask,
        parallelism: descriptor.parallelism,
        max_parallelism,
        attempt: execution.attempt,
        checkpointing: descriptor.checkpointing,
        restored_checkpoint: descriptor.restore.as_ref().map(|(id, _)| *id),
        external: descriptor.external.clone(),
    }
}

/// The writers of the partitions the task produces, checked against its plan, and which chain
/// node (by position) feeds each.
fn record_writers(
    descriptor: &TaskDeploymentDescriptor,
    graph: &ExecutionGraph,
    outputs: &OutputFactory<'_>,
    position: &BTreeMap<StreamNodeId, usize>,
) -> Result<(Vec<RecordWriter>, BTreeMap<usize, Vec<usize>>), TaskFailure> {
    let execution = descriptor.execution;
    let job_graph = graph.job_graph();
    let vertex = job_graph.vertex(execution.vertex.vertex);
    let mut writers = Vec::new();
    let mut writers_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    let produced = graph.produced_partitions(execution.vertex);
    if produced.len() != descriptor.outputs.len() {
        return Err(TaskFailure::Deployment(format!(
            "{execution} produces {} partitions, but its deployment names {}",
            produced.len(),
            descriptor.outputs.len()
        )));
    }
    for (produced, output) in produced.iter().zip(&descriptor.outputs) {
        if output.partition.partition != produced.id || output.subpartitions != produced.num_subpartitions {
            return Err(TaskFailure::Deployment(format!(
                "{execution}'s deployment names partition {} where its plan produces data set {} with {} subpartitions",
                output.partition, produced.id.dataset.0, produced.num_subpartitions
            )));
        }
        let edge = job_graph.edge(produced.id.dataset);
        let selector = ChannelSelector::new(
            edge.partitioner.clone(),
            produced.num_subpartitions,
            vertex.max_parallelism,
            execution.vertex.subtask,
        );
        // A task that commits at its own end of input (batch, or streaming without
        // checkpoints) keeps its committed output across a re-run of its producers, so they
        // must send it the same records again: choose by content, not by arrival order.
        let selector = if descriptor.checkpointing { selector } else { selector.choosing_by_content() };
        let element_type = job_graph.stream_graph.node(edge.source_node).output_type.clone();
        writers_of.entry(position[&edge.source_node]).or_default().push(writers.len());
        writers.push(RecordWriter::new(
            selector,
            element_type,
            outputs.create(output.clone()),
            descriptor.spec.shuffle.buffer_size,
        ));
    }
    Ok((writers, writers_of))
}

/// Creates the writer of an output partition where its descriptor says it lives.
struct OutputFactory<'a> {
    partitions: &'a ResultPartitionManager,
    client: &'a RpcClient,
    resources: &'a Arc<Resources>,
}

impl OutputFactory<'_> {
    fn create(&self, descriptor: crate::shuffle::ShuffleDescriptor) -> Box<dyn ShuffleWriter> {
        match descriptor.location {
            PartitionLocation::TaskManager { .. } => self.partitions.create_writer(descriptor),
            PartitionLocation::Remote { .. } => {
                Box::new(RemoteWriter::new(descriptor, self.client.clone(), Arc::clone(self.resources)))
            }
        }
    }
}

fn input_channels(descriptor: &TaskDeploymentDescriptor, job_graph: &JobGraph) -> Vec<Channel> {
    descriptor
        .inputs
        .iter()
        .map(|spec| {
            let edge = job_graph.edge(spec.partition().partition.dataset);
            Channel {
                element_type: job_graph.stream_graph.node(edge.source_node).output_type.clone(),
                input: edge.target_input,
                blocking: edge.partition_type == ResultPartitionType::Blocking,
            }
        })
        .collect()
}

fn decode(
    channel: &Channel,
    bytes: &[u8],
    descriptor: &TaskDeploymentDescriptor,
    index: usize,
) -> Result<Vec<(Element, Option<Timestamp>)>, TaskFailure> {
    decode_buffer(bytes, &channel.element_type).map_err(|error| corrupt(descriptor, index, error))
}

/// A buffer of the first input, decoded into one batch.
fn decode_into_batch(
    channel: &Channel,
    bytes: &[u8],
    descriptor: &TaskDeploymentDescriptor,
    index: usize,
) -> Result<Batch, TaskFailure> {
    decode_batch(bytes, &channel.element_type).map_err(|error| corrupt(descriptor, index, error))
}

fn corrupt(descriptor: &TaskDeploymentDescriptor, index: usize, error: crate::record::DecodeError) -> TaskFailure {
    TaskFailure::corrupt_input(descriptor.inputs[index].partition(), error.message)
}

/// A record's key, timestamp, and where its encoded bytes are in its buffer.
type KeyedRecord = (Vec<u8>, Option<Timestamp>, std::ops::Range<usize>);

/// A buffer's records with their keys, timestamps and where their bytes are in the buffer (for
/// sorting them still encoded).
fn keyed_records(
    channel: &Channel,
    bytes: &[u8],
    selector: &KeySelector,
    descriptor: &TaskDeploymentDescriptor,
    index: usize,
) -> Result<Vec<KeyedRecord>, TaskFailure> {
    let mut records = Vec::new();
    for_each_record(bytes, |record, timestamp| {
        let mut rest = record;
        let element = channel.element_type.decode(&mut rest)?;
        if !rest.is_empty() {
            let detail = format!("{} bytes left over in a {}", rest.len(), channel.element_type.name());
            return Err(crate::record::DecodeError::new(detail));
        }
        let start = record.as_ptr().addr() - bytes.as_ptr().addr();
        let mut key = Vec::new();
        selector(element.as_ref(), &mut key);
        records.push((key, timestamp, start..start + record.len()));
        Ok(())
    })
    .map_err(|error| TaskFailure::corrupt_input(descriptor.inputs[index].partition(), error.message))?;
    Ok(records)
}

/// No event is defined on data channels yet (checkpoint barriers come with checkpointing):
/// one arriving means the partition's bytes are not what its producer wrote.
fn expect_buffer(
    kind: GateEventKind,
    descriptor: &TaskDeploymentDescriptor,
    channel: usize,
) -> Result<(), TaskFailure> {
    match kind {
        GateEventKind::Buffer => Ok(()),
        GateEventKind::Event => Err(TaskFailure::corrupt_input(
            descriptor.inputs[channel].partition(),
            "an event arrived, and this task expects none",
        )),
    }
}

fn head_of(
    vertex: &JobVertex,
    job_graph: &JobGraph,
    descriptor: &TaskDeploymentDescriptor,
    has_source: bool,
    client: RpcClient,
    partitions: &ResultPartitionManager,
) -> Head {
    if has_source {
        return Head::Source;
    }
    let head = job_graph.stream_graph.node(vertex.chain[0]);
    let keyed = head.input_keys.iter().any(Option::is_some);
    let sort_by = (descriptor.spec.mode == ExecutionMode::Batch && keyed).then(|| head.input_keys.clone());
    let gate = InputGate::open(
        descriptor.inputs.clone(),
        client,
        Some(partitions.clone()),
        descriptor.spec.shuffle.input_gate(),
    );
    Head::Input { gate, channels: input_channels(descriptor, job_graph), sort_by }
}

/// A task's work between its start and the end of its input.
struct Run<'a> {
    descriptor: &'a TaskDeploymentDescriptor,
    chain: OperatorChain,
    source: Option<Box<dyn ErasedSourceReader>>,
    checkpointing: Checkpointing,
    controls: mpsc::UnboundedReceiver<TaskControl>,
    metrics: TaskReport,
    tracer: TracerHandle,
    /// When the operators get their next periodic emit.
    next_emit: Instant,
}

impl Run<'_> {
    /// After a batch of elements: traces the late elements the windows dropped, and gives the
    /// operators their periodic emit once its interval passed.
    fn after_elements(&mut self) -> Result<(), TaskFailure> {
        self.trace_late_drops();
        let now = Instant::now();
        if now >= self.next_emit {
            // A source that generates watermarks (per split) hands its own to the chain's head.
            if let Some(watermark) = self.source.as_mut().and_then(|source| source.current_watermark()) {
                self.chain.process_watermark(watermark)?;
            }
            self.chain.periodic_emit()?;
            self.next_emit = now + self.descriptor.spec.watermark_interval.unwrap_or(AUTO_WATERMARK_INTERVAL);
        }
        Ok(())
    }

    fn trace_late_drops(&mut self) {
        let execution = self.descriptor.execution;
        let checkpoint = self.checkpointing.state_includes();
        for (operator, drop) in self.chain.take_late_drops() {
            self.tracer.record(TraceEvent::LateElement {
                attempt: execution.attempt,
                vertex: execution.vertex.vertex.0,
                subtask: execution.vertex.subtask,
                operator,
                element: drop.element,
                timestamp: drop.timestamp,
                watermark: drop.watermark,
                missed: drop.missed,
                joined: drop.joined,
                checkpoint,
            });
        }
    }

    /// Reads the source batch by batch; between batches, takes the checkpoints it was asked for.
    async fn read_source(&mut self, cpu: &mut CpuMeter<'_>) -> Result<(), TaskFailure> {
        loop {
            self.checkpointing.poll_controls(&mut self.controls, &mut self.chain, self.source.as_deref()).await?;
            let reader = self.source.as_mut().expect("a source task has a reader");
            let Some(batch) = reader.poll_next().await.map_err(operator_failure)? else { return Ok(()) };
            let count = batch.len() as u64;
            self.metrics.records_in += count;
            // In groups, so that the buffers the first group fills leave while the next group
            // is processed (see `OperatorChain::push_all`).
            for group in batch.into_chunks(SOURCE_GROUP) {
                self.chain.push_batch(group).await?;
            }
            self.after_elements()?;
            cpu.charge(self.chain.take_work()).await;
            self.chain.flush(false).await?;
        }
    }

    /// Decodes a buffer of channel `index` and pushes it through the chain: as one batch if it
    /// is of the first input, element by element if of the second.
    async fn push_buffer(&mut self, channel: &Channel, bytes: &[u8], index: usize) -> Result<(), TaskFailure> {
        let count = if channel.input == 0 {
            let batch = decode_into_batch(channel, bytes, self.descriptor, index)?;
            let count = batch.len() as u64;
            self.chain.push_batch(batch).await?;
            count
        } else {
            let elements = decode(channel, bytes, self.descriptor, index)?;
            let count = elements.len() as u64;
            self.chain.push_all(channel.input, elements).await?;
            count
        };
        self.metrics.records_in += count;
        Ok(())
    }

    /// Reads the input gate element by element, aligning checkpoint barriers and advancing the
    /// task's event time to the minimum of its channels' watermarks.
    async fn read_input(
        &mut self,
        gate: &mut InputGate,
        channels: &[Channel],
        cpu: &mut CpuMeter<'_>,
    ) -> Result<(), TaskFailure> {
        let ends = &mut InputEnds::new(channels);
        let mut aligner = BarrierAligner::new(channels.len());
        let mut valve = StatusWatermarkValve::new(channels.len().max(1));
        loop {
            let event = tokio::select! {
                biased;
                Some(control) = self.controls.recv() => {
                    self.checkpointing.on_control(control, &mut self.chain, None).await?;
                    continue;
                }
                event = gate.next() => event?,
            };
            let steps = match event {
                GateEvent::EndOfInput => return self.end_inputs(ends.take_open()).await,
                GateEvent::ChannelEnd { channel } => {
                    if let Some(watermark) = valve.channel_ended(channel) {
                        self.chain.process_watermark(watermark)?;
                    }
                    self.input_channel_ended(ends, channels[channel].input).await?;
                    aligner.on_channel_end(channel)
                }
                GateEvent::Item { channel, kind: GateEventKind::Event, bytes } => {
                    if let Some(watermark) = Watermark::decode(&bytes) {
                        if let Some(advanced) = valve.input_watermark(channel, watermark) {
                            self.chain.process_watermark(advanced)?;
                            self.chain.flush(false).await?;
                        }
                        continue;
                    }
                    let barrier = CheckpointBarrier::decode(&bytes).map_err(|error| {
                        TaskFailure::corrupt_input(
                            self.descriptor.inputs[channel].partition(),
                            format!("an event that is neither a watermark nor a checkpoint barrier: {error}"),
                        )
                    })?;
                    aligner.on_barrier(channel, barrier.id)
                }
                GateEvent::Item { channel, kind: GateEventKind::Buffer, bytes } => {
                    if aligner.is_aligning() {
                        crate::cover!(AlignmentBlockedWhileOtherDelivers);
                    }
                    self.on_buffer(&channels[channel], &bytes, channel, cpu).await?;
                    Vec::new()
                }
            };
            for step in steps {
                match step {
                    Alignment::Block(channel) => gate.block(channel),
                    Alignment::UnblockAll => gate.unblock_all(),
                    Alignment::Aligned(id) => {
                        self.checkpointing.checkpoint(id, &mut self.chain, None).await?;
                        gate.unblock_all();
                    }
                }
            }
        }
    }

    /// A buffer of channel `index`: its records go through the chain, and the task pays for them
    /// and for deserializing them.
    async fn on_buffer(
        &mut self,
        channel: &Channel,
        bytes: &[u8],
        index: usize,
        cpu: &mut CpuMeter<'_>,
    ) -> Result<(), TaskFailure> {
        if channel.blocking {
            self.metrics.disk_bytes_read += bytes.len() as u64;
        }
        self.push_buffer(channel, bytes, index).await?;
        self.after_elements()?;
        let mut work = self.chain.take_work();
        work.serialized_bytes += bytes.len() as u64;
        cpu.charge(work).await;
        self.chain.flush(false).await
    }

    /// A channel of `input` ended; once it was the input's last, the head operator hears of it.
    async fn input_channel_ended(&mut self, ends: &mut InputEnds, input: u32) -> Result<(), TaskFailure> {
        if ends.channel_ended(input) { self.end_inputs([input]).await } else { Ok(()) }
    }

    /// Tells the head operator that `inputs` ended, and ships what it emitted.
    async fn end_inputs(&mut self, inputs: impl IntoIterator<Item = u32>) -> Result<(), TaskFailure> {
        for input in inputs {
            self.chain.end_input_of(input)?;
            self.chain.flush(false).await?;
        }
        Ok(())
    }

    /// Batch: reads the whole input, sorts it by key, input and timestamp within the sort
    /// budget (spilling runs to the TaskManager's disk), then pushes it through.
    async fn read_sorted(
        &mut self,
        gate: &mut InputGate,
        channels: &[Channel],
        keys: &[Option<KeySelector>],
        storage: Arc<dyn Storage>,
        cpu: &mut CpuMeter<'_>,
    ) -> Result<(), TaskFailure> {
        let (sorter, bytes_in) = self.sort_input(gate, channels, keys, storage).await?;
        cpu.charge(Work { serialized_bytes: bytes_in, ..Work::of(OperatorKind::Sort, self.metrics.records_in) }).await;
        self.push_sorted(sorter, channels, keys.len(), cpu).await
    }

    /// Reads the whole input into a sorter, counting the records read.
    async fn sort_input(
        &mut self,
        gate: &mut InputGate,
        channels: &[Channel],
        keys: &[Option<KeySelector>],
        storage: Arc<dyn Storage>,
    ) -> Result<(KeyedInputSorter, u64), TaskFailure> {
        let spill_prefix = format!("spills/{}/{}", self.descriptor.spec.job_id, self.descriptor.execution);
        let budget =
            if crate::buggify!(InputSortSpillsEarly) { BUGGIFIED_SORT_BUDGET_BYTES } else { SORT_BUDGET_BYTES };
        let mut sorter = KeyedInputSorter::new(storage, spill_prefix, budget);
        let (mut records_in, mut bytes_in) = (0u64, 0u64);
        loop {
            match gate.next().await? {
                GateEvent::EndOfInput => break,
                GateEvent::ChannelEnd { .. } => {}
                GateEvent::Item { kind: GateEventKind::Event, bytes, .. } if Watermark::decode(&bytes).is_some() => {
                    // Batch sources emit no watermark before the end; a producer's watermark
                    // means nothing once the input is sorted.
                }
                GateEvent::Item { channel, kind, bytes } => {
                    expect_buffer(kind, self.descriptor, channel)?;
                    bytes_in += bytes.len() as u64;
                    if channels[channel].blocking {
                        self.metrics.disk_bytes_read += bytes.len() as u64;
                    }
                    let input = channels[channel].input;
                    let selector =
                        keys[input as usize].as_ref().expect("internal: batch sorting needs every input keyed");
                    for (key, timestamp, record) in
                        keyed_records(&channels[channel], &bytes, selector, self.descriptor, channel)?
                    {
                        sorter
                            .add(&key, input, timestamp, &bytes[record])
                            .await
                            .map_err(|error| self.spill_failed(error))?;
                        records_in += 1;
                    }
                }
            }
        }
        self.metrics.records_in = records_in;
        Ok((sorter, bytes_in))
    }

    /// Pushes the sorted input through the chain, in runs of one input.
    async fn push_sorted(
        &mut self,
        sorter: KeyedInputSorter,
        channels: &[Channel],
        inputs: usize,
        cpu: &mut CpuMeter<'_>,
    ) -> Result<(), TaskFailure> {
        let types: Vec<Option<TypeInfo>> = (0..inputs as u32)
            .map(|input| {
                channels.iter().find(|channel| channel.input == input).map(|channel| channel.element_type.clone())
            })
            .collect();
        let mut sorted = sorter.finish().await.map_err(|error| self.spill_failed(error))?;
        let mut next = sorted.next().await.map_err(|error| self.spill_failed(error))?;
        while let Some(first) = next.take() {
            // Runs of one input, at most 1024 records, as they come in sorted order.
            let input = first.input;
            let mut run = vec![self.decode_sorted(&types, first)?];
            loop {
                next = sorted.next().await.map_err(|error| self.spill_failed(error))?;
                match next.take() {
                    Some(record) if record.input == input && run.len() < 1024 => {
                        run.push(self.decode_sorted(&types, record)?);
                    }
                    other => {
                        next = other;
                        break;
                    }
                }
            }
            self.chain.push_all(input, run).await?;
            cpu.charge(self.chain.take_work()).await;
            self.chain.flush(false).await?;
        }
        self.end_inputs(0..inputs as u32).await
    }

    fn decode_sorted(
        &self,
        types: &[Option<TypeInfo>],
        sorted: SortedRecord,
    ) -> Result<(Element, Option<Timestamp>), TaskFailure> {
        let type_info = types[sorted.input as usize].as_ref().expect("internal: a sorted record's input has a channel");
        // It decoded once (for its key) and came back through checksummed runs.
        let element = type_info.decode(&mut sorted.record.as_slice()).unwrap_or_else(|error| {
            panic!("internal: a record that decoded before sorting does not decode after it: {}", error.message)
        });
        Ok((element, sorted.timestamp))
    }

    fn spill_failed(&self, error: SpillError) -> TaskFailure {
        TaskFailure::Operator(format!("sorting the keyed input on the TaskManager's disk: {error}"))
    }
}

/// Runs a task to its end; see the module doc.
pub async fn run_task(environment: TaskEnvironment) -> Result<TaskReport, TaskFailure> {
    let TaskEnvironment { descriptor, graph, partitions, client, resources, controls, checkpoints, tracer } =
        environment;
    let job_graph = graph.job_graph();
    let vertex = job_graph.vertex(descriptor.execution.vertex.vertex);
    let outputs = OutputFactory { partitions: &partitions, client: &client, resources: &resources };
    let Built { chain, source, committers } = build_chain(&descriptor, &graph, &outputs)?;
    let checkpointing = Checkpointing::new(
        descriptor.spec.job_id.clone(),
        descriptor.execution,
        client.clone(),
        checkpoints,
        committers,
        tracer.clone(),
    );
    let has_source = source.is_some();
    let mut run = Run {
        descriptor: &descriptor,
        chain,
        source,
        checkpointing,
        controls,
        metrics: TaskReport::default(),
        tracer,
        next_emit: Instant::now() + descriptor.spec.watermark_interval.unwrap_or(AUTO_WATERMARK_INTERVAL),
    };
    if let Some((id, handle)) = &descriptor.restore {
        run.checkpointing.restore(*id, handle, &mut run.chain, run.source.as_mut()).await?;
    }
    let mut cpu = resources.cpu_meter();
    match head_of(vertex, job_graph, &descriptor, has_source, client.clone(), &partitions) {
        Head::Source => run.read_source(&mut cpu).await?,
        Head::Input { mut gate, channels, sort_by: None } => run.read_input(&mut gate, &channels, &mut cpu).await?,
        Head::Input { mut gate, channels, sort_by: Some(keys) } => {
            run.read_sorted(&mut gate, &channels, &keys, partitions.storage(), &mut cpu).await?
        }
    }
    run.trace_late_drops();
    let Run { mut chain, source, mut checkpointing, mut controls, mut metrics, tracer, .. } = run;
    // The end of input is the end of event time: every timer and window fires.
    chain.process_watermark(Watermark::MAX)?;
    chain.end_input()?;
    (metrics.records_out, metrics.partitions) = chain.finish().await?;
    if has_source && metrics.backpressure_micros() > 0 {
        crate::cover!(BackpressureReachedSource);
    }
    let execution = descriptor.execution;
    for (operator, dropped) in chain.dropped_late() {
        tracer.record(TraceEvent::LateElementsCounted {
            attempt: execution.attempt,
            vertex: execution.vertex.vertex.0,
            subtask: execution.vertex.subtask,
            operator,
            dropped,
        });
    }
    metrics.disk_bytes_written = chain.blocking_bytes_written();
    cpu.charge(chain.take_work()).await;
    metrics.work = cpu.total();
    cpu.pay().await;
    if descriptor.checkpointing {
        checkpointing.end_of_input(&mut chain, source.as_deref()).await?;
        checkpointing.wait_for_final(&mut controls).await?;
    } else {
        checkpointing.commit_at_end_of_input(&mut chain).await?;
    }
    Ok(metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(input: u32) -> Channel {
        Channel { element_type: TypeInfo::of::<u64>(), input, blocking: false }
    }

    #[test]
    fn an_input_ends_with_its_last_channel_and_the_gate_end_ends_the_rest() {
        let mut ends = InputEnds::new(&[channel(0), channel(1), channel(0), channel(1)]);
        assert!(!ends.channel_ended(1));
        assert!(!ends.channel_ended(0));
        assert!(ends.channel_ended(1), "input 1's second channel was its last");
        assert_eq!(ends.take_open(), [0], "input 0 still had a channel open when the gate ended");
        assert_eq!(ends.take_open(), Vec::<u32>::new());
    }

    #[test]
    #[should_panic(expected = "task invariant: a channel of input 0 ended after all of them had")]
    fn a_channel_that_ends_twice_breaks_an_invariant() {
        let mut ends = InputEnds::new(&[channel(0)]);
        ends.channel_ended(0);
        ends.channel_ended(0);
    }
}
