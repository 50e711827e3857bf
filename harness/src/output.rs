//! Committed output as files, and two outputs compared: `sluice run --output DIR` and
//! `sluice diff A B`.
//!
//! A run's committed tables are written to `DIR/seed-<seed>/<mode>/`: `<table>.csv` holds the
//! table's final rows (an upsert table's latest value per key, sorted by key; an append table's
//! rows, sorted), and an upsert table in streaming mode also gets `<table>.updates.csv`, every
//! committed update in commit order, as Flink prints a changelog: `key,value,kind` with kind
//! `+U` for a value and `-D` for a key's deletion (its value empty). The other files start with a
//! `key,value` header. Every table the run owes ([`owed_tables`]) gets its files, with only the header if nothing was committed to it,
//! so that both modes write the same files.
//!
//! [`diff`] compares the final tables of two such directories, or of any directories of CSV files
//! with a header line (another engine's output, say): per table, the rows as a multiset, with
//! counts of the rows only in one side and a few of them; a table one side has no file for is
//! an empty one there (a run that committed no row to it). A file is at most
//! [`MAX_TABLE_BYTES`]; a directory holds at most [`MAX_TABLES`] tables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use sluice_engine::connectors::SinkKind;
use sluice_engine::connectors::csv::parse_records;
use sluice_engine::connectors::file_sink::write_csv_row;
use sluice_engine::graph::ExecutionMode;

use crate::report::RunReport;
use crate::words::counted;
use sluice_services::durable_store::table_kinds;
use sluice_services::txn_store::{CommittedView, TableView};

/// The largest table file `diff` reads.
pub const MAX_TABLE_BYTES: u64 = 1 << 30;
/// The most tables a directory `diff` reads may hold.
pub const MAX_TABLES: usize = 1_000;
/// Rows shown of each side's difference.
const SHOWN: usize = 5;

/// The directory a run's tables go to.
pub fn run_directory(root: &Path, seed: u64, mode: ExecutionMode) -> PathBuf {
    root.join(format!("seed-{seed}")).join(mode.to_string())
}

fn csv_of<'a>(rows: impl Iterator<Item = (&'a str, &'a str)>) -> Vec<u8> {
    let mut out = b"key,value\n".to_vec();
    for (key, value) in rows {
        write_csv_row(&mut out, key, value);
    }
    out
}

/// An upsert table's updates in commit order: `key,value,kind`, `+U` or `-D`.
fn changelog_of(view: &TableView) -> Vec<u8> {
    let mut out = b"key,value,kind\n".to_vec();
    for row in view.log.iter() {
        write_csv_row(&mut out, row.key, row.value.unwrap_or(""));
        out.pop();
        out.extend_from_slice(if row.value.is_some() { b",+U\n" } else { b",-D\n" });
    }
    out
}

/// The final rows of a table, sorted.
pub fn final_rows(view: &TableView) -> Vec<(&str, &str)> {
    match view.kind {
        SinkKind::Upsert => view.latest.iter().map(|(key, value)| (key.as_str(), value.as_str())).collect(),
        SinkKind::Append => {
            // An append table holds no tombstones (the store refuses them).
            let mut rows: Vec<(&str, &str)> = view.log.iter().filter_map(|row| Some((row.key, row.value?))).collect();
            rows.sort_unstable();
            rows
        }
    }
}

/// The tables a run owes whether or not it committed a row to them, with their kinds: those its
/// job's reference names, and its late-data table. The store holds only the tables a transaction
/// was committed to, which differs by mode: a streaming sink that checkpoints begins no
/// transaction for a checkpoint it wrote nothing in, while a batch sink commits once at the end of
/// its input, rows or none.
pub fn owed_tables(report: &RunReport) -> BTreeMap<String, SinkKind> {
    let mut owed = table_kinds(report.expected.as_ref());
    if let Some(late) = report.source.job().late {
        owed.entry(late.table.to_string()).or_insert(SinkKind::Append);
    }
    owed
}

/// Writes a run's committed tables to `directory`, and those of `owed` it committed nothing to
/// (see the module doc); returns the files.
pub fn write_tables(
    directory: &Path,
    committed: &CommittedView,
    owed: &BTreeMap<String, SinkKind>,
    mode: ExecutionMode,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(directory)?;
    let empty: CommittedView = owed
        .iter()
        .filter(|(table, _)| !committed.contains_key(*table))
        .map(|(table, kind)| (table.clone(), TableView::new(*kind)))
        .collect();
    let mut written = Vec::new();
    for (table, view) in committed.iter().chain(&empty) {
        let path = directory.join(format!("{table}.csv"));
        std::fs::write(&path, csv_of(final_rows(view).into_iter()))?;
        written.push(path);
        if view.kind == SinkKind::Upsert && mode == ExecutionMode::Streaming {
            let path = directory.join(format!("{table}.updates.csv"));
            std::fs::write(&path, changelog_of(view))?;
            written.push(path);
        }
    }
    Ok(written)
}

/// A directory's final tables: each `<table>.csv` (not `.updates.csv`), its rows without the
/// header, sorted.
pub fn read_tables(directory: &Path) -> Result<BTreeMap<String, Vec<Vec<String>>>, String> {
    let entries = std::fs::read_dir(directory).map_err(|error| format!("{}: {error}", directory.display()))?;
    let mut tables = BTreeMap::new();
    for entry in entries {
        let path = entry.map_err(|error| format!("{}: {error}", directory.display()))?.path();
        let Some(name) = path.file_name().and_then(|name| name.to_str()) else { continue };
        let Some(table) = name.strip_suffix(".csv").filter(|table| !table.ends_with(".updates")) else { continue };
        if tables.len() == MAX_TABLES {
            return Err(format!("{} holds more than {MAX_TABLES} tables", directory.display()));
        }
        let size = path.metadata().map_err(|error| format!("{}: {error}", path.display()))?.len();
        if size > MAX_TABLE_BYTES {
            return Err(format!("{} is larger than {} MiB", path.display(), MAX_TABLE_BYTES >> 20));
        }
        let bytes = std::fs::read(&path).map_err(|error| format!("{}: {error}", path.display()))?;
        let mut rows = parse_records(&bytes).map_err(|error| format!("{}: {error}", path.display()))?;
        if rows.is_empty() {
            return Err(format!("{}: no header line", path.display()));
        }
        rows.remove(0);
        rows.sort_unstable();
        tables.insert(table.to_string(), rows);
    }
    Ok(tables)
}

/// How two outputs compare, table by table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diff {
    /// One line per table.
    pub lines: Vec<String>,
    /// Whether every table agrees and both sides hold the same tables.
    pub agree: bool,
}

/// Compares the final tables of directories `left` and `right`.
pub fn diff(left: &Path, right: &Path) -> Result<Diff, String> {
    let (left_tables, right_tables) = (read_tables(left)?, read_tables(right)?);
    let names: std::collections::BTreeSet<&String> = left_tables.keys().chain(right_tables.keys()).collect();
    let (mut lines, mut agree) = (Vec::new(), true);
    for name in names {
        // A table one side has no file for is an empty one there (a run that committed no row
        // to it), as `streaming == batch` counts it.
        let line = match (left_tables.get(name), right_tables.get(name)) {
            (Some(left_rows), Some(right_rows)) => compare_rows(name, left_rows, right_rows),
            (Some(rows), None) | (None, Some(rows)) if rows.is_empty() => Ok(format!("table `{name}`: agree (0 rows)")),
            (Some(_), None) => Err(format!("table `{name}`: only in {}", left.display())),
            (None, Some(_)) => Err(format!("table `{name}`: only in {}", right.display())),
            (None, None) => unreachable!("a name from one of the two"),
        };
        agree &= line.is_ok();
        lines.push(line.unwrap_or_else(|line| line));
    }
    if lines.is_empty() {
        return Err(format!("neither {} nor {} holds a table (`<table>.csv`)", left.display(), right.display()));
    }
    Ok(Diff { lines, agree })
}

/// `Ok(line)` if two sorted row lists are equal, else the line that says how they differ.
fn compare_rows(name: &str, left: &[Vec<String>], right: &[Vec<String>]) -> Result<String, String> {
    let (mut only_left, mut only_right) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        match (left.get(i), right.get(j)) {
            (Some(a), Some(b)) if a == b => (i, j) = (i + 1, j + 1),
            (Some(a), Some(b)) if a < b => (only_left.push(a), i += 1).1,
            (Some(a), None) => (only_left.push(a), i += 1).1,
            (_, Some(b)) => (only_right.push(b), j += 1).1,
            (None, None) => unreachable!("the loop condition"),
        }
    }
    if only_left.is_empty() && only_right.is_empty() {
        return Ok(format!("table `{name}`: agree ({})", counted(left.len() as u64, "row")));
    }
    let show = |rows: &[&Vec<String>]| -> String {
        let shown: Vec<String> = rows.iter().take(SHOWN).map(|row| row.join(",")).collect();
        match rows.len().saturating_sub(SHOWN) {
            _ if rows.is_empty() => String::new(),
            0 => format!(" ({})", shown.join("; ")),
            more => format!(" ({} and {more} more)", shown.join("; ")),
        }
    };
    Err(format!(
        "table `{name}`: differ: {} against {}; {} only in the first{}; {} only in the second{}",
        counted(left.len() as u64, "row"),
        right.len(),
        only_left.len(),
        show(&only_left),
        only_right.len(),
        show(&only_right),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_engine::connectors::Row;

    fn table(kind: SinkKind, rows: &[(&str, &str)]) -> TableView {
        let log: Vec<Row> = rows.iter().map(|(key, value)| Row::new(key.to_string(), value.to_string())).collect();
        let mut table = TableView::new(kind);
        table.append(&log.into());
        table
    }

    #[test]
    fn written_outputs_of_two_modes_diff_as_agreeing_and_a_changed_row_is_named() {
        let scratch = tempfile::tempdir().unwrap();
        let streaming = CommittedView::from([
            ("counts".to_string(), table(SinkKind::Upsert, &[("a", "1"), ("b", "1"), ("a", "2")])),
            ("events".to_string(), table(SinkKind::Append, &[("x", "1,2"), ("y", "\"q\"")])),
        ]);
        let batch = CommittedView::from([
            ("counts".to_string(), table(SinkKind::Upsert, &[("a", "2"), ("b", "1")])),
            ("events".to_string(), table(SinkKind::Append, &[("y", "\"q\""), ("x", "1,2")])),
        ]);
        let (left, right) = (scratch.path().join("s"), scratch.path().join("b"));
        let written = write_tables(&left, &streaming, &BTreeMap::new(), ExecutionMode::Streaming).unwrap();
        assert_eq!(written.len(), 3, "{written:?}");
        assert_eq!(
            std::fs::read_to_string(left.join("counts.updates.csv")).unwrap(),
            "key,value,kind\na,1,+U\nb,1,+U\na,2,+U\n"
        );
        assert_eq!(std::fs::read_to_string(left.join("counts.csv")).unwrap(), "key,value\na,2\nb,1\n");
        write_tables(&right, &batch, &BTreeMap::new(), ExecutionMode::Batch).unwrap();
        let same = diff(&left, &right).unwrap();
        assert!(same.agree, "{same:?}");
        assert_eq!(same.lines, ["table `counts`: agree (2 rows)", "table `events`: agree (2 rows)"]);
        std::fs::write(right.join("counts.csv"), "key,value\na,3\nb,1\nc,1\n").unwrap();
        let changed = diff(&left, &right).unwrap();
        assert!(!changed.agree);
        assert_eq!(
            changed.lines[0],
            "table `counts`: differ: 2 rows against 3; 1 only in the first (a,2); 2 only in the second (a,3; c,1)"
        );
        std::fs::write(right.join("counts.csv"), "key,value\na,2\nb,1\n").unwrap();
        std::fs::write(right.join("nothing.csv"), "key,value\n").unwrap();
        let empty = diff(&left, &right).unwrap();
        assert!(empty.agree, "a table without rows is one without a file: {empty:?}");
        assert_eq!(empty.lines[2], "table `nothing`: agree (0 rows)");
        std::fs::remove_file(right.join("events.csv")).unwrap();
        let missing = diff(&left, &right).unwrap();
        assert!(!missing.agree && missing.lines[1].contains("only in"), "{missing:?}");
        assert!(diff(&left, &scratch.path().join("none")).unwrap_err().contains("none"));
        std::fs::write(right.join("bad.csv"), "key,value\n\"open\n").unwrap();
        assert!(diff(&left, &right).unwrap_err().contains("bad.csv"));
    }

    #[test]
    fn an_owed_table_nothing_was_committed_to_gets_its_files_in_either_mode() {
        let scratch = tempfile::tempdir().unwrap();
        let committed = CommittedView::from([("counts".to_string(), table(SinkKind::Upsert, &[("a", "1")]))]);
        let owed = BTreeMap::from([
            ("counts".to_string(), SinkKind::Upsert),
            ("late".to_string(), SinkKind::Append),
            ("totals".to_string(), SinkKind::Upsert),
        ]);
        let (streaming, batch) = (scratch.path().join("s"), scratch.path().join("b"));
        let files = |paths: Vec<PathBuf>| -> Vec<String> {
            let mut names: Vec<String> =
                paths.iter().map(|path| path.file_name().unwrap().to_string_lossy().into_owned()).collect();
            names.sort();
            names
        };
        let written = files(write_tables(&streaming, &committed, &owed, ExecutionMode::Streaming).unwrap());
        assert_eq!(written, ["counts.csv", "counts.updates.csv", "late.csv", "totals.csv", "totals.updates.csv"]);
        assert_eq!(std::fs::read_to_string(streaming.join("late.csv")).unwrap(), "key,value\n");
        assert_eq!(std::fs::read_to_string(streaming.join("totals.updates.csv")).unwrap(), "key,value,kind\n");
        let written = files(write_tables(&batch, &committed, &owed, ExecutionMode::Batch).unwrap());
        assert_eq!(written, ["counts.csv", "late.csv", "totals.csv"]);
    }
}
