//! Failover: what to restart after a failure, and when to give up.
//!
//! Today the only [`FailoverStrategy`] is restart-all: any task failure or lost TaskManager
//! cancels every task and runs the job again from the start, after the delay the
//! [`RestartStrategy`] asks for. Exactly-once survives this because sources replay by offset
//! and sink transactions have ids that are stable across attempts.
//!
//! Depends on: nothing. Invariant: a restart decision depends only on the failures counted,
//! never on the clock or randomness.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which tasks a failure restarts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FailoverStrategy {
    /// Every task of the job.
    RestartAll,
}

/// When to restart, and when to stop trying (Flink's `RestartBackoffTimeStrategy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type")]
pub enum RestartStrategy {
    /// Never restart: the first failure fails the job.
    None,
    /// Restart after a fixed delay, at most `attempts` times.
    FixedDelay {
        /// Delay before each restart.
        #[serde(with = "crate::duration::text")]
        delay: Duration,
        /// Restarts allowed.
        attempts: u32,
    },
}

impl Default for RestartStrategy {
    fn default() -> Self {
        RestartStrategy::FixedDelay { delay: Duration::from_millis(200), attempts: 10 }
    }
}

impl fmt::Display for RestartStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestartStrategy::None => f.write_str("no-restart"),
            RestartStrategy::FixedDelay { delay, attempts } => {
                write!(f, "fixed-delay ({} attempts, {} ms apart)", attempts, delay.as_millis())
            }
        }
    }
}

/// What to do about a failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RestartDecision {
    /// Restart after this delay.
    RestartAfter(Duration),
    /// Fail the job; the message says which strategy gave up and why.
    GiveUp(String),
}

/// Counts failures against a [`RestartStrategy`].
#[derive(Clone, Debug)]
pub struct RestartTracker {
    strategy: RestartStrategy,
    restarts: u32,
}

impl RestartTracker {
    /// A tracker with no failures yet.
    pub fn new(strategy: RestartStrategy) -> RestartTracker {
        RestartTracker { strategy, restarts: 0 }
    }

    /// Restarts granted so far.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Decides about one failure, described by `cause`.
    pub fn on_failure(&mut self, cause: &str) -> RestartDecision {
        match self.strategy {
            RestartStrategy::None => RestartDecision::GiveUp(format!("restart strategy no-restart gave up: {cause}")),
            RestartStrategy::FixedDelay { delay, attempts } => {
                if self.restarts >= attempts {
                    RestartDecision::GiveUp(format!(
                        "restart strategy {} gave up after {} restarts; last failure: {cause}",
                        self.strategy, self.restarts
                    ))
                } else {
                    self.restarts += 1;
                    RestartDecision::RestartAfter(delay)
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_delay_gives_up_after_its_attempts_with_a_reason() {
        let mut tracker =
            RestartTracker::new(RestartStrategy::FixedDelay { delay: Duration::from_millis(5), attempts: 2 });
        assert_eq!(tracker.on_failure("a"), RestartDecision::RestartAfter(Duration::from_millis(5)));
        assert_eq!(tracker.on_failure("b"), RestartDecision::RestartAfter(Duration::from_millis(5)));
        match tracker.on_failure("tm-1 lost") {
            RestartDecision::GiveUp(message) => {
                assert!(message.contains("fixed-delay"), "{message}");
                assert!(message.contains("after 2 restarts"), "{message}");
                assert!(message.contains("tm-1 lost"), "{message}");
            }
            other => panic!("expected to give up, got {other:?}"),
        }
        assert_eq!(tracker.restarts(), 2);
    }

    #[test]
    fn no_restart_gives_up_at_once() {
        let mut tracker = RestartTracker::new(RestartStrategy::None);
        assert!(matches!(tracker.on_failure("x"), RestartDecision::GiveUp(_)));
    }
}
