//! The YAML scenario format: a job, its input size, a cluster, the modes and seeds to run, and the
//! faults to inject. `docs/scenarios.md` documents every field with its default.
//!
//! Loading never panics on bad input: every error names the file, the line and the field.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::Path;
use std::time::Duration;

mod error;
mod guard;
pub mod inputs;
mod jobs;
pub mod limits;
mod locate;
pub mod profile;
mod sql_file;
mod validate;

pub use error::ScenarioError;
pub use inputs::{FileFormat, InputFile};
pub use jobs::JobCatalog;
pub use profile::{CostProfile, Machine};
pub use sql_file::{ScriptError, SqlFiles, SqlRun, read_script};

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize, Serializer};
use std::sync::Arc;

use sluice_catalog::{JobParams, ParamValue, SimJob};
use sluice_engine::api::JobConfig;
use sluice_engine::checkpoint::CheckpointConfig;
pub use sluice_engine::duration::{format_duration, parse_duration};
use sluice_engine::failover::{FailoverStrategy, RestartStrategy};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::graph::{ExchangeMode, ExecutionGraph};
use sluice_engine::runtime::JobSpec;
use sluice_engine::scheduler::SchedulingStrategy;
use sluice_engine::scheduler::adaptive::AdaptiveBatchConfig;
use sluice_engine::shuffle::{ShuffleConfig, ShuffleKind};

use crate::cost::CostSpec;
use crate::faults::buggify::Buggify;
use crate::faults::random::Topology;
use crate::faults::{Fault, FaultKind, RandomFaults};
use crate::harness_crash::HarnessCrash;

/// The largest parallelism a scenario (or `sluice plan`) may ask for. Every subtask is a task of
/// one simulated process on one core and an all-to-all exchange has parallelism² channels, so
/// this keeps a run within what the machine running the simulation can hold.
pub const MAX_PARALLELISM: u32 = 256;

/// A scenario, as loaded and validated.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name, used in reports and replay files.
    pub name: String,
    /// The job to run, by name (empty in a file that gives `sql` instead, until it is loaded).
    #[serde(default)]
    pub job: String,
    /// SQL script files to run as the `sql` job, in place of `job` (see docs/sql.md). Loading
    /// reads them into `params.script`, so a loaded scenario never holds them.
    #[serde(default, skip_serializing)]
    pub sql: Option<SqlFiles>,
    /// The job's parameters (whole numbers, text, durations); unset ones take the job's
    /// defaults. A parameter given twice is an error.
    #[serde(default, deserialize_with = "deserialize_params")]
    pub params: BTreeMap<String, ParamValue>,
    /// Input files by the job's input names, each replacing what the job would generate for it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input: BTreeMap<String, InputFile>,
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
    #[serde(default, skip_serializing_if = "Vec::is_empty", deserialize_with = "deserialize_faults")]
    pub faults: Vec<Fault>,
    /// Random faults drawn from each seed, swarm style.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_faults: Option<RandomFaults>,
    /// The engine's own fault points (`sluice_engine::buggify`): off, enabled per seed
    /// swarm-style (`true`), or the points named.
    #[serde(default, skip_serializing_if = "Buggify::is_off")]
    pub buggify: Buggify,
    /// When to restart after a failure and when to give up.
    #[serde(default, deserialize_with = "deserialize_restart_strategy")]
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
    /// How often watermark generators emit, in simulated time (Flink's
    /// `pipeline.auto-watermark-interval`); 200 ms if unset.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "sluice_engine::duration::optional_text")]
    pub watermark_interval: Option<Duration>,
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
    /// Test-only: the harness itself crashes on one seed, to prove that sweeps isolate it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_crash: Option<HarnessCrash>,
    /// The jobs `job` is looked up in (not part of the file): the built-in ones unless the
    /// scenario was parsed with others.
    #[serde(skip)]
    pub jobs: JobCatalog,
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
    /// The fingerprint of the file as recorded (everything but this value), in hex: a replay
    /// tells an edited file from a determinism bug by it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub scenario_hash: String,
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

/// The most seeds one range may hold (a sweep splits larger ones into shards).
pub const MAX_SEEDS: u64 = 100_000_000;

/// Parses `A..B`, `A..=B` or `A`; at most [`MAX_SEEDS`] seeds.
pub fn parse_seeds(text: &str) -> Result<Range<u64>, String> {
    let number =
        |part: &str| part.trim().parse::<u64>().map_err(|_| format!("`{text}` is not a seed range like 1..100"));
    let range = if let Some((start, end)) = text.split_once("..=") {
        number(start)?
            ..number(end)?.checked_add(1).ok_or_else(|| format!("seed range `{text}` ends past the largest seed"))?
    } else if let Some((start, end)) = text.split_once("..") {
        number(start)?..number(end)?
    } else {
        let seed = number(text)?;
        seed..seed
            .checked_add(1)
            .ok_or_else(|| format!("seed `{text}` is the largest u64, past the last seed a range can hold"))?
    };
    if range.is_empty() {
        return Err(format!("seed range `{text}` is empty"));
    }
    if range.end - range.start > MAX_SEEDS {
        return Err(format!("seed range `{text}` holds more than {MAX_SEEDS} seeds"));
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

/// A parameter's value as a scenario writes it: a non-negative whole number or text.
struct GivenValue(ParamValue);

impl<'de> Deserialize<'de> for GivenValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<GivenValue, D::Error> {
        struct Value;
        impl de::Visitor<'_> for Value {
            type Value = GivenValue;

            fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
                formatter.write_str("a non-negative whole number, a duration like 200ms, or text")
            }

            fn visit_u64<E: de::Error>(self, number: u64) -> Result<GivenValue, E> {
                Ok(GivenValue(ParamValue::Int(number)))
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<GivenValue, E> {
                Ok(GivenValue(ParamValue::Text(text.to_string())))
            }
        }
        deserializer.deserialize_any(Value)
    }
}

/// Reads `params`, refusing a parameter given twice (a plain map would keep the last silently).
fn deserialize_params<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<String, ParamValue>, D::Error> {
    struct Params;
    impl<'de> de::Visitor<'de> for Params {
        type Value = BTreeMap<String, ParamValue>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a map of parameter names to values")
        }

        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut params = BTreeMap::new();
            while let Some((name, GivenValue(value))) = map.next_entry::<String, GivenValue>()? {
                if params.contains_key(&name) {
                    return Err(de::Error::custom(format!("parameter `{name}` is given twice")));
                }
                params.insert(name, value);
            }
            Ok(params)
        }
    }
    deserializer.deserialize_map(Params)
}

/// Reads `faults`, naming the fault (`faults[2].slow.factor: …`) in errors that the conversion
/// from its YAML form finds, which serde_yaml would otherwise place at the list.
fn deserialize_faults<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<Fault>, D::Error> {
    struct Faults;
    impl<'de> de::Visitor<'de> for Faults {
        type Value = Vec<Fault>;

        fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
            formatter.write_str("a list of faults")
        }

        fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Fault>, A::Error> {
            let mut faults = Vec::new();
            while let Some(spec) = seq.next_element::<crate::faults::model::FaultSpec>()? {
                let index = faults.len();
                let fault = Fault::try_from(spec).map_err(|message| {
                    let named = message.split_once(": ").filter(|(path, _)| !path.contains(' ') && !path.contains('`'));
                    match named {
                        Some((path, rest)) => de::Error::custom(format!("faults[{index}].{path}: {rest}")),
                        None => de::Error::custom(format!("faults[{index}]: {message}")),
                    }
                })?;
                faults.push(fault);
            }
            Ok(faults)
        }
    }
    deserializer.deserialize_seq(Faults)
}

/// Reads `restart_strategy` through a YAML value: serde_yaml loses the path inside an internally
/// tagged enum, so errors are named `restart_strategy` here.
fn deserialize_restart_strategy<'de, D: Deserializer<'de>>(deserializer: D) -> Result<RestartStrategy, D::Error> {
    let value = serde_yaml::Value::deserialize(deserializer)?;
    serde_yaml::from_value(value).map_err(|error| {
        let message = error.to_string();
        de::Error::custom(format!("restart_strategy: {}", message.split(" at line ").next().unwrap_or(&message)))
    })
}

/// A scenario's or a cost profile's text: at most [`guard::MAX_FILE_BYTES`], UTF-8; an error
/// names the file (and the line of the first byte that is not UTF-8).
fn read_text(path: &Path) -> Result<String, ScenarioError> {
    let file = path.display().to_string();
    let whole_file = |message: String| ScenarioError { file: file.clone(), line: None, field: None, message };
    // Read at most one byte past the limit: a device or a pipe has no size to check first.
    let opened = std::fs::File::open(path).map_err(|error| whole_file(error.to_string()))?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(opened, guard::MAX_FILE_BYTES as u64 + 1), &mut bytes)
        .map_err(|error| whole_file(error.to_string()))?;
    if bytes.len() > guard::MAX_FILE_BYTES {
        return Err(whole_file(guard::too_large(bytes.len())));
    }
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let line = error.as_bytes()[..valid].iter().filter(|byte| **byte == b'\n').count() + 1;
        ScenarioError { line: Some(line), ..whole_file("not UTF-8 text".to_string()) }
    })
}

fn serialize_seeds<S: Serializer>(seeds: &Range<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&format!("{}..{}", seeds.start, seeds.end))
}

impl Scenario {
    /// Reads and validates a scenario file of a built-in job.
    pub fn load(path: &Path) -> Result<Scenario, ScenarioError> {
        Scenario::load_with(path, JobCatalog::built_in())
    }

    /// Reads and validates a scenario file whose job is one of `jobs`.
    pub fn load_with(path: &Path, jobs: JobCatalog) -> Result<Scenario, ScenarioError> {
        let text = read_text(path)?;
        Scenario::parse_with(&path.display().to_string(), &text, jobs)
    }

    /// Parses and validates the text of a scenario of a built-in job; `file` names it in errors
    /// (and input files are found relative to it).
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse_with(file, text, JobCatalog::built_in())
    }

    /// Parses and validates scenario text whose job is one of `jobs`.
    pub fn parse_with(file: &str, text: &str, jobs: JobCatalog) -> Result<Scenario, ScenarioError> {
        guard::check(text).map_err(|error| error.in_file(file))?;
        let mut scenario: Scenario =
            serde_yaml::from_str(text).map_err(|error| ScenarioError::from_yaml(file, text, &error))?;
        scenario.jobs = jobs;
        sql_file::load(&mut scenario, file, text)?;
        let job = scenario
            .jobs
            .find(&scenario.job)
            .map_err(|message| ScenarioError::about(text, "job", message).in_file(file))?;
        inputs::load(&mut scenario.input, job, file, text)?;
        profile::resolve(&mut scenario.costs, file, text)?;
        validate::validate(&scenario, job, text).map_err(|error| error.in_file(file))?;
        Ok(scenario)
    }

    /// The scenario at another default parallelism (`--parallelism` of `sluice run`, `sweep`
    /// and `compare`), validated again as a file is: a higher parallelism may no longer fit the
    /// cluster, a lower one may leave a fault's subtask out of the job. It is named
    /// `<name>-p<N>`, so that its reports and replay files are told from the file's own, and a
    /// replay file of it holds the parallelism it ran at. Errors name no file or line: the value
    /// is not in the file. The file's own parallelism changes nothing, the name included.
    pub fn with_parallelism(&self, parallelism: u32) -> Result<Scenario, ScenarioError> {
        if parallelism == self.parallelism {
            return Ok(self.clone());
        }
        let scenario = Scenario { name: format!("{}-p{parallelism}", self.name), parallelism, ..self.clone() };
        validate::validate(&scenario, scenario.job(), "")?;
        Ok(scenario)
    }

    /// The job the scenario runs.
    pub fn job(&self) -> &'static SimJob {
        self.jobs.find(&self.job).expect("validated when the scenario was loaded")
    }

    /// The job the scenario submits in `mode`: the one place its settings become the engine's.
    pub fn job_spec(&self, mode: ExecutionMode) -> JobSpec {
        JobSpec {
            job_id: self.name.clone(),
            job_name: self.job.clone(),
            params: self.job_params(),
            mode,
            parallelism: self.parallelism,
            max_parallelism: sluice_engine::graph::partitioner::default_max_parallelism(self.parallelism),
            exchange_mode: self.exchange_mode,
            adaptive: self.adaptive_batch,
            restart_strategy: self.restart_strategy,
            failover_strategy: self.failover_strategy,
            shuffle: ShuffleConfig { buffer_size: self.buffer_size, kind: self.shuffle, ..ShuffleConfig::default() },
            checkpoint: self.checkpoints,
            watermark_interval: self.watermark_interval,
        }
    }

    /// The job configuration of a mode, as the cluster derives it from [`Scenario::job_spec`].
    pub fn job_config(&self, mode: ExecutionMode) -> JobConfig {
        self.job_spec(mode).config()
    }

    /// Cores per TaskManager.
    pub fn cores(&self) -> u32 {
        self.costs.cores_per_task_manager.unwrap_or(self.cluster.slots_per_task_manager)
    }

    /// What the random fault generator needs to know.
    pub fn topology(&self) -> Topology {
        let plan = self
            .job()
            .plan(&self.job_params(), JobConfig::new(ExecutionMode::Streaming, self.parallelism))
            .expect("validated when the scenario was loaded");
        let vertices = plan.vertices.len() as u32;
        let slots_needed = SchedulingStrategy::new(ExecutionGraph::new(Arc::new(plan))).slots_needed_at_once();
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

    /// A fingerprint of everything but `replay.scenario_hash` itself, in hex (see
    /// [`ReplayInfo::scenario_hash`]): editing any value, recorded trace hashes included,
    /// changes it.
    pub fn fingerprint(&self) -> String {
        let replay = self.replay.clone().map(|replay| ReplayInfo { scenario_hash: String::new(), ..replay });
        let bare = Scenario { replay, ..self.clone() };
        format!("{:016x}", sluice_engine::prng::fnv1a64(bare.to_yaml().as_bytes()))
    }

    /// The job's parameters with defaults filled in.
    pub fn job_params(&self) -> JobParams {
        self.job().resolve_params(&self.params).expect("validated when the scenario was loaded")
    }
}
