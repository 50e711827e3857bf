//! Property: for any seed, input size, parallelism and TaskManager crash (time, victim, and
//! whether and when it restarts), WordCount commits exactly the reference output in streaming
//! and in batch mode, and the two modes agree.
//!
//! Shrinking the seed means nothing, so the structural inputs are what proptest shrinks: fewer
//! words, lower parallelism, an earlier crash. A failure prints the scenario as YAML: save it
//! and replay it with `sluice run`. `PROPTEST_CASES=N` runs more cases than the default.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use sluice_engine::graph::ExecutionMode;
use sluice_sim::check::{check_run, modes_agree};
use sluice_sim::runner::run;
use sluice_sim::scenario::{FaultSpec, Scenario};

fn scenario(words: u64, parallelism: u32, crash: Option<(u64, u32, Option<u64>)>) -> Scenario {
    let mut text = format!(
        "name: wordcount-property\njob: wordcount\nparams: {{ words: {words}, distinct_words: 50 }}\n\
         cluster: {{ task_managers: 3, slots_per_task_manager: 2 }}\nparallelism: {parallelism}\n"
    );
    if let Some((at_ms, victim, restart_after_ms)) = crash {
        text.push_str(&format!("faults:\n  - at: {at_ms}ms\n    kill: tm-{victim}\n"));
        if let Some(delay) = restart_after_ms {
            text.push_str(&format!("    restart_after: {delay}ms\n"));
        }
    }
    Scenario::parse("property", &text).expect("generated scenarios are valid")
}

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(24)
}

/// Case generation is seeded too, so that `cargo test` is repeatable; `PROPTEST_RNG_SEED=N`
/// explores other cases.
fn rng_seed() -> RngSeed {
    RngSeed::Fixed(std::env::var("PROPTEST_RNG_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or(0x0051_1CE0))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        rng_seed: rng_seed(),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn wordcount_is_exactly_once_in_both_modes_under_a_crash(
        seed in any::<u64>(),
        words in 1u64..4000,
        parallelism in 1u32..=4,
        crash in proptest::option::weighted(0.8, (0u64..1500, 0u32..3, proptest::option::of(50u64..1000))),
    ) {
        let scenario = scenario(words, parallelism, crash);
        let streaming = run(&scenario, ExecutionMode::Streaming, seed);
        let batch = run(&scenario, ExecutionMode::Batch, seed);
        let replay = format!("seed {seed}; scenario:\n{}", scenario.to_yaml());
        prop_assert_eq!(check_run(&streaming), vec![], "streaming failed; {}", replay);
        prop_assert_eq!(check_run(&batch), vec![], "batch failed; {}", replay);
        prop_assert_eq!(modes_agree(&streaming, &batch), Ok(()), "modes disagree; {}", replay);
    }
}

#[test]
fn the_property_can_crash_every_task_manager_and_not_restart_it() {
    // Guards the generator: the faults it builds are the ones the property claims to cover.
    let built = scenario(10, 1, Some((5, 2, None)));
    assert_eq!(
        built.faults,
        vec![FaultSpec { at: Duration::from_millis(5), kill: "tm-2".to_string(), restart_after: None }]
    );
    assert!(scenario(10, 4, None).faults.is_empty());
}

#[test]
#[allow(clippy::assertions_on_constants, reason = "the constant is what this test checks")]
fn simulation_mode_is_on() {
    assert!(cfg!(madsim), "built without --cfg madsim: a RUSTFLAGS variable replaced .cargo/config.toml's flags");
}
