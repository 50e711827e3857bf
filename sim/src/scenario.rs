//! The YAML scenario format: a job, its input size, a cluster, the modes and seeds to run, and the
//! faults to inject. `docs/scenarios.md` documents every field with its default.
//!
//! Loading never panics on bad input: every error names the file, the line and the field.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use std::sync::Arc;

use sluice_engine::api::JobConfig;
use sluice_engine::catalog::{self, JobParams};
use sluice_engine::checkpoint::CheckpointConfig;
pub use sluice_engine::duration::{format_duration, parse_duration};
use sluice_engine::failover::{FailoverStrategy, RestartStrategy};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph};
use sluice_engine::scheduler::SchedulingStrategy;
use sluice_engine::scheduler::adaptive::AdaptiveBatchConfig;
use sluice_engine::shuffle::ShuffleKind;

use crate::cost::CostSpec;
use crate::faults::random::Topology;
use crate::faults::{Fault, FaultKind, RandomFaults, Trigger};

/// The largest parallelism a scenario may ask for (Flink's largest max parallelism).
pub const MAX_PARALLELISM: u32 = 32_768;

/// A scenario, as loaded and validated.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name, used in reports and replay files.
    pub name: String,
    /// The catalog job to run.
    pub job: String,
    /// The job's parameters; unset ones take the job's defaults.
    #[serde(default)]
    pub params: BTreeMap<String, u64>,
    /// The simulated cluster.
    #[serde(default)]
    pub cluster: ClusterSpec,
    /// Default parallelism of the job's operators.
    #[serde(default = "default_parallelism")]
    pub parallelism: u32,
    /// The modes to run, each on the same input.
    #[serde(default = "default_modes")]
    pub modes: Vec<ExecutionMode>,
    /// The seeds to run: `A..B` (B excluded), `A..=B`, or one number.
    #[serde(default = "default_seeds", deserialize_with = "deserialize_seeds", serialize_with = "serialize_seeds")]
    pub seeds: Range<u64>,
    /// Faults to inject, in addition to random ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<Fault>,
    /// Random faults drawn from each seed, swarm style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_faults: Option<RandomFaults>,
    /// When to restart after a failure and when to give up.
    #[serde(default)]
    pub restart_strategy: RestartStrategy,
    /// Which subtasks a failure restarts: `region` (the failed region and what depends on
    /// it) or `restart-all`.
    #[serde(default)]
    pub failover_strategy: FailoverStrategy,
    /// Which exchanges are pipelined in batch mode (streaming is always all-pipelined).
    #[serde(default = "default_exchange_mode")]
    pub exchange_mode: ExchangeMode,
    /// Batch mode decides at runtime the parallelism of operators the job does not set, from the
    /// bytes their inputs produced (needs `exchange_mode: all-edges-blocking`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_batch: Option<AdaptiveBatchConfig>,
    /// Streaming mode checkpoints: `{ interval, timeout, retained }`. Without it a streaming job
    /// commits at end of input and restarts from the beginning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoints: Option<CheckpointConfig>,
    /// Where blocking partitions live: `task-manager` (the producer's disk) or `remote` (the
    /// shuffle service).
    #[serde(default = "default_shuffle")]
    pub shuffle: ShuffleKind,
    /// Bytes per network buffer.
    #[serde(default = "default_buffer_size")]
    pub buffer_size: usize,
    /// How long CPU work, disk and network transfers take.
    #[serde(default, skip_serializing_if = "CostSpec::is_default")]
    pub costs: CostSpec,
    /// After the last fault healed, the job must finish within this much simulated time.
    #[serde(default = "default_liveness_bound", with = "sluice_engine::duration::text")]
    pub liveness_bound: Duration,
    /// The simulation stops waiting for the job after this much simulated time.
    #[serde(default = "default_time_limit", with = "sluice_engine::duration::text")]
    pub time_limit: Duration,
    /// Extra expectations about the run (canaries use deliberately wrong ones).
    #[serde(default, skip_serializing_if = "Expectations::is_empty")]
    pub expect: Expectations,
    /// Present in replay files: how the run failed when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayInfo>,
}

/// Expectations a scenario adds to the standard checks.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expectations {
    /// The job restarts at most this often.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_restarts: Option<u32>,
}

impl Expectations {
    fn is_empty(&self) -> bool {
        self.max_restarts.is_none()
    }
}

/// What a replay file records about the failure it reproduces.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayInfo {
    /// The failing seed (also the file's only seed).
    pub seed: u64,
    /// The check that failed.
    pub check: String,
    /// Its message.
    pub detail: String,
    /// The trace hash of each failing mode, in hex.
    pub trace_hashes: BTreeMap<String, String>,
    /// The build that recorded it; a seed replays exactly only on the same build.
    pub git_revision: String,
    /// The faults that fired, with their simulated times.
    #[serde(default)]
    pub realized: Vec<String>,
}

/// The simulated cluster.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    /// Number of TaskManagers, named `tm-0`, `tm-1`, ….
    #[serde(default = "default_task_managers")]
    pub task_managers: u32,
    /// Slots each TaskManager offers.
    #[serde(default = "default_slots")]
    pub slots_per_task_manager: u32,
}

impl Default for ClusterSpec {
    fn default() -> Self {
        ClusterSpec { task_managers: default_task_managers(), slots_per_task_manager: default_slots() }
    }
}

impl ClusterSpec {
    /// Every node name, in a fixed order.
    pub fn node_names(&self) -> Vec<String> {
        let mut names = vec!["jm".to_string()];
        names.extend((0..self.task_managers).map(|index| format!("tm-{index}")));
        names.push("shuffle-service".to_string());
        names.push("durable-store".to_string());
        names.push("log".to_string());
        names.push("txn-store".to_string());
        names
    }

    /// Total slots.
    pub fn total_slots(&self) -> u32 {
        self.task_managers * self.slots_per_task_manager
    }
}

fn default_parallelism() -> u32 {
    2
}
fn default_modes() -> Vec<ExecutionMode> {
    ExecutionMode::ALL.to_vec()
}
fn default_seeds() -> Range<u64> {
    1..2
}
fn default_exchange_mode() -> ExchangeMode {
    ExchangeMode::AllEdgesBlocking
}
fn default_shuffle() -> ShuffleKind {
    ShuffleKind::TaskManager
}
fn default_buffer_size() -> usize {
    32 * 1024
}
fn default_time_limit() -> Duration {
    Duration::from_secs(120)
}
fn default_liveness_bound() -> Duration {
    Duration::from_secs(60)
}
fn default_task_managers() -> u32 {
    2
}
fn default_slots() -> u32 {
    2
}

/// Parses `A..B`, `A..=B` or `A`.
pub fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let number =
        |part: &str| part.trim().parse::<u64>().map_err(|_| format!("`{text}` is not a seed range like 1..100"));
    let range = if let Some((start, end)) = text.split_once("..=") {
        number(start)?..number(end)?.checked_add(1).ok_or("seed range end too large")?
    } else if let Some((start, end)) = text.split_once("..") {
        number(start)?..number(end)?
    } else {
        let seed = number(text)?;
        seed..seed.checked_add(1).ok_or("seed too large")?
    };
    if range.is_empty() {
        return Err(format!("seed range `{text}` is empty"));
    }
    Ok(range)
}

/// Reads a value as text and parses it; a visitor, so that serde_yaml reports the field's path.
struct ParsedText<T> {
    parse: fn(&str) -> Result<T, String>,
    expecting: &'static str,
}

impl<T> de::Visitor<'_> for ParsedText<T> {
    type Value = T;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.expecting)
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<T, E> {
        (self.parse)(text).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, number: u64) -> Result<T, E> {
        (self.parse)(&number.to_string()).map_err(E::custom)
    }

    fn visit_i64<E: de::Error>(self, number: i64) -> Result<T, E> {
        (self.parse)(&number.to_string()).map_err(E::custom)
    }
}

fn deserialize_seeds<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Range<u64>, D::Error> {
    deserializer.deserialize_any(ParsedText { parse: parse_seeds, expecting: "a seed or a seed range like 1..100" })
}

fn serialize_seeds<S: Serializer>(seeds: &Range<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{}..{}", seeds.start, seeds.end))
}

/// A scenario that cannot be used, with where and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field, when known.
    pub field: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "field `{field}`: ")?;
        }
        write!(f, "{}", self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// The 1-based line of the first `key:` (after `after_line`) whose value contains `value`.
fn locate(text: &str, key: &str, value: Option<&str>) -> Option<usize> {
    text.lines().enumerate().find_map(|(index, line)| {
        let line = line.split('#').next().unwrap_or("");
        let position = line.find(&format!("{key}:"))?;
        let boundary = position == 0
            || !line.as_bytes()[position - 1].is_ascii_alphanumeric() && line.as_bytes()[position - 1] != b'_';
        let matches_value = value.is_none_or(|value| line[position..].contains(value));
        (boundary && matches_value).then_some(index + 1)
    })
}

/// The field a serde_yaml message is about: the path it starts with (`faults[0]: …`), joined
/// with the field an `unknown field` or `missing field` message names.
fn field_of(message: &str) -> Option<String> {
    let (path, rest) = match message.split_once(": ") {
        Some((path, rest)) if !path.contains(' ') && !path.contains('`') => (Some(path), rest),
        _ => (None, message),
    };
    let named = ["unknown field `", "missing field `"].iter().find_map(|marker| {
        let start = rest.find(marker)? + marker.len();
        rest[start..].find('`').map(|end| &rest[start..start + end])
    });
    match (path, named) {
        (Some(path), Some(name)) => Some(format!("{path}.{name}")),
        (Some(path), None) => Some(path.to_string()),
        (None, Some(name)) => Some(name.to_string()),
        (None, None) => None,
    }
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError {
            file: file.clone(),
            line: None,
            field: None,
            message: error.to_string(),
        })?;
        Scenario::parse(&file, &text)
    }

    /// Parses and validates scenario text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        let scenario: Scenario = serde_yaml::from_str(text).map_err(|error| {
            let message = error.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message).to_string();
            let field = field_of(&message);
            // The path is in the field already; keep the message to what is wrong.
            let message = match message.split_once(": ") {
                Some((path, rest)) if field.as_deref().is_some_and(|field| field.starts_with(path)) => rest.to_string(),
                _ => message,
            };
            let line = error.location().map(|location| location.line()).or_else(|| {
                let key = field.as_deref()?.rsplit('.').next()?;
                locate(text, key.split('[').next()?, None)
            });
            ScenarioError { file: file.to_string(), line, field, message }
        })?;
        scenario.validate(file, text)?;
        Ok(scenario)
    }

    fn validate(&self, file: &str, text: &str) -> Result<(), ScenarioError> {
        let error = |field: &str, value: Option<&str>, message: String| ScenarioError {
            file: file.to_string(),
            line: locate(text, field.rsplit('.').next().unwrap_or(field), value),
            field: Some(field.to_string()),
            message,
        };
        let job = catalog::find(&self.job).map_err(|message| error("job", Some(&self.job), message))?;
        if let Err(message) = job.resolve_params(&self.params) {
            let unknown = self.params.keys().find(|name| !job.params.iter().any(|spec| spec.name == name.as_str()));
            let field = unknown.map_or_else(|| "params".to_string(), |name| format!("params.{name}"));
            return Err(error(&field, None, message));
        }
        if self.cluster.task_managers == 0 {
            return Err(error("cluster.task_managers", None, "a cluster needs at least one TaskManager".into()));
        }
        if self.cluster.slots_per_task_manager == 0 {
            return Err(error("cluster.slots_per_task_manager", None, "a TaskManager needs at least one slot".into()));
        }
        if !(1..=MAX_PARALLELISM).contains(&self.parallelism) {
            return Err(error("parallelism", None, format!("parallelism must be in 1..={MAX_PARALLELISM}")));
        }
        if self.modes.is_empty() {
            return Err(error("modes", None, "name at least one mode: streaming or batch".into()));
        }
        if self.buffer_size < 64 {
            return Err(error(
                "buffer_size",
                None,
                format!("{} bytes is too small; use at least 64", self.buffer_size),
            ));
        }
        if let Some(checkpoints) = &self.checkpoints {
            if checkpoints.interval < Duration::from_millis(1) || checkpoints.timeout < Duration::from_millis(1) {
                return Err(error("checkpoints", None, "`interval` and `timeout` are at least 1ms".into()));
            }
            if checkpoints.retained == 0 {
                return Err(error("checkpoints", None, "`retained` is at least 1".into()));
            }
            if !self.modes.contains(&ExecutionMode::Streaming) {
                return Err(error(
                    "checkpoints",
                    None,
                    "only streaming mode checkpoints; add `streaming` to `modes`".into(),
                ));
            }
        }
        if let Some(adaptive) = &self.adaptive_batch {
            if self.exchange_mode != ExchangeMode::AllEdgesBlocking {
                return Err(error(
                    "adaptive_batch",
                    None,
                    format!(
                        "deciding parallelism at runtime needs `exchange_mode: all-edges-blocking`, not {}",
                        self.exchange_mode
                    ),
                ));
            }
            if adaptive.min_parallelism == 0 || adaptive.min_parallelism > adaptive.max_parallelism {
                return Err(error("adaptive_batch", None, "needs 1 <= min_parallelism <= max_parallelism".into()));
            }
        }
        let params = job.resolve_params(&self.params).expect("checked above");
        for mode in &self.modes {
            let config = self.job_config(*mode);
            let plan = job.plan(&params, config).map_err(|message| error("job", Some(&self.job), message))?;
            let needed = SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan))).max_slots_per_region();
            if needed > self.cluster.total_slots() {
                return Err(error(
                    "parallelism",
                    None,
                    format!(
                        "job `{}` in {mode} mode needs {needed} slots at once, but the cluster has {} \
                         ({} TaskManagers × {} slots); lower the parallelism or add slots",
                        self.job,
                        self.cluster.total_slots(),
                        self.cluster.task_managers,
                        self.cluster.slots_per_task_manager
                    ),
                ));
            }
        }
        let vertices =
            job.plan(&params, JobConfig::new(self.modes[0], self.parallelism)).map(|plan| plan.vertices.len());
        let vertices = vertices.map_err(|message| error("job", Some(&self.job), message))? as u32;
        let nodes = self.cluster.node_names();
        for (index, fault) in self.faults.iter().enumerate() {
            if let Some(node) = fault.kind.nodes().into_iter().find(|node| !nodes.iter().any(|known| known == node)) {
                let field = match fault.kind {
                    FaultKind::Kill { .. } => "kill",
                    FaultKind::Slow { .. } => "slow.node",
                    FaultKind::LosePartition { .. } => "lose_partition",
                    FaultKind::CorruptPartition { .. } => "corrupt_partition",
                    FaultKind::LoseDisk { .. } => "lose_disk",
                    _ => "partition.between",
                };
                let mut unknown = error(
                    &format!("faults[{index}].{field}"),
                    Some(node),
                    format!("no node `{node}` in this cluster; nodes: {}", nodes.join(", ")),
                );
                // A node in a flow-style list is not on its key's line: find the value itself.
                unknown.line =
                    unknown.line.or_else(|| text.lines().position(|line| line.contains(node)).map(|at| at + 1));
                return Err(unknown);
            }
            if let Trigger::Task { vertex, .. } = fault.trigger
                && vertex >= vertices
            {
                return Err(error(
                    &format!("faults[{index}].when.vertex"),
                    None,
                    format!("job `{}` has vertices 0..{vertices}, not {vertex}", self.job),
                ));
            }
            let checkpoint_trigger = match fault.trigger {
                Trigger::Checkpoint(_) => Some("after_checkpoint"),
                Trigger::Prepared(_) => Some("after_prepared"),
                _ => None,
            };
            if let Some(field) = checkpoint_trigger
                && self.checkpoints.is_none()
            {
                return Err(error(
                    &format!("faults[{index}].{field}"),
                    None,
                    "waits for a checkpoint, but the scenario takes none: add `checkpoints: { interval: 100ms }`"
                        .to_string(),
                ));
            }
        }
        if let Some(random) = &self.random_faults {
            random.validate().map_err(|message| error("random_faults.kinds", None, message))?;
        }
        if self.time_limit <= self.liveness_bound {
            return Err(error(
                "time_limit",
                None,
                format!(
                    "the time limit ({}) must exceed the liveness bound ({}) so that a slow recovery can be told from a hang",
                    format_duration(self.time_limit),
                    format_duration(self.liveness_bound)
                ),
            ));
        }
        Ok(())
    }

    /// The job configuration of a mode.
    pub fn job_config(&self, mode: ExecutionMode) -> JobConfig {
        JobConfig::new(mode, self.parallelism)
            .with_exchange_mode(self.exchange_mode)
            .with_adaptive_parallelism(self.adaptive_batch.is_some())
    }

    /// Cores per TaskManager.
    pub fn cores(&self) -> u32 {
        self.costs.cores_per_task_manager.unwrap_or(self.cluster.slots_per_task_manager)
    }

    /// What the random fault generator needs to know.
    pub fn topology(&self) -> Topology {
        let job = catalog::find(&self.job).expect("validated when the scenario was loaded");
        let plan = job
            .plan(&self.job_params(), JobConfig::new(ExecutionMode::Streaming, self.parallelism))
            .expect("validated when the scenario was loaded");
        let vertices = plan.vertices.len() as u32;
        let slots_needed = SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan))).max_slots_per_region();
        Topology {
            task_managers: self.cluster.task_managers,
            slots_per_task_manager: self.cluster.slots_per_task_manager,
            slots_needed,
            vertices,
            remote_shuffle: self.shuffle == ShuffleKind::Remote,
            checkpointing: self.checkpoints.is_some() && self.modes.contains(&ExecutionMode::Streaming),
        }
    }

    /// The fault schedule of a seed: the explicit faults, then the random ones.
    pub fn schedule(&self, seed: u64) -> Vec<Fault> {
        let mut schedule = self.faults.clone();
        if let Some(random) = &self.random_faults {
            schedule.extend(random.generate(seed, &self.topology()));
        }
        schedule
    }

    /// True if the schedule kills, for good, something the job cannot run without: the
    /// JobMaster, the durable store, an external system, the shuffle service (with
    /// `shuffle: remote`), or so many TaskManagers that the job no longer fits.
    pub fn schedule_is_unsurvivable(&self, schedule: &[Fault]) -> Option<String> {
        let mut dead_task_managers = std::collections::BTreeSet::new();
        for fault in schedule {
            if let FaultKind::Kill { node, restart_after: None } = &fault.kind {
                if node == "shuffle-service" && self.shuffle == ShuffleKind::TaskManager {
                    continue; // nothing uses it
                }
                if !node.starts_with("tm-") {
                    return Some(format!("{node} is killed and never restarted"));
                }
                dead_task_managers.insert(node.clone());
            }
        }
        let alive = self.cluster.task_managers - dead_task_managers.len() as u32;
        let needed = self.topology().slots_needed;
        (alive * self.cluster.slots_per_task_manager < needed).then(|| {
            format!(
                "{} TaskManagers are killed for good; the {} left have {} slots, the job needs {needed}",
                dead_task_managers.len(),
                alive,
                alive * self.cluster.slots_per_task_manager
            )
        })
    }

    /// The scenario as YAML that [`Scenario::parse`] reads back to an equal scenario: what a
    /// replay file holds.
    pub fn to_yaml(&self) -> String {
        serde_yaml::to_string(self).expect("a scenario always serializes")
    }

    /// The job's parameters with defaults filled in.
    pub fn job_params(&self) -> JobParams {
        catalog::find(&self.job)
            .and_then(|job| job.resolve_params(&self.params))
            .expect("validated when the scenario was loaded")
    }
}
