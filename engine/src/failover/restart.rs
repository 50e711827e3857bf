//! Restart strategies (Flink's `RestartBackoffTimeStrategy`): the delay before each restart and
//! when to give up.
//!
//! - `fixed-delay`: restart after `delay`, at most `attempts` times.
//! - `exponential-delay`: the first restart after `initial_backoff`, each next one `multiplier`
//!   times later, at most `max_backoff`, each varied by ±`jitter_factor`; a failure that arrives
//!   while a restart is still pending is merged into it (not counted again); after
//!   `reset_backoff_threshold` without failures the backoff starts over; at most `attempts`
//!   restarts since the last reset (unlimited if unset).
//! - `failure-rate`: restart after `delay` unless more than `max_failures_per_interval`
//!   failures happened within the last `failure_rate_interval`.
//! - `none`: the first failure fails the job.
//!
//! Times are simulated time since the JobMaster started; jitter is drawn by the caller from the
//! seeded generator.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::counted::counted;

/// A factor such as a backoff multiplier, in thousandths (`1.5` is 1500): written as a number,
/// compared exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Factor(pub u32);

impl Factor {
    /// `value / 1000`.
    pub const fn thousandths(value: u32) -> Factor {
        Factor(value)
    }

    /// `duration × self`, rounded down to a microsecond.
    pub fn scale(self, duration: Duration) -> Duration {
        let micros = duration.as_micros().saturating_mul(u128::from(self.0)) / 1000;
        Duration::from_micros(u64::try_from(micros).unwrap_or(u64::MAX))
    }
}

impl fmt::Display for Factor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, fraction) = (self.0 / 1000, self.0 % 1000);
        if fraction == 0 {
            write!(f, "{whole}")
        } else {
            let digits = format!("{fraction:03}");
            write!(f, "{whole}.{}", digits.trim_end_matches('0'))
        }
    }
}

impl Serialize for Factor {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_f64(f64::from(self.0) / 1000.0)
    }
}

impl<'de> Deserialize<'de> for Factor {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Factor, D::Error> {
        let value = f64::deserialize(deserializer)?;
        if !(0.0..=1_000_000.0).contains(&value) {
            return Err(serde::de::Error::custom(format!("{value} is not a factor between 0 and 1000000")));
        }
        Ok(Factor((value * 1000.0).round() as u32))
    }
}

fn default_initial_backoff() -> Duration {
    Duration::from_secs(1)
}
fn default_max_backoff() -> Duration {
    Duration::from_secs(60)
}
fn default_multiplier() -> Factor {
    Factor(1500)
}
fn default_reset_threshold() -> Duration {
    Duration::from_secs(3600)
}
fn default_jitter() -> Factor {
    Factor(100)
}
fn default_failure_interval() -> Duration {
    Duration::from_secs(60)
}

/// When to restart, and when to stop trying; see the module doc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "type", deny_unknown_fields)]
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
    /// Restart after a delay that grows with each failure; see the module doc.
    ExponentialDelay {
        /// The first delay.
        #[serde(default = "default_initial_backoff", with = "crate::duration::text")]
        initial_backoff: Duration,
        /// The longest delay.
        #[serde(default = "default_max_backoff", with = "crate::duration::text")]
        max_backoff: Duration,
        /// Each delay is the previous one times this.
        #[serde(default = "default_multiplier")]
        multiplier: Factor,
        /// This long without failures starts the backoff over.
        #[serde(default = "default_reset_threshold", with = "crate::duration::text")]
        reset_backoff_threshold: Duration,
        /// Each delay varies by up to this fraction of it, either way.
        #[serde(default = "default_jitter")]
        jitter_factor: Factor,
        /// Restarts allowed since the last reset; unlimited if unset.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        attempts: Option<u32>,
    },
    /// Restart after a fixed delay unless failures come too often.
    FailureRate {
        /// Failures allowed within any `failure_rate_interval`.
        max_failures_per_interval: u32,
        /// The window failures are counted in.
        #[serde(default = "default_failure_interval", with = "crate::duration::text")]
        failure_rate_interval: Duration,
        /// Delay before each restart.
        #[serde(with = "crate::duration::text")]
        delay: Duration,
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
                write!(f, "fixed-delay ({}, {} ms apart)", counted(*attempts, "attempt"), delay.as_millis())
            }
            RestartStrategy::ExponentialDelay { initial_backoff, max_backoff, multiplier, attempts, .. } => {
                write!(
                    f,
                    "exponential-delay ({} ms to {} ms, ×{multiplier}, ",
                    initial_backoff.as_millis(),
                    max_backoff.as_millis()
                )?;
                match attempts {
                    Some(attempts) => write!(f, "{})", counted(*attempts, "attempt")),
                    None => f.write_str("unlimited attempts)"),
                }
            }
            RestartStrategy::FailureRate { max_failures_per_interval, failure_rate_interval, delay } => write!(
                f,
                "failure-rate (at most {max_failures_per_interval} failures per {} ms, {} ms apart)",
                failure_rate_interval.as_millis(),
                delay.as_millis()
            ),
        }
    }
}

impl RestartStrategy {
    /// Checks values a scenario or job author may get wrong.
    pub fn validate(&self) -> Result<(), String> {
        match *self {
            RestartStrategy::ExponentialDelay { initial_backoff, max_backoff, multiplier, jitter_factor, .. } => {
                if initial_backoff.is_zero() {
                    return Err("exponential-delay: initial_backoff must be positive".to_string());
                }
                if max_backoff < initial_backoff {
                    return Err("exponential-delay: max_backoff must be at least initial_backoff".to_string());
                }
                if multiplier < Factor(1000) {
                    return Err(format!("exponential-delay: multiplier {multiplier} must be at least 1"));
                }
                if jitter_factor > Factor(1000) {
                    return Err(format!("exponential-delay: jitter_factor {jitter_factor} must be at most 1"));
                }
                Ok(())
            }
            RestartStrategy::FailureRate { failure_rate_interval, .. } if failure_rate_interval.is_zero() => {
                Err("failure-rate: failure_rate_interval must be positive".to_string())
            }
            _ => Ok(()),
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
    /// Exponential delay: restarts since the last reset, the current backoff, when the last
    /// counted failure happened and when its restart is due.
    attempts_since_reset: u32,
    backoff: Duration,
    last_failure: Option<Duration>,
    restart_due: Option<Duration>,
    /// Failure rate: when recent failures happened, oldest first.
    recent: VecDeque<Duration>,
}

impl RestartTracker {
    /// A tracker with no failures yet.
    pub fn new(strategy: RestartStrategy) -> RestartTracker {
        RestartTracker {
            strategy,
            restarts: 0,
            attempts_since_reset: 0,
            backoff: Duration::ZERO,
            last_failure: None,
            restart_due: None,
            recent: VecDeque::new(),
        }
    }

    /// The strategy it applies.
    pub fn strategy(&self) -> RestartStrategy {
        self.strategy
    }

    /// Restarts granted so far (merged failures not counted).
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Decides about one failure, described by `cause`, that happened at `now`; `jitter` is a
    /// number drawn from the seeded generator (used by exponential delay only).
    pub fn on_failure(&mut self, cause: &str, now: Duration, jitter: u64) -> RestartDecision {
        let strategy = self.strategy;
        let give_up = |why: String| RestartDecision::GiveUp(format!("restart strategy {strategy} gave up {why}"));
        match strategy {
            RestartStrategy::None => give_up(format!("at the first failure: {cause}")),
            RestartStrategy::FixedDelay { delay, attempts } => {
                if self.restarts >= attempts {
                    give_up(format!("after {}; last failure: {cause}", counted(self.restarts, "restart")))
                } else {
                    self.restarts += 1;
                    assert!(
                        self.restarts <= attempts,
                        "failover invariant: fixed-delay restarts at most {attempts} times"
                    );
                    RestartDecision::RestartAfter(delay)
                }
            }
            RestartStrategy::ExponentialDelay { .. } => self.on_exponential_failure(cause, now, jitter),
            RestartStrategy::FailureRate { max_failures_per_interval, failure_rate_interval, delay } => {
                assert!(
                    self.recent.back().is_none_or(|last| *last <= now),
                    "failover invariant: failures are seen in the order of their times (failure-rate)"
                );
                self.recent.push_back(now);
                while self.recent.front().is_some_and(|first| now.saturating_sub(*first) > failure_rate_interval) {
                    self.recent.pop_front();
                }
                if self.recent.len() as u32 > max_failures_per_interval {
                    give_up(format!(
                        "after {} within {} ms; last failure: {cause}",
                        counted(self.recent.len() as u64, "failure"),
                        failure_rate_interval.as_millis()
                    ))
                } else {
                    self.restarts += 1;
                    RestartDecision::RestartAfter(delay)
                }
            }
        }
    }

    /// [`RestartTracker::on_failure`] for exponential delay; see the module doc.
    fn on_exponential_failure(&mut self, cause: &str, now: Duration, jitter: u64) -> RestartDecision {
        let strategy = self.strategy;
        let RestartStrategy::ExponentialDelay {
            initial_backoff,
            max_backoff,
            multiplier,
            reset_backoff_threshold,
            jitter_factor,
            attempts,
        } = strategy
        else {
            unreachable!("failover invariant: only an exponential-delay tracker counts exponential failures")
        };
        assert!(
            self.last_failure.is_none_or(|last| last <= now),
            "failover invariant: failures are seen in the order of their times (exponential-delay)"
        );
        if let Some(due) = self.restart_due.filter(|due| now < *due) {
            return RestartDecision::RestartAfter(due - now); // merged into the pending restart
        }
        if self.last_failure.is_some_and(|last| now.saturating_sub(last) >= reset_backoff_threshold) {
            self.attempts_since_reset = 0;
        }
        if let Some(attempts) = attempts
            && self.attempts_since_reset >= attempts
        {
            return RestartDecision::GiveUp(format!(
                "restart strategy {strategy} gave up after {} without a pause of {} ms; last failure: {cause}",
                counted(self.attempts_since_reset, "restart"),
                reset_backoff_threshold.as_millis()
            ));
        }
        self.backoff = if self.attempts_since_reset == 0 {
            initial_backoff
        } else {
            multiplier.scale(self.backoff).min(max_backoff)
        };
        self.attempts_since_reset += 1;
        self.restarts += 1;
        self.last_failure = Some(now);
        let spread = jitter_factor.scale(self.backoff).as_micros() as u64;
        let offset = jitter % (2 * spread + 1);
        let delay = (self.backoff + Duration::from_micros(offset)).saturating_sub(Duration::from_micros(spread));
        self.check_exponential_delay(delay, Duration::from_micros(spread), attempts);
        self.restart_due = Some(now + delay);
        RestartDecision::RestartAfter(delay)
    }

    /// What an exponential restart's `delay` guarantees: within `spread` of the backoff, and no
    /// more restarts since the last reset than allowed.
    fn check_exponential_delay(&self, delay: Duration, spread: Duration, attempts: Option<u32>) {
        assert!(
            delay <= self.backoff.saturating_add(spread),
            "failover invariant: an exponential delay of {delay:?} is at most {spread:?} over its backoff {:?}",
            self.backoff
        );
        assert!(
            delay >= self.backoff.saturating_sub(spread),
            "failover invariant: an exponential delay of {delay:?} is at most {spread:?} under its backoff {:?}",
            self.backoff
        );
        assert!(
            attempts.is_none_or(|attempts| self.attempts_since_reset <= attempts),
            "failover invariant: exponential delay restarts at most {attempts:?} times without a pause"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(millis: u64) -> Duration {
        Duration::from_millis(millis)
    }

    fn gave_up(decision: RestartDecision) -> String {
        match decision {
            RestartDecision::GiveUp(message) => message,
            other => panic!("expected to give up, got {other:?}"),
        }
    }

    #[test]
    fn fixed_delay_gives_up_after_its_attempts_with_a_reason() {
        let mut tracker = RestartTracker::new(RestartStrategy::FixedDelay { delay: ms(5), attempts: 2 });
        assert_eq!(tracker.on_failure("a", ms(0), 0), RestartDecision::RestartAfter(ms(5)));
        assert_eq!(tracker.on_failure("b", ms(1), 0), RestartDecision::RestartAfter(ms(5)));
        let message = gave_up(tracker.on_failure("tm-1 lost", ms(2), 0));
        assert!(message.contains("fixed-delay"), "{message}");
        assert!(message.contains("after 2 restarts"), "{message}");
        assert!(message.contains("tm-1 lost"), "{message}");
        assert_eq!(tracker.restarts(), 2);
    }

    #[test]
    fn no_restart_gives_up_at_once() {
        let mut tracker = RestartTracker::new(RestartStrategy::None);
        assert!(gave_up(tracker.on_failure("x", ms(0), 0)).contains("no-restart"));
    }

    fn exponential(attempts: Option<u32>, jitter: u32) -> RestartStrategy {
        RestartStrategy::ExponentialDelay {
            initial_backoff: ms(100),
            max_backoff: ms(500),
            multiplier: Factor(2000),
            reset_backoff_threshold: ms(10_000),
            jitter_factor: Factor(jitter),
            attempts,
        }
    }

    #[test]
    fn exponential_delay_grows_to_its_maximum_and_merges_failures_of_a_pending_restart() {
        let mut tracker = RestartTracker::new(exponential(None, 0));
        let mut now = ms(0);
        let mut delays = Vec::new();
        for _ in 0..5 {
            let RestartDecision::RestartAfter(delay) = tracker.on_failure("f", now, 7) else { panic!() };
            delays.push(delay.as_millis());
            now += delay + ms(1);
        }
        assert_eq!(delays, [100, 200, 400, 500, 500]);
        // A failure while a restart is pending is the same restart.
        let RestartDecision::RestartAfter(delay) = tracker.on_failure("f", now, 0) else { panic!() };
        assert_eq!(delay, ms(500));
        assert_eq!(tracker.on_failure("g", now + ms(200), 0), RestartDecision::RestartAfter(ms(300)));
        assert_eq!(tracker.restarts(), 6);
    }

    #[test]
    fn exponential_delay_resets_after_a_quiet_period_and_gives_up_past_its_attempts() {
        let mut tracker = RestartTracker::new(exponential(Some(2), 0));
        assert_eq!(tracker.on_failure("a", ms(0), 0), RestartDecision::RestartAfter(ms(100)));
        assert_eq!(tracker.on_failure("b", ms(200), 0), RestartDecision::RestartAfter(ms(200)));
        let message = gave_up(tracker.on_failure("c", ms(600), 0));
        assert!(message.contains("exponential-delay") && message.contains("after 2 restarts"), "{message}");
        let mut tracker = RestartTracker::new(exponential(Some(2), 0));
        tracker.on_failure("a", ms(0), 0);
        tracker.on_failure("b", ms(200), 0);
        assert_eq!(tracker.on_failure("quiet", ms(20_000), 0), RestartDecision::RestartAfter(ms(100)));
    }

    #[test]
    fn exponential_jitter_stays_within_its_fraction() {
        let mut seen = std::collections::BTreeSet::new();
        for jitter in 0..500u64 {
            let mut tracker = RestartTracker::new(exponential(None, 100));
            let RestartDecision::RestartAfter(delay) = tracker.on_failure("f", ms(0), jitter * 7919) else { panic!() };
            assert!(delay >= ms(90) && delay <= ms(110), "{delay:?}");
            seen.insert(delay);
        }
        assert!(seen.len() > 100, "jitter spreads the delays: {} distinct", seen.len());
    }

    #[test]
    fn failure_rate_gives_up_when_failures_come_too_often() {
        let strategy = RestartStrategy::FailureRate {
            max_failures_per_interval: 2,
            failure_rate_interval: ms(1000),
            delay: ms(10),
        };
        let mut tracker = RestartTracker::new(strategy);
        assert_eq!(tracker.on_failure("a", ms(0), 0), RestartDecision::RestartAfter(ms(10)));
        assert_eq!(tracker.on_failure("b", ms(500), 0), RestartDecision::RestartAfter(ms(10)));
        // The first failure left the window: two within it again.
        assert_eq!(tracker.on_failure("c", ms(1200), 0), RestartDecision::RestartAfter(ms(10)));
        let message = gave_up(tracker.on_failure("d", ms(1300), 0));
        assert!(message.contains("failure-rate") && message.contains("3 failures within 1000 ms"), "{message}");
    }

    #[test]
    fn strategies_read_and_check_their_written_form() {
        let strategy: RestartStrategy =
            serde_json::from_str(r#"{"type": "exponential-delay", "initial_backoff": "50ms", "multiplier": 1.5}"#)
                .unwrap();
        assert_eq!(
            strategy,
            RestartStrategy::ExponentialDelay {
                initial_backoff: ms(50),
                max_backoff: ms(60_000),
                multiplier: Factor(1500),
                reset_backoff_threshold: ms(3_600_000),
                jitter_factor: Factor(100),
                attempts: None,
            }
        );
        assert_eq!(Factor(1500).to_string(), "1.5");
        assert!(strategy.validate().is_ok());
        let wrong: RestartStrategy =
            serde_json::from_str(r#"{"type": "exponential-delay", "initial_backoff": "50ms", "multiplier": 0.5}"#)
                .unwrap();
        assert!(wrong.validate().unwrap_err().contains("multiplier 0.5"));
        let rate: RestartStrategy =
            serde_json::from_str(r#"{"type": "failure-rate", "max_failures_per_interval": 3, "delay": "100ms"}"#)
                .unwrap();
        assert!(rate.to_string().contains("at most 3 failures per 60000 ms"));
    }
}
