//! What the API's unit tests share: an operator output that keeps what it is given.

use crate::graph::operator::Output;
use crate::record::Element;
use crate::time::{Timestamp, Watermark};

/// Keeps every element an operator emits, timestamps and watermarks dropped.
pub(crate) struct Collected(pub(crate) Vec<Element>);

impl Output for Collected {
    fn collect(&mut self, element: Element) {
        self.0.push(element);
    }
    fn collect_with_timestamp(&mut self, element: Element, _: Option<Timestamp>) {
        self.0.push(element);
    }
    fn current_timestamp(&self) -> Option<Timestamp> {
        None
    }
    fn emit_watermark(&mut self, _: Watermark) {}
}

impl Collected {
    /// What was emitted since the last take, as `T`s in order.
    pub(crate) fn take<T: 'static>(&mut self) -> Vec<T> {
        std::mem::take(&mut self.0).into_iter().map(|element| *element.downcast::<T>().unwrap()).collect()
    }
}

/// Keeps every element with its timestamp, and the watermarks.
#[derive(Default)]
pub(crate) struct Stamped {
    pub(crate) out: Vec<(Element, Option<Timestamp>)>,
    pub(crate) watermarks: Vec<Watermark>,
}

impl Output for Stamped {
    fn collect(&mut self, element: Element) {
        self.out.push((element, None));
    }
    fn collect_with_timestamp(&mut self, element: Element, timestamp: Option<Timestamp>) {
        self.out.push((element, timestamp));
    }
    fn current_timestamp(&self) -> Option<Timestamp> {
        None
    }
    fn emit_watermark(&mut self, watermark: Watermark) {
        self.watermarks.push(watermark);
    }
}

impl Stamped {
    /// What was emitted since the last take, as `T`s with their timestamps, in order.
    pub(crate) fn take<T: 'static>(&mut self) -> Vec<(T, Option<Timestamp>)> {
        let out = std::mem::take(&mut self.out);
        out.into_iter().map(|(element, timestamp)| (*element.downcast::<T>().unwrap(), timestamp)).collect()
    }
}
