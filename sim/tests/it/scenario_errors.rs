//! Bad scenarios get a clear error naming the file, the line and the field, and never a panic.

use sluice_sim::scenario::{Scenario, ScenarioError};

const GOOD: &str = "\
name: errors
job: wordcount
params: { words: 100, distinct_words: 5 }
cluster: { task_managers: 2, slots_per_task_manager: 2 }
parallelism: 2
modes: [streaming, batch]
seeds: 1..3
faults:
  - at: 150ms
    kill: tm-1
    restart_after: 500ms
";

fn error_for(from: &str, to: &str) -> ScenarioError {
    assert!(GOOD.contains(from), "the edit must apply: {from}");
    Scenario::parse("bad.yaml", &GOOD.replacen(from, to, 1)).expect_err("the edited scenario must be rejected")
}

fn assert_error(error: &ScenarioError, line: usize, field: &str, message_part: &str) {
    assert_eq!(error.file, "bad.yaml");
    assert_eq!(error.line, Some(line), "{error}");
    assert_eq!(error.field.as_deref(), Some(field), "{error}");
    assert!(error.message.contains(message_part), "{error}");
    let rendered = error.to_string();
    assert!(rendered.starts_with(&format!("bad.yaml:{line}: field `{field}`")), "{rendered}");
}

#[test]
fn the_good_scenario_round_trips_through_yaml() {
    let scenario = Scenario::parse("good.yaml", GOOD).unwrap();
    assert_eq!(scenario.seeds, 1..3);
    assert_eq!(scenario.faults.len(), 1);
    let again = Scenario::parse("again.yaml", &scenario.to_yaml()).unwrap();
    assert_eq!(again, scenario);
}

#[test]
fn misspelled_fields_are_named_with_their_line() {
    assert_error(&error_for("faults:", "fautls:"), 8, "fautls", "unknown field");
    assert_error(&error_for("    kill: tm-1", "    kil: tm-1"), 10, "faults[0].kil", "expected one of `at`, `when`");
    assert_error(&error_for("task_managers: 2", "task_manager: 2"), 4, "cluster.task_manager", "unknown field");
}

#[test]
fn bad_values_are_named_with_their_line() {
    assert_error(&error_for("at: 150ms", "at: 150"), 9, "faults[0].at", "no unit");
    assert_error(&error_for("batch]", "batsh]"), 6, "modes[1]", "unknown variant `batsh`");
    assert_error(&error_for("seeds: 1..3", "seeds: 3..1"), 7, "seeds", "empty");
    assert_error(&error_for("kill: tm-1", "kill: tm-9"), 10, "faults[0].kill", "no node `tm-9`");
    assert_error(
        &error_for("at: 150ms", "when: { vertex: 7, state: running }"),
        9,
        "faults[0].when.vertex",
        "has vertices 0..2, not 7",
    );
    assert_error(&error_for("job: wordcount", "job: wordcont"), 2, "job", "no job `wordcont`");
    assert_error(&error_for("distinct_words", "distinct_wrods"), 3, "params.distinct_wrods", "has no parameter");
    assert_error(&error_for("parallelism: 2", "parallelism: 0"), 5, "parallelism", "must be in 1..=256, not 0");
}

#[test]
fn a_job_that_cannot_fit_says_how_many_slots_it_needs() {
    let error = error_for("parallelism: 2", "parallelism: 5");
    assert_error(&error, 5, "parallelism", "needs 5 slots at once, but the cluster has 4 (2 TaskManagers × 2 slots)");
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    for text in ["", "- a\n- b\n", "name: [", "\u{0}\u{1}", "name: x\njob: wordcount\nparams: { words: -1 }\n"] {
        let error = Scenario::parse("garbage.yaml", text).expect_err("garbage must be rejected");
        assert!(error.to_string().starts_with("garbage.yaml"), "{error}");
    }
}

#[test]
fn a_parallelism_override_is_checked_like_the_file_and_renames_the_scenario() {
    let scenario = Scenario::parse("good.yaml", GOOD).unwrap();
    assert_eq!(scenario.with_parallelism(2).unwrap(), scenario, "the file's own parallelism changes nothing");
    let one = scenario.with_parallelism(1).unwrap();
    assert_eq!((one.name.as_str(), one.parallelism), ("errors-p1", 1));
    let again = Scenario::parse("again.yaml", &one.to_yaml()).unwrap();
    assert_eq!(again, one, "a replay file of the overridden scenario holds its parallelism");
    let error = scenario.with_parallelism(5).unwrap_err();
    assert_eq!((error.line, error.field.as_deref()), (None, Some("parallelism")), "{error}");
    assert!(error.message.contains("needs 5 slots at once, but the cluster has 4"), "{error}");
}
