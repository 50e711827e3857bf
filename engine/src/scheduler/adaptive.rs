//! The adaptive batch scheduler's decider (Flink's `DefaultVertexParallelismAndInputInfosDecider`):
//! a vertex's parallelism, and each subtask's range of subpartitions (key groups), from the bytes
//! its inputs produced.
//!
//! "Evenly distribute data": walk the key groups in order and cut a range whenever the next key
//! group would push it over the target bytes per task, so every subtask reads about the same
//! amount, skew permitting. If that gives a parallelism outside `[min, max]`, fall back to
//! "evenly distribute subpartitions": `ceil(total / target)` clamped to `[min, max]`, with ranges
//! of equal size.

use std::ops::Range;

use serde::{Deserialize, Serialize};

/// Tuning of runtime parallelism decisions (Flink's `execution.batch.adaptive.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdaptiveBatchConfig {
    /// Bytes of input one subtask should read (Flink's `avg-data-volume-per-task`).
    #[serde(default = "default_target")]
    pub target_bytes_per_task: u64,
    /// Least parallelism decided.
    #[serde(default = "default_min")]
    pub min_parallelism: u32,
    /// Most parallelism decided.
    #[serde(default = "default_max")]
    pub max_parallelism: u32,
}

fn default_target() -> u64 {
    64 * 1024
}
fn default_min() -> u32 {
    1
}
fn default_max() -> u32 {
    8
}

impl Default for AdaptiveBatchConfig {
    fn default() -> Self {
        AdaptiveBatchConfig {
            target_bytes_per_task: default_target(),
            min_parallelism: default_min(),
            max_parallelism: default_max(),
        }
    }
}

/// What was decided for a vertex.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParallelismDecision {
    /// Each subtask's subpartitions; the parallelism is their number.
    pub ranges: Vec<Range<u32>>,
    /// The bytes the decision was made from.
    pub input_bytes: u64,
}

impl ParallelismDecision {
    /// The decided parallelism.
    pub fn parallelism(&self) -> u32 {
        self.ranges.len() as u32
    }
}

/// Decides from the bytes of each subpartition, summed over every producer of every input; see
/// the module doc.
pub fn decide(bytes_per_subpartition: &[u64], config: &AdaptiveBatchConfig) -> ParallelismDecision {
    let subpartitions = bytes_per_subpartition.len() as u32;
    assert!(subpartitions > 0, "internal: a vertex decided at runtime reads at least one subpartition");
    let input_bytes: u64 = bytes_per_subpartition.iter().sum();
    let lowest = config.min_parallelism.clamp(1, subpartitions);
    let highest = config.max_parallelism.clamp(lowest, subpartitions);
    let by_data = ranges_by_data(bytes_per_subpartition, config.target_bytes_per_task.max(1));
    let ranges = if (lowest..=highest).contains(&(by_data.len() as u32)) {
        by_data
    } else {
        let wanted =
            input_bytes.div_ceil(config.target_bytes_per_task.max(1)).clamp(u64::from(lowest), u64::from(highest));
        even_ranges(subpartitions, wanted as u32)
    };
    check_ranges(&ranges, subpartitions, lowest..=highest);
    ParallelismDecision { ranges, input_bytes }
}

/// What a decision guarantees the execution graph: a parallelism within the bounds, and
/// non-empty contiguous ranges that cover every subpartition.
fn check_ranges(ranges: &[Range<u32>], subpartitions: u32, bounds: std::ops::RangeInclusive<u32>) {
    assert!(
        bounds.contains(&(ranges.len() as u32)),
        "scheduler invariant: a decided parallelism of {} is within {bounds:?}",
        ranges.len()
    );
    assert_eq!(ranges.first().map(|range| range.start), Some(0), "scheduler invariant: decided ranges start at 0");
    assert_eq!(
        ranges.last().map(|range| range.end),
        Some(subpartitions),
        "scheduler invariant: decided ranges cover all {subpartitions} subpartitions"
    );
    for range in ranges {
        assert!(range.start < range.end, "scheduler invariant: every subtask reads a subpartition ({range:?})");
    }
    for pair in ranges.windows(2) {
        assert_eq!(pair[0].end, pair[1].start, "scheduler invariant: decided ranges are contiguous ({pair:?})");
    }
}

fn ranges_by_data(bytes: &[u64], target: u64) -> Vec<Range<u32>> {
    let mut ranges = Vec::new();
    let (mut start, mut filled) = (0u32, 0u64);
    for (index, size) in bytes.iter().enumerate() {
        let index = index as u32;
        if index > start && filled + size > target {
            ranges.push(start..index);
            start = index;
            filled = 0;
        }
        filled += size;
    }
    ranges.push(start..bytes.len() as u32);
    ranges
}

/// `parallelism` contiguous ranges of (almost) equal size covering `0..subpartitions`.
pub fn even_ranges(subpartitions: u32, parallelism: u32) -> Vec<Range<u32>> {
    let (total, parts) = (u64::from(subpartitions), u64::from(parallelism.max(1)));
    (0..parts).map(|index| (index * total / parts) as u32..((index + 1) * total / parts) as u32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(target: u64, min: u32, max: u32) -> AdaptiveBatchConfig {
        AdaptiveBatchConfig { target_bytes_per_task: target, min_parallelism: min, max_parallelism: max }
    }

    #[test]
    fn even_data_is_cut_into_ranges_of_about_the_target() {
        let decision = decide(&[10; 8], &config(20, 1, 8));
        assert_eq!(decision.ranges, vec![0..2, 2..4, 4..6, 6..8]);
        assert_eq!(decision.parallelism(), 4);
        assert_eq!(decision.input_bytes, 80);
    }

    #[test]
    fn skewed_data_gets_a_range_of_its_own() {
        let decision = decide(&[1, 1, 50, 1, 1, 1], &config(10, 1, 8));
        assert_eq!(decision.ranges, vec![0..2, 2..3, 3..6]);
    }

    #[test]
    fn little_data_gets_the_minimum_and_much_data_the_maximum() {
        assert_eq!(decide(&[0; 128], &config(1000, 1, 8)).ranges, vec![0..128]);
        assert_eq!(decide(&[1; 128], &config(1000, 2, 8)).ranges, vec![0..64, 64..128]);
        let many = decide(&[100; 128], &config(10, 1, 4));
        assert_eq!(many.ranges, even_ranges(128, 4));
        assert_eq!(many.parallelism(), 4);
    }

    #[test]
    fn parallelism_never_exceeds_the_subpartitions() {
        let decision = decide(&[1000; 3], &config(1, 1, 8));
        assert_eq!(decision.ranges, vec![0..1, 1..2, 2..3]);
    }
}
