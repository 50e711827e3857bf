//! [`DataStream`], [`KeyedStream`] and [`DataStreamSink`]: the handles a program chains calls on.

use std::cell::RefCell;
use std::marker::PhantomData;
use std::ops::Add;
use std::rc::Rc;
use std::sync::Arc;

use super::JobConfig;
use super::operators::{FilterOperator, FlatMapOperator, MapOperator, ReduceFunctions, reduce_operator};
use super::source::{Source, erase_source};
use crate::graph::operator::{OperatorFactory, StreamOperator};
use crate::graph::partitioner::Partitioner;
use crate::graph::{
    ChainingStrategy, ExecutionMode, NodeBody, StreamEdge, StreamGraph, StreamNode, StreamNodeId, TaskInfo,
};
use crate::record::{Key, KeySelector, Record, TypeInfo, erase_key_selector};
use crate::sink::{Sink, erase_sink};

/// A stream of `T` produced by one node of the plan.
pub struct DataStream<T> {
    graph: Rc<RefCell<StreamGraph>>,
    config: JobConfig,
    node: StreamNodeId,
    partitioner: Option<Partitioner>,
    _type: PhantomData<fn() -> T>,
}

impl<T> Clone for DataStream<T> {
    fn clone(&self) -> Self {
        DataStream {
            graph: Rc::clone(&self.graph),
            config: self.config,
            node: self.node,
            partitioner: self.partitioner.clone(),
            _type: PhantomData,
        }
    }
}

struct NewNode {
    name: &'static str,
    body: NodeBody,
    chaining: ChainingStrategy,
    keyed_input: Option<KeySelector>,
    output_type: TypeInfo,
}

fn add_node(graph: &Rc<RefCell<StreamGraph>>, config: JobConfig, new: NewNode) -> StreamNodeId {
    graph.borrow_mut().add_node(|id| StreamNode {
        id,
        name: new.name.to_string(),
        parallelism: config.parallelism,
        max_parallelism: config.max_parallelism,
        output_type: new.output_type,
        chaining: new.chaining,
        keyed_input: new.keyed_input,
        body: new.body,
    })
}

impl<T: Record> DataStream<T> {
    pub(super) fn source<S: Source<T>>(graph: Rc<RefCell<StreamGraph>>, config: JobConfig, source: S) -> DataStream<T> {
        let name = source.name();
        let node = add_node(
            &graph,
            config,
            NewNode {
                name: "Source",
                body: NodeBody::Source(erase_source(source)),
                chaining: ChainingStrategy::Always,
                keyed_input: None,
                output_type: TypeInfo::of::<T>(),
            },
        );
        graph.borrow_mut().node_mut(node).name = format!("Source: {name}");
        DataStream { graph, config, node, partitioner: None, _type: PhantomData }
    }

    fn then<U: Record>(&self, new: NewNode) -> DataStream<U> {
        let node = add_node(&self.graph, self.config, new);
        let edge = match &self.partitioner {
            Some(partitioner) => StreamEdge { partitioner: partitioner.clone(), explicit: true },
            None => StreamEdge { partitioner: Partitioner::Forward, explicit: false },
        };
        self.graph.borrow_mut().add_edge(self.node, node, edge);
        DataStream { graph: Rc::clone(&self.graph), config: self.config, node, partitioner: None, _type: PhantomData }
    }

    fn operator<U: Record>(&self, name: &'static str, factory: OperatorFactory) -> DataStream<U> {
        self.then(NewNode {
            name,
            body: NodeBody::Operator(factory),
            chaining: ChainingStrategy::Always,
            keyed_input: None,
            output_type: TypeInfo::of::<U>(),
        })
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

    /// Partitions the stream by key: equal keys go to the same subtask.
    pub fn key_by<K: Key>(&self, key_selector: impl Fn(&T) -> K + Send + Sync + 'static) -> KeyedStream<T, K> {
        KeyedStream { stream: self.clone(), key_selector: Arc::new(key_selector) }
    }

    /// Distributes the next edge round robin over the consumer's subtasks.
    pub fn rebalance(&self) -> DataStream<T> {
        DataStream { partitioner: Some(Partitioner::Rebalance), ..self.clone() }
    }

    /// Sends every element of the next edge to every subtask of the consumer.
    pub fn broadcast(&self) -> DataStream<T> {
        DataStream { partitioner: Some(Partitioner::Broadcast), ..self.clone() }
    }

    /// Writes the stream to a two-phase-commit sink.
    pub fn sink_to<S: Sink<T>>(&self, sink: S) -> DataStreamSink {
        let stream = self.then::<T>(NewNode {
            name: "Sink",
            body: NodeBody::Sink(erase_sink(sink)),
            chaining: ChainingStrategy::Always,
            keyed_input: None,
            output_type: TypeInfo::of::<T>(),
        });
        DataStreamSink { graph: stream.graph, node: stream.node }
    }

    /// Names the node that produces this stream.
    pub fn name(self, name: &str) -> DataStream<T> {
        self.graph.borrow_mut().node_mut(self.node).name = name.to_string();
        self
    }

    /// Sets the parallelism of the node that produces this stream.
    pub fn set_parallelism(self, parallelism: u32) -> DataStream<T> {
        self.graph.borrow_mut().node_mut(self.node).parallelism = parallelism;
        self
    }
}

/// A stream partitioned by key; keyed operations keep state per key.
pub struct KeyedStream<T, K> {
    stream: DataStream<T>,
    key_selector: Arc<dyn Fn(&T) -> K + Send + Sync>,
}

impl<T: Record, K: Key> KeyedStream<T, K> {
    /// Combines the elements of each key with `reduce`. Streaming emits the running value after
    /// every element; batch emits only the final value of each key.
    pub fn reduce(&self, reduce: impl Fn(T, T) -> T + Send + Sync + 'static) -> DataStream<T> {
        let functions = ReduceFunctions { key_selector: Arc::clone(&self.key_selector), reduce: Arc::new(reduce) };
        let selector = Arc::clone(&self.key_selector);
        let erased_selector = erase_key_selector(move |value: &T| selector(value));
        let chaining = match self.stream.config.mode {
            // Keyed input is sorted at the task's input in batch mode, so the operator heads a chain.
            ExecutionMode::Batch => ChainingStrategy::Head,
            ExecutionMode::Streaming => ChainingStrategy::Always,
        };
        let hashed =
            DataStream { partitioner: Some(Partitioner::Hash(Arc::clone(&erased_selector))), ..self.stream.clone() };
        hashed.then(NewNode {
            name: "Reduce",
            body: NodeBody::Operator(Arc::new(move |task: &TaskInfo| reduce_operator(functions.clone(), task))),
            chaining,
            keyed_input: Some(erased_selector),
            output_type: TypeInfo::of::<T>(),
        })
    }
}

impl<A: Record, N: Record + Add<Output = N>, K: Key> KeyedStream<(A, N), K> {
    /// Sums the second field per key, keeping the first field of the key's first element.
    pub fn sum(&self) -> DataStream<(A, N)> {
        self.reduce(|accumulator: (A, N), value: (A, N)| (accumulator.0, accumulator.1 + value.1)).name("Sum")
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
        self.graph.borrow_mut().node_mut(self.node).parallelism = parallelism;
        self
    }
}
