//! The oracles: what a run must satisfy.
//!
//! - `completed`: the job finished (within the liveness bound, without a panic).
//! - `exactly-once`: every table holds exactly the rows the reference implementation says, as a
//!   multiset: nothing lost, nothing duplicated, nothing uncommitted visible. For an upsert table
//!   in streaming mode this compares every committed update, not just the final values.
//! - `streaming == batch`: the final value per key (upsert) or the multiset of rows (append) is
//!   the same in both modes for the same seed.
//! - `determinism`: the same seed gives the same trace hash.
//!
//! Every failure names its check and shows a few witnesses.

use std::collections::BTreeMap;
use std::fmt;

use sluice_engine::catalog::ExpectedOutput;
use sluice_engine::connectors::{Row, SinkKind};

use crate::external::txn_store::CommittedView;
use crate::runner::{RunOutcome, RunReport};
use crate::trace::first_difference;

/// A check that failed, with details.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckFailure {
    /// The check's name.
    pub check: &'static str,
    /// What was wrong, with witnesses.
    pub detail: String,
}

impl fmt::Display for CheckFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.check, self.detail)
    }
}

const WITNESSES: usize = 5;

fn multiset(rows: &[Row]) -> BTreeMap<&Row, i64> {
    let mut counts = BTreeMap::new();
    for row in rows {
        *counts.entry(row).or_insert(0) += 1;
    }
    counts
}

fn describe(rows: &[(&Row, i64)]) -> String {
    let shown: Vec<String> =
        rows.iter().take(WITNESSES).map(|(row, count)| format!("{}={} ×{count}", row.key, row.value)).collect();
    let more = rows.len().saturating_sub(WITNESSES);
    if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
}

/// Compares committed rows with the reference, table by table.
pub fn exactly_once(committed: &CommittedView, expected: &ExpectedOutput) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check: "exactly-once", detail });
    if let Some(table) = committed.keys().find(|table| !expected.contains_key(*table)) {
        return failure(format!("table `{table}` was written but the job has no such sink"));
    }
    for (table, expectation) in expected {
        let empty = Vec::new();
        let (kind, log) = committed.get(table).map_or((expectation.kind, &empty), |view| (view.kind, &view.log));
        if kind != expectation.kind {
            return failure(format!("table `{table}` is {kind:?} but the job writes it as {:?}", expectation.kind));
        }
        let want = multiset(&expectation.rows);
        let have = multiset(log);
        let mut missing = Vec::new();
        let mut extra = Vec::new();
        for (row, count) in &want {
            let got = have.get(row).copied().unwrap_or(0);
            if got < *count {
                missing.push((*row, count - got));
            }
        }
        for (row, count) in &have {
            let wanted = want.get(row).copied().unwrap_or(0);
            if *count > wanted {
                extra.push((*row, count - wanted));
            }
        }
        if !missing.is_empty() || !extra.is_empty() {
            let mut detail =
                format!("table `{table}`: {} rows committed, {} expected", log.len(), expectation.rows.len());
            if !missing.is_empty() {
                detail.push_str(&format!("; lost: {}", describe(&missing)));
            }
            if !extra.is_empty() {
                detail.push_str(&format!("; duplicated or unexpected: {}", describe(&extra)));
            }
            return failure(detail);
        }
    }
    Ok(())
}

/// Every check of a single run: completion and exactly-once.
pub fn check_run(report: &RunReport) -> Vec<CheckFailure> {
    let mut failures = Vec::new();
    if report.outcome != RunOutcome::Finished {
        failures.push(CheckFailure { check: "completed", detail: report.outcome.to_string() });
        return failures;
    }
    if let Err(failure) = exactly_once(&report.committed, &report.expected) {
        failures.push(failure);
    }
    failures
}

/// The final output of one mode must equal the other's.
pub fn modes_agree(streaming: &RunReport, batch: &RunReport) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check: "streaming == batch", detail });
    let tables: std::collections::BTreeSet<&String> =
        streaming.committed.keys().chain(batch.committed.keys()).collect();
    for table in tables {
        let (Some(left), Some(right)) = (streaming.committed.get(table), batch.committed.get(table)) else {
            return failure(format!("table `{table}` was committed in only one mode"));
        };
        match left.kind {
            SinkKind::Upsert => {
                if left.latest != right.latest {
                    let differing: Vec<String> = left
                        .latest
                        .iter()
                        .filter(|(key, value)| right.latest.get(*key) != Some(*value))
                        .map(|(key, value)| format!("{key}: streaming {value}, batch {:?}", right.latest.get(key)))
                        .chain(
                            right
                                .latest
                                .iter()
                                .filter(|(key, _)| !left.latest.contains_key(*key))
                                .map(|(key, value)| format!("{key}: streaming none, batch {value}")),
                        )
                        .take(WITNESSES)
                        .collect();
                    return failure(format!("table `{table}` final values differ: {}", differing.join("; ")));
                }
            }
            SinkKind::Append => {
                let (mut left_rows, mut right_rows) = (left.log.clone(), right.log.clone());
                left_rows.sort();
                right_rows.sort();
                if left_rows != right_rows {
                    return failure(format!(
                        "table `{table}`: streaming committed {} rows, batch {}, and they differ",
                        left_rows.len(),
                        right_rows.len()
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Two runs of the same seed and mode must have the same trace.
pub fn deterministic(first: &RunReport, second: &RunReport) -> Result<(), CheckFailure> {
    if first.trace_hash == second.trace_hash {
        return Ok(());
    }
    let detail = match first_difference(&first.trace, &second.trace) {
        Some((index, left, right)) => format!(
            "trace hashes {:016x} and {:016x} differ first at event {index}:\n    first:  {left}\n    second: {right}",
            first.trace_hash, second.trace_hash
        ),
        None => format!("trace hashes {:016x} and {:016x} differ", first.trace_hash, second.trace_hash),
    };
    Err(CheckFailure { check: "determinism", detail })
}

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_engine::catalog::ExpectedTable;

    use crate::external::txn_store::TableView;

    fn row(key: &str, value: &str) -> Row {
        Row { key: key.to_string(), value: value.to_string() }
    }

    fn view(rows: Vec<Row>) -> CommittedView {
        let latest = rows.iter().map(|row| (row.key.clone(), row.value.clone())).collect();
        BTreeMap::from([("t".to_string(), TableView { kind: SinkKind::Upsert, log: rows, latest })])
    }

    fn expected(rows: Vec<Row>) -> ExpectedOutput {
        BTreeMap::from([("t".to_string(), ExpectedTable { kind: SinkKind::Upsert, rows })])
    }

    #[test]
    fn exactly_once_accepts_any_order_of_the_same_rows() {
        let committed = view(vec![row("b", "1"), row("a", "1"), row("a", "2")]);
        assert_eq!(exactly_once(&committed, &expected(vec![row("a", "1"), row("a", "2"), row("b", "1")])), Ok(()));
    }

    #[test]
    fn exactly_once_reports_a_duplicate_with_its_witness() {
        let committed = view(vec![row("a", "1"), row("a", "1")]);
        let failure = exactly_once(&committed, &expected(vec![row("a", "1")])).unwrap_err();
        assert_eq!(failure.check, "exactly-once");
        assert!(failure.detail.contains("duplicated or unexpected: a=1 ×1"), "{}", failure.detail);
    }

    #[test]
    fn exactly_once_reports_a_lost_row_and_a_missing_table() {
        let committed = view(vec![row("a", "1")]);
        let failure = exactly_once(&committed, &expected(vec![row("a", "1"), row("b", "1")])).unwrap_err();
        assert!(failure.detail.contains("lost: b=1 ×1"), "{}", failure.detail);
        let failure = exactly_once(&CommittedView::new(), &expected(vec![row("a", "1")])).unwrap_err();
        assert!(failure.detail.contains("lost: a=1"), "{}", failure.detail);
    }

    #[test]
    fn exactly_once_rejects_a_table_the_job_does_not_write() {
        let mut committed = view(vec![row("a", "1")]);
        committed.insert("other".to_string(), committed["t"].clone());
        assert!(exactly_once(&committed, &expected(vec![row("a", "1")])).is_err());
    }
}
