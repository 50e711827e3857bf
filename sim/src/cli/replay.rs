//! `sluice replay`: run a replay file again and say whether it reproduced.
//!
//! The verdict tells four situations apart: the same failure with the same trace (reproduced);
//! the same failure with another trace on the same build from an unedited file (a determinism
//! bug); another trace because the build or the file changed (expected); no failure now.

use std::path::PathBuf;

use clap::Args;

use super::run::{Printing, print_seed, report_line};
use super::{limit_memory, load};
use crate::replay::GIT_REVISION;
use crate::seed::{DeterminismCheck, run_seed};
use crate::sweep::summary::status;
use sluice_harness::scenario::ReplayInfo;
use sluice_harness::words::printable;

#[derive(Debug, Args)]
pub(super) struct ReplayArgs {
    /// A replay file (`failures/NAME-SEED.yaml`).
    file: PathBuf,
    /// Write each run's trace as JSON lines: to PATH for one run, else to PATH-<seed>-<mode>.jsonl.
    #[arg(long, value_name = "PATH")]
    trace: Option<PathBuf>,
    /// Print each run's trace.
    #[arg(long)]
    print_trace: bool,
    /// Memory limit of this process: `4GiB`, `512MiB` (64MiB to 64GiB).
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = super::memory_arg)]
    memory_limit: u64,
}

/// Why a replay's trace may differ from the recorded one, if it may.
fn expected_difference(recorded: &ReplayInfo, fingerprint: &str) -> Option<String> {
    if recorded.scenario_hash.is_empty() {
        return Some("the file records no fingerprint, so whether it was edited cannot be told".to_string());
    }
    if recorded.scenario_hash != fingerprint {
        return Some("the file was edited after it was recorded (its fingerprint differs)".to_string());
    }
    if recorded.git_revision != GIT_REVISION {
        return Some(format!("it was recorded by build {}, this is {GIT_REVISION}", printable(&recorded.git_revision)));
    }
    None
}

pub(super) fn command(arguments: &ReplayArgs) -> i32 {
    let scenario = match load(&arguments.file) {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    let Some(recorded) = scenario.replay.clone() else {
        eprintln!(
            "sluice replay: {} has no `replay:` section; use `sluice run` for scenarios",
            arguments.file.display()
        );
        return status::USAGE;
    };
    let single_run = scenario.modes.len() == 1;
    if let Some(base) = &arguments.trace
        && let Err(message) = super::run::check_trace_destination(base, single_run)
    {
        eprintln!("sluice replay: {message}");
        return status::USAGE;
    }
    limit_memory(arguments.memory_limit);
    println!(
        "replay {}: seed {}, recorded by build {}, replayed by build {}",
        arguments.file.display(),
        recorded.seed,
        printable(&recorded.git_revision),
        GIT_REVISION
    );
    println!(
        "  recorded: {} failed: {}",
        printable(&recorded.check),
        printable(recorded.detail.lines().next().unwrap_or(""))
    );
    let result = run_seed(&scenario, recorded.seed, &scenario.modes, DeterminismCheck::Off);
    // A replay writes no new replay file: the one replayed is it.
    let printing = Printing { print_trace: arguments.print_trace, trace: arguments.trace.as_deref(), failures: None };
    let (failed, written) = print_seed(&scenario, &printing, &result, single_run);
    let same_check = result.failures().iter().any(|(_, failure)| failure.check == recorded.check);
    let same_hashes = result.runs.iter().all(|(report, _)| {
        recorded.trace_hashes.get(&report.mode.to_string()) == Some(&format!("{:016x}", report.trace_hash))
    });
    for (report, verdict) in &result.runs {
        let recorded_hash = recorded.trace_hashes.get(&report.mode.to_string()).map_or("none", String::as_str);
        println!("{}  (recorded trace {})", report_line(report, verdict), printable(recorded_hash));
    }
    let check = printable(&recorded.check);
    match (same_check, same_hashes, expected_difference(&recorded, &scenario.fingerprint())) {
        (true, true, _) => println!("reproduced: {check} failed again, with the same trace hashes"),
        (true, false, None) => {
            println!("reproduced the failure, but the trace differs on the same build and file: a determinism bug")
        }
        (true, false, Some(why)) => println!("reproduced the failure; the trace differs, as expected: {why}"),
        (false, _, _) if failed => println!("it fails differently now: see above"),
        (false, _, _) => println!("no longer fails: the seed passes on this build"),
    }
    if failed {
        status::FAILED
    } else if !written {
        status::USAGE
    } else {
        status::PASSED
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_file_or_another_build_explains_a_different_trace() {
        let recorded = ReplayInfo {
            seed: 1,
            check: "exactly-once".into(),
            detail: String::new(),
            trace_hashes: Default::default(),
            git_revision: GIT_REVISION.into(),
            realized: vec![],
            scenario_hash: "00000000000000aa".into(),
        };
        assert!(expected_difference(&recorded, "00000000000000bb").unwrap().contains("edited"));
        let unsealed = ReplayInfo { scenario_hash: String::new(), ..recorded.clone() };
        assert!(expected_difference(&unsealed, "00000000000000bb").unwrap().contains("no fingerprint"));
        let other_build =
            ReplayInfo { git_revision: "0123456789ab".into(), scenario_hash: "00000000000000bb".into(), ..recorded };
        let why = expected_difference(&other_build, "00000000000000bb").unwrap();
        assert!(why.contains("recorded by build 0123456789ab"), "{why}");
        assert_eq!(
            expected_difference(&ReplayInfo { git_revision: GIT_REVISION.into(), ..other_build }, "00000000000000bb"),
            None
        );
    }
}
