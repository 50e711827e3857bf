//! A scenario's input files: `input: { clicks: { file: data/clicks.csv, format: csv } }`.
//!
//! Each names an input the job declares ([`sluice_engine::api::InputSpec`]) and a file, relative
//! to the scenario file. Loading reads the file (at most [`MAX_INPUT_FILE_BYTES`]), resolves its
//! path to an absolute one (so that a replay file written elsewhere still finds it), and checks
//! it against the input's format: a CSV file's header must name the job's columns and every
//! record must hold values of their types; an error names the data file, its line and the
//! column. The files node serves it as `<input>/<file name>`, in place of any files the job
//! generates for that input.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sluice_catalog::{ExternalInput, SimJob};
use sluice_engine::api::InputFormat;
use sluice_engine::connectors::csv::check_file;

use super::error::ScenarioError;

/// The largest input file a scenario may name: a simulated run holds its input in memory.
pub const MAX_INPUT_FILE_BYTES: u64 = 256 << 20;

/// How an input file is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileFormat {
    /// CSV with a header line.
    Csv,
    /// Lines of text.
    Lines,
}

impl FileFormat {
    fn name(self) -> &'static str {
        match self {
            FileFormat::Csv => "csv",
            FileFormat::Lines => "lines",
        }
    }
}

/// One input file of a scenario.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct InputFile {
    /// The file: relative to the scenario file as written, absolute once loaded.
    pub file: PathBuf,
    /// How it is read: the format the job declares for the input.
    pub format: FileFormat,
    /// Its contents, read when the scenario was loaded.
    #[serde(skip)]
    pub contents: Arc<Vec<u8>>,
}

impl PartialEq for InputFile {
    fn eq(&self, other: &InputFile) -> bool {
        (&self.file, self.format, &self.contents) == (&other.file, other.format, &other.contents)
    }
}

impl InputFile {
    /// The path the files node serves it at, for the input called `input`.
    pub fn served_path(&self, input: &str) -> String {
        let name = self.file.file_name().map_or_else(|| "input".into(), |name| name.to_string_lossy());
        format!("{input}/{name}")
    }
}

/// Reads and checks every input file of a scenario loaded from `scenario_file`.
pub(super) fn load(
    inputs: &mut BTreeMap<String, InputFile>,
    job: &SimJob,
    scenario_file: &str,
    text: &str,
) -> Result<(), ScenarioError> {
    let about = |field: String, message: String| ScenarioError::about(text, &field, message).in_file(scenario_file);
    let base = Path::new(scenario_file).parent().unwrap_or(Path::new(""));
    for (name, input) in inputs.iter_mut() {
        let field = format!("input.{name}");
        let spec = job.definition.input(name).map_err(|message| about(field.clone(), message))?;
        if spec.format.name() != input.format.name() {
            let message = format!("job `{}` reads input `{name}` as {}", job.name(), spec.format.name());
            return Err(about(format!("{field}.format"), message));
        }
        let path = std::path::absolute(base.join(&input.file))
            .map_err(|error| about(format!("{field}.file"), error.to_string()))?;
        let contents = read_bounded(&path).map_err(|message| about(format!("{field}.file"), message))?;
        if let InputFormat::Csv(columns) = spec.format {
            check_file(&contents, columns).map_err(|error| ScenarioError {
                file: path.display().to_string(),
                line: Some(error.line),
                field: None,
                message: match error.column {
                    Some(column) => format!("column `{column}`: {}", error.message),
                    None => error.message,
                },
            })?;
        }
        input.file = path;
        input.contents = Arc::new(contents);
    }
    if job.generate_input.is_none()
        && let Some(missing) = job.definition.inputs.iter().find(|spec| !inputs.contains_key(spec.name))
    {
        let message = format!("job `{}` reads input `{}` and generates none; give it a file", job.name(), missing.name);
        return Err(about("input".to_string(), message));
    }
    Ok(())
}

fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    let opened = std::fs::File::open(path).map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
    let mut contents = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(opened, MAX_INPUT_FILE_BYTES + 1), &mut contents)
        .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
    if contents.len() as u64 > MAX_INPUT_FILE_BYTES {
        return Err(format!(
            "`{}` is larger than {} MiB, the most an input file may be",
            path.display(),
            MAX_INPUT_FILE_BYTES >> 20
        ));
    }
    Ok(contents)
}

/// The input a run reads: the job's generated input, if any, with the scenario's files in place
/// of the generated files of their inputs.
pub fn with_files(mut generated: ExternalInput, inputs: &BTreeMap<String, InputFile>) -> ExternalInput {
    for (name, input) in inputs {
        let prefix = format!("{name}/");
        generated.files.retain(|path, _| !path.starts_with(&prefix));
        generated.files.insert(input.served_path(name), input.contents.to_vec());
    }
    generated
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use sluice_catalog::{ExternalInput, JobParams, SimJob};
    use sluice_engine::api::{InputSpec, JobDefinition, StreamEnv};
    use sluice_engine::connectors::csv::{Column, ColumnType};
    use sluice_engine::connectors::{CsvSource, TxnStoreSink};
    use sluice_engine::prng::Prng;

    use super::*;
    use crate::scenario::{JobCatalog, Scenario};

    const POINTS: InputSpec = InputSpec {
        name: "points",
        format: InputFormat::Csv(&[Column::new("name", ColumnType::Text), Column::new("score", ColumnType::Int)]),
        doc: "names and scores",
    };

    fn build(env: &StreamEnv, _: &JobParams) {
        env.from_source(CsvSource::<(String, i64)>::new(&POINTS))
            .sink_to(TxnStoreSink::append("points", |point: &(String, i64)| (point.0.clone(), point.1.to_string())));
    }

    fn generate(_: &JobParams, _: &mut Prng) -> ExternalInput {
        let files = BTreeMap::from([("points/generated.csv".to_string(), b"name,score\ng,1\n".to_vec())]);
        ExternalInput { files, ..ExternalInput::default() }
    }

    const DEFINITION: JobDefinition =
        JobDefinition { name: "points", description: "points", params: &[], inputs: &[POINTS], build };
    static GENERATING: SimJob = SimJob {
        definition: DEFINITION,
        generate_input: Some(generate),
        reference: None,
        reference_summary: None,
        late: None,
        prefix_reference: None,
    };
    static FILES_ONLY: SimJob = SimJob {
        definition: DEFINITION,
        generate_input: None,
        reference: None,
        reference_summary: None,
        late: None,
        prefix_reference: None,
    };

    fn parse(job: &'static SimJob, directory: &Path, input: &str) -> Result<Scenario, ScenarioError> {
        let text = format!("name: points\njob: points\n{input}");
        let file = directory.join("scenario.yaml").display().to_string();
        Scenario::parse_with(&file, &text, JobCatalog::of([job]).unwrap())
    }

    #[test]
    fn a_scenario_file_replaces_the_generated_input_and_round_trips_as_an_absolute_path() {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::create_dir(scratch.path().join("data")).unwrap();
        std::fs::write(scratch.path().join("data/p.csv"), "name,score\na,5\n\"b,c\",-2\n").unwrap();
        let given = "input:\n  points: { file: data/p.csv, format: csv }\n";
        let scenario = parse(&GENERATING, scratch.path(), given).unwrap();
        let input = &scenario.input["points"];
        assert!(input.file.is_absolute() && input.file.ends_with("data/p.csv"), "{:?}", input.file);
        let files = with_files(generate(&JobParams::default(), &mut Prng::from_seed(1)), &scenario.input);
        assert_eq!(files.files.keys().collect::<Vec<_>>(), ["points/p.csv"], "the generated file is replaced");
        let again = Scenario::parse_with("elsewhere/replay.yaml", &scenario.to_yaml(), scenario.jobs.clone()).unwrap();
        assert_eq!(again, scenario);
        assert!(parse(&GENERATING, scratch.path(), "").is_ok(), "a generating job needs no file");
        assert!(parse(&FILES_ONLY, scratch.path(), "").unwrap_err().message.contains("give it a file"));
    }

    #[test]
    fn a_bad_input_file_is_named_with_its_line_and_column() {
        let scratch = tempfile::tempdir().unwrap();
        std::fs::write(scratch.path().join("p.csv"), "name,score\na,5\nb,five\n").unwrap();
        let error = parse(&FILES_ONLY, scratch.path(), "input:\n  points: { file: p.csv, format: csv }\n").unwrap_err();
        assert!(error.file.ends_with("p.csv"), "{error}");
        assert_eq!(error.line, Some(3));
        assert_eq!(error.message, "column `score`: `five` is not a whole number");
        let error =
            parse(&FILES_ONLY, scratch.path(), "input:\n  points: { file: p.csv, format: lines }\n").unwrap_err();
        assert_eq!((error.field.as_deref(), error.line), (Some("input.points.format"), Some(4)), "{error}");
        let error = parse(&FILES_ONLY, scratch.path(), "input:\n  pionts: { file: p.csv, format: csv }\n").unwrap_err();
        assert!(error.message.contains("no input `pionts`; its inputs: points"), "{error}");
        let error =
            parse(&FILES_ONLY, scratch.path(), "input:\n  points: { file: gone.csv, format: csv }\n").unwrap_err();
        assert_eq!(error.field.as_deref(), Some("input.points.file"), "{error}");
    }
}
