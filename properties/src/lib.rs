//! The property suites' runner: proptest strategies, one case per seed, so that any case can be
//! run again alone.
//!
//! [`check`] draws case `i` of a property from its own *case seed*, a pure function of
//! `PROPTEST_RNG_SEED` (default fixed, so `cargo test` is repeatable) and `i`; a property runs
//! `PROPTEST_CASES` cases (default 64). `SLUICE_SEED=N` runs only the case whose seed is N: the
//! same value, drawn the same way. The property's simulations use the case seed as their seed.
//!
//! A failing case is shrunk with proptest's value tree (structural inputs only: fewer words,
//! lower parallelism, an earlier crash; the simulation seed stays the case's), and the test
//! panics with the minimal case, its replay file when the property wrote one, and the two
//! commands that rerun it: `SLUICE_SEED=N cargo test …` and `sluice replay FILE`.

pub mod text_mutation;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// What one case of a property came to.
pub enum CaseResult {
    /// It held.
    Pass,
    /// It did not: why, and the replay file written for it, if any.
    Fail {
        /// What went wrong.
        message: String,
        /// A replay file of the failing run.
        replay_file: Option<String>,
    },
}

/// The default of `PROPTEST_RNG_SEED`.
const DEFAULT_RNG_SEED: u64 = 0x0051_1CE0;

/// Shrinking steps tried at most (each runs the property once).
const MAX_SHRINK_STEPS: u32 = 200;

fn env_number(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    Some(text.trim().parse().unwrap_or_else(|_| panic!("{name} must be a number, not `{text}`")))
}

/// SplitMix64: spreads consecutive numbers over the whole range.
fn mix(value: u64) -> u64 {
    let mut z = value.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The seeds of the cases to run: `SLUICE_SEED`, or `PROPTEST_CASES` (default 64) seeds from
/// `PROPTEST_RNG_SEED`.
pub fn case_seeds() -> Vec<u64> {
    case_seeds_or(64)
}

/// [`case_seeds`], with `cases` cases unless `PROPTEST_CASES` says otherwise (for properties
/// cheap enough to run thousands of cases by default).
pub fn case_seeds_or(cases: u64) -> Vec<u64> {
    if let Some(seed) = env_number("SLUICE_SEED") {
        return vec![seed];
    }
    let base = env_number("PROPTEST_RNG_SEED").unwrap_or(DEFAULT_RNG_SEED);
    let cases = env_number("PROPTEST_CASES").unwrap_or(cases);
    (0..cases).map(|index| mix(base.wrapping_mul(0x1_0000_0001).wrapping_add(index))).collect()
}

/// The value tree of the case with seed `seed`.
fn tree<S: Strategy>(strategy: &S, seed: u64) -> S::Tree {
    let mut bytes = [0u8; 32];
    for (chunk, part) in bytes.chunks_mut(8).zip([seed, mix(seed), mix(mix(seed)), mix(mix(mix(seed)))]) {
        chunk.copy_from_slice(&part.to_le_bytes());
    }
    let mut runner = TestRunner::new_with_rng(Config::default(), TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
    strategy
        .new_tree(&mut runner)
        .unwrap_or_else(|reason| panic!("internal: the strategy cannot draw a case: {reason}"))
}

/// The value of the case with seed `seed`: what [`check`] runs for it (for tests of a
/// property's generator).
pub fn draw<S: Strategy>(strategy: &S, seed: u64) -> S::Value {
    tree(strategy, seed).current()
}

/// Runs a property over its cases ([`case_seeds`]); see the module doc. `test` gets each case's
/// value and seed.
pub fn check<S>(property: &str, strategy: S, test: impl Fn(&S::Value, u64) -> CaseResult)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    check_seeds(property, strategy, case_seeds(), test);
}

/// [`check`] over the cases of the given seeds.
pub fn check_seeds<S>(property: &str, strategy: S, seeds: Vec<u64>, test: impl Fn(&S::Value, u64) -> CaseResult)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    for seed in seeds {
        let mut tree = tree(&strategy, seed);
        let CaseResult::Fail { message, replay_file } = test(&tree.current(), seed) else { continue };
        let mut minimal = (format!("{:?}", tree.current()), message, replay_file);
        let mut steps = 0;
        if tree.simplify() {
            while steps < MAX_SHRINK_STEPS {
                steps += 1;
                let failed = match test(&tree.current(), seed) {
                    CaseResult::Fail { message, replay_file } => {
                        minimal = (format!("{:?}", tree.current()), message, replay_file);
                        true
                    }
                    CaseResult::Pass => false,
                };
                let moved = if failed { tree.simplify() } else { tree.complicate() };
                if !moved {
                    break;
                }
            }
        }
        let (case, message, replay_file) = minimal;
        let replay = replay_file
            .map(|file| format!("\n  replay: cargo run --release -p sluice-sim -- replay {file}"))
            .unwrap_or_default();
        let current = std::thread::current();
        let test = current.name().filter(|name| *name != "main").unwrap_or(property);
        panic!(
            "property `{property}` failed for the case of seed {seed}, shrunk in {steps} steps to\n  {case}\n  {message}\n  \
             rerun:  SLUICE_SEED={seed} cargo test -p sluice-properties -- --exact {test}{replay}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_case_seed_draws_the_same_case_every_time_and_seeds_differ() {
        let strategy = (0u32..1000, any::<bool>());
        assert_eq!(tree(&strategy, 7).current(), tree(&strategy, 7).current());
        let cases: std::collections::BTreeSet<_> = (0..50).map(|seed| tree(&strategy, seed).current()).collect();
        assert!(cases.len() > 40, "{cases:?}");
        if std::env::var_os("SLUICE_SEED").is_none() {
            assert_eq!(case_seeds().len() as u64, env_number("PROPTEST_CASES").unwrap_or(64));
        }
    }

    #[test]
    fn a_failing_case_is_shrunk_and_reported_with_the_commands_that_rerun_it() {
        let outcome = std::panic::catch_unwind(|| {
            check_seeds("demo", 0u32..1_000_000, (0..64).collect(), |value, _| {
                if *value >= 100 {
                    CaseResult::Fail {
                        message: format!("{value} is too big"),
                        replay_file: Some("failures/x.yaml".into()),
                    }
                } else {
                    CaseResult::Pass
                }
            })
        });
        let payload = outcome.expect_err("some case of 64 exceeds 100");
        let message = payload.downcast_ref::<String>().expect("a formatted panic");
        assert!(message.contains("shrunk in") && message.contains("\n  100\n  100 is too big"), "{message}");
        assert!(message.contains("rerun:  SLUICE_SEED="), "{message}");
        assert!(message.contains("replay failures/x.yaml"), "{message}");
    }
}
