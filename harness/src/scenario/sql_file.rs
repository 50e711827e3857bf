//! A scenario's SQL files: `sql: queries/q5.sql`, or a list (`sql: [nexmark-ddl.sql, q5.sql]`,
//! read in order as one script, as Flink's Nexmark runs its DDL before each query), in place
//! of `job` and `params.script`.
//!
//! Loading reads each file relative to the scenario file, plans the script once (so that an
//! error names the SQL file, its line and column, not the scenario's), and makes the scenario
//! the `sql` job with the script as its parameter: a replay file holds the script itself and
//! replays without the files.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sluice_catalog::ParamValue;
use sluice_catalog::sql::{MAX_SCRIPT_BYTES, Plan, SQL, plan_text};

use super::error::ScenarioError;
use super::{JobCatalog, Scenario};

/// `sql:` as written: one file or several.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum SqlFiles {
    /// One script file.
    One(PathBuf),
    /// Files read in order as one script.
    Several(Vec<PathBuf>),
}

impl SqlFiles {
    fn paths(&self) -> &[PathBuf] {
        match self {
            SqlFiles::One(path) => std::slice::from_ref(path),
            SqlFiles::Several(paths) => paths,
        }
    }
}

/// The most files `sql:` may list (a script is at most 32 KiB in all, whatever the count).
const MAX_FILES: usize = 64;

/// Resolves `sql:` (if given) into the `sql` job and its `script` parameter; without it, `job`
/// must be given.
pub(super) fn load(scenario: &mut Scenario, scenario_file: &str, text: &str) -> Result<(), ScenarioError> {
    let about = |field: &str, message: String| ScenarioError::about(text, field, message).in_file(scenario_file);
    let Some(files) = scenario.sql.take() else {
        if scenario.job.is_empty() {
            // Placed where serde places a missing field: at the mapping, its first field's line.
            let message = "missing field `job` (or `sql`: SQL script files)".to_string();
            let first = text.lines().position(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'));
            let error = ScenarioError { line: first.map(|index| index + 1), ..about("job", message) };
            return Err(error);
        }
        return Ok(());
    };
    if !scenario.job.is_empty() {
        return Err(about("sql", format!("give `job` or `sql`, not both (`sql` runs the `{}` job)", SQL.name())));
    }
    if scenario.params.contains_key("script") {
        return Err(about("params.script", "the script is the `sql` files'; give one or the other".to_string()));
    }
    let base = Path::new(scenario_file).parent().unwrap_or(Path::new(""));
    let paths: Vec<PathBuf> = files.paths().iter().map(|path| base.join(path)).collect();
    let (script, plan) = read_script(&paths).map_err(|error| match error {
        ScriptError::Files(message) => about("sql", message),
        ScriptError::Sql(error) => error,
    })?;
    if plan.inserts.is_empty() {
        return Err(about("sql", "the script has no INSERT INTO: nothing to run (EXPLAIN only prints a plan)".into()));
    }
    scenario.job = SQL.name().to_string();
    scenario.params.insert("script".to_string(), ParamValue::Text(script));
    Ok(())
}

/// What `sluice sql` runs: a script, as a scenario of the `sql` job on a small cluster (one
/// TaskManager more than the parallelism, two slots each), both modes, checkpoints every
/// 100 ms, one seed, and `faults` random crashes and partition losses.
pub struct SqlRun<'a> {
    /// The scenario's name (the script's file name).
    pub name: &'a str,
    /// The script.
    pub script: &'a str,
    /// The job's parallelism.
    pub parallelism: u32,
    /// Random faults per run.
    pub faults: u32,
    /// The seed.
    pub seed: u64,
}

impl SqlRun<'_> {
    /// The scenario, validated as a file is; errors name `sluice sql`'s settings.
    pub fn scenario(&self, jobs: JobCatalog) -> Result<Scenario, ScenarioError> {
        let faults = if self.faults == 0 {
            String::new()
        } else {
            format!("random_faults: {{ count: {}, kinds: [tm-crash, jm-crash, partition-loss] }}\n", self.faults)
        };
        let text = format!(
            "name: sql\njob: {}\ncluster: {{ task_managers: {}, slots_per_task_manager: 2 }}\nparallelism: {}\n\
             modes: [streaming, batch]\ncheckpoints: {{ interval: 100ms }}\nseeds: {}\n{faults}",
            SQL.name(),
            self.parallelism + 1,
            self.parallelism,
            self.seed,
        );
        let mut scenario = Scenario::parse_with("sluice sql", &text, jobs)?;
        scenario.name = self.name.to_string();
        scenario.params.insert("script".to_string(), ParamValue::Text(self.script.to_string()));
        super::validate::validate(&scenario, scenario.job(), "")?;
        Ok(scenario)
    }
}

/// Why a script cannot be read: its files (an error about `sql:` or the command line), or
/// its SQL (an error in a file, with line and column).
#[derive(Debug)]
pub enum ScriptError {
    /// A file cannot be read, or there are too many or too few.
    Files(String),
    /// The SQL is wrong, in a file, at a line and column.
    Sql(ScenarioError),
}

/// Reads `paths` in order as one script and plans it: the script, and its plan (which may
/// hold only `EXPLAIN` statements).
pub fn read_script(paths: &[PathBuf]) -> Result<(String, Plan), ScriptError> {
    if paths.is_empty() || paths.len() > MAX_FILES {
        return Err(ScriptError::Files(format!("name 1 to {MAX_FILES} SQL files")));
    }
    let mut parts = Vec::new();
    for path in paths {
        parts.push((path.clone(), read_file(path).map_err(ScriptError::Files)?));
    }
    let script = parts.iter().map(|(_, text)| text.as_str()).collect::<Vec<_>>().join("\n");
    if script.len() > MAX_SCRIPT_BYTES {
        return Err(ScriptError::Files(format!("the script is {} bytes; at most {MAX_SCRIPT_BYTES}", script.len())));
    }
    let plan = plan_text(&script)
        .map_err(|error| ScriptError::Sql(locate(&parts, error.line as usize, error.column, error.message)))?;
    Ok((script, plan))
}

/// The error at `line` of the joined script, placed in the file it came from.
fn locate(parts: &[(PathBuf, String)], line: usize, column: u64, message: String) -> ScenarioError {
    let mut first = 1;
    for (path, text) in parts {
        let lines = text.split('\n').count();
        if line >= first && line < first + lines {
            let message = format!("column {column}: {message}");
            return ScenarioError {
                file: path.display().to_string(),
                line: Some(line - first + 1),
                field: None,
                message,
            };
        }
        first += lines;
    }
    let file = parts.iter().map(|(path, _)| path.display().to_string()).collect::<Vec<_>>().join(", ");
    ScenarioError { file, line: None, field: None, message }
}

fn read_file(path: &Path) -> Result<String, String> {
    let cannot = |error: std::io::Error| format!("cannot read `{}`: {error}", path.display());
    let opened = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(opened, MAX_SCRIPT_BYTES as u64 + 1), &mut bytes)
        .map_err(cannot)?;
    if bytes.len() > MAX_SCRIPT_BYTES {
        return Err(format!("`{}` is larger than {MAX_SCRIPT_BYTES} bytes, the most a script may be", path.display()));
    }
    String::from_utf8(bytes).map_err(|_| format!("`{}` is not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_placed_in_the_file_and_line_it_came_from() {
        let parts =
            vec![(PathBuf::from("ddl.sql"), "a\nb\n".to_string()), (PathBuf::from("q.sql"), "c\nd".to_string())];
        // Joined: a, b, "", c, d — lines 1 to 3 are ddl.sql's, 4 and 5 q.sql's.
        let error = locate(&parts, 5, 7, "bad".to_string());
        assert_eq!((error.file.as_str(), error.line, error.message.as_str()), ("q.sql", Some(2), "column 7: bad"));
        assert_eq!(locate(&parts, 2, 1, "x".to_string()).file, "ddl.sql");
        let nowhere = locate(&parts, 0, 0, "too deep".to_string());
        assert_eq!((nowhere.file.as_str(), nowhere.line), ("ddl.sql, q.sql", None));
    }
}
