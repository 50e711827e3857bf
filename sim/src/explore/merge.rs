//! The shards of a campaign joined: `sluice explore --shard K/N --corpus DIR` on N machines,
//! then `sluice merge DIR…` over their directories, as a sweep's shards are merged.
//!
//! All must be shards of one campaign (the same scenario by fingerprint, build, campaign seed,
//! kind and shard count, each shard once); a missing shard is reported, as a sweep's merge
//! reports one. Cells reached by several shards count the runs of each; failures keep their
//! shard.

use std::collections::{BTreeMap, BTreeSet};

use super::Found;
use super::store::Saved;

/// One shard's campaign, as read from its directory.
pub struct ShardCampaign {
    /// Where it was read from (for errors).
    pub origin: String,
    /// What it holds.
    pub saved: Saved,
}

/// The shards joined.
#[derive(Debug, PartialEq, Eq)]
pub struct Merged {
    /// The scenario.
    pub scenario: String,
    /// Guided or blind.
    pub guided: bool,
    /// Shards merged, and the shard count.
    pub shards: (usize, u32),
    /// Shards missing (their index, from 1).
    pub missing: Vec<u32>,
    /// Runs, all shards.
    pub runs: u64,
    /// Per cell, the runs of all shards that reached it.
    pub cell_runs: BTreeMap<String, u64>,
    /// Genomes kept, all shards.
    pub kept: usize,
    /// Failures, with the shard (from 1) that found each.
    pub found: Vec<(u32, Found)>,
}

/// Joins `campaigns`; an error names the directory that does not belong.
pub fn merge(campaigns: &[ShardCampaign]) -> Result<Merged, String> {
    let first = campaigns.first().ok_or("no campaign to merge")?;
    let (_, count) = parse_shard(&first.saved.shard, &first.origin)?;
    let mut seen = BTreeSet::new();
    let mut merged = Merged {
        scenario: first.saved.scenario.clone(),
        guided: first.saved.guided,
        shards: (campaigns.len(), count),
        missing: Vec::new(),
        runs: 0,
        cell_runs: BTreeMap::new(),
        kept: 0,
        found: Vec::new(),
    };
    for campaign in campaigns {
        let saved = &campaign.saved;
        let differs = |what: &str, theirs: String, ours: String| {
            Err(format!("{}: a campaign of {what} `{theirs}`, not `{ours}` as {}", campaign.origin, first.origin))
        };
        if saved.fingerprint != first.saved.fingerprint {
            return differs("scenario", saved.fingerprint.clone(), first.saved.fingerprint.clone());
        }
        if saved.git_revision != first.saved.git_revision {
            return differs("build", saved.git_revision.clone(), first.saved.git_revision.clone());
        }
        if saved.campaign_seed != first.saved.campaign_seed {
            return differs("campaign seed", saved.campaign_seed.to_string(), first.saved.campaign_seed.to_string());
        }
        if saved.guided != first.saved.guided {
            let kind = |guided: bool| if guided { "guided" } else { "blind" }.to_string();
            return differs("kind", kind(saved.guided), kind(first.saved.guided));
        }
        let (index, shards) = parse_shard(&saved.shard, &campaign.origin)?;
        if shards != count {
            return differs("shard count", shards.to_string(), count.to_string());
        }
        if !seen.insert(index) {
            return Err(format!("{}: shard {index}/{count} is given twice", campaign.origin));
        }
        merged.runs += saved.state.cells.len() as u64;
        for (cell, runs) in &saved.state.cell_runs {
            *merged.cell_runs.entry(cell.clone()).or_default() += runs;
        }
        merged.kept += saved.state.corpus.entries.len();
        merged.found.extend(saved.state.found.iter().map(|found| (index, found.clone())));
    }
    merged.missing = (1..=count).filter(|index| !seen.contains(index)).collect();
    merged.found.sort_by_key(|(shard, found)| (*shard, found.run));
    Ok(merged)
}

/// `K/N` as saved.
fn parse_shard(text: &str, origin: &str) -> Result<(u32, u32), String> {
    let parsed = text.split_once('/').and_then(|(index, count)| Some((index.parse().ok()?, count.parse().ok()?)));
    parsed
        .filter(|(index, count)| (1..=*count).contains(index))
        .ok_or_else(|| format!("{origin}: shard `{text}` is not K/N with 1 <= K <= N"))
}

#[cfg(test)]
mod tests {
    use super::super::State;
    use super::*;
    use sluice_harness::search::mutate::Mutation;

    fn shard(index: u32, count: u32, cells: &[(&str, u64)], failures: u64) -> ShardCampaign {
        let found = (0..failures)
            .map(|run| Found {
                run: run + 1,
                seed: u64::from(index) * 100 + run,
                checks: vec!["exactly-once".into()],
                mutation: Mutation::Fresh,
                replay_file: None,
            })
            .collect();
        let cell_runs = cells.iter().map(|(cell, runs)| (cell.to_string(), *runs)).collect();
        let state = State { cells: vec![1; 10], cell_runs, found, ..State::default() };
        ShardCampaign {
            origin: format!("shard-{index}"),
            saved: Saved::for_test("wordcount-failover", "fp", 1, &format!("{index}/{count}"), true, state),
        }
    }

    #[test]
    fn shards_join_into_one_campaign_and_a_missing_one_is_named() {
        let merged = merge(&[shard(2, 3, &[("a", 2), ("b", 1)], 1), shard(1, 3, &[("a", 3)], 0)]).unwrap();
        assert_eq!(merged.runs, 20);
        assert_eq!(merged.cell_runs, BTreeMap::from([("a".to_string(), 5), ("b".to_string(), 1)]));
        assert_eq!(merged.missing, vec![3]);
        assert_eq!(merged.found.len(), 1);
        assert_eq!(merged.found[0].0, 2, "a failure keeps its shard");
    }

    #[test]
    fn shards_of_other_campaigns_or_twice_the_same_are_refused() {
        let twice = merge(&[shard(1, 2, &[], 0), shard(1, 2, &[], 0)]).unwrap_err();
        assert!(twice.contains("shard 1/2 is given twice"), "{twice}");
        let mut other = shard(2, 2, &[], 0);
        other.saved.campaign_seed = 7;
        let error = merge(&[shard(1, 2, &[], 0), other]).unwrap_err();
        assert!(error.contains("shard-2: a campaign of campaign seed `7`, not `1` as shard-1"), "{error}");
        let error = merge(&[shard(1, 2, &[], 0), shard(2, 3, &[], 0)]).unwrap_err();
        assert!(error.contains("shard count `3`, not `2`"), "{error}");
    }
}
