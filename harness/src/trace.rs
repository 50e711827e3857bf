//! The structured event trace of one run: simulated time, node, event; and its canonical hash.
//!
//! Every process gets a [`Tracer`] bound to its node name; events are stamped with the simulated
//! time since the run started. Two runs of the same seed must produce the same trace, so its hash
//! is the determinism check, and the first differing line is what to look at when it fails.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use sluice_engine::prng::fnv1a64;
use sluice_engine::trace::{TraceEvent, Tracer, TracerHandle};

use crate::coverage::CoverageRecorder;

/// One line of a trace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Simulated time since the run started.
    pub time: Duration,
    /// The node that reported it.
    pub node: String,
    /// What happened.
    pub event: TraceEvent,
}

impl fmt::Display for TraceRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{:>12.6}s] {:<10} {}", self.time.as_secs_f64(), self.node, self.event)
    }
}

/// Collects the events of one run; clones share the log.
#[derive(Clone)]
pub struct TraceLog {
    records: Arc<Mutex<Vec<TraceRecord>>>,
    start: sluice_engine::rt::time::Instant,
    appended: Arc<tokio::sync::Notify>,
    coverage: CoverageRecorder,
}

struct NodeTracer {
    log: TraceLog,
    node: String,
}

impl Tracer for NodeTracer {
    fn record(&self, event: TraceEvent) {
        self.log.record(&self.node, event);
    }
}

impl TraceLog {
    /// A log whose time zero is now; call inside the simulation.
    pub fn start() -> TraceLog {
        TraceLog::start_into(Arc::default())
    }

    /// A log whose time zero is now, recording into `records`, which the caller keeps: the
    /// events of a run whose simulation panicked are still there.
    pub fn start_into(records: Arc<Mutex<Vec<TraceRecord>>>) -> TraceLog {
        TraceLog {
            records,
            start: sluice_engine::rt::time::Instant::now(),
            appended: Arc::default(),
            coverage: CoverageRecorder::default(),
        }
    }

    /// The run's coverage, which the log tells which faults are active.
    pub fn coverage(&self) -> &CoverageRecorder {
        &self.coverage
    }

    /// Records an event of `node`.
    pub fn record(&self, node: &str, event: TraceEvent) {
        let time = sluice_engine::rt::time::Instant::now().duration_since(self.start);
        match &event {
            TraceEvent::FaultInjected { index, kind, .. } => self.coverage.fault_injected(*index, kind),
            TraceEvent::FaultHealed { index, .. } => self.coverage.fault_healed(*index),
            _ => {}
        }
        self.records.lock().expect("trace lock").push(TraceRecord { time, node: node.to_string(), event });
        self.appended.notify_waiters();
    }

    /// Waits until `found` accepts a record (one already recorded, or a future one). `found`
    /// sees every record once, in order, and may keep state (e.g. a running count).
    pub async fn wait_for(&self, mut found: impl FnMut(&TraceRecord) -> bool) {
        let mut seen = 0;
        loop {
            let appended = self.appended.notified();
            tokio::pin!(appended);
            appended.as_mut().enable();
            {
                let records = self.records.lock().expect("trace lock");
                for record in &records[seen..] {
                    if found(record) {
                        return;
                    }
                }
                seen = records.len();
            }
            appended.await;
        }
    }

    /// A tracer for the processes of one node.
    pub fn tracer_for(&self, node: &str) -> TracerHandle {
        Arc::new(NodeTracer { log: self.clone(), node: node.to_string() })
    }

    /// Simulated time since the run started.
    pub fn elapsed(&self) -> Duration {
        sluice_engine::rt::time::Instant::now().duration_since(self.start)
    }

    /// The records so far.
    pub fn records(&self) -> Vec<TraceRecord> {
        self.records.lock().expect("trace lock").clone()
    }
}

/// The records of a log started with [`TraceLog::start_into`], even if a panic poisoned it.
pub fn recorded(records: &Mutex<Vec<TraceRecord>>) -> Vec<TraceRecord> {
    records.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
}

#[derive(Serialize, Deserialize)]
struct JsonRecord {
    time_ns: u64,
    node: String,
    #[serde(flatten)]
    event: TraceEvent,
}

/// A trace as JSON lines: `{"time_ns": …, "node": "jm", "event": "task_deployed", …fields}`.
pub fn to_json_lines(records: &[TraceRecord]) -> String {
    let mut text = String::new();
    for record in records {
        let json = JsonRecord {
            time_ns: u64::try_from(record.time.as_nanos()).expect("simulated time fits in u64 nanoseconds"),
            node: record.node.clone(),
            event: record.event.clone(),
        };
        text.push_str(&serde_json::to_string(&json).expect("trace events serialize"));
        text.push('\n');
    }
    text
}

/// Reads a JSON lines trace; an error names the line. Blank lines may end the text but not
/// stand between records, so that record `n` is on line `n` (errors about records, such as a
/// timeline's, name their line that way).
pub fn from_json_lines(text: &str) -> Result<Vec<TraceRecord>, String> {
    text.trim_end()
        .lines()
        .enumerate()
        .map(|(index, line)| {
            if line.trim().is_empty() {
                return Err(format!("line {}: a blank line; a trace has one event per line", index + 1));
            }
            let json: JsonRecord =
                serde_json::from_str(line).map_err(|error| format!("line {}: {error}", index + 1))?;
            Ok(TraceRecord { time: Duration::from_nanos(json.time_ns), node: json.node, event: json.event })
        })
        .collect()
}

/// The canonical hash of a trace: FNV-1a over its rendered lines (times in nanoseconds).
pub fn trace_hash(records: &[TraceRecord]) -> u64 {
    let mut canonical = String::new();
    for record in records {
        canonical.push_str(&format!("{} {} {:?}\n", record.time.as_nanos(), record.node, record.event));
    }
    fnv1a64(canonical.as_bytes())
}

/// The first line at which two traces differ, for a determinism failure report.
pub fn first_difference(left: &[TraceRecord], right: &[TraceRecord]) -> Option<(usize, String, String)> {
    let length = left.len().max(right.len());
    (0..length).find_map(|index| {
        let a = left.get(index).map_or_else(|| "<end of trace>".to_string(), ToString::to_string);
        let b = right.get(index).map_or_else(|| "<end of trace>".to_string(), ToString::to_string);
        (left.get(index) != right.get(index)).then_some((index, a, b))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_lines_round_trip() {
        let records = vec![
            TraceRecord { time: Duration::from_nanos(5), node: "jm".into(), event: TraceEvent::JobMasterStarted },
            TraceRecord {
                time: Duration::from_millis(3),
                node: "jm".into(),
                event: TraceEvent::TaskDeployed { attempt: 1, vertex: 0, subtask: 2, slot: "tm-0/s1".into() },
            },
        ];
        let text = to_json_lines(&records);
        assert!(text.starts_with("{\"time_ns\":5,\"node\":\"jm\",\"event\":\"job_master_started\"}"), "{text}");
        assert_eq!(from_json_lines(&text).unwrap(), records);
        assert!(from_json_lines("{}\n").unwrap_err().starts_with("line 1"));
        assert_eq!(from_json_lines(&format!("{text}\n \n")).unwrap(), records, "blank lines may end a trace");
        assert_eq!(from_json_lines("").unwrap(), []);
    }

    /// A trace file is input: whatever it holds gives records or an error naming the line.
    #[test]
    fn malformed_lines_are_errors_naming_their_line() {
        let good = to_json_lines(&[TraceRecord {
            time: Duration::ZERO,
            node: "jm".into(),
            event: TraceEvent::JobMasterStarted,
        }]);
        let error = |line: &str| from_json_lines(&format!("{good}{line}\n")).unwrap_err();
        assert!(
            error(r#"{"time_ns":-5,"node":"jm","event":"job_master_started"}"#).starts_with("line 2: invalid value")
        );
        assert!(
            error(r#"{"time_ns":18446744073709551616,"node":"jm","event":"job_master_started"}"#).starts_with("line 2")
        );
        assert!(
            error(r#"{"time_ns":1,"node":"jm","event":"task_deployed","attempt":4294967296}"#).starts_with("line 2")
        );
        assert!(error(r#"{"time_ns":1,"node":"jm","event":"no_such_event"}"#).contains("unknown variant"));
        assert!(error("not json at all").starts_with("line 2"));
        assert!(error(&"[".repeat(100_000)).starts_with("line 2"), "deep nesting is an error, not a stack overflow");
        let blank = from_json_lines(&format!("{good}\n{good}")).unwrap_err();
        assert_eq!(blank, "line 2: a blank line; a trace has one event per line");
    }
}
