//! What the real-mode tests share: the workspace, the real binary (built once per test process)
//! and the lock that keeps one cluster of processes running at a time.

#![allow(dead_code)] // each test file uses what it needs

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

pub fn workspace() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate is in the workspace")
}

/// Builds the real binary once per test process; the path to it.
pub fn real_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        cargo(&["real-build"]);
        workspace().join("target/real/release/sluice-real")
    })
}

/// Builds the simulator's `sluice` binary once per test process (the simulation build, as
/// `cargo test` builds it); the path to it.
pub fn simulator_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        cargo(&["build", "-p", "sluice-sim", "--bin", "sluice"]);
        workspace().join("target/debug/sluice")
    })
}

/// Runs cargo in the workspace; panics with its errors if it fails.
fn cargo(arguments: &[&str]) {
    let output = Command::new(env!("CARGO"))
        .args(arguments)
        .current_dir(workspace())
        // Any of these would replace a build's flags (and, set for simulation, put `--cfg madsim`
        // into the real build); the build must not depend on the caller's environment.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "`cargo {}` failed:\n{}",
        arguments.join(" "),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// One cluster at a time: the machine has two cores, and a cluster is nine processes.
pub static ONE_CLUSTER: Mutex<()> = Mutex::new(());
