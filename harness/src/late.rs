//! Late data, as a run's trace tells it: which elements the window operators left out of which
//! windows, as far as that shaped what the run committed.
//!
//! A window operator traces every element it left out of a window that had fired
//! (`LateElement`): late for every window (dropped, or sent to the late-data side output), or,
//! with sliding windows, for its earliest windows only (added to the others). An attempt's work
//! may be thrown away: a restart of every subtask keeps what came before the checkpoint it
//! restored (each event names the newest checkpoint its subtask's state held, and a restore of
//! checkpoint `c` undoes what came at `c` or later; with none restored, everything), a region
//! restart throws away the work of the subtasks it re-runs, and a new JobMaster's reconciliation
//! keeps only the finished subtasks it kept. What is left shaped the committed output:
//! [`effective_late_elements`]. [`late_elements_obey_the_watermark`] checks every decision,
//! thrown away or not, against the rule.
//!
//! Depends on the engine's trace only. Invariant: it never asks the engine which windows were
//! late; it reads what the operators said they did and judges it.

use std::collections::{BTreeMap, BTreeSet};

use sluice_engine::trace::{TraceEvent, parse_subtask};

use crate::trace::TraceRecord;

/// One element a window operator left out of windows that had fired, as the operator said it
/// (its `{:?}` text, time, the watermark, the windows it missed and joined).
pub type LateElement = sluice_engine::graph::operator::LateDrop;

/// A traced late element with what decides whether its attempt's work was kept.
struct Traced {
    attempt: u32,
    subtask: (u32, u32),
    checkpoint: u64,
    late: LateElement,
}

/// How a restart under a new attempt treated the work done before it.
enum Restart {
    /// Announced, but nothing of it ran yet (a JobMaster that dies during the restart delay, or
    /// while it reconciles): it undoes nothing; the next one decides.
    Pending,
    /// Every subtask started again from checkpoint `restored` (0: from nothing).
    All { restored: u64 },
    /// These subtasks started again from nothing; the others went on.
    Regions(BTreeSet<(u32, u32)>),
    /// A new JobMaster kept these finished subtasks and re-ran every other.
    Kept(BTreeSet<(u32, u32)>),
}

/// The late elements whose treatment shaped the run's committed output, in trace order; see the
/// module doc.
pub fn effective_late_elements(trace: &[TraceRecord]) -> Vec<LateElement> {
    let mut traced = Vec::new();
    let mut restarts: BTreeMap<u32, Restart> = BTreeMap::new();
    for record in trace {
        match &record.event {
            TraceEvent::LateElement {
                attempt,
                vertex,
                subtask,
                element,
                timestamp,
                watermark,
                missed,
                joined,
                checkpoint,
                ..
            } => {
                let late = LateElement {
                    element: element.clone(),
                    timestamp: *timestamp,
                    watermark: *watermark,
                    missed: missed.clone(),
                    joined: joined.clone(),
                };
                traced.push(Traced { attempt: *attempt, subtask: (*vertex, *subtask), checkpoint: *checkpoint, late });
            }
            TraceEvent::JobRestarting { attempt, .. } | TraceEvent::JobRecovered { attempt, .. } => {
                restarts.insert(*attempt, Restart::Pending);
            }
            // Its first region deployed without restoring a checkpoint: it started from nothing.
            TraceEvent::RegionScheduled { attempt, .. } => {
                if let Some(restart @ Restart::Pending) = restarts.get_mut(attempt) {
                    *restart = Restart::All { restored: 0 };
                }
            }
            TraceEvent::CheckpointRestored { attempt, checkpoint } => {
                restarts.insert(*attempt, Restart::All { restored: *checkpoint });
            }
            TraceEvent::RegionsRestarting { attempt, subtasks, .. } => {
                restarts.insert(*attempt, Restart::Regions(subtasks.iter().map(|text| subtask(text)).collect()));
            }
            TraceEvent::FinishedWorkReconciled { attempt, kept, .. } => {
                restarts.insert(*attempt, Restart::Kept(kept.iter().map(|text| subtask(text)).collect()));
            }
            _ => {}
        }
    }
    traced.into_iter().filter(|traced| kept_through(traced, &restarts)).map(|traced| traced.late).collect()
}

/// A subtask as the JobMaster's events name it (`v1[0]`).
fn subtask(text: &str) -> (u32, u32) {
    parse_subtask(text).unwrap_or_else(|| panic!("internal: the trace names a subtask `{text}` that does not parse"))
}

/// Whether every restart after its attempt kept the work that traced it.
fn kept_through(traced: &Traced, restarts: &BTreeMap<u32, Restart>) -> bool {
    restarts.range(traced.attempt + 1..).all(|(_, restart)| match restart {
        Restart::Pending => true,
        Restart::All { restored } => traced.checkpoint < *restored,
        Restart::Regions(subtasks) => !subtasks.contains(&traced.subtask),
        Restart::Kept(subtasks) => subtasks.contains(&traced.subtask),
    })
}

/// Every traced decision, kept or thrown away, followed Flink's rule: an element is left out of
/// exactly the windows that had fired when it arrived (`end - 1 <= watermark`). The first one
/// that did not, described.
pub fn late_elements_obey_the_watermark(trace: &[TraceRecord]) -> Result<(), String> {
    for record in trace {
        let TraceEvent::LateElement { vertex, subtask, element, timestamp, watermark, missed, joined, .. } =
            &record.event
        else {
            continue;
        };
        let who = format!("v{vertex}[{subtask}] at {:.3}s", record.time.as_secs_f64());
        // An element in no window at all (windows that slide by more than their size) is late as
        // Flink counts it once the watermark passed its time.
        if missed.is_empty() && (!joined.is_empty() || timestamp > watermark) {
            return Err(format!("{who} traced element {element} at {timestamp} as late for no window"));
        }
        if let Some((start, end)) = missed.iter().find(|(_, end)| end - 1 > *watermark) {
            return Err(format!(
                "{who} left element {element} at {timestamp} out of window [{start}, {end}), which had not fired \
                 (watermark {watermark})"
            ));
        }
        if let Some((start, end)) = joined.iter().find(|(_, end)| end - 1 <= *watermark) {
            return Err(format!(
                "{who} added element {element} at {timestamp} to window [{start}, {end}), which had fired \
                 (watermark {watermark})"
            ));
        }
        if let Some((start, end)) = missed.iter().chain(joined).find(|(start, end)| !(start..end).contains(&timestamp))
        {
            return Err(format!(
                "{who} placed element {element} at {timestamp} in window [{start}, {end}), which does not hold it"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn late(attempt: u32, subtask: u32, timestamp: i64, checkpoint: u64) -> TraceEvent {
        TraceEvent::LateElement {
            attempt,
            vertex: 2,
            subtask,
            operator: 5,
            element: format!("(\"k\", {timestamp})"),
            timestamp,
            watermark: 1_999,
            missed: vec![(0, 2_000)],
            joined: vec![(1_000, 3_000)],
            checkpoint,
        }
    }

    fn trace(events: Vec<TraceEvent>) -> Vec<TraceRecord> {
        events
            .into_iter()
            .enumerate()
            .map(|(index, event)| TraceRecord { time: Duration::from_millis(index as u64), node: "tm-0".into(), event })
            .collect()
    }

    fn timestamps(trace: &[TraceRecord]) -> Vec<i64> {
        effective_late_elements(trace).iter().map(|late| late.timestamp).collect()
    }

    #[test]
    fn a_restore_keeps_what_came_before_its_checkpoint_and_undoes_the_rest() {
        let run = trace(vec![
            late(0, 0, 1_500, 0),
            late(0, 0, 1_600, 3),
            late(0, 0, 1_700, 4),
            TraceEvent::JobRestarting { attempt: 1, delay_ms: 0, cause: String::new(), regions: 1, subtasks: 1 },
            TraceEvent::CheckpointRestored { attempt: 1, checkpoint: 4 },
            late(1, 0, 1_800, 4),
        ]);
        assert_eq!(timestamps(&run), [1_500, 1_600, 1_800], "1 700 came after checkpoint 4's snapshot");
    }

    fn scheduled(attempt: u32) -> TraceEvent {
        TraceEvent::RegionScheduled { attempt, region: 0, slots: vec![] }
    }

    fn restarting(attempt: u32) -> TraceEvent {
        TraceEvent::JobRestarting { attempt, delay_ms: 0, cause: String::new(), regions: 1, subtasks: 1 }
    }

    #[test]
    fn a_restart_that_never_ran_undoes_nothing_the_next_one_keeps() {
        // A restart's JobMaster died during its delay; the next one restored checkpoint 3,
        // which holds what came before it.
        let run = trace(vec![
            late(0, 0, 1_500, 2),
            restarting(1),
            TraceEvent::JobRecovered { job_id: "j".into(), attempt: 2 },
            TraceEvent::CheckpointRestored { attempt: 2, checkpoint: 3 },
            scheduled(2),
        ]);
        assert_eq!(timestamps(&run), [1_500]);
        // A JobMaster died while it reconciled; the next one kept the subtask's finished run.
        let reconciling = trace(vec![
            late(0, 0, 1_500, 0),
            TraceEvent::JobRecovered { job_id: "j".into(), attempt: 1 },
            TraceEvent::JobRecovered { job_id: "j".into(), attempt: 2 },
            TraceEvent::FinishedWorkReconciled { attempt: 2, kept: vec!["v2[0]".into()], rerun: vec![], lost: vec![] },
        ]);
        assert_eq!(timestamps(&reconciling), [1_500]);
    }

    #[test]
    fn a_restart_from_nothing_a_region_restart_and_a_reconciliation_throw_work_away() {
        let from_nothing = trace(vec![late(0, 0, 1_500, 0), restarting(1), scheduled(1), late(1, 0, 1_600, 0)]);
        assert_eq!(timestamps(&from_nothing), [1_600]);
        let regions = trace(vec![
            late(0, 0, 1_500, 0),
            late(0, 1, 1_600, 0),
            TraceEvent::RegionsRestarting {
                attempt: 1,
                delay_ms: 0,
                cause: String::new(),
                regions: 1,
                subtasks: vec!["v2[1]".into()],
                finished: 0,
                failed: vec![],
                lost: vec![],
            },
        ]);
        assert_eq!(timestamps(&regions), [1_500], "v2[0] went on; v2[1] runs again");
        let reconciled = trace(vec![
            late(0, 0, 1_500, 0),
            late(0, 1, 1_600, 0),
            TraceEvent::JobRecovered { job_id: "j".into(), attempt: 1 },
            TraceEvent::FinishedWorkReconciled { attempt: 1, kept: vec!["v2[0]".into()], rerun: vec![], lost: vec![] },
        ]);
        assert_eq!(timestamps(&reconciled), [1_500], "v2[0]'s finished run was kept");
    }

    #[test]
    fn a_decision_against_the_watermark_rule_is_named() {
        assert_eq!(late_elements_obey_the_watermark(&trace(vec![late(0, 0, 1_500, 0)])), Ok(()));
        let mut early = late(0, 0, 1_500, 0);
        if let TraceEvent::LateElement { watermark, .. } = &mut early {
            *watermark = 1_998;
        }
        let error = late_elements_obey_the_watermark(&trace(vec![early])).unwrap_err();
        assert!(error.contains("out of window [0, 2000), which had not fired (watermark 1998)"), "{error}");
        let mut joined_fired = late(0, 0, 1_500, 0);
        if let TraceEvent::LateElement { watermark, .. } = &mut joined_fired {
            *watermark = 2_999;
        }
        let error = late_elements_obey_the_watermark(&trace(vec![joined_fired])).unwrap_err();
        assert!(error.contains("added element") && error.contains("[1000, 3000), which had fired"), "{error}");
    }
}
