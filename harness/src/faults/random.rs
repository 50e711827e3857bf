//! Random fault schedules, swarm style (Groce et al.; TigerBeetle's `options_swarm`).
//!
//! Each seed first decides which kinds are enabled (each with probability one half, at least
//! one), then draws every fault from a stream of its own (`faults/<i>`), so that a schedule of
//! `count - 1` faults is the first `count - 1` faults of the schedule of `count`, and the
//! workload's stream is never touched. Parameters stay within what the engine should survive:
//! killed JobMasters always come back, and a TaskManager stays dead only if the others can
//! still hold the job.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_engine::prng::{Prng, Ratio};

use super::model::{
    CheckpointTrigger, Fault, FaultKind, FinalKeyword, KIND_NAMES, ProtocolStep, TaskStateTrigger, Trigger,
};
use super::share::Share;

/// A scenario's `random_faults`: how many faults, of which kinds, within which window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RandomFaults {
    /// Faults per seed.
    pub count: u32,
    /// The kinds a seed may enable (see `KIND_NAMES`); all but `external-crash` and
    /// `object-loss` if unset.
    #[serde(default = "default_kinds")]
    pub kinds: Vec<String>,
    /// Time-triggered faults fire within this long after submission, timed blind. Unset (the
    /// default), they fire at a share of the same seed's fault-free makespan in each mode, and
    /// checkpoint triggers name a share of its checkpoints, so that they land (see
    /// [`super::relative`]).
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    pub window: Option<Duration>,
}

/// Kinds random schedules leave out unless a scenario lists them: crashing the log or the store
/// tests those systems more than the engine, and nothing a job does reads objects of the durable
/// store other than the JobMaster's metadata (which the fault spares) until checkpoints do.
const NOT_BY_DEFAULT: &[&str] = &["external-crash", "object-loss"];

fn default_kinds() -> Vec<String> {
    KIND_NAMES.iter().filter(|name| !NOT_BY_DEFAULT.contains(name)).map(|name| name.to_string()).collect()
}

/// The latest share of the fault-free makespan a relative time trigger names: a faulted run
/// takes longer than its pilot, seldom shorter by a tenth.
const LATEST_SHARE: u64 = 900;

/// What the generator needs to know about the cluster and the job.
#[derive(Clone, Debug)]
pub struct Topology {
    /// TaskManagers.
    pub task_managers: u32,
    /// Slots each.
    pub slots_per_task_manager: u32,
    /// Slots the job needs at once.
    pub slots_needed: u32,
    /// Job vertices.
    pub vertices: u32,
    /// Blocking partitions live in the shuffle service.
    pub remote_shuffle: bool,
    /// Streaming runs checkpoint (so faults may wait for a checkpoint).
    pub checkpointing: bool,
}

impl RandomFaults {
    /// Checks the kind names.
    pub fn validate(&self) -> Result<(), String> {
        for kind in &self.kinds {
            if !KIND_NAMES.contains(&kind.as_str()) {
                return Err(format!("unknown fault kind `{kind}`; kinds: {}", KIND_NAMES.join(", ")));
            }
        }
        if self.kinds.is_empty() && self.count > 0 {
            return Err("`kinds` lists no kind to draw faults from".to_string());
        }
        Ok(())
    }

    /// The kinds a seed enables: each with probability one half, at least one.
    pub fn enabled_kinds(&self, seed: u64) -> Vec<String> {
        let mut prng = Prng::fork(seed, "faults/swarm");
        let mut enabled: Vec<String> = self.kinds.iter().filter(|_| prng.chance(Ratio::new(1, 2))).cloned().collect();
        if enabled.is_empty() && !self.kinds.is_empty() {
            enabled.push(prng.pick(&self.kinds).clone());
        }
        enabled
    }

    /// The schedule of one seed.
    pub fn generate(&self, seed: u64, topology: &Topology) -> Vec<Fault> {
        let enabled = self.enabled_kinds(seed);
        if enabled.is_empty() {
            return Vec::new();
        }
        let mut permanent_losses = 0;
        (0..self.count)
            .map(|index| {
                let mut prng = Prng::fork(seed, &format!("faults/{index}"));
                let kind_name = prng.pick(&enabled).clone();
                let trigger = self.trigger(&mut prng, topology);
                let kind = draw_kind(&mut prng, &kind_name, topology, &mut permanent_losses);
                Fault { trigger, kind }
            })
            .collect()
    }

    /// One fault of a kind this spec draws (from all its kinds, not a seed's swarm), with
    /// `permanent_losses` TaskManagers already killed for good: what a search inserts.
    pub fn draw_fault(&self, prng: &mut Prng, topology: &Topology, permanent_losses: &mut u32) -> Fault {
        let kind_name = prng.pick(&self.kinds).clone();
        let trigger = self.trigger(prng, topology);
        let kind = draw_kind(prng, &kind_name, topology, permanent_losses);
        Fault { trigger, kind }
    }

    /// A fault of kind `kind_name` (one of [`KIND_NAMES`]) with the given trigger, its node,
    /// duration or count drawn: what a search aims at an unreached cell.
    pub fn draw_fault_of_kind(
        &self,
        kind_name: &str,
        trigger: Trigger,
        prng: &mut Prng,
        topology: &Topology,
        permanent_losses: &mut u32,
    ) -> Fault {
        Fault { trigger, kind: draw_kind(prng, kind_name, topology, permanent_losses) }
    }

    /// A fault of the same kind as `fault` with its node, duration or count drawn again.
    pub fn redraw_kind(
        &self,
        fault: &Fault,
        prng: &mut Prng,
        topology: &Topology,
        permanent_losses: &mut u32,
    ) -> Fault {
        Fault { trigger: fault.trigger.clone(), kind: draw_kind(prng, fault.kind.name(), topology, permanent_losses) }
    }

    /// A trigger as this spec draws them.
    pub fn trigger(&self, prng: &mut Prng, topology: &Topology) -> Trigger {
        match self.window {
            Some(window) => blind_trigger(prng, topology, window),
            None => landing_trigger(prng, topology),
        }
    }
}

/// A trigger relative to the run: seven in ten at a share of the fault-free makespan, two at a
/// task's state, one (with checkpoints) at a share of the checkpoints or of the prepared
/// transactions (which batch runs, taking none, turn into a share of the makespan).
fn landing_trigger(prng: &mut Prng, topology: &Topology) -> Trigger {
    let share = |prng: &mut Prng, latest: u64| {
        Share::from_permille(prng.range_inclusive(0, latest)).expect("internal: a share drawn within the whole")
    };
    match prng.below(10) {
        0..=6 => Trigger::AtShare(share(prng, LATEST_SHARE)),
        7 | 8 => task_trigger(prng, topology),
        _ if topology.checkpointing => match prng.below(2) {
            0 => Trigger::Checkpoint(CheckpointTrigger::Share(share(prng, 1000))),
            _ => Trigger::PreparedShare(share(prng, 1000)),
        },
        _ => Trigger::AtShare(share(prng, LATEST_SHARE)),
    }
}

/// A trigger right after one of the first three occurrences of a protocol step this topology
/// has (checkpoints triggered only where it checkpoints, partitions stored only in a remote
/// shuffle service): what `sluice explore` moves a fault's trigger to.
pub fn step_trigger(prng: &mut Prng, topology: &Topology) -> Trigger {
    let steps: Vec<ProtocolStep> = ProtocolStep::ALL
        .into_iter()
        .filter(|step| match step {
            ProtocolStep::CheckpointTriggered => topology.checkpointing,
            ProtocolStep::PartitionStored => topology.remote_shuffle,
            // Another fault's firing: the mutation `overlap` places it, knowing the schedule.
            ProtocolStep::FaultInjected => false,
            _ => true,
        })
        .collect();
    Trigger::Step { step: *prng.pick(&steps), nth: prng.range_inclusive(1, 3) as u32 }
}

fn task_trigger(prng: &mut Prng, topology: &Topology) -> Trigger {
    Trigger::Task {
        vertex: prng.below(u64::from(topology.vertices.max(1))) as u32,
        subtask: None,
        state: *prng.pick(&[TaskStateTrigger::Deployed, TaskStateTrigger::Running, TaskStateTrigger::Finished]),
    }
}

/// A trigger timed blind, within `window` of the submission, as every schedule was before
/// relative triggers: the baseline they are measured against.
fn blind_trigger(prng: &mut Prng, topology: &Topology, window: Duration) -> Trigger {
    match prng.below(10) {
        0..=6 => Trigger::At(duration_between(prng, Duration::ZERO, window)),
        7 | 8 => task_trigger(prng, topology),
        _ if topology.checkpointing => match prng.below(4) {
            0 => Trigger::Checkpoint(CheckpointTrigger::Id(prng.range_inclusive(1, 4))),
            1 => Trigger::Prepared(prng.range_inclusive(1, 4)),
            2 => Trigger::Checkpoint(CheckpointTrigger::Final(FinalKeyword::Final)),
            _ => Trigger::RecordsCommitted(prng.range_inclusive(1, 1000)),
        },
        _ => Trigger::RecordsCommitted(prng.range_inclusive(1, 1000)),
    }
}

/// TaskManager kills at exponentially distributed intervals of mean `mtbf` (a Poisson process of
/// failures, as Metzger's fine-grained recovery experiment injected them), from the submission
/// up to `horizon`, each of a TaskManager drawn at random and restarted `restart_after` later.
/// Drawn from a stream of its own (`faults/mtbf`), so the same seed kills at the same times
/// whichever failover strategy runs.
pub fn task_manager_kills(
    seed: u64,
    mtbf: Duration,
    horizon: Duration,
    task_managers: u32,
    restart_after: Duration,
) -> Vec<Fault> {
    let mut prng = Prng::fork(seed, "faults/mtbf");
    let mut kills = Vec::new();
    let mut at = Duration::ZERO;
    loop {
        // 53 random bits as a uniform draw in [0, 1), then the inverse of the exponential's CDF.
        let uniform = (prng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        at += mtbf.mul_f64(-(1.0 - uniform).ln());
        if at > horizon || mtbf.is_zero() {
            return kills;
        }
        let node = format!("tm-{}", prng.below(u64::from(task_managers.max(1))));
        // Whole milliseconds keep replay files readable.
        let trigger = Trigger::At(Duration::from_millis(at.as_millis() as u64));
        kills.push(Fault { trigger, kind: FaultKind::Kill { node, restart_after: Some(restart_after) } });
    }
}

fn duration_between(prng: &mut Prng, low: Duration, high: Duration) -> Duration {
    let micros = prng.range_inclusive(low.as_micros() as u64, high.as_micros().max(low.as_micros()) as u64);
    // Whole milliseconds keep replay files readable.
    Duration::from_millis(micros / 1000)
}

fn millis(prng: &mut Prng, low: u64, high: u64) -> Duration {
    Duration::from_millis(prng.range_inclusive(low, high))
}

fn task_manager(prng: &mut Prng, topology: &Topology) -> String {
    format!("tm-{}", prng.below(u64::from(topology.task_managers)))
}

/// A node holding partitions: a TaskManager, or (with remote shuffle, one time in three) the
/// shuffle service.
fn partition_holder(prng: &mut Prng, topology: &Topology) -> String {
    if topology.remote_shuffle && prng.chance(Ratio::new(1, 3)) {
        "shuffle-service".to_string()
    } else {
        task_manager(prng, topology)
    }
}

fn all_nodes(topology: &Topology) -> Vec<String> {
    let mut nodes = vec![
        "jm".to_string(),
        "log".to_string(),
        "txn-store".to_string(),
        "shuffle-service".to_string(),
        "durable-store".to_string(),
    ];
    nodes.extend((0..topology.task_managers).map(|index| format!("tm-{index}")));
    nodes
}

fn draw_kind(prng: &mut Prng, name: &str, topology: &Topology, permanent_losses: &mut u32) -> FaultKind {
    match name {
        "tm-crash" => {
            let node = task_manager(prng, topology);
            // Counted conservatively: the same TaskManager killed twice counts twice.
            let spare = topology.task_managers.saturating_sub(*permanent_losses + 1) * topology.slots_per_task_manager;
            let stays_dead = prng.chance(Ratio::new(1, 5)) && spare >= topology.slots_needed;
            if stays_dead {
                *permanent_losses += 1;
            }
            FaultKind::Kill { node, restart_after: (!stays_dead).then(|| millis(prng, 50, 2000)) }
        }
        "jm-crash" => FaultKind::Kill { node: "jm".to_string(), restart_after: Some(millis(prng, 50, 2000)) },
        "external-crash" => FaultKind::Kill {
            node: prng.pick(&["log".to_string(), "txn-store".to_string()]).clone(),
            restart_after: Some(millis(prng, 50, 1000)),
        },
        "partition" => {
            let mut nodes = all_nodes(topology);
            let first = nodes.remove(prng.below(nodes.len() as u64) as usize);
            let mut second: Vec<String> = nodes.iter().filter(|_| prng.chance(Ratio::new(1, 2))).cloned().collect();
            if second.is_empty() {
                second.push(prng.pick(&nodes).clone());
            }
            FaultKind::Partition {
                sides: [vec![first], second],
                one_way: prng.chance(Ratio::new(3, 10)),
                duration: millis(prng, 100, 2000),
            }
        }
        "packet-loss" => {
            FaultKind::PacketLoss { percent: prng.range_inclusive(1, 30) as u32, duration: millis(prng, 100, 2000) }
        }
        "latency" => {
            let min = millis(prng, 1, 50);
            let max = min + millis(prng, 0, 200);
            FaultKind::Latency { min, max, duration: millis(prng, 100, 2000) }
        }
        "slow-node" => {
            let node = if prng.chance(Ratio::new(1, 5)) { "jm".to_string() } else { task_manager(prng, topology) };
            FaultKind::Slow { node, factor: prng.range_inclusive(2, 10) as u32, duration: millis(prng, 100, 3000) }
        }
        "store-unavailable" => FaultKind::StoreUnavailable { duration: millis(prng, 100, 3000) },
        "commit-fails" => FaultKind::CommitFails { count: prng.range_inclusive(1, 5) as u32 },
        "commit-reply-lost" => FaultKind::CommitReplyLost { count: prng.range_inclusive(1, 3) as u32 },
        "shuffle-service-crash" => {
            FaultKind::Kill { node: "shuffle-service".to_string(), restart_after: Some(millis(prng, 50, 2000)) }
        }
        "durable-store-crash" => {
            FaultKind::Kill { node: "durable-store".to_string(), restart_after: Some(millis(prng, 50, 2000)) }
        }
        "partition-loss" => FaultKind::LosePartition { node: partition_holder(prng, topology) },
        "partition-corruption" => FaultKind::CorruptPartition { node: partition_holder(prng, topology) },
        "disk-loss" => FaultKind::LoseDisk { node: partition_holder(prng, topology) },
        "durable-store-unavailable" => FaultKind::DurableStoreUnavailable { duration: millis(prng, 100, 3000) },
        "object-loss" => FaultKind::LoseNewestObjects { count: prng.range_inclusive(1, 2) as u32 },
        other => panic!("internal: fault kind `{other}` was validated but has no generator"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology() -> Topology {
        Topology {
            task_managers: 3,
            slots_per_task_manager: 2,
            slots_needed: 2,
            vertices: 2,
            remote_shuffle: true,
            checkpointing: true,
        }
    }

    #[test]
    fn kills_come_at_exponential_intervals_of_the_mean_given() {
        let mtbf = Duration::from_millis(100);
        let kills = task_manager_kills(7, mtbf, Duration::from_secs(100), 3, Duration::from_millis(50));
        assert_eq!(kills, task_manager_kills(7, mtbf, Duration::from_secs(100), 3, Duration::from_millis(50)));
        // About 1,000 kills in 100 s at one per 100 ms (a Poisson count: within 10 %).
        assert!((900..=1100).contains(&kills.len()), "{} kills", kills.len());
        let times: Vec<Duration> = kills
            .iter()
            .map(|kill| match kill.trigger {
                Trigger::At(at) => at,
                ref other => panic!("a kill at a time, not {other:?}"),
            })
            .collect();
        assert!(times.windows(2).all(|pair| pair[0] <= pair[1]) && times.last() <= Some(&Duration::from_secs(100)));
        for kill in &kills {
            let FaultKind::Kill { node, restart_after } = &kill.kind else { panic!("{kill:?}") };
            assert!(
                ["tm-0", "tm-1", "tm-2"].contains(&node.as_str()) && *restart_after == Some(Duration::from_millis(50))
            );
        }
        assert!(task_manager_kills(7, Duration::from_secs(10), Duration::from_millis(1), 3, mtbf).len() <= 1);
    }

    fn spec(count: u32) -> RandomFaults {
        RandomFaults { count, kinds: default_kinds(), window: None }
    }

    #[test]
    fn a_schedule_is_a_function_of_the_seed_and_prefixes_are_stable() {
        let ten = spec(10).generate(7, &topology());
        assert_eq!(ten, spec(10).generate(7, &topology()));
        assert_eq!(spec(4).generate(7, &topology()), ten[..4].to_vec());
        assert_ne!(ten, spec(10).generate(8, &topology()));
    }

    #[test]
    fn swarm_enables_a_varying_non_empty_subset_and_draws_only_from_it() {
        let mut subsets = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let enabled = spec(0).enabled_kinds(seed);
            assert!(!enabled.is_empty());
            for fault in spec(8).generate(seed, &topology()) {
                assert!(enabled.iter().any(|name| name == fault.kind.name()), "seed {seed}: {fault}");
            }
            subsets.insert(enabled);
        }
        assert!(subsets.len() > 50, "swarm testing needs varied mixes, got {}", subsets.len());
    }

    #[test]
    fn job_masters_always_return_and_task_managers_stay_dead_only_with_room() {
        let tight = Topology {
            task_managers: 2,
            slots_per_task_manager: 1,
            slots_needed: 2,
            vertices: 2,
            remote_shuffle: false,
            checkpointing: false,
        };
        for seed in 0..300 {
            for fault in spec(6).generate(seed, &tight) {
                if let FaultKind::Kill { restart_after, .. } = fault.kind {
                    assert!(restart_after.is_some(), "seed {seed}: {fault} leaves too few slots");
                }
            }
        }
    }

    #[test]
    fn unknown_kinds_are_rejected() {
        let mut bad = spec(1);
        bad.kinds.push("meteor".to_string());
        assert!(bad.validate().unwrap_err().contains("meteor"));
    }
}
