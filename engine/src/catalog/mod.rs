//! Built-in jobs, registered by name, each with a plain sequential reference implementation.
//!
//! A [`CatalogJob`] is what a user jar is to Flink: the JobMaster and every TaskManager build the
//! same plan from its name and parameters. Each job also says how to generate its input (the
//! contents of the external log) from a seeded [`Prng`], and computes, with ordinary sequential
//! Rust, the rows its sinks must commit in each mode: the oracle the simulation checks against.
//!
//! Depends on: [`crate::api`], [`crate::connectors`] (row and table types), [`crate::graph`]
//! (to plan). Invariant: a job's plan is a pure function of (name, parameters, configuration).

pub mod alerts;
mod tpcds;
pub mod windowed;
pub mod wordcount;

pub mod event_time_input {
    //! How the event-time jobs (`windowed`, `alerts`) pace their input so that no element is late.
    //!
    //! Element `i` of every partition happens at about `i` ms, plus a jitter below [`JITTER_MS`];
    //! a source subtask reads its partitions round robin, [`FETCH_SIZE`] elements at a time. The
    //! newest element it has read is thus at most `FETCH_SIZE + JITTER_MS` ms ahead of any element
    //! still to come, within the watermark's [`OUT_OF_ORDERNESS_MS`]: streaming drops nothing as late,
    //! and both modes must agree.

    use crate::prng::Prng;

    /// The watermark's allowance for disorder.
    pub const OUT_OF_ORDERNESS_MS: i64 = 200;
    /// An element happens up to this long after its slot.
    pub const JITTER_MS: u64 = 50;
    /// Elements a source reads from one partition at a time.
    pub const FETCH_SIZE: u32 = 64;

    /// The event time of the element at position `slot` of its partition.
    pub fn event_time(slot: usize, prng: &mut Prng) -> i64 {
        slot as i64 + prng.below(JITTER_MS) as i64
    }
}

use std::collections::BTreeMap;
use std::fmt;

use crate::api::{JobConfig, StreamEnv};
use crate::connectors::{Row, SinkKind};
use crate::graph::{ExecutionMode, JobGraph};
use crate::prng::Prng;

/// A job parameter: its name, default, the values it may take, and meaning.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// The name used in scenarios.
    pub name: &'static str,
    /// The value when a scenario does not set it.
    pub default: u64,
    /// The least value.
    pub min: u64,
    /// The largest value: bounded so that one run fits the machine simulating it.
    pub max: u64,
    /// What it controls.
    pub doc: &'static str,
}

impl ParamSpec {
    /// Checks a value against `min..=max`.
    pub fn check(&self, value: u64) -> Result<(), String> {
        if (self.min..=self.max).contains(&value) {
            Ok(())
        } else {
            Err(format!("parameter `{}` must be in {}..={}, not {value}", self.name, self.min, self.max))
        }
    }
}

/// Parameter values of a job instance, defaults filled in.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobParams(pub BTreeMap<String, u64>);

impl JobParams {
    /// The value of a parameter the job declared.
    pub fn get(&self, name: &str) -> u64 {
        *self.0.get(name).unwrap_or_else(|| panic!("internal: parameter `{name}` was not declared by the job"))
    }
}

/// The contents of the external log: topic → partitions → encoded records.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalInput {
    /// Topics by name.
    pub topics: BTreeMap<String, Vec<Vec<Vec<u8>>>>,
}

impl ExternalInput {
    /// Total records over all topics.
    pub fn record_count(&self) -> usize {
        self.topics.values().flatten().map(Vec::len).sum()
    }
}

/// What one sink table must hold after the job committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedTable {
    /// How the table applies rows.
    pub kind: SinkKind,
    /// The rows, sorted. With [`Updates::Exact`], every row the job must commit (a multiset); with
    /// [`Updates::CountPerKey`], the final row of each key.
    pub rows: Vec<Row>,
    /// What is known about the updates of an upsert table.
    pub updates: Updates,
}

/// How much of an upsert table's update stream the reference can predict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Updates {
    /// Every committed row is known (append tables; and upsert tables whose updates do not
    /// depend on arrival order, like a running count).
    Exact,
    /// Only the final row of each key, and how many updates each key gets: a running sum of
    /// different amounts passes through values that depend on arrival order, but it is updated
    /// exactly once per input element.
    CountPerKey(BTreeMap<String, u64>),
}

/// What a job must commit, by table.
pub type ExpectedOutput = BTreeMap<String, ExpectedTable>;

/// A registered job; see the module doc.
pub struct CatalogJob {
    /// The name scenarios use.
    pub name: &'static str,
    /// One line on what it computes.
    pub description: &'static str,
    /// Its parameters.
    pub params: &'static [ParamSpec],
    /// Builds the plan.
    pub build: fn(&StreamEnv, &JobParams),
    /// Generates the external input.
    pub generate_input: fn(&JobParams, &mut Prng) -> ExternalInput,
    /// The sequential oracle: the rows the job must commit in a mode.
    pub reference: fn(&JobParams, &ExternalInput, ExecutionMode) -> ExpectedOutput,
}

impl fmt::Debug for CatalogJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// Every registered job.
pub fn jobs() -> &'static [CatalogJob] {
    &[wordcount::WORDCOUNT, wordcount::WORDCOUNT_FILES, tpcds::TPCDS, windowed::WINDOWED, alerts::ALERTS]
}

/// A job by name.
pub fn find(name: &str) -> Result<&'static CatalogJob, String> {
    jobs().iter().find(|job| job.name == name).ok_or_else(|| {
        let known: Vec<&str> = jobs().iter().map(|job| job.name).collect();
        format!("no job `{name}` in the catalog; known jobs: {}", known.join(", "))
    })
}

impl CatalogJob {
    /// Fills in defaults and rejects parameters the job does not declare.
    pub fn resolve_params(&self, given: &BTreeMap<String, u64>) -> Result<JobParams, String> {
        for name in given.keys() {
            if !self.params.iter().any(|spec| spec.name == name) {
                let known: Vec<&str> = self.params.iter().map(|spec| spec.name).collect();
                return Err(format!(
                    "job `{}` has no parameter `{name}`; its parameters: {}",
                    self.name,
                    known.join(", ")
                ));
            }
        }
        for spec in self.params {
            if let Some(value) = given.get(spec.name) {
                spec.check(*value)?;
            }
        }
        Ok(JobParams(
            self.params
                .iter()
                .map(|spec| (spec.name.to_string(), given.get(spec.name).copied().unwrap_or(spec.default)))
                .collect(),
        ))
    }

    /// Builds and chains the job's plan.
    pub fn plan(&self, params: &JobParams, config: JobConfig) -> Result<JobGraph, String> {
        let env = StreamEnv::new(self.name, config);
        (self.build)(&env, params);
        let stream_graph = env.into_stream_graph()?;
        JobGraph::from_stream_graph(stream_graph, config.exchange_mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_jobs_and_parameters_are_named_in_errors() {
        assert!(find("wordcount").is_ok());
        let error = find("wordcont").unwrap_err();
        assert!(error.contains("wordcont") && error.contains("wordcount"), "{error}");
        let job = find("wordcount").unwrap();
        let error = job.resolve_params(&[("wrods".to_string(), 3)].into_iter().collect()).unwrap_err();
        assert!(error.contains("wrods") && error.contains("words"), "{error}");
        let params = job.resolve_params(&BTreeMap::new()).unwrap();
        assert_eq!(params.0.len(), job.params.len());
    }
}
