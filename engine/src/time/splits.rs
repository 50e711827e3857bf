//! Per-split watermarks of one source reader (Flink's FLIP-27 split-local outputs, combined by
//! its `WatermarkOutputMultiplexer`).
//!
//! A reader that reads several splits (log partitions, files) in turn reads each in event-time
//! order, but not the splits in step: one fetch may take a partition seconds ahead of the next.
//! A single generator over the reader's stream would then call the other partition's records
//! late. Each split gets its own generator instead, and the reader's watermark is the minimum
//! over the splits it still has to read: a split assigned but not yet read holds it back, a
//! finished split no longer does.

use std::collections::BTreeMap;

use super::{Timestamp, Watermark, WatermarkGenerator};

/// A reader's splits' generators and the watermark they justify together.
#[derive(Clone, Debug)]
pub struct SplitWatermarks<G> {
    template: G,
    splits: BTreeMap<u32, G>,
    emitted: Watermark,
}

impl<G: WatermarkGenerator + Clone> SplitWatermarks<G> {
    /// Generators cloned from `template`, one per split, as splits appear.
    pub fn new(template: G) -> SplitWatermarks<G> {
        SplitWatermarks { template, splits: BTreeMap::new(), emitted: Watermark::MIN }
    }

    /// Records of `split` with these timestamps were read.
    pub fn on_events(&mut self, split: u32, timestamps: impl IntoIterator<Item = Timestamp>) {
        let generator = self.splits.entry(split).or_insert_with(|| self.template.clone());
        for timestamp in timestamps {
            generator.on_event(timestamp);
        }
    }

    /// The splits the reader still has to read: the others are finished and stop holding the
    /// watermark back; one not seen yet holds it at its start until it is read.
    pub fn retain(&mut self, unfinished: &[u32]) {
        self.splits.retain(|split, _| unfinished.contains(split));
        for split in unfinished {
            self.splits.entry(*split).or_insert_with(|| self.template.clone());
        }
    }

    /// The reader's watermark: the minimum over its unfinished splits, never lower than an
    /// earlier answer (and kept once every split finished, until the end of input says more).
    pub fn current_watermark(&mut self) -> Watermark {
        if let Some(lowest) = self.splits.values().map(WatermarkGenerator::current_watermark).min() {
            self.emitted = self.emitted.max(lowest);
        }
        self.emitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::BoundedOutOfOrderness;

    fn watermarks() -> SplitWatermarks<BoundedOutOfOrderness> {
        SplitWatermarks::new(BoundedOutOfOrderness::new(0).unwrap())
    }

    #[test]
    fn one_split_read_ahead_does_not_make_the_other_late() {
        let mut splits = watermarks();
        splits.retain(&[0, 2]);
        splits.on_events(0, [1_000, 5_000, 20_000]);
        assert_eq!(splits.current_watermark(), Watermark::MIN, "split 2, not read yet, holds it back");
        splits.on_events(2, [1_500, 4_000]);
        assert_eq!(splits.current_watermark(), Watermark(3_999), "the slower split's watermark");
        splits.on_events(2, [21_000]);
        assert_eq!(splits.current_watermark(), Watermark(19_999));
    }

    #[test]
    fn a_finished_split_stops_holding_the_watermark_back() {
        let mut splits = watermarks();
        splits.retain(&[0, 1]);
        splits.on_events(0, [10_000]);
        splits.on_events(1, [2_000]);
        assert_eq!(splits.current_watermark(), Watermark(1_999));
        splits.retain(&[0]);
        assert_eq!(splits.current_watermark(), Watermark(9_999));
    }

    #[test]
    fn the_watermark_never_goes_back_when_a_split_appears_or_all_finish() {
        let mut splits = watermarks();
        splits.on_events(0, [10_000]);
        assert_eq!(splits.current_watermark(), Watermark(9_999));
        splits.retain(&[0, 7]);
        assert_eq!(splits.current_watermark(), Watermark(9_999), "a new split cannot take back what was said");
        splits.retain(&[]);
        assert_eq!(splits.current_watermark(), Watermark(9_999), "kept until the end of input");
    }
}
