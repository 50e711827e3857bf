//! Checks on scenario text before YAML parsing, for what a parser would take too long over or
//! accept silently: a file larger than [`MAX_FILE_BYTES`], flow collections nested deeper than
//! [`MAX_NESTING`] (a YAML parser takes quadratic time over deep nesting: 40,000 `[` took 2 s,
//! a megabyte of them would take most of an hour), and YAML tags (`!name`), which no scenario
//! field uses and serde_yaml would otherwise ignore.

use super::error::ScenarioError;

/// The largest scenario file, in bytes.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The deepest nesting of flow collections (`[ … ]`, `{ … }`).
pub const MAX_NESTING: usize = 32;

/// The message for a file too large.
pub(super) fn too_large(size: usize) -> String {
    format!("the file is {size} bytes; a scenario is at most {MAX_FILE_BYTES} bytes (1 MiB)")
}

fn at(line: usize, field: Option<String>, message: String) -> ScenarioError {
    ScenarioError { file: String::new(), line: Some(line), field, message }
}

/// The top-level key a line belongs to: the nearest `key:` at column 0 at or above it.
fn top_level_key(lines: &[&str], line: usize) -> Option<String> {
    lines[..=line].iter().rev().find_map(|text| {
        let first = text.chars().next()?;
        if first.is_whitespace() || first == '#' || first == '-' {
            return None;
        }
        text.split_once(':').map(|(key, _)| key.trim().to_string())
    })
}

/// The checks of the module doc.
pub(super) fn check(text: &str) -> Result<(), ScenarioError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ScenarioError { file: String::new(), line: None, field: None, message: too_large(text.len()) });
    }
    let lines: Vec<&str> = text.lines().collect();
    let mut depth = 0usize;
    for (index, line) in lines.iter().enumerate() {
        let mut quote: Option<char> = None;
        let mut previous = ' ';
        for (position, character) in line.char_indices() {
            match (quote, character) {
                (Some(open), close) if close == open => quote = None,
                (Some(_), _) => {}
                (None, '#') if previous.is_whitespace() => break,
                (None, '"' | '\'') if "[{,: ".contains(previous) => quote = Some(character),
                (None, '[' | '{') => {
                    depth += 1;
                    if depth > MAX_NESTING {
                        let message = format!("collections nest deeper than {MAX_NESTING} levels");
                        return Err(at(index + 1, top_level_key(&lines, index), message));
                    }
                }
                (None, ']' | '}') => depth = depth.saturating_sub(1),
                (None, '!') if "[{,: ".contains(previous) => {
                    let tag: String = line[position..].chars().take_while(|c| !c.is_whitespace()).take(40).collect();
                    let message = format!("YAML tags such as `{tag}` are not part of the scenario format; remove it");
                    return Err(at(index + 1, top_level_key(&lines, index), message));
                }
                _ => {}
            }
            previous = character;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_and_tags_are_refused_with_their_line_and_field() {
        let deep = format!("name: x\nmodes: {}\n", "[".repeat(100_000));
        let error = check(&deep).unwrap_err();
        assert_eq!((error.line, error.field.as_deref()), (Some(2), Some("modes")));
        assert!(error.message.contains("deeper than 32"), "{error}");
        let error = check("name: !foo x\njob: wordcount\n").unwrap_err();
        assert_eq!((error.line, error.field.as_deref()), (Some(1), Some("name")));
        assert!(error.message.contains("`!foo`"), "{error}");
        assert!(check("faults:\n  - at: 1s\n    kill: !!str tm-0\n").unwrap_err().message.contains("`!!str`"));
    }

    #[test]
    fn ordinary_text_passes_even_with_brackets_in_quotes_and_comments() {
        let text = "name: \"a [[[[ !b\"\nparams: { words: 10 }  # [[[[[[[[\nfaults: [{ at: 1s, kill: tm-0 }]\n";
        assert_eq!(check(text), Ok(()));
        assert_eq!(check(&"[".repeat(32)), Ok(()));
        assert!(check(&" ".repeat(MAX_FILE_BYTES + 1)).unwrap_err().message.contains("at most 1048576 bytes"));
    }
}
