//! The job registry: the jobs a cluster can run, by name (what a user jar is to Flink).
//!
//! A [`JobDefinition`] is a job's name, its parameters, the named inputs it reads and the
//! function that builds its plan. The JobMaster and every TaskManager are handed the same
//! [`JobRegistry`] when they start, and build the same plan from a submitted job's name and
//! parameters; the engine knows no job of its own (the built-in ones are the `sluice-catalog`
//! crate's, registered like a user's). Invariant: a job's plan is a pure function of (name,
//! parameters, configuration), so that every process builds the same one.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::{JobConfig, StreamEnv};
use crate::duration::{format_duration, parse_duration};
use crate::graph::JobGraph;

/// The longest text parameter unless a job sets its own limit: parameters travel with every
/// submission.
pub const MAX_TEXT_PARAM_BYTES: usize = 1024;

/// The most a job may set as a text parameter's limit ([`ParamSpec::long_text`]): a SQL script.
pub const MAX_LONG_TEXT_PARAM_BYTES: usize = 64 * 1024;

/// A job's check of a text parameter: `Err` says what is wrong with the text.
pub type TextCheck = fn(&str) -> Result<(), String>;

/// What values a parameter takes, and its default.
#[derive(Clone, Copy, Debug)]
pub enum ParamKind {
    /// A whole number in `min..=max`.
    Int {
        /// The value when a scenario does not set it.
        default: u64,
        /// The least value.
        min: u64,
        /// The largest value: bounded so that one run fits the machine simulating it.
        max: u64,
    },
    /// Text of at most `max_bytes` bytes.
    Text {
        /// The value when a scenario does not set it.
        default: &'static str,
        /// The longest text: [`MAX_TEXT_PARAM_BYTES`] unless the job says.
        max_bytes: usize,
        /// What the job accepts, if it says: an error says what is wrong with the text (a program
        /// a job interprets, say), and `resolve_params` reports it as the parameter's error.
        check: Option<TextCheck>,
    },
    /// A duration written like `200ms` or `2s`, in `min..=max`.
    Duration {
        /// The value when a scenario does not set it.
        default: Duration,
        /// The shortest value.
        min: Duration,
        /// The longest value.
        max: Duration,
    },
}

/// A job parameter: its name, the values it may take, and meaning.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// The name used in scenarios.
    pub name: &'static str,
    /// Its values and default.
    pub kind: ParamKind,
    /// What it controls.
    pub doc: &'static str,
}

/// A parameter's value: a whole number, or text (a duration is text in `200ms` form).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum ParamValue {
    /// A whole number.
    Int(u64),
    /// Text, or a duration in canonical form.
    Text(String),
}

impl From<u64> for ParamValue {
    fn from(value: u64) -> ParamValue {
        ParamValue::Int(value)
    }
}

impl From<&str> for ParamValue {
    fn from(text: &str) -> ParamValue {
        ParamValue::Text(text.to_string())
    }
}

impl fmt::Display for ParamValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParamValue::Int(value) => write!(f, "{value}"),
            ParamValue::Text(text) => write!(f, "{text:?}"),
        }
    }
}

impl ParamSpec {
    /// A whole-number parameter in `min..=max`.
    pub const fn int(name: &'static str, default: u64, min: u64, max: u64, doc: &'static str) -> ParamSpec {
        ParamSpec { name, kind: ParamKind::Int { default, min, max }, doc }
    }

    /// A text parameter.
    pub const fn text(name: &'static str, default: &'static str, doc: &'static str) -> ParamSpec {
        ParamSpec { name, kind: ParamKind::Text { default, check: None, max_bytes: MAX_TEXT_PARAM_BYTES }, doc }
    }

    /// A text parameter that only takes what `check` accepts.
    pub const fn checked_text(
        name: &'static str,
        default: &'static str,
        check: TextCheck,
        doc: &'static str,
    ) -> ParamSpec {
        ParamSpec { name, kind: ParamKind::Text { default, check: Some(check), max_bytes: MAX_TEXT_PARAM_BYTES }, doc }
    }

    /// A checked text parameter of up to `max_bytes` bytes (at most
    /// [`MAX_LONG_TEXT_PARAM_BYTES`]): a program longer than a line, like a SQL script.
    pub const fn long_text(
        name: &'static str,
        default: &'static str,
        check: TextCheck,
        max_bytes: usize,
        doc: &'static str,
    ) -> ParamSpec {
        assert!(max_bytes <= MAX_LONG_TEXT_PARAM_BYTES, "a long text parameter's limit is at most 64 KiB");
        ParamSpec { name, kind: ParamKind::Text { default, check: Some(check), max_bytes }, doc }
    }

    /// A duration parameter in `min..=max`.
    pub const fn duration(
        name: &'static str,
        default: Duration,
        min: Duration,
        max: Duration,
        doc: &'static str,
    ) -> ParamSpec {
        ParamSpec { name, kind: ParamKind::Duration { default, min, max }, doc }
    }

    /// The value when a scenario does not set it.
    pub fn default_value(&self) -> ParamValue {
        match self.kind {
            ParamKind::Int { default, .. } => ParamValue::Int(default),
            ParamKind::Text { default, .. } => ParamValue::Text(default.to_string()),
            ParamKind::Duration { default, .. } => ParamValue::Text(format_duration(default)),
        }
    }

    /// Checks a value, and returns it in canonical form (a duration as [`format_duration`]
    /// writes it).
    pub fn check(&self, value: &ParamValue) -> Result<ParamValue, String> {
        let name = self.name;
        match (self.kind, value) {
            (ParamKind::Int { min, max, .. }, ParamValue::Int(number)) => {
                if (min..=max).contains(number) {
                    Ok(value.clone())
                } else {
                    Err(format!("parameter `{name}` must be in {min}..={max}, not {number}"))
                }
            }
            (ParamKind::Int { .. }, ParamValue::Text(text)) => {
                Err(format!("parameter `{name}` is a whole number, not {text:?}"))
            }
            (ParamKind::Text { max_bytes, .. }, ParamValue::Text(text)) if text.len() > max_bytes => {
                Err(format!("parameter `{name}` is {} bytes long; the most is {max_bytes}", text.len()))
            }
            (ParamKind::Text { check, .. }, ParamValue::Text(text)) => match check.map(|check| check(text)) {
                Some(Err(error)) => Err(format!("parameter `{name}`: {error}")),
                _ => Ok(value.clone()),
            },
            (ParamKind::Text { .. }, ParamValue::Int(number)) => self.check(&ParamValue::Text(number.to_string())),
            (ParamKind::Duration { min, max, .. }, ParamValue::Text(text)) => {
                let duration = parse_duration(text).map_err(|error| format!("parameter `{name}`: {error}"))?;
                if (min..=max).contains(&duration) {
                    Ok(ParamValue::Text(format_duration(duration)))
                } else {
                    Err(format!(
                        "parameter `{name}` must be in {}..={}, not {text}",
                        format_duration(min),
                        format_duration(max)
                    ))
                }
            }
            (ParamKind::Duration { .. }, ParamValue::Int(number)) => {
                Err(format!("parameter `{name}` is a duration; write it with its unit, like {number}ms"))
            }
        }
    }
}

/// Parameter values of a job instance, defaults filled in and checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JobParams(pub BTreeMap<String, ParamValue>);

impl JobParams {
    /// Whole-number values, by name (for tests and generators).
    pub fn ints<'a>(values: impl IntoIterator<Item = (&'a str, u64)>) -> JobParams {
        JobParams(values.into_iter().map(|(name, value)| (name.to_string(), ParamValue::Int(value))).collect())
    }

    fn value(&self, name: &str) -> &ParamValue {
        self.0.get(name).unwrap_or_else(|| panic!("internal: parameter `{name}` was not declared by the job"))
    }

    /// The value of a whole-number parameter the job declared.
    pub fn get(&self, name: &str) -> u64 {
        match self.value(name) {
            ParamValue::Int(value) => *value,
            ParamValue::Text(_) => panic!("internal: parameter `{name}` is not a whole number"),
        }
    }

    /// The value of a text parameter the job declared.
    pub fn text(&self, name: &str) -> &str {
        match self.value(name) {
            ParamValue::Text(text) => text,
            ParamValue::Int(_) => panic!("internal: parameter `{name}` is not text"),
        }
    }

    /// The value of a duration parameter the job declared.
    pub fn duration(&self, name: &str) -> Duration {
        parse_duration(self.text(name))
            .unwrap_or_else(|error| panic!("internal: parameter `{name}` was checked as a duration: {error}"))
    }
}

/// How an input's files are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputFormat {
    /// Lines of text.
    Lines,
    /// CSV with a header line naming these columns, in this order.
    Csv(&'static [Column]),
}

impl InputFormat {
    /// The name scenarios use for it.
    pub fn name(&self) -> &'static str {
        match self {
            InputFormat::Lines => "lines",
            InputFormat::Csv(_) => "csv",
        }
    }
}

/// A named input a job reads from files (a scenario's `input.<name>`): the directory `<name>/`
/// of the files system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InputSpec {
    /// The name scenarios use, and the directory its files are served under.
    pub name: &'static str,
    /// How its files are read.
    pub format: InputFormat,
    /// What it holds.
    pub doc: &'static str,
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
    /// The named file inputs it reads (none for a job that reads only the log).
    pub inputs: &'static [InputSpec],
    /// Builds the plan on an environment.
    pub build: fn(&StreamEnv, &JobParams),
}

impl fmt::Debug for JobDefinition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl JobDefinition {
    /// Fills in defaults and rejects parameters the job does not declare or values it does not
    /// take.
    pub fn resolve_params(&self, given: &BTreeMap<String, ParamValue>) -> Result<JobParams, String> {
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
        let mut params = BTreeMap::new();
        for spec in self.params {
            let value = match given.get(spec.name) {
                Some(value) => spec.check(value)?,
                None => spec.default_value(),
            };
            params.insert(spec.name.to_string(), value);
        }
        Ok(JobParams(params))
    }

    /// The input called `name`; the error lists the job's inputs.
    pub fn input(&self, name: &str) -> Result<&InputSpec, String> {
        self.inputs.iter().find(|input| input.name == name).ok_or_else(|| {
            let known: Vec<&str> = self.inputs.iter().map(|input| input.name).collect();
            match known.is_empty() {
                true => format!("job `{}` reads no input files", self.name),
                false => format!("job `{}` has no input `{name}`; its inputs: {}", self.name, known.join(", ")),
            }
        })
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

/// The type of a CSV column (its check of a field is the CSV connector's,
/// `connectors::csv`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// Any text.
    Text,
    /// A signed whole number (`i64`); event times are milliseconds.
    Int,
    /// A non-negative whole number (`u64`).
    UInt,
    /// `true` or `false`.
    Bool,
    /// A signed whole number or an empty field, SQL's NULL (`Option<i64>`).
    OptionalInt,
}

/// A named, typed column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Its name, as the header line writes it.
    pub name: &'static str,
    /// Its type.
    pub kind: ColumnType,
}

impl Column {
    /// A column of `kind`.
    pub const fn new(name: &'static str, kind: ColumnType) -> Column {
        Column { name, kind }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connectors::{LogSource, TxnStoreSink};
    use crate::graph::ExecutionMode;

    const PARAMS: &[ParamSpec] = &[
        ParamSpec::int("copies", 1, 1, 3, "sinks"),
        ParamSpec::text("label", "none", "a label"),
        ParamSpec::checked_text("shape", "round", shape, "a shape"),
        ParamSpec::duration(
            "pause",
            Duration::from_millis(200),
            Duration::from_millis(1),
            Duration::from_secs(1),
            "a pause",
        ),
    ];

    fn shape(text: &str) -> Result<(), String> {
        match text {
            "round" | "square" => Ok(()),
            _ => Err(format!("`{text}` is no shape: round or square")),
        }
    }

    fn copies(env: &StreamEnv, params: &JobParams) {
        let numbers = env.from_source(LogSource::<u64>::new("numbers"));
        for table in ["t0", "t1", "t2"].into_iter().take(params.get("copies") as usize) {
            numbers
                .map(|value| value + 1)
                .sink_to(TxnStoreSink::append(table, |value: &u64| (value.to_string(), String::new())));
        }
    }

    const COPIES: JobDefinition =
        JobDefinition { name: "copies", description: "test", params: PARAMS, inputs: &[], build: copies };

    fn given(name: &str, value: impl Into<ParamValue>) -> BTreeMap<String, ParamValue> {
        BTreeMap::from([(name.to_string(), value.into())])
    }

    #[test]
    fn a_registered_job_plans_with_its_parameters_and_names_are_checked() {
        let registry = JobRegistry::of([COPIES]).unwrap();
        let job = registry.find("copies").unwrap();
        let params = job.resolve_params(&given("copies", 2)).unwrap();
        let plan = job.plan(&params, JobConfig::new(ExecutionMode::Streaming, 1)).unwrap();
        let operators: usize = plan.vertices.iter().map(|vertex| vertex.chain.len()).sum();
        assert_eq!(operators, 1 + 2 * 2, "a source and two map-sink branches: {:?}", plan.vertices);
        let error = registry.find("copy").unwrap_err();
        assert!(error.contains("`copy`") && error.contains("copies"), "{error}");
        let error = job.resolve_params(&given("copeis", 2)).unwrap_err();
        assert!(error.contains("copeis") && error.contains("copies"), "{error}");
        let error = job.resolve_params(&given("copies", 4)).unwrap_err();
        assert!(error.contains("1..=3"), "{error}");
        assert_eq!(job.resolve_params(&BTreeMap::new()).unwrap().get("copies"), 1);
        let error = JobRegistry::of([COPIES, COPIES]).unwrap_err();
        assert!(job.input("clicks").unwrap_err().contains("reads no input files"));
        assert!(error.contains("two jobs") && error.contains("copies"), "{error}");
    }

    #[test]
    fn text_and_duration_parameters_are_checked_and_kept_in_canonical_form() {
        let defaults = COPIES.resolve_params(&BTreeMap::new()).unwrap();
        assert_eq!((defaults.text("label"), defaults.duration("pause")), ("none", Duration::from_millis(200)));
        let params = COPIES.resolve_params(&given("pause", ParamValue::Text("1000ms".to_string()))).unwrap();
        assert_eq!(params.0["pause"], ParamValue::Text("1s".to_string()));
        assert_eq!(params.duration("pause"), Duration::from_secs(1));
        let too_long = COPIES.resolve_params(&given("pause", ParamValue::Text("2s".to_string()))).unwrap_err();
        assert!(too_long.contains("`pause` must be in 1ms..=1s, not 2s"), "{too_long}");
        let bare = COPIES.resolve_params(&given("pause", 5)).unwrap_err();
        assert!(bare.contains("write it with its unit, like 5ms"), "{bare}");
        let unit = COPIES.resolve_params(&given("pause", ParamValue::Text("5 weeks".to_string()))).unwrap_err();
        assert!(unit.contains("`pause`"), "{unit}");
        let text = COPIES.resolve_params(&given("copies", ParamValue::Text("two".to_string()))).unwrap_err();
        assert!(text.contains("`copies` is a whole number, not \"two\""), "{text}");
        assert_eq!(COPIES.resolve_params(&given("label", 7)).unwrap().text("label"), "7");
        let long = COPIES.resolve_params(&given("label", ParamValue::Text("x".repeat(2000)))).unwrap_err();
        assert!(long.contains("2000 bytes long"), "{long}");
        assert_eq!(COPIES.resolve_params(&given("shape", "square")).unwrap().text("shape"), "square");
        let odd = COPIES.resolve_params(&given("shape", 3)).unwrap_err();
        assert_eq!(odd, "parameter `shape`: `3` is no shape: round or square");
    }
}
