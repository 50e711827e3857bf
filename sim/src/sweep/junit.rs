//! JUnit XML for `sluice sweep --junit FILE` and `sluice merge --junit FILE`: one test suite
//! per scenario, one test case per seed, so that CI systems show a sweep like a test run.
//!
//! A failed seed is a `<failure>` (its check, detail and the command that replays it), a crashed
//! one an `<error>`; an expected-unrecoverable seed passes, with why in its output. Written with
//! `quick-junit`, which escapes what XML cannot hold.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::record::{Outcome, SeedRecord};

/// The JUnit report of a sweep's records, seeds in order.
pub fn report(name: &str, records: &[SeedRecord]) -> String {
    let mut sorted: Vec<&SeedRecord> = records.iter().collect();
    sorted.sort_by_key(|record| (record.scenario.clone(), record.seed));
    let mut report = Report::new(name);
    let mut suites: Vec<TestSuite> = Vec::new();
    for record in sorted {
        if suites.last().is_none_or(|suite| suite.name.as_str() != record.scenario) {
            suites.push(TestSuite::new(record.scenario.as_str()));
        }
        let suite = suites.last_mut().expect("pushed above");
        suite.add_test_case(test_case(record));
    }
    report.add_test_suites(suites);
    report.to_string().expect("internal: a JUnit report of plain strings serializes")
}

fn test_case(record: &SeedRecord) -> TestCase {
    let replay = record
        .replay_file
        .as_ref()
        .map(|file| format!("\nreplay: cargo run --release -p sluice-sim -- replay {file}"))
        .unwrap_or_default();
    let status = match record.outcome {
        Outcome::Passed | Outcome::ExpectedUnrecoverable => TestCaseStatus::success(),
        Outcome::Failed => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Failure);
            let checks: Vec<&str> = record.failures.iter().map(|failure| failure.check.as_str()).collect();
            let details: Vec<String> = record
                .failures
                .iter()
                .map(|failure| match failure.mode {
                    Some(mode) => format!("{mode}: {}: {}", failure.check, failure.detail),
                    None => format!("{}: {}", failure.check, failure.detail),
                })
                .collect();
            status.set_type(checks.join(", "));
            status.set_message(details.first().cloned().unwrap_or_default());
            status.set_description(details.join("\n") + &replay);
            status
        }
        Outcome::Crashed => {
            let mut status = TestCaseStatus::non_success(NonSuccessKind::Error);
            status.set_type("crashed");
            status.set_message(record.crash.clone().unwrap_or_default());
            status.set_description(record.crash.clone().unwrap_or_default() + &replay);
            status
        }
    };
    let mut case = TestCase::new(format!("seed {}", record.seed), status);
    case.set_classname(record.scenario.as_str());
    case.set_time(Duration::from_millis(record.wall_ms));
    let unrecoverable: Vec<String> = record.runs.iter().filter_map(|run| run.unrecoverable.clone()).collect();
    if !unrecoverable.is_empty() {
        case.set_system_out(format!("expected-unrecoverable: {}", unrecoverable.join("; ")));
    }
    case
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::record::FailureRecord;

    fn record(seed: u64, outcome: Outcome) -> SeedRecord {
        let mut record = SeedRecord::crashed("wordcount", seed, vec![], "killed by signal 6 (SIGABRT)".into(), 5);
        record.outcome = outcome;
        if outcome != Outcome::Crashed {
            record.crash = None;
        }
        if outcome == Outcome::Failed {
            record.failures =
                vec![FailureRecord { mode: None, check: "exactly-once".into(), detail: "1 row <lost> & more".into() }];
            record.replay_file = Some(format!("failures/wordcount-{seed}.yaml"));
        }
        record
    }

    #[test]
    fn failures_and_crashes_are_told_apart_and_text_is_escaped() {
        let xml = report(
            "sluice sweep",
            &[record(2, Outcome::Failed), record(1, Outcome::Passed), record(3, Outcome::Crashed)],
        );
        assert!(xml.starts_with("<?xml"), "{xml}");
        assert!(xml.contains("tests=\"3\"") && xml.contains("failures=\"1\"") && xml.contains("errors=\"1\""), "{xml}");
        assert!(xml.find("seed 1").unwrap() < xml.find("seed 2").unwrap(), "seeds in order: {xml}");
        assert!(xml.contains("1 row &lt;lost&gt; &amp; more"), "{xml}");
        assert!(xml.contains("replay failures/wordcount-2.yaml"), "{xml}");
        assert!(xml.contains("type=\"crashed\""), "{xml}");
    }
}
