//! [`Summary`]: the counts of a sweep, folded from its [`SeedRecord`]s, and how they print; and
//! [`JsonLine`], one line of a sweep's `--format json` output (a record per seed, then the summary).
//!
//! A summary is a pure fold of records: the same records in any order give the same counts,
//! which is what lets `sluice merge` join the shards of a sweep into the summary of the whole.
//! A failure group counts its seeds and keeps the lowest [`SEEDS_SHOWN`] of them, sorted, and
//! the replay file of its fastest seed (ties go to the lowest seed): a summary's size does not
//! grow with the seeds, however many fail.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::record::{Outcome, SeedRecord};
use sluice_harness::coverage::CoverageTable;
use sluice_harness::faults::model::KIND_NAMES;
use sluice_harness::words::{counted, printable};

/// One line of a sweep's `--format json` output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum JsonLine {
    /// A seed.
    Seed(SeedRecord),
    /// The sweep's summary, last.
    Summary(Box<SweepSummary>),
}

/// The exit status of a sweep, a merge or a run: 0 passed (expected-unrecoverable runs
/// included), 1 a check failed, 2 a usage or input error, 3 a seed crashed.
pub mod status {
    /// Every seed passed or was expected-unrecoverable.
    pub const PASSED: i32 = 0;
    /// A check failed.
    pub const FAILED: i32 = 1;
    /// The command line or an input file was wrong; nothing ran.
    pub const USAGE: i32 = 2;
    /// A seed crashed its process (and possibly others failed).
    pub const CRASHED: i32 = 3;
}

/// How many seeds of a failure group a summary lists.
pub const SEEDS_SHOWN: usize = 10;

/// How many crashed seeds a summary says how they crashed.
pub const CRASHES_SHOWN: usize = 10;

/// Seeds of one fault kind, by outcome.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCounts {
    /// Seeds whose schedule had a fault of this kind.
    pub seeds: u64,
    /// Of those, passed.
    pub passed: u64,
    /// Failed.
    pub failed: u64,
    /// Expected-unrecoverable.
    pub unrecoverable: u64,
    /// Crashed.
    pub crashed: u64,
    /// Faults of this kind that never fired, over all runs.
    pub unfired: u64,
    /// Faults of this kind scheduled and fired, by mode (`streaming`, `batch`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub by_mode: BTreeMap<String, Fired>,
}

/// Faults scheduled in some runs, and how many of them fired.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fired {
    /// Scheduled, over all runs.
    pub scheduled: u64,
    /// Of those, fired.
    pub fired: u64,
}

impl Fired {
    fn add(&mut self, other: Fired) {
        self.scheduled += other.scheduled;
        self.fired += other.fired;
    }

    /// `99.4%`, or `-` when nothing was scheduled.
    pub fn percent(self) -> String {
        if self.scheduled == 0 {
            "-".to_string()
        } else {
            format!("{:.1}%", 100.0 * self.fired as f64 / self.scheduled as f64)
        }
    }
}

/// A map by seed as a list of `[seed, value]` pairs (see `Summary::crash_reasons`).
mod seed_pairs {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(map: &BTreeMap<u64, String>, serializer: S) -> Result<S::Ok, S::Error> {
        map.iter().collect::<Vec<_>>().serialize(serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<BTreeMap<u64, String>, D::Error> {
        Ok(Vec::<(u64, String)>::deserialize(deserializer)?.into_iter().collect())
    }
}

/// Seeds that failed one check (or crashed), and the replay file of the fastest.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureGroup {
    /// How many seeds.
    pub count: u64,
    /// The lowest [`SEEDS_SHOWN`] of them, sorted.
    pub seeds: Vec<u64>,
    /// The fastest seed's wall time, seed and replay file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastest: Option<(u64, u64, String)>,
}

impl FailureGroup {
    fn add(&mut self, seed: u64, wall_ms: u64, replay_file: Option<&String>) {
        self.count += 1;
        let at = self.seeds.partition_point(|known| *known < seed);
        self.seeds.insert(at, seed);
        self.seeds.truncate(SEEDS_SHOWN);
        if let Some(file) = replay_file
            && self.fastest.as_ref().is_none_or(|(wall, fastest, _)| (wall_ms, seed) < (*wall, *fastest))
        {
            self.fastest = Some((wall_ms, seed, file.clone()));
        }
    }
}

/// The counts of a sweep; see the module doc.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The scenario's name.
    pub scenario: String,
    /// Seeds counted.
    pub seeds: u64,
    /// Seeds that passed.
    pub passed: u64,
    /// Seeds that failed a check.
    pub failed: u64,
    /// Seeds that were expected-unrecoverable.
    pub expected_unrecoverable: u64,
    /// Seeds that crashed.
    pub crashed: u64,
    /// Per fault kind.
    pub kinds: BTreeMap<String, KindCounts>,
    /// Failed seeds by check.
    pub failures: BTreeMap<String, FailureGroup>,
    /// Crashed seeds.
    pub crashes: FailureGroup,
    /// How the lowest [`CRASHES_SHOWN`] crashed seeds crashed. Written as a list of
    /// `[seed, how]` pairs: the summary line flattens this struct, and serde reads a flattened
    /// map's keys back only as strings, so a map keyed by seed would not read back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty", with = "seed_pairs")]
    pub crash_reasons: BTreeMap<u64, String>,
    /// Simulated time over every run, in microseconds.
    pub simulated_us: u64,
    /// Wall time over every seed, in milliseconds (the sum, not the sweep's elapsed time).
    pub wall_ms: u64,
    /// The largest peak resident memory a worker reported, in KiB.
    pub worker_peak_rss_kb: u64,
    /// Which coverage marks the runs reached, with which fault kinds active.
    #[serde(default)]
    pub coverage: CoverageTable,
}

impl Summary {
    /// An empty summary of a scenario.
    pub fn new(scenario: &str) -> Summary {
        Summary { scenario: scenario.to_string(), ..Summary::default() }
    }

    /// Counts one seed.
    pub fn add(&mut self, record: &SeedRecord) {
        self.seeds += 1;
        *match record.outcome {
            Outcome::Passed => &mut self.passed,
            Outcome::Failed => &mut self.failed,
            Outcome::ExpectedUnrecoverable => &mut self.expected_unrecoverable,
            Outcome::Crashed => &mut self.crashed,
        } += 1;
        self.add_kinds(record);
        for run in &record.runs {
            self.coverage.add(&run.coverage);
        }
        self.simulated_us += record.simulated_us();
        self.wall_ms += record.wall_ms;
        self.worker_peak_rss_kb = self.worker_peak_rss_kb.max(record.worker_peak_rss_kb.unwrap_or(0));
        let mut checks: Vec<&str> = record.failures.iter().map(|failure| failure.check.as_str()).collect();
        checks.sort_unstable();
        checks.dedup();
        for check in checks {
            let group = self.failures.entry(check.to_string()).or_default();
            group.add(record.seed, record.wall_ms, record.replay_file.as_ref());
        }
        if record.outcome == Outcome::Crashed {
            self.crashes.add(record.seed, record.wall_ms, record.replay_file.as_ref());
            self.note_crash(record.seed, record.crash.clone().unwrap_or_default());
        }
    }

    fn note_crash(&mut self, seed: u64, reason: String) {
        self.crash_reasons.insert(seed, reason);
        while self.crash_reasons.len() > CRASHES_SHOWN {
            self.crash_reasons.pop_last();
        }
    }

    fn add_kinds(&mut self, record: &SeedRecord) {
        let mut kinds: Vec<&str> = record.faults.iter().map(String::as_str).collect();
        kinds.sort_unstable();
        kinds.dedup();
        for kind in kinds {
            let counts = self.kinds.entry(kind.to_string()).or_default();
            counts.seeds += 1;
            *match record.outcome {
                Outcome::Passed => &mut counts.passed,
                Outcome::Failed => &mut counts.failed,
                Outcome::ExpectedUnrecoverable => &mut counts.unrecoverable,
                Outcome::Crashed => &mut counts.crashed,
            } += 1;
        }
        for run in &record.runs {
            for (index, kind) in record.faults.iter().enumerate() {
                let counts = self.kinds.entry(kind.clone()).or_default();
                let fired = !run.unfired.contains(&index);
                counts.unfired += u64::from(!fired);
                counts
                    .by_mode
                    .entry(run.mode.to_string())
                    .or_default()
                    .add(Fired { scheduled: 1, fired: u64::from(fired) });
            }
        }
    }

    /// Faults scheduled and fired per mode, over every kind.
    pub fn fired_by_mode(&self) -> BTreeMap<String, Fired> {
        let mut total: BTreeMap<String, Fired> = BTreeMap::new();
        for counts in self.kinds.values() {
            for (mode, fired) in &counts.by_mode {
                total.entry(mode.clone()).or_default().add(*fired);
            }
        }
        total
    }

    /// Folds another summary of the same scenario into this one.
    pub fn merge(&mut self, other: &Summary) {
        self.seeds += other.seeds;
        self.passed += other.passed;
        self.failed += other.failed;
        self.expected_unrecoverable += other.expected_unrecoverable;
        self.crashed += other.crashed;
        self.simulated_us += other.simulated_us;
        self.wall_ms += other.wall_ms;
        self.worker_peak_rss_kb = self.worker_peak_rss_kb.max(other.worker_peak_rss_kb);
        self.coverage.merge(&other.coverage);
        for (kind, counts) in &other.kinds {
            let mine = self.kinds.entry(kind.clone()).or_default();
            mine.seeds += counts.seeds;
            mine.passed += counts.passed;
            mine.failed += counts.failed;
            mine.unrecoverable += counts.unrecoverable;
            mine.crashed += counts.crashed;
            mine.unfired += counts.unfired;
            for (mode, fired) in &counts.by_mode {
                mine.by_mode.entry(mode.clone()).or_default().add(*fired);
            }
        }
        let join = |mine: &mut FailureGroup, theirs: &FailureGroup| {
            mine.count += theirs.count;
            mine.seeds.extend(&theirs.seeds);
            mine.seeds.sort_unstable();
            mine.seeds.dedup();
            mine.seeds.truncate(SEEDS_SHOWN);
            if let Some(fastest) = &theirs.fastest
                && mine.fastest.as_ref().is_none_or(|known| (fastest.0, fastest.1) < (known.0, known.1))
            {
                mine.fastest = Some(fastest.clone());
            }
        };
        for (check, group) in &other.failures {
            join(self.failures.entry(check.clone()).or_default(), group);
        }
        join(&mut self.crashes, &other.crashes);
        for (seed, reason) in &other.crash_reasons {
            self.note_crash(*seed, reason.clone());
        }
    }

    /// The exit status these counts call for (see [`status`]).
    pub fn exit_status(&self) -> i32 {
        if self.crashed > 0 {
            status::CRASHED
        } else if self.failed > 0 {
            status::FAILED
        } else {
            status::PASSED
        }
    }

    /// The outcome line, the table per fault kind, and one line per failure group with the
    /// command that replays its fastest seed.
    pub fn render(&self) -> String {
        let mut text = format!(
            "  passed {}, failed {}, expected-unrecoverable {}, crashed {}\n",
            self.passed, self.failed, self.expected_unrecoverable, self.crashed
        );
        text.push_str(&self.render_kinds());
        if self.coverage.runs > 0 {
            text.push_str(&self.coverage.render());
        }
        let group = |text: &mut String, name: &str, group: &FailureGroup| {
            let shown: Vec<String> = group.seeds.iter().map(ToString::to_string).collect();
            let more = if group.count > group.seeds.len() as u64 { ", …" } else { "" };
            let count = counted(group.count, "seed");
            let _ = writeln!(text, "  {name}: {count} ({}{more})", shown.join(", "));
            if let Some((_, _, file)) = &group.fastest {
                let _ = writeln!(text, "    replay: {}", crate::replay::command("replay", printable(file)));
            }
        };
        for (check, failures) in &self.failures {
            group(&mut text, check, failures);
        }
        if self.crashes.count > 0 {
            group(&mut text, "crashed", &self.crashes);
            for (seed, reason) in &self.crash_reasons {
                let _ = writeln!(text, "    seed {seed}: {}", printable(reason));
            }
        }
        text
    }

    fn render_kinds(&self) -> String {
        if self.kinds.is_empty() {
            return String::new();
        }
        let fired = self.fired_by_mode();
        let modes: Vec<&String> = fired.keys().collect();
        let total: Vec<String> = fired
            .iter()
            .map(|(mode, counts)| format!("{mode} {} of {} ({})", counts.fired, counts.scheduled, counts.percent()))
            .collect();
        let mut text = format!("  faults fired: {}\n", total.join(", "));
        let mode_columns: String = modes.iter().map(|mode| format!(" {:>10}", format!("{mode:.9}"))).collect();
        let _ = writeln!(
            text,
            "  {:<26} {:>6} {:>7} {:>7} {:>13} {:>7} {:>11}{mode_columns}",
            "fault kind", "seeds", "passed", "failed", "unrecoverable", "crashed", "never fired"
        );
        let known = KIND_NAMES.iter().map(|kind| kind.to_string());
        let others = self.kinds.keys().filter(|kind| !KIND_NAMES.contains(&kind.as_str())).cloned();
        for kind in known.chain(others) {
            if let Some(counts) = self.kinds.get(&kind) {
                let fired: String = modes
                    .iter()
                    .map(|mode| format!(" {:>10}", counts.by_mode.get(*mode).copied().unwrap_or_default().percent()))
                    .collect();
                let _ = writeln!(
                    text,
                    "  {:<26} {:>6} {:>7} {:>7} {:>13} {:>7} {:>11}{fired}",
                    printable(&kind),
                    counts.seeds,
                    counts.passed,
                    counts.failed,
                    counts.unrecoverable,
                    counts.crashed,
                    counts.unfired
                );
            }
        }
        text
    }
}

/// A sweep's last JSON line: its summary, and what was swept.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSummary {
    /// The counts.
    #[serde(flatten)]
    pub summary: Summary,
    /// The seed range swept, `A..B`.
    pub range: String,
    /// The shard, `K/N`, when the sweep was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The modes each seed ran in.
    #[serde(default)]
    pub modes: Vec<sluice_engine::graph::ExecutionMode>,
    /// The scenario's fingerprint (`Scenario::fingerprint`): shards of one sweep share it.
    #[serde(default)]
    pub fingerprint: String,
    /// The build that ran the sweep.
    #[serde(default)]
    pub git_revision: String,
    /// Wall time the sweep took, in milliseconds.
    pub elapsed_ms: u64,
    /// The peak resident memory of the process that ran the sweep, in KiB.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor_peak_rss_kb: Option<u64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::record::{FailureRecord, RunRecord};
    use sluice_engine::cover::Mark;
    use sluice_engine::graph::ExecutionMode;

    use sluice_harness::coverage::MarkHits;

    fn record(seed: u64, outcome: Outcome, faults: &[&str], check: Option<&str>) -> SeedRecord {
        let run = RunRecord {
            mode: ExecutionMode::Batch,
            verdict: "pass".into(),
            unrecoverable: None,
            rows: 3,
            makespan_us: 1_000,
            restarts: 0,
            wall_ms: seed,
            trace_hash: "0".into(),
            unfired: if faults.is_empty() { vec![] } else { vec![0] },
            coverage: faults
                .first()
                .map(|kind| {
                    let hits = MarkHits { hits: seed, fault_kinds: [(kind.to_string(), seed)].into() };
                    [(Mark::CommitRetried, hits)].into()
                })
                .unwrap_or_default(),
        };
        SeedRecord {
            scenario: "s".into(),
            seed,
            outcome,
            faults: faults.iter().map(ToString::to_string).collect(),
            runs: if outcome == Outcome::Crashed { vec![] } else { vec![run] },
            failures: check
                .filter(|_| outcome == Outcome::Failed)
                .map(|check| vec![FailureRecord { mode: None, check: check.into(), detail: "x".into() }])
                .unwrap_or_default(),
            crash: (outcome == Outcome::Crashed).then(|| "killed by signal 6".to_string()),
            replay_file: check.map(|_| format!("failures/s-{seed}.yaml")),
            wall_ms: seed,
            worker_rss_kb: None,
            worker_peak_rss_kb: Some(seed * 10),
        }
    }

    fn records() -> Vec<SeedRecord> {
        vec![
            record(1, Outcome::Passed, &["tm-crash"], None),
            record(2, Outcome::Failed, &["tm-crash", "partition"], Some("exactly-once")),
            record(3, Outcome::Crashed, &["partition"], Some("crashed")),
            record(4, Outcome::ExpectedUnrecoverable, &[], None),
            record(5, Outcome::Failed, &["tm-crash"], Some("exactly-once")),
        ]
    }

    #[test]
    fn records_in_any_order_and_merged_halves_give_the_same_summary() {
        let mut forward = Summary::new("s");
        records().iter().for_each(|record| forward.add(record));
        let mut backward = Summary::new("s");
        records().iter().rev().for_each(|record| backward.add(record));
        assert_eq!(forward, backward);
        let (mut first, mut second) = (Summary::new("s"), Summary::new("s"));
        for (index, record) in records().iter().enumerate() {
            if index % 2 == 0 { first.add(record) } else { second.add(record) }
        }
        first.merge(&second);
        assert_eq!(first, forward);
        assert_eq!(forward.seeds, 5);
        assert_eq!((forward.passed, forward.failed, forward.expected_unrecoverable, forward.crashed), (1, 2, 1, 1));
        assert_eq!(forward.failures["exactly-once"].seeds, vec![2, 5]);
        assert_eq!(forward.failures["exactly-once"].count, 2);
        assert_eq!(forward.failures["exactly-once"].fastest, Some((2, 2, "failures/s-2.yaml".into())));
        assert_eq!(forward.kinds["tm-crash"].seeds, 3);
        assert_eq!(forward.kinds["tm-crash"].unfired, 3, "every run left its first fault unfired");
        assert_eq!(forward.kinds["partition"].crashed, 1);
        // Seed 2's run scheduled two faults and fired the second: 1 of 4 fired in batch runs.
        assert_eq!(forward.kinds["tm-crash"].by_mode["batch"], Fired { scheduled: 3, fired: 0 });
        assert_eq!(forward.kinds["partition"].by_mode["batch"], Fired { scheduled: 1, fired: 1 });
        assert_eq!(forward.fired_by_mode()["batch"], Fired { scheduled: 4, fired: 1 });
        assert!(forward.render().contains("faults fired: batch 1 of 4 (25.0%)"), "{}", forward.render());
        assert_eq!(forward.worker_peak_rss_kb, 50);
        assert_eq!(forward.exit_status(), status::CRASHED);
    }

    #[test]
    fn the_rendering_counts_in_the_singular_and_names_each_group() {
        let mut summary = Summary::new("s");
        records().iter().for_each(|record| summary.add(record));
        let text = summary.render();
        assert!(text.contains("passed 1, failed 2, expected-unrecoverable 1, crashed 1"), "{text}");
        assert!(text.contains("  exactly-once: 2 seeds (2, 5)\n"), "{text}");
        assert!(text.contains("  crashed: 1 seed (3)\n"), "{text}");
        assert!(text.contains("    seed 3: killed by signal 6\n"), "{text}");
        assert!(text.contains("replay failures/s-2.yaml"), "{text}");
        let mut many = Summary::new("s");
        for seed in (1..=30).rev() {
            many.add(&record(seed, Outcome::Failed, &[], Some("exactly-once")));
        }
        assert_eq!(many.failures["exactly-once"].count, 30);
        assert_eq!(many.failures["exactly-once"].seeds, (1..=10).collect::<Vec<_>>(), "the lowest ten, sorted");
        assert!(many.render().contains("exactly-once: 30 seeds (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, …)"));
        let mut clean = Summary::new("s");
        clean.add(&record(1, Outcome::Passed, &[], None));
        assert_eq!(clean.exit_status(), status::PASSED);
    }
}
