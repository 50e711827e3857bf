//! Property: loading a scenario never panics, whatever its text. Each case takes a shipped
//! scenario and applies a few mutations (cut a span, insert a token from a dictionary of YAML
//! syntax, extreme numbers, durations, node names and control characters, duplicate a line);
//! `Scenario::parse` must return a scenario or an error naming the file, never panic, and a
//! scenario it accepts must survive its own YAML round trip and give every seed a schedule.
//! A thousand cases by default (`PROPTEST_CASES` for more); `SLUICE_SEED=N` reruns one case; a
//! failure prints the mutated text.

use std::panic::{AssertUnwindSafe, catch_unwind};

use sluice_properties::text_mutation::{apply, mutation};
use sluice_properties::{CaseResult, case_seeds_or, check_seeds};
use sluice_sim::scenario::Scenario;

const SCENARIOS: &[&str] = &[
    include_str!("../../scenarios/wordcount-tm-crash.yaml"),
    include_str!("../../scenarios/wordcount-checkpoints.yaml"),
    include_str!("../../scenarios/tpcds-chaos.yaml"),
    include_str!("../../scenarios/tpcds-adaptive.yaml"),
    include_str!("../../scenarios/windowed-failover.yaml"),
    include_str!("../../scenarios/alerts-checkpoints.yaml"),
    include_str!("../../scenarios/tpcds-jm-tm-crash.yaml"),
    include_str!("../../scenarios/generated-chaos.yaml"),
];

const TOKENS: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ":",
    ": ",
    ", ",
    "- ",
    "\n",
    "\n  ",
    "    ",
    "!tag ",
    "!!str ",
    "&a ",
    "*a",
    "\"",
    "'",
    "#",
    "0",
    "-1",
    "1.5",
    "18446744073709551615",
    "4294967295",
    "65536",
    "1e400",
    ".nan",
    ".inf",
    "~",
    "null",
    "0ms",
    "1us",
    "2h",
    "999999999h",
    "1d",
    "tm-0",
    "tm-99",
    "jm",
    "shuffle-service",
    "final",
    "batch",
    "streaming",
    "\u{0}",
    "\u{1b}[31m",
    "é",
    "faults:\n  - at: 1s\n    kill: tm-0\n",
    "  - after_checkpoint: 0\n    kill: tm-1\n",
    "partition: { between: [[jm], [jm]], for: 1s }",
    "random_faults: { count: 64 }\n",
    "parallelism: 256\n",
    "params: { words: 1000000 }\n",
];

fn load(text: &str) -> Result<(), String> {
    match Scenario::parse("mutated.yaml", text) {
        Err(error) if error.to_string().starts_with("mutated.yaml") => Ok(()),
        Err(error) => Err(format!("an error that does not name the file: {error}")),
        Ok(scenario) => {
            let again = Scenario::parse("again.yaml", &scenario.to_yaml()).map_err(|error| error.to_string())?;
            if again != scenario {
                return Err("it does not survive its own YAML round trip".to_string());
            }
            for seed in [0, 1, u64::MAX - 1] {
                let _ = scenario.schedule(seed);
            }
            Ok(())
        }
    }
}

#[test]
fn loading_mutated_scenario_text_never_panics() {
    let strategy = (0..SCENARIOS.len(), proptest::collection::vec(mutation(TOKENS.len()), 1..6));
    // Loading is cheap: a thousand cases by default.
    check_seeds("loading_mutated_scenario_text_never_panics", strategy, case_seeds_or(1000), |(base, mutations), _| {
        let text = apply(SCENARIOS[*base].to_string(), mutations, TOKENS);
        let outcome = catch_unwind(AssertUnwindSafe(|| load(&text)));
        match outcome {
            Ok(Ok(())) => CaseResult::Pass,
            Ok(Err(message)) => CaseResult::Fail { message: format!("{message}; text:\n{text}"), replay_file: None },
            Err(_) => CaseResult::Fail { message: format!("loading panicked; text:\n{text}"), replay_file: None },
        }
    });
}
