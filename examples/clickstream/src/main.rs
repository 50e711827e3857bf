//! The `sluice` command over the clickstream job: `cargo run -p clickstream -- run
//! examples/clickstream/scenarios/clicks-faults.yaml`. Every subcommand (run, sweep, replay,
//! shrink, plan, …) knows this crate's job, the way a user's own binary would.

#[cfg(not(madsim))]
fn main() {
    eprintln!("clickstream: this build is not a simulation build (built without `--cfg madsim`).");
    std::process::exit(2);
}

#[cfg(madsim)]
fn main() {
    let arguments: Result<Vec<String>, _> = std::env::args_os().skip(1).map(std::ffi::OsString::into_string).collect();
    let Ok(arguments) = arguments else {
        eprintln!("clickstream: an argument is not valid UTF-8");
        std::process::exit(2);
    };
    let jobs = sluice_sim::JobCatalog::of([&clickstream::CLICKSTREAM]).expect("one job, one name");
    std::process::exit(sluice_sim::cli::main_with(arguments, jobs));
}
