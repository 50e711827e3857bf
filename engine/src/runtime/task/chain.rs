//! [`OperatorChain`]: chained operators calling each other directly, ending in record writers
//! or a sink writer.

use crate::graph::OperatorError;
use crate::graph::operator::{ErasedSinkWriter, Output, StreamOperator};
use crate::record::Element;
use crate::runtime::messages::TaskFailure;
use crate::shuffle::RecordWriter;

/// The end of a chain: the network outputs, or the sink.
pub(super) struct ChainTail {
    writers: Vec<RecordWriter>,
    sink: Option<Box<dyn ErasedSinkWriter>>,
    sink_records: u64,
    error: Option<OperatorError>,
}

impl ChainTail {
    pub(super) fn new(writers: Vec<RecordWriter>, sink: Option<Box<dyn ErasedSinkWriter>>) -> ChainTail {
        ChainTail { writers, sink, sink_records: 0, error: None }
    }
}

impl Output for ChainTail {
    fn collect(&mut self, element: Element) {
        for writer in &mut self.writers {
            writer.emit(element.as_ref());
        }
        if let Some(sink) = &mut self.sink {
            self.sink_records += 1;
            if let Err(error) = sink.write(element) {
                self.error.get_or_insert(error);
            }
        }
    }
}

/// Passes an element to the next operator of the chain, or to the tail.
struct ChainOutput<'a> {
    rest: &'a mut [Box<dyn StreamOperator>],
    tail: &'a mut ChainTail,
}

impl Output for ChainOutput<'_> {
    fn collect(&mut self, element: Element) {
        match self.rest.split_first_mut() {
            None => self.tail.collect(element),
            Some((next, rest)) => {
                let mut output = ChainOutput { rest, tail: &mut *self.tail };
                if let Err(error) = next.process_element(element, &mut output) {
                    self.tail.error.get_or_insert(error);
                }
            }
        }
    }
}

/// A task's operators and outputs.
pub(super) struct OperatorChain {
    operators: Vec<Box<dyn StreamOperator>>,
    tail: ChainTail,
}

impl OperatorChain {
    pub(super) fn new(operators: Vec<Box<dyn StreamOperator>>, tail: ChainTail) -> OperatorChain {
        OperatorChain { operators, tail }
    }

    fn take_error(&mut self) -> Result<(), TaskFailure> {
        match self.tail.error.take() {
            Some(error) => Err(TaskFailure::Operator(error.message)),
            None => Ok(()),
        }
    }

    /// Pushes elements through the chain.
    pub(super) fn push_all(&mut self, elements: Vec<Element>) -> Result<(), TaskFailure> {
        for element in elements {
            ChainOutput { rest: &mut self.operators, tail: &mut self.tail }.collect(element);
            self.take_error()?;
        }
        Ok(())
    }

    /// Ships full buffers and lets the sink stage what it buffered.
    pub(super) async fn flush(&mut self, end_of_input: bool) -> Result<(), TaskFailure> {
        for writer in &mut self.tail.writers {
            writer.flush_full().await.map_err(|released| TaskFailure::OutputReleased(released.0))?;
        }
        if let Some(sink) = &mut self.tail.sink {
            sink.flush(end_of_input).await.map_err(|error| TaskFailure::Operator(error.message))?;
        }
        Ok(())
    }

    /// Ends the input of every operator, head first, so that each can emit what it held back.
    pub(super) fn end_input(&mut self) -> Result<(), TaskFailure> {
        for index in 0..self.operators.len() {
            let (done, rest) = self.operators.split_at_mut(index + 1);
            let mut output = ChainOutput { rest, tail: &mut self.tail };
            if let Err(error) = done[index].end_input(&mut output) {
                return Err(TaskFailure::Operator(error.message));
            }
            self.take_error()?;
        }
        Ok(())
    }

    /// Flushes everything and finishes the output partitions; returns the records written.
    pub(super) async fn finish(&mut self) -> Result<u64, TaskFailure> {
        self.flush(true).await?;
        let mut records = self.tail.sink_records;
        for writer in &mut self.tail.writers {
            writer.finish().await.map_err(|released| TaskFailure::OutputReleased(released.0))?;
            records += writer.records_written();
        }
        Ok(records)
    }

    /// Pre-commits the sink: its committables, encoded.
    pub(super) async fn prepare_commit(&mut self) -> Result<Vec<Vec<u8>>, TaskFailure> {
        let sink = self.tail.sink.as_mut().expect("internal: prepare_commit on a chain without a sink");
        sink.prepare_commit().await.map_err(|error| TaskFailure::Operator(error.message))
    }
}
