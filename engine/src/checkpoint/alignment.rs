//! [`BarrierAligner`]: aligns checkpoint barriers across a task's input channels (Flink's
//! `SingleCheckpointBarrierHandler` with aligned checkpoints).
//!
//! The first barrier `n` starts an alignment; each channel that delivers barrier `n` is blocked
//! (what it sends next belongs after the checkpoint) until every channel still open has
//! delivered it. A channel that ends counts as aligned. A barrier newer than the one being
//! aligned means the older checkpoint will never complete here (a source missed its trigger):
//! the older alignment is abandoned, its channels unblocked, and the newer one starts. A barrier
//! older than the last one seen is stale and ignored.

use std::collections::BTreeSet;

use super::CheckpointId;

/// What the task must do after a barrier or a channel end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alignment {
    /// Unblock every channel (an alignment was abandoned or completed).
    UnblockAll,
    /// Block this channel: hold what it sends until the alignment ends.
    Block(usize),
    /// Every open channel delivered barrier `n`: snapshot, forward the barrier, then unblock.
    Aligned(CheckpointId),
}

/// See the module doc.
#[derive(Clone, Debug)]
pub struct BarrierAligner {
    open: BTreeSet<usize>,
    /// The checkpoint being aligned and the channels that delivered its barrier.
    pending: Option<(CheckpointId, BTreeSet<usize>)>,
    /// The newest checkpoint whose barrier was seen.
    newest: Option<CheckpointId>,
}

impl BarrierAligner {
    /// An aligner for `channels` input channels, all open.
    pub fn new(channels: usize) -> BarrierAligner {
        BarrierAligner { open: (0..channels).collect(), pending: None, newest: None }
    }

    /// True while an alignment is in progress.
    pub fn is_aligning(&self) -> bool {
        self.pending.is_some()
    }

    /// Barrier `id` arrived on `channel`.
    pub fn on_barrier(&mut self, channel: usize, id: CheckpointId) -> Vec<Alignment> {
        assert!(self.open.contains(&channel), "internal: a barrier arrived on channel {channel}, which ended");
        if self.newest.is_some_and(|newest| id < newest) {
            return Vec::new(); // stale: its checkpoint was abandoned here
        }
        let mut steps = Vec::new();
        match &mut self.pending {
            Some((pending, received)) if *pending == id => {
                assert!(received.insert(channel), "internal: channel {channel} delivered barrier {id} twice");
            }
            Some((pending, _)) => {
                // A newer checkpoint: the one being aligned cannot complete here.
                assert!(*pending < id, "checkpoint invariant: only a newer barrier {id} cancels alignment {pending}");
                crate::cover!(CheckpointCancelledByNewerBarrier);
                steps.push(Alignment::UnblockAll);
                self.pending = Some((id, BTreeSet::from([channel])));
            }
            None if self.newest == Some(id) => {
                panic!("internal: barrier {id} arrived on channel {channel} after its alignment ended")
            }
            None => self.pending = Some((id, BTreeSet::from([channel]))),
        }
        self.newest = Some(id);
        assert!(
            self.pending.as_ref().is_some_and(|(pending, _)| *pending == id),
            "checkpoint invariant: barrier {id} on channel {channel} is the one being aligned"
        );
        match self.aligned() {
            Some(aligned) => steps.push(aligned),
            None => steps.push(Alignment::Block(channel)),
        }
        steps
    }

    /// `channel` delivered its last item.
    pub fn on_channel_end(&mut self, channel: usize) -> Vec<Alignment> {
        let was_open = self.open.remove(&channel);
        assert!(was_open, "checkpoint invariant: input channel {channel} ends once");
        self.aligned().into_iter().collect()
    }

    /// Ends the alignment if every open channel delivered the pending barrier.
    fn aligned(&mut self) -> Option<Alignment> {
        let (id, received) = self.pending.as_ref()?;
        if !self.open.is_subset(received) {
            return None;
        }
        let id = *id;
        assert_eq!(self.newest, Some(id), "checkpoint invariant: only the newest barrier seen aligns");
        self.pending = None;
        Some(Alignment::Aligned(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_checkpoint_aligns_when_every_open_channel_delivered_its_barrier() {
        let mut aligner = BarrierAligner::new(3);
        assert_eq!(aligner.on_barrier(1, 5), vec![Alignment::Block(1)]);
        assert!(aligner.is_aligning());
        assert_eq!(aligner.on_barrier(0, 5), vec![Alignment::Block(0)]);
        assert_eq!(aligner.on_barrier(2, 5), vec![Alignment::Aligned(5)]);
        assert!(!aligner.is_aligning());
        // The next checkpoint aligns on its own.
        assert_eq!(aligner.on_barrier(2, 6), vec![Alignment::Block(2)]);
    }

    #[test]
    fn an_ended_channel_counts_as_aligned() {
        let mut aligner = BarrierAligner::new(2);
        assert_eq!(aligner.on_barrier(0, 1), vec![Alignment::Block(0)]);
        assert_eq!(aligner.on_channel_end(1), vec![Alignment::Aligned(1)]);
        // With one channel left, each barrier aligns at once.
        assert_eq!(aligner.on_barrier(0, 2), vec![Alignment::Aligned(2)]);
        assert_eq!(aligner.on_channel_end(0), vec![]);
    }

    #[test]
    fn a_newer_barrier_abandons_the_older_alignment_and_stale_barriers_are_ignored() {
        let mut aligner = BarrierAligner::new(2);
        assert_eq!(aligner.on_barrier(0, 3), vec![Alignment::Block(0)]);
        // Channel 1's source never got trigger 3; its next barrier is 4.
        assert_eq!(aligner.on_barrier(1, 4), vec![Alignment::UnblockAll, Alignment::Block(1)]);
        assert_eq!(aligner.on_barrier(0, 4), vec![Alignment::Aligned(4)]);
        assert_eq!(aligner.on_barrier(1, 3), vec![], "a stale barrier");
    }

    #[test]
    #[should_panic(expected = "delivered barrier 2 twice")]
    fn a_blocked_channel_cannot_deliver_the_same_barrier_again() {
        let mut aligner = BarrierAligner::new(2);
        aligner.on_barrier(0, 2);
        aligner.on_barrier(0, 2);
    }
}
