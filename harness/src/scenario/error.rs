//! [`ScenarioError`]: what is wrong with a scenario, and where: file, line and field.

use std::fmt;

use super::locate::locate_path;
use crate::words::printable;

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
        write!(f, "{}", printable(&self.file))?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "field `{}`: ", printable(field))?;
        }
        write!(f, "{}", printable(&self.message))
    }
}

impl std::error::Error for ScenarioError {}

impl ScenarioError {
    /// An error about `field`, found in `text` (the line is looked up from the field's path).
    pub(super) fn about(text: &str, field: &str, message: impl Into<String>) -> ScenarioError {
        ScenarioError {
            file: String::new(),
            line: locate_path(text, field),
            field: Some(field.to_string()),
            message: message.into(),
        }
    }

    /// The same error, naming its file.
    pub(super) fn in_file(mut self, file: &str) -> ScenarioError {
        self.file = file.to_string();
        self
    }

    /// A serde_yaml error as a scenario error: its field from the path serde_yaml reports, its
    /// line from serde_yaml or else from the path.
    pub(super) fn from_yaml(file: &str, text: &str, error: &serde_yaml::Error) -> ScenarioError {
        let message = error.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        let field = field_of(&message);
        // The path is in the field already; keep the message to what is wrong.
        let mut message = message.as_str();
        while let Some((path, rest)) = message.split_once(": ") {
            if !field.as_deref().is_some_and(|field| field.starts_with(path)) {
                break;
            }
            message = rest;
        }
        let message = if message.ends_with("expected struct Scenario") {
            "a scenario is a mapping of fields (`name: …`, `job: …`, see docs/scenarios.md)".to_string()
        } else {
            message.to_string()
        };
        let path_line = field.as_deref().and_then(|field| locate_path(text, field));
        // serde_yaml places a duplicate field at the mapping that holds it: name the line that
        // repeats it instead.
        // Errors read through a YAML value (`restart_strategy`) carry no position of their own.
        let through_value = field.as_deref().is_some_and(|field| field.starts_with("restart_strategy"));
        let line = match (error.location().map(|location| location.line()), path_line) {
            (_, Some(first)) if message.starts_with("duplicate field") => Some(repeated(text, first).unwrap_or(first)),
            (_, Some(line)) if through_value => Some(line),
            (Some(line), _) => Some(line),
            (None, path_line) => path_line,
        };
        ScenarioError { file: file.to_string(), line, field, message }
    }
}

/// The line after `first` (1-based) that starts with the same key at the same indentation.
fn repeated(text: &str, first: usize) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let line = lines.get(first - 1)?;
    let indent = line.len() - line.trim_start().len();
    let key = line.trim_start().split(':').next()?;
    (first..lines.len())
        .find(|&index| {
            let other = lines[index];
            other.len() - other.trim_start().len() == indent && other.trim_start().split(':').next() == Some(key)
        })
        .map(|index| index + 1)
}

/// The field a serde_yaml message is about: the path it starts with (`faults[0]: …`), joined
/// with the field an `unknown field`, `missing field` or `duplicate field` message names.
fn field_of(message: &str) -> Option<String> {
    let path_like = |path: &str| !path.is_empty() && !path.contains(' ') && !path.contains('`');
    let (mut path, mut rest) = match message.split_once(": ") {
        Some((path, rest)) if path_like(path) => (Some(path), rest),
        _ => (None, message),
    };
    // A field's own deserializer may name a deeper path (`faults: faults[2].slow.factor: …`).
    while let Some((inner, after)) = rest.split_once(": ").filter(|(inner, _)| path_like(inner)) {
        path = Some(inner);
        rest = after;
    }
    let named = ["unknown field `", "missing field `", "duplicate field `", "parameter `"].iter().find_map(|marker| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_comes_from_the_path_and_the_named_field() {
        assert_eq!(field_of("faults[0]: unknown field `kil`, expected …").as_deref(), Some("faults[0].kil"));
        assert_eq!(field_of("duplicate field `name`").as_deref(), Some("name"));
        assert_eq!(field_of("params: parameter `words` is given twice").as_deref(), Some("params.words"));
        assert_eq!(field_of("invalid type: string, expected a map"), None);
        assert_eq!(
            field_of("faults: faults[2].slow.factor: `slow.factor` is at least 2").as_deref(),
            Some("faults[2].slow.factor")
        );
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let error = ScenarioError {
            file: "x\u{1b}.yaml".into(),
            line: Some(1),
            field: Some("name".into()),
            message: "`\u{7}`".into(),
        };
        assert_eq!(error.to_string(), "x\\u{1b}.yaml:1: field `name`: `\\u{7}`");
    }
}
