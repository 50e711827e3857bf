//! A PIPELINED partition on its producer's TaskManager: a bounded queue per subpartition.
//!
//! A subpartition holds at most `capacity` unacknowledged items; a producer that finds it full
//! waits until the consumer acknowledges some (backpressure with bounded memory). The consumer
//! reads with credits: an answer carries at most as many items as it has room for, plus the
//! backlog behind them.

use std::collections::VecDeque;

use super::protocol::{BufferResponse, PartitionRequestError, RequestBuffers, StreamItem};

struct Queue {
    items: VecDeque<StreamItem>,
    /// Sequence number of `items[0]`.
    first_sequence: u64,
}

/// See the module doc.
pub(super) struct PipelinedPartition {
    queues: Vec<Queue>,
    capacity: usize,
    finished: bool,
    buffered_bytes: u64,
    peak_buffered_bytes: u64,
}

impl PipelinedPartition {
    pub(super) fn new(subpartitions: u32, capacity: usize) -> PipelinedPartition {
        let queues = (0..subpartitions).map(|_| Queue { items: VecDeque::new(), first_sequence: 0 }).collect();
        PipelinedPartition {
            queues,
            capacity: capacity.max(1),
            finished: false,
            buffered_bytes: 0,
            peak_buffered_bytes: 0,
        }
    }

    /// True if a subpartition can take another item now.
    pub(super) fn has_room(&self, subpartition: u32) -> bool {
        self.queues[subpartition as usize].items.len() < self.capacity
    }

    /// Adds an item; for a buffer the caller checked [`PipelinedPartition::has_room`]. Events
    /// (checkpoint barriers) are always admitted, as Flink's unpooled event buffers are: a barrier
    /// never waits behind backpressure for room of its own.
    pub(super) fn push(&mut self, subpartition: u32, item: StreamItem) {
        assert!(!self.finished, "internal: an item was added to a finished pipelined partition");
        assert!(
            (subpartition as usize) < self.queues.len(),
            "shuffle invariant: an item goes to a subpartition of its partition ({subpartition} of {})",
            self.queues.len()
        );
        assert!(
            matches!(item, StreamItem::Event(_)) || self.has_room(subpartition),
            "internal: a buffer was added to a full pipelined subpartition"
        );
        self.buffered_bytes += item.len() as u64;
        self.peak_buffered_bytes = self.peak_buffered_bytes.max(self.buffered_bytes);
        self.queues[subpartition as usize].items.push_back(item);
    }

    pub(super) fn finish(&mut self) {
        assert!(!self.finished, "shuffle invariant: a pipelined partition finishes once");
        self.finished = true;
    }

    /// Most bytes held at once.
    pub(super) fn peak_buffered_bytes(&self) -> u64 {
        self.peak_buffered_bytes
    }

    /// True if [`PipelinedPartition::serve`] would answer the request now (an item at or after
    /// its sequence, or the end of the partition), or reject it.
    pub(super) fn can_answer(&self, request: &RequestBuffers) -> bool {
        let range = &request.subpartitions;
        let Some(queue) = self.queues.get(range.start as usize).filter(|_| range.len() == 1) else { return true };
        let available = queue.first_sequence + queue.items.len() as u64;
        let stale = request.sequence < queue.first_sequence;
        stale || request.sequence < available || (self.finished && request.sequence == available)
    }

    /// Acknowledges what the request acknowledges, then answers it if anything is ready.
    /// Returns the answer (if any) and whether room was freed (producers may go on).
    pub(super) fn serve(
        &mut self,
        request: &RequestBuffers,
    ) -> Result<(Option<BufferResponse>, bool), PartitionRequestError> {
        let range = &request.subpartitions;
        if range.len() != 1 || range.start as usize >= self.queues.len() {
            return Err(PartitionRequestError::NoSuchSubpartition);
        }
        let queue = &mut self.queues[range.start as usize];
        // One consumer reads a pipelined subpartition, and what it asks from only grows: it
        // never asks again for what it acknowledged. A request from below that is one the
        // network delayed past its timeout, after the consumer asked again and moved on: its
        // answer goes to nobody, so it acknowledges nothing and gets `NotYet`.
        if request.sequence < queue.first_sequence {
            return Ok((Some(BufferResponse::NotYet), false));
        }
        let mut freed = false;
        while queue.first_sequence < request.sequence && !queue.items.is_empty() {
            let item = queue.items.pop_front().expect("checked non-empty");
            assert!(
                self.buffered_bytes >= item.len() as u64,
                "shuffle invariant: a pipelined partition counts the bytes of every item it holds"
            );
            self.buffered_bytes -= item.len() as u64;
            queue.first_sequence += 1;
            freed = true;
        }
        let available = queue.first_sequence + queue.items.len() as u64;
        let answer = if request.sequence < available {
            let start = (request.sequence - queue.first_sequence) as usize;
            let count = (request.credits.max(1) as usize).min(queue.items.len() - start);
            let items: Vec<StreamItem> = queue.items.range(start..start + count).cloned().collect();
            let backlog = (queue.items.len() - start - count) as u64;
            // The consumer's side of this pair: a fetcher takes at most the credits it granted.
            assert!(!items.is_empty(), "shuffle invariant: an answer with items has at least one");
            assert!(items.len() <= request.credits.max(1) as usize, "shuffle invariant: an answer fits its credits");
            Some(BufferResponse::Items { items, backlog })
        } else if self.finished && request.sequence == available {
            Some(BufferResponse::EndOfPartition)
        } else {
            None
        };
        Ok((answer, freed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{IntermediateDataSetId, IntermediateResultPartitionId};
    use crate::shuffle::ResultPartitionId;

    fn request(sequence: u64, credits: u32) -> RequestBuffers {
        let partition = ResultPartitionId {
            partition: IntermediateResultPartitionId { dataset: IntermediateDataSetId(0), producer_subtask: 0 },
            attempt: 0,
        };
        RequestBuffers { partition, subpartitions: 0..1, sequence, credits }
    }

    #[test]
    fn credits_bound_an_answer_and_acknowledgements_free_room() {
        let mut partition = PipelinedPartition::new(1, 3);
        for byte in 0..3u8 {
            partition.push(0, StreamItem::Buffer(vec![byte; 10]));
        }
        assert!(!partition.has_room(0), "the queue is bounded");
        let (answer, freed) = partition.serve(&request(0, 2)).unwrap();
        assert_eq!(
            answer,
            Some(BufferResponse::Items {
                items: vec![StreamItem::Buffer(vec![0; 10]), StreamItem::Buffer(vec![1; 10])],
                backlog: 1
            })
        );
        assert!(!freed);
        let (answer, freed) = partition.serve(&request(2, 4)).unwrap();
        assert!(freed, "asking from 2 acknowledges 0 and 1");
        assert_eq!(answer, Some(BufferResponse::Items { items: vec![StreamItem::Buffer(vec![2; 10])], backlog: 0 }));
        assert!(partition.has_room(0));
        assert_eq!(partition.serve(&request(3, 4)).unwrap().0, None, "nothing ready, not finished");
        assert!(!partition.can_answer(&request(3, 4)));
        assert!(partition.can_answer(&request(2, 4)), "item 2 is still held");
        partition.finish();
        assert!(partition.can_answer(&request(3, 4)), "the end of the partition is an answer");
        assert_eq!(partition.serve(&request(3, 4)).unwrap().0, Some(BufferResponse::EndOfPartition));
        assert_eq!(partition.peak_buffered_bytes(), 30);
    }

    #[test]
    fn a_request_the_network_delayed_past_its_retry_acknowledges_nothing_and_gets_not_yet() {
        let mut partition = PipelinedPartition::new(1, 4);
        for byte in 0..3u8 {
            partition.push(0, StreamItem::Buffer(vec![byte; 10]));
        }
        // The consumer asked from 0 (delayed), asked again, got 0 and 1, then asked from 2.
        partition.serve(&request(0, 2)).unwrap();
        let (_, freed) = partition.serve(&request(2, 2)).unwrap();
        assert!(freed);
        assert!(partition.can_answer(&request(0, 2)), "a stale request is answered at once");
        assert_eq!(partition.serve(&request(0, 2)).unwrap(), (Some(BufferResponse::NotYet), false));
        let (answer, _) = partition.serve(&request(2, 2)).unwrap();
        assert_eq!(answer, Some(BufferResponse::Items { items: vec![StreamItem::Buffer(vec![2; 10])], backlog: 0 }));
    }
}
