//! The corpus of a coverage-guided search: the genomes kept because they reached something no
//! run had, how often each feature was reached, and which kept genome to mutate next.
//!
//! A genome is kept when its runs reach a feature never reached before (moonpool's rule: check
//! for new bits before merging). Parents are drawn with energy by rarity: a kept genome's energy
//! is the sum over its features of one over the runs that reached each, so a genome holding a
//! feature few runs reach is mutated more (AFL's and Mallory's power schedules; directed swarm
//! testing's focus on unhit targets). The search's decisions depend only on the order results
//! are added in, which the campaign fixes, never on timing.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sluice_engine::prng::Prng;

use super::features::Feature;
use super::mutate::{Genome, Mutation};

/// A kept genome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The input.
    pub genome: Genome,
    /// How it was made.
    pub mutation: Mutation,
    /// The run (counted from the campaign's first, from 1) that kept it.
    pub run: u64,
    /// The features it reached first.
    pub new: Vec<String>,
    /// Every feature it reached.
    pub features: Vec<String>,
}

/// See the module doc.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Corpus {
    /// Kept genomes, in the order they were kept.
    pub entries: Vec<Entry>,
    /// Per feature, the runs that reached it.
    pub seen: BTreeMap<String, u64>,
    /// Runs counted.
    pub runs: u64,
}

impl Corpus {
    /// Counts one run's features; keeps the genome if any is new. Returns the new ones.
    pub fn add(&mut self, genome: &Genome, mutation: Mutation, features: &[Feature]) -> Vec<String> {
        self.runs += 1;
        let names: Vec<String> = features.iter().map(ToString::to_string).collect();
        let mut new = Vec::new();
        for name in &names {
            let count = self.seen.entry(name.clone()).or_insert(0);
            if *count == 0 {
                new.push(name.clone());
            }
            *count += 1;
        }
        if !new.is_empty() {
            let entry = Entry { genome: genome.clone(), mutation, run: self.runs, new: new.clone(), features: names };
            self.entries.push(entry);
        }
        new
    }

    /// A kept genome's energy: the rarity of what it reaches, in millionths (integers keep the
    /// draw exact and the same on every machine).
    pub fn energy(&self, entry: &Entry) -> u64 {
        entry
            .features
            .iter()
            .map(|name| 1_000_000 / self.seen.get(name).copied().unwrap_or(1).max(1))
            .sum::<u64>()
            .max(1)
    }

    /// A parent drawn with probability proportional to its energy; `None` while nothing is kept.
    pub fn pick(&self, prng: &mut Prng) -> Option<&Entry> {
        let energies: Vec<u64> = self.entries.iter().map(|entry| self.energy(entry)).collect();
        let total: u64 = energies.iter().sum();
        if total == 0 {
            return None;
        }
        let mut ticket = prng.below(total);
        for (entry, energy) in self.entries.iter().zip(energies) {
            if ticket < energy {
                return Some(entry);
            }
            ticket -= energy;
        }
        unreachable!("internal: a ticket below the total energy falls in some entry")
    }

    /// Features of one kind (by the text they start with, `cell `) reached so far.
    pub fn reached(&self, prefix: &str) -> usize {
        self.seen.keys().filter(|name| name.starts_with(prefix)).count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(mark: &str) -> Feature {
        Feature::Cell { mark: mark.into(), kind: "none".into() }
    }

    fn genome(seed: u64) -> Genome {
        Genome::new(seed, Vec::new())
    }

    #[test]
    fn a_genome_is_kept_only_for_a_feature_no_run_reached() {
        let mut corpus = Corpus::default();
        assert_eq!(corpus.add(&genome(1), Mutation::Fresh, &[cell("a")]), vec!["cell a × none"]);
        assert!(corpus.add(&genome(2), Mutation::Fresh, &[cell("a")]).is_empty());
        assert_eq!(corpus.add(&genome(3), Mutation::Insert, &[cell("a"), cell("b")]).len(), 1);
        assert_eq!(corpus.entries.len(), 2);
        assert_eq!((corpus.runs, corpus.seen["cell a × none"], corpus.reached("cell ")), (3, 3, 2));
    }

    #[test]
    fn rare_features_give_more_energy() {
        let mut corpus = Corpus::default();
        corpus.add(&genome(1), Mutation::Fresh, &[cell("common")]);
        corpus.add(&genome(2), Mutation::Fresh, &[cell("common"), cell("rare")]);
        for seed in 3..20 {
            corpus.add(&genome(seed), Mutation::Fresh, &[cell("common")]);
        }
        let mut prng = Prng::fork(1, "test");
        let picks = (0..1000).filter(|_| corpus.pick(&mut prng).unwrap().genome.seed == 2).count();
        // Energies 1/19 and 1/19 + 1: the genome with the rare feature is drawn about 95% of the time.
        assert!((900..=990).contains(&picks), "{picks}");
    }
}
