//! `sluice replay`: run a replay file again and say whether it reproduced.

use super::run::{ReplayFile, print_seed, report_line};
use super::{Options, load};
use crate::replay::GIT_REVISION;
use crate::seed::{DeterminismCheck, run_seed};

pub(super) fn command(options: &Options) -> i32 {
    let scenario = match load(options) {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    let Some(recorded) = scenario.replay.clone() else {
        eprintln!("sluice replay: {} has no `replay:` section; use `sluice run` for scenarios", options.file.display());
        return 2;
    };
    println!(
        "replay {}: seed {}, recorded by build {}, replayed by build {}",
        options.file.display(),
        recorded.seed,
        recorded.git_revision,
        GIT_REVISION
    );
    println!("  recorded: {} failed: {}", recorded.check, recorded.detail.lines().next().unwrap_or(""));
    let result = run_seed(&scenario, recorded.seed, &scenario.modes, DeterminismCheck::Off);
    // A replay writes no new replay file: the one replayed is it.
    let failed = print_seed(&scenario, options, &result, scenario.modes.len() == 1, ReplayFile::Skip);
    let same_check = result.failures().iter().any(|(_, failure)| failure.check == recorded.check);
    let same_hashes = result.runs.iter().all(|(report, _)| {
        recorded.trace_hashes.get(&report.mode.to_string()) == Some(&format!("{:016x}", report.trace_hash))
    });
    for (report, verdict) in &result.runs {
        let recorded_hash = recorded.trace_hashes.get(&report.mode.to_string()).map_or("none", String::as_str);
        println!("{}  (recorded trace {recorded_hash})", report_line(report, verdict));
    }
    match (same_check, same_hashes) {
        (true, true) => println!("reproduced: {} failed again, with the same trace hashes", recorded.check),
        (true, false) if recorded.git_revision == GIT_REVISION => {
            println!("reproduced the failure, but the trace differs on the same build: a determinism bug")
        }
        (true, false) => println!("reproduced the failure; the trace differs, as the build does"),
        (false, _) if failed => println!("it fails differently now: see above"),
        (false, _) => println!("no longer fails: the seed passes on this build"),
    }
    i32::from(failed)
}
