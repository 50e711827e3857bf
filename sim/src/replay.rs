//! Replay files: a failing seed written as a self-contained scenario.
//!
//! A replay file is an ordinary scenario with one seed, the modes that failed, the whole fault
//! schedule of that seed written out as explicit faults (random faults resolved), and a
//! `replay:` section recording the check that failed, the trace hashes, the faults that fired
//! and the build's git revision. `sluice replay FILE` runs it again; on the same build it
//! reproduces the failure with the same trace hash, and on a later build the explicit schedule
//! still says what happened, even if the engine's timing changed.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use sluice_engine::graph::ExecutionMode;
use sluice_engine::trace::TraceEvent;

use crate::seed::SeedResult;
use sluice_harness::scenario::{ReplayInfo, Scenario};

/// The command that runs a replay file (or a scenario) again with this process's jobs: this
/// binary, however it was started ([`invocation`]), then `<subcommand> <path>`.
pub fn command(subcommand: &str, path: impl std::fmt::Display) -> String {
    format!("{} {subcommand} {path}", invocation())
}

/// Sluice's own packages: their binaries and tests run the built-in jobs, which `sluice-sim`'s
/// `sluice` command knows.
const OWN_PACKAGES: [&str; 7] =
    ["sluice-sim", "sluice-engine", "sluice-catalog", "sluice-properties", "sluice-benches", "sluice-real", "sluice"];

/// How to start this binary again, with the jobs it knows. Under cargo (`cargo run`, `cargo
/// test`: `CARGO_PKG_NAME` is set), `cargo run --release -p <package> --` — `sluice-sim` for
/// Sluice's own packages, else the user's package whose binary calls `cli::main_with`, with
/// `--bin` when the binary is not named after its package. Started directly, the path it was
/// started by (`./target/release/mine`), since no package name is known then.
pub fn invocation() -> String {
    let package = std::env::var("CARGO_PKG_NAME").ok().filter(|package| !package.is_empty());
    let started_as = std::env::args_os().next().map(|name| name.to_string_lossy().into_owned());
    invocation_of(package.as_deref(), started_as.as_deref())
}

/// [`invocation`] from the package cargo named (if any) and the path the process was started by.
fn invocation_of(package: Option<&str>, started_as: Option<&str>) -> String {
    let stem = started_as.and_then(|path| std::path::Path::new(path).file_stem()).and_then(|stem| stem.to_str());
    match package {
        Some(package) if OWN_PACKAGES.contains(&package) => "cargo run --release -p sluice-sim --".to_string(),
        Some(package) => {
            // A test harness (`name-<16 hex digits>`) is not the binary to run again.
            let binary =
                stem.filter(|stem| *stem != package.replace('-', "_") && *stem != package && !is_test_harness(stem));
            match binary {
                Some(binary) => format!("cargo run --release -p {package} --bin {binary} --"),
                None => format!("cargo run --release -p {package} --"),
            }
        }
        None => match started_as {
            Some(path) if !path.is_empty() => sluice_harness::words::shell_word(path),
            _ => "cargo run --release -p sluice-sim --".to_string(),
        },
    }
}

/// Whether a file stem is cargo's name for a test harness: `name-` and 16 hex digits.
fn is_test_harness(stem: &str) -> bool {
    stem.rsplit_once('-').is_some_and(|(_, hash)| hash.len() == 16 && hash.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

/// The git revision this binary was built from (`+changes` if the tree was modified).
pub const GIT_REVISION: &str = env!("SLUICE_GIT_REVISION");

/// The replay scenario of a failed seed; see the module doc.
pub fn replay_scenario(scenario: &Scenario, result: &SeedResult) -> Scenario {
    let failures = result.failures();
    let (_, first) = failures.first().expect("a replay file is written for a failed seed");
    let mut modes: Vec<ExecutionMode> = if failures.iter().any(|(mode, _)| mode.is_none()) {
        result.runs.iter().map(|(report, _)| report.mode).collect()
    } else {
        failures.iter().filter_map(|(mode, _)| *mode).collect()
    };
    modes.sort();
    modes.dedup();
    let runs: Vec<_> = result.runs.iter().filter(|(report, _)| modes.contains(&report.mode)).collect();
    let trace_hashes: BTreeMap<String, String> =
        runs.iter().map(|(report, _)| (report.mode.to_string(), format!("{:016x}", report.trace_hash))).collect();
    let realized = runs
        .first()
        .map(|(report, _)| {
            report
                .trace
                .iter()
                .filter_map(|record| match &record.event {
                    TraceEvent::FaultInjected { index, detail, .. } => {
                        Some(format!("{:.6}s #{index} {detail}", record.time.as_secs_f64()))
                    }
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let schedule = result.runs.first().map(|(report, _)| report.schedule.clone()).unwrap_or_default();
    let mut replay = Scenario {
        seeds: result.seed..result.seed + 1,
        modes,
        faults: schedule,
        random_faults: None,
        replay: None,
        ..scenario.clone()
    };
    replay.replay = Some(ReplayInfo {
        seed: result.seed,
        check: first.check.to_string(),
        detail: first.detail.clone(),
        trace_hashes,
        git_revision: GIT_REVISION.to_string(),
        realized,
        scenario_hash: String::new(),
    });
    seal(replay)
}

/// The replay scenario of a seed whose process crashed: its explicit schedule, and `crashed`
/// as the check that failed, with how.
pub fn crash_scenario(scenario: &Scenario, seed: u64, crash: &str) -> Scenario {
    let mut replay = Scenario {
        seeds: seed..seed + 1,
        faults: scenario.schedule(seed),
        random_faults: None,
        replay: None,
        ..scenario.clone()
    };
    replay.replay = Some(ReplayInfo {
        seed,
        check: "crashed".to_string(),
        detail: crash.to_string(),
        trace_hashes: BTreeMap::new(),
        git_revision: GIT_REVISION.to_string(),
        realized: Vec::new(),
        scenario_hash: String::new(),
    });
    seal(replay)
}

/// Writes a replay file of one seed of `scenario` that no check failed on (a test's own
/// assertion about the run did), so that `sluice run FILE --print-trace` shows that run again;
/// returns its path.
pub fn write_seed(directory: &Path, scenario: &Scenario, seed: u64, why: &str) -> io::Result<PathBuf> {
    std::fs::create_dir_all(directory)?;
    let path = failure_path(directory, scenario, seed);
    let mut replay = crash_scenario(scenario, seed, why);
    if let Some(info) = &mut replay.replay {
        info.check = "assertion".to_string();
    }
    let header = format!("# Rerun: {} --print-trace\n# {why}\n", command("run", path.display()));
    std::fs::write(&path, header + &seal(replay).to_yaml())?;
    Ok(path)
}

/// A replay scenario with its fingerprint recorded.
fn seal(mut replay: Scenario) -> Scenario {
    let fingerprint = replay.fingerprint();
    if let Some(info) = &mut replay.replay {
        info.scenario_hash = fingerprint;
    }
    replay
}

/// Writes a crashed seed's replay file and returns its path.
pub fn write_crash(directory: &Path, scenario: &Scenario, seed: u64, crash: &str) -> io::Result<PathBuf> {
    std::fs::create_dir_all(directory)?;
    let path = failure_path(directory, scenario, seed);
    let header =
        format!("# Replay: {}\n# crashed: {}\n", command("replay", path.display()), crash.lines().next().unwrap_or(""));
    std::fs::write(&path, header + &crash_scenario(scenario, seed, crash).to_yaml())?;
    Ok(path)
}

/// The file a failed seed is written to: `<directory>/<scenario>-<seed>.yaml`.
pub fn failure_path(directory: &Path, scenario: &Scenario, seed: u64) -> PathBuf {
    directory.join(format!("{}-{seed}.yaml", scenario.name))
}

/// Writes a failed seed's replay file and returns its path.
pub fn write_failure(directory: &Path, scenario: &Scenario, result: &SeedResult) -> io::Result<PathBuf> {
    write_failure_to(failure_path(directory, scenario, result.seed), scenario, result)
}

/// Writes a failed seed's replay file to `path` (its directory created) and returns the path.
pub fn write_failure_to(path: PathBuf, scenario: &Scenario, result: &SeedResult) -> io::Result<PathBuf> {
    if let Some(directory) = path.parent() {
        std::fs::create_dir_all(directory)?;
    }
    let replay = replay_scenario(scenario, result);
    let info = replay.replay.as_ref().expect("set above");
    let header = format!(
        "# Replay: {}\n# {} failed: {}\n",
        command("replay", path.display()),
        info.check,
        info.detail.lines().next().unwrap_or("")
    );
    std::fs::write(&path, header + &replay.to_yaml())?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::invocation_of;

    #[test]
    fn the_replay_command_is_the_command_of_the_binary_that_ran() {
        let sluice = "cargo run --release -p sluice-sim --";
        assert_eq!(invocation_of(Some("sluice-sim"), Some("target/release/sluice")), sluice);
        assert_eq!(invocation_of(Some("sluice-sim"), Some("target/debug/deps/it-0123456789abcdef")), sluice);
        assert_eq!(
            invocation_of(Some("clickstream"), Some("target/debug/clickstream")),
            "cargo run --release -p clickstream --"
        );
        assert_eq!(
            invocation_of(Some("clickstream"), Some("/w/target/debug/deps/simulation-0123456789abcdef")),
            "cargo run --release -p clickstream --",
            "a user's test names the user's package"
        );
        assert_eq!(
            invocation_of(Some("my-windows"), Some("target/release/sliding")),
            "cargo run --release -p my-windows --bin sliding --"
        );
        assert_eq!(
            invocation_of(Some("my-windows"), Some("target/release/my_windows")),
            "cargo run --release -p my-windows --"
        );
        assert_eq!(invocation_of(None, Some("./target/release/sliding")), "./target/release/sliding");
        assert_eq!(invocation_of(None, Some("/tmp/my dir/sluice")), "'/tmp/my dir/sluice'");
        assert_eq!(invocation_of(None, None), sluice);
    }
}
