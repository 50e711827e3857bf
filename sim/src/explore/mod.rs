//! `sluice explore`: a coverage-guided campaign over a scenario's fault schedules.
//!
//! Each run of a campaign is a [`Genome`] (a seed and an explicit schedule) run in the
//! scenario's modes and judged like any seed. Its features ([`features`]) go to the
//! [`Corpus`], which keeps it if it reached something new. The next genome is, one time in
//! [`FRESH_ONE_IN`] (and for the first [`WARMUP`] runs), a fresh seed with the scenario's own
//! random schedule, the blind sweep's next seed; otherwise a mutant of a kept genome drawn by
//! rarity ([`mutate`]). A blind campaign (`--blind`) runs only fresh seeds: a sweep with the
//! same accounting, the baseline a guided campaign is compared with.
//!
//! **Determinism.** Genomes are made in batches of [`BATCH`] from the corpus as it stood before
//! the batch, each from its own stream (`explore/<run>` of the campaign seed), and results are
//! added in run order; threads only run the batch. So a campaign is a function of the scenario,
//! the campaign seed, the shard and the build, whatever the machine or thread count, and
//! resuming from a corpus directory continues it exactly (see [`store`]). A shard `K/N` is an
//! independent campaign under its own stream and its own fresh seeds (the seeds `≡ K−1 mod N`).

pub mod merge;
pub mod plot;
pub mod store;

use sluice_engine::cover::Mark;
use sluice_engine::graph::ExecutionMode;
use sluice_engine::prng::Prng;
use sluice_harness::faults::buggify::Buggify;
use sluice_harness::faults::random::Topology;
use sluice_harness::scenario::Scenario;
use sluice_harness::search::corpus::Corpus;
use sluice_harness::search::features::{Feature, cells, features};
use sluice_harness::search::mutate::{Genome, Mutation, Space, aim, branch, mutate};

use crate::seed::{DeterminismCheck, SeedOutcome, SeedResult, run_seed};

/// Runs before any mutation: fresh seeds, so that the corpus starts varied.
pub const WARMUP: u64 = 8;

/// One guided run in this many is a fresh seed: a control group, and the guarantee random
/// testing gives (Majumdar & Nikšić) kept.
pub const FRESH_ONE_IN: u64 = 4;

/// Genomes made from one state of the corpus, run concurrently.
pub const BATCH: u64 = 4;

/// One mutant in this many also runs under the next fresh seed.
pub const RESEED_ONE_IN: u64 = 2;

/// One guided mutant in this many is aimed at an unreached cell, while any is left to aim at.
pub const AIM_ONE_IN: u64 = 3;

/// One guided mutant in this many (of those not aimed) branches at a rare mark a kept genome
/// reached ([`branch`]).
pub const BRANCH_ONE_IN: u64 = 3;

/// Branches owed to a mark once it is rare (reached by at most one run in [`RARE_ONE_IN`]):
/// while any is owed, one guided mutant in two branches there, the rarest mark first
/// (moonpool's timelines per mark, spent as soon as the mark is found).
pub const BRANCH_BUDGET: u32 = 8;

/// A mark reached by at most one run in this many is rare.
pub const RARE_ONE_IN: u64 = 20;

/// Mutants aimed at one cell before it is taken for unreachable (Legolas' budget per site).
pub const AIM_BUDGET: u32 = 6;

/// What a campaign is.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The scenario, with random faults (their spec is what mutations draw from).
    pub scenario: Scenario,
    /// The campaign's seed.
    pub campaign_seed: u64,
    /// `(K, N)`: the K-th of N shards (1-based).
    pub shard: (u64, u64),
    /// Guided, or blind (fresh seeds only).
    pub guided: bool,
    /// Runs to do in all (a resumed campaign counts the runs it had done).
    pub runs: u64,
    /// Threads running a batch.
    pub threads: usize,
    /// Stop after the batch that found the first failure.
    pub until_failure: bool,
}

/// A failure found by a campaign.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Found {
    /// The run that found it, from 1.
    pub run: u64,
    /// The genome's seed.
    pub seed: u64,
    /// The checks that failed, or `crashed`.
    pub checks: Vec<String>,
    /// How the genome was made.
    pub mutation: Mutation,
    /// Its replay file, if one could be written.
    pub replay_file: Option<String>,
}

/// Where a campaign stands: everything a resumed one needs, and what it reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct State {
    /// The corpus.
    pub corpus: Corpus,
    /// Cells reached after each run: `cells[i]` after run `i + 1`.
    pub cells: Vec<u32>,
    /// Per cell (`cell mark × kind`), the runs that reached it.
    pub cell_runs: std::collections::BTreeMap<String, u64>,
    /// Per cell, the first run (from 1) that reached it.
    #[serde(default)]
    pub cell_first: std::collections::BTreeMap<String, u64>,
    /// Failures, in run order.
    pub found: Vec<Found>,
    /// Fresh seeds used so far.
    pub fresh: u64,
    /// Per target, the mutants aimed at it: an unreached cell (`cell M × K`), or a mark
    /// branched at (`mark M`).
    #[serde(default)]
    pub aimed: std::collections::BTreeMap<String, u32>,
}

impl State {
    /// Cells a mutant may aim at: a mark some run reached × a kind the scenario draws (or
    /// `none`) that no run reached it with, not yet aimed at [`AIM_BUDGET`] times; in order.
    pub fn frontier(&self, kinds: &[String]) -> Vec<(String, String)> {
        let marks: std::collections::BTreeSet<&str> = self.cell_runs.keys().filter_map(|cell| mark_of(cell)).collect();
        let mut frontier = Vec::new();
        for mark in marks {
            for kind in kinds {
                let cell = format!("cell {mark} × {kind}");
                if !self.cell_runs.contains_key(&cell) && self.aimed.get(&cell).copied().unwrap_or(0) < AIM_BUDGET {
                    frontier.push((mark.to_string(), kind.clone()));
                }
            }
        }
        frontier
    }
}

/// The mark of a cell's text (`cell M × K`).
fn mark_of(cell: &str) -> Option<&str> {
    cell.strip_prefix("cell ")?.split(" × ").next()
}

impl State {
    /// Where to branch ([`branch`]): a mark drawn with odds by its rarity (one over the runs
    /// that reached it), a kept genome that reached it, and how often that genome's runs hit it
    /// (the least of its hit-count buckets); `None` while nothing is kept.
    fn branch_point<'a>(&'a self, prng: &mut Prng) -> Option<(&'a Genome, Mark, u64)> {
        let marks: Vec<(&str, u64)> =
            self.mark_runs().into_iter().map(|(mark, runs)| (mark, 1_000_000 / runs.max(1))).collect();
        let mut ticket = prng.below(marks.iter().map(|(_, weight)| weight).sum::<u64>().max(1));
        let (name, _) = *marks.iter().find(|(_, weight)| {
            let inside = ticket < *weight;
            ticket = ticket.saturating_sub(*weight);
            inside
        })?;
        self.branch_at(name, prng)
    }

    /// The rarest mark still owed branches ([`BRANCH_BUDGET`]), a kept genome that reached it
    /// and its hits; `None` when none is owed.
    fn owed_branch_point<'a>(&'a self, prng: &mut Prng) -> Option<(&'a Genome, Mark, u64)> {
        let runs = self.corpus.runs;
        let owed = self.mark_runs().into_iter().filter(|(mark, reached)| {
            reached * RARE_ONE_IN <= runs
                && self.aimed.get(&format!("mark {mark}")).copied().unwrap_or(0) < BRANCH_BUDGET
        });
        let (name, _) = owed.min_by_key(|(mark, reached)| (*reached, *mark))?;
        self.branch_at(name, prng)
    }

    /// Per mark reached, the runs that reached it (the most of its cells').
    fn mark_runs(&self) -> std::collections::BTreeMap<&str, u64> {
        let mut runs: std::collections::BTreeMap<&str, u64> = std::collections::BTreeMap::new();
        for (cell, reached) in &self.cell_runs {
            let Some(mark) = mark_of(cell) else { continue };
            let most = runs.entry(mark).or_insert(0);
            *most = (*most).max(*reached);
        }
        runs
    }

    /// A kept genome that reached mark `name`, drawn, and how often its runs hit it.
    fn branch_at<'a>(&'a self, name: &str, prng: &mut Prng) -> Option<(&'a Genome, Mark, u64)> {
        let mark: Mark = name.parse().ok()?;
        let count = format!("count {name} ≥");
        let parents: Vec<(&Genome, u64)> = (self.corpus.entries.iter())
            .filter_map(|entry| {
                let buckets = entry.features.iter().filter_map(|feature| feature.strip_prefix(&count));
                let hits = buckets.filter_map(|rest| rest.split(' ').next()?.parse::<u64>().ok()).min()?;
                Some((&entry.genome, hits))
            })
            .collect();
        (!parents.is_empty()).then(|| {
            let (parent, hits) = *prng.pick(&parents);
            (parent, mark, hits)
        })
    }
}

impl Plan {
    /// The fresh seed number `index` of this shard: every N-th seed from the scenario's start,
    /// plus a million per campaign seed after the first (campaign seed 1's blind campaign is a
    /// sweep of the scenario's own seeds).
    fn fresh_seed(&self, index: u64) -> u64 {
        let (shard, shards) = self.shard;
        let start = self.scenario.seeds.start.wrapping_add(self.campaign_seed.wrapping_sub(1).wrapping_mul(1_000_000));
        start.wrapping_add(index.wrapping_mul(shards)).wrapping_add(shard - 1)
    }

    /// The stream of run `run` (from 1).
    fn stream(&self, run: u64) -> Prng {
        Prng::fork(self.campaign_seed, &format!("explore/{}/{}/{run}", self.shard.0, self.shard.1))
    }

    /// The scenario that runs a genome: its schedule and fault points explicit, its seed alone.
    pub fn scenario_of(&self, genome: &Genome) -> Scenario {
        let buggify = match &genome.buggify {
            Some(points) => Buggify::Points(points.clone()),
            None => self.scenario.buggify.clone(),
        };
        Scenario {
            faults: genome.faults.clone(),
            buggify,
            random_faults: None,
            seeds: genome.seed..genome.seed + 1,
            ..self.scenario.clone()
        }
    }

    /// The genome of run `run`, from the corpus as it stood before its batch, and the cell it
    /// was aimed at, if it was.
    fn genome(
        &self,
        run: u64,
        state: &State,
        fresh: &mut u64,
        topology: &Topology,
    ) -> (Genome, Mutation, Option<String>) {
        let mut prng = self.stream(run);
        let guided = self.guided && run > WARMUP && !state.corpus.entries.is_empty() && prng.below(FRESH_ONE_IN) != 0;
        if !guided {
            let seed = self.fresh_seed(*fresh);
            *fresh += 1;
            let buggify = self.scenario.buggify.policy(seed).map(|policy| policy.enabled().to_vec());
            return (Genome { seed, faults: self.scenario.schedule(seed), buggify }, Mutation::Fresh, None);
        }
        let random = self.scenario.random_faults.as_ref().expect("internal: a guided campaign has random faults");
        let count = random.count as usize;
        let space = Space { spec: random, topology, max_faults: count + 2, min_faults: count.saturating_sub(1) };
        let mut kinds = random.kinds.clone();
        kinds.push(sluice_harness::coverage::NO_FAULT.to_string());
        if prng.below(2) == 0
            && let Some((parent, mark, hits)) = state.owed_branch_point(&mut prng)
        {
            let target = Some(format!("mark {mark}"));
            return (branch(parent, mark, hits, &mut prng, &space), Mutation::Branch, target);
        }
        let frontier = state.frontier(&kinds);
        if !frontier.is_empty() && prng.below(AIM_ONE_IN) == 0 {
            let (mark, kind) = prng.pick(&frontier).clone();
            let reaching = format!("cell {mark} × ");
            let parents: Vec<&Genome> = state
                .corpus
                .entries
                .iter()
                .filter(|entry| entry.features.iter().any(|feature| feature.starts_with(&reaching)))
                .map(|entry| &entry.genome)
                .collect();
            if let Some(parent) = (!parents.is_empty()).then(|| *prng.pick(&parents)) {
                let child = self.maybe_reseed(aim(parent, &kind, &mut prng, &space), &mut prng, fresh);
                return (child, Mutation::Aim, Some(format!("cell {mark} × {kind}")));
            }
        }
        if prng.below(BRANCH_ONE_IN) == 0
            && let Some((parent, mark, hits)) = state.branch_point(&mut prng)
        {
            let target = Some(format!("mark {mark}"));
            return (branch(parent, mark, hits, &mut prng, &space), Mutation::Branch, target);
        }
        let parent = state.corpus.pick(&mut prng).expect("internal: a corpus with entries picks one").genome.clone();
        let other = state.corpus.pick(&mut prng).expect("internal: a corpus with entries picks one").genome.clone();
        // A reseed takes the next fresh seed; other mutations leave it unused.
        let (child, mutation) = mutate(&parent, &other, self.fresh_seed(*fresh), &mut prng, &space);
        if mutation == Mutation::Reseed {
            *fresh += 1;
            return (child, mutation, None);
        }
        (self.maybe_reseed(child, &mut prng, fresh), mutation, None)
    }

    /// One mutant in [`RESEED_ONE_IN`] also takes the next fresh seed: the schedule is what the
    /// search learned, and the scheduling a seed brings is a dimension of its own to vary
    /// (a blind sweep draws a new one every run).
    fn maybe_reseed(&self, mut child: Genome, prng: &mut Prng, fresh: &mut u64) -> Genome {
        if prng.below(RESEED_ONE_IN) == 0 {
            child.seed = self.fresh_seed(*fresh);
            *fresh += 1;
        }
        child
    }
}

/// What one run of a genome gave.
struct Ran {
    genome: Genome,
    mutation: Mutation,
    aimed: Option<String>,
    features: Vec<Feature>,
    cells: Vec<String>,
    result: SeedResult,
}

fn run_genome(plan: &Plan, (genome, mutation, aimed): (Genome, Mutation, Option<String>)) -> Ran {
    let scenario = plan.scenario_of(&genome);
    let modes: Vec<ExecutionMode> = scenario.modes.clone();
    let result = run_seed(&scenario, genome.seed, &modes, DeterminismCheck::Off);
    let mut all = std::collections::BTreeSet::new();
    let mut reached = std::collections::BTreeSet::new();
    for (report, _) in &result.runs {
        all.extend(features(report));
        reached.extend(cells(report).into_iter().map(|cell| cell.to_string()));
    }
    Ran { genome, mutation, aimed, features: all.into_iter().collect(), cells: reached.into_iter().collect(), result }
}

/// Runs a batch's genomes on up to `threads` threads; results in run order. The genomes of
/// `new_seeds` start first: they run their seed's pilot too, and a thread left with the longest
/// run last would keep the others waiting at the batch's end (longest first).
fn run_batch(
    plan: &Plan,
    genomes: Vec<(Genome, Mutation, Option<String>)>,
    new_seeds: &std::collections::BTreeSet<u64>,
) -> Vec<Ran> {
    let threads = plan.threads.max(1);
    let mut slots: Vec<Option<Ran>> = (0..genomes.len()).map(|_| None).collect();
    let mut work: Vec<_> = genomes.into_iter().enumerate().collect();
    // Popped from the end: the genomes with a new seed there.
    work.sort_by_key(|(index, (genome, _, _))| (new_seeds.contains(&genome.seed), std::cmp::Reverse(*index)));
    let work = std::sync::Mutex::new(work);
    let done = std::sync::Mutex::new(&mut slots);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let next = work.lock().expect("work lock").pop();
                    let Some((index, genome)) = next else { return };
                    let ran = run_genome(plan, genome);
                    done.lock().expect("results lock")[index] = Some(ran);
                }
            });
        }
    });
    slots.into_iter().map(|ran| ran.expect("internal: every genome of a batch ran")).collect()
}

/// What a campaign reports as it goes.
pub enum Progress<'a> {
    /// A run found a failure.
    Failed(&'a Found),
    /// A batch was added; the state after it.
    Batch(&'a State),
}

/// Runs a campaign from `state` until `plan.runs`; `on_failure` writes a failing seed's replay
/// file (returning its path), `progress` hears of each batch (and saves it, for a resumable one).
pub fn run(
    plan: &Plan,
    mut state: State,
    on_failure: &mut dyn FnMut(u64, &Scenario, &SeedResult) -> Option<String>,
    progress: &mut dyn FnMut(Progress) -> Result<(), String>,
) -> Result<State, String> {
    // What mutations draw nodes and vertices from: planned once, not per genome.
    let topology = plan.scenario.topology();
    while (state.cells.len() as u64) < plan.runs && (!plan.until_failure || state.found.is_empty()) {
        let first = state.cells.len() as u64 + 1;
        let last = (first + BATCH - 1).min(plan.runs);
        let mut fresh = state.fresh;
        let genomes: Vec<(Genome, Mutation, Option<String>)> =
            (first..=last).map(|run| plan.genome(run, &state, &mut fresh, &topology)).collect();
        let new_seeds: std::collections::BTreeSet<u64> =
            (state.fresh..fresh).map(|index| plan.fresh_seed(index)).collect();
        state.fresh = fresh;
        for (offset, ran) in run_batch(plan, genomes, &new_seeds).into_iter().enumerate() {
            add(plan, &mut state, first + offset as u64, ran, on_failure, progress)?;
        }
        progress(Progress::Batch(&state))?;
    }
    Ok(state)
}

fn add(
    plan: &Plan,
    state: &mut State,
    run: u64,
    ran: Ran,
    on_failure: &mut dyn FnMut(u64, &Scenario, &SeedResult) -> Option<String>,
    progress: &mut dyn FnMut(Progress) -> Result<(), String>,
) -> Result<(), String> {
    state.corpus.add(&ran.genome, ran.mutation, &ran.features);
    if let Some(target) = ran.aimed {
        *state.aimed.entry(target).or_insert(0) += 1;
    }
    for cell in ran.cells {
        *state.cell_runs.entry(cell.clone()).or_insert(0) += 1;
        state.cell_first.entry(cell).or_insert(run);
    }
    state.cells.push(state.cell_runs.len() as u32);
    if ran.result.outcome() == SeedOutcome::Failed {
        let mut checks: Vec<String> =
            ran.result.failures().into_iter().map(|(_, failure)| failure.check.to_string()).collect();
        checks.sort();
        checks.dedup();
        let replay_file = on_failure(run, &plan.scenario_of(&ran.genome), &ran.result);
        let found = Found { run, seed: ran.genome.seed, checks, mutation: ran.mutation, replay_file };
        progress(Progress::Failed(&found))?;
        state.found.push(found);
    }
    Ok(())
}

/// The run (from 1) by which a campaign had reached every one of `cells`; `None` if it never did.
pub fn runs_to_reach<'a>(state: &State, cells: impl IntoIterator<Item = &'a String>) -> Option<u64> {
    cells
        .into_iter()
        .map(|cell| state.cell_first.get(cell).copied())
        .try_fold(0, |latest, first| Some(latest.max(first?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state of 100 runs where `zombie-writer-fenced` was reached by 1 run, `commit-retried` by
    /// 2 and `sort-buffer-spilled` by 50, and one kept genome (seed 7) reached each, the second
    /// three times.
    fn state() -> State {
        let mut state = State::default();
        for (mark, runs) in [("zombie-writer-fenced", 1), ("commit-retried", 2), ("sort-buffer-spilled", 50)] {
            state.cell_runs.insert(format!("cell {mark} × tm-crash"), runs);
        }
        let features = [
            "cell commit-retried × tm-crash",
            "count commit-retried ≥3 batch",
            "count zombie-writer-fenced ≥1 batch",
            "count sort-buffer-spilled ≥1 batch",
        ];
        state.corpus.entries.push(sluice_harness::search::corpus::Entry {
            genome: Genome::new(7, Vec::new()),
            mutation: Mutation::Fresh,
            run: 1,
            new: Vec::new(),
            features: features.iter().map(ToString::to_string).collect(),
        });
        state.corpus.runs = 100;
        state
    }

    #[test]
    fn owed_branches_go_to_the_rarest_rare_mark_until_its_budget_is_spent() {
        let mut state = state();
        let mut prng = Prng::fork(1, "test");
        let (genome, mark, hits) = state.owed_branch_point(&mut prng).unwrap();
        assert_eq!((genome.seed, mark, hits), (7, Mark::ZombieWriterFenced, 1));
        state.aimed.insert("mark zombie-writer-fenced".into(), BRANCH_BUDGET);
        let (_, mark, hits) = state.owed_branch_point(&mut prng).unwrap();
        assert_eq!((mark, hits), (Mark::CommitRetried, 3), "the next rarest, with its parent's hit bucket");
        state.aimed.insert("mark commit-retried".into(), BRANCH_BUDGET);
        // `sort-buffer-spilled`, in half the runs, is not rare: nothing is owed.
        assert!(state.owed_branch_point(&mut prng).is_none());
        // A drawn branch point favours the rare marks over the common one (odds 1/1, 1/2, 1/50).
        let rare = (0..200)
            .filter(|_| state.branch_point(&mut prng).is_some_and(|(_, mark, _)| mark != Mark::SortBufferSpilled))
            .count();
        assert!(rare > 180, "{rare} of 200");
    }
}
