//! [`DataStream`], [`KeyedStream`] and [`DataStreamSink`]: the handles a program chains calls on.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::Add;
use std::rc::Rc;
use std::sync::Arc;

use super::JobConfig;
use super::join::{BroadcastHashJoinOperator, BroadcastJoinFunctions, JoinType};
use super::operators::{
    COMBINE_BUDGET_BYTES, CombineOperator, FilterOperator, FlatMapOperator, JoinFunctions, MapOperator,
    ReduceFunctions, StreamSumOperator, join_operator, reduce_operator,
};
use super::process::{KeyedProcessFunction, ProcessFunctions, process_operator};
use super::source::{Source, erase_source, erase_source_with_watermarks};
use super::window::{
    AddFunction, FinishFunction, LateFunction, MergeFunction, TimestampsAndWatermarksOperator, WindowFunctions,
    window_operator,
};
use crate::graph::operator::{OperatorFactory, SourceFactory, StreamOperator};
use crate::graph::partitioner::Partitioner;
use crate::graph::{
    ChainingStrategy, ExecutionMode, NodeBody, StreamEdge, StreamGraph, StreamNode, StreamNodeId, TaskInfo,
};
use crate::record::{Key, KeyEncoder, KeySelector, Record, TypeInfo, erase_key_encoder};
use crate::sink::{Sink, erase_sink};
use crate::time::{BoundedOutOfOrderness, TimeWindow, Timestamp, Watermark, WindowAssigner};

/// A node whose output a stream is, with the partitioner chosen for the next edge.
#[derive(Clone)]
struct Upstream {
    node: StreamNodeId,
    partitioner: Option<Partitioner>,
}

/// A stream of `T`: the output of one node, or the union of several.
pub struct DataStream<T> {
    graph: Rc<RefCell<StreamGraph>>,
    config: JobConfig,
    upstreams: Vec<Upstream>,
    /// The side outputs of the operator this stream is the output of, by tag: the node that
    /// emits each (a window's late data).
    side_outputs: Vec<(&'static str, StreamNodeId)>,
    /// The node `name` and `set_parallelism` change when it is not the one this stream is the
    /// output of: a window with a late side output, whose results come out of a chained splitter
    /// ([`WindowedStream::side_output_late_data`]). The user named and sized the window.
    operator: Option<StreamNodeId>,
    _type: PhantomData<fn() -> T>,
}

/// Names a side output and the type of its elements (Flink's `OutputTag`): a window's late data
/// (`WindowedStream::side_output_late_data`), read with `DataStream::side_output`.
pub struct OutputTag<T> {
    name: &'static str,
    _type: PhantomData<fn() -> T>,
}

impl<T> OutputTag<T> {
    /// A tag called `name`.
    pub const fn new(name: &'static str) -> OutputTag<T> {
        OutputTag { name, _type: PhantomData }
    }

    /// Its name.
    pub fn name(&self) -> &'static str {
        self.name
    }
}

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        DataStream {
            graph: Rc::clone(&self.graph),
            config: self.config,
            upstreams: self.upstreams.clone(),
            side_outputs: self.side_outputs.clone(),
            operator: self.operator,
            _type: PhantomData,
        }
    }
}

struct NewNode {
    name: &'static str,
    body: NodeBody,
    chaining: ChainingStrategy,
    input_keys: Vec<Option<KeySelector>>,
    output_type: TypeInfo,
}

fn add_node(graph: &Rc<RefCell<StreamGraph>>, config: JobConfig, new: NewNode) -> StreamNodeId {
    graph.borrow_mut().add_node(|id| StreamNode {
        id,
        name: new.name.to_string(),
        parallelism: config.parallelism,
        parallelism_explicit: false,
        inherits_parallelism: false,
        max_parallelism: config.max_parallelism,
        output_type: new.output_type,
        chaining: new.chaining,
        input_keys: new.input_keys,
        body: new.body,
    })
}

/// Keyed operators head their chain in batch mode: sorting happens at the task's input.
fn keyed_chaining(config: JobConfig) -> ChainingStrategy {
    match config.mode {
        ExecutionMode::Batch => ChainingStrategy::Head,
        ExecutionMode::Streaming => ChainingStrategy::Always,
    }
}

impl<T: Record> DataStream<T> {
    pub(super) fn source<S: Source<T>>(graph: Rc<RefCell<StreamGraph>>, config: JobConfig, source: S) -> DataStream<T> {
        let name = source.name();
        DataStream::source_node(graph, config, name, erase_source(source))
    }

    /// A source whose readers stamp records with `timestamp` and generate watermarks per split
    /// (see [`super::StreamEnv::from_source_with_watermarks`]).
    pub(super) fn source_with_watermarks<S: Source<T>>(
        graph: Rc<RefCell<StreamGraph>>,
        config: JobConfig,
        source: S,
        out_of_orderness_ms: i64,
        timestamp: Arc<dyn Fn(&T) -> Timestamp + Send + Sync>,
    ) -> DataStream<T> {
        let name = source.name();
        let generator = match BoundedOutOfOrderness::new(out_of_orderness_ms) {
            Ok(generator) => generator,
            Err(error) => {
                graph.borrow_mut().add_error(error);
                BoundedOutOfOrderness::new(0).expect("0 is a valid bound")
            }
        };
        DataStream::source_node(graph, config, name, erase_source_with_watermarks(source, generator, timestamp))
    }

    fn source_node(
        graph: Rc<RefCell<StreamGraph>>,
        config: JobConfig,
        name: String,
        factory: SourceFactory,
    ) -> DataStream<T> {
        let node = add_node(
            &graph,
            config,
            NewNode {
                name: "Source",
                body: NodeBody::Source(factory),
                chaining: ChainingStrategy::Always,
                input_keys: Vec::new(),
                output_type: TypeInfo::of::<T>(),
            },
        );
        graph.borrow_mut().node_mut(node).name = format!("Source: {name}");
        DataStream::of_node(graph, config, node)
    }

    /// Connects this stream to `node` as its input `input`.
    fn connect(&self, node: StreamNodeId, input: u32) {
        for upstream in &self.upstreams {
            let edge = match &upstream.partitioner {
                Some(partitioner) => StreamEdge { partitioner: partitioner.clone(), explicit: true, input },
                None => StreamEdge { partitioner: Partitioner::Forward, explicit: false, input },
            };
            self.graph.borrow_mut().add_edge(upstream.node, node, edge);
        }
    }

    /// The output of `node`.
    fn of_node(graph: Rc<RefCell<StreamGraph>>, config: JobConfig, node: StreamNodeId) -> DataStream<T> {
        let upstreams = vec![Upstream { node, partitioner: None }];
        DataStream { graph, config, upstreams, side_outputs: Vec::new(), operator: None, _type: PhantomData }
    }

    fn then<U: Record>(&self, new: NewNode) -> DataStream<U> {
        let node = add_node(&self.graph, self.config, new);
        self.connect(node, 0);
        DataStream::of_node(Rc::clone(&self.graph), self.config, node)
    }

    /// The side output `tag` of the operator this stream is the output of (Flink's
    /// `getSideOutput`): a window's late elements, if it was given `side_output_late_data(tag)`.
    /// Asking for one it does not have is an error of the plan.
    pub fn side_output<U: Record>(&self, tag: &OutputTag<U>) -> DataStream<U> {
        match self.side_outputs.iter().find(|(name, _)| *name == tag.name) {
            Some((_, node)) => DataStream::of_node(Rc::clone(&self.graph), self.config, *node),
            None => {
                self.graph.borrow_mut().add_error(format!(
                    "no side output `{}` on this stream: call `side_output_late_data` with its tag on the window \
                     before `reduce` or `aggregate`",
                    tag.name
                ));
                DataStream {
                    upstreams: Vec::new(),
                    ..DataStream::of_node(Rc::clone(&self.graph), self.config, StreamNodeId(0))
                }
            }
        }
    }

    fn operator<U: Record>(&self, name: &'static str, factory: OperatorFactory) -> DataStream<U> {
        self.then(NewNode {
            name,
            body: NodeBody::Operator(factory),
            chaining: ChainingStrategy::Always,
            input_keys: Vec::new(),
            output_type: TypeInfo::of::<U>(),
        })
    }

    fn with_partitioner(&self, partitioner: Partitioner) -> DataStream<T> {
        let mut stream = self.clone();
        for upstream in &mut stream.upstreams {
            upstream.partitioner = Some(partitioner.clone());
        }
        stream
    }

    /// Applies `function` to every element.
    pub fn map<U: Record>(&self, function: impl Fn(T) -> U + Send + Sync + 'static) -> DataStream<U> {
        let function: Arc<dyn Fn(T) -> U + Send + Sync> = Arc::new(function);
        self.operator(
            "Map",
            Arc::new(move |_: &TaskInfo| {
                Box::new(MapOperator { function: Arc::clone(&function) }) as Box<dyn StreamOperator>
            }),
        )
    }

    /// Keeps the elements for which `predicate` is true.
    pub fn filter(&self, predicate: impl Fn(&T) -> bool + Send + Sync + 'static) -> DataStream<T> {
        let predicate: Arc<dyn Fn(&T) -> bool + Send + Sync> = Arc::new(predicate);
        self.operator(
            "Filter",
            Arc::new(move |_: &TaskInfo| {
                Box::new(FilterOperator { predicate: Arc::clone(&predicate) }) as Box<dyn StreamOperator>
            }),
        )
    }

    /// Replaces every element by the elements `function` returns for it.
    pub fn flat_map<U: Record, I: IntoIterator<Item = U>>(
        &self,
        function: impl Fn(T) -> I + Send + Sync + 'static,
    ) -> DataStream<U> {
        let function: Arc<dyn Fn(T) -> Vec<U> + Send + Sync> =
            Arc::new(move |value| function(value).into_iter().collect());
        self.operator(
            "FlatMap",
            Arc::new(move |_: &TaskInfo| {
                Box::new(FlatMapOperator { function: Arc::clone(&function) }) as Box<dyn StreamOperator>
            }),
        )
    }

    /// Stamps every element with `timestamp(element)` as its event time and generates
    /// watermarks for elements at most `out_of_orderness_ms` out of order (Flink's
    /// `assignTimestampsAndWatermarks(WatermarkStrategy.forBoundedOutOfOrderness(..))`). Batch
    /// mode keeps the timestamps and emits no watermark before the end of input.
    pub fn assign_timestamps_and_watermarks(
        &self,
        out_of_orderness_ms: i64,
        timestamp: impl Fn(&T) -> Timestamp + Send + Sync + 'static,
    ) -> DataStream<T> {
        let generator = match BoundedOutOfOrderness::new(out_of_orderness_ms) {
            Ok(generator) => generator,
            Err(error) => {
                self.graph.borrow_mut().add_error(error);
                BoundedOutOfOrderness::new(0).expect("0 is a valid bound")
            }
        };
        let assigner: Arc<dyn Fn(&T) -> Timestamp + Send + Sync> = Arc::new(timestamp);
        let stamped = self.operator(
            "Timestamps/Watermarks",
            Arc::new(move |task: &TaskInfo| {
                Box::new(TimestampsAndWatermarksOperator {
                    assigner: Arc::clone(&assigner),
                    generator: generator.clone(),
                    mode: task.mode,
                    emitted: Watermark::MIN,
                }) as Box<dyn StreamOperator>
            }),
        );
        // Right after a source (a forward edge from one node), it runs as many subtasks as its
        // input, unless the program sets its parallelism: a watermark step that silently ran at
        // the default parallelism would add a round-robin exchange between them.
        let forward = matches!(self.upstreams.as_slice(), [upstream] if upstream.partitioner.is_none());
        if forward { stamped.set("parallelism", |node| node.inherits_parallelism = true) } else { stamped }
    }

    /// Partitions the stream by key: equal keys go to the same subtask.
    pub fn key_by<K: Key>(&self, key_selector: impl Fn(&T) -> K + Send + Sync + 'static) -> KeyedStream<T, K> {
        let key_selector: Arc<dyn Fn(&T) -> K + Send + Sync> = Arc::new(key_selector);
        let selector = Arc::clone(&key_selector);
        let encode_key = Arc::new(move |value: &T, out: &mut Vec<u8>| selector(value).encode(out));
        KeyedStream { stream: self.clone(), key_selector, encode_key }
    }

    /// [`DataStream::key_by`] with a selector that lends the key from the element, such as a
    /// field (`|pair| &pair.0`): partitioning and keyed state encode it where it is, without the
    /// copy a selector returning an owned key makes for every element.
    pub fn key_by_ref<K: Key>(&self, key_selector: impl Fn(&T) -> &K + Send + Sync + 'static) -> KeyedStream<T, K> {
        let lend = Arc::new(key_selector);
        let owned = Arc::clone(&lend);
        KeyedStream {
            stream: self.clone(),
            key_selector: Arc::new(move |value: &T| owned(value).clone()),
            encode_key: Arc::new(move |value: &T, out: &mut Vec<u8>| lend(value).encode(out)),
        }
    }

    /// The elements of this stream and of `others`, in no particular order (Flink's `union`).
    pub fn union(&self, others: &[&DataStream<T>]) -> DataStream<T> {
        let mut stream = self.clone();
        for other in others {
            if !Rc::ptr_eq(&self.graph, &other.graph) {
                self.graph.borrow_mut().add_error("union of streams from different environments".to_string());
            }
            stream.upstreams.extend(other.upstreams.iter().cloned());
        }
        stream
    }

    /// Distributes the next edge round robin over the consumer's subtasks (ALL_TO_ALL).
    pub fn rebalance(&self) -> DataStream<T> {
        self.with_partitioner(Partitioner::Rebalance)
    }

    /// Sends the next edge's elements to the consumer subtask of the same index (Flink's
    /// `forward`); the consumer must run as many subtasks, or the plan is refused.
    pub fn forward(&self) -> DataStream<T> {
        self.with_partitioner(Partitioner::Forward)
    }

    /// Distributes the next edge round robin over a local group of consumer subtasks (POINTWISE).
    pub fn rescale(&self) -> DataStream<T> {
        self.with_partitioner(Partitioner::Rescale)
    }

    /// Sends every element of the next edge to every subtask of the consumer.
    pub fn broadcast(&self) -> DataStream<T> {
        self.with_partitioner(Partitioner::Broadcast)
    }

    /// A broadcast hash join with `build` (see [`super::join`]): every subtask reads the whole
    /// `build` stream (a BROADCAST edge) into a hash table, and this stream, the probe side,
    /// arrives on the edge the program chose (FORWARD by default: a pointwise edge, never chained,
    /// as the node has two inputs). `function(probe, Some(build))` for every pair with equal
    /// keys; with [`JoinType::LeftOuter`], `function(probe, None)` once for a probe element that
    /// meets none. `build` must be bounded: probes wait for its end.
    pub fn broadcast_join<R: Record, K: Key, O: Record>(
        &self,
        build: &DataStream<R>,
        join_type: JoinType,
        probe_key: impl Fn(&T) -> K + Send + Sync + 'static,
        build_key: impl Fn(&R) -> K + Send + Sync + 'static,
        function: impl Fn(&T, Option<&R>) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        let functions = BroadcastJoinFunctions {
            probe_key: Arc::new(probe_key),
            build_key: Arc::new(build_key),
            join: Arc::new(function),
            join_type,
        };
        let node = add_node(
            &self.graph,
            self.config,
            NewNode {
                name: "BroadcastHashJoin",
                body: NodeBody::Operator(Arc::new(move |_: &TaskInfo| {
                    Box::new(BroadcastHashJoinOperator::new(functions.clone())) as Box<dyn StreamOperator>
                })),
                chaining: ChainingStrategy::Always,
                input_keys: vec![None, None],
                output_type: TypeInfo::of::<O>(),
            },
        );
        self.connect(node, 0);
        build.with_partitioner(Partitioner::Broadcast).connect(node, 1);
        DataStream::of_node(Rc::clone(&self.graph), self.config, node)
    }

    /// Writes the stream to a two-phase-commit sink.
    pub fn sink_to<S: Sink<T>>(&self, sink: S) -> DataStreamSink {
        let stream = self.then::<T>(NewNode {
            name: "Sink",
            body: NodeBody::Sink(erase_sink(sink)),
            chaining: ChainingStrategy::Always,
            input_keys: Vec::new(),
            output_type: TypeInfo::of::<T>(),
        });
        DataStreamSink { graph: stream.graph, node: stream.upstreams[0].node }
    }

    /// Changes the node that produces this stream (the window, past its splitter: see
    /// `operator`); a union has no node of its own.
    fn set(self, what: &str, change: impl FnOnce(&mut StreamNode)) -> DataStream<T> {
        match self.upstreams.as_slice() {
            [upstream] => change(self.graph.borrow_mut().node_mut(self.operator.unwrap_or(upstream.node))),
            _ => self.graph.borrow_mut().add_error(format!("a union is not an operator: cannot set its {what}")),
        }
        self
    }

    /// Names the node that produces this stream, as plans show it. A window with a late side
    /// output is named itself, not the operator that splits its results from its late data.
    pub fn name(self, name: &str) -> DataStream<T> {
        self.set("name", |node| node.name = name.to_string())
    }

    /// Sets the parallelism of the node that produces this stream (of a window with a late side
    /// output: of the window, which its splitters follow).
    pub fn set_parallelism(self, parallelism: u32) -> DataStream<T> {
        self.set("parallelism", |node| {
            node.parallelism = parallelism;
            node.parallelism_explicit = true;
        })
    }
}

/// A stream partitioned by key; keyed operations keep state per key.
pub struct KeyedStream<T, K> {
    stream: DataStream<T>,
    /// The key, owned: for what hands it to user code (windows, process functions, joins).
    key_selector: Arc<dyn Fn(&T) -> K + Send + Sync>,
    /// The key, encoded: for partitioning and keyed state.
    encode_key: KeyEncoder<T>,
}

impl<T: Record, K: Key> KeyedStream<T, K> {
    fn erased_selector(&self) -> KeySelector {
        erase_key_encoder(Arc::clone(&self.encode_key))
    }

    /// Combines the elements of each key with `reduce`. Streaming emits the running value after
    /// every element; batch emits only the final value of each key.
    ///
    /// In batch mode `reduce` also combines each producing task's elements before the keyed
    /// exchange (a combiner, as Flink's combinable reduce), and the partial values after it: it
    /// must be associative and commutative, or the final value depends on how the elements were
    /// grouped and in what order they met.
    pub fn reduce(&self, reduce: impl Fn(T, T) -> T + Send + Sync + 'static) -> DataStream<T> {
        self.reduce_by(reduce, None)
    }

    /// [`Self::reduce`], with `streaming` (if given) creating the operator in streaming mode.
    fn reduce_by(
        &self,
        reduce: impl Fn(T, T) -> T + Send + Sync + 'static,
        streaming: Option<OperatorFactory>,
    ) -> DataStream<T> {
        let functions =
            ReduceFunctions { encode_key: Arc::clone(&self.encode_key), reduce: Arc::new(reduce), _key: PhantomData };
        let selector = self.erased_selector();
        let input = self.combined(&functions);
        let operator: OperatorFactory = Arc::new(move |task: &TaskInfo| match (&streaming, task.mode) {
            (Some(streaming), ExecutionMode::Streaming) => streaming(task),
            _ => reduce_operator(functions.clone(), task),
        });
        input.with_partitioner(Partitioner::Hash(Arc::clone(&selector))).then(NewNode {
            name: "Reduce",
            body: NodeBody::Operator(operator),
            chaining: keyed_chaining(self.stream.config),
            input_keys: vec![Some(selector)],
            output_type: TypeInfo::of::<T>(),
        })
    }

    /// In batch mode, the stream through a combiner chained to the task that produces it
    /// ([`CombineOperator`]): the reduce's partial values per key cross the exchange instead of
    /// every element. Streaming emits a value per element, so it has none; neither has a union
    /// of streams (no one task to chain it to).
    fn combined(&self, functions: &ReduceFunctions<T, K>) -> DataStream<T> {
        if self.stream.config.mode != ExecutionMode::Batch || self.stream.upstreams.len() != 1 {
            return self.stream.clone();
        }
        // The combiner follows its producer; the exchange the program chose comes after it.
        let mut input = self.stream.clone();
        input.upstreams[0].partitioner = None;
        let functions = functions.clone();
        input
            .operator::<T>(
                "Combine",
                Arc::new(move |_: &TaskInfo| {
                    Box::new(CombineOperator::new(functions.clone(), COMBINE_BUDGET_BYTES)) as Box<dyn StreamOperator>
                }),
            )
            .set("parallelism", |node| node.inherits_parallelism = true)
    }

    /// An inner join on the key with `other`: `function(left, right)` for every pair of elements
    /// with equal keys, each pair exactly once. Streaming emits a pair as soon as both elements
    /// arrived; batch emits all pairs of a key once both inputs are read.
    pub fn join<T2: Record, O: Record>(
        &self,
        other: &KeyedStream<T2, K>,
        function: impl Fn(&T, &T2) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        let functions = JoinFunctions {
            left_key: Arc::clone(&self.key_selector),
            right_key: Arc::clone(&other.key_selector),
            join: Arc::new(function),
        };
        let (left, right) = (self.erased_selector(), other.erased_selector());
        let config = self.stream.config;
        let node = add_node(
            &self.stream.graph,
            config,
            NewNode {
                name: "Join",
                body: NodeBody::Operator(Arc::new(move |task: &TaskInfo| join_operator(functions.clone(), task))),
                chaining: keyed_chaining(config),
                input_keys: vec![Some(Arc::clone(&left)), Some(Arc::clone(&right))],
                output_type: TypeInfo::of::<O>(),
            },
        );
        self.stream.with_partitioner(Partitioner::Hash(left)).connect(node, 0);
        other.stream.with_partitioner(Partitioner::Hash(right)).connect(node, 1);
        DataStream::of_node(Rc::clone(&self.stream.graph), config, node)
    }
}

impl<T: Record, K: Key> KeyedStream<T, K> {
    /// Groups each key's elements into event-time windows (the stream needs timestamps:
    /// [`DataStream::assign_timestamps_and_watermarks`]).
    pub fn window(&self, assigner: impl WindowAssigner + 'static) -> WindowedStream<T, K> {
        WindowedStream {
            keyed: KeyedStream {
                stream: self.stream.clone(),
                key_selector: Arc::clone(&self.key_selector),
                encode_key: Arc::clone(&self.encode_key),
            },
            assigner: Arc::new(assigner),
            late: None,
        }
    }
}

impl<T: Record, K: Key> KeyedStream<T, K> {
    /// Runs `function` on each key's elements, with keyed state and event-time timers (Flink's
    /// `KeyedStream.process(KeyedProcessFunction)`).
    pub fn process<O: Record>(&self, function: impl KeyedProcessFunction<K, T, O>) -> DataStream<O> {
        let functions = ProcessFunctions {
            key_selector: Arc::clone(&self.key_selector),
            function: Arc::new(function) as Arc<dyn KeyedProcessFunction<K, T, O>>,
        };
        let selector = self.erased_selector();
        self.stream.with_partitioner(Partitioner::Hash(Arc::clone(&selector))).then(NewNode {
            name: "KeyedProcess",
            body: NodeBody::Operator(Arc::new(move |task: &TaskInfo| process_operator(functions.clone(), task.mode))),
            chaining: keyed_chaining(self.stream.config),
            input_keys: vec![Some(selector)],
            output_type: TypeInfo::of::<O>(),
        })
    }
}

/// A keyed stream grouped into event-time windows (Flink's `WindowedStream`).
pub struct WindowedStream<T, K> {
    keyed: KeyedStream<T, K>,
    assigner: Arc<dyn WindowAssigner>,
    /// The tag of the late-data side output, if asked for.
    late: Option<&'static str>,
}

impl<T: Record, K: Key> WindowedStream<T, K> {
    /// Emits the elements that arrive after all their windows fired to the side output `tag`
    /// instead of dropping them (Flink's `sideOutputLateData`); read it from the window's result
    /// with [`DataStream::side_output`].
    pub fn side_output_late_data(mut self, tag: &OutputTag<T>) -> WindowedStream<T, K> {
        self.late = Some(tag.name);
        self
    }

    /// Reduces each key's elements per window; when a window fires, emits
    /// `finish(key, window, reduced)` (Flink's `reduce(ReduceFunction, ProcessWindowFunction)`).
    pub fn reduce<O: Record>(
        &self,
        reduce: impl Fn(T, T) -> T + Send + Sync + 'static,
        finish: impl Fn(&K, TimeWindow, T) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        let reduce = Arc::new(reduce);
        let merge = Arc::clone(&reduce);
        let add = move |accumulator: Option<T>, value: T| match accumulator {
            Some(accumulator) => reduce(accumulator, value),
            None => value,
        };
        let merge: MergeFunction<T> = Arc::new(move |older: T, newer: T| merge(older, newer));
        self.build("Window(Reduce)", Arc::new(add), Some(merge), Arc::new(finish))
    }

    /// Aggregates each key's elements per window into an accumulator that starts as `create()`;
    /// when a window fires, emits `finish(key, window, accumulator)` (Flink's
    /// `aggregate(AggregateFunction, ProcessWindowFunction)`).
    pub fn aggregate<A: Record, O: Record>(
        &self,
        create: impl Fn() -> A + Send + Sync + 'static,
        add: impl Fn(A, T) -> A + Send + Sync + 'static,
        finish: impl Fn(&K, TimeWindow, A) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        assert!(
            !self.assigner.is_merging(),
            "merging windows (sessions) merge their accumulators: call `aggregate_merging` with a merge function"
        );
        let add = move |accumulator: Option<A>, value: T| add(accumulator.unwrap_or_else(&create), value);
        self.build("Window(Aggregate)", Arc::new(add), None, Arc::new(finish))
    }

    /// As [`aggregate`](Self::aggregate), with `merge(older, newer)` combining the accumulators of
    /// windows that merge (sessions; Flink's `AggregateFunction.merge`). Older is the window
    /// that starts first.
    pub fn aggregate_merging<A: Record, O: Record>(
        &self,
        create: impl Fn() -> A + Send + Sync + 'static,
        add: impl Fn(A, T) -> A + Send + Sync + 'static,
        merge: impl Fn(A, A) -> A + Send + Sync + 'static,
        finish: impl Fn(&K, TimeWindow, A) -> O + Send + Sync + 'static,
    ) -> DataStream<O> {
        let add = move |accumulator: Option<A>, value: T| add(accumulator.unwrap_or_else(&create), value);
        self.build("Window(Aggregate)", Arc::new(add), Some(Arc::new(merge)), Arc::new(finish))
    }

    fn build<A: Record, O: Record>(
        &self,
        name: &'static str,
        add: AddFunction<T, A>,
        merge: Option<MergeFunction<A>>,
        finish: FinishFunction<K, A, O>,
    ) -> DataStream<O> {
        let merge = merge.filter(|_| self.assigner.is_merging());
        let Some(tag) = self.late else { return self.window_node(name, (add, merge), finish, None) };
        // The window emits its results and its late elements as one stream of pairs, which two
        // chained operators split: the results, and the side output.
        let split_finish: FinishFunction<K, A, (Option<O>, Option<T>)> =
            Arc::new(move |key: &K, window, accumulator| (Some(finish(key, window, accumulator)), None));
        let late: LateFunction<T, (Option<O>, Option<T>)> = Arc::new(|element: T| (None, Some(element)));
        // The program names and sizes the window through the results; the splitters run as many
        // subtasks as it, so that they stay chained to it.
        let both = self.window_node(name, (add, merge), split_finish, Some(late));
        let inherit = |node: &mut StreamNode| node.inherits_parallelism = true;
        let mut results = both
            .flat_map(|(result, _): (Option<O>, Option<T>)| result)
            .name("Window results")
            .set("parallelism", inherit);
        let late_data =
            both.flat_map(|(_, element): (Option<O>, Option<T>)| element).name("Late data").set("parallelism", inherit);
        results.side_outputs.push((tag, late_data.upstreams[0].node));
        results.operator = Some(both.upstreams[0].node);
        results
    }

    fn window_node<A: Record, O: Record>(
        &self,
        name: &'static str,
        (add, merge): (AddFunction<T, A>, Option<MergeFunction<A>>),
        finish: FinishFunction<K, A, O>,
        late: Option<LateFunction<T, O>>,
    ) -> DataStream<O> {
        let functions = WindowFunctions {
            key_selector: Arc::clone(&self.keyed.key_selector),
            assigner: Arc::clone(&self.assigner),
            add,
            merge,
            finish,
            late,
        };
        let selector = self.keyed.erased_selector();
        let stream = &self.keyed.stream;
        stream.with_partitioner(Partitioner::Hash(Arc::clone(&selector))).then(NewNode {
            name,
            body: NodeBody::Operator(Arc::new(move |task: &TaskInfo| window_operator(functions.clone(), task.mode))),
            chaining: keyed_chaining(stream.config),
            input_keys: vec![Some(selector)],
            output_type: TypeInfo::of::<O>(),
        })
    }
}

impl<A: Record, N: Record + Add<Output = N>, K: Key> KeyedStream<(A, N), K> {
    /// Sums the second field per key, keeping the first field of the key's first element (of
    /// one of them when the first field is not the key: which one, batch mode's combiner and
    /// the arrival order across subtasks decide).
    pub fn sum(&self) -> DataStream<(A, N)> {
        let encode_key = Arc::clone(&self.encode_key);
        let streaming: OperatorFactory =
            Arc::new(move |_: &TaskInfo| Box::new(StreamSumOperator::<A, N, K>::new(Arc::clone(&encode_key))) as _);
        self.reduce_by(|accumulator: (A, N), value: (A, N)| (accumulator.0, accumulator.1 + value.1), Some(streaming))
            .name("Sum")
    }
}

/// The end of a stream: a sink node.
pub struct DataStreamSink {
    graph: Rc<RefCell<StreamGraph>>,
    node: StreamNodeId,
}

impl DataStreamSink {
    /// Names the sink.
    pub fn name(self, name: &str) -> DataStreamSink {
        self.graph.borrow_mut().node_mut(self.node).name = name.to_string();
        self
    }

    /// Sets the sink's parallelism.
    pub fn set_parallelism(self, parallelism: u32) -> DataStreamSink {
        let mut graph = self.graph.borrow_mut();
        let node = graph.node_mut(self.node);
        node.parallelism = parallelism;
        node.parallelism_explicit = true;
        drop(graph);
        self
    }
}
