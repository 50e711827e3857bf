//! Event time: timestamps, watermarks, how sources generate watermarks, how a task combines the
//! watermarks of its input channels, and event-time windows.
//!
//! Owns the rules of event time, written to match Flink's (the appendix of the Flink reference
//! notes, checked against Flink 2.3): a watermark `w` says that no element with a timestamp
//! `<= w` is still to come; a bounded-out-of-orderness generator emits `max seen − D − 1`, so an
//! element lagging the newest by exactly `D` is still on time; windows are `[start, end)`
//! aligned to epoch 0 and fire once the watermark reaches `end − 1`.
//!
//! Must never: read a clock (event time comes only from records, so a run replays from its
//! seed; Flink's periodic wall-clock emission is replaced by emission after the records that
//! raised it), or let a watermark go backwards.

mod splits;
mod valve;
mod window;

pub use splits::SplitWatermarks;
pub use valve::StatusWatermarkValve;
pub use window::{
    EventTimeSessionWindows, SlidingEventTimeWindows, TimeWindow, TumblingEventTimeWindows, WindowAssigner,
    merge_session,
};

/// An event time: milliseconds since epoch 0, negative allowed (Flink's `long` timestamps).
pub type Timestamp = i64;

/// Event-time progress (Flink's `Watermark`): no element with a timestamp at or below it is
/// still to come.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Watermark(pub Timestamp);

/// Tag of a watermark in an encoded channel event (a checkpoint barrier's is 1).
pub const WATERMARK_TAG: u8 = 2;

impl Watermark {
    /// Before any element: nothing is known.
    pub const MIN: Watermark = Watermark(Timestamp::MIN);
    /// The end of input: every timer and window fires (the only watermark batch mode emits).
    pub const MAX: Watermark = Watermark(Timestamp::MAX);

    /// The watermark as an event on a data channel.
    pub fn encode(&self) -> Vec<u8> {
        let mut bytes = vec![WATERMARK_TAG];
        bytes.extend_from_slice(&self.0.to_be_bytes());
        bytes
    }

    /// Reads a watermark event (its tag included); `None` if the bytes are not one.
    pub fn decode(event: &[u8]) -> Option<Watermark> {
        match event {
            [WATERMARK_TAG, rest @ ..] => rest.try_into().ok().map(|bytes| Watermark(Timestamp::from_be_bytes(bytes))),
            _ => None,
        }
    }
}

/// Generates watermarks from the timestamps a source reads (Flink's `WatermarkGenerator`).
pub trait WatermarkGenerator: Send {
    /// An element with this timestamp was read.
    fn on_event(&mut self, timestamp: Timestamp);

    /// The watermark the elements so far justify; never lower than an earlier answer.
    fn current_watermark(&self) -> Watermark;
}

/// Flink's `BoundedOutOfOrdernessWatermarks`: elements arrive at most `bound` milliseconds after
/// a newer one; the watermark is the newest timestamp seen minus `bound` minus 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BoundedOutOfOrderness {
    bound: i64,
    max_timestamp: Option<Timestamp>,
}

impl BoundedOutOfOrderness {
    /// A generator for elements at most `bound` milliseconds out of order; an error if `bound`
    /// is negative.
    pub fn new(bound: i64) -> Result<BoundedOutOfOrderness, String> {
        if bound < 0 {
            return Err(format!("the out-of-orderness bound must not be negative, not {bound} ms"));
        }
        Ok(BoundedOutOfOrderness { bound, max_timestamp: None })
    }
}

impl WatermarkGenerator for BoundedOutOfOrderness {
    fn on_event(&mut self, timestamp: Timestamp) {
        self.max_timestamp = Some(self.max_timestamp.map_or(timestamp, |max| max.max(timestamp)));
    }

    fn current_watermark(&self) -> Watermark {
        self.max_timestamp.map_or(Watermark::MIN, |max| Watermark(max.saturating_sub(self.bound).saturating_sub(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_trails_the_newest_timestamp_by_the_bound_plus_one() {
        let mut generator = BoundedOutOfOrderness::new(100).unwrap();
        assert_eq!(generator.current_watermark(), Watermark::MIN, "nothing read, nothing known");
        generator.on_event(1_000);
        assert_eq!(generator.current_watermark(), Watermark(899));
        // An element lagging the newest by exactly the bound is still on time: 900 > 899.
        generator.on_event(900);
        assert_eq!(generator.current_watermark(), Watermark(899), "an older element never lowers it");
        generator.on_event(1_500);
        assert_eq!(generator.current_watermark(), Watermark(1_399));
    }

    #[test]
    fn a_watermark_event_round_trips_and_nothing_else_reads_as_one() {
        for watermark in [Watermark::MIN, Watermark(-1), Watermark(1_234), Watermark::MAX] {
            assert_eq!(Watermark::decode(&watermark.encode()), Some(watermark));
        }
        assert_eq!(Watermark::decode(&[WATERMARK_TAG, 1, 2]), None, "truncated");
        assert_eq!(Watermark::decode(&[1, 0, 0, 0, 0, 0, 0, 0, 0]), None, "a barrier's tag");
        assert_eq!(Watermark::decode(&[]), None);
    }

    #[test]
    fn extreme_timestamps_saturate_instead_of_wrapping() {
        let mut generator = BoundedOutOfOrderness::new(5).unwrap();
        generator.on_event(Timestamp::MIN);
        assert_eq!(generator.current_watermark(), Watermark::MIN);
        generator.on_event(Timestamp::MAX);
        assert_eq!(generator.current_watermark(), Watermark(Timestamp::MAX - 6));
        assert!(BoundedOutOfOrderness::new(-1).unwrap_err().contains("-1"));
    }
}
