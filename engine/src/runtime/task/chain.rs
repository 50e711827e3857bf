//! [`OperatorChain`]: the chained operators of a task, a tree rooted at the chain's head.
//!
//! Each node passes its output directly to its chained children (a copy to each but the last)
//! and serializes it into the record writers of the network edges it feeds. Sinks are leaves.
//! Nodes are kept in chain order, which is topological: a parent comes before its children.

use crate::graph::operator::{Batch, ErasedSinkWriter, LateDrop, Output, StreamOperator};
use crate::graph::{IntermediateDataSetId, OperatorError};
use crate::record::{Element, TypeInfo};
use crate::resources::{OperatorKind, Work};
use crate::runtime::messages::TaskFailure;
use crate::shuffle::{PartitionStatistics, RecordWriter};
use crate::time::{Timestamp, Watermark};

/// What a chain node runs.
pub(super) enum ChainBody {
    /// The head of a source task: passes the source's elements on.
    Source,
    /// An operator; `None` only while it is processing (taken out to lend the chain to it).
    Operator(Option<Box<dyn StreamOperator>>),
    /// A sink writer, always a leaf.
    Sink(Box<dyn ErasedSinkWriter>),
}

/// One node of the chain.
pub(super) struct ChainNode {
    /// Its stream node id: names its state in checkpoints.
    pub(super) operator_id: u32,
    pub(super) body: ChainBody,
    /// The type of what it emits (to copy an element for several children).
    pub(super) output_type: TypeInfo,
    /// Chained children, by index.
    pub(super) children: Vec<usize>,
    /// Record writers of the network edges it feeds, by index.
    pub(super) writers: Vec<usize>,
}

/// A task's operators and outputs; see the module doc.
pub(super) struct OperatorChain {
    nodes: Vec<ChainNode>,
    /// What each node does with a record of its first and second input, for the cost model.
    kinds: Vec<[OperatorKind; 2]>,
    writers: Vec<RecordWriter>,
    /// Work done since [`OperatorChain::take_work`] was last called.
    work: Work,
    /// Bytes the writers had serialized when work was last taken.
    serialized_taken: u64,
    sink_records: u64,
    error: Option<OperatorError>,
    /// The task's event time: the last watermark its head processed.
    watermark: Watermark,
    /// The newest watermark for the network not yet sent: sent after the records of the
    /// batch that raised it, at the next flush (one event per batch, not per record).
    pending_watermark: Option<Watermark>,
}

/// What a node does with a record of each input.
fn node_kinds(body: &ChainBody) -> [OperatorKind; 2] {
    match body {
        ChainBody::Source => [OperatorKind::Scan; 2],
        ChainBody::Sink(_) => [OperatorKind::Sink; 2],
        ChainBody::Operator(operator) => {
            let operator = operator.as_ref().expect("internal: a chain is built with its operators in place");
            [operator.cost_kind(0), operator.cost_kind(1)]
        }
    }
}

/// The output of one node, while it processes one element (with its timestamp) or a watermark.
struct NodeOutput<'a> {
    chain: &'a mut OperatorChain,
    node: usize,
    timestamp: Option<Timestamp>,
}

impl Output for NodeOutput<'_> {
    fn collect(&mut self, element: Element) {
        self.chain.emit(self.node, element, self.timestamp);
    }

    fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>) {
        self.chain.emit(self.node, element, timestamp);
    }

    fn collect_batch(&mut self, batch: Batch) {
        self.chain.emit_batch(self.node, batch);
    }

    fn current_timestamp(&self) -> Option<Timestamp> {
        self.timestamp
    }

    fn emit_watermark(&mut self, watermark: Watermark) {
        self.chain.emit_watermark(self.node, watermark);
    }
}

impl OperatorChain {
    pub(super) fn new(nodes: Vec<ChainNode>, writers: Vec<RecordWriter>) -> OperatorChain {
        assert!(!nodes.is_empty(), "internal: a chain has at least its head");
        let kinds = nodes.iter().map(|node| node_kinds(&node.body)).collect();
        OperatorChain {
            nodes,
            kinds,
            writers,
            work: Work::default(),
            serialized_taken: 0,
            sink_records: 0,
            error: None,
            watermark: Watermark::MIN,
            pending_watermark: None,
        }
    }

    /// Sends a node's output to its writers and children.
    fn emit(&mut self, node: usize, element: Element, timestamp: Option<Timestamp>) {
        for writer in &self.nodes[node].writers {
            self.writers[*writer].emit(element.as_ref(), timestamp);
        }
        // By index: the children are not copied out for every element.
        let Some(last) = self.nodes[node].children.len().checked_sub(1) else { return };
        for index in 0..last {
            let (child, copy) =
                (self.nodes[node].children[index], self.nodes[node].output_type.clone_element(element.as_ref()));
            self.deliver(child, 0, copy, timestamp);
        }
        self.deliver(self.nodes[node].children[last], 0, element, timestamp);
    }

    /// Sends a node's batch to its writers and children, as [`OperatorChain::emit`] of each
    /// element would, but each writer and each child takes the whole batch in turn.
    fn emit_batch(&mut self, node: usize, batch: Batch) {
        for writer in &self.nodes[node].writers {
            let (writer, mut timestamps) = (&mut self.writers[*writer], batch.timestamps.iter());
            batch.type_info.for_each_value(&batch.values, &mut |element| {
                writer.emit(element, *timestamps.next().expect("a timestamp per element"));
            });
        }
        let Some(last) = self.nodes[node].children.len().checked_sub(1) else { return };
        for index in 0..last {
            let copy = batch.duplicate();
            self.deliver_batch(self.nodes[node].children[index], copy);
        }
        self.deliver_batch(self.nodes[node].children[last], batch);
    }

    /// Hands a batch to a node on its first input: whole to an operator that takes batches and
    /// to a sink, element by element to any other operator.
    fn deliver_batch(&mut self, node: usize, batch: Batch) {
        if batch.is_empty() {
            return;
        }
        if !self.takes_elements_one_by_one(node) {
            self.work.add(self.kinds[node][0], batch.len() as u64);
        }
        let result = match &mut self.nodes[node].body {
            ChainBody::Source => {
                self.emit_batch(node, batch);
                Ok(())
            }
            ChainBody::Sink(sink) => {
                self.sink_records += batch.len() as u64;
                sink.write_batch(batch)
            }
            ChainBody::Operator(Some(operator)) if operator.takes_batches() => {
                let mut operator = self.take_operator(node);
                let result = operator.process_batch(batch, &mut NodeOutput { chain: self, node, timestamp: None });
                self.nodes[node].body = ChainBody::Operator(Some(operator));
                result
            }
            ChainBody::Operator(_) => {
                for (element, timestamp) in batch.into_elements() {
                    self.deliver(node, 0, element, timestamp);
                }
                Ok(())
            }
        };
        if let Err(error) = result {
            self.error.get_or_insert(error);
        }
    }

    fn take_operator(&mut self, node: usize) -> Box<dyn StreamOperator> {
        match &mut self.nodes[node].body {
            ChainBody::Operator(slot) => slot.take().expect("internal: an operator was re-entered"),
            _ => panic!("internal: chain node {node} is not an operator"),
        }
    }

    /// Whether a batch handed to `node` goes on element by element (counted by `deliver`).
    fn takes_elements_one_by_one(&self, node: usize) -> bool {
        matches!(&self.nodes[node].body, ChainBody::Operator(Some(operator)) if !operator.takes_batches())
    }

    /// The work done since the last call: records per operator kind, and the bytes the chain's
    /// writers serialized (the task adds what it deserialized).
    pub(super) fn take_work(&mut self) -> Work {
        let serialized: u64 = self.writers.iter().map(RecordWriter::bytes_written).sum();
        let mut work = std::mem::take(&mut self.work);
        work.serialized_bytes += serialized - self.serialized_taken;
        self.serialized_taken = serialized;
        work
    }

    /// Hands an element to a node's operator (or sink) on one of its inputs.
    fn deliver(&mut self, node: usize, input: u32, element: Element, timestamp: Option<Timestamp>) {
        self.work.add(self.kinds[node][input.min(1) as usize], 1);
        let result = match &mut self.nodes[node].body {
            ChainBody::Source => {
                self.emit(node, element, timestamp);
                Ok(())
            }
            ChainBody::Sink(sink) => {
                self.sink_records += 1;
                sink.write(element)
            }
            ChainBody::Operator(slot) => {
                let mut operator = slot.take().expect("internal: an operator was re-entered");
                let mut output = NodeOutput { chain: self, node, timestamp };
                let result = match input {
                    0 => operator.process_element(element, &mut output),
                    _ => operator.process_element2(element, &mut output),
                };
                self.nodes[node].body = ChainBody::Operator(Some(operator));
                result
            }
        };
        if let Err(error) = result {
            self.error.get_or_insert(error);
        }
    }

    /// Passes a node's watermark to its chained children and, at the next flush, to the network.
    fn emit_watermark(&mut self, node: usize, watermark: Watermark) {
        if !self.nodes[node].writers.is_empty() {
            self.pending_watermark = Some(self.pending_watermark.map_or(watermark, |pending| pending.max(watermark)));
        }
        for child in self.nodes[node].children.clone() {
            self.deliver_watermark(child, watermark);
        }
    }

    /// Hands a watermark to a node: an operator fires its timers and passes it on; a sink
    /// ignores it.
    fn deliver_watermark(&mut self, node: usize, watermark: Watermark) {
        let result = match &mut self.nodes[node].body {
            ChainBody::Source => {
                self.emit_watermark(node, watermark);
                Ok(())
            }
            ChainBody::Sink(_) => Ok(()),
            ChainBody::Operator(slot) => {
                let mut operator = slot.take().expect("internal: an operator was re-entered");
                let result =
                    operator.process_watermark(watermark, &mut NodeOutput { chain: self, node, timestamp: None });
                self.nodes[node].body = ChainBody::Operator(Some(operator));
                result
            }
        };
        if let Err(error) = result {
            self.error.get_or_insert(error);
        }
    }

    /// The task's event time advanced to `watermark` (from its inputs, or the end of input):
    /// the chain processes it from its head. A watermark not above the last one is ignored.
    pub(super) fn process_watermark(&mut self, watermark: Watermark) -> Result<(), TaskFailure> {
        if watermark <= self.watermark {
            return Ok(());
        }
        self.watermark = watermark;
        self.deliver_watermark(0, watermark);
        self.take_error()
    }

    fn take_error(&mut self) -> Result<(), TaskFailure> {
        match self.error.take() {
            Some(error) => Err(TaskFailure::Operator(error.message)),
            None => Ok(()),
        }
    }

    /// Pushes elements of one input, with their timestamps, through the chain from its head.
    /// A buffer that fills goes out at once, not at the next flush: its consumer works on it
    /// while this task goes on, and a full partition holds this task back buffer by buffer
    /// (Flink's record writer), not after a whole batch of the source.
    pub(super) async fn push_all(
        &mut self,
        input: u32,
        elements: Vec<(Element, Option<Timestamp>)>,
    ) -> Result<(), TaskFailure> {
        for (element, timestamp) in elements {
            self.deliver(0, input, element, timestamp);
            self.take_error()?;
            if self.writers.iter().any(RecordWriter::has_sealed) {
                for writer in &mut self.writers {
                    writer.flush_full().await?;
                }
            }
        }
        Ok(())
    }

    /// Pushes a batch of input 0 through the chain from its head, then ships the buffers it
    /// filled. A caller with a long run pushes it in groups, so that buffers leave as the run
    /// goes (see [`OperatorChain::push_all`]).
    pub(super) async fn push_batch(&mut self, batch: Batch) -> Result<(), TaskFailure> {
        self.deliver_batch(0, batch);
        self.take_error()?;
        for writer in &mut self.writers {
            writer.flush_full().await?;
        }
        Ok(())
    }

    /// Ships full buffers, then the pending watermark (after everything emitted before it), and
    /// lets sinks stage what they buffered.
    pub(super) async fn flush(&mut self, end_of_input: bool) -> Result<(), TaskFailure> {
        for writer in &mut self.writers {
            writer.flush_full().await?;
        }
        // The end of time goes unsaid: a consumer takes a channel's end as +∞.
        if let Some(watermark) = self.pending_watermark.take().filter(|watermark| *watermark < Watermark::MAX) {
            let event = watermark.encode();
            for writer in &mut self.writers {
                writer.broadcast_event(event.clone()).await?;
            }
        }
        for node in &mut self.nodes {
            if let ChainBody::Sink(sink) = &mut node.body {
                sink.flush(end_of_input).await.map_err(|error| TaskFailure::Operator(error.message))?;
            }
        }
        Ok(())
    }

    /// Every channel of the head's input `input` ended: tells the head operator
    /// ([`StreamOperator::end_input_of`]), which may emit what it held back for it.
    pub(super) fn end_input_of(&mut self, input: u32) -> Result<(), TaskFailure> {
        let ChainBody::Operator(slot) = &mut self.nodes[0].body else { return Ok(()) };
        let mut operator = slot.take().expect("internal: an operator was re-entered");
        let result = operator.end_input_of(input, &mut NodeOutput { chain: self, node: 0, timestamp: None });
        self.nodes[0].body = ChainBody::Operator(Some(operator));
        result.map_err(|error| TaskFailure::Operator(error.message))?;
        self.take_error()
    }

    /// Ends the input of every operator, parents first, so that each can emit what it held back.
    pub(super) fn end_input(&mut self) -> Result<(), TaskFailure> {
        self.each_operator(|operator, output| operator.end_input(output))
    }

    /// Calls every operator, parents first, with its output.
    fn each_operator(
        &mut self,
        mut call: impl FnMut(&mut dyn StreamOperator, &mut dyn Output) -> Result<(), OperatorError>,
    ) -> Result<(), TaskFailure> {
        for node in 0..self.nodes.len() {
            let ChainBody::Operator(slot) = &mut self.nodes[node].body else { continue };
            let mut operator = slot.take().expect("internal: an operator was re-entered");
            let result = call(operator.as_mut(), &mut NodeOutput { chain: self, node, timestamp: None });
            self.nodes[node].body = ChainBody::Operator(Some(operator));
            result.map_err(|error| TaskFailure::Operator(error.message))?;
            self.take_error()?;
        }
        Ok(())
    }

    /// Gives every operator, parents first, its periodic emit (a watermark generator emits its
    /// watermark, which reaches the network at the next flush).
    pub(super) fn periodic_emit(&mut self) -> Result<(), TaskFailure> {
        self.each_operator(|operator, output| operator.on_periodic_emit(output))
    }

    /// The late elements the operators dropped since the last call, by operator id.
    pub(super) fn take_late_drops(&mut self) -> Vec<(u32, LateDrop)> {
        let mut drops = Vec::new();
        for node in &mut self.nodes {
            if let ChainBody::Operator(Some(operator)) = &mut node.body {
                drops.extend(operator.take_late_drops().into_iter().map(|drop| (node.operator_id, drop)));
            }
        }
        drops
    }

    /// How many late elements each operator that dropped some dropped since the job began.
    pub(super) fn dropped_late(&self) -> Vec<(u32, u64)> {
        let counts = self.nodes.iter().filter_map(|node| match &node.body {
            ChainBody::Operator(Some(operator)) => Some((node.operator_id, operator.dropped_late())),
            _ => None,
        });
        counts.filter(|(_, dropped)| *dropped > 0).collect()
    }

    /// Flushes everything and finishes the output partitions; returns the records written and
    /// each partition's statistics.
    pub(super) async fn finish(
        &mut self,
    ) -> Result<(u64, Vec<(IntermediateDataSetId, PartitionStatistics)>), TaskFailure> {
        self.flush(true).await?;
        let mut records = self.sink_records;
        let mut partitions = Vec::with_capacity(self.writers.len());
        for writer in &mut self.writers {
            partitions.push((writer.dataset(), writer.finish().await?));
            records += writer.records_written();
        }
        Ok((records, partitions))
    }

    /// Bytes written to blocking partitions (to a disk, local or remote).
    pub(super) fn blocking_bytes_written(&self) -> u64 {
        self.writers.iter().filter(|writer| writer.is_blocking()).map(RecordWriter::bytes_written).sum()
    }

    /// Sends checkpoint barrier `id` downstream, after everything emitted so far.
    pub(super) async fn broadcast_barrier(&mut self, id: u64) -> Result<(), TaskFailure> {
        let barrier = crate::checkpoint::CheckpointBarrier { id }.encode();
        for writer in &mut self.writers {
            writer.broadcast_event(barrier.clone()).await?;
        }
        Ok(())
    }

    /// The state of every chained operator that has some, by operator id.
    pub(super) fn snapshot_operators(&self) -> Vec<(u32, Vec<u8>)> {
        self.nodes
            .iter()
            .filter_map(|node| match &node.body {
                ChainBody::Operator(Some(operator)) => Some((node.operator_id, operator.snapshot_state())),
                ChainBody::Operator(None) => {
                    panic!("internal: operator {} snapshot while processing", node.operator_id)
                }
                _ => None,
            })
            .filter(|(_, state)| !state.is_empty())
            .collect()
    }

    /// Restores chained operators' state from a snapshot.
    pub(super) fn restore_operators(&mut self, states: &[(u32, Vec<u8>)]) -> Result<(), TaskFailure> {
        for (operator_id, state) in states {
            let node = self.node_mut(*operator_id)?;
            let ChainBody::Operator(Some(operator)) = &mut node.body else {
                return Err(TaskFailure::Deployment(format!(
                    "checkpoint state for node {operator_id}, which is not an operator"
                )));
            };
            operator.restore_state(state).map_err(|error| TaskFailure::Operator(error.message))?;
        }
        Ok(())
    }

    fn node_mut(&mut self, operator_id: u32) -> Result<&mut ChainNode, TaskFailure> {
        self.nodes.iter_mut().find(|node| node.operator_id == operator_id).ok_or_else(|| {
            TaskFailure::Deployment(format!(
                "the checkpoint has state for node {operator_id}, which this task does not run"
            ))
        })
    }

    /// The sink writer's state at barrier `checkpoint_id` (after its `prepare_commit`).
    pub(super) fn snapshot_sink(&mut self, node: usize, checkpoint_id: u64) -> Result<Vec<u8>, TaskFailure> {
        let ChainBody::Sink(sink) = &mut self.nodes[node].body else {
            panic!("internal: snapshot_sink on chain node {node}, which is not a sink")
        };
        sink.snapshot_state(checkpoint_id).map_err(|error| TaskFailure::Operator(error.message))
    }

    /// Restores a sink writer's state.
    pub(super) fn restore_sink(&mut self, operator_id: u32, state: &[u8]) -> Result<(), TaskFailure> {
        let node = self.node_mut(operator_id)?;
        let ChainBody::Sink(sink) = &mut node.body else {
            return Err(TaskFailure::Deployment(format!(
                "checkpoint sink state for node {operator_id}, which is not a sink"
            )));
        };
        sink.restore_state(state).map_err(|error| TaskFailure::Operator(error.message))
    }

    /// Pre-commits the sink at node `node`: its committables, encoded.
    pub(super) async fn prepare_commit(&mut self, node: usize) -> Result<Vec<Vec<u8>>, TaskFailure> {
        let ChainBody::Sink(sink) = &mut self.nodes[node].body else {
            panic!("internal: prepare_commit on chain node {node}, which is not a sink")
        };
        sink.prepare_commit().await.map_err(|error| TaskFailure::Operator(error.message))
    }
}
