//! Faults inside the engine's own steps (FoundationDB's `BUGGIFY`): named points where a
//! simulation may make a step take its rare path (a sort buffer that spills early, a channel
//! with one credit, a TaskManager slow to cancel its orphaned tasks).
//!
//! Engine code asks `buggify!(InputSortSpillsEarly)` where such a choice exists and takes the
//! rare path when it answers true. Whoever runs the engine may install a [`FaultPolicy`] for the
//! current thread (the simulation does, for scenarios with `buggify: true`, enabling each point
//! per seed swarm-style); with none installed, as in the real build, every point answers false
//! after one thread-local read. A point that fires is also a coverage mark
//! ([`FaultPoint::mark`]), so a sweep's coverage table shows which points fired.
//!
//! Depends on [`crate::cover`]. Invariant: a rare path is one the engine must survive anyway (a
//! correct engine gives the same committed output with any set of points firing); a point never
//! breaks a promise the engine makes, it only makes a legal schedule likelier.

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;

use serde::{Deserialize, Serialize};

use crate::cover::{self, Mark};
use crate::prng::Ratio;

macro_rules! points {
    ($($(#[doc = $doc:literal])+ $point:ident => $name:literal, $mark:ident, $num:literal in $den:literal,)+) => {
        /// A named fault point inside the engine; see the module doc.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum FaultPoint {
            $($(#[doc = $doc])+ $point,)+
        }

        impl FaultPoint {
            /// Every declared point, in declaration order.
            pub const ALL: &'static [FaultPoint] = &[$(FaultPoint::$point,)+];

            /// Its name in reports.
            pub fn name(self) -> &'static str {
                match self {
                    $(FaultPoint::$point => $name,)+
                }
            }

            /// The coverage mark hit when it fires.
            pub fn mark(self) -> Mark {
                match self {
                    $(FaultPoint::$point => Mark::$mark,)+
                }
            }

            /// How often an enabled point fires when asked: rarer for a point asked on every
            /// call or timer than for one asked once per task.
            pub fn odds(self) -> Ratio {
                match self {
                    $(FaultPoint::$point => Ratio::new($num, $den),)+
                }
            }
        }
    };
}

points! {
    /// A batch task's input sorter gets a 4 KiB budget instead of its 32 MiB, so it spills runs
    /// to disk and merges them.
    InputSortSpillsEarly => "input-sort-spills-early", BuggifyInputSortSpillsEarly, 1 in 4,
    /// A blocking partition's sort buffer holds 1 KiB, so it spills a region per buffer or two.
    SortBufferShrunk => "sort-buffer-shrunk", BuggifySortBufferShrunk, 1 in 4,
    /// An input channel grants one credit instead of the job's, so its producer waits on every
    /// buffer.
    CreditsShrunk => "credits-shrunk", BuggifyCreditsShrunk, 1 in 4,
    /// A TaskManager that lost its JobMaster goes on running its tasks for twice the JobMaster
    /// timeout before it cancels them (a cancel that hangs), so an older attempt's tasks still
    /// talk to the JobMaster and the stores while a newer attempt runs.
    SlowCancel => "slow-cancel", BuggifySlowCancel, 1 in 4,
    /// An RPC was served, but its answer reaches the caller only after the caller's timeout:
    /// the caller sees a timeout for a request that took effect, and must retry idempotently.
    RpcReplyLate => "rpc-reply-late", BuggifyRpcReplyLate, 1 in 128,
    /// A request is held back 20 ms before it is sent, so requests sent after it from the same
    /// process (by other tasks) overtake it, as a network may reorder them.
    RequestHeldBack => "request-held-back", BuggifyRequestHeldBack, 1 in 32,
    /// A disk's sync fails: the bytes written stay pending (a crash would lose them), and the
    /// writer gets an error.
    SyncFails => "sync-fails", BuggifySyncFails, 1 in 256,
    /// The JobMaster records a TaskManager's heartbeat but answers it a second late, after the
    /// TaskManager's call timed out.
    HeartbeatAnsweredLate => "heartbeat-answered-late", BuggifyHeartbeatAnsweredLate, 1 in 8,
    /// A timer fires late: a sleep lasts up to half as long again (at most 250 ms more).
    TimerLate => "timer-late", BuggifyTimerLate, 1 in 64,
    /// The durable store applied an append, but its reply was lost: the client retries the
    /// append at the same offset, which the store must recognize as already applied.
    DurableAppendReplyLost => "durable-append-reply-lost", BuggifyDurableAppendReplyLost, 1 in 8,
    /// The remote shuffle service stored a push, but its reply was lost: the producer pushes
    /// the same items again, from the same sequence number, and the service must store them
    /// once.
    ShufflePushReplyLost => "shuffle-push-reply-lost", BuggifyShufflePushReplyLost, 1 in 8,
}

impl fmt::Display for FaultPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for FaultPoint {
    type Err = String;

    fn from_str(name: &str) -> Result<FaultPoint, String> {
        FaultPoint::ALL.iter().copied().find(|point| point.name() == name).ok_or_else(|| {
            let known: Vec<&str> = FaultPoint::ALL.iter().map(|point| point.name()).collect();
            format!("unknown fault point `{name}`; the points are: {}", known.join(", "))
        })
    }
}

/// Decides, on the thread it is installed on, whether a fault point fires this time.
pub trait FaultPolicy {
    /// Whether `point` takes its rare path now.
    fn fires(&self, point: FaultPoint) -> bool;
}

thread_local! {
    static POLICY: RefCell<Option<Rc<dyn FaultPolicy>>> = const { RefCell::new(None) };
}

/// Whether `point` fires now; use [`buggify!`](crate::buggify!). A point that fires hits its
/// coverage mark.
pub fn fires(point: FaultPoint) -> bool {
    let policy = POLICY.with(|policy| policy.borrow().clone());
    let fired = policy.is_some_and(|policy| policy.fires(point));
    if fired {
        cover::hit(point.mark());
    }
    fired
}

/// Lets `policy` decide this thread's fault points until the returned guard is dropped (which
/// restores the policy installed before, if any).
#[must_use = "the policy is uninstalled when the guard is dropped"]
pub fn install(policy: Rc<dyn FaultPolicy>) -> Installed {
    let previous = POLICY.with(|current| current.borrow_mut().replace(policy));
    Installed { previous }
}

/// Keeps a [`FaultPolicy`] installed; see [`install`].
pub struct Installed {
    previous: Option<Rc<dyn FaultPolicy>>,
}

impl Drop for Installed {
    fn drop(&mut self) {
        let previous = self.previous.take();
        POLICY.with(|current| *current.borrow_mut() = previous);
    }
}

/// Whether a fault point fires now: `if buggify!(SlowCancel) { … }`; see [`crate::buggify`].
#[macro_export]
macro_rules! buggify {
    ($point:ident) => {
        $crate::buggify::fires($crate::buggify::FaultPoint::$point)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Only(FaultPoint);

    impl FaultPolicy for Only {
        fn fires(&self, point: FaultPoint) -> bool {
            point == self.0
        }
    }

    #[test]
    fn points_fire_only_as_the_installed_policy_says() {
        assert!(!buggify!(SlowCancel), "no policy: never");
        {
            let _installed = install(Rc::new(Only(FaultPoint::SlowCancel)));
            assert!(buggify!(SlowCancel));
            assert!(!buggify!(CreditsShrunk));
        }
        assert!(!buggify!(SlowCancel), "uninstalled");
    }

    #[test]
    fn points_have_distinct_names_and_marks() {
        let names: std::collections::BTreeSet<&str> = FaultPoint::ALL.iter().map(|point| point.name()).collect();
        let marks: std::collections::BTreeSet<Mark> = FaultPoint::ALL.iter().map(|point| point.mark()).collect();
        assert_eq!((names.len(), marks.len()), (FaultPoint::ALL.len(), FaultPoint::ALL.len()));
        for point in FaultPoint::ALL {
            assert_eq!(point.name().parse::<FaultPoint>(), Ok(*point));
            assert_eq!(point.mark().name(), format!("buggify-{point}"), "its mark is named after it");
        }
    }
}
