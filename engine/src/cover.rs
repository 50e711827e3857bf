//! Coverage marks: the rare protocol states a test suite must show it reaches (FoundationDB's
//! `CODE_PROBE`, Antithesis's `sometimes` assertions).
//!
//! Engine code calls [`cover!`](crate::cover!) where a rare state happens:
//! `cover!(CheckpointAbortedByTimeout)`. Every mark is declared once, below, with what it means;
//! a mark that is not declared does not compile. Whoever runs the engine may install a
//! [`CoverageSink`] for the current thread (the simulation does, for one run; a simulated run
//! executes on one thread): hits go to it. With none installed, as in the real build and unit
//! tests, a hit is one thread-local read and nothing else. A mark never changes what the engine
//! does.
//!
//! Depends on nothing. Invariant: a hit reaches only the installed sink, never output, messages
//! or traces of the engine itself.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

macro_rules! marks {
    ($($(#[doc = $doc:literal])+ $mark:ident => $name:literal,)+) => {
        /// A rare state a protocol can reach; see the module doc.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Mark {
            $($(#[doc = $doc])+ $mark,)+
        }

        impl Mark {
            /// Every declared mark, in declaration order.
            pub const ALL: &'static [Mark] = &[$(Mark::$mark,)+];

            /// Its name in reports, as in `--marks` and the sweep's coverage table.
            pub fn name(self) -> &'static str {
                match self {
                    $(Mark::$mark => $name,)+
                }
            }

            /// What reaching it means.
            pub fn description(self) -> &'static str {
                match self {
                    $(Mark::$mark => concat!($($doc),+).trim(),)+
                }
            }
        }
    };
}

marks! {
    /// A task aligning checkpoint barriers took data from one channel while another was
    /// blocked on its barrier.
    AlignmentBlockedWhileOtherDelivers => "alignment-blocked-while-other-delivers",
    /// A newer barrier reached a task still aligning an older checkpoint, which it abandoned.
    CheckpointCancelledByNewerBarrier => "checkpoint-cancelled-by-newer-barrier",
    /// A pending checkpoint did not complete within its timeout and was aborted.
    CheckpointAbortedByTimeout => "checkpoint-aborted-by-timeout",
    /// A sink restored from a checkpoint whose committables were not yet committed.
    RestoreWithPendingCommittables => "restore-with-pending-committables",
    /// A commit was answered as already committed: a retry after a lost reply, or a restored
    /// task committing again what an earlier attempt had.
    CommitRetried => "commit-retried",
    /// The transactional store refused a writer of an older epoch (a zombie fenced).
    ZombieWriterFenced => "zombie-writer-fenced",
    /// A restarted sink aborted transactions a previous attempt left open.
    LingeringTransactionAborted => "lingering-transaction-aborted",
    /// A consumer found an input partition missing, and its producer was restarted with it.
    MissingPartitionProducerRestarted => "missing-partition-producer-restarted",
    /// A restarted producer's own input was gone too: its producer, two stages above the
    /// failure, was restarted as well.
    ProducerRestartedTwoStagesUp => "producer-restarted-two-stages-up",
    /// A restarted JobMaster kept finished work it found on its TaskManagers.
    JobMasterKeptFinishedWork => "job-master-kept-finished-work",
    /// A restarted JobMaster kept a finished subtask one of whose partitions was gone, though
    /// not every subtask of its consumer was kept: none needs it now, so it is left untracked,
    /// and a later failure of a reader must re-run its producer too.
    KeptWorkWithPartitionGone => "kept-work-with-partition-gone",
    /// A task's report came from a run that is no longer its subtask's current one: a newer
    /// attempt was deployed, or the run is older than the last restart of every subtask (an
    /// earlier JobMaster's, its report crossing a JobMaster failover). It must not count.
    ReportOfSupersededRun => "report-of-superseded-run",
    /// A TaskManager was lost while a restarted JobMaster reconciled finished work.
    TaskManagerLostDuringReconciliation => "task-manager-lost-during-reconciliation",
    /// A TaskManager that answered neither a request nor a probe after it was lost at once,
    /// before its heartbeats timed out: what it held joined one restart round.
    TaskManagerFoundUnreachable => "task-manager-found-unreachable",
    /// The adaptive batch scheduler decided a vertex's parallelism from its inputs.
    AdaptiveParallelismDecided => "adaptive-parallelism-decided",
    /// A source waited for room in its output: backpressure reached it.
    BackpressureReachedSource => "backpressure-reached-source",
    /// A blocking partition's write buffer filled and spilled a region to disk.
    SortBufferSpilled => "sort-buffer-spilled",
    /// A batch task's input sort exceeded its memory and spilled a run to disk.
    InputSortSpilled => "input-sort-spilled",
    /// A broadcast hash join held a probe element until its build side ended (the probe side
    /// arrived first: a pipelined build edge, or a restart).
    BroadcastJoinProbeWaited => "broadcast-join-probe-waited",
    /// An operator over an updating stream took back a result it had emitted: a group's old
    /// value (`-U`), or a group or a joined pair deleted (`-D`).
    ChangelogRetracted => "changelog-retracted",
    /// The durable store found a retried append already applied (the reply to its first try
    /// was lost) and answered it without applying it again.
    RetriedAppendFoundApplied => "retried-append-found-applied",
    /// The remote shuffle service found a retried push already stored (the reply to its first
    /// try was lost) and answered it without storing its items again.
    RetriedPushFoundApplied => "retried-push-found-applied",
    /// The restart strategy gave up: the job failed.
    RestartStrategyGaveUp => "restart-strategy-gave-up",
    /// The fault point `input-sort-spills-early` fired (see [`crate::buggify`]).
    BuggifyInputSortSpillsEarly => "buggify-input-sort-spills-early",
    /// The fault point `sort-buffer-shrunk` fired.
    BuggifySortBufferShrunk => "buggify-sort-buffer-shrunk",
    /// The fault point `credits-shrunk` fired.
    BuggifyCreditsShrunk => "buggify-credits-shrunk",
    /// The fault point `slow-cancel` fired.
    BuggifySlowCancel => "buggify-slow-cancel",
    /// The fault point `rpc-reply-late` fired.
    BuggifyRpcReplyLate => "buggify-rpc-reply-late",
    /// The fault point `request-held-back` fired.
    BuggifyRequestHeldBack => "buggify-request-held-back",
    /// The fault point `sync-fails` fired.
    BuggifySyncFails => "buggify-sync-fails",
    /// The fault point `heartbeat-answered-late` fired.
    BuggifyHeartbeatAnsweredLate => "buggify-heartbeat-answered-late",
    /// The fault point `timer-late` fired.
    BuggifyTimerLate => "buggify-timer-late",
    /// The fault point `durable-append-reply-lost` fired.
    BuggifyDurableAppendReplyLost => "buggify-durable-append-reply-lost",
    /// The fault point `shuffle-push-reply-lost` fired.
    BuggifyShufflePushReplyLost => "buggify-shuffle-push-reply-lost",
}

impl fmt::Display for Mark {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Mark {
    type Err = String;

    fn from_str(name: &str) -> Result<Mark, String> {
        Mark::ALL.iter().copied().find(|mark| mark.name() == name).ok_or_else(|| {
            let known: Vec<&str> = Mark::ALL.iter().map(|mark| mark.name()).collect();
            format!("unknown coverage mark `{name}`; the marks are: {}", known.join(", "))
        })
    }
}

/// Receives the marks hit on the thread it is installed on.
pub trait CoverageSink {
    /// `mark` was reached.
    fn hit(&self, mark: Mark);
}

thread_local! {
    static SINK: RefCell<Option<Rc<dyn CoverageSink>>> = const { RefCell::new(None) };
}

/// Records that `mark` was reached; use [`cover!`](crate::cover!).
pub fn hit(mark: Mark) {
    let sink = SINK.with(|sink| sink.borrow().clone());
    if let Some(sink) = sink {
        sink.hit(mark);
    }
}

/// Sends this thread's hits to `sink` until the returned guard is dropped (which restores the
/// sink installed before, if any).
#[must_use = "the sink is uninstalled when the guard is dropped"]
pub fn install(sink: Rc<dyn CoverageSink>) -> Installed {
    let previous = SINK.with(|current| current.borrow_mut().replace(sink));
    Installed { previous }
}

/// Keeps a [`CoverageSink`] installed; see [`install`].
pub struct Installed {
    previous: Option<Rc<dyn CoverageSink>>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        SINK.with(|current| *current.borrow_mut() = previous);
    }
}

/// Marks a rare state as reached: `cover!(CheckpointAbortedByTimeout)`; see [`crate::cover`].
#[macro_export]
macro_rules! cover {
    ($mark:ident) => {
        $crate::cover::hit($crate::cover::Mark::$mark)
    };
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    #[derive(Default)]
    struct Hits(RefCell<Vec<Mark>>);

    impl CoverageSink for Hits {
        fn hit(&self, mark: Mark) {
            self.0.borrow_mut().push(mark);
        }
    }

    #[test]
    fn hits_reach_the_installed_sink_only_while_it_is_installed() {
        cover!(SortBufferSpilled); // none installed: nothing happens
        let hits = Rc::new(Hits::default());
        {
            let _installed = install(Rc::clone(&hits) as Rc<dyn CoverageSink>);
            cover!(SortBufferSpilled);
            cover!(CommitRetried);
        }
        cover!(CommitRetried);
        assert_eq!(*hits.0.borrow(), vec![Mark::SortBufferSpilled, Mark::CommitRetried]);
    }

    #[test]
    fn marks_have_distinct_names_that_parse_back() {
        let names: std::collections::BTreeSet<&str> = Mark::ALL.iter().map(|mark| mark.name()).collect();
        assert_eq!(names.len(), Mark::ALL.len(), "distinct names");
        for mark in Mark::ALL {
            assert_eq!(mark.name().parse::<Mark>(), Ok(*mark));
            assert!(!mark.description().is_empty(), "{mark} says what it means");
            assert_eq!(serde_json::to_string(mark).unwrap(), format!("\"{mark}\""), "serde uses the name");
        }
        assert!("no-such-mark".parse::<Mark>().unwrap_err().contains("alignment-blocked-while-other-delivers"));
    }
}
