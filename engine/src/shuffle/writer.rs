//! [`RecordWriter`]: serializes a task's output records into the buffers of one result partition.

use std::any::Any;

use super::buffer::BufferBuilder;
use super::partition::{PartitionReleased, ResultPartitionWriter};
use crate::graph::partitioner::{ChannelSelector, SelectedChannels};
use crate::record::TypeInfo;

/// Serializes records of one output edge into per-subpartition buffers.
pub struct RecordWriter {
    selector: ChannelSelector,
    type_info: TypeInfo,
    builders: Vec<BufferBuilder>,
    sealed: Vec<(u32, Vec<u8>)>,
    partition: ResultPartitionWriter,
    scratch: Vec<u8>,
    records_written: u64,
    bytes_written: u64,
    bytes_per_subpartition: Vec<u64>,
}

impl RecordWriter {
    /// A writer for `partition`, choosing channels with `selector`.
    pub fn new(
        selector: ChannelSelector,
        type_info: TypeInfo,
        partition: ResultPartitionWriter,
        subpartitions: u32,
        buffer_size: usize,
    ) -> RecordWriter {
        RecordWriter {
            selector,
            type_info,
            builders: (0..subpartitions).map(|_| BufferBuilder::new(buffer_size)).collect(),
            sealed: Vec::new(),
            partition,
            scratch: Vec::new(),
            records_written: 0,
            bytes_written: 0,
            bytes_per_subpartition: vec![0; subpartitions as usize],
        }
    }

    /// Serializes one element into the buffers of its channels. Full buffers are kept until
    /// [`RecordWriter::flush_full`].
    pub fn emit(&mut self, element: &dyn Any) {
        self.scratch.clear();
        self.type_info.encode(element, &mut self.scratch);
        let channels = match self.selector.select(element) {
            SelectedChannels::One(channel) => channel..channel + 1,
            SelectedChannels::All => 0..self.builders.len() as u32,
        };
        for channel in channels {
            let builder = &mut self.builders[channel as usize];
            builder.push(&self.scratch);
            if builder.is_full() {
                self.sealed.push((channel, builder.seal()));
            }
        }
        self.records_written += 1;
    }

    /// Hands full buffers to the partition; waits on backpressure.
    pub async fn flush_full(&mut self) -> Result<(), PartitionReleased> {
        for (channel, buffer) in std::mem::take(&mut self.sealed) {
            self.bytes_written += buffer.len() as u64;
            self.bytes_per_subpartition[channel as usize] += buffer.len() as u64;
            self.partition.add_buffer(channel, buffer).await?;
        }
        Ok(())
    }

    /// Seals partial buffers, hands everything to the partition and finishes it.
    pub async fn finish(&mut self) -> Result<(), PartitionReleased> {
        for (channel, builder) in self.builders.iter_mut().enumerate() {
            if !builder.is_empty() {
                self.sealed.push((channel as u32, builder.seal()));
            }
        }
        self.flush_full().await?;
        self.partition.finish()
    }

    /// Records emitted so far.
    pub fn records_written(&self) -> u64 {
        self.records_written
    }

    /// True if it writes a BLOCKING partition (to disk).
    pub fn is_blocking(&self) -> bool {
        self.partition.is_blocking()
    }

    /// The data set it writes.
    pub fn dataset(&self) -> crate::graph::IntermediateDataSetId {
        self.partition.id().partition.dataset
    }

    /// Bytes handed to each subpartition so far (what the adaptive scheduler decides from).
    pub fn bytes_per_subpartition(&self) -> &[u64] {
        &self.bytes_per_subpartition
    }

    /// Bytes handed to the partition so far.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }
}
