//! [`StatusWatermarkValve`]: a task's event time is the minimum of its input channels'
//! watermarks (Flink's `StatusWatermarkValve`, without idleness).
//!
//! Each channel's watermark only rises (a lower one is ignored); a channel that ended counts
//! as [`Watermark::MAX`], since nothing more comes from it. The valve lets a watermark through
//! only when the minimum over channels rose past what it let through before.

use super::Watermark;

/// See the module doc.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusWatermarkValve {
    channels: Vec<Watermark>,
    emitted: Watermark,
}

impl StatusWatermarkValve {
    /// A valve over `channels` input channels, none heard from yet.
    pub fn new(channels: usize) -> StatusWatermarkValve {
        assert!(channels > 0, "internal: a watermark valve needs at least one input channel");
        StatusWatermarkValve { channels: vec![Watermark::MIN; channels], emitted: Watermark::MIN }
    }

    /// Channel `channel` delivered `watermark`; returns the task's new event time, if it rose.
    pub fn input_watermark(&mut self, channel: usize, watermark: Watermark) -> Option<Watermark> {
        let current = self
            .channels
            .get_mut(channel)
            .unwrap_or_else(|| panic!("internal: a watermark from channel {channel} of a valve over fewer"));
        *current = (*current).max(watermark);
        let minimum = *self.channels.iter().min().expect("at least one channel");
        (minimum > self.emitted).then(|| {
            self.emitted = minimum;
            minimum
        })
    }

    /// Channel `channel` ended: it holds nothing back any more.
    pub fn channel_ended(&mut self, channel: usize) -> Option<Watermark> {
        self.input_watermark(channel, Watermark::MAX)
    }

    /// The event time let through so far.
    pub fn current(&self) -> Watermark {
        self.emitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_time_is_the_slowest_channels_and_never_goes_back() {
        let mut valve = StatusWatermarkValve::new(3);
        assert_eq!(valve.input_watermark(0, Watermark(10)), None, "channels 1 and 2 hold it back");
        assert_eq!(valve.input_watermark(1, Watermark(20)), None);
        assert_eq!(valve.input_watermark(2, Watermark(5)), Some(Watermark(5)));
        assert_eq!(valve.input_watermark(2, Watermark(3)), None, "a channel's watermark never falls");
        assert_eq!(valve.input_watermark(2, Watermark(30)), Some(Watermark(10)));
        assert_eq!(valve.input_watermark(0, Watermark(15)), Some(Watermark(15)));
        assert_eq!(valve.current(), Watermark(15));
    }

    #[test]
    fn an_ended_channel_holds_nothing_back_and_all_ended_means_the_end_of_time() {
        let mut valve = StatusWatermarkValve::new(2);
        assert_eq!(valve.channel_ended(0), None, "channel 1 has said nothing yet");
        assert_eq!(valve.input_watermark(1, Watermark(7)), Some(Watermark(7)));
        assert_eq!(valve.channel_ended(1), Some(Watermark::MAX));
        assert_eq!(valve.input_watermark(1, Watermark(8)), None);
    }
}
