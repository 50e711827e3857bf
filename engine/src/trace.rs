//! Structured events the processes report, for traces, timelines and determinism checks.
//!
//! Processes call [`Tracer::record`]; whoever built the process decides what that does (the
//! simulation stamps the simulated time and node name and keeps the event). Events carry only
//! deterministic data: ids, counts, reasons; never wall-clock times or addresses drawn from the
//! OS.

use std::fmt;
use std::sync::Arc;

use crate::counted::counted;
use serde::{Deserialize, Serialize};

/// One thing that happened; see the module doc. Serialized with an `event` tag, so a trace is
/// JSON lines of `{"event": "task_deployed", "attempt": 0, "vertex": 1, ...}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum TraceEvent {
    /// A JobMaster process started.
    JobMasterStarted,
    /// A TaskManager process started.
    TaskManagerStarted {
        /// Its incarnation (new after every restart).
        instance: u64,
        /// Its slots.
        slots: u32,
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
        /// The names of its job vertices, by index.
        vertices: Vec<String>,
    },
    /// The client's submission was accepted: the JobMaster replied, having recorded the job
    /// durably and scheduled what it could. Recorded by whoever submitted (the simulation's
    /// client); the simulation's time-triggered faults count from here, and timelines draw time
    /// from here.
    SubmissionAcknowledged {
        /// The job instance.
        job_id: String,
    },
    /// A restarted JobMaster found a job in its durable storage and runs it again.
    JobRecovered {
        /// The job instance.
        job_id: String,
        /// The attempt it resumes with.
        attempt: u32,
    },
    /// The adaptive batch scheduler decided a vertex's parallelism from its inputs' bytes.
    ParallelismDecided {
        /// Job attempt.
        attempt: u32,
        /// The job vertex.
        vertex: u32,
        /// The parallelism decided.
        parallelism: u32,
        /// The bytes its inputs produced.
        input_bytes: u64,
        /// The subpartition range each subtask reads, as `(start, end)`.
        #[serde(default)]
        ranges: Vec<(u32, u32)>,
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
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
        /// The slot, as `tm-N/sM`.
        slot: String,
    },
    /// A TaskManager started running a subtask.
    TaskRunning {
        /// Job attempt.
        attempt: u32,
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
    },
    /// A subtask finished.
    TaskFinished {
        /// Job attempt.
        attempt: u32,
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
        /// Elements it read.
        records_in: u64,
        /// Elements it wrote to the network or its sink.
        records_out: u64,
        /// Bytes of blocking partitions it read (from its producers' disks).
        #[serde(default)]
        disk_bytes_read: u64,
        /// Bytes of blocking partitions it wrote (to its TaskManager's disk).
        #[serde(default)]
        disk_bytes_written: u64,
        /// Longest time, in simulated microseconds, an output partition held it back.
        #[serde(default)]
        backpressure_micros: u64,
        /// Most bytes one of its output partitions held in memory at once.
        #[serde(default)]
        peak_buffered_bytes: u64,
        /// The CPU work it did, as the cost model counts it.
        #[serde(default)]
        work: crate::resources::Work,
    },
    /// The JobMaster asked the sources to inject a checkpoint's barriers.
    CheckpointTriggered {
        /// Job attempt.
        attempt: u32,
        /// The checkpoint.
        checkpoint: u64,
    },
    /// A checkpoint's metadata is durable: its sinks may commit.
    CheckpointCompleted {
        /// Job attempt.
        attempt: u32,
        /// The checkpoint.
        checkpoint: u64,
        /// The final checkpoint of a bounded job.
        is_final: bool,
    },
    /// A checkpoint was given up: nothing is committed for it.
    CheckpointAborted {
        /// Job attempt.
        attempt: u32,
        /// The checkpoint.
        checkpoint: u64,
        /// Why.
        reason: String,
    },
    /// An attempt's tasks restore from a completed checkpoint.
    CheckpointRestored {
        /// Job attempt.
        attempt: u32,
        /// The checkpoint.
        checkpoint: u64,
    },
    /// A subtask failed.
    TaskFailed {
        /// Job attempt.
        attempt: u32,
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
        /// Why.
        reason: String,
    },
    /// Every subtask of the job will restart.
    JobRestarting {
        /// The new attempt.
        attempt: u32,
        /// Delay before it starts, in milliseconds.
        delay_ms: u64,
        /// The failure.
        cause: String,
        /// Regions that had started and restart.
        #[serde(default)]
        regions: u32,
        /// Subtasks that had started (running or finished) and restart.
        #[serde(default)]
        subtasks: u32,
    },
    /// Some regions will restart (region failover); the others go on.
    RegionsRestarting {
        /// The attempt the restarted subtasks run under.
        attempt: u32,
        /// Delay before they are scheduled again, in milliseconds.
        delay_ms: u64,
        /// The failure.
        cause: String,
        /// Regions restarted.
        regions: u32,
        /// Subtasks restarted, as `v1[0]`, in order.
        subtasks: Vec<String>,
        /// How many of them had finished: their work is done again.
        finished: u32,
        /// The subtasks the failure named, as `v1[0]` (the decision's input, with `lost`).
        #[serde(default)]
        failed: Vec<String>,
        /// The partitions the failure found lost, as `ds3.p1@a0`.
        #[serde(default)]
        lost: Vec<String>,
    },
    /// A restarted JobMaster decided which finished subtasks of its log to keep: those whose
    /// partitions still needed survive; the others run again.
    FinishedWorkReconciled {
        /// The attempt the re-run subtasks run under.
        attempt: u32,
        /// Finished subtasks kept, as `v1[0]`.
        kept: Vec<String>,
        /// Finished subtasks that run again.
        rerun: Vec<String>,
        /// The finished subtasks' partitions not held where they were written (the decision's
        /// input with the log's finished subtasks; a pipelined partition is never held once
        /// its run ended), as `ds3.p1@a0`.
        #[serde(default)]
        lost: Vec<String>,
    },
    /// A TaskManager lost its JobMaster and cancelled its running tasks.
    JobMasterLost {
        /// Why it thinks so.
        reason: String,
        /// Tasks it cancelled.
        tasks_cancelled: u32,
    },
    /// No JobMaster took a TaskManager's registration within the grace period: it released its
    /// finished partitions.
    PartitionsExpired {
        /// Partitions released.
        partitions: u32,
    },
    /// A window operator left an element out of windows that had fired when it arrived (late for
    /// every window: dropped, or sent to the late-data side output; else added to the windows
    /// still open): traced at once by the task, so that every such element of every attempt is
    /// on record.
    LateElement {
        /// Job attempt.
        attempt: u32,
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
        /// The window operator's stream node id.
        operator: u32,
        /// The element, as `{:?}` shows it.
        element: String,
        /// The element's event time.
        timestamp: i64,
        /// The operator's watermark when the element arrived.
        watermark: i64,
        /// `[start, end)` of each window it was left out of (each had fired).
        missed: Vec<(i64, i64)>,
        /// `[start, end)` of each window it was added to (none had fired).
        joined: Vec<(i64, i64)>,
        /// The newest checkpoint the subtask's state held when it arrived (taken or restored; 0:
        /// none): a restore of checkpoint `c` undoes what arrived at `c` or later.
        checkpoint: u64,
    },
    /// At a subtask's end: how many late elements a window operator dropped since the job began
    /// (its count is checkpointed, so the final attempt's is the whole job's for this subtask).
    LateElementsCounted {
        /// Job attempt.
        attempt: u32,
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
        /// The window operator's stream node id.
        operator: u32,
        /// Elements dropped as late.
        dropped: u64,
    },
    /// A source subtask took a checkpoint's snapshot at its barrier, or its final snapshot at
    /// the end of its input: how far it had read each split of its stream (what the barrier
    /// follows), for the checkpoint-prefix oracle.
    SourceCheckpointed {
        /// Job attempt.
        attempt: u32,
        /// The checkpoint; `u64::MAX` for the snapshot at the end of input.
        checkpoint: u64,
        /// The job vertex.
        vertex: u32,
        /// The subtask.
        subtask: u32,
        /// The stream it reads (a log topic).
        stream: String,
        /// (split, records read) of every split assigned to it; a split not named: none read.
        splits: Vec<(u32, u64)>,
    },
    /// The job finished.
    JobFinished {
        /// Restarts over the job's whole life, JobMaster failovers included: its attempt number.
        restarts: u32,
    },
    /// The job failed for good.
    JobFailed {
        /// Why.
        reason: String,
    },
    /// A transaction was prepared: a sink pre-committed it (reported by the transactional store).
    TransactionPrepared {
        /// The transaction.
        txn_id: String,
        /// The attempt that wrote it; a newer attempt's begin discards what older ones staged.
        epoch: u64,
    },
    /// A restarted writer aborted what older attempts left open (reported by the store).
    TransactionsAborted {
        /// The writer's transaction id prefix.
        prefix: String,
        /// The writer's epoch; older ones are fenced off.
        epoch: u64,
        /// Open transactions aborted.
        transactions: u64,
    },
    /// A transaction was committed (reported by the transactional store).
    TransactionCommitted {
        /// The transaction.
        txn_id: String,
        /// The attempt whose rows it made visible.
        epoch: u64,
        /// Rows it made visible.
        rows: u64,
    },
    /// A shuffle service process started, serving the finished partitions its disk kept.
    ShuffleServiceStarted {
        /// Finished partitions recovered from its disk.
        partitions: u32,
    },
    /// The shuffle service made a finished partition durable (data and index synced) and
    /// acknowledged it: a restarted service serves it from here on.
    PartitionStored {
        /// The partition (`ds{d}.p{p}@a{a}`).
        partition: String,
        /// Bytes of its data.
        bytes: u64,
    },
    /// The harness injected a fault.
    FaultInjected {
        /// Position in the scenario's fault schedule.
        index: usize,
        /// The fault kind, e.g. `kill`.
        kind: String,
        /// What exactly, e.g. `kill tm-1 (restart after 500ms)`.
        detail: String,
    },
    /// A fault's effect ended (a node restarted, a partition healed, …).
    FaultHealed {
        /// Position in the scenario's fault schedule.
        index: usize,
        /// The fault kind.
        kind: String,
        /// What exactly.
        detail: String,
    },
    /// Something else the harness did or observed.
    Harness {
        /// What.
        detail: String,
    },
}

impl TraceEvent {
    /// The event's name as it appears in JSON traces.
    pub fn kind(&self) -> &'static str {
        match self {
            TraceEvent::JobMasterStarted => "job_master_started",
            TraceEvent::TaskManagerStarted { .. } => "task_manager_started",
            TraceEvent::TaskManagerRegistered { .. } => "task_manager_registered",
            TraceEvent::TaskManagerLost { .. } => "task_manager_lost",
            TraceEvent::JobSubmitted { .. } => "job_submitted",
            TraceEvent::SubmissionAcknowledged { .. } => "submission_acknowledged",
            TraceEvent::JobRecovered { .. } => "job_recovered",
            TraceEvent::ParallelismDecided { .. } => "parallelism_decided",
            TraceEvent::RegionScheduled { .. } => "region_scheduled",
            TraceEvent::TaskDeployed { .. } => "task_deployed",
            TraceEvent::TaskRunning { .. } => "task_running",
            TraceEvent::TaskFinished { .. } => "task_finished",
            TraceEvent::TaskFailed { .. } => "task_failed",
            TraceEvent::CheckpointTriggered { .. } => "checkpoint_triggered",
            TraceEvent::CheckpointCompleted { .. } => "checkpoint_completed",
            TraceEvent::CheckpointAborted { .. } => "checkpoint_aborted",
            TraceEvent::CheckpointRestored { .. } => "checkpoint_restored",
            TraceEvent::JobRestarting { .. } => "job_restarting",
            TraceEvent::RegionsRestarting { .. } => "regions_restarting",
            TraceEvent::FinishedWorkReconciled { .. } => "finished_work_reconciled",
            TraceEvent::JobMasterLost { .. } => "job_master_lost",
            TraceEvent::PartitionsExpired { .. } => "partitions_expired",
            TraceEvent::LateElement { .. } => "late_element",
            TraceEvent::LateElementsCounted { .. } => "late_elements_counted",
            TraceEvent::SourceCheckpointed { .. } => "source_checkpointed",
            TraceEvent::JobFinished { .. } => "job_finished",
            TraceEvent::JobFailed { .. } => "job_failed",
            TraceEvent::TransactionPrepared { .. } => "transaction_prepared",
            TraceEvent::TransactionsAborted { .. } => "transactions_aborted",
            TraceEvent::TransactionCommitted { .. } => "transaction_committed",
            TraceEvent::ShuffleServiceStarted { .. } => "shuffle_service_started",
            TraceEvent::PartitionStored { .. } => "partition_stored",
            TraceEvent::FaultInjected { .. } => "fault_injected",
            TraceEvent::FaultHealed { .. } => "fault_healed",
            TraceEvent::Harness { .. } => "harness",
        }
    }
}

impl fmt::Display for TraceEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceEvent::JobMasterStarted => write!(f, "job master started"),
            TraceEvent::TaskManagerStarted { instance, slots } => {
                write!(f, "task manager started (instance {instance:016x}, {})", counted(*slots, "slot"))
            }
            TraceEvent::TaskManagerRegistered { name, instance, slots } => {
                write!(f, "registered {name} (instance {instance:016x}, {})", counted(*slots, "slot"))
            }
            TraceEvent::TaskManagerLost { name, reason } => write!(f, "lost {name}: {reason}"),
            TraceEvent::JobSubmitted { job_id, mode, vertices } => {
                write!(f, "job {job_id} submitted ({mode}): {}", vertices.join(" | "))
            }
            TraceEvent::SubmissionAcknowledged { job_id } => {
                write!(f, "submission of {job_id} acknowledged: fault times count from here")
            }
            TraceEvent::JobRecovered { job_id, attempt } => write!(f, "job {job_id} recovered as a{attempt}"),
            TraceEvent::ParallelismDecided { attempt, vertex, parallelism, input_bytes, .. } => {
                write!(f, "a{attempt} v{vertex} parallelism decided: {parallelism} for {input_bytes} input bytes")
            }
            TraceEvent::RegionScheduled { attempt, region, slots } => {
                write!(f, "a{attempt} region r{region} scheduled on [{}]", slots.join(", "))
            }
            TraceEvent::TaskDeployed { attempt, vertex, subtask, slot } => {
                write!(f, "a{attempt} deploy v{vertex}[{subtask}] -> {slot}")
            }
            TraceEvent::TaskRunning { attempt, vertex, subtask } => {
                write!(f, "a{attempt} v{vertex}[{subtask}] running")
            }
            TraceEvent::TaskFinished { .. } => fmt_task_finished(self, f),
            TraceEvent::TaskFailed { attempt, vertex, subtask, reason } => {
                write!(f, "a{attempt} v{vertex}[{subtask}] failed: {reason}")
            }
            TraceEvent::JobRestarting { attempt, delay_ms, cause, .. } => {
                write!(f, "restart as a{attempt} in {delay_ms} ms: {cause}")
            }
            TraceEvent::RegionsRestarting { .. } => fmt_regions_restarting(self, f),
            TraceEvent::FinishedWorkReconciled { .. } => fmt_reconciled(self, f),
            TraceEvent::JobMasterLost { reason, tasks_cancelled } => {
                write!(f, "lost the JobMaster ({reason}); cancelled {}", counted(*tasks_cancelled, "task"))
            }
            TraceEvent::PartitionsExpired { partitions } => {
                write!(f, "no JobMaster came back: released {}", counted(*partitions, "partition"))
            }
            TraceEvent::LateElement { .. } => fmt_late_element(self, f),
            TraceEvent::LateElementsCounted { attempt, vertex, subtask, operator, dropped } => {
                write!(f, "a{attempt} v{vertex}[{subtask}] operator {operator}: {} late", counted(*dropped, "element"))
            }
            TraceEvent::CheckpointTriggered { .. }
            | TraceEvent::SourceCheckpointed { .. }
            | TraceEvent::CheckpointCompleted { .. }
            | TraceEvent::CheckpointAborted { .. }
            | TraceEvent::CheckpointRestored { .. }
            | TraceEvent::JobFinished { .. }
            | TraceEvent::JobFailed { .. }
            | TraceEvent::TransactionPrepared { .. }
            | TraceEvent::TransactionsAborted { .. }
            | TraceEvent::TransactionCommitted { .. }
            | TraceEvent::ShuffleServiceStarted { .. }
            | TraceEvent::PartitionStored { .. }
            | TraceEvent::FaultInjected { .. }
            | TraceEvent::FaultHealed { .. }
            | TraceEvent::Harness { .. } => fmt_checkpoints_and_output(self, f),
        }
    }
}

/// Formats the events of checkpoints, the job's end, transactions, the shuffle service, faults
/// and the harness (the second half of `Display`, apart for length).
fn fmt_checkpoints_and_output(event: &TraceEvent, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    match event {
        TraceEvent::CheckpointTriggered { attempt, checkpoint } => {
            write!(f, "a{attempt} trigger checkpoint {checkpoint}")
        }
        TraceEvent::SourceCheckpointed { attempt, checkpoint, vertex, subtask, stream, splits } => {
            let read: Vec<String> = splits.iter().map(|(split, read)| format!("{split}:{read}")).collect();
            write!(f, "a{attempt} v{vertex}[{subtask}] checkpoint {checkpoint} read `{stream}` to {}", read.join(" "))
        }
        TraceEvent::CheckpointCompleted { attempt, checkpoint, is_final } => {
            let kind = if *is_final { "final checkpoint" } else { "checkpoint" };
            write!(f, "a{attempt} {kind} {checkpoint} completed")
        }
        TraceEvent::CheckpointAborted { attempt, checkpoint, reason } => {
            write!(f, "a{attempt} checkpoint {checkpoint} aborted: {reason}")
        }
        TraceEvent::CheckpointRestored { attempt, checkpoint } => {
            write!(f, "a{attempt} restores checkpoint {checkpoint}")
        }
        TraceEvent::JobFinished { restarts } => {
            write!(f, "job finished after {}", counted(*restarts, "restart"))
        }
        TraceEvent::JobFailed { reason } => write!(f, "job failed: {reason}"),
        TraceEvent::TransactionPrepared { txn_id, epoch } => write!(f, "prepared {txn_id} (epoch {epoch})"),
        TraceEvent::TransactionsAborted { .. } => fmt_transactions_aborted(event, f),
        TraceEvent::TransactionCommitted { txn_id, epoch, rows } => {
            write!(f, "committed {txn_id} (epoch {epoch}, {})", counted(*rows, "row"))
        }
        TraceEvent::ShuffleServiceStarted { partitions } => {
            write!(f, "shuffle service started ({} on disk)", counted(*partitions, "partition"))
        }
        TraceEvent::PartitionStored { partition, bytes } => {
            write!(f, "shuffle service stored {partition} ({})", counted(*bytes, "byte"))
        }
        TraceEvent::FaultInjected { index, detail, .. } => write!(f, "fault #{index}: {detail}"),
        TraceEvent::FaultHealed { index, detail, .. } => write!(f, "healed #{index}: {detail}"),
        TraceEvent::Harness { detail } => f.write_str(detail),
        other => unreachable!("trace invariant: `Display` sends only these events here, not {}", other.kind()),
    }
}

/// Formats a [`TraceEvent::TaskFinished`] (one arm of `Display`, apart for length).
fn fmt_task_finished(event: &TraceEvent, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let TraceEvent::TaskFinished {
        attempt,
        vertex,
        subtask,
        records_in,
        records_out,
        disk_bytes_read,
        disk_bytes_written,
        backpressure_micros,
        ..
    } = event
    else {
        unreachable!("fmt_task_finished formats only a TaskFinished")
    };
    write!(f, "a{attempt} v{vertex}[{subtask}] finished (in {records_in}, out {records_out}")?;
    if *disk_bytes_read + *disk_bytes_written > 0 {
        write!(f, "; disk read {disk_bytes_read} B, written {disk_bytes_written} B")?;
    }
    if *backpressure_micros > 0 {
        write!(f, "; backpressured {} ms", backpressure_micros / 1000)?;
    }
    write!(f, ")")
}

/// Formats a [`TraceEvent::RegionsRestarting`] (one arm of `Display`, apart for length).
fn fmt_regions_restarting(event: &TraceEvent, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let TraceEvent::RegionsRestarting { attempt, delay_ms, cause, regions, subtasks, finished, .. } = event else {
        unreachable!("fmt_regions_restarting formats only a RegionsRestarting")
    };
    let plural = if *regions == 1 { "" } else { "s" };
    write!(
        f,
        "restart {regions} region{plural} as a{attempt} in {delay_ms} ms ({}; {finished} had finished): {cause}",
        subtasks.join(" ")
    )
}

/// Formats a [`TraceEvent::FinishedWorkReconciled`] (one arm of `Display`, apart for length).
fn fmt_reconciled(event: &TraceEvent, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let TraceEvent::FinishedWorkReconciled { attempt, kept, rerun, .. } = event else {
        unreachable!("fmt_reconciled formats only a FinishedWorkReconciled")
    };
    write!(f, "a{attempt} keeps {} finished subtasks, re-runs {}", kept.len(), rerun.len())?;
    if !rerun.is_empty() {
        write!(f, " ({})", rerun.join(" "))?;
    }
    Ok(())
}

/// Formats a [`TraceEvent::LateElement`] (one arm of `Display`, apart for length).
fn fmt_late_element(event: &TraceEvent, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let TraceEvent::LateElement {
        attempt,
        vertex,
        subtask,
        operator,
        element,
        timestamp,
        watermark,
        missed,
        joined,
        ..
    } = event
    else {
        unreachable!("fmt_late_element formats only a LateElement")
    };
    let spans = |windows: &[(i64, i64)]| {
        windows.iter().map(|(start, end)| format!("[{start}, {end})")).collect::<Vec<_>>().join(" ")
    };
    let late = if joined.is_empty() {
        format!("late for every window ({})", spans(missed))
    } else {
        format!("left out of {} (fired), added to {}", spans(missed), spans(joined))
    };
    write!(
        f,
        "a{attempt} v{vertex}[{subtask}] operator {operator}: element {element} at {timestamp} {late} \
             (watermark {watermark})"
    )
}

/// Formats a [`TraceEvent::TransactionsAborted`] (one arm of `Display`, apart for length).
fn fmt_transactions_aborted(event: &TraceEvent, f: &mut fmt::Formatter<'_>) -> fmt::Result {
    let TraceEvent::TransactionsAborted { prefix, epoch, transactions } = event else {
        unreachable!("fmt_transactions_aborted formats only a TransactionsAborted")
    };
    write!(f, "aborted {} of {prefix}* older than epoch {epoch}", counted(*transactions, "open transaction"))
}

/// Reads a subtask as events write it, `v1[0]`: (vertex, subtask).
pub fn parse_subtask(text: &str) -> Option<(u32, u32)> {
    let (vertex, subtask) = text.strip_prefix('v')?.strip_suffix(']')?.split_once('[')?;
    Some((vertex.parse().ok()?, subtask.parse().ok()?))
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
