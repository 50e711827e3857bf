//! A BLOCKING partition on its producer's TaskManager, sort-merge style (Flink's FLIP-148).
//!
//! Items are clustered by subpartition in a write buffer; when the buffer holds
//! `sort_buffer_bytes`, it is spilled as one region: every subpartition's items, in subpartition
//! order, appended to the partition's single data file. When the producer finishes, the last
//! region is spilled, an index file (one checksummed record per item: subpartition, offset,
//! length, kind) is written, and both are synced. Readers then fetch any range of subpartitions
//! as one stream. The partition is lost with its TaskManager's disk or files.

use std::ops::Range;

use super::protocol::StreamItem;
use crate::record::{DecodeError, Record};

/// Where one item of a subpartition is in the data file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Offset in the data file.
    pub offset: u64,
    /// Length in bytes.
    pub length: u64,
    /// True for an event, false for a buffer.
    pub event: bool,
}

/// One index record: a frame of a subpartition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The subpartition.
    pub subpartition: u32,
    /// The frame.
    pub frame: Frame,
}

impl Record for IndexEntry {
    fn encode(&self, out: &mut Vec<u8>) {
        (self.subpartition, self.frame.offset, self.frame.length, self.frame.event).encode(out);
    }
    fn decode(input: &mut &[u8]) -> Result<Self, DecodeError> {
        let (subpartition, offset, length, event) = <(u32, u64, u64, bool)>::decode(input)?;
        Ok(IndexEntry { subpartition, frame: Frame { offset, length, event } })
    }
}

/// The state of a sort-merge partition; the manager does its I/O.
pub(super) struct SortMergePartition {
    pub(super) data_path: String,
    pub(super) index_path: String,
    pending: Vec<Vec<StreamItem>>,
    pending_bytes: usize,
    frames: Vec<Vec<Frame>>,
    data_length: u64,
    bytes_per_subpartition: Vec<u64>,
    pub(super) finished: bool,
}

/// A region to write: items in file order, with the frames they become.
pub(super) struct Spill {
    pub(super) bytes: Vec<u8>,
    pub(super) entries: Vec<IndexEntry>,
}

impl SortMergePartition {
    pub(super) fn new(data_path: String, index_path: String, subpartitions: u32) -> SortMergePartition {
        SortMergePartition {
            data_path,
            index_path,
            pending: vec![Vec::new(); subpartitions as usize],
            pending_bytes: 0,
            frames: vec![Vec::new(); subpartitions as usize],
            data_length: 0,
            bytes_per_subpartition: vec![0; subpartitions as usize],
            finished: false,
        }
    }

    pub(super) fn subpartitions(&self) -> u32 {
        self.frames.len() as u32
    }

    /// Bytes written to its data file (a partition with no items has no files).
    pub(super) fn data_length(&self) -> u64 {
        self.data_length
    }

    /// Buffers an item; true once the write buffer should be spilled.
    pub(super) fn add(&mut self, subpartition: u32, item: StreamItem, threshold: usize) -> bool {
        assert!(!self.finished, "internal: an item was added to a finished blocking partition");
        assert!(
            (subpartition as usize) < self.pending.len(),
            "shuffle invariant: an item goes to a subpartition of its partition ({subpartition} of {})",
            self.pending.len()
        );
        self.pending_bytes += item.len();
        if let StreamItem::Buffer(bytes) = &item {
            self.bytes_per_subpartition[subpartition as usize] += bytes.len() as u64;
        }
        self.pending[subpartition as usize].push(item);
        self.pending_bytes >= threshold
    }

    /// Takes the write buffer as a region, clustered by subpartition, and indexes it.
    pub(super) fn take_spill(&mut self) -> Spill {
        assert!(!self.finished, "shuffle invariant: a finished blocking partition spills nothing more");
        let written = self.data_length;
        let mut spill = Spill { bytes: Vec::with_capacity(self.pending_bytes), entries: Vec::new() };
        for (subpartition, items) in self.pending.iter_mut().enumerate() {
            for item in items.drain(..) {
                let frame = Frame {
                    offset: self.data_length,
                    length: item.len() as u64,
                    event: matches!(item, StreamItem::Event(_)),
                };
                let (StreamItem::Buffer(bytes) | StreamItem::Event(bytes)) = item;
                spill.bytes.extend_from_slice(&bytes);
                self.data_length += frame.length;
                self.frames[subpartition].push(frame);
                spill.entries.push(IndexEntry { subpartition: subpartition as u32, frame });
            }
        }
        // The region is what was buffered, appended where the data file ended.
        assert_eq!(spill.bytes.len(), self.pending_bytes, "shuffle invariant: a region holds its buffered bytes");
        assert_eq!(
            self.data_length,
            written + spill.bytes.len() as u64,
            "shuffle invariant: a region is appended where the data file ended"
        );
        self.pending_bytes = 0;
        spill
    }

    /// True if items wait in the write buffer (a finished partition has none).
    pub(super) fn has_pending(&self) -> bool {
        self.pending.iter().any(|items| !items.is_empty())
    }

    pub(super) fn bytes_per_subpartition(&self) -> &[u64] {
        &self.bytes_per_subpartition
    }

    /// The frames of items `sequence..sequence + credits` of a range read as one stream, and
    /// how many more follow them.
    pub(super) fn frames_for(&self, range: Range<u32>, sequence: u64, credits: u32) -> (Vec<Frame>, u64) {
        frames_for(&self.frames, range, sequence, credits)
    }
}

/// Frames `sequence..sequence + credits` of the subpartitions in `range`, read one after the
/// other, and the backlog after them.
pub fn frames_for(frames: &[Vec<Frame>], range: Range<u32>, sequence: u64, credits: u32) -> (Vec<Frame>, u64) {
    // Both servers refuse a range outside the partition (`NoSuchSubpartition`) before asking.
    assert!(range.start < range.end, "shuffle invariant: frames are read from a non-empty range ({range:?})");
    assert!(
        range.end as usize <= frames.len(),
        "shuffle invariant: frames are read from the partition's subpartitions ({range:?} of {})",
        frames.len()
    );
    let mut stream = frames[range.start as usize..range.end as usize].iter().flatten().skip(sequence as usize);
    let taken: Vec<Frame> = stream.by_ref().take(credits.max(1) as usize).copied().collect();
    assert!(taken.len() <= credits.max(1) as usize, "shuffle invariant: an answer fits its credits");
    (taken, stream.count() as u64)
}

/// Rebuilds per-subpartition frames from index entries (a shuffle service after a restart).
pub fn frames_from_index(subpartitions: u32, entries: &[IndexEntry]) -> Vec<Vec<Frame>> {
    let mut frames = vec![Vec::new(); subpartitions as usize];
    for entry in entries {
        // The index was written, checksummed, from the partition's own frames (`index_bytes`).
        assert!(
            entry.subpartition < subpartitions,
            "shuffle invariant: an index names subpartitions of its partition ({} of {subpartitions})",
            entry.subpartition
        );
        frames[entry.subpartition as usize].push(entry.frame);
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spill_clusters_items_by_subpartition_and_ranges_read_as_one_stream() {
        let mut partition = SortMergePartition::new("d".into(), "i".into(), 3);
        assert!(!partition.add(2, StreamItem::Buffer(b"c1".to_vec()), 100));
        assert!(!partition.add(0, StreamItem::Buffer(b"a1".to_vec()), 100));
        assert!(!partition.add(2, StreamItem::Event(b"e".to_vec()), 100));
        assert!(partition.add(0, StreamItem::Buffer(b"a2".to_vec()), 7));
        let spill = partition.take_spill();
        assert_eq!(spill.bytes, b"a1a2c1e");
        let order: Vec<u32> = spill.entries.iter().map(|entry| entry.subpartition).collect();
        assert_eq!(order, vec![0, 0, 2, 2]);
        assert!(spill.entries[3].frame.event);
        partition.add(1, StreamItem::Buffer(b"b1".to_vec()), 100);
        partition.take_spill();
        let (frames, backlog) = partition.frames_for(0..3, 1, 2);
        let offsets: Vec<u64> = frames.iter().map(|frame| frame.offset).collect();
        assert_eq!(offsets, vec![2, 7], "a2, then b1 from the second region");
        assert_eq!(backlog, 2);
        assert_eq!(partition.bytes_per_subpartition(), &[4, 2, 2]);
        let entries: Vec<IndexEntry> =
            spill.entries.iter().map(|entry| IndexEntry::from_bytes(&entry.to_bytes()).unwrap()).collect();
        assert_eq!(entries, spill.entries);
    }
}
