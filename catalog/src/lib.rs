//! Sluice's built-in jobs, each with a plain sequential reference implementation.
//!
//! A [`CatalogJob`] is a job as the engine runs it (its [`JobDefinition`]: name, parameters, the
//! function that builds its plan), registered with a cluster through [`registry`] as a user's own
//! job would be: the engine does not depend on this crate. Each job also says how to generate its
//! input (the contents of the external log) from a seeded [`Prng`], and computes, with ordinary
//! sequential Rust, the rows its sinks must commit in each mode: the oracle the simulation checks
//! against.
//!
//! Depends on: the engine's public API only (`sluice_engine::api`, `connectors`, `graph`). It owns
//! the jobs and their oracles, and must never reach into the engine's runtime. Invariant: a job's
//! plan is a pure function of (name, parameters, configuration).

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

    use sluice_engine::prng::Prng;

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

use sluice_engine::api::JobConfig;
pub use sluice_engine::api::{JobDefinition, JobParams, JobRegistry, ParamSpec};
use sluice_engine::connectors::{Row, SinkKind};
use sluice_engine::graph::{ExecutionMode, JobGraph};
use sluice_engine::prng::Prng;

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

/// A built-in job: what a cluster runs, and what the simulation needs to feed and judge it.
pub struct CatalogJob {
    /// The job as a cluster runs it: name (the one scenarios use), parameters, the program.
    pub definition: JobDefinition,
    /// Generates the external input.
    pub generate_input: fn(&JobParams, &mut Prng) -> ExternalInput,
    /// The sequential oracle: the rows the job must commit in a mode.
    pub reference: fn(&JobParams, &ExternalInput, ExecutionMode) -> ExpectedOutput,
}

impl fmt::Debug for CatalogJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.definition.name)
    }
}

/// Every registered job.
pub fn jobs() -> &'static [CatalogJob] {
    &[wordcount::WORDCOUNT, wordcount::WORDCOUNT_FILES, tpcds::TPCDS, windowed::WINDOWED, alerts::ALERTS]
}

/// A job by name.
pub fn find(name: &str) -> Result<&'static CatalogJob, String> {
    jobs().iter().find(|job| job.definition.name == name).ok_or_else(|| {
        let known: Vec<&str> = jobs().iter().map(|job| job.definition.name).collect();
        format!("no job `{name}` in the catalog; known jobs: {}", known.join(", "))
    })
}

/// Every catalog job, as a cluster is handed them.
pub fn registry() -> JobRegistry {
    JobRegistry::of(jobs().iter().map(|job| job.definition)).expect("internal: catalog job names are unique")
}

impl CatalogJob {
    /// The name scenarios use.
    pub fn name(&self) -> &'static str {
        self.definition.name
    }

    /// Fills in defaults and rejects parameters the job does not declare.
    pub fn resolve_params(&self, given: &BTreeMap<String, u64>) -> Result<JobParams, String> {
        self.definition.resolve_params(given)
    }

    /// Builds and chains the job's plan.
    pub fn plan(&self, params: &JobParams, config: JobConfig) -> Result<JobGraph, String> {
        self.definition.plan(params, config)
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
        assert_eq!(params.0.len(), job.definition.params.len());
        let registered: Vec<&str> = registry().jobs().map(|job| job.name).collect();
        assert_eq!(registered, ["alerts", "tpcds", "windowed", "wordcount", "wordcount-files"]);
    }
}
