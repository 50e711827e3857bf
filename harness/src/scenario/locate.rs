//! Finds the line of a field in scenario text from its path (`faults[3].partition.for`), so that
//! an error found after parsing still names its line. serde_yaml keeps no positions of values,
//! so this walks the text: a key is found among the direct children of its parent's block, an
//! index among the `- ` items of its list; a flow collection (`{ a: 1 }`, `[x, y]`) ends the walk
//! at its line.

/// One step of a field path.
#[derive(Debug, PartialEq, Eq)]
enum Segment<'a> {
    Key(&'a str),
    Index(usize),
}

fn segments(path: &str) -> Vec<Segment<'_>> {
    let mut segments = Vec::new();
    for part in path.split('.') {
        let (key, indices) = part.split_once('[').map_or((part, ""), |(key, rest)| (key, rest));
        if !key.is_empty() {
            segments.push(Segment::Key(key));
        }
        for index in indices.split('[') {
            if let Ok(index) = index.trim_end_matches(']').parse() {
                segments.push(Segment::Index(index));
            }
        }
    }
    segments
}

/// A line without its comment.
fn content(line: &str) -> &str {
    let bytes = line.as_bytes();
    let comment = (0..bytes.len()).find(|&at| bytes[at] == b'#' && (at == 0 || bytes[at - 1].is_ascii_whitespace()));
    comment.map_or(line, |at| &line[..at]).trim_end()
}

/// A line's indentation and, after an optional `- `, the column where its text starts.
fn columns(line: &str) -> (usize, usize, bool) {
    let indent = line.len() - line.trim_start().len();
    let rest = &line[indent..];
    match rest.strip_prefix("- ").or_else(|| (rest == "-").then_some("")) {
        Some(after) => (indent, line.len() - after.trim_start().len(), true),
        None => (indent, indent, false),
    }
}

/// Lines `start..end` of the text, within which a search looks.
#[derive(Clone, Copy)]
struct Scope {
    start: usize,
    end: usize,
}

/// The `key:` among the direct children of a block: (line, its key column).
fn block_key(lines: &[&str], scope: Scope, key: &str) -> Option<(usize, usize)> {
    let children = (scope.start..scope.end).filter(|&index| !lines[index].is_empty());
    let column = children.clone().map(|index| columns(lines[index]).1).min()?;
    children
        .filter(|&index| columns(lines[index]).1 == column)
        .find(|&index| {
            let text = &lines[index][column..];
            text.strip_prefix(key).is_some_and(|rest| rest.starts_with(':'))
        })
        .map(|index| (index, column))
}

/// A line in the scope where `key:` is inside a flow mapping.
fn flow_key(lines: &[&str], scope: Scope, key: &str) -> Option<usize> {
    (scope.start..scope.end).find(|&index| {
        let line = lines[index];
        line.match_indices(&format!("{key}:")).any(|(at, _)| {
            let before = line[..at].trim_end();
            before.ends_with('{') || before.ends_with(',')
        })
    })
}

/// Where the block under a key at `column` on line `at` ends.
fn block_end(lines: &[&str], at: usize, column: usize, end: usize) -> usize {
    (at + 1..end)
        .find(|&index| {
            let line = lines[index];
            if line.is_empty() {
                return false;
            }
            let (indent, _, item) = columns(line);
            indent < column || (indent == column && !item)
        })
        .unwrap_or(end)
}

/// The 1-based line of the field at `path`, as far as the text shows it.
pub(super) fn locate_path(text: &str, path: &str) -> Option<usize> {
    let lines: Vec<&str> = text.lines().map(content).collect();
    let mut scope = Scope { start: 0, end: lines.len() };
    let mut found = None;
    for segment in segments(path) {
        match segment {
            Segment::Key(key) => match block_key(&lines, scope, key) {
                Some((at, column)) => {
                    found = Some(at);
                    let value = lines[at][column + key.len() + 1..].trim();
                    if !value.is_empty() {
                        break; // the value is on this line
                    }
                    scope = Scope { start: at + 1, end: block_end(&lines, at, column, scope.end) };
                }
                None => {
                    found = flow_key(&lines, scope, key).or(found);
                    break;
                }
            },
            Segment::Index(index) => {
                let items: Vec<usize> = (scope.start..scope.end).filter(|&at| columns(lines[at]).2).collect();
                let Some(indent) = items.iter().map(|&at| columns(lines[at]).0).min() else { break };
                let items: Vec<usize> = items.into_iter().filter(|&at| columns(lines[at]).0 == indent).collect();
                let Some(&at) = items.get(index) else { break };
                found = Some(at);
                let next = items.iter().copied().find(|&other| other > at).unwrap_or(scope.end);
                scope = Scope { start: at, end: next };
            }
        }
    }
    found.map(|index| index + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
name: x   # a comment
job: wordcount
params: { words: 100, distinct_words: 5 }
cluster:
  task_managers: 2
  slots_per_task_manager: 2
faults:
  - at: 150ms
    kill: tm-1
  - at: 1s
    partition:
      between: [[jm], [tm-0]]
      for: 800ms
random_faults:
  count: 3
  kinds:
  - tm-crash
  - partition
";

    #[test]
    fn paths_find_their_lines_in_blocks_lists_and_flow_collections() {
        assert_eq!(locate_path(TEXT, "name"), Some(1));
        assert_eq!(locate_path(TEXT, "params.words"), Some(3));
        assert_eq!(locate_path(TEXT, "params.distinct_words"), Some(3));
        assert_eq!(locate_path(TEXT, "cluster.slots_per_task_manager"), Some(6));
        assert_eq!(locate_path(TEXT, "faults[0].kill"), Some(9));
        assert_eq!(locate_path(TEXT, "faults[1].at"), Some(10));
        assert_eq!(locate_path(TEXT, "faults[1].partition.for"), Some(13));
        assert_eq!(locate_path(TEXT, "faults[1].partition.between"), Some(12));
        assert_eq!(locate_path(TEXT, "random_faults.count"), Some(15));
        assert_eq!(locate_path(TEXT, "random_faults.kinds[1]"), Some(18));
        assert_eq!(locate_path(TEXT, "faults[7].at"), Some(7), "a missing item falls back to its list");
        assert_eq!(locate_path(TEXT, "seeds"), None);
    }

    #[test]
    fn a_comment_is_not_a_key() {
        assert_eq!(locate_path("# parallelism: 3\nparallelism: 4\n", "parallelism"), Some(2));
        assert_eq!(
            segments("a[1][2].b"),
            vec![Segment::Key("a"), Segment::Index(1), Segment::Index(2), Segment::Key("b")]
        );
    }
}
