//! Structured events the processes report, for traces, timelines and determinism checks.
//!
//! Processes call [`Tracer::record`]; whoever built the process decides what that does (the
//! simulation stamps the simulated time and node name and keeps the event). Events carry only
//! deterministic data: ids, counts, reasons; never wall-clock times or addresses drawn from the
//! OS.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One thing that happened; see the module doc.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent {
    /// A TaskManager process started.
    TaskManagerStarted {
        /// Its incarnation (new after every restart).
        instance: u64,
    },
    /// The JobMaster accepted a TaskManager's registration.
    TaskManagerRegistered {
        /// Its name.
        name: String,
        /// Its incarnation.
        instance: u64,
        /// Its slots.
        slots: u32,
    },
    /// The JobMaster declared a TaskManager lost.
    TaskManagerLost {
        /// Its name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A job was submitted.
    JobSubmitted {
        /// The job instance.
        job_id: String,
        /// Streaming or batch.
        mode: String,
    },
    /// A pipelined region got its slots and was deployed.
    RegionScheduled {
        /// Job attempt.
        attempt: u32,
        /// The region.
        region: u32,
        /// Its slots, in slot-sharing order.
        slots: Vec<String>,
    },
    /// A subtask was sent to a slot.
    TaskDeployed {
        /// Job attempt.
        attempt: u32,
        /// The subtask, as `v<vertex>[<subtask>]`.
        task: String,
        /// The slot.
        slot: String,
    },
    /// A subtask finished.
    TaskFinished {
        /// Job attempt.
        attempt: u32,
        /// The subtask.
        task: String,
        /// Elements it read.
        records_in: u64,
        /// Elements it wrote to the network or its sink.
        records_out: u64,
    },
    /// A subtask failed.
    TaskFailed {
        /// Job attempt.
        attempt: u32,
        /// The subtask.
        task: String,
        /// Why.
        reason: String,
    },
    /// The job will restart.
    JobRestarting {
        /// The new attempt.
        attempt: u32,
        /// Delay before it starts, in milliseconds.
        delay_ms: u64,
        /// The failure.
        cause: String,
    },
    /// The job finished.
    JobFinished {
        /// Restarts it took.
        restarts: u32,
    },
    /// The job failed for good.
    JobFailed {
        /// Why.
        reason: String,
    },
    /// A transaction was committed (reported by the transactional store).
    TransactionCommitted {
        /// The transaction.
        txn_id: String,
    },
    /// Something the harness did or observed, e.g. a fault it injected.
    Harness {
        /// What.
        detail: String,
    },
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceEvent::TaskManagerStarted { instance } => write!(f, "task manager started (instance {instance:016x})"),
            TraceEvent::TaskManagerRegistered { name, instance, slots } => {
                write!(f, "registered {name} (instance {instance:016x}, {slots} slots)")
            }
            TraceEvent::TaskManagerLost { name, reason } => write!(f, "lost {name}: {reason}"),
            TraceEvent::JobSubmitted { job_id, mode } => write!(f, "job {job_id} submitted ({mode})"),
            TraceEvent::RegionScheduled { attempt, region, slots } => {
                write!(f, "a{attempt} region r{region} scheduled on [{}]", slots.join(", "))
            }
            TraceEvent::TaskDeployed { attempt, task, slot } => write!(f, "a{attempt} deploy {task} -> {slot}"),
            TraceEvent::TaskFinished { attempt, task, records_in, records_out } => {
                write!(f, "a{attempt} {task} finished (in {records_in}, out {records_out})")
            }
            TraceEvent::TaskFailed { attempt, task, reason } => write!(f, "a{attempt} {task} failed: {reason}"),
            TraceEvent::JobRestarting { attempt, delay_ms, cause } => {
                write!(f, "restart as a{attempt} in {delay_ms} ms: {cause}")
            }
            TraceEvent::JobFinished { restarts } => write!(f, "job finished after {restarts} restarts"),
            TraceEvent::JobFailed { reason } => write!(f, "job failed: {reason}"),
            TraceEvent::TransactionCommitted { txn_id } => write!(f, "committed {txn_id}"),
            TraceEvent::Harness { detail } => write!(f, "harness: {detail}"),
        }
    }
}

/// Receives the events of one process.
pub trait Tracer: Send + Sync {
    /// Records one event.
    fn record(&self, event: TraceEvent);
}

/// A shared tracer handle.
pub type TracerHandle = Arc<dyn Tracer>;

/// Drops every event.
pub struct NoopTracer;

impl Tracer for NoopTracer {
    fn record(&self, _event: TraceEvent) {}
}
