//! The job registry: the jobs a cluster can run, by name (what a user jar is to Flink).
//!
//! A [`JobDefinition`] is a job's name, its parameters and the function that builds its plan.
//! The JobMaster and every TaskManager are handed the same [`JobRegistry`] when they start, and
//! build the same plan from a submitted job's name and parameters; the engine knows no job of
//! its own (the built-in ones are the `sluice-catalog` crate's, registered like a user's).
//! Invariant: a job's plan is a pure function of (name, parameters, configuration), so that
//! every process builds the same one.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::{JobConfig, StreamEnv};
use crate::graph::JobGraph;

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

/// What a cluster needs of a job to run it.
#[derive(Clone, Copy)]
pub struct JobDefinition {
    /// The name a client submits.
    pub name: &'static str,
    /// One line on what it computes.
    pub description: &'static str,
    /// Its parameters.
    pub params: &'static [ParamSpec],
    /// Builds the plan on an environment.
    pub build: fn(&StreamEnv, &JobParams),
}

impl fmt::Debug for JobDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl JobDefinition {
    /// Fills in defaults and rejects parameters the job does not declare or values out of range.
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

/// The jobs a cluster can run, by name; cheap to clone (processes share one).
#[derive(Clone, Debug, Default)]
pub struct JobRegistry {
    jobs: Arc<BTreeMap<&'static str, JobDefinition>>,
}

impl JobRegistry {
    /// A registry of `jobs`; two jobs of one name are refused.
    pub fn of(jobs: impl IntoIterator<Item = JobDefinition>) -> Result<JobRegistry, String> {
        let mut registry = BTreeMap::new();
        for job in jobs {
            if registry.insert(job.name, job).is_some() {
                return Err(format!("two jobs are registered as `{}`", job.name));
            }
        }
        Ok(JobRegistry { jobs: Arc::new(registry) })
    }

    /// A job by name; the error lists the registered ones.
    pub fn find(&self, name: &str) -> Result<&JobDefinition, String> {
        self.jobs.get(name).ok_or_else(|| {
            let known: Vec<&str> = self.jobs.keys().copied().collect();
            format!("no job `{name}` is registered; known jobs: {}", known.join(", "))
        })
    }

    /// Every registered job, by name.
    pub fn jobs(&self) -> impl Iterator<Item = &JobDefinition> {
        self.jobs.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::{LogSource, TxnStoreSink};
    use crate::graph::ExecutionMode;

    const PARAMS: &[ParamSpec] = &[ParamSpec { name: "copies", default: 1, min: 1, max: 3, doc: "sinks" }];

    fn copies(env: &StreamEnv, params: &JobParams) {
        let numbers = env.from_source(LogSource::<u64>::new("numbers"));
        for table in ["t0", "t1", "t2"].into_iter().take(params.get("copies") as usize) {
            numbers
                .map(|value| value + 1)
                .sink_to(TxnStoreSink::append(table, |value: &u64| (value.to_string(), String::new())));
        }
    }

    const COPIES: JobDefinition = JobDefinition { name: "copies", description: "test", params: PARAMS, build: copies };

    #[test]
    fn a_registered_job_plans_with_its_parameters_and_names_are_checked() {
        let registry = JobRegistry::of([COPIES]).unwrap();
        let job = registry.find("copies").unwrap();
        let params = job.resolve_params(&[("copies".to_string(), 2)].into_iter().collect()).unwrap();
        let plan = job.plan(&params, JobConfig::new(ExecutionMode::Streaming, 1)).unwrap();
        let operators: usize = plan.vertices.iter().map(|vertex| vertex.chain.len()).sum();
        assert_eq!(operators, 1 + 2 * 2, "a source and two map-sink branches: {:?}", plan.vertices);
        let error = registry.find("copy").unwrap_err();
        assert!(error.contains("`copy`") && error.contains("copies"), "{error}");
        let error = job.resolve_params(&[("copeis".to_string(), 2)].into_iter().collect()).unwrap_err();
        assert!(error.contains("copeis") && error.contains("copies"), "{error}");
        let error = job.resolve_params(&[("copies".to_string(), 4)].into_iter().collect()).unwrap_err();
        assert!(error.contains("1..=3"), "{error}");
        assert_eq!(job.resolve_params(&BTreeMap::new()).unwrap().get("copies"), 1);
        let error = JobRegistry::of([COPIES, COPIES]).unwrap_err();
        assert!(error.contains("two jobs") && error.contains("copies"), "{error}");
    }
}
