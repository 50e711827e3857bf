//! `sluice shrink`: minimize a failing scenario and write it beside the original.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{limit_memory, load};
use crate::replay::replay_scenario;
use crate::shrink::shrink;
use crate::sweep::summary::status;
use sluice_harness::scenario::Scenario;
use sluice_harness::words::counted;

#[derive(Debug, Args)]
pub(super) struct ShrinkArgs {
    /// A failing replay file (or any scenario whose first seed fails).
    file: PathBuf,
    /// Where the minimal scenario goes [default: FILE with `.min.yaml` for `.yaml`].
    #[arg(short, long, value_name = "OUT")]
    output: Option<PathBuf>,
    /// Memory limit of this process: `4GiB`, `512MiB` (64MiB to 64GiB).
    #[arg(long, value_name = "SIZE", default_value = "4GiB", value_parser = super::memory_arg)]
    memory_limit: u64,
}

/// `dir/name.yaml` → `dir/name.min.yaml`.
pub(super) fn minimal_path(original: &std::path::Path) -> PathBuf {
    let stem = original.file_stem().map_or_else(|| "scenario".into(), |stem| stem.to_string_lossy().into_owned());
    original.with_file_name(format!("{stem}.min.yaml"))
}

pub(super) fn command(arguments: &ShrinkArgs) -> i32 {
    let scenario = match load(&arguments.file) {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    limit_memory(arguments.memory_limit);
    let output = arguments.output.clone().unwrap_or_else(|| minimal_path(&arguments.file));
    match shrink_to(&scenario, &arguments.file, &output) {
        Ok(()) => status::PASSED,
        Err(status) => status,
    }
}

/// Shrinks the failing `scenario` read from `file` and writes the minimal one to `output`,
/// printing the steps; the exit status on failure. `sluice explore --shrink` hands each failure
/// here.
pub(super) fn shrink_to(scenario: &Scenario, file: &Path, output: &Path) -> Result<(), i32> {
    let faults = scenario.schedule(scenario.replay.as_ref().map_or(scenario.seeds.start, |replay| replay.seed)).len();
    println!("shrinking {} ({})", file.display(), counted(faults as u64, "fault"));
    let shrunk = shrink(scenario, &mut |step| println!("  {step}")).map_err(|message| {
        eprintln!("sluice shrink: {message}");
        status::FAILED
    })?;
    let minimal = replay_scenario(&shrunk.scenario, &shrunk.result);
    let header = format!(
        "# Shrunk from {} in {} simulations: still fails `{}`.\n# Replay: {}\n",
        file.display(),
        shrunk.tests,
        shrunk.check,
        crate::replay::command("replay", output.display())
    );
    std::fs::write(output, header + &minimal.to_yaml()).map_err(|error| {
        eprintln!("sluice shrink: cannot write {}: {error}", output.display());
        status::USAGE
    })?;
    println!("minimal: {}", counted(minimal.faults.len() as u64, "fault"));
    for fault in &minimal.faults {
        println!("  {fault}");
    }
    println!("written to {}", output.display());
    Ok(())
}
