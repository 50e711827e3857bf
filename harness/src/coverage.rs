//! What a run covered: the engine's coverage marks it reached ([`Mark`]), how often, and which
//! fault kinds were active when it reached them.
//!
//! A run installs a [`CoverageRecorder`] on its simulation thread; the trace log feeds it the
//! faults injected and healed, so each hit is counted against the fault kinds active at that
//! moment (a fault with a duration is active until it heals; a one-shot fault, such as a crash
//! without restart or a lost partition, for the rest of the run). Sweeps merge the runs' coverage
//! into the table of marks × fault kinds, and the marks never hit.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use sluice_engine::cover::{CoverageSink, Mark};

/// The name a hit is counted under when no fault was active.
pub const NO_FAULT: &str = "none";

/// How one run reached one mark.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkHits {
    /// Times it was reached.
    pub hits: u64,
    /// Hits by the fault kinds active at the time ([`NO_FAULT`] when none was).
    pub fault_kinds: BTreeMap<String, u64>,
}

/// The marks one run reached.
pub type Coverage = BTreeMap<Mark, MarkHits>;

#[derive(Default)]
struct State {
    /// Faults injected and not yet healed, by their index in the schedule.
    active: BTreeMap<usize, String>,
    coverage: Coverage,
}

/// Collects one run's coverage; clones share it.
#[derive(Clone, Default)]
pub struct CoverageRecorder {
    state: Arc<Mutex<State>>,
    /// Woken at every hit, for faults triggered by a mark.
    hit: Arc<tokio::sync::Notify>,
}

impl CoverageRecorder {
    /// Fault `index` of kind `kind` was injected.
    pub fn fault_injected(&self, index: usize, kind: &str) {
        self.lock().active.insert(index, kind.to_string());
    }

    /// Fault `index` healed.
    pub fn fault_healed(&self, index: usize) {
        self.lock().active.remove(&index);
    }

    /// What the run reached so far.
    pub fn coverage(&self) -> Coverage {
        self.lock().coverage.clone()
    }

    /// Returns once `mark` was reached `nth` times (at once if it already was): right after
    /// the hit, before the engine code that hit it goes on past its next await.
    pub async fn wait_for_hits(&self, mark: Mark, nth: u64) {
        loop {
            let hit = self.hit.notified();
            tokio::pin!(hit);
            hit.as_mut().enable();
            if self.lock().coverage.get(&mark).is_some_and(|hits| hits.hits >= nth) {
                return;
            }
            hit.await;
        }
    }

    /// Sends this thread's hits here until the guard is dropped.
    pub fn install(&self) -> sluice_engine::cover::Installed {
        sluice_engine::cover::install(Rc::new(self.clone()))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("coverage lock")
    }
}

impl CoverageSink for CoverageRecorder {
    fn hit(&self, mark: Mark) {
        let mut state = self.lock();
        let kinds: BTreeSet<String> = state.active.values().cloned().collect();
        let entry = state.coverage.entry(mark).or_default();
        entry.hits += 1;
        if kinds.is_empty() {
            *entry.fault_kinds.entry(NO_FAULT.to_string()).or_default() += 1;
        }
        for kind in kinds {
            *entry.fault_kinds.entry(kind).or_default() += 1;
        }
        drop(state);
        self.hit.notify_waiters();
    }
}

/// Coverage summed over many runs: per mark, the runs that reached it and, per fault kind, the
/// runs that reached it while that kind was active.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageTable {
    /// Runs counted.
    pub runs: u64,
    /// Per mark reached.
    pub marks: BTreeMap<Mark, MarkRuns>,
}

/// One mark's row of a [`CoverageTable`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MarkRuns {
    /// Runs that reached it.
    pub runs: u64,
    /// Hits over all runs.
    pub hits: u64,
    /// Runs that reached it with each fault kind active.
    pub fault_kinds: BTreeMap<String, u64>,
}

impl CoverageTable {
    /// Counts one run.
    pub fn add(&mut self, coverage: &Coverage) {
        self.runs += 1;
        for (mark, hits) in coverage {
            let row = self.marks.entry(*mark).or_default();
            row.runs += 1;
            row.hits += hits.hits;
            for kind in hits.fault_kinds.keys() {
                *row.fault_kinds.entry(kind.clone()).or_default() += 1;
            }
        }
    }

    /// Adds another table (of another shard).
    pub fn merge(&mut self, other: &CoverageTable) {
        self.runs += other.runs;
        for (mark, theirs) in &other.marks {
            let row = self.marks.entry(*mark).or_default();
            row.runs += theirs.runs;
            row.hits += theirs.hits;
            for (kind, runs) in &theirs.fault_kinds {
                *row.fault_kinds.entry(kind.clone()).or_default() += runs;
            }
        }
    }

    /// Declared marks no run reached, in declaration order.
    pub fn never_hit(&self) -> Vec<Mark> {
        Mark::ALL.iter().copied().filter(|mark| !self.marks.contains_key(mark)).collect()
    }

    /// The table as text: one row per declared mark (never-hit ones too), one column per fault
    /// kind that was active at some hit, cells counting runs; then the marks never hit.
    pub fn render(&self) -> String {
        let kinds: BTreeSet<&str> =
            self.marks.values().flat_map(|row| row.fault_kinds.keys().map(String::as_str)).collect();
        let mut kinds: Vec<&str> = kinds.into_iter().filter(|kind| *kind != NO_FAULT).collect();
        kinds.push(NO_FAULT);
        let width = Mark::ALL.iter().map(|mark| mark.name().len()).max().unwrap_or(0);
        let mut text = format!(
            "  coverage marks ({} runs; a cell counts the runs that reached the mark with that fault kind active)\n",
            self.runs
        );
        let legend: Vec<String> =
            kinds.iter().enumerate().map(|(index, kind)| format!("[{}] {kind}", index + 1)).collect();
        text.push_str(&format!("  fault kinds: {}\n", legend.join("  ")));
        text.push_str(&format!("  {:<width$} {:>6} {:>8}", "mark", "runs", "hits"));
        for index in 1..=kinds.len() {
            text.push_str(&format!(" {:>6}", format!("[{index}]")));
        }
        text.push('\n');
        for mark in Mark::ALL {
            let row = self.marks.get(mark).cloned().unwrap_or_default();
            text.push_str(&format!("  {:<width$} {:>6} {:>8}", mark.name(), row.runs, row.hits));
            for kind in &kinds {
                let cell = row.fault_kinds.get(*kind).map_or_else(|| "-".to_string(), ToString::to_string);
                text.push_str(&format!(" {cell:>6}"));
            }
            text.push('\n');
        }
        let never: Vec<&str> = self.never_hit().into_iter().map(Mark::name).collect();
        match never.len() {
            0 => text.push_str("  every mark was hit\n"),
            count => text.push_str(&format!("  never hit ({count} of {}): {}\n", Mark::ALL.len(), never.join(", "))),
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use sluice_engine::cover;

    use super::*;

    #[test]
    fn hits_count_against_the_faults_active_at_the_time() {
        let recorder = CoverageRecorder::default();
        let _installed = recorder.install();
        cover!(CommitRetried);
        recorder.fault_injected(0, "partition");
        recorder.fault_injected(1, "tm-crash");
        cover!(CommitRetried);
        recorder.fault_healed(0);
        cover!(CommitRetried);
        cover!(SortBufferSpilled);
        let coverage = recorder.coverage();
        let commit = &coverage[&Mark::CommitRetried];
        assert_eq!(commit.hits, 3);
        let expected =
            BTreeMap::from([("none".to_string(), 1), ("partition".to_string(), 1), ("tm-crash".to_string(), 2)]);
        assert_eq!(commit.fault_kinds, expected);
        assert_eq!(coverage[&Mark::SortBufferSpilled].fault_kinds, BTreeMap::from([("tm-crash".to_string(), 1)]));
    }

    #[test]
    fn a_table_counts_runs_merges_and_names_the_marks_never_hit() {
        let run = |mark: Mark, kind: &str| {
            let hits = MarkHits { hits: 2, fault_kinds: BTreeMap::from([(kind.to_string(), 2)]) };
            Coverage::from([(mark, hits)])
        };
        let (mut left, mut right) = (CoverageTable::default(), CoverageTable::default());
        left.add(&run(Mark::CommitRetried, "tm-crash"));
        left.add(&Coverage::new());
        right.add(&run(Mark::CommitRetried, NO_FAULT));
        left.merge(&right);
        assert_eq!(left.runs, 3);
        let row = &left.marks[&Mark::CommitRetried];
        assert_eq!((row.runs, row.hits), (2, 4));
        assert_eq!(row.fault_kinds, BTreeMap::from([("none".to_string(), 1), ("tm-crash".to_string(), 1)]));
        assert_eq!(left.never_hit().len(), Mark::ALL.len() - 1);
        let text = left.render();
        assert!(text.contains("[1] tm-crash  [2] none"), "{text}");
        assert!(
            text.lines().any(|line| line.trim_start().starts_with("commit-retried") && line.ends_with("1      1")),
            "{text}"
        );
        assert!(text.contains(&format!("never hit ({} of {})", Mark::ALL.len() - 1, Mark::ALL.len())), "{text}");
    }
}
