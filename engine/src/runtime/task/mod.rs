//! One subtask: reads its input gate (or its source), pushes elements through its operator
//! chain, and writes to record writers or its sink; at end of input it finishes its operators,
//! its output partitions and, for a sink, pre-commits and commits.
//!
//! In batch mode a chain headed by a keyed operator first reads its whole input and sorts it by
//! key (stable, by encoded key bytes), as Flink's sorted inputs do; the operator then sees one
//! key after the other.

mod chain;

use std::sync::Arc;

use chain::{ChainTail, OperatorChain};

use super::messages::{TaskDeploymentDescriptor, TaskFailure};
use crate::graph::operator::{ErasedCommitter, ErasedSourceReader};
use crate::graph::partitioner::ChannelSelector;
use crate::graph::{ExecutionGraph, ExecutionMode, NodeBody, OperatorError, TaskInfo};
use crate::record::{Element, KeySelector, TypeInfo};
use crate::rpc::RpcClient;
use crate::shuffle::buffer::decode_buffer;
use crate::shuffle::{GateEvent, InputGate, InputGateConfig, RecordWriter, ResultPartitionId, ResultPartitionManager};

/// Counts a finished task reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaskMetrics {
    /// Elements read from the input gate or the source.
    pub records_in: u64,
    /// Elements written to record writers or the sink.
    pub records_out: u64,
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
}

enum Head {
    Source(Box<dyn ErasedSourceReader>),
    Input { gate: InputGate, channel_types: Vec<TypeInfo>, sort_by: Option<KeySelector> },
}

fn operator_failure(error: OperatorError) -> TaskFailure {
    TaskFailure::Operator(error.message)
}

/// Runs a task to its end; see the module doc.
pub async fn run_task(environment: TaskEnvironment) -> Result<TaskMetrics, TaskFailure> {
    let TaskEnvironment { descriptor, graph, partitions, client } = environment;
    let execution = descriptor.execution;
    let job_graph = graph.job_graph();
    let vertex = job_graph.vertex(execution.vertex.vertex);
    let stream_graph = &job_graph.stream_graph;
    let mut operators = Vec::new();
    let mut source = None;
    let mut sink = None;
    let mut committer: Option<Box<dyn ErasedCommitter>> = None;
    for node_id in &vertex.chain {
        let node = stream_graph.node(*node_id);
        let info = TaskInfo {
            job_id: descriptor.spec.job_id.clone(),
            name: node.name.clone(),
            operator_id: node_id.0,
            mode: descriptor.spec.mode,
            subtask_index: execution.vertex.subtask,
            parallelism: vertex.parallelism,
            max_parallelism: vertex.max_parallelism,
            attempt: execution.attempt,
            external: descriptor.external.clone(),
        };
        match &stream_graph.node(*node_id).body {
            NodeBody::Source(factory) => source = Some(factory(&info)),
            NodeBody::Operator(factory) => operators.push(factory(&info)),
            NodeBody::Sink(factory) => {
                sink = Some((factory.writer)(&info));
                committer = Some((factory.committer)(&info));
            }
        }
    }

    let mut writers = Vec::new();
    for produced in graph.produced_partitions(execution.vertex) {
        let edge = job_graph.edge(produced.id.dataset);
        let id = ResultPartitionId { partition: produced.id, attempt: execution.attempt };
        let writer = partitions.register(id, produced.partition_type, produced.num_subpartitions);
        let selector = ChannelSelector::new(
            edge.partitioner.clone(),
            produced.num_subpartitions,
            vertex.max_parallelism,
            execution.vertex.subtask,
        );
        let tail_node = stream_graph.node(*vertex.chain.last().expect("a vertex has a chain"));
        writers.push(RecordWriter::new(
            selector,
            tail_node.output_type.clone(),
            writer,
            produced.num_subpartitions,
            descriptor.spec.shuffle.buffer_size,
        ));
    }

    let head = match source {
        Some(reader) => Head::Source(reader),
        None => {
            let head_node = stream_graph.node(vertex.chain[0]);
            let channel_types = descriptor
                .inputs
                .iter()
                .map(|channel| {
                    let producer = job_graph.vertex(job_graph.edge(channel.partition.partition.dataset).source);
                    stream_graph.node(*producer.chain.last().expect("a vertex has a chain")).output_type.clone()
                })
                .collect();
            let sort_by = match descriptor.spec.mode {
                ExecutionMode::Batch => head_node.keyed_input.clone(),
                ExecutionMode::Streaming => None,
            };
            let gate = InputGate::open(descriptor.inputs.clone(), client, InputGateConfig::default());
            Head::Input { gate, channel_types, sort_by }
        }
    };

    let mut chain = OperatorChain::new(operators, ChainTail::new(writers, sink));
    let mut metrics = TaskMetrics::default();
    match head {
        Head::Source(mut reader) => {
            while let Some(batch) = reader.poll_next().await.map_err(operator_failure)? {
                metrics.records_in += batch.len() as u64;
                chain.push_all(batch)?;
                chain.flush(false).await?;
            }
        }
        Head::Input { mut gate, channel_types, sort_by: None } => {
            while let GateEvent::Buffer { channel, bytes } = gate.next().await? {
                let elements = decode(&channel_types[channel], &bytes, &descriptor, channel)?;
                metrics.records_in += elements.len() as u64;
                chain.push_all(elements)?;
                chain.flush(false).await?;
            }
        }
        Head::Input { mut gate, channel_types, sort_by: Some(key_selector) } => {
            let mut keyed: Vec<(Vec<u8>, Element)> = Vec::new();
            while let GateEvent::Buffer { channel, bytes } = gate.next().await? {
                for element in decode(&channel_types[channel], &bytes, &descriptor, channel)? {
                    keyed.push((key_selector(element.as_ref()), element));
                }
            }
            metrics.records_in = keyed.len() as u64;
            // Stable: elements of one key keep their arrival order.
            keyed.sort_by(|left, right| left.0.cmp(&right.0));
            let mut sorted = keyed.into_iter();
            loop {
                let chunk: Vec<Element> = sorted.by_ref().take(1024).map(|(_, element)| element).collect();
                if chunk.is_empty() {
                    break;
                }
                chain.push_all(chunk)?;
                chain.flush(false).await?;
            }
        }
    }
    chain.end_input()?;
    metrics.records_out = chain.finish().await?;
    if let Some(mut committer) = committer {
        let committables = chain.prepare_commit().await?;
        committer.commit(committables).await.map_err(operator_failure)?;
    }
    Ok(metrics)
}

fn decode(
    type_info: &TypeInfo,
    bytes: &[u8],
    descriptor: &TaskDeploymentDescriptor,
    channel: usize,
) -> Result<Vec<Element>, TaskFailure> {
    decode_buffer(bytes, type_info).map_err(|error| TaskFailure::CorruptInput {
        partition: descriptor.inputs[channel].partition,
        detail: error.message,
    })
}
