//! `sluice diff A B`: compares two directories of committed tables (`sluice run --output`, or
//! another engine's CSV output), table by table; see `sluice_harness::output`.

use std::path::PathBuf;

use clap::Args;

use crate::sweep::summary::status;
use sluice_harness::words::printable;

#[derive(Debug, Args)]
pub(super) struct DiffArgs {
    /// The first directory of `<table>.csv` files (e.g. `out/seed-1/streaming`).
    first: PathBuf,
    /// The second (e.g. `out/seed-1/batch`).
    second: PathBuf,
}

pub(super) fn command(arguments: &DiffArgs) -> i32 {
    match sluice_harness::output::diff(&arguments.first, &arguments.second) {
        Ok(diff) => {
            for line in &diff.lines {
                println!("{}", printable(line));
            }
            if diff.agree {
                println!("agree: {} and {}", arguments.first.display(), arguments.second.display());
                status::PASSED
            } else {
                println!("differ: {} and {}", arguments.first.display(), arguments.second.display());
                status::FAILED
            }
        }
        Err(message) => {
            eprintln!("sluice diff: {}", printable(&message));
            status::USAGE
        }
    }
}
