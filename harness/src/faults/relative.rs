//! Faults that land: triggers given relative to the run they land in.
//!
//! A fault timed in absolute simulated time before the run knows nothing of how long the run
//! will be: a batch run over in 0.54 s never meets a fault drawn for 1.2 s. A relative trigger
//! names a point of *this seed's* run in *this mode*, as a [`Share`] of what the same seed's
//! fault-free run in the same mode (its [`Pilot`]) went through:
//!
//! - `at: 40%`: 40% of the pilot's makespan after the submission;
//! - `after_checkpoint: 40%`: after the checkpoint 40% of the way through the pilot's completed
//!   checkpoints (the first of five at 20%);
//! - `after_prepared: 40%`: once a sink pre-commits for the checkpoint 40% of the way through
//!   the ones the pilot prepared for: the window between a prepare and its commit.
//!
//! In a run that takes no checkpoints (batch), a checkpoint share falls back to the same share
//! of the makespan, so one schedule lands in both modes. [`resolve`] turns a schedule's relative
//! triggers into absolute ones against a pilot; it is pure, and the simulation runs the pilot
//! (`sluice_sim::runner`). A schedule without relative triggers needs no pilot.

use std::time::Duration;

use sluice_engine::connectors::txn_store::txn_checkpoint;
use sluice_engine::trace::TraceEvent;

use super::model::{CheckpointTrigger, Fault, Trigger};
use super::share::Share;
use crate::trace::TraceRecord;

/// What a seed's fault-free run in one mode went through: what relative triggers are relative to.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pilot {
    /// From the submission's acknowledgement to the job's end.
    pub makespan: Duration,
    /// The checkpoints it completed (not the final one), in order.
    pub checkpoints: Vec<u64>,
    /// The checkpoints a sink prepared a transaction for, in order, each once.
    pub prepared: Vec<u64>,
}

impl Pilot {
    /// The pilot of a fault-free run's trace.
    pub fn of(trace: &[TraceRecord]) -> Pilot {
        let mut pilot = Pilot::default();
        let mut submitted = Duration::ZERO;
        let mut end = None;
        for record in trace {
            match &record.event {
                TraceEvent::SubmissionAcknowledged { .. } => submitted = record.time,
                TraceEvent::JobFinished { .. } | TraceEvent::JobFailed { .. } => end = Some(record.time),
                TraceEvent::CheckpointCompleted { checkpoint, is_final: false, .. } => {
                    pilot.checkpoints.push(*checkpoint)
                }
                TraceEvent::TransactionPrepared { txn_id, .. } => {
                    if let Some(checkpoint) = txn_checkpoint(txn_id).filter(|id| !pilot.prepared.contains(id)) {
                        pilot.prepared.push(checkpoint);
                    }
                }
                _ => {}
            }
        }
        let end = end.or_else(|| trace.last().map(|record| record.time)).unwrap_or_default();
        pilot.makespan = end.saturating_sub(submitted);
        pilot
    }
}

/// Whether a trigger is relative to the pilot.
pub fn is_relative(trigger: &Trigger) -> bool {
    matches!(
        trigger,
        Trigger::AtShare(_) | Trigger::Checkpoint(CheckpointTrigger::Share(_)) | Trigger::PreparedShare(_)
    )
}

/// Whether running a schedule needs its seed's pilot first.
pub fn needs_pilot(schedule: &[Fault]) -> bool {
    schedule.iter().any(|fault| is_relative(&fault.trigger))
}

/// A trigger made absolute against a pilot; an absolute trigger as it is.
pub fn resolve_trigger(trigger: &Trigger, pilot: &Pilot) -> Trigger {
    let at = |share: Share| Trigger::At(share.of_duration(pilot.makespan));
    match *trigger {
        Trigger::AtShare(share) => at(share),
        Trigger::Checkpoint(CheckpointTrigger::Share(share)) => share.position_in(pilot.checkpoints.len()).map_or_else(
            || at(share),
            |position| Trigger::Checkpoint(CheckpointTrigger::Id(pilot.checkpoints[position - 1])),
        ),
        Trigger::PreparedShare(share) => share
            .position_in(pilot.prepared.len())
            .map_or_else(|| at(share), |position| Trigger::Prepared(pilot.prepared[position - 1])),
        ref absolute => absolute.clone(),
    }
}

/// A schedule with every relative trigger made absolute against a pilot; see the module doc.
pub fn resolve(schedule: &[Fault], pilot: &Pilot) -> Vec<Fault> {
    schedule
        .iter()
        .map(|fault| Fault { trigger: resolve_trigger(&fault.trigger, pilot), kind: fault.kind.clone() })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::FaultKind;

    fn share(text: &str) -> Share {
        Share::parse(text).unwrap_or_else(|error| panic!("{error}"))
    }

    fn pilot() -> Pilot {
        Pilot { makespan: Duration::from_secs(2), checkpoints: vec![1, 2, 3, 5], prepared: vec![2, 3, 5, 6] }
    }

    #[test]
    fn relative_triggers_resolve_against_the_pilot() {
        let kill = FaultKind::Kill { node: "tm-0".into(), restart_after: None };
        let fault = |trigger| Fault { trigger, kind: kill.clone() };
        let schedule = vec![
            fault(Trigger::AtShare(share("25%"))),
            fault(Trigger::Checkpoint(CheckpointTrigger::Share(share("60%")))),
            fault(Trigger::PreparedShare(share("100%"))),
            fault(Trigger::At(Duration::from_millis(7))),
        ];
        assert!(needs_pilot(&schedule) && !needs_pilot(&schedule[3..]));
        let resolved: Vec<Trigger> = resolve(&schedule, &pilot()).into_iter().map(|fault| fault.trigger).collect();
        assert_eq!(
            resolved,
            vec![
                Trigger::At(Duration::from_millis(500)),
                Trigger::Checkpoint(CheckpointTrigger::Id(3)),
                Trigger::Prepared(6),
                Trigger::At(Duration::from_millis(7)),
            ]
        );
        assert!(!needs_pilot(&resolve(&schedule, &pilot())));
    }

    #[test]
    fn without_checkpoints_a_checkpoint_share_is_a_share_of_the_makespan() {
        let batch = Pilot { makespan: Duration::from_secs(1), ..Pilot::default() };
        for trigger in
            [Trigger::Checkpoint(CheckpointTrigger::Share(share("30%"))), Trigger::PreparedShare(share("30%"))]
        {
            assert_eq!(resolve_trigger(&trigger, &batch), Trigger::At(Duration::from_millis(300)));
        }
    }
}
