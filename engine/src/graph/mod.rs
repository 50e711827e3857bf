//! The plan, from the program to subtasks: `StreamGraph` → `JobGraph` → `ExecutionGraph`.
//!
//! - [`stream_graph`]: one node per transformation, edges with a [`Partitioner`].
//! - [`job_graph`]: forward edges of equal parallelism chained into one vertex; every remaining
//!   edge typed PIPELINED or BLOCKING by the exchange mode.
//! - [`execution_graph`]: subtasks, result partitions, input channels and pipelined regions.
//! - [`operator`]: the erased contract (operator, source reader, sink writer factories) that the
//!   plan carries and a task instantiates.
//! - [`dot`]: a job graph as a Graphviz digraph (`sluice plan --format dot`).
//!
//! Depends on: [`crate::record`] only. Invariants: stream node ids follow program order, which is
//! a topological order; every rendering (`Display`) is deterministic, so plans can be snapshot and
//! fingerprinted; no partitioner draws randomness.

pub mod dot;
pub mod execution_graph;
pub mod job_graph;
pub mod operator;
pub mod partitioner;
pub mod stream_graph;

pub use execution_graph::{
    ConsumedChannel, ConsumedInput, ExecutionGraph, ExecutionVertexId, IntermediateResultPartitionId, PipelinedRegion,
    ProducedPartition, RegionId,
};
pub use job_graph::{
    DistributionPattern, ExchangeMode, IntermediateDataSetId, JobEdge, JobGraph, JobVertex, JobVertexId,
    ResultPartitionType,
};
pub use operator::{ExecutionMode, ExternalSystems, OperatorError, TaskInfo};
pub use partitioner::Partitioner;
pub use stream_graph::{ChainingStrategy, NodeBody, StreamEdge, StreamGraph, StreamNode, StreamNodeId};
