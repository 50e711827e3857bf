//! Test-only crashes of the harness itself: what a sweep must survive.
//!
//! A scenario's `harness_crash: { seed: 3, how: abort }` makes the harness (never the engine)
//! crash when it runs seed 3, in one of the ways a process can die: a panic outside any
//! simulation, an abort, a stack overflow, a hang, or allocating until the memory limit stops
//! it. Tests use it to show that `sluice sweep` reports such a seed as crashed, with its replay
//! file, and finishes the others. It has no other use.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which seed crashes, and how.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessCrash {
    /// The seed that crashes.
    pub seed: u64,
    /// How.
    pub how: CrashKind,
}

/// How the harness crashes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrashKind {
    /// Panics in the thread that runs the seed (not inside a simulation).
    Panic,
    /// Aborts the process.
    Abort,
    /// Recurses until the thread's stack overflows.
    StackOverflow,
    /// Never returns.
    Hang,
    /// Allocates until an allocation fails; only under a memory limit (`sluice` sets one).
    ExhaustMemory,
}

impl HarnessCrash {
    /// Crashes if `seed` is the one; returns otherwise.
    pub fn strike(&self, seed: u64) {
        if seed != self.seed {
            return;
        }
        eprintln!("the scenario's harness_crash makes seed {seed} crash the harness: {:?}", self.how);
        match self.how {
            CrashKind::Panic => panic!("harness_crash: seed {seed} panics the harness"),
            CrashKind::Abort => std::process::abort(),
            CrashKind::StackOverflow => {
                std::hint::black_box(recurse(0));
            }
            CrashKind::Hang => loop {
                std::thread::sleep(Duration::from_secs(1));
            },
            CrashKind::ExhaustMemory => exhaust_memory(),
        }
    }
}

fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 512]);
    if std::hint::black_box(depth) == u64::MAX {
        return frame[0];
    }
    frame[1].wrapping_add(recurse(depth + 1))
}

fn exhaust_memory() {
    let unlimited = rlimit::getrlimit(rlimit::Resource::DATA).is_ok_and(|(soft, _)| soft == rlimit::INFINITY);
    assert!(!unlimited, "harness_crash: exhaust-memory needs a memory limit; run it with `sluice`, which sets one");
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut chunk: Vec<u8> = Vec::with_capacity(16 << 20);
        chunk.resize(16 << 20, 1);
        hoard.push(std::hint::black_box(chunk));
    }
}
