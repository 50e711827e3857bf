//! Checks on scenario text before YAML parsing, for what a parser would take too long over,
//! blow up, or accept silently:
//!
//! - a file larger than [`MAX_FILE_BYTES`];
//! - flow collections (`[ … ]`, `{ … }`) nested deeper than [`MAX_NESTING`], or more than
//!   [`MAX_BRACKETS`] brackets in all: a YAML parser takes quadratic time over deep nesting
//!   (40,000 `[` took 2 s, a megabyte of them would take most of an hour);
//! - anchors and aliases (`&a`, `*a`): serde_yaml charges an alias once however large the node
//!   it repeats, so a file under a megabyte could expand to billions of nodes; no scenario needs
//!   them;
//! - YAML tags (`!name`), which no field uses and serde_yaml would otherwise ignore.
//!
//! The scanner follows YAML's rules for where a scalar starts (line start, after `- `, `: `, `[`,
//! `{`, `,`), for quoted scalars (`''` and `\"` escapes) and for block scalars (`|`, `>`: their
//! more indented lines are text). Where it could misread, it errs towards refusing: text it
//! takes as quoted is text to YAML as well, so nothing structural escapes it.

use super::error::ScenarioError;

/// The largest scenario file, in bytes.
pub const MAX_FILE_BYTES: usize = 1 << 20;

/// The deepest nesting of flow collections (`[ … ]`, `{ … }`).
pub const MAX_NESTING: usize = 32;

/// The message for a file too large.
pub(super) fn too_large(size: usize) -> String {
    format!("the file holds more than {MAX_FILE_BYTES} bytes (1 MiB), the most a scenario may ({size} read)")
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

/// The most brackets (`[`, `{`) a file may hold, quoted or not.
pub const MAX_BRACKETS: usize = 20_000;

/// Where the scanner is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Single,
    Double,
}

/// A refusal at a line, about its top-level field.
fn refuse(lines: &[&str], index: usize, message: String) -> ScenarioError {
    at(index + 1, top_level_key(lines, index), message)
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// The checks of the module doc.
pub(super) fn check(text: &str) -> Result<(), ScenarioError> {
    if text.len() > MAX_FILE_BYTES {
        return Err(ScenarioError { file: String::new(), line: None, field: None, message: too_large(text.len()) });
    }
    let lines: Vec<&str> = text.lines().collect();
    if let Some(index) = brackets_exceeded(&lines) {
        let message = format!("more than {MAX_BRACKETS} brackets; a scenario has a few dozen");
        return Err(refuse(&lines, index, message));
    }
    let mut depth = 0usize;
    let mut block: Option<usize> = None;
    for (index, line) in lines.iter().enumerate() {
        if let Some(header) = block {
            if line.trim().is_empty() || indentation(line) > header {
                continue; // a block scalar's text
            }
            block = None;
        }
        if scan_line(line, &mut depth).map_err(|message| refuse(&lines, index, message))? {
            block = Some(indentation(line));
        }
    }
    Ok(())
}

/// The line where the file's brackets pass [`MAX_BRACKETS`], if they do.
fn brackets_exceeded(lines: &[&str]) -> Option<usize> {
    let mut count = 0;
    lines.iter().position(|line| {
        count += line.bytes().filter(|byte| matches!(byte, b'[' | b'{')).count();
        count > MAX_BRACKETS
    })
}

/// Scans one line, keeping the flow depth; whether it opens a block scalar; the refusal.
fn scan_line(line: &str, depth: &mut usize) -> Result<bool, String> {
    let characters: Vec<(usize, char)> = line.char_indices().collect();
    let (mut quote, mut at_start, mut previous) = (Quote::None, true, ' ');
    let mut index = 0;
    while index < characters.len() {
        let (position, character) = characters[index];
        let next = characters.get(index + 1).map(|(_, next)| *next);
        let ends_token = next.is_none_or(|next| next.is_whitespace() || (*depth > 0 && ",]}".contains(next)));
        index += 1;
        match (quote, character) {
            (Quote::Double, '\\') => index += 1,
            (Quote::Double, '"') => (quote, at_start) = (Quote::None, false),
            (Quote::Single, '\'') if next == Some('\'') => index += 1,
            (Quote::Single, '\'') => (quote, at_start) = (Quote::None, false),
            (Quote::Single | Quote::Double, _) => {}
            (Quote::None, ' ' | '\t') => {}
            (Quote::None, '#') if previous.is_whitespace() => break,
            (Quote::None, '\'') if at_start => quote = Quote::Single,
            (Quote::None, '"') if at_start => quote = Quote::Double,
            (Quote::None, '&' | '*') if at_start => {
                let name: String = line[position..].chars().take_while(|c| !c.is_whitespace()).take(40).collect();
                return Err(format!(
                    "anchors and aliases such as `{name}` are not part of the scenario format; write the value out"
                ));
            }
            (Quote::None, '!') if at_start => {
                let tag: String = line[position..].chars().take_while(|c| !c.is_whitespace()).take(40).collect();
                return Err(format!("YAML tags such as `{tag}` are not part of the scenario format; remove it"));
            }
            (Quote::None, '|' | '>') if at_start && *depth == 0 => return Ok(true),
            (Quote::None, '[' | '{') if at_start => {
                *depth += 1;
                if *depth > MAX_NESTING {
                    return Err(format!("collections nest deeper than {MAX_NESTING} levels"));
                }
            }
            (Quote::None, ']' | '}') if *depth > 0 => (*depth, at_start) = (*depth - 1, false),
            (Quote::None, ',') if *depth > 0 => at_start = true,
            (Quote::None, ':' | '-' | '?') if ends_token && (character == ':' || at_start) => at_start = true,
            (Quote::None, _) => at_start = false,
        }
        previous = character;
    }
    Ok(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_nesting_and_tags_are_refused_with_their_line_and_field() {
        let deep = format!("name: x\nmodes: {}\n", "[".repeat(1000));
        let error = check(&deep).unwrap_err();
        assert_eq!((error.line, error.field.as_deref()), (Some(2), Some("modes")));
        assert!(error.message.contains("deeper than 32"), "{error}");
        let error = check("name: !foo x\njob: wordcount\n").unwrap_err();
        assert_eq!((error.line, error.field.as_deref()), (Some(1), Some("name")));
        assert!(error.message.contains("`!foo`"), "{error}");
        assert!(check("faults:\n  - at: 1s\n    kill: !!str tm-0\n").unwrap_err().message.contains("`!!str`"));
    }

    #[test]
    fn anchors_and_aliases_are_refused_wherever_they_stand() {
        for text in ["name: &a x\n", "faults: [*a]\n", "a:\n  - *b\n", "x: { k: &c [1] }\n"] {
            let error = check(text).unwrap_err();
            assert!(error.message.contains("anchors and aliases"), "{text}: {error}");
        }
        assert_eq!(check("detail: a *b & c\nname: 'x*y'\n"), Ok(()), "inside scalars they are text");
    }

    #[test]
    fn a_quote_inside_a_plain_scalar_hides_nothing() {
        // YAML reads `a 'b` as a plain key, then the lists: so must the scanner.
        let text = format!("params: {{a 'b: {}\n", "[".repeat(1000));
        assert!(check(&text).unwrap_err().message.contains("deeper than 32"), "{text}");
        // An escaped quote does not end a single-quoted scalar, nor does it start anything.
        assert_eq!(check("detail: 'thread ''main'' ! [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ *x'\n"), Ok(()));
        assert_eq!(check("detail: \"say \\\" [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[ *x\"\n"), Ok(()));
    }

    #[test]
    fn block_scalars_are_text_and_brackets_are_capped_in_all() {
        let text = "detail: |-\n  *not an alias [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n  !nor a tag\nname: x\n";
        assert_eq!(check(text), Ok(()));
        let error = check("name: x\nmodes: &a [b]\n").unwrap_err();
        assert_eq!(error.line, Some(2));
        let many = format!("detail: '{}'\n", "[]".repeat(MAX_BRACKETS + 1));
        assert!(check(&many).unwrap_err().message.contains("more than 20000 brackets"));
        let deep = format!("name: x\nmodes: {}\n", "[".repeat(100_000));
        assert_eq!(check(&deep).unwrap_err().line, Some(2));
    }

    #[test]
    fn ordinary_text_passes_even_with_brackets_in_quotes_and_comments() {
        let text = "name: \"a [[[[ !b\"\nparams: { words: 10 }  # [[[[[[[[\nfaults: [{ at: 1s, kill: tm-0 }]\n";
        assert_eq!(check(text), Ok(()));
        assert_eq!(check(&"[".repeat(32)), Ok(()));
        assert!(check(&" ".repeat(MAX_FILE_BYTES + 1)).unwrap_err().message.contains("more than 1048576 bytes"));
    }
}
