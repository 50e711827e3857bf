//! JUnit XML for `sluice sweep --junit FILE` and `sluice merge --junit FILE`: one test suite
//! per scenario, one test case per seed, so that CI systems show a sweep like a test run.
//!
//! A failed seed is a `<failure>` (its check, detail and the command that replays it), a crashed
//! one an `<error>`; an expected-unrecoverable seed passes, with why in its output. Written with
//! `quick-junit`, which escapes what XML cannot hold.

use std::time::Duration;

use quick_junit::{NonSuccessKind, Report, TestCase, TestCaseStatus, TestSuite};

use super::record::{Outcome, SeedRecord};

/// What a report keeps of a seed until it is written: a passing seed's number and time only
/// (a few bytes), the whole record of any other.
#[derive(Clone, Debug)]
pub struct Case {
    seed: u64,
    wall_ms: u64,
    record: Option<Box<SeedRecord>>,
}

impl Case {
    /// The case of a seed.
    pub fn of(record: &SeedRecord) -> Case {
        let kept = record.outcome != Outcome::Passed;
        Case { seed: record.seed, wall_ms: record.wall_ms, record: kept.then(|| Box::new(record.clone())) }
    }
}

/// The JUnit report of a sweep of `scenario`, seeds in order.
pub fn report(name: &str, scenario: &str, cases: &mut [Case]) -> String {
    cases.sort_by_key(|case| case.seed);
    let mut suite = TestSuite::new(scenario);
    for case in cases.iter() {
        suite.add_test_case(match &case.record {
            Some(record) => test_case(record),
            None => passed(scenario, case),
        });
    }
    let mut report = Report::new(name);
    report.add_test_suite(suite);
    report.to_string().expect("internal: a JUnit report of plain strings serializes")
}

fn passed(scenario: &str, case: &Case) -> TestCase {
    let mut test = TestCase::new(format!("seed {}", case.seed), TestCaseStatus::success());
    test.set_classname(scenario);
    test.set_time(Duration::from_millis(case.wall_ms));
    test
}

fn test_case(record: &SeedRecord) -> TestCase {
    let replay = record
        .replay_file
        .as_ref()
        .map(|file| format!("\nreplay: {}", crate::replay::command("replay", file)))
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
        let records = [record(2, Outcome::Failed), record(1, Outcome::Passed), record(3, Outcome::Crashed)];
        let mut cases: Vec<Case> = records.iter().map(Case::of).collect();
        let xml = report("sluice sweep", "wordcount", &mut cases);
        assert!(xml.starts_with("<?xml"), "{xml}");
        assert!(xml.contains("tests=\"3\"") && xml.contains("failures=\"1\"") && xml.contains("errors=\"1\""), "{xml}");
        assert!(xml.find("seed 1").unwrap() < xml.find("seed 2").unwrap(), "seeds in order: {xml}");
        assert!(xml.contains("1 row &lt;lost&gt; &amp; more"), "{xml}");
        assert!(xml.contains("replay failures/wordcount-2.yaml"), "{xml}");
        assert!(xml.contains("type=\"crashed\""), "{xml}");
    }
}
