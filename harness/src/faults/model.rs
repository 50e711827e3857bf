//! [`Fault`] = [`Trigger`] + [`FaultKind`], and their YAML form.
//!
//! ```yaml
//! faults:
//!   - at: 150ms                       # trigger: simulated time after submission
//!     kill: tm-1                      # kind
//!     restart_after: 500ms
//!   - when: { vertex: 1, state: finished }     # trigger: any subtask of v1 (or `subtask: N`)
//!     partition: { between: [[jm], [tm-0, tm-2]], for: 800ms, one_way: false }
//!   - after_committed: 5000           # trigger: rows committed so far
//!     commit_reply_lost: 2
//!   - after_checkpoint: 3             # trigger: checkpoint 3 (or `final`) completed
//!     kill: tm-0
//!   - after_prepared: 4               # trigger: a sink pre-committed for checkpoint 4
//!     kill: tm-1
//!   - when: { vertex: 0, state: finished }
//!     lose_partition: tm-0            # or corrupt_partition, lose_disk; or shuffle-service
//!   - after: reconciling              # trigger: a protocol step (its first occurrence)
//!     kill: tm-0
//!   - after: { step: committed, nth: 3 }   # the third acknowledged commit
//!     kill: txn-store
//! ```

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sluice_engine::counted::counted;
use sluice_engine::cover::Mark;
use sluice_engine::duration::format_duration;

use super::share::Share;

/// One fault: when it fires and what it does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "FaultSpec", into = "FaultSpec")]
pub struct Fault {
    /// When it fires.
    pub trigger: Trigger,
    /// What it does.
    pub kind: FaultKind,
}

/// When a fault fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trigger {
    /// At a simulated time after the job's submission.
    At(Duration),
    /// When a subtask of a vertex (a given one, or any) first reaches a state.
    Task {
        /// The job vertex, by index.
        vertex: u32,
        /// The subtask, or any.
        subtask: Option<u32>,
        /// The state.
        state: TaskStateTrigger,
    },
    /// Once the store has committed at least this many rows.
    RecordsCommitted(u64),
    /// When a checkpoint completes: checkpoint `n`, or the final one.
    Checkpoint(CheckpointTrigger),
    /// When a sink first pre-commits (the store prepares) a transaction for checkpoint `n`:
    /// the checkpoint is in flight, and what that sink wrote before its barrier is staged.
    Prepared(u64),
    /// At this share of the same seed's fault-free makespan in this mode (`at: 40%`; see
    /// [`super::relative`]).
    AtShare(Share),
    /// Once a sink pre-commits for the checkpoint this share of the way through the ones the
    /// fault-free run prepared for (`after_prepared: 40%`).
    PreparedShare(Share),
    /// Right after the `nth` occurrence (from 1) of a protocol step (`after: reconciling`,
    /// `after: { step: committed, nth: 3 }`): the moments a fault timed by the clock rarely
    /// meets, such as a JobMaster reconciling, or a service that just acknowledged a write.
    Step {
        /// The step.
        step: ProtocolStep,
        /// Which occurrence.
        nth: u32,
    },
    /// Right after the `nth` hit (from 1) of a coverage mark (`after_mark:
    /// kept-work-with-partition-gone`, `after_mark: { mark: commit-retried, nth: 2 }`): a fault
    /// placed in a rare state once a run reached it, as moonpool and Antithesis branch from the
    /// moment a rare assertion first holds.
    Mark {
        /// The mark.
        mark: Mark,
        /// Which hit.
        nth: u32,
    },
}

/// A protocol step a fault can follow (see [`Trigger::Step`]), each seen in the trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolStep {
    /// A JobMaster recovered the job and is reconciling with the TaskManagers the work that
    /// finished (`job_recovered`): a fault now lands during reconciliation.
    Reconciling,
    /// A failover began: the job or some regions are restarting.
    Restarting,
    /// The JobMaster triggered a checkpoint: its barriers are in flight.
    CheckpointTriggered,
    /// The transactional store acknowledged a prepare (a sink's pre-commit).
    Prepared,
    /// A sink's commit was acknowledged (the transactional store's, or the durable store's
    /// rename of a committed file).
    Committed,
    /// The transactional store acknowledged an abort of lingering transactions (a fence).
    Aborted,
    /// The remote shuffle service acknowledged a finished partition as durable.
    PartitionStored,
    /// The JobMaster declared a TaskManager lost.
    TaskManagerLost,
    /// Another fault of the schedule fired: faults that overlap (a partition lost while the
    /// JobMaster is down), as Jepsen composes its nemeses.
    FaultInjected,
}

impl ProtocolStep {
    /// Every step, in declaration order.
    pub const ALL: [ProtocolStep; 9] = [
        ProtocolStep::Reconciling,
        ProtocolStep::Restarting,
        ProtocolStep::CheckpointTriggered,
        ProtocolStep::Prepared,
        ProtocolStep::Committed,
        ProtocolStep::Aborted,
        ProtocolStep::PartitionStored,
        ProtocolStep::TaskManagerLost,
        ProtocolStep::FaultInjected,
    ];

    /// The trace events (by [`TraceEvent::kind`](sluice_engine::trace::TraceEvent::kind)) that
    /// are this step.
    pub fn events(self) -> &'static [&'static str] {
        match self {
            ProtocolStep::Reconciling => &["job_recovered"],
            ProtocolStep::Restarting => &["job_restarting", "regions_restarting"],
            ProtocolStep::CheckpointTriggered => &["checkpoint_triggered"],
            ProtocolStep::Prepared => &["transaction_prepared"],
            ProtocolStep::Committed => &["transaction_committed"],
            ProtocolStep::Aborted => &["transactions_aborted"],
            ProtocolStep::PartitionStored => &["partition_stored"],
            ProtocolStep::TaskManagerLost => &["task_manager_lost"],
            ProtocolStep::FaultInjected => &["fault_injected"],
        }
    }

    /// Its name in YAML.
    pub fn name(self) -> &'static str {
        match self {
            ProtocolStep::Reconciling => "reconciling",
            ProtocolStep::Restarting => "restarting",
            ProtocolStep::CheckpointTriggered => "checkpoint-triggered",
            ProtocolStep::Prepared => "prepared",
            ProtocolStep::Committed => "committed",
            ProtocolStep::Aborted => "aborted",
            ProtocolStep::PartitionStored => "partition-stored",
            ProtocolStep::TaskManagerLost => "task-manager-lost",
            ProtocolStep::FaultInjected => "fault-injected",
        }
    }
}

/// Which checkpoint a trigger waits for: a number from 1, or `final`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum CheckpointTrigger {
    /// Checkpoint `n` (or a later one, if `n` never completes).
    Id(u64),
    /// The final checkpoint of a bounded streaming job.
    Final(FinalKeyword),
    /// The checkpoint this share of the way through the fault-free run's (`40%`; see
    /// [`super::relative`]).
    Share(Share),
}

impl<'de> Deserialize<'de> for CheckpointTrigger {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<CheckpointTrigger, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = CheckpointTrigger;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a checkpoint number, a share like 40%, or `final`")
            }

            fn visit_u64<E: serde::de::Error>(self, id: u64) -> Result<CheckpointTrigger, E> {
                Ok(CheckpointTrigger::Id(id))
            }

            fn visit_i64<E: serde::de::Error>(self, id: i64) -> Result<CheckpointTrigger, E> {
                Err(E::custom(format!("`{id}` is not a checkpoint: checkpoints are numbered from 1, or `final`")))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<CheckpointTrigger, E> {
                match text {
                    "final" => Ok(CheckpointTrigger::Final(FinalKeyword::Final)),
                    share if share.ends_with('%') => {
                        Share::parse(share).map(CheckpointTrigger::Share).map_err(E::custom)
                    }
                    other => Err(E::custom(format!(
                        "`{other}` is not a checkpoint: a number from 1, a share like 40%, or `final`"
                    ))),
                }
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The word `final`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinalKeyword {
    /// `final`.
    Final,
}

/// A task state a trigger waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskStateTrigger {
    /// The JobMaster sent it to a slot.
    Deployed,
    /// Its TaskManager started it.
    Running,
    /// It finished.
    Finished,
}

/// What a fault does. The one place to add a kind: give it a name, a YAML form, an effect
/// duration, an injector arm and (if random schedules should draw it) a generator arm.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// Kill a node's process (its disk loses unsynced bytes), maybe restart it.
    Kill {
        /// `jm`, `tm-N`, `shuffle-service`, `durable-store`, `log` or `txn-store`.
        node: String,
        /// Restart after this long; never if `None`.
        restart_after: Option<Duration>,
    },
    /// Drop every message between two sets of nodes for a while.
    Partition {
        /// The two sides.
        sides: [Vec<String>; 2],
        /// Only messages from the first side to the second are dropped.
        one_way: bool,
        /// How long.
        duration: Duration,
    },
    /// Drop this percentage of all messages for a while.
    PacketLoss {
        /// 1 to 100.
        percent: u32,
        /// How long.
        duration: Duration,
    },
    /// Every message takes between `min` and `max` for a while.
    Latency {
        /// Least latency.
        min: Duration,
        /// Most latency.
        max: Duration,
        /// How long.
        duration: Duration,
    },
    /// A node is `factor` times slower for a while: a TaskManager's or the shuffle service's CPU,
    /// disk and network costs are multiplied (it still answers heartbeats); another node gets
    /// only `1/factor` of the time, paused the rest.
    Slow {
        /// The node.
        node: String,
        /// At least 2.
        factor: u32,
        /// How long.
        duration: Duration,
    },
    /// The transactional store refuses every request for a while.
    StoreUnavailable {
        /// How long.
        duration: Duration,
    },
    /// The store fails the next `count` commit requests without applying them.
    CommitFails {
        /// How many.
        count: u32,
    },
    /// The store applies the next `count` commits but never answers them (an ambiguous commit).
    CommitReplyLost {
        /// How many.
        count: u32,
    },
    /// The blocking partition written last on a node (`tm-N` or `shuffle-service`) is gone.
    LosePartition {
        /// The node.
        node: String,
    },
    /// A byte in the middle of the blocking partition written last on a node is flipped.
    CorruptPartition {
        /// The node.
        node: String,
    },
    /// A node's (`tm-N` or `shuffle-service`) whole disk is gone, synced files included.
    LoseDisk {
        /// The node.
        node: String,
    },
    /// The durable store refuses every call for a while.
    DurableStoreUnavailable {
        /// How long.
        duration: Duration,
    },
    /// The durable store loses its `count` newest objects (never the JobMaster's metadata).
    LoseNewestObjects {
        /// How many.
        count: u32,
    },
}

/// Nodes with partition files: the targets of partition and disk faults.
fn holds_partitions(node: &str) -> bool {
    node.starts_with("tm-") || node == "shuffle-service"
}

/// The names of the kinds, as random schedules and sweep summaries use them.
pub const KIND_NAMES: &[&str] = &[
    "tm-crash",
    "jm-crash",
    "external-crash",
    "partition",
    "packet-loss",
    "latency",
    "slow-node",
    "store-unavailable",
    "commit-fails",
    "commit-reply-lost",
    "shuffle-service-crash",
    "durable-store-crash",
    "partition-loss",
    "partition-corruption",
    "disk-loss",
    "durable-store-unavailable",
    "object-loss",
];

impl FaultKind {
    /// The kind's name (see [`KIND_NAMES`]).
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Kill { node, .. } if node.starts_with("tm-") => "tm-crash",
            FaultKind::Kill { node, .. } if node == "jm" => "jm-crash",
            FaultKind::Kill { node, .. } if node == "shuffle-service" => "shuffle-service-crash",
            FaultKind::Kill { node, .. } if node == "durable-store" => "durable-store-crash",
            FaultKind::Kill { .. } => "external-crash",
            FaultKind::Partition { .. } => "partition",
            FaultKind::PacketLoss { .. } => "packet-loss",
            FaultKind::Latency { .. } => "latency",
            FaultKind::Slow { .. } => "slow-node",
            FaultKind::StoreUnavailable { .. } => "store-unavailable",
            FaultKind::CommitFails { .. } => "commit-fails",
            FaultKind::CommitReplyLost { .. } => "commit-reply-lost",
            FaultKind::LosePartition { .. } => "partition-loss",
            FaultKind::CorruptPartition { .. } => "partition-corruption",
            FaultKind::LoseDisk { .. } => "disk-loss",
            FaultKind::DurableStoreUnavailable { .. } => "durable-store-unavailable",
            FaultKind::LoseNewestObjects { .. } => "object-loss",
        }
    }

    /// How long after it fires the fault heals; `None` for instant faults, and for a kill
    /// without restart (which never heals).
    pub fn effect_duration(&self) -> Option<Duration> {
        match self {
            FaultKind::Kill { restart_after, .. } => *restart_after,
            FaultKind::Partition { duration, .. }
            | FaultKind::PacketLoss { duration, .. }
            | FaultKind::Latency { duration, .. }
            | FaultKind::Slow { duration, .. }
            | FaultKind::StoreUnavailable { duration }
            | FaultKind::DurableStoreUnavailable { duration } => Some(*duration),
            FaultKind::CommitFails { .. }
            | FaultKind::CommitReplyLost { .. }
            | FaultKind::LosePartition { .. }
            | FaultKind::CorruptPartition { .. }
            | FaultKind::LoseDisk { .. }
            | FaultKind::LoseNewestObjects { .. } => None,
        }
    }

    /// The nodes it names.
    pub fn nodes(&self) -> Vec<&str> {
        match self {
            FaultKind::Kill { node, .. }
            | FaultKind::Slow { node, .. }
            | FaultKind::LosePartition { node }
            | FaultKind::CorruptPartition { node }
            | FaultKind::LoseDisk { node } => vec![node.as_str()],
            FaultKind::Partition { sides, .. } => sides.iter().flatten().map(String::as_str).collect(),
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let duration = |duration: &Duration| format_duration(*duration);
        match self {
            FaultKind::Kill { node, restart_after: Some(delay) } => {
                write!(f, "kill {node} (restart after {})", duration(delay))
            }
            FaultKind::Kill { node, restart_after: None } => write!(f, "kill {node} (no restart)"),
            FaultKind::Partition { sides, one_way, duration: length } => write!(
                f,
                "partition [{}] {} [{}] for {}",
                sides[0].join(", "),
                if *one_way { "-/->" } else { "<-/->" },
                sides[1].join(", "),
                duration(length)
            ),
            FaultKind::PacketLoss { percent, duration: length } => {
                write!(f, "lose {percent}% of messages for {}", duration(length))
            }
            FaultKind::Latency { min, max, duration: length } => {
                write!(f, "latency {}..{} for {}", duration(min), duration(max), duration(length))
            }
            FaultKind::Slow { node, factor, duration: length } => {
                write!(f, "slow {node} {factor}x for {}", duration(length))
            }
            FaultKind::StoreUnavailable { duration: length } => {
                write!(f, "txn-store unavailable for {}", duration(length))
            }
            FaultKind::CommitFails { count } => write!(f, "fail the next {}", counted(*count, "commit")),
            FaultKind::CommitReplyLost { count } => {
                write!(f, "lose the replies of the next {}", counted(*count, "commit"))
            }
            FaultKind::LosePartition { node } => write!(f, "lose the newest partition on {node}"),
            FaultKind::CorruptPartition { node } => write!(f, "corrupt the newest partition on {node}"),
            FaultKind::LoseDisk { node } => write!(f, "lose the disk of {node}"),
            FaultKind::DurableStoreUnavailable { duration: length } => {
                write!(f, "durable-store unavailable for {}", duration(length))
            }
            FaultKind::LoseNewestObjects { count } => write!(f, "lose the {count} newest objects of the durable store"),
        }
    }
}

/// The node a kill names, read back from the kill's text form (`kill tm-1 (restart after
/// 500ms)`, as traces record it): the timeline shades a killed TaskManager's slots with it.
/// `None` for any other kind of fault.
pub fn killed_node(detail: &str) -> Option<&str> {
    let rest = detail.strip_prefix("kill ")?;
    let (node, rest) = rest.split_once(' ')?;
    (rest.starts_with("(restart after ") || rest == "(no restart)").then_some(node)
}

impl fmt::Display for Trigger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Trigger::At(time) => write!(f, "at {}", format_duration(*time)),
            Trigger::Task { vertex, subtask: Some(subtask), state } => {
                write!(f, "when v{vertex}[{subtask}] is {state:?}")
            }
            Trigger::Task { vertex, subtask: None, state } => write!(f, "when a subtask of v{vertex} is {state:?}"),
            Trigger::RecordsCommitted(rows) => write!(f, "after {} committed", counted(*rows, "row")),
            Trigger::Checkpoint(CheckpointTrigger::Id(id)) => write!(f, "after checkpoint {id}"),
            Trigger::Checkpoint(CheckpointTrigger::Final(_)) => write!(f, "after the final checkpoint"),
            Trigger::Prepared(id) => write!(f, "once a transaction of checkpoint {id} is prepared"),
            Trigger::Checkpoint(CheckpointTrigger::Share(share)) => {
                write!(f, "after the checkpoint {share} of the way through the fault-free run's")
            }
            Trigger::AtShare(share) => write!(f, "at {share} of the fault-free makespan"),
            Trigger::PreparedShare(share) => {
                write!(f, "once a transaction is prepared {share} of the way through the fault-free run's")
            }
            Trigger::Step { step, nth: 1 } => write!(f, "right after `{}`", step.name()),
            Trigger::Step { step, nth } => write!(f, "right after `{}` #{nth}", step.name()),
            Trigger::Mark { mark, nth: 1 } => write!(f, "right after mark `{mark}`"),
            Trigger::Mark { mark, nth } => write!(f, "right after mark `{mark}` #{nth}"),
        }
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.trigger, self.kind)
    }
}

/// The YAML form: one trigger key and one kind key per fault.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FaultSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    at: Option<PointSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    when: Option<TaskTriggerSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_committed: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_checkpoint: Option<CheckpointTrigger>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_prepared: Option<PreparedSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after: Option<StepSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    after_mark: Option<MarkSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kill: Option<String>,
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    restart_after: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    partition: Option<PartitionSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    packet_loss: Option<PacketLossSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    latency: Option<LatencySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    slow: Option<SlowSpec>,
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    store_unavailable: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit_fails: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    commit_reply_lost: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lose_partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    corrupt_partition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lose_disk: Option<String>,
    #[serde(default, with = "sluice_engine::duration::optional_text", skip_serializing_if = "Option::is_none")]
    durable_store_unavailable: Option<Duration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lose_newest_objects: Option<u32>,
}

/// `at:` a time after the submission (`150ms`) or a share of the fault-free makespan (`40%`).
#[derive(Clone, Debug)]
enum PointSpec {
    Time(Duration),
    Share(Share),
}

impl Serialize for PointSpec {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            PointSpec::Time(time) => sluice_engine::duration::text::serialize(time, serializer),
            PointSpec::Share(share) => share.serialize(serializer),
        }
    }
}

struct PointVisitor;

impl serde::de::Visitor<'_> for PointVisitor {
    type Value = PointSpec;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a time like 150ms or a share of the fault-free makespan like 40%")
    }

    fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<PointSpec, E> {
        let point = if text.trim().ends_with('%') {
            Share::parse(text).map(PointSpec::Share)
        } else {
            sluice_engine::duration::parse_duration(text).map(PointSpec::Time)
        };
        point.map_err(E::custom)
    }

    fn visit_u64<E: serde::de::Error>(self, number: u64) -> Result<PointSpec, E> {
        self.visit_str(&number.to_string())
    }

    fn visit_i64<E: serde::de::Error>(self, number: i64) -> Result<PointSpec, E> {
        self.visit_str(&number.to_string())
    }
}

impl<'de> Deserialize<'de> for PointSpec {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<PointSpec, D::Error> {
        deserializer.deserialize_str(PointVisitor)
    }
}

/// `after_prepared:` a checkpoint number (`4`) or a share of the fault-free run's (`40%`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged, expecting = "a checkpoint number from 1, or a share like 40%")]
enum PreparedSpec {
    Id(u64),
    Share(Share),
}

/// `after_mark:` a coverage mark (`commit-retried`), or one of its hits
/// (`{ mark: commit-retried, nth: 2 }`); an unknown name is an error listing the marks.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged, try_from = "RawMarkSpec")]
enum MarkSpec {
    First(Mark),
    Nth { mark: Mark, nth: u32 },
}

/// [`MarkSpec`] before its mark's name is checked, so that an unknown one is named.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a coverage mark like `commit-retried`, or `{ mark: commit-retried, nth: 2 }`")]
enum RawMarkSpec {
    First(String),
    Nth { mark: String, nth: u32 },
}

impl TryFrom<RawMarkSpec> for MarkSpec {
    type Error = String;

    fn try_from(raw: RawMarkSpec) -> Result<MarkSpec, String> {
        Ok(match raw {
            RawMarkSpec::First(name) => MarkSpec::First(name.parse()?),
            RawMarkSpec::Nth { mark, nth } => MarkSpec::Nth { mark: mark.parse()?, nth },
        })
    }
}

/// `after:` a protocol step (`reconciling`), or one of its occurrences
/// (`{ step: committed, nth: 3 }`).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(untagged, try_from = "RawStepSpec")]
enum StepSpec {
    First(ProtocolStep),
    Nth { step: ProtocolStep, nth: u32 },
}

/// [`StepSpec`] before its step's name is checked, so that an unknown one is named.
#[derive(Deserialize)]
#[serde(untagged, expecting = "a protocol step like `reconciling`, or `{ step: committed, nth: 3 }`")]
enum RawStepSpec {
    First(String),
    Nth { step: String, nth: u32 },
}

impl TryFrom<RawStepSpec> for StepSpec {
    type Error = String;

    fn try_from(raw: RawStepSpec) -> Result<StepSpec, String> {
        let step = |name: &str| {
            ProtocolStep::ALL.into_iter().find(|step| step.name() == name).ok_or_else(|| {
                let known: Vec<&str> = ProtocolStep::ALL.iter().map(|step| step.name()).collect();
                format!("unknown protocol step `{name}`; the steps are: {}", known.join(", "))
            })
        };
        Ok(match raw {
            RawStepSpec::First(name) => StepSpec::First(step(&name)?),
            RawStepSpec::Nth { step: name, nth } => StepSpec::Nth { step: step(&name)?, nth },
        })
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskTriggerSpec {
    vertex: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subtask: Option<u32>,
    state: TaskStateTrigger,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PartitionSpec {
    between: Vec<Vec<String>>,
    #[serde(default)]
    one_way: bool,
    #[serde(rename = "for", with = "sluice_engine::duration::text")]
    duration: Duration,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct PacketLossSpec {
    percent: u32,
    #[serde(rename = "for", with = "sluice_engine::duration::text")]
    duration: Duration,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct LatencySpec {
    #[serde(with = "sluice_engine::duration::text")]
    min: Duration,
    #[serde(with = "sluice_engine::duration::text")]
    max: Duration,
    #[serde(rename = "for", with = "sluice_engine::duration::text")]
    duration: Duration,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SlowSpec {
    node: String,
    factor: u32,
    #[serde(rename = "for", with = "sluice_engine::duration::text")]
    duration: Duration,
}

const TRIGGER_KEYS: &str =
    "`at`, `when`, `after_committed`, `after_checkpoint`, `after_prepared`, `after` or `after_mark`";
const KIND_KEYS: &str = "`kill`, `partition`, `packet_loss`, `latency`, `slow`, `store_unavailable`, `commit_fails`, \
     `commit_reply_lost`, `lose_partition`, `corrupt_partition`, `lose_disk`, `durable_store_unavailable` or \
     `lose_newest_objects`";

/// A node with partition files, for the partition and disk faults.
fn partition_holder(node: String, key: &str) -> Result<String, String> {
    if holds_partitions(&node) {
        Ok(node)
    } else {
        Err(format!("{key}: `{key}` names a TaskManager (`tm-N`) or `shuffle-service`, not `{node}`"))
    }
}

fn trigger_of(spec: &FaultSpec) -> Result<Trigger, String> {
    let mut triggers = Vec::new();
    match spec.at {
        Some(PointSpec::Time(at)) => triggers.push(Trigger::At(at)),
        Some(PointSpec::Share(share)) => triggers.push(Trigger::AtShare(share)),
        None => {}
    }
    if let Some(when) = &spec.when {
        triggers.push(Trigger::Task { vertex: when.vertex, subtask: when.subtask, state: when.state });
    }
    if let Some(rows) = spec.after_committed {
        triggers.push(Trigger::RecordsCommitted(rows));
    }
    if let Some(checkpoint) = spec.after_checkpoint {
        triggers.push(Trigger::Checkpoint(checkpoint));
    }
    match spec.after_prepared {
        Some(PreparedSpec::Id(0)) => {
            return Err("after_prepared: `after_prepared` names a checkpoint, numbered from 1".to_string());
        }
        Some(PreparedSpec::Id(checkpoint)) => triggers.push(Trigger::Prepared(checkpoint)),
        Some(PreparedSpec::Share(share)) => triggers.push(Trigger::PreparedShare(share)),
        None => {}
    }
    match spec.after {
        Some(StepSpec::First(step)) => triggers.push(Trigger::Step { step, nth: 1 }),
        Some(StepSpec::Nth { step, nth }) => triggers.push(Trigger::Step { step, nth: positive(nth, "after.nth")? }),
        None => {}
    }
    match spec.after_mark {
        Some(MarkSpec::First(mark)) => triggers.push(Trigger::Mark { mark, nth: 1 }),
        Some(MarkSpec::Nth { mark, nth }) => {
            triggers.push(Trigger::Mark { mark, nth: positive(nth, "after_mark.nth")? })
        }
        None => {}
    }
    match triggers.len() {
        1 => Ok(triggers.remove(0)),
        0 => Err(format!("a fault needs a trigger: {TRIGGER_KEYS}")),
        _ => Err(format!("a fault has exactly one trigger, this one has {}: {TRIGGER_KEYS}", triggers.len())),
    }
}

fn positive(value: u32, what: &str) -> Result<u32, String> {
    if value == 0 { Err(format!("{what}: `{what}` must be at least 1")) } else { Ok(value) }
}

fn kind_of(spec: FaultSpec) -> Result<FaultKind, String> {
    let mut kinds = Vec::new();
    if let Some(node) = spec.kill {
        kinds.push(FaultKind::Kill { node, restart_after: spec.restart_after });
    } else if spec.restart_after.is_some() {
        return Err("restart_after: `restart_after` belongs to a `kill` fault".to_string());
    }
    if let Some(partition) = spec.partition {
        let sides: [Vec<String>; 2] = partition
            .between
            .try_into()
            .map_err(|_| "partition.between: `partition.between` lists exactly two sets of nodes".to_string())?;
        if sides.iter().any(Vec::is_empty) {
            return Err("partition.between: each side of `partition.between` names at least one node".to_string());
        }
        kinds.push(FaultKind::Partition { sides, one_way: partition.one_way, duration: partition.duration });
    }
    if let Some(loss) = spec.packet_loss {
        if !(1..=100).contains(&loss.percent) {
            return Err(format!("packet_loss.percent: `packet_loss.percent` is 1 to 100, not {}", loss.percent));
        }
        kinds.push(FaultKind::PacketLoss { percent: loss.percent, duration: loss.duration });
    }
    if let Some(latency) = spec.latency {
        if latency.min > latency.max || latency.min.is_zero() {
            return Err("latency.min: `latency` needs 0 < min <= max".to_string());
        }
        kinds.push(FaultKind::Latency { min: latency.min, max: latency.max, duration: latency.duration });
    }
    if let Some(slow) = spec.slow {
        if slow.factor < 2 {
            return Err(format!("slow.factor: `slow.factor` is at least 2, not {}", slow.factor));
        }
        kinds.push(FaultKind::Slow { node: slow.node, factor: slow.factor, duration: slow.duration });
    }
    if let Some(duration) = spec.store_unavailable {
        kinds.push(FaultKind::StoreUnavailable { duration });
    }
    if let Some(count) = spec.commit_fails {
        kinds.push(FaultKind::CommitFails { count: positive(count, "commit_fails")? });
    }
    if let Some(count) = spec.commit_reply_lost {
        kinds.push(FaultKind::CommitReplyLost { count: positive(count, "commit_reply_lost")? });
    }
    if let Some(node) = spec.lose_partition {
        kinds.push(FaultKind::LosePartition { node: partition_holder(node, "lose_partition")? });
    }
    if let Some(node) = spec.corrupt_partition {
        kinds.push(FaultKind::CorruptPartition { node: partition_holder(node, "corrupt_partition")? });
    }
    if let Some(node) = spec.lose_disk {
        kinds.push(FaultKind::LoseDisk { node: partition_holder(node, "lose_disk")? });
    }
    if let Some(duration) = spec.durable_store_unavailable {
        kinds.push(FaultKind::DurableStoreUnavailable { duration });
    }
    if let Some(count) = spec.lose_newest_objects {
        kinds.push(FaultKind::LoseNewestObjects { count: positive(count, "lose_newest_objects")? });
    }
    match kinds.len() {
        1 => Ok(kinds.remove(0)),
        0 => Err(format!("a fault needs a kind: {KIND_KEYS}")),
        _ => Err(format!("a fault has exactly one kind, this one has {}: {KIND_KEYS}", kinds.len())),
    }
}

impl TryFrom<FaultSpec> for Fault {
    type Error = String;

    fn try_from(spec: FaultSpec) -> Result<Fault, String> {
        let trigger = trigger_of(&spec)?;
        Ok(Fault { trigger, kind: kind_of(spec)? })
    }
}

impl From<Fault> for FaultSpec {
    fn from(fault: Fault) -> FaultSpec {
        let mut spec = FaultSpec::default();
        match fault.trigger {
            Trigger::At(at) => spec.at = Some(PointSpec::Time(at)),
            Trigger::AtShare(share) => spec.at = Some(PointSpec::Share(share)),
            Trigger::PreparedShare(share) => spec.after_prepared = Some(PreparedSpec::Share(share)),
            Trigger::Task { vertex, subtask, state } => spec.when = Some(TaskTriggerSpec { vertex, subtask, state }),
            Trigger::RecordsCommitted(rows) => spec.after_committed = Some(rows),
            Trigger::Checkpoint(checkpoint) => spec.after_checkpoint = Some(checkpoint),
            Trigger::Prepared(checkpoint) => spec.after_prepared = Some(PreparedSpec::Id(checkpoint)),
            Trigger::Step { step, nth: 1 } => spec.after = Some(StepSpec::First(step)),
            Trigger::Step { step, nth } => spec.after = Some(StepSpec::Nth { step, nth }),
            Trigger::Mark { mark, nth: 1 } => spec.after_mark = Some(MarkSpec::First(mark)),
            Trigger::Mark { mark, nth } => spec.after_mark = Some(MarkSpec::Nth { mark, nth }),
        }
        match fault.kind {
            FaultKind::Kill { node, restart_after } => {
                spec.kill = Some(node);
                spec.restart_after = restart_after;
            }
            FaultKind::Partition { sides, one_way, duration } => {
                spec.partition = Some(PartitionSpec { between: sides.to_vec(), one_way, duration });
            }
            FaultKind::PacketLoss { percent, duration } => {
                spec.packet_loss = Some(PacketLossSpec { percent, duration })
            }
            FaultKind::Latency { min, max, duration } => spec.latency = Some(LatencySpec { min, max, duration }),
            FaultKind::Slow { node, factor, duration } => spec.slow = Some(SlowSpec { node, factor, duration }),
            FaultKind::StoreUnavailable { duration } => spec.store_unavailable = Some(duration),
            FaultKind::CommitFails { count } => spec.commit_fails = Some(count),
            FaultKind::CommitReplyLost { count } => spec.commit_reply_lost = Some(count),
            FaultKind::LosePartition { node } => spec.lose_partition = Some(node),
            FaultKind::CorruptPartition { node } => spec.corrupt_partition = Some(node),
            FaultKind::LoseDisk { node } => spec.lose_disk = Some(node),
            FaultKind::DurableStoreUnavailable { duration } => spec.durable_store_unavailable = Some(duration),
            FaultKind::LoseNewestObjects { count } => spec.lose_newest_objects = Some(count),
        }
        spec
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> Result<Fault, String> {
        serde_yaml::from_str::<Fault>(yaml).map_err(|error| error.to_string())
    }

    #[test]
    fn every_kind_round_trips_through_yaml() {
        let faults = [
            "at: 150ms\nkill: tm-1\nrestart_after: 500ms\n",
            "when:\n  vertex: 1\n  state: finished\nkill: jm\n",
            "when:\n  vertex: 0\n  subtask: 1\n  state: running\npartition:\n  between:\n  - - jm\n  - - tm-0\n    - tm-1\n  one_way: true\n  for: 800ms\n",
            "at: 1s\npacket_loss:\n  percent: 10\n  for: 2s\n",
            "at: 1s\nlatency:\n  min: 50ms\n  max: 200ms\n  for: 500ms\n",
            "at: 1s\nslow:\n  node: tm-0\n  factor: 4\n  for: 2s\n",
            "after_committed: 5000\nstore_unavailable: 1s\n",
            "at: 0ms\ncommit_fails: 3\n",
            "at: 0ms\ncommit_reply_lost: 2\n",
            "at: 2s\nkill: shuffle-service\nrestart_after: 1s\n",
            "at: 2s\nkill: durable-store\n",
            "when:\n  vertex: 0\n  state: finished\nlose_partition: tm-0\n",
            "at: 1s\ncorrupt_partition: shuffle-service\n",
            "at: 1s\nlose_disk: tm-2\n",
            "at: 1s\ndurable_store_unavailable: 2s\n",
            "at: 1s\nlose_newest_objects: 1\n",
        ];
        for yaml in ["after_checkpoint: 3\nkill: tm-0\n", "after_checkpoint: final\nkill: tm-1\nrestart_after: 100ms\n"]
        {
            let fault = parse(yaml).unwrap_or_else(|error| panic!("{yaml}: {error}"));
            assert_eq!(serde_yaml::to_string(&fault).unwrap(), yaml);
        }
        assert!(parse("after_checkpoint: last\nkill: tm-0\n").is_err());
        let mut names = Vec::new();
        for yaml in faults {
            let fault = parse(yaml).unwrap_or_else(|error| panic!("{yaml}: {error}"));
            assert_eq!(serde_yaml::to_string(&fault).unwrap(), yaml);
            names.push(fault.kind.name());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), faults.len(), "every kind, each once: {names:?}");
        assert_eq!(names.len(), KIND_NAMES.len() - 1, "all kinds but external-crash are listed");
    }

    #[test]
    fn a_protocol_step_trigger_round_trips_and_names_what_is_wrong() {
        for yaml in
            ["after: reconciling\nkill: tm-0\n", "after:\n  step: partition-stored\n  nth: 3\nkill: shuffle-service\n"]
        {
            let fault = parse(yaml).unwrap_or_else(|error| panic!("{yaml}: {error}"));
            assert_eq!(serde_yaml::to_string(&fault).unwrap(), yaml);
        }
        let first = parse("after: { step: committed, nth: 1 }\nkill: jm\n").unwrap();
        assert_eq!(first.trigger, Trigger::Step { step: ProtocolStep::Committed, nth: 1 });
        assert_eq!(first.trigger.to_string(), "right after `committed`");
        assert!(parse("after: { step: committed, nth: 0 }\nkill: jm\n").unwrap_err().contains("at least 1"));
        assert!(
            parse("after: recovering\nkill: jm\n")
                .unwrap_err()
                .contains("unknown protocol step `recovering`; the steps are: reconciling,")
        );
        for step in ProtocolStep::ALL {
            let yaml = serde_yaml::to_string(&step).unwrap();
            assert_eq!(yaml.trim(), step.name(), "the YAML name is the name");
            assert!(!step.events().is_empty());
        }
    }

    #[test]
    fn a_mark_trigger_round_trips_and_names_what_is_wrong() {
        for yaml in [
            "after_mark: kept-work-with-partition-gone\nkill: tm-0\n",
            "after_mark:\n  mark: commit-retried\n  nth: 2\nkill: jm\n",
        ] {
            let fault = parse(yaml).unwrap_or_else(|error| panic!("{yaml}: {error}"));
            assert_eq!(serde_yaml::to_string(&fault).unwrap(), yaml);
        }
        let first = parse("after_mark: { mark: commit-retried, nth: 1 }\nkill: jm\n").unwrap();
        assert_eq!(first.trigger, Trigger::Mark { mark: Mark::CommitRetried, nth: 1 });
        assert_eq!(first.trigger.to_string(), "right after mark `commit-retried`");
        assert!(parse("after_mark: { mark: commit-retried, nth: 0 }\nkill: jm\n").unwrap_err().contains("at least 1"));
        let unknown = parse("after_mark: commit-retired\nkill: jm\n").unwrap_err();
        assert!(unknown.contains("unknown coverage mark `commit-retired`; the marks are: "), "{unknown}");
    }

    #[test]
    fn a_fault_needs_one_trigger_and_one_kind() {
        assert!(parse("kill: tm-1\n").unwrap_err().contains("needs a trigger"));
        assert!(parse("at: 1s\n").unwrap_err().contains("needs a kind"));
        assert!(parse("at: 1s\nafter_committed: 4\nkill: tm-0\n").unwrap_err().contains("exactly one trigger"));
        assert!(parse("at: 1s\nkill: tm-0\ncommit_fails: 1\n").unwrap_err().contains("exactly one kind"));
        assert!(parse("at: 1s\nrestart_after: 1s\ncommit_fails: 1\n").unwrap_err().contains("belongs to a `kill`"));
        assert!(parse("at: 1s\npacket_loss: { percent: 0, for: 1s }\n").unwrap_err().contains("1 to 100"));
        assert!(parse("at: 1s\nslow: { node: tm-0, factor: 1, for: 1s }\n").unwrap_err().contains("at least 2"));
        assert!(parse("at: 1s\npartition: { between: [[jm]], for: 1s }\n").unwrap_err().contains("exactly two"));
        assert!(parse("at: 1s\nkil: tm-0\n").unwrap_err().contains("unknown field `kil`"));
        assert!(parse("at: 1s\nlose_disk: jm\n").unwrap_err().contains("`lose_disk` names a TaskManager"));
        assert!(parse("at: 1s\nlose_partition: log\n").unwrap_err().contains("or `shuffle-service`, not `log`"));
        assert!(parse("at: 1s\nlose_newest_objects: 0\n").unwrap_err().contains("at least 1"));
    }

    #[test]
    fn kinds_have_names_durations_and_nodes() {
        let kill = FaultKind::Kill { node: "jm".into(), restart_after: None };
        assert_eq!(kill.name(), "jm-crash");
        assert_eq!(kill.effect_duration(), None);
        let partition = FaultKind::Partition {
            sides: [vec!["jm".into()], vec!["tm-0".into()]],
            one_way: false,
            duration: Duration::from_secs(1),
        };
        assert_eq!(partition.nodes(), vec!["jm", "tm-0"]);
        assert_eq!(partition.to_string(), "partition [jm] <-/-> [tm-0] for 1s");
        assert!(KIND_NAMES.contains(&partition.name()));
    }

    #[test]
    fn a_kill_names_its_node_in_its_text_form() {
        for restart_after in [None, Some(Duration::from_millis(500))] {
            let kill = FaultKind::Kill { node: "tm-1".into(), restart_after };
            assert_eq!(killed_node(&kill.to_string()), Some("tm-1"), "{kill}");
        }
        let slow = FaultKind::Slow { node: "tm-1".into(), factor: 3, duration: Duration::from_secs(1) };
        assert_eq!(killed_node(&slow.to_string()), None);
        assert_eq!(killed_node("kill tm-1 softly"), None);
    }
}
