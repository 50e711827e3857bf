//! [`RecordWriter`]: serializes a task's output records into the buffers of one partition, and
//! hands full buffers to its [`ShuffleWriter`].

use std::any::Any;

use super::buffer::BufferBuilder;
use super::{PartitionStatistics, ShuffleWriter, WriteError};
use crate::graph::partitioner::{ChannelSelector, SelectedChannels};
use crate::graph::{IntermediateDataSetId, ResultPartitionType};
use crate::record::TypeInfo;
use crate::time::Timestamp;

/// Serializes records of one output edge into per-subpartition buffers.
pub struct RecordWriter {
    selector: ChannelSelector,
    type_info: TypeInfo,
    builders: Vec<BufferBuilder>,
    sealed: Vec<(u32, Vec<u8>)>,
    writer: Box<dyn ShuffleWriter>,
    scratch: Vec<u8>,
    records_written: u64,
    bytes_written: u64,
    bytes_per_subpartition: Vec<u64>,
    /// True once [`RecordWriter::finish`] handed everything over: nothing is written after.
    finished: bool,
}

impl RecordWriter {
    /// A writer choosing channels with `selector` and writing through `writer`.
    pub fn new(
        selector: ChannelSelector,
        type_info: TypeInfo,
        writer: Box<dyn ShuffleWriter>,
        buffer_size: usize,
    ) -> RecordWriter {
        let subpartitions = writer.partition().subpartitions;
        RecordWriter {
            selector,
            type_info,
            builders: (0..subpartitions).map(|_| BufferBuilder::new(buffer_size)).collect(),
            sealed: Vec::new(),
            writer,
            scratch: Vec::new(),
            records_written: 0,
            bytes_written: 0,
            bytes_per_subpartition: vec![0; subpartitions as usize],
            finished: false,
        }
    }

    /// Serializes one element into the buffers of its channels. Full buffers are kept until
    /// [`RecordWriter::flush_full`].
    pub fn emit(&mut self, element: &dyn Any, timestamp: Option<Timestamp>) {
        assert!(!self.finished, "shuffle invariant: no record is emitted after its partition finished");
        self.scratch.clear();
        self.type_info.encode(element, &mut self.scratch);
        let channels = match self.selector.select(element, &self.scratch) {
            SelectedChannels::One(channel) => channel..channel + 1,
            SelectedChannels::All => 0..self.builders.len() as u32,
        };
        let subpartitions = self.builders.len();
        for channel in channels {
            assert!(
                (channel as usize) < subpartitions,
                "shuffle invariant: a record goes to a subpartition of its partition ({channel} of {subpartitions})"
            );
            let builder = &mut self.builders[channel as usize];
            if !builder.fits(self.scratch.len(), timestamp.is_some()) {
                self.sealed.push((channel, builder.seal()));
            }
            builder.push(&self.scratch, timestamp);
            assert!(builder.within_capacity(), "shuffle invariant: only a buffer of one record exceeds its capacity");
            if builder.is_full() {
                self.sealed.push((channel, builder.seal()));
            }
        }
        self.records_written += 1;
    }

    /// True if a buffer is sealed and not yet handed to the partition.
    pub fn has_sealed(&self) -> bool {
        !self.sealed.is_empty()
    }

    /// Hands full buffers to the partition; may wait (backpressure, disk, network).
    pub async fn flush_full(&mut self) -> Result<(), WriteError> {
        for (channel, buffer) in std::mem::take(&mut self.sealed) {
            self.bytes_written += buffer.len() as u64;
            self.bytes_per_subpartition[channel as usize] += buffer.len() as u64;
            self.writer.write_buffer(channel, buffer).await?;
        }
        Ok(())
    }

    /// Seals partial buffers, then sends an event to every subpartition after them.
    pub async fn broadcast_event(&mut self, event: Vec<u8>) -> Result<(), WriteError> {
        assert!(!self.finished, "shuffle invariant: no event is sent after its partition finished");
        self.seal_partial();
        self.flush_full().await?;
        self.writer.broadcast_event(event).await
    }

    fn seal_partial(&mut self) {
        for (channel, builder) in self.builders.iter_mut().enumerate() {
            if !builder.is_empty() {
                self.sealed.push((channel as u32, builder.seal()));
            }
        }
    }

    /// Seals partial buffers, hands everything to the partition and finishes it. The
    /// statistics count the record buffers written to each subpartition, wherever it lives.
    pub async fn finish(&mut self) -> Result<PartitionStatistics, WriteError> {
        assert!(!self.finished, "shuffle invariant: a record writer finishes its partition once");
        self.seal_partial();
        self.flush_full().await?;
        self.finished = true;
        self.check_handed_over();
        let statistics = self.writer.finish().await?;
        self.check_stored(&statistics);
        Ok(PartitionStatistics { bytes_per_subpartition: self.bytes_per_subpartition.clone(), ..statistics })
    }

    /// Before finishing: every record is in a buffer handed to the partition, and the bytes
    /// handed over add up per subpartition.
    fn check_handed_over(&self) {
        let partition = self.writer.partition().partition;
        assert!(self.sealed.is_empty(), "shuffle invariant: {partition} finishes with no buffer left to hand over");
        assert!(
            self.builders.iter().all(BufferBuilder::is_empty),
            "shuffle invariant: {partition} finishes with no record left in a partial buffer"
        );
        assert_eq!(
            self.bytes_written,
            self.bytes_per_subpartition.iter().sum::<u64>(),
            "shuffle invariant: the bytes handed to {partition} are those handed to its subpartitions"
        );
    }

    /// After finishing: a blocking partition (local or remote) stored, per subpartition, the
    /// record bytes handed to it (a pipelined one keeps no count).
    fn check_stored(&self, statistics: &PartitionStatistics) {
        if !statistics.bytes_per_subpartition.is_empty() {
            assert_eq!(
                statistics.bytes_per_subpartition,
                self.bytes_per_subpartition,
                "shuffle invariant: {} stored per subpartition the bytes its record writer handed it",
                self.writer.partition().partition
            );
        }
    }

    /// The data set it writes.
    pub fn dataset(&self) -> IntermediateDataSetId {
        self.writer.partition().partition.partition.dataset
    }

    /// True if it writes a BLOCKING partition (to a disk, local or remote).
    pub fn is_blocking(&self) -> bool {
        self.writer.partition().partition_type == ResultPartitionType::Blocking
    }

    /// Records emitted so far.
    pub fn records_written(&self) -> u64 {
        self.records_written
    }

    /// Bytes handed to the partition so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }
}
