//! Execution graphs the failover decisions are tested on.

use std::sync::Arc;

use crate::api::{JobConfig, StreamEnv};
use crate::connectors::{LogSource, TxnStoreSink};
use crate::graph::{ExchangeMode, ExecutionGraph, ExecutionMode, JobGraph};

/// Batch, all edges blocking, parallelism 2: v0 source, v1 (rescale: v0[i] feeds v1[i]), v2
/// (keyed: every v1 subtask feeds every v2 subtask) with the sink. Every subtask is its own
/// region.
pub(super) fn chain() -> ExecutionGraph {
    let config = JobConfig::new(ExecutionMode::Batch, 2).with_exchange_mode(ExchangeMode::AllEdgesBlocking);
    let env = StreamEnv::new("chain", config);
    env.from_source(LogSource::<u64>::new("a"))
        .rescale()
        .map(|value| value + 1)
        .name("B")
        .key_by(|value| *value)
        .reduce(|a, b| a + b)
        .sink_to(TxnStoreSink::append("t", |value: &u64| (value.to_string(), String::new())));
    let job_graph =
        JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), ExchangeMode::AllEdgesBlocking).unwrap();
    ExecutionGraph::new(Arc::new(job_graph))
}
