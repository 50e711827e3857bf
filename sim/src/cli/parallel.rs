//! What `compare` and its failure-rate curve share: running (variant, seed) pairs on worker
//! threads with a progress bar, and a failed run's replay file.

use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

use indicatif::{ProgressBar, ProgressStyle};
use sluice_harness::check::{CheckFailure, Verdict};
use sluice_harness::compare::Variant;
use sluice_harness::report::RunReport;
use sluice_harness::scenario::Scenario;

use crate::replay::write_failure;
use crate::seed::SeedResult;

/// Every (variant, seed) pair, seeds innermost.
pub(super) fn work(variants: &[Variant], seeds: Range<u64>) -> Vec<(Variant, u64)> {
    variants.iter().flat_map(|variant| seeds.clone().map(move |seed| (*variant, seed))).collect()
}

/// `one` of every (variant, seed) of `work`, on `jobs` worker threads, with a progress bar; in
/// the order they finished.
pub(super) fn in_parallel<T: Send + 'static>(
    work: Vec<(Variant, u64)>,
    jobs: usize,
    one: impl Fn(Variant, u64) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let bar = ProgressBar::new(work.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {per_sec}  eta {eta}").expect("a valid template"),
    );
    let (work, one, next) = (Arc::new(work), Arc::new(one), Arc::new(AtomicUsize::new(0)));
    let (sender, receiver) = mpsc::channel::<T>();
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (work, one, next, sender) = (Arc::clone(&work), Arc::clone(&one), Arc::clone(&next), sender.clone());
            std::thread::spawn(move || {
                while let Some(&(variant, seed)) = work.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if sender.send(one(variant, seed)).is_err() {
                        return;
                    }
                }
            })
        })
        .collect();
    drop(sender);
    let results: Vec<T> = receiver.iter().inspect(|_| bar.inc(1)).collect();
    bar.finish_and_clear();
    for worker in workers {
        worker.join().expect("a compare worker panicked outside a simulation");
    }
    results
}

/// Writes a replay file of a failed run of `scenario` into `directory` and prints the command
/// that replays it.
pub(super) fn write_replay(directory: &Path, scenario: &Scenario, report: &RunReport, failures: &[CheckFailure]) {
    let result = SeedResult {
        seed: report.seed,
        runs: vec![(report.clone(), Verdict::Fail(failures.to_vec()))],
        agreement: None,
        compared: None,
        determinism: Vec::new(),
    };
    match write_failure(directory, scenario, &result) {
        Ok(path) => println!("    replay: {}", crate::replay::command("replay", path.display())),
        Err(error) => eprintln!("sluice: cannot write the replay file: {error}"),
    }
}
