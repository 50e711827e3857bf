//! `sluice shrink`: minimize a failing scenario and write it beside the original.

use std::path::PathBuf;

use super::{Options, load};
use crate::replay::replay_scenario;
use crate::shrink::shrink;

/// `dir/name.yaml` → `dir/name.min.yaml`.
fn minimal_path(original: &std::path::Path) -> PathBuf {
    let stem = original.file_stem().map_or_else(|| "scenario".into(), |stem| stem.to_string_lossy().into_owned());
    original.with_file_name(format!("{stem}.min.yaml"))
}

pub(super) fn command(options: &Options) -> i32 {
    let scenario = match load(options) {
        Ok(scenario) => scenario,
        Err(status) => return status,
    };
    let faults = scenario.schedule(scenario.replay.as_ref().map_or(scenario.seeds.start, |replay| replay.seed)).len();
    println!("shrinking {} ({faults} faults)", options.file.display());
    let shrunk = match shrink(&scenario, &mut |step| println!("  {step}")) {
        Ok(shrunk) => shrunk,
        Err(message) => {
            eprintln!("sluice shrink: {message}");
            return 1;
        }
    };
    let minimal = replay_scenario(&shrunk.scenario, &shrunk.result);
    let output = options.output.clone().unwrap_or_else(|| minimal_path(&options.file));
    let header = format!(
        "# Shrunk from {} in {} simulations: still fails `{}`.\n# Replay: cargo run --release -p sluice-sim -- replay {}\n",
        options.file.display(),
        shrunk.tests,
        shrunk.check,
        output.display()
    );
    if let Err(error) = std::fs::write(&output, header + &minimal.to_yaml()) {
        eprintln!("sluice shrink: cannot write {}: {error}", output.display());
        return 1;
    }
    println!("minimal: {} faults", minimal.faults.len());
    for fault in &minimal.faults {
        println!("  {fault}");
    }
    println!("written to {}", output.display());
    0
}
