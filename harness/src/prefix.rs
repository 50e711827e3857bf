//! The checkpoint-prefix oracle (`checkpoint-prefix`): after every checkpoint a streaming run
//! completed, what its sinks committed up to that checkpoint equals the job's reference over
//! exactly the input its sources had read when that checkpoint's barrier passed them. This is
//! Flink's definition of a dynamic table (the result of a continuous query at any point is the
//! query on the input's prefix) held at every consistent cut the run took, faults included.
//!
//! The cut comes from the trace: each source subtask traces, at its barrier, how far it had read
//! each split (`SourceCheckpointed`); each committed transaction names its table and checkpoint
//! (`TransactionCommitted`, in the order the store applied them, which is each table's log
//! order). A transaction for checkpoint `n` holds what a writer wrote between its previous
//! barrier and the first barrier `>= n` it took, so a table after checkpoint `k` is its
//! transactions numbered `<= k`. A table fed by event-time windows holds only the windows the
//! watermark had closed, so there the committed rows must be a part of the reference's.
//!
//! A source subtask that had finished before a barrier takes none: its report at the end of its
//! input (same attempt) stands in. A checkpoint is checked only when the reports cover every
//! partition with records (else its cut is not known); the outcome says how many were checked. Needs the job's [`PrefixReference`]; other jobs and
//! batch runs are not checked.
//!
//! Must never: judge a run without a cut (a checkpoint nobody reported on is skipped, never
//! guessed), or read anything but the report.

use std::collections::BTreeMap;

use sluice_catalog::{PrefixReference, PrefixTable, ReadInput};
use sluice_engine::connectors::txn_store::{txn_checkpoint, txn_table};
use sluice_engine::connectors::{RowRef, SinkKind};
use sluice_engine::graph::ExecutionMode;
use sluice_engine::trace::TraceEvent;
use sluice_services::txn_store::TableView;

use crate::report::{RunOutcome, RunReport};
use crate::trace::TraceRecord;

/// Rows shown of a difference.
const WITNESSES: usize = 3;

/// The checkpoint number of a source's report at the end of its input.
const END_OF_INPUT: u64 = u64::MAX;

/// A table's rows as (key, value), sorted.
type Rows = Vec<(String, String)>;

/// The source subtasks' reports at each barrier, by (attempt, checkpoint): (vertex, subtask) →
/// (stream, splits).
type BarrierReports<'a> = BTreeMap<(u32, u64), BTreeMap<(u32, u32), (&'a str, &'a [(u32, u64)])>>;

/// What the oracle looked at in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrefixChecked {
    /// Completed checkpoints whose tables were compared.
    pub checkpoints: usize,
    /// Of those, the ones taken while some partition was still being read (not at its end).
    pub mid_input: usize,
    /// Completed checkpoints whose reports did not cover every partition (no full cut).
    pub skipped: usize,
}

/// Checks a finished streaming run of a job with a prefix reference; see the module doc.
/// `Err` says at which checkpoint which table differs, with witnesses.
pub fn checkpoint_prefix(report: &RunReport) -> Result<PrefixChecked, String> {
    let job = report.source.job();
    let Some(reference) = job.prefix_reference else { return Ok(PrefixChecked::default()) };
    if report.mode != ExecutionMode::Streaming || report.outcome != RunOutcome::Finished {
        return Ok(PrefixChecked::default());
    }
    let input = crate::report::generate_input(&report.source, report.seed);
    let lengths: BTreeMap<&str, Vec<u64>> = input
        .topics
        .iter()
        .map(|(topic, partitions)| (topic.as_str(), partitions.iter().map(|records| records.len() as u64).collect()))
        .collect();
    let Some(segments) = transaction_segments(&report.trace, report) else { return Ok(PrefixChecked::default()) };
    let mut checked = PrefixChecked::default();
    let mut previous: Option<(ReadInput, BTreeMap<String, PrefixTable>)> = None;
    for (checkpoint, read) in barrier_cuts(&report.trace) {
        if !covers(&read, &lengths) {
            checked.skipped += 1;
            continue;
        }
        let expected = match previous.take() {
            Some((same, expected)) if same == read => expected,
            _ => reference_at(reference, report, &read),
        };
        compare_at(report, &segments, checkpoint, &read, &expected)?;
        checked.checkpoints += 1;
        checked.mid_input += usize::from(!read_through(&read, &lengths));
        previous = Some((read, expected));
    }
    Ok(checked)
}

fn reference_at(reference: PrefixReference, report: &RunReport, read: &ReadInput) -> BTreeMap<String, PrefixTable> {
    reference(&report.source.job_params(), read)
}

/// Every completed (not final) checkpoint with the reads its source subtasks reported at its
/// barrier, in trace order: topic → partition → records read. Only the reports of the attempt
/// that completed it count: a new JobMaster that found no completed checkpoint numbers its
/// checkpoints from 1 again, and an older attempt's barrier of the same number is another cut.
fn barrier_cuts(trace: &[TraceRecord]) -> Vec<(u64, ReadInput)> {
    let mut reports = BarrierReports::new();
    let mut cuts = Vec::new();
    for record in trace {
        match &record.event {
            TraceEvent::SourceCheckpointed { attempt, checkpoint, vertex, subtask, stream, splits } => {
                reports.entry((*attempt, *checkpoint)).or_default().insert((*vertex, *subtask), (stream, splits));
            }
            TraceEvent::CheckpointCompleted { attempt, checkpoint, is_final: false } => {
                // A subtask that had finished took no barrier: its end-of-input report stands in.
                let mut by_subtask = reports.get(&(*attempt, END_OF_INPUT)).cloned().unwrap_or_default();
                by_subtask.extend(reports.get(&(*attempt, *checkpoint)).into_iter().flatten());
                let mut read = ReadInput::new();
                for (stream, splits) in by_subtask.values() {
                    read.entry(stream.to_string()).or_default().extend(splits.iter().copied());
                }
                cuts.push((*checkpoint, read));
            }
            _ => {}
        }
    }
    cuts
}

/// Whether a cut names every partition with records of every topic.
fn covers(read: &ReadInput, lengths: &BTreeMap<&str, Vec<u64>>) -> bool {
    lengths.iter().all(|(topic, partitions)| {
        partitions.iter().enumerate().all(|(partition, length)| {
            *length == 0 || read.get(*topic).is_some_and(|splits| splits.contains_key(&(partition as u32)))
        })
    })
}

/// Whether a cut read every partition to its end.
fn read_through(read: &ReadInput, lengths: &BTreeMap<&str, Vec<u64>>) -> bool {
    lengths.iter().all(|(topic, partitions)| {
        partitions.iter().enumerate().all(|(partition, length)| {
            *length == 0 || read.get(*topic).and_then(|splits| splits.get(&(partition as u32))) == Some(length)
        })
    })
}

/// Each table's committed log cut into its transactions, in the order the store applied them:
/// (checkpoint the transaction belongs to, its rows' range in the log); `None` at the end of
/// input. `None` if the trace's counts do not add up to the logs (`commits-stay` says so).
type Segments = BTreeMap<String, Vec<(Option<u64>, std::ops::Range<usize>)>>;

fn transaction_segments(trace: &[TraceRecord], report: &RunReport) -> Option<Segments> {
    let mut segments = Segments::new();
    let mut ends: BTreeMap<&str, usize> = BTreeMap::new();
    for record in trace {
        if let TraceEvent::TransactionCommitted { txn_id, rows, .. } = &record.event {
            let table = txn_table(txn_id).unwrap_or(txn_id);
            let start = ends.get(table).copied().unwrap_or(0);
            let end = start + *rows as usize;
            ends.insert(table, end);
            segments.entry(table.to_string()).or_default().push((txn_checkpoint(txn_id), start..end));
        }
    }
    let adds_up =
        report.committed.iter().all(|(table, view)| ends.get(table.as_str()).copied().unwrap_or(0) == view.log.len());
    adds_up.then_some(segments)
}

/// A table's rows committed for checkpoints up to `checkpoint`, in log order.
fn committed_up_to<'a>(
    view: &'a TableView,
    segments: Option<&Vec<(Option<u64>, std::ops::Range<usize>)>>,
    checkpoint: u64,
) -> Vec<RowRef<'a>> {
    segments
        .into_iter()
        .flatten()
        .filter(|(of, _)| of.is_some_and(|of| of <= checkpoint))
        .flat_map(|(_, range)| range.clone().filter_map(|index| view.log.get(index)))
        .collect()
}

fn compare_at(
    report: &RunReport,
    segments: &Segments,
    checkpoint: u64,
    read: &ReadInput,
    expected: &BTreeMap<String, PrefixTable>,
) -> Result<(), String> {
    let empty = TableView::new(SinkKind::Append);
    for (table, owed) in expected {
        let view = report.committed.get(table).unwrap_or(&empty);
        let rows = committed_up_to(view, segments.get(table), checkpoint);
        let have = table_rows(owed.table.kind, &rows);
        let want: Vec<(String, String)> =
            owed.table.rows.iter().map(|row| (row.key.clone(), row.value.clone().unwrap_or_default())).collect();
        if owed.table.kind == SinkKind::Upsert && !owed.complete {
            continue; // an upsert table over windows: which of its keys are final is not known
        }
        let (lost, extra) = difference(&want, &have);
        if !extra.is_empty() || (owed.complete && !lost.is_empty()) {
            return Err(describe(checkpoint, read, table, owed.complete, &have, &want, (&lost, &extra)));
        }
    }
    Ok(())
}

/// An append table's rows (a multiset), or an upsert table's final row per key, sorted.
fn table_rows(kind: SinkKind, rows: &[RowRef<'_>]) -> Rows {
    let mut table: Rows = match kind {
        SinkKind::Append => rows.iter().map(|row| (row.key.to_string(), row.value.unwrap_or("").to_string())).collect(),
        SinkKind::Upsert => {
            let mut latest: BTreeMap<&str, Option<&str>> = BTreeMap::new();
            for row in rows {
                latest.insert(row.key, row.value);
            }
            latest.into_iter().filter_map(|(key, value)| Some((key.to_string(), value?.to_string()))).collect()
        }
    };
    table.sort_unstable();
    table
}

/// (rows of `want` not in `have`, rows of `have` not in `want`), as multisets of sorted lists.
fn difference(want: &[(String, String)], have: &[(String, String)]) -> (Rows, Rows) {
    let mut sorted_want = want.to_vec();
    sorted_want.sort_unstable();
    let (mut lost, mut extra) = (Vec::new(), Vec::new());
    let (mut i, mut j) = (0, 0);
    while i < sorted_want.len() || j < have.len() {
        match (sorted_want.get(i), have.get(j)) {
            (Some(a), Some(b)) if a == b => (i, j) = (i + 1, j + 1),
            (Some(a), Some(b)) if a < b => (lost.push(a.clone()), i += 1).1,
            (Some(a), None) => (lost.push(a.clone()), i += 1).1,
            (_, Some(b)) => (extra.push(b.clone()), j += 1).1,
            (None, None) => unreachable!("the loop condition"),
        }
    }
    (lost, extra)
}

fn describe(
    checkpoint: u64,
    read: &ReadInput,
    table: &str,
    complete: bool,
    have: &[(String, String)],
    want: &[(String, String)],
    (lost, extra): (&Rows, &Rows),
) -> String {
    let show = |rows: &[(String, String)]| -> String {
        let shown: Vec<String> = rows.iter().take(WITNESSES).map(|(key, value)| format!("{key}={value}")).collect();
        let more = rows.len().saturating_sub(WITNESSES);
        if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
    };
    let cut: Vec<String> = read
        .iter()
        .map(|(topic, splits)| {
            let splits: Vec<String> = splits.iter().map(|(split, read)| format!("{split}:{read}")).collect();
            format!("{topic} {}", splits.join(" "))
        })
        .collect();
    let owed = if complete { "the reference over that input has" } else { "of the reference's" };
    let mut detail = format!(
        "after checkpoint {checkpoint} (sources had read {}), table `{table}` holds {} rows, {owed} {}",
        cut.join("; "),
        have.len(),
        want.len()
    );
    if complete && !lost.is_empty() {
        detail.push_str(&format!("; missing: {}", show(lost)));
    }
    if !extra.is_empty() {
        detail.push_str(&format!("; not in the reference: {}", show(extra)));
    }
    detail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(key, value)| (key.to_string(), value.to_string())).collect()
    }

    #[test]
    fn a_difference_counts_rows_as_a_multiset() {
        let want = rows(&[("b", "1"), ("a", "1"), ("a", "1")]);
        let have = rows(&[("a", "1"), ("b", "1"), ("c", "2")]);
        let (lost, extra) = difference(&want, &have);
        assert_eq!(lost, rows(&[("a", "1")]));
        assert_eq!(extra, rows(&[("c", "2")]));
    }

    #[test]
    fn an_upsert_table_ends_at_each_keys_last_value_and_a_deletion_removes_it() {
        let log = [
            RowRef { key: "a", value: Some("1") },
            RowRef { key: "b", value: Some("1") },
            RowRef { key: "a", value: Some("2") },
            RowRef { key: "b", value: None },
        ];
        assert_eq!(table_rows(SinkKind::Upsert, &log), rows(&[("a", "2")]));
        assert_eq!(table_rows(SinkKind::Append, &log[..2]), rows(&[("a", "1"), ("b", "1")]));
    }

    #[test]
    fn a_cut_covers_the_input_only_when_every_partition_with_records_is_named() {
        let lengths = BTreeMap::from([("bid", vec![3, 0, 2])]);
        let read = ReadInput::from([("bid".to_string(), BTreeMap::from([(0, 1), (2, 2)]))]);
        assert!(covers(&read, &lengths), "partition 1 is empty");
        let partial = ReadInput::from([("bid".to_string(), BTreeMap::from([(0, 1)]))]);
        assert!(!covers(&partial, &lengths), "partition 2's reader did not report");
    }
}
