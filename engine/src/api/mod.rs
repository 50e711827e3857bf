//! The DataStream SDK: what a job author writes.
//!
//! A program builds a plan on a [`StreamEnv`] from sources, transformations and sinks. The same
//! program runs in [`ExecutionMode::Streaming`] or [`ExecutionMode::Batch`]; the mode changes how
//! the plan runs (exchanges, state backend, when results are emitted), never what it computes.
//!
//! ```
//! use sluice_engine::api::{JobConfig, StreamEnv, ExecutionMode};
//! use sluice_engine::connectors::{LogSource, TxnStoreSink};
//!
//! let env = StreamEnv::new("wordcount", JobConfig::new(ExecutionMode::Batch, 2));
//! env.from_source(LogSource::<String>::new("lines"))
//!     .flat_map(|line: String| line.split_whitespace().map(str::to_string).collect::<Vec<_>>())
//!     .map(|word: String| (word, 1i64))
//!     .key_by(|pair: &(String, i64)| pair.0.clone())
//!     .sum()
//!     .sink_to(TxnStoreSink::upsert("counts", |pair: &(String, i64)| (pair.0.clone(), pair.1.to_string())));
//! let plan = env.into_stream_graph().unwrap();
//! // Source, FlatMap, Map, the batch combiner before the keyed exchange, Sum and the sink.
//! assert_eq!(plan.nodes().count(), 6);
//! ```
//!
//! Depends on: [`crate::graph`] (it builds a `StreamGraph`), [`crate::state`] (keyed
//! operators), [`crate::sink`] and [`crate::record`]. Invariant: user functions are plain
//! functions of their input; the API never hands them a clock or a random source.

pub mod changelog;
mod datastream;
pub mod interval_join;
mod join;
mod operators;
pub mod outer_join;
mod process;
pub mod registry;
mod source;
#[cfg(test)]
mod testing;
pub mod upsert_materializer;
mod window;

pub use datastream::{DataStream, DataStreamSink, KeyedStream, OutputTag, WindowedStream};
pub use join::JoinType;
pub use process::{KeyedContext, KeyedProcessFunction};
pub use registry::{InputFormat, InputSpec, JobDefinition, JobParams, JobRegistry, ParamKind, ParamSpec, ParamValue};
pub use source::{Source, SourceReader, SplitProgress, erase_source};

pub use crate::graph::operator::{BoxFuture, ReadOffsets};
pub use crate::graph::{ExecutionMode, OperatorError, TaskInfo};
pub use crate::record::{DecodeError, Key, Record};
pub use crate::sink::{Committer, Sink, SinkWriter};
pub use crate::state::{ListState, MapState, ValueState};
pub use crate::time::{SlidingEventTimeWindows, TimeWindow, Timestamp, TumblingEventTimeWindows};

use std::cell::RefCell;
use std::rc::Rc;

use crate::graph::partitioner::default_max_parallelism;
use crate::graph::{ExchangeMode, StreamGraph};

/// How a job instance is configured: the mode, its default parallelism, and (batch) which
/// exchanges are pipelined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobConfig {
    /// Streaming or batch.
    pub mode: ExecutionMode,
    /// Parallelism of every operator that does not set its own.
    pub parallelism: u32,
    /// Number of key groups (Flink's max parallelism).
    pub max_parallelism: u32,
    /// Which edges are pipelined in batch mode (Flink's `execution.batch-shuffle-mode`);
    /// streaming is always all-pipelined.
    pub exchange_mode: ExchangeMode,
    /// In batch mode with all edges blocking, decide at runtime the parallelism of operators
    /// whose parallelism the program did not set (Flink's adaptive batch scheduler).
    pub adaptive_parallelism: bool,
}

impl JobConfig {
    /// A configuration with Flink's default max parallelism for `parallelism`, and all edges
    /// blocking in batch mode.
    pub fn new(mode: ExecutionMode, parallelism: u32) -> JobConfig {
        JobConfig {
            mode,
            parallelism,
            max_parallelism: default_max_parallelism(parallelism),
            exchange_mode: ExchangeMode::default_for(mode),
            adaptive_parallelism: false,
        }
    }

    /// The same configuration, deciding parallelism at runtime where allowed (batch only).
    pub fn with_adaptive_parallelism(self, adaptive: bool) -> JobConfig {
        JobConfig { adaptive_parallelism: adaptive && self.mode == ExecutionMode::Batch, ..self }
    }

    /// The same configuration with another exchange mode (ignored in streaming mode).
    pub fn with_exchange_mode(self, exchange_mode: ExchangeMode) -> JobConfig {
        JobConfig { exchange_mode: exchange_mode.effective(self.mode), ..self }
    }
}

/// The environment a program builds its plan on (Flink's `StreamExecutionEnvironment`).
pub struct StreamEnv {
    graph: Rc<RefCell<StreamGraph>>,
    config: JobConfig,
}

impl StreamEnv {
    /// An environment for the job called `job_name`.
    pub fn new(job_name: &str, config: JobConfig) -> StreamEnv {
        let mut graph = StreamGraph::new(job_name, config.mode);
        graph.adaptive_parallelism = config.adaptive_parallelism;
        StreamEnv { graph: Rc::new(RefCell::new(graph)), config }
    }

    /// The mode the plan will run in. Programs should not need it: the mode changes how the
    /// plan runs, not what it computes.
    pub fn mode(&self) -> ExecutionMode {
        self.config.mode
    }

    /// The configuration.
    pub fn config(&self) -> JobConfig {
        self.config
    }

    /// Adds a source.
    pub fn from_source<T: Record, S: Source<T>>(&self, source: S) -> DataStream<T> {
        DataStream::source(Rc::clone(&self.graph), self.config, source)
    }

    /// A stream read from `source` with event time (Flink's `env.fromSource(source,
    /// WatermarkStrategy.forBoundedOutOfOrderness(..).withTimestampAssigner(..), name)`): each
    /// record is stamped with `timestamp(record)`, and each reader generates watermarks for
    /// records at most `out_of_orderness_ms` out of order *per split* (FLIP-27), the minimum
    /// over the splits it has left. A reader that reads several log partitions in turn thus
    /// never calls one partition's records late because it read another ahead, as
    /// [`DataStream::assign_timestamps_and_watermarks`] after the source may. Batch mode keeps
    /// the timestamps and emits no watermark before the end of input.
    pub fn from_source_with_watermarks<T: Record, S: Source<T>>(
        &self,
        source: S,
        out_of_orderness_ms: i64,
        timestamp: impl Fn(&T) -> crate::time::Timestamp + Send + Sync + 'static,
    ) -> DataStream<T> {
        DataStream::source_with_watermarks(
            Rc::clone(&self.graph),
            self.config,
            source,
            out_of_orderness_ms,
            std::sync::Arc::new(timestamp),
        )
    }

    /// Finishes the plan: resolves inherited parallelism and default partitioners, and validates it.
    pub fn into_stream_graph(self) -> Result<StreamGraph, String> {
        let mut graph = self.graph.borrow().clone();
        graph.resolve_inherited_parallelism();
        graph.resolve_default_partitioners();
        graph.validate()?;
        Ok(graph)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::{LogSource, TxnStoreSink};
    use crate::graph::{DistributionPattern, ExchangeMode, JobGraph, ResultPartitionType};

    fn plan(mode: ExecutionMode, build: impl FnOnce(&StreamEnv)) -> JobGraph {
        let env = StreamEnv::new("test", JobConfig::new(mode, 2));
        build(&env);
        JobGraph::from_stream_graph(env.into_stream_graph().unwrap(), ExchangeMode::default_for(mode)).unwrap()
    }

    fn sink() -> TxnStoreSink<u64> {
        TxnStoreSink::append("t", |value: &u64| (value.to_string(), String::new()))
    }

    #[test]
    fn forward_edges_of_equal_parallelism_chain_into_one_vertex() {
        let graph = plan(ExecutionMode::Streaming, |env| {
            env.from_source(LogSource::<u64>::new("numbers"))
                .map(|value| value + 1)
                .filter(|value| *value > 1)
                .sink_to(sink());
        });
        assert_eq!(graph.vertices.len(), 1);
        assert_eq!(graph.vertices[0].name, "Source: log `numbers` -> Map -> Filter -> Sink");
        assert!(graph.edges.is_empty());
    }

    #[test]
    fn an_explicit_forward_edge_keeps_the_chain_and_refuses_a_parallelism_change() {
        let graph = plan(ExecutionMode::Streaming, |env| {
            env.from_source(LogSource::<u64>::new("numbers")).forward().map(|value| value + 1).sink_to(sink());
        });
        assert_eq!(graph.vertices.len(), 1, "{:?}", graph.vertices);
        let env = StreamEnv::new("test", JobConfig::new(ExecutionMode::Streaming, 2));
        env.from_source(LogSource::<u64>::new("numbers"))
            .forward()
            .map(|value| value + 1)
            .set_parallelism(3)
            .sink_to(sink());
        let error = env.into_stream_graph().err().expect("a plan error");
        assert!(error.contains("forward edge") && error.contains("2 -> 3"), "{error}");
    }

    #[test]
    fn a_parallelism_change_rebalances_and_breaks_the_chain() {
        let graph = plan(ExecutionMode::Batch, |env| {
            env.from_source(LogSource::<u64>::new("numbers")).map(|value| value * 2).set_parallelism(3).sink_to(sink());
        });
        // The sink takes the default parallelism again: a second rebalance.
        let parallelism: Vec<u32> = graph.vertices.iter().map(|vertex| vertex.parallelism).collect();
        assert_eq!(parallelism, vec![2, 3, 2]);
        for edge in &graph.edges {
            assert_eq!(edge.partitioner.name(), "REBALANCE");
            assert_eq!(edge.distribution, DistributionPattern::AllToAll);
            assert_eq!(edge.partition_type, ResultPartitionType::Blocking);
        }
    }

    #[test]
    fn a_watermark_step_after_a_source_runs_at_its_parallelism_unless_set() {
        let stamped = |parallelism: Option<u32>| {
            plan(ExecutionMode::Streaming, |env| {
                let stamped = env
                    .from_source(LogSource::<u64>::new("numbers"))
                    .set_parallelism(1)
                    .assign_timestamps_and_watermarks(10, |value: &u64| *value as i64);
                let stamped = match parallelism {
                    Some(parallelism) => stamped.set_parallelism(parallelism),
                    None => stamped,
                };
                stamped.key_by(|value: &u64| *value).reduce(|left, right| left.max(right)).sink_to(sink());
            })
        };
        let inherited = stamped(None);
        assert_eq!(inherited.vertices[0].name, "Source: log `numbers` -> Timestamps/Watermarks", "one chain");
        assert_eq!(inherited.vertices[0].parallelism, 1);
        let set = stamped(Some(3));
        assert_eq!(
            (set.vertices[1].parallelism, set.edges[0].partitioner.name()),
            (3, "REBALANCE"),
            "as the program says"
        );
    }

    #[test]
    fn a_window_sends_its_late_data_to_a_side_output_and_a_missing_one_is_a_plan_error() {
        let late = OutputTag::<(u64, i64)>::new("late");
        let graph = plan(ExecutionMode::Streaming, |env| {
            let windowed = env
                .from_source(LogSource::<(u64, i64)>::new("points"))
                .assign_timestamps_and_watermarks(10, |point: &(u64, i64)| point.1)
                .key_by(|point: &(u64, i64)| point.0)
                .window(TumblingEventTimeWindows::of(100, 0).unwrap())
                .side_output_late_data(&late)
                .aggregate(|| 0u64, |count, _| count + 1, |key: &u64, _, count| (*key, count));
            windowed.sink_to(TxnStoreSink::append("counts", |row: &(u64, u64)| (row.0.to_string(), row.1.to_string())));
            windowed
                .side_output(&late)
                .sink_to(TxnStoreSink::append("late", |point: &(u64, i64)| (point.0.to_string(), point.1.to_string())));
        });
        let names: Vec<&str> = graph.vertices.iter().map(|vertex| vertex.name.as_str()).collect();
        assert_eq!(
            names[1], "Window(Aggregate) -> Window results -> Late data -> Sink -> Sink",
            "one chain: {names:?}"
        );
        let env = StreamEnv::new("test", JobConfig::new(ExecutionMode::Streaming, 2));
        let counts = env
            .from_source(LogSource::<(u64, i64)>::new("points"))
            .assign_timestamps_and_watermarks(10, |point: &(u64, i64)| point.1)
            .key_by(|point: &(u64, i64)| point.0)
            .window(TumblingEventTimeWindows::of(100, 0).unwrap())
            .aggregate(|| 0u64, |count, _| count + 1, |key: &u64, _, count| (*key, count));
        counts
            .side_output(&late)
            .sink_to(TxnStoreSink::append("late", |point: &(u64, i64)| (point.0.to_string(), String::new())));
        let error = env.into_stream_graph().err().expect("a plan error");
        assert!(error.contains("no side output `late`"), "{error}");
    }

    #[test]
    fn a_window_with_a_late_side_output_is_named_and_sized_through_its_results() {
        let late = OutputTag::<(u64, i64)>::new("late");
        let graph = plan(ExecutionMode::Streaming, |env| {
            let counts = env
                .from_source(LogSource::<(u64, i64)>::new("points"))
                .assign_timestamps_and_watermarks(10, |point: &(u64, i64)| point.1)
                .key_by(|point: &(u64, i64)| point.0)
                .window(TumblingEventTimeWindows::of(100, 0).unwrap())
                .side_output_late_data(&late)
                .aggregate(|| 0u64, |count, _| count + 1, |key: &u64, _, count| (*key, count))
                .name("Counts")
                .set_parallelism(3);
            counts.sink_to(TxnStoreSink::append("counts", |row: &(u64, u64)| (row.0.to_string(), row.1.to_string())));
            counts
                .side_output(&late)
                .sink_to(TxnStoreSink::append("late", |point: &(u64, i64)| (point.0.to_string(), point.1.to_string())));
        });
        let window = graph.vertices.iter().find(|vertex| vertex.name.starts_with("Counts")).expect("the window");
        assert_eq!(window.name, "Counts -> Window results -> Late data", "the splitters stay chained to it");
        assert_eq!(window.parallelism, 3);
    }

    #[test]
    fn broadcast_and_key_by_make_all_to_all_edges_typed_by_mode() {
        let graph = plan(ExecutionMode::Streaming, |env| {
            let numbers = env.from_source(LogSource::<u64>::new("numbers"));
            numbers.broadcast().map(|value| value).sink_to(sink());
            numbers.key_by(|value| value % 7).reduce(|left, right| left.max(right)).sink_to(sink());
        });
        let names: Vec<&str> = graph.edges.iter().map(|edge| edge.partitioner.name()).collect();
        assert_eq!(names, vec!["BROADCAST", "HASH"]);
        assert!(graph.edges.iter().all(|edge| edge.partition_type == ResultPartitionType::Pipelined));
        assert_eq!(graph.vertices.len(), 3, "a source with two outputs does not chain");
    }

    #[test]
    fn a_batch_reduce_combines_in_the_producing_task_and_a_streaming_one_does_not() {
        let build = |env: &StreamEnv| {
            env.from_source(LogSource::<u64>::new("numbers"))
                .set_parallelism(3)
                .map(|value| (value % 7, 1u64))
                .set_parallelism(3)
                .key_by(|pair: &(u64, u64)| pair.0)
                .sum()
                .map(|pair| pair.1)
                .sink_to(sink());
        };
        let batch = plan(ExecutionMode::Batch, build);
        let names: Vec<&str> = batch.vertices.iter().map(|vertex| vertex.name.as_str()).collect();
        // The combiner takes its producer's parallelism (3), not the job's (2), so it chains.
        assert_eq!(names, vec!["Source: log `numbers` -> Map -> Combine", "Sum -> Map -> Sink"]);
        assert_eq!(batch.vertices[0].parallelism, 3);
        assert_eq!(batch.edges.len(), 1);
        assert_eq!(batch.edges[0].partitioner.name(), "HASH");
        let streaming = plan(ExecutionMode::Streaming, build);
        let names: Vec<&str> = streaming.vertices.iter().map(|vertex| vertex.name.as_str()).collect();
        assert_eq!(names, vec!["Source: log `numbers` -> Map", "Sum -> Map -> Sink"]);
    }

    #[test]
    fn a_plan_without_a_source_is_rejected() {
        let env = StreamEnv::new("empty", JobConfig::new(ExecutionMode::Batch, 1));
        match env.into_stream_graph() {
            Err(message) => assert!(message.contains("defines no operators"), "{message}"),
            Ok(_) => panic!("an empty plan must be rejected"),
        }
    }
}
