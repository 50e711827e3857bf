//! Partitioners: which downstream channel a record goes to (Flink's `StreamPartitioner`s).
//!
//! Every choice is a function of the record and the producer's own counters: there is no random
//! start channel (Flink's `RebalancePartitioner` draws one) so that a seed replays.
//!
//! In batch mode REBALANCE and RESCALE choose by a hash of the record's encoded bytes instead of
//! round robin ([`ChannelSelector::choosing_by_content`]). A task whose input merges several
//! channels sees them interleaved differently on every attempt; round robin would then send a
//! record to another consumer when the task runs again after a failover, while consumers that
//! finished (a sink whose end-of-input transaction is committed) keep what the first attempt sent
//! them: records lost and duplicated. By content, every attempt sends every record where the
//! first did (SPARK-23207 is the same bug, fixed there by sorting before the round robin). The
//! price: identical records all go to one consumer.

use std::fmt;

use crate::prng::fnv1a64;
use crate::record::KeySelector;

/// How records of an edge are distributed over the consumer's subtasks.
#[derive(Clone)]
pub enum Partitioner {
    /// Subtask `i` feeds subtask `i`; parallelism must be equal (POINTWISE).
    Forward,
    /// Round robin over the consumers this producer is connected to (POINTWISE): producers and
    /// consumers are matched up in contiguous groups when their parallelism differs.
    Rescale,
    /// Round robin over all consumers, starting at the producer's own index (ALL_TO_ALL).
    Rebalance,
    /// By key group of the selected key (ALL_TO_ALL), Flink's `KeyGroupStreamPartitioner`.
    Hash(KeySelector),
    /// Every record to every consumer (ALL_TO_ALL).
    Broadcast,
}

impl Partitioner {
    /// Flink's name for the partitioner, as plans print it.
    pub fn name(&self) -> &'static str {
        match self {
            Partitioner::Forward => "FORWARD",
            Partitioner::Rescale => "RESCALE",
            Partitioner::Rebalance => "REBALANCE",
            Partitioner::Hash(_) => "HASH",
            Partitioner::Broadcast => "BROADCAST",
        }
    }

    /// POINTWISE partitioners connect a producer to a fixed subset of consumers.
    pub fn is_pointwise(&self) -> bool {
        matches!(self, Partitioner::Forward | Partitioner::Rescale)
    }
}

impl fmt::Debug for Partitioner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Flink's default max parallelism: `min(max(roundUpPow2(1.5 p), 128), 32768)`.
pub fn default_max_parallelism(parallelism: u32) -> u32 {
    let scaled = u64::from(parallelism) + u64::from(parallelism) / 2;
    let rounded = scaled.max(1).next_power_of_two();
    rounded.clamp(128, 32768) as u32
}

/// The key group of an encoded key: a stable hash of its bytes, scrambled, modulo max parallelism.
pub fn key_group_of(key_bytes: &[u8], max_parallelism: u32) -> u32 {
    assert!(max_parallelism > 0, "max parallelism must be positive");
    (fmix64(fnv1a64(key_bytes)) % u64::from(max_parallelism)) as u32
}

/// The subtask that owns a key group: `key_group * parallelism / max_parallelism`.
pub fn subtask_for_key_group(key_group: u32, parallelism: u32, max_parallelism: u32) -> u32 {
    assert!(key_group < max_parallelism, "key group {key_group} out of range {max_parallelism}");
    (u64::from(key_group) * u64::from(parallelism) / u64::from(max_parallelism)) as u32
}

/// Murmur3's 64-bit finalizer: spreads the bits of a hash.
fn fmix64(mut hash: u64) -> u64 {
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// The per-producer channel chooser of one output edge.
pub struct ChannelSelector {
    partitioner: Partitioner,
    channels: u32,
    max_parallelism: u32,
    next_round_robin: u32,
    /// REBALANCE and RESCALE hash the record's bytes instead of going round robin.
    by_content: bool,
    /// The current element's encoded key, its buffer reused.
    key: Vec<u8>,
}

/// The channels one record goes to.
#[derive(Debug, PartialEq, Eq)]
pub enum SelectedChannels {
    /// Exactly one channel.
    One(u32),
    /// Every channel.
    All,
}

impl ChannelSelector {
    /// A selector for a producer subtask writing to `channels` subpartitions.
    pub fn new(partitioner: Partitioner, channels: u32, max_parallelism: u32, producer_index: u32) -> ChannelSelector {
        assert!(channels > 0, "an output edge needs at least one channel");
        ChannelSelector {
            partitioner,
            channels,
            max_parallelism,
            next_round_robin: producer_index % channels,
            by_content: false,
            key: Vec::new(),
        }
    }

    /// The same selector, choosing REBALANCE and RESCALE channels by the record's encoded bytes
    /// (batch mode; see the module doc).
    pub fn choosing_by_content(self) -> ChannelSelector {
        ChannelSelector { by_content: true, ..self }
    }

    /// Chooses the channels of one element, whose encoding is `encoded`.
    pub fn select(&mut self, element: &dyn std::any::Any, encoded: &[u8]) -> SelectedChannels {
        match &self.partitioner {
            Partitioner::Forward => SelectedChannels::One(0),
            Partitioner::Broadcast => SelectedChannels::All,
            Partitioner::Rebalance | Partitioner::Rescale if self.by_content => {
                SelectedChannels::One((fmix64(fnv1a64(encoded)) % u64::from(self.channels)) as u32)
            }
            Partitioner::Rebalance | Partitioner::Rescale => {
                let channel = self.next_round_robin;
                self.next_round_robin = (channel + 1) % self.channels;
                SelectedChannels::One(channel)
            }
            // One channel takes every key: no need to extract and hash it.
            Partitioner::Hash(_) if self.channels == 1 => SelectedChannels::One(0),
            Partitioner::Hash(selector) => {
                self.key.clear();
                selector(element, &mut self.key);
                let key_group = key_group_of(&self.key, self.max_parallelism);
                SelectedChannels::One(subtask_for_key_group(key_group, self.channels, self.max_parallelism))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Record, erase_key_encoder, erase_key_selector};

    #[test]
    fn default_max_parallelism_follows_flink() {
        assert_eq!(default_max_parallelism(1), 128);
        assert_eq!(default_max_parallelism(100), 256);
        assert_eq!(default_max_parallelism(30000), 32768);
    }

    #[test]
    fn key_groups_cover_all_subtasks_and_are_stable() {
        let max_parallelism = 128;
        let mut seen = [false; 4];
        for word in 0..200u32 {
            let group = key_group_of(&format!("w{word}").to_bytes(), max_parallelism);
            seen[subtask_for_key_group(group, 4, max_parallelism) as usize] = true;
        }
        assert!(seen.iter().all(|hit| *hit), "hash partitioning left a subtask without keys");
        // A changed hash function would silently move keys (and, later, checkpointed state)
        // between subtasks: pin it.
        let pinned: Vec<u32> =
            ["sluice", "flink", ""].iter().map(|key| key_group_of(&key.to_string().to_bytes(), 128)).collect();
        assert_eq!(pinned, vec![71, 28, 7]);
        assert_eq!(subtask_for_key_group(127, 2, 128), 1);
        assert_eq!(subtask_for_key_group(63, 2, 128), 0);
    }

    #[test]
    fn rebalance_is_round_robin_from_the_producer_index() {
        let mut selector = ChannelSelector::new(Partitioner::Rebalance, 3, 128, 1);
        let picks: Vec<SelectedChannels> = (0..4).map(|_| selector.select(&0u32, &[])).collect();
        assert_eq!(
            picks,
            vec![
                SelectedChannels::One(1),
                SelectedChannels::One(2),
                SelectedChannels::One(0),
                SelectedChannels::One(1)
            ]
        );
    }

    #[test]
    fn by_content_a_record_goes_to_the_same_channel_whatever_came_before_it() {
        let records: Vec<Vec<u8>> = (0..300u64).map(|value| value.to_bytes()).collect();
        let picks = |order: &mut dyn Iterator<Item = &Vec<u8>>| {
            let mut selector = ChannelSelector::new(Partitioner::Rebalance, 3, 128, 1).choosing_by_content();
            let mut picks: Vec<(Vec<u8>, SelectedChannels)> =
                order.map(|record| (record.clone(), selector.select(&(), record))).collect();
            picks.sort_by(|left, right| left.0.cmp(&right.0));
            picks
        };
        let forward = picks(&mut records.iter());
        assert_eq!(forward, picks(&mut records.iter().rev()), "arrival order must not move a record");
        let mut per_channel = [0; 3];
        for (_, pick) in &forward {
            let SelectedChannels::One(channel) = pick else { panic!("one channel") };
            per_channel[*channel as usize] += 1;
        }
        assert!(per_channel.iter().all(|count| *count > 70), "spread over every channel: {per_channel:?}");
    }

    #[test]
    fn hash_sends_equal_keys_to_the_same_channel() {
        let selector_fn = erase_key_selector(|pair: &(String, i64)| pair.0.clone());
        let mut selector = ChannelSelector::new(Partitioner::Hash(selector_fn), 4, 128, 0);
        let first = selector.select(&(String::from("k"), 1i64), &[]);
        let second = selector.select(&(String::from("k"), 2i64), &[]);
        assert_eq!(first, second);
    }

    #[test]
    fn a_lent_key_goes_where_the_same_key_owned_goes() {
        let owned = erase_key_selector(|pair: &(String, i64)| pair.0.clone());
        let lent = erase_key_encoder::<(String, i64)>(std::sync::Arc::new(|pair, out| pair.0.encode(out)));
        let mut owned = ChannelSelector::new(Partitioner::Hash(owned), 5, 128, 0);
        let mut lent = ChannelSelector::new(Partitioner::Hash(lent), 5, 128, 0);
        for key in 0..200 {
            let element = (format!("w{key}"), 1i64);
            assert_eq!(owned.select(&element, &[]), lent.select(&element, &[]), "key w{key}");
        }
    }
}
