//! One subtask: reads its input gate (or its source), pushes elements through its operator
//! chain, and writes to record writers or sinks; at end of input it finishes its operators,
//! its output partitions and, for each sink, pre-commits and commits.
//!
//! In batch mode a chain headed by a keyed operator first reads its whole input and sorts it
//! by (key, input), stable, by encoded key bytes, as Flink's sorted inputs do: the operator sees
//! one key after the other and, for a two-input operator, all of a key's first input before its
//! second.
//!
//! Every batch of records processed is charged to the TaskManager's cores through the
//! [`Resources`] cost model.

mod chain;

use std::collections::BTreeMap;
use std::sync::Arc;

use chain::{ChainBody, ChainNode, OperatorChain};

use super::messages::{TaskDeploymentDescriptor, TaskFailure};
use super::resources::Resources;
use crate::graph::operator::{ErasedCommitter, ErasedSourceReader};
use crate::graph::partitioner::ChannelSelector;
use crate::graph::{
    ExecutionGraph, ExecutionMode, JobGraph, JobVertex, NodeBody, OperatorError, ResultPartitionType, TaskInfo,
};
use crate::record::{Element, KeySelector, TypeInfo};
use crate::rpc::RpcClient;
use crate::shuffle::buffer::decode_buffer;
use crate::shuffle::{GateEvent, InputGate, InputGateConfig, RecordWriter, ResultPartitionId, ResultPartitionManager};

/// Counts a finished task reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskMetrics {
    /// Elements read from the input gate or the source.
    pub records_in: u64,
    /// Elements written to record writers or sinks.
    pub records_out: u64,
    /// Bytes of BLOCKING partitions read (read from the producers' disks).
    pub disk_bytes_read: u64,
    /// Bytes of BLOCKING partitions written (to this TaskManager's disk).
    pub disk_bytes_written: u64,
    /// Bytes written to each subpartition of each produced data set.
    pub partition_bytes: Vec<(crate::graph::IntermediateDataSetId, Vec<u64>)>,
}

/// What a task needs from its TaskManager.
pub struct TaskEnvironment {
    /// The deployment.
    pub descriptor: TaskDeploymentDescriptor,
    /// The plan, rebuilt from the catalog.
    pub graph: Arc<ExecutionGraph>,
    /// Where the task's output partitions live.
    pub partitions: ResultPartitionManager,
    /// For reading input channels.
    pub client: RpcClient,
    /// The TaskManager's cores, disk and network interface.
    pub resources: Arc<Resources>,
}

/// What each input channel carries: its element type, the head's input it feeds, and whether
/// it is read from a disk.
struct Channel {
    element_type: TypeInfo,
    input: u32,
    blocking: bool,
}

enum Head {
    Source(Box<dyn ErasedSourceReader>),
    Input { gate: InputGate, channels: Vec<Channel>, sort_by: Option<Vec<Option<KeySelector>>> },
}

fn operator_failure(error: OperatorError) -> TaskFailure {
    TaskFailure::Operator(error.message)
}

/// The task's chain (nodes in chain order, their writers) and its sinks' committers.
struct Built {
    chain: OperatorChain,
    source: Option<Box<dyn ErasedSourceReader>>,
    committers: Vec<(usize, Box<dyn ErasedCommitter>)>,
}

fn build_chain(
    descriptor: &TaskDeploymentDescriptor,
    graph: &ExecutionGraph,
    partitions: &ResultPartitionManager,
) -> Built {
    let execution = descriptor.execution;
    let job_graph = graph.job_graph();
    let vertex = job_graph.vertex(execution.vertex.vertex);
    let stream_graph = &job_graph.stream_graph;
    let position: BTreeMap<_, _> = vertex.chain.iter().enumerate().map(|(index, node)| (*node, index)).collect();
    let mut writers = Vec::new();
    let mut writers_of: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for produced in graph.produced_partitions(execution.vertex) {
        let edge = job_graph.edge(produced.id.dataset);
        let id = ResultPartitionId { partition: produced.id, attempt: execution.attempt };
        let partition = partitions.register(id, produced.partition_type, produced.num_subpartitions);
        let selector = ChannelSelector::new(
            edge.partitioner.clone(),
            produced.num_subpartitions,
            vertex.max_parallelism,
            execution.vertex.subtask,
        );
        let element_type = stream_graph.node(edge.source_node).output_type.clone();
        writers_of.entry(position[&edge.source_node]).or_default().push(writers.len());
        writers.push(RecordWriter::new(
            selector,
            element_type,
            partition,
            produced.num_subpartitions,
            descriptor.spec.shuffle.buffer_size,
        ));
    }
    let (mut nodes, mut source, mut committers) = (Vec::new(), None, Vec::new());
    for (index, node_id) in vertex.chain.iter().enumerate() {
        let node = stream_graph.node(*node_id);
        let info = TaskInfo {
            job_id: descriptor.spec.job_id.clone(),
            name: node.name.clone(),
            operator_id: node_id.0,
            mode: descriptor.spec.mode,
            subtask_index: execution.vertex.subtask,
            parallelism: descriptor.parallelism,
            max_parallelism: vertex.max_parallelism,
            attempt: execution.attempt,
            external: descriptor.external.clone(),
        };
        let body = match &node.body {
            NodeBody::Source(factory) => {
                source = Some(factory(&info));
                ChainBody::Source
            }
            NodeBody::Operator(factory) => ChainBody::Operator(Some(factory(&info))),
            NodeBody::Sink(factory) => {
                committers.push((index, (factory.committer)(&info)));
                ChainBody::Sink((factory.writer)(&info))
            }
        };
        let children =
            stream_graph.out_edges(*node_id).iter().filter_map(|(target, _)| position.get(target).copied()).collect();
        let writers = writers_of.remove(&index).unwrap_or_default();
        nodes.push(ChainNode { body, output_type: node.output_type.clone(), children, writers });
    }
    Built { chain: OperatorChain::new(nodes, writers), source, committers }
}

fn input_channels(descriptor: &TaskDeploymentDescriptor, job_graph: &JobGraph) -> Vec<Channel> {
    descriptor
        .inputs
        .iter()
        .map(|spec| {
            let edge = job_graph.edge(spec.partition.partition.dataset);
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
) -> Result<Vec<Element>, TaskFailure> {
    decode_buffer(bytes, &channel.element_type).map_err(|error| TaskFailure::CorruptInput {
        partition: descriptor.inputs[index].partition,
        detail: error.message,
    })
}

fn head_of(
    vertex: &JobVertex,
    job_graph: &JobGraph,
    descriptor: &TaskDeploymentDescriptor,
    source: Option<Box<dyn ErasedSourceReader>>,
    client: RpcClient,
) -> Head {
    if let Some(reader) = source {
        return Head::Source(reader);
    }
    let head = job_graph.stream_graph.node(vertex.chain[0]);
    let keyed = head.input_keys.iter().any(Option::is_some);
    let sort_by = (descriptor.spec.mode == ExecutionMode::Batch && keyed).then(|| head.input_keys.clone());
    let gate = InputGate::open(descriptor.inputs.clone(), client, InputGateConfig::default());
    Head::Input { gate, channels: input_channels(descriptor, job_graph), sort_by }
}

/// Runs a task to its end; see the module doc.
pub async fn run_task(environment: TaskEnvironment) -> Result<TaskMetrics, TaskFailure> {
    let TaskEnvironment { descriptor, graph, partitions, client, resources } = environment;
    let job_graph = graph.job_graph();
    let vertex = job_graph.vertex(descriptor.execution.vertex.vertex);
    let Built { mut chain, source, committers } = build_chain(&descriptor, &graph, &partitions);
    let operators = vertex.chain.len() as u64;
    let mut cpu = resources.cpu_meter();
    let mut metrics = TaskMetrics::default();
    match head_of(vertex, job_graph, &descriptor, source, client) {
        Head::Source(mut reader) => {
            while let Some(batch) = reader.poll_next().await.map_err(operator_failure)? {
                let count = batch.len() as u64;
                metrics.records_in += count;
                chain.push_all(0, batch)?;
                cpu.charge(count, operators).await;
                chain.flush(false).await?;
            }
        }
        Head::Input { mut gate, channels, sort_by: None } => {
            while let GateEvent::Buffer { channel, bytes } = gate.next().await? {
                if channels[channel].blocking {
                    metrics.disk_bytes_read += bytes.len() as u64;
                }
                let elements = decode(&channels[channel], &bytes, &descriptor, channel)?;
                let count = elements.len() as u64;
                metrics.records_in += count;
                chain.push_all(channels[channel].input, elements)?;
                cpu.charge(count, operators).await;
                chain.flush(false).await?;
            }
        }
        Head::Input { mut gate, channels, sort_by: Some(keys) } => {
            let mut keyed: Vec<(Vec<u8>, u32, Element)> = Vec::new();
            while let GateEvent::Buffer { channel, bytes } = gate.next().await? {
                if channels[channel].blocking {
                    metrics.disk_bytes_read += bytes.len() as u64;
                }
                let input = channels[channel].input;
                let selector = keys[input as usize].as_ref().expect("internal: batch sorting needs every input keyed");
                for element in decode(&channels[channel], &bytes, &descriptor, channel)? {
                    keyed.push((selector(element.as_ref()), input, element));
                }
            }
            metrics.records_in = keyed.len() as u64;
            // Stable: elements of one key and input keep their arrival order.
            keyed.sort_by(|left, right| (&left.0, left.1).cmp(&(&right.0, right.1)));
            let mut sorted = keyed.into_iter().peekable();
            while let Some((_, input, _)) = sorted.peek() {
                let input = *input;
                let mut run = Vec::new();
                while run.len() < 1024 && sorted.peek().is_some_and(|(_, next, _)| *next == input) {
                    run.push(sorted.next().expect("peeked").2);
                }
                let count = run.len() as u64;
                chain.push_all(input, run)?;
                cpu.charge(count, operators).await;
                chain.flush(false).await?;
            }
        }
    }
    chain.end_input()?;
    metrics.records_out = chain.finish().await?;
    metrics.disk_bytes_written = chain.bytes_written().1;
    metrics.partition_bytes = chain.partition_bytes();
    cpu.pay().await;
    for (node, mut committer) in committers {
        let committables = chain.prepare_commit(node).await?;
        committer.commit(committables).await.map_err(operator_failure)?;
    }
    Ok(metrics)
}
