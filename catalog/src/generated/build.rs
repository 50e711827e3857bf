//! A program as a DataStream plan: one operator per node, a sink per leaf.

use super::program::{Agg, Edge, Event, Input, MODULUS, Node, Op, Program};
use super::{sliding, table_name, tumbling};
use crate::event_time_input::{FETCH_SIZE, OUT_OF_ORDERNESS_MS};
use sluice_engine::api::{
    DataStream, KeyedContext, KeyedProcessFunction, KeyedStream, ListState, OperatorError, Record, StreamEnv,
    TimeWindow, Timestamp, ValueState,
};
use sluice_engine::connectors::{LogSource, TxnStoreSink};

/// The larger of two events by value, ties by time: associative and commutative.
pub(super) fn larger(left: Event, right: Event) -> Event {
    if (right.2, right.1) > (left.2, left.1) { right } else { left }
}

/// The end of the bucket of `bucket` ms that `time` falls in, as its last millisecond.
pub(super) fn bucket_end(time: Timestamp, bucket: i64) -> Timestamp {
    time - time.rem_euclid(bucket) + bucket - 1
}

/// A join's output for a pair.
pub(super) fn joined(left: &Event, right: &Event) -> Event {
    (left.0, left.1.max(right.1), (left.2 % MODULUS * 31 + right.2 % MODULUS) % MODULUS)
}

const PENDING: ListState<Event> = ListState::new("pending");
const TOTAL: ValueState<u64> = ValueState::new("total");

/// `process(input, bucket)`: buffers a key's events and, as the watermark passes each bucket,
/// adds the bucket's values to the key's running total and emits it.
struct BucketTotals {
    bucket: i64,
}

impl KeyedProcessFunction<u64, Event, Event> for BucketTotals {
    fn process_element(&self, event: Event, context: &mut KeyedContext<'_, u64, Event>) -> Result<(), OperatorError> {
        PENDING.add(context.state(), &event);
        context.register_event_time_timer(bucket_end(event.1, self.bucket));
        Ok(())
    }

    fn on_timer(&self, time: Timestamp, context: &mut KeyedContext<'_, u64, Event>) -> Result<(), OperatorError> {
        let (due, later): (Vec<Event>, Vec<Event>) =
            PENDING.get(context.state())?.into_iter().partition(|event| event.1 <= time);
        PENDING.update(context.state(), &later);
        let total = TOTAL.value(context.state())?.unwrap_or(0) + due.iter().map(|event| event.2).sum::<u64>();
        TOTAL.update(context.state(), &total);
        let key = *context.key();
        context.collect((key, time, total));
        Ok(())
    }
}

/// The stream `input` names, read through its edge.
fn read(streams: &[Option<DataStream<Event>>], input: Input) -> DataStream<Event> {
    let stream = streams[input.node].as_ref().expect("internal: a checked program reads only earlier streams");
    match input.edge {
        Edge::Default => stream.clone(),
        Edge::Rebalance => stream.rebalance(),
        Edge::Rescale => stream.rescale(),
        Edge::Broadcast => stream.broadcast(),
        Edge::Forward => stream.forward(),
    }
}

fn keyed(streams: &[Option<DataStream<Event>>], input: Input) -> KeyedStream<Event, u64> {
    read(streams, input).key_by(|event: &Event| event.0)
}

fn window_result(key: &u64, window: TimeWindow, value: u64) -> Event {
    (*key, window.max_timestamp(), value)
}

/// A keyed window's aggregate as an event per (key, window).
fn aggregate(windowed: sluice_engine::api::WindowedStream<Event, u64>, agg: Agg) -> DataStream<Event> {
    match agg {
        Agg::Sum => windowed.aggregate(|| 0u64, |sum, event: Event| sum + event.2, window_result),
        Agg::Count => windowed.aggregate(|| 0u64, |count, _: Event| count + 1, window_result),
        Agg::Max => windowed.reduce(larger, |key: &u64, window, event: Event| window_result(key, window, event.2)),
    }
}

/// The node's stream; a reduce writes its upsert table itself and has none.
fn node_stream(
    env: &StreamEnv,
    index: usize,
    node: &Node,
    streams: &[Option<DataStream<Event>>],
) -> Option<DataStream<Event>> {
    let stream = match &node.op {
        Op::Source { .. } => {
            let source = env.from_source(LogSource::<Event>::new(&format!("s{index}")).with_fetch_size(FETCH_SIZE));
            return Some(
                with_parallelism(source, node.parallelism)
                    .assign_timestamps_and_watermarks(OUT_OF_ORDERNESS_MS, |event: &Event| event.1),
            );
        }
        &Op::Map { input, mul, add } => {
            read(streams, input).map(move |(key, time, value)| (key, time, (value % MODULUS * mul + add) % MODULUS))
        }
        &Op::Rekey { input, modulus } => {
            read(streams, input).map(move |(key, time, value)| ((key + value) % modulus, time, value))
        }
        &Op::Filter { input, modulus, drop } => {
            read(streams, input).filter(move |event: &Event| (event.0 + event.2) % modulus != drop)
        }
        &Op::Flat { input, copies } => read(streams, input).flat_map(move |(key, time, value): Event| {
            (0..value % (copies + 1)).map(move |copy| (key, time, value + copy))
        }),
        Op::Union { inputs } => {
            let others: Vec<DataStream<Event>> = inputs[1..].iter().map(|input| read(streams, *input)).collect();
            return Some(read(streams, inputs[0]).union(&others.iter().collect::<Vec<_>>()));
        }
        &Op::Tumble { input, size, agg } => aggregate(keyed(streams, input).window(tumbling(size)), agg),
        &Op::Slide { input, size, slide, agg } => aggregate(keyed(streams, input).window(sliding(size, slide)), agg),
        &Op::Process { input, bucket } => keyed(streams, input).process(BucketTotals { bucket }),
        &Op::Join { left, right } => keyed(streams, left).join(&keyed(streams, right), joined),
        &Op::Reduce { input, agg } => {
            reduce(streams, index, input, agg, node.parallelism);
            return None;
        }
    };
    Some(with_parallelism(stream, node.parallelism))
}

fn with_parallelism<T: Record>(stream: DataStream<T>, parallelism: Option<u32>) -> DataStream<T> {
    match parallelism {
        Some(parallelism) => stream.set_parallelism(parallelism),
        None => stream,
    }
}

/// `reduce(input, agg)` into its upsert table: a running value per key. The sink runs at the
/// reduce's parallelism, so that each key's updates reach it in order over a forward edge.
fn reduce(streams: &[Option<DataStream<Event>>], index: usize, input: Input, agg: Agg, parallelism: Option<u32>) {
    let table = table_name(index);
    let row = |pair: &(u64, u64)| (pair.0.to_string(), pair.1.to_string());
    let sink = match agg {
        Agg::Sum => {
            let pairs = read(streams, input).map(|(key, _, value)| (key, value));
            with_parallelism(pairs.key_by(|pair: &(u64, u64)| pair.0).sum(), parallelism)
                .sink_to(TxnStoreSink::upsert(&table, row))
        }
        _ => with_parallelism(keyed(streams, input).reduce(larger), parallelism)
            .sink_to(TxnStoreSink::upsert(&table, |event: &Event| (event.0.to_string(), event.2.to_string()))),
    };
    if let Some(parallelism) = parallelism {
        sink.set_parallelism(parallelism);
    }
}

/// Builds the plan of `program`.
pub(super) fn build_program(env: &StreamEnv, program: &Program) {
    let mut streams: Vec<Option<DataStream<Event>>> = Vec::with_capacity(program.nodes.len());
    for (index, node) in program.nodes.iter().enumerate() {
        let stream = node_stream(env, index, node, &streams);
        streams.push(stream);
    }
    for leaf in program.leaves() {
        if let Some(stream) = &streams[leaf] {
            stream.sink_to(TxnStoreSink::append(&table_name(leaf), |event: &Event| {
                (event.0.to_string(), format!("{}:{}", event.1, event.2))
            }));
        }
    }
}
