//! `sluice explore`: a short campaign is a function of its plan (not of threads), resumes from
//! its directory exactly, and refuses a directory that is not its own.

use sluice_sim::explore::{self, Plan, Progress, State, store};
use sluice_sim::scenario::Scenario;

use super::support::load;

fn plan(runs: u64, threads: usize) -> Plan {
    let mut scenario = load("scenarios/wordcount-failover.yaml");
    // A small job keeps the campaign short; its faults still land in it.
    scenario.params.insert("words".to_string(), 2000u64.into());
    Plan { scenario, campaign_seed: 7, shard: (1, 1), guided: true, runs, threads, until_failure: false }
}

fn campaign(plan: &Plan, state: State, dir: Option<&std::path::Path>) -> State {
    let mut no_failure = |_: u64, _: &Scenario, _: &sluice_sim::seed::SeedResult| None;
    let mut progress = |event: Progress| match (event, dir) {
        (Progress::Batch(state), Some(dir)) => store::save(dir, plan, state),
        _ => Ok(()),
    };
    explore::run(plan, state, &mut no_failure, &mut progress).unwrap_or_else(|error| panic!("{error}"))
}

#[test]
fn a_campaign_is_deterministic_resumable_and_guided() {
    let whole = campaign(&plan(24, 2), State::default(), None);
    assert_eq!(whole.cells.len(), 24);
    assert_eq!(whole, campaign(&plan(24, 1), State::default(), None), "the thread count changed the campaign");
    let mutations: std::collections::BTreeSet<_> = whole.corpus.entries.iter().map(|entry| entry.mutation).collect();
    assert!(mutations.len() >= 2, "past the warm-up, kept genomes are mutants too: {mutations:?}");
    assert!(whole.found.is_empty(), "{:?}", whole.found);

    let dir = tempfile::tempdir().expect("a temporary directory");
    let half = campaign(&plan(12, 2), store::load(dir.path(), &plan(12, 2)).expect("a new campaign"), Some(dir.path()));
    assert_eq!(half.cells.len(), 12);
    let resumed = store::load(dir.path(), &plan(24, 2)).expect("its own campaign resumes");
    assert_eq!(campaign(&plan(24, 2), resumed, Some(dir.path())), whole, "resuming changed the campaign");
}

#[test]
fn a_campaign_directory_not_of_this_campaign_is_refused_naming_its_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let ours = plan(4, 2);
    store::save(dir.path(), &ours, &State::default()).expect("saved");
    let file = dir.path().join(store::FILE).display().to_string();
    let other_seed = Plan { campaign_seed: 8, ..ours.clone() };
    let blind = Plan { guided: false, ..ours.clone() };
    let mut other_scenario = ours.clone();
    other_scenario.scenario.params.insert("words".to_string(), 3000u64.into());
    for (plan, what) in [(other_seed, "campaign seed"), (blind, "kind"), (other_scenario, "scenario")] {
        let error = store::load(dir.path(), &plan).expect_err(what);
        assert!(error.starts_with(&file) && error.contains(what), "{what}: {error}");
    }
    let text = std::fs::read_to_string(dir.path().join(store::FILE)).expect("readable");
    std::fs::write(dir.path().join(store::FILE), &text[..text.len() / 2]).expect("writable");
    let error = store::load(dir.path(), &ours).expect_err("truncated");
    assert!(error.starts_with(&file) && error.contains("not a whole campaign file"), "{error}");
    let missing = dir.path().join("nothing-here");
    let error = store::resume(&missing, &ours).expect_err("a missing campaign");
    assert!(
        error.starts_with(&missing.join(store::FILE).display().to_string()) && error.contains("no campaign to resume"),
        "{error}"
    );
    let stranger = tempfile::tempdir().expect("a temporary directory");
    std::fs::write(stranger.path().join("notes.txt"), "mine").expect("writable");
    let error = store::load(stranger.path(), &ours).expect_err("a directory of something else");
    assert!(error.contains("not a campaign directory"), "{error}");
}

#[test]
fn the_shards_of_a_campaign_merge_and_a_missing_one_makes_the_merge_fail() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let shards: Vec<std::path::PathBuf> = (1..=2).map(|index| dir.path().join(format!("shard-{index}"))).collect();
    for (index, shard_dir) in shards.iter().enumerate() {
        let plan = Plan { shard: (index as u64 + 1, 2), ..plan(8, 1) };
        let state = campaign(&plan, State::default(), Some(shard_dir));
        assert_eq!(state.cells.len(), 8);
    }
    let paths: Vec<&str> = shards.iter().map(|path| path.to_str().expect("a UTF-8 path")).collect();
    let (status, stdout, stderr) = super::support::sluice(&["merge", paths[0], paths[1]]);
    assert_eq!(status, 0, "{stdout}{stderr}");
    assert!(stdout.contains("campaign `wordcount-failover` (guided): 2 of 2 shards, 16 runs,"), "{stdout}");
    let (status, _, stderr) = super::support::sluice(&["merge", paths[1]]);
    assert_eq!(status, 2, "a missing shard: {stderr}");
    assert!(stderr.contains("shards missing: 1/2"), "{stderr}");
    let (status, _, stderr) = super::support::sluice(&["merge", paths[0], paths[0]]);
    assert_eq!(status, 2);
    assert!(stderr.contains("shard 1/2 is given twice"), "{stderr}");
}

/// A genome names the fault points it enables; a fresh one names its seed's swarm, and runs as
/// the blind seed does (the same trace), so that guided and blind campaigns start alike.
#[test]
fn a_genome_names_its_fault_points_and_a_fresh_one_runs_as_its_seed() {
    let mut scenario = load("scenarios/wordcount-buggify.yaml");
    scenario.params.insert("words".to_string(), 5000u64.into());
    scenario.modes = vec![sluice_engine::graph::ExecutionMode::Batch];
    let seed = 5;
    let policy = scenario.buggify.policy(seed).expect("a buggify scenario");
    let genome = sluice_harness::search::mutate::Genome {
        buggify: Some(policy.enabled().to_vec()),
        ..sluice_harness::search::mutate::Genome::new(seed, scenario.schedule(seed))
    };
    let plan = Plan { scenario: scenario.clone(), ..plan(1, 1) };
    let explicit = plan.scenario_of(&genome);
    assert!(matches!(explicit.buggify, sluice_harness::faults::buggify::Buggify::Points(_)));
    let hash = |scenario: &Scenario| {
        let result =
            sluice_sim::seed::run_seed(scenario, seed, &scenario.modes, sluice_sim::seed::DeterminismCheck::Off);
        result.runs.iter().map(|(report, _)| report.trace_hash).collect::<Vec<_>>()
    };
    assert_eq!(hash(&explicit), hash(&scenario), "the seed's own points, named, run as its swarm");
}
