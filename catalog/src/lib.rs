//! Sluice's built-in jobs, each with a plain sequential reference implementation.
//!
//! A [`SimJob`] is a job as the engine runs it (its [`JobDefinition`]: name, parameters, inputs,
//! the function that builds its plan), registered with a cluster through [`registry`] as a user's
//! own job would be: the engine does not depend on this crate. Each job also says how to generate
//! its input (the log's topics and the input files) from a seeded [`Prng`], and computes, with
//! ordinary sequential Rust, the rows its sinks must commit in each mode: the oracle the
//! simulation checks against. [`SimJob`] and the types around it are also what a user's crate
//! declares its own jobs with (`sluice-sim` re-exports them).
//!
//! Depends on: the engine's public API only (`sluice_engine::api`, `connectors`, `graph`). It owns
//! the jobs and their oracles, and must never reach into the engine's runtime. Invariant: a job's
//! plan is a pure function of (name, parameters, configuration).

pub mod alerts;
pub mod generated;
pub mod sql;
mod tpcds;
pub mod tpcds_queries;
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
pub use sluice_engine::api::{InputFormat, InputSpec, JobDefinition, JobParams, JobRegistry, ParamSpec, ParamValue};
use sluice_engine::connectors::{Row, SinkKind};
use sluice_engine::graph::{ExecutionMode, JobGraph};
use sluice_engine::prng::Prng;
use sluice_engine::time::TimeWindow;

/// What the external systems hold for a job to read: the log's topics and the input files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalInput {
    /// The log's topics by name: partitions of encoded records.
    pub topics: BTreeMap<String, Vec<Vec<Vec<u8>>>>,
    /// The files the files system serves, by path (`<input>/<file>` for a named input).
    pub files: BTreeMap<String, Vec<u8>>,
}

impl ExternalInput {
    /// Total records over all topics.
    pub fn record_count(&self) -> usize {
        self.topics.values().flatten().map(Vec::len).sum()
    }

    /// The files of the input called `name`, in path order.
    pub fn input_files(&self, name: &str) -> impl Iterator<Item = (&str, &[u8])> {
        let prefix = format!("{name}/");
        self.files
            .iter()
            .filter(move |(path, _)| path.starts_with(&prefix))
            .map(|(path, contents)| (path.as_str(), contents.as_slice()))
    }
}

/// What one sink table must hold after the job committed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedTable {
    /// How the table applies rows.
    pub kind: SinkKind,
    /// The rows, sorted. With [`Updates::Exact`], every row the job must commit (a multiset); with
    /// [`Updates::CountPerKey`], the final row of each key; with [`Updates::Digest`], the final
    /// row of each key whose final value is known (of an upsert table), if any.
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
    /// Only the final row of each key: an updating stream with retractions (a join or an
    /// aggregate over a changelog), whose intermediate updates and deletions depend on the order
    /// its inputs interleave. The table must end at exactly these rows, no key more.
    FinalOnly,
    /// Every committed row is known, as with [`Updates::Exact`], but summarized per key (a
    /// large update stream, not held row by row): the committed updates of each key must have
    /// the same [`UpdateDigest`].
    Digest(BTreeMap<String, UpdateDigest>),
}

/// An order-free summary of the values one key was updated to: how many, and the wrapping sum
/// of a 64-bit mix of each value's hash (a multiset hash: equal multisets always agree; a lost
/// or duplicated update changes the count, a wrong value changes the sum but for a 2⁻⁶⁴ chance).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpdateDigest {
    /// How many updates.
    pub count: u64,
    /// The sum of the values' mixed hashes.
    pub sum: u64,
}

impl UpdateDigest {
    /// Adds one update to `value`.
    pub fn add(&mut self, value: &str) {
        self.count += 1;
        self.sum = self.sum.wrapping_add(mix(sluice_engine::prng::fnv1a64(value.as_bytes())));
    }

    /// Adds one update that deleted the key (a tombstone: no value).
    pub fn add_deletion(&mut self) {
        self.count += 1;
        // A domain of its own: no value's hash is mixed from this constant but by a 2⁻⁶⁴ chance.
        self.sum = self.sum.wrapping_add(mix(0x9e37_79b9_7f4a_7c15));
    }

    /// Adds one row's update: its value, or its key's deletion.
    pub fn add_row(&mut self, value: Option<&str>) {
        match value {
            Some(value) => self.add(value),
            None => self.add_deletion(),
        }
    }

    /// The digest of a multiset of values.
    pub fn of<'a>(values: impl IntoIterator<Item = &'a str>) -> UpdateDigest {
        let mut digest = UpdateDigest::default();
        values.into_iter().for_each(|value| digest.add(value));
        digest
    }
}

/// SplitMix64's finalizer: spreads FNV's weak low bits over the whole word before summing.
fn mix(mut hash: u64) -> u64 {
    hash = (hash ^ (hash >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash = (hash ^ (hash >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

impl ExpectedTable {
    /// This table with an exact update stream summarized per key ([`Updates::Digest`]), without
    /// final rows (a multiset of rows does not say which came last); other tables as they are.
    pub fn summarized(self) -> ExpectedTable {
        if self.updates != Updates::Exact {
            return self;
        }
        let mut digests: BTreeMap<String, UpdateDigest> = BTreeMap::new();
        for row in &self.rows {
            digests.entry(row.key.clone()).or_default().add_row(row.value.as_deref());
        }
        ExpectedTable { kind: self.kind, rows: Vec::new(), updates: Updates::Digest(digests) }
    }
}

/// What a job must commit, by table.
pub type ExpectedOutput = BTreeMap<String, ExpectedTable>;

/// A job's reference with exact update streams summarized per key ([`SimJob::reference_summary`]).
pub type ReferenceSummary = fn(&JobParams, &ExternalInput, ExecutionMode) -> Option<ExpectedOutput>;

/// A job as a simulation runs and judges it: what a cluster runs, where its input comes from,
/// and what it must commit. The built-in jobs are these; a user's crate declares its own.
pub struct SimJob {
    /// The job as a cluster runs it: name (the one scenarios use), parameters, inputs, program.
    pub definition: JobDefinition,
    /// Generates the external input from a seed; `None` for a job that reads only the files a
    /// scenario gives it (`input:`). A scenario's files replace the generated files of their inputs.
    pub generate_input: Option<fn(&JobParams, &mut Prng) -> ExternalInput>,
    /// The sequential oracle: the rows the job must commit in a mode. `None` for a job without
    /// one: it is checked by reference-free oracles only (`sluice_sim::Oracle`), and its file
    /// sinks' tables are read as append tables.
    pub reference: Option<fn(&JobParams, &ExternalInput, ExecutionMode) -> ExpectedOutput>,
    /// The same oracle with exact update streams summarized per key ([`Updates::Digest`]),
    /// computed without building a row per update: linear, and memory by keys rather than
    /// records. `None` when the job has none, or (returned) in a mode it does not summarize.
    /// The full reference runs again only to show the witnesses of a failure.
    pub reference_summary: Option<ReferenceSummary>,
    /// Where the job sends its windows' late elements, if it does: then its windowed tables are
    /// judged against their reference with each element left out of exactly the windows the
    /// run left it out of, and streaming == batch compares the other tables.
    pub late: Option<LateData>,
    /// The reference over a prefix of the input, for the checkpoint-prefix oracle; `None` for a
    /// job without one.
    pub prefix_reference: Option<PrefixReference>,
}

/// How far a job's sources had read when a checkpoint's barrier passed them: log topic →
/// partition → records read (a partition not named: none).
pub type ReadInput = BTreeMap<String, BTreeMap<u32, u64>>;

/// The tables a streaming run must have committed once a checkpoint completed, computed by the
/// job's sequential reference over exactly the input its sources had read at that checkpoint's
/// barrier (Flink's dynamic table: the result of the query on the input's prefix).
pub type PrefixReference = fn(&JobParams, &ReadInput) -> BTreeMap<String, PrefixTable>;

/// One table of a [`PrefixReference`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrefixTable {
    /// The table over the prefix, as a batch run would commit it (an upsert table's final rows).
    pub table: ExpectedTable,
    /// Whether the committed table must equal it. A table fed by event-time windows holds only
    /// the windows the watermark had closed: then what is committed must be a part of it.
    pub complete: bool,
}

/// A job's late data: the append table its windows' late-data side output commits the elements
/// late for every window to, the tables those windows feed, and their reference given which
/// elements were left out of which windows.
///
/// In streaming, a window operator leaves an element out of each of its windows that had fired
/// when it arrived (Flink's rule: `end - 1 <= watermark`); with sliding windows that can be its
/// earliest windows only, and it is added to the rest and is not late. An element late for
/// every window goes to the side output. The harness reads from the trace which elements were
/// left out of which windows (as far as that shaped the committed output: work a restart threw
/// away does not count) and hands them to `windowed_reference`; batch leaves nothing out.
#[derive(Clone, Copy, Debug)]
pub struct LateData {
    /// The append table the late elements are committed to.
    pub table: &'static str,
    /// The tables the windows that leave elements out feed (every other table sees them all).
    pub windowed: &'static [&'static str],
    /// The event time of one of its rows; `None` if the row is not a late element.
    pub timestamp: fn(&Row) -> Option<i64>,
    /// The windowed tables a run must commit when its windows left each of `late`'s elements out
    /// of exactly the windows it names: the reference of those tables, asking
    /// [`LateElements::missed`] for each element and window it would count.
    pub windowed_reference: fn(&JobParams, &ExternalInput, &mut LateElements) -> ExpectedOutput,
}

/// The elements a run's windows left out of windows that had fired, each with those windows;
/// a windowed reference asks it, element by element and window by window, what to leave out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LateElements {
    /// (element as `{:?}` shows it, window start, window end) → times left out.
    missed: BTreeMap<(String, i64, i64), u64>,
}

impl LateElements {
    /// None left out (batch, or a streaming run where nothing was late).
    pub fn none() -> LateElements {
        LateElements::default()
    }

    /// Records that `element` (as `{:?}` shows it) was left out of `[start, end)` once more.
    pub fn add(&mut self, element: String, (start, end): (i64, i64)) {
        *self.missed.entry((element, start, end)).or_insert(0) += 1;
    }

    /// Whether `element` was left out of `window`: true as many times as it was (the same
    /// element twice in the input, left out once, is counted once). Ask once per element of the
    /// input and window it belongs to.
    pub fn missed(&mut self, element: &impl fmt::Debug, window: TimeWindow) -> bool {
        let key = (format!("{element:?}"), window.start, window.end);
        match self.missed.get_mut(&key) {
            Some(count) => {
                *count -= 1;
                if *count == 0 {
                    self.missed.remove(&key);
                }
                true
            }
            None => false,
        }
    }

    /// Whether nothing was left out (or everything left out was asked for).
    pub fn is_empty(&self) -> bool {
        self.missed.is_empty()
    }

    /// What was left out that the reference never asked for, as `element in [start, end)`: an
    /// element the input does not hold in that window (or a reference that does not ask).
    pub fn unasked(&self) -> Vec<String> {
        self.missed.iter().map(|((element, start, end), _)| format!("{element} in [{start}, {end})")).collect()
    }
}

impl fmt::Debug for SimJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.definition.name)
    }
}

/// The built-in jobs.
pub fn jobs() -> &'static [SimJob] {
    &[
        wordcount::WORDCOUNT,
        wordcount::WORDCOUNT_FILES,
        tpcds::TPCDS,
        windowed::WINDOWED,
        alerts::ALERTS,
        generated::GENERATED,
        sql::SQL,
        tpcds_queries::Q3,
        tpcds_queries::Q7,
        tpcds_queries::Q19,
        tpcds_queries::Q42,
        tpcds_queries::Q55,
        tpcds_queries::Q64,
        tpcds_queries::Q72,
        tpcds_queries::Q95,
    ]
}

/// A job by name.
pub fn find(name: &str) -> Result<&'static SimJob, String> {
    jobs().iter().find(|job| job.definition.name == name).ok_or_else(|| {
        let known: Vec<&str> = jobs().iter().map(|job| job.definition.name).collect();
        format!("no job `{name}` in the catalog; known jobs: {}", known.join(", "))
    })
}

/// Every catalog job, as a cluster is handed them.
pub fn registry() -> JobRegistry {
    JobRegistry::of(jobs().iter().map(|job| job.definition)).expect("internal: catalog job names are unique")
}

impl SimJob {
    /// The name scenarios use.
    pub fn name(&self) -> &'static str {
        self.definition.name
    }

    /// Fills in defaults and rejects parameters the job does not declare.
    pub fn resolve_params(&self, given: &BTreeMap<String, ParamValue>) -> Result<JobParams, String> {
        self.definition.resolve_params(given)
    }

    /// What the job must commit in `mode`, if it has a reference.
    pub fn expected(&self, params: &JobParams, input: &ExternalInput, mode: ExecutionMode) -> Option<ExpectedOutput> {
        self.reference.map(|reference| reference(params, input, mode))
    }

    /// What the job must commit in `mode`, summarized per key where the job summarizes a large
    /// input ([`SimJob::reference_summary`]); else [`SimJob::expected`].
    pub fn expected_summary(
        &self,
        params: &JobParams,
        input: &ExternalInput,
        mode: ExecutionMode,
    ) -> Option<ExpectedOutput> {
        let summary = self.reference_summary.and_then(|summary| summary(params, input, mode));
        summary.or_else(|| self.expected(params, input, mode))
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
        let error = job.resolve_params(&[("wrods".to_string(), 3.into())].into_iter().collect()).unwrap_err();
        assert!(error.contains("wrods") && error.contains("words"), "{error}");
        let params = job.resolve_params(&BTreeMap::new()).unwrap();
        assert_eq!(params.0.len(), job.definition.params.len());
        let registered: Vec<&str> = registry().jobs().map(|job| job.name).collect();
        let tpcds_queries =
            ["tpcds-q19", "tpcds-q3", "tpcds-q42", "tpcds-q55", "tpcds-q64", "tpcds-q7", "tpcds-q72", "tpcds-q95"];
        let mut expected = vec!["alerts", "generated", "sql", "tpcds"];
        expected.extend(tpcds_queries);
        expected.extend(["windowed", "wordcount", "wordcount-files"]);
        assert_eq!(registered, expected);
    }
}
