//! The oracles: what a run must satisfy.
//!
//! - `completed`: the job finished, without a panic.
//! - `liveness`: it finished within the scenario's liveness bound after the last fault healed.
//! - `exactly-once`: every table holds exactly the rows the reference implementation says, as a
//!   multiset: nothing lost, nothing duplicated, nothing uncommitted visible. For an upsert table
//!   in streaming mode this compares every committed update, not just the final values. Its
//!   safety half (nothing beyond the reference) holds for every run, even one that did not
//!   finish; its completeness half only for runs that finished.
//! - `checkpoint-commits`: a transaction written for checkpoint `n` (streaming with checkpoints)
//!   is committed only after a checkpoint at least that new completed: nothing is committed for
//!   a checkpoint that never completed; and no restore goes back behind a checkpoint whose
//!   transactions were committed (the sources would read again what committed output covers).
//! - `commits-stay`: every transaction is applied at most once, and each table holds exactly
//!   the rows its committed transactions made visible: nothing committed was rolled back, and
//!   nothing became visible without a commit.
//! - `checkpoint-prefix` ([`crate::prefix`]): after each checkpoint a streaming run completed, the
//!   tables it committed up to it equal the job's reference over exactly the input its sources
//!   had read at that checkpoint's barrier (jobs with a prefix reference: SQL jobs).
//! - `expectation`: the scenario's own `expect:` holds (canaries set deliberately wrong ones).
//! - `streaming == batch`: the final value per key (upsert) or the multiset of rows (append) is
//!   the same in both modes for the same seed.
//! - `determinism`: the same seed gives the same trace hash.
//!
//! Every failure names its check and shows a few witnesses.
//!
//! A run that did not finish is *expected-unrecoverable*, not failed, when its schedule exceeded
//! what the engine promises to survive: it killed for good the JobMaster, an external system,
//! or so many TaskManagers that the job no longer fits; or the restart strategy gave up while
//! the faults (plus the time it takes to notice them) were still going on. A job that keeps
//! failing on a healed cluster is a failure, and so is one whose every failure after the faults
//! healed is the same failure of an operator (`repeated_operator_failure`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use sluice_catalog::{ExpectedOutput, LateData, UpdateDigest, Updates};
use sluice_engine::connectors::txn_store::{txn_checkpoint, txn_table};
use sluice_engine::connectors::{PackedRows, Row, RowRef, SinkKind};

use sluice_engine::duration::format_duration;
use sluice_engine::failover::FailoverStrategy;
use sluice_engine::trace::TraceEvent;

use crate::late::late_elements_obey_the_watermark;
use crate::report::{LateOutcome, RunOutcome, RunReport};
use crate::scenario::Scenario;
use crate::trace::{TraceRecord, first_difference};
use sluice_services::txn_store::{CommittedView, TableView};

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

/// Rows with how many times they occur.
type Counted<'a> = Vec<(RowRef<'a>, i64)>;

/// Rows of `want` missing from `have`, and rows of `have` beyond `want`, with their counts:
/// a merge of the two sorted multisets.
fn multiset_difference<'a>(want: &[RowRef<'a>], have: &[RowRef<'a>]) -> (Counted<'a>, Counted<'a>) {
    let (mut missing, mut extra) = (Vec::new(), Vec::new());
    let (mut left, mut right) = (0, 0);
    let note = |list: &mut Counted<'a>, row: &RowRef<'a>| match list.last_mut() {
        Some((last, count)) if last == row => *count += 1,
        _ => list.push((*row, 1)),
    };
    while left < want.len() || right < have.len() {
        match (want.get(left), have.get(right)) {
            (Some(wanted), Some(got)) if wanted == got => {
                left += 1;
                right += 1;
            }
            (Some(wanted), Some(got)) if wanted < got => {
                note(&mut missing, wanted);
                left += 1;
            }
            (Some(wanted), None) => {
                note(&mut missing, wanted);
                left += 1;
            }
            (_, Some(got)) => {
                note(&mut extra, got);
                right += 1;
            }
            (None, None) => unreachable!("the loop condition"),
        }
    }
    (missing, extra)
}

fn sorted<'a>(rows: impl Iterator<Item = RowRef<'a>>) -> Vec<RowRef<'a>> {
    let mut sorted: Vec<RowRef<'a>> = rows.collect();
    sorted.sort_unstable();
    sorted
}

/// `key=value`, or `key deleted` for a tombstone.
fn shown(row: &RowRef<'_>) -> String {
    match row.value {
        Some(value) => format!("{}={value}", row.key),
        None => format!("{} deleted", row.key),
    }
}

fn describe(rows: &[(RowRef<'_>, i64)]) -> String {
    let shown: Vec<String> =
        rows.iter().take(WITNESSES).map(|(row, count)| format!("{} ×{count}", shown(row))).collect();
    let more = rows.len().saturating_sub(WITNESSES);
    if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
}

/// Compares committed rows with the reference, table by table: both halves.
pub fn exactly_once(committed: &CommittedView, expected: &ExpectedOutput) -> Result<(), CheckFailure> {
    compare(committed, expected, true, &|| None)
}

/// The safety half: nothing committed beyond the reference (no duplicate, no stray row).
pub fn nothing_beyond_reference(committed: &CommittedView, expected: &ExpectedOutput) -> Result<(), CheckFailure> {
    compare(committed, expected, false, &|| None)
}

/// [`exactly_once`] (or, if not `complete`, [`nothing_beyond_reference`]) of a run whose
/// reference may be summarized per key ([`Updates::Digest`]): where the digests differ, or
/// only the safety half is judged, the table is compared again row by row against `full`, the
/// reference computed in full, for exact witnesses.
pub fn exactly_once_or_in_full(
    committed: &CommittedView,
    expected: &ExpectedOutput,
    complete: bool,
    full: &dyn Fn() -> Option<ExpectedOutput>,
) -> Result<(), CheckFailure> {
    compare(committed, expected, complete, full)
}

fn compare(
    committed: &CommittedView,
    expected: &ExpectedOutput,
    complete: bool,
    full: &dyn Fn() -> Option<ExpectedOutput>,
) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check: "exactly-once", detail });
    if let Some(table) = committed.keys().find(|table| !expected.contains_key(*table)) {
        return failure(format!("table `{table}` was written but the job has no such sink"));
    }
    let empty = TableView::new(SinkKind::Append);
    let mut in_full: Option<Option<ExpectedOutput>> = None;
    for (table, expectation) in expected {
        let view = committed.get(table).unwrap_or(&empty);
        if committed.contains_key(table) && view.kind != expectation.kind {
            return failure(format!(
                "table `{table}` is {:?} but the job writes it as {:?}",
                view.kind, expectation.kind
            ));
        }
        let problem = match &expectation.updates {
            Updates::Exact => exact_difference(&expectation.rows, &view.log, complete),
            Updates::CountPerKey(counts) => count_difference(&expectation.rows, counts, view, complete),
            Updates::FinalOnly => final_difference(&expectation.rows, view, complete),
            Updates::Digest(digests) => match digest_difference(&expectation.rows, digests, view, complete) {
                None if complete => None,
                summary => {
                    let rows = in_full.get_or_insert_with(full).as_ref().and_then(|full| full.get(table));
                    match (rows, summary) {
                        (Some(rows), summary) if rows.updates == Updates::Exact => {
                            let exact = exact_difference(&rows.rows, &view.log, complete);
                            exact.or(summary.map(|summary| {
                                format!("internal: the job's reference summary disagrees with its reference: {summary}")
                            }))
                        }
                        (_, summary) => summary,
                    }
                }
            },
        };
        if let Some(problem) = problem {
            return failure(format!("table `{table}`: {problem}"));
        }
    }
    Ok(())
}

/// Each key's committed updates must have its digest (at most its count, if not complete) and
/// end at its final row.
fn digest_difference(
    finals: &[Row],
    digests: &BTreeMap<String, UpdateDigest>,
    view: &TableView,
    complete: bool,
) -> Option<String> {
    let mut committed: std::collections::HashMap<&str, UpdateDigest> = std::collections::HashMap::new();
    for row in view.log.iter() {
        committed.entry(row.key).or_default().add_row(row.value);
    }
    // Sorted, so that the witnesses do not depend on the hash map's order.
    let committed: BTreeMap<&str, UpdateDigest> = committed.into_iter().collect();
    let none = UpdateDigest::default();
    let mut problems = Vec::new();
    for (key, got) in &committed {
        let wanted = digests.get(*key).unwrap_or(&none);
        if got.count > wanted.count {
            problems.push(format!(
                "{key} updated {} times, expected {} (duplicated or unexpected)",
                got.count, wanted.count
            ));
        } else if complete && got != wanted {
            problems.push(format!(
                "{key} updated {} times, expected {}, to other values than the reference's",
                got.count, wanted.count
            ));
        }
    }
    if complete {
        for (key, wanted) in digests.iter().filter(|(key, _)| !committed.contains_key(key.as_str())) {
            problems.push(format!("{key} updated 0 times, expected {} (lost)", wanted.count));
        }
        problems.extend(final_rows_differ(finals, view));
    }
    witnesses(problems)
}

/// The keys whose latest committed value is not their final row.
fn final_rows_differ(finals: &[Row], view: &TableView) -> Vec<String> {
    let differ = finals.iter().filter(|row| view.latest.get(&row.key) != row.value.as_ref());
    differ
        .map(|row| format!("{} ends at {:?}, expected {}", row.key, view.latest.get(&row.key), row.shown_value()))
        .collect()
}

/// A few problems and how many more, or `None` if there are none.
fn witnesses(mut problems: Vec<String>) -> Option<String> {
    if problems.is_empty() {
        return None;
    }
    let more = problems.len().saturating_sub(WITNESSES);
    problems.truncate(WITNESSES);
    let suffix = if more > 0 { format!(" and {more} more") } else { String::new() };
    Some(format!("{}{suffix}", problems.join("; ")))
}

/// Every committed row must be an expected one, as a multiset (and all of them, if complete).
fn exact_difference(rows: &[Row], log: &PackedRows, complete: bool) -> Option<String> {
    let (mut missing, extra) = multiset_difference(&sorted(rows.iter().map(Row::as_ref)), &sorted(log.iter()));
    if !complete {
        missing.clear();
    }
    if missing.is_empty() && extra.is_empty() {
        return None;
    }
    let mut detail = format!("{} committed, {} expected", crate::words::counted(log.len() as u64, "row"), rows.len());
    if !missing.is_empty() {
        detail.push_str(&format!("; lost: {}", describe(&missing)));
    }
    if !extra.is_empty() {
        detail.push_str(&format!("; duplicated or unexpected: {}", describe(&extra)));
    }
    Some(detail)
}

/// Each key must get its number of updates (at most, if not complete) and end at its final row.
fn count_difference(
    finals: &[Row],
    counts: &BTreeMap<String, u64>,
    view: &TableView,
    complete: bool,
) -> Option<String> {
    let mut committed: BTreeMap<&str, u64> = BTreeMap::new();
    for row in view.log.iter() {
        *committed.entry(row.key).or_insert(0) += 1;
    }
    let mut problems = Vec::new();
    for (key, got) in &committed {
        let wanted = counts.get(*key).copied().unwrap_or(0);
        if *got > wanted {
            problems.push(format!("{key} updated {got} times, expected {wanted} (duplicated or unexpected)"));
        }
    }
    if complete {
        for (key, wanted) in counts {
            let got = committed.get(key.as_str()).copied().unwrap_or(0);
            if got < *wanted {
                problems.push(format!("{key} updated {got} times, expected {wanted} (lost)"));
            }
        }
        problems.extend(final_rows_differ(finals, view));
    }
    witnesses(problems)
}

/// Under [`Updates::FinalOnly`]: the table must end exactly at the final rows, no key more. A
/// run cut short is not judged: its table may hold any intermediate state of the changelog.
fn final_difference(finals: &[Row], view: &TableView, complete: bool) -> Option<String> {
    if !complete {
        return None;
    }
    let mut problems = final_rows_differ(finals, view);
    let wanted: std::collections::BTreeSet<&str> = finals.iter().map(|row| row.key.as_str()).collect();
    let extra = view.latest.iter().filter(|(key, _)| !wanted.contains(key.as_str()));
    problems.extend(extra.map(|(key, value)| format!("{key} ends at {value:?}, expected no row")));
    witnesses(problems)
}

/// How a run is judged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Every check held.
    Pass,
    /// Some checks failed.
    Fail(Vec<CheckFailure>),
    /// The schedule exceeded what the engine promises to survive; why.
    ExpectedUnrecoverable(String),
}

impl Verdict {
    /// The failures, if any.
    pub fn failures(&self) -> &[CheckFailure] {
        match self {
            Verdict::Fail(failures) => failures,
            _ => &[],
        }
    }
}

/// How long after the last fault healed a failure may still be the fault's doing: the slowest
/// detection (a store call retried through its whole budget) plus a restart.
pub const RECOVERY_GRACE: Duration = Duration::from_secs(20);

/// When the run's last fault healed (or fired, for faults that do not heal), if any fired.
pub fn healed_at(report: &RunReport) -> Option<Duration> {
    report
        .trace
        .iter()
        .filter(|record| matches!(record.event, TraceEvent::FaultInjected { .. } | TraceEvent::FaultHealed { .. }))
        .map(|record| record.time)
        .max()
}

fn job_end(report: &RunReport) -> Option<Duration> {
    report
        .trace
        .iter()
        .rev()
        .find(|record| matches!(record.event, TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. }))
        .map(|record| record.time)
}

fn submitted_at(report: &RunReport) -> Duration {
    report
        .trace
        .iter()
        .find(|record| matches!(record.event, TraceEvent::JobSubmitted { .. }))
        .map_or(Duration::ZERO, |record| record.time)
}

/// Every transaction committed for checkpoint `n` was committed after some checkpoint `>= n`
/// completed or was restored (any attempt: checkpoints are the job's, and a restart restores
/// the newest); and no restore goes back behind committed output: a restart that restores
/// checkpoint `r` rewinds the sources to `r`'s positions, so every transaction committed before
/// it must belong to a checkpoint `<= r`.
pub fn commits_follow_checkpoints(trace: &[TraceRecord]) -> Result<(), CheckFailure> {
    let mut newest_completed: Option<u64> = None;
    let mut newest_committed: Option<(u64, &str)> = None;
    let mut wrong = Vec::new();
    for record in trace {
        let at = record.time.as_secs_f64();
        match &record.event {
            TraceEvent::CheckpointCompleted { checkpoint, .. } => {
                newest_completed = newest_completed.max(Some(*checkpoint));
            }
            // A restore also proves completion: a JobMaster that crashed right after recording a
            // checkpoint never traced its completion, and its successor restores it.
            TraceEvent::CheckpointRestored { checkpoint, .. } => {
                newest_completed = newest_completed.max(Some(*checkpoint));
                if let Some((committed, txn_id)) = newest_committed.filter(|(committed, _)| committed > checkpoint) {
                    wrong.push(format!(
                        "checkpoint {checkpoint} restored at {at:.3}s, behind {txn_id} (checkpoint {committed}) committed before it"
                    ));
                }
            }
            TraceEvent::TransactionCommitted { txn_id, .. } => {
                let Some(needed) = txn_checkpoint(txn_id) else { continue };
                if newest_completed.is_none_or(|newest| newest < needed) {
                    wrong.push(format!("{txn_id} at {at:.3}s committed before any checkpoint that new completed"));
                }
                if newest_committed.is_none_or(|(newest, _)| newest < needed) {
                    newest_committed = Some((needed, txn_id));
                }
            }
            _ => {}
        }
    }
    if wrong.is_empty() {
        return Ok(());
    }
    let more = wrong.len().saturating_sub(WITNESSES);
    wrong.truncate(WITNESSES);
    Err(CheckFailure {
        check: "checkpoint-commits",
        detail: format!("{}{}", wrong.join("; "), if more > 0 { format!(" and {more} more") } else { String::new() }),
    })
}

/// Every transaction the store reports committed was applied once, and each table's committed
/// log holds exactly the rows those commits made visible.
pub fn commits_stay(trace: &[TraceRecord], committed: &CommittedView) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check: "commits-stay", detail });
    let mut applied: BTreeMap<&str, u32> = BTreeMap::new();
    let mut rows_per_table: BTreeMap<&str, u64> = BTreeMap::new();
    for record in trace {
        if let TraceEvent::TransactionCommitted { txn_id, rows, .. } = &record.event {
            *applied.entry(txn_id).or_insert(0) += 1;
            let table = txn_table(txn_id).unwrap_or(txn_id);
            *rows_per_table.entry(table).or_insert(0) += rows;
        }
    }
    let twice: Vec<&str> = applied.iter().filter(|(_, times)| **times > 1).map(|(txn_id, _)| *txn_id).collect();
    if !twice.is_empty() {
        return failure(format!(
            "applied more than once: {}",
            twice.iter().take(WITNESSES).copied().collect::<Vec<_>>().join(", ")
        ));
    }
    for (table, view) in committed {
        let visible = view.log.len() as u64;
        let made_visible = rows_per_table.get(table.as_str()).copied().unwrap_or(0);
        if visible != made_visible {
            return failure(format!(
                "table `{table}` holds {visible} committed rows, but its commits made {made_visible} visible"
            ));
        }
    }
    if let Some((table, rows)) =
        rows_per_table.iter().find(|(table, rows)| **rows > 0 && !committed.contains_key(**table))
    {
        return failure(format!("commits made {rows} rows of table `{table}` visible, and the table is gone"));
    }
    Ok(())
}

/// Judges one run; see the module doc.
pub fn judge(report: &RunReport, scenario: &Scenario) -> Verdict {
    let mut failures = Vec::new();
    if let RunOutcome::Panicked(message) = &report.outcome {
        return Verdict::Fail(vec![CheckFailure { check: "completed", detail: format!("panicked: {message}") }]);
    }
    if let Err(failure) = commits_follow_checkpoints(&report.trace) {
        failures.push(failure);
    }
    if let Err(failure) = commits_stay(&report.trace, &report.committed) {
        failures.push(failure);
    }
    if let Err(failure) = restarts_follow_the_failover_rules(report) {
        failures.push(failure);
    }
    if let Some(late) = &scenario.job().late
        && let Err(failure) = late_data(report, late)
    {
        failures.push(failure);
    }
    let finished = report.outcome == RunOutcome::Finished;
    if finished && let Err(failure) = nothing_left_open(report.open_transactions.as_deref()) {
        failures.push(failure);
    }
    if let Some(expected) = &report.expected
        && let Err(failure) = exactly_once_or_in_full(&report.committed, expected, finished, &|| full_reference(report))
    {
        failures.push(failure);
    }
    if let Err(detail) = crate::prefix::checkpoint_prefix(report) {
        failures.push(CheckFailure { check: "checkpoint-prefix", detail });
    }
    if let Some(max_restarts) = scenario.expect.max_restarts
        && report.restarts() > u64::from(max_restarts)
    {
        failures.push(CheckFailure {
            check: "expectation",
            detail: format!(
                "{}, the scenario expects at most {max_restarts}",
                crate::words::counted(report.restarts(), "restart")
            ),
        });
    }
    let healed = healed_at(report).unwrap_or_else(|| submitted_at(report));
    match &report.outcome {
        RunOutcome::Finished => {
            let end = job_end(report).unwrap_or(report.makespan);
            if end > healed + scenario.liveness_bound {
                failures.push(CheckFailure {
                    check: "liveness",
                    detail: format!(
                        "finished {:.3}s after the last fault healed (at {:.3}s); the bound is {}",
                        (end - healed).as_secs_f64(),
                        healed.as_secs_f64(),
                        format_duration(scenario.liveness_bound)
                    ),
                });
            }
        }
        outcome if failures.is_empty() => {
            if let Some(reason) = unrecoverable(report, scenario, healed) {
                return Verdict::ExpectedUnrecoverable(reason);
            }
            failures.push(CheckFailure { check: "completed", detail: outcome.to_string() });
        }
        outcome => failures.push(CheckFailure { check: "completed", detail: outcome.to_string() }),
    }
    if failures.is_empty() { Verdict::Pass } else { Verdict::Fail(failures) }
}

fn unrecoverable(report: &RunReport, scenario: &Scenario, healed: Duration) -> Option<String> {
    if let Some(reason) = scenario.schedule_is_unsurvivable(&report.schedule) {
        return Some(reason);
    }
    let RunOutcome::JobFailed(reason) = &report.outcome else { return None };
    let gave_up = reason.contains("gave up");
    let end = job_end(report)?;
    let faults_to_blame = end <= healed + RECOVERY_GRACE && repeated_operator_failure(&report.trace, healed).is_none();
    (gave_up && faults_to_blame).then(|| format!("the faults exhausted the restart strategy: {reason}"))
}

/// How many failures after the last fault healed, all the same failure of an operator, make a
/// job that gave up one that keeps failing on a healed cluster: a bug, not the faults' doing.
const REPEATED_FAILURES: usize = 3;

/// The failure of an operator that every task failure after `healed` repeats, if there are at
/// least [`REPEATED_FAILURES`] of them: an operator that fails the same way attempt after
/// attempt on a healed cluster fails deterministically (a fault makes a task fail by losing
/// what it reads or talks to, which restarts cure once the fault heals).
pub fn repeated_operator_failure(trace: &[TraceRecord], healed: Duration) -> Option<&str> {
    let reasons: Vec<&str> = trace
        .iter()
        .filter(|record| record.time > healed)
        .filter_map(|record| match &record.event {
            TraceEvent::TaskFailed { reason, .. } => Some(reason.as_str()),
            _ => None,
        })
        .collect();
    let first = *reasons.first()?;
    let repeated = reasons.len() >= REPEATED_FAILURES && reasons.iter().all(|reason| *reason == first);
    (repeated && first.starts_with("operator failed:")).then_some(first)
}

/// The run's reference computed in full, row by row, on the input generated again from its
/// seed: the witnesses of a run checked against per-key digests.
fn full_reference(report: &RunReport) -> Option<ExpectedOutput> {
    let scenario = &report.source;
    let input = crate::report::generate_input(scenario, report.seed);
    scenario.job().expected(&scenario.job_params(), &input, report.mode)
}

/// Every check of a single run that needs no scenario: completion and exactly-once.
pub fn check_run(report: &RunReport) -> Vec<CheckFailure> {
    let mut failures = Vec::new();
    if report.outcome != RunOutcome::Finished {
        failures.push(CheckFailure { check: "completed", detail: report.outcome.to_string() });
        return failures;
    }
    if let Some(expected) = &report.expected
        && let Err(failure) = exactly_once_or_in_full(&report.committed, expected, true, &|| full_reference(report))
    {
        failures.push(failure);
    }
    if let Err(failure) = commits_follow_checkpoints(&report.trace) {
        failures.push(failure);
    }
    if let Err(failure) = commits_stay(&report.trace, &report.committed) {
        failures.push(failure);
    }
    if let Err(failure) = nothing_left_open(report.open_transactions.as_deref()) {
        failures.push(failure);
    }
    if let Err(failure) = restarts_follow_the_failover_rules(report) {
        failures.push(failure);
    }
    if let Err(detail) = crate::prefix::checkpoint_prefix(report) {
        failures.push(CheckFailure { check: "checkpoint-prefix", detail });
    }
    failures
}

/// Every region restart of the run re-ran exactly the subtasks the failover rules say (see
/// [`crate::failover_sets`]), against the job's plan in the run's mode; `Ok` says how many
/// restarts were checked.
pub fn restarts_follow_the_failover_rules(report: &RunReport) -> Result<usize, CheckFailure> {
    let scenario = &report.source;
    let spec = scenario.job_spec(report.mode);
    let region = spec.failover_strategy == FailoverStrategy::Region && spec.checkpointing().is_none();
    let plan = scenario.job().plan(&scenario.job_params(), spec.config()).map_err(|error| CheckFailure {
        check: "failover-sets",
        detail: format!("internal: the job planned when it ran, and now does not: {error}"),
    })?;
    crate::failover_sets::failover_sets(&report.trace, std::sync::Arc::new(plan), region)
        .map_err(|detail| CheckFailure { check: "failover-sets", detail })
}

/// A finished job leaves nothing open in the transactional store: every transaction any attempt
/// began was committed, or aborted by a later attempt (lingering ones), or taken over by it.
pub fn nothing_left_open(open_transactions: Option<&[String]>) -> Result<(), CheckFailure> {
    match open_transactions {
        Some(open) if !open.is_empty() => {
            let shown: Vec<&str> = open.iter().take(5).map(String::as_str).collect();
            let more = if open.len() > shown.len() {
                format!(" and {} more", open.len() - shown.len())
            } else {
                String::new()
            };
            Err(CheckFailure {
                check: "nothing-left-open",
                detail: format!(
                    "the job finished with {} in the store: {}{more}",
                    crate::words::counted(open.len() as u64, "open transaction"),
                    shown.join(", ")
                ),
            })
        }
        _ => Ok(()),
    }
}

/// The final output of one mode must equal the other's.
pub fn modes_agree(streaming: &RunReport, batch: &RunReport) -> Result<(), CheckFailure> {
    same_final_output("streaming == batch", ("streaming", streaming), ("batch", batch))
}

/// A run of a job with late data ([`LateData`]): every element a window left out was left out
/// of exactly the windows that had fired ([`late_elements_obey_the_watermark`], every attempt's
/// decisions); the late table holds exactly the elements late for every window (by event time;
/// a prefix of them while the job has not finished); and, once finished, every windowed table
/// holds its reference given what the windows left out.
pub fn late_data(report: &RunReport, late: &LateData) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check: "late-data", detail });
    if let Err(wrong) = late_elements_obey_the_watermark(&report.trace) {
        return failure(wrong);
    }
    let Some(outcome) = &report.late else { return Ok(()) };
    let finished = report.outcome == RunOutcome::Finished;
    late_table_holds_the_late_elements(&report.committed, late, outcome, finished)?;
    if !finished {
        return Ok(());
    }
    let windowed = match &outcome.windowed {
        Ok(windowed) => windowed,
        Err(problem) => return failure(format!("the windowed tables' reference cannot follow the run: {problem}")),
    };
    for table in late.windowed {
        let Some(expected) = windowed.get(*table) else {
            return failure(format!("the windowed reference has no table `{table}`"));
        };
        let committed: CommittedView = report
            .committed
            .get(*table)
            .map(|view| BTreeMap::from([(table.to_string(), view.clone())]))
            .unwrap_or_default();
        let expected = BTreeMap::from([(table.to_string(), expected.clone())]);
        if let Err(wrong) = exactly_once(&committed, &expected) {
            let left_out = outcome.elements.len();
            return failure(format!(
                "{} (the reference leaves out what the run's windows left out: {})",
                wrong.detail,
                crate::words::counted(left_out as u64, "element")
            ));
        }
    }
    Ok(())
}

/// The late table holds the elements late for every window, each once, by event time (all of
/// them once the job finished).
fn late_table_holds_the_late_elements(
    committed: &CommittedView,
    late: &LateData,
    outcome: &LateOutcome,
    finished: bool,
) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check: "late-data", detail });
    let mut owed: BTreeMap<i64, u64> = BTreeMap::new();
    for element in outcome.elements.iter().filter(|element| element.every_window()) {
        *owed.entry(element.timestamp).or_insert(0) += 1;
    }
    let rows = committed.get(late.table).map(|table| table.log.to_rows()).unwrap_or_default();
    let mut held: BTreeMap<i64, u64> = BTreeMap::new();
    for row in &rows {
        let Some(timestamp) = (late.timestamp)(row) else {
            return failure(format!("table `{}` row {} is not a late element", late.table, shown(&row.as_ref())));
        };
        *held.entry(timestamp).or_insert(0) += 1;
    }
    for timestamp in owed.keys().chain(held.keys()).collect::<std::collections::BTreeSet<_>>() {
        let (owed, held) = (owed.get(timestamp).copied().unwrap_or(0), held.get(timestamp).copied().unwrap_or(0));
        if held > owed || (finished && held < owed) {
            return failure(format!(
                "table `{}` holds {} at {timestamp}, but the windows left {} out of every window",
                late.table,
                crate::words::counted(held, "late element"),
                crate::words::counted(owed, "element"),
            ));
        }
    }
    Ok(())
}

/// Two runs must commit the same final output: the final value per key (upsert tables) or the
/// multiset of rows (append tables). `check` names the failure; the labels name the runs in it.
pub fn same_final_output(
    check: &'static str,
    (left_name, left_run): (&str, &RunReport),
    (right_name, right_run): (&str, &RunReport),
) -> Result<(), CheckFailure> {
    outputs_agree(check, (left_name, &left_run.committed), (right_name, &right_run.committed), None)
}

/// Two committed views agree on every table's final output but `except`'s (see
/// [`same_final_output`]).
pub fn outputs_agree(
    check: &'static str,
    (left_name, left_committed): (&str, &CommittedView),
    (right_name, right_committed): (&str, &CommittedView),
    except: Option<&str>,
) -> Result<(), CheckFailure> {
    let failure = |detail: String| Err(CheckFailure { check, detail });
    let tables: std::collections::BTreeSet<&String> = left_committed.keys().chain(right_committed.keys()).collect();
    for table in tables.into_iter().filter(|table| Some(table.as_str()) != except) {
        // A table one run never committed to is an empty one.
        let empty = |other: &TableView| Cow::Owned(TableView::new(other.kind));
        let (left, right): (Cow<TableView>, Cow<TableView>) =
            match (left_committed.get(table), right_committed.get(table)) {
                (Some(left), Some(right)) => (Cow::Borrowed(left), Cow::Borrowed(right)),
                (Some(left), None) => (Cow::Borrowed(left), empty(left)),
                (None, Some(right)) => (empty(right), Cow::Borrowed(right)),
                (None, None) => unreachable!("a table of one of the two"),
            };
        match left.kind {
            SinkKind::Upsert => {
                if left.latest != right.latest {
                    let differing: Vec<String> = left
                        .latest
                        .iter()
                        .filter(|(key, value)| right.latest.get(*key) != Some(*value))
                        .map(|(key, value)| {
                            format!("{key}: {left_name} {value}, {right_name} {:?}", right.latest.get(key))
                        })
                        .chain(
                            right
                                .latest
                                .iter()
                                .filter(|(key, _)| !left.latest.contains_key(*key))
                                .map(|(key, value)| format!("{key}: {left_name} none, {right_name} {value}")),
                        )
                        .take(WITNESSES)
                        .collect();
                    return failure(format!("table `{table}` final values differ: {}", differing.join("; ")));
                }
            }
            SinkKind::Append => {
                let (left_rows, right_rows) = (sorted(left.log.iter()), sorted(right.log.iter()));
                if left_rows != right_rows {
                    let (missing, extra) = multiset_difference(&left_rows, &right_rows);
                    return failure(format!(
                        "table `{table}`: {left_name} committed {} rows, {right_name} {}; only in {left_name}: {}; only in {right_name}: {}",
                        left_rows.len(),
                        right_rows.len(),
                        describe(&missing),
                        describe(&extra),
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
    use std::collections::BTreeMap;

    use super::*;
    use sluice_catalog::ExpectedTable;

    use sluice_services::txn_store::TableView;

    fn row(key: &str, value: &str) -> Row {
        Row::new(key.to_string(), value.to_string())
    }

    fn view(rows: Vec<Row>) -> CommittedView {
        let mut table = TableView::new(SinkKind::Upsert);
        table.append(&rows.into());
        BTreeMap::from([("t".to_string(), table)])
    }

    fn expected(rows: Vec<Row>) -> ExpectedOutput {
        BTreeMap::from([("t".to_string(), ExpectedTable { kind: SinkKind::Upsert, rows, updates: Updates::Exact })])
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
    fn a_changelog_table_is_judged_by_where_it_ends_deletions_included() {
        let expected: ExpectedOutput = BTreeMap::from([(
            "t".to_string(),
            ExpectedTable { kind: SinkKind::Upsert, rows: vec![row("a", "2")], updates: Updates::FinalOnly },
        )]);
        let changelog = vec![row("a", "1"), row("b", "1"), Row::tombstone("a"), row("a", "2"), Row::tombstone("b")];
        assert_eq!(exactly_once(&view(changelog.clone()), &expected), Ok(()));
        let kept = exactly_once(&view(changelog[..4].to_vec()), &expected).unwrap_err();
        assert!(kept.detail.contains("b ends at \"1\", expected no row"), "a lost deletion: {}", kept.detail);
        let deleted = exactly_once(&view(changelog[..3].to_vec()), &expected).unwrap_err();
        assert!(deleted.detail.contains("a ends at None, expected 2"), "{}", deleted.detail);
        // A run cut short may hold any state of the changelog.
        assert_eq!(nothing_beyond_reference(&view(changelog[..2].to_vec()), &expected), Ok(()));
    }

    #[test]
    fn counted_updates_catch_a_duplicate_and_a_wrong_final_value() {
        let expected: ExpectedOutput = BTreeMap::from([(
            "t".to_string(),
            ExpectedTable {
                kind: SinkKind::Upsert,
                rows: vec![row("a", "30")],
                updates: Updates::CountPerKey(BTreeMap::from([("a".to_string(), 2)])),
            },
        )]);
        assert_eq!(exactly_once(&view(vec![row("a", "20"), row("a", "30")]), &expected), Ok(()));
        let duplicated = exactly_once(&view(vec![row("a", "20"), row("a", "20"), row("a", "30")]), &expected);
        assert!(duplicated.unwrap_err().detail.contains("updated 3 times, expected 2"));
        let wrong = exactly_once(&view(vec![row("a", "10"), row("a", "20")]), &expected);
        assert!(wrong.unwrap_err().detail.contains("a ends at Some(\"20\"), expected 30"));
        assert_eq!(nothing_beyond_reference(&view(vec![row("a", "20")]), &expected), Ok(()));
    }

    #[test]
    fn digested_updates_catch_what_rows_would_and_show_the_full_witness_when_they_can() {
        let log = |values: &[&str]| view(values.iter().map(|value| row("a", value)).collect());
        let full = BTreeMap::from([(
            "t".to_string(),
            ExpectedTable { kind: SinkKind::Upsert, rows: vec![row("a", "1"), row("a", "2")], updates: Updates::Exact },
        )]);
        let summary: ExpectedOutput =
            full.clone().into_iter().map(|(table, rows)| (table, rows.summarized())).collect();
        let unavailable = || None;
        let in_full = || Some(full.clone());
        let judge = |committed: &CommittedView, complete: bool, full: &dyn Fn() -> Option<ExpectedOutput>| {
            exactly_once_or_in_full(committed, &summary, complete, full).map_err(|failure| failure.detail)
        };
        assert_eq!(judge(&log(&["2", "1"]), true, &unavailable), Ok(()), "any order of the same updates");
        let duplicated = judge(&log(&["1", "1", "2"]), true, &unavailable).unwrap_err();
        assert!(duplicated.contains("a updated 3 times, expected 2 (duplicated or unexpected)"), "{duplicated}");
        let wrong = judge(&log(&["1", "3"]), true, &unavailable).unwrap_err();
        assert!(wrong.contains("to other values than the reference's"), "{wrong}");
        let lost = judge(&CommittedView::new(), true, &unavailable).unwrap_err();
        assert!(lost.contains("a updated 0 times, expected 2 (lost)"), "{lost}");
        // With the full reference, the witnesses are rows, as without digests.
        let witnessed = judge(&log(&["1", "3"]), true, &in_full).unwrap_err();
        assert!(witnessed.contains("lost: a=2 ×1; duplicated or unexpected: a=3 ×1"), "{witnessed}");
        // The safety half compares rows when it can, counts when it cannot.
        assert!(judge(&log(&["3"]), false, &in_full).unwrap_err().contains("a=3"));
        assert_eq!(judge(&log(&["3"]), false, &unavailable), Ok(()), "a value is unknown without the rows");
        assert_eq!(judge(&log(&["2"]), false, &in_full), Ok(()));
    }

    #[test]
    fn a_rolled_back_or_doubly_applied_commit_is_caught() {
        let commit = |txn_id: &str, rows: u64| TraceRecord {
            time: Duration::from_millis(1),
            node: "txn-store".to_string(),
            event: TraceEvent::TransactionCommitted { txn_id: txn_id.to_string(), epoch: 0, rows },
        };
        let view = |rows: usize| -> CommittedView {
            let row = Row::new("k".to_string(), "v".to_string());
            BTreeMap::from([(
                "t".to_string(),
                TableView { kind: SinkKind::Append, log: vec![row; rows].into(), latest: BTreeMap::new() },
            )])
        };
        let trace = vec![commit("j/t#3/0/c1", 2), commit("j/t#3/1/c1", 1)];
        assert_eq!(commits_stay(&trace, &view(3)), Ok(()));
        let rolled_back = commits_stay(&trace, &view(2)).unwrap_err();
        assert_eq!(rolled_back.check, "commits-stay");
        assert!(rolled_back.detail.contains("holds 2 committed rows, but its commits made 3 visible"), "{rolled_back}");
        let twice = commits_stay(&[commit("j/t#3/0/c1", 2), commit("j/t#3/0/c1", 2)], &view(4)).unwrap_err();
        assert!(twice.detail.contains("applied more than once: j/t#3/0/c1"), "{twice}");
        assert!(commits_stay(&trace, &BTreeMap::new()).unwrap_err().detail.contains("gone"));
    }

    #[test]
    fn an_operator_failing_the_same_way_on_a_healed_cluster_is_not_the_faults_doing() {
        let failed = |millis: u64, reason: &str| TraceRecord {
            time: Duration::from_millis(millis),
            node: "tm-0".to_string(),
            event: TraceEvent::TaskFailed { attempt: 1, vertex: 3, subtask: 1, reason: reason.to_string() },
        };
        let bug = "operator failed: the changelog retracts what it did not add";
        let healed = Duration::from_millis(100);
        let trace = vec![failed(50, "lost partition"), failed(150, bug), failed(400, bug), failed(650, bug)];
        assert_eq!(repeated_operator_failure(&trace, healed), Some(bug));
        assert_eq!(repeated_operator_failure(&trace[..3], healed), None, "two failures may still be the faults'");
        let mixed = vec![failed(150, bug), failed(400, "output failed: store unreachable"), failed(650, bug)];
        assert_eq!(repeated_operator_failure(&mixed, healed), None);
        let input = vec![failed(150, "lost partition"); 3];
        assert_eq!(repeated_operator_failure(&input, healed), None, "only an operator's own failure");
        assert_eq!(repeated_operator_failure(&trace, Duration::from_millis(500)), None, "before the faults healed");
    }

    #[test]
    fn a_transaction_committed_before_its_checkpoint_completed_is_caught() {
        let at = |millis: u64, event: TraceEvent| TraceRecord {
            time: Duration::from_millis(millis),
            node: "x".to_string(),
            event,
        };
        let commit = |millis: u64, checkpoint: u64| {
            at(millis, TraceEvent::TransactionCommitted { txn_id: format!("j/t#4/0/c{checkpoint}"), epoch: 0, rows: 1 })
        };
        let completed = |millis: u64, checkpoint: u64| {
            at(millis, TraceEvent::CheckpointCompleted { attempt: 0, checkpoint, is_final: false })
        };
        // c2 is committed with checkpoint 3 (checkpoint 2 was aborted): allowed.
        let good = vec![completed(10, 1), commit(11, 1), completed(20, 3), commit(21, 2), commit(22, 3)];
        assert_eq!(commits_follow_checkpoints(&good), Ok(()));
        let eoi = at(5, TraceEvent::TransactionCommitted { txn_id: "j/t#4/0/eoi".to_string(), epoch: 0, rows: 1 });
        assert_eq!(commits_follow_checkpoints(&[eoi]), Ok(()), "end-of-input transactions need no checkpoint");
        let bad = vec![completed(10, 1), commit(11, 2)];
        let failure = commits_follow_checkpoints(&bad).unwrap_err();
        assert_eq!(failure.check, "checkpoint-commits");
        assert!(failure.detail.contains("j/t#4/0/c2 at 0.011s committed before"), "{failure}");
        let restored =
            |millis: u64, checkpoint: u64| at(millis, TraceEvent::CheckpointRestored { attempt: 1, checkpoint });
        let forward = vec![completed(10, 1), completed(20, 2), commit(21, 2), restored(30, 2)];
        assert_eq!(commits_follow_checkpoints(&forward), Ok(()));
        let backwards = vec![completed(10, 1), completed(20, 2), commit(21, 2), restored(30, 1)];
        let failure = commits_follow_checkpoints(&backwards).unwrap_err();
        assert!(failure.detail.contains("checkpoint 1 restored at 0.030s, behind j/t#4/0/c2"), "{failure}");
    }

    #[test]
    fn a_late_table_that_differs_from_the_elements_late_for_every_window_is_caught() {
        fn timestamp(row: &Row) -> Option<i64> {
            row.value.as_deref()?.parse().ok()
        }
        fn windowed(
            _: &sluice_catalog::JobParams,
            _: &sluice_catalog::ExternalInput,
            _: &mut sluice_catalog::LateElements,
        ) -> ExpectedOutput {
            BTreeMap::new()
        }
        let late = LateData { table: "late", windowed: &[], timestamp, windowed_reference: windowed };
        let element = |timestamp: i64, every: bool| crate::late::LateElement {
            element: format!("(\"u\", {timestamp})"),
            timestamp,
            watermark: 999,
            missed: vec![(0, 1_000)],
            joined: if every { vec![] } else { vec![(500, 1_500)] },
        };
        let outcome = |elements: Vec<crate::late::LateElement>| LateOutcome { elements, windowed: Ok(BTreeMap::new()) };
        let committed = |values: &[&str]| -> CommittedView {
            let log: Vec<Row> = values.iter().map(|value| row("u", value)).collect();
            BTreeMap::from([(
                "late".to_string(),
                TableView { kind: SinkKind::Append, log: log.into(), latest: BTreeMap::new() },
            )])
        };
        let check = |values: &[&str], elements, finished| {
            late_table_holds_the_late_elements(&committed(values), &late, &outcome(elements), finished)
        };
        assert_eq!(check(&["300"], vec![element(300, true), element(400, false)], true), Ok(()));
        let partly = check(&["300", "400"], vec![element(300, true), element(400, false)], true).unwrap_err();
        assert!(partly.detail.contains("holds 1 late element at 400, but the windows left 0 elements out"), "{partly}");
        let missing = check(&[], vec![element(300, true)], true).unwrap_err();
        assert!(missing.detail.contains("holds 0 late elements at 300"), "{missing}");
        assert_eq!(check(&[], vec![element(300, true)], false), Ok(()), "not finished: not committed yet");
        let stray = check(&["x"], vec![], true).unwrap_err();
        assert!(stray.detail.contains("u=x is not a late element"), "{stray}");
    }

    #[test]
    fn exactly_once_rejects_a_table_the_job_does_not_write() {
        let mut committed = view(vec![row("a", "1")]);
        committed.insert("other".to_string(), committed["t"].clone());
        assert!(exactly_once(&committed, &expected(vec![row("a", "1")])).is_err());
    }
}
