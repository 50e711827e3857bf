//! Event-time windows and the assigners that put a timestamp into them (Flink's `TimeWindow`,
//! `TumblingEventTimeWindows`, `SlidingEventTimeWindows`, `EventTimeSessionWindows`).
//!
//! A window is `[start, end)`; starts are aligned to epoch 0 plus an offset, negative timestamps
//! included (−3156 is in `[-4000, -3000)` for one-second windows). A window fires once the
//! watermark reaches its last timestamp, `end − 1`; an element is late for a window that fired.

use super::{Timestamp, Watermark};

/// `[start, end)` in event time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeWindow {
    /// First timestamp in the window.
    pub start: Timestamp,
    /// First timestamp after it.
    pub end: Timestamp,
}

impl TimeWindow {
    /// The last timestamp in the window (`end − 1`): its timer's time.
    pub fn max_timestamp(&self) -> Timestamp {
        self.end - 1
    }

    /// True once `watermark` reached the window's last timestamp: it fires (or fired), and an
    /// element for it is late.
    pub fn is_complete(&self, watermark: Watermark) -> bool {
        self.max_timestamp() <= watermark.0
    }

    /// True if the two windows overlap or touch (Flink's `TimeWindow.intersects`: a session
    /// ending where another starts is one session).
    pub fn intersects(&self, other: &TimeWindow) -> bool {
        self.start <= other.end && self.end >= other.start
    }

    /// The smallest window covering both.
    pub fn cover(&self, other: &TimeWindow) -> TimeWindow {
        TimeWindow { start: self.start.min(other.start), end: self.end.max(other.end) }
    }
}

/// What adding `window` to a key's sessions does (Flink's `MergingWindowSet.addWindow`): the
/// session it becomes, and the sessions (of `sessions`, which do not intersect one another) it
/// swallows. A pure decision; the window operator moves accumulators and timers accordingly.
pub fn merge_session(
    sessions: impl IntoIterator<Item = TimeWindow>,
    window: TimeWindow,
) -> (TimeWindow, Vec<TimeWindow>) {
    let swallowed: Vec<TimeWindow> = sessions.into_iter().filter(|session| session.intersects(&window)).collect();
    let merged = swallowed.iter().fold(window, |merged, session| merged.cover(session));
    (merged, swallowed)
}

/// The start of the window of length `slide`, shifted by `offset`, that holds `timestamp`
/// (Flink's `TimeWindow.getWindowStartWithOffset`).
fn window_start(timestamp: Timestamp, offset: i64, slide: i64) -> Timestamp {
    timestamp - (timestamp - offset).rem_euclid(slide)
}

/// Puts an element's timestamp into windows (Flink's `WindowAssigner`).
pub trait WindowAssigner: Send + Sync {
    /// The windows `timestamp` belongs to, newest start first.
    fn assign(&self, timestamp: Timestamp) -> Vec<TimeWindow>;

    /// True if an element's window merges with the key's windows it intersects (Flink's
    /// `MergingWindowAssigner`): the window operator then needs a merge of accumulators.
    fn is_merging(&self) -> bool {
        false
    }
}

fn check(size: i64, slide: i64, offset: i64) -> Result<(), String> {
    if size <= 0 || slide <= 0 {
        return Err(format!("a window's size and slide must be positive, not {size} ms and {slide} ms"));
    }
    if offset.unsigned_abs() >= slide.unsigned_abs() {
        return Err(format!("a window's offset must be smaller than its slide: {offset} ms, slide {slide} ms"));
    }
    Ok(())
}

/// Windows of `size` milliseconds, one after the other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TumblingEventTimeWindows {
    size: i64,
    offset: i64,
}

impl TumblingEventTimeWindows {
    /// Windows of `size` ms starting at multiples of `size` (plus `offset`, `|offset| < size`).
    pub fn of(size: i64, offset: i64) -> Result<TumblingEventTimeWindows, String> {
        check(size, size, offset)?;
        Ok(TumblingEventTimeWindows { size, offset })
    }
}

impl WindowAssigner for TumblingEventTimeWindows {
    fn assign(&self, timestamp: Timestamp) -> Vec<TimeWindow> {
        let start = window_start(timestamp, self.offset, self.size);
        vec![TimeWindow { start, end: start + self.size }]
    }
}

/// Windows of `size` milliseconds starting every `slide`: each timestamp is in `size / slide`
/// of them (rounded up).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlidingEventTimeWindows {
    size: i64,
    slide: i64,
    offset: i64,
}

impl SlidingEventTimeWindows {
    /// Windows of `size` ms every `slide` ms (plus `offset`, `|offset| < slide`).
    pub fn of(size: i64, slide: i64, offset: i64) -> Result<SlidingEventTimeWindows, String> {
        check(size, slide, offset)?;
        Ok(SlidingEventTimeWindows { size, slide, offset })
    }
}

impl WindowAssigner for SlidingEventTimeWindows {
    fn assign(&self, timestamp: Timestamp) -> Vec<TimeWindow> {
        let mut windows = Vec::new();
        let mut start = window_start(timestamp, self.offset, self.slide);
        while start > timestamp - self.size {
            windows.push(TimeWindow { start, end: start + self.size });
            start -= self.slide;
        }
        windows
    }
}

/// Sessions: an element opens `[t, t + gap)`, and windows that intersect merge, so a session
/// ends `gap` after its last element (Flink's `EventTimeSessionWindows.withGap`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventTimeSessionWindows {
    gap: i64,
}

impl EventTimeSessionWindows {
    /// Sessions that close after `gap` ms without an element.
    pub fn with_gap(gap: i64) -> Result<EventTimeSessionWindows, String> {
        if gap <= 0 {
            return Err(format!("a session window's gap must be positive, not {gap} ms"));
        }
        Ok(EventTimeSessionWindows { gap })
    }
}

impl WindowAssigner for EventTimeSessionWindows {
    fn assign(&self, timestamp: Timestamp) -> Vec<TimeWindow> {
        vec![TimeWindow { start: timestamp, end: timestamp.saturating_add(self.gap) }]
    }

    fn is_merging(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start: Timestamp, end: Timestamp) -> TimeWindow {
        TimeWindow { start, end }
    }

    #[test]
    fn tumbling_windows_align_to_epoch_zero_negative_timestamps_included() {
        let second = TumblingEventTimeWindows::of(1_000, 0).unwrap();
        assert_eq!(second.assign(-3_156), vec![window(-4_000, -3_000)]);
        assert_eq!(second.assign(-1), vec![window(-1_000, 0)]);
        assert_eq!(second.assign(0), vec![window(0, 1_000)]);
        assert_eq!(second.assign(999), vec![window(0, 1_000)], "the end is exclusive");
        assert_eq!(second.assign(1_000), vec![window(1_000, 2_000)]);
        let shifted = TumblingEventTimeWindows::of(1_000, 250).unwrap();
        assert_eq!(shifted.assign(100), vec![window(-750, 250)]);
    }

    #[test]
    fn a_sliding_window_holds_each_timestamp_in_size_over_slide_windows() {
        let sliding = SlidingEventTimeWindows::of(3_000, 1_000, 0).unwrap();
        assert_eq!(sliding.assign(2_500), vec![window(2_000, 5_000), window(1_000, 4_000), window(0, 3_000)]);
        assert_eq!(sliding.assign(-1), vec![window(-1_000, 2_000), window(-2_000, 1_000), window(-3_000, 0)]);
        let uneven = SlidingEventTimeWindows::of(2_500, 1_000, 0).unwrap();
        assert_eq!(uneven.assign(2_400), vec![window(2_000, 4_500), window(1_000, 3_500), window(0, 2_500)]);
        assert_eq!(uneven.assign(2_600).len(), 2, "[600, 3100) would start off the slide grid");
        for timestamp in -5_000..5_000 {
            for assigned in sliding.assign(timestamp) {
                assert!(assigned.start <= timestamp && timestamp < assigned.end, "{timestamp} in {assigned:?}");
            }
        }
    }

    #[test]
    fn a_window_is_complete_once_the_watermark_reaches_its_last_timestamp() {
        let first = window(0, 1_000);
        assert_eq!(first.max_timestamp(), 999);
        assert!(!first.is_complete(Watermark(998)));
        assert!(first.is_complete(Watermark(999)));
        assert!(first.is_complete(Watermark::MAX));
        assert!(!first.is_complete(Watermark::MIN));
    }

    #[test]
    fn bad_sizes_and_offsets_are_errors_that_say_why() {
        assert!(TumblingEventTimeWindows::of(0, 0).unwrap_err().contains("positive"));
        assert!(SlidingEventTimeWindows::of(1_000, -5, 0).unwrap_err().contains("positive"));
        assert!(TumblingEventTimeWindows::of(1_000, 1_000).unwrap_err().contains("offset"));
        assert!(SlidingEventTimeWindows::of(1_000, 100, -100).unwrap_err().contains("offset"));
    }

    #[test]
    fn a_window_merges_with_the_sessions_it_overlaps_or_touches_and_no_others() {
        let sessions = [window(0, 10), window(20, 30), window(50, 60)];
        assert_eq!(merge_session(sessions, window(70, 80)), (window(70, 80), vec![]), "apart from all");
        assert_eq!(merge_session(sessions, window(60, 70)), (window(50, 70), vec![window(50, 60)]), "touching");
        assert_eq!(
            merge_session(sessions, window(5, 25)),
            (window(0, 30), vec![window(0, 10), window(20, 30)]),
            "bridging two sessions makes one"
        );
        assert_eq!(merge_session(sessions, window(22, 24)), (window(20, 30), vec![window(20, 30)]), "inside one");
        let gap = EventTimeSessionWindows::with_gap(10).unwrap();
        assert!(gap.is_merging());
        assert_eq!(gap.assign(-5), vec![window(-5, 5)]);
        assert!(EventTimeSessionWindows::with_gap(0).unwrap_err().contains("positive"));
    }
}
